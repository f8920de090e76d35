# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One record path: the run-scoped record stream, the run_summary step, and the atomic report.

The records here are SYNTHETIC (fleet bookkeeping only: which host, which status); the
task results are plain dicts shaped like Ansible's.
"""

from __future__ import annotations

import glob
import json
import os
import signal
import sqlite3

import pytest

from ansible_collections.aifabric.acceptance.plugins.plugin_utils import fleet, history, render, run_store


def rec(check="env.os", status="pass", **kw):
    out = {"check": check, "status": status}
    if status != "pass":
        out["reason"] = "synthetic %s" % status
    out.update(kw)
    return out


def ok(*records):
    return {"changed": False, "results": list(records)}


def feed(collector):
    """A small run: three hosts, a failed task, an unreachable host, a run_once multi-node launch."""
    collector.target(["n1", "n2", "n3", "n4"])
    collector.task_ok("n1", "t1", "probe", ok(rec(), rec("gpu.ecc", "fail", target="0")))
    collector.task_ok("n2", "t1", "probe", ok(rec()))
    collector.task_failed("n2", "t2", "boom", {"msg": "tool exploded"})
    collector.task_unreachable("n3", "t1", "probe", {"msg": "ssh: connect to host n3 port 22: refused"})
    collector.task_ok("n1", "t3", "nccl", ok(rec("nccl.all_reduce", metrics={"busbw_max_gbyte_s": 300.0})),
                      participants=["n1", "n2", "n4"])


def keyed(records):
    return sorted(json.dumps(r, sort_keys=True) for r in records)


@pytest.mark.usefixtures("frozen_clock")
def test_the_stream_rebuilds_exactly_what_the_collector_holds(tmp_path):
    live = fleet.Collector()
    live.open_stream(str(tmp_path / "records.jsonl"), run={"run_id": "r1", "started": "2026-11-23T10:00:00Z"},
                     config={"drift_pins": {}})
    feed(live)
    live.close_stream()
    again = fleet.Collector.load(str(tmp_path / "records.jsonl"))
    assert keyed(again.records()) == keyed(live.records())
    assert again.hosts_targeted == ["n1", "n2", "n3", "n4"]
    assert again.run == {"run_id": "r1", "started": "2026-11-23T10:00:00Z"} and again.problems == []
    assert os.stat(str(tmp_path / "records.jsonl")).st_mode & 0o777 == 0o600


@pytest.mark.usefixtures("frozen_clock")
def test_a_torn_last_line_is_skipped_and_named(tmp_path):
    path = str(tmp_path / "records.jsonl")
    live = fleet.Collector()
    live.open_stream(path, run={"run_id": "r1"})
    feed(live)
    live.close_stream()
    with open(path, "a", encoding="utf-8") as handle:
        handle.write('{"e": "task", "host": "n4", "task": "t9", "kind": "ok", "records": [{"che')   # killed mid-write
    again = fleet.Collector.load(path)
    assert keyed(again.records()) == keyed(live.records())
    assert len(again.problems) == 1 and "line 8 unreadable" in again.problems[0]


def test_the_stream_is_never_opened_through_a_symlink(tmp_path):
    target = tmp_path / "victim"
    target.write_text("keep\n")
    os.symlink(str(target), str(tmp_path / "records.jsonl"))
    with pytest.raises(OSError):
        fleet.Collector().open_stream(str(tmp_path / "records.jsonl"))
    assert target.read_text() == "keep\n"


def test_a_stream_that_cannot_be_written_is_dropped_and_the_records_kept(tmp_path, monkeypatch):
    live = fleet.Collector()
    live.open_stream(str(tmp_path / "records.jsonl"), run={"run_id": "r1"})

    def disk_full(_fd, _data):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(fleet.os, "write", disk_full)
    feed(live)
    monkeypatch.undo()
    assert "No space left on device" in live.stream_error
    assert len([r for r in live.records() if r["host"] == "n1"]) == 3        # memory still has everything


def test_multi_node_records_account_for_every_participant():
    """Before: a standalone nccl.yml run marked every host but the launcher env.coverage error."""
    collector = fleet.Collector()
    feed(collector)
    by_host = dict((r["host"], r) for r in collector.records() if r["check"] == fleet.MISSING_CHECK)
    assert sorted(by_host) == ["n4"]
    assert by_host["n4"]["status"] == "pass" and "launched from n1" in by_host["n4"]["reason"]
    nccl = [r for r in collector.records() if r["check"] == "nccl.all_reduce"][0]
    assert nccl["host"] == "n1" and nccl["params"]["hosts"] == ["n1", "n2", "n4"]


def test_a_failing_collective_warns_its_other_hosts_and_a_host_with_nothing_is_still_an_error():
    collector = fleet.Collector()
    collector.target(["n1", "n2", "n3"])
    collector.task_ok("n1", "t1", "nccl", ok(rec("nccl.all_reduce", "fail")), participants=["n1", "n2"])
    got = dict((r["host"], r["status"]) for r in collector.records() if r["check"] == fleet.MISSING_CHECK)
    assert got == {"n2": "warn", "n3": "error"}


def test_run_summary_and_the_report_agree_on_every_host(tmp_path):
    path = str(tmp_path / "records.jsonl")
    live = fleet.Collector()
    live.open_stream(path, run={"run_id": "r1", "started": "2026-11-23T10:00:00Z"}, config={"drift_pins": {}})
    feed(live)
    report, collected = fleet.run_summary(path, required_checks={"n2": ["gpu.*"]})
    assert collected.config["required_checks"] == {"n2": ["gpu.*"]}
    # the callback, at the end of the run, reads the same stream (required_checks included)
    final = fleet.Collector.load(path)
    end = fleet.build_report(final.records(), dict(final.run, ended="2026-11-23T10:05:00Z"), final.config)
    assert [(h["host"], h["status"]) for h in report["summary"]["hosts"]] == \
        [(h["host"], h["status"]) for h in end["summary"]["hosts"]]
    assert report["summary"]["failed_hosts"] == end["summary"]["failed_hosts"]
    assert set(report["summary"]["failed_hosts"]) >= {"n1", "n2", "n3"}


def test_run_summary_without_a_stream_names_the_line_that_enables_the_callback(tmp_path):
    registry = str(tmp_path / "registry")
    with pytest.raises(fleet.RunSummaryError, match="ANSIBLE_CALLBACKS_ENABLED=aifabric.acceptance.fleet_report"):
        run_store.find(os.getpid(), registry)
    os.makedirs(registry, mode=0o700)
    store = run_store.RunStore("r1", directory=registry)
    store.fail("fleet_report is disabled: bad configuration: x")
    with pytest.raises(fleet.RunSummaryError, match="bad configuration"):
        run_store.find(os.getpid(), registry)
    store.close()
    with pytest.raises(fleet.RunSummaryError, match="not enabled"):
        run_store.find(os.getpid(), registry)


def test_run_summary_refuses_a_stream_of_another_ansible_playbook(tmp_path):
    """A stream that another ansible-playbook wrote (its run line names that process) is not this run's."""
    path = str(tmp_path / "records.jsonl")
    live = fleet.Collector()
    live.open_stream(path, run={"run_id": "outer", "controller_pid": 4242})
    feed(live)
    with pytest.raises(fleet.RunSummaryError, match="belongs to process 4242"):
        fleet.run_summary(path, controller_pid=5151)
    assert fleet.run_summary(path, controller_pid=4242)[1].run["run_id"] == "outer"


