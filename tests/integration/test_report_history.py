# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""History end to end through real ansible-playbook runs: the callback's index.html and automatic comparison,
report.yml's compare_with and verdict line, baseline.yml and a baseline expectation, check mode.

The baseline fleet is four hosts carrying the REAL nccl-tests records of a 2x H200 run (real_records);
the later run has one host at 90 % of that bandwidth.
"""

from __future__ import annotations

import json
import os
import sqlite3

from ansible_collections.aifabric.acceptance.plugins.plugin_utils import fleet
from ansible_collections.aifabric.acceptance.tests.integration.test_callback import (  # pylint: disable=unused-import
    REPO, env, run_playbook)
from ansible_collections.aifabric.acceptance.tests.unit.plugins.plugin_utils import real_records

HOSTS = ("h200-a", "h200-b", "h200-c", "h200-d")
REPORT = os.path.join(REPO, "playbooks", "report.yml")
BASELINE = os.path.join(REPO, "playbooks", "baseline.yml")


def local(env_):
    return dict(env_, ANSIBLE_INVENTORY="localhost,")


def results_json(path, run_id, started, slow=None):
    records = []
    for host in HOSTS:
        for rec in real_records.nccl_records(host):
            if host == slow:
                rec["metrics"]["busbw_max_gbyte_s"] = round(rec["metrics"]["busbw_max_gbyte_s"] * 0.9, 5)
            records.append(rec)
    run = fleet.run_metadata(run_id, started, started, list(HOSTS))
    with open(str(path), "w", encoding="utf-8") as handle:
        json.dump({"run": run, "records": records}, handle)
    return str(path)


def stored_runs(db):
    conn = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    try:
        return [r[0] for r in conn.execute("SELECT run_id FROM runs ORDER BY started")]
    finally:
        conn.close()


def test_callback_writes_the_index_and_compares_with_the_previous_run(env, tmp_path):
    reports = tmp_path / "reports"
    for _run in range(2):
        proc = run_playbook(env, reports, "fleet_report.yml")
        assert proc.returncode in (2, 4), proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "history index: %s" % (reports / "index.html") in proc.stdout
    page = (reports / "index.html").read_text()
    assert "2 runs in the history store %s" % (reports / "history.sqlite") in page
    assert page.count('/report.html">') == 2
    latest = os.path.realpath(str(reports / "latest"))
    with open(os.path.join(latest, "results.json"), encoding="utf-8") as handle:
        comparison = json.load(handle)["comparison"]
    assert comparison["against"]["kind"] == "previous" and comparison["compared"] > 0
    with open(os.path.join(latest, "summary.md"), encoding="utf-8") as handle:
        assert "## Comparison" in handle.read()


def test_baseline_playbook_and_a_baseline_expectation_fail_exactly_the_slow_host(env, tmp_path):
    db = str(tmp_path / "history.sqlite")
    first = results_json(tmp_path / "first.json", "run-baseline", "2026-11-20T10:00:00Z")
    proc = run_playbook(local(env), tmp_path / "cb", BASELINE, "-c", "local", "-e", "baseline_name=h200-nov",
                        "-e", "history_db=%s" % db, "-e", "baseline_run=%s" % first)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "baseline h200-nov: medians of run run-baseline in %s" % db in " ".join(proc.stdout.split())
    second = results_json(tmp_path / "second.json", "run-later", "2026-11-21T10:00:00Z", slow="h200-c")
    dest = tmp_path / "out"
    proc = run_playbook(local(env), tmp_path / "cb", REPORT, "-c", "local", "-e", "report_input=%s" % second,
                        "-e", "run_dir=%s" % dest, "-e", "report_history_db=%s" % db,
                        "-e", "compare_with=h200-nov",
                        "-e", '{"report_baseline": {"name": "h200-nov", "min_pct": 95}}')
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = " ".join(proc.stdout.split())
    assert "FAIL: 4 hosts: 1 fail, 3 pass; report: %s" % (dest / "report.html") in out
    assert "against baseline h200-nov (medians of run run-base): 4 regressions, 0 improvements" in out   # c's 4 collectives, 10 % down
    data = json.loads((dest / "results.json").read_text())
    assert data["summary"]["failed_hosts"] == ["h200-c"]
    assert {d["host"] for d in data["comparison"]["regressions"]} == {"h200-c"}
    assert stored_runs(db) == ["run-baseline", "run-later"]


def test_report_playbook_in_check_mode_stores_nothing(env, tmp_path):
    db = str(tmp_path / "history.sqlite")
    first = results_json(tmp_path / "first.json", "run-1", "2026-11-20T10:00:00Z")
    proc = run_playbook(local(env), tmp_path / "cb", REPORT, "-c", "local", "-e", "report_input=%s" % first,
                        "-e", "run_dir=%s" % (tmp_path / "one"), "-e", "report_history_db=%s" % db)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    second = results_json(tmp_path / "second.json", "run-2", "2026-11-21T10:00:00Z", slow="h200-b")
    proc = run_playbook(local(env), tmp_path / "cb", REPORT, "-C", "-c", "local", "-e", "report_input=%s" % second,
                        "-e", "run_dir=%s" % (tmp_path / "two"), "-e", "report_history_db=%s" % db)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert stored_runs(db) == ["run-1"] and not (tmp_path / "two").exists()
    assert "against the previous run of each host (run run-1): " in " ".join(proc.stdout.split())   # read only


def test_history_module_index_export_prune_and_check_mode(env, tmp_path):
    db = str(tmp_path / "history.sqlite")
    for day in (1, 2, 3):
        src = results_json(tmp_path / ("r%d.json" % day), "run-%d" % day, "2026-11-0%dT10:00:00Z" % day)
        proc = run_playbook(local(env), tmp_path / "cb", REPORT, "-c", "local", "-e", "report_input=%s" % src,
                            "-e", "run_dir=%s" % (tmp_path / ("out%d" % day)), "-e", "report_history_db=%s" % db)
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    playbook = tmp_path / "ops.yml"
    playbook.write_text("""---
