# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""HCCL Test parser and records: every captured output, goldens, hand-read figures, launcher prefixes, fuzzing."""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import HealthCheck, given, settings

from ansible_collections.aifabric.acceptance.plugins.module_utils import results
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import hccl
from ansible_collections.aifabric.acceptance.tests.unit.plugins.module_utils.parsers.mutations import mutated
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import Context
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import hccl_test as hccl_tool
from ansible_collections.aifabric.acceptance.tests.unit.helpers import parser_fixture, read

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = parser_fixture("hccl_test")
GOLDEN = os.path.join(FIXTURES, "golden")
FILES = sorted(f for f in os.listdir(FIXTURES) if f.endswith(".txt"))
DOCS_8NPU = "oam-tools-docs-all-reduce-8npu-8K-64M-avg-time-header.txt"
VM_16 = "hccl-vm-all-reduce-2MB-16rank-aveg-time.txt"
RETCODE7 = "oam-tools-faq-retcode7-init-hcclcomm-failure.txt"
MPICH = "oam-tools-faq-mpich-gethostbyname-failed.txt"


def test_every_capture_is_here_with_provenance():
    assert len(FILES) == 5
    with open(os.path.join(FIXTURES, "PROVENANCE.md"), encoding="utf-8") as handle:
        provenance = handle.read()
    assert all("`%s`" % name in provenance for name in FILES)


@pytest.mark.parametrize("name", FILES)
def test_matches_golden(name):
    with open(os.path.join(GOLDEN, name + ".parsed.json"), encoding="utf-8") as handle:
        assert hccl.parse(read(FIXTURES, name)) == json.load(handle)


def test_docs_table_read_by_eye():
    parsed = hccl.parse(read(FIXTURES, DOCS_8NPU))
    assert parsed["prologue"] == {"min_bytes": 8192, "max_bytes": 67108864, "iters": 20, "warmup_iters": 5}
    assert parsed["time_spelling"] == "avg_time" and parsed["complete"] and len(parsed["rows"]) == 14
    assert parsed["rows"][0] == {"size": 8192, "time_us": 764.55, "algbw_gbyte_s": 0.00998, "check": "success"}
    assert parsed["rows"][-1] == {"size": 67108864, "time_us": 2630.2, "algbw_gbyte_s": 23.76245, "check": "success"}


def test_binary_spelling_aveg_time():
    parsed = hccl.parse(read(FIXTURES, VM_16))
    assert parsed["time_spelling"] == "aveg_time" and parsed["prologue"] is None
    assert parsed["rows"] == [{"size": 2097152, "time_us": 1000.0, "algbw_gbyte_s": 2.09715, "check": "success"}]


# busbw factors of nccl-tests (doc/PERFORMANCE.md), n = 8 ranks
@pytest.mark.parametrize("collective,factor", [
    ("all_reduce", 1.75), ("all_gather", 0.875), ("reduce_scatter", 0.875), ("alltoall", 0.875),
    ("broadcast", 1.0), ("reduce", 1.0)])
def test_busbw_uses_the_nccl_tests_factor(collective, factor):
    (record,) = hccl_tool.records(read(FIXTURES, DOCS_8NPU), Context(rc=0, params={"npus_per_node": 8}, collective=collective))
    assert record["status"] == "pass" and record["check"] == "hccl.%s" % collective
    assert record["metrics"]["algbw_max_gbyte_s"] == 23.76245
    assert record["metrics"]["busbw_max_gbyte_s"] == pytest.approx(23.76245 * factor, rel=1e-6)
    assert record["metrics"]["ranks"] == 8 and record["metrics"]["check_failed_total"] == 0
    assert record["series"][-1]["oop_busbw_gbyte_s"] == pytest.approx(23.76245 * factor, rel=1e-6)
    assert record["series"][-1]["check_result"] == "success"
    assert results.validate(record) == []


