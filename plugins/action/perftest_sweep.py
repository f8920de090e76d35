# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action behind aifabric.acceptance.perftest_sweep: phase=wait polls the host's runner from the controller.

Every other phase goes to the module as the normal action would (async included). ``phase: wait`` calls the
module with ``phase: status`` again and again, each call a long poll of at most ``poll_s`` on the host (renewing
the runner's lease, handing it the hosts found unreachable) until the runner ended, and returns its records. What
each poll hands the runner (the long poll ``wait_s``, ``dead_hosts``, ``positions``) is the module's one internal
option ``_poll``, set here alone: the runner's protocol is not a public option of the module.
Hosts share what they saw through a directory of the controller's local temporary directory (the workers are forks
of one ansible-playbook): each poll writes the host's progress there, a host whose polls fail
``unreachable_after_polls`` times in a row is written there as dead (and every other runner is told at its next
poll), and the first worker that sees every host past a round prints that round's line (one line per round, created
with O_EXCL). The positions handed here are a second source: the runners also ask each other directly
(module_utils/perftest_sweep.py, position answers), which is what counts when this wait does not poll every host at
once (fewer forks than hosts). The poll that finds a runner ended gets its records, and the host keeps them (until
the run's cleanup): a poll that comes after one whose answer was lost (past its bound under load, a connection that
dropped) gets them again instead of no runner - the same runner's job id, or without one ``seen``, handed once a
poll saw the runner.

