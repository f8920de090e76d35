# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The process layer: the one spawn, exit-code constants and the one interrupt guard (private).

- ``spawn(argv, timeout_s, env=None, cwd=None, stdout=PIPE, stderr=PIPE, data=None, kill_after_s=KILL_AFTER_S,
  foreground=False, locale=True) -> Child`` - THE place a process is started on a target (modules through
  runner.run and state_child.start, the pod entry program): an argv list exec'd directly in its own session and process
  group, stdin /dev/null (or ``data``), C locale, outputs to pipes or open files, dying with its parent
  (PR_SET_PDEATHSIG), and a hard limit: SIGTERM to the group at ``timeout_s``, SIGKILL ``kill_after_s`` later.
  ``Child`` - ``pid``, ``start_time``, ``started``/``ended``, ``rc``, ``timed_out``; ``poll()``, ``wait(timeout_s)``,
  ``communicate()`` (each enforces the limit), ``kill(grace_s)`` (its group: TERM, then KILL);
  ``kill_group(pid, start_time, grace_s)`` - the same for a process recorded earlier (a handle loaded back), only
  while the pid is still the process of that start time; ``decode(data)`` - the one decoding of an output (UTF-8,
  each byte that is not UTF-8 replaced with U+FFFD and counted);
- ``TIMEOUT_RCS`` - the rc of a process its limit ended: 124 (SIGTERM sufficed), 137 (128 + SIGKILL, sent
  ``kill_after_s`` later), as coreutils ``timeout`` gives them. An attached run (runner.run) that timed out raises
  ToolTimeout;
- ``KILLED_RC`` - the rc of a process killed by SIGKILL from outside (state_child.kill past its grace, the OOM killer);
  ``DETACHED_TIMEOUT_RCS`` - the codes that make a sweep's perftest run "timed out";
- ``SIGNALS`` - the signals that interrupt a run: SIGTERM (ansible's task timeout, a killed controller),
  SIGINT (Ctrl-C), SIGHUP (a lost terminal or SSH session);
- ``interrupt_guard(on_signal=None)`` - a context manager: while it is open, each of SIGNALS raises
  ``errors.Interrupted`` ("interrupted by signal N", ``signum`` N) in the main thread, so that ``finally`` blocks
  stop the run's processes; ``guard.ignore()`` ignores them from then on (an impatient second Ctrl-C must not
  skip a cleanup); on exit the previous handlers come back. ``on_signal(signum)`` runs first in the handler
  (the pod entry program stops its children there and exits; k8s_api.guard raises its own Terminated there);
  ``signals`` narrows the set (k8s_api.guard: SIGTERM only). Python runs handlers in the main thread only, so
  outside it the guard installs nothing.

- ``process_stat(pid, root="/proc")`` - ``(state, start_time)`` of a process from ``/proc/<pid>/stat`` (start time in
  clock ticks since boot, field 22: with the pid it names one process, never a later one that reuses the pid), None
  when it is gone or unreadable; ``process_start_time(pid, root="/proc")`` - the start time alone. The one reader of
  that file (run tags, state_child handles, the governor's holders, the controller's run registry).

Controller side (the callback and the report writer):

- ``deliver(signum, handler, frame=None)`` - do what ``handler`` (as ``signal.signal`` returned it) would have done
  with ``signum``: call it, ignore it (SIG_IGN), raise KeyboardInterrupt (SIGINT) or die of it (the default);
- ``chain_handler(signum, before)`` - install a handler that runs ``before(signum)`` and then delivers the signal to
  the handler that was there (the callback writes the report first when Ansible is terminated);
- ``deferred_signals(signals=(SIGINT, SIGTERM))`` - a context manager that holds those signals while its block runs
  and delivers the first one afterwards (a report and its history row are written whole, never half way).

