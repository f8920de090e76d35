# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A run is in the history only with its report (issue 18 item 7): fleet.publish and history.record_run.

The report files are made first, outside the store's lock (issue 39: a 1000-host report held the lock for its
whole rendering), then the run's rows and the files' rename into place are committed in one short transaction:
files that cannot be written store nothing, a commit that fails after the rename removes the files and writes the
report again without history. Before issue 18, the row was committed first and a failed report took it out with a
DELETE, which a full disk refuses too: the history kept a run with no report. The disk-full faults here are raised
where the writes happen (ENOSPC from statedir.write_file, SQLITE_FULL at the commit);
tests/integration/test_disk_full.py fills a real filesystem. Records are SYNTHETIC (bookkeeping).
"""

from __future__ import annotations

import errno
import json
import os
import sqlite3

import pytest

from ansible_collections.aifabric.acceptance.plugins.module_utils import statedir
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import fleet, history, render


def report_of(run_id="0123456789abcdef"):
    records = [fleet.normalize({"check": "env.os", "status": "pass"}, "n1"),
               fleet.normalize({"check": "gpu.ecc", "status": "fail", "reason": "synthetic fail"}, "n2")]
    run = fleet.run_metadata(run_id, "2026-11-23T10:00:00Z", "2026-11-23T10:01:00Z", ["n1", "n2"])
    return fleet.build_report(records, run)


def stored_runs(db):
    conn = sqlite3.connect(db)
    try:
        return [r[0] for r in conn.execute("SELECT run_id FROM runs")]
    finally:
        conn.close()


def disk_full(*_args, **_kwargs):
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def history_cannot_write(*_args, **_kwargs):
    raise history.HistoryError("cannot write history store: database or disk is full")


def test_a_report_that_hits_a_full_disk_leaves_no_history_row(tmp_path, monkeypatch):
    db = str(tmp_path / "h.sqlite")
    fleet.publish(report_of("earlier0000000000"), reports_root=str(tmp_path), history_db=db)
    monkeypatch.setattr(statedir, "write_file", disk_full)
    # on a full disk, a write that would undo the row fails as well (what the old code relied on)
    monkeypatch.setattr(history, "forget_run", history_cannot_write, raising=False)
    with pytest.raises(OSError) as failed:
        fleet.publish(report_of(), reports_root=str(tmp_path), history_db=db)
    assert failed.value.errno == errno.ENOSPC          # the disk's error, not one of the history store
    assert stored_runs(db) == ["earlier0000000000"]
    assert not [n for n in os.listdir(str(tmp_path)) if n.startswith(".") or n.startswith("20261123T100000Z-01234567")]


def test_a_commit_that_fails_after_the_files_removes_them_and_writes_the_report_without_history(tmp_path, monkeypatch):
    real = history._SQLite.transaction     # pylint: disable=protected-access

    def commit_fails(store, action):
        def then_full():
            out = action()
            if store.conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0]:   # the run's rows (not the schema)
                raise sqlite3.OperationalError("database or disk is full")    # SQLITE_FULL at the commit
            return out
        return real(store, then_full)

    monkeypatch.setattr(history._SQLite, "transaction", commit_fails)   # pylint: disable=protected-access
    written = []
    real_stage = render.stage_report

    def stage_report(report, directory, formats=None, fresh=True):
        written.append(report["history"].get("error"))
        return real_stage(report, directory, formats, fresh)

    monkeypatch.setattr(render, "stage_report", stage_report)
    db = str(tmp_path / "h.sqlite")
    out = fleet.publish(report_of(), reports_root=str(tmp_path), history_db=db)
    assert stored_runs(db) == []
    assert written[0] is None and "database or disk is full" in written[1] and len(written) == 2    # then again
    assert out["warnings"] and "database or disk is full" in out["warnings"][0]
    with open(os.path.join(out["dir"], "results.json"), encoding="utf-8") as handle:
        written = json.load(handle)
    assert written["history"]["db"] is None and "database or disk is full" in written["history"]["error"]
    assert os.path.realpath(str(tmp_path / "latest")) == out["dir"]
    assert not [n for n in os.listdir(str(tmp_path)) if n.startswith(".")]      # no temporary directory left


def test_before_commit_failing_rolls_the_run_back_and_raises_its_own_error(tmp_path):
    db = str(tmp_path / "h.sqlite")
    with pytest.raises(OSError) as failed:
        history.record_run(db, {"run_id": "r1", "started": "2026-11-23T10:00:00Z"},
                           [fleet.normalize({"check": "env.os", "status": "pass"}, "n1")], before_commit=disk_full)
    assert failed.value.errno == errno.ENOSPC and not isinstance(failed.value, history.HistoryError)
    assert stored_runs(db) == []
    seen = []
    history.record_run(db, {"run_id": "r1", "started": "2026-11-23T10:00:00Z"},
                       [fleet.normalize({"check": "env.os", "status": "pass"}, "n1")], before_commit=seen.append)
    assert stored_runs(db) == ["r1"] and seen == [[]]       # called with the deltas (none: the host's first run)


def test_a_latest_that_cannot_be_updated_is_a_warning_not_a_lost_report(tmp_path, monkeypatch):
    monkeypatch.setattr(render, "point_latest", disk_full)
    db = str(tmp_path / "h.sqlite")
    out = fleet.publish(report_of(), reports_root=str(tmp_path), history_db=db)
    assert sorted(os.listdir(out["dir"])) == ["ctrf.json", "junit.xml", "report.html", "results.json", "summary.md"]
    assert stored_runs(db) == ["0123456789abcdef"]
    assert out["warnings"] == ["the report is written in %s, but %s could not point at it: [Errno 28] %s" % (
        out["dir"], tmp_path / "latest", os.strerror(errno.ENOSPC))]


def test_a_kept_record_stream_is_read_as_a_results_json_with_its_required_checks(tmp_path):
    path = str(tmp_path / "records.jsonl")
    col = fleet.Collector()
    col.open_stream(path, run={"run_id": "r1", "started": "2026-11-23T10:00:00Z"})
    col.target(["n1", "n2"])
    col.task_ok("n1", "t1", "probe", {"results": [{"check": "env.os", "status": "pass"}]})
    col.task_ok("n2", "t1", "probe", {"results": [{"check": "env.os", "status": "pass"}]})
    col.set_config(required_checks={"*": ["gpu.*"]})
    col.close_stream()
    data = fleet.load_results(path)
    assert data["run"]["run_id"] == "r1" and data["run"]["hosts_targeted"] == ["n1", "n2"]
    assert data["run"]["recovered_from"] == path and data["run"]["required_checks"] == {"*": ["gpu.*"]}
    report = fleet.reanalyze(data, {"drift_pins": {}})
    # the run's required checks apply as they would have at the end of the run: no gpu.* record -> fail
    assert report["summary"]["failed_hosts"] == ["n1", "n2"]
    assert [r["check"] for r in report["records"] if r["status"] == "fail"] == ["env.required", "env.required"]


def test_the_store_is_not_locked_while_the_files_are_made(tmp_path, monkeypatch):
    """Before: the files were rendered inside the run's BEGIN IMMEDIATE transaction; another writer of the store
    (another run, a history task) waited for the whole rendering (9-17 s at 1000 hosts)."""
    db = str(tmp_path / "h.sqlite")
    fleet.publish(report_of("earlier0000000000"), reports_root=str(tmp_path), history_db=db)
    real_md = render.WRITERS["md"]
    took = []

    def md_while_another_writer_writes(report, counted=None):
        conn = sqlite3.connect(db, timeout=0)      # no wait: a held write lock fails at once
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("ROLLBACK")
            took.append(True)
        finally:
            conn.close()
        return real_md(report, counted)

    monkeypatch.setitem(render.WRITERS, "md", md_while_another_writer_writes)
    out = fleet.publish(report_of(), reports_root=str(tmp_path), history_db=db)
    assert took == [True] and not out["warnings"]
    assert sorted(stored_runs(db)) == ["0123456789abcdef", "earlier0000000000"]


def test_a_run_stored_while_the_files_are_made_makes_them_again_with_its_deltas(tmp_path, monkeypatch):
    """The deltas the files show are those committed with the run: another run of the same hosts stored between the
    read and the commit makes the files again (the deltas then name that run as the previous one)."""
    db = str(tmp_path / "h.sqlite")
    first = report_of("first00000000000")
    first["run"]["started"] = "2026-11-23T09:00:00Z"
    fleet.publish(first, reports_root=str(tmp_path), history_db=db)
    real_md = render.WRITERS["md"]
    made = []

    def md_then_another_run(report, counted=None):
        made.append(sorted(set(d["previous_run"] for d in report["history"]["deltas"])))
        if len(made) == 1:      # another run of n1 and n2, older than this one, stored meanwhile
            other = report_of("between000000000")
            other["run"]["started"] = "2026-11-23T09:59:00Z"
            history.record_run(db, other["run"], other["records"])
        return real_md(report, counted)

    monkeypatch.setitem(render.WRITERS, "md", md_then_another_run)
    out = fleet.publish(report_of(), reports_root=str(tmp_path), history_db=db)
    assert made == [["first00000000000"], ["between000000000"]]
    with open(os.path.join(out["dir"], "results.json"), encoding="utf-8") as handle:
        written = json.load(handle)
    assert sorted(set(d["previous_run"] for d in written["history"]["deltas"])) == ["between000000000"]
    assert sorted(stored_runs(db)) == ["0123456789abcdef", "between000000000", "first00000000000"]
    assert not [n for n in os.listdir(str(tmp_path)) if n.startswith(".")]      # no temporary directory left
