# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The run-to-run spread of a healthy figure, from REAL captures: the noise the simulators give healthy figures.

Two runs of nccl-tests on the same 2x H200 host, four days apart, are in the test tree:

- tests/unit/plugins/module_utils/parsers/fixtures/nccl_tests/h200x2-nccl-tests-2.19.6/<collective>_g2.txt
  (2026-11-22, -b 8 -e 8G),
- tests/unit/plugins/plugin_utils/fixtures/h200x2-judgement/healthy.results.json (2026-11-26, the acceptance
  role's records; h200x2-acceptance-results.json beside it keeps no series, so it cannot be compared).

For each collective both files measured and each of out-of-place and in-place, the bus bandwidth at 1 GiB (the
largest size both ran) of each run is compared with the mean of the runs: the spread is the pooled relative
standard deviation of those figures (16 figures, 8 degrees of freedom: a rough figure, the best the captures give).

    PYTHONPATH=/tmp/aif-dev python bench/real_spread.py
"""

from __future__ import annotations

import json
import math
import os

HERE = os.path.dirname(os.path.abspath(__file__))
TESTS = os.path.join(HERE, os.pardir, "tests", "unit", "plugins")
TEXT_RUN = os.path.join(TESTS, "module_utils", "parsers", "fixtures", "nccl_tests", "h200x2-nccl-tests-2.19.6")
RECORD_RUNS = (os.path.join(TESTS, "plugin_utils", "fixtures", "h200x2-judgement", "healthy.results.json"),)
SIZE = 1 << 30
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "alltoall")


def _text_run(collective):
    """(out-of-place, in-place) bus bandwidth at SIZE of the nccl-tests text capture, None when it has no row."""
    path = os.path.join(TEXT_RUN, "%s_g2.txt" % collective)
    if not os.path.isfile(path):
        return None
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            fields = line.split()
            if len(fields) >= 12 and fields[0] == str(SIZE):
                return float(fields[7]), float(fields[11])
    return None


def _record_run(path, collective):
    """(out-of-place, in-place) bus bandwidth at SIZE of a saved run's nccl.<collective> record, or None."""
    with open(path, encoding="utf-8") as handle:
        report = json.load(handle)
    for rec in report.get("records") or []:
        if rec.get("check") == "nccl." + collective:
            for row in rec.get("series") or []:
                if row.get("size_bytes") == SIZE and row.get("oop_busbw_gbyte_s") and row.get("ip_busbw_gbyte_s"):
                    return float(row["oop_busbw_gbyte_s"]), float(row["ip_busbw_gbyte_s"])
    return None


def figures():
    """{(collective, "oop" | "ip"): [bus bandwidth of each run that measured it]}."""
    out = {}
    for collective in COLLECTIVES:
        runs = [_text_run(collective)] + [_record_run(p, collective) for p in RECORD_RUNS if os.path.isfile(p)]
        runs = [r for r in runs if r is not None]
        for index, place in enumerate(("oop", "ip")):
            out[(collective, place)] = [r[index] for r in runs]
    return out


def run_to_run_sd(found=None):
    """The pooled relative standard deviation of a healthy figure across runs (a fraction: 0.013 is 1.3 %)."""
    squares, freedom = 0.0, 0
    for values in (found or figures()).values():
        if len(values) < 2:
            continue
        mean = sum(values) / len(values)
        squares += sum(((v - mean) / mean) ** 2 for v in values)
        freedom += len(values) - 1
    if not freedom:
        raise ValueError("no collective was measured twice in the captures")
    return math.sqrt(squares / freedom)


def main():
    found = figures()
    for (collective, place), values in sorted(found.items()):
        print("%-15s %-3s %s" % (collective, place, ", ".join("%.2f" % v for v in values)))
    print("run-to-run spread (pooled relative sd, %d figures): %.2f %%" % (
        sum(len(v) for v in found.values()), 100 * run_to_run_sd(found)))


if __name__ == "__main__":
    main()
