# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The SQLite history store: deltas per (host, check, target, peer), idempotence, concurrent writers.

Records: real nccl-tests records (real_records.py) for the metric deltas; SYNTHETIC small
records for the bookkeeping and the concurrency load.
"""

from __future__ import annotations

import copy
import multiprocessing
import os
import sqlite3
import threading

import pytest

from ansible_collections.aifabric.acceptance.plugins.module_utils import results
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import history
from ansible_collections.aifabric.acceptance.tests.unit.plugins.plugin_utils import real_records


def run(run_id, started):
    return {"run_id": run_id, "started": started, "ended": started}


def rec(host, status="pass", check="env.os", metrics=None, target=None, peer=None):
    return results.make(check, status, reason=None if status == "pass" else "why", host=host,
                        target=target, peer=peer, metrics=metrics)


def test_first_run_has_no_deltas_and_the_next_one_compares(tmp_path):
    db = str(tmp_path / "h.sqlite")
    first = real_records.nccl_records("h200-a")
    assert history.record_run(db, run("r1", "2026-11-20T10:00:00Z"), first) == []
    second = copy.deepcopy(first)
    second[1]["metrics"]["busbw_max_gbyte_s"] = 300.0          # all_reduce got slower
    second[1]["status"], second[1]["reason"] = "fail", "busbw below floor"
    deltas = history.record_run(db, run("r2", "2026-11-21T10:00:00Z"), second)
    assert len(deltas) == 4
    d = [x for x in deltas if x["check"] == "nccl.all_reduce"][0]
    assert (d["previous_run"], d["previous_status"], d["status"], d["status_changed"]) == ("r1", "pass", "fail", True)
    m = d["metrics"]["busbw_max_gbyte_s"]
    assert m["previous"] == first[1]["metrics"]["busbw_max_gbyte_s"] == 345.68839
    assert m["current"] == 300.0
    assert m["delta"] == round(300.0 - 345.68839, 6)
    assert m["delta_pct"] == round(100 * (300.0 - 345.68839) / 345.68839, 2)
    untouched = [x for x in deltas if x["check"] == "nccl.all_gather"][0]
    assert not untouched["status_changed"] and all(v["delta"] == 0 for v in untouched["metrics"].values())


def test_previous_run_is_the_previous_run_of_the_same_host(tmp_path):
    db = str(tmp_path / "h.sqlite")
    history.record_run(db, run("r1", "2026-11-20T10:00:00Z"), [rec("a", "fail"), rec("b")])
    history.record_run(db, run("r2", "2026-11-21T10:00:00Z"), [rec("b", "warn")])
    deltas = history.record_run(db, run("r3", "2026-11-22T10:00:00Z"), [rec("a"), rec("b")])
    by_host = dict((d["host"], d) for d in deltas)
    assert (by_host["a"]["previous_run"], by_host["a"]["previous_status"]) == ("r1", "fail")
    assert (by_host["b"]["previous_run"], by_host["b"]["previous_status"]) == ("r2", "warn")


def test_keys_include_target_and_peer_and_new_checks_are_marked(tmp_path):
    db = str(tmp_path / "h.sqlite")
    history.record_run(db, run("r1", "2026-11-20T10:00:00Z"),
                       [rec("a", check="rdma.ib_write_bw", target="mlx5_0", peer="b", metrics={"bw_avg_gbit_s": 390.0})])
    deltas = history.record_run(db, run("r2", "2026-11-21T10:00:00Z"), [
        rec("a", check="rdma.ib_write_bw", target="mlx5_0", peer="b", metrics={"bw_avg_gbit_s": 380.0}),
        rec("a", check="rdma.ib_write_bw", target="mlx5_0", peer="c", metrics={"bw_avg_gbit_s": 385.0}),
    ])
    same, new = deltas
    assert same["peer"] == "b" and same["metrics"]["bw_avg_gbit_s"]["delta"] == -10.0 and not same["new"]
    assert new["peer"] == "c" and new["new"] and new["previous_status"] is None


def test_recording_a_run_again_replaces_it(tmp_path):
    db = str(tmp_path / "h.sqlite")
    history.record_run(db, run("r1", "2026-11-20T10:00:00Z"), [rec("a")])
    history.record_run(db, run("r2", "2026-11-21T10:00:00Z"), [rec("a", "fail")])
    first = history.record_run(db, run("r2", "2026-11-21T10:00:00Z"), [rec("a", "fail")])
    again = history.record_run(db, run("r2", "2026-11-21T10:00:00Z"), [rec("a", "fail")])
    assert first == again and first[0]["previous_run"] == "r1"
    assert [r[0] for r in history.runs(db)] == ["r1", "r2"]
    assert [r[3] for r in history.runs(db)] == [1, 1]


def test_an_older_run_recorded_later_compares_with_what_came_before_it(tmp_path):
    db = str(tmp_path / "h.sqlite")
    history.record_run(db, run("new", "2026-11-22T10:00:00Z"), [rec("a", "fail")])
    history.record_run(db, run("oldest", "2026-11-01T10:00:00Z"), [rec("a", "warn")])
    deltas = history.record_run(db, run("old", "2026-11-10T10:00:00Z"), [rec("a")])
    assert deltas[0]["previous_run"] == "oldest"


def test_wal_mode_and_dry_run(tmp_path):
    db = str(tmp_path / "h.sqlite")
    assert history.record_run(str(tmp_path / "none.sqlite"), run("x", "2026-11-20T10:00:00Z"), [rec("a")], dry_run=True) == []
    assert not os.path.exists(str(tmp_path / "none.sqlite"))
    history.record_run(db, run("r1", "2026-11-20T10:00:00Z"), [rec("a")])
    deltas = history.record_run(db, run("r2", "2026-11-21T10:00:00Z"), [rec("a", "fail")], dry_run=True)
    assert deltas[0]["previous_status"] == "pass"
    assert [r[0] for r in history.runs(db)] == ["r1"]
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        conn.close()


def test_unwritable_store_raises_history_error(tmp_path):
    bad = tmp_path / "bad.sqlite"
    bad.write_bytes(b"garbage" * 1000)
    with pytest.raises(history.HistoryError, match="bad.sqlite"):
        history.record_run(str(bad), run("r1", "2026-11-20T10:00:00Z"), [rec("a")])


N_WRITERS, RUNS_EACH, RECORDS_EACH = 4, 5, 300


def _writer(db, writer):
    for i in range(RUNS_EACH):
        recs = [rec("w%d-h%03d" % (writer, j), metrics={"x_us": float(i)}) for j in range(RECORDS_EACH)]
        history.record_run(db, run("w%d-r%d" % (writer, i), "2026-11-22T10:%02d:%02dZ" % (writer, i)), recs)


def _check_store(db):
    stored = history.runs(db)
    assert len(stored) == N_WRITERS * RUNS_EACH
    assert all(count == RECORDS_EACH for _id, _s, _e, count in stored)
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    finally:
        conn.close()


def test_concurrent_writer_processes(tmp_path):
    db = str(tmp_path / "h.sqlite")
    ctx = multiprocessing.get_context("fork")
    procs = [ctx.Process(target=_writer, args=(db, w)) for w in range(N_WRITERS)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
    assert [p.exitcode for p in procs] == [0] * N_WRITERS
    _check_store(db)
    # each writer's runs chain on its own hosts: the last run compares with the one before
    deltas = history.record_run(db, run("w0-r%d" % (RUNS_EACH - 1), "2026-11-22T10:00:%02dZ" % (RUNS_EACH - 1)),
                                [rec("w0-h000", metrics={"x_us": float(RUNS_EACH - 1)})])
    assert deltas[0]["previous_run"] == "w0-r%d" % (RUNS_EACH - 2)
    assert deltas[0]["metrics"]["x_us"]["delta"] == 1.0


def test_concurrent_writer_threads(tmp_path):
    db = str(tmp_path / "h.sqlite")
    errors = []

    def target(w):
        try:
            _writer(db, w)
        except Exception as exc:  # pylint: disable=broad-except
            errors.append(exc)

    threads = [threading.Thread(target=target, args=(w,)) for w in range(N_WRITERS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert errors == []
    _check_store(db)
