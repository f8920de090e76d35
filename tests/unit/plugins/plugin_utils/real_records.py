# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Result records built from REAL captured tool outputs, for the fleet report tests.

- nccl_records(): the real nccl-tests 2.19.6 -J JSON files (with the text output of the same runs) of a 2x H200
  host, through nccl-tests' adapter (tools.nccl_tests.records, what every caller uses), so their metrics and
  series are exactly what the tool printed and what the module returns.
- perftest_pairs(): the real --report_gbits perftest captures through the perftest parser;
  their figures are assigned to (synthetic) host pairs to form a pairwise matrix.
The host names are labels chosen by the tests; the figures are the tools'.
"""

from __future__ import annotations

import os

from ansible_collections.aifabric.acceptance.plugins.module_utils import results
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import Context, nccl_tests
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import perftest

PARSER_FIXTURES = os.path.join(os.path.dirname(__file__), "..", "module_utils", "parsers", "fixtures")
NCCL_DIR = os.path.join(PARSER_FIXTURES, "nccl_tests", "h200x2-nccl-tests-2.19.6")
PERFTEST_DIR = os.path.join(PARSER_FIXTURES, "perftest")
GBITS_CAPTURES = (
    "amd-ionic-ib-write-bw-client-bidir-q4-a-gbits.txt",
    "cx7-ndr-ib-read-bw-client-report-gbits-cpufreq-warning.txt",
    "rocm-docs-ib-write-bw-bidir-a-gbits-use-rocm-rst-indented.txt",
)


def _read(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def nccl_records(host="h200-a"):
    """One record per collective of the real H200 run (json files), with series."""
    out = []
    for name in sorted(os.listdir(NCCL_DIR)):
        if name.endswith(".json"):
            # the -J document with the text output of the same run, as the SSH module reads them
            text = _read(os.path.join(NCCL_DIR, name[:-len(".json")] + "_g2.txt"))
            out += nccl_tests.records(text, Context(params={"profile": "none"}, host=host,
                                                    collective=nccl_tests.collective_from_name(name),
                                                    document=_read(os.path.join(NCCL_DIR, name))))
    return out


def perftest_figures():
    """[(capture name, last table row)] of the real --report_gbits captures."""
    figures = []
    for name in GBITS_CAPTURES:
        parsed = perftest.parse(_read(os.path.join(PERFTEST_DIR, name)))
        figures.append((name, parsed["rows"]))
    return figures


def perftest_pairs(hosts, low_pair=None, min_gbit_s=None):
    """rdma.ib_write_bw records for every ordered pair of hosts, bw from the real captures.

    Pair i gets the figures of capture i % 3. ``low_pair`` (host, peer) gets the lowest real
    figure and, with ``min_gbit_s``, a fail verdict against that floor.
    """
    figures = perftest_figures()
    lowest = min(rows[-1]["bw_avg"] for _name, rows in figures)
    out = []
    i = 0
    for host in hosts:
        for peer in hosts:
            if host == peer:
                continue
            name, rows = figures[i % len(figures)]
            i += 1
            bw = rows[-1]["bw_avg"]
            status, reason, expect = "pass", None, {}
            if low_pair == (host, peer):
                bw = lowest
            if min_gbit_s is not None:
                expect = {"bw_avg_gbit_s": {"min": min_gbit_s}}
                if bw < min_gbit_s:
                    status, reason = "fail", "bw_avg_gbit_s %s < %s expected" % (bw, min_gbit_s)
            out.append(results.make(
                "rdma.ib_write_bw", status, reason=reason, host=host, peer=peer, target="mlx5_0",
                metrics={"bw_avg_gbit_s": bw, "msg_size_bytes": rows[-1]["size_bytes"]}, expect=expect,
                series=[{"size_bytes": r["size_bytes"], "bw_avg": r["bw_avg"]} for r in rows],
                tool={"name": "perftest"}, params={"capture": name}))
    return out
