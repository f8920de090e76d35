# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A short program run by a host's module interpreter in one pipelined call, answered as a module answers (private).

A module task sends its whole AnsiballZ payload (ansible-core's module_utils and the collection's, about 600 KB)
and the host's Python unpacks and imports it before the module does anything: about 0.14 s of the host's CPU for
ansible.builtin.ping on a quiet machine (bench/module_start.py). Where an action calls the host again and again for
something small - job_wait's polls read one file - that start is nearly all of each call. Here the action sends a
short program instead, to the same interpreter (the one ansible-core finds for the module: its shebang, the
interpreter discovery), with the same environment and become, over the same pipelined call, and reads its answer
as ansible-core reads a module's (the module's serialization profile; a run that gives no JSON is "Module result
deserialization failed", ``_ansible_parsed`` false, as for a module).

:func:`possible` says where a program can go that way (the connection pipelines an ordinary module, remote files
are not kept, a POSIX shell): :class:`one_call_start.OneCallStart` starts async jobs by it too. A program that needs
several of the collection's module_utils starts with :func:`bundle`: their sources (each one and every one it imports,
at any depth, inside functions too), compressed, and an importer that serves them to the program from memory - each
compiled when it is first imported, as the module's payload serves them, without ansible-core's own. Controller only.
"""

from __future__ import annotations

import base64
import functools
import json
import os
import re
import zlib
from collections.abc import Sequence

from ansible import constants as C
from ansible.utils.display import Display

try:        # ansible-core 2.19 (2.21 cleans its UnifiedTaskResult itself)
    from ansible.vars.clean import remove_internal_keys
except ImportError:
    remove_internal_keys = None


PACKAGE = "ansible_collections.aifabric.acceptance.plugins.module_utils"
UTILS_DIR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "module_utils")

# the importer a bundle installs (Python 3.8+, standard library only): the bundled names first on sys.meta_path
IMPORTER = """
import base64 as _b64, json as _json, sys as _sys, zlib as _zlib
import importlib.abc as _abc, importlib.util as _util
_SOURCES = _json.loads(_zlib.decompress(_b64.b64decode(%r)).decode("utf-8"))
_PACKAGES = frozenset(%r)


class _Bundle(_abc.MetaPathFinder, _abc.Loader):
    def find_spec(self, name, path=None, target=None):
        if name in _PACKAGES or name in _SOURCES:
            return _util.spec_from_loader(name, self, is_package=name in _PACKAGES)
        return None

    def create_module(self, spec):
        return None

    def exec_module(self, module):
        name = module.__name__
        if name in _PACKAGES:
            module.__path__ = []
        source = _SOURCES.get(name)
        if source is not None:
            exec(compile(source, "<aifabric>/" + name.replace(".", "/") + ".py", "exec"), module.__dict__)


_sys.meta_path.insert(0, _Bundle())
"""


def _path_of(name):
    """The file of ``name`` (dotted, under module_utils), or None: the module, or the package's __init__.py."""
    base = os.path.join(UTILS_DIR, *name.split(".")) if name else UTILS_DIR
    for path in (base + ".py", os.path.join(base, "__init__.py")):
        if os.path.isfile(path):
            return path
    return None


# a from-import of the collection's module_utils (one line, or a parenthesized list): the module path below module_utils
# and the names imported (a regular expression, not a parse: the closure is built in every worker that sends a bundle)
_FROM_IMPORT = re.compile(r"^[ \t]*from[ \t]+%s((?:\.\w+)*)[ \t]+import[ \t]+(\([^)]*\)|[^\n]*)" % re.escape(PACKAGE),
                          re.MULTILINE)


def _imports(name):
    """The collection's module_utils that ``name`` imports, anywhere in its file (inside functions too)."""
    with open(_path_of(name), encoding="utf-8") as handle:
        text = handle.read()
    found = set()
    for base, names in _FROM_IMPORT.findall(text):
        base = base.lstrip(".")
        for alias in names.strip("()").split(","):
            alias = alias.split("#", 1)[0].split(" as ", 1)[0].strip()
            for candidate in ((base + "." + alias if base else alias) if alias else "", base):
                if candidate and _path_of(candidate):
                    found.add(candidate)
                    break
    return found


def utils_closure(names):
    """``names`` (dotted, under module_utils) and every module_utils file they import, at any depth, with their
    packages (an __init__.py is imported with its package)."""
    seen, todo = set(), list(names)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        if not _path_of(name):
            raise ValueError("%s is no module_utils file of the collection" % name)
        seen.add(name)
        todo.extend(_imports(name))
        parts = name.split(".")
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))
    return sorted(seen)


