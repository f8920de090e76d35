# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The group screen's host verdicts (plugin_utils/screen_analysis.py, verdict.host_records, the coverage of hosts
that never launched) on whole simulated fleets: the screen is driven the way playbooks/nccl_screen.yml drives it
(the filter aifabric.acceptance.group_screen plans each round from the records so far, each test gives the record
of a multi-node nccl.all_reduce run launched from its first host, with the AIFABRIC_SCREEN marker in params.env),
then the report is built from those records as the callback builds it. Exactly the bad nodes fail; a failing group
fails neither its launcher nor its other hosts."""

from __future__ import annotations

import random

import pytest

from ansible_collections.aifabric.acceptance.plugins.filter.group_screen import group_screen as plan_round
from ansible_collections.aifabric.acceptance.plugins.module_utils import results
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import fleet, group_screen, screen_analysis, stream, verdict

CHECK = "nccl.all_reduce"


def screen_record(test, status, busbw):
    """The record nccl_test gives for one screen test (the launcher's, the marker in params.env)."""
    reason = None if status == "pass" else ("busbw_max_gbyte_s %s < min 300" % busbw if status == "fail"
                                            else "nccl-tests exited with rc 1 although it printed its table")
    return results.make(CHECK, status, reason=reason, host=test["hosts"][0], metrics={"busbw_max_gbyte_s": busbw},
                        facts={"launch": "mpirun", "nodes": len(test["hosts"]), "shape": "%d nodes" % len(test["hosts"])},
                        params={"argv": ["/usr/bin/mpirun", "-np", str(len(test["hosts"]))],
                                "env": {"NCCL_IB_HCA": "=mlx5_0", group_screen.MARKER_ENV: test["marker"]}},
                        tool={"name": "nccl-tests", "version": "2.19.6"})


def drive(hosts, bad, group_size=0, topology=None, crashing=(), max_rounds=None):
    """Run the screen to its end as the playbook does; returns (records, rounds)."""
    records, rounds = [], []
    for index in range(max_rounds or group_screen.max_rounds(len(hosts), group_size or None)):
        tests = plan_round(hosts, records=records, group_size=group_size, topology=topology or {}, check=CHECK,
                           round=index)
        if not tests:
            break
        rounds.append(tests)
        for test in tests:
            members = set(test["hosts"])
            if members & set(crashing):
                records.append(screen_record(test, "error", 345.7))
            elif members & set(bad):
                records.append(screen_record(test, "fail", 120.4))
            else:
                records.append(screen_record(test, "pass", 345.7))
    return records, rounds


def report_of(records, hosts):
    """The report as the callback builds it: the measured records, the coverage of hosts without one, analysed."""
    collected = records + stream.missing_host_records(records, hosts)
    return fleet.build_report(collected, {"run_id": "r1", "started": "2026-01-01T00:00:00Z"})


def verdicts(report):
    return dict((h["host"], h["status"]) for h in report["summary"]["hosts"])


@pytest.mark.parametrize("n, d, seed", [(8, 1, 1), (16, 2, 2), (37, 3, 3), (64, 2, 4), (100, 4, 5)])
def test_a_simulated_screen_fails_exactly_the_bad_nodes(n, d, seed):
    hosts = ["gpu%03d" % i for i in range(n)]
    bad = sorted(random.Random(seed).sample(hosts, d))
    records, rounds = drive(hosts, bad)
    report = report_of(records, hosts)
    assert report["problems"] == []
    got = verdicts(report)
    assert sorted(h for h, s in got.items() if s == "fail") == bad
    assert set(got) == set(hosts) and all(got[h] == "pass" for h in hosts if h not in bad)
    nodes = [f for f in report["findings"] if f["analysis"] == "screen"]
    assert sorted(f["hosts"][0] for f in nodes) == bad and all(f["kind"] == "node" for f in nodes)
    for finding in nodes:                       # the evidence: the confirming test, with known-good hosts only
        proof = finding["evidence"]["confirmed_by"]
        assert finding["hosts"][0] in proof["hosts"] and proof["status"] == "fail"
        assert not set(finding["evidence"]["known_good_with"]) & set(bad)
    screen = [r for r in report["records"] if r["check"] == CHECK + ".screen"]
    assert sorted(r["host"] for r in screen) == sorted(hosts)                # one per host
    assert len(rounds) <= group_screen.max_rounds(n)


def test_a_failing_group_fails_neither_its_launcher_nor_its_other_hosts():
    hosts = ["a", "b", "c", "d", "e", "f", "g", "h"]
    records, rounds = drive(hosts, ["f"], group_size=4)
    assert [t["hosts"] for t in rounds[0]] == [["a", "b", "c", "d"], ["e", "f", "g", "h"]]
    first = [r for r in records if r["host"] == "e"][0]
    assert first["status"] == "fail"                             # the launcher's record of the failing group
    counted = verdict.host_records(report_of(records, hosts)["records"])
    assert not [r for r in counted["e"] if r["check"] == CHECK]  # ... counts toward no host
    got = verdicts(report_of(records, hosts))
    assert got == dict((h, "fail" if h == "f" else "pass") for h in hosts)
    # screen; the failing group's first half, and the passing group again (two passes make a host known good); the
    # half's first host with a known-good one (e passes, f is the pool) and the failing group's other half screened
    # again; f with known-good a (its first failing confirmation) and e, g, h again; f with another known-good host
    assert [[(t["purpose"], t["hosts"]) for t in r] for r in rounds] == [
        [("screen", ["a", "b", "c", "d"]), ("screen", ["e", "f", "g", "h"])],
        [("bisect", ["e", "f"]), ("recheck", ["a", "b", "c", "d"])],
        [("confirm", ["e", "a"]), ("rescreen", ["g", "h"])],
        [("confirm", ["f", "a"]), ("recheck", ["e", "g", "h"])],
        [("confirm", ["f", "b"])]]
    finding = [f for f in report_of(records, hosts)["findings"] if f["analysis"] == "screen"]
    assert [(f["kind"], f["hosts"], f["evidence"]["confirmed_by"]["hosts"]) for f in finding] == [("node", ["f"], ["f", "a"])]
    assert [c["hosts"] for c in finding[0]["evidence"]["confirmations"]] == [["f", "a"], ["f", "b"]]
    assert finding[0]["evidence"]["known_good_with"] == ["a", "b"]


def test_without_the_analysis_the_records_count_toward_their_launcher_as_before():
    hosts = ["a", "b", "c", "d"]
    records, _rounds = drive(hosts, ["c"], group_size=4)
    counted = verdict.host_records(records)
    assert [(r["status"], group_screen.screen_of(r)["hosts"]) for r in counted["a"]] == [
        ("fail", ["a", "b", "c", "d"]), ("pass", ["a", "b"]), ("pass", ["a", "b"])]    # bisect, then its recheck


def test_unresolved_hosts_warn_with_why_and_a_host_of_skipped_tests_skips():
    hosts = ["a", "b", "c", "d"]
    records, _rounds = drive(hosts, ["a", "b", "c", "d"], group_size=2)    # every group fails: nothing known good
    report = report_of(records, hosts)
    got = verdicts(report)
    assert got == dict((h, "warn") for h in hosts)
    why = [r["reason"] for r in report["records"] if r["check"] == CHECK + ".screen"]
    assert all(w.startswith("unresolved: in 1 failing group test(s)") for w in why)
    test = {"hosts": ["x", "y"], "marker": group_screen.marker(0, "screen", ["x", "y"])}
    skipped = [results.make(CHECK, "skip", reason="no nccl-tests", host="x",
                            params={"env": {group_screen.MARKER_ENV: test["marker"]}})]
    report = report_of(skipped, ["x", "y"])
    assert verdicts(report) == {"x": "skip", "y": "skip"}


def test_a_crashing_node_is_found_like_a_slow_one():
    hosts = ["n%02d" % i for i in range(16)]
    records, _rounds = drive(hosts, [], crashing=["n09"])
    got = verdicts(report_of(records, hosts))
    assert [h for h, s in got.items() if s != "pass"] == ["n09"] and got["n09"] == "fail"


def test_topology_keeps_groups_inside_a_leaf():
    hosts = ["l%dh%d" % (leaf, i) for leaf in range(3) for i in range(4)]
    topology = dict((h, h[:2]) for h in hosts)
    records, rounds = drive(hosts, ["l1h2"], group_size=4, topology=topology)
    assert [sorted(set(topology[h] for h in t["hosts"])) for t in rounds[0]] == [["l0"], ["l1"], ["l2"]]
    assert [h for h, s in verdicts(report_of(records, hosts)).items() if s == "fail"] == ["l1h2"]


def test_only_measured_records_with_a_marker_are_screen_records():
    marker = group_screen.marker(2, "bisect", ["a", "b"])
    assert group_screen.parse_marker(marker) == {"round": 2, "purpose": "bisect", "hosts": ["a", "b"], "groups": {},
                                                 "rules": group_screen.LEGACY}       # a marker naming no rules
    for value in ("", "round=x purpose=bisect hosts=a b", "round=1 purpose=guess hosts=a b", "round=1 purpose=screen hosts=a",
                  None, 3):
        assert group_screen.parse_marker(value) is None
    rec = results.make(CHECK, "pass", host="a", params={"env": {group_screen.MARKER_ENV: marker}})
    assert group_screen.is_screen_record(rec)
    judged = dict(rec, tool={"name": "fleet-analysis", "version": "screen"})
    assert not group_screen.is_screen_record(judged)
    with pytest.raises(ValueError):
        group_screen.marker(0, "screen", ["a b", "c"])
    assert screen_analysis.analyze([results.make(CHECK, "pass", host="a")]) == ([], [])
