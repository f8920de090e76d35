# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The import graph of plugins/module_utils (read with ast, every import: module level and inside functions).

- no import cycle: data flows down, and a module that needs a lower one's code never gets it back through an alias;
- the Kubernetes code (k8s_*.py) imports no SSH run file (``<tool>_run.py``), not even through another module: the
  planner and the pod program take argv and records from the tool adapters (tools/<tool>.py);
- the adapters import no run file and no Kubernetes file (they are the bottom floor both substrates stand on);
- the adapters (tools/<tool>.py and their private helpers tools/_*.py) import only the floor: parsers, results,
  thresholds, errors, expectations, imports, argspec and the GPU worker program's markers (torch_worker), and the floor
  imports only itself; the host probes (env, topology) take a probe_host.Host and are named in HOST_PROBES with why.
"""

from __future__ import annotations

import ast
import os

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", "..", ".."))
MODULE_UTILS = os.path.join(ROOT, "plugins", "module_utils")
PACKAGE = "ansible_collections.aifabric.acceptance.plugins.module_utils"


def modules(root=MODULE_UTILS):
    """{dotted name relative to module_utils: path} of every .py file (a package is its __init__'s name)."""
    out = {}
    for directory, _dirs, files in os.walk(root):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(directory, name)
                dotted = os.path.relpath(path, root)[:-3].replace(os.sep, ".")
                out[dotted[:-len(".__init__")] if dotted.endswith(".__init__") else dotted] = path
    return out


def _nodes(tree, start_only):
    """The AST's nodes; ``start_only``: those that run when the file is imported (not inside a function's body)."""
    if not start_only:
        return ast.walk(tree)
    out, todo = [], [tree]
    while todo:
        node = todo.pop()
        out.append(node)
        todo.extend(child for child in ast.iter_child_nodes(node)
                    if not isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)))
    return out


def file_imports(path, known, start_only=False):
    """The module_utils modules (names in ``known``) the file at ``path`` imports; ``start_only``: only those its
    import runs (module and class level), not those a function imports when it is called."""
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read(), path)
    out = set()
    for node in _nodes(tree, start_only):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PACKAGE):
            base = node.module[len(PACKAGE):].lstrip(".")
            for alias in node.names:
                target = (base + "." + alias.name).lstrip(".")
                if target in known:
                    out.add(target)      # from module_utils[.pkg] import <module>
                elif base in known:
                    out.add(base)        # from module_utils.<module> import <name>
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith(PACKAGE + "."):
                    target = alias.name[len(PACKAGE) + 1:]
                    if target in known:
                        out.add(target)
    return out


def graph(root=MODULE_UTILS, start_only=False):
    """{module: set of the module_utils modules it imports} (``start_only``: file_imports')."""
    known = modules(root)
    return dict((name, file_imports(path, known, start_only) - {name}) for name, path in known.items())