def test_run_summary_of_a_run_that_targeted_no_host_fails(tmp_path):
    path = str(tmp_path / "records.jsonl")
    live = fleet.Collector()
    live.open_stream(path, run={"run_id": "r1"})
    with pytest.raises(fleet.RunSummaryError, match="no host was targeted"):
        fleet.run_summary(path)


@pytest.mark.parametrize("bad", [[], {"n1": "gpu.*"}, {"n1": [5]}, {"n1": [""]}])
def test_required_checks_are_checked(bad):
    if bad == {"n1": "gpu.*"}:
        assert fleet.check_required(bad) == {"n1": ["gpu.*"]}
        return
    with pytest.raises(ValueError, match="required_checks"):
        fleet.check_required(bad)


# ---------------------------------------------------------------- re-analysis of a malformed results.json


@pytest.mark.parametrize("broken", [
    {"host": 5, "check": "env.os", "status": "pass"},
    {"host": ["a"], "check": "env.os", "status": "pass"},
    "not a record",
    {"host": "n2", "check": "nonsense", "status": "great"},
])
def test_a_malformed_record_in_results_json_becomes_an_error_record(broken):
    """Before: one record with "host": 5 stopped report.yml's whole re-analysis (TypeError)."""
    data = {"run": {"run_id": "r1", "started": "2026-11-23T10:00:00Z"},
            "records": [fleet.normalize(rec(), "n1"), broken]}
    report = fleet.reanalyze(data)
    errors = [r for r in report["records"] if r["status"] == "error"]
    assert len(errors) == 1
    assert "invalid result record" in errors[0]["reason"] or "not a mapping" in errors[0]["reason"]
    assert isinstance(errors[0]["host"], str)
    assert report["summary"]["hosts_total"] == 2


