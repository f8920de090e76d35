# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The verdict reaches the caller (issue 19 item 4): acceptance_fail_on, a real ansible-playbook run.

A run whose verdict is FAIL exited 0 (AWX "Successful", CI green). Now the last step (playbooks/tasks/run_summary.yml)
publishes the report and its history row, then fails: ansible-playbook exits 2. The callback writes no second
report, and the failing step is no host's error.
"""

from __future__ import annotations

import json
import os
import sqlite3

import pytest

from ansible_collections.aifabric.acceptance.tests.integration.test_callback import PLAYBOOKS, env, run_playbook  # noqa: F401  pylint: disable=unused-import

PLAYBOOK = os.path.join(PLAYBOOKS, "fail_on.yml")


def _run(env, tmp_path, *extra, fail_on_env=None):  # noqa: F811  pylint: disable=redefined-outer-name
    run_env = dict(env)
    run_env.pop("AIFABRIC_FAIL_ON", None)
    if fail_on_env is not None:
        run_env["AIFABRIC_FAIL_ON"] = fail_on_env
    proc = run_playbook(run_env, tmp_path, PLAYBOOK, *extra)
    runs = sorted(d for d in os.listdir(str(tmp_path)) if d[:1].isdigit())
    return proc, runs


def _results(tmp_path, run):
    with open(os.path.join(str(tmp_path), run, "results.json"), encoding="utf-8") as fh:
        return json.load(fh)


def test_a_failing_host_fails_the_run_after_its_report_is_written(env, tmp_path):  # noqa: F811  pylint: disable=redefined-outer-name
    proc, runs = _run(env, tmp_path, "-e", "node2_status=fail")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out[-3000:]
    assert "acceptance verdict FAIL: 1 of 2 hosts at or beyond 'fail' (acceptance_fail_on=fail): node2 (env.os)" in out
    assert len(runs) == 1, runs      # one report: the callback did not write a second one
    data = _results(tmp_path, runs[0])
    assert {h["host"]: h["status"] for h in data["summary"]["hosts"]} == {"node1": "pass", "node2": "fail"}
    assert not [r for r in data["records"] if r["check"] == "env.task"], "the failing step is no host's error"
    assert data["run"]["published_by"] == "run_summary"
    # the metadata the callback's own report would have
    assert [os.path.basename(p) for p in data["run"]["playbooks"]] == ["fail_on.yml"]
    assert data["run"]["inventory_host_count"] == 5
    assert data["run"]["hosts_targeted"] == ["node1", "node2"]
    with sqlite3.connect(os.path.join(str(tmp_path), "history.sqlite")) as db:
        assert db.execute("select count(*) from runs").fetchone()[0] == 1
    assert "the report was written by the run_summary step" in proc.stdout


@pytest.mark.parametrize("how", [("-e", "acceptance_fail_on=never"), ("env", "never")])
def test_never_keeps_exit_code_0(env, tmp_path, how):  # noqa: F811  pylint: disable=redefined-outer-name
    if how[0] == "env":
        proc, runs = _run(env, tmp_path, "-e", "node2_status=fail", fail_on_env=how[1])
    else:
        proc, runs = _run(env, tmp_path, "-e", "node2_status=fail", *how)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    assert len(runs) == 1 and _results(tmp_path, runs[0])["summary"]["worst_status"] == "fail"


def test_a_passing_run_exits_0_and_warn_fails_only_under_fail_on_warn(env, tmp_path):  # noqa: F811  pylint: disable=redefined-outer-name
    proc, _runs = _run(env, tmp_path / "pass")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    proc, _runs = _run(env, tmp_path / "warn", "-e", "node2_status=warn")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    proc, _runs = _run(env, tmp_path / "warn-fails", "-e", "node2_status=warn", "-e", "acceptance_fail_on=warn")
    assert proc.returncode == 2, (proc.stdout + proc.stderr)[-3000:]
