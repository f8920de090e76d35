# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the run's record stream costs: the callback appending every task result, and the run_summary
step (and the report) reading it back, for fleets of 64 to 1024 hosts.

Each simulated host returns, as one task result, the records the real env_probe module returned on a
2x H200 machine (the fixture bench/fleet_report_scale.py uses), then one pairwise record per round of a
ring of 8 rounds (one task per round). Run from a path ending in ansible_collections/aifabric/acceptance
with PYTHONPATH pointing above it:

    python bench/run_stream_scale.py [--hosts 64 256 1024]

Results are printed and written to bench/results/run_stream_scale.json.
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import tempfile
import time

from ansible_collections.aifabric.acceptance.plugins.plugin_utils import fleet

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURE = os.path.join(HERE, "..", "tests", "unit", "plugins", "modules", "fixtures", "env_probe",
                       "h200x2vm-default.json")
ROUNDS = 8


def probe_records():
    with open(FIXTURE, encoding="utf-8") as handle:
        data = json.load(handle)
    return data["results"] if isinstance(data, dict) else data


def measure(hosts, template, workdir):
    names = ["node%04d" % i for i in range(hosts)]
    path = os.path.join(workdir, "records-%d.jsonl" % hosts)
    live = fleet.Collector()
    started = time.perf_counter()
    live.open_stream(path, run={"run_id": "bench", "started": "2026-11-23T00:00:00Z"})
    live.target(names)
    for name in names:
        live.task_ok(name, "probe", "probe", {"results": copy.deepcopy(template)})
    for rnd in range(ROUNDS):
        for index, name in enumerate(names):
            peer = names[(index + rnd + 1) % hosts]
            live.task_ok(name, "round-%d" % rnd, "client", {"results": [{
                "check": "rdma.ib_write_bw", "status": "pass", "peer": peer, "target": "mlx5_0/1",
                "metrics": {"bw_avg_gbit_s": 360.0, "msg_size_bytes": 65536}}]})
    live.close_stream()
    collect_s = time.perf_counter() - started
    started = time.perf_counter()
    again = fleet.Collector.load(path)
    records = again.records()
    load_s = time.perf_counter() - started
    return {"hosts": hosts, "task_results": hosts * (1 + ROUNDS), "records": len(records),
            "stream_bytes": os.path.getsize(path), "collect_and_stream_s": round(collect_s, 3),
            "read_back_s": round(load_s, 3)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hosts", type=int, nargs="+", default=[64, 256, 1024])
    args = parser.parse_args()
    template = probe_records()
    rows = []
    with tempfile.TemporaryDirectory() as workdir:
        for hosts in args.hosts:
            row = measure(hosts, template, workdir)
            rows.append(row)
            print(json.dumps(row))
    out = os.path.join(HERE, "results")
    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "run_stream_scale.json"), "w", encoding="utf-8") as handle:
        json.dump(rows, handle, indent=1)


if __name__ == "__main__":
    main()
