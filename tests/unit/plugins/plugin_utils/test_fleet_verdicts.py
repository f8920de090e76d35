# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Verdicts on whole fleets (issue 7): the report pipeline (fleet.build_report: analyses + summary)
on fleets with a known bad node and a known bad link, on the real 2x H200 run, and with required checks.

Pairwise fleets come from synthetic_fleet.py (real pairings filter, real expectations, real
confirmation pass; invented figures). Before issue 7 a pair record's own fail failed its client and
the fleet-relative analysis added a ``.fleet`` fail for it: 12 of 24 hosts failed with all pairs,
256 of 512, and in a ring the slow node's neighbour and both ends of the slow link failed.
"""

from __future__ import annotations

import copy
import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.aifabric.acceptance.plugins.module_utils import results
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import Context, nccl_test as nccl_tests
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import analysis_records, fleet, verdict
from ansible_collections.aifabric.acceptance.tests.unit.plugins.plugin_utils import synthetic_fleet
from ansible_collections.aifabric.acceptance.tests.unit.helpers import parser_fixture

HERE = os.path.dirname(os.path.abspath(__file__))
H200_RUN = os.path.join(HERE, "fixtures", "h200x2-acceptance-results.json")
RUN = {"run_id": "verdicts", "started": synthetic_fleet.STARTED, "ended": "2026-11-22T10:30:00Z"}
MODES = {
    "all": dict(mode="all"),
    "all-directed": dict(mode="all", directed=True),
    "ring+confirmation": dict(mode="ring", confirm=True),
    "random+confirmation": dict(mode="random", random_rounds=1, confirm=True),
}


def report_of(records, config=None):
    return fleet.build_report(list(records), dict(RUN), config)


def by_status(summary):
    out = {}
    for entry in summary["hosts"]:
        out.setdefault(entry["status"], set()).add(entry["host"])
    return out


def assert_one_fail_two_warn(built, report):
    summary = report["summary"]
    hosts = by_status(summary)
    assert hosts.get("fail") == {built.bad_node}
    assert hosts.get("warn") == set(built.bad_link)
    assert hosts.get("pass") == set(built.hosts) - {built.bad_node} - set(built.bad_link)
    assert set(hosts) == {"fail", "warn", "pass"}
    assert summary["failed_hosts"] == [built.bad_node]
    assert summary["worst_status"] == "fail" and summary["hosts_total"] == len(built.hosts)
    assert summary["verdict"] == "FAIL: %d hosts: 1 fail, 2 warn, %d pass" % (len(built.hosts), len(built.hosts) - 3)
    # the node's verdict names the node, the link ends' verdicts name the link (analysis records; the
    # measured pair records keep their own statuses but count toward no host)
    added = [r for r in report["records"] if analysis_records.is_analysis_record(r)]
    node = [r for r in added if r["host"] == built.bad_node and r["status"] == "fail"]
    assert [r["check"] for r in node] == [synthetic_fleet.CHECK + ".node"]
    a, b = sorted(built.bad_link)
    for end in (a, b):
        warned = [r for r in added if r["host"] == end and r["status"] == "warn"]
        assert [r["check"] for r in warned] == [synthetic_fleet.CHECK + ".link"]
        assert "suspect link %s <-> %s" % (a, b) in warned[0]["reason"]
    # fleet-relative never re-judges the pairs attribution owns
    assert [f for f in report["findings"] if f["kind"] == "fleet_outlier"] == []
    assert not any(r["check"].endswith(".fleet") for r in report["records"])


@pytest.mark.parametrize("mode", sorted(MODES))
@pytest.mark.parametrize("size", [24, 64])
def test_one_bad_node_and_one_bad_link_give_one_fail_and_two_warn(mode, size):
    built = synthetic_fleet.build(size, **MODES[mode])
    measured = copy.deepcopy(built.records)
    report = report_of(built.records)
    assert_one_fail_two_warn(built, report)
    # the measured records are in the report untouched (their own fails included): analyses only add
    assert report["records"][:len(measured)] == measured
    link = [r for r in measured if frozenset((r["host"], r["peer"])) == built.bad_link
            and r["check"] == synthetic_fleet.CHECK]
    assert link and all(r["status"] == "fail" for r in link)


NOISY = {
    # all pairs: every node has 63 pairs, so a few transiently low ones never make a majority
    "all": (dict(mode="all"), ((0.02, 0.0), (0.05, 0.0), (0.02, 0.1))),
    # three random matchings and the confirmation pass (2 known-good partners per suspect)
    "random3+confirmation": (dict(mode="random", random_rounds=3, confirm=True), ((0.02, 0.0), (0.02, 0.1))),
}


@pytest.mark.parametrize("seed", range(7, 12))
@pytest.mark.parametrize("mode", sorted(NOISY))
def test_noisy_fleet_fails_exactly_the_bad_node(mode, seed):
    """64 hosts, a bad node and a bad link; on top, a healthy pair is transiently low (60 % of its figure, under its
    floor: a record of its own that fails) with probability p and a pair through the bad node measures healthy with
    probability q (seeded). Exactly the bad node fails; the bad link's ends and the ends of each transiently low pair
    warn, each naming its link; every other host passes."""
    schedule, noises = NOISY[mode]
    for transient, miss in noises:
        built = synthetic_fleet.build(64, seed=seed, transient=transient, miss=miss, **schedule)
        report = report_of(built.records)
        hosts = by_status(report["summary"])
        transient_ends = set(h for pair in built.transients for h in pair)
        # a confirmation pair through the bad node that measured healthy (q) makes its confirmations disagree: warn
        judged = "warn" if built.bad_node in hosts.get("warn", ()) and miss else "fail"
        assert hosts.get("fail", set()) == ({built.bad_node} if judged == "fail" else set()), (transient, miss)
        assert hosts.get("warn") - {built.bad_node} == set(built.bad_link) | transient_ends, (transient, miss)
        assert hosts.get("pass") == set(built.hosts) - {built.bad_node} - set(built.bad_link) - transient_ends
        links = set(frozenset(f["hosts"]) for f in report["findings"] if f["kind"] == "link")
        assert links == {built.bad_link} | set(built.transients)
        low = [r for r in built.records if frozenset((r["host"], r["peer"])) in set(built.transients)
               and r["check"] == synthetic_fleet.CHECK]
        assert low and all(r["status"] == "fail" for r in low)      # each a fail on one run, none a host's verdict
        assert all(r["params"]["runs"] == 1 for r in low)


@pytest.mark.parametrize("seed", range(7, 12))
def test_noisy_ring_fails_exactly_the_bad_node(seed):
    """64 hosts in a ring with the confirmation pass, a bad node and a bad link, a healthy pair transiently low with
    probability 2 % and 5 %: exactly the bad node fails. A healthy host has two ring pairs: where both were
    transiently low (and a confirmation pair too), it is a suspect node that no two known-good hosts are low with -
    `warn` "needs confirmation", never `fail` (seed 9 at 5 %: gpu0019, low with its two ring partners and one of its
    two confirmation partners). Every warn is an end of the bad link or of a transient pair."""
    for transient in (0.02, 0.05):
        built = synthetic_fleet.build(64, seed=seed, transient=transient, mode="ring", confirm=True)
        report = report_of(built.records)
        hosts = by_status(report["summary"])
        transient_ends = set(h for pair in built.transients for h in pair)
        assert hosts.get("fail") == {built.bad_node}, transient
        assert set(built.bad_link) <= hosts.get("warn", set()) <= set(built.bad_link) | transient_ends
        assert hosts.get("pass") == set(built.hosts) - {built.bad_node} - hosts["warn"]
        for rec in report["records"]:
            if rec["check"] == synthetic_fleet.CHECK + ".node" and rec["status"] == "warn":
                assert rec["reason"].startswith(("needs confirmation", "inconclusive")), rec["reason"]


@pytest.mark.parametrize("mode", ["all", "ring+confirmation", "random+confirmation"])
def test_512_hosts(mode):
    built = synthetic_fleet.build(512, **MODES[mode])
    assert_one_fail_two_warn(built, report_of(built.records))


def test_ring_neighbours_of_the_slow_node_pass():
    built = synthetic_fleet.build(24, mode="ring")
    neighbours = set(h for rnd in built.rounds for pair in rnd if built.bad_node in pair for h in pair)
    neighbours.discard(built.bad_node)
    assert len(neighbours) == 2
    hosts = dict((h["host"], h["status"]) for h in report_of(built.records)["summary"]["hosts"])
    assert [hosts[h] for h in sorted(neighbours)] == ["pass", "pass"]


def test_ring_bad_link_next_to_the_slow_nodes_neighbour_is_settled_by_the_confirmation_pass():
    """A ring host whose both pairs are bad looks like a node; re-tested with good peers it is a link end. Before the
    confirmation pass nobody fails: the bad node and that neighbour are suspects that no known-good host is low
    with yet (their ring partners have one other pair each), `warn` "needs confirmation"."""
    built = synthetic_fleet.Fleet(24, mode="ring")
    neighbour = built.hosts[built.hosts.index(built.bad_node) + 1]
    built.bad_link = frozenset((neighbour, built.hosts[built.hosts.index(neighbour) + 1]))
    built.measure(built.rounds)
    report = report_of(built.records)
    assert report["summary"]["failed_hosts"] == []
    pending = dict((r["host"], r["reason"]) for r in report["records"] if r["check"] == synthetic_fleet.CHECK + ".node"
                   and r["status"] == "warn" and r["facts"]["attribution"] == "suspect")
    assert sorted(pending) == sorted([built.bad_node, neighbour])
    assert all(reason.startswith("needs confirmation: 2 of 2 pairs") for reason in pending.values())
    built.confirm()
    assert_one_fail_two_warn(built, report_of(built.records))


@pytest.mark.parametrize("size", [24, 64])
def test_a_ring_without_the_confirmation_pass_fails_nobody(size):
    """A ring gives every host two pairs, with two hosts that have one other pair each: no known-good host is low
    with the bad node yet, so it is `warn` "needs confirmation" (a suspect of the confirmation pass), its two ring
    partners pass (their low pair is explained by it), the bad link's ends warn, every other host passes."""
    built = synthetic_fleet.build(size, mode="ring")
    report = report_of(built.records)
    hosts = by_status(report["summary"])
    assert "fail" not in hosts and hosts.get("warn") == {built.bad_node} | set(built.bad_link)
    node = [r for r in report["records"] if r["host"] == built.bad_node and r["check"] == synthetic_fleet.CHECK + ".node"]
    assert [r["facts"]["attribution"] for r in node] == ["suspect"] and node[0]["facts"]["witnesses"] == []
    finding = [f for f in report["findings"] if f["kind"] == "node"]
    assert [(f["hosts"], f["evidence"]["needs_confirmation"]) for f in finding] == [([built.bad_node], True)]