@functools.lru_cache(maxsize=8)
def bundle(names):
    """The start of a program that imports ``names`` (a tuple of dotted names under module_utils) and what they
    import from the collection: the importer, with their sources (read once per process)."""
    sources, packages = {}, set()
    parts = PACKAGE.split(".")
    # the packages above module_utils, and module_utils itself: namespace packages (no __init__.py)
    packages.update(".".join(parts[:i]) for i in range(1, len(parts) + 1))
    for name in utils_closure(names):
        path = _path_of(name)
        full = PACKAGE + "." + name
        if path.endswith("__init__.py"):
            packages.add(full)
        with open(path, encoding="utf-8") as handle:
            sources[full] = handle.read()
    packed = base64.b64encode(zlib.compress(json.dumps(sources).encode("utf-8"), 6)).decode("ascii")
    return IMPORTER % (packed, sorted(packages))


def possible(action):
    """Whether ``action`` (an ActionBase) can send a program on the interpreter's standard input in one call: the
    connection pipelines an ordinary module (``ansible_pipelining``, a become method that allows it), the remote
    files are not kept (``ANSIBLE_KEEP_REMOTE_FILES``), no remote temporary directory is in use, a POSIX shell."""
    connection = action._connection
    shell = connection._shell
    return (not connection.always_pipeline_modules and connection.is_pipelining_enabled(False)
            and not C.DEFAULT_KEEP_REMOTE_FILES and shell.tmpdir is None and not getattr(shell, "_IS_WINDOWS", False))


class Command:
    """How ``module_name`` (a new-style, Python module) would run on the host (ActionBase._configure_module: its
    interpreter, environment and serialization profile; ``bits`` and ``path``, its payload), to send a program to
    instead of the module's payload."""

    def __init__(self, action, module_name, module_args, task_vars):
        self.bits, self.path = action._configure_module(module_name=module_name, module_args=module_args,
                                                        task_vars=task_vars)
        bits = self.bits
        action._used_interpreter = bits.shebang
        self.env, self.shebang = action._compute_environment_string(), bits.shebang
        self.line = action._connection._shell.build_module_command(self.env, bits.shebang, "").strip()
        self.profile = bits.serialization_profile
        self.extra = {"process_result": bits.process_result} if hasattr(bits, "process_result") else {}

    def run(self, action, program, changed=None):
        """Run ``program`` (text) on the host and return its answer as ActionBase._execute_module returns a module's
        (``changed``: set it so, as the async start's answer is). Where :func:`possible` says no, the program goes
        to a file in a remote temporary directory first (as a module that is not pipelined), removed after."""
        if possible(action):
            res = action._low_level_execute_command(self.line, sudoable=True, in_data=program.encode("utf-8"),
                                                    **self.extra)
        else:
            res = self._run_file(action, program)
        return answer(action, action._parse_returned_data(res, self.profile), changed)

    def _run_file(self, action, program):
        shell = action._connection._shell
        made = shell.tmpdir is None
        tmpdir = action._make_tmp_path() if made else shell.tmpdir
        try:
            path = shell.join_path(tmpdir, "aifabric_program.py")
            action._transfer_data(path, program)
            action._fixup_perms2([tmpdir, path])
            return action._low_level_execute_command(
                shell.build_module_command(self.env, self.shebang, path).strip(), sudoable=True, **self.extra)
        finally:
            if made:
                action._remove_tmp_path(tmpdir)


def answer(action, parsed, changed=None):
    """A parsed answer (ActionBase._parse_returned_data's) as ActionBase._execute_module returns it: the internal
    keys removed, stdout_lines/stderr_lines, the interpreter found by discovery as a fact."""
    if not isinstance(parsed, dict):            # ansible-core 2.21: a UnifiedTaskResult
        parsed.remove_internal_keys()
        if changed is not None:
            parsed.changed = changed
        if action._discovered_interpreter_key:
            parsed.set_fact(action._discovered_interpreter_key, action._discovered_interpreter)
        return parsed.as_result_dict(for_round_trip=True)
    data = parsed                               # ansible-core 2.19 (ActionBase._execute_module, after the call)
    data.pop("_ansible_suppress_tmpdir_delete", None)     # no remote temporary directory here
    if "results" in data and (not isinstance(data["results"], Sequence) or isinstance(data["results"], str)):
        data["ansible_module_results"] = data.pop("results")
        Display().warning("Found internal 'results' key in module return, renamed to 'ansible_module_results'.")
    remove_internal_keys(data)
    if changed is not None:
        data["changed"] = changed
    for key in ("stdout", "stderr"):
        if key in data and key + "_lines" not in data:
            data[key + "_lines"] = (data.get(key) or "").splitlines()
    if action._discovered_interpreter_key:
        data.setdefault("ansible_facts", {})
        data["ansible_facts"] = data["ansible_facts"] or {}
        data["ansible_facts"][action._discovered_interpreter_key] = action._discovered_interpreter
    return data
