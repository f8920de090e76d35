# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Ansible's limit and the Kubernetes module's agree (issue 35, item 3): ansible-playbook (a real subprocess, in a
session of its own) against the fake API server, with a stage whose pods never finish.

- The k8s role under a play-level ``timeout:`` and a ``task_timeout`` (ANSIBLE_TASK_TIMEOUT) both shorter than the
  stage's own wait: the role's workload task carries its own ``timeout:`` from the plan, so it is not abandoned; the
  stage ends at its wait with its records (timeout errors naming the pods).
- k8s_workload run directly under a play-level ``timeout:`` shorter than the step's wait: the module, told its task's
  limit by its action plugin, cuts its wait and returns - records and cleanup done - before Ansible's limit.

In both, when ansible-playbook has exited no process of its session is left (an abandoned module would still be
waiting, holding the nodes) and no object of the run is left on the server."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time

import pytest

pytest.importorskip("kubernetes")
pytest.importorskip("kmock")

from ansible_collections.aifabric.acceptance.tests.integration.conftest import collections_path  # noqa: E402
from ansible_collections.aifabric.acceptance.tests.integration.test_k8s_workload_lifecycle import IMAGE  # noqa: E402
from ansible_collections.aifabric.acceptance.tests.k8s.fake_apiserver import fake_cluster  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
NODES = ["gpu-node-01", "gpu-node-02"]
PLAY_LIMIT = 15        # the play's timeout and ansible.cfg's task_timeout in the role test: shorter than the wait
STAGE_WAIT = 25        # k8s_timeout_s


def session_processes(sid):
    """PIDs of the live processes of session ``sid`` (ansible-playbook's own session, started here)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            if os.getsid(int(entry)) == sid:
                with open("/proc/%s/stat" % entry) as handle:
                    if handle.read().rsplit(")", 1)[1].split()[0] != "Z":
                        out.append(int(entry))
        except (OSError, IndexError):
            continue
    return out


def play(tmp_path, playbook, env_extra=None, args=()):
    """Run ``playbook`` (text) in a session of its own; (process, seconds, pids of its session left at its end)."""
    playbook_bin = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    if not os.access(playbook_bin, os.X_OK) or not collections_path():
        pytest.skip("no ansible-playbook next to this Python, or the collection is not importable")
    inventory = tmp_path / "hosts.yml"
    inventory.write_text("all:\n  hosts:\n" + "".join("    %s:\n      ansible_connection: local\n" % n for n in NODES))
    path = tmp_path / "play.yml"
    path.write_text(playbook)
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(os.path.dirname(os.path.dirname(HERE)), "ansible.cfg"),
               ANSIBLE_COLLECTIONS_PATH=collections_path(), ANSIBLE_CALLBACKS_ENABLED="aifabric.acceptance.fleet_report",
               AIFABRIC_REPORTS_ROOT=str(tmp_path / "reports"), AIFABRIC_HISTORY_DB=str(tmp_path / "history.sqlite"),
               ANSIBLE_NOCOLOR="1", PYTHONDONTWRITEBYTECODE="1", ANSIBLE_PYTHON_INTERPRETER=sys.executable,
               **(env_extra or {}))
    start = time.monotonic()
    proc = subprocess.Popen([playbook_bin, "-i", str(inventory), str(path)] + list(args), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, cwd=str(tmp_path), start_new_session=True)
    try:
        out = proc.communicate(timeout=300)[0]
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    left = session_processes(proc.pid)
    return proc.returncode, out, time.monotonic() - start, left


def records_of(tmp_path):
    with open(str(tmp_path / "reports" / "latest" / "results.json"), encoding="utf-8") as handle:
        return json.load(handle)["records"]


def test_k8s_role_under_a_shorter_play_limit_is_not_abandoned(tmp_path):
    with fake_cluster(tmp_path) as fake:
        fake.server.script("hang")
        extra = {"k8s_run_id": "lim1", "k8s_image": IMAGE, "k8s_connection": {"kubeconfig": fake.kubeconfig},
                 "k8s_pod": {"gpus_per_pod": 2}, "k8s_timeout_s": STAGE_WAIT, "gpu_checks": ["gemm"],
                 "aifabric_task_margin_s": 10}
        rc, out, _took, left = play(tmp_path, """
- hosts: all
  gather_facts: false
  timeout: %d
  vars: %s
  tasks:
    - name: The GPU stage on Kubernetes (its tasks keep their own tags; --tags gpu runs the GEMM stage alone)
      ansible.builtin.include_role:
        name: aifabric.acceptance.k8s
      tags: [gpu]
""" % (PLAY_LIMIT, json.dumps(extra)), {"ANSIBLE_TASK_TIMEOUT": str(PLAY_LIMIT)}, ["--tags", "gpu"])
        assert left == [], "processes of the run outlived ansible-playbook: %s\n%s" % (left, out[-3000:])
        assert fake.leftovers("lim1-gemm") == []
        assert rc == 0 and "failed=0" in out and "failed=1" not in out, out[-3000:]     # not abandoned at 15 s
        gemm = [r for r in records_of(tmp_path) if r["check"].startswith("gpu.gemm")]
        assert sorted(r["host"] for r in gemm) == NODES, out[-3000:]
        # the stage's own wait ended it: the reason gives the seconds it waited, the limit or a little more on a
        # loaded machine (26 s of a 25 s wait once), never the play's shorter limit
        waited = [re.search(r"after (\d+) s", r["reason"]) for r in gemm]
        assert all(r["status"] == "error" and "timeout" in r["reason"] for r in gemm), [r["reason"] for r in gemm]
        assert all(m and STAGE_WAIT <= int(m.group(1)) < STAGE_WAIT + 10 for m in waited), [r["reason"] for r in gemm]


def test_k8s_workload_under_a_play_limit_ends_before_it(tmp_path):
    limit = 50
    with fake_cluster(tmp_path) as fake:
        fake.server.script("hang")
        rc, out, took, left = play(tmp_path, """
- hosts: all
  gather_facts: false
  timeout: %d
  tasks:
    - name: GEMM whose pods never finish, a wait longer than the play's limit
      aifabric.acceptance.k8s_workload:
        kind: gemm_bench
        hosts: %s
        image: %s
        run_id: lim2
        kubeconfig: %s
        gpus_per_pod: 2
        timeout_s: 240
        cleanup_timeout_s: 5
      run_once: true
      delegate_to: localhost
      register: gemm
""" % (limit, json.dumps(NODES), IMAGE, fake.kubeconfig))
        assert left == [], "processes of the run outlived ansible-playbook: %s\n%s" % (left, out[-3000:])
        assert fake.leftovers("lim2") == []
        assert rc == 0 and took < limit + 30, out[-3000:]
        assert "shorter than this plan's worst case" in out, out[-3000:]
        records = [r for r in records_of(tmp_path) if r["check"] == "gpu.gemm"]
        assert sorted(r["host"] for r in records) == NODES, out[-3000:]
        assert all(r["status"] == "error" and "timeout" in r["reason"] for r in records), records
