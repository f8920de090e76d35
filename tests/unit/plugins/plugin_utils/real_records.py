# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Result records built from REAL captured tool outputs, for the fleet report tests.

- nccl_records(): the real nccl-tests 2.19.6 -J JSON files (with the text output of the same runs) of a 2x H200
  host, through nccl-tests' adapter (tools.nccl_test.records, what every caller uses), so their metrics and
  series are exactly what the tool printed and what the module returns.
- perftest_pairs(): the real --report_gbits perftest captures through perftest's adapter (tools.perftest_sweep.records),
  so their metrics and series have the shape the module returns; the records are assigned to (synthetic) host
  pairs to form a pairwise matrix.
The host names are labels chosen by the tests; the figures are the tools'.
"""

from __future__ import annotations

import os

from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import Context, nccl_test as nccl_tests
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import perftest_sweep as perftest_tool
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import perftest
from ansible_collections.aifabric.acceptance.tests.unit.helpers import parser_fixture, read

PARSER_FIXTURES = parser_fixture()
NCCL_DIR = os.path.join(PARSER_FIXTURES, "nccl_tests", "h200x2-nccl-tests-2.19.6")
PERFTEST_DIR = os.path.join(PARSER_FIXTURES, "perftest")
GBITS_CAPTURES = (
    "amd-ionic-ib-write-bw-client-bidir-q4-a-gbits.txt",
    "cx7-ndr-ib-read-bw-client-report-gbits-cpufreq-warning.txt",
    "rocm-docs-ib-write-bw-bidir-a-gbits-use-rocm-rst-indented.txt",
)


def nccl_records(host="h200-a"):
    """One record per collective of the real H200 run (json files), with series."""
    out = []
    for name in sorted(os.listdir(NCCL_DIR)):
        if name.endswith(".json"):
            # the -J document with the text output of the same run, as the SSH module reads them
            text = read(os.path.join(NCCL_DIR, name[:-len(".json")] + "_g2.txt"))
            out += nccl_tests.records(text, Context(params={"profile": "none"}, host=host,
                                                    collective=nccl_tests.collective_from_name(name),
                                                    document=read(os.path.join(NCCL_DIR, name))))
    return out


def perftest_client(name, host, peer, min_gbit_s=None):
    """The client record of one real capture through perftest's adapter (tools.perftest_sweep.records, what the module
    returns), for the test the capture is of: its metrics, facts and series are production's. ``min_gbit_s``: a
    user expectation on bw_avg_gbit_s, judged by the adapter."""
    text = read(os.path.join(PERFTEST_DIR, name))
    params = {"test": perftest.parse(text)["tool"]}
    if min_gbit_s is not None:
        params["expect"] = {"bw_avg_gbit_s": {"min": min_gbit_s}}
    return perftest_tool.records(text, Context(params=params, rc=0, host=host, peer=peer, side="client"))[0]


def perftest_pairs(hosts, low_pair=None, min_gbit_s=None):
    """rdma.ib_write_bw records on mlx5_0 for every ordered pair of hosts, each the record of a real capture.

    Pair i gets the record of capture i % 3 and ``low_pair`` (host, peer) that of the capture with the lowest
    figure; ``min_gbit_s`` is a user expectation on bw_avg_gbit_s (a fail below it). The records are built by
    perftest's adapter (:func:`perftest_client`); only the labels are the test's: host, peer, the rail, and the
    check (one capture is an ib_read_bw run, whose figures stand for a write pair here).
    """
    lowest = min(GBITS_CAPTURES, key=lambda name: perftest_client(name, "h", "p")["metrics"]["bw_avg_gbit_s"])
    out = []
    i = 0
    for host in hosts:
        for peer in hosts:
            if host == peer:
                continue
            name = lowest if low_pair == (host, peer) else GBITS_CAPTURES[i % len(GBITS_CAPTURES)]
            i += 1
            record = perftest_client(name, host, peer, min_gbit_s)
            out.append(dict(record, check="rdma.ib_write_bw", target="mlx5_0"))
    return out