def test_multi_node_ranks_from_hosts():
    params = {"npus_per_node": 8, "ranks_per_node": 8, "hosts": ["a", "b"]}
    (record,) = hccl_tool.records(read(FIXTURES, VM_16), Context(rc=0, params=params, hosts=["a", "b"], collective="all_reduce"))
    assert record["metrics"]["ranks"] == 16
    assert record["metrics"]["busbw_max_gbyte_s"] == pytest.approx(2.09715 * 2 * 15 / 16, rel=1e-6)
    assert record["facts"]["launch"] == "mpirun" and record["facts"]["nodes"] == 2


def test_unknown_ranks_leaves_busbw_null():
    record = hccl_tool.records(read(FIXTURES, VM_16), Context(collective="all_reduce"))[0]
    assert record["metrics"]["busbw_max_gbyte_s"] is None and record["metrics"]["algbw_max_gbyte_s"] == 2.09715
    assert "busbw not computed" in record["facts"]["busbw_note"]


def test_init_hcclcomm_failure_is_error_with_the_tools_message():
    (record,) = hccl_tool.records(read(FIXTURES, RETCODE7), Context(rc=1, params={"npus_per_node": 8}, collective="all_reduce"))
    assert record["status"] == "error"
    assert record["reason"].startswith("HCCL Test failed: hccl interface return err ./common/src/hccl_test_common.cc:538"
                                       ", retcode: 7 (This is an error in init_hcclComm.)")
    assert "4 such lines" in record["reason"] and "retcode: 7" in record["raw"]


def test_mpich_failure_is_error_with_the_deepest_cause():
    (record,) = hccl_tool.records(read(FIXTURES, MPICH), Context(rc=1, params={"npus_per_node": 8}, collective="all_reduce"))
    assert record["status"] == "error"
    assert record["reason"] == ("the MPI launcher failed before HCCL Test ran: Fatal error in MPI_Init: Other MPI "
                                "error, error stack: gethostbyname failed, HW-AI-LC-1-1 (errno 2)")


def _with_lines(text, index, new):
    lines = text.splitlines(True)
    lines[index] = new
    return "".join(lines)


def test_failed_check_is_fail_and_keeps_bandwidths():
    # the docs' capture with one row's check word changed to the tool's 'failed' (see PROVENANCE: no public
    # capture of a failed check exists); every figure stays the measured one
    text = _with_lines(read(FIXTURES, DOCS_8NPU), 9, "1048576           |    1778.30    |       0.54916        | failed\n")
    (record,) = hccl_tool.records(text, Context(rc=0, params={"npus_per_node": 8}, collective="all_reduce"))
    assert record["status"] == "fail" and record["reason"].startswith("check_result failed at 1 of 14 sizes")
    assert record["metrics"]["check_failed_total"] == 1 and record["metrics"]["algbw_max_gbyte_s"] == 23.76245
    assert [r["check_result"] for r in record["series"]].count("failed") == 1


def test_check_off_is_null_not_judged():
    text = "".join(line.replace("| success", "| NULL") for line in read(FIXTURES, DOCS_8NPU).splitlines(True))
    (record,) = hccl_tool.records(text, Context(rc=0, params={"npus_per_node": 8}, collective="all_reduce"))
    assert record["status"] == "pass"
    assert record["metrics"]["check_null_total"] == 14 and record["metrics"]["check_failed_total"] is None


def test_truncated_table_is_error_keeping_rows():
    text = "".join(read(FIXTURES, DOCS_8NPU).splitlines(True)[:10])
    (record,) = hccl_tool.records(text, Context(rc=None, params={"npus_per_node": 8}, collective="all_reduce"))
    assert record["status"] == "error" and "before the maxbytes 67108864" in record["reason"]
    assert len(record["series"]) == 8 and record["metrics"]["algbw_max_gbyte_s"] == 0.54916


def test_nonzero_rc_after_a_full_table_is_error():
    (record,) = hccl_tool.records(read(FIXTURES, DOCS_8NPU), Context(rc=1, params={"npus_per_node": 8}, collective="all_reduce"))
    assert record["status"] == "error" and "rc 1" in record["reason"]


