# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Nothing a user does may lose a run: a real ansible-playbook interrupted with SIGINT (Ctrl-C).

The run (tests/integration/playbooks/slow_run.yml, local hosts) measures records, then blocks in a
slow task; the test sends SIGINT to its process group, as a terminal does. The report of the records
measured so far must be complete, marked interrupted, in the history, and ``latest`` must point at it;
no temporary file or directory may be left (before: no report, no history row, every record lost).
"""

from __future__ import annotations

import glob
import json
import os
import signal
import sqlite3
import subprocess
import sys
import time

import pytest

from ansible_collections.aifabric.acceptance.tests.integration.conftest import collections_path

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PLAYBOOKS = os.path.join(HERE, "playbooks")
ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
WAIT_S = 90


def _env(report_dir, tmp_path):
    collections = collections_path()
    if not collections:
        pytest.fail("cannot tell where aifabric.acceptance is importable from: set AIFABRIC_TEST_COLLECTIONS")
    env = dict(os.environ)
    for name in ("ANSIBLE_COLLECTIONS_PATHS", "ANSIBLE_INVENTORY", "AIFABRIC_HISTORY_DB", "AIFABRIC_REPORT_FORMATS",
                 "AIFABRIC_DRIFT_PINS", "AIFABRIC_HISTORY", "AIFABRIC_RUN_STREAM", "AIFABRIC_RUN_STREAM_ERROR"):
        env.pop(name, None)
    env.update({
        "ANSIBLE_CONFIG": os.path.join(REPO, "ansible.cfg"),
        "ANSIBLE_COLLECTIONS_PATH": collections,
        "ANSIBLE_CALLBACKS_ENABLED": "aifabric.acceptance.fleet_report",
        "ANSIBLE_NOCOLOR": "1",
        "ANSIBLE_LOCAL_TEMP": str(tmp_path / "ansible-tmp"),
        "TMPDIR": str(tmp_path / "tmp"),          # the callback's private run directory goes here
        "PYTHONDONTWRITEBYTECODE": "1",
        "AIFABRIC_REPORTS_ROOT": str(report_dir),
    })
    os.makedirs(env["TMPDIR"])
    return env


def _wait_for(path, text, proc, timeout_s):
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        with open(path, errors="replace") as handle:
            if text in handle.read():
                return True
        if proc.poll() is not None:
            return False
        time.sleep(0.2)
    return False


def _tail(path):
    with open(path, errors="replace") as handle:
        return handle.read()[-4000:]


@pytest.mark.parametrize("signum, rc_want", [(signal.SIGINT, 99), (signal.SIGTERM, -signal.SIGTERM)])
def test_an_interrupted_run_keeps_what_was_measured(tmp_path, signum, rc_want):
    report_dir = tmp_path / "reports"
    log = str(tmp_path / "ansible-playbook.log")
    argv = [ANSIBLE_PLAYBOOK, "-i", os.path.join(PLAYBOOKS, "fleet_report_inventory.ini"), "--limit", "node1,node2,node3",
            "slow_run.yml"]
    with open(log, "wb") as out:
        proc = subprocess.Popen(argv, env=_env(report_dir, tmp_path), cwd=PLAYBOOKS, stdin=subprocess.DEVNULL,
                                stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        assert _wait_for(log, "TASK [Slow step", proc, WAIT_S), _tail(log)
        time.sleep(1.0)                                   # the sleeps have started on both hosts
        if signum == signal.SIGINT:
            os.killpg(proc.pid, signum)                   # Ctrl-C: the whole foreground process group
        else:
            os.kill(proc.pid, signum)                     # a job runner stopping ansible-playbook
        rc = proc.wait(timeout=WAIT_S)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    assert rc == rc_want, "ansible-playbook exit %s, not %s\n%s" % (rc, rc_want, _tail(log))
    assert "FLEET REPORT (INTERRUPTED" in _tail(log)

    entries = sorted(os.listdir(str(report_dir)))
    runs = [e for e in entries if e not in ("latest", "LATEST", "history.sqlite", "history.sqlite-wal", "history.sqlite-shm",
                                            "index.html")]     # index.html: the history's list of runs
    assert len(runs) == 1 and not runs[0].startswith("."), entries       # one complete directory, no temp dir
    run_dir = os.path.join(str(report_dir), runs[0])
    assert os.path.realpath(str(report_dir / "latest")) == run_dir
    assert sorted(os.listdir(run_dir)) == ["ctrf.json", "junit.xml", "report.html", "results.json", "summary.md"]
    assert not glob.glob(os.path.join(str(report_dir), "**", "*.tmp-*"), recursive=True)
    with open(os.path.join(run_dir, "results.json")) as handle:
        data = json.load(handle)
    assert data["run"]["interrupted"] is True and data["run"]["interrupt_reason"] == signal.Signals(signum).name
    measured = sorted((r["host"], r["check"], r["status"]) for r in data["records"] if r["check"] == "env.os")
    assert measured == [("node1", "env.os", "pass"), ("node2", "env.os", "pass")]
    # node3 returned no record: its reason says where the run stopped (it said "tasks: 1 skipped")
    where = "task 'Slow step (interrupted by the test)' of play 'Measure, then block'"
    assert data["run"]["interrupted_in"] == {"task": "Slow step (interrupted by the test)", "play": "Measure, then block"}
    (quiet,) = [r for r in data["records"] if r["host"] == "node3"]
    assert quiet["check"] == "env.coverage" and quiet["reason"] == (
        "interrupted (%s) during %s, before this host returned a result record (tasks done on it: 1 skipped)"
        % (signal.Signals(signum).name, where)), quiet
    for name, start in (("summary.md", "**Interrupted run** ("), ("report.html", "Interrupted run (")):
        with open(os.path.join(run_dir, name)) as handle:
            text = handle.read()
        banner = "%s%s, during %s)" % (start, signal.Signals(signum).name, where)
        assert (banner if name == "summary.md" else banner.replace("'", "&#39;")) in text, name
    conn = sqlite3.connect(str(report_dir / "history.sqlite"))
    try:
        stored = conn.execute("SELECT run_id FROM runs").fetchall()
    finally:
        conn.close()
    assert stored == [(data["run"]["run_id"],)]
    # the private record stream is removed too (SIGTERM kills Ansible's own payload dirs' cleanup, not ours)
    assert not [n for n in os.listdir(str(tmp_path / "tmp")) if n.startswith("aifabric-run-")]
