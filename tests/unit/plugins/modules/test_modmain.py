# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One main() shape: every module's errors leave through modmain.run, the same way."""

from __future__ import annotations

import ast
import os
import signal

import pytest
from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules.module_harness import Exit, patch_exits, run_main

from ansible_collections.aifabric.acceptance.plugins.module_utils import errors, modmain, perftest_run
from ansible_collections.aifabric.acceptance.plugins.modules import cleanup, env_probe, perftest

MODULES = os.path.dirname(perftest.__file__)


@pytest.fixture(autouse=True)
def _exits(monkeypatch):
    patch_exits(monkeypatch)


def _mains():
    for name in sorted(os.listdir(MODULES)):
        if name.endswith(".py"):
            with open(os.path.join(MODULES, name)) as handle:
                tree = ast.parse(handle.read())
            for node in tree.body:
                if isinstance(node, ast.FunctionDef) and node.name == "main":
                    yield name, node


def test_every_module_main_has_one_error_handler():
    shapes = {}
    for name, main in _mains():
        calls = set(ast.unparse(n.func) for n in ast.walk(main) if isinstance(n, ast.Call))
        handlers = [n for n in ast.walk(main) if isinstance(n, ast.ExceptHandler)]
        shapes[name] = (bool(calls & {"modmain.run", "collective_module.main"}), len(handlers))
    assert shapes and dict((n, s) for n, s in shapes.items() if s != (True, 0)) == {}


class _Module(object):
    def exit_json(self, **kwargs):
        raise Exit(kwargs)

    def fail_json(self, **kwargs):
        raise Exit(kwargs, failed=True)


def _outcome(body, **kwargs):
    with pytest.raises(Exit) as info:
        modmain.run(_Module(), "thing", body, **kwargs)
    return info.value.failed, info.value.kwargs


def _raise(exc):
    def body(module):
        raise exc
    return body


def test_each_kind_of_failure_leaves_the_same_way():
    assert _outcome(lambda module: {"changed": False, "results": []}) == (False, {"changed": False, "results": []})
    interrupted = errors.Interrupted("interrupted by signal 15", signal.SIGTERM)
    assert _outcome(_raise(interrupted), fields={"results": []}, interrupt_note=" (stopped)",
                    interrupt_fields={"run_id": "t"}) == (
        True, {"msg": "thing interrupted by signal 15 (stopped)", "results": [], "run_id": "t"})
    assert _outcome(_raise(errors.AcceptanceError("it failed", rc=3)), fields={"run_id": "r"}) == (
        True, {"msg": "it failed", "rc": 3, "run_id": "r"})
    assert _outcome(_raise(ValueError("bad option")), user_errors=(ValueError,)) == (True, {"msg": "bad option"})
    failed, out = _outcome(_raise(KeyError("x")))
    assert failed and out["msg"] == "thing failed: 'x'" and "KeyError" in out["exception"]


def test_a_bug_in_a_module_comes_back_as_its_failure(monkeypatch):
    """perftest and env_probe had no handler for anything but AcceptanceError: a bug became Ansible's bare
    MODULE FAILURE."""
    def broken(self):
        raise RuntimeError("a bug")

    monkeypatch.setattr(perftest_run.PerftestRun, "run", broken)
    out = run_main(perftest.main, {"state": "absent"})
    assert out.failed and out.kwargs["msg"] == "perftest module failed: a bug" and "RuntimeError" in out.kwargs["exception"]
    monkeypatch.setattr(env_probe.env_probe, "probe", lambda host, params: broken(None))
    out = run_main(env_probe.main, {"groups": ["env"]})
    assert out.failed and out.kwargs["msg"] == "env_probe failed: a bug"


def test_cleanup_failure_keeps_the_message():
    out = run_main(cleanup.main, {"run_id": "../etc"})
    assert out.failed and "run_id" in out.kwargs["msg"]
