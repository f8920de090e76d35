# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""DCGM diagnostics and fabric port counters as Kubernetes pods: the pod runs the same adapter code as the SSH
module (k8s_entry ``adapter``, the code ConfigMap's tree only), and its log gives the same records."""

from __future__ import annotations

import json
import re
import os
import shlex
import stat
import subprocess
import sys
import tempfile

from ansible.module_utils import basic

from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_entry, k8s_plan, probe_host
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import port_counters
from ansible_collections.aifabric.acceptance.plugins.modules import dcgm_diag, port_counters as port_counters_module
from ansible_collections.aifabric.acceptance.tests.unit.helpers import parser_fixture
from ansible_collections.aifabric.acceptance.tests.unit.plugins.module_utils import test_k8s_plan as tkp
from ansible_collections.aifabric.acceptance.tests.unit.plugins.module_utils import test_port_counters as tpc
from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules.module_harness import patch_exits, run_main

NODE = "gpu-node-01"
V4 = parser_fixture("dcgm", "dcgm-4.2.3-gb10-r1-software-fail.json")


def pod_records(kind, options, path=None, **spec):
    """The records of a one-node ``kind`` plan's pod: the entry program run as the pod runs it (the code ConfigMap's
    tree, no PYTHONPATH, ``path`` first on PATH), its log read by k8s_plan.slot_records."""
    plan = k8s_plan.build(kind, [NODE], tkp.POD, "h1", options)
    slot = plan["steps"][0]["slots"][0]
    env = dict(tkp.POD_ENV)
    if path:
        env["PATH"] = "%s%s%s" % (path, os.pathsep, env.get("PATH", ""))
    with tempfile.TemporaryDirectory() as root:
        command = slot_spec(plan)
        command.update(spec, lib=tkp.write_code_tree(root))
        proc = subprocess.run([sys.executable, tkp.ENTRY, "adapter", "--spec", json.dumps(command)], capture_output=True,
                              env=env, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    return k8s_plan.slot_records(plan, slot, tkp.ok(slot, NODE), proc.stdout.decode())


def slot_spec(plan):
    """The --spec the planned pod's command carries."""
    container = plan["steps"][0]["objects"][0]["spec"]["template"]["spec"]["containers"][0]
    argv = container.get("command", []) + container.get("args", [])
    return json.loads(argv[argv.index("--spec") + 1])


def fake_dcgmi(tmp_path, capture, rc):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    script = bindir / "dcgmi"
    script.write_text("#!/bin/sh\ncat %s\nexit %d\n" % (shlex.quote(capture), rc))
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return bindir


def test_dcgm_pod_gives_the_records_of_the_dcgm_diag_module(tmp_path, monkeypatch):
    bindir = fake_dcgmi(tmp_path, V4, 226)
    monkeypatch.setenv("PATH", "%s%s%s" % (bindir, os.pathsep, os.environ.get("PATH", "")))
    patch_exits(monkeypatch)
    ssh = run_main(dcgm_diag.main, {"level": 1}).kwargs["results"]
    pod = pod_records("dcgm_diag", {"level": 1}, path=str(bindir))
    assert [r["status"] for r in ssh] == ["fail"] and [tkp._stable(r) for r in pod] == [tkp._stable(r) for r in ssh]
    assert pod[0]["host"] == NODE and pod[0]["params"]["substrate"] == "kubernetes"
    assert pod[0]["params"]["argv"][1:] == ssh[0]["params"]["argv"][1:] == ["diag", "-r", "1", "-j"]


def test_dcgm_pod_without_dcgmi_skips_as_the_module_does(tmp_path, monkeypatch):
    empty = tmp_path / "empty"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    patch_exits(monkeypatch)
    ssh = run_main(dcgm_diag.main, {"level": 3}).kwargs["results"]
    plan = k8s_plan.build("dcgm_diag", [NODE], tkp.POD, "h1", {"level": 3})
    slot = plan["steps"][0]["slots"][0]
    env = dict(tkp.POD_ENV, PATH=str(empty))
    with tempfile.TemporaryDirectory() as root:
        spec = dict(slot_spec(plan), lib=tkp.write_code_tree(root))
        proc = subprocess.run([sys.executable, tkp.ENTRY, "adapter", "--spec", json.dumps(spec)], capture_output=True,
                              env=env, timeout=120, check=False)
    pod = k8s_plan.slot_records(plan, slot, tkp.ok(slot, NODE), proc.stdout.decode())
    assert [r["status"] for r in ssh] == ["skip"] and [tkp._stable(r) for r in pod] == [tkp._stable(r) for r in ssh]


def test_port_counters_pod_on_this_machine_gives_the_module_records(monkeypatch):
    """Both read this machine's own /sys (whatever it has: the CI hosts have no RDMA device, a skip)."""
    patch_exits(monkeypatch)
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: None)
    ssh = run_main(port_counters_module.main, {"phase": "before", "ethtool": False}).kwargs["results"]
    pod = pod_records("port_counters", {"phase": "before", "ethtool": False})

    def strip(record):      # the snapshot's time differs
        return dict(tkp._stable(record), facts={})
    assert [strip(r) for r in pod] == [strip(r) for r in ssh]


def test_port_counters_after_pod_judges_its_own_node_on_a_test_tree(tmp_path):
    """The after pod gets only its node's before record from the before run's results, and judges as the adapter
    does on the SSH path (a test-made sysfs tree of real values: symbol_error grew by 40)."""
    values = tpc.healthy()
    before_host = tpc.sysfs(tmp_path / "before", {"mlx5_0/1": {"counters": values}})
    before = tpc.results.with_host(port_counters.records(before_host, {"phase": "before"}), NODE)
    other = tpc.results.with_host(port_counters.records(tpc.sysfs(tmp_path / "other", {"mlx5_9/1": {
        "counters": values}}), {"phase": "before"}), "gpu-node-02")
    grown = dict(values, symbol_error=str(int(values["symbol_error"]) + 40))
    after_root = tmp_path / "after"
    after_host = tpc.sysfs(after_root, {"mlx5_0/1": {"counters": grown}})
    options = {"phase": "after", "before": before + other, "ethtool": False}
    assert k8s_plan.adapter_params("port_counters", options, NODE)["before"] == before
    ssh = port_counters.records(after_host, dict(options, before=before))
    pod = pod_records("port_counters", options, root=str(after_root))
    # the window's length (and so the rate per hour in the reason) is the only thing that differs

    def strip(record):
        return dict(tkp._stable(record), metrics=dict(record["metrics"], window_s=None),
                    reason=re.sub(r" \([0-9.]+ per hour\)", "", record["reason"] or ""))
    assert [strip(r) for r in pod] == [strip(r) for r in ssh]
    assert [(r["host"], r["target"], r["status"]) for r in pod] == [(NODE, "mlx5_0/1", "fail")]


def test_entry_refuses_other_adapters():
    assert "perftest" not in k8s_entry.HOST_ADAPTERS and probe_host.Host
