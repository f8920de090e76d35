# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A node's verdict for a pairwise check comes only from attribution over the matrix (verdict.host_records).

Before: a pair that attribution could not judge (a single pair of its check and rail) counted toward BOTH ends with
its own status, so one low measurement - sent by the client - failed the server too, on the client's word alone.
Now every matrix with a measured pair goes through attribution: a pair it cannot attribute gives both ends ``warn``
"needs confirmation", never ``fail``. Whole fleets come from synthetic_fleet.py (real pairings filter, real
expectations; invented figures).
"""

from __future__ import annotations

from ansible_collections.aifabric.acceptance.plugins.filter.confirmation_rounds import confirmation_rounds
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import fleet, verdict
from ansible_collections.aifabric.acceptance.tests.unit.plugins.plugin_utils import synthetic_fleet
from ansible_collections.aifabric.acceptance.tests.unit.plugins.plugin_utils.test_attribution import (
    CHECK, bw_record, full_mesh)

RUN = {"run_id": "pairwise", "started": synthetic_fleet.STARTED, "ended": "2026-11-22T10:30:00Z"}


def statuses(records):
    report = fleet.build_report(records, dict(RUN))
    return dict((h["host"], h["status"]) for h in report["summary"]["hosts"]), report


def test_two_hosts_whose_one_pair_is_low_are_neither_failed():
    records = synthetic_fleet.pair_records("srv", "cli", 150.0)        # below the 360 Gbit/s floor: the record fails
    assert [r["status"] for r in records] == ["fail", "pass"]
    status, report = statuses(records)
    assert status == {"srv": "warn", "cli": "warn"}
    node = dict((r["host"], r) for r in report["records"] if r["check"] == synthetic_fleet.CHECK + ".node")
    assert sorted(node) == ["cli", "srv"]
    assert all(r["status"] == "warn" and r["reason"].startswith("needs confirmation") for r in node.values())
    # the measured records stay in the report, with their own statuses, and count toward no host
    assert [r["status"] for r in report["records"][:2]] == ["fail", "pass"]
    assert not [r for recs in verdict.host_records(report["records"]).values() for r in recs if verdict.is_pairwise(r)]


def test_two_hosts_whose_one_pair_is_good_pass():
    status, _report = statuses(synthetic_fleet.pair_records("srv", "cli", 390.0))
    assert status == {"srv": "pass", "cli": "pass"}


def test_a_lone_pair_that_never_ran_warns_both_ends():
    status, _report = statuses([bw_record("a", "b", None, status="error"),
                                bw_record("b", "a", None, status="error", check=CHECK + ".server")])
    assert status == {"a": "warn", "b": "warn"}


def test_whole_fleet_exactly_the_bad_node_fails_and_a_lone_low_pair_elsewhere_fails_nobody():
    built = synthetic_fleet.build(24, mode="all")
    healthy = [h for h in built.hosts if h != built.bad_node and h not in built.bad_link]
    one, other = healthy[0], healthy[1]
    lone = synthetic_fleet.pair_records(other, one, 120.0)            # a second rail, one pair, low
    for rec in lone:
        rec["target"] = "mlx5_1"
    status, _report = statuses(built.records + lone)
    assert sorted(h for h, s in status.items() if s == "fail") == [built.bad_node]
    assert sorted(h for h, s in status.items() if s == "warn") == sorted(set(built.bad_link) | {one, other})
    assert sorted(h for h, s in status.items() if s == "pass") == sorted(set(healthy) - {one, other})
    assert "error" not in status.values()


def test_unmeasured_hosts_join_the_confirmation_pass():
    """A host none of whose pairs measured anything (its one pair was with the bad node) is re-tested with
    known-good peers, as a suspect, never used as the known-good peer of another suspect."""
    hosts, recs = full_mesh(8, bad_nodes=["n03"])
    recs.append(bw_record("n09", "n03", None, status="error"))
    assert statuses(recs)[0]["n09"] == "warn"
    pairs = [frozenset(pair) for rnd in confirmation_rounds(recs, hosts + ["n09"], per_suspect=2) for pair in rnd]
    with_n09 = [next(iter(p - {"n09"})) for p in pairs if "n09" in p]
    assert len(with_n09) == 2 and "n03" not in with_n09 and set(with_n09) <= set(hosts) - {"n03"}
    assert len([p for p in pairs if "n03" in p]) == 2


def test_compared_matrices_are_the_judged_matrices_with_two_measured_pairs_whatever_the_records_order():
    """verdict.compared_matrices stops walking once every judged matrix has two pairs (a 512-host all-pairs report
    walked 261,632 records for it twice in coverage): the set is the full walk's in every order - a lone pair's
    matrix (rail mlx5_1) is never compared, a skip is no measured pair, a server record joins its client's matrix,
    a matrix attribution did not judge (rail mlx5_2) is not in the set, and no judged matrix: the empty set."""
    from ansible_collections.aifabric.acceptance.plugins.module_utils import results
    from ansible_collections.aifabric.acceptance.plugins.plugin_utils import analysis_records

    def pair(host, peer, rail, check="rdma.ib_write_bw", status="pass"):
        return results.make(check, status, host=host, peer=peer, target=rail, tool={"name": "perftest"},
                            reason="not run" if status == "skip" else None)

    measured = [pair("n1", "n2", "mlx5_0"), pair("n3", "n4", "mlx5_0", status="skip"),
                pair("n3", "n4", "mlx5_0", check="rdma.ib_write_bw.server"), pair("n5", "n6", "mlx5_0"),
                pair("n1", "n2", "mlx5_1"), pair("n1", "n3", "mlx5_1", status="skip"),
                pair("n1", "n2", "mlx5_2"), pair("n3", "n4", "mlx5_2")]
    judged = [analysis_records.record(verdict.ATTRIBUTION, "rdma.ib_write_bw.node", "pass", host, target=rail,
                                      facts={"measured_check": "rdma.ib_write_bw"})
              for host, rail in (("n1", "mlx5_0"), ("n1", "mlx5_1"))]
    assert verdict.compared_matrices(measured) == set()
    for order in (measured, measured[::-1], measured[3:] + measured[:3]):
        assert verdict.compared_matrices(order + judged) == {("rdma.ib_write_bw", "mlx5_0")}
    # the skip alone does not make a second pair: without the server's record mlx5_0 has one pair besides n5-n6...
    assert verdict.compared_matrices([measured[0], measured[1]] + judged) == set()
    # ...and the server's record of n3-n4 is that second pair
    assert verdict.compared_matrices([measured[0], measured[2]] + judged) == {("rdma.ib_write_bw", "mlx5_0")}
