# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run tags: find and stop every process of one run on a host, whoever started it (private).

A multi-host launch (mpirun over SSH) starts ranks on hosts the module cannot
signal directly. Every process of a run therefore carries ``AIFABRIC_RUN_TAG=<tag>``
in its environment (the module sets it for the launcher, mpirun exports it to every
rank with ``-x``), and a cleanup step on every host finds them in ``/proc/*/environ``:

- ``new_tag() -> str`` - an unguessable tag (``secrets``);
- ``check_tag(tag) -> tag`` - the strict name rule (statedir.check_name);
- ``tagged(tag, proc="/proc") -> [(pid, start_time, argv)]`` - live processes of this run on this host
  (zombies and this process excluded);
- ``terminate(tag, grace_s=GRACE_S, proc="/proc") -> [dict]`` - stop them: SIGTERM to the launchers
  (mpirun, mpiexec, orterun, prterun, torchrun) first so that they tear down their own daemons and ranks,
  then SIGTERM to whatever is left, SIGKILL after ``grace_s``; a process is only signalled while its start
  time is still the one seen (no PID reuse accidents). Returns one ``{pid, argv, signal}`` per process signalled;
- ``run_tagged(module, argv, timeout_s, env, tag, foreground=False) -> (run or None, timeout or None, swept)``
  - runner.run with the tag in the environment; on every path (end, timeout, SIGTERM/SIGINT/SIGHUP of the
  module: proc.interrupt_guard, which raises errors.Interrupted after the cleanup) it then stops what is left
  of the run on this host.

Runs on the targets: Python 3.8+, Linux, no Ansible imports.
"""

from __future__ import annotations

import os
import secrets
import signal
import time

from ansible_collections.aifabric.acceptance.plugins.module_utils import runner, statedir
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import ToolTimeout
from ansible_collections.aifabric.acceptance.plugins.module_utils.proc import interrupt_guard, process_stat, running
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import _mpirun

TAG_ENV = _mpirun.TAG_ENV      # the collective runner exports it to every rank (-x)
GRACE_S = 10.0
LAUNCHERS = ("mpirun", "mpiexec", "orterun", "prterun", "torchrun")


def new_tag():
    return "aif-" + secrets.token_hex(16)


def check_tag(tag):
    return statedir.check_name(tag, "run_id")


def _read(path, limit=1 << 20):
    try:
        with open(path, "rb") as handle:
            return handle.read(limit)
    except (IOError, OSError):
        return None


def tagged(tag, proc="/proc"):
    """[(pid, start_time, argv)] of the live processes whose environment carries this run's tag."""
    check_tag(tag)
    needle = ("%s=%s" % (TAG_ENV, tag)).encode("ascii")
    me = os.getpid()
    found = []
    try:
        entries = os.listdir(proc)
    except OSError:
        return found
    for entry in entries:
        if not entry.isdigit() or int(entry) == me:
            continue
        environ = _read(os.path.join(proc, entry, "environ"), limit=4 << 20)
        if not environ or needle not in environ.split(b"\0"):
            continue
        info = process_stat(entry, proc)
        if info is None or info[0] in ("Z", "X"):
            continue
        argv = (_read(os.path.join(proc, entry, "cmdline")) or b"").split(b"\0")
        found.append((int(entry), info[1], [a.decode("utf-8", "replace") for a in argv if a]))
    return sorted(found)


def _signal(items, sig, proc, done):
    for pid, start, argv in items:
        if running(pid, start, proc):
            try:
                os.kill(pid, sig)
            except OSError:
                continue
            done.append({"pid": pid, "argv": argv[:8], "signal": signal.Signals(sig).name})


def _wait(items, limit_s, proc):
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        # a zombie counts as gone (its parent reaps it)
        if not any(running(pid, start, proc) for pid, start, _argv in items):
            return
        time.sleep(0.1)


def terminate(tag, grace_s=GRACE_S, proc="/proc"):
    """Stop every process of the run on this host (see the module docstring); returns what was signalled."""
    done = []
    found = tagged(tag, proc=proc)
    launchers = [item for item in found if item[2] and os.path.basename(item[2][0]) in LAUNCHERS]
    if launchers:
        _signal(launchers, signal.SIGTERM, proc, done)
        _wait(launchers, grace_s, proc)
        found = tagged(tag, proc=proc)
    if found:
        _signal(found, signal.SIGTERM, proc, done)
        _wait(found, grace_s, proc)
        _signal(found, signal.SIGKILL, proc, done)
        _wait(found, 5.0, proc)
    return done


def run_tagged(module, argv, timeout_s, env, tag, foreground=False, grace_s=GRACE_S):
    """runner.run of a tagged launch, then (on every path) terminate(tag) on this host."""
    env = dict(env or {})
    env[TAG_ENV] = check_tag(tag)
    run, timed_out, swept = None, None, []
    with interrupt_guard() as guard:
        try:
            try:
                run = runner.run(module, argv, timeout_s, env=env, foreground=foreground, kill_after_s=grace_s)
            except ToolTimeout as exc:
                timed_out = exc
        finally:
            guard.ignore()      # an impatient second Ctrl-C must not skip the cleanup
            swept = terminate(tag, grace_s)
    return run, timed_out, swept
