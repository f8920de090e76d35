# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Numeric options are range-checked before anything runs, and a missing binary is the same documented
``error`` record in every benchmark module (issue 9 item 7). Before: ``iters=-5`` reached nccl-tests as
``-n -5``, perftest took ``size=-4096``, ``port=-1`` and ``timeout_s=-5``, and a missing perftest binary
failed the task while a missing nccl-tests binary was an error record."""

from __future__ import annotations

import pytest
from ansible.module_utils import basic
from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules.test_gpu_modules import _call, _runner
from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules.test_gpu_modules import module_env  # noqa: F401 pylint: disable=unused-import

from ansible_collections.aifabric.acceptance.plugins.module_utils import argspec, results
from ansible_collections.aifabric.acceptance.plugins.modules import (
    allreduce_probe, cleanup, env_probe, gemm_bench, nccl_test, perftest)

CASES = [
    (nccl_test.main, {"iters": -5}, "iters must be >= 1, got -5"),
    (nccl_test.main, {"warmup_iters": -1, "average": 7}, "average must be between 0 and 3, got 7; warmup_iters"),
    (nccl_test.main, {"timeout": 0}, "timeout must be >= 1, got 0"),
    (perftest.main, {"size": -4096, "devices": ["mlx5_0"], "state": "server"}, "size must be >= 1, got -4096"),
    (perftest.main, {"port": -1, "devices": ["mlx5_0"], "state": "server"}, "port must be between 1 and 65535"),
    (perftest.main, {"timeout_s": -5, "devices": ["mlx5_0"], "state": "server"}, "timeout_s must be >= 1, got -5"),
    (perftest.main, {"peer_rate_gbit_s": [400.0, -1.0], "state": "collect"}, "peer_rate_gbit_s must be >= 0, got -1"),
    (gemm_bench.main, {"m": 0}, "m must be >= 1, got 0"),
    (gemm_bench.main, {"devices": [0, -2]}, "devices must be >= 0, got -2"),
    (allreduce_probe.main, {"step_factor": 1}, "step_factor must be >= 2, got 1"),
    (allreduce_probe.main, {"master_port": 70000}, "master_port must be between 0 and 65535"),
    (env_probe.main, {"timeout": 0}, "timeout must be >= 1, got 0"),
    (env_probe.main, {"expect_gpu_count": -1}, "expect_gpu_count must be >= 0, got -1"),
    (cleanup.main, {"run_tag": "t1", "grace_s": -1.0}, "grace_s must be >= 0, got -1"),
]


@pytest.mark.parametrize("main, args, message", CASES, ids=[c[2].split(" ")[0] for c in CASES])
def test_out_of_range_fails_before_anything_runs(module_env, monkeypatch, tmp_path, main, args, message):
    monkeypatch.setattr(basic.AnsibleModule, "run_command", _runner(module_env, lambda argv: (0, "", "")))
    if main is perftest.main:
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


def test_missing_binary_is_the_same_error_record_in_perftest_and_nccl_test(module_env, monkeypatch, tmp_path):
    monkeypatch.setattr(basic.AnsibleModule, "run_command", _runner(module_env, lambda argv: (0, "", "")))
    for state in ("server", "client"):
        res = _call(perftest.main, {"state": state, "devices": ["mlx5_0", "mlx5_1"], "peer": "10.0.0.2",
                                    "perftest_path": str(tmp_path), "state_root": str(tmp_path / "state")})
        assert not res.failed, res.kwargs
        recs = res.kwargs["results"]
        assert [r["target"] for r in recs] == ["mlx5_0", "mlx5_1"]
        for rec in recs:
            assert results.validate(rec) == [] and rec["status"] == "error"
            assert rec["check"] == ("rdma.ib_write_bw.server" if state == "server" else "rdma.ib_write_bw")
            assert "ib_write_bw not found" in rec["reason"] and "install perftest" in rec["reason"]
        assert res.kwargs.get("handles", []) == []
    res = _call(nccl_test.main, {"binary_dir": str(tmp_path)})
    (rec,) = res.kwargs["results"]
    assert not res.failed and rec["status"] == "error" and "not found" in rec["reason"]
    assert module_env == []


def test_governor_untouched_when_perftest_stops_early(module_env, monkeypatch, tmp_path):
    """The CPU governor is set only once a test really starts: a missing binary, a bad run id or an option out
    of range leave it as it was (and nothing is left to restore)."""
    monkeypatch.setattr(basic.AnsibleModule, "run_command", _runner(module_env, lambda argv: (0, "", "")))
    cpu = tmp_path / "cpu" / "cpu0" / "cpufreq"
    cpu.mkdir(parents=True)
    (cpu / "scaling_governor").write_text("schedutil\n")
    (cpu / "scaling_available_governors").write_text("performance schedutil\n")
    common = {"state": "client", "devices": ["mlx5_0"], "peer": "10.0.0.2", "cpu_governor": "performance",
              "cpu_sysfs": str(tmp_path / "cpu"), "state_root": str(tmp_path / "state")}
    for args in ({"perftest_path": str(tmp_path)}, {"run_id": ".."}, {"timeout_s": 0}):
        _call(perftest.main, dict(common, **args))
        assert (cpu / "scaling_governor").read_text() == "schedutil\n", args
