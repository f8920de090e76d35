# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fleet drift on plain dicts.

The version facts come from real records where the collection builds them from real
captures (nccl_version of the H200 nccl-tests run); the per-host fleets around them are
SYNTHETIC records in the shape env_probe returns (env.package version, gpu.inventory
driver_version, rdma.inventory fw_versions, env.env_vars env).
"""

from __future__ import annotations

import copy

from ansible_collections.aifabric.acceptance.plugins.module_utils import results
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import analysis_records, drift
from ansible_collections.aifabric.acceptance.tests.unit.plugins.plugin_utils import real_records


def pkg(host, version, name="torch"):
    return results.make("env.package", "pass", host=host, target=name, facts={"version": version, "python": "/usr/bin/python3"})


def gpu(host, driver, cuda="13.0", serial=None):
    return results.make("gpu.inventory", "pass", host=host,
                        facts={"driver_version": driver, "cuda_version": cuda, "serial": serial or host})


def by_host(new):
    return dict((r["host"], r) for r in new)


def test_hosts_differing_from_the_majority_warn():
    recs = [gpu("a", "580.82.07"), gpu("b", "580.82.07"), gpu("c", "570.86.15"), gpu("d", "580.82.07")]
    new, findings = drift.analyze(recs, {})
    assert list(by_host(new)) == ["c"]
    rec = new[0]
    assert (rec["check"], rec["status"], rec["target"]) == ("gpu.inventory.drift", "warn", None)
    assert rec["reason"] == "gpu.inventory.driver_version is '570.86.15', fleet majority is '580.82.07' (3 of 4 hosts)"
    assert rec["expect"] == {"driver_version": {"equals": "580.82.07", "source": "fleet majority"}}
    assert rec["tool"] == {"name": analysis_records.TOOL_NAME, "version": "drift"}
    assert results.validate(rec) == []
    [f] = findings
    assert f["kind"] == "drift" and f["hosts"] == ["c"] and f["check"] == "gpu.inventory"
    assert f["evidence"]["groups"] == {"580.82.07": ["a", "b", "d"], "570.86.15": ["c"]}


def test_non_version_facts_are_not_compared():
    recs = [gpu("a", "580", serial="1"), gpu("b", "580", serial="2"), gpu("c", "580", serial="3")]
    assert drift.analyze(recs, {}) == ([], [])


def test_a_pin_fails_every_other_value_even_the_majority():
    recs = [pkg("a", "2.4.1"), pkg("b", "2.4.1"), pkg("c", "2.5.0")]
    new, findings = drift.analyze(recs, {"drift_pins": {"env.package[torch].version": "2.5.0"}})
    assert sorted(by_host(new)) == ["a", "b"]
    assert all(r["status"] == "fail" for r in new)
    assert "pinned to '2.5.0' (drift_pins env.package[torch].version)" in new[0]["reason"]
    assert findings[0]["evidence"]["source"] == "drift_pins env.package[torch].version"


def test_a_pin_by_fact_name_applies_to_every_check_and_compares_as_text():
    recs = [gpu("a", "580"), gpu("b", "580"), gpu("c", "575")]
    new, _findings = drift.analyze(recs, {"drift_pins": {"driver_version": 580}})
    assert [(r["host"], r["status"]) for r in new] == [("c", "fail")]


def test_a_pin_flags_a_single_host_too():
    new, _findings = drift.analyze([gpu("a", "570")], {"drift_pins": {"driver_version": "580"}})
    assert [(r["host"], r["status"]) for r in new] == [("a", "fail")]


def test_a_tie_warns_every_host_and_names_the_groups():
    recs = [pkg("a", "2.4.1"), pkg("b", "2.4.1"), pkg("c", "2.3.0"), pkg("d", "2.3.0")]
    new, findings = drift.analyze(recs, {})
    assert sorted(by_host(new)) == ["a", "b", "c", "d"]
    reason = new[0]["reason"]
    assert "no fleet majority" in reason
    assert "'2.3.0' on 2 hosts (c, d)" in reason and "'2.4.1' on 2 hosts (a, b)" in reason
    assert new[0]["expect"] == {}
    assert findings[0]["evidence"]["expected"] is None


def test_one_host_or_agreement_is_no_drift():
    assert drift.analyze([pkg("a", "2.4.1")], {}) == ([], [])
    assert drift.analyze([pkg("a", "2.4.1"), pkg("b", "2.4.1")], {}) == ([], [])


def test_several_drifting_facts_of_one_check_make_one_record():
    recs = [gpu("a", "580", "13.0"), gpu("b", "580", "13.0"), gpu("c", "570", "12.8")]
    new, findings = drift.analyze(recs, {})
    [rec] = new
    assert set(rec["facts"]) == {"driver_version", "cuda_version"}
    assert rec["facts"]["cuda_version"]["value"] == "12.8"
    assert len(findings) == 2


def test_subjects_are_per_target():
    recs = [pkg("a", "2.4.1"), pkg("b", "2.4.1"), pkg("c", "2.4.1"),
            pkg("a", "0.9", "vllm"), pkg("b", "0.8", "vllm"), pkg("c", "0.9", "vllm")]
    new, _findings = drift.analyze(recs, {})
    assert [(r["host"], r["target"]) for r in new] == [("b", "vllm")]


def test_firmware_mapping_is_compared_per_hca():
    def inv(host, fw):
        return results.make("rdma.inventory", "pass", host=host, facts={"hcas": sorted(fw), "fw_versions": fw})
    recs = [inv("a", {"mlx5_0": "28.39.1002", "mlx5_1": "28.39.1002"}),
            inv("b", {"mlx5_0": "28.39.1002", "mlx5_1": "28.39.1002"}),
            inv("c", {"mlx5_0": "28.39.1002", "mlx5_1": "28.36.1010"})]
    new, _findings = drift.analyze(recs, {})
    [rec] = new
    assert rec["host"] == "c" and list(rec["facts"]) == ["fw_versions.mlx5_1"]


def test_environment_variables_set_on_some_hosts_only_drift():
    def env(host, values):
        return results.make("env.env_vars", "pass", host=host, facts={"env": values})
    recs = [env("a", {"NCCL_IB_HCA": "mlx5_0,mlx5_1", "NCCL_DEBUG": "WARN"}),
            env("b", {"NCCL_IB_HCA": "mlx5_0,mlx5_1", "NCCL_DEBUG": "WARN"}),
            env("c", {"NCCL_IB_HCA": "mlx5_0,mlx5_1"})]
    new, _findings = drift.analyze(recs, {})
    [rec] = new
    assert rec["host"] == "c"
    assert rec["facts"]["env.NCCL_DEBUG"]["value"] == drift.UNSET
    assert "is '(unset)', fleet majority is 'WARN'" in rec["reason"]


def test_real_nccl_version_facts_drift_when_one_host_differs():
    recs = []
    for host in ("a", "b", "c"):
        recs += real_records.nccl_records(host)
    old = copy.deepcopy([r for r in recs if r["host"] == "c"])
    for rec in old:
        rec["facts"]["nccl_version"] = "2.21.5"     # host c with an older NCCL (edited copy)
    recs = [r for r in recs if r["host"] != "c"] + old
    new, findings = drift.analyze(recs, {})
    assert sorted(set(r["host"] for r in new)) == ["c"]
    assert {f["check"] for f in findings} == {"nccl.all_gather", "nccl.all_reduce", "nccl.alltoall", "nccl.reduce_scatter"}
    assert all(f["evidence"]["expected"] == "2.28.9" for f in findings)


def test_analysis_records_are_ignored_and_drift_facts_configurable():
    recs = [gpu("a", "580"), gpu("b", "580"), gpu("c", "570")]
    new, _findings = drift.analyze(recs, {})
    again = drift.analyze(new + recs, {})[0]
    assert [dict(r, started=None) for r in again] == [dict(r, started=None) for r in new]    # the clock may tick
    only_cuda, _findings = drift.analyze(recs, {"drift_facts": [r"^cuda_version$"]})
    assert only_cuda == []          # driver_version no longer compared; cuda agrees
    by_serial, _findings = drift.analyze(recs, {"drift_facts": [r"^serial$"]})
    assert sorted(r["host"] for r in by_serial) == ["a", "b", "c"]      # all differ: a three-way tie
