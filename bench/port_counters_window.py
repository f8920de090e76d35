# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the fabric counter window adds to an acceptance (docs/scale-model.md).

1. On a node: ``tools.port_counters.records`` (phase before, then after) over a test-made sysfs tree of
   ``--hcas`` ports holding the real counter names and values of a ConnectX port
   (tests/unit/plugins/module_utils/parsers/fixtures/port_counters/gpud-pr943-mlx5_1-port1-counters.txt) and
   ``--hw-counters`` driver counters each; ethtool not run (its cost is one ``ethtool -S`` per port, bounded by
   timeout_s).
2. On the controller: the ``port_counters`` analysis (plugin_utils/port_counter_links.py) after attribution, over
   ``--hosts`` hosts of ``--hcas`` ports each, 3 random rounds of pairs per rail (the rdma role's default above 32
   hosts), ``--bad`` ports whose symbol errors grew, one of them on a slow pair.

    PYTHONPATH=<dir above ansible_collections> python bench/port_counters_window.py --hosts 1000
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import tempfile
import time

from ansible_collections.aifabric.acceptance.plugins.module_utils import probe_host, results
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import port_counters
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import analysis_pipeline, port_counter_links

HERE = os.path.dirname(os.path.abspath(__file__))
REAL = os.path.join(HERE, os.pardir, "tests", "unit", "plugins", "module_utils", "parsers", "fixtures",
                    "port_counters", "gpud-pr943-mlx5_1-port1-counters.txt")


def real_counters():
    out, name = {}, None
    with open(REAL, encoding="utf-8") as handle:
        for line in handle:
            if line.startswith("=== ./"):
                name = line.strip()[len("=== ./"):-len(" ===")]
            elif line.strip() and name:
                out[name] = line.strip()
    out.update(link_downed="3", port_xmit_discards="120")
    return out


def make_tree(root, hcas, hw_counters):
    counters = real_counters()
    for i in range(hcas):
        base = os.path.join(root, "sys/class/infiniband/mlx5_%d/ports/1" % i)
        for group, values in (("counters", counters),
                              ("hw_counters", dict(("hw_%02d" % k, "0") for k in range(hw_counters)))):
            os.makedirs(os.path.join(base, group))
            for name, value in values.items():
                with open(os.path.join(base, group, name), "w", encoding="utf-8") as handle:
                    handle.write(value + "\n")
        with open(os.path.join(base, "link_layer"), "w", encoding="utf-8") as handle:
            handle.write("InfiniBand\n")


def node_cost(hcas, hw_counters, repeats):
    root = tempfile.mkdtemp()
    try:
        make_tree(root, hcas, hw_counters)
        host = probe_host.Host(root=root, which=lambda name: None)
        times = []
        for _repeat in range(repeats):
            began = time.perf_counter()
            before = port_counters.records(host, {"phase": "before", "ethtool": False})
            port_counters.records(host, {"phase": "after", "before": before, "ethtool": False})
            times.append(time.perf_counter() - began)
        return statistics.median(times)
    finally:
        shutil.rmtree(root)


def fleet_records(hosts, hcas, bad, seed):
    rng = random.Random(seed)
    names = ["node%04d" % i for i in range(hosts)]
    values = dict((k, int(v)) for k, v in real_counters().items())
    records = []
    slow = None
    for rail in range(hcas):
        for _round in range(3):
            order = names[:]
            rng.shuffle(order)
            for a, b in zip(order[::2], order[1::2]):
                records.append(results.make("rdma.ib_write_bw", "pass", host=b, peer=a, target="mlx5_%d" % rail,
                                            metrics={"bw_avg_gbit_s": 390.0 + rng.random(), "msg_size_bytes": 65536}))
    slow = (records[0]["host"], records[0]["peer"])
    records[0]["metrics"]["bw_avg_gbit_s"] = 200.0
    erroring = {(slow[0], 0)} | set((rng.choice(names), rng.randrange(hcas)) for _extra in range(bad - 1))
    snap = {"taken": "t", "epoch_s": 0.0, "ports": {}}
    for name in names:
        ports_before, ports_after = {}, {}
        for rail in range(hcas):
            port = {"device": "mlx5_%d" % rail, "port": "1", "link_layer": "InfiniBand", "netdev": None,
                    "counters": dict(values), "hw_counters": {}, "ethtool": {}, "unread": {}}
            ports_before["mlx5_%d/1" % rail] = port
            grown = dict(port, counters=dict(values, symbol_error=values["symbol_error"] + (40 if (name, rail) in erroring else 0)))
            ports_after["mlx5_%d/1" % rail] = grown
        before = dict(snap, ports=ports_before)
        after = dict(snap, epoch_s=1800.0, ports=ports_after)
        records.extend(results.with_host(port_counters.judge(before, after, {"stage": "rdma"}), name))
    return records


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--hcas", type=int, default=8)
    parser.add_argument("--hw-counters", type=int, default=40)
    parser.add_argument("--bad", type=int, default=5)
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    node_s = node_cost(args.hcas, args.hw_counters, args.repeats)
    print("node: %d ports, before + after: %.1f ms (median of %d)" % (args.hcas, node_s * 1000, args.repeats))
    records = fleet_records(args.hosts, args.hcas, args.bad, seed=1)
    without = [r for r in records if r["check"] != "rdma.port_counters"]
    alone, whole = [], []
    for _repeat in range(args.repeats):
        began = time.perf_counter()
        new, findings = port_counter_links.analyze(records, {})
        alone.append(time.perf_counter() - began)
    for pipeline in (without, records):
        began = time.perf_counter()
        analysis_pipeline.analyze(pipeline, {})
        whole.append(time.perf_counter() - began)
    print("controller: %d hosts x %d ports, %d records: the port_counters analysis %.2f s (median of %d); the whole "
          "pipeline %.1f s with the port records, %.1f s without; %d link record(s), %d finding(s)" % (
              args.hosts, args.hcas, len(records), statistics.median(alone), args.repeats, whole[1], whole[0],
              len(new), len(findings)))


if __name__ == "__main__":
    main()