def cycles(edges):
    """The strongly connected components of more than one module (Tarjan), each sorted."""
    index, low, stack, on_stack, found = {}, {}, [], set(), []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(edges.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                component.append(top)
                if top == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def reachable(edges, start):
    """Every module ``start`` imports, directly or through others."""
    seen, todo = set(), [start]
    while todo:
        for nxt in edges.get(todo.pop(), ()):
            if nxt not in seen:
                seen.add(nxt)
                todo.append(nxt)
    return seen


def ssh_run_files(edges):
    """The SSH path's run files: <tool>_run.py (k8s_run.py is the Kubernetes run itself)."""
    return set(name for name in edges if name.endswith("_run") and not name.startswith("k8s_"))


def kubernetes_imports_of_run_files(edges):
    """{k8s module: sorted SSH run files it reaches}, for those that reach one."""
    runs = ssh_run_files(edges)
    out = {}
    for name in sorted(edges):
        if name.startswith("k8s_"):
            bad = sorted(reachable(edges, name) & runs)
            if bad:
                out[name] = bad
    return out


def test_the_graph_sees_the_imports_inside_functions():
    edges = graph()
    assert {"k8s_entry", "k8s_plan", "tools.perftest_sweep", "perftest_clients"} <= set(edges)
    assert "tools.perftest_sweep" in edges["k8s_entry"]        # imported inside perftest_steps
    assert "torch_worker" in edges["k8s_plan"]           # imported inside code_files
    assert ssh_run_files(edges) >= {"nccl_run", "hccl_run", "perftest_run"}


def test_module_utils_has_no_import_cycle():
    assert cycles(graph()) == []


def test_the_kubernetes_code_imports_no_ssh_run_file():
    assert kubernetes_imports_of_run_files(graph()) == {}


def test_the_tool_adapters_import_no_run_file_and_no_kubernetes_file():
    edges = graph()
    for name in sorted(n for n in edges if n == "tools" or n.startswith("tools.")):
        above = sorted(m for m in reachable(edges, name)
                       if m in ssh_run_files(edges) or m.startswith("k8s_") or m in ("perftest_clients", "perftest_sweep"))
        assert above == [], "%s imports %s" % (name, above)


FLOOR = ("errors", "results", "thresholds", "expectations", "imports", "argspec", "torch_worker")
# adapter -> {module above the floor it may import: why}; shrink it, never grow it
HOST_PROBES = {
    "tools.env_probe": {"env_probe": "the env probe is the collection's own code run on a probe_host.Host, not a tool's "
                        "output to parse: records is env_probe.probe"},
    "tools.fabric_topology": {"env_probe": "the env probe's NPU helpers (npu_device_id, hccn_tool_path), imported on an NPU "
                              "host only",
                              "statedir": "statedir.StateError: root runs only what root could have written alone"},
}


def on_the_floor(name):
    return name in FLOOR or name == "parsers" or name.startswith("parsers.") or name == "tools" or \
        name.startswith("tools.")


def above_the_floor(edges):
    """["<module> imports <module>"] for each adapter, adapter helper or floor module importing above the floor (an
    adapter's HOST_PROBES entries excepted)."""
    out = []
    for name in sorted(edges):
        if not on_the_floor(name):
            continue
        allowed = HOST_PROBES.get(name, {})
        for target in sorted(edges[name]):
            if not on_the_floor(target) and target not in allowed:
                out.append("%s imports %s" % (name, target))
    return out


def test_the_adapters_import_only_the_floor():
    bad = above_the_floor(graph())
    assert bad == [], ("an adapter (tools/<tool>.py) imports only parsers, results, thresholds, errors, expectations, "
                       "imports, argspec and torch_worker (tools/__init__.py, 'Adding a tool'): %s" % "; ".join(bad))


def test_the_host_probe_exceptions_are_still_needed():
    edges = graph()
    for name, allowed in HOST_PROBES.items():
        assert set(allowed) <= edges[name], "%s no longer imports %s: drop it from HOST_PROBES" % (
            name, sorted(set(allowed) - edges[name]))


def test_the_checks_find_what_they_look_for(tmp_path):
    """A planted cycle and a planted run-file import are found (the tests above are not empty by construction)."""
    (tmp_path / "tools").mkdir()
    files = {
        "tools/__init__.py": "",
        "tools/demo.py": "from %s import demo_pairs\n" % PACKAGE,
        "demo_pairs.py": "def f():\n    from %s.tools import demo\n" % PACKAGE,
        "demo_run.py": "",
        "k8s_demo.py": "from %s import demo_pairs\nfrom %s.demo_run import x\n" % (PACKAGE, PACKAGE),
    }
    for rel, text in files.items():
        (tmp_path / rel).write_text(text)
    edges = graph(str(tmp_path))
    assert cycles(edges) == [["demo_pairs", "tools.demo"]]
    assert above_the_floor(edges) == ["tools.demo imports demo_pairs"]
    assert kubernetes_imports_of_run_files(edges) == {"k8s_demo": ["demo_run"]}
