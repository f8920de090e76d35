# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Physical plausibility of every headline figure (issue 34 rule 5): figures that cannot be measured together.

Before: a perftest row with 0.00 us latency, an average above the peak, or a NaN row passed; a GEMM's TFLOP/s was
believed as printed (5,000 TFLOP/s on an H100 passed), neither derived from its time and size nor held to the GPU
model's peak. Every input is a real capture (the parser fixtures, the H200 proof run's GEMM lines), changed only where
the test says how.
"""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.aifabric.acceptance.plugins.module_utils import expectations, thresholds
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import ParseError
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import Context
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import gemm_bench as gemm_tool
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import perftest_sweep as perftest_tool
from ansible_collections.aifabric.acceptance.tests.unit.plugins.module_utils.test_valid_measurement import (
    GEMM_PARAMS, PERFTEST, PROOF, changed, perftest, read)

LAT = "dgx-spark-cx7-ib-write-lat-client-rdma-cm-force-link-ib.txt"
LAT_ROW = " 2       1000          1.42           1.93         1.47                1.47             0.00            1.57                    1.93"
BW = "hdr-ib-send-bw-client-a-gbits-1qp.txt"


@pytest.mark.parametrize("new, needle", [
    # 0.00 us: below perftest's resolution, not a latency
    (" 2       1000          0.00           0.00         0.00                0.00             0.00            0.00                    0.00",
     "lat_min_us 0 is not above 0"),
    # a typical latency above the largest sample
    (" 2       1000          1.42           1.93         2.47                1.47             0.00            1.57                    1.93",
     "lat_typical_us 2.47 > lat_max_us 1.93"),
    # a NaN row (what a division by zero in the tool prints)
    (" 2       1000          nan           nan         nan                nan             nan            nan                    nan",
     ""),
])
def test_perftest_latency_rows_that_cannot_be_measured_are_an_error(new, needle):
    text = read(PERFTEST, LAT)
    assert perftest(text, "ib_write_lat", "rocep1s0f1")["status"] in ("pass", "warn")
    record = perftest(changed(text, LAT_ROW, new), "ib_write_lat", "rocep1s0f1")
    assert record["status"] == "error" and needle in record["reason"], record["reason"]


@pytest.mark.parametrize("cells", ["nan             nan", "inf             inf", "196.69             nan", "NaN   196.69"])
def test_perftest_bandwidth_row_of_nan_is_an_error(cells):
    """A row of "nan" was not read as a row: the record passed on the row above it (4 MiB) as if the 8 MiB row were
    not there."""
    text = read(PERFTEST, BW)
    record = perftest(changed(text, " 8388608    1000             196.69             196.69 ",
                              " 8388608    1000             %s " % cells), "ib_send_bw", "mlx5_2")
    assert record["status"] == "error" and "non-numeric field" in record["reason"], record


def test_perftest_average_above_the_peak_is_an_error():
    text = read(PERFTEST, BW)
    row = " 8388608    1000             196.69             196.69 "
    record = perftest(changed(text, row, " 8388608    1000             150.69             196.69 "), "ib_send_bw",
                      "mlx5_2")
    assert record["status"] == "error"
    assert "bw_avg_gbit_s 196.69 > bw_peak_gbit_s 150.69" in record["reason"]
    # a row below the headline too (the series is checked)
    below = perftest(changed(text, " 1048576    1000             191.18             187.28 ",
                             " 1048576    1000             91.18             187.28 "), "ib_send_bw", "mlx5_2")
    assert below["status"] == "error" and "series row" in below["reason"] and "> bw_peak_gbit_s 91.18" in below["reason"]


def test_every_real_perftest_capture_is_still_plausible():
    """No real capture breaks a relation (the ranges are not fitted to break real runs)."""
    checked = 0
    for name in sorted(os.listdir(PERFTEST)):
        if not name.endswith(".txt"):
            continue
        try:
            parsed = perftest_tool.parser.parse(read(PERFTEST, name))
        except ParseError:
            continue        # the capture of a failure: no table
        if not parsed.get("rows"):
            continue
        kind = "bw" if "bw_avg" in parsed["rows"][0] else "lat"
        metrics = perftest_tool.metrics_of(parsed, kind)
        series = perftest_tool._series(parsed, kind)       # pylint: disable=protected-access
        assert expectations.out_of_range(metrics, series) == [], name
        checked += 1
    assert checked >= 15


def gemm_line(**change):
    text = read(PROOF, "gemm_bare.txt")
    first = text.splitlines()[0]
    item = json.loads(first.split(" ", 1)[1])
    item.update(change)
    return changed(text, first, "AIFABRIC_GEMM " + json.dumps(item)), item


def test_gemm_real_h200_lines_pass_and_follow_from_their_time():
    text = read(PROOF, "gemm_bare.txt")
    records = gemm_tool.records(text, Context(rc=0, params=GEMM_PARAMS))
    assert records and all(r["status"] == "pass" for r in records)


def test_gemm_5000_tflops_on_an_h100_is_an_error():
    """The issue's case: 5,000 TFLOP/s claimed by an H100 - consistent with its printed time (a time 7x too short),
    and printed with the real time (a figure that does not follow from it)."""
    m = n = k = 8192
    fast_ms = 2.0 * m * n * k / 5000e12 * 1e3
    text, _item = gemm_line(gpu_name="NVIDIA H100 80GB HBM3", time_ms=fast_ms, tflops=5000.0)
    record = gemm_tool.records(text, Context(rc=0, params=GEMM_PARAMS))[0]
    assert record["status"] == "error" and record["raw"]
    assert "tflops 5000 > the H100 SXM bf16 dense peak 989.4 TFLOP/s + 5 %" in record["reason"]
    text, _item = gemm_line(gpu_name="NVIDIA H100 80GB HBM3", tflops=5000.0)
    record = gemm_tool.records(text, Context(rc=0, params=GEMM_PARAMS))[0]
    assert record["status"] == "error" and "tflops 5000 is not 2*m*n*k/time = 729.315 TFLOP/s" in record["reason"]


def test_gemm_without_a_time_has_no_figure():
    text, _item = gemm_line(time_ms=None)
    record = gemm_tool.records(text, Context(rc=0, params=GEMM_PARAMS))[0]
    assert record["status"] == "error" and "without a time and a size it follows from" in record["reason"]


def test_a_model_without_a_datasheet_peak_is_held_to_the_derivation_only():
    assert expectations.gemm_implausible({"tflops": 729.3150306657345, "time_ms": 1.5075949096679688, "m": 8192,
                                          "n": 8192, "k": 8192}, "bf16", "NVIDIA B300") == []


def test_every_peak_and_relation_has_its_source():
    names = dict(thresholds.sources())
    for key in thresholds.GEMM_PEAK_TFLOPS:
        assert "datasheet" in names["GEMM_PEAK_TFLOPS/%s/%s" % key]
    assert names["GEMM_PEAK_MARGIN_PCT"] and names["GEMM_RECOMPUTE_TOLERANCE_PCT"]
    for names_, _why in thresholds.PLAUSIBLE_ORDER:
        assert names["PLAUSIBLE_ORDER/%s" % "<=".join(names_)]