Every call this action makes to a host is bounded here, whatever the connection settings (no SSH keep-alive is
needed: an inventory's own ``ansible_ssh_common_args`` replaces those of ansible.cfg): a poll gets ``poll_timeout_s``
(its long poll ``poll_s`` plus ``POLL_MARGIN_S`` by default), a plan or the async start of a runner ``CALL_LIMIT_S``.
A call past its bound counts as a failed poll: the processes that hold the other end of its pipes on the
controller (its SSH client, and the ControlMaster the client handed its stdin to, where the write of the module
blocks for good) are killed, so that it ends and the connection is free for the next poll; a call that cannot be
stopped (no /proc to find them) makes its host unreachable at once (the bound: plugin_utils/bounded_call.py). A
host that went silent is thus declared unreachable after ``unreachable_after_polls`` bounded polls, and no further
call is made to it (cleanup included).
"""

from __future__ import annotations

import functools
import json
import os
import time

from ansible import constants as C
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.plugins.action import ActionBase
from ansible.utils.vars import merge_hash

from ansible_collections.aifabric.acceptance.plugins.module_utils import argspec, statedir
from ansible_collections.aifabric.acceptance.plugins.module_utils.async_job import FILE_WAIT_S
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import AcceptanceError
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import perftest_sweep as perftest_tool
from ansible_collections.aifabric.acceptance.plugins.modules import perftest_sweep as sweep_module
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import host_program
from ansible_collections.aifabric.acceptance.plugins.plugin_utils.bounded_call import (
    Silent, bounded, bounded_poll, status_unreadable)
from ansible_collections.aifabric.acceptance.plugins.plugin_utils.one_call_start import OneCallStart

MODULE = "aifabric.acceptance.perftest_sweep"
MISSING_S = 120
POLL_MARGIN_S = 20.0    # a poll answers within its long poll (poll_s) plus this, or it failed
STATUS_ERRORS_AFTER = 3     # polls in a row whose status could not be read (bounded_call.status_unreadable) fail
CALL_LIMIT_S = 120.0    # a plan, or the async start of a runner, answers within this, or the host is unreachable
CLEANUP_LIMIT_S = 30.0  # the removal of the remote temporary directory answers within this
WAIT_ONLY = ("wait_timeout_s", "poll_s", "poll_timeout_s", "rounds", "unreachable_after_polls", "sweep_hosts", "_poll",
             "job_id")


# the light status poll (plugin_utils/host_program.py): after the bundle of perftest_status and modmain (and what they
# import), the module's own status code on a stand-in for the AnsibleModule it uses (its parameters, checked here with
# ansible-core's validator; check mode; warnings; the answer), through modmain.run as the module's main runs it
STATUS_PROGRAM = """
import json as _json
import os
import sys as _sys

from ansible_collections.aifabric.acceptance.plugins.module_utils import modmain, perftest_status


class _Module(object):
    def __init__(self, params, check_mode):
        self.params, self.check_mode, self._warnings = params, check_mode, []

    def warn(self, warning):
        self._warnings.append(warning)

    def exit_json(self, **answer):
        self._answer(answer, 0)

    def fail_json(self, msg, **answer):
        answer.update(failed=True, msg=msg)
        self._answer(answer, 1)

    def _answer(self, answer, rc):
        if self._warnings:
            answer["warnings"] = self._warnings
        _sys.stdout.write(_json.dumps(answer))
        _sys.exit(rc)


_params = _json.loads(%r)
# the options of type path, expanded here as AnsibleModule expands them on the host (its HOME, its environment)
for _name in %r:
    if isinstance(_params.get(_name), str):
        _params[_name] = os.path.expanduser(os.path.expandvars(_params[_name]))
modmain.run(_Module(_params, %r), "perftest_sweep", perftest_status.poll)
"""


def status_program(params, check_mode):
    """The light status poll's program: the bundle, and the module's status code on ``params`` (light_params)."""
    return host_program.bundle(("modmain", "perftest_status")) + STATUS_PROGRAM % (
        json.dumps(params), sorted(_path_options()), bool(check_mode))


def _path_options():
    return set(name for name, spec in sweep_module.argument_spec().items() if spec.get("type") == "path")


def light_params(status_args):
    """The status poll's parameters as the module's AnsibleModule would have them (ansible-core's validator on the
    module's argument spec, its defaults applied; then its ranges; the options of type path as given, expanded on the
    host by the program), or None where they fail a check: the module polls then, and answers with its own message."""
    spec = sweep_module.argument_spec()
    for name in _path_options():
        spec[name] = dict(spec[name], type="str")
    validated = ArgumentSpecValidator(spec, mutually_exclusive=sweep_module.MUTUALLY_EXCLUSIVE).validate(status_args)
    if validated.error_messages or argspec.violations(validated.validated_parameters, sweep_module.RANGES):
        return None
    return validated.validated_parameters


def _unreadable(result, host, count, out):
    """The task's failure once ``count`` polls in a row gave no status (the host answers: it is not unreachable)."""
    return dict(result, failed=True, changed=False, results=[], msg=(
        "the status of the runner of %s could not be read: %d failed polls in a row (last: %s); the runner may still "
        "be running" % (host, count, str(out.get("msg") or "")[:300])))


def _bad_peers(peers):
    """Why ``peers`` ({host: address}) holds an address that is neither an IP address nor a host name, or None
    (perftest_tool.check_peer_address, the one check of a peer address)."""
    if not isinstance(peers, dict):
        return None     # the module's own argument check says what is wrong with its type
    for host, address in sorted(peers.items(), key=lambda kv: str(kv[0])):
        try:
            perftest_tool.check_peer_address(address, "peers[%s]" % str(host)[:200])
        except AcceptanceError as exc:
            return str(exc)
    return None


def _wait_problem(args, wait_s, poll_limit):
    """What is wrong with phase=wait's own options, or None (before any call to the host)."""
    if poll_limit <= wait_s:
        return ("poll_timeout_s=%s must be longer than poll_s=%s (each poll waits up to poll_s on the host)"
                % (args.get("poll_timeout_s"), wait_s))
    job_id = str(args.get("job_id") or "")
    if job_id and not statedir.NAME_RE.match(job_id):     # the job directory joined with it: never a path outside it
        return "job_id %.100r is not a job id (the ansible_job_id of the task that started the runner)" % job_id
    return None


def _ended(out, job_id):
    """The task's result from the poll that found the runner ended: its answer (records, progress), with a warning
    where that poll could not remove the runner's job file (it stays in the host's async directory, as an async job's
    file does until async_status removes it)."""
    out = dict(out, changed=True)
    out.pop("finished", None)
    removal = out.pop("job_file", None)
    if job_id and isinstance(removal, dict) and not removal.get("erased"):
        out["warnings"] = list(out.get("warnings") or []) + ["rdma sweep: the job file of runner %s was not removed: "
                                                             "%s" % (job_id, str(removal.get("error") or "no answer")[:300])]
    return out


def _safe(name):
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in str(name))[:200]


