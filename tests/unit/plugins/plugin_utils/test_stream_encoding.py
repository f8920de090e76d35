# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The record stream holds each task's records as the task returned them, encoded once; they are checked and
completed (fleet.normalize) when a line is read back, by every reader alike.

The records are SYNTHETIC (what the stream does with odd values, not what a tool measured).
"""

from __future__ import annotations

import json

import pytest

from ansible_collections.aifabric.acceptance.plugins.plugin_utils import fleet


class TaggedStr(str):
    """A str subclass, as Ansible's tagged/unsafe strings are."""


def stream(tmp_path):
    col = fleet.Collector()
    col.open_stream(str(tmp_path / "records.jsonl"), run={"run_id": "r1"})
    col.target(["n1", "n2"])
    return col


def test_an_invalid_record_is_an_error_record_naming_its_task_in_every_reader(tmp_path):
    col = stream(tmp_path)
    col.task_ok("n1", "t1", "Probe the GPUs", {"results": [{"check": "gpu.ecc", "status": "maybe"}]},
                started="2026-11-23T10:00:00Z")
    col.close_stream()
    with open(str(tmp_path / "records.jsonl"), encoding="utf-8") as handle:
        lines = [json.loads(line) for line in handle]
    assert lines[-1]["records"] == [{"check": "gpu.ecc", "status": "maybe"}]   # streamed as returned
    for collected in (fleet.Collector.load(str(tmp_path / "records.jsonl")), col):
        [rec] = [r for r in collected.records() if r["host"] == "n1"]
        assert rec["status"] == "error" and rec["check"] == "gpu.ecc"
        assert rec["reason"].startswith("task 'Probe the GPUs' returned an invalid result record: status 'maybe'")
        assert rec["started"] == "2026-11-23T10:00:00Z"


@pytest.mark.usefixtures("frozen_clock")
def test_records_are_plain_json_when_read_back_and_their_time_is_fixed_when_they_arrive(tmp_path):
    col = stream(tmp_path)
    col.task_ok("n1", "t1", "probe", {"results": [
        {"check": TaggedStr("env.os"), "status": TaggedStr("pass"), "target": TaggedStr("sda"),
         "facts": {"kernels": ("6.8", "6.9"), 3: "three", "when": {1.5}},
         "metrics": {"mem_total_bytes": 1024, "x_us": float("nan")}}]})
    col.task_ok("n2", "t1", "probe", {"results": [{"check": "env.os", "status": "pass", "params": {(1, 2): "pair"}}]})
    col.close_stream()
    one, two = col.records(), fleet.Collector.load(str(tmp_path / "records.jsonl")).records()
    assert one == two                   # the memory copy and the file say the same, time included
    n1 = [r for r in one if r["host"] == "n1"][0]
    assert type(n1["check"]) is str and type(n1["target"]) is str      # pylint: disable=unidiomatic-typecheck
    assert n1["facts"] == {"kernels": ["6.8", "6.9"], "3": "three", "when": "{1.5}"}
    assert n1["status"] == "error" and n1["metrics"] == {"mem_total_bytes": 1024, "x_us": None}
    assert "metric x_us is not a finite number (nan)" in n1["reason"]
    n2 = [r for r in one if r["host"] == "n2"][0]
    assert n2["params"] == {"(1, 2)": "pair"}         # a key JSON cannot hold: plain() first, as before
    assert n1["started"].endswith("Z") and n1["started"] == n2["started"]   # the arrival time, read back alike


def test_the_memory_copy_is_the_compact_lines_and_is_dropped_once_read_back(tmp_path):
    col = stream(tmp_path)
    col.task_ok("n1", "t1", "probe", {"results": [{"check": "env.os", "status": "pass"}]})
    assert all(isinstance(line, bytes) and line.endswith(b"\n") for line in col._lines)
    with open(str(tmp_path / "records.jsonl"), "rb") as handle:
        assert handle.read() == b"".join(col._lines)       # the file holds exactly the lines kept in memory
    col.release_records()
    assert col._lines == [] and not [r for r in col.records() if r["check"] == "env.os"]


def test_a_result_with_a_cycle_raises_and_writes_nothing(tmp_path):
    col = stream(tmp_path)
    loop = {"check": "env.os", "status": "pass", "facts": {}}
    loop["facts"]["self"] = loop
    before = list(col._lines)
    try:
        col.task_ok("n1", "t1", "probe", {"results": [loop]})
        raised = False
    except RecursionError:
        raised = True       # the callback's guard shows it as a warning; the play goes on
    assert raised and col._lines == before
