# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The results.json of a real acceptance.yml run on a 2x H200 machine (fixtures/h200x2-acceptance-*):
every record honours the schema, and re-analysis (playbooks/report.yml) reproduces the report."""
from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET

import pytest

from ansible_collections.aifabric.acceptance.plugins.plugin_utils import fleet

jsonschema = pytest.importorskip("jsonschema")

HERE = os.path.dirname(os.path.abspath(__file__))
RESULTS = os.path.join(HERE, "fixtures", "h200x2-acceptance-results.json")
SCHEMA = os.path.join(HERE, "..", "..", "..", "..", "docs", "results.schema.json")


@pytest.fixture(scope="module")
def data():
    return fleet.load_results(RESULTS)


def test_every_record_of_the_real_run_validates(data):
    with open(SCHEMA, encoding="utf-8") as handle:
        validator = jsonschema.Draft202012Validator(json.load(handle))
    problems = [(r["check"], e.message) for r in data["records"] for e in validator.iter_errors(r)]
    assert problems == []
    assert data["run"]["hosts_targeted"] == ["h200x2"]
    by_check = dict(((r["check"], r["target"]), r) for r in data["records"])
    # the figures the run measured (see fixtures/h200x2-acceptance-run.txt)
    assert by_check[("nccl.torch_all_reduce", None)]["metrics"]["busbw_max_gbyte_s"] == pytest.approx(343.6, abs=0.05)
    assert by_check[("gpu.gemm_bf16", "0")]["metrics"]["tflops"] == pytest.approx(647.9, abs=0.05)
    assert by_check[("gpu.gemm_fp16", "0")]["status"] == "warn"
    assert by_check[("nccl.all_reduce", None)]["status"] == "skip"     # no nccl-tests on that machine
    assert by_check[("rdma.inventory", None)]["status"] == "skip"


def test_reanalysis_is_idempotent_and_renders(data, tmp_path):
    first = fleet.reanalyze(data)
    second = fleet.reanalyze(dict(data, records=first["records"], findings=first["findings"]))
    assert first["records"] == second["records"]
    assert data["summary"]["counts"] == {"pass": 20, "warn": 1, "fail": 0, "skip": 12, "error": 0}
    # the analyses of today add the peers records (4: each GPU's GEMM within its sibling's)
    assert first["summary"]["counts"] == {"pass": 24, "warn": 1, "fail": 0, "skip": 12, "error": 0}
    out = fleet.publish(first, dest=str(tmp_path / "rerun"))
    assert sorted(out["files"]) == ["ctrf", "html", "json", "junit", "md"]
    cases = ET.parse(out["files"]["junit"]).getroot().iter("testcase")
    assert len(list(cases)) == len(first["records"])
