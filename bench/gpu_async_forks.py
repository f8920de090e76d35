# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU stage's wall time against ceil(N / forks), with and without gpu_async (docs/scale-model.md).

On the SSH fleet of network-namespace hosts (tests/integration/netns.py), `ansible-playbook playbooks/gpu.yml`
with gpu_checks [gemm] and gpu_run_probe false (as acceptance.yml runs the stage), the GEMM's Python a stand-in that
sleeps --tool-s seconds and then runs the hosts' python3 (no PyTorch there: the GEMM worker says so at once, a skip
record). So each host's GEMM takes --tool-s, as a real one takes its run: without async the stage takes about
ceil(N / forks) x that; with it, one x that plus the controller's starts and polls.

Needs root (network namespaces). Run from the collection root, the collection importable:

    PYTHONPATH=/tmp/aif-dev .venv/bin/python bench/gpu_async_forks.py            # --sizes 8 16 --forks 4 --tool-s 10

Prints one row per run; writes bench/results/gpu_async_forks.json.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import sys
import tempfile
import time

from ansible_collections.aifabric.acceptance.tests.integration import netns
from ansible_collections.aifabric.acceptance.tests.integration.conftest import Controller
from ansible_collections.aifabric.acceptance.tests.integration.test_ssh_fleet import finish, load_report, start

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
RUN_LIMIT_S = 900
STAND_IN = """#!/bin/sh
# aifabric.acceptance bench (throwaway): the GPU stage's Python, a GEMM run of {tool_s} s
sleep {tool_s}
exec /usr/bin/python3 "$@"
"""


def run_stage(fleet, controller, work, name, hosts, forks, gpu_async, python):
    report_dir = os.path.join(work, name)
    out = os.path.join(work, name + ".log")
    env = controller.env(fleet, report_dir, extra={
        "ANSIBLE_FORKS": str(forks), "AIFABRIC_FAIL_ON": "never",
        "ANSIBLE_ASYNC_DIR": os.path.join(fleet.dir, "async-jobs")})
    variables = {"gpu_hosts": ":".join(hosts), "gpu_checks": ["gemm"], "gpu_run_probe": False,
                 "gpu_python": python, "gpu_async": gpu_async}
    argv = controller.playbook_argv("playbooks/gpu.yml", fleet.inventory, "-e", json.dumps(variables))
    launched = time.monotonic()
    rc = finish(start(fleet, argv, env, out, REPO), RUN_LIMIT_S, out)
    wall = time.monotonic() - launched
    if rc != 0:
        with open(out, encoding="utf-8", errors="replace") as handle:
            raise SystemExit("%s: ansible-playbook rc %d\n%s" % (name, rc, handle.read()[-3000:]))
    records = load_report(report_dir, out)[1]["records"]
    gemm = [r for r in records if r["check"].startswith("gpu.gemm")]
    if len(gemm) != len(hosts) or any(r["status"] != "skip" for r in gemm):
        raise SystemExit("%s: expected one gpu.gemm skip per host, got %s" % (name, [(r["host"], r["status"]) for r in gemm]))
    return round(wall, 1)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[8, 16])
    parser.add_argument("--forks", type=int, default=4)
    parser.add_argument("--tool-s", type=int, default=10, help="each host's stand-in GEMM run, seconds")
    parser.add_argument("--out", default=os.path.join(HERE, "results", "gpu_async_forks.json"))
    args = parser.parse_args(argv)
    controller = Controller()
    problems = controller.problems() + netns.missing_prerequisites()
    if problems:
        raise SystemExit("cannot run: " + "; ".join(problems))
    work = tempfile.mkdtemp(prefix="gpu-async-forks-")
    rows = []
    print("%5s %5s %7s %9s %8s %13s" % ("hosts", "forks", "batches", "gpu_async", "wall_s", "tool_s x batch"))
    with netns.Fleet(max(args.sizes)) as fleet:
        fleet.write_inventory()
        python = os.path.join(fleet.dir, "gpu-python")
        with open(python, "w") as handle:
            handle.write(STAND_IN.format(tool_s=args.tool_s))
        os.chmod(python, 0o755)
        for n in args.sizes:
            hosts = [h.name for h in fleet.hosts[:n]]
            batches = math.ceil(n / args.forks)
            for gpu_async in (False, True):
                load = os.getloadavg()
                wall = run_stage(fleet, controller, work, "n%d-%s" % (n, "async" if gpu_async else "plain"), hosts,
                                 args.forks, gpu_async, python)
                rows.append({"hosts": n, "forks": args.forks, "batches": batches, "gpu_async": gpu_async,
                             "wall_s": wall, "tool_s": args.tool_s, "loadavg_before": [round(x, 2) for x in load]})
                expected = args.tool_s * (1 if gpu_async else batches)
                print("%5d %5d %7d %9s %8.1f %13d" % (n, args.forks, batches, gpu_async, wall, expected))
    result = {"machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": sys.version.split()[0]},
              "date_utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "rows": rows}
    os.makedirs(os.path.dirname(args.out), exist_ok=True)
    with open(args.out, "w") as handle:
        json.dump(result, handle, indent=1)
        handle.write("\n")
    print("wrote %s" % os.path.relpath(args.out, REPO))


if __name__ == "__main__":
    main()
