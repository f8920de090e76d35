# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/hccl.yml (the role aifabric.acceptance.hccl) end to end with real ansible-playbook runs on a two-host
local fleet.

No Ascend hardware here: each host's ``mpirun`` (its hccl_options' mpirun) is a stand-in that prints a real HCCL
Test capture (the CANN documentation's 8-NPU all-reduce for node-a, the FAQ's init_hcclComm retcode 7 failure for
node-b), so the whole path - env_probe npu group (skip: no npu-smi), hccl_test on each node and across both from
the first, the cleanups, the fleet_report callback - is exercised and the verdicts are asserted per host. Every path
the runs write is under the test's tmp_path.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

from ansible_collections.aifabric.acceptance.tests.integration.conftest import collections_path

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(REPO, "tests", "unit", "plugins", "module_utils", "parsers", "fixtures", "hccl_test")
ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")


@pytest.fixture(scope="module")
def env():
    collections = collections_path()
    if not collections:
        pytest.fail("cannot tell where aifabric.acceptance is importable from: set AIFABRIC_TEST_COLLECTIONS")
    out = dict(os.environ)
    for name in ("ANSIBLE_COLLECTIONS_PATHS", "ANSIBLE_INVENTORY", "AIFABRIC_HISTORY_DB", "AIFABRIC_REPORT_FORMATS",
                 "AIFABRIC_DRIFT_PINS", "AIFABRIC_HISTORY"):
        out.pop(name, None)
    out.update({"ANSIBLE_CONFIG": os.path.join(REPO, "ansible.cfg"), "ANSIBLE_COLLECTIONS_PATH": collections,
                "ANSIBLE_CALLBACKS_ENABLED": "aifabric.acceptance.fleet_report", "ANSIBLE_NOCOLOR": "1",
                "PYTHONDONTWRITEBYTECODE": "1"})
    return out


def _inside(tmp_path, path):
    path = os.path.realpath(str(path))
    assert path.startswith(os.path.realpath(str(tmp_path)) + os.sep), path
    return path


def _stand_in(tmp_path, name, capture, rc):
    path = tmp_path / name
    path.write_text("#!/bin/sh\ncat '%s'\nexit %d\n" % (os.path.join(FIXTURES, capture), rc), encoding="utf-8")
    path.chmod(0o755)
    return _inside(tmp_path, path)


