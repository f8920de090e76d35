# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 23 item 3: report.html draws a record's series with the x and y columns its family's schema names
(docs/results.schema.json ``x-plot``), not by guessing among candidate names."""

from __future__ import annotations

import glob
import json
import os

from ansible_collections.aifabric.acceptance.plugins.module_utils import results
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import report_html

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", "..", ".."))
GOLDEN = os.path.join(ROOT, "tests", "unit", "plugins", "module_utils", "fixtures", "records_golden")


def _golden(kind_prefix, check_prefix):
    """The first golden record (real capture through its tool's adapter) of a kind whose check starts so, with rows."""
    for path in sorted(glob.glob(os.path.join(GOLDEN, kind_prefix + "*.json"))):
        with open(path, encoding="utf-8") as handle:
            for record in json.load(handle):
                if record["check"].startswith(check_prefix) and len(record["series"]) >= 2:
                    return record
    raise AssertionError("no golden %s record of %s" % (kind_prefix, check_prefix))


def test_the_plot_table_is_the_schema_s():
    with open(os.path.join(ROOT, "docs", "results.schema.json"), encoding="utf-8") as handle:
        schema = json.load(handle)
    from_schema = dict((name[len("series_"):], (d["x-plot"]["x"], tuple(d["x-plot"]["y"])))
                       for name, d in schema["$defs"].items() if name.startswith("series_"))
    assert report_html.SERIES_PLOT == from_schema
    assert not hasattr(report_html, "SERIES_Y") and not hasattr(report_html, "SERIES_X")


def test_each_family_draws_its_own_columns():
    nccl = _golden("nccl-records--", "nccl.all_reduce")
    assert report_html._series_keys(nccl["check"], nccl["series"]) == ("size_bytes", "oop_busbw_gbyte_s")
    perftest = _golden("perftest-records--", "rdma.ib_write_bw")
    assert report_html._series_keys(perftest["check"], perftest["series"]) == ("msg_size_bytes", "bw_avg_gbit_s")
    probe = _golden("probe-records--", "nccl.torch_all_reduce")     # in place only: the out-of-place cells are null
    assert all(row["oop_busbw_gbyte_s"] is None for row in probe["series"])
    assert report_html._series_keys(probe["check"], probe["series"]) == ("size_bytes", "ip_busbw_gbyte_s")


def test_hccl_without_a_rank_count_draws_algbw():
    """HCCL Test without ranks: busbw is not computed (null), the algorithm bandwidth is drawn."""
    record = _golden("hccl-import--", "hccl.")
    series = [dict(row, oop_busbw_gbyte_s=None, ip_busbw_gbyte_s=None) for row in record["series"]]
    assert results.series_problems(record["check"], series) == []
    assert report_html._series_keys(record["check"], series) == ("size_bytes", "oop_algbw_gbyte_s")


def test_latency_and_checks_of_no_family_are_not_drawn():
    lat = _golden("perftest-records--", "rdma.ib_send_lat")
    assert report_html._series_keys(lat["check"], lat["series"]) == (None, None)
    guessable = [{"size_bytes": 1024 * i, "bw_gbit_s": 10.0 * i} for i in range(1, 5)]   # the guesser drew these
    assert report_html._series_keys("gpu.gemm_bf16", guessable) == (None, None)
    assert report_html._curve_groups([{"check": "gpu.gemm_bf16", "series": guessable}]) == {}


def test_a_y_column_found_only_in_a_later_row_is_still_drawn():
    record = _golden("nccl-records--", "nccl.all_reduce")
    series = [dict(record["series"][0], oop_busbw_gbyte_s=None, ip_busbw_gbyte_s=None)] + record["series"][1:]
    assert report_html._series_keys(record["check"], series) == ("size_bytes", "oop_busbw_gbyte_s")
    groups = report_html._curve_groups([dict(record, series=series)])
    assert list(groups) == [(record["check"], record["target"] or "", "oop_busbw_gbyte_s")]
