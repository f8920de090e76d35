# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""env_probe module glue: argument spec, the timeout wrapper, check mode, records from real captures.

The module reads this machine's real /proc and /sys (it has no GPU and no RDMA device); commands
are answered from captured outputs (parsers/fixtures/, see the PROVENANCE.md files there).
"""

from __future__ import annotations

import copy
import os
import sys

import pytest
from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args
from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules.module_harness import Exit, patch_exits

from ansible_collections.aifabric.acceptance.plugins.module_utils import env_probe as probe_utils
from ansible_collections.aifabric.acceptance.plugins.module_utils import results
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import env_probe as env
from ansible_collections.aifabric.acceptance.plugins.modules import env_probe
from ansible_collections.aifabric.acceptance.tests.unit.helpers import parser_fixture
from ansible_collections.aifabric.acceptance.plugins.module_utils import runner as tool_runner
from ansible_collections.aifabric.acceptance.tests.unit.helpers import replayed_runs

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = parser_fixture()


def read(rel):
    with open(os.path.join(FIXTURES, rel), encoding="utf-8") as handle:
        return handle.read()


@pytest.fixture
def module_env(monkeypatch):
    patch_exits(monkeypatch)
    state = {"bins": {"timeout": "/usr/bin/timeout"}, "calls": []}
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path",
                        lambda self, name, required=False, opt_dirs=None: state["bins"].get(name))

    def output(argv):
        if argv[:2] == ["/usr/bin/nvidia-smi", "-q"]:
            return 0, read("nvidia_smi/driver580-h100-80gb-hbm3-q-x.xml"), ""
        if argv[:2] == ["/usr/bin/nvidia-smi", "topo"]:
            return 0, read("nvidia_smi/driver580-h100-topo-m-1gpu.txt"), ""
        if argv[:2] == ["/usr/bin/nvidia-smi", "nvlink"]:
            return 0, read("nvidia_smi/driver580-h100-nvlink-s-empty.txt"), ""
        if argv[1:3] == ["-I", "-c"]:
            return 0, read("misc/ubuntu2404-h100vm-python-probe-torch-venv.txt"), ""
        if argv[-1] == "-p":
            return 0, read("misc/ubuntu2404-h100vm-ldconfig-p.txt"), ""
        raise AssertionError("unexpected command %r" % (argv,))

    monkeypatch.setattr(tool_runner, "spawn", replayed_runs(state["calls"], output))
    return state


def call(args, check_mode=False):
    if check_mode:
        args = dict(args, _ansible_check_mode=True)
    with patch_module_args(args):
        with pytest.raises(Exit) as exc:
            env_probe.main()
    return exc.value


def test_no_gpu_node(module_env):
    result = call({"groups": ["gpu", "rdma"]})
    assert not result.failed and result.kwargs["changed"] is False
    assert [(r["check"], r["status"], r["reason"]) for r in result.kwargs["results"]] == [
        ("gpu.inventory", "skip", "no NVIDIA GPU/driver: nvidia-smi not found"),
        ("rdma.inventory", "skip", "no RDMA device: /sys/class/infiniband is absent")
        if not os.path.exists("/sys/class/infiniband") else
        ("rdma.inventory", "skip", "no RDMA device: /sys/class/infiniband is empty")]
    assert result.kwargs["counts"]["skip"] == 2
    assert module_env["calls"] == []


def test_gpu_node_from_captures_in_check_mode(module_env):
    """Check mode runs the read-only probes (check_mode support: full)."""
    module_env["bins"]["nvidia-smi"] = "/usr/bin/nvidia-smi"
    module_env["bins"]["ldconfig"] = "/sbin/ldconfig"
    result = call({"timeout_s": 25, "expect": {"gpu_count": 1, "driver_version": "580"}}, check_mode=True)
    records = result.kwargs["results"]
    for record in records:
        assert results.validate(record) == []
    checks = set(r["check"] for r in records)
    assert {"env.os", "env.cpu", "env.memory", "env.memlock", "env.python", "env.nccl", "gpu.inventory",
            "gpu.device", "gpu.topology", "rdma.inventory"} <= checks
    inventory = [r for r in records if r["check"] == "gpu.inventory"][0]
    assert inventory["status"] == "pass" and inventory["expect"]["gpu_count"] == {"equals": 1}
    assert result.kwargs["counts"] == results.count(records)
    for call_ in module_env["calls"]:
        # the time limit each probe was given; no probe asks for a locale of its own (spawn runs it in C_LOCALE)
        assert call_["timeout_s"] == 25 and "LC_ALL" not in (call_["env"] or {}) and call_["kwargs"].get("locale", True)
    probe = [c["argv"] for c in module_env["calls"] if c["argv"][1:3] == ["-I", "-c"]][0]
    assert probe[0] == sys.executable and probe[3] == probe_utils.PYTHON_PROBE


def test_bad_timeout_fails(module_env):
    result = call({"timeout_s": 0})
    assert result.failed and "timeout_s must be >= 1, got 0" in result.kwargs["msg"]


def test_bad_group_is_refused_by_the_spec(module_env):
    result = call({"groups": ["nccl"]})
    assert result.failed and "groups" in result.kwargs["msg"]


def test_a_run_leaves_the_adapters_option_spec_as_it_was(module_env):
    """AnsibleModule fills the expect mapping's suboption defaults into the default it is given: the module hands it
    a copy, so tools/env_probe.py OPTIONS (the k8s planner's defaults too) keep expect's default {}."""
    before = copy.deepcopy(env.OPTIONS)
    call({"groups": ["env"]})
    assert env.OPTIONS == before and env.OPTIONS["expect"]["default"] == {}
