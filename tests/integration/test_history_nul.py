# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""NUL bytes of tool output in the history store: the same data in SQLite and PostgreSQL (issue 18 item 9).

PostgreSQL text cannot hold NUL, so before, one NUL byte in one record kept the whole run out of a PostgreSQL
history (SQLite stored it). The store's writer now stores each NUL as U+FFFD in every text and JSON column, for
both backends alike. Uses the private PostgreSQL server of test_history_postgres.py (skipped with the reason
where it cannot start).
"""

from __future__ import annotations

import io
import json

from ansible_collections.aifabric.acceptance.plugins.module_utils import results
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import fleet, history
from ansible_collections.aifabric.acceptance.tests.integration.test_callback import (  # pylint: disable=unused-import
    env, run_playbook)
from ansible_collections.aifabric.acceptance.tests.integration.test_history_postgres import (  # pylint: disable=unused-import
    pg_url)

HOSTS = ["gpu-1", "gpu-2"]


def records(bw):
    """A pairwise record whose target and reason carry the NUL bytes of a tool's output."""
    return [results.make("rdma.ib_write_bw", "fail", reason="bw below 380; tool said: port\x00\x00 down", host="gpu-1",
                         peer="gpu-2", target="mlx5_0\x00", metrics={"bw_avg_gbit_s": bw}),
            results.make("env.os", "pass", host="gpu-2", facts={"kernel": "6.1\x00"})]


def stored(db):
    out = io.StringIO()
    history.export_jsonl(db, out)
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    return ([line for line in lines if line["type"] == "record"],
            [line["meta"] for line in lines if line["type"] == "run"])


def test_both_backends_store_the_same_data_with_nul_as_u_fffd(pg_url, tmp_path):
    sqlite_db = str(tmp_path / "h.sqlite")
    got = {}
    for db in (pg_url, sqlite_db):
        assert history.record_run(db, fleet.run_metadata("r1", "2026-11-20T10:00:00Z", None, HOSTS,
                                                         playbooks=["nul\x00.yml"]), records(390.0)) == []
        got[db] = history.record_run(db, fleet.run_metadata("r2", "2026-11-21T10:00:00Z", None, HOSTS), records(190.0))
    assert got[pg_url] == got[sqlite_db]
    pair = [d for d in got[pg_url] if d["check"] == "rdma.ib_write_bw"]
    # matched with the previous run (as stored), named as the report names the record (render matches on that)
    assert len(pair) == 1 and not pair[0]["new"] and pair[0]["target"] == "mlx5_0\x00"
    assert pair[0]["metrics"]["bw_avg_gbit_s"]["delta"] == -200.0
    rows_pg, meta_pg = stored(pg_url)
    rows_sqlite, meta_sqlite = stored(sqlite_db)
    assert rows_pg == rows_sqlite
    assert [m["playbooks"] for m in meta_pg] == [m["playbooks"] for m in meta_sqlite] == [["nul\ufffd.yml"], []]
    assert "\x00" not in json.dumps(rows_pg + meta_pg, ensure_ascii=False)
    pairwise = [r for r in rows_pg if r["check"] == "rdma.ib_write_bw"]
    assert [(r["target"], r["reason"]) for r in pairwise] == [
        ("mlx5_0\ufffd", "bw below 380; tool said: port\ufffd\ufffd down")] * 2


def test_a_run_whose_tool_printed_nul_is_stored_alike_in_both_backends(pg_url, env, tmp_path):
    """A real playbook: the tool's stderr (two NUL bytes) is the reason of node1's env.task error."""
    rows = {}
    for name, db in (("postgresql", pg_url), ("sqlite", str(tmp_path / "history.sqlite"))):
        proc = run_playbook(dict(env, AIFABRIC_HISTORY_DB=db), tmp_path / name, "nul_output.yml")
        assert proc.returncode == 2, proc.stdout[-3000:] + proc.stderr[-3000:]     # node1's tool failed
        assert "history store" not in proc.stdout + proc.stderr, proc.stdout[-3000:]     # no history warning
        assert len(history.runs(db)) == 1
        rows[name] = sorted((r["host"], r["check"], r["target"], r["status"], r["reason"]) for r in stored(db)[0])
    assert rows["postgresql"] == rows["sqlite"]
    failed = [r for r in rows["sqlite"] if r[1] == "env.task"]
    assert len(failed) == 1 and "hca_id mlx5_0\ufffd\ufffd: firmware query failed" in failed[0][4], rows
