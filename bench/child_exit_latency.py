# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How late the end of a sweep's perftest process is seen: the time from the tool's last act to its outcome.

On a sweep's critical path every round waits for the end of its tools (client and server) to be seen before
the next step starts. Each sample starts ``sh -c 'sleep 0.1; date +%s.%N'`` through state_child.start (the runner's
own child, proc.spawn, as the sweep runner starts them), polls state_child.outcome every 2 ms, and compares the moment
the end was seen with the time the tool printed last. Run from a path ending in ansible_collections/aifabric/acceptance
with PYTHONPATH pointing above it:

    python bench/child_exit_latency.py [--samples 15]

Measured 2026-11-23 on the 2-core VM, when a detached supervisor ran each tool under coreutils timeout and wrote
rc.json: with an owner 98.7 ms (median) while the supervisor polled its owner every 0.2 s, 1.8 ms once it waited
in sigtimedwait(SIGCHLD); without an owner 2.4 ms. Since the tools are the runner's own children (waitpid, no
rc.json): see docs/dev/benchmarks.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time

from ansible_collections.aifabric.acceptance.plugins.module_utils import state_child


def measure(samples):
    work = tempfile.mkdtemp(prefix="child-exit-latency-")
    lags = []
    try:
        for i in range(samples):
            handle = state_child.start(["/bin/sh", "-c", "sleep 0.1; date +%s.%N"], 10, os.path.join(work, str(i)))
            deadline = time.monotonic() + 10
            while state_child.outcome(handle) is None and time.monotonic() < deadline:
                time.sleep(0.002)
            seen = time.time()
            with open(handle["stdout"]) as out:
                lags.append(seen - float(out.read()))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return {"samples": samples, "median_ms": round(statistics.median(lags) * 1000, 1),
            "max_ms": round(max(lags) * 1000, 1)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--samples", type=int, default=15)
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.samples), sort_keys=True))
    return 0


if __name__ == "__main__":
    sys.exit(main())
