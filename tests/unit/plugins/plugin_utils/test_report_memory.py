# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report's memory at fleet scale (issue 39): a results.json read a batch of records at a time, the files
written a chunk at a time; the same values and the same bytes as reading and writing them whole.

Inputs are REAL: the results.json files of tests/unit/plugins/plugin_utils/fixtures (the 2x H200 acceptance and
judgement runs, the golden ring-8 report), read with chunk and batch sizes made small so that every boundary
case (a batch end inside a record, a read that ends inside a value, the array's last batch) happens on them.
The peak RSS these changes bring is measured in bench/report_scale.py, never asserted here.
"""

from __future__ import annotations

import io
import json
import os

import hypothesis
import hypothesis.strategies as st
import pytest

from ansible_collections.aifabric.acceptance.plugins.plugin_utils import ctrf, fleet, normalize, render

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "fixtures")
REAL = [os.path.join(FIXTURES, "golden", "h200x2-ring8.results.json"),
        os.path.join(FIXTURES, "h200x2-judgement", "loaded.results.json"),
        os.path.join(FIXTURES, "h200x2-acceptance-results.json")]


def _text(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def _whole(text):
    """What the reader gave before: the text parsed whole (or the error it raised)."""
    try:
        return normalize.loads_finite(text)
    except ValueError as exc:
        return type(exc), str(exc)


def _batched(text):
    try:
        return normalize.read_document(io.StringIO(text))
    except ValueError as exc:
        return type(exc), str(exc)


@pytest.fixture
def small_batches(monkeypatch):
    def set_sizes(chunk, batch):
        monkeypatch.setattr(normalize, "READ_CHUNK", chunk)
        monkeypatch.setattr(normalize, "BATCH_CHARS", batch)
    return set_sizes


@pytest.mark.parametrize("path", REAL)
@pytest.mark.parametrize("chunk,batch", [(1, 1), (7, 300), (4096, 2000), (1 << 23, 1 << 22)])
def test_a_real_results_json_reads_as_parsed_whole(path, chunk, batch, small_batches):
    small_batches(chunk, batch)
    text = _text(path)
    got, want = _batched(text), _whole(text)
    assert json.dumps(got) == json.dumps(want)
    assert list(got[0]) == list(want[0])        # the keys in the file's order


def test_record_starts_inside_records_and_other_layouts_read_the_same(small_batches):
    """A series row with a host key and a reason quoting a record start (a batch that ends there does not parse:
    the next start is tried), an indented file and keys after the records (parsed whole, as before)."""
    small_batches(1, 100)
    doc = dict({"a_number": 1234567.25e3, "a_word": "true"}, **json.loads(_text(REAL[0])))     # read a character at a time
    doc["records"][2]["series"] = [{"host": "x", "v": 1}, {"host": "y", "v": 2.5}] * 30
    doc["records"][3]["reason"] = 'quoted ,{"host": inside a reason'
    doc["records"][4]["metrics"]["nan_metric"] = float("nan")
    for text in (json.dumps(doc, ensure_ascii=False, separators=(",", ":")), json.dumps(doc, indent=1),
                 json.dumps(dict(doc, after=[1, {"host": 2}]), separators=(",", ":")),
                 json.dumps(dict(doc, records=[])), "\ufeff" + json.dumps(doc), json.dumps(doc) + " x"):
        got, want = _batched(text), _whole(text)
        assert json.dumps(got, default=str) == json.dumps(want, default=str)
    assert _batched(json.dumps(doc))[1] is False        # the NaN constant is seen, as loads_finite sees it


def test_repeated_strings_are_one_object():
    """Host, check, status and start time of every record, the text of facts and tool, the text columns of a series:
    one copy each (a 1000-host fleet repeats a few thousand strings millions of times: 218 MiB of 853)."""
    data, _finite = normalize.read_document(io.StringIO(_text(REAL[1])))
    records = data["records"]
    for key in ("host", "check", "status", "started"):
        values = [r[key] for r in records if isinstance(r.get(key), str)]
        assert len(set(map(id, values))) == len(set(values)), key
    units = [row["type"] for r in records for row in r["series"] if "type" in row]      # nccl-tests' data type
    assert units and len(set(map(id, units))) == len(set(units))


@hypothesis.settings(max_examples=150, deadline=None,      # (the sizes monkeypatched are the same for every example)
                     suppress_health_check=[hypothesis.HealthCheck.function_scoped_fixture])
@hypothesis.given(data=st.data())
def test_a_mutated_results_json_reads_as_parsed_whole_or_fails_alike(data, monkeypatch):
    """Any damage to a real file (a cut, a byte changed, a piece repeated): the same value, or the same error."""
    monkeypatch.setattr(normalize, "READ_CHUNK", 97)
    monkeypatch.setattr(normalize, "BATCH_CHARS", 500)
    text = _text(REAL[1])
    at = data.draw(st.integers(min_value=0, max_value=len(text) - 1))
    how = data.draw(st.sampled_from(["cut", "replace", "repeat", "insert"]))
    piece = data.draw(st.text(alphabet=',{}[]":0aZ \n\\', min_size=1, max_size=3))
    end = min(len(text), at + data.draw(st.integers(min_value=1, max_value=400)))
    mutated = {"cut": text[:at], "replace": text[:at] + piece + text[at + len(piece):],
               "repeat": text[:end] + text[at:end] + text[end:], "insert": text[:at] + piece + text[at:]}[how]
    assert json.dumps(_batched(mutated), default=str) == json.dumps(_whole(mutated), default=str)


def test_read_results_reads_a_results_json_and_a_record_stream_as_before(tmp_path):
    data, finite = fleet.read_results(REAL[1])
    assert finite and data == json.loads(_text(REAL[1]))
    path = str(tmp_path / "records.jsonl")
    col = fleet.Collector()
    col.open_stream(path, run={"run_id": "r1", "started": "2026-11-23T10:00:00Z"})
    col.target(["n1"])
    col.task_ok("n1", "t1", "probe", {"results": [{"check": "env.os", "status": "pass"}]})
    col.close_stream()
    stream, finite = fleet.read_results(path)
    assert not finite and [r["check"] for r in stream["records"]] == ["env.os"]


@pytest.mark.parametrize("per_chunk", [1, 3, 2000])
def test_the_files_written_a_chunk_at_a_time_are_the_files_written_whole(per_chunk, monkeypatch):
    """results.json is json.dumps of the report and ctrf.json of ctrf.document, whatever the chunk size; junit.xml
    joined from its per-host chunks is the golden file."""
    monkeypatch.setattr(render, "JSON_CHUNK_RECORDS", per_chunk)
    monkeypatch.setattr(ctrf, "CHUNK_TESTS", per_chunk)
    data, finite = fleet.read_results(REAL[0])
    report = fleet.reanalyze(data, plain_json=finite)
    report["history"] = {"db": None, "deltas": []}
    whole = json.dumps(report, ensure_ascii=False, allow_nan=False, separators=(",", ":"), default=str) + "\n"
    assert render.render_format("json", report) == whole
    assert render.render_format("ctrf", report) == json.dumps(
        ctrf.document(report), ensure_ascii=False, allow_nan=False, separators=(",", ":"), default=str) + "\n"
    chunks = list(render.junit_chunks(report))
    assert len(chunks) == 2 + len(set(r["host"] for r in report["records"]))     # header, one per host, the end
    assert "".join(chunks) == render.render_format("junit", report)


def test_an_unchanged_file_is_left_alone_and_a_changed_one_replaced(tmp_path):
    data, finite = fleet.read_results(REAL[1])
    report = fleet.reanalyze(data, plain_json=finite)
    report["history"] = {"db": None, "deltas": []}
    files, changed = render.write_report(report, str(tmp_path), ["json", "junit"])
    assert changed == ["json", "junit"]
    before = os.stat(files["json"]).st_mtime_ns, os.stat(files["json"]).st_ino
    assert render.write_report(report, str(tmp_path), ["json", "junit"])[1] == []
    assert (os.stat(files["json"]).st_mtime_ns, os.stat(files["json"]).st_ino) == before
    with open(files["junit"], "a", encoding="utf-8") as handle:
        handle.write("<!-- a longer file -->\n")
    assert render.write_report(report, str(tmp_path), ["json", "junit"], check_mode=True)[1] == ["junit"]
    assert render.write_report(report, str(tmp_path), ["json", "junit"])[1] == ["junit"]
    assert sorted(os.listdir(str(tmp_path))) == ["junit.xml", "results.json"]       # no temporary left
