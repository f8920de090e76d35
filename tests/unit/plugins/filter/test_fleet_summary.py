# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet_summary filter: same numbers as the callback's summary, hosts without records are errors."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.aifabric.acceptance.plugins.filter.fleet_summary import FilterModule, fleet_summary
from ansible_collections.aifabric.acceptance.plugins.module_utils import results
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import fleet
from ansible_collections.aifabric.acceptance.tests.unit.plugins.plugin_utils import real_records


def module_records(host=None):
    """Records as a module returns them (real nccl-tests records, host not set)."""
    return real_records.nccl_records(host)


def test_registered_by_name():
    assert FilterModule().filters()["fleet_summary"] is fleet_summary


def test_mapping_of_host_to_records_or_registered_results():
    data = {
        "gpu-a": module_records(),                                           # a list of records
        "gpu-b": {"changed": False, "results": module_records()},          # a registered result
        "gpu-c": [],                                                         # failed before its probe
    }
    out = fleet_summary(data, hosts=["gpu-a", "gpu-b", "gpu-c", "gpu-d"], report_dir="/srv/reports")
    assert out["hosts_total"] == 4
    assert out["counts"] == {"pass": 8, "warn": 0, "fail": 0, "skip": 0, "error": 2}
    assert out["failed_hosts"] == ["gpu-c", "gpu-d"] and out["failed_hosts_total"] == 2
    assert out["worst_status"] == "error" and out["report_dir"] == "/srv/reports"


def test_same_numbers_as_the_callback_summary():
    recs = module_records("gpu-a") + [results.make("gpu.ecc", "fail", reason="12 errors", host="gpu-b")]
    col = fleet.Collector()
    col.target(["gpu-a", "gpu-b", "gpu-c"])
    col.task_ok("gpu-a", "t1", "nccl", {"results": recs[:4]})
    col.task_ok("gpu-b", "t1", "ecc", {"results": recs[4:]})
    callback = fleet.compact_summary(fleet.summarize(col.records()))
    assert fleet_summary(recs, hosts=["gpu-a", "gpu-b", "gpu-c"]) == callback


def test_flat_records_need_a_host():
    with pytest.raises(AnsibleFilterError, match="have no host"):
        fleet_summary(module_records(), hosts=["gpu-a"])


def test_nested_lists_are_flattened_once():
    out = fleet_summary([module_records("a"), module_records("b")])
    assert out["hosts_total"] == 2 and out["records_total"] == 8


def test_bad_input_names_the_filter():
    with pytest.raises(AnsibleFilterError, match="fleet_summary: 'x' is not a result record"):
        fleet_summary(["x"])
    with pytest.raises(AnsibleFilterError, match="fleet_summary: hosts must be a list"):
        fleet_summary([], hosts="gpu-a")
    with pytest.raises(AnsibleFilterError, match="fleet_summary: expected records"):
        fleet_summary(42)


def test_host_lists_are_capped():
    recs = [results.make("gpu.ecc", "fail", reason="ecc", host="n%03d" % i) for i in range(50)]
    out = fleet_summary(recs, max_hosts=3)
    assert len(out["failed_hosts"]) == 3 and out["failed_hosts_total"] == 50 and len(out["worst_hosts"]) == 3
