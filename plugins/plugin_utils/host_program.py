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
are not kept, a POSIX shell): :class:`one_call_start.OneCallStart` starts async jobs by it too. Controller only.
"""

from __future__ import annotations

from collections.abc import Sequence

from ansible import constants as C
from ansible.utils.display import Display

try:        # ansible-core 2.19 (2.21 cleans its UnifiedTaskResult itself)
    from ansible.vars.clean import remove_internal_keys
except ImportError:
    remove_internal_keys = None


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