def test_random_screening_without_confirmation_warns_needs_confirmation():
    built = synthetic_fleet.build(24, mode="random", random_rounds=1)
    report = report_of(built.records)
    hosts = by_status(report["summary"])
    partner = next(h for rnd in built.rounds for p in rnd if built.bad_node in p for h in p if h != built.bad_node)
    # one matching cannot tell node from link: both ends of each low pair need confirmation, nobody fails yet
    assert hosts.get("warn") == set(built.bad_link) | {built.bad_node, partner}
    assert "fail" not in hosts
    reasons = [r["reason"] for r in report["records"] if r["status"] == "warn"]
    assert len(reasons) == 4 and all(reason.startswith("needs confirmation") for reason in reasons)


def test_a_slow_link_judges_both_ends_once():
    """Before: the client failed twice (its record, a .fleet fail) and the server passed."""
    built = synthetic_fleet.build(24, mode="all")
    summary = report_of(built.records)["summary"]
    entries = dict((h["host"], h) for h in summary["hosts"])
    a, b = sorted(built.bad_link)
    assert entries[a]["counts"] == entries[b]["counts"]
    assert entries[a]["counts"]["warn"] == 1 and entries[a]["counts"]["fail"] == 0
    assert entries[a]["checks"] == entries[b]["checks"] == [synthetic_fleet.CHECK + ".link"]


