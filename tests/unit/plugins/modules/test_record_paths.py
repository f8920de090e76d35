# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One code path for records: the module_utils functions a second substrate (Kubernetes pod logs) calls
build exactly the records the modules return for the same real captured outputs; the shared import reader."""

from __future__ import annotations

import os
import shutil

import pytest
from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules.test_gpu_modules import (
    NCCL_FIXTURES, PROOF, _call, _runner)
from ansible_collections.aifabric.acceptance.tests.unit.helpers import read
from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules.test_gpu_modules import module_env  # noqa: F401 pylint: disable=unused-import
from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules.test_perftest_module import (
    FIXTURES as PERFTEST_FIXTURES)

from ansible_collections.aifabric.acceptance.plugins.module_utils import imports
from ansible_collections.aifabric.acceptance.plugins.module_utils import results
from ansible_collections.aifabric.acceptance.plugins.modules import gemm_bench, nccl_test, perftest
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import Context
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import perftest_sweep as perftest_tool
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import nccl_test as nccl_tool
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import gemm_bench as gemm_tool
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import allreduce_probe as torch_allreduce_tool
from ansible_collections.aifabric.acceptance.plugins.module_utils import runner as tool_runner

G2 = os.path.join(NCCL_FIXTURES, "h200x2-nccl-tests-2.19.6")
VOLATILE = ("started", "duration_s")


def _stable(record):
    return dict((k, v) for k, v in record.items() if k not in VOLATILE)


def test_nccl_records_from_output_equal_the_module_run(module_env, monkeypatch, tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "all_reduce_perf").write_text("#!/bin/sh\n")
    (bindir / "all_reduce_perf").chmod(0o755)

    def handle(argv):
        if argv[-1] == "-h":
            return 0, "USAGE: all_reduce_perf\n\t[-J,--output_file <output file name>]\n", ""
        if argv[-1] == "-L":
            return 0, "GPU 0: NVIDIA H200 (UUID: x)\nGPU 1: NVIDIA H200 (UUID: y)\n", ""
        shutil.copyfile(os.path.join(G2, "all_reduce.json"), argv[argv.index("-J") + 1])
        return 0, read(os.path.join(G2, "all_reduce_g2.txt")), ""
    monkeypatch.setattr(tool_runner, "spawn", _runner(module_env, handle))
    res = _call(nccl_test.main, {"tool_dir": str(bindir), "collectives": ["all_reduce"], "env": {"NCCL_ALGO": "Ring"}})
    (from_module,) = res.kwargs["results"]
    (argv,) = res.kwargs["cmd"]
    # what a pod-log reader calls: the same text and JSON, the same options
    (from_log,) = nccl_tool.records(read(os.path.join(G2, "all_reduce_g2.txt")), Context(
        rc=0, params={"env": {"NCCL_ALGO": "Ring"}}, collective="all_reduce",
        document=read(os.path.join(G2, "all_reduce.json")), argv=argv, env={"NCCL_ALGO": "Ring"}))
    assert from_module["status"] == "pass" and results.validate(from_log) == []
    assert _stable(from_log) == _stable(from_module)


def test_nccl_argv_and_launch_match_the_module(module_env, monkeypatch, tmp_path):
    (tmp_path / "all_gather_perf").write_text("#!/bin/sh\n")
    (tmp_path / "all_gather_perf").chmod(0o755)
    monkeypatch.setattr(tool_runner, "spawn", _runner(module_env, lambda argv: (0, "", "")))
    args = {"tool_dir": str(tmp_path), "collectives": ["all_gather"], "hosts": ["n1", "n2"], "ranks_per_node": 8,
            "iterations": 5, "split": "AND 0x7"}
    res = _call(nccl_test.main, dict(args, _ansible_check_mode=True))
    params = {"hosts": ["n1", "n2"], "ranks_per_node": 8, "iterations": 5, "split": "AND 0x7", "min_bytes": "8",
              "max_bytes": "8G", "step_factor": 2, "mpirun_env_forward": ["PATH", "LD_LIBRARY_PATH"]}
    env = nccl_tool.run_env(params)
    assert env == {"NCCL_TESTS_SPLIT": "AND 0x7"}
    env["AIFABRIC_RUN_TAG"] = res.kwargs["run_id"]     # every rank carries the run id (issue 9 item 2)
    inner = nccl_tool.nccl_argv(os.path.join(str(tmp_path), "all_gather_perf"), params, gpus_per_process=1)
    want = nccl_tool.launch_argv(inner, "/usr/bin/mpirun", params, env, hostfile=os.path.join(str(tmp_path), "hostfile"),
                                 allow_run_as_root=os.geteuid() == 0)
    assert res.kwargs["cmd"] == [want]


def test_nccl_records_from_output_never_raise_on_garbage():
    for text in ("", "\x00\xff garbage", "# nThread 1 nGpus 1\n#  size count\n   8 2 float sum -1 nan"):
        (record,) = nccl_tool.records(text, Context(rc=1, params={}, collective="all_reduce", document="{not json"))
        assert record["status"] == "error" and results.validate(record) == []


@pytest.mark.parametrize("name, side", [
    ("cx7-ndr-ib-read-bw-client-report-gbits-cpufreq-warning.txt", None),
    ("rxe-softroce-ib-send-lat-server-glued-columns.txt", None),
    ("perftest-client-failed-to-modify-qp-to-rts.txt", "client"),
])
def test_perftest_records_from_output_equal_import_mode(module_env, name, side):
    path = os.path.join(PERFTEST_FIXTURES, name)
    args = {"from_output": path, "hcas": ["mlx5_0"], "peer_name": "n1", "inventory_hostname": "n2",
            "expect": {"bw_avg_gbit_s": {"min": 100}}}
    if side:
        args["side"] = side
    res = _call(perftest.main, args)
    assert not res.failed
    from_module = res.kwargs["results"]
    params = {"peer_name": "n1", "expect": {"bw_avg_gbit_s": {"min": 100}}, "hcas": ["mlx5_0"], "side": side}
    from_log = perftest_tool.from_output(path, params, "n2")
    assert [_stable(r) for r in from_log] == [_stable(r) for r in from_module]
    # the pure entry point a pod-log reader calls gives the same record
    text = read(path)
    test = from_module[0]["check"].split(".")[1]
    direct = perftest_tool.records(text, Context(
        params=dict(params, test=test), rc=None, side=from_module[0]["facts"]["side"], host="n2", target="mlx5_0",
        facts={"imported_from": path}))
    assert [_stable(r) for r in direct] == [_stable(r) for r in from_module]


def test_perftest_device_plan_and_argvs_are_pure():
    params = {"port": 20000, "ib_port": 1, "gid_index": None, "test": "ib_write_bw", "size": 65536,
              "report_gbits": True, "qps": 4}
    plan = perftest_tool.device_plan(["mlx5_0", "mlx5_1"], params, hcas=None)
    assert [(i, d, p, g) for i, d, p, g, _facts in plan] == [(0, "mlx5_0", 20000, None), (1, "mlx5_1", 20001, None)]
    client, = perftest_tool.argvs_for("/usr/bin/ib_write_bw", params, plan[:1], "client", peer_address="10.0.0.2")
    assert client == ["/usr/bin/ib_write_bw", "-d", "mlx5_0", "-i", "1", "-p", "20000", "-s", "65536",
                      "-q", "4", "--report_gbits", "10.0.0.2"]
    with pytest.raises(perftest_tool.AcceptanceError):
        perftest_tool.device_plan(["mlx5_0;reboot"], params)


def test_gemm_records_from_output_equal_the_module(module_env, monkeypatch):
    text = read(os.path.join(PROOF, "gemm_bare.txt"))
    monkeypatch.setattr(tool_runner, "spawn", _runner(module_env, lambda argv: (0, text, "")))
    res = _call(gemm_bench.main, {})
    params = {"dtypes": ["bf16", "fp16"], "m": 8192, "n": 8192, "k": 8192, "iterations": 200,
              "warmup_iterations": 10, "warmup_s": 1.0, "profile": "auto"}
    assert res.kwargs["cmd"][1] == "-I" and gemm_tool.worker_args(params) == res.kwargs["cmd"][3:]
    from_log = gemm_tool.records(text, Context(rc=0, params=params, argv=res.kwargs["cmd"]))
    assert [_stable(r) for r in from_log] == [_stable(r) for r in res.kwargs["results"]]
    assert len(from_log) == 4 and all(r["status"] == "pass" for r in from_log)


def test_probe_records_from_output():
    params = {"min_bytes": "1M", "max_bytes": "8G", "iterations": 20, "warmup_iterations": 5, "datatype": "float"}
    (rec,) = torch_allreduce_tool.records(read(os.path.join(PROOF, "probe_spawn.txt")), Context(
        document=read(os.path.join(PROOF, "probe_spawn.json")), rc=0, params=params, gpu_name="NVIDIA H200",
        gpus=2))
    assert rec["check"] == "nccl.torch_all_reduce" and rec["status"] == "pass" and rec["metrics"]["ranks"] == 2
    (skip,) = torch_allreduce_tool.records("ModuleNotFoundError: No module named 'torch'\n", Context(
        document=None, rc=1, params=params))
    assert skip["status"] == "skip"
    (err,) = torch_allreduce_tool.records("Segmentation fault\n", Context(document=None, rc=-11, params=params))
    assert err["status"] == "error" and "Segmentation fault" in err["reason"]


# ------------------------------------------------------------------ the shared import reader (issue 9 item 3)

def test_import_reader_refuses_devices_fifos_directories_and_large_files(tmp_path):
    with pytest.raises(imports.ImportRefused, match="character device"):
        imports.read_output("/dev/zero")
    with pytest.raises(imports.ImportRefused, match="directory"):
        imports.read_output(str(tmp_path))
    with pytest.raises(imports.ImportRefused, match="No such file"):
        imports.read_output(str(tmp_path / "missing"))
    fifo = str(tmp_path / "fifo")
    os.mkfifo(fifo)
    with pytest.raises(imports.ImportRefused, match="FIFO"):
        imports.read_output(fifo)   # returns at once: opened non-blocking, no writer needed
    big = tmp_path / "big.txt"
    big.write_bytes(b"x" * 2048)
    with pytest.raises(imports.ImportRefused, match="more than the import limit of 1024 bytes"):
        imports.read_output(str(big), limit=1024)
    assert imports.read_output(str(big), limit=2048) == "x" * 2048
    link = tmp_path / "link.txt"
    link.symlink_to(big)
    assert len(imports.read_output(str(link))) == 2048


def test_import_mode_of_every_module_says_why_for_dev_zero(module_env, tmp_path):
    failed = _call(perftest.main, {"from_output": "/dev/zero"})
    assert failed.failed and "character device" in failed.kwargs["msg"] and "regular files only" in failed.kwargs["msg"]
    res = _call(nccl_test.main, {"from_output": "/dev/zero"})
    assert res.failed and "character device" in res.kwargs["msg"] and "regular files only" in res.kwargs["msg"]
    fifo = str(tmp_path / "fifo")
    os.mkfifo(fifo)
    for main in (perftest.main, nccl_test.main):
        res = _call(main, {"from_output": fifo})
        assert res.failed and "FIFO" in res.kwargs["msg"]


def test_perftest_takes_its_former_option_names_with_a_deprecation_warning(module_env, capfd):
    """host_name and peer_rate_gbit_s (the names before 2.0.0) still give the same records as inventory_hostname and
    peer_rates_gbit_s, and Ansible is told they are deprecated (removed in 3.0.0)."""
    from ansible.module_utils.common import warnings as ansible_warnings
    path = os.path.join(PERFTEST_FIXTURES, "cx7-ndr-ib-read-bw-client-report-gbits-cpufreq-warning.txt")
    args = {"from_output": path, "hcas": ["mlx5_0"], "peer_name": "n1"}
    new = _call(perftest.main, dict(args, inventory_hostname="n2", peer_rates_gbit_s=[100.0]))
    before = len(ansible_warnings.get_deprecation_messages())
    old = _call(perftest.main, dict(args, host_name="n2", peer_rate_gbit_s=[100.0]))
    assert not new.failed and not old.failed
    assert [_stable(r) for r in old.kwargs["results"]] == [_stable(r) for r in new.kwargs["results"]]
    assert new.kwargs["results"][0]["host"] == "n2"
    # kept for the module's result, or (once the controller's display is set up in this process) shown at once
    said = [str(d) for d in ansible_warnings.get_deprecation_messages()[before:]] + capfd.readouterr().err.splitlines()
    assert any("host_name" in d and "3.0.0" in d for d in said), said
    assert any("peer_rate_gbit_s" in d and "3.0.0" in d for d in said), said
