# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The RDMA runner's TCP state reads: CPU of one pass of its loops, per number of rails, port by port (as before:
each server's port read from /proc/net/tcp and tcp6 on its own) against one read of each table for every port
(``perftest_sweep.tcp_ports_in_state``).

The runner asks, for every server of a step (one per rail), whether it listens yet (the ready notice, every 10 ms
up to 5 s) and whether its client connected (every 50 ms until it did). Each read of /proc/net/tcp makes the kernel
walk its whole TCP socket hash, whatever the number of sockets of the namespace: the CPU of a pass is reads x the
cost of one read, and the busy share of a core is that over the loop's period. Run on the host whose figures you
want (the hash grows with the host's memory):

    PYTHONPATH=<dir holding ansible_collections/> python3 bench/tcp_state_reads.py [--passes 200]
"""

from __future__ import annotations

import argparse
import json
import os
import time

from ansible_collections.aifabric.acceptance.plugins.module_utils import perftest_sweep

FIRST_PORT = 40000     # ports nobody listens on here: the waiting case (no client yet), where both tables are read


def cpu_ms_per_pass(func, passes):
    started = time.process_time()
    for _i in range(passes):
        func()
    return (time.process_time() - started) / passes * 1000.0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--passes", type=int, default=200)
    parser.add_argument("--rails", type=int, nargs="+", default=[1, 2, 4, 8])
    args = parser.parse_args(argv)
    rows = []
    for rails in args.rails:
        ports = list(range(FIRST_PORT, FIRST_PORT + rails))
        state = perftest_sweep.TCP_ESTABLISHED
        before = cpu_ms_per_pass(lambda: [perftest_sweep.tcp_established(port) for port in ports], args.passes)
        after = cpu_ms_per_pass(lambda: perftest_sweep.tcp_ports_in_state(ports, state), args.passes)
        rows.append({"rails": rails, "port_by_port_ms": round(before, 2), "one_read_ms": round(after, 2),
                     # a core's busy share while a loop waits: the ready notice every 10 ms, the connection every 50 ms
                     "busy_10ms_loop_before": round(min(1.0, before / (10.0 + before)), 2),
                     "busy_10ms_loop_after": round(min(1.0, after / (10.0 + after)), 2),
                     "busy_50ms_loop_before": round(before / (50.0 + before), 2),
                     "busy_50ms_loop_after": round(after / (50.0 + after), 2),
                     # the connection loop since 2026-12-06: one read with the dead-list look, every 500 ms
                     "busy_500ms_loop_after": round(after / (500.0 + after), 3)})
    print("rails  port-by-port ms/pass  one read ms/pass  busy (10 ms loop) before->after  busy (50 ms loop) before->after"
          "  busy (500 ms loop)")
    for row in rows:
        print("%5d  %20.2f  %16.2f  %14.0f%% -> %3.0f%%  %23.0f%% -> %3.0f%%  %17.1f%%" % (
            row["rails"], row["port_by_port_ms"], row["one_read_ms"], 100 * row["busy_10ms_loop_before"],
            100 * row["busy_10ms_loop_after"], 100 * row["busy_50ms_loop_before"], 100 * row["busy_50ms_loop_after"],
            100 * row["busy_500ms_loop_after"]))
    out = os.path.join(os.path.dirname(os.path.abspath(__file__)), "results", "tcp_state_reads.json")
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w", encoding="utf-8") as handle:
        json.dump({"passes": args.passes, "loadavg": os.getloadavg(), "rows": rows}, handle, indent=1)
    print("written", out)


if __name__ == "__main__":
    main()
