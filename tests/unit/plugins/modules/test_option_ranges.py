# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Numeric options are range-checked before anything runs, and a missing binary is the same documented
``error`` record in every benchmark module (issue 9 item 7). Before: ``iters=-5`` reached nccl-tests as
``-n -5``, perftest took ``size=-4096``, ``port=-1`` and ``timeout_s=-5``, and a missing perftest binary
failed the task while a missing nccl-tests binary was an error record."""

from __future__ import annotations

import socket

import pytest
from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules.test_gpu_modules import _call, _runner
from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules.test_gpu_modules import module_env  # noqa: F401 pylint: disable=unused-import

from ansible_collections.aifabric.acceptance.plugins.module_utils import argspec, results
from ansible_collections.aifabric.acceptance.plugins.modules import (
    allreduce_probe, cleanup, env_probe, gemm_bench, nccl_test, perftest, perftest_sweep)
from ansible_collections.aifabric.acceptance.plugins.module_utils import runner as tool_runner

CASES = [
    (nccl_test.main, {"iterations": -5}, "iterations must be >= 1, got -5"),
    (nccl_test.main, {"warmup_iterations": -1, "average": 7},
     "average must be between 0 and 3, got 7; warmup_iterations"),
    (nccl_test.main, {"timeout_s": 0}, "timeout_s must be >= 1, got 0"),
    (perftest_sweep.main, {"size": -4096, "hcas": ["mlx5_0"], "phase": "run"}, "size must be >= 1, got -4096"),
    (perftest_sweep.main, {"port": -1, "hcas": ["mlx5_0"], "phase": "run"}, "port must be between 1 and 65535"),
    (perftest_sweep.main, {"timeout_s": -5, "hcas": ["mlx5_0"], "phase": "run"}, "timeout_s must be >= 1, got -5"),
    (perftest.main, {"peer_rates_gbit_s": [400.0, -1.0], "state": "absent"}, "peer_rates_gbit_s must be >= 0, got -1"),
    (gemm_bench.main, {"m": 0}, "m must be >= 1, got 0"),
    (gemm_bench.main, {"gpu_indices": [0, -2]}, "gpu_indices must be >= 0, got -2"),
    (allreduce_probe.main, {"step_factor": 1}, "step_factor must be >= 2, got 1"),
    (allreduce_probe.main, {"master_port": 70000}, "master_port must be between 0 and 65535"),
    (env_probe.main, {"timeout_s": 0}, "timeout_s must be >= 1, got 0"),
    (env_probe.main, {"expect": {"gpu_count": -1}}, "expect.gpu_count must be >= 0, got -1"),
    (env_probe.main, {"expect": {"npu_count": -2, "port_rate_gbit_s": -1.5}},
     "expect.npu_count must be >= 0, got -2; expect.port_rate_gbit_s must be >= 0, got -1.5"),
    (cleanup.main, {"run_id": "t1", "grace_s": -1.0}, "grace_s must be >= 0, got -1"),
]


@pytest.mark.parametrize("main, args, message", CASES, ids=[c[2].split(" ")[0] for c in CASES])
def test_out_of_range_fails_before_anything_runs(module_env, monkeypatch, tmp_path, main, args, message):
    monkeypatch.setattr(tool_runner, "spawn", _runner(module_env, lambda argv: (0, "", "")))
    if main in (perftest.main, perftest_sweep.main):
        args = dict(args, state_root=str(tmp_path / "state"))
    res = _call(main, args)
    assert res.failed, res.kwargs
    assert message in res.kwargs["msg"], res.kwargs["msg"]
    assert module_env == []                      # no process started
    assert not (tmp_path / "state").exists()     # no state written


def test_violations_is_pure_and_lists_every_problem():
    ranges = {"a": argspec.POSITIVE, "b": argspec.PORT, "c": (None, 5), "d": argspec.NON_NEGATIVE}
    assert argspec.violations({"a": 1, "b": 22, "c": None, "d": [0, 1]}, ranges) == []
    assert argspec.violations({"a": 0, "b": 0, "c": 6.5, "d": [3, -1]}, ranges) == [
        "a must be >= 1, got 0", "b must be between 1 and 65535, got 0", "c must be <= 5, got 6.5",
        "d must be >= 0, got -1"]


def _free_port():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def _sweep(tmp_path, **kw):
    """perftest_sweep phase=run for one host (lease off: it ends with its schedule), then its records (phase=status)."""
    common = {"hcas": ["mlx5_0", "mlx5_1"], "state_root": str(tmp_path / "state"), "lease_s": 0, "inventory_hostname": "me",
              "port": _free_port(), "port_span": 1, "peers": {"other": "10.0.0.2"}}
    res = _call(perftest_sweep.main, dict(common, phase="run", **kw))
    if res.failed or kw.get("_ansible_check_mode"):
        return res
    assert res.kwargs["outcome"] == "finished", res.kwargs
    return _call(perftest_sweep.main, dict(common, phase="status", **dict((k, v) for k, v in kw.items()
                                                                          if k != "schedule")))


def test_missing_binary_is_the_same_error_record_in_perftest_sweep_and_nccl_test(module_env, monkeypatch, tmp_path):
    """A pair's server step and client step (the one RDMA protocol, module perftest_sweep) with no perftest."""
    monkeypatch.setattr(tool_runner, "spawn", _runner(module_env, lambda argv: (0, "", "")))
    res = _sweep(tmp_path, tool_dir=str(tmp_path), schedule=[[0, "ib_write_bw", 0, "server", "other"],
                                                             [1, "ib_write_bw", 1, "client", "other"]])
    assert not res.failed, res.kwargs
    recs = res.kwargs["results"]
    assert [(r["check"], r["target"]) for r in recs] == [
        ("rdma.ib_write_bw.server", "mlx5_0"), ("rdma.ib_write_bw.server", "mlx5_1"),
        ("rdma.ib_write_bw", "mlx5_0"), ("rdma.ib_write_bw", "mlx5_1")]
    for rec in recs:
        assert results.validate(rec) == [] and rec["status"] == "error"
        assert "ib_write_bw not found" in rec["reason"] and "install perftest" in rec["reason"]
    res = _call(nccl_test.main, {"tool_dir": str(tmp_path), "collectives": ["all_reduce"]})
    (rec,) = res.kwargs["results"]
    assert not res.failed and rec["status"] == "error" and "not found" in rec["reason"]
    assert module_env == []


def test_governor_untouched_when_perftest_stops_early(module_env, monkeypatch, tmp_path):
    """A bad run id or an option out of range fail before the CPU governor is touched; a missing binary (the
    runner holds the governor for its whole schedule) leaves it as it was once the runner ended."""
    monkeypatch.setattr(tool_runner, "spawn", _runner(module_env, lambda argv: (0, "", "")))
    cpu = tmp_path / "cpu" / "cpu0" / "cpufreq"
    cpu.mkdir(parents=True)
    (cpu / "scaling_governor").write_text("schedutil\n")
    (cpu / "scaling_available_governors").write_text("performance schedutil\n")
    common = {"schedule": [[0, "ib_write_bw", 0, "client", "other"]], "cpu_governor": "performance",
              "cpu_sysfs": str(tmp_path / "cpu")}
    for args in ({"run_id": ".."}, {"timeout_s": 0}):
        assert _sweep(tmp_path, **dict(common, **args)).failed
        assert (cpu / "scaling_governor").read_text() == "schedutil\n", args     # never written
    _sweep(tmp_path, **dict(common, tool_dir=str(tmp_path)))
    assert (cpu / "scaling_governor").read_text().strip() == "schedutil"          # restored
