# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A record passes only on a valid, complete measurement of what was asked (issue 18 items 2-5).

Every input is a real capture (fixtures of the parser tests and of the module tests), changed only where the
test says how: a title or Device line replaced, a table cut, one figure replaced by an impossible one.
"""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.aifabric.acceptance.plugins.module_utils import (
    expectations, results, thresholds)
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import Context
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import nccl_test as nccl_tool
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import hccl_test as hccl_tool
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import perftest_sweep as perftest_tool
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import gemm_bench as gemm_tool
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import allreduce_probe as torch_allreduce_tool
from ansible_collections.aifabric.acceptance.tests.unit.helpers import parser_fixture

HERE = os.path.dirname(os.path.abspath(__file__))
PARSERS = parser_fixture()
PERFTEST = os.path.join(PARSERS, "perftest")
NCCL = os.path.join(PARSERS, "nccl_tests", "h200x2-nccl-tests-2.19.6")
HCCL = os.path.join(PARSERS, "hccl_test", "oam-tools-docs-all-reduce-8npu-8K-64M-avg-time-header.txt")
PROOF = os.path.join(HERE, "..", "modules", "fixtures", "h200x2-proof-1")
GEMM_PARAMS = {"dtypes": ["bf16", "fp16"], "m": 8192, "n": 8192, "k": 8192, "iterations": 50,
               "warmup_iterations": 10, "warmup_s": 1.0, "profile": "none"}
PROBE_PARAMS = {"min_bytes": "1M", "max_bytes": "8G", "iterations": 20, "warmup_iterations": 5, "datatype": "float",
                "profile": "none"}


def read(*path):
    with open(os.path.join(*path), encoding="utf-8") as handle:
        return handle.read()


def changed(text, old, new, count=1):
    """``text`` with ``old`` replaced by ``new`` (it must be there ``count`` times: the change is the one meant)."""
    assert text.count(old) == count, (old, text.count(old))
    return text.replace(old, new)


def perftest(text, test, device, rc=0, side="client", port=None):
    params = {"test": test, "line_rate_floor_pct": 90, "peer_rates_gbit_s": [port] if port else None, "expect": {}}
    (record,) = perftest_tool.records(text, Context(params=params, rc=rc, side=side, host="a", peer="b", target=device,
                                                    argv=[test], facts={"port_rate_gbit_s": port} if port else {}))
    assert results.validate(record) == []
    return record


# --------------------------------------------------------------------------- item 2: what was asked

def test_perftest_output_of_another_test_on_another_device_is_an_error():
    """The issue's case: asked test=ib_write_bw hcas=mlx5_0, the output is a Send BW Test on mlx5_2 (a real
    HDR capture). Before: pass."""
    text = read(PERFTEST, "hdr-ib-send-bw-client-a-gbits-1qp.txt")
    assert perftest(text, "ib_send_bw", "mlx5_2", port=200.0)["status"] == "pass"
    record = perftest(text, "ib_write_bw", "mlx5_0", port=200.0)
    assert record["status"] == "error"
    assert "asked for ib_write_bw on mlx5_0" in record["reason"] and "'Send BW Test' on mlx5_2" in record["reason"]
    assert record["facts"]["device_reported"] == "mlx5_2" and record["raw"]


@pytest.mark.parametrize("old, new, test, device, needle", [
    ("RDMA_Read BW Test", "Send BW Test", "ib_read_bw", "mlx5_0", "'Send BW Test' on mlx5_0"),     # title changed
    ("Device         : mlx5_0", "Device         : mlx5_3", "ib_read_bw", "mlx5_0", "on mlx5_3"),  # device changed
])
def test_perftest_title_and_device_are_compared_with_what_was_asked(old, new, test, device, needle):
    text = read(PERFTEST, "cx7-ndr-ib-read-bw-client-report-gbits-cpufreq-warning.txt")
    assert perftest(text, test, device, port=400.0)["status"] == "pass"
    record = perftest(changed(text, old, new), test, device, port=400.0)
    assert record["status"] == "error" and needle in record["reason"]


def test_perftest_server_output_of_another_device_is_an_error():
    text = read(PERFTEST, "amd-ionic-rocm-gdr-ib-write-bw-server-a-MiB-only-last-size.txt")
    assert perftest(text, "ib_write_bw", "ionic_0", side="server")["status"] == "pass"
    record = perftest(text, "ib_write_bw", "ionic_1", side="server")
    assert record["status"] == "error" and "on ionic_0" in record["reason"]


def test_nccl_output_of_another_collective_is_an_error():
    """A real all_reduce run (text, then its -J document) returned for an all_gather request. Before: pass."""
    text, doc = read(NCCL, "all_reduce_g2.txt"), read(NCCL, "all_reduce.json")
    good = nccl_tool.records(text, Context(rc=0, params={}, collective="all_reduce"))[0]
    assert good["status"] == "pass"
    for json_text in (None, doc):
        record = nccl_tool.records(text, Context(rc=0, params={}, collective="all_gather", document=json_text))[0]
        assert record["check"] == "nccl.all_gather" and record["status"] == "error"
        assert "asked for all_gather, but the output is of all_reduce" in record["reason"]


def test_probe_document_of_another_collective_is_an_error():
    doc = read(PROOF, "probe_spawn.json")
    output = read(PROOF, "probe_spawn.txt")
    good = torch_allreduce_tool.records(output, Context(
        document=doc, rc=0, params=PROBE_PARAMS, gpu_name="NVIDIA H200", gpus=2))[0]
    assert good["status"] == "pass"
    other = changed(doc, '"args": ["all_reduce_perf"', '"args": ["alltoall_perf"')
    record = torch_allreduce_tool.records(output, Context(
        document=other, rc=0, params=PROBE_PARAMS, gpu_name="NVIDIA H200", gpus=2))[0]
    assert record["status"] == "error" and "output is of alltoall" in record["reason"]


# --------------------------------------------------------------------------- item 3: a complete table

def _cut_after(text, marker):
    """The capture up to and including the line that starts with ``marker`` (the rest lost, as by a kill)."""
    lines = text.splitlines(True)
    at = next(i for i, line in enumerate(lines) if line.strip().startswith(marker))
    return "".join(lines[:at + 1])


@pytest.mark.parametrize("name, test, device, last", [
    ("mlx4-ib-write-bw-client-a-all-sizes-MB.txt", "ib_write_bw", "mlx4_0", "65536 "),
    ("mlx4-ib-read-lat-client-a-all-sizes.txt", "ib_read_lat", "mlx4_0", "4096 "),
])
def test_perftest_table_cut_before_its_closing_line_is_an_error(name, test, device, last):
    """A real -a table cut after some rows, before perftest's closing separator (a killed run, a cut capture),
    with rc 0 (an imported capture has none). Before: judged on the last row printed (pass or warn)."""
    whole = perftest(read(PERFTEST, name), test, device)
    cut = perftest(_cut_after(read(PERFTEST, name), last), test, device)
    assert whole["status"] in ("pass", "warn")
    assert cut["status"] == "error" and "ends inside its table" in cut["reason"] and cut["raw"]
    assert 0 < len(cut["series"]) < len(whole["series"])


def test_gemm_output_without_every_asked_dtype_is_an_error():
    """The real 2-GPU GEMM output cut before GPU 1's fp16 line. Before: 3 pass records and nothing missing."""
    text = read(PROOF, "gemm_bare.txt")
    cut = "".join(text.splitlines(True)[:3])
    records = gemm_tool.records(cut, Context(rc=0, params=GEMM_PARAMS))
    missing = [r for r in records if r["status"] == "error"]
    assert [(r["check"], r["target"]) for r in missing] == [("gpu.gemm_fp16", "1")]
    assert "no GEMM fp16 result for GPU 1" in missing[0]["reason"]
    asked = gemm_tool.records(text, Context(rc=0, params=dict(GEMM_PARAMS, gpu_indices=[0, 1, 2])))
    assert [(r["check"], r["target"]) for r in asked if r["status"] == "error"] == [
        ("gpu.gemm_bf16", "2"), ("gpu.gemm_fp16", "2")]
    assert all(r["status"] == "pass" for r in gemm_tool.records(text, Context(rc=0, params=GEMM_PARAMS)))


