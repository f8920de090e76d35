# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The history store: every run's records in one SQLite file, and the change since last time.

- WAL journal and a busy timeout, and each run is written in ONE ``BEGIN IMMEDIATE``
  transaction, so two runs (two ``ansible-playbook`` processes) may write at once:
  the second waits for the first instead of failing or interleaving.
- A run is keyed by its run id. Writing the same run again (a re-analysis with
  ``aifabric.acceptance.report``) replaces that run's rows: the store stays idempotent.
- For each record, keyed by (host, check, target, peer), :func:`record_run` returns the
  change since the previous run *of the same host* (the latest earlier run, by start
  time, that has any record of that host): previous status and per-metric deltas.

Do not put the file on NFS: SQLite's WAL mode needs local file locking.
Controller-only (plugin_utils), no Ansible types.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
import urllib.parse

BUSY_TIMEOUT_S = 60.0
SCHEMA = (
    """CREATE TABLE IF NOT EXISTS runs (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        run_id TEXT NOT NULL UNIQUE,
        started TEXT NOT NULL,
        ended TEXT,
        recorded TEXT NOT NULL,
        meta TEXT NOT NULL)""",
    """CREATE TABLE IF NOT EXISTS results (
        run_seq INTEGER NOT NULL REFERENCES runs(seq) ON DELETE CASCADE,
        host TEXT NOT NULL,
        check_name TEXT NOT NULL,
        target TEXT NOT NULL,
        peer TEXT NOT NULL,
        status TEXT NOT NULL,
        reason TEXT,
        metrics TEXT NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS results_host_run ON results (host, run_seq)",
    "CREATE INDEX IF NOT EXISTS results_run ON results (run_seq)",
    "CREATE INDEX IF NOT EXISTS runs_started ON runs (started, seq)",
)


class HistoryError(Exception):
    """The history store could not be opened or written (message names the file)."""


def record_key(record):
    """(host, check, target, peer) with '' for null: how history matches records across runs."""
    return (record.get("host") or "", record.get("check") or "",
            record.get("target") or "", record.get("peer") or "")


def connect(path, timeout_s=BUSY_TIMEOUT_S):
    """Open (creating if needed) the store in WAL mode with a busy timeout."""
    directory = os.path.dirname(os.path.abspath(path))
    os.makedirs(directory, exist_ok=True)
    conn = sqlite3.connect(path, timeout=timeout_s, isolation_level=None)
    try:
        conn.execute("PRAGMA busy_timeout = %d" % int(timeout_s * 1000))
        _retry(lambda: conn.execute("PRAGMA journal_mode = WAL"), timeout_s)
        conn.execute("PRAGMA synchronous = NORMAL")
        conn.execute("PRAGMA foreign_keys = ON")
        _retry(lambda: _create(conn), timeout_s)
    except Exception:
        conn.close()
        raise
    return conn


def _create(conn):
    conn.execute("BEGIN IMMEDIATE")
    try:
        for statement in SCHEMA:
            conn.execute(statement)
        conn.execute("COMMIT")
    except Exception:
        conn.execute("ROLLBACK")
        raise


def _retry(action, timeout_s):
    """Run an action, retrying while SQLite says the database is locked/busy."""
    deadline = time.monotonic() + timeout_s
    delay = 0.05
    while True:
        try:
            return action()
        except sqlite3.OperationalError as exc:
            text = str(exc).lower()
            if ("locked" not in text and "busy" not in text) or time.monotonic() > deadline:
                raise
            time.sleep(delay)
            delay = min(delay * 2, 1.0)


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def metric_deltas(previous, current):
    """Per metric present (as a number) in both runs: previous, current, delta, delta_pct."""
    out = {}
    for name, now in (current or {}).items():
        before = (previous or {}).get(name)
        if not _number(now) or not _number(before):
            continue
        delta = now - before
        out[name] = {
            "previous": before,
            "current": now,
            "delta": round(delta, 6),
            "delta_pct": None if before == 0 else round(100.0 * delta / abs(before), 2),
        }
    return out


def _previous_run(conn, host, started, seq):
    row = conn.execute(
        """SELECT r.seq, r.run_id, r.started FROM runs r
           WHERE (r.started < ? OR (r.started = ? AND r.seq < ?))
             AND EXISTS (SELECT 1 FROM results x WHERE x.run_seq = r.seq AND x.host = ?)
           ORDER BY r.started DESC, r.seq DESC LIMIT 1""",
        (started, started, seq, host)).fetchone()
    return row


def _deltas(conn, seq, started, records):
    deltas = []
    previous_by_host = {}
    for rec in records:
        key = record_key(rec)
        host = key[0]
        if host not in previous_by_host:
            prev = _previous_run(conn, host, started, seq)
            rows = {}
            if prev is not None:
                for row in conn.execute(
                        "SELECT check_name, target, peer, status, metrics FROM results WHERE run_seq = ? AND host = ?",
                        (prev[0], host)):
                    rows[(host, row[0], row[1], row[2])] = (row[3], json.loads(row[4]))
            previous_by_host[host] = (prev, rows)
        prev, rows = previous_by_host[host]
        if prev is None:
            continue    # first run of this host: nothing to compare with
        before = rows.get(key)
        deltas.append({
            "host": key[0], "check": key[1], "target": key[2] or None, "peer": key[3] or None,
            "status": rec.get("status"),
            "previous_run": prev[1],
            "previous_started": prev[2],
            "previous_status": None if before is None else before[0],
            "status_changed": before is None or before[0] != rec.get("status"),
            "new": before is None,
            "metrics": {} if before is None else metric_deltas(before[1], rec.get("metrics")),
        })
    return deltas


def record_run(path, run, records, timeout_s=BUSY_TIMEOUT_S, dry_run=False):
    """Store one run (``run``: the run metadata with run_id/started/ended) and its records.

    Returns the per-record deltas since the previous run of each host (a list of dicts).
    With dry_run the transaction is rolled back (check mode): same deltas, nothing stored,
    and a store that does not exist yet is not created.
    Raises HistoryError when the store cannot be written.
    """
    if dry_run:
        return _dry_deltas(path, run, records, timeout_s)
    try:
        conn = connect(path, timeout_s)
    except (sqlite3.Error, OSError) as exc:
        raise HistoryError("cannot open history store %s: %s" % (path, exc)) from exc
    try:
        return _retry(lambda: _write(conn, run, records, dry_run), timeout_s)
    except sqlite3.Error as exc:
        raise HistoryError("cannot write history store %s: %s" % (path, exc)) from exc
    finally:
        conn.close()


def _dry_deltas(path, run, records, timeout_s=BUSY_TIMEOUT_S):
    """The deltas record_run would return, from a read-only connection (check mode: the store,
    its directory and its WAL files are left exactly as they are; a missing store gives [])."""
    if not os.path.isfile(path):
        return []
    # Without a -wal file (no writer has it open) the store is read as immutable: SQLite then creates
    # no -wal/-shm file; with one, a plain read-only connection reads the writer's latest commit.
    query = "mode=ro" if os.path.exists(path + "-wal") else "mode=ro&immutable=1"
    try:
        conn = sqlite3.connect("file:%s?%s" % (urllib.parse.quote(os.path.abspath(path)), query), uri=True,
                               timeout=timeout_s, isolation_level=None)
    except sqlite3.Error as exc:
        raise HistoryError("cannot open history store %s read-only: %s" % (path, exc)) from exc
    try:
        row = conn.execute("SELECT seq FROM runs WHERE run_id = ?", (run["run_id"],)).fetchone()
        seq = row[0] if row else (conn.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM runs").fetchone()[0])
        return _deltas(conn, seq, run.get("started") or "", records)
    except sqlite3.Error as exc:
        raise HistoryError("cannot read history store %s: %s" % (path, exc)) from exc
    finally:
        conn.close()


def forget_run(path, run_id, timeout_s=BUSY_TIMEOUT_S):
    """Remove one run (and its records) from the store: undoes record_run when its report could not be written."""
    try:
        conn = connect(path, timeout_s)
    except (sqlite3.Error, OSError) as exc:
        raise HistoryError("cannot open history store %s: %s" % (path, exc)) from exc
    try:
        def delete():
            conn.execute("BEGIN IMMEDIATE")
            try:
                conn.execute("DELETE FROM runs WHERE run_id = ?", (run_id,))
                conn.execute("COMMIT")
            except BaseException:
                conn.execute("ROLLBACK")
                raise
        _retry(delete, timeout_s)
    except sqlite3.Error as exc:
        raise HistoryError("cannot write history store %s: %s" % (path, exc)) from exc
    finally:
        conn.close()


def _write(conn, run, records, dry_run=False):
    started = run.get("started") or ""
    conn.execute("BEGIN IMMEDIATE")     # takes the write lock now (waits up to the busy timeout)
    try:
        meta = json.dumps(run, sort_keys=True, default=str)
        row = conn.execute("SELECT seq FROM runs WHERE run_id = ?", (run["run_id"],)).fetchone()
        if row is None:
            cur = conn.execute(
                "INSERT INTO runs (run_id, started, ended, recorded, meta) VALUES (?, ?, ?, ?, ?)",
                (run["run_id"], started, run.get("ended"), time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), meta))
            seq = cur.lastrowid
        else:
            seq = row[0]
            conn.execute("DELETE FROM results WHERE run_seq = ?", (seq,))
            conn.execute("UPDATE runs SET started = ?, ended = ?, meta = ? WHERE seq = ?",
                         (started, run.get("ended"), meta, seq))
        conn.executemany(
            "INSERT INTO results (run_seq, host, check_name, target, peer, status, reason, metrics)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            [(seq,) + record_key(rec) + (rec.get("status") or "", rec.get("reason"),
                                         json.dumps(rec.get("metrics") or {}, sort_keys=True))
             for rec in records])
        deltas = _deltas(conn, seq, started, records)
        conn.execute("ROLLBACK" if dry_run else "COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return deltas


def runs(path):
    """All stored runs, oldest first: list of (run_id, started, ended, record count)."""
    conn = connect(path)
    try:
        return [tuple(r) for r in conn.execute(
            """SELECT r.run_id, r.started, r.ended, COUNT(x.run_seq) FROM runs r
               LEFT JOIN results x ON x.run_seq = r.seq GROUP BY r.seq ORDER BY r.started, r.seq""")]
    finally:
        conn.close()
