# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The probe role's topology step keeps a host whose fabric_topology task fails as a whole, with a real
ansible-playbook run (two local hosts, the fleet_report callback).

node-b's module cannot run at all (its Python interpreter is /bin/false: a real module failure, no result to read).
Before, the host left the play at that task, for every later stage (the group screen runs these tasks too); now the
block's rescue keeps it, and the callback records the failure as node-b's env.task error (a failed task without
records, not an ignored one). node-a's record, from its declared port, passes. Every path the run writes is under
the test's tmp_path.
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import sys

import pytest

from ansible_collections.aifabric.acceptance.tests.integration.conftest import collections_path

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")

INVENTORY = """\
[gpu_nodes]
node-a ansible_python_interpreter="{{ ansible_playbook_python }}"
node-b ansible_python_interpreter=/bin/false

[gpu_nodes:vars]
ansible_connection=local
"""

PLAY = """\
- name: The probe role's topology step, one host's module failing
  hosts: gpu_nodes
  gather_facts: false
  tasks:
    - name: Learn the topology
      ansible.builtin.include_role:
        name: aifabric.acceptance.probe
        tasks_from: topology
      vars:
        probe_lldp: false
        probe_topology: {node-a: {eth0: {switch: leaf1, switch_port: swp1}}, node-b: {eth0: {switch: leaf1, switch_port: swp2}}}
    - name: A later stage
      ansible.builtin.debug:
        msg: "later stage on {{ inventory_hostname }}"
"""

TASK = "aifabric.acceptance.probe : Learn the fabric topology of this host (its LLDP neighbours, its declared ports)"


def test_a_failing_topology_task_is_the_host_s_error_and_keeps_it_in_the_play(tmp_path):
    collections = collections_path()
    if not collections:
        pytest.fail("cannot tell where aifabric.acceptance is importable from: set AIFABRIC_TEST_COLLECTIONS")
    env = dict(os.environ)
    for name in ("ANSIBLE_COLLECTIONS_PATHS", "ANSIBLE_INVENTORY", "AIFABRIC_HISTORY_DB", "AIFABRIC_REPORT_FORMATS",
                 "AIFABRIC_DRIFT_PINS", "AIFABRIC_HISTORY"):
        env.pop(name, None)
    reports = tmp_path / "reports"
    env.update({"ANSIBLE_CONFIG": os.path.join(REPO, "ansible.cfg"), "ANSIBLE_COLLECTIONS_PATH": collections,
                "ANSIBLE_CALLBACKS_ENABLED": "aifabric.acceptance.fleet_report", "ANSIBLE_NOCOLOR": "1",
                "PYTHONDONTWRITEBYTECODE": "1", "AIFABRIC_REPORTS_ROOT": str(reports)})
    (tmp_path / "inventory.ini").write_text(INVENTORY)
    (tmp_path / "play.yml").write_text(PLAY)
    proc = subprocess.run([ANSIBLE_PLAYBOOK, "-i", str(tmp_path / "inventory.ini"), str(tmp_path / "play.yml")],
                          env=env, cwd=str(tmp_path), capture_output=True, text=True, timeout=300, check=False)
    out = proc.stdout + proc.stderr
    assert '"msg": "later stage on node-b"' in proc.stdout, out[-4000:]
    recap = [line.split() for line in proc.stdout.splitlines() if line.startswith("node-b ") and "rescued=" in line]
    assert recap and "failed=0" in recap[-1] and "rescued=1" in recap[-1], out[-3000:]

    (results,) = [path for path in glob.glob(str(reports / "*" / "results.json")) if not os.path.islink(os.path.dirname(path))]
    with open(results) as handle:
        report = json.load(handle)
    records = report["records"] if isinstance(report, dict) else report
    by_host = dict((host, [r for r in records if r["host"] == host]) for host in ("node-a", "node-b"))
    (error,) = [r for r in by_host["node-b"] if r["check"] == "env.task"]
    assert error["status"] == "error" and error["params"]["task"] == TASK
    assert "Module result deserialization failed" in error["reason"], error
    assert not [r for r in by_host["node-b"] if r["check"] == "net.topology"]
    (topology,) = [r for r in by_host["node-a"] if r["check"] == "net.topology"]
    assert topology["status"] == "pass" and topology["facts"]["ports"]["eth0"]["source"] == "declared", topology