def test_pairwise_records_count_toward_no_host():
    built = synthetic_fleet.build(8, mode="all")
    report = report_of(built.records)
    counted = verdict.host_records(report["records"])
    for host, recs in counted.items():
        assert not [r for r in recs if verdict.is_pairwise(r)], host
        assert [r["check"] for r in recs if r["check"].endswith(".node")] == [synthetic_fleet.CHECK + ".node"]
    # a second rail with a single pair is judged too (test_verdict_pairwise.py): its records count toward no host
    lone = synthetic_fleet.pair_records(built.hosts[0], built.hosts[1], 390.0)
    for rec in lone:
        rec["target"] = "mlx5_1"
    counted = verdict.host_records(report_of(built.records + lone)["records"])
    for host in built.hosts[:2]:
        assert not [r for r in counted[host] if verdict.is_pairwise(r)]
        assert [r["status"] for r in counted[host] if r["target"] == "mlx5_1"] == ["pass"]


# ------------------------------------------------------------------ real records: skip below pass


def h200_records():
    return fleet.load_results(H200_RUN)["records"]


def test_the_real_h200_run_is_judged_by_what_ran_not_skip():
    report = report_of(h200_records())
    [host] = report["summary"]["hosts"]
    # 20 pass, 12 skip (optional packages, no nccl-tests, no RDMA device), 1 soft-floor warn (gemm_fp16 GPU 0),
    # and 4 peers records (each GPU's GEMM within its sibling's: pass)
    assert host["counts"] == {"pass": 24, "warn": 1, "fail": 0, "skip": 12, "error": 0}
    assert host["status"] == "warn" and host["checks"] == ["gpu.gemm_fp16"]


