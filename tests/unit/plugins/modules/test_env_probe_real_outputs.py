# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What env_probe returned on a real 2x H200 machine honours the record contract (see fixtures/env_probe/)."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.aifabric.acceptance.plugins.module_utils import results
from ansible_collections.aifabric.acceptance.tests.unit.helpers import listing, module_fixture

jsonschema = pytest.importorskip("jsonschema")

HERE = os.path.dirname(os.path.abspath(__file__))
OUTPUTS = module_fixture("env_probe")
SCHEMA = os.path.join(HERE, "..", "..", "..", "..", "docs", "results.schema.json")
FILES = listing(OUTPUTS, ".json")


def load(name):
    with open(os.path.join(OUTPUTS, name), encoding="utf-8") as handle:
        return json.load(handle)


@pytest.mark.parametrize("name", FILES, ids=FILES)
def test_records_validate_against_the_schema(name):
    with open(SCHEMA, encoding="utf-8") as handle:
        validator = jsonschema.Draft202012Validator(json.load(handle))
    output = load(name)
    assert output["changed"] is False
    assert output["counts"] == results.count(output["results"])
    for record in output["results"]:
        assert results.validate(record) == [], record
        assert not list(validator.iter_errors(record)), record


def test_real_fail_reasons_name_the_values():
    reasons = dict((r["check"] + (":" + r["target"] if r["target"] else ""), r["reason"])
                   for r in load("h200x2vm-expectations-fail-earlier-build.json")["results"] if r["status"] == "fail")
    assert reasons == {
        "env.kernel_modules": "kernel module(s) not loaded: nvidia_peermem",
        "env.nccl:system": "nccl_version is 2.28.3, expected 2.28.9",
        "gpu.inventory": "gpu_count is 2, expected 8; GPU model does not contain 'H100' on GPU 0 (NVIDIA H200), "
                         "1 (NVIDIA H200)",
        "rdma.inventory": "no RDMA device: /sys/class/infiniband is empty but expect_hca_count is 8",
    }


def test_real_nvlink_and_nccl_facts():
    records = load("h200x2vm-default.json")["results"]
    devices = [r for r in records if r["check"] == "gpu.device"]
    assert [d["metrics"]["nvlink_active_link_count"] for d in devices] == [18, 18]
    nccl = dict((r["target"], r["facts"]["nccl_version"]) for r in records if r["check"] == "env.nccl")
    assert nccl == {"system": "2.28.3", "python": "2.28.9"}
