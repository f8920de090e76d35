# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Judgement from the hardware itself, on whole fleets built from real 2x H100 runs (issue 19).

Fixtures: fixtures/h100x2-judgement (README there): the same host healthy, with a competing matmul on GPU 1, and
with NCCL_P2P_DISABLE=1. Fleets are made of those measured records under other host names; 4- and 8-GPU nodes
repeat the real GPU and collective records at more GPUs and ranks (busbw is normalised by the rank count, so the
per-GPU link figure and the healthy efficiency hold at any rank count). Every test asserts exactly which hosts fail.
"""

from __future__ import annotations

import copy
import json
import os

import pytest

from ansible_collections.aifabric.acceptance.plugins.plugin_utils import analysis_pipeline, coverage, report_html, summary

HERE = os.path.join(os.path.dirname(__file__), "fixtures", "h100x2-judgement")


def _measured(scenario):
    with open(os.path.join(HERE, scenario + ".results.json"), encoding="utf-8") as fh:
        return analysis_pipeline.strip_analysis(json.load(fh)["records"])


HEALTHY, LOADED, NOP2P = _measured("healthy"), _measured("loaded"), _measured("nop2p")


def _as_host(records, host):
    out = []
    for rec in records:
        rec = copy.deepcopy(rec)
        rec["host"] = host
        if isinstance(rec.get("facts"), dict) and isinstance(rec["facts"].get("hosts"), list):
            rec["facts"]["hosts"] = [host]
        out.append(rec)
    return out


def _scale_collectives(records, factor):
    for rec in records:
        if rec["check"].startswith("nccl.") and isinstance(rec["metrics"].get("busbw_max_gbyte_s"), (int, float)):
            rec["metrics"]["busbw_max_gbyte_s"] = round(rec["metrics"]["busbw_max_gbyte_s"] * factor, 3)
    return records


def _with_gpus(records, gpus):
    """The node with ``gpus`` GPUs: GPU 0's device and GEMM records repeated, collectives at ``gpus`` ranks."""
    out = []
    for rec in records:
        per_gpu = rec["check"] in ("gpu.device", "gpu.gemm_bf16", "gpu.gemm_fp16")
        if per_gpu and str(rec.get("target")) != "0":
            continue
        if per_gpu:
            for index in range(gpus):
                one = copy.deepcopy(rec)
                one["target"] = str(index) if isinstance(rec["target"], str) else index
                out.append(one)
            continue
        if rec["check"].startswith("nccl.") and "ranks" in rec["metrics"]:
            rec = copy.deepcopy(rec)
            rec["metrics"]["ranks"] = gpus
        out.append(rec)
    return out


def _verdicts(records, config=None):
    done, findings, problems = analysis_pipeline.analyze(records, config or {})
    assert problems == []
    hosts = {h["host"]: h["status"] for h in summary.summarize(done)["hosts"]}
    return hosts, done, findings


def test_slow_gpu_is_named_and_only_its_node_fails():
    slow = [r for r in _as_host(HEALTHY, "node-b") if not (r["check"].startswith("gpu.gemm") and str(r["target"]) == "1")]
    slow += [r for r in _as_host(LOADED, "node-b") if r["check"].startswith("gpu.gemm") and str(r["target"]) == "1"]
    fleet = _as_host(HEALTHY, "node-a") + slow + _as_host(HEALTHY, "node-c")
    hosts, done, findings = _verdicts(fleet)
    assert hosts == {"node-a": "pass", "node-b": "fail", "node-c": "pass"}
    peers = [f for f in findings if f["kind"] == "peers"]
    assert sorted((f["hosts"][0], f["check"], str(f["target"])) for f in peers) == [
        ("node-b", "gpu.gemm_bf16", "1"), ("node-b", "gpu.gemm_fp16", "1")]
    named = [r for r in done if r["check"] == "gpu.gemm_bf16.peers" and r["status"] == "fail"]
    assert len(named) == 1 and named[0]["host"] == "node-b"
    assert "GPU 1 (serial 1753024036118, PCI 00000000:00:07.0)" in named[0]["reason"]
    assert "304.331 TFLOP/s, 46.4 % of its siblings' median 656.4 TFLOP/s" in named[0]["reason"]


