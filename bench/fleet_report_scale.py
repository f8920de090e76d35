# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How the fleet report scales with the fleet: analysis, history and rendering time and file sizes.

Each simulated host carries the records the real env_probe module returned on a 2x H200 machine
(tests/unit/plugins/modules/fixtures/env_probe/h200x2vm-default.json), with the driver version of
1 % of hosts changed so drift has work to do, plus one perftest-like pairwise record per host per
round of a ring (so the heat map and attribution have a matrix). Run from a path ending in
ansible_collections/aifabric/acceptance with PYTHONPATH pointing above it (`make bench` does):

    python bench/fleet_report_scale.py [--hosts 64 256 1024]

Results are printed and written to bench/results/fleet_report_scale.json.
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


def probe_records():
    with open(FIXTURE, encoding="utf-8") as handle:
        data = json.load(handle)
    return data["results"] if isinstance(data, dict) else data


def fleet_records(hosts, template):
    records = []
    names = ["node%04d" % i for i in range(hosts)]
    for index, name in enumerate(names):
        for record in template:
            record = copy.deepcopy(record)
            record["host"] = name
            if index % 100 == 7 and "driver_version" in record.get("facts", {}):
                record["facts"]["driver_version"] = "570.86.15"
            records.append(record)
        peer = names[(index + 1) % hosts]
        bandwidth = 360.0 if index % 97 else 190.0          # a few slow links
        records.append({
            "host": name, "peer": peer, "check": "rdma.ib_write_bw", "target": "mlx5_0/1", "status": "pass",
            "reason": None, "metrics": {"bw_avg_gbit_s": bandwidth, "bw_peak_gbit_s": bandwidth + 2,
                                        "msg_size_bytes": 65536},
            "expect": {}, "facts": {}, "series": [], "params": {}, "tool": {"name": "perftest", "version": "6.06"},
            "started": "2026-11-22T00:00:00Z", "duration_s": 5.0, "raw": None,
        })
    return names, records


def measure(hosts, template, workdir):
    names, records = fleet_records(hosts, template)
    run = fleet.run_metadata("bench%d" % hosts, "2026-11-22T00:00:00Z", "2026-11-22T00:10:00Z", names,
                             inventory_host_count=hosts, ansible_version="bench")
    started = time.perf_counter()
    report = fleet.build_report(records, run)
    analysed = time.perf_counter()
    out = fleet.publish(report, reports_root=workdir, history_db=os.path.join(workdir, "history.sqlite"))
    written = time.perf_counter()
    sizes = dict((fmt, os.path.getsize(path)) for fmt, path in out["files"].items())
    return {
        "hosts": hosts,
        "records": len(report["records"]),
        "findings": len(report["findings"]),
        "analyse_s": round(analysed - started, 3),
        "history_and_render_s": round(written - analysed, 3),
        "file_bytes": sizes,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--hosts", type=int, nargs="+", default=[64, 256, 1024])
    args = parser.parse_args()
    template = probe_records()
    rows = []
    with tempfile.TemporaryDirectory(prefix="fleet-bench-") as workdir:
        for hosts in args.hosts:
            row = measure(hosts, template, os.path.join(workdir, str(hosts)))
            rows.append(row)
            print("%5d hosts %7d records %4d findings: analyse %.2f s, history+render %.2f s, "
                  "html %.1f MB, json %.1f MB" % (
                      row["hosts"], row["records"], row["findings"], row["analyse_s"],
                      row["history_and_render_s"], row["file_bytes"].get("html", 0) / 1e6,
                      row["file_bytes"].get("json", 0) / 1e6))
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", "fleet_report_scale.json"), "w", encoding="utf-8") as handle:
        json.dump(rows, handle, indent=2)


if __name__ == "__main__":
    main()