def test_a_healthy_fleet_with_optional_skips_passes():
    """The real run's records (without its one soft-floor warn) on four hosts: pass, not SKIP."""
    records = []
    for name in ("h200-a", "h200-b", "h200-c", "h200-d"):
        for rec in h200_records():
            if rec["status"] != "warn":
                records.append(dict(rec, host=name))
    summary = report_of(records)["summary"]
    assert summary["worst_status"] == "pass"
    assert summary["hosts_by_status"] == {"pass": 4, "warn": 0, "fail": 0, "skip": 0, "error": 0}
    assert summary["failed_hosts"] == [] and summary["verdict"] == "PASS: 4 hosts: 4 pass"


def test_a_host_is_skip_only_when_nothing_ran():
    records = [results.skip("gpu.inventory", "no NVIDIA GPU: nvidia-smi not found", host="cpu-1"),
               results.skip("rdma.inventory", "no RDMA device: /sys/class/infiniband is empty", host="cpu-1")]
    summary = report_of(records)["summary"]
    assert summary["hosts"][0]["status"] == "skip" and summary["worst_status"] == "skip"
    records.append(results.make("env.os", "pass", host="cpu-1"))
    assert report_of(records)["summary"]["worst_status"] == "pass"


# ------------------------------------------------------------------ required checks


def gpu_less_copy(host):
    """The real run's records as a GPU node whose GPU probe found no GPU (every gpu.* check skipped)."""
    out = []
    for rec in h200_records():
        if rec["check"].startswith("gpu.") or rec["check"].startswith("nccl."):
            if rec["check"] == "gpu.inventory":
                out.append(dict(results.skip("gpu.inventory", "no NVIDIA GPU: nvidia-smi not found on PATH",
                                             host=host, started=rec["started"])))
            continue
        out.append(dict(rec, host=host))
    out.append(results.skip("gpu.gemm_bf16", "no GPU found by the probe", host=host))
    return out


def test_a_gpu_node_whose_required_gpu_checks_skipped_fails():
    records = [dict(r, host="gpu-a") for r in h200_records() if r["status"] != "warn"] + gpu_less_copy("gpu-b")
    # without required checks both are pass: a skipped check says nothing
    assert report_of(records)["summary"]["failed_hosts"] == []
    config = {"required_checks": {"gpu-a": ["gpu.*"], "gpu-b": ["gpu.*", "gpu.gemm_*"], "*": ["env.os"]}}
    report = report_of(records, config)
    assert report["summary"]["failed_hosts"] == ["gpu-b"]
    required = [r for r in report["records"] if r["check"] == "env.required"]
    assert [(r["host"], r["target"], r["status"]) for r in required] == [
        ("gpu-b", "gpu.*", "fail"), ("gpu-b", "gpu.gemm_*", "fail")]
    assert required[0]["reason"] == (
        "required gpu.*: 2 of 2 matching checks only skipped on gpu-b (gpu.gemm_bf16: no GPU found by the probe; "
        "gpu.inventory: no NVIDIA GPU: nvidia-smi not found on PATH)")
    assert required[0]["facts"]["skipped_checks"] == ["gpu.gemm_bf16", "gpu.inventory"]
    assert [f["hosts"] for f in report["findings"] if f["kind"] == "required_not_run"] == [["gpu-b"], ["gpu-b"]]