def _inventory(tmp_path, options_a, options_b, extra_b=None):
    """A YAML inventory of node-a and node-b (local connection), each with its own hccl_options."""
    inventory = tmp_path / "inventory.yml"
    hosts = {"node-a": {"hccl_options": options_a}, "node-b": dict({"hccl_options": options_b}, **(extra_b or {}))}
    inventory.write_text(yaml.safe_dump({"npu_nodes": {"hosts": hosts, "vars": {
        "ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}}}),
        encoding="utf-8")
    return str(inventory)


def _run(env, tmp_path, inventory, *extra):
    reports = _inside(tmp_path, tmp_path / "reports")
    argv = [ANSIBLE_PLAYBOOK, "-i", inventory, os.path.join(REPO, "playbooks", "hccl.yml")] + list(extra)
    proc = subprocess.run(argv, env=dict(env, AIFABRIC_REPORTS_ROOT=reports), cwd=str(tmp_path), capture_output=True,
                          text=True, timeout=300, check=False)
    return proc, reports


def test_fleet_with_a_healthy_and_a_failing_npu_host(env, tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "all_reduce_test").write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    (bindir / "all_reduce_test").chmod(0o755)
    good = _stand_in(tmp_path, "mpirun-good", "oam-tools-docs-all-reduce-8npu-8K-64M-avg-time-header.txt", 0)
    bad = _stand_in(tmp_path, "mpirun-bad", "oam-tools-faq-retcode7-init-hcclcomm-failure.txt", 1)
    common = {"tool_dir": _inside(tmp_path, bindir), "cann_env_script": "", "collectives": ["all_reduce"],
              "max_bytes": "64M"}
    # node-a: its probe finds no NPU (no npu-smi) and hccl_options says 8 per node (a host with no NPU count runs
    # nothing: test_a_host_without_npus_runs_no_collective); node-b: the probe stage's fact probe_npu_count (as the
    # probe role sets it) wins over its own probe's nothing
    inventory = _inventory(tmp_path, dict(common, mpirun=good, npus_per_node=8), dict(common, mpirun=bad),
                           {"probe_npu_count": 4})
    proc, reports = _run(env, tmp_path, inventory, "-e", "hccl_multi_node=true")
    out = proc.stdout + proc.stderr
    assert "PLAY RECAP" in proc.stdout, out[-4000:]
    with open(os.path.join(reports, "latest", "results.json"), encoding="utf-8") as handle:
        records = json.load(handle)["records"]
    runs = [r for r in records if r["check"] == "hccl.all_reduce"]
    hccl = dict((r["host"], r) for r in runs if r["facts"]["launch"] == "single-node")
    assert sorted(hccl) == ["node-a", "node-b"]
    assert hccl["node-a"]["status"] == "pass"
    assert hccl["node-a"]["metrics"]["busbw_max_gbyte_s"] == pytest.approx(23.76245 * 1.75, rel=1e-6)
    assert hccl["node-a"]["series"][-1]["oop_algbw_gbyte_s"] == 23.76245
    assert hccl["node-b"]["status"] == "error" and "retcode: 7" in hccl["node-b"]["reason"]
    probes = [r for r in records if r["check"] == "gpu.npu_inventory"]
    assert len(probes) == 2 and all(r["status"] == "skip" for r in probes)
    argv_a = hccl["node-a"]["params"]["argv"]
    assert argv_a[0] == good and argv_a[1:3] == ["-n", "8"] and argv_a[-8:] == [
        "-b", "8K", "-e", "64M", "-f", "2", "-p", "8"]
    argv_b = hccl["node-b"]["params"]["argv"]
    assert argv_b[0] == bad and argv_b[1:3] == ["-n", "4"] and argv_b[-2:] == ["-p", "4"]
    # across both hosts, launched from the first with its mpirun: hostfile of both names, 2 x 8 ranks
    (multi,) = [r for r in runs if r["facts"]["launch"] == "mpirun"]
    assert multi["host"] == "node-a" and multi["params"]["argv"][:5] == [good, "-f", multi["params"]["argv"][2], "-n", "16"]
    assert multi["metrics"]["ranks"] == 16 and multi["facts"]["profile_choice"] == "no profile (profile: none)"
    assert "TASK [aifabric.acceptance.hccl : Stop whatever of the run is left on every host]" in proc.stdout


def test_a_host_without_npus_runs_no_collective(env, tmp_path):
    """A host whose probe found no NPU runs no collective (it was an error: the CANN environment script is absent), the
    probe's skip record says why, and a multi-node run over it does not start; a host with NPUs still runs."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "all_reduce_test").write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    (bindir / "all_reduce_test").chmod(0o755)
    good = _stand_in(tmp_path, "mpirun-good", "oam-tools-docs-all-reduce-8npu-8K-64M-avg-time-header.txt", 0)
    common = {"tool_dir": _inside(tmp_path, bindir), "cann_env_script": "", "collectives": ["all_reduce"],
              "max_bytes": "64M", "mpirun": good}
    inventory = _inventory(tmp_path, common, common, {"probe_npu_count": 8})
    proc, reports = _run(env, tmp_path, inventory, "-e", "hccl_multi_node=true")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    with open(os.path.join(reports, "latest", "results.json"), encoding="utf-8") as handle:
        records = json.load(handle)["records"]
    runs = [(r["host"], r["facts"]["launch"]) for r in records if r["check"] == "hccl.all_reduce"]
    assert runs == [("node-b", "single-node")], runs
    (probe,) = [r for r in records if r["check"] == "gpu.npu_inventory" and r["host"] == "node-a"]
    assert probe["status"] == "skip" and probe["reason"] == "no Ascend NPU: npu-smi not found"


def test_a_misspelt_option_fails_at_the_start_naming_it(env, tmp_path):
    # hccl_options' keys are the module's options: the old name npus is refused by the first play's check of every
    # mapping's keys (issue 33), before anything runs on a host
    inventory = _inventory(tmp_path, {"npus": 8}, {"npus": 8})
    proc, _reports = _run(env, tmp_path, inventory)
    assert proc.returncode != 0
    assert "node-a, node-b: hccl_options.npus" in proc.stdout, proc.stdout[-4000:]
    assert "the run stops before any stage" in proc.stdout
    assert "Probe the NPUs" not in proc.stdout