def test_the_loaded_run_fails_on_every_collective_and_the_gpu():
    hosts, done, _findings = _verdicts(_as_host(LOADED, "h100"))
    assert hosts == {"h100": "fail"}
    failing = sorted(r["check"] for r in done if r["status"] == "fail")
    collectives = ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "reduce", "sendrecv",
                   "torch_all_reduce")
    assert failing == sorted(["gpu.gemm_bf16", "gpu.gemm_fp16", "gpu.gemm_bf16.peers", "gpu.gemm_fp16.peers"]
                             + ["nccl.%s.hardware" % c for c in collectives])
    reason = next(r["reason"] for r in done if r["check"] == "nccl.all_reduce.hardware")
    assert reason == ("busbw 149.7 GB/s < 265.8 GB/s expected (NVLink 18 x 26.562 GB/s = 478.1 GB/s x 69.5 % "
                      "healthy efficiency x 0.8 margin)")


def test_no_nvlink_p2p_fails_though_the_links_are_up():
    hosts, done, _findings = _verdicts(_as_host(NOP2P, "h100") + _as_host(HEALTHY, "good"))
    assert hosts == {"h100": "fail", "good": "pass"}
    assert all(r["status"] == "fail" for r in done if r["check"].endswith(".hardware") and r["host"] == "h100")


@pytest.mark.parametrize("gpus", [2, 4, 8])
def test_half_speed_collectives_fail_at_any_gpu_count_and_healthy_nodes_pass(gpus):
    healthy = _with_gpus(_as_host(HEALTHY, "healthy"), gpus)
    half = _scale_collectives(_with_gpus(_as_host(HEALTHY, "half"), gpus), 0.5)
    hosts, done, findings = _verdicts(healthy + half)
    assert hosts == {"healthy": "pass", "half": "fail"}
    assert sorted(set(f["hosts"][0] for f in findings if f["kind"] == "hardware")) == ["half"]
    judged = [r for r in done if r["check"] == "nccl.all_reduce.hardware"]
    assert {r["host"]: r["status"] for r in judged} == {"healthy": "pass", "half": "fail"}
    assert judged[0]["expect"]["busbw_max_gbyte_s"]["source"].startswith("derived from the probed links: NVLink 18")


def test_a_healthy_node_has_no_unjudged_headline_figure():
    _hosts, done, _findings = _verdicts(_as_host(HEALTHY, "node-a"))
    found = coverage.coverage(done)
    assert found["unjudged"] == [] and found["headline_total"] == 12
    assert found["by_judge"] == {"hardware": 8, "peers": 4, "profile": 4}


def test_without_probe_records_the_collectives_are_listed_unjudged_with_the_reason():
    bare = [r for r in _as_host(HEALTHY, "node-a") if r["check"] != "gpu.device"]
    hosts, done, _findings = _verdicts(bare)
    assert hosts == {"node-a": "pass"}
    found = coverage.coverage(done)
    assert found["unjudged_total"] == 8
    assert {u["check"] for u in found["unjudged"]} == {
        "nccl.%s" % c for c in ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "reduce",
                                "sendrecv", "torch_all_reduce")}
    assert all(u["why"].startswith("not judged from the hardware: no gpu.device records") for u in found["unjudged"])


def test_a_profile_rule_wins_over_the_derived_one():
    records = _as_host(HEALTHY, "node-a")
    for rec in records:
        if rec["check"] == "nccl.all_reduce":
            rec["expect"] = {"busbw_max_gbyte_s": {"min": 300.0, "source": "profile mine: measured"}}
    _hosts, done, _findings = _verdicts(records)
    assert not any(r["check"] == "nccl.all_reduce.hardware" for r in done)
    assert "nccl.all_gather.hardware" in {r["check"] for r in done}


H200 = os.path.join(os.path.dirname(__file__), "fixtures", "h200x2-judgement")


