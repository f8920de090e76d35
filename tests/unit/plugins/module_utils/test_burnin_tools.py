# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The burn-in soak and the copy-bandwidth matrix: their records from REAL captures (the lent H100's soak healthy,
under a competing matmul and under a 200 W power cap; its copy worker run; nvbandwidth outputs from its upstream
README and issues), the gpu_soak / copy_bandwidth modules against a Kubernetes pod's log of the same output (the
same records), and the soak parser's markers equal to the worker's."""

from __future__ import annotations

import os

import pytest

from ansible_collections.aifabric.acceptance.plugins.module_utils import burnin_worker, k8s_plan, results, thresholds
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import burnin
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import (
    Context, copy_bandwidth, defaults, gpu_soak as soak)
from ansible_collections.aifabric.acceptance.plugins.modules import copy_bandwidth as copy_module, gpu_soak
from ansible_collections.aifabric.acceptance.tests.unit.helpers import parser_fixture, read
from ansible_collections.aifabric.acceptance.tests.unit.plugins.module_utils.test_k8s_plan import POD, _stable, ok, pod_log
from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules.test_gpu_modules import (  # pylint: disable=unused-import
    _call, _runner, module_env)  # noqa: F401 - module_env is a fixture
from ansible_collections.aifabric.acceptance.plugins.module_utils import runner as tool_runner

BURNIN = parser_fixture("burnin")
NVB = parser_fixture("nvbandwidth")


def soak_records(name, duration_s=60, **params):
    opts = dict(defaults(soak.OPTIONS), duration_s=duration_s, **params)
    return soak.records(read(os.path.join(BURNIN, name)), Context(params=opts, rc=0, argv=["python3", "w", "soak"]))


def by_check(records, check):
    return [r for r in records if r["check"] == check]


def test_the_markers_of_the_parser_are_the_worker_s():
    for name in ("SOAK_MARK", "START_MARK", "END_MARK", "SMI_MARK", "XID_MARK", "PCIE_MARK", "COPY_MARK",
                 "COPY_START_MARK"):
        assert getattr(burnin, name) == getattr(burnin_worker, name), name


def test_the_healthy_h100_soak_passes_with_its_series():
    records = soak_records("h100-soak_healthy.txt")
    (gpu,) = by_check(records, "gpu.soak")
    (node,) = by_check(records, "gpu.soak_node")
    assert (gpu["status"], gpu["target"], node["status"]) == ("pass", "0", "pass")
    assert 685 < gpu["metrics"]["tflops"] < 693 and gpu["metrics"]["tflops_jitter_pct"] < 1
    assert gpu["metrics"]["power_of_limit_pct"] > 99 and gpu["metrics"]["power_limit_w"] == 700
    assert gpu["metrics"]["new_xid_count"] == 0 and gpu["facts"]["xid_readable"] is True
    assert gpu["metrics"]["windows_count"] == 62 and gpu["metrics"]["samples_count"] == 62
    assert len(gpu["series"]) == 62 and gpu["series"][10]["reasons"] == "sw_power_cap"     # at the power limit: load
    assert results.validate(gpu) == [] and results.validate(node) == []


def test_the_current_worker_s_capture_reads_the_replay_counters_and_one_name_per_reason():
    text = read(os.path.join(BURNIN, "h100-soak_20s_current_worker.txt"))
    header = next(ln for ln in text.splitlines() if ln.startswith("AIFABRIC_SMI timestamp"))
    assert header.count("clocks_event_reasons.hw_slowdown") == 1 and "clocks_throttle_reasons" not in header
    (gpu,) = by_check(soak_records("h100-soak_20s_current_worker.txt", duration_s=20), "gpu.soak")
    assert gpu["status"] == "pass" and gpu["metrics"]["pcie_replay_growth_count"] == 0
    assert gpu["metrics"]["samples_count"] == 22 and 670 < gpu["metrics"]["tflops"] < 690


def test_the_loaded_gpu_fails_on_its_sustained_throughput():
    (gpu,) = by_check(soak_records("h100-soak_loaded.txt"), "gpu.soak")
    assert gpu["status"] == "fail" and gpu["target"] == "0"
    assert gpu["reason"].startswith("tflops 312.") and "profile h100-sxm-8gpu" in gpu["reason"]


def test_the_power_capped_gpu_fails_and_says_it_is_capped():
    (gpu,) = by_check(soak_records("h100-soak_capped.txt", duration_s=30), "gpu.soak")
    assert gpu["status"] == "fail"
    assert "power capped at 200 W of the default 700 W" in gpu["reason"]
    assert gpu["metrics"]["sm_clock_median_mhz"] < 500


def test_the_parser_reads_the_telemetry_of_both_csv_formats():
    for name in ("h100-query-gpu-lms1000-units.csv", "h100-query-gpu-lms1000-nounits.csv"):
        out = {"problems": []}
        samples = burnin.parse_samples(read(os.path.join(BURNIN, name)).splitlines(), out)
        assert out["problems"] == [] and len(samples[0]) == 6
        first = samples[0][0]
        assert (first["power_limit_w"], first["max_sm_clock_mhz"], first["reasons"]) == (700.0, 1980.0, [])
        assert first["sm_clock_mhz"] == 345.0 and first["ecc_uncorrected"] == 0.0


def test_pcie_replays_and_xids_of_real_captures():
    assert burnin.parse_pcie_replays(read(os.path.join(BURNIN, "h100-nvidia_smi_q.txt"))) == {"00000000:00:06.0": 0}
    xids = burnin.parse_xids(read(os.path.join(parser_fixture("dmesg"), "forum-2019-gtx550ti-xid32.txt")).splitlines())
    assert [(x["bus"], x["xid"]) for x in xids] == [("0000:01:00", 32), ("0000:01:00", 32)]


def test_the_h100_copy_worker_run_passes_against_its_pcie_gen5_x16():
    opts = defaults(copy_bandwidth.OPTIONS)
    records = copy_bandwidth.records(read(os.path.join(BURNIN, "h100-copy.txt")), Context(params=opts, rc=0))
    assert [(r["check"], r["target"], r["status"]) for r in records] == [
        ("gpu.copy_h2d", "0", "pass"), ("gpu.copy_d2h", "0", "pass")]
    assert records[0]["facts"]["link"] == "PCIe gen5 x16 63.0 GB/s"
    floor = 63.008 * thresholds.HOST_COPY_EFFICIENCY[0] * thresholds.COPY_MARGIN[0]
    assert records[0]["expect"]["bw_gbyte_s"]["min"] == round(floor, 2)


@pytest.mark.parametrize("name, count, kinds", [
    ("readme-v0.8-8gpu-d2d-write-ce.txt", 56, {"gpu.copy_p2p_write"}),
    ("issue50-v0.8-6xA6000-d2d-read-ce-NA.txt", 30, {"gpu.copy_p2p_read"}),
    ("issue15-v0.2-8xRTX4090-h2d-d2h-ce.txt", 16, {"gpu.copy_h2d", "gpu.copy_d2h"}),
])
def test_nvbandwidth_outputs_give_a_record_per_copy(name, count, kinds):
    records = copy_bandwidth.records(read(os.path.join(NVB, name)), Context(params=defaults(copy_bandwidth.OPTIONS)))
    assert len(records) == count and {r["check"] for r in records} == kinds
    assert all(r["status"] == "pass" and r["tool"]["name"] == "nvbandwidth" for r in records)


def test_nvbandwidth_read_matrix_direction():
    """read_ce's row r, column c is a copy c -> r on r's context (testcases_ce.cpp): the A6000 cell (0, 3) = 21.95."""
    records = copy_bandwidth.records(read(os.path.join(NVB, "issue50-v0.8-6xA6000-d2d-read-ce-NA.txt")),
                                     Context(params=defaults(copy_bandwidth.OPTIONS)))
    assert next(r for r in records if r["target"] == "3->0")["metrics"]["bw_gbyte_s"] == 21.95


def test_an_nvbandwidth_run_that_asserts_is_an_error_record():
    (record,) = copy_bandwidth.records(read(os.path.join(NVB, "issue34-v0.7-8xA100-read-ce-assert.txt")),
                                       Context(params=defaults(copy_bandwidth.OPTIONS), rc=1))
    assert record["status"] == "error" and "ASSERT" in record["reason"]


# --------------------------------------------------------------------------- SSH and Kubernetes: the same records

def test_a_soak_pod_log_gives_the_records_of_the_gpu_soak_module(module_env, monkeypatch):
    path = os.path.join(BURNIN, "h100-soak_healthy.txt")
    monkeypatch.setattr(tool_runner, "spawn", _runner(module_env, lambda argv: (0, read(path), "")))
    ssh = _call(gpu_soak.main, {"duration_s": 60})
    plan = k8s_plan.build("gpu_soak", ["gpu-node-03"], POD, "t1", {"duration_s": 60})
    (slot,) = plan["steps"][0]["slots"]
    assert slot["sections"][0]["argv"][3:] == ssh.kwargs["cmd"][3:]      # the same worker arguments
    rc, log = pod_log([{"label": "soak", "argv": ["cat", path], "timeout_s": 30}])
    from_k8s = k8s_plan.slot_records(plan, slot, ok(slot, "gpu-node-03"), log)
    assert rc == 0 and [_stable(r) for r in from_k8s] == [_stable(r) for r in ssh.kwargs["results"]]
    assert [r["check"] for r in from_k8s] == ["gpu.soak", "gpu.soak_node"]
    assert {r["host"] for r in from_k8s} == {"gpu-node-03"}
    assert plan["deadline_s"] >= 60 + soak.OVERHEAD_S


def test_a_copy_pod_log_gives_the_records_of_the_copy_bandwidth_module(module_env, monkeypatch):
    path = os.path.join(BURNIN, "h100-copy.txt")
    monkeypatch.setattr(tool_runner, "spawn", _runner(module_env, lambda argv: (0, read(path), "")))
    ssh = _call(copy_module.main, {"use_nvbandwidth": "never"})
    assert "cmd" in ssh.kwargs, ssh.kwargs
    plan = k8s_plan.build("copy_bandwidth", ["gpu-node-04"], POD, "t1", {"use_nvbandwidth": "never"})
    (slot,) = plan["steps"][0]["slots"]
    assert slot["sections"][0]["argv"][3:] == ssh.kwargs["cmd"][3:]
    rc, log = pod_log([{"label": "copy", "argv": ["cat", path], "timeout_s": 30}])
    from_k8s = k8s_plan.slot_records(plan, slot, ok(slot, "gpu-node-04"), log)
    assert rc == 0 and [_stable(r) for r in from_k8s] == [_stable(r) for r in ssh.kwargs["results"]]
    assert [r["check"] for r in from_k8s] == ["gpu.copy_h2d", "gpu.copy_d2h"]


def test_a_copy_pod_must_name_its_tool():
    with pytest.raises(Exception, match="use_nvbandwidth: never"):
        k8s_plan.build("copy_bandwidth", ["n1"], POD, "t1")


# --------------------------------------------------------------------------- the modules: check mode, no torch, nvbandwidth

def test_check_mode_runs_nothing(module_env, monkeypatch):
    monkeypatch.setattr(tool_runner, "spawn", _runner(module_env, lambda argv: (0, "", "")))
    soak_run = _call(gpu_soak.main, {"_ansible_check_mode": True, "duration_s": 1800})
    copy_run = _call(copy_module.main, {"_ansible_check_mode": True, "use_nvbandwidth": "never"})
    assert module_env == [] and soak_run.kwargs["results"] == [] and copy_run.kwargs["results"] == []
    cmd = soak_run.kwargs["cmd"]
    assert "soak" in cmd and cmd[cmd.index("--duration-s") + 1] == "1800"
    assert "copy" in copy_run.kwargs["cmd"] and "--p2p" in copy_run.kwargs["cmd"]


def test_without_torch_both_are_skip(module_env, monkeypatch):
    monkeypatch.setattr(tool_runner, "spawn", _runner(module_env, lambda argv: (
        1, "", "Traceback (most recent call last):\nModuleNotFoundError: No module named 'torch'\n")))
    (soak_record,) = _call(gpu_soak.main, {}).kwargs["results"]
    (copy_record,) = _call(copy_module.main, {"use_nvbandwidth": "never"}).kwargs["results"]
    assert (soak_record["status"], copy_record["status"]) == ("skip", "skip")


def test_nvbandwidth_runs_when_installed_with_the_link_facts(module_env, monkeypatch, tmp_path):
    binary = tmp_path / "nvbandwidth"
    binary.write_text("#!/bin/sh\n")
    binary.chmod(0o755)
    out = read(os.path.join(NVB, "issue15-v0.2-8xRTX4090-h2d-d2h-ce.txt"))

    def handler(argv):
        if argv[0].endswith("nvbandwidth"):
            return 0, out, ""
        return 0, "", ""       # nvidia-smi: no facts on this host
    monkeypatch.setattr(tool_runner, "spawn", _runner(module_env, handler))
    res = _call(copy_module.main, {"nvbandwidth": str(binary), "peer_copies": False})
    assert res.kwargs["cmd"][1:] == ["-b", "256", "-i", "20", "-t", "host_to_device_memcpy_ce", "device_to_host_memcpy_ce"]
    assert len(res.kwargs["results"]) == 16 and {r["tool"]["name"] for r in res.kwargs["results"]} == {"nvbandwidth"}
    assert [c["argv"][1:] for c in module_env[:2]] == [list(args) for _k, args in sorted(copy_bandwidth.FACT_QUERIES.items())]


def test_use_nvbandwidth_always_without_it_is_an_error(module_env, monkeypatch):
    monkeypatch.setattr(tool_runner, "spawn", _runner(module_env, lambda argv: (0, "", "")))
    (record,) = _call(copy_module.main, {"use_nvbandwidth": "always", "nvbandwidth": "nvbandwidth-absent"}).kwargs["results"]
    assert record["status"] == "error" and "nvbandwidth is not installed" in record["reason"]


def test_import_mode_gives_the_records_of_the_run_and_runs_nothing(module_env, monkeypatch):
    """from_output: the records of the saved output through the same adapter as a run; no command starts."""
    monkeypatch.setattr(tool_runner, "spawn", _runner(module_env, lambda argv: (0, "", "")))
    soak_path = parser_fixture("burnin", "h100-soak_capped.txt")
    got = _call(gpu_soak.main, {"from_output": soak_path, "duration_s": 30}).kwargs["results"]
    want = soak.records(read(soak_path), Context(params=dict(defaults(soak.OPTIONS), duration_s=30)))
    assert [(r["check"], r["status"], r["reason"]) for r in got] == [(r["check"], r["status"], r["reason"]) for r in want]
    assert [r["status"] for r in got] == ["fail", "pass"] and "capped" in got[0]["reason"]
    copy_path = os.path.join(NVB, "issue15-v0.2-8xRTX4090-h2d-d2h-ce.txt")
    got = _call(copy_module.main, {"from_output": copy_path}).kwargs["results"]
    assert len(got) == 16 and {r["tool"]["name"] for r in got} == {"nvbandwidth"} and module_env == []


def test_a_copy_line_without_its_source_is_a_warning_not_a_crash():
    """The real H100 copy run with the d2h line's source cut (a fuzz find): the h2d record stands, the cut line is
    named in a warn record."""
    text = read(os.path.join(BURNIN, "h100-copy.txt")).replace('"kind": "d2h", "src": 0,', '"kind": "d2h",')
    assert '"kind": "d2h", "dst"' in text
    got = copy_bandwidth.records(text, Context(rc=0, params=defaults(copy_bandwidth.OPTIONS)))
    assert [(r["check"], r["status"]) for r in got] == [("gpu.copy_h2d", "pass"), ("gpu.copy", "warn")]
    assert "without its source, destination or figure" in got[1]["reason"]
