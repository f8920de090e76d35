# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""allreduce_probe, gemm_bench and nccl_test glue: argv, check mode, skips, records from real captures.

The worker outputs replayed here are real: captured on a 2x H200 machine by
tests/hardware/gpu_proof.sh (fixtures/h200x2-proof-*/, see PROVENANCE.md there).
"""

from __future__ import annotations

import json
import os
import shutil

import pytest
from ansible.module_utils import basic
from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules.module_harness import patch_exits, run_main

from ansible_collections.aifabric.acceptance.plugins.module_utils import results
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import _collective
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import Context
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import gemm_bench as gemm_adapter
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import nccl_test as nccl_adapter
from ansible_collections.aifabric.acceptance.plugins.modules import allreduce_probe, gemm_bench, nccl_test
from ansible_collections.aifabric.acceptance.tests.unit.helpers import replayed_runs, module_fixture, parser_fixture, read
from ansible_collections.aifabric.acceptance.plugins.module_utils import runner as tool_runner

HERE = os.path.dirname(os.path.abspath(__file__))
PROOF = module_fixture("h200x2-proof-1")
NCCL_FIXTURES = parser_fixture("nccl_tests")


@pytest.fixture
def module_env(monkeypatch, tmp_path):
    patch_exits(monkeypatch)
    monkeypatch.setattr(basic.AnsibleModule, "tmpdir", str(tmp_path), raising=False)
    bins = {"timeout": "/usr/bin/timeout", "python3": "/usr/bin/python3", "mpirun": "/usr/bin/mpirun",
            "nvidia-smi": "/usr/bin/nvidia-smi"}
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path",
                        lambda self, name, required=False, opt_dirs=None: bins.get(name))
    calls = []
    return calls


def _runner(calls, handler):
    """runner.spawn replaced: each run replayed by ``handler(argv)`` (helpers.replayed_runs)."""
    return replayed_runs(calls, handler)


_call = run_main


# ------------------------------------------------------------------ allreduce_probe

def _smi_list():
    lines = read(module_fixture("h200x2-env.txt")).splitlines()
    return "\n".join(ln for ln in lines if ln.startswith("GPU ")) + "\n"


def _probe_handler(json_name, txt_name):
    def handle(argv):
        if argv[-1] == "-L":
            return 0, _smi_list(), ""
        out = argv[argv.index("--json-out") + 1]
        shutil.copyfile(os.path.join(PROOF, json_name), out)
        return 0, read(os.path.join(PROOF, txt_name)), ""
    return handle


def test_probe_spawn_record_from_real_capture(module_env, monkeypatch):
    monkeypatch.setattr(tool_runner, "spawn",
                        _runner(module_env, _probe_handler("probe_spawn.json", "probe_spawn.txt")))
    res = _call(allreduce_probe.main, {"python": "python3", "env": {"NCCL_NVLS_ENABLE": "0"}})
    assert not res.failed, res.kwargs
    (record,) = res.kwargs["results"]
    assert results.validate(record) == []
    assert record["check"] == "nccl.torch_all_reduce" and record["status"] == "pass"
    assert record["metrics"]["ranks"] == 2
    assert record["metrics"]["busbw_max_gbyte_s"] == pytest.approx(344.6165, abs=1e-3)
    assert record["metrics"]["size_at_busbw_max_bytes"] == 8589934592
    assert record["metrics"]["wrong_total"] == 0
    assert record["series"][-1]["oop_busbw_gbyte_s"] is None  # torch's all_reduce is in place
    assert record["facts"]["profile"] == "h200-sxm-8gpu" and record["facts"]["placement"] == "in_place"
    assert "busbw_max_gbyte_s" in record["expect"]
    worker_argv = module_env[-1]["argv"]
    assert worker_argv[1] == "-I"      # isolated: nothing imported from the working directory
    assert worker_argv[3:5] == ["allreduce", "--min-bytes"] and worker_argv[-4:] == ["--launcher", "spawn", "--nprocs", "2"]
    assert module_env[-1]["env"]["NCCL_NVLS_ENABLE"] == "0"
    assert os.path.isfile(worker_argv[2])  # the worker was staged as a file, from its source


def _probe_runs(module_env, monkeypatch, proofs, floor):
    """allreduce_probe on one host (spawn), its n-th run answered by the real capture of h200x2-proof-<proofs[n]>
    (busbw max: proof-1 344.62 GB/s, proof-4 345.75), held to ``floor`` GB/s."""
    answers = list(proofs)

    def handle(argv):
        if argv[-1] == "-L":
            return 0, _smi_list(), ""
        proof = module_fixture("h200x2-proof-%d" % answers.pop(0))
        shutil.copyfile(os.path.join(proof, "probe_spawn.json"), argv[argv.index("--json-out") + 1])
        return 0, read(os.path.join(proof, "probe_spawn.txt")), ""
    monkeypatch.setattr(tool_runner, "spawn", _runner(module_env, handle))
    res = _call(allreduce_probe.main, {"python": "python3", "expect": {"busbw_max_gbyte_s": {"min": floor}}})
    return res, answers


def test_probe_fail_retested_runs_disagree_is_warn(module_env, monkeypatch):
    res, left = _probe_runs(module_env, monkeypatch, [1, 4], 345)
    (record,) = res.kwargs["results"]
    assert left == [] and res.kwargs["retest_rc"] == 0
    assert record["status"] == "warn" and record["params"]["runs"] == 2 and results.validate(record) == []
    assert record["reason"].startswith("inconclusive: its two runs disagree: run 1 failed (busbw_max_gbyte_s 344.6")
    assert record["metrics"]["run1_busbw_max_gbyte_s"] == pytest.approx(344.6165, abs=1e-3)
    assert record["metrics"]["run2_busbw_max_gbyte_s"] == pytest.approx(345.7546, abs=1e-3)
    res, left = _probe_runs(module_env, monkeypatch, [1, 4], 346)
    (record,) = res.kwargs["results"]
    assert record["status"] == "fail" and record["params"]["runs"] == 2
    assert record["metrics"]["busbw_max_gbyte_s"] == pytest.approx(345.7546, abs=1e-3)   # the better run's record
    res, left = _probe_runs(module_env, monkeypatch, [4, 1], 340)
    (record,) = res.kwargs["results"]
    assert left == [1] and record["status"] == "pass" and record["params"]["runs"] == 1    # a pass is not retested
    assert res.kwargs["retest_rc"] is None


def test_probe_mpirun_argv(module_env, monkeypatch):
    monkeypatch.setattr(tool_runner, "spawn",
                        _runner(module_env, _probe_handler("probe_mpirun.json", "probe_mpirun.txt")))
    monkeypatch.setattr(os, "geteuid", lambda: 0)
    res = _call(allreduce_probe.main, {"launcher": "mpirun", "env": {"NCCL_NVLS_ENABLE": "0"},
                                       "mpirun_mca": {"pml": "ob1"}, "tcp_if_include": "eth0"})
    argv = res.kwargs["cmd"]
    assert argv[:5] == ["/usr/bin/mpirun", "--allow-run-as-root", "-np", "2", "-H"]
    assert argv[5] == "localhost:2"
    assert ["--mca", "btl_tcp_if_include", "eth0"] == argv[argv.index("btl_tcp_if_include") - 1:argv.index("btl_tcp_if_include") + 2]
    assert "NCCL_NVLS_ENABLE=0" in argv and argv[argv.index("NCCL_NVLS_ENABLE=0") - 1] == "-x"
    assert argv[argv.index("--launcher") + 1] == "mpi"
    (record,) = res.kwargs["results"]
    assert record["status"] == "pass"
    assert record["metrics"]["busbw_max_gbyte_s"] == pytest.approx(342.94, abs=0.01)


def test_probe_check_mode_runs_nothing(module_env, monkeypatch):
    monkeypatch.setattr(tool_runner, "spawn", _runner(module_env, lambda argv: (0, "", "")))
    res = _call(allreduce_probe.main, {"_ansible_check_mode": True})
    assert module_env == [] and res.kwargs["results"] == []


def test_probe_without_torch_is_skip(module_env, monkeypatch):
    monkeypatch.setattr(tool_runner, "spawn", _runner(
        module_env, lambda argv: (1, "", "Traceback...\nModuleNotFoundError: No module named 'torch'\n")))
    res = _call(allreduce_probe.main, {})
    (record,) = res.kwargs["results"]
    assert record["status"] == "skip" and "No module named 'torch'" in record["reason"]


def test_probe_torch_missing_after_nvidia_smi_is_skip(module_env, monkeypatch):
    def handle(argv):
        if argv[-1] == "-L":
            return 0, _smi_list(), ""
        return 1, "", "Traceback (most recent call last):\nModuleNotFoundError: No module named 'torch'\n"
    monkeypatch.setattr(tool_runner, "spawn", _runner(module_env, handle))
    res = _call(allreduce_probe.main, {})
    (record,) = res.kwargs["results"]
    assert record["status"] == "skip" and "No module named 'torch'" in record["reason"]
    assert [c["argv"][-1] for c in module_env][0] == "-L"


def test_probe_without_nvidia_smi_asks_torch(module_env, monkeypatch):
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", lambda self, name, required=False, opt_dirs=None:
                        {"timeout": "/usr/bin/timeout", "python3": "/usr/bin/python3"}.get(name))

    def handle(argv):
        if "-c" in argv:
            return 0, "2 | NVIDIA H200\n", ""
        shutil.copyfile(os.path.join(PROOF, "probe_spawn.json"), argv[argv.index("--json-out") + 1])
        return 0, read(os.path.join(PROOF, "probe_spawn.txt")), ""
    monkeypatch.setattr(tool_runner, "spawn", _runner(module_env, handle))
    res = _call(allreduce_probe.main, {})
    assert res.kwargs["results"][0]["status"] == "pass"
    assert "import torch" in module_env[0]["argv"][-1]


def test_probe_crash_is_error_with_output(module_env, monkeypatch):
    def handle(argv):
        if argv[-1] == "-L":
            return 0, _smi_list(), ""
        text = read(os.path.join(PROOF, "probe_spawn.txt")).splitlines()[:8]
        return 1, "\n".join(text), "torch.distributed.DistBackendError: NCCL error in: ...\n"
    monkeypatch.setattr(tool_runner, "spawn", _runner(module_env, handle))
    res = _call(allreduce_probe.main, {})
    (record,) = res.kwargs["results"]
    assert record["status"] == "error" and "DistBackendError" in record["reason"]
    assert "DistBackendError" in record["raw"] and res.kwargs["tool_rc"] == 1


# ------------------------------------------------------------------ gemm_bench

def test_gemm_records_from_real_capture(module_env, monkeypatch):
    def handle(argv):
        return 0, read(os.path.join(PROOF, "gemm_bare.txt")), ""
    monkeypatch.setattr(tool_runner, "spawn", _runner(module_env, handle))
    res = _call(gemm_bench.main, {"expect": {"gpu.gemm_bf16": {"tflops": {"min": 100}}}})
    recs = res.kwargs["results"]
    assert [(r["check"], r["target"]) for r in recs] == [
        ("gpu.gemm_bf16", "0"), ("gpu.gemm_fp16", "0"), ("gpu.gemm_bf16", "1"), ("gpu.gemm_fp16", "1")]
    for rec in recs:
        assert results.validate(rec) == []
        assert rec["facts"]["gpu_model"] == "NVIDIA H200"
        assert rec["metrics"]["power_w"] > 0
    assert recs[0]["expect"]["tflops"]["source"] == "user threshold"   # user rule overrides the profile
    assert recs[1]["expect"]["tflops"]["source"].startswith("profile h200-sxm-8gpu")


def test_gemm_check_mode_and_skip(module_env, monkeypatch):
    monkeypatch.setattr(tool_runner, "spawn", _runner(module_env, lambda argv: (0, "", "")))
    res = _call(gemm_bench.main, {"_ansible_check_mode": True, "dtypes": ["bf16"]})
    assert module_env == [] and "--dtypes" in res.kwargs["cmd"]
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", lambda self, name, required=False, opt_dirs=None:
                        "/usr/bin/timeout" if name == "timeout" else None)
    res = _call(gemm_bench.main, {})
    assert res.kwargs["results"][0]["status"] == "skip"


def test_gemm_without_torch_is_skip(module_env, monkeypatch):
    monkeypatch.setattr(tool_runner, "spawn", _runner(module_env, lambda argv: (
        1, "", "Traceback (most recent call last):\nModuleNotFoundError: No module named 'torch'\n")))
    res = _call(gemm_bench.main, {})
    (record,) = res.kwargs["results"]
    assert record["status"] == "skip" and "No module named 'torch'" in record["reason"]


def _gemm_lines(path, argv):
    """The worker's result lines of a real capture for the GPUs and dtypes ``argv`` asks (``--devices``,
    ``--dtypes``), as the worker prints them: only those."""
    devices = argv[argv.index("--devices") + 1].split(",") if "--devices" in argv else None
    dtypes = argv[argv.index("--dtypes") + 1].split(",")
    out = []
    for line in read(path).splitlines(True):
        if line.startswith("AIFABRIC_GEMM "):
            item = json.loads(line[len("AIFABRIC_GEMM "):])
            if item["dtype"] not in dtypes or (devices and str(item["device"]) not in devices):
                continue
        out.append(line)
    return "".join(out)


def _gemm_two_runs(module_env, monkeypatch, retest):
    """gemm_bench over h200x2-proof-2's capture (GPU 0 bf16 654.8 TFLOP/s, GPU 1 683.9) held to 660 TFLOP/s bf16,
    its retest answered by ``retest(argv)``."""
    def handle(argv):
        if "--devices" not in argv:
            return 0, _gemm_lines(os.path.join(module_fixture("h200x2-proof-2"), "gemm_bare.txt"), argv), ""
        return retest(argv)
    monkeypatch.setattr(tool_runner, "spawn", _runner(module_env, handle))
    res = _call(gemm_bench.main, {"expect": {"gpu.gemm_bf16": {"tflops": {"min": 660}}}})
    by_key = dict(((r["check"], r["target"]), r) for r in res.kwargs["results"])
    return res, by_key


def test_gemm_failing_gpu_retested_and_runs_disagree_is_warn(module_env, monkeypatch):
    res, recs = _gemm_two_runs(module_env, monkeypatch, lambda argv: (
        0, _gemm_lines(os.path.join(module_fixture("h200x2-proof-1"), "gemm_bare.txt"), argv), ""))
    retest_argv = module_env[1]["argv"]
    assert retest_argv[retest_argv.index("--devices") + 1] == "0"      # only the failing GPU and dtype again
    assert retest_argv[retest_argv.index("--dtypes") + 1] == "bf16"
    assert res.kwargs["retest_cmd"][-len(retest_argv):] == retest_argv and len(module_env) == 2
    gpu0 = recs[("gpu.gemm_bf16", "0")]
    assert gpu0["status"] == "warn" and gpu0["reason"].startswith("inconclusive: its two runs disagree: run 1 failed")
    assert gpu0["params"]["runs"] == 2
    assert gpu0["metrics"]["run1_tflops"] == pytest.approx(654.84, abs=0.01)
    assert gpu0["metrics"]["run2_tflops"] == pytest.approx(729.32, abs=0.01)
    assert gpu0["metrics"]["tflops"] == gpu0["metrics"]["run2_tflops"]          # the record of the better run
    assert results.validate(gpu0) == []
    for key in (("gpu.gemm_fp16", "0"), ("gpu.gemm_bf16", "1"), ("gpu.gemm_fp16", "1")):
        assert recs[key]["status"] == "pass" and recs[key]["params"]["runs"] == 1 and "run1_tflops" not in recs[key]["metrics"]


def test_gemm_failing_gpu_fails_only_when_its_retest_fails_too(module_env, monkeypatch):
    _res, recs = _gemm_two_runs(module_env, monkeypatch, lambda argv: (
        0, _gemm_lines(os.path.join(module_fixture("h200x2-proof-4"), "gemm_bare.txt"), argv), ""))
    gpu0 = recs[("gpu.gemm_bf16", "0")]
    assert gpu0["status"] == "fail" and gpu0["params"]["runs"] == 2
    assert gpu0["metrics"]["tflops"] == pytest.approx(655.87, abs=0.01)          # the better of 654.8 and 655.9
    assert "both runs: tflops 654.83" in gpu0["reason"]


def test_gemm_retest_that_measures_nothing_leaves_one_run(module_env, monkeypatch):
    _res, recs = _gemm_two_runs(module_env, monkeypatch, lambda argv: (124, "", ""))
    gpu0 = recs[("gpu.gemm_bf16", "0")]
    assert gpu0["status"] == "fail" and gpu0["params"]["runs"] == 1
    assert "(one run; retest: python3 timed out after " in gpu0["reason"]


def test_gemm_retest_wanted_for_a_gpu_far_below_its_sibling():
    recs = gemm_adapter.records(read(os.path.join(PROOF, "gemm_bare.txt")), Context(
        params=dict({"dtypes": ["bf16", "fp16"], "m": 8192, "n": 8192, "k": 8192,
                     "iterations": 200, "warmup_iterations": 10, "warmup_s": 1.0}), rc=0))
    assert gemm_adapter.retest_wanted(recs) == []         # 729 / 744 and 700 / 676 TFLOP/s: siblings agree
    # GPU 1's fp16 figure at 46 % of GPU 0's (what a competing matmul did on the proof machine; thresholds.PEERS)
    low = [dict(r, metrics=dict(r["metrics"], tflops=0.46 * 700.39)) if (r["check"], r["target"]) == (
        "gpu.gemm_fp16", "1") else r for r in recs]
    assert gemm_adapter.retest_wanted(low) == [(1, "fp16")]
    assert gemm_adapter.retest_params({"dtypes": ["bf16", "fp16"], "gpu_indices": []}, [(1, "fp16")]) == {
        "dtypes": ["fp16"], "gpu_indices": [1]}


# ------------------------------------------------------------------ nccl_test

def test_nccl_import_every_fixture_never_raises(module_env):
    imported = 0
    for root, dirs, files in os.walk(NCCL_FIXTURES):
        dirs[:] = [d for d in dirs if d != "golden"]
        for name in files:
            if not name.endswith((".txt", ".json")):
                continue
            imported += 1
            res = _call(nccl_test.main, {"from_output": os.path.join(root, name)})
            assert not res.failed, (name, res.kwargs)
            (record,) = res.kwargs["results"]
            assert results.validate(record) == []
            if "fragment" in name or "failure" in name or "toomany" in name:
                assert record["status"] == "error", name
                assert record["reason"] and record["raw"], name
    assert imported >= 20, "%d nccl-tests captures under %s: the walk must see the real ones" % (imported, NCCL_FIXTURES)


def test_nccl_import_names_old_layouts_by_file_name(module_env):
    res = _call(nccl_test.main, {"from_output": os.path.join(
        NCCL_FIXTURES, "superbench-all-reduce-8xA100-old-error-col-validation0.txt")})
    (record,) = res.kwargs["results"]
    assert record["check"] == "nccl.all_reduce"
    assert record["facts"]["profile"] == "a100-sxm-8gpu" and record["status"] == "pass"
    assert record["facts"]["output_layout"] == "pre-2.11"


def test_nccl_run_single_node_prefers_json(module_env, monkeypatch, tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "all_reduce_perf").write_text("#!/bin/sh\n")
    (bindir / "all_reduce_perf").chmod(0o755)
    g2 = os.path.join(NCCL_FIXTURES, "h200x2-nccl-tests-2.19.6")

    def handle(argv):
        if argv[-1] == "-h":
            return 0, "USAGE: all_reduce_perf\n\t[-J,--output_file <output file name>]\n", ""
        if argv[-1] == "-L":
            return 0, "GPU 0: NVIDIA H200 (UUID: x)\nGPU 1: NVIDIA H200 (UUID: y)\n", ""
        shutil.copyfile(os.path.join(g2, "all_reduce.json"), argv[argv.index("-J") + 1])
        return 0, read(os.path.join(g2, "all_reduce_g2.txt")), ""
    monkeypatch.setattr(tool_runner, "spawn", _runner(module_env, handle))
    res = _call(nccl_test.main, {"tool_dir": str(bindir), "collectives": ["all_reduce"], "env": {"NCCL_ALGO": "Ring"},
                                 "iterations": 20})
    (argv,) = res.kwargs["cmd"]
    assert argv[1:11] == ["-b", "8", "-e", "8G", "-f", "2", "-g", "2", "-n", "20"] and argv[11] == "-J"
    (record,) = res.kwargs["results"]
    assert record["facts"]["output_format"] == "json" and record["facts"]["nccl_algo"] == "Ring"
    assert record["facts"]["shape"] == "nodes=1 ranks=2 algo=Ring"
    assert record["tool"] == {"name": "nccl-tests", "version": "2.19.6"}
    assert record["metrics"]["busbw_max_gbyte_s"] == 345.68839


def _nccl_two_runs(module_env, monkeypatch, tmp_path, captures, floor, **opts):
    """nccl_test all_reduce on one node (text output), its n-th run answered by the real capture ``captures[n]``
    (h200x2: all_reduce_g2.txt busbw max 345.69 GB/s, all_reduce_debug.txt 261.8), held to ``floor`` GB/s."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "all_reduce_perf").write_text("#!/bin/sh\n")
    (bindir / "all_reduce_perf").chmod(0o755)
    g2 = os.path.join(NCCL_FIXTURES, "h200x2-nccl-tests-2.19.6")
    answers = list(captures)

    def handle(argv):
        if argv[-1] == "-L":
            return 0, "GPU 0: NVIDIA H200 (UUID: x)\nGPU 1: NVIDIA H200 (UUID: y)\n", ""
        return 0, read(os.path.join(g2, answers.pop(0))), ""
    monkeypatch.setattr(tool_runner, "spawn", _runner(module_env, handle))
    res = _call(nccl_test.main, dict({"tool_dir": str(bindir), "collectives": ["all_reduce"], "json_output": "never",
                                      "expect": {"busbw_max_gbyte_s": {"min": floor}}}, **opts))
    return res, answers


