# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""hccl_test glue: mpirun argv (MPICH and Open MPI), hostfiles, the CANN environment script, check mode,
missing binaries, option ranges, import mode - records from the real captures."""

from __future__ import annotations

import os
import subprocess

import pytest
from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args
from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules.module_harness import Exit, patch_exits

from ansible_collections.aifabric.acceptance.plugins.module_utils import hccl_run
from ansible_collections.aifabric.acceptance.plugins.modules import hccl_test
from ansible_collections.aifabric.acceptance.tests.unit.helpers import replayed_runs, parser_fixture, read
from ansible_collections.aifabric.acceptance.plugins.module_utils import runner as tool_runner

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = parser_fixture("hccl_test")
DOCS_8NPU = os.path.join(FIXTURES, "oam-tools-docs-all-reduce-8npu-8K-64M-avg-time-header.txt")
RETCODE7 = os.path.join(FIXTURES, "oam-tools-faq-retcode7-init-hcclcomm-failure.txt")


@pytest.fixture
def calls(monkeypatch, tmp_path):
    patch_exits(monkeypatch)
    monkeypatch.setattr(basic.AnsibleModule, "tmpdir", str(tmp_path), raising=False)
    bins = {"timeout": "/usr/bin/timeout", "mpirun": "/usr/bin/mpirun", "bash": "/bin/bash"}
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path",
                        lambda self, name, required=False, opt_dirs=None: bins.get(name))
    return []


def _runner(calls, handler):
    """runner.spawn replaced: each run replayed by ``handler(argv)`` (helpers.replayed_runs)."""
    return replayed_runs(calls, handler)


def _call(args):
    """The module with ``args``; cann_env_script '' unless given (this machine has no CANN set_env.sh to source:
    test_the_defaults_are_where_cann_installs_hccl_test runs with the default)."""
    return _call_module(dict({"cann_env_script": ""}, **args))


def _call_module(args):
    with patch_module_args(args):
        with pytest.raises(Exit) as exc:
            hccl_test.main()
    return exc.value


def _bindir(tmp_path, *names):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name in names:
        (bindir / name).write_text("#!/bin/sh\n")
        (bindir / name).chmod(0o755)
    return str(bindir)


def test_single_node_mpich_record_from_real_capture(calls, monkeypatch, tmp_path):
    bindir = _bindir(tmp_path, "all_reduce_test")
    monkeypatch.setattr(tool_runner, "spawn", _runner(calls, lambda argv: (0, read(DOCS_8NPU), "")))
    res = _call({"tool_dir": bindir, "collectives": ["all_reduce"], "max_bytes": "64M", "datatype": "fp32", "op": "sum",
                 "env": {"HCCL_CONNECT_TIMEOUT": "600"}})
    (argv,) = res.kwargs["cmd"]
    assert argv == ["/usr/bin/mpirun", "-n", "8", "-genv", "AIFABRIC_RUN_TAG", res.kwargs["run_id"],
                    "-genv", "HCCL_CONNECT_TIMEOUT", "600", "-genvlist", "LD_LIBRARY_PATH,PATH",
                    os.path.join(bindir, "all_reduce_test"), "-b", "8K", "-e", "64M", "-f", "2", "-p", "8",
                    "-d", "fp32", "-o", "sum"]
    (record,) = res.kwargs["results"]
    assert record["check"] == "hccl.all_reduce" and record["status"] == "pass"
    assert record["metrics"]["busbw_max_gbyte_s"] == pytest.approx(23.76245 * 1.75, rel=1e-6)
    assert record["series"][0]["type"] == "fp32" and record["tool"] == {"name": "hccl_test"}
    assert res.kwargs["runs"][0]["rc"] == 0


def test_multi_node_openmpi_and_mpich_syntax(calls, monkeypatch, tmp_path):
    bindir = _bindir(tmp_path, "all_gather_test")
    monkeypatch.setattr(tool_runner, "spawn", _runner(calls, lambda argv: (0, "", "")))
    common = {"_ansible_check_mode": True, "tool_dir": bindir, "collectives": ["all_gather"], "hosts": ["n1", "n2"],
              "npus_per_node": 16, "run_id": "t1"}
    res = _call(dict(common, mpi_flavour="openmpi", tcp_if_include="eth0"))
    argv = res.kwargs["cmd"][0]
    assert argv[argv.index("--hostfile") + 1] == str(tmp_path / "hostfile")
    assert argv[argv.index("-np") + 1] == "32" and "AIFABRIC_RUN_TAG=t1" in argv
    assert ["--mca", "btl_tcp_if_include", "eth0"] == argv[argv.index("btl_tcp_if_include") - 1:][:3]
    assert argv[-2:] == ["-p", "16"]
    res = _call(dict(common, mpi_flavour="mpich"))
    argv = res.kwargs["cmd"][0]
    assert argv[1:5] == ["-f", str(tmp_path / "hostfile"), "-n", "32"]
    assert calls == [] and res.kwargs["results"] == []   # check mode: nothing ran, no hostfile written
    assert not (tmp_path / "hostfile").exists()


def test_hostfile_syntaxes():
    assert hccl_run.adapter.hostfile_text(["a", "b"], 8, "mpich") == "a:8\nb:8\n"
    assert hccl_run.adapter.hostfile_text(["a", "b"], 8, "openmpi") == "a slots=8\nb slots=8\n"


def test_multi_node_run_writes_hostfile_and_judges_failure(calls, monkeypatch, tmp_path):
    bindir = _bindir(tmp_path, "all_reduce_test")
    monkeypatch.setattr(tool_runner, "spawn", _runner(calls, lambda argv: (1, read(RETCODE7), "")))
    res = _call({"tool_dir": bindir, "collectives": ["all_reduce"], "hosts": ["n1", "n2"], "npus_per_node": 8})
    assert (tmp_path / "hostfile").read_text() == "n1:8\nn2:8\n"
    (record,) = res.kwargs["results"]
    assert record["status"] == "error" and "init_hcclComm" in record["reason"]


def test_env_outside_hccl_ascend_is_refused(calls, tmp_path):
    res = _call({"tool_dir": str(tmp_path), "env": {"LD_PRELOAD": "/tmp/x.so"}})
    assert res.failed and "LD_PRELOAD" in res.kwargs["msg"]


def test_missing_binary_skip_or_error(calls, monkeypatch, tmp_path):
    monkeypatch.setattr(tool_runner, "spawn", _runner(calls, lambda argv: (0, "", "")))
    res = _call({"tool_dir": str(tmp_path), "if_missing": "skip"})
    assert [r["status"] for r in res.kwargs["results"]] == ["skip"] * 4   # the default collectives
    res = _call({"tool_dir": str(tmp_path), "collectives": ["all_reduce"]})
    (record,) = res.kwargs["results"]
    assert record["status"] == "error" and "all_reduce_test not found" in record["reason"]
    assert "tools/hccl_test" in record["reason"] and calls == []


def test_option_ranges(calls):
    res = _call({"iterations": 0, "npus_per_node": 0})
    assert res.failed and "iterations must be >= 1, got 0" in res.kwargs["msg"]
    assert "npus_per_node must be >= 1, got 0" in res.kwargs["msg"]


def test_import_mode(calls, tmp_path):
    path = tmp_path / "reduce_scatter.log"
    path.write_text(read(DOCS_8NPU))
    res = _call({"from_output": str(path), "ranks": 8, "_ansible_check_mode": True})
    (record,) = res.kwargs["results"]
    assert record["check"] == "hccl.reduce_scatter" and record["metrics"]["busbw_max_gbyte_s"] == pytest.approx(
        23.76245 * 7 / 8, rel=1e-6)


def test_import_refuses_a_directory(calls, tmp_path):
    res = _call({"from_output": str(tmp_path)})
    assert res.failed and "directory" in res.kwargs["msg"]


def test_cann_env_script_reaches_launcher_and_ranks(calls, monkeypatch, tmp_path):
    bindir = _bindir(tmp_path, "all_reduce_test")
    script = tmp_path / "set_env.sh"
    script.write_text("export ASCEND_HOME_PATH=/opt/x\n")
    blob = "ASCEND_HOME_PATH=/opt/ascend\0LD_LIBRARY_PATH=/opt/ascend/lib64\0UNRELATED=1\0"

    def handle(argv):
        if argv[0] == "/bin/bash":
            return 0, blob, ""
        return 0, read(DOCS_8NPU), ""
    monkeypatch.setattr(tool_runner, "spawn", _runner(calls, handle))
    res = _call({"tool_dir": bindir, "collectives": ["all_reduce"], "cann_env_script": str(script), "max_bytes": "64M"})
    assert calls[0]["argv"] == ["/bin/bash", "-c", '. "$1" >/dev/null 2>&1 && env -0', "aifabric-set-env", str(script)]
    launch = calls[1]
    assert launch["env"]["ASCEND_HOME_PATH"] == "/opt/ascend" and "UNRELATED" not in launch["env"]
    argv = launch["argv"]
    assert argv[argv.index("-genvlist") + 1] == "ASCEND_HOME_PATH,LD_LIBRARY_PATH,PATH"
    assert res.kwargs["results"][0]["status"] == "pass"


def test_cann_env_script_missing_fails_the_task(calls, tmp_path):
    res = _call({"cann_env_script": str(tmp_path / "nope.sh")})
    assert res.failed and "is not a file" in res.kwargs["msg"]


def test_script_path_is_never_interpreted_by_the_shell(tmp_path):
    # a real bash: the path's characters stay data, the script's exports come back
    odd = tmp_path / "set_env $(touch PWNED); echo x.sh"
    odd.write_text('export ASCEND_TOOLKIT_HOME="%s"\nexport PATH="/opt/ascend/bin:$PATH"\n' % tmp_path)
    assert str(odd).startswith(str(tmp_path))
    out = subprocess.run(hccl_run.script_argv("bash", str(odd)), capture_output=True, timeout=30, cwd=str(tmp_path),
                         env={"PATH": "/usr/bin:/bin"}, check=True).stdout
    changed = hccl_run.env_from_script_output(out, {"PATH": "/usr/bin:/bin"})
    assert changed == {"ASCEND_TOOLKIT_HOME": str(tmp_path), "PATH": "/opt/ascend/bin:/usr/bin:/bin"}
    assert not (tmp_path / "PWNED").exists()


def test_the_defaults_are_where_cann_installs_hccl_test(calls, tmp_path):
    # one default each, in tools/hccl_test.py's OPTIONS (the hccl role passes none): the toolkit's set_env.sh is
    # sourced - on this machine, without CANN, the task fails naming it - and the binaries are looked for in the
    # toolkit's tools/hccl_test/bin, one per default collective (check mode lists the commands it would run)
    res = _call_module({"tool_dir": str(tmp_path)})
    assert res.failed and "cann_env_script /usr/local/Ascend/ascend-toolkit/set_env.sh is not a file" in res.kwargs["msg"]
    res = _call({"_ansible_check_mode": True})
    assert res.kwargs["cmd"] == [["/usr/local/Ascend/ascend-toolkit/latest/tools/hccl_test/bin/%s_test" % name]
                                 for name in ("all_reduce", "all_gather", "reduce_scatter", "alltoall")]


@pytest.mark.parametrize("verify_data, flag", [(True, ["-c", "1"]), (False, ["-c", "0"]), (None, [])])
def test_verify_data_is_the_c_flag_or_the_tools_default(calls, tmp_path, verify_data, flag):
    # HCCL Test checks unless told -c 0 (its check defaults to 1): false must say so, unset says nothing
    bindir = _bindir(tmp_path, "all_reduce_test")
    args = {"_ansible_check_mode": True, "tool_dir": bindir, "collectives": ["all_reduce"], "npus_per_node": 2}
    if verify_data is not None:
        args["verify_data"] = verify_data
    (argv,) = _call(args).kwargs["cmd"]
    words = argv[argv.index(os.path.join(bindir, "all_reduce_test")):]
    assert words == [os.path.join(bindir, "all_reduce_test"), "-b", "8K", "-e", "1G", "-f", "2"] + flag + ["-p", "2"]
