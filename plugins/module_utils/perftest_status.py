# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The sweep runner's directory and its status poll (``phase: status`` of module perftest_sweep), light to start
(private).

The wait (action perftest_sweep, on the controller) runs module perftest_sweep with ``phase: status`` on every host of
the sweep again and again, each a long poll of at most ``poll_s``: at 1000 hosts, thousands of module runs, each
paying its imports on the host. A poll that finds the runner still running needs the runner's directory alone (its
progress, its lease, the dead list, the start moment and the position answers that the controller hands every
runner): this file. The runner itself (perftest_sweep.Sweep: the perftest adapter, its parser, the clients and the
state run) is loaded by the one poll that finds the runner ended, which collects its records and removes what it
left (``Sweep.ended``). The file names, the directory's place and the lease are defined here, once, for the runner and
the poll. Runs on the targets: Python 3.8+, no Ansible imports (``module`` is duck-typed: params, check_mode).
"""

from __future__ import annotations

import os
import socket
import time

from ansible_collections.aifabric.acceptance.plugins.module_utils import state_child, statedir

PROGRESS = "progress.json"
RECORDS = "records.json"
LEASE = "lease"
DEAD = "dead.json"
POSITIONS = "positions.json"
START = "start.json"
STATUS_POLL_S = 0.25   # phase=status long poll (latency of a progress line or of the end, not of a round)


def write_json(directory, name, data):
    statedir.write_json(os.path.join(directory, name), data)


def read_json(directory, name):
    return statedir.read_json(os.path.join(directory, name))


def host_name(p):
    """This host's name in the state root: the inventory's, else the host's own short name."""
    return p["inventory_hostname"] or socket.gethostname().split(".")[0]


def state_paths(p, create):
    """(this host's state root, the run's directory in it): run_id and the state root validated before any path is
    derived from them (issue 9 item 1); the root made when ``create`` (statedir.host_root: hosts sharing a state root
    never see each other's runs)."""
    statedir.check_name(p["run_id"], "run_id")
    root = statedir.host_root(p["state_root"] or statedir.default_root("perftest"), create=create)
    return root, os.path.join(root, p["run_id"])


def sweep_dir(run_dir, p, host):
    """The runner's directory in the run's: one per sweep and host (refused when the name would leave it)."""
    statedir.check_name(p["sweep_name"], "sweep_name")
    return statedir.contained(run_dir, os.path.join(run_dir, "sweep-%s-%s" % (p["sweep_name"], host)))


def touch_lease(here):
    """Renew the runner's lease (the file's mtime): a runner whose lease is older than ``lease_s`` stops."""
    path = os.path.join(here, LEASE)
    if not os.path.lexists(path):
        os.close(statedir.open_new(path))
    os.utime(path, None, follow_symlinks=False)


def _hand_over(here, p, poll):
    """What the controller hands every runner with each poll: the hosts it declared unreachable, the moment to
    begin (when the runner has none yet) and the runners' positions."""
    if poll.get("dead_hosts"):
        known = read_json(here, DEAD) or {}
        new = dict((h, w) for h, w in poll["dead_hosts"].items() if h not in known)
        if new:
            known.update(new)
            write_json(here, DEAD, known)
    if p["start_at"] and read_json(here, START) is None:
        write_json(here, START, {"start_at": p["start_at"]})
    if poll.get("positions"):
        write_json(here, POSITIONS, {"time": time.time(), "positions": poll["positions"]})


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


def poll(module, ended):
    """One status poll: renew the lease, hand over what the controller sent, and answer after ``wait_s`` (the
    runner's progress) or when the runner ended: ``ended(here, progress, handed)``, the runner's records and cleanup
    (perftest_sweep.Sweep.ended; the module loads it for that poll alone)."""
    p = module.params
    _root, run_dir = state_paths(p, create=not module.check_mode)
    here = sweep_dir(run_dir, p, host_name(p))
    if statedir.check_own(here, "sweep directory") is None:
        # the runner has not created its directory yet (just started), or it is long gone: the wait action
        # decides, from how long this lasts
        return dict(changed=False, results=[], finished=False, missing=True,
                    progress={"next_step": p["first_step"], "pairs_done": 0, "failing": 0})
    touch_lease(here)
    handed = p.get("_poll") or {}     # what the controller's wait hands every runner (action perftest_sweep)
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
    return ended(here, prog, handed)