def test_nccl_single_node_fail_retested_runs_disagree_is_warn(module_env, monkeypatch, tmp_path):
    res, left = _nccl_two_runs(module_env, monkeypatch, tmp_path, ["all_reduce_debug.txt", "all_reduce_g2.txt"], 300)
    assert left == [] and [r.get("retest", False) for r in res.kwargs["runs"]] == [False, True]
    (record,) = res.kwargs["results"]
    assert record["status"] == "warn" and record["params"]["runs"] == 2
    assert record["reason"].startswith("inconclusive: its two runs disagree: run 1 failed (busbw_max_gbyte_s 261.75")
    assert (record["metrics"]["run1_busbw_max_gbyte_s"], record["metrics"]["run2_busbw_max_gbyte_s"]) == (
        261.75, 345.69)
    assert record["metrics"]["busbw_max_gbyte_s"] == 345.69 and results.validate(record) == []


def test_nccl_single_node_fails_when_both_runs_fail(module_env, monkeypatch, tmp_path):
    res, _left = _nccl_two_runs(module_env, monkeypatch, tmp_path, ["all_reduce_g2.txt", "all_reduce_debug.txt"], 350)
    (record,) = res.kwargs["results"]
    assert record["status"] == "fail" and record["params"]["runs"] == 2
    assert record["metrics"]["busbw_max_gbyte_s"] == 345.69           # the better run's record
    assert record["reason"].endswith("(both runs: busbw_max_gbyte_s 345.69, then 261.75)")