# --------------------------------------------------------------------------- item 4: physical ranges

@pytest.mark.parametrize("name, test, device, old, new, needle", [
    # a row that ran no iteration
    ("cx7-ndr-ib-send-bw-client-MiB-per-sec-cpufreq-warning.txt", "ib_send_bw", "mlx5_0",
     " 65536      1000 ", " 65536      0    ", "iterations_count 0 < 1"),
    # a negative latency
    ("dgx-spark-cx7-ib-write-lat-client-rdma-cm-force-link-ib.txt", "ib_write_lat", "rocep1s0f1",
     "1.42           1.93", "-1.42          1.93", "lat_min_us -1.42 < 0"),
    # more than any link carries
    ("hdr-ib-send-bw-client-a-gbits-1qp.txt", "ib_send_bw", "mlx5_2", "196.69", "99999.99", "> 3200"),
])
def test_perftest_impossible_figures_are_an_error(name, test, device, old, new, needle):
    text = read(PERFTEST, name)
    assert perftest(text, test, device)["status"] in ("pass", "warn", "fail")
    record = perftest(changed(text, old, new, count=text.count(old)), test, device)
    assert record["status"] == "error" and needle in record["reason"] and record["raw"]


def test_perftest_impossible_row_below_the_headline_is_an_error():
    """#iterations 0 on a row that is not the headline row (the series is checked too)."""
    text = read(PERFTEST, "mlx4-ib-write-bw-client-a-all-sizes-MB.txt")
    record = perftest(changed(text, " 64         20000 ", " 64         0     "), "ib_write_bw", "mlx4_0")
    assert record["status"] == "error" and "series row 6 (64 B): iterations 0 < 1" in record["reason"]


