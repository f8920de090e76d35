# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The env probe pod's deadline (issue 22, review item 1): the pod's activeDeadlineSeconds covers every command the
probe runs one after the other, each within ``timeout``. Counted by running env_probe.probe itself on a fake node
(real captures of nvidia-smi, npu-smi of an 8x 910B2 node, ldconfig, pip freeze) whose nvidia-smi -q -x fails so
that its --query-gpu fallback runs too, with two ``python`` options and pip freeze: the worst case of each group."""

from __future__ import annotations

import pytest

from ansible_collections.aifabric.acceptance.plugins.module_utils import env_probe, k8s_plan, probe_host
from ansible_collections.aifabric.acceptance.plugins.module_utils.runner import Run
from ansible_collections.aifabric.acceptance.tests.unit.k8s.test_launcher_plan import NODES, POD
from ansible_collections.aifabric.acceptance.tests.unit.plugins.module_utils import test_env_probe as tep
from ansible_collections.aifabric.acceptance.tests.unit.plugins.module_utils import test_env_probe_npu_network as tnpu
from ansible_collections.aifabric.acceptance.tests.unit.helpers import read

PYTHONS = ["/opt/a/bin/python3", "/opt/b/bin/python3"]
PATH_PYTHON = "/usr/bin/python3"
NPU_SMI = tnpu.SMI
HCCN = "/usr/bin/hccn_tool"


class WorstNode(tep.FakeCommands):
    """tep.FakeCommands plus npu-smi (8 NPUs, a real capture) and hccn_tool (every query answered with an error,
    which costs that query only: the probe goes on with the next)."""

    def __init__(self):
        overrides = {(tep.SMI, "-q", "-x"): (9, "NVIDIA-SMI has failed\n"),
                     (NPU_SMI, "info"): (0, read(tnpu.NPU_SMI, tnpu.B910))}
        for python in PYTHONS + [PATH_PYTHON]:
            overrides[(python, "-I", "-m", "pip", "freeze", "--all")] = (0, tep.read("misc/ubuntu2404-h100vm-pip-freeze.txt"))
        super().__init__(overrides)

    def __call__(self, argv, timeout_s):
        if argv[0] == HCCN:
            self.calls.append((list(argv), timeout_s))
            return Run(list(argv), 1, "", "hccn_tool: device busy\n", 0.01)
        return super().__call__(argv, timeout_s)


def _probe(params, root):
    """The probe on an empty host tree (``root``) where hccn_tool is a file (the path rule checks it)."""
    commands = WorstNode()
    tools = {"nvidia-smi": tep.SMI, "ldconfig": "/sbin/ldconfig", "npu-smi": NPU_SMI, "hccn_tool": HCCN,
             "python3": PATH_PYTHON}
    (root / HCCN.lstrip("/")).parent.mkdir(parents=True)
    (root / HCCN.lstrip("/")).write_text("")
    host = probe_host.Host(run=commands, which=tools.get, root=str(root), environ={}, memlock=(-1, -1),
                           executable=tep.PY)
    records = env_probe.probe(host, params)
    if "npu" in params["groups"]:       # every NPU's queries ran
        assert len([r for r in records if r["check"] == "gpu.npu_network"]) == 8
    if "gpu" in params["groups"]:       # the --query-gpu fallback ran
        assert any(r["check"] == "gpu.inventory" and "fallback" in r["facts"]["source"] for r in records)
    return commands.calls


@pytest.mark.parametrize("groups", [None, ["env", "gpu", "rdma", "software"], ["npu"], ["software"]])
def test_the_env_pods_deadline_covers_every_command_the_probe_runs(groups, tmp_path):
    options = {"timeout_s": 60, "pythons": PYTHONS, "pip_freeze": True, "groups": groups or list(env_probe.GROUPS)}
    calls = _probe(dict(options), tmp_path)
    assert all(timeout == 60 for _argv, timeout in calls)
    plan = k8s_plan.build("env_probe", NODES, POD, "e1", options)
    steps = plan["deadline_s"] - k8s_plan.START_UP_S
    assert steps >= len(calls) * 60, "%d commands x 60 s run against %d s" % (len(calls), steps)


@pytest.mark.parametrize("pip_freeze", [False, True])
def test_the_count_is_what_the_probe_runs(pip_freeze, tmp_path):
    options = {"timeout_s": 60, "pythons": PYTHONS, "pip_freeze": pip_freeze, "groups": list(env_probe.GROUPS)}
    calls = _probe(dict(options), tmp_path)
    hccn = [argv for argv, _t in calls if argv[0] == HCCN]
    assert len(hccn) == len(env_probe.HCCN_QUERIES) * 8
    count, how = k8s_plan.env_probe_commands(k8s_plan.options_of("env_probe", options), npus=8)
    assert count == len(calls), (how, [argv[:3] for argv, _t in calls])
    bound, _how = k8s_plan.env_probe_commands(k8s_plan.options_of("env_probe", options))
    assert bound == count + len(env_probe.HCCN_QUERIES) * (k8s_plan.ENV_PROBE_MAX_NPUS - 8)


def test_the_refusal_names_the_probes_commands():
    with pytest.raises(Exception, match=r"active_deadline_s 300 does not cover the steps of a env_probe pod: "
                                        r"\d+ probe commands \(software \d+ \+ gpu 4\) x timeout_s 60s"):
        k8s_plan.build("env_probe", NODES, dict(POD, active_deadline_s=300), "e1",
                       {"timeout_s": 60, "groups": ["env", "gpu", "rdma", "software"]})


def test_the_pods_probe_the_groups_the_ssh_path_probes():
    """One default (issue 23): the env pods run env_probe's own default groups, npu included (a GPU node without
    npu-smi gives the same gpu.npu_inventory skip record as over SSH), and their deadline counts the npu group."""
    assert k8s_plan.DEFAULTS["env_probe"]["groups"] == list(env_probe.GROUPS)
    with pytest.raises(Exception, match=r"\(software \d+ \+ gpu 4 \+ npu 16 NPUs 65\) x timeout_s 60s"):
        k8s_plan.build("env_probe", NODES, dict(POD, active_deadline_s=300), "e1", {"timeout_s": 60})