class ActionModule(OneCallStart, ActionBase):
    _supports_check_mode = True
    _supports_async = True

    _silent = False     # a call to the host got no answer: no further call is made to it (cleanup included)
    _light = None       # how the status polls reach the host: (host_program.Command, parameters); False: the module

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        args = dict(self._task.args)
        bad = _bad_peers(args.get("peers"))
        if bad:     # before anything reaches the host: a peer address becomes perftest's argv there
            return dict(result, failed=True, changed=False, results=[], msg=bad)
        if args.get("phase") != "wait":
            return self._call(args, task_vars, result)
        if self._task.check_mode:
            return dict(result, changed=False, skipped=True, msg="check mode: no runner to wait for", results=[])
        return self._wait(args, task_vars, result)

    def cleanup(self, force=False):
        if force or not self._task.async_val:
            self._forget_tmp()

    def _forget_tmp(self):
        """Remove the remote temporary directory, bounded (the host may have gone silent since its last answer)."""
        if self._silent:
            return
        try:
            bounded(CLEANUP_LIMIT_S, functools.partial(self._remove_tmp_path, self._connection._shell.tmpdir))
        except Silent:
            self._silent = True

    def _call(self, args, task_vars, result):
        """Every phase but wait, as the normal action would (async included), bounded unless it is a runner in the
        foreground (phase=run without async: it lasts its whole schedule, under the task's own timeout)."""
        wrap_async = self._task.async_val and not self._connection.has_native_async
        execute = functools.partial(self._execute_module, task_vars=task_vars, wrap_async=wrap_async)
        if args.get("phase", "run") == "run" and not self._task.async_val:
            out = execute()
        else:
            try:
                out = bounded(CALL_LIMIT_S + float((args.get("_poll") or {}).get("wait_s") or 0), execute)
            except Silent as exc:
                self._silent = True
                host = args.get("inventory_hostname") or args.get("host_name") or task_vars.get("inventory_hostname")
                why = "phase=%s: %s" % (args.get("phase", "run"), exc)
                if args.get("run_id"):
                    self._declare_dead(self._shared(args), host, why)
                return dict(result, unreachable=True, changed=False, msg="%s is unreachable (%s)" % (host, why))
        result = merge_hash(result, out)
        if not wrap_async:
            self._forget_tmp()
        return result

    def _hand_job(self, args, poll, poll_limit):
        """The runner's job id (job_id, checked by _wait_problem), handed to every poll with the job directory as
        async_wrapper had it (the shell's async_dir, ~ expanded on the host): the poll that finds the runner ended
        removes its job file - no task of its own on every host. "" - none. Its wait for async_wrapper's file is half
        of what the poll's bound leaves past its long poll (10 s at most): the last poll stays within its bound."""
        job_id = str(args.get("job_id") or "")
        if job_id:
            poll["job"] = {"jid": job_id, "async_dir": self.get_shell_option("async_dir", default="~/.ansible_async"),
                           "wait_s": max(0.0, min(FILE_WAIT_S, (poll_limit - poll["wait_s"]) / 2.0))}
        return job_id

    def _declare_dead(self, shared, host, why):
        """Tell every other runner of the sweep (at its next poll) that ``host`` is gone."""
        self._write(os.path.join(shared, "dead-%s" % _safe(host)), why)
        self._display.warning("rdma sweep: %s is unreachable (%s); the others skip their pairs with it" % (host, why))

    # ------------------------------------------------------------------ shared controller-side state
    def _shared(self, args):
        name = "rdma-sweep-%s-%s" % (_safe(args.get("run_id", "default")), _safe(args.get("sweep_name", "main")))
        # the path rule (statedir.trusted_dir): created 0700, or refused when another user owns or can write it
        return statedir.trusted_dir(os.path.join(C.DEFAULT_LOCAL_TMP, name), what="rdma sweep state")

    @staticmethod
    def _write(path, data):
        statedir.write_file(os.path.dirname(path), os.path.basename(path), json.dumps(data))

    @staticmethod
    def _read(path):
        try:
            with open(path) as handle:
                return json.load(handle)
        except (OSError, ValueError):
            return None

    def _dead(self, shared):
        out = {}
        for name in os.listdir(shared):
            if name.startswith("dead-"):
                out[name[5:]] = self._read(os.path.join(shared, name)) or "unreachable"
        return out

    def _positions(self, shared, args):
        """The next step of every host of the sweep as last polled (a client keeps waiting for a server whose
        host is alive and still busy with an earlier step)."""
        first = int(args.get("first_step") or 0)
        out = {}
        for name in args.get("sweep_hosts") or []:
            item = self._read(os.path.join(shared, "host-%s" % _safe(name)))
            if item is not None:
                out[name] = first + int(item.get("position", 0))
        return out

    def _notes(self, shared, host, progress):
        """Print once each note of ``host``'s runner (progress ``notes``: what it says of itself, e.g. its position
        answers off) - a runner under ``async`` has no other way to be heard before it ends."""
        for index, text in enumerate(progress.get("notes") or []):
            marker = os.path.join(shared, "noted-%s-%d" % (_safe(host), index))
            try:
                os.close(os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
            except FileExistsError:
                continue
            self._display.warning("rdma sweep: %s: %s" % (host, str(text)[:500]))

    def _report(self, shared, args, host, progress, dead):
        """Write this host's progress (and print its new notes); print the line of every round that every live host
        has passed."""
        self._notes(shared, host, progress)
        steps = args.get("rounds") or []
        first = int(args.get("first_step") or 0)
        total_steps = len(steps)
        nxt = progress.get("next_step")
        position = total_steps if nxt is None else int(nxt) - first
        self._write(os.path.join(shared, "host-%s" % _safe(host)), {
            "position": position, "pairs_done": progress.get("pairs_done", 0), "failing": progress.get("failing", 0)})
        hosts = [h for h in (args.get("sweep_hosts") or [host]) if h not in dead]
        positions, done, failing = [], 0, 0
        for name in hosts:
            item = self._read(os.path.join(shared, "host-%s" % _safe(name))) or {}
            positions.append(item.get("position", 0))
            done += item.get("pairs_done", 0)
            failing += item.get("failing", 0)
        reached = min(positions) if positions else 0
        total_pairs = sum(int(s[2]) for s in steps)
        per_test = {}
        for test, _round, _pairs in steps:
            per_test[test] = per_test.get(test, 0) + 1
        label = "" if args.get("sweep_name", "main") == "main" else " (%s)" % args.get("sweep_name")
        for index in range(min(reached, total_steps)):
            marker = os.path.join(shared, "printed-%d" % index)
            try:
                os.close(os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600))
            except FileExistsError:
                continue
            test, rnd, _pairs = steps[index]
            self._display.display("rdma %s%s round %d/%d: %d/%d pairs done, %d failing%s" % (
                test, label, int(rnd) + 1, per_test[test], done, total_pairs, failing,
                (", unreachable: %s" % ", ".join(sorted(dead))) if dead else ""))

    # ------------------------------------------------------------------ the wait loop
    def _wait(self, args, task_vars, result):
        host = args.get("inventory_hostname") or args.get("host_name") or task_vars.get("inventory_hostname")
        shared = self._shared(args)
        status_args = dict((k, v) for k, v in args.items() if k not in WAIT_ONLY)
        status_args["phase"] = "status"
        deadline = time.monotonic() + float(args.get("wait_timeout_s") or 86400)
        # the runner's protocol inputs go in one internal option (module option _poll), set here alone
        poll = status_args["_poll"] = {"wait_s": float(args.get("poll_s") or 5.0)}
        poll_limit = float(args.get("poll_timeout_s") or poll["wait_s"] + POLL_MARGIN_S)
        problem = _wait_problem(args, poll["wait_s"], poll_limit)
        if problem:
            return dict(result, failed=True, changed=False, results=[], msg=problem)
        job_id = self._hand_job(args, poll, poll_limit)
        limit = int(args.get("unreachable_after_polls") or 2)
        failures = unreadable = 0
        missing_since = None
        try:
            while True:
                dead = self._dead(shared)
                poll["dead_hosts"] = dict((h, "was declared unreachable by the controller (%s)" % why)
                                          for h, why in dead.items() if h != host)
                poll["positions"] = self._positions(shared, args)
                out = self._poll(status_args, task_vars, poll_limit)
                if out.get("unreachable"):
                    failures += 1
                    ended = self._unreachable(shared, host, out, failures, limit, result)
                    if ended:
                        return ended
                elif status_unreadable(out):
                    failures, unreadable = 0, unreadable + 1
                    if unreadable >= STATUS_ERRORS_AFTER:
                        return _unreadable(result, host, unreadable, out)
                    time.sleep(min(poll["wait_s"], 5.0))
                    continue
                else:
                    failures = unreadable = 0
                    if out.get("failed"):
                        return merge_hash(result, out)
                    if out.get("missing"):
                        missing_since = missing_since or time.monotonic()
                        if time.monotonic() - missing_since > MISSING_S:
                            return dict(result, failed=True, changed=False, results=[], msg=(
                                "the runner of %s never showed up (no state directory for %ds): it did not start, or "
                                "its files were removed" % (host, MISSING_S)))
                        time.sleep(0.25)
                        continue
                    # this wait saw its runner: a later poll may get the answer of one that was lost on the way
                    poll["seen"] = True
                    self._report(shared, args, host, out.get("progress") or {}, self._dead(shared))
                    if out.get("finished"):
                        return merge_hash(result, _ended(out, job_id))
                if time.monotonic() >= deadline:
                    return dict(result, failed=True, results=[],
                                msg="the runner of %s did not end within wait_timeout_s=%s" % (
                                    host, args.get("wait_timeout_s")))
                if out.get("unreachable"):
                    time.sleep(1.0)
        finally:
            self._forget_tmp()

    def _unreachable(self, shared, host, out, failures, limit, result):
        """The task's result once ``failures`` polls in a row got no answer (``limit`` of them, or a call that could
        not be stopped): the host is declared unreachable to the other runners. None while it may still answer."""
        if failures < limit and not self._silent:
            return None
        why = "%d failed poll%s in a row: %s" % (failures, "" if failures == 1 else "s", (out.get("msg") or "")[:200])
        self._silent = True
        self._declare_dead(shared, host, why)
        return dict(result, unreachable=True, changed=False, msg="runner unreachable: %s" % why)

    def _poll(self, status_args, task_vars, limit_s):
        """One phase=status call, bounded by limit_s; a connection failure or no answer in time is unreachable. Where
        the connection pipelines, a light poll: the module's status code in a short program (STATUS_PROGRAM), not the
        module's payload; elsewhere, or where the parameters fail the module's checks, the module."""
        if self._light is None:
            params = host_program.possible(self) and light_params(status_args)
            self._light = bool(params) and (host_program.Command(self, MODULE, status_args, task_vars), params)
            self._display.vvv("perftest_sweep: the runner's status polled by %s" % (
                "a light poll (the connection pipelines)" if self._light else "the module"),
                host=task_vars.get("inventory_hostname"))
        if self._light:
            command, params = self._light
            program = status_program(dict(params, _poll=status_args["_poll"]), self._task.check_mode)
            call = functools.partial(command.run, self, program)
        else:
            call = functools.partial(self._execute_module, module_name=MODULE, module_args=status_args,
                                     task_vars=task_vars)
        out, stuck = bounded_poll(limit_s, call)
        # stuck: the connection is still held by the call, no further call
        self._silent = self._silent or stuck
        return out