@pytest.mark.parametrize("scenario, verdict", [("healthy", "pass"), ("loaded", "fail"), ("nop2p", "fail")])
def test_the_h200_runs_judged_again_give_the_verdicts_they_gave(scenario, verdict):
    """The runs made with this judgement in place (2x H200): re-analysed, the same verdicts, nothing unjudged."""
    with open(os.path.join(H200, scenario + ".results.json"), encoding="utf-8") as fh:
        data = json.load(fh)
    assert data["summary"]["worst_status"] == verdict
    hosts, done, findings = _verdicts(_as_host(analysis_pipeline.strip_analysis(data["records"]), "h200"))
    assert hosts == {"h200": verdict}
    assert coverage.coverage(done)["unjudged_total"] == 0
    peers = sorted(str(f["target"]) for f in findings if f["kind"] == "peers")
    assert peers == (["1", "1"] if scenario == "loaded" else [])


def test_every_judged_headline_figure_names_its_judges():
    _hosts, done, _findings = _verdicts(_as_host(LOADED, "h100"))
    judged = {(j["check"], str(j["target"])): j["judges"] for j in coverage.coverage(done)["judged_by"]}
    assert judged[("gpu.gemm_bf16", "1")] == ["peers", "profile"]
    assert judged[("nccl.all_reduce", "None")] == ["hardware"]
    assert len(judged) == 12


def _pcie_only(records):
    """The node's GPUs without NVLink figures (a PCIe-only node): the probe reports PCIe gen5 x16 only."""
    for rec in records:
        if rec["check"] == "gpu.device":
            for key in ("nvlink_link_count", "nvlink_active_link_count", "nvlink_link_speed_min_gbyte_s"):
                rec["metrics"].pop(key, None)
    return records


def test_pcie_only_nodes_below_their_pcie_floor_warn_and_never_fail():
    """The PCIe efficiency comes from NVLink GPUs with P2P off (NOP2P), not from a PCIe-only node: below its floor
    a PCIe node warns; above it (the NOP2P run itself, through host memory) it passes."""
    slow = _scale_collectives(_pcie_only(_as_host(NOP2P, "pcie-slow")), 0.5)
    ok = _pcie_only(_as_host(NOP2P, "pcie-ok"))
    hosts, done, findings = _verdicts(slow + ok + _as_host(HEALTHY, "nvlink"))
    assert hosts == {"pcie-slow": "warn", "pcie-ok": "pass", "nvlink": "pass"}
    judged = {r["host"]: r for r in done if r["check"] == "nccl.all_reduce.hardware"}
    assert judged["pcie-ok"]["status"] == "pass" and judged["pcie-slow"]["status"] == "warn"
    assert "PCIe gen5 x16 = 63 GB/s" in judged["pcie-slow"]["reason"] and "warn only" in judged["pcie-slow"]["reason"]
    assert {f["hosts"][0] for f in findings if f["kind"] == "hardware"} == {"pcie-slow"}


def test_a_rule_that_bounds_nothing_judges_nothing():
    """An expect entry with only a source (no floor known at that size) is no judgement: the hardware judges the
    figure, and without the probe records it is listed unjudged with the record's own reason."""
    records = _as_host(LOADED, "node-a")
    for rec in records:
        if rec["check"] == "nccl.all_reduce":
            rec["expect"] = {"busbw_max_gbyte_s": {"source": "no floor known at this size"}}
    hosts, done, _findings = _verdicts(records)
    assert hosts == {"node-a": "fail"}
    assert [r["status"] for r in done if r["check"] == "nccl.all_reduce.hardware"] == ["fail"]
    bare = [r for r in records if r["check"] != "gpu.device"]
    _hosts, done, _findings = _verdicts(bare)
    unjudged = {u["check"]: u["why"] for u in coverage.coverage(done)["unjudged"]}
    assert unjudged["nccl.all_reduce"].startswith("not judged from the hardware: no gpu.device records")


def test_the_report_groups_unjudged_figures_by_check_and_reason():
    bare = [r for r in _as_host(HEALTHY, "a") + _as_host(HEALTHY, "b") if r["check"] != "gpu.device"]
    _hosts, done, _findings = _verdicts(bare)
    rows = report_html.unjudged_rows(coverage.coverage(done))
    assert len(rows) == 8 and all(r["hosts"] == ["a", "b"] for r in rows)
    assert rows[0]["check"] == "nccl.all_gather" and rows[0]["why"].startswith("not judged from the hardware")
