# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""perftest_sweep's verb is ``phase`` (issue 20 item 2: ``state`` means a desired state only, ``present``/``absent``).
``phase`` takes what ``state`` took (plan, run, status, wait; default run), the action plugin and the playbooks use it,
and a task still written with ``state`` fails before anything runs, naming the option."""

from __future__ import annotations

import os
import re
import types

import pytest
import yaml
from ansible.plugins.action import ActionBase
from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules.test_gpu_modules import _call, _runner
from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules.test_gpu_modules import module_env  # noqa: F401 pylint: disable=unused-import

from ansible_collections.aifabric.acceptance.plugins.action import perftest_sweep as sweep_action
from ansible_collections.aifabric.acceptance.plugins.modules import perftest_sweep
from ansible_collections.aifabric.acceptance.plugins.module_utils import runner as tool_runner

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
PHASES = ["plan", "run", "status", "wait"]


def test_phase_takes_the_verbs_and_state_is_gone():
    spec = perftest_sweep.argument_spec()
    assert "state" not in spec
    assert spec["phase"] == {"type": "str", "default": "run", "choices": PHASES}
    option = yaml.safe_load(perftest_sweep.DOCUMENTATION)["options"]["phase"]
    assert option["choices"] == PHASES and option["default"] == "run"
    assert "state" not in yaml.safe_load(perftest_sweep.DOCUMENTATION)["options"]


@pytest.mark.parametrize("verb", PHASES)
def test_the_old_option_fails_before_anything_runs(module_env, monkeypatch, tmp_path, verb):
    monkeypatch.setattr(tool_runner, "spawn", _runner(module_env, lambda argv: (0, "", "")))
    res = _call(perftest_sweep.main, {"state": verb, "hcas": ["mlx5_0"], "schedule": [],
                                      "state_root": str(tmp_path / "state"), "inventory_hostname": "me", "lease_s": 0})
    assert res.failed, res.kwargs
    assert "Unsupported parameters" in res.kwargs["msg"] and "state" in res.kwargs["msg"], res.kwargs["msg"]
    assert "phase" in res.kwargs["msg"], res.kwargs["msg"]          # the supported list names the new option
    assert module_env == [] and not (tmp_path / "state").exists()


@pytest.mark.parametrize("args, path", [
    ({"phase": "wait", "run_id": "r1"}, "wait"),
    ({"phase": "plan"}, "call"),
    ({"phase": "status"}, "call"),
    ({}, "call"),                                         # default run
    ({"state": "wait", "run_id": "r1"}, "call"),          # the old option goes to the module, which refuses it
])
def test_the_action_dispatches_on_phase(monkeypatch, args, path):
    monkeypatch.setattr(ActionBase, "run", lambda self, tmp=None, task_vars=None: {})
    action = sweep_action.ActionModule.__new__(sweep_action.ActionModule)
    action._task = types.SimpleNamespace(args=args, check_mode=False, async_val=0)
    action._call = lambda a, task_vars, result: "call"
    action._wait = lambda a, task_vars, result: "wait"
    assert action.run(task_vars={}) == path


def _sweep_tasks(node):
    """The arguments of every perftest_sweep task under ``node`` (module_defaults skipped: they name no verb)."""
    if isinstance(node, list):
        for item in node:
            yield from _sweep_tasks(item)
    elif isinstance(node, dict):
        for key, value in node.items():
            if key in ("aifabric.acceptance.perftest_sweep", "perftest_sweep"):
                # the role passes its option group whole, as the task's module_defaults ("{{ rdma_perftest |
                # combine({...}) }}"): the keys it adds itself are in that expression
                given = (node.get("module_defaults") or {}).get("aifabric.acceptance.perftest_sweep", "")
                yield value if value is not None else dict(re.findall(r"'(phase|state)': '(\w+)'", given))
            elif key == "module_defaults":
                # a block's defaults name no verb: each task says its own (a task's module_defaults are its arguments)
                if not any(str(k).startswith("aifabric.acceptance.") for k in node):
                    assert not [v for v in value.values() if "state" in v or "phase" in v]
            else:
                yield from _sweep_tasks(value)


def test_playbooks_and_examples_use_phase():
    found = []
    for rel in ("playbooks/rdma.yml", "roles/rdma/tasks/main.yml", "roles/rdma/tasks/sweep.yml"):
        with open(os.path.join(ROOT, rel)) as handle:
            found += [(rel, args) for args in _sweep_tasks(yaml.safe_load(handle))]
    found += [("EXAMPLES", args) for args in _sweep_tasks(yaml.safe_load(perftest_sweep.EXAMPLES))]
    assert sorted(args["phase"] for _rel, args in found) == ["plan", "plan", "run", "run", "wait", "wait"]
    assert not [rel for rel, args in found if "state" in args]
