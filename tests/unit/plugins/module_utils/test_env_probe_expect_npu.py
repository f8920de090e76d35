# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""env_probe's expect.npu_count (issue 23): judged on gpu.npu_inventory as gpu_count is on gpu.inventory, from the
real npu-smi capture of an 8x 910B2 node (test_env_probe_npu's fixtures)."""

from __future__ import annotations

from ansible_collections.aifabric.acceptance.plugins.module_utils import env_probe, results

from ansible_collections.aifabric.acceptance.tests.unit.plugins.module_utils.test_env_probe_npu import B910, FIXTURES, _host
from ansible_collections.aifabric.acceptance.tests.unit.helpers import read


def _inventory(tmp_path, expect, smi=True):
    records = env_probe.probe(_host(tmp_path, read(FIXTURES, B910), smi=smi), {"groups": ["npu"], "expect": expect})
    assert all(results.validate(r) == [] for r in records)
    return records[0]


def test_the_expected_npu_count_holds(tmp_path):
    inventory = _inventory(tmp_path, {"npu_count": 8})
    assert inventory["status"] == "pass" and inventory["expect"] == {"npu_count": {"equals": 8}}


def test_another_npu_count_fails_naming_both(tmp_path):
    inventory = _inventory(tmp_path, {"npu_count": 16})
    assert inventory["status"] == "fail" and inventory["reason"] == "npu_count is 8, expected 16"


def test_no_npu_smi_where_npus_are_expected_fails(tmp_path):
    inventory = _inventory(tmp_path, {"npu_count": 8}, smi=False)
    assert inventory["status"] == "fail"
    assert inventory["reason"] == "no Ascend NPU: npu-smi not found, but expect.npu_count is 8"
    assert inventory["metrics"] == {"npu_count": 0} and inventory["expect"] == {"npu_count": {"equals": 8}}


def test_no_npu_smi_where_none_is_expected_is_skip(tmp_path):
    for expect in ({}, {"npu_count": 0}, {"gpu_count": 8}):
        assert _inventory(tmp_path, expect, smi=False)["status"] == "skip"