- name: History operations
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Index
      aifabric.acceptance.history: {history_db: "%(db)s", operation: index, dest: "%(dir)s/site/index.html"}
    - name: Export
      aifabric.acceptance.history: {history_db: "%(db)s", operation: export, dest: "%(dir)s/site/history.jsonl"}
    - name: Prune
      aifabric.acceptance.history: {history_db: "%(db)s", operation: prune, keep_runs: 2}
      register: pruned
    - name: Show
      ansible.builtin.debug: {msg: "removed {{ pruned.removed_runs }}"}
""" % {"db": db, "dir": tmp_path})
    proc = run_playbook(local(env), tmp_path / "cb", str(playbook), "-c", "local", "-C")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert not (tmp_path / "site").exists() and stored_runs(db) == ["run-1", "run-2", "run-3"]
    assert "removed ['run-1']" in proc.stdout                      # check mode says what it would remove
    proc = run_playbook(local(env), tmp_path / "cb", str(playbook), "-c", "local")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert stored_runs(db) == ["run-2", "run-3"]
    assert "3 runs in the history store" in (tmp_path / "site" / "index.html").read_text()   # written before the prune
    lines = [json.loads(line) for line in (tmp_path / "site" / "history.jsonl").read_text().splitlines()]
    assert [x["run_id"] for x in lines if x["type"] == "run"] == ["run-1", "run-2", "run-3"]
    proc = run_playbook(local(env), tmp_path / "cb", str(playbook), "-c", "local")
    recap = proc.stdout.split("PLAY RECAP")[-1]
    assert proc.returncode == 0 and "changed=2" in recap       # index and export changed (one run fewer); prune not


def test_history_index_links_the_runs_under_reports_root_and_takes_reports_dir_with_a_deprecation(env, tmp_path):
    """reports_root (reports_dir before 2.0.0): the index links a run whose report is in that directory; the former
    name still works, with Ansible's deprecation warning."""
    db = str(tmp_path / "history.sqlite")
    src = results_json(tmp_path / "r1.json", "run-1", "2026-11-01T10:00:00Z")
    proc = run_playbook(local(env), tmp_path / "cb", REPORT, "-c", "local", "-e", "report_input=%s" % src,
                        "-e", "run_dir=%s" % (tmp_path / "root" / "20261101T100000Z-run-1"), "-e", "report_history_db=%s" % db)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    for option in ("reports_root", "reports_dir"):
        playbook = tmp_path / ("%s.yml" % option)
        playbook.write_text("""---
- name: History index
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Index
      aifabric.acceptance.history: {history_db: "%(db)s", operation: index, dest: "%(dir)s/%(o)s/index.html",
                                    %(o)s: "%(dir)s/root"}
""" % {"db": db, "dir": tmp_path, "o": option})
        proc = run_playbook(local(env), tmp_path / "cb", str(playbook), "-c", "local")
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
        assert '<a href="20261101T100000Z-run-1/report.html">' in (tmp_path / option / "index.html").read_text()
        text = " ".join((proc.stdout + proc.stderr).split())
        assert ("[DEPRECATION WARNING]" in text and "reports_dir" in text) == (option == "reports_dir"), text[-3000:]


def test_a_live_run_held_against_a_baseline_fails_exactly_the_slow_node(env, tmp_path):
    """history operation=expect puts the baseline into the run's stream: summary step and report agree."""
    reports = tmp_path / "reports"
    db = str(reports / "history.sqlite")
    common = ("-e", "history_db=%s" % db, "-e", "baseline_name=nov", "--limit", "node1,node2,node3,node4")
    proc = run_playbook(env, reports, "baseline_run.yml", "-e", "slow_factor=1.0", "-e", "baseline_name=none", *common[:2])
    assert proc.returncode == 2, proc.stdout[-3000:]       # no baseline 'none' yet: a clear error
    assert "no baseline 'none'" in proc.stdout
    proc = run_playbook(env, reports, os.path.join(REPO, "playbooks", "baseline.yml"), "-e", "baseline_name=nov",
                        "-e", "history_db=%s" % db, "-e", "baseline_run=%s" % results_json(
                            tmp_path / "b.json", "run-baseline", "2026-11-20T10:00:00Z"))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    proc = run_playbook(env, reports, "baseline_run.yml", "-e", "slow_factor=0.9", *common)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "summary failed hosts: ['node3']" in proc.stdout
    with open(os.path.join(os.path.realpath(str(reports / "latest")), "results.json"), encoding="utf-8") as handle:
        data = json.load(handle)
    assert data["summary"]["failed_hosts"] == ["node3"]
    added = sorted((r["host"], r["status"]) for r in data["records"] if r["check"] == "nccl.all_reduce.baseline")
    assert added == [("node1", "pass"), ("node2", "pass"), ("node3", "fail"), ("node4", "pass")]