This is the only module of the collection that installs signal handlers, and the only one on a target that starts
a process (besides the burn-in worker script, staged alone: tests/unit/plugins/module_utils/test_proc.py). Standard
library and errors.py only (it ships in the Kubernetes code ConfigMap): no Ansible imports.
"""

from __future__ import annotations

import contextlib
import errno
import os
import re
import signal
import subprocess
import threading
import time

from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import Interrupted

TIMEOUT_RCS = (124, 137)
KILLED_RC = -signal.SIGKILL
DETACHED_TIMEOUT_RCS = TIMEOUT_RCS + (KILLED_RC,)
SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)
KILL_AFTER_S = 10           # a timed-out process's group: SIGTERM, then SIGKILL this long after
C_LOCALE = {"LC_ALL": "C", "LANG": "C"}
SURROGATES_RE = re.compile("[\ud800-\udfff]")
PIPE = subprocess.PIPE
STDOUT = subprocess.STDOUT
PR_SET_PDEATHSIG = 1

__all__ = ("TIMEOUT_RCS", "KILLED_RC", "DETACHED_TIMEOUT_RCS", "SIGNALS", "Interrupted", "interrupt_guard", "deliver",
           "chain_handler", "deferred_signals", "process_stat", "process_start_time", "spawn", "Child", "kill_group",
           "running", "decode", "C_LOCALE", "KILL_AFTER_S", "PIPE", "STDOUT")


def process_stat(pid, root="/proc"):
    """(state, start time in clock ticks since boot) of process ``pid`` from ``<root>/<pid>/stat``, or None."""
    try:
        with open(os.path.join(root, str(pid), "stat"), "rb") as handle:
            data = handle.read(1 << 16)
    except (OSError, ValueError):
        return None
    # the command name (field 2) may hold spaces and parentheses: the fields after it start past the last ')'
    rest = data[data.rfind(b")") + 2:].split()
    try:
        return rest[0].decode("ascii", "replace"), int(rest[19])
    except (IndexError, ValueError):
        return None


def process_start_time(pid, root="/proc"):
    """The start time of process ``pid`` (clock ticks since boot, field 22 of /proc/<pid>/stat), or None."""
    info = process_stat(pid, root)
    return None if info is None else info[1]


# --------------------------------------------------------------------------- the one spawn

def decode(data):
    """(text, count of undecodable bytes): bytes as UTF-8, each byte that is not UTF-8 replaced with U+FFFD.

    A str is taken as decoded with ``surrogateescape`` (what os.environ gives): its lone surrogates are those bytes.
    None gives ("", 0).
    """
    if isinstance(data, bytes):
        data = data.decode("utf-8", "surrogateescape")
    return SURROGATES_RE.subn("\ufffd", data or "")


def kill_group(pid, start_time, grace_s=3.0, leader_only=False):
    """SIGTERM the process group led by ``pid`` (``leader_only``: the leader alone), SIGKILL after ``grace_s``, each
    only while ``pid`` is still the process that started at ``start_time`` (a pid reused since is never signalled;
    without a start time nothing is). True when it was running."""
    if start_time is None or process_start_time(pid) != start_time:
        return False
    for sig, pause in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 2.0)):
        if not _signal_group(pid, sig, leader_only):
            break
        deadline = time.monotonic() + pause
        while time.monotonic() < deadline and running(pid, start_time):
            time.sleep(0.02)
        if not running(pid, start_time):
            break
    return True


def _signal_group(pid, sig, leader_only=False):
    try:
        if leader_only:
            os.kill(pid, sig)
        else:
            os.killpg(pid, sig)
    except OSError as exc:
        if exc.errno == errno.ESRCH:
            return False
        raise
    return True


def running(pid, start_time, root="/proc"):
    """True while the process ``pid`` that started at ``start_time`` exists and is not a zombie."""
    info = process_stat(pid, root)
    return info is not None and info[1] == start_time and info[0] not in ("Z", "X")


_PRCTL = []     # libc's prctl, loaded once (in the parent, never in a forked child)


def _prctl():
    if not _PRCTL:
        try:
            import ctypes       # pylint: disable=import-outside-toplevel  # only where a process is started
            _PRCTL.append(ctypes.CDLL(None, use_errno=True).prctl)
        except (ImportError, OSError, AttributeError):
            _PRCTL.append(None)
    return _PRCTL[0]


def _die_with_parent(sig):
    """A preexec function: the kernel sends ``sig`` to the child once the thread that started it is gone (Linux
    PR_SET_PDEATHSIG), so no process outlives its parent's SIGKILL; None where prctl cannot be reached."""
    prctl = _prctl()
    if prctl is None:
        return None
    parent = os.getpid()

    def preexec():
        prctl(PR_SET_PDEATHSIG, int(sig), 0, 0, 0)
        if os.getppid() != parent:      # the parent died before prctl took effect
            os.kill(os.getpid(), sig)
    return preexec


