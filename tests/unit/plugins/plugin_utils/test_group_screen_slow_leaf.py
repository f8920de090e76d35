# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The group-testing screen on a whole simulated fleet with a slow leaf uplink and a bad node (issue 25: a bad switch
must not be reported as bad nodes).

64 hosts on 8 leaf switches, cabled round-robin (host i on leaf i % 8, so that the inventory's order crosses the
leaves), the uplink of leaf-0 slow (its 8 hosts are fine with each other, any collective that crosses the uplink is
slow) and one bad node elsewhere (n13, on leaf-5). The screen is driven round by round with a simulated collective
(a test fails when it holds the bad node or crosses leaf-0's uplink):

- with the topology ({host: leaf}), exactly n13 fails, the 8 hosts of leaf-0 warn as one ``group`` finding (the
  leaf slow to the rest), every other host passes - before the fix, a suspect of leaf-5 was confirmed with the
  first known-good host of the fleet (n00, behind the slow uplink) and n05 failed as a bad node;
- without a topology, the known weakness (docs/group-screen.md): the groups cross the slow uplink, and the 8 hosts
  of leaf-0 are confirmed bad with known-good hosts of other leaves.
"""

from __future__ import annotations

from ansible_collections.aifabric.acceptance.plugins.filter.group_screen import group_screen as plan_round
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import group_screen, report_html
from ansible_collections.aifabric.acceptance.tests.unit.plugins.plugin_utils.test_group_screen_no_group import drive as drive_screen
from ansible_collections.aifabric.acceptance.tests.unit.plugins.plugin_utils.test_screen_analysis import (
    CHECK, report_of, verdicts)

HOSTS = ["n%02d" % i for i in range(64)]
TOPOLOGY = dict((h, "leaf-%d" % (i % 8)) for i, h in enumerate(HOSTS))
SLOW_LEAF = [h for h in HOSTS if TOPOLOGY[h] == "leaf-0"]
BAD = "n13"


def passes(hosts):
    """The simulated collective: slow with the bad node, or across the slow leaf's uplink."""
    leaves = set(TOPOLOGY[h] for h in hosts)
    return BAD not in hosts and not ("leaf-0" in leaves and len(leaves) > 1)


def drive(topology):
    """Run the screen as playbooks/nccl_screen.yml does (the filter plans each round from the records so far)."""
    return drive_screen(HOSTS, topology or {}, passes)


def test_planner_with_topology_fails_the_bad_node_only_and_names_the_slow_leaf():
    seen = []

    def measure(tests):
        seen.append(tests)
        return [passes(t["hosts"]) for t in tests]

    result = group_screen.run(HOSTS, measure, topology=TOPOLOGY)
    assert result["bad"] == [BAD]
    assert result["unresolved"] == []
    assert result["good"] == sorted(set(HOSTS) - {BAD})
    assert result["slow_groups"] == ["leaf-0"] and result["unresolved_groups"] == []
    for tests in seen:                                           # one collective per host per round
        members = [h for t in tests for h in t["hosts"]]
        assert len(members) == len(set(members))
    for test in (t for tests in seen for t in tests if t["purpose"] in ("screen", "rescreen", "bisect", "confirm")):
        assert len(set(TOPOLOGY[h] for h in test["hosts"])) == 1, test   # a host is judged inside its own leaf
    span = [t for tests in seen for t in tests if t["purpose"] == "span"]
    assert span and all(len(set(TOPOLOGY[h] for h in t["hosts"])) == len(t["hosts"]) for t in span)
    assert len(seen) <= group_screen.max_rounds(len(HOSTS), groups=8)


def test_planner_without_topology_names_the_slow_leaf_hosts_as_bad_nodes():
    """The known weakness without a topology: stated in docs/group-screen.md, asserted here exactly."""
    result = group_screen.run(HOSTS, lambda tests: [passes(t["hosts"]) for t in tests])
    assert result["bad"] == sorted(SLOW_LEAF + [BAD])
    assert result["unresolved"] == [] and result["slow_groups"] == []


def test_report_with_topology_one_node_fail_one_group_warn():
    records, rounds = drive(TOPOLOGY)
    report = report_of(records, HOSTS)
    assert report["problems"] == []
    expected = dict((h, "fail" if h == BAD else "warn" if h in SLOW_LEAF else "pass") for h in HOSTS)
    assert verdicts(report) == expected
    screen = dict((r["host"], r) for r in report["records"] if r["check"] == CHECK + ".screen")
    assert dict((h, r["status"]) for h, r in screen.items()) == expected
    assert all("leaf-0" in screen[h]["reason"] and "slow to the rest" in screen[h]["reason"] for h in SLOW_LEAF)
    findings = [(f["kind"], f["hosts"]) for f in report["findings"] if f["analysis"] == "screen"]
    assert sorted(findings) == [("group", SLOW_LEAF), ("node", [BAD])]
    group = [f for f in report["findings"] if f["kind"] == "group" and f["analysis"] == "screen"][0]
    assert group["evidence"]["switches"] == ["leaf-0"]
    assert group["evidence"]["failed_tests"] and all(t["purpose"] == "span" for t in group["evidence"]["failed_tests"])
    row = report_html.finding_row(group)                                 # the report's sentence: one warn, the leaf
    assert row["status"] == "warn" and row["text"].startswith("leaf-0 is slow to the rest: its hosts pass with each other")
    assert len(rounds) <= group_screen.max_rounds(len(HOSTS), groups=8)


def test_report_without_topology_the_known_weakness():
    records, _rounds = drive(None)
    report = report_of(records, HOSTS)
    assert verdicts(report) == dict((h, "fail" if h in SLOW_LEAF or h == BAD else "pass") for h in HOSTS)
    assert not [f for f in report["findings"] if f["kind"] == "group"]


def test_a_marker_carries_each_hosts_group():
    text = group_screen.marker(3, "span", ["a", "b", "c"], ["leaf 1", None, "-"])
    assert text == "round=3 purpose=span hosts=a b c groups=leaf%201 - %2D"
    assert group_screen.parse_marker(text) == {"round": 3, "purpose": "span", "hosts": ["a", "b", "c"],
                                               "groups": {"a": "leaf 1", "c": "-"}, "rules": group_screen.LEGACY}
    ruled = group_screen.marker(3, "span", ["a", "b"], rules={"evidence": 2, "margin_pct": 5.0})
    assert ruled == "round=3 purpose=span hosts=a b evidence=2 margin_pct=5"
    assert group_screen.parse_marker(ruled)["rules"] == {"evidence": 2, "margin_pct": 5.0}
    assert group_screen.parse_marker(ruled.replace("evidence=2", "evidence=0")) is None
    assert group_screen.parse_marker("round=1 purpose=screen hosts=a b groups=x") is None     # one group per host
    for bad in ((["a", "b"], ["x"]), (["a", "groups=b"], None)):
        try:
            group_screen.marker(0, "screen", *bad)
        except ValueError:
            continue
        raise AssertionError("marker accepted %r" % (bad,))


def test_a_suspect_that_failed_across_an_uplink_is_confirmed_inside_its_leaf():
    """x1 failed with known-good y1 of another leaf: not bad yet (the uplink could explain it); it is tested with a
    known-good host of its own leaf (x4), and only a failure there confirms it."""
    hosts = ["x1", "x2", "x3", "x4", "x5", "y1", "y2"]
    topology = dict((h, h[0].upper()) for h in hosts)
    outcomes = [(["x1", "x2", "x3"], False), (["x4", "x5"], True), (["y1", "y2"], True), (["x1", "y1"], False)]
    good, bad, pools, unknown = group_screen.state(hosts, outcomes, topology, evidence=1)
    assert good == {"x4", "x5", "y1", "y2"} and bad == set() and pools == [["x1"]] and unknown == {"x2", "x3"}
    assert group_screen.plan(hosts, outcomes, topology=topology, evidence=1) == [
        {"hosts": ["x1", "x4"], "purpose": "confirm"}, {"hosts": ["x2", "x3"], "purpose": "rescreen"},
        {"hosts": ["x5", "y1"], "purpose": "span"}]
    assert group_screen.state(hosts, outcomes + [(["x1", "x4"], False)], topology, evidence=1)[1] == {"x1"}
    assert group_screen.state(hosts, outcomes + [(["x1", "x4"], True)], topology, evidence=1)[1] == set()
    # without a topology the failure across the uplink confirms it at once
    assert group_screen.state(hosts, outcomes, evidence=1)[1] == {"x1"}
    # no known-good host of its own leaf: it waits (the rest of its leaf is screened again)
    early = [(["x1", "x2", "x3", "x4", "x5"], False), (["y1", "y2"], True), (["x1", "y1"], False)]
    assert group_screen.plan(hosts, early, topology=topology, evidence=1) == [
        {"hosts": ["x2", "x3"], "purpose": "rescreen"}, {"hosts": ["x4", "x5"], "purpose": "rescreen"}]
    # two runs per verdict: x4, x5 passed twice; two failing confirmations with them, inside its leaf, make x1 bad
    twice = outcomes[:1] + [(["x4", "x5"], True)] + outcomes[1:]
    assert group_screen.state(hosts, twice, topology)[1] == set()
    assert group_screen.plan(hosts, twice, topology=topology)[0] == {"hosts": ["x1", "x4"], "purpose": "confirm"}
    once = twice + [(["x1", "x4"], False)]
    assert group_screen.assess(hosts, once, topology)["suspects"] == {"x1": {"x4"}}
    assert group_screen.plan(hosts, once, topology=topology)[0] == {"hosts": ["x1", "x5"], "purpose": "confirm"}
    assert group_screen.state(hosts, once + [(["x1", "x5"], False)], topology)[1] == {"x1"}
    disagree = group_screen.assess(hosts, once + [(["x1", "x5"], True)], topology)
    assert disagree["bad"] == set() and disagree["doubt"] == {"x1": "disagree"}


def test_a_lone_host_of_its_leaf_is_judged_across_the_uplink_with_one_run_only():
    """One run per verdict judged a host alone in its leaf across the uplink; with two, it is never condemned across
    (its own uplink would fail the same runs: nothing tells them apart), it stays unresolved."""
    hosts = ["x1", "y1", "y2"]
    topology = {"x1": "X", "y1": "Y", "y2": "Y"}
    assert group_screen.state(hosts, [(["y1", "y2"], True), (["x1", "y1"], False)], topology, evidence=1)[1] == {"x1"}
    twice = [(["y1", "y2"], True), (["y1", "y2"], True), (["x1", "y1"], False), (["x1", "y2"], False)]
    assert group_screen.state(hosts, twice, topology)[1] == set()
    thrice = twice + [(["x1", "y1"], False)]         # named by no failing run of its own: a third confirmation
    assert group_screen.state(hosts, thrice, topology)[1] == set()
    assert group_screen.state(hosts, twice)[1] == set() and group_screen.state(hosts, thrice)[1] == {"x1"}  # no topology


def test_max_rounds_counts_the_span_tests():
    assert group_screen.max_rounds(64, evidence=1) == 10
    assert group_screen.max_rounds(64, groups=1, evidence=1) == 10
    assert group_screen.max_rounds(64, groups=8, evidence=1) == 10 + 2 + 2
    # each run of evidence beyond one: 4 rounds more for the hosts, 2 for the span tests
    assert group_screen.max_rounds(64) == 14 and group_screen.max_rounds(64, groups=8) == 14 + 2 + 2 + 2


def test_the_filters_carry_the_groups():
    from ansible_collections.aifabric.acceptance.plugins.filter.group_screen_rounds import group_screen_rounds
    assert group_screen_rounds(64, groups=8) == group_screen.max_rounds(64, groups=8) == 20
    assert group_screen_rounds(64, groups=8, evidence=1) == 14
    tests = plan_round(["a", "b", "c"], topology={"a": "leaf 1", "b": "leaf 1"}, group_size=2)
    assert [t["marker"] for t in tests] == ["round=0 purpose=screen hosts=a b groups=leaf%201 leaf%201 evidence=2 "
                                            "margin_pct=5"]
    assert group_screen.parse_marker(tests[0]["marker"])["groups"] == {"a": "leaf 1", "b": "leaf 1"}


def _measurer(topology, slow, bad):
    def measure(tests):
        crossing = [set(topology[h] for h in t["hosts"]) for t in tests]
        return [not set(t["hosts"]) & bad and not (slow in c and len(c) > 1) for t, c in zip(tests, crossing)]
    return measure


def test_random_fleets_with_a_slow_leaf_never_fail_a_healthy_host():
    """80 random fleets (4 to 16 leaves of uneven size, hosts shuffled, one slow leaf, 0 to 3 bad nodes elsewhere):
    no healthy host - of the slow leaf or any other - is ever confirmed bad; every bad node is bad or unresolved.

    Exact in 70 fleets or more; the rest have leaves of one or two hosts: a bad node alone in its leaf is never
    condemned (two runs per verdict judge a host inside its leaf; alone, a slow uplink of its own would fail the
    same runs), nor are two bad hosts that are a leaf between them. The slow leaf is named in 70 fleets or more,
    counting as named the fleets whose slow leaf is one host: that host passes no collective (across, its uplink is
    slow; alone, it runs none), so no test can name its leaf and it stays unresolved - asserted. The screen of one run
    per verdict named such a leaf only because ``run`` measured a "test" of that host alone in round 0 (the filter
    drops a test of one host: on real hosts it never ran)."""
    import random
    found = slow_named = 0
    for seed in range(80):
        rng = random.Random(seed)
        leaves, per = rng.choice([4, 6, 8, 12, 16]), rng.choice([2, 4, 8])
        hosts = ["n%03d" % i for i in range(leaves * per)]
        rng.shuffle(hosts)
        topology = dict((h, "leaf-%d" % rng.randrange(leaves)) for h in hosts)
        slow = rng.choice(sorted(set(topology.values())))
        bad = set(rng.sample([h for h in hosts if topology[h] != slow], rng.choice([0, 1, 2, 3])))

        result = group_screen.run(hosts, _measurer(topology, slow, bad), topology=topology,
                                  max_rounds=group_screen.max_rounds(len(hosts), groups=len(set(topology.values()))))
        assert set(result["bad"]) <= bad, (seed, result["bad"], sorted(bad))
        assert bad <= set(result["bad"]) | set(result["unresolved"]), seed
        assert result["slow_groups"] in ([], [slow]), seed
        found += set(result["bad"]) == bad
        lone = [h for h in hosts if topology[h] == slow]
        if len(lone) == 1:
            assert lone[0] in result["unresolved"] and result["slow_groups"] == [], seed
        slow_named += result["slow_groups"] == [slow] or len(lone) == 1
    assert found >= 70 and slow_named >= 70, (found, slow_named)          # the rest: leaves of one or two hosts
