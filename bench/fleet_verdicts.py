# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Host verdicts of whole synthetic fleets with one bad node and one bad link (issue 7).

For each fleet size and schedule (all pairs, ring, one random matching + the confirmation pass),
builds the records the perftest module returns (tests/unit/plugins/plugin_utils/synthetic_fleet.py:
real pairings filter, real expectations, real attribution.confirmation_rounds), runs the report
pipeline (``fleet.build_report``: analyses + summary) and prints one JSON line per fleet: the host
verdict counts, the failed and warned hosts (capped), whether they are exactly the bad node (fail) and
the bad link's ends (warn), and the number of hosts named by fleet_outlier findings.

    PYTHONPATH=/tmp/at python bench/fleet_verdicts.py                 # 24 and 512 hosts, every mode
    PYTHONPATH=/tmp/at python bench/fleet_verdicts.py --hosts 64 --mode ring
"""

from __future__ import annotations

import argparse
import json
import sys
import time

from ansible_collections.aifabric.acceptance.plugins.plugin_utils import fleet
from ansible_collections.aifabric.acceptance.tests.unit.plugins.plugin_utils import synthetic_fleet

MODES = {"all": ("all", 1, False, False), "all-directed": ("all", 1, False, True), "ring": ("ring", 1, False, False),
         "ring+confirm": ("ring", 1, True, False), "random+confirm": ("random", 1, True, False)}


def run(hosts, mode, seed):
    kind, rounds, confirm, directed = MODES[mode]
    built = synthetic_fleet.build(hosts, kind, random_rounds=rounds, confirm=confirm, seed=seed, directed=directed)
    started = time.perf_counter()
    report = fleet.build_report(list(built.records), {"run_id": "bench", "started": synthetic_fleet.STARTED})
    elapsed = time.perf_counter() - started
    summary = report["summary"]
    by_status = {}
    for entry in summary["hosts"]:
        by_status.setdefault(entry["status"], []).append(entry["host"])
    failed = sorted(by_status.get("fail", []) + by_status.get("error", []))
    warned = sorted(by_status.get("warn", []))
    outliers = [f for f in report["findings"] if f["kind"] == "fleet_outlier"]
    return {
        "hosts": hosts, "mode": mode, "pairs": sum(1 for r in built.records if r["check"] == synthetic_fleet.CHECK),
        "hosts_by_status": summary["hosts_by_status"], "worst_status": summary["worst_status"],
        "failed": failed[:8], "failed_total": len(failed), "warned": warned[:8], "warned_total": len(warned),
        "bad_node": built.bad_node, "bad_link": sorted(built.bad_link),
        "exact": failed == [built.bad_node] and warned == sorted(built.bad_link),
        "fleet_outlier_hosts": sum(len(f["hosts"]) for f in outliers),
        "report_s": round(elapsed, 2),
    }


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--hosts", type=int, action="append", help="fleet size (repeatable; default 24 and 512)")
    parser.add_argument("--mode", choices=sorted(MODES), action="append", help="schedule (repeatable; default all)")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args(argv)
    for hosts in args.hosts or [24, 512]:
        for mode in args.mode or ["all", "ring", "ring+confirm", "random+confirm"]:
            print(json.dumps(run(hosts, mode, args.seed), sort_keys=True))
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
