# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The bound the perftest_sweep action puts on every call to a host (issue 18, item 11), on real processes.

A call to a silent host over SSH blocks in one of two places: reading from its SSH client, or writing the module
into a pipe whose reader (the ControlMaster the client handed its stdin to) no longer reads. Both are reproduced
here with real pipes and processes; the fleet test (tests/integration/test_rdma_silent_host.py) does it over SSH.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from ansible_collections.aifabric.acceptance.plugins.plugin_utils.bounded_call import KILL_GRACE_S, Silent, bounded, holders
from ansible_collections.aifabric.acceptance.tests.unit.helpers import alive

pytestmark = pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs Linux /proc")

BIG = b"x" * (4 << 20)      # far more than a pipe holds: the write blocks while nobody reads


def gone_within(pid, limit_s=5):
    deadline = time.monotonic() + limit_s
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not alive(pid)


def test_an_answer_in_time_is_returned_and_an_error_raised_as_it_is():
    assert bounded(5, lambda: 42) == 42
    with pytest.raises(KeyError):
        bounded(5, lambda: {}["missing"])


def test_a_call_blocked_reading_from_its_client_is_stopped():
    started = {}

    def call():
        proc = subprocess.Popen(["sleep", "600"], stdout=subprocess.PIPE)
        started["pid"] = proc.pid
        try:
            return proc.stdout.read()       # the client never answers
        finally:
            proc.stdout.close()
            proc.wait()

    t0 = time.monotonic()
    with pytest.raises(Silent, match="no answer within 1 s") as caught:
        bounded(1, call)
    assert not caught.value.stuck
    assert time.monotonic() - t0 < 6
    assert gone_within(started["pid"])


def test_a_write_into_a_pipe_held_by_a_process_that_is_not_a_child_is_stopped(tmp_path):
    """The SSH mux case: the direct child exits at once, a process it left behind (as ssh hands its stdin to the
    ControlMaster) holds the pipe and never reads. Killing children would not end the write; the holder is killed."""
    pidfile = tmp_path / "holder.pid"
    detach = ("import os, sys, time\n"
              "if os.fork():\n"
              "    os._exit(0)\n"
              "open(sys.argv[1], 'w').write(str(os.getpid()))\n"
              "time.sleep(600)\n")

    def call():
        proc = subprocess.Popen([sys.executable, "-c", detach, str(pidfile)], stdin=subprocess.PIPE)
        proc.wait()                         # the direct child is gone before the write
        with proc.stdin:
            proc.stdin.write(BIG)

    with pytest.raises(Silent) as caught:
        bounded(2, call)
    assert not caught.value.stuck
    holder = int(pidfile.read_text())
    assert gone_within(holder)


def test_a_call_that_cannot_be_stopped_says_so():
    """Blocked on nothing a process holds (here: an event never set): no pipe to cut, the call is reported stuck, so
    that no further call is made over its connection."""
    never = threading.Event()
    t0 = time.monotonic()
    with pytest.raises(Silent, match="could not be stopped") as caught:
        bounded(0.5, never.wait)
    assert caught.value.stuck
    assert time.monotonic() - t0 < 0.5 + KILL_GRACE_S + 2
    never.set()


def test_the_holders_of_a_pipe_are_the_other_processes_that_have_it_open():
    """holders() of no pipe is nobody; of this process's own pipe, only the other process holding it."""
    assert holders(set()) == set()
    proc = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    try:
        target = os.readlink("/proc/self/fd/%d" % proc.stdin.fileno())
        assert holders({target}) == {proc.pid}
    finally:
        proc.stdin.close()
        proc.wait(timeout=10)


def test_an_interrupted_wait_stops_the_call_too():
    """A task timeout (SIGALRM in the worker's main thread) or Ctrl-C during the wait: what the call started is killed
    before the interruption goes on."""
    started = {}

    class Interrupt(BaseException):
        pass

    def call():
        proc = subprocess.Popen(["sleep", "600"], stdout=subprocess.PIPE)
        started["pid"] = proc.pid
        try:
            return proc.stdout.read()
        finally:
            proc.stdout.close()
            proc.wait()

    def on_alarm(_signum, _frame):
        raise Interrupt()

    previous = signal.signal(signal.SIGALRM, on_alarm)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.5)
        with pytest.raises(Interrupt):
            bounded(30, call)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert gone_within(started["pid"])