def test_a_required_check_with_no_record_fails_and_skipped_nccl_tests_fail_when_required():
    records = [r for r in h200_records() if r["status"] != "warn"]
    required = ["nccl.*", "hccl.*", "env.os", "env.package"]
    report = report_of(records, {"required_checks": {"h200x2": required}})
    reasons = dict((r["target"], r["reason"]) for r in report["records"] if r["check"] == "env.required")
    assert sorted(reasons) == ["hccl.*", "nccl.*"]
    assert reasons["hccl.*"] == "required check hccl.* did not run on h200x2 (no record of it)"
    # the torch all-reduce ran, but every nccl-tests binary was missing: a required glob needs every check it matches
    assert reasons["nccl.*"].startswith("required nccl.*: 7 of 8 matching checks only skipped on h200x2 "
                                        "(nccl.all_gather: all_gather_perf not found on PATH")
    # env.package: torch ran (pass) and the optional packages' skips belong to the same check: satisfied
    assert report["summary"]["failed_hosts"] == ["h200x2"]


def test_a_pairwise_record_counts_as_run_on_both_ends():
    built = synthetic_fleet.build(8, mode="random", random_rounds=1)
    report = report_of(built.records, {"required_checks": {"*": [synthetic_fleet.CHECK]}})
    # half the hosts only served (no client record of their own): the check still ran on them
    assert [r for r in report["records"] if r["check"] == "env.required"] == []


@pytest.mark.parametrize("bad", [["gpu.*"], {"h": 5}, {"h": [""]}])
def test_malformed_required_checks_make_every_host_an_error(bad):
    """Required checks that cannot be read cannot be judged: loud, never a silent pass."""
    report = report_of([results.make("env.os", "pass", host="h"), results.make("env.os", "pass", host="g")],
                       {"required_checks": bad})
    errors = [r for r in report["records"] if r["check"] == "env.required"]
    assert sorted(r["host"] for r in errors) == ["g", "h"]
    assert all(r["status"] == "error" and "required_checks" in r["reason"] for r in errors)
    assert report["summary"]["worst_status"] == "error"


def test_required_config_survives_json():
    config = {"required_checks": {"*": "gpu.*"}}
    assert verdict.required_patterns(json.loads(json.dumps(config))) == {"*": ["gpu.*"]}


# ------------------------------------------------------------------ records that are not measurements


def test_a_received_record_with_a_nonfinite_metric_is_an_error_not_a_pass():
    """Issue 7: plain() turned NaN into null and the record stayed pass."""
    rec = fleet.normalize({"check": "gpu.gemm_bf16", "status": "pass", "target": "0",
                           "metrics": {"tflops": float("nan")}}, "gpu-a")
    assert rec["status"] == "error" and rec["metrics"] == {"tflops": None}
    assert rec["reason"].startswith("metric tflops is not a finite number (nan)")


def test_reanalysis_turns_malformed_and_nonfinite_records_into_errors_and_keeps_the_rest():
    data = fleet.load_results(H200_RUN)
    good = len(data["records"])
    data["records"] = data["records"] + [
        {"check": "env.os", "status": "pass", "host": 5},
        {"check": "gpu.gemm_bf16", "status": "pass", "host": "h200x2", "metrics": {"tflops": float("inf")}},
    ]
    report = fleet.reanalyze(data)
    measured = [r for r in report["records"] if not analysis_records.is_analysis_record(r)]
    assert len(measured) == good + 2
    assert [r["status"] for r in measured[good:]] == ["error", "error"]
    assert "host must be a string" in measured[good]["reason"]
    assert report["summary"]["worst_status"] == "error"


# ------------------------------------------------------------------ properties


