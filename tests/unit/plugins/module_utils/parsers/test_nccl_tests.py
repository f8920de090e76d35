# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""nccl-tests parser: every captured output, goldens, hand-read figures, fuzzing."""

from __future__ import annotations

import json
import os
import sys

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import ParseError
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import nccl_tests
from ansible_collections.aifabric.acceptance.tests.unit.plugins.module_utils.parsers.mutations import mutated as mutated_text
from ansible_collections.aifabric.acceptance.tests.unit.helpers import parser_fixture, read

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = parser_fixture("nccl_tests")
GOLDEN = os.path.join(FIXTURES, "golden")


def _fixture_files():
    out = []
    for root, dirs, files in os.walk(FIXTURES):
        dirs[:] = [d for d in dirs if d != "golden"]
        for name in files:
            if name.endswith((".txt", ".json")):
                out.append(os.path.relpath(os.path.join(root, name), FIXTURES))
    return sorted(out)


FILES = _fixture_files()


def _golden_path(rel):
    return os.path.join(GOLDEN, rel + ".parsed.json")


def _parse_or_error(rel):
    try:
        return nccl_tests.parse(read(FIXTURES, rel))
    except ParseError as exc:
        return {"parse_error": str(exc)}


def test_every_shared_capture_is_here():
    # 15 public captures + 10 nccl-tests files of the H200x2 run + 3 '-I 1' runs on 1x H100.
    assert len(FILES) == 28


@pytest.mark.parametrize("rel", FILES, ids=FILES)
def test_matches_golden(rel):
    with open(_golden_path(rel), encoding="utf-8") as handle:
        golden = json.load(handle)
    assert _parse_or_error(rel) == golden


# Figures read by eye from the files (not from the parser): last row, footer, counts.
HAND_READ = {
    "h200x2-nccl-tests-2.19.6/all_reduce_g2.txt": dict(
        version="2.19.6", nccl="2.28.9", coll="all_reduce", ranks=2, rows=31, avg=111.153,
        last=(8589934592, 24912.2, 344.81, 344.81, 0, 24848.8, 345.69, 345.69, 0)),
    "h200x2-nccl-tests-2.19.6/all_reduce.json": dict(
        version=None, nccl="2.28.9", coll="all_reduce", ranks=2, rows=31, avg=111.152976,
        last=(8589934592, 24912.2084, 344.808234, 344.808234, 0, 24848.77955, 345.68839, 345.68839, 0)),
    "h200x2-nccl-tests-2.19.6/alltoall_g2.txt": dict(
        version="2.19.6", nccl="2.28.9", coll="alltoall", ranks=2, rows=31, avg=102.64,
        last=(8589934592, 12716.3, 675.51, 337.75, 0, 11771.2, 729.74, 364.87, None)),
    "h200x2-nccl-tests-2.19.6/all_reduce_debug.txt": dict(
        version="2.19.6", nccl="2.28.9", coll="all_reduce", ranks=2, rows=1, avg=260.886,
        last=(67108864, 256.39, 261.75, 261.75, 0, 258.09, 260.02, 260.02, 0)),
    "pkb-all-reduce-2node-K80-validation0-no-group-col.txt": dict(
        version=None, nccl=None, coll=None, ranks=2, rows=11, avg=0.565546,
        last=(1073741824, 1752724.0, 0.61, 0.61, None, 1763386.0, 0.61, 0.61, None)),
    "superbench-alltoall-8xA100-old-empty-redop.txt": dict(
        version=None, nccl=None, coll=None, ranks=8, rows=34, avg=58.6481,
        last=(8589934592, 33508.0, 256.36, 224.31, None, 33234.0, 258.47, 226.16, None)),
    "rccl-tests-all-reduce-footer-errors-with-asterisks-fragment.txt": dict(
        version=None, nccl=None, coll="all_reduce", ranks=None, rows=4, avg=142.652,
        last=(17179869184, 89235.0, 192.52, 360.98, 0, 89189.0, 192.62, 361.17, 0)),
    "issue104-sendrecv-old-error-col-3e+02-inplace-fragment.txt": dict(
        version=None, nccl=None, coll=None, ranks=None, rows=1, avg=None,
        last=(37748744, 11732.0, 3.22, 3.22, 0.0, 11698.0, 3.23, 3.23, 300.0)),
}