def spawn(argv, timeout_s, env=None, cwd=None, stdout=PIPE, stderr=PIPE, data=None, kill_after_s=KILL_AFTER_S,
          foreground=False, locale=True):
    """Start ``argv`` (a non-empty list of str, exec'd directly: never a shell) in its own session and process group:
    stdin /dev/null (or the bytes ``data``), ``stdout``/``stderr`` PIPE or an open file descriptor (``stderr``
    STDOUT: merged), the environment this process's plus C_LOCALE (``locale``) plus ``env``. It dies with its parent
    (PR_SET_PDEATHSIG: SIGKILL; SIGTERM for a ``foreground`` launcher, which tears down its own). Its hard limit:
    ``timeout_s`` after the start, SIGTERM to its group (``foreground``: to the launcher alone, whose ssh sessions
    must stay up while it stops its remote ranks), SIGKILL ``kill_after_s`` later (Child.poll/wait/communicate
    enforce it). Returns a Child; OSError when it cannot be started."""
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        raise TypeError("argv must be a non-empty list of str, got %r" % (argv,))
    environ = dict(os.environ)
    if locale:
        environ.update(C_LOCALE)
    environ.update(env or {})
    deathsig = signal.SIGTERM if foreground else signal.SIGKILL
    # preexec_fn in a process with threads (the sweep runner's position answers): it only calls prctl, loaded before
    popen = subprocess.Popen(argv, stdin=PIPE if data is not None else subprocess.DEVNULL, stdout=stdout,  # pylint: disable=subprocess-popen-preexec-fn
                             stderr=stderr, env=environ, cwd=cwd, close_fds=True, start_new_session=True,
                             preexec_fn=_die_with_parent(deathsig))
    return Child(popen, argv, timeout_s, kill_after_s, foreground, data)


class Child(object):
    """A process spawn() started: ``pid``, ``start_time`` (clock ticks since boot: with the pid it names this process
    only), ``started`` (epoch seconds), ``ended`` (epoch seconds, once reaped), ``rc`` and ``timed_out``.

    Its time limit is enforced whenever it is looked at (poll, wait, communicate): past ``timeout_s`` its group gets
    SIGTERM, ``kill_after_s`` later SIGKILL; ``rc`` is then 124 (SIGTERM sufficed) or 137 (SIGKILL was needed), the
    codes of coreutils ``timeout`` (TIMEOUT_RCS). ``kill()`` stops its group from outside (the rc is then the signal's,
    negative)."""

    def __init__(self, popen, argv, timeout_s, kill_after_s=KILL_AFTER_S, foreground=False, data=None):
        self.popen = popen
        self.argv = list(argv)
        self.pid = popen.pid
        self.start_time = process_start_time(popen.pid)
        self.started = time.time()
        self.started_mono = time.monotonic()
        self.limit_s = max(1, int(timeout_s))
        self.deadline = self.started_mono + self.limit_s
        self.kill_after_s = kill_after_s
        self.foreground = foreground
        self.data = data
        self.termed_at = None
        self.timed_out = False
        self.rc = None
        self.ended = None

    def _reaped(self, returncode):
        if self.rc is None and returncode is not None:
            self.ended = time.time()
            if self.timed_out:
                self.rc = 137 if returncode == -signal.SIGKILL else 124
            else:
                self.rc = returncode
        return self.rc

    def _enforce(self):
        """SIGTERM past the deadline, SIGKILL kill_after_s later (see the class docstring)."""
        now = time.monotonic()
        if self.termed_at is None and now >= self.deadline:
            self.timed_out = True
            self.termed_at = now
            self._signal(signal.SIGTERM)
        elif self.termed_at is not None and now >= self.termed_at + self.kill_after_s:
            self._signal(signal.SIGKILL)

    def _signal(self, sig):
        if self.popen.returncode is None:       # not reaped: the pid (and its group's id) is still this child's
            try:
                _signal_group(self.pid, sig, leader_only=self.foreground)
            except OSError:
                pass

    def poll(self):
        """The rc once it ended (reaped), else None; enforces the time limit."""
        if self.rc is None:
            self._enforce()
            self._reaped(self.popen.poll())
        return self.rc

    def wait(self, timeout_s=None, poll_s=0.05):
        """Wait at most ``timeout_s`` (None: until it ended, within its own limit): the rc, or None while it runs."""
        until = None if timeout_s is None else time.monotonic() + max(0.0, timeout_s)
        while self.poll() is None:
            if until is not None and time.monotonic() >= until:
                return None
            time.sleep(poll_s)
        return self.rc

    def communicate(self):
        """Feed ``data``, read its pipes to the end and wait, within its limit: (stdout bytes, stderr bytes). What the
        pipes hold when it is killed is kept; a pipe a leftover descendant still holds open is left after 5 s."""
        out, err = [], []
        first = self.data
        while self.rc is None:
            wait_s = (self.termed_at + self.kill_after_s if self.termed_at is not None else self.deadline) \
                - time.monotonic()
            try:
                got = self.popen.communicate(input=first, timeout=max(0.01, wait_s))
                self._keep(got, out, err)
                self._reaped(self.popen.returncode)
            except subprocess.TimeoutExpired:
                self._enforce()
                if self.termed_at is not None and time.monotonic() >= self.termed_at + self.kill_after_s:
                    self._signal(signal.SIGKILL)
                    self._keep(self._drain(), out, err)
            first = None
        return b"".join(out), b"".join(err)

    def _drain(self):
        """What the pipes still give once the process was killed, at most 5 s (a descendant may hold them)."""
        try:
            got = self.popen.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            self.popen.kill()
            for pipe in (self.popen.stdout, self.popen.stderr):
                if pipe is not None:
                    pipe.close()
            got = (None, None)
        self._reaped(self.popen.wait())
        return got

    @staticmethod
    def _keep(got, out, err):
        if got[0]:
            out.append(got[0])
        if got[1]:
            err.append(got[1])

    def kill(self, grace_s=3.0):
        """Stop its whole group from outside: SIGTERM, SIGKILL after ``grace_s``; True when it was running."""
        if self.poll() is not None:
            return False
        for sig, pause in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 2.0)):
            self._signal(sig)
            if self.wait(pause, poll_s=0.02) is not None:
                break
        return True


