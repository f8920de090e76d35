# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The history store on a REAL PostgreSQL server: same schema, same answers, same concurrency guarantees.

The test starts a private cluster (initdb + pg_ctl from Debian's ``postgresql`` package) in its own
tmp directory, listening only on a Unix socket there, as an unprivileged user (PostgreSQL refuses to
run as root), and stops it (``pg_ctl stop -m immediate``, then a kill of its postmaster) on every path.
Skipped, with the reason, where the binaries, psycopg or an unprivileged user are missing.
"""

from __future__ import annotations

import io
import json
import multiprocessing
import os
import pwd
import shutil
import signal
import subprocess
import tempfile

import pytest

from ansible_collections.aifabric.acceptance.plugins.module_utils import results
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import baseline, fleet, history, history_index
from ansible_collections.aifabric.acceptance.tests.integration.test_callback import (  # pylint: disable=unused-import
    env, run_playbook)
from ansible_collections.aifabric.acceptance.tests.unit.plugins.plugin_utils.test_history_url import assert_injection_is_data

psycopg = pytest.importorskip("psycopg", reason="psycopg 3 (requirements.txt) is not installed")

PG_BIN_DIRS = ("/usr/lib/postgresql/17/bin", "/usr/lib/postgresql/16/bin", "/usr/lib/postgresql/15/bin")
STEP_TIMEOUT_S = 60
HOSTS = ("gpu-1", "gpu-2", "gpu-3", "gpu-4")


def _pg_bin():
    for directory in PG_BIN_DIRS:
        if os.path.isfile(os.path.join(directory, "initdb")):
            return directory
    found = shutil.which("initdb")
    return os.path.dirname(os.path.realpath(found)) if found else None


def _run_as(user, argv, timeout=STEP_TIMEOUT_S):
    if os.geteuid() == 0:
        argv = ["runuser", "-u", user, "--"] + argv
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, check=False)


@pytest.fixture
def pg_url():
    """postgresql:// URL of a private server started for this test (Unix socket only)."""
    bindir = _pg_bin()
    if bindir is None:
        pytest.skip("PostgreSQL server binaries not found (Debian: apt-get install postgresql)")
    user = pwd.getpwuid(os.geteuid()).pw_name
    if os.geteuid() == 0:
        if shutil.which("runuser") is None:
            pytest.skip("running as root without runuser: cannot start PostgreSQL as an unprivileged user")
        user = "nobody"
    # its own directory under /tmp: nobody cannot traverse pytest's 0700 tmp tree, and a Unix socket
    # path must stay short
    base = tempfile.mkdtemp(prefix="aifabric-pg-")
    assert os.path.dirname(os.path.realpath(base)) == os.path.realpath(tempfile.gettempdir())
    if os.geteuid() == 0:
        owner = pwd.getpwnam(user)
        os.chown(base, owner.pw_uid, owner.pw_gid)
    data, sock, log_path = os.path.join(base, "data"), base, os.path.join(base, "log")
    port = str(20000 + os.getpid() % 20000)
    options = "-c listen_addresses='' -c unix_socket_directories=%s -p %s -c fsync=off" % (sock, port)
    try:
        proc = _run_as(user, [os.path.join(bindir, "initdb"), "-D", data, "-A", "trust", "-U", "aifabric", "--no-sync"])
        if proc.returncode != 0:
            pytest.skip("initdb failed: %s" % (proc.stderr or proc.stdout)[-500:])
        proc = _run_as(user, [os.path.join(bindir, "pg_ctl"), "-D", data, "-o", options, "-l", log_path,
                              "-w", "-t", str(STEP_TIMEOUT_S), "start"], timeout=STEP_TIMEOUT_S + 10)
        if proc.returncode != 0:
            log = ""
            if os.path.exists(log_path):
                with open(log_path, encoding="utf-8") as handle:
                    log = handle.read()
            pytest.skip("PostgreSQL did not start: %s %s" % (proc.stderr[-300:], log[-500:]))
        yield "postgresql://aifabric@/postgres?host=%s&port=%s" % (sock, port)
    finally:
        _run_as(user, [os.path.join(bindir, "pg_ctl"), "-D", data, "-m", "immediate", "-w", "-t", "30", "stop"])
        pid_file = os.path.join(data, "postmaster.pid")
        if os.path.exists(pid_file):      # pg_ctl could not stop it: kill the postmaster we started
            try:
                with open(pid_file, encoding="utf-8") as handle:
                    os.kill(int(handle.readline().strip()), signal.SIGKILL)
            except (OSError, ValueError):
                pass
        shutil.rmtree(base, ignore_errors=True)


def rec(host, status="pass", check="nccl.all_reduce", bw=345.68839):
    return results.make(check, status, reason=None if status == "pass" else "why", host=host,
                        metrics={"busbw_max_gbyte_s": bw})


def run(run_id, started):
    return fleet.run_metadata(run_id, started, started, list(HOSTS))


def test_same_answers_as_sqlite(pg_url, tmp_path):
    sqlite_db = str(tmp_path / "h.sqlite")
    first = [rec(h) for h in HOSTS]
    second = [rec(h, bw=300.0 if h == "gpu-3" else 345.68839) for h in HOSTS]
    second[2]["status"] = "fail"
    for db in (pg_url, sqlite_db):
        assert history.record_run(db, run("r1", "2026-11-20T10:00:00Z"), first) == []
    got = [history.record_run(db, run("r2", "2026-11-21T10:00:00Z"), second) for db in (pg_url, sqlite_db)]
    assert got[0] == got[1]
    changed = [d for d in got[0] if d["status_changed"]]
    assert [(d["host"], d["previous_status"], d["status"]) for d in changed] == [("gpu-3", "pass", "fail")]
    # idempotent: the same run again replaces its rows
    history.record_run(pg_url, run("r2", "2026-11-21T10:00:00Z"), second)
    assert history.runs(pg_url) == history.runs(sqlite_db) == [
        ("r1", "2026-11-20T10:00:00Z", "2026-11-20T10:00:00Z", 4), ("r2", "2026-11-21T10:00:00Z", "2026-11-21T10:00:00Z", 4)]
    # export, baseline, retention, index
    out_pg, out_sqlite = io.StringIO(), io.StringIO()
    assert history.export_jsonl(pg_url, out_pg) == history.export_jsonl(sqlite_db, out_sqlite) == (2, 8)
    strip = [dict((k, v) for k, v in json.loads(line).items() if k != "meta") for line in out_pg.getvalue().splitlines()]
    assert strip == [dict((k, v) for k, v in json.loads(line).items() if k != "meta")
                     for line in out_sqlite.getvalue().splitlines()]
    history.save_baseline(pg_url, "nov", "r1")
    config = baseline.resolve_config({"baseline": {"name": "nov", "min_pct": 95}}, pg_url)
    report = fleet.build_report(second, run("r3", "2026-11-22T10:00:00Z"), config)
    assert report["summary"]["failed_hosts"] == ["gpu-3"]
    path = history_index.write_index(pg_url, str(tmp_path / "reports"))
    with open(path, encoding="utf-8") as handle:
        page = handle.read()
    assert "2 runs in the history store postgresql://aifabric@/postgres" in page
    assert history.prune(pg_url, keep_runs=1) == ["r1"]
    assert [r[0] for r in history.runs(pg_url)] == ["r2"] and history.load_baseline(pg_url, "nov")["source_run"] == "r1"


def test_injection_text_is_stored_as_data(pg_url):
    """Records, run ids and baseline names of injection text (quotes, ``%s``, ``?``, ``$1``, NUL) round-trip on a real
    server: every value is a bound parameter (the same assertions as on SQLite, test_history_url.py)."""
    assert_injection_is_data(pg_url)


def test_check_mode_creates_nothing(pg_url):
    assert history.record_run(pg_url, run("r1", "2026-11-20T10:00:00Z"), [rec("gpu-1")], dry_run=True) == []
    with psycopg.connect(pg_url) as conn:
        assert conn.execute("SELECT to_regclass('runs')").fetchone()[0] is None


def _writer(url, writer):
    for i in range(5):
        history.record_run(url, run("w%d-%d" % (writer, i), "2026-11-2%dT10:00:%02dZ" % (writer % 10, i)),
                           [rec(h) for h in HOSTS] + [rec("gpu-1", check="nccl.all_gather")])


def test_concurrent_writer_processes(pg_url):
    """Six processes write five runs each at once: every run is stored whole (no lost or mixed rows)."""
    history.record_run(pg_url, run("first", "2026-11-19T00:00:00Z"), [rec("gpu-1")])   # schema made once
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_writer, args=(pg_url, w)) for w in range(6)]
    for proc in procs:
        proc.start()
    try:
        for proc in procs:
            proc.join(timeout=120)
            assert proc.exitcode == 0
    finally:
        for proc in procs:
            if proc.is_alive():
                proc.kill()
                proc.join(timeout=10)
    stored = history.runs(pg_url)
    assert len(stored) == 31 and all(count == 5 for run_id, _s, _e, count in stored if run_id != "first")


