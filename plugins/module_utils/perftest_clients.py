# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""perftest's SSH-path client round (private): one client per device at once, re-started while its server does not
listen yet, and the collection of a server's outcome (a state_child of the runner).

The per-host sweep runner (perftest_sweep.py, the one RDMA protocol) runs a step of its schedule with these:

- its servers: one server per device, the runner's own child (TCP port ``port + i`` for the i-th device,
  state_child.start);
- ``run_clients`` here starts one client per device at once, waits for all, and
  re-starts a client whose server does not answer yet (the adapter's read_output: its one retry decision, from the
  parse the record reuses) until ``connect_timeout_s`` (longer while ``keep_waiting`` says the server's
  host is only late: the sweep runner asks that host's runner, see perftest_sweep); any other
  failure is final.

The argv of each side, the GID and GPU choice per rail and the records (with their built-in expectations) are the
tool adapter's (tools/perftest_sweep.py), which the Kubernetes planner and pod program use as well.
Runs on the targets: Python 3.8+, no Ansible imports.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.aifabric.acceptance.plugins.module_utils import results, state_child
from ansible_collections.aifabric.acceptance.plugins.module_utils.proc import DETACHED_TIMEOUT_RCS
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import perftest_sweep as adapter

INSTALL_HINT = "install perftest (Debian/Ubuntu: apt-get install perftest; RHEL: dnf install perftest), " \
               "or role aifabric.acceptance.perftest"
VERSION_RE = re.compile(r"Version:\s*(\S+)")


def parse_version(text):
    match = VERSION_RE.search(text or "")
    return match.group(1) if match else None


# --------------------------------------------------------------------------- orchestration

@dataclass(eq=False)
class Job:
    """One device of one side: its argv, state directory and current handle."""

    index: int
    device: Optional[str]
    tcp_port: Optional[int]
    argv: List[str]
    state_dir: str
    facts: Dict[str, Any]
    handle: Optional[Dict[str, Any]] = None
    attempts: int = 0
    started: Optional[str] = None
    started_mono: Optional[float] = None
    result: Optional[Tuple[str, Optional[int], bool]] = None  # (text, rc, timed_out)
    reading: Optional[adapter.Reading] = None   # result's text read once (its retry decision; the record reuses it)


def text_of(handle):
    """stdout then stderr of a started process, as one text."""
    out, err = state_child.read(handle)
    if err and out and not out.endswith("\n"):
        out += "\n"
    return out + err


def run_clients(jobs, timeout_s, connect_timeout_s, retry_delay_s, env=None, poll_s=0.1,
                start=None, started=None, give_up=None, keep_waiting=None, ready=None, tick=None):
    """Run every client job at once; re-start those whose server is not listening yet.

    Returns nothing; sets job.result = (text, rc, timed_out) and job.attempts. ``started(handle)`` is called
    with every attempt's handle (the sweep runner keeps them to stop them on every path); ``give_up()``, when
    given, is asked before each re-start: True stops the retries (the server's host was found dead);
    ``keep_waiting()``, asked when ``connect_timeout_s`` has passed, True gives another ``connect_timeout_s``
    (the server's host is alive and still busy with an earlier step; the caller bounds how often it says so: the
    sweep runner's LagBound); ``ready(wait_s)``, when given, waits at
    most ``wait_s`` for word that the server listens (True): a refused client then re-starts at once instead of
    after ``retry_delay_s`` (the sweep runner's notice, see perftest_sweep); ``tick()``, when given, is called
    once per poll (the sweep runner checks its lease there: what it raises ends the wait, the caller stops the
    clients).
    """
    clients = _ClientRound(jobs, connect_timeout_s, retry_delay_s, give_up=give_up, keep_waiting=keep_waiting,
                           ready=ready)
    launch = start or state_child.start

    def start_attempt(job):
        job.attempts += 1
        attempt_dir = os.path.join(job.state_dir, "attempt-%d" % job.attempts)
        job.handle = launch(job.argv, timeout_s, attempt_dir, env=env)
        if started is not None:
            started(job.handle)

    while clients.pending:
        if tick is not None:
            tick()
        clients.poll(start_attempt)
        if clients.pending:
            time.sleep(poll_s)


class _ClientRound(object):
    """The clients of one round still waited for, when each may re-start, and until when a refused one does."""

    def __init__(self, jobs, connect_timeout_s, retry_delay_s, give_up=None, keep_waiting=None, ready=None):
        self.connect_timeout_s = connect_timeout_s
        self.retry_delay_s = retry_delay_s
        self.give_up = give_up
        self.keep_waiting = keep_waiting
        self.ready = ready
        self.deadline = time.monotonic() + connect_timeout_s
        self.pending = list(jobs)
        for job in self.pending:
            job.started = results.utc_now()
            job.started_mono = time.monotonic()
        self.retry_at = dict((id(job), time.monotonic()) for job in self.pending)

    def poll(self, start_attempt):
        """One look at every pending client: start those due, settle those that ended."""
        now = time.monotonic()
        for job in list(self.pending):
            if job.handle is None:
                if now >= self.retry_at[id(job)]:
                    start_attempt(job)
                continue
            outcome = state_child.outcome(job.handle)
            if outcome is None:
                continue
            text = text_of(job.handle)
            rc = outcome.get("rc")
            timed_out = rc in DETACHED_TIMEOUT_RCS
            reading = adapter.read_output(text, rc, timed_out)     # the one retry decision, from the one parse
            if reading.retry and self.may_retry():
                self.retry_later(job)
                continue
            job.result, job.reading = (text, rc, timed_out), reading
            self.pending.remove(job)

    def may_retry(self):
        """Whether a refused client re-starts: not when its server's host is gone, nor past the deadline (which
        ``keep_waiting`` may push back once more)."""
        if self.give_up is not None and self.give_up():
            return False
        if self.keep_waiting is not None and time.monotonic() + self.retry_delay_s >= self.deadline \
                and self.keep_waiting():
            self.deadline = time.monotonic() + self.connect_timeout_s
        return time.monotonic() + self.retry_delay_s < self.deadline

    def retry_later(self, job):
        job.handle = None
        self.retry_at[id(job)] = time.monotonic() + self.retry_delay_s
        if self.ready is not None and self.ready(self.retry_delay_s):
            self.retry_at[id(job)] = time.monotonic()


def collect(job, wait_s):
    """Wait for a server (bounded), kill it if still running. Returns (text, rc, timed_out, killed)."""
    handle = job.handle
    outcome = state_child.wait(handle, wait_s)
    killed = False
    if outcome is None:
        killed = state_child.kill(handle)
        outcome = state_child.outcome(handle) or {"rc": None}     # None: it outlived its SIGKILL (uninterruptible)
    rc = outcome.get("rc")
    return text_of(handle), rc, rc in DETACHED_TIMEOUT_RCS and not killed, killed
