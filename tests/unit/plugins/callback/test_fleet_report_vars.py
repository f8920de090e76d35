# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The callback knows no variable of the collection's playbooks (issue 20): besides its options it reads only its
own play variables (fleet_report_disabled, fleet_report_targets) and the set_stats key a run that measures nothing
sets (aifabric_report_skip; tests/integration/test_callback_modes.py runs the Kubernetes render-only playbook)."""
from __future__ import annotations

import ast
import glob
import os
import re

import yaml

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..", "..")
CALLBACK = os.path.join(ROOT, "plugins", "callback", "fleet_report.py")
OWN = {"fleet_report_disabled", "fleet_report_targets", "aifabric_report_skip"}


def playbook_variables():
    """Every name used inside a Jinja2 expression or a when: of the collection's playbooks and roles."""
    names = set()
    paths = glob.glob(os.path.join(ROOT, "playbooks", "**", "*.yml"), recursive=True)
    for path in paths + glob.glob(os.path.join(ROOT, "roles", "*", "tasks", "*.yml")):
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
        for expr in re.findall(r"\{\{(.*?)\}\}", text, re.S) + re.findall(r"^\s*when:\s*(.+)$", text, re.M):
            expr = re.sub(r"'[^']*'|\"[^\"]*\"", "", expr)      # quoted text (a mapping's keys) names no variable
            names.update(re.findall(r"(?<![.\w])([a-z][a-z0-9]*_[a-z0-9_]+)\b", expr))     # not an attribute
    return names


def callback_strings():
    """The string constants of the callback's code (its documentation and docstrings left out)."""
    with open(CALLBACK, encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    docs = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "DOCUMENTATION" for t in node.targets):
            docs.add(id(node.value))
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef)) and ast.get_docstring(node, clean=False):
            docs.add(id(node.body[0].value))
    return set(n.value for n in ast.walk(tree)
               if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docs)


def option_names():
    with open(CALLBACK, encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "DOCUMENTATION" for t in node.targets):
            return set(yaml.safe_load(node.value.value)["options"])
    return set()


def test_the_callback_reads_no_playbook_variable():
    variables = playbook_variables()
    assert {"k8s_render_dir", "rdma_confirm"} <= variables     # the scan sees them
    known = OWN | option_names()        # Ansible's own variables (ansible_*) are no playbook's
    assert sorted(n for n in callback_strings() & variables - known if not n.startswith("ansible_")) == []
