# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""nccl_test over hosts with ranks_per_node 0 (its default): one rank per GPU of the launcher, counted with
nvidia-smi -L, as allreduce_probe's mpirun launch counts them (issue 23: one default, the module's - the nccl.yml
playbook no longer sets 8 ranks a host). Without a way to count them, the task fails and says to set it."""

from __future__ import annotations

from ansible.module_utils import basic

from ansible_collections.aifabric.acceptance.plugins.modules import nccl_test
from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules.module_harness import run_main
from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules.test_gpu_modules import (  # noqa: F401 pylint: disable=unused-import
    _runner, module_env)
from ansible_collections.aifabric.acceptance.plugins.module_utils import runner as tool_runner

SMI_L = "GPU 0: NVIDIA H200 (UUID: GPU-a)\nGPU 1: NVIDIA H200 (UUID: GPU-b)\nGPU 2: NVIDIA H200 (UUID: GPU-c)\n"


def _binary(tmp_path):
    (tmp_path / "all_reduce_perf").write_text("#!/bin/sh\n")
    (tmp_path / "all_reduce_perf").chmod(0o755)


def test_ranks_per_node_0_is_one_rank_per_gpu_of_the_launcher(module_env, monkeypatch, tmp_path):  # noqa: F811
    _binary(tmp_path)
    monkeypatch.setattr(tool_runner, "spawn", _runner(
        module_env, lambda argv: (0, SMI_L, "") if argv[-1] == "-L" else (0, "", "")))
    res = run_main(nccl_test.main, {"_ansible_check_mode": True, "tool_dir": str(tmp_path), "collectives": ["all_reduce"],
                                    "hosts": ["n1", "n2"]})
    assert not res.failed, res.kwargs
    (argv,) = res.kwargs["cmd"]
    assert argv[argv.index("-np") + 1] == "6" and argv[argv.index("--map-by") + 1] == "ppr:3:node"
    assert [c["argv"][-1] for c in module_env] == ["-L"]      # the one query; nothing else ran in check mode
    assert not (tmp_path / "hostfile").exists()       # check mode writes no hostfile (argv names where it would be)


def test_ranks_per_node_0_without_nvidia_smi_fails_and_says_what_to_set(module_env, monkeypatch, tmp_path):  # noqa: F811
    _binary(tmp_path)
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", lambda self, name, required=False, opt_dirs=None:
                        {"mpirun": "/usr/bin/mpirun", "timeout": "/usr/bin/timeout"}.get(name))
    monkeypatch.setattr(tool_runner, "spawn", _runner(module_env, lambda argv: (0, "", "")))
    res = run_main(nccl_test.main, {"tool_dir": str(tmp_path), "collectives": ["all_reduce"], "hosts": ["n1", "n2"]})
    assert res.failed and "ranks_per_node" in res.kwargs["msg"] and "nvidia-smi" in res.kwargs["msg"]
    assert module_env == []


def test_an_explicit_ranks_per_node_runs_no_query(module_env, monkeypatch, tmp_path):  # noqa: F811
    _binary(tmp_path)
    monkeypatch.setattr(tool_runner, "spawn", _runner(module_env, lambda argv: (0, "", "")))
    res = run_main(nccl_test.main, {"_ansible_check_mode": True, "tool_dir": str(tmp_path), "collectives": ["all_reduce"],
                                    "hosts": ["n1", "n2"], "ranks_per_node": 4})
    (argv,) = res.kwargs["cmd"]
    assert argv[argv.index("-np") + 1] == "8" and module_env == []
