# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 23 item 3: the history store's schema-version table and migration path (SQLite; PostgreSQL in
tests/integration/test_history_postgres_versions.py).

TODAY_SQL (fixtures/schema23-history-before-versions.sql) is a store in the layout before versions, exactly: written
by history.record_run and save_baseline of the code before this change (commit 4807bd0) and dumped with sqlite3's
iterdump. Opened by today's code it is recorded as version 1 and every row still reads; a store of a later version
is refused, for reading and writing; a migration step added after version 1 is applied once, in the transaction that
opens the store.
"""

from __future__ import annotations

import os
import sqlite3

import pytest

from ansible_collections.aifabric.acceptance.plugins.module_utils import results
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import history

RUN_ID = "20261120T100000Z-aaaa0001"
with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures", "schema23-history-before-versions.sql"),
          encoding="utf-8") as _handle:
    TODAY_SQL = _handle.read()
# the layout before baselines existed: TODAY_SQL without the baselines table and its row (a store's first write
# adds the table)
BEFORE_BASELINES_SQL = TODAY_SQL[:TODAY_SQL.index("CREATE TABLE baselines")] + TODAY_SQL[TODAY_SQL.index(
    "CREATE TABLE results"):]


def _store(tmp_path, sql=TODAY_SQL):
    path = str(tmp_path / "history.sqlite")
    conn = sqlite3.connect(path)
    conn.executescript(sql)
    conn.close()
    return path


def _tables(path):
    conn = sqlite3.connect(path)
    try:
        return sorted(r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'"))
    finally:
        conn.close()


def _versions(path):
    conn = sqlite3.connect(path)
    try:
        return [r[0] for r in conn.execute("SELECT version FROM schema_version ORDER BY version")]
    finally:
        conn.close()


def _set_version(path, version):
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO schema_version (version, applied, note) VALUES (?, ?, ?)", (version, "x", "later"))
    conn.commit()
    conn.close()


def _record(metric):
    return results.make("rdma.ib_write_bw", "pass", host="gpu-1", peer="gpu-2", target="mlx5_0",
                        metrics={"bw_avg_gbit_s": metric}, started="2026-11-21T10:00:00Z")


def test_the_fixture_is_the_layout_before_versions(tmp_path):
    path = _store(tmp_path)
    assert _tables(path) == ["baselines", "results", "runs", "sqlite_sequence"]


def test_todays_layout_reads_as_version_1_and_is_not_written_by_reading(tmp_path):
    path = _store(tmp_path)
    assert history.store_version(path) == 1
    assert [r["run_id"] for r in history.run_index(path)] == [RUN_ID]
    meta, rows = history.run_records(path, RUN_ID)
    assert meta["verdict"]["worst_status"] == "fail"
    assert sorted(r["check"] for r in rows) == ["gpu.gemm_bf16", "rdma.ib_write_bw"]
    assert history.load_baseline(path, "accepted")["data"] == {"gpu-1|gpu.gemm_bf16|0": {"tflops": 500.0}}
    assert "schema_version" not in _tables(path)      # reading records nothing


def test_todays_layout_opened_for_writing_is_recorded_as_version_1(tmp_path):
    path = _store(tmp_path)
    deltas = history.record_run(path, {"run_id": "r2", "started": "2026-11-21T10:00:00Z"}, [_record(380.5)])
    assert _versions(path) == [1]
    assert history.store_version(path) == 1
    assert deltas[0]["previous_run"] == RUN_ID
    assert deltas[0]["metrics"]["bw_avg_gbit_s"]["previous"] == 390.5    # the old row, read by the new code
    assert [r["run_id"] for r in history.run_index(path)] == [RUN_ID, "r2"]
    history.record_run(path, {"run_id": "r3", "started": "2026-11-22T10:00:00Z"}, [_record(381.0)])
    assert _versions(path) == [1]     # recorded once
    assert history.prune(path, keep_runs=1) == [RUN_ID, "r2"]
    assert [b["name"] for b in history.baselines(path)] == ["accepted"]


def test_the_layout_before_baselines_gets_them_as_version_1(tmp_path):
    path = _store(tmp_path, BEFORE_BASELINES_SQL)
    assert _tables(path) == ["results", "runs", "sqlite_sequence"]
    assert history.baselines(path) == []
    history.save_baseline(path, "b", RUN_ID, kind="run")
    assert _versions(path) == [1] and "baselines" in _tables(path)
    assert history.load_baseline(path, "b")["source_run"] == RUN_ID


def test_a_new_store_starts_at_the_current_version(tmp_path):
    path = str(tmp_path / "new.sqlite")
    assert history.store_version(path) is None
    history.record_run(path, {"run_id": "r1", "started": "2026-11-21T10:00:00Z"}, [_record(380.5)])
    assert _versions(path) == [history.STORE_VERSION] == [1]
    assert _tables(path) == ["baselines", "results", "runs", "schema_version", "sqlite_sequence"]


@pytest.mark.parametrize("action", [
    lambda p: history.record_run(p, {"run_id": "r9", "started": "2026-11-23T10:00:00Z"}, [_record(1.0)]),
    lambda p: history.record_run(p, {"run_id": "r9", "started": "2026-11-23T10:00:00Z"}, [_record(1.0)], dry_run=True),
    history.run_index, history.runs, history.baselines, history.store_version,
    lambda p: history.save_baseline(p, "b2", RUN_ID),
    lambda p: history.prune(p, keep_runs=1),
], ids=["write", "dry-run", "run_index", "runs", "baselines", "store_version", "save_baseline", "prune"])
def test_a_later_version_is_refused(tmp_path, action):
    path = _store(tmp_path)
    history.record_run(path, {"run_id": "r2", "started": "2026-11-21T10:00:00Z"}, [_record(380.5)])
    _set_version(path, history.STORE_VERSION + 1)
    with pytest.raises(history.HistoryError, match=r"layout version 2, newer than this collection knows \(1\)"):
        action(path)
    assert [r[0] for r in sqlite3.connect(path).execute("SELECT run_id FROM runs ORDER BY seq")] == [RUN_ID, "r2"]


def test_a_later_migration_step_is_applied_once_in_order(tmp_path, monkeypatch):
    """The migration path: a step 2 (here: a column added) runs on a version-1 store and on one of the layout
    before versions (steps 1 then 2), once; a store it made is then version 2."""
    step = (2, "runs.note", ("ALTER TABLE runs ADD COLUMN note TEXT",))
    monkeypatch.setattr(history, "MIGRATIONS", history.MIGRATIONS + (step,))
    monkeypatch.setattr(history, "STORE_VERSION", 2)
    for name, prepare in (("v1", True), ("before-versions", False)):
        (tmp_path / name).mkdir()
        path = _store(tmp_path / name)
        if prepare:     # a store recorded as version 1 by the code before step 2
            monkeypatch.setattr(history, "MIGRATIONS", history.MIGRATIONS[:1])
            monkeypatch.setattr(history, "STORE_VERSION", 1)
            history.record_run(path, {"run_id": "r2", "started": "2026-11-21T10:00:00Z"}, [_record(380.5)])
            assert _versions(path) == [1]
            monkeypatch.setattr(history, "MIGRATIONS", history.MIGRATIONS + (step,))
            monkeypatch.setattr(history, "STORE_VERSION", 2)
        history.record_run(path, {"run_id": "r3", "started": "2026-11-22T10:00:00Z"}, [_record(381.0)])
        history.record_run(path, {"run_id": "r4", "started": "2026-11-23T10:00:00Z"}, [_record(382.0)])
        assert _versions(path) == [1, 2], name
        columns = [r[1] for r in sqlite3.connect(path).execute("PRAGMA table_info(runs)")]
        assert columns[-1] == "note", name
        assert history.store_version(path) == 2


def test_a_failing_migration_step_leaves_the_store_as_it_was(tmp_path, monkeypatch):
    path = _store(tmp_path)
    monkeypatch.setattr(history, "MIGRATIONS", history.MIGRATIONS + ((2, "broken", ("ALTER TABLE nothing ADD x",)),))
    monkeypatch.setattr(history, "STORE_VERSION", 2)
    with pytest.raises(history.HistoryError, match="cannot open history store"):
        history.record_run(path, {"run_id": "r2", "started": "2026-11-21T10:00:00Z"}, [_record(380.5)])
    assert _tables(path) == ["baselines", "results", "runs", "sqlite_sequence"]    # not even version 1 recorded
