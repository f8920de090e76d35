# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A bound on one call of an action plugin to its host, whatever the connection settings (private).

``bounded(limit_s, func)`` runs ``func`` (an ``_execute_module`` or ``_low_level_execute_command`` call) in a thread
and returns its answer if it comes within ``limit_s`` seconds. An SSH call to a host that went silent can block for
good whatever the SSH options (an inventory's own ``ansible_ssh_common_args`` replaces the keep-alives of
ansible.cfg): past its bound, the processes that hold the other end of the pipes the call opened on the controller
(its SSH client, and the ControlMaster the client handed its stdin to, where the write of a module blocks for good)
are killed, so that the call ends and the connection is free for the next one, and :class:`Silent` is raised. A
call that cannot be stopped that way (no /proc to find them) is raised as ``stuck``: no further call may be made
over its connection. Used by the actions perftest_sweep (its polls, plans and starts) and job_wait (its polls).
Controller only; Linux /proc to find the pipes' holders.
"""

from __future__ import annotations

import os
import signal
import threading
import time

from ansible.errors import AnsibleConnectionFailure, AnsibleError

KILL_GRACE_S = 5.0      # how long a call past its bound has to end once what it started was killed


class Silent(Exception):
    """A call to a host got no answer within its bound. ``stuck``: it could not be stopped (the connection is still
    in use by it: no further call may be made)."""

    def __init__(self, limit_s, stuck):
        super().__init__("no answer within %.0f s%s" % (limit_s, " (the call could not be stopped)" if stuck else ""))
        self.stuck = stuck


def _pipes(pid):
    """The pipes a process has open (``pipe:[inode]``; Linux /proc, none where it cannot be read)."""
    out = set()
    try:
        fds = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        return out
    for fd in fds:
        try:
            target = os.readlink("/proc/%d/fd/%s" % (pid, fd))
        except OSError:
            continue        # closed meanwhile
        if target.startswith("pipe:"):
            out.add(target)
    return out


def holders(pipes):
    """The processes, this one aside, that hold one of ``pipes``: the other ends of a call's pipes are its SSH
    client, and the SSH ControlMaster the client handed its stdin/stdout/stderr to."""
    found = set()
    if not pipes:
        return found
    for name in os.listdir("/proc") if os.path.isdir("/proc") else []:
        if name.isdigit() and int(name) != os.getpid() and _pipes(int(name)) & pipes:
            found.add(int(name))
    return found


def _stop(done, before):
    """Kill whatever holds the other end of the pipes the call opened (those of this process that were not there
    before it), until the call is ``done`` or KILL_GRACE_S passed: a write to a silent host's SSH connection, blocked
    for good, then fails at once."""
    deadline = time.monotonic() + KILL_GRACE_S
    while not done.is_set() and time.monotonic() < deadline:
        for pid in holders(_pipes(os.getpid()) - before):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass        # ended meanwhile
        done.wait(0.2)


def bounded(limit_s, func):
    """``func()`` if it answers within ``limit_s`` seconds (its exception if it raises); else raise Silent, once the
    processes at the other end of its pipes (the SSH client and ControlMaster of a silent host) were killed so that
    it ends. (An Event, not Thread.join: after a join interrupted by a signal, Python 3.11 takes the running thread
    for stopped.)"""
    before = _pipes(os.getpid())
    box = {}
    done = threading.Event()

    def call():
        try:
            box["value"] = func()
        except BaseException as exc:  # handed to the caller as it is
            box["error"] = exc
        finally:
            done.set()

    threading.Thread(target=call, name="aifabric-bounded-call", daemon=True).start()
    try:
        late = not done.wait(limit_s)
    finally:
        if not done.is_set():       # late, or this thread was interrupted (task timeout, Ctrl-C)
            _stop(done, before)
    if late:
        raise Silent(limit_s, not done.is_set())
    if "error" in box:
        raise box["error"]
    return box.get("value")


def status_unreadable(out):
    """True for a poll's answer that carries no status at all: the status module's output could not be parsed (it
    was killed, for example for memory: ansible-core marks it ``_ansible_parsed: False``) or its call raised an error
    other than a connection failure (``status_error``, set by the caller). The job or runner may be running well:
    such a poll is made again, as ansible-core's own async poll loop does, up to a bound of the caller's."""
    return bool(out.get("status_error") or (out.get("failed") and out.get("_ansible_parsed") is False))


def bounded_poll(limit_s, func):
    """(answer, stuck): one poll of a host, ``func()``, bounded by ``limit_s``, as a poll loop reads it. A connection
    failure (``AnsibleConnectionFailure``) or no answer in time is ``{"unreachable": True, "msg"}``; another
    ``AnsibleError`` (the module's transfer failed, ...) is a status error (:func:`status_unreadable`), polled again.
    ``stuck``: the call could not be stopped - the connection is still held by it, make no further call."""
    try:
        return bounded(limit_s, func), False
    except AnsibleConnectionFailure as exc:
        return {"unreachable": True, "msg": str(exc)}, False
    except AnsibleError as exc:
        return {"status_error": True, "failed": True, "msg": str(exc)}, False
    except Silent as exc:
        return {"unreachable": True, "msg": "no answer from the host: %s" % exc}, exc.stuck
