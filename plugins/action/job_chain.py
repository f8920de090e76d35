# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action behind aifabric.acceptance.job_chain: start modules as async jobs that run one after the other on the host,
in one call (plugin_utils/job_chain.py: the host's side). Each job's module is built as ansible-core builds it for an
async start (its arguments, the internal ones included, its interpreter, ``async_wrapper``); the answer gives each job
the id its wait polls (aifabric.acceptance.job_wait). The call goes pipelined where the connection pipelines, else
through a file in a remote temporary directory; it is bounded here (``CALL_LIMIT_S``, plugin_utils/bounded_call.py:
past it the processes of the call are stopped and the host is unreachable), whatever the connection settings.
Controller only."""

from __future__ import annotations

import functools
import inspect
import secrets

from ansible.plugins.action import ActionBase

from ansible_collections.aifabric.acceptance.plugins.module_utils import async_job, statedir
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import host_program, job_chain
from ansible_collections.aifabric.acceptance.plugins.plugin_utils.bounded_call import Silent, bounded
from ansible_collections.aifabric.acceptance.plugins.plugin_utils.one_call_start import wrapper_argv

# the call that starts the chain answers within this (staging, the daemon's word), or the host is unreachable: whatever
# the connection settings (no SSH keep-alive needed) and whether the task has a timeout of its own
CALL_LIMIT_S = 120.0

ARGUMENT_SPEC = {
    "jobs": {"type": "list", "elements": "dict", "required": True, "options": {
        "module": {"type": "str", "required": True},
        "args": {"type": "dict", "default": {}},
        "timeout_s": {"type": "int", "required": True},
        "name": {"type": "str"},
    }},
}


def _problem(jobs):
    if not jobs:
        return "jobs is empty: give at least one job (module, args, timeout_s)"
    for index, job in enumerate(jobs):
        if job["timeout_s"] < 1:
            return "jobs[%d] (%s): timeout_s must be 1 or more seconds, got %s" % (index, job["module"], job["timeout_s"])
        if "." not in job["module"]:
            return "jobs[%d]: module %r is not a fully qualified name (namespace.collection.module)" % (
                index, job["module"])
    return None


class ActionModule(ActionBase):
    TRANSFERS_FILES = False      # a file only where the connection does not pipeline (host_program.Command.run)
    _supports_check_mode = True
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        task_vars = task_vars or {}
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        problem = _problem(args["jobs"])
        if problem:
            return dict(result, failed=True, changed=False, msg=problem)
        if self._task.check_mode:
            return dict(result, changed=False, skipped=True, msg="check mode: no job started (each job's module "
                        "says in its own task what it would run)")
        base = "j%d" % secrets.randbelow(999999999999)
        ids = ["%s.%d" % (base, index + 1) for index in range(len(args["jobs"]))]
        if not all(statedir.NAME_RE.match(jid) for jid in ids):     # never: async_status's file names
            return dict(result, failed=True, changed=False, msg="bad job ids %r" % ids)
        try:
            answer = bounded(CALL_LIMIT_S, functools.partial(self._start, args["jobs"], ids, task_vars))
        except Silent as exc:
            return dict(result, unreachable=True, changed=False, msg="the chain's start got no answer: %s" % exc)
        if answer.get("failed") or answer.get("jobs") != ids:
            return dict(result, **dict(answer, failed=True, changed=False, msg=answer.get("msg") or (
                "the host did not start the chain (answer: %.300r)" % answer)))
        return dict(result, changed=True, started=True, finished=False, ansible_job_id=ids[0], jobs=[
            {"ansible_job_id": jid, "module": job["module"], "name": job["name"] or job["module"],
             "timeout_s": job["timeout_s"]} for jid, job in zip(ids, args["jobs"])])

    def _start(self, jobs, ids, task_vars):
        """Build every job's module as ansible-core's async start does, and the chain's program; run it."""
        async_dir = self.get_shell_option("async_dir", default="~/.ansible_async")
        self._task.environment.append({"ANSIBLE_ASYNC_DIR": async_dir})
        try:
            staged = []
            for jid, job in zip(ids, jobs):
                module_args = dict(job["args"])
                self._update_module_args(job["module"], module_args, task_vars)
                bits, path = self._configure_module(module_name=job["module"], module_args=module_args,
                                                    task_vars=task_vars)
                if bits.module_style != "new":
                    return {"failed": True, "msg": "%s is not a Python module: job_chain starts only those" % (
                        job["module"])}
                staged.append((jid, job["timeout_s"], path, bits.b_module_data))
            wrapper = host_program.Command(self, "ansible.legacy.async_wrapper", {}, task_vars)
        finally:
            self._task.environment.pop()
        shell = self._connection._shell
        with open(wrapper.path, "rb") as handle:
            source = handle.read()
        program = job_chain.program(
            inspect.getsource(async_job), self.get_shell_option("remote_tmp", default="~/.ansible/tmp"),
            shell.get_remote_filename(wrapper.path), wrapper.bits.b_module_data,
            [(jid, limit, "AnsiballZ_%s" % shell.get_remote_filename(path), payload,
              wrapper_argv(source, jid + "-w", limit)) for jid, limit, path, payload in staged])
        return wrapper.run(self, program)