@pytest.mark.parametrize("rel", sorted(HAND_READ), ids=sorted(HAND_READ))
def test_hand_read_figures(rel):
    want = HAND_READ[rel]
    got = nccl_tests.parse(read(FIXTURES, rel))
    assert got["version"] == want["version"]
    assert got["nccl_version"] == want["nccl"]
    assert got["collective"] == want["coll"]
    assert got["ranks"] == want["ranks"]
    assert len(got["rows"]) == want["rows"]
    assert got["avg_busbw_gbyte_s"] == want["avg"]
    last = got["rows"][-1]
    oop, ip = last["out_of_place"], last["in_place"]
    assert (last["size"], oop["time_us"], oop["algbw_gbyte_s"], oop["busbw_gbyte_s"], oop["wrong"],
            ip["time_us"], ip["algbw_gbyte_s"], ip["busbw_gbyte_s"], ip["wrong"]) == want["last"]


def test_text_and_json_of_the_same_run_agree():
    for coll in ("all_reduce", "all_gather", "alltoall", "reduce_scatter"):
        text = nccl_tests.parse(read(FIXTURES, "h200x2-nccl-tests-2.19.6/%s_g2.txt" % coll))
        doc = nccl_tests.parse(read(FIXTURES, "h200x2-nccl-tests-2.19.6/%s.json" % coll))
        assert [r["size"] for r in text["rows"]] == [r["size"] for r in doc["rows"]]
        for a, b in zip(text["rows"], doc["rows"]):
            # The text rounds to 2 decimals (or fewer digits for big times).
            assert abs(a["out_of_place"]["busbw_gbyte_s"] - b["out_of_place"]["busbw_gbyte_s"]) <= 0.006
            assert abs(a["out_of_place"]["time_us"] - b["out_of_place"]["time_us"]) <= max(0.06, b["out_of_place"]["time_us"] * 1e-5)
        assert text["ranks"] == doc["ranks"] == 2


def test_failure_lines_and_warnings_are_kept():
    got = nccl_tests.parse(read(FIXTURES, "issue166-2node-shm-nccl-warn-test-failure-interleaved-fragment.txt"))
    assert got["failures"][0].startswith("ubuntu: Test NCCL failure common.cu:958")
    assert got["failures"][1] == ".. ubuntu pid 9621: Test failure common.cu:842"
    assert "NCCL WARN Error while creating shared memory segment" in got["warnings"][0]
    assert got["rows"] == []
    toomany = nccl_tests.parse(read(FIXTURES, "h200x2-nccl-tests-2.19.6/all_reduce_toomany.txt"))
    assert toomany["failures"][0] == "Invalid number of GPUs: 3 requested but only 2 were found."
    assert toomany["params"]["ngpus"] == 3 and toomany["complete"] is False


def test_duplicated_headers_of_a_non_mpi_build():
    got = nccl_tests.parse(read(FIXTURES, "issue107-mpirun-without-MPI-build-duplicated-headers-rank0-twice-fragment.txt"))
    assert got["duplicate_ranks"] == [0]
    assert got["duplicate_headers"] == 1
    assert [d["host"] for d in got["devices"]] == ["ip-172-31-20-228", "ip-172-31-22-230"]


def test_oldest_layout_and_versions():
    got = nccl_tests.parse(read(FIXTURES, "issue5-2018-nccl1-old-header-bytes-N-res-nccl-failure.txt"))
    assert got["nccl_version"] == "1.0" and got["wrong_kind"] == "max_error"
    assert got["params"]["ngpus"] == 8 and got["ranks"] == 8
    assert got["devices"][0]["pid"] is None and got["devices"][0]["host"] == "node03"
    bcast = nccl_tests.parse(read(FIXTURES, "issue82-broadcast-mpirun-2node-nccl-warn-before-header-fragment.txt"))
    assert bcast["nccl_version"] == "2.9.6"
    assert bcast["rows"][0]["root"] == 0 and bcast["rows"][0]["redop"] is None
    assert len(bcast["warnings"]) == 2


def test_mpi_tag_output_prefixes_are_stripped():
    text = read(FIXTURES, "h200x2-nccl-tests-2.19.6/all_reduce_g2.txt")
    tagged = "\n".join("[1,0]<stdout>:" + line for line in text.splitlines())
    plain = nccl_tests.parse(text)
    assert nccl_tests.parse(tagged)["rows"] == plain["rows"]


