# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet_report callback's off switches, with real ansible-playbook runs.

- ``-e fleet_report_disabled=true`` (an extra variable) turns the report off, as the play variable does
  (before: only the play's own ``vars`` were read, so ``-e`` still wrote a report and a history row).
- A Kubernetes render-only run (``playbooks/k8s_acceptance.yml -e k8s_render_dir=DIR``) writes the
  manifests and measures nothing: no report and no history row, and a console line that says so (before:
  a report in which every node was an ``env.coverage`` error).
Every path the runs write is under the test's tmp_path.
"""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from ansible_collections.aifabric.acceptance.tests.integration.conftest import collections_path

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PLAYBOOKS = os.path.join(HERE, "playbooks")
ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")


@pytest.fixture(scope="module")
def env():
    collections = collections_path()
    if not collections:
        pytest.fail("cannot tell where aifabric.acceptance is importable from: set AIFABRIC_TEST_COLLECTIONS")
    if not os.access(ANSIBLE_PLAYBOOK, os.X_OK):
        pytest.fail("no ansible-playbook next to %s" % sys.executable)
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


def test_fleet_report_disabled_as_an_extra_var_writes_no_report(env, tmp_path):
    reports = _inside(tmp_path, tmp_path / "reports")
    argv = [ANSIBLE_PLAYBOOK, "-i", os.path.join(PLAYBOOKS, "fleet_report_inventory.ini"),
            os.path.join(PLAYBOOKS, "fleet_report.yml"), "-e", "fleet_report_disabled=true"]
    proc = subprocess.run(argv, env=dict(env, AIFABRIC_REPORTS_ROOT=reports), cwd=PLAYBOOKS, capture_output=True,
                          text=True, timeout=300, check=False)
    assert "PLAY RECAP" in proc.stdout, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "FLEET REPORT:" not in proc.stdout
    assert not os.path.exists(reports) or not os.listdir(reports), os.listdir(reports)


def test_kubernetes_render_only_run_writes_manifests_and_no_report(env, tmp_path):
    reports = _inside(tmp_path, tmp_path / "reports")
    render = _inside(tmp_path, tmp_path / "render")
    inventory = tmp_path / "inventory.ini"
    inventory.write_text("[gpu_nodes]\nnode-a\nnode-b\n\n[gpu_nodes:vars]\nansible_connection=local\n"
                         "ansible_python_interpreter={{ ansible_playbook_python }}\n", encoding="utf-8")
    argv = [ANSIBLE_PLAYBOOK, "-i", str(inventory), os.path.join(REPO, "playbooks", "k8s_acceptance.yml"),
            "-e", "k8s_render_dir=%s" % render, "-e", "k8s_run_id=g1render"]
    proc = subprocess.run(argv, env=dict(env, AIFABRIC_REPORTS_ROOT=reports), cwd=str(tmp_path), capture_output=True,
                          text=True, timeout=300, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert "FLEET REPORT: render only (k8s_render_dir=%s)" % render in proc.stdout, out[-3000:]
    assert "env.coverage" not in out
    assert not os.path.exists(reports), os.listdir(reports)          # no run directory, no history.sqlite
    rendered = [os.path.join(d, f) for d, _s, files in os.walk(render) for f in files]
    assert rendered and all(f.endswith((".yaml", ".yml")) for f in rendered), rendered