def test_nccl_busbw_beyond_any_link_is_an_error():
    text = read(NCCL, "all_reduce_g2.txt")
    line = next(ln for ln in text.splitlines() if ln.split()[:1] == ["8589934592"])
    cells = line.split()
    cells[7] = "99999.0"     # out-of-place busbw of the 8 GiB row
    record = nccl_tool.records(changed(text, line, " ".join(cells)), Context(
        rc=0, params={}, collective="all_reduce"))[0]
    assert record["status"] == "error" and "busbw_max_gbyte_s 99999 > 10000" in record["reason"]


def test_hccl_impossible_time_and_bandwidth_are_an_error():
    text = read(HCCL)
    assert hccl_tool.records(text, Context(rc=0, params={"ranks": 8}, collective="all_reduce"))[0]["status"] == "pass"
    negative = changed(text, "764.55", "-764.55")
    record = hccl_tool.records(negative, Context(rc=0, params={"ranks": 8}, collective="all_reduce"))[0]
    assert record["status"] == "error" and "oop_time_us -764.55 < 0" in record["reason"] and record["raw"]
    fast = changed(text, "23.76245", "23762.45")
    record = hccl_tool.records(fast, Context(rc=0, params={"ranks": 8}, collective="all_reduce"))[0]
    assert record["status"] == "error" and "algbw_max_gbyte_s 23762.45 > 10000" in record["reason"]


def test_gemm_with_no_iteration_claiming_an_impossible_rate_is_an_error():
    """The issue's case: 0 iterations and 99,999,999 TFLOP/s on a real GEMM result line."""
    text = read(PROOF, "gemm_bare.txt")
    first = text.splitlines()[0]
    item = json.loads(first.split(" ", 1)[1])
    item.update(iters=0, tflops=99999999)
    bad = changed(text, first, "AIFABRIC_GEMM " + json.dumps(item))
    record = gemm_tool.records(bad, Context(rc=0, params=GEMM_PARAMS))[0]
    assert record["status"] == "error" and record["raw"]
    assert "iters_count 0 < 1" in record["reason"] and "tflops 99999999 > 20000" in record["reason"]


def test_probe_negative_time_is_an_error():
    doc = json.loads(read(PROOF, "probe_spawn.json"))
    doc["results"][0]["in_place"]["time"] = -5.0
    record = torch_allreduce_tool.records(read(PROOF, "probe_spawn.txt"), Context(
        document=json.dumps(doc), rc=0, params=PROBE_PARAMS, gpu_name="NVIDIA H200", gpus=2))[0]
    assert record["status"] == "error" and "ip_time_us -5 < 0" in record["reason"]


def test_physical_ranges_are_data_with_a_reason_and_the_check_is_idempotent():
    for name, low, high, why in thresholds.PHYSICAL_RANGES:
        assert why and (low is not None or high is not None), name
    record = results.make("gpu.gemm_bf16", "fail", reason="tflops 1 < 600", metrics={"tflops": 1e9, "iters_count": 1})
    once = expectations.physical_check(record)
    assert once["status"] == "error" and once["reason"].endswith("; tflops 1 < 600")
    assert expectations.physical_check(once) == once
    skipped = results.skip("nccl.all_reduce", "1 rank", metrics={"algbw_max_gbyte_s": 3e6})
    assert expectations.physical_check(skipped) == skipped      # a skip claims no judged measurement


# --------------------------------------------------------------------------- item 5: a non-zero exit

def test_non_zero_exit_after_a_table_is_an_error_for_perftest_as_for_nccl_tests():
    """perftest said warn (rc 1 after a whole table; headline = the last size printed), nccl_test error."""
    text = read(PERFTEST, "mlx4-ib-write-bw-client-a-all-sizes-MB.txt")
    whole = perftest(text, "ib_write_bw", "mlx4_0", rc=1)
    partial = perftest(_cut_after(text, "65536 ") + "-" * 87 + "\n", "ib_write_bw", "mlx4_0", rc=1)
    nccl = nccl_tool.records(read(NCCL, "all_reduce_g2.txt"), Context(rc=1, params={}, collective="all_reduce"))[0]
    assert whole["status"] == partial["status"] == nccl["status"] == "error"
    assert "exited with rc 1 after printing its table" in partial["reason"]
    assert partial["metrics"]["msg_size_bytes"] == 65536 and partial["raw"]
