# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Orchestration efficiency of playbooks/rdma.yml: measured wall time against the ideal.

Brings up N fake bare hosts (network namespaces with their own sshd, the
integration-test harness tests/integration/netns.py), puts the fake ib_write_bw
(tests/integration/fake_perftest/) first on their PATH with a fixed test duration
T, runs ``ansible-playbook playbooks/rdma.yml`` in mode ``all`` over real SSH, and
compares the wall time of the rounds with the ideal ``rounds x T`` (the time the
fabric itself would need). The overhead per round is what the three steps (start
servers, run clients, collect) cost in Ansible round trips.

Needs root (network namespaces). Run from the collection root, the collection
importable, e.g.:

    PYTHONPATH=/tmp/at python bench/rdma_orchestration.py --hosts 4 8 --duration 3
Prints one JSON line per fleet size; writes them to bench/results/rdma_orchestration.jsonl.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import tempfile
import time

from ansible_collections.aifabric.acceptance.tests.integration import netns
from ansible_collections.aifabric.acceptance.tests.integration.conftest import Controller
from ansible_collections.aifabric.acceptance.tests.integration.test_rdma_fleet import events, prepare
from ansible_collections.aifabric.acceptance.tests.integration.test_ssh_fleet import finish, load_report, start

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class _Path(str):
    """Enough of pathlib for prepare(): tmp_path / "name"."""

    def __truediv__(self, other):
        return _Path(os.path.join(self, other))


def one(n, duration, devices, forks):
    controller = Controller()
    problems = controller.problems() + netns.missing_prerequisites()
    if problems:
        raise SystemExit("cannot run: " + "; ".join(problems))
    work = _Path(tempfile.mkdtemp(prefix="rdma-bench-"))
    with netns.Fleet(n) as fleet:
        inventory, extra, log = prepare(fleet, work, {"default": {"duration_s": duration}},
                                        devices=["mlx5_%d" % i for i in range(devices)])
        out = os.path.join(work, "ansible-playbook.log")
        env = controller.env(fleet, os.path.join(work, "reports"), extra={"ANSIBLE_FORKS": str(forks)})
        started = time.monotonic()
        proc = start(fleet, controller.playbook_argv("playbooks/rdma.yml", inventory, "-e", extra), env, out, REPO)
        rc = finish(proc, 3600, out)
        wall = time.monotonic() - started
        if rc != 0:
            raise SystemExit("ansible-playbook failed (rc %d), see %s" % (rc, out))
        report = load_report(os.path.join(work, "reports"), out)[1]
        records = report["records"] if isinstance(report, dict) else report
        clients = [r for r in records if r["check"] == "rdma.ib_write_bw"]
        evs = events(log)
        servers = [e["time"] for e in evs if e["role"] == "server" and e["event"] == "listening"]
        finished = [e["time"] for e in evs if e["event"] == "finished"]
        rounds = n - 1 if n % 2 == 0 else n
        ideal = rounds * duration
        span = (max(finished) - min(servers)) if servers and finished else None
        with open(out) as handle:
            plays = len(re.findall(r"^TASK \[Start the servers", handle.read(), flags=re.M))
    return {
        "hosts": n, "devices_per_host": devices, "forks": forks, "test_duration_s": duration,
        "rounds": rounds, "round_tasks_seen": plays, "pairs_measured": len(clients),
        "pairs_pass": sum(1 for r in clients if r["status"] == "pass"),
        "ideal_s": ideal,
        "rounds_span_s": None if span is None else round(span, 1),
        "playbook_wall_s": round(wall, 1),
        "overhead_per_round_s": None if span is None else round((span - ideal) / rounds, 2),
        "efficiency": None if span is None else round(ideal / span, 3),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--hosts", type=int, nargs="+", default=[4, 8])
    parser.add_argument("--duration", type=float, default=3.0, help="fake test duration T in seconds")
    parser.add_argument("--devices", type=int, default=1, help="rails per host (run at once)")
    parser.add_argument("--forks", type=int, default=50)
    args = parser.parse_args(argv)
    for n in args.hosts:
        result = one(n, args.duration, args.devices, args.forks)
        print(json.dumps(result, sort_keys=True))
        sys.stdout.flush()
        os.makedirs(os.path.join(REPO, "bench", "results"), exist_ok=True)
        with open(os.path.join(REPO, "bench", "results", "rdma_orchestration.jsonl"), "a") as handle:
            handle.write(json.dumps(dict(result, date=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