# ---------------------------------------------------------------- the atomic report


def report_of(run_id="0123456789abcdef"):
    records = [fleet.normalize(rec(), "n1"), fleet.normalize(rec("gpu.ecc", "fail"), "n2")]
    run = fleet.run_metadata(run_id, "2026-11-23T10:00:00Z", "2026-11-23T10:01:00Z", ["n1", "n2"])
    return fleet.build_report(records, run)


def stored_runs(db):
    conn = sqlite3.connect(db)
    try:
        return [r[0] for r in conn.execute("SELECT run_id FROM runs")]
    finally:
        conn.close()


def test_publish_writes_the_directory_whole_then_latest(tmp_path):
    out = fleet.publish(report_of(), reports_root=str(tmp_path), history_db=str(tmp_path / "h.sqlite"))
    assert sorted(os.listdir(out["dir"])) == ["ctrf.json", "junit.xml", "report.html", "results.json", "summary.md"]
    assert os.path.realpath(str(tmp_path / "latest")) == out["dir"]
    assert not [n for n in os.listdir(str(tmp_path)) if n.startswith(".")]
    assert stored_runs(str(tmp_path / "h.sqlite")) == ["0123456789abcdef"]


def test_an_interrupt_while_the_report_is_written_takes_effect_after_it(tmp_path, monkeypatch):
    """Before: SIGINT between two files left a directory without junit.xml, latest not updated, history row present."""
    real = render.junit_chunks
    seen = []

    def junit_then_ctrl_c(report, counted=None):
        # Ctrl-C lands in the middle of the writing: to this thread itself (raise_signal), with the handler publish
        # found there on record
        seen.append(signal.getsignal(signal.SIGINT))
        signal.raise_signal(signal.SIGINT)
        return real(report, counted)

    monkeypatch.setitem(render.WRITERS, "junit", junit_then_ctrl_c)
    # the handler a user's Ctrl-C meets (Python's own), whatever this process started with: a test run started in
    # the background by a non-interactive shell (`make test &`, nohup) has SIGINT ignored, and Python then installs
    # no handler - publish rightly delivered the held signal to SIG_IGN ("DID NOT RAISE" in such runs)
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        with pytest.raises(KeyboardInterrupt):
            fleet.publish(report_of(), reports_root=str(tmp_path), history_db=str(tmp_path / "h.sqlite"))
        assert signal.getsignal(signal.SIGINT) is signal.default_int_handler, seen     # handler restored
    finally:
        signal.signal(signal.SIGINT, before)
    assert seen and seen[0] is not signal.default_int_handler, seen       # held while writing
    run_dir = os.path.realpath(str(tmp_path / "latest"))
    assert sorted(os.listdir(run_dir)) == ["ctrf.json", "junit.xml", "report.html", "results.json", "summary.md"]
    assert stored_runs(str(tmp_path / "h.sqlite")) == ["0123456789abcdef"]
    assert not glob.glob(str(tmp_path / "**" / "*.tmp-*"), recursive=True)


def test_a_report_that_cannot_be_written_leaves_no_directory_and_no_history_row(tmp_path, monkeypatch):
    def broken(_report, _counted=None):
        raise RuntimeError("disk full")

    monkeypatch.setitem(render.WRITERS, "html", broken)
    with pytest.raises(RuntimeError, match="disk full"):
        fleet.publish(report_of(), reports_root=str(tmp_path), history_db=str(tmp_path / "h.sqlite"))
    # the files are made before the store is written: a report that cannot be made stores nothing (not even a
    # new, empty store)
    assert os.listdir(str(tmp_path)) == []


def test_check_mode_history_is_read_only(tmp_path):
    """Before: a dry run opened the store read-write (WAL files, schema transaction)."""
    db = str(tmp_path / "h.sqlite")
    history.record_run(db, {"run_id": "old", "started": "2026-11-22T10:00:00Z"}, [fleet.normalize(rec(), "n1")])
    before = sorted(os.listdir(str(tmp_path)))
    mtime = os.stat(db).st_mtime_ns
    deltas = history.record_run(db, {"run_id": "new", "started": "2026-11-23T10:00:00Z"},
                                [fleet.normalize(rec(), "n1")], dry_run=True)
    assert [d["previous_run"] for d in deltas] == ["old"]
    assert sorted(os.listdir(str(tmp_path))) == before and os.stat(db).st_mtime_ns == mtime
    assert stored_runs(db) == ["old"]
