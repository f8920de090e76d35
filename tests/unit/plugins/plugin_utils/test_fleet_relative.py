# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fleet-relative analysis: median/MAD margins, grouping by shape, never rewriting measured records."""

from __future__ import annotations

import copy
import json
import os

import pytest

from ansible_collections.aifabric.acceptance.plugins.module_utils import results
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import analysis_records, fleet_relative

HERE = os.path.dirname(os.path.abspath(__file__))
PROOF = os.path.join(HERE, "..", "modules", "fixtures")


def gemm(host, tflops, gpu="0", shape="bf16 8192x8192x8192", model="NVIDIA H200", status="pass"):
    return results.make("gpu.gemm_bf16", status, reason=None if status == "pass" else "x", host=host, target=gpu,
                        metrics={"tflops": tflops}, facts={"shape": shape, "gpu_model": model})


def test_flags_the_slow_gpu_with_median_and_margin_in_the_reason():
    # Synthetic values: seven healthy GPUs around 670 and one at 560.
    recs = [gemm("n%d" % i, v) for i, v in enumerate([660.6, 667.3, 682.5, 684.7, 654.8, 683.9, 671.0])]
    recs.append(gemm("n9", 560.0, gpu="3"))
    before = copy.deepcopy(recs)
    new, findings = fleet_relative.analyze(recs, {})
    assert recs == before  # measured records untouched
    (rec,) = new
    assert results.validate(rec) == []
    assert rec["check"] == "gpu.gemm_bf16.fleet" and rec["status"] == "fail"
    assert rec["host"] == "n9" and rec["target"] == "3"
    assert rec["tool"] == {"name": "fleet-analysis", "version": "fleet_relative"}
    assert analysis_records.is_analysis_record(rec)
    assert rec["metrics"]["fleet_median"] == pytest.approx(669.15)  # the outlier counts in the median
    assert "fleet median 669.15" in rec["reason"] and "margin" in rec["reason"]
    assert rec["expect"]["tflops"]["min"] < 669.15
    assert findings[0]["kind"] == "fleet_outlier" and findings[0]["hosts"] == ["n9"]
    assert analysis_records.validate_finding(findings[0]) == []


def test_min_drop_pct_protects_a_tight_fleet():
    # MAD is tiny: a value 2 % low is beyond 3 MADs but within min_drop_pct (5 %).
    recs = [gemm("n%d" % i, 700.0 + 0.1 * i) for i in range(6)] + [gemm("slow", 686.0)]
    new, _findings = fleet_relative.analyze(recs, {})
    assert new == []
    new, _findings = fleet_relative.analyze(recs, {"fleet_relative": {"min_drop_pct": 1.0}})
    assert [r["host"] for r in new] == ["slow"]


def test_groups_by_shape_and_model_and_needs_enough_samples():
    recs = [gemm("n%d" % i, 670.0) for i in range(4)]
    recs += [gemm("a%d" % i, 280.0, model="NVIDIA A100-SXM4-80GB") for i in range(4)]
    recs += [gemm("r%d" % i, 300.0, shape="bf16 16384x4096x8192") for i in range(3)]
    new, _findings = fleet_relative.analyze(recs, {})
    assert new == []  # A100s are not outliers among H200s; 3 samples of a shape are not judged


def test_lower_is_better_and_status_warn():
    recs = [results.make("rdma.ib_write_lat", "pass", host="n%d" % i, metrics={"lat_typical_us": 1.9 + 0.01 * i})
            for i in range(6)]
    recs.append(results.make("rdma.ib_write_lat", "pass", host="bad", metrics={"lat_typical_us": 3.5}))
    new, _findings = fleet_relative.analyze(recs, {"fleet_relative": {"status": "warn"}})
    (rec,) = new
    assert rec["status"] == "warn" and "above the fleet median" in rec["reason"]
    assert "max" in rec["expect"]["lat_typical_us"]


def test_skips_errors_and_analysis_records_and_can_be_disabled():
    recs = [gemm("n%d" % i, 670.0) for i in range(5)]
    recs.append(gemm("broken", 10.0, status="error"))
    new, _findings = fleet_relative.analyze(recs, {})
    assert new == []
    recs.append(gemm("n9", 100.0))
    assert len(fleet_relative.analyze(recs, {})[0]) == 1
    assert fleet_relative.analyze(recs, {"fleet_relative": {"enabled": False}}) == ([], [])


def test_bad_config_is_rejected():
    with pytest.raises(ValueError):
        fleet_relative.settings({"fleet_relative": {"status": "error"}})
    with pytest.raises(ValueError):
        fleet_relative.settings({"fleet_relative": {"rules": [{"check": "nccl.*"}]}})


def test_real_h200_runs_are_one_healthy_fleet():
    # Every sustained bf16 GEMM record captured on the 2x H200 machine (three runs): no outlier.
    with open(os.path.join(PROOF, "h200x2-proof-2", "gpu_playbook_results.json"), encoding="utf-8") as handle:
        doc = json.load(handle)
    recs = [r for r in (doc["records"] if isinstance(doc, dict) else doc) if r["check"].startswith("gpu.gemm")]
    assert len(recs) == 4
    for i, rec in enumerate(list(recs)):
        twin = copy.deepcopy(rec)
        twin["host"] = "twin%d" % i
        recs.append(twin)
    new, findings = fleet_relative.analyze(recs, {})
    assert new == [] and findings == []