def test_truncated_run_keeps_its_rows_and_says_incomplete():
    lines = read(FIXTURES, "h200x2-nccl-tests-2.19.6/all_reduce_g2.txt").splitlines()
    cut = nccl_tests.parse("\n".join(lines[:20]))
    assert cut["complete"] is False and len(cut["rows"]) == 8


@pytest.mark.parametrize("bad", [
    "", "hello world\n", "{not json", '{"results": 3}',
])
def test_unreadable_output_raises_parse_error(bad):
    with pytest.raises(ParseError):
        nccl_tests.parse(bad)


def test_bad_row_quotes_the_line():
    text = read(FIXTURES, "h200x2-nccl-tests-2.19.6/all_reduce_g2.txt").replace(
        "    67108864      16777216     float     sum      -1   257.67",
        "    67108864      16777216     float     sum      -1   25x.67")
    with pytest.raises(ParseError) as err:
        nccl_tests.parse(text)
    assert "25x.67" in str(err.value)


# --- fuzzing: only ParseError may escape ---------------------------------------------

@st.composite
def mutated(draw):
    return draw(mutated_text(read(FIXTURES, draw(st.sampled_from(FILES)))))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_fuzz_only_parse_error_escapes(text):
    try:
        nccl_tests.parse(text)
    except ParseError:
        pass


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_fuzz_random_text(text):
    try:
        nccl_tests.parse(text)
    except ParseError:
        pass


@pytest.mark.parametrize("path,value", [
    (("results", 0, "count"), float("nan")), (("results", 0, "size"), float("inf")), (("config", "ngpus"), float("inf")),
    (("results", 0, "in_place", "nwrong"), float("nan")), (("out_of_bounds", "count"), float("nan")),
    (("results", 0, "root"), "nan"), (("results", 0, "size"), 2.5), (("results", 0, "count"), "1e400"),
    (("results", 0, "out_of_place"), [1]), (("config", "devices"), [3]), (("results", 0, "size"), True),
])
def test_json_odd_values_are_none_or_parse_error(path, value):
    doc = json.loads(read(FIXTURES, "h200x2-nccl-tests-2.19.6/all_reduce.json"))
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    try:
        got = nccl_tests.parse_json(json.dumps(doc))
    except ParseError as exc:
        assert "nccl-tests JSON" in str(exc)
    else:
        assert len(got["rows"]) == 31


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8)


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_fuzz_json_structure(data):
    """Real -J documents with fields replaced by arbitrary JSON values: only ParseError may escape."""
    doc = json.loads(read(FIXTURES, "h200x2-nccl-tests-2.19.6/%s.json" % data.draw(
        st.sampled_from(["all_reduce", "all_gather", "alltoall", "reduce_scatter"]))))
    for _step in range(data.draw(st.integers(1, 4))):
        where = data.draw(st.sampled_from(["top", "config", "row", "cell", "device"]))
        value = data.draw(JSON_VALUES)
        if where == "top":
            doc[data.draw(st.sampled_from(sorted(doc)))] = value
        elif where == "config" and isinstance(doc.get("config"), dict) and doc["config"]:
            doc["config"][data.draw(st.sampled_from(sorted(doc["config"])))] = value
        elif where in ("row", "cell") and isinstance(doc.get("results"), list) and doc["results"]:
            i = data.draw(st.integers(0, len(doc["results"]) - 1))
            row = doc["results"][i]
            if where == "row" or not isinstance(row, dict):
                doc["results"][i] = value
            else:
                key = data.draw(st.sampled_from(sorted(row) or ["size"]))
                if isinstance(row.get(key), dict) and row[key] and data.draw(st.booleans()):
                    row[key][data.draw(st.sampled_from(sorted(row[key])))] = value
                else:
                    row[key] = value
        elif where == "device" and isinstance(doc.get("config"), dict) and isinstance(doc["config"].get("devices"), list):
            doc["config"]["devices"].append(value)
    try:
        nccl_tests.parse_json(json.dumps(doc))
    except ParseError:
        pass


def _regen():
    for rel in FILES:
        path = _golden_path(rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(_parse_or_error(rel), handle, indent=1, sort_keys=True)
            handle.write("\n")
        print("wrote", os.path.relpath(path, FIXTURES))


if __name__ == "__main__" and "--regen" in sys.argv:
    _regen()
