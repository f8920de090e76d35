# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The sweep runner's directory and its status poll (``phase: status`` of module perftest_sweep), light to start
(private).

The wait (action perftest_sweep, on the controller) runs module perftest_sweep with ``phase: status`` on every host of
the sweep again and again, each a long poll of at most ``poll_s``: at 1000 hosts, thousands of module runs, each
paying its imports on the host. A poll needs the runner's directory (its progress, its lease, the dead list, the
start moment and the position answers that the controller hands every runner) and, the poll that finds the runner
ended, its records file and the state's cleanup (PerftestRun: the state root, stop_and_remove, the governor): this
file, never the runner itself (perftest_sweep.Sweep, which builds on SweepState: the perftest adapter, its parser,
the clients). The file names, the directory's place and the lease are defined here, once, for the runner and the
poll. Runs on the targets: Python 3.8+, no Ansible imports (``module`` is duck-typed: params, check_mode, warn).

The poll that finds the runner ended keeps its answer (the records and the runner's progress) in a directory of its
own (``answer-<sweep>-<host>`` in the run's, ANSWER) before it removes the runner's: an answer lost on the way (the
poll past its bound under load, a connection that dropped) is given again by the next poll of the same wait (the
same runner's job id, or without one a wait that has seen its runner: a wait for a runner not started yet never gets
an earlier runner's answer), not lost with the runner's files. A runner's start removes what an earlier runner of its sweep kept; the
run's cleanup (module cleanup, ``perftest_state``: the rdma role's last task) removes the rest with the run's state.
"""

from __future__ import annotations

import os
import time

from ansible_collections.aifabric.acceptance.plugins.module_utils import state_child, statedir
from ansible_collections.aifabric.acceptance.plugins.module_utils.perftest_run import PerftestRun

PROGRESS = "progress.json"
RECORDS = "records.json"
LEASE = "lease"
DEAD = "dead.json"
POSITIONS = "positions.json"
START = "start.json"
ANSWER = "answer.json"      # in the answer directory (SweepState.answer_dir)
STATUS_POLL_S = 0.25   # phase=status long poll (latency of a progress line or of the end, not of a round)


def write_json(directory, name, data):
    statedir.write_json(os.path.join(directory, name), data)


def read_json(directory, name):
    return statedir.read_json(os.path.join(directory, name))


def _hand_over(here, p, handed):
    """What the controller hands every runner with each poll: the hosts it declared unreachable, the moment to
    begin (when the runner has none yet) and the runners' positions."""
    if handed.get("dead_hosts"):
        known = read_json(here, DEAD) or {}
        new = dict((h, w) for h, w in handed["dead_hosts"].items() if h not in known)
        if new:
            known.update(new)
            write_json(here, DEAD, known)
    if p["start_at"] and read_json(here, START) is None:
        write_json(here, START, {"start_at": p["start_at"]})
    if handed.get("positions"):
        write_json(here, POSITIONS, {"time": time.time(), "positions": handed["positions"]})


def _running(here, prog):
    """Whether the runner is still at work: its process alive, or (no word from it yet) its directory made less
    than a minute ago."""
    if not prog:
        # not started yet, or killed before its first word: give it a minute
        try:
            return time.time() - os.lstat(here).st_mtime < 60
        except OSError:
            return False
    handle = {"pid": prog.get("pid"), "proc_start_time": prog.get("proc_start_time")}
    return bool(prog.get("pid")) and state_child.alive(handle)


class SweepState(PerftestRun):
    """The runner's directory on its host: its place, its lease, the status poll, and what the poll that finds the
    runner ended does (its records, the removal of what it left). perftest_sweep.Sweep, the runner, builds on it."""

    def sweep_dir(self):
        """The runner's directory in the run's: one per sweep and host (refused when the name would leave it)."""
        statedir.check_name(self.p["sweep_name"], "sweep_name")
        return self.inside("sweep-%s-%s" % (self.p["sweep_name"], self.host))

    def lease_touch(self):
        """Renew the runner's lease (the file's mtime): a runner whose lease is older than ``lease_s`` stops."""
        path = os.path.join(self.sweep_dir(), LEASE)
        if not os.path.lexists(path):
            os.close(statedir.open_new(path))
        os.utime(path, None, follow_symlinks=False)

    def status(self):
        """phase=status: one poll."""
        return poll(self.module, self)

    def answer_dir(self):
        """Where the poll that found the runner ended keeps its answer (until the next runner of its sweep starts, or
        the run's cleanup)."""
        statedir.check_name(self.p["sweep_name"], "sweep_name")
        return self.inside("answer-%s-%s" % (self.p["sweep_name"], self.host))

    def ended(self, here, prog, handed):
        """The answer of the poll (``poll``: the state opened) that found the runner ended: its records, and what it
        left removed (its own async job file too, when the controller named it). The records and progress are kept
        (answer_dir) before anything is removed: a poll whose answer is lost gives them again (``given_again``)."""
        p = self.p
        records = read_json(here, RECORDS)
        if records is None:
            from ansible_collections.aifabric.acceptance.plugins.module_utils import results

            records = [results.error("rdma.sweep", "the runner of %s ended without its records (killed?); "
                                     "what it measured is lost" % self.host, host=self.host, target=p["sweep_name"])]
        if not self.module.check_mode:
            # with the runner's job id (when the wait names it): the answer is given again to that runner's wait only
            write_json(self.make_dir(self.answer_dir()), ANSWER, {
                "results": records, "progress": prog, "jid": str((handed.get("job") or {}).get("jid") or "")})
        removed = self.cleanup(here)
        answer = dict(changed=True, results=records, finished=True, progress=prog, removed=removed)
        self._forget_job(answer, handed)
        return answer

    def given_again(self, handed):
        """The answer kept by the poll that found the runner ended, given again to that runner's wait (its answer
        was lost on the way), or None: the same records and progress, its job file forgotten (removed by the first,
        or now). The wait's runner: the same job id where both the wait and the kept answer name one (the first poll
        of a wait may be the lost one), else a wait that has seen its runner (``handed["seen"]``) - never an earlier
        runner's answer to a wait whose runner has not started yet."""
        kept = self.answer_dir()
        if statedir.check_own(kept, "answer directory") is None:
            return None
        data = statedir.read_json(os.path.join(kept, ANSWER), private=True)
        if not isinstance(data, dict) or not isinstance(data.get("results"), list):
            return None
        jid, kept_jid = str((handed.get("job") or {}).get("jid") or ""), str(data.get("jid") or "")
        if not ((jid == kept_jid) if (jid and kept_jid) else handed.get("seen")):
            return None
        answer = dict(changed=True, results=data["results"], finished=True, progress=data.get("progress") or {},
                      removed=[], given_again=True)
        self._forget_job(answer, handed, again=True)
        return answer

    def _forget_job(self, answer, handed, again=False):
        job = handed.get("job") or {}
        if job.get("jid"):
            answer["job_file"] = self.forget_job(str(job["jid"]), str(job.get("async_dir") or "~/.ansible_async"),
                                                 job.get("wait_s"), again)

    @staticmethod
    def forget_job(jid, async_dir, wait_s=None, again=False):
        """Remove the runner's own async job file, in this last poll (what a task of its own on every host did),
        waiting for async_wrapper's file ``wait_s`` (the action's, within the poll's bound), async_job.FILE_WAIT_S at
        most: ``{"erased": path}`` or ``{"error": why}`` (``again``: a poll giving its answer again - a file that is no
        longer there was removed by the first)."""
        if not statedir.NAME_RE.match(jid):     # joined to the job directory: never a path outside it
            return {"error": "jid %.100r is not a job id" % jid}
        from ansible_collections.aifabric.acceptance.plugins.module_utils import async_job   # the last poll alone
        wait = async_job.FILE_WAIT_S if wait_s is None else min(async_job.FILE_WAIT_S, max(0.0, float(wait_s)))
        return async_job.forget(jid, async_dir, wait, again)

    def cleanup(self, here):
        """Kill and remove whatever this runner's steps left (their directories), then the runner's own; only what
        the collection made (stop_and_remove): anything else is left and reported (module warning)."""
        prefix = os.path.basename(here)
        removed, left = [], []
        run_dir = self.own_run_dir(left)
        for name in sorted(os.listdir(run_dir)) if run_dir else []:
            if name == prefix or name.startswith(prefix + "-"):
                self.stop_and_remove(self.inside(name), removed, left, remove=not self.p["keep_state"])
        for why in left:
            self.module.warn(why)
        self.governor.reconcile()
        self._remove_empty_run_dir()
        return removed


def poll(module, sweep=None):
    """One status poll (``sweep``, else a SweepState of the module): renew the lease, hand over what the controller
    sent, and answer after ``wait_s`` (the runner's progress) or when the runner ended (its records, ``ended``)."""
    sweep = sweep or SweepState(module)
    p = sweep.p
    sweep.open_state()
    handed = p.get("_poll") or {}     # what the controller's wait hands every runner (action perftest_sweep)
    here = sweep.sweep_dir()
    if statedir.check_own(here, "sweep directory") is None:
        again = sweep.given_again(handed)
        if again is not None:
            return again
        # the runner has not created its directory yet (just started), or it is long gone: the wait action
        # decides, from how long this lasts
        return dict(changed=False, results=[], finished=False, missing=True,
                    progress={"next_step": p["first_step"], "pairs_done": 0, "failing": 0})
    sweep.here = here
    sweep.lease_touch()
    _hand_over(here, p, handed)
    # long poll: answer when the runner ended, or after wait_s. Not at every step: the polls of every host would
    # then come at the round boundaries, all at once, where the next pairs start (their CPU, on the critical
    # path; at 1000 hosts, 1000 module runs per round on the controller). The round lines come with the polls.
    until = time.monotonic() + max(0.0, float(handed.get("wait_s") or 0))
    while True:
        prog = read_json(here, PROGRESS) or {}
        if prog.get("finished") or not _running(here, prog):
            break
        if time.monotonic() >= until:
            return dict(changed=False, results=[], finished=False, progress=prog)
        time.sleep(STATUS_POLL_S)
    return sweep.ended(here, prog, handed)