@pytest.mark.parametrize("prefix", [" 0: ", "12: ", "[1,0]<stdout>:", "(head, rank=0, pid=3808) [1,0]<stdout>:"])
def test_launcher_prefixes_are_stripped(prefix):
    text = "".join(prefix + line for line in read(FIXTURES, DOCS_8NPU).splitlines(True))
    parsed = hccl.parse(text)
    plain = hccl.parse(read(FIXTURES, DOCS_8NPU))
    assert parsed["rows"] == plain["rows"] and parsed["prologue"] == plain["prologue"]
    assert parsed["prefixes_stripped"] == 16


def test_profile_rule_applies_to_hccl_records():
    params = {"npus_per_node": 8, "expect": {"hccl.all_reduce": {"busbw_max_gbyte_s": {"min": 100}}}}
    (record,) = hccl_tool.records(read(FIXTURES, DOCS_8NPU), Context(rc=0, params=params, collective="all_reduce"))
    assert record["status"] == "fail" and "busbw_max_gbyte_s" in record["reason"]


def test_import_mode(tmp_path):
    path = tmp_path / "all_gather_test.log"
    path.write_text(read(FIXTURES, DOCS_8NPU))
    (record,) = hccl_tool.from_output(str(path), {"ranks": 8})
    assert record["check"] == "hccl.all_gather" and record["status"] == "pass"
    assert record["metrics"]["busbw_max_gbyte_s"] == pytest.approx(23.76245 * 0.875, rel=1e-6)
    assert record["facts"]["imported_from"] == str(path)


@pytest.mark.parametrize("name", FILES)
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=__import__("hypothesis").strategies.data())
def test_fuzz_never_raises_and_records_stay_valid(name, data):
    text = data.draw(mutated(read(FIXTURES, name)))
    parsed = hccl.parse(text)
    assert isinstance(parsed["rows"], list)
    (record,) = hccl_tool.records(text, Context(rc=0, params={"npus_per_node": 8}, collective="all_reduce"))
    assert results.validate(record) == [] and record["status"] in ("pass", "fail", "error")
    if record["status"] == "pass":
        assert parsed["rows"] and not parsed["failures"]


def test_parse_of_non_text_is_a_problem_not_an_exception():
    assert hccl.parse(None)["problems"] == ["output is NoneType, not text"]


def test_ascend_profile_judges_an_hccl_record():
    # the docs' 8-NPU all-reduce (busbw 41.6 GB/s at 64 MiB) is far below the 910B floor: fail, naming the source
    (record,) = hccl_tool.records(read(FIXTURES, DOCS_8NPU), Context(
        rc=0, params={"npus_per_node": 8, "profile": "ascend-910b-8npu"}, collective="all_reduce"))
    assert record["status"] == "fail" and record["facts"]["profile"] == "ascend-910b-8npu"
    assert "busbw_max_gbyte_s" in record["reason"] and "HCCS" in record["expect"]["busbw_max_gbyte_s"]["source"]
    # no rule for another collective: pass, with the note
    (record,) = hccl_tool.records(read(FIXTURES, DOCS_8NPU), Context(
        rc=0, params={"npus_per_node": 8, "profile": "ascend-910b-8npu"}, collective="all_gather"))
    assert record["status"] == "pass" and "has no rule for hccl.all_gather" in record["facts"]["profile_note"]


def test_fleet_relative_rule_flags_the_slow_npu_host():
    from ansible_collections.aifabric.acceptance.plugins.plugin_utils import fleet_relative

    # four hosts with the documentation's 8-NPU run, one with the HCCL-VM all-reduce (busbw 3.7 vs 41.6 GB/s)
    records = []
    for host, name in (("a", DOCS_8NPU), ("b", DOCS_8NPU), ("c", DOCS_8NPU), ("d", DOCS_8NPU), ("e", VM_16)):
        (record,) = hccl_tool.records(read(FIXTURES, name), Context(rc=0, params={"npus_per_node": 8}, collective="all_reduce"))
        records.append(dict(record, host=host))
    new, _findings = fleet_relative.analyze(records, {})
    assert [(r["host"], r["check"], r["status"]) for r in new] == [("e", "hccl.all_reduce.fleet", "fail")]
