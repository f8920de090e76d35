# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""nccl-tests column headers and footers without their leading '#' (issue 12, item 5), on a real published output
(fixtures/nccl_tests_layouts, PROVENANCE.md there). Before the change the reader ignored a header line without '#',
took the rows for a header-less fragment, and the record was `error` ("no column header or parameter lines")."""

from __future__ import annotations

import os
import re

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import ParseError
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import nccl_tests
from ansible_collections.aifabric.acceptance.tests.unit.plugins.module_utils.parsers.mutations import mutated
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import Context
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import nccl_test as nccl_tool
from ansible_collections.aifabric.acceptance.tests.unit.helpers import parser_fixture, read

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = parser_fixture()
A3MEGA = os.path.join(FIXTURES, "nccl_tests_layouts", "dstack-a3mega-2node-16xH100-all-gather-tcpxo-no-hash-header-footer.txt")
OLD = os.path.join(FIXTURES, "nccl_tests", "superbench-all-gather-8xA100-old-no-redop-no-root.txt")


def test_header_and_footer_without_hash_as_published():
    parsed = nccl_tests.parse(read(A3MEGA))
    assert parsed["layout_assumed"] is False and parsed["wrong_kind"] == "count" and parsed["complete"] is True
    assert parsed["params"]["iters"] == 200 and parsed["params"]["min_bytes"] == 8388608
    assert len(parsed["rows"]) == 11
    first, last = parsed["rows"][0], parsed["rows"][-1]
    assert (first["size"], first["count"], first["type"], first["redop"], first["root"]) == (
        8388608, 131072, "float", "none", -1)
    assert first["out_of_place"] == {"time_us": 394.2, "algbw_gbyte_s": 21.28, "busbw_gbyte_s": 19.95, "wrong": None}
    assert last["in_place"]["busbw_gbyte_s"] == 188.37
    assert parsed["out_of_bounds"] == {"count": 0, "ok": True} and parsed["avg_busbw_gbyte_s"] == 125.436


def test_the_record_is_judged_like_any_complete_run():
    (record,) = nccl_tool.records(read(A3MEGA), Context(rc=0, params={}, collective="all_gather"))
    assert record["status"] == "pass" and record["metrics"]["busbw_max_gbyte_s"] == 188.37
    assert record["metrics"]["busbw_avg_gbyte_s"] == 125.436 and len(record["series"]) == 11


def test_an_old_column_set_reads_the_same_without_its_hashes():
    # the 8x A100 pre-2.11 capture (no redop/root, 'error' column) with every leading '#' removed, as the A3 Mega
    # copy lost them: the same rows and footer (no public capture of an old build printed this way was found)
    text = read(OLD)
    stripped = re.sub(r"(?m)^#", "", text)
    assert stripped != text
    plain, bare = nccl_tests.parse(text), nccl_tests.parse(stripped)
    assert bare["rows"] == plain["rows"] and bare["wrong_kind"] == "max_error"
    assert bare["avg_busbw_gbyte_s"] == plain["avg_busbw_gbyte_s"] and bare["layout_assumed"] is False


def test_text_that_only_starts_like_a_header_is_not_one():
    # 'size' followed by words that are not column names stays noise (the rows then need a real header)
    text = "size of the fleet: 16 nodes\n" + read(A3MEGA)
    assert nccl_tests.parse(text)["rows"] == nccl_tests.parse(read(A3MEGA))["rows"]


def test_a_header_with_a_metadata_name_among_the_groups_is_a_parse_error():
    # found by test_fuzz_only_parse_error_escapes (make test, 2026-12-07): a header line repeated into itself, its
    # metadata names after the first group's, raised KeyError out of the parser
    text = ("nThread 1 nGpus 1 minBytes 8388608 maxBytes 8589934592 step: 2(factor) warmup iters: 5 iters: 200 agg "
            "iters: 1 validation: 0 graph: 0\n\n" + " " * 61 + "out-of-place                       in-place\n"
            "      size         count      type   redop    root     time      size         count      type   redop    "
            "root     time")
    try:
        nccl_tests.parse(text)
    except ParseError as exc:
        assert "unexpected column header" in str(exc), exc
    else:
        raise AssertionError("parsed a header whose groups hold metadata names")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_fuzz_only_parse_error_escapes(data):
    text = data.draw(mutated(read(data.draw(st.sampled_from([A3MEGA, OLD])))))
    try:
        nccl_tests.parse(text)
    except ParseError as exc:
        assert str(exc)


def test_json_nccl_version_of_infinity_is_unknown_not_a_crash():
    # found by test_nccl_tests.test_fuzz_json_structure: int(inf) raised OverflowError out of the parser
    assert nccl_tests.nccl_code_to_version(float("inf")) is None
    assert nccl_tests.parse('{"results": [], "nccl_version": Infinity}')["nccl_version"] is None
