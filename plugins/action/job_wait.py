# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action behind aifabric.acceptance.job_wait: wait for a host's async job on the controller, one task, no output
per poll.

``ansible.builtin.async_status`` in an ``until:`` loop prints a "FAILED - RETRYING" line for every poll that finds
the job still running. Here the polls are this action's own: it calls the ``async_status`` module (what the
``ansible.builtin.async_status`` action calls, with the same job directory) every ``poll_s`` seconds until the job
finished, then returns the job's result as its own, as ``async_status`` returns it (the module's ``results``
records, ``failed``, ``msg``, ...), and removes the job's file (``cleanup``, mode cleanup of the same module).

Every call to the host is bounded here whatever the connection settings (plugin_utils/bounded_call.py): a poll that
does not answer within ``poll_timeout_s`` is stopped and counts as a failed poll, as does a connection failure;
``unreachable_after_polls`` failed polls in a row make the host unreachable (no further call is made to it, the
removals included). A job that has not finished when ``wait_timeout_s`` has passed fails the task, saying so.
"""

from __future__ import annotations

import functools
import time

from ansible.errors import AnsibleConnectionFailure
from ansible.plugins.action import ActionBase
from ansible.utils.vars import merge_hash

from ansible_collections.aifabric.acceptance.plugins.plugin_utils.bounded_call import KILL_GRACE_S, Silent, bounded

STATUS_MODULE = "ansible.legacy.async_status"   # the module behind ansible.builtin.async_status
NOT_FOUND = "could not find job"                # its answer where the job has no file

ARGUMENT_SPEC = {
    "jid": {"type": "str", "required": True},
    "wait_timeout_s": {"type": "int", "default": 3600},
    "poll_s": {"type": "float", "default": 5.0},
    "poll_timeout_s": {"type": "float", "default": 30.0},
    "unreachable_after_polls": {"type": "int", "default": 2},
    "cleanup": {"type": "bool", "default": True},
}


def worst_case_s(wait_timeout_s, poll_timeout_s):
    """The longest this action's run can take: the wait, then its last poll and the removal of the job's file, each
    bounded by ``poll_timeout_s`` plus the time to stop a call past its bound (a task's ``timeout:`` above it lets
    the action's own deadline fire first)."""
    return wait_timeout_s + 2 * (poll_timeout_s + KILL_GRACE_S + 1)


def _problem(args):
    """What is wrong with the validated arguments, or None."""
    if not args["jid"].strip():
        return "jid is empty: give the ansible_job_id of the task that started the job (async, poll 0)"
    if args["wait_timeout_s"] < 0:
        return "wait_timeout_s must be 0 or more, got %s" % args["wait_timeout_s"]
    if args["poll_s"] <= 0:
        return "poll_s must be more than 0, got %s" % args["poll_s"]
    if args["poll_timeout_s"] <= 0:
        return "poll_timeout_s must be more than 0, got %s" % args["poll_timeout_s"]
    if args["unreachable_after_polls"] < 1:
        return "unreachable_after_polls must be 1 or more, got %s" % args["unreachable_after_polls"]
    return None


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    _silent = False         # a call to the host got no answer: no further call is made to it (removals included)
    _async_dir = None       # the job directory on the host, as ansible.builtin.async_status finds it
    _bound_s = 30.0         # poll_timeout_s: the bound of every call to the host

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        del validation
        problem = _problem(args)
        if problem:
            return dict(result, failed=True, changed=False, msg=problem)
        self._bound_s = args["poll_timeout_s"]
        return self._wait(args, task_vars or {}, result)

    def cleanup(self, force=False):
        """Remove the remote temporary directory (none with pipelining), bounded; never on a silent host."""
        tmpdir = self._connection._shell.tmpdir
        if self._silent or not tmpdir:
            return
        try:
            bounded(self._bound_s, functools.partial(self._remove_tmp_path, tmpdir))
        except Silent:
            self._silent = True

    # ------------------------------------------------------------------ the wait
    def _wait(self, args, task_vars, result):
        jid, limit = args["jid"], args["unreachable_after_polls"]
        deadline = time.monotonic() + args["wait_timeout_s"]
        polls = failures = 0
        out = {}
        while True:
            out = self._call(jid, "status", task_vars, args["poll_timeout_s"])
            polls += 1
            if out.get("unreachable"):
                failures += 1
                if failures >= limit or self._silent:
                    self._silent = True
                    return dict(result, unreachable=True, changed=False, ansible_job_id=jid, msg=(
                        "job %s: the host is unreachable: %d failed poll%s in a row (%s)" % (
                            jid, failures, "" if failures == 1 else "s", str(out.get("msg") or "")[:300])))
            else:
                failures = 0
                if out.get("finished") or out.get("failed"):
                    return self._finished(args, task_vars, result, out)
            left = deadline - time.monotonic()
            if left <= 0:
                return self._late(args, result, polls, out)
            self._display.vvv("job_wait: job %s is still running (poll %d)" % (jid, polls),
                              host=task_vars.get("inventory_hostname"))
            time.sleep(min(args["poll_s"], left))

    def _finished(self, args, task_vars, result, out):
        """The job's result as this task's (as ansible.builtin.async_status returns it), its file removed."""
        result = merge_hash(result, out)
        # not after async_status's own "could not find job": there is no file to remove
        if args["cleanup"] and out.get("finished") and out.get("msg") != NOT_FOUND and not self._task.check_mode:
            gone = self._call(args["jid"], "cleanup", task_vars, args["poll_timeout_s"])
            if gone.get("unreachable") or gone.get("failed"):
                result["warnings"] = list(result.get("warnings") or []) + [
                    "job %s: its file was not removed: %s" % (args["jid"], str(gone.get("msg") or "")[:300])]
        return result

    @staticmethod
    def _late(args, result, polls, out):
        """A job still running (or a host whose last polls failed) when wait_timeout_s has passed: failed, saying
        so; the job goes on until its own limit (async:)."""
        why = ""
        if out.get("unreachable"):
            why = "; the last poll failed: %s" % str(out.get("msg") or "")[:300]
        return dict(result, failed=True, changed=False, ansible_job_id=args["jid"], started=True, finished=False,
                    msg="job %s did not finish within wait_timeout_s=%s (%d poll%s, every %s s)%s" % (
                        args["jid"], args["wait_timeout_s"], polls, "" if polls == 1 else "s", args["poll_s"], why))

    def _call(self, jid, mode, task_vars, limit_s):
        """One call of the async_status module, bounded by ``limit_s``; a connection failure or no answer in time is
        ``unreachable`` (a call that could not be stopped: the host is silent, no further call)."""
        try:
            return bounded(limit_s, functools.partial(self._status, jid, mode, task_vars))
        except AnsibleConnectionFailure as exc:
            return {"unreachable": True, "msg": str(exc)}
        except Silent as exc:
            self._silent = self._silent or exc.stuck
            return {"unreachable": True, "msg": "no answer from the host: %s" % exc}

    def _status(self, jid, mode, task_vars):
        """What ansible.builtin.async_status returns for ``jid`` (its action: the module, with the job directory of
        the shell's async_dir, then started/finished as booleans)."""
        if self._async_dir is None:
            self._async_dir = self._remote_expand_user(self.get_shell_option("async_dir", default="~/.ansible_async"))
        path = self._connection._shell.join_path(self._async_dir, jid)
        base = {"ansible_job_id": jid, "started": False, "finished": False, "stdout": "", "stderr": "",
                "stdout_lines": [], "stderr_lines": []}
        if mode == "cleanup":
            base["erased"] = path
        else:
            base.update(results_file=path, started=True)
        out = merge_hash(base, self._execute_module(
            module_name=STATUS_MODULE, module_args={"jid": jid, "mode": mode, "_async_dir": self._async_dir},
            task_vars=task_vars))
        for key in ("started", "finished"):
            out[key] = bool(out.get(key))
        return out