def test_nccl_single_node_no_retest_without_time_or_over_hosts(module_env, monkeypatch, tmp_path):
    res, left = _nccl_two_runs(module_env, monkeypatch, tmp_path, ["all_reduce_g2.txt", "all_reduce_debug.txt"], 350,
                               timeout_s=1)
    (record,) = res.kwargs["results"]
    assert left == ["all_reduce_debug.txt"] and record["status"] == "fail" and record["params"]["runs"] == 1
    assert record["reason"].endswith("(one run; retest: not run: 0 s of timeout_s 1 left, the first run took 0 s)")


def test_collective_data_errors_are_never_retested():
    g2 = os.path.join(NCCL_FIXTURES, "h200x2-nccl-tests-2.19.6")
    (record,) = nccl_adapter.records(read(os.path.join(g2, "all_reduce_g2.txt")), Context(
        params={"expect": {"busbw_max_gbyte_s": {"min": 350}}}, rc=0, collective="all_reduce"))
    assert record["status"] == "fail" and _collective.retest_worth(record)
    for metric in ("wrong_total", "out_of_bounds_total"):
        corrupt = dict(record, metrics=dict(record["metrics"], **{metric: 3}))
        assert not _collective.retest_worth(corrupt)     # a clean second run does not clear wrong data


def test_nccl_missing_binary_skip_or_error(module_env, monkeypatch, tmp_path):
    monkeypatch.setattr(tool_runner, "spawn", _runner(module_env, lambda argv: (0, "", "")))
    res = _call(nccl_test.main, {"tool_dir": str(tmp_path), "collectives": ["all_reduce"], "if_missing": "skip"})
    assert res.kwargs["results"][0]["status"] == "skip"
    res = _call(nccl_test.main, {"tool_dir": str(tmp_path), "collectives": ["all_reduce"]})
    assert res.kwargs["results"][0]["status"] == "error"
    assert "aifabric.acceptance.nccl_tests" in res.kwargs["results"][0]["reason"]


