# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The process layer's shared parts: exit-code constants and the one interrupt guard (private).

- ``TIMEOUT_RCS`` - what coreutils ``timeout`` exits with when it ended the tool: 124 (the limit was hit and
  SIGTERM sufficed), 137 (128 + SIGKILL, sent ``--kill-after`` seconds later). An attached run (runner.run)
  with one of these raises ToolTimeout;
- ``KILLED_RC`` - the exit code detached.py records when the ``timeout`` wrapper itself died of SIGKILL
  (detached.kill, the supervisor's owner gone, the OOM killer); ``DETACHED_TIMEOUT_RCS`` - the codes that make
  a detached run "timed out" (the perftest servers and clients);
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
  that file (run tags, detached processes, the governor's holders, the controller's run registry).

Controller side (the callback and the report writer):

- ``deliver(signum, handler, frame=None)`` - do what ``handler`` (as ``signal.signal`` returned it) would have done
  with ``signum``: call it, ignore it (SIG_IGN), raise KeyboardInterrupt (SIGINT) or die of it (the default);
- ``chain_handler(signum, before)`` - install a handler that runs ``before(signum)`` and then delivers the signal to
  the handler that was there (the callback writes the report first when Ansible is terminated);
- ``deferred_signals(signals=(SIGINT, SIGTERM))`` - a context manager that holds those signals while its block runs
  and delivers the first one afterwards (a report and its history row are written whole, never half way).

This is the only module of the collection that installs signal handlers. Standard library and errors.py only
(it ships in the Kubernetes code ConfigMap): no Ansible imports.
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading

from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import Interrupted

TIMEOUT_RCS = (124, 137)
KILLED_RC = -signal.SIGKILL
DETACHED_TIMEOUT_RCS = TIMEOUT_RCS + (KILLED_RC,)
SIGNALS = (signal.SIGTERM, signal.SIGINT, signal.SIGHUP)

__all__ = ("TIMEOUT_RCS", "KILLED_RC", "DETACHED_TIMEOUT_RCS", "SIGNALS", "Interrupted", "interrupt_guard", "deliver",
           "chain_handler", "deferred_signals", "process_stat", "process_start_time")


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