class interrupt_guard(object):  # pylint: disable=invalid-name  # used as a function: with interrupt_guard(): ...
    """Signals raise Interrupted while open (see the module docstring); previous handlers restored on exit."""

    def __init__(self, on_signal=None, signals=SIGNALS):
        self.on_signal = on_signal
        self.signals = signals
        self.previous = {}

    def _raise(self, signum, _frame):
        if self.on_signal is not None:
            self.on_signal(signum)
        raise Interrupted("interrupted by signal %d" % signum, signum)

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for sig in self.signals:
                self.previous[sig] = signal.signal(sig, self._raise)
        return self

    def ignore(self):
        """Ignore the guarded signals until the guard closes (cleanup that must run to its end)."""
        for sig in self.previous:
            signal.signal(sig, signal.SIG_IGN)

    def __exit__(self, exc_type, exc, tb):
        for sig, handler in self.previous.items():
            # None: a handler not installed from Python; the default is the nearest we can restore
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)
        self.previous = {}
        return False


def _main_thread():
    return threading.current_thread() is threading.main_thread()


def deliver(signum, handler, frame=None):
    """What ``handler`` (a value signal.signal returned) would have done with ``signum``."""
    if callable(handler):
        return handler(signum, frame)
    if handler == signal.SIG_IGN:
        return None
    if signum == signal.SIGINT:
        raise KeyboardInterrupt()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
    return None


def chain_handler(signum, before):
    """Install a handler of ``signum`` that runs ``before(signum)``, then delivers it to the previous handler
    (main thread only; elsewhere nothing is installed). Returns the previous handler."""
    if not _main_thread():
        return None
    previous = signal.getsignal(signum)

    def on_signal(number, frame):
        before(number)
        return deliver(number, previous, frame)

    signal.signal(signum, on_signal)
    return previous


@contextlib.contextmanager
def deferred_signals(signals=(signal.SIGINT, signal.SIGTERM)):
    """Hold ``signals`` while the block runs, then deliver the first one that came to the handler that was there
    (main thread only)."""
    if not _main_thread():
        yield
        return
    held = []
    previous = {}

    def hold(signum, _frame):
        held.append(signum)

    for signum in signals:
        try:
            previous[signum] = signal.signal(signum, hold)
        except (ValueError, OSError):
            pass
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
        if held:
            deliver(held[0], previous.get(held[0]) if previous.get(held[0]) is not None else signal.SIG_DFL)