_HOSTS = ["h0", "h1", "h2", "h3"]
_record = st.builds(
    lambda check, status, host, peer, target, value: results.make(
        check, status, reason=None if status == "pass" else "why", host=host, peer=peer, target=target,
        metrics={} if value is None else {"bw_avg_gbit_s": value}),
    check=st.sampled_from([synthetic_fleet.CHECK, synthetic_fleet.CHECK + ".server", "env.os", "gpu.gemm_bf16"]),
    status=st.sampled_from(results.STATUSES), host=st.sampled_from(_HOSTS),
    peer=st.one_of(st.none(), st.sampled_from(_HOSTS + ["10.0.0.9"])),
    target=st.sampled_from([None, "mlx5_0", "mlx5_1"]),
    value=st.one_of(st.none(), st.floats(min_value=0, max_value=500, allow_nan=False)))


@settings(max_examples=150, deadline=None)
@given(records=st.lists(_record, max_size=30), required=st.sampled_from([None, {"*": ["rdma.*"]}, {"h1": ["gpu.*"]}]))
def test_any_fleet_gets_a_consistent_verdict(records, required):
    """Whatever the records: every host of a record gets exactly one verdict, which is the worst of the records
    that count toward it; a pairwise record counts toward nobody or toward its sender only; re-analysis is stable."""
    config = {"required_checks": required} if required else {}
    report = report_of(records, config)
    summary = report["summary"]
    hosts = dict((h["host"], h) for h in summary["hosts"])
    assert set(hosts) == set(r["host"] for r in report["records"])
    counted = verdict.host_records(report["records"])
    for host, entry in hosts.items():
        assert entry["status"] == results.worst((r["status"] for r in counted[host]), default="skip")
        assert entry["counts"] == results.count(counted[host])
    for rec in report["records"]:
        if verdict.is_pairwise(rec) and rec["peer"] in hosts:
            assert rec not in counted[rec["peer"]]     # one end's word never judges the other end
    assert summary["worst_status"] == results.worst((h["status"] for h in summary["hosts"]), default="skip")
    again = fleet.reanalyze({"run": dict(RUN), "records": report["records"]}, config)
    assert again["summary"] == summary


# ---------------------------------------------------------------- one-GPU hosts in a fleet (the one-rank rule)

ONE_GPU = os.path.join(HERE, "..", "modules", "fixtures", "h100x1-proof", "all_reduce_g1.txt")
TWO_GPU = parser_fixture("nccl_tests", "h200x2-nccl-tests-2.19.6",
                         "all_reduce_g2.txt")


def _nccl_record(path, host):
    with open(path, encoding="utf-8") as handle:
        (record,) = nccl_tests.records(handle.read(), Context(params={"profile": "none"}, host=host,
                                                              collective="all_reduce"))
    return record


def test_one_gpu_hosts_are_not_failed_by_collectives_they_cannot_measure():
    """A fleet of real captures: two 1x H100 hosts (all_reduce_perf -g 1: busbw 0, now skip) and two 2x H200 hosts.
    With the rule acceptance_ssh.yml applies (gpu.* required everywhere, nccl.* only where there is more than one
    GPU) every host passes; requiring nccl.* on a one-GPU host fails exactly that host, naming why."""
    hosts1, hosts2 = ["h100-a", "h100-b"], ["h200-a", "h200-b"]
    records = [_nccl_record(ONE_GPU, h) for h in hosts1] + [_nccl_record(TWO_GPU, h) for h in hosts2]
    records += [results.make("gpu.inventory", "pass", host=h, metrics={"gpu_count": 1 if h in hosts1 else 2})
                for h in hosts1 + hosts2]
    assert set(r["status"] for r in records if r["host"] in hosts1 and r["check"] == "nccl.all_reduce") == {"skip"}
    required = dict((h, ["gpu.*"]) for h in hosts1)
    required.update((h, ["gpu.*", "nccl.*"]) for h in hosts2)
    hosts = by_status(report_of(records, {"required_checks": required})["summary"])
    assert hosts == {"pass": set(hosts1 + hosts2)}
    required["h100-b"] = ["gpu.*", "nccl.*"]
    report = report_of(records, {"required_checks": required})
    assert by_status(report["summary"]) == {"pass": {"h100-a", "h200-a", "h200-b"}, "fail": {"h100-b"}}
    why = [r for r in report["records"] if r["host"] == "h100-b" and r["check"] == "env.required"]
    assert len(why) == 1 and "nccl.all_reduce" in why[0]["reason"] and "1 rank" in why[0]["reason"]
