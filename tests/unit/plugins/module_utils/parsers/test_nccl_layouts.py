# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""nccl-tests layouts found in the wild (issue 12, item 5): launcher prefixes, '-I 1' per-iteration columns,
a failed data check with a non-zero exit. Each test failed before the change it covers."""

from __future__ import annotations

import os

import pytest

from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import _collective
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import nccl_tests
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import Context
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import nccl_test as nccl_tool
from ansible_collections.aifabric.acceptance.tests.unit.helpers import parser_fixture, read

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = parser_fixture("nccl_tests")
PER_ITER = os.path.join(FIXTURES, "h100x1-nccl-tests-2.19.6-per-iteration")
H200 = os.path.join(FIXTURES, "h200x2-nccl-tests-2.19.6", "all_reduce_g2.txt")


@pytest.mark.parametrize("prefix", [" 0: ", "15: ", "[1,0]<stdout>:", "(head, rank=0, pid=3808) [1,0]<stdout>:"])
def test_launcher_prefixes_keep_the_table(prefix):
    plain = read(H200)
    prefixed = "".join(prefix + line for line in plain.splitlines(True))
    assert nccl_tests.parse_text(prefixed)["rows"] == nccl_tests.parse_text(plain)["rows"]
    (record,) = nccl_tool.records(prefixed, Context(rc=0, params={}, collective="all_reduce"))
    assert record["status"] == "pass" and record["metrics"]["busbw_max_gbyte_s"] == 345.69


def test_per_iteration_columns_read_by_eye():
    parsed = nccl_tests.parse_text(read(os.path.join(PER_ITER, "all_reduce_I1_g1.txt")))
    assert parsed["per_iteration"] is True and parsed["version"] == "2.19.6" and len(parsed["rows"]) == 12
    last = parsed["rows"][-1]
    assert last["size"] == 33554432
    assert last["out_of_place"] == {"time_us": 27.65, "algbw_gbyte_s": 1213.4, "busbw_gbyte_s": 0.0, "wrong": 0,
                                    "iter_min_us": 25.82, "iter_max_us": 34.24, "iter_p99_us": 34.24,
                                    "iter_cv_pct": 6.56}
    assert last["in_place"]["iter_cv_pct"] == 120.15 and last["in_place"]["iter_p99_us"] == 16.35


def test_per_iteration_alltoall_in_place_wrong_is_na():
    parsed = nccl_tests.parse_text(read(os.path.join(PER_ITER, "alltoall_I1_g1.txt")))
    assert parsed["rows"][0]["in_place"]["wrong"] is None and parsed["rows"][0]["in_place"]["iter_cv_pct"] == 21.08


def test_per_iteration_series_keeps_p99_and_cv_and_one_rank_stays_skip():
    (record,) = nccl_tool.records(read(os.path.join(PER_ITER, "all_reduce_I1_g1.txt")), Context(rc=0, params={}))
    assert record["status"] == "skip"          # 1 rank measures no interconnect, jitter or not
    assert record["series"][-1]["oop_iter_p99_us"] == 34.24 and record["series"][-1]["ip_iter_cv_pct"] == 120.15
    assert record["metrics"]["iter_cv_max_pct"] == 129.33
    assert record["facts"]["high_jitter"][0] == "2097152 B out-of-place: i_cv 39.81 %, i_p99 22.66 us"


def test_high_jitter_warns_on_a_multi_rank_run():
    # the same real table judged as a 2-rank run (the rule is about the columns, not the rank count)
    parsed = nccl_tests.parse_text(read(os.path.join(PER_ITER, "all_gather_I1_g1.txt")))
    parsed["ranks"] = 2
    record = _collective.to_record(parsed)
    assert record["status"] == "warn"
    assert record["reason"].startswith("high per-iteration jitter (-I 1): i_cv% above 25 % at 2 size(s)")


def test_no_jitter_columns_no_jitter_metric():
    (record,) = nccl_tool.records(read(H200), Context(rc=0, params={}, collective="all_reduce"))
    assert "iter_cv_max_pct" not in record["metrics"] and "oop_iter_cv_pct" not in record["series"][0]


def test_failed_data_check_with_nonzero_exit_is_fail_keeping_bandwidths():
    # nccl-tests returns non-zero after a failed check (src/common.cu: 'if (errors[0] ...) return testNumResults');
    # the footer of the real H200 run with its count changed to the FAILED form the tool prints
    text = read(H200).replace("# Out of bounds values : 0 OK", "# Out of bounds values : 3 FAILED")
    (record,) = nccl_tool.records(text, Context(rc=1, params={}, collective="all_reduce"))
    assert record["status"] == "fail" and "Out of bounds values : 3 FAILED" in record["reason"]
    assert record["metrics"]["busbw_max_gbyte_s"] == 345.69 and len(record["series"]) == 31


def test_nonzero_exit_without_a_failed_check_stays_error():
    (record,) = nccl_tool.records(read(H200), Context(rc=1, params={}, collective="all_reduce"))
    assert record["status"] == "error" and "rc 1" in record["reason"]


def test_rccl_tests_output_imports_with_the_same_metrics():
    text = read(os.path.join(FIXTURES, "rocm-issue5571-rccl-tests-2node-r9700-all-reduce-version-line-no-hash.txt"))
    (record,) = nccl_tool.records(text, Context(rc=0, params={}, collective="all_reduce"))
    assert record["status"] == "pass" and record["facts"]["gpu_models"] == ["AMD Radeon AI PRO R9700"]
    assert record["metrics"]["busbw_max_gbyte_s"] == 10.77 and record["metrics"]["busbw_avg_gbyte_s"] == 3.51213
    assert record["metrics"]["ranks"] == 2 and record["metrics"]["wrong_total"] == 0 and len(record["series"]) == 25
    assert record["facts"]["hosts"] == ["bootes", "corona"]
