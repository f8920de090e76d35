# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The group-testing screen on whole simulated fleets where some hosts' switches are unknown (their net.topology
record skip/error, or no fabric port known): in a screen that uses a topology, such a host has no group and can
only be confirmed across some uplink, so a failing confirmation never makes it bad - it is tried with known-good
hosts of other groups (a pass clears it), and stays unresolved (``warn``, its switch unknown) when they all fail.

Driven as playbooks/nccl_screen.yml does (the filter plans each round from the records so far and drops a test of
one host), with a simulated collective that fails with a bad node or across the slow leaf's uplink.
"""

from __future__ import annotations

from ansible_collections.aifabric.acceptance.plugins.filter.group_screen import group_screen as plan_round
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import group_screen
from ansible_collections.aifabric.acceptance.tests.unit.plugins.plugin_utils.test_screen_analysis import (
    CHECK, report_of, screen_record, verdicts)

A = ["a%d" % i for i in range(1, 5)]
B = ["b%d" % i for i in range(1, 5)]
SMALL = A + B
SMALL_LEAF = dict([(h, "leaf-A") for h in A] + [(h, "leaf-B") for h in B])

BIG = ["n%02d" % i for i in range(64)]
BIG_LEAF = dict((h, "leaf-%d" % (i % 8)) for i, h in enumerate(BIG))


def _passes(physical, slow, bad):
    def passes(hosts):
        leaves = set(physical[h] for h in hosts)
        return not set(hosts) & set(bad) and not (slow in leaves and len(leaves) > 1)
    return passes


def drive(hosts, topology, passes):
    records, rounds = [], []
    groups = len(set(topology.values()))
    for index in range(group_screen.max_rounds(len(hosts), groups=groups)):
        tests = plan_round(hosts, records=records, topology=topology, check=CHECK, round=index)
        if not tests:
            break
        rounds.append(tests)
        for test in tests:
            ok = passes(test["hosts"])
            records.append(screen_record(test, "pass" if ok else "fail", 345.7 if ok else 120.4))
    return records, rounds


def _without(physical, unknown):
    return dict((h, g) for h, g in physical.items() if h not in unknown)


def _screen_records(report):
    return dict((r["host"], r) for r in report["records"] if r["check"] == CHECK + ".screen")


def test_a_healthy_host_of_the_slow_leaf_without_a_group_is_not_failed():
    """The review's fleet: two leaves, leaf-B's uplink slow, no bad node, b4 (leaf-B) without a group. Before the
    fix b4 was confirmed with a1 (leaf-A) across the slow uplink and failed; now that failure does not make it bad,
    it is tried with a known-good host of the other leaf (b1), passes there, and every host passes."""
    records, rounds = drive(SMALL, _without(SMALL_LEAF, {"b4"}), _passes(SMALL_LEAF, "leaf-B", ()))
    report = report_of(records, SMALL)
    assert verdicts(report) == dict((h, "pass") for h in SMALL)
    tried = [t["hosts"] for r in rounds for t in r if "b4" in t["hosts"]]
    # two passes clear it (evidence 2): its recheck prefers the leaf it did not fail with
    assert tried == [["b4", "a1"], ["b4", "b1"], ["b4", "b1"]]
    assert len(rounds) == 5          # screen, recheck (every host's second pass), then b4's three tries
    # the same fleet with b4's leaf known: nobody fails either (unchanged)
    records, _rounds = drive(SMALL, SMALL_LEAF, _passes(SMALL_LEAF, "leaf-B", ()))
    assert verdicts(report_of(records, SMALL)) == dict((h, "pass") for h in SMALL)


def test_a_bad_host_without_a_group_is_named_unresolved_never_failed():
    """b4 really bad and without a group (no slow uplink): it fails with a known-good host of every leaf it is
    tried with; its switch unknown, that cannot tell it from a slow uplink of its own leaf, so it warns - with the
    reason saying so and naming the failed tests - and no other host is touched."""
    records, rounds = drive(SMALL, _without(SMALL_LEAF, {"b4"}), _passes(SMALL_LEAF, None, {"b4"}))
    report = report_of(records, SMALL)
    assert verdicts(report) == dict((h, "warn" if h == "b4" else "pass") for h in SMALL)
    reason = _screen_records(report)["b4"]["reason"]
    assert "switch is not known" in reason and "not failed" in reason
    assert "b4, a1" in reason and "b4, b1" in reason, reason
    assert [f for f in report["findings"] if f["analysis"] == "screen"] == []
    assert len(rounds) == 4          # screen, recheck (every host's second pass), b4 with a1, with b1


def test_without_any_topology_a_bad_host_is_still_failed():
    """No host has a group: the screen is the one without a topology, unchanged (b4 is confirmed bad)."""
    records, _rounds = drive(SMALL, {}, _passes(SMALL_LEAF, None, {"b4"}))
    assert verdicts(report_of(records, SMALL)) == dict((h, "fail" if h == "b4" else "pass") for h in SMALL)


def test_the_64_host_fleet_with_three_switches_unknown():
    """The 8-leaf fleet of test_group_screen_slow_leaf (leaf-0's uplink slow, n13 bad) with the switches of n13 (the
    bad node), n08 (a healthy host of the slow leaf) and n21 (a healthy host of leaf-5) unknown: no healthy host
    fails; n13 is named (warn, its switch unknown); n08 warns (it fails across the slow uplink with every host it
    is tried with, as its leaf does); n21 passes; leaf-0 is still named slow."""
    unknown = {"n13", "n08", "n21"}
    records, rounds = drive(BIG, _without(BIG_LEAF, unknown), _passes(BIG_LEAF, "leaf-0", {"n13"}))
    report = report_of(records, BIG)
    slow_leaf = [h for h in BIG if BIG_LEAF[h] == "leaf-0"]
    expected = dict((h, "warn" if h in slow_leaf or h == "n13" else "pass") for h in BIG)
    assert verdicts(report) == expected
    screen = _screen_records(report)
    assert "switch is not known" in screen["n13"]["reason"] and "switch is not known" in screen["n08"]["reason"]
    groups = [(f["kind"], f["hosts"]) for f in report["findings"] if f["analysis"] == "screen"]
    assert groups == [("group", [h for h in slow_leaf if h != "n08"])]
    assert len(rounds) <= group_screen.max_rounds(len(BIG), groups=8)


def test_state_a_failure_across_does_not_confirm_a_host_without_a_group():
    topology = {"a1": "A", "a2": "A", "b1": "B"}
    hosts = ["a1", "a2", "b1", "x"]
    outcomes = [(["a1", "a2"], True), (["b1", "a1"], True), (["x", "a1"], False)]
    good, bad, pools, _unknown = group_screen.state(hosts, outcomes, topology, evidence=1)
    assert bad == set() and pools == [["x"]] and "x" not in good
    # it is tried next with a known-good host of a group it has not failed with
    assert group_screen.plan(hosts, outcomes, topology=topology, evidence=1) == [
        {"hosts": ["x", "b1"], "purpose": "confirm"}]
    # failed with every group: nothing left to try, unresolved
    assert group_screen.plan(hosts, outcomes + [(["x", "b1"], False)], topology=topology, evidence=1) == []
    # no topology at all: the first failure confirms it (one run per verdict), as before
    assert group_screen.state(hosts, outcomes, evidence=1)[1] == {"x"}
    # two runs per verdict: a1 passed twice, a2 and b1 once - they are rechecked, x is not tried with b1 yet;
    # without a topology x needs two failing confirmations with known-good hosts
    assert group_screen.assess(hosts, outcomes, topology)["recheck"] == {"a2", "b1"}
    assert group_screen.state(hosts, outcomes)[1] == set()
    assert group_screen.state(hosts, outcomes + [(["x", "a2"], False)])[1] == set()      # a2 passed once only
    twice = outcomes[:1] + outcomes + [(["x", "a2"], False)]
    # with a1, then with a2 (both known good): no failing run of its own localised x (its confirmations are all the
    # evidence), so it takes a third confirmation with another known-good host before it is bad
    assert group_screen.state(hosts, twice)[1] == set() and group_screen.assess(hosts, twice)["suspects"] == {
        "x": {"a1", "a2"}}
    thrice = [(["b1", "a2"], True)] + twice + [(["x", "b1"], False)]
    assert group_screen.state(hosts, thrice)[1] == {"x"}