def test_unreachable_server_is_a_history_error(tmp_path):
    url = "postgresql://nobody@/postgres?host=%s&port=1" % tmp_path
    with pytest.raises(history.HistoryError, match="cannot open history store postgresql://nobody@/postgres"):
        history.record_run(url, run("r1", "2026-11-20T10:00:00Z"), [rec("gpu-1")], timeout_s=2)


def test_the_callback_writes_its_history_to_postgresql(pg_url, env, tmp_path):
    """A real playbook run with AIFABRIC_HISTORY_DB=postgresql://...: run stored, index from the server,
    the second run compared with the first (what an AWX job sees with the EE's files gone)."""
    env = dict(env, AIFABRIC_HISTORY_DB=pg_url)
    for index in range(2):
        reports = tmp_path / ("job%d" % index)          # each job's files vanish with its EE; the history stays
        proc = run_playbook(env, reports, "fleet_report.yml")
        assert proc.returncode in (2, 4), proc.stdout[-3000:] + proc.stderr[-3000:]
        assert "history index: %s" % (reports / "index.html") in proc.stdout
    assert len(history.runs(pg_url)) == 2
    page = (tmp_path / "job1" / "index.html").read_text()
    assert "2 runs in the history store postgresql://aifabric@/postgres" in page
    with open(os.path.join(os.path.realpath(str(tmp_path / "job1" / "latest")), "results.json"), encoding="utf-8") as handle:
        data = json.load(handle)
    assert data["history"]["db"] == "postgresql://aifabric@/postgres"
    assert data["comparison"]["against"]["kind"] == "previous" and data["comparison"]["compared"] > 0