def test_nccl_multi_node_needs_ranks_per_node(module_env):
    res = _call(nccl_test.main, {"hosts": ["a", "b"]})
    assert res.failed and "ranks_per_node" in res.kwargs["msg"]


def test_nccl_check_mode_runs_nothing(module_env, monkeypatch, tmp_path):
    (tmp_path / "all_gather_perf").write_text("#!/bin/sh\n")
    (tmp_path / "all_gather_perf").chmod(0o755)
    monkeypatch.setattr(tool_runner, "spawn", _runner(module_env, lambda argv: (0, "", "")))
    res = _call(nccl_test.main, {"_ansible_check_mode": True, "tool_dir": str(tmp_path), "collectives": ["all_gather"],
                                 "hosts": ["n1", "n2"], "ranks_per_node": 8})
    assert module_env == [] and res.kwargs["results"] == []
    argv = res.kwargs["cmd"][0]
    assert argv[argv.index("-np") + 1] == "16" and "--hostfile" in argv and argv[-2:] == ["-g", "1"]


def test_probe_json_doc_is_the_nccl_tests_shape():
    doc = json.loads(read(os.path.join(PROOF, "probe_spawn.json")))
    assert doc["results"][-1]["size"] == 8589934592 and doc["results"][-1]["out_of_place"] is None
