# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action behind aifabric.acceptance.job_wait: wait for a host's async job on the controller, one task, no output
per poll.

``ansible.builtin.async_status`` in an ``until:`` loop prints a "FAILED - RETRYING" line for every poll that finds
the job still running. Here the polls are this action's own: every ``poll_s`` seconds it reads the job's file on
the host as the ``async_status`` module does, in the same job directory, until the job finished, then returns the
job's result as its own, as ``async_status`` returns it (the module's ``results`` records, ``failed``, ``msg``,
...). With ``cleanup`` the poll that finds the job finished also removes its file on the host, in the same call (one
Python start on the host, not a poll and then a removal).

A poll is light where the connection pipelines modules (``ansible_pipelining``; plugin_utils/host_program.py): the
host's module interpreter reads a short program on its standard input - module_utils/async_job.py, the very code of
the module's poll, and a call of it - instead of the module's AnsiballZ payload (about 600 KB that the host's Python
unpacks and imports: about 0.14 s of its CPU a poll, against about 0.01 s; bench/module_start.py); its answer is read
as a module's. Elsewhere the module (plugins/modules/job_wait.py) polls, with the same code.

Every call to the host is bounded here whatever the connection settings (plugin_utils/bounded_call.py): a poll that
does not answer within ``poll_timeout_s`` is stopped and counts as a failed poll, as does a connection failure;
``unreachable_after_polls`` failed polls in a row make the host unreachable (no further call is made to it, the
removals included). A poll whose status module ran but gave no result - an answer that could not be parsed (the
module killed, e.g. for memory: "Module result deserialization failed") or an error other than a connection failure
- is polled again, as ansible-core's own async poll does (task_executor ``_poll_async_result``);
``status_errors_after_polls`` of them in a row fail the task (the host answers: it is not unreachable), the job left
running and its file in place. The two kinds are counted apart. No job file within ``NOT_STARTED_S`` of the wait's
start is a job not started yet (async_wrapper returns before its child wrote the file on a loaded host); after it,
async_status's "could not find job" fails the task. A job that has not finished when ``wait_timeout_s`` has passed
fails the task, saying so.
"""

from __future__ import annotations

import functools
import inspect
import time

from ansible.plugins.action import ActionBase
from ansible.utils.vars import merge_hash

from ansible_collections.aifabric.acceptance.plugins.module_utils import async_job, statedir
from ansible_collections.aifabric.acceptance.plugins.module_utils.async_job import REMOVED, finished_value as _one
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import host_program
from ansible_collections.aifabric.acceptance.plugins.plugin_utils.bounded_call import (
    KILL_GRACE_S, Silent, bounded, bounded_poll, status_unreadable)

STATUS_MODULE = "aifabric.acceptance.job_wait"  # this action's host half: async_status's read, and the removal
NOT_FOUND = "could not find job"                # its answer (async_status's) where the job has no file
# How long after the wait's start a poll that finds no job file means "not started yet". async_wrapper's parent
# returns (the start task's answer) once its daemonized child has written the job file (before the module runs), or
# after 2.5 s without that notice: on a loaded host the file may come later. 10 s is 4x that wait; a poll begun
# within it that finds no file is polled again, the next one (whenever poll_s brings it) decides.
NOT_STARTED_S = 10.0

ARGUMENT_SPEC = {
    "jid": {"type": "str", "required": True},
    "wait_timeout_s": {"type": "int", "default": 3600},
    "poll_s": {"type": "float", "default": 5.0},
    "poll_timeout_s": {"type": "float", "default": 30.0},
    "unreachable_after_polls": {"type": "int", "default": 2},
    "status_errors_after_polls": {"type": "int", "default": 3},
    "cleanup": {"type": "bool", "default": True},
}


def poll_program(jid, async_dir, cleanup):
    """The light poll: module_utils/async_job.py itself (the module's own reading, removal and checks of the job file)
    and a call of its ``poll``, the directory expanded as the module's option of type path expands it. The host's
    interpreter prints the answer the module would give (less the module's ``invocation``)."""
    call = "poll(%r, os.path.expanduser(os.path.expandvars(%r)), %r)" % (jid, async_dir, bool(cleanup))
    return "%s\n\nimport sys as _sys\n_sys.stdout.write(json.dumps(%s))\n" % (_async_job_source(), call)


@functools.lru_cache(maxsize=1)
def _async_job_source():
    """module_utils/async_job.py's text (read once per process)."""
    return inspect.getsource(async_job)


def worst_case_s(wait_timeout_s, poll_timeout_s):
    """The longest this action's run can take: the wait, then its last poll (which removes the job's file) and the
    removal of the remote temporary directory (none with pipelining), each bounded by ``poll_timeout_s`` plus the
    time to stop a call past its bound (a task's ``timeout:`` above it lets the action's own deadline fire first)."""
    return wait_timeout_s + 2 * (poll_timeout_s + KILL_GRACE_S + 1)


def _problem(args):
    """What is wrong with the validated arguments, or None."""
    if not args["jid"].strip():
        return "jid is empty: give the ansible_job_id of the task that started the job (async, poll 0)"
    if not statedir.NAME_RE.match(args["jid"]):
        # async_status joins it to the job directory: "../x" would read, and remove, a file outside it
        return ("jid %.100r is not a job id: one name of letters, digits, '_', '.', ':' or '-', starting with a letter "
                "or digit (no '/', no '..'), as async_wrapper makes them (j512186146478.4137)" % args["jid"])
    if args["wait_timeout_s"] < 0:
        return "wait_timeout_s must be 0 or more, got %s" % args["wait_timeout_s"]
    if args["poll_s"] <= 0:
        return "poll_s must be more than 0, got %s" % args["poll_s"]
    if args["poll_timeout_s"] <= 0:
        return "poll_timeout_s must be more than 0, got %s" % args["poll_timeout_s"]
    if args["unreachable_after_polls"] < 1:
        return "unreachable_after_polls must be 1 or more, got %s" % args["unreachable_after_polls"]
    if args["status_errors_after_polls"] < 1:
        return "status_errors_after_polls must be 1 or more, got %s" % args["status_errors_after_polls"]
    return None


def _kind(out):
    """What one poll's answer says: "unreachable" (no answer, a connection failure), "error" (the status module gave
    no result: output that could not be parsed, an error of its run), "absent" (no job file), "done" (the job's
    result, a failure of the module on a job file included), "running"."""
    if out.get("unreachable"):
        return "unreachable"
    if status_unreadable(out):
        return "error"
    if out.get("failed") and out.get("msg") == NOT_FOUND:
        return "absent"
    if out.get("finished") or out.get("failed"):
        return "done"
    return "running"


def _believed(jid, out):
    """What a status answer (the host's word: the job file as async_status read it) may say. Only the connection
    makes a poll unreachable, never a key of the job's output; ``finished`` is 1 or not; a file that names another
    job is not this job's status (a status error, polled again)."""
    named = out.get("ansible_job_id")
    if named != jid:
        return {"status_error": True, "failed": True, "msg": "the job file of %s names the job %.100r: it is not this "
                "job's status" % (jid, named)}
    out.pop("unreachable", None)
    out["started"], out["finished"] = bool(out.get("started")), _one(out.get("finished"))
    return out


def _plural(count, word):
    return "%d %s%s" % (count, word, "" if count == 1 else "s")


def _why_not_read(out):
    """The last failed status poll, for the task's message: its error, rc and stderr where it has them."""
    why = str(out.get("msg") or "")[:300]
    if out.get("rc") is not None:
        why += "; rc %s" % out["rc"]
    if out.get("module_stderr"):
        why += "; stderr: %s" % str(out["module_stderr"]).strip()[:300]
    return why


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    _supports_async = False

    _silent = False         # a call to the host got no answer: no further call is made to it (removals included)
    _async_dir = None       # the job directory on the host, as ansible.builtin.async_status finds it
    _light = None           # how the light poll reaches the host (host_program.Command), False: the module polls
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
        jid = args["jid"]
        start = time.monotonic()
        deadline = start + args["wait_timeout_s"]
        polls = 0
        runs = {"unreachable": 0, "error": 0}     # failed polls in a row, of each kind
        while True:
            began = time.monotonic()
            out = self._call(jid, args["cleanup"] and not self._task.check_mode, task_vars, args["poll_timeout_s"])
            polls += 1
            kind = _kind(out)
            for key in runs:
                runs[key] = runs[key] + 1 if kind == key else 0
            if kind == "unreachable" and (runs[kind] >= args["unreachable_after_polls"] or self._silent):
                self._silent = True
                return dict(result, unreachable=True, changed=False, ansible_job_id=jid, msg=(
                    "job %s: the host is unreachable: %s in a row (%s)" % (
                        jid, _plural(runs[kind], "failed poll"), str(out.get("msg") or "")[:300])))
            if kind == "error" and runs[kind] >= args["status_errors_after_polls"]:
                return dict(result, failed=True, changed=False, ansible_job_id=jid, started=True, finished=False, msg=(
                    "job %s: its status could not be read: %s in a row of the async_status module (last: %s); the "
                    "job may still be running, its file is left on the host" % (
                        jid, _plural(runs[kind], "failed poll"), _why_not_read(out))))
            if kind == "done" or (kind == "absent" and began - start >= NOT_STARTED_S):
                return self._finished(args, result, out)
            left = deadline - time.monotonic()
            if left <= 0:
                return self._late(args, result, polls, out)
            self._display.vvv("job_wait: job %s is still running (poll %d)" % (jid, polls),
                              host=task_vars.get("inventory_hostname"))
            time.sleep(min(args["poll_s"], left))

    @staticmethod
    def _finished(args, result, out):
        """The job's result as this task's (as ansible.builtin.async_status returns it); its file was removed by the
        poll that found it finished (cleanup; not in check mode)."""
        removal = out.pop(REMOVED, None)
        result = merge_hash(result, out)
        if not isinstance(removal, dict):
            return result
        if removal.get("erased"):
            result["results_file"] = removal["erased"]     # the path as the host expanded it
        else:
            result["warnings"] = list(result.get("warnings") or []) + [
                "job %s: its file was not removed: %s" % (args["jid"], str(removal.get("error") or "")[:300])]
        return result

    @staticmethod
    def _late(args, result, polls, out):
        """A job still running (or a host whose last polls failed) when wait_timeout_s has passed: failed, saying
        so; the job goes on until its own limit (async:)."""
        why, kind = "", _kind(out)
        if kind == "unreachable":
            why = "; the last poll failed: %s" % str(out.get("msg") or "")[:300]
        elif kind == "error":
            why = "; the last poll failed: %s" % _why_not_read(out)
        elif kind == "absent":
            why = "; the job's file was never found (%s): the job did not start" % NOT_FOUND
        return dict(result, failed=True, changed=False, ansible_job_id=args["jid"], started=True, finished=False,
                    msg="job %s did not finish within wait_timeout_s=%s (%d poll%s, every %s s)%s" % (
                        args["jid"], args["wait_timeout_s"], polls, "" if polls == 1 else "s", args["poll_s"], why))

    def _call(self, jid, cleanup, task_vars, limit_s):
        """One poll (the module on the host), bounded by ``limit_s``; a connection failure or no answer in time is
        ``unreachable`` (a call that could not be stopped: the host is silent, no further call)."""
        out, stuck = bounded_poll(limit_s, functools.partial(self._status, jid, cleanup, task_vars))
        self._silent = self._silent or stuck
        return out

    def _status(self, jid, cleanup, task_vars):
        """What ansible.builtin.async_status returns for ``jid`` (its action: the job file as its module reads it, in
        the job directory of the shell's async_dir, then started/finished as booleans); with ``cleanup`` the module
        removes the file of a job it finds finished.

        The directory goes to the module as the shell option says it (``~`` unexpanded), its option ``async_dir`` of type
        path: the module expands it on the host, in the environment the job's
        async_wrapper expanded it in (the same connection, user and HOME), so both
        name one directory. ansible.builtin.async_status expands ``~`` as ``~<remote user>`` (the passwd home)
        instead: where HOME is not that (a local connection under a HOME of its own, as ``make test`` runs) the job
        file was written in one directory and looked for in another."""
        if self._async_dir is None:
            self._async_dir = self.get_shell_option("async_dir", default="~/.ansible_async")
        path = self._connection._shell.join_path(self._async_dir, jid)
        base = {"ansible_job_id": jid, "started": True, "finished": False, "stdout": "", "stderr": "",
                "stdout_lines": [], "stderr_lines": [], "results_file": path}
        # the module reads the directory where async_wrapper read it (its option of type path expands ~ on the host)
        args = {"jid": jid, "cleanup": cleanup, "async_dir": self._async_dir}
        if self._light is None:
            self._light = host_program.possible(self) and host_program.Command(self, STATUS_MODULE, args, task_vars)
            self._display.vvv("job_wait: job %s polled by %s" % (
                jid, "a light poll (the connection pipelines)" if self._light else "the module"),
                host=task_vars.get("inventory_hostname"))
        if self._light:
            answer = self._light.run(self, poll_program(jid, self._async_dir, cleanup))
        else:
            answer = self._execute_module(module_name=STATUS_MODULE, module_args=args, task_vars=task_vars)
        return _believed(jid, merge_hash(base, answer))
