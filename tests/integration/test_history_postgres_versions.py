# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 23 item 3 on a REAL PostgreSQL server (the private cluster of test_history_postgres.pg_url): a store in the
layout before versions opens, is recorded as version 1 and still reads; a store of a later version is refused.

TODAY_DDL is the layout before versions, exactly: the CREATE statements that history.py of commit 4807bd0 ran on
PostgreSQL (its SCHEMA with the BIGSERIAL/BIGINT replacements of _Postgres._create).
"""

from __future__ import annotations

import json

import pytest

from ansible_collections.aifabric.acceptance.plugins.module_utils import results
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import history
from ansible_collections.aifabric.acceptance.tests.integration.test_history_postgres import (  # noqa: F401  pylint: disable=unused-import
    pg_url)

psycopg = pytest.importorskip("psycopg", reason="psycopg 3 (requirements.txt) is not installed")

TODAY_DDL = (
    "CREATE TABLE IF NOT EXISTS runs (\n        seq BIGSERIAL PRIMARY KEY,\n        run_id TEXT NOT NULL UNIQUE,\n"
    "        started TEXT NOT NULL,\n        ended TEXT,\n        recorded TEXT NOT NULL,\n        meta TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS results (\n        run_seq BIGINT NOT NULL REFERENCES runs(seq) ON DELETE CASCADE,\n"
    "        host TEXT NOT NULL,\n        check_name TEXT NOT NULL,\n        target TEXT NOT NULL,\n"
    "        peer TEXT NOT NULL,\n        status TEXT NOT NULL,\n        reason TEXT,\n        metrics TEXT NOT NULL)",
    "CREATE TABLE IF NOT EXISTS baselines (\n        name TEXT PRIMARY KEY,\n        created TEXT NOT NULL,\n"
    "        source_run TEXT NOT NULL,\n        kind TEXT NOT NULL,\n        data TEXT NOT NULL)",
    "CREATE INDEX IF NOT EXISTS results_host_run ON results (host, run_seq)",
    "CREATE INDEX IF NOT EXISTS results_run ON results (run_seq)",
    "CREATE INDEX IF NOT EXISTS runs_started ON runs (started, seq)",
)
RUN_ID = "20261120T100000Z-aaaa0001"
META = {"run_id": RUN_ID, "started": "2026-11-20T10:00:00Z", "ended": "2026-11-20T10:05:00Z",
        "verdict": {"worst_status": "pass"}, "headline": {}}


def _today_store(url):
    """A store as the code before versions left it: its tables, one run with one record, one baseline."""
    with psycopg.connect(url, autocommit=True) as conn:
        for statement in TODAY_DDL:
            conn.execute(statement)
        seq = conn.execute("INSERT INTO runs (run_id, started, ended, recorded, meta) VALUES (%s, %s, %s, %s, %s)"
                           " RETURNING seq", (RUN_ID, META["started"], META["ended"], "2026-11-20T10:06:00Z",
                                              json.dumps(META, sort_keys=True))).fetchone()[0]
        conn.execute("INSERT INTO results (run_seq, host, check_name, target, peer, status, reason, metrics)"
                     " VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
                     (seq, "gpu-1", "rdma.ib_write_bw", "mlx5_0", "gpu-2", "pass", None, '{"bw_avg_gbit_s": 390.5}'))
        conn.execute("INSERT INTO baselines (name, created, source_run, kind, data) VALUES (%s, %s, %s, %s, %s)",
                     ("accepted", "2026-11-20T10:07:00Z", RUN_ID, "run", '{"gpu-1|rdma.ib_write_bw|mlx5_0": {}}'))


def _versions(url):
    with psycopg.connect(url, autocommit=True) as conn:
        if not conn.execute("SELECT to_regclass('schema_version') IS NOT NULL").fetchone()[0]:
            return None
        return [r[0] for r in conn.execute("SELECT version FROM schema_version ORDER BY version")]


def _record(metric):
    return results.make("rdma.ib_write_bw", "pass", host="gpu-1", peer="gpu-2", target="mlx5_0",
                        metrics={"bw_avg_gbit_s": metric}, started="2026-11-21T10:00:00Z")


def test_todays_layout_opens_and_is_recorded_as_version_1(pg_url):
    _today_store(pg_url)
    assert history.store_version(pg_url) == 1
    assert [r["run_id"] for r in history.run_index(pg_url)] == [RUN_ID]
    assert _versions(pg_url) is None          # reading records nothing
    deltas = history.record_run(pg_url, {"run_id": "r2", "started": "2026-11-21T10:00:00Z"}, [_record(380.5)])
    assert deltas[0]["previous_run"] == RUN_ID and deltas[0]["metrics"]["bw_avg_gbit_s"]["previous"] == 390.5
    assert _versions(pg_url) == [1]
    history.record_run(pg_url, {"run_id": "r3", "started": "2026-11-22T10:00:00Z"}, [_record(381.0)])
    assert _versions(pg_url) == [1]
    assert history.load_baseline(pg_url, "accepted")["source_run"] == RUN_ID


def test_a_later_version_is_refused(pg_url):
    history.record_run(pg_url, {"run_id": "r1", "started": "2026-11-21T10:00:00Z"}, [_record(380.5)])
    assert _versions(pg_url) == [1]
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("INSERT INTO schema_version (version, applied, note) VALUES (2, 'x', 'later')")
    for action in (lambda: history.record_run(pg_url, {"run_id": "r2", "started": "2026-11-22T10:00:00Z"},
                                              [_record(381.0)]),
                   lambda: history.run_index(pg_url), lambda: history.store_version(pg_url)):
        with pytest.raises(history.HistoryError, match=r"layout version 2, newer than this collection knows \(1\)"):
            action()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        assert [r[0] for r in conn.execute("SELECT run_id FROM runs")] == ["r1"]
