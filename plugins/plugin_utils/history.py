# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The history store: every run's records, the change since last time, baselines, retention, export.

Two backends with one schema and one set of guarantees:

- a SQLite file (the default): WAL journal and a busy timeout, each run written in ONE
  ``BEGIN IMMEDIATE`` transaction. Do not put the file on NFS (WAL needs local locking).
- PostgreSQL (``postgresql://user@host/db``, psycopg 3): each run written in ONE transaction
  that first takes a transaction-scoped advisory lock (:data:`PG_LOCK`), so writers queue
  exactly as SQLite's ``BEGIN IMMEDIATE`` makes them; for AWX, where a SQLite file would
  vanish with the execution environment.

So two runs (two ``ansible-playbook`` processes, two AWX jobs) may write at once: the second
waits for the first instead of failing or interleaving.

- A run is keyed by its run id. Writing the same run again (a re-analysis with
  ``aifabric.acceptance.report``) replaces that run's rows: the store stays idempotent.
- For each record, keyed by (host, check, target, peer), :func:`record_run` returns the
  change since the previous run *of the same host* (the latest earlier run, by start
  time, that has any record of that host): previous status and per-metric deltas.
- The run row's ``meta`` holds the run metadata plus ``verdict`` (host counts by verdict) and
  ``headline`` (fleet medians of the headline metrics), which ``reports/index.html`` shows.
- Baselines (:func:`save_baseline`) are frozen copies of one run's values or its fleet medians,
  kept under a name; retention (:func:`prune`) never removes them.
- The layout of the tables has a version (:data:`STORE_VERSION`), kept in the ``schema_version`` table: opening a
  store for writing applies the steps of :data:`MIGRATIONS` it lacks, in that write transaction (a store of the
  layout before versions is recorded as version 1); a store of a later version is refused (HistoryError), for
  reading too, and never written.

Controller-only (plugin_utils), no Ansible types.
"""

from __future__ import annotations

import datetime
import fnmatch
import functools
import json
import os
import re
import sqlite3
import time
import urllib.parse

from ansible_collections.aifabric.acceptance.plugins.module_utils import results, statedir
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import fleet_relative, verdict

BUSY_TIMEOUT_S = 60.0
PG_LOCK = 0x41494642     # advisory lock key of the writers ("AIFB")
URL_SCHEMES = ("postgresql", "postgres")    # a URL's scheme, any case
_SCHEME = re.compile(r"([A-Za-z][A-Za-z0-9+.\-]*)://")
_CONNINFO = re.compile(r"\s*[A-Za-z_]+\s*=")      # libpq's key=value form (host=... password=...)
HIDDEN = "***"
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
    """CREATE TABLE IF NOT EXISTS baselines (
        name TEXT PRIMARY KEY,
        created TEXT NOT NULL,
        source_run TEXT NOT NULL,
        kind TEXT NOT NULL,
        data TEXT NOT NULL)""",
    "CREATE INDEX IF NOT EXISTS results_host_run ON results (host, run_seq)",
    "CREATE INDEX IF NOT EXISTS results_run ON results (run_seq)",
    "CREATE INDEX IF NOT EXISTS runs_started ON runs (started, seq)",
)
BASELINE_KINDS = ("run", "medians")
# The layout of the store's tables, recorded in its schema_version table (one row per step applied). A store of the
# layout before versions (runs, results, baselines and no schema_version table) is version 1: opened for writing,
# it is recorded as such; a store of a later version than this code knows is refused (HistoryError), never written.
STORE_VERSION = 1
VERSION_TABLE = """CREATE TABLE IF NOT EXISTS schema_version (
        version INTEGER PRIMARY KEY,
        applied TEXT NOT NULL,
        note TEXT NOT NULL)"""
# The migration path: (version, what it does, statements) in order; a store at version v gets every step above v,
# in the transaction that opens it for writing (all or nothing). Version 1 creates today's tables where they are
# missing (a new store; a store written before baselines existed) and records a store that has them.
MIGRATIONS = (
    (1, "runs, results and baselines (the layout before versions: created where missing, else recorded)", SCHEMA),
)


class HistoryError(Exception):
    """The history store could not be opened, read or written (message names the store)."""


def _scheme(db):
    """The scheme of a URL (``scheme://...``), or None for a file path."""
    found = _SCHEME.match(db) if isinstance(db, str) else None
    return found.group(1) if found else None


def is_url(db):
    """True for a PostgreSQL URL (``postgresql://...``, the scheme in any case), False for a SQLite file path."""
    return (_scheme(db) or "").lower() in URL_SCHEMES


def check_db(db):
    """``db`` when it names a store this code can open: a SQLite file path or a ``postgresql://`` URL. HistoryError
    for a URL of another scheme or a libpq ``key=value`` string - never taken for a file path (which would be
    created, named after the credentials) - saying so without its text."""
    if not isinstance(db, str) or not db.strip():
        raise HistoryError("history_db must be a SQLite file path or a postgresql:// URL, got %s" % type(db).__name__)
    scheme = _scheme(db)
    if scheme is not None and not is_url(db):
        raise HistoryError("history_db: the URL scheme %s:// is not supported: give a postgresql:// URL or a SQLite "
                           "file path" % scheme[:40])
    if scheme is None and _CONNINFO.match(db):
        raise HistoryError("history_db: a key=value connection string is not supported (its text is not shown): give "
                           "a postgresql:// URL (its password in ~/.pgpass or PGPASSWORD) or a SQLite file path")
    return db


def _url_parts(db):
    """(scheme, user, host and port, path) of a URL, split by hand: never raises (urllib does, on ``[::1``)."""
    scheme, rest = db.split("://", 1)
    rest = re.split(r"[?#]", rest, 1)[0]
    netloc, slash, path = rest.partition("/")
    user, at, host = netloc.rpartition("@")
    return scheme, (user.split(":", 1)[0] + "@") if at else "", host, slash + path


def display_name(db):
    """The store as shown in messages and reports: a file's absolute path; a URL without its password, parameters
    or fragment (any scheme); a key=value string as that, never its text."""
    if _scheme(db) is not None:
        return "%s://%s%s%s" % _url_parts(db)
    if not isinstance(db, str) or _CONNINFO.match(db):
        return "(a key=value connection string)"
    return os.path.abspath(os.path.expanduser(db))


def _secrets(db):
    """The texts of ``db`` that must never be shown: the URL's password (as written and decoded) and the values of
    its ``password`` parameters."""
    if _scheme(db) is None:
        return [db] if _CONNINFO.match(db or "") else []
    rest = db.split("://", 1)[1]
    netloc = re.split(r"[/?#]", rest, 1)[0]
    found = []
    if "@" in netloc and ":" in netloc.rpartition("@")[0]:
        found.append(netloc.rpartition("@")[0].split(":", 1)[1])
    query = rest.partition("?")[2].partition("#")[0]
    found.extend(value for key, _eq, value in (p.partition("=") for p in query.split("&")) if key == "password")
    return [t for text in found if text for t in (text, urllib.parse.unquote(text))]


def hide(db, text):
    """``text`` (an error message of sqlite3, psycopg or libpq, which may quote the URL or a part of it) with ``db``
    and every secret of it replaced."""
    text = str(text).replace(db, display_name(db)) if isinstance(db, str) and db else str(text)
    for secret in sorted(set(_secrets(db)), key=len, reverse=True):
        text = text.replace(secret, HIDDEN)
    return text


NUL_SUBSTITUTE = "\ufffd"    # what a NUL byte of tool output is stored as (PostgreSQL text cannot hold NUL)


def _text(value):
    """A string as the store holds it, in both backends alike: each NUL as U+FFFD."""
    return value.replace("\x00", NUL_SUBSTITUTE) if isinstance(value, str) and "\x00" in value else value


def _clean(value):
    """A JSON value with every string (keys too) as :func:`_text` stores it."""
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, dict):
        return dict((_text(k), _clean(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def _json(value):
    """The text of a JSON column (sorted keys; NUL stored as U+FFFD in every string)."""
    return json.dumps(_clean(value), sort_keys=True, default=str)


def _fields(record):
    return (record.get("host") or "", record.get("check") or "", record.get("target") or "", record.get("peer") or "")


def record_key(record):
    """(host, check, target, peer) with '' for null, as stored (:func:`_text`): how history matches records
    across runs."""
    return tuple(_text(field) for field in _fields(record))


def _now():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


# ---------------------------------------------------------------- backends


class _SQLite:
    """One SQLite connection (autocommit; explicit transactions)."""

    errors = (sqlite3.Error, OSError)

    def __init__(self, path, timeout_s, read_only=False):
        path = os.path.expanduser(path)
        self.name = os.path.abspath(path)
        self.timeout_s = timeout_s
        if read_only:
            # Without a -wal file (no writer has it open) the store is read as immutable: SQLite then creates
            # no -wal/-shm file; with one, a plain read-only connection reads the writer's latest commit.
            query = "mode=ro" if os.path.exists(path + "-wal") else "mode=ro&immutable=1"
            self.conn = sqlite3.connect("file:%s?%s" % (urllib.parse.quote(self.name), query), uri=True,
                                        timeout=timeout_s, isolation_level=None)
            return
        directory = statedir.trusted_dir(os.path.dirname(self.name), private=False, what="history database directory")
        self.name = path = os.path.join(directory, os.path.basename(self.name))
        statedir.check_file(path, "history database")
        self.conn = sqlite3.connect(path, timeout=timeout_s, isolation_level=None)
        try:
            self.conn.execute("PRAGMA busy_timeout = %d" % int(timeout_s * 1000))
            self.retry(lambda: self.conn.execute("PRAGMA journal_mode = WAL"))
            self.conn.execute("PRAGMA synchronous = NORMAL")
            self.conn.execute("PRAGMA foreign_keys = ON")
            self.retry(lambda: self.transaction(lambda: _migrate(self)))
        except BaseException:
            self.conn.close()
            raise

    @staticmethod
    def ddl(statement):
        return statement

    def has_table(self, name):
        return self.conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)).fetchone() is not None

    def execute(self, sql, params=()):
        return self.conn.execute(sql, params)

    def executemany(self, sql, rows):
        self.conn.executemany(sql, rows)

    def insert_run(self, row):
        return self.conn.execute(
            "INSERT INTO runs (run_id, started, ended, recorded, meta) VALUES (?, ?, ?, ?, ?)", row).lastrowid

    def transaction(self, action):
        """Run action() in one write transaction (the write lock is taken at once)."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            out = action()
            self.conn.execute("COMMIT")
        except BaseException:
            if self.conn.in_transaction:    # SQLite itself rolls back on some errors (a full disk)
                self.conn.execute("ROLLBACK")
            raise
        return out

    def retry(self, action):
        """Run an action, retrying while SQLite says the database is locked/busy."""
        deadline = time.monotonic() + self.timeout_s
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

    def close(self):
        self.conn.close()


class _Postgres:
    """One psycopg 3 connection (autocommit; explicit transactions serialised by an advisory lock)."""

    def __init__(self, url, timeout_s, read_only=False):
        try:
            import psycopg     # pylint: disable=import-outside-toplevel  # only a PostgreSQL store needs it
        except ImportError as exc:
            raise HistoryError("history_db %s needs the Python package psycopg (3.x): pip install 'psycopg[binary]'"
                               % display_name(url)) from exc
        self.errors = (psycopg.Error, OSError)
        self.name = display_name(url)
        self.timeout_s = timeout_s
        scheme = _scheme(url)
        # libpq knows the scheme in lower case only (a URL's scheme is case-insensitive, RFC 3986)
        self.conn = psycopg.connect(scheme.lower() + url[len(scheme):], autocommit=True,
                                    connect_timeout=max(1, int(timeout_s)))
        try:
            # every statement bounded: a lock wait longer than the busy timeout is an error, as with SQLite
            self.conn.execute("SET statement_timeout = %d" % int(timeout_s * 1000))
            if not read_only:
                self.transaction(lambda: _migrate(self))
        except BaseException:
            self.conn.close()
            raise

    @staticmethod
    def ddl(statement):
        return statement.replace("INTEGER PRIMARY KEY AUTOINCREMENT", "BIGSERIAL PRIMARY KEY").replace(
            "run_seq INTEGER", "run_seq BIGINT")

    def has_table(self, name):
        return self.conn.execute("SELECT to_regclass(%s) IS NOT NULL", (name,)).fetchone()[0]

    def exists(self):
        return self.has_table("runs")

    @staticmethod
    def _sql(sql):
        return sql.replace("?", "%s")

    def execute(self, sql, params=()):
        return self.conn.execute(self._sql(sql), params)

    def executemany(self, sql, rows):
        with self.conn.cursor() as cur:
            cur.executemany(self._sql(sql), rows)

    def insert_run(self, row):
        return self.execute("INSERT INTO runs (run_id, started, ended, recorded, meta) VALUES (?, ?, ?, ?, ?)"
                            " RETURNING seq", row).fetchone()[0]

    def transaction(self, action):
        with self.conn.transaction():
            self.conn.execute("SELECT pg_advisory_xact_lock(%s)", (PG_LOCK,))
            return action()

    @staticmethod
    def retry(action):
        return action()     # the advisory lock queues writers; nothing to retry

    def close(self):
        self.conn.close()


def _stored_version(store):
    """The layout version a store records; 1 for one of the layout before versions (its tables without a
    schema_version table), 0 for an empty one."""
    if store.has_table("schema_version"):
        row = store.execute("SELECT MAX(version) FROM schema_version").fetchone()
        if row is not None and row[0] is not None:
            return int(row[0])
    return 1 if store.has_table("runs") else 0


def _refuse_newer(store, version):
    if version > STORE_VERSION:
        raise HistoryError("history store %s has layout version %d, newer than this collection knows (%d): it was "
                           "written by a later aifabric.acceptance; use that release (or a later one) with it, or "
                           "another history_db" % (store.name, version, STORE_VERSION))


def _migrate(store):
    """Bring the store to STORE_VERSION (in the caller's write transaction): record the layout before versions as
    version 1, apply each later step of MIGRATIONS; HistoryError for a store of a later version."""
    recorded = store.has_table("schema_version")
    version = _stored_version(store) if recorded else 0     # not recorded yet: every step runs (they create if missing)
    _refuse_newer(store, version)
    store.execute(VERSION_TABLE)
    for step, note, statements in MIGRATIONS:
        if step > version:
            for statement in statements:
                store.execute(store.ddl(statement))
            store.execute("INSERT INTO schema_version (version, applied, note) VALUES (?, ?, ?)", (step, _now(), note))


def store_version(db):
    """The layout version of a store (1 for one written before versions), None when it does not exist."""
    return _using(db, "read", _stored_version, read_only=True)


def _open(db, timeout_s=BUSY_TIMEOUT_S, read_only=False):
    """A backend connection, or HistoryError naming the store."""
    check_db(db)
    try:
        if is_url(db):
            return _Postgres(db, timeout_s, read_only)
        return _SQLite(db, timeout_s, read_only)
    except HistoryError:
        raise
    except Exception as exc:  # pylint: disable=broad-except  # sqlite3/psycopg/OS errors all name the store
        raise HistoryError("cannot open history store %s: %s" % (display_name(db), hide(db, exc))) from None


def _read_only(db, timeout_s=BUSY_TIMEOUT_S):
    """A read-only connection, or None when the store does not exist yet (nothing is created); HistoryError for a
    store of a later layout version than this code knows."""
    if not is_url(check_db(db)) and not os.path.isfile(os.path.expanduser(db)):
        return None
    store = _open(db, timeout_s, read_only=True)
    try:
        if not is_url(db) or store.exists():
            _refuse_newer(store, _stored_version(store))
            return store
    except store.errors as exc:
        store.close()
        raise HistoryError("cannot read history store %s: %s" % (store.name, hide(db, exc))) from None
    except HistoryError:
        store.close()
        raise
    store.close()
    return None


def _using(db, what, action, timeout_s=BUSY_TIMEOUT_S, read_only=False, missing=None):
    """Open the store, run action(store), close; errors become HistoryError. A missing store read
    read-only gives ``missing``."""
    store = _read_only(db, timeout_s) if read_only else _open(db, timeout_s)
    if store is None:
        return missing
    try:
        return store.retry(lambda: action(store))
    except HistoryError:
        raise
    except store.errors as exc:
        raise HistoryError("cannot %s history store %s: %s" % (what, store.name, hide(db, exc))) from None
    finally:
        store.close()


# ---------------------------------------------------------------- deltas


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


def _previous_run(store, host, started, seq):
    return store.execute(
        """SELECT r.seq, r.run_id, r.started FROM runs r
           WHERE (r.started < ? OR (r.started = ? AND r.seq < ?))
             AND EXISTS (SELECT 1 FROM results x WHERE x.run_seq = r.seq AND x.host = ?)
           ORDER BY r.started DESC, r.seq DESC LIMIT 1""",
        (started, started, seq, host)).fetchone()


def _deltas(store, seq, started, records):
    deltas = []
    previous_by_host = {}
    for rec in records:
        key = record_key(rec)     # as stored; the delta names the record as the report has it
        host = key[0]
        if host not in previous_by_host:
            prev = _previous_run(store, host, started, seq)
            rows = {}
            if prev is not None:
                for row in store.execute(
                        "SELECT check_name, target, peer, status, metrics FROM results WHERE run_seq = ? AND host = ?",
                        (prev[0], host)):
                    rows[(host, row[0], row[1], row[2])] = (row[3], json.loads(row[4]))
            previous_by_host[host] = (prev, rows)
        prev, rows = previous_by_host[host]
        if prev is None:
            continue    # first run of this host: nothing to compare with
        before = rows.get(key)
        fields = _fields(rec)
        deltas.append({
            "host": fields[0], "check": fields[1], "target": fields[2] or None, "peer": fields[3] or None,
            "status": rec.get("status"),
            "previous_run": prev[1],
            "previous_started": prev[2],
            "previous_status": None if before is None else before[0],
            "status_changed": before is None or before[0] != rec.get("status"),
            "new": before is None,
            "metrics": {} if before is None else metric_deltas(before[1], rec.get("metrics")),
        })
    return deltas


# ---------------------------------------------------------------- what a run row says about the run


def _median(values):
    return fleet_relative.median(values)


def headline_rules():
    """The headline metrics (check glob, metric, better): the fleet-relative analysis's default rules."""
    return [dict(rule) for rule in fleet_relative.DEFAULT_RULES]


@functools.lru_cache(maxsize=1024)
def _headline_metrics(check):
    """The headline metrics of a check (the rules whose glob matches it)."""
    return tuple(rule["metric"] for rule in fleet_relative.DEFAULT_RULES if _glob(check, rule["check"]))


def headline(records):
    """Fleet medians of the headline metrics over the measured records: {"check metric": median}."""
    values = {}
    for rec in records:
        if not isinstance(rec, dict) or rec.get("status") not in results.JUDGED:
            continue
        if isinstance(rec.get("tool"), dict) and rec["tool"].get("name") == "fleet-analysis":
            continue
        for metric in _headline_metrics(rec.get("check") or ""):
            value = (rec.get("metrics") or {}).get(metric)
            if _number(value):
                values.setdefault("%s %s" % (rec["check"], metric), []).append(value)
    return dict((name, round(_median(vals), 6)) for name, vals in sorted(values.items()))


def _glob(name, pattern):
    return fnmatch.fnmatchcase(name, pattern)


def run_verdict(records):
    """Host counts by verdict and the run verdict, by the report's rules (verdict.host_records)."""
    by_status = dict((s, 0) for s in results.STATUSES)
    for _host, counted in verdict.host_records(records).items():
        by_status[verdict.host_status(counted)] += 1
    worst = [s for s in sorted(results.STATUSES, key=results.SEVERITY.get, reverse=True) if by_status[s]]
    return {"worst_status": worst[0] if worst else "skip", "hosts_by_status": by_status,
            "hosts_total": sum(by_status.values()), "counts": results.count(records)}


# ---------------------------------------------------------------- write


class _Aborted(Exception):
    """The caller's ``before_commit`` step failed: the run was rolled back; ``error`` is what it raised."""

    def __init__(self, error):
        super().__init__(str(error))
        self.error = error


class DeltasChanged(Exception):
    """The deltas of the run, written, are not those ``record_run`` was told to expect (another run of these hosts
    was stored, or removed, since they were read): the run was rolled back; ``deltas`` are the ones it has now."""

    def __init__(self, deltas):
        super().__init__("the history of these hosts changed since it was read")
        self.deltas = deltas


def record_run(path, run, records, timeout_s=BUSY_TIMEOUT_S, dry_run=False, before_commit=None, expect=None):
    """Store one run (``run``: the run metadata with run_id/started/ended) and its records.

    ``path`` is a SQLite file or a ``postgresql://`` URL. Returns the per-record deltas since
    the previous run of each host (a list of dicts). With dry_run (check mode) nothing is
    stored and a store that does not exist yet is not created: the same deltas, read only.
    ``before_commit(deltas)`` runs inside the run's transaction, after its rows are written and before
    they are committed (the report files put in place, so that a run is stored only with its report): when
    it raises, the transaction is rolled back (which needs no free space) and its exception propagates
    as it was. ``expect``: the deltas a dry run gave before (the report files were made with them, outside the
    transaction); when the written run's deltas differ, the transaction is rolled back before ``before_commit``
    and DeltasChanged carries the new ones. Raises HistoryError when the store cannot be written, including a
    failed commit after ``before_commit`` ran (the caller then undoes what it did).
    """
    if dry_run:
        return _dry_deltas(path, run, records, timeout_s)

    def write(store):
        deltas = _write(store, run, records)
        if expect is not None and deltas != expect:
            raise DeltasChanged(deltas)
        if before_commit is not None:
            try:
                before_commit(deltas)
            except Exception as exc:  # pylint: disable=broad-except  # an OSError must not read as the store's
                raise _Aborted(exc) from exc
        return deltas

    try:
        return _using(path, "write", lambda store: store.transaction(lambda: write(store)), timeout_s)
    except _Aborted as aborted:
        raise aborted.error from aborted.error.__cause__


def _dry_deltas(path, run, records, timeout_s=BUSY_TIMEOUT_S):
    def read(store):
        row = store.execute("SELECT seq FROM runs WHERE run_id = ?", (_text(run["run_id"]),)).fetchone()
        seq = row[0] if row else store.execute("SELECT COALESCE(MAX(seq), 0) + 1 FROM runs").fetchone()[0]
        return _deltas(store, seq, _text(run.get("started") or ""), records)
    return _using(path, "read", read, timeout_s, read_only=True, missing=[])


def _write(store, run, records):
    """Every text and JSON column as :func:`_text`/:func:`_json` make it: the same data in SQLite and PostgreSQL."""
    run_id, started, ended = _text(run["run_id"]), _text(run.get("started") or ""), _text(run.get("ended"))
    meta = _json(dict(run, verdict=run_verdict(records), headline=headline(records)))
    row = store.execute("SELECT seq FROM runs WHERE run_id = ?", (run_id,)).fetchone()
    if row is None:
        seq = store.insert_run((run_id, started, ended, _now(), meta))
    else:
        seq = row[0]
        store.execute("DELETE FROM results WHERE run_seq = ?", (seq,))
        store.execute("UPDATE runs SET started = ?, ended = ?, meta = ? WHERE seq = ?", (started, ended, meta, seq))
    store.executemany(
        "INSERT INTO results (run_seq, host, check_name, target, peer, status, reason, metrics)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [(seq,) + record_key(rec) + (_text(rec.get("status") or ""), _text(rec.get("reason")),
                                     _json(rec.get("metrics") or {}))
         for rec in records])
    return _deltas(store, seq, started, records)


# ---------------------------------------------------------------- read


def runs(path):
    """All stored runs, oldest first: list of (run_id, started, ended, record count)."""
    return _using(path, "read", lambda store: [tuple(r) for r in store.execute(
        """SELECT r.run_id, r.started, r.ended, COUNT(x.run_seq) FROM runs r
           LEFT JOIN results x ON x.run_seq = r.seq GROUP BY r.seq, r.run_id, r.started, r.ended
           ORDER BY r.started, r.seq""").fetchall()], read_only=True, missing=[])


def run_index(path):
    """Every stored run, oldest first: {run_id, started, ended, recorded, meta} (meta: the run metadata
    with ``verdict`` and ``headline``). A store that does not exist gives []."""
    def read(store):
        return [{"run_id": r[0], "started": r[1], "ended": r[2], "recorded": r[3], "meta": json.loads(r[4])}
                for r in store.execute("SELECT run_id, started, ended, recorded, meta FROM runs ORDER BY started, seq")]
    return _using(path, "read", read, read_only=True, missing=[])


def _record_rows(store, seq):
    return [{"host": r[0], "check": r[1], "target": r[2] or None, "peer": r[3] or None, "status": r[4],
             "reason": r[5], "metrics": json.loads(r[6])}
            for r in store.execute("SELECT host, check_name, target, peer, status, reason, metrics FROM results"
                                   " WHERE run_seq = ? ORDER BY host, check_name, target, peer", (seq,))]


def run_records(path, run_id):
    """(run metadata, records as stored: host/check/target/peer/status/reason/metrics) of one run;
    HistoryError when the run is not in the store."""
    def read(store):
        row = store.execute("SELECT seq, meta FROM runs WHERE run_id = ?", (_text(run_id),)).fetchone()
        if row is None:
            return None
        return json.loads(row[1]), _record_rows(store, row[0])
    out = _using(path, "read", read, read_only=True)
    if out is None:
        raise HistoryError("run %r is not in the history store %s" % (run_id, display_name(path)))
    return out


def export_jsonl(path, handle):
    """Write the whole store as JSON lines to a text handle: one line per run (``"type": "run"``),
    then one per record of it (``"type": "record"`` with its run_id). Returns (runs, records) written."""
    def read(store):
        n_runs = n_records = 0
        for seq, run_id, meta in store.execute("SELECT seq, run_id, meta FROM runs ORDER BY started, seq").fetchall():
            handle.write(json.dumps({"type": "run", "run_id": run_id, "meta": json.loads(meta)}, sort_keys=True) + "\n")
            n_runs += 1
            for rec in _record_rows(store, seq):
                handle.write(json.dumps(dict(rec, type="record", run_id=run_id), sort_keys=True) + "\n")
                n_records += 1
        return n_runs, n_records
    return _using(path, "read", read, read_only=True, missing=(0, 0))


# ---------------------------------------------------------------- retention


def _parse_time(text):
    try:
        return datetime.datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
    except (TypeError, ValueError):
        return None


def prune(path, keep_runs=None, keep_days=None, now=None, dry_run=False, timeout_s=BUSY_TIMEOUT_S):
    """Retention: remove the runs beyond the newest ``keep_runs`` and those started more than
    ``keep_days`` days before ``now`` (both optional; None keeps everything). Baselines stay.
    Returns the run ids removed (that would be removed, with dry_run), oldest first."""
    for name, value in (("keep_runs", keep_runs), ("keep_days", keep_days)):
        if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
            raise ValueError("history %s must be a whole number >= 1, got %r" % (name, value))
    if keep_runs is None and keep_days is None:
        return []
    now = now or datetime.datetime.now(datetime.timezone.utc)

    def doomed(store):
        rows = store.execute("SELECT run_id, started FROM runs ORDER BY started DESC, seq DESC").fetchall()
        out = []
        for index, (run_id, started) in enumerate(rows):
            when = _parse_time(started)
            old = keep_days is not None and when is not None and (now - when).total_seconds() > keep_days * 86400
            if (keep_runs is not None and index >= keep_runs) or old:
                out.append(run_id)
        return out[::-1]

    def remove(store):
        gone = doomed(store)
        for run_id in gone:
            store.execute("DELETE FROM runs WHERE run_id = ?", (run_id,))
        return gone

    if dry_run:
        return _using(path, "read", doomed, timeout_s, read_only=True, missing=[])
    return _using(path, "write", lambda store: store.transaction(lambda: remove(store)), timeout_s)


# ---------------------------------------------------------------- baselines


def baseline_data(records, kind):
    """What a baseline freezes from a run's records: per record key (kind ``run``) or per
    (check, target) fleet median (kind ``medians``), the headline metrics of measured records."""
    if kind not in BASELINE_KINDS:
        raise ValueError("baseline kind must be one of %s, got %r" % (", ".join(BASELINE_KINDS), kind))
    values = {}
    for rec in records:
        if rec.get("status") not in results.JUDGED or rec.get("peer"):
            continue    # pairwise records measure links: attribution judges them, not baselines
        for rule in fleet_relative.DEFAULT_RULES:
            value = (rec.get("metrics") or {}).get(rule["metric"])
            if not _number(value) or not _glob(rec.get("check") or "", rule["check"]):
                continue
            if kind == "run":
                key = "%s|%s|%s" % (rec.get("host") or "", rec["check"], rec.get("target") or "")
            else:
                key = "%s|%s" % (rec["check"], rec.get("target") or "")
            values.setdefault(key, {}).setdefault(rule["metric"], []).append(value)
    return dict((key, dict((metric, round(_median(vals), 6)) for metric, vals in metrics.items()))
                for key, metrics in sorted(values.items()))


def save_baseline(path, name, run_id, kind="medians", timeout_s=BUSY_TIMEOUT_S):
    """Freeze run ``run_id`` (its values, or its fleet medians) under ``name``, replacing an earlier
    baseline of that name. Returns the baseline (see :func:`load_baseline`)."""
    if not isinstance(name, str) or not name.strip() or len(name) > 200:
        raise ValueError("a baseline name must be a non-empty string of at most 200 characters, got %r" % (name,))
    _meta, rows = run_records(path, run_id)
    data = baseline_data(rows, kind)
    if not data:
        raise ValueError("run %s has no measured headline metric (%s) to freeze" % (
            run_id, ", ".join(sorted(set(r["metric"] for r in fleet_relative.DEFAULT_RULES)))))
    baseline = {"name": name, "created": _now(), "source_run": run_id, "kind": kind, "data": data}

    def write(store):
        store.execute("DELETE FROM baselines WHERE name = ?", (_text(name),))
        store.execute("INSERT INTO baselines (name, created, source_run, kind, data) VALUES (?, ?, ?, ?, ?)",
                      (_text(name), baseline["created"], _text(run_id), kind, _json(data)))
    _using(path, "write", lambda store: store.transaction(lambda: write(store)), timeout_s)
    return baseline


def _has_baselines(store):
    """False for a store written before baselines existed (its first write adds the table)."""
    return store.has_table("baselines")


def load_baseline(path, name):
    """The baseline called ``name``: {name, created, source_run, kind, data}, or None when there is none."""
    def read(store):
        if not _has_baselines(store):
            return None
        row = store.execute("SELECT name, created, source_run, kind, data FROM baselines WHERE name = ?",
                            (_text(name),)).fetchone()
        if row is None:
            return None
        return {"name": row[0], "created": row[1], "source_run": row[2], "kind": row[3], "data": json.loads(row[4])}
    return _using(path, "read", read, read_only=True)


def baselines(path):
    """Names of the stored baselines with their source run and kind, by name."""
    def read(store):
        if not _has_baselines(store):
            return []
        return [{"name": r[0], "created": r[1], "source_run": r[2], "kind": r[3]}
                for r in store.execute("SELECT name, created, source_run, kind FROM baselines ORDER BY name")]
    return _using(path, "read", read, read_only=True, missing=[])
