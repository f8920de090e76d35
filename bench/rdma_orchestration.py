# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Orchestration efficiency of playbooks/rdma.yml: measured wall time against the ideal.

Brings up N fake bare hosts (network namespaces with their own sshd, the
integration-test harness tests/integration/netns.py), puts the fake ib_write_bw
(tests/integration/fake_perftest/) first on their PATH with a fixed test duration
T, runs ``ansible-playbook playbooks/rdma.yml`` in mode ``all`` over real SSH, and
compares the wall time of the rounds with the ideal ``rounds x T`` (the time the
fabric itself would need).

Since issue 13 every host runs its whole schedule itself (module perftest_sweep, one
runner per host, started with async and polled): the controller's tasks no longer
depend on the number of rounds. The span measured is the one the issue defines: from
the first server listening (the fake's log) to the last record collected (the moment
the wait task has returned on every host, i.e. the next task's header appears in the
output). ``efficiency = rounds x T / span``.

Needs root (network namespaces). Run from the collection root, the collection
importable, e.g.:

    PYTHONPATH=/tmp/at python bench/rdma_orchestration.py --hosts 8 12 --duration 3
Prints one JSON line per fleet size; writes them to bench/results/rdma_orchestration.jsonl.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
import time

from ansible_collections.aifabric.acceptance.tests.integration import netns
from ansible_collections.aifabric.acceptance.tests.integration.conftest import Controller
from ansible_collections.aifabric.acceptance.tests.integration.test_rdma_fleet import (
    assert_no_host_in_two_steps_at_once, events, prepare)
from ansible_collections.aifabric.acceptance.tests.integration.test_ssh_fleet import finish, load_report, start

MARKERS = ("TASK [Start my runner", "TASK [Wait for every runner")
AFTER_WAIT = "TASK [Forget the finished async job"   # the task after the wait: printed once every wait returned
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class _Path(str):
    """Enough of pathlib for prepare(): tmp_path / "name"."""

    def __truediv__(self, other):
        return _Path(os.path.join(self, other))


def one(n, duration, devices, forks, poll_s=None, position_port=None):
    controller = Controller()
    problems = controller.problems() + netns.missing_prerequisites()
    if problems:
        raise SystemExit("cannot run: " + "; ".join(problems))
    work = _Path(tempfile.mkdtemp(prefix="rdma-bench-"))
    with netns.Fleet(n) as fleet:
        inventory, extra, log = prepare(fleet, work, {"default": {"duration_s": duration}},
                                        devices=["mlx5_%d" % i for i in range(devices)],
                                        perftest=dict(({} if poll_s is None else {"poll_s": poll_s}),
                                                      **({} if position_port is None else {"position_port": position_port})))
        out = os.path.join(work, "ansible-playbook.log")
        env = controller.env(fleet, os.path.join(work, "reports"), extra={"ANSIBLE_FORKS": str(forks)})
        started = time.monotonic()
        proc = start(fleet, controller.playbook_argv("playbooks/rdma.yml", inventory, "-e", extra), env, out, REPO)
        collected = None
        seen = {}
        while proc.poll() is None and time.monotonic() - started < 3600:
            if collected is None:
                with open(out) as handle:
                    text = handle.read()
                for marker in MARKERS:
                    if marker not in seen and marker in text:
                        seen[marker] = time.time()
                if AFTER_WAIT in text:
                    collected = time.time()
            time.sleep(0.05)
        rc = finish(proc, 60, out)
        wall = time.monotonic() - started
        if rc != 0:
            raise SystemExit("ansible-playbook failed (rc %d), see %s" % (rc, out))
        report = load_report(os.path.join(work, "reports"), out)[1]
        records = report["records"] if isinstance(report, dict) else report
        clients = [r for r in records if r["check"] == "rdma.ib_write_bw"]
        evs = events(log)
        try:
            # what the figures are worth: no host took part in two tests at once
            assert_no_host_in_two_steps_at_once(evs, base_port=18515, devices=devices)
            overlap = None
        except AssertionError as exc:
            overlap = str(exc)[:300]
        shutil.copy(log, os.path.join(work, "fake_perftest.log"))
        servers = [e["time"] for e in evs if e["role"] == "server" and e["event"] == "listening"]
        finished = [e["time"] for e in evs if e["event"] == "finished"]
        rounds = n - 1 if n % 2 == 0 else n
        ideal = rounds * duration
        span = (collected - min(servers)) if servers and collected else None
        with open(out) as handle:
            text = handle.read()
        tasks = len(re.findall(r"^TASK \[", text, flags=re.M))
        progress = len(re.findall(r"^rdma ib_write_bw round \d+/\d+: ", text, flags=re.M))
    return {
        "hosts": n, "devices_per_host": devices, "forks": forks, "test_duration_s": duration, "poll_s": poll_s,
        "rounds": rounds, "controller_tasks": tasks, "progress_lines": progress, "pairs_measured": len(clients),
        "last_fake_finished_s": None if not servers or not finished else round(max(finished) - min(servers), 1),
        "pairs_pass": sum(1 for r in clients if r["status"] == "pass"),
        "ideal_s": ideal,
        # the controller's fixed cost: starting one runner per host (one async task), and from the last test
        # done to every record collected
        "start_runners_task_s": round(seen[MARKERS[1]] - seen[MARKERS[0]], 1) if len(seen) == 2 else None,
        "collect_after_last_test_s": round(collected - max(finished), 1) if collected and finished else None,
        "rounds_span_s": None if span is None else round(span, 1),
        "playbook_wall_s": round(wall, 1),
        "overhead_per_round_s": None if span is None else round((span - ideal) / rounds, 2),
        "efficiency": None if span is None else round(ideal / span, 3),
        "host_in_two_tests_at_once": overlap,
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--hosts", type=int, nargs="+", default=[4, 8])
    parser.add_argument("--duration", type=float, default=3.0, help="fake test duration T in seconds")
    parser.add_argument("--devices", type=int, default=1, help="rails per host (run at once)")
    parser.add_argument("--forks", type=int, default=50)
    parser.add_argument("--poll", type=float, default=None, help="rdma_perftest.poll_s (default: the module's)")
    parser.add_argument("--position-port", type=int, default=None,
                        help="rdma_perftest.position_port (0: the runners' position answers off; default: the module's)")
    args = parser.parse_args(argv)
    for n in args.hosts:
        result = one(n, args.duration, args.devices, args.forks, args.poll, args.position_port)
        result["position_port"] = args.position_port
        print(json.dumps(result, sort_keys=True))
        sys.stdout.flush()
        os.makedirs(os.path.join(REPO, "bench", "results"), exist_ok=True)
        with open(os.path.join(REPO, "bench", "results", "rdma_orchestration.jsonl"), "a") as handle:
            handle.write(json.dumps(dict(result, date=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
