# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collective screen's guard (roles/nccl/tasks/screen_round.yml, "Stop the screen if the next round needs a host
it has let go"): no real plan reaches its failing branch (the planner's tests take only hosts the filter keeps), so
the task itself - its own ``that`` and ``fail_msg``, read from the role - runs here in ansible-playbook on the
controller, once with a plan inside the hosts the screen keeps (it passes) and once with a plan that names a host
the screen let go (it fails the run, naming that host and saying where the fault is)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ROUND = os.path.join(ROOT, "roles", "nccl", "tasks", "screen_round.yml")
GUARD = "Stop the screen if the next round needs a host it has let go"
BIN = os.path.dirname(sys.executable)


def guard_task():
    with open(ROUND, encoding="utf-8") as fh:
        tasks = yaml.safe_load(fh)
    (task,) = [t for t in tasks if t.get("name") == GUARD]
    assert task.get("run_once") is True and "ansible.builtin.assert" in task, task
    return dict((k, v) for k, v in task.items() if k != "run_once")     # one host here: run_once changes nothing


def run_guard(tmp_path, next_round, kept):
    book = tmp_path / "guard.yml"
    book.write_text(yaml.safe_dump([{"name": "The screen's guard", "hosts": "localhost", "gather_facts": False,
                                     "tasks": [guard_task()]}], sort_keys=False))
    (tmp_path / "ansible.cfg").write_text("[defaults]\n")
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "AIFABRIC_")))
    env.update({"ANSIBLE_CONFIG": str(tmp_path / "ansible.cfg"), "ANSIBLE_LOCAL_TEMP": str(tmp_path / "local-tmp"),
                "ANSIBLE_REMOTE_TEMP": str(tmp_path / "remote-tmp"), "ANSIBLE_NOCOLOR": "1"})
    extra = {"__nccl_screen_next": next_round, "__nccl_screen_kept": kept}
    return subprocess.run([os.path.join(BIN, "ansible-playbook"), "-i", "localhost,", "-c", "local", str(book),
                           "-e", json.dumps(extra)], cwd=str(tmp_path), env=env, capture_output=True, text=True,
                          timeout=300, check=False)


@pytest.mark.parametrize("let_go", [False, True])
def test_the_guard_stops_the_screen_only_when_the_next_round_needs_a_host_it_let_go(tmp_path, let_go):
    kept = ["node1", "node2", "node3", "node4"]
    next_round = [{"hosts": ["node1", "node2"]}, {"hosts": ["node3", "node4"]}]
    if let_go:
        next_round[1]["hosts"] = ["node3", "node7"]          # node7 walks no further round
    done = run_guard(tmp_path, next_round, kept)
    out = done.stdout + done.stderr
    if not let_go:
        assert done.returncode == 0 and "ok=1" in out, out[-3000:]
        return
    assert done.returncode == 2 and "failed=1" in out, out[-3000:]
    assert "the screen's next round needs node7, which no longer walk its rounds" in out, out[-3000:]
    assert "a fault of the collection's screen planner" in out and "node3," not in out, out[-3000:]
