# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Required checks on a real 2x H100 run (issue 19 item 5): the same records give the same verdict again, and an
NVIDIA host is held to its NVIDIA checks, not to the NPU probe (fixtures/h100x2-judgement, README there)."""

from __future__ import annotations

import copy
import json
import os

from ansible_collections.aifabric.acceptance.plugins.plugin_utils import fleet

HERE = os.path.join(os.path.dirname(__file__), "fixtures", "h100x2-judgement")
NVIDIA = ["gpu.inventory", "gpu.device", "gpu.gemm_*", "nccl.*"]


def _data():
    with open(os.path.join(HERE, "healthy.results.json"), encoding="utf-8") as fh:
        return json.load(fh)


def _verdicts(report):
    return {h["host"]: h["status"] for h in report["summary"]["hosts"]}


def test_reanalysis_applies_the_required_checks_the_run_recorded():
    data = _data()
    # the run applied gpu.* (what playbooks/acceptance_ssh.yml used to require) and FAILED on the NPU probe's skip
    assert data["run"]["required_checks"] == {"localhost": ["gpu.*", "nccl.*"]}
    assert data["summary"]["worst_status"] == "fail"
    report = fleet.reanalyze(copy.deepcopy(data))
    assert _verdicts(report) == {"localhost": "fail"}        # not PASS: the same records, the same verdict
    required = [r for r in report["records"] if r["check"] == "env.required" and r["status"] == "fail"]
    assert [r["target"] for r in required] == ["gpu.*"]


def test_the_nvidia_patterns_pass_a_healthy_nvidia_host():
    data = _data()
    data["run"]["required_checks"] = {"localhost": NVIDIA}
    report = fleet.reanalyze(data)
    assert not [r for r in report["records"] if r["check"] == "env.required" and r["status"] != "pass"]
    assert _verdicts(report) == {"localhost": "pass"}


def test_an_nvidia_host_without_its_gemm_still_fails_the_nvidia_patterns():
    data = _data()
    data["run"]["required_checks"] = {"localhost": NVIDIA}
    for rec in data["records"]:
        if rec["check"].startswith("gpu.gemm"):
            rec.update(status="skip", reason="PyTorch is not importable", metrics={}, expect={})
    report = fleet.reanalyze(data)
    assert _verdicts(report) == {"localhost": "fail"}
    assert [r["target"] for r in report["records"] if r["check"] == "env.required" and r["status"] == "fail"] == [
        "gpu.gemm_*"]
