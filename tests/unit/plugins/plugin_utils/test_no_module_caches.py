# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller pipeline passes results explicitly (issue 20): no module-level mutable state that a function
writes into (a cache keyed by object identity served a stale answer for a list changed in place)."""
from __future__ import annotations

import ast
import glob
import os

from ansible_collections.aifabric.acceptance.plugins.module_utils import results
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import fleet, render

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..", "plugins")
DIRS = ("plugin_utils", "callback", "action", "filter")
MUTATORS = {"update", "pop", "popitem", "setdefault", "clear", "append", "extend", "insert", "add", "remove",
            "discard", "__setitem__"}


def _module_containers(tree):
    names = set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, (ast.Dict, ast.List, ast.Set, ast.Call)):
            names.update(t.id for t in node.targets if isinstance(t, ast.Name))
    return names


def _writes(tree, names):
    """(function, name) where a function body changes a module-level container in place."""
    out = []
    for func in ast.walk(tree):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        local = set(a.arg for a in func.args.args + func.args.kwonlyargs)
        for node in ast.walk(func):
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                local.add(node.id)
        for node in ast.walk(func):
            target = None
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in MUTATORS:
                target = node.func.value
            elif isinstance(node, (ast.Subscript,)) and isinstance(node.ctx, (ast.Store, ast.Del)):
                target = node.value
            elif isinstance(node, ast.Global):
                out.extend((func.name, name) for name in node.names)
            if isinstance(target, ast.Name) and target.id in names and target.id not in local:
                out.append((func.name, target.id))
    return out


def test_no_function_writes_module_level_state():
    found = []
    read = 0
    for folder in DIRS:
        for path in sorted(glob.glob(os.path.join(ROOT, folder, "*.py"))):
            read += 1
            with open(path, encoding="utf-8") as handle:
                tree = ast.parse(handle.read(), path)
            found.extend((os.path.relpath(path, ROOT),) + hit for hit in _writes(tree, _module_containers(tree)))
    assert read >= 20 and found == [], (read, found)


def test_a_records_list_changed_in_place_renders_from_its_new_content():
    run = {"run_id": "r1", "started": "2026-11-22T10:00:00Z"}
    report = fleet.build_report([results.make("gpu.gemm_bf16", "pass", host="a", reason="ok")], run, analyses=[])
    assert "| a | pass" not in render.render_md(report).split("## Problems")[1]
    report["records"][0] = fleet.normalize(results.make("gpu.gemm_bf16", "fail", host="a", reason="slow"), "a")
    assert "slow" in render.render_md(report).split("## Problems")[1]
