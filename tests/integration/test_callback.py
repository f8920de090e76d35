# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet_report callback end to end: a real ansible-playbook run with the callback enabled.

playbooks/fleet_report.yml runs on four local hosts and one unreachable SSH host (127.0.0.2
port 1) and goes through every callback path (records, loop, ignored failure, failed task
with and without records, unreachable host, host no task ran on, set_stats). The test then
reads the files the callback wrote. A second run checks the history deltas, and the
report playbook (aifabric.acceptance.report) re-analyses the first run twice (idempotence).

Where the collection is loaded from: $AIFABRIC_TEST_COLLECTIONS, else derived from this
file's location when it sits under .../ansible_collections/aifabric/acceptance.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

from ansible_collections.aifabric.acceptance.tests.integration.conftest import collections_path

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
PLAYBOOKS = os.path.join(HERE, "playbooks")
ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
HOSTS = ["dead", "node1", "node2", "node3", "node4"]
jsonschema = pytest.importorskip("jsonschema")


@pytest.fixture(scope="module")
def env():
    collections = collections_path()
    if not collections:
        pytest.fail("cannot tell where aifabric.acceptance is importable from: set AIFABRIC_TEST_COLLECTIONS")
    if not os.access(ANSIBLE_PLAYBOOK, os.X_OK):
        pytest.fail("no ansible-playbook next to %s" % sys.executable)
    out = dict(os.environ)
    for name in ("ANSIBLE_COLLECTIONS_PATHS", "ANSIBLE_INVENTORY", "ANSIBLE_LIBRARY", "AIFABRIC_HISTORY_DB",
                 "AIFABRIC_REPORT_FORMATS", "AIFABRIC_DRIFT_PINS", "AIFABRIC_HISTORY"):
        out.pop(name, None)
    out.update({
        "ANSIBLE_CONFIG": os.path.join(REPO, "ansible.cfg"),
        "ANSIBLE_COLLECTIONS_PATH": collections,
        "ANSIBLE_CALLBACKS_ENABLED": "aifabric.acceptance.fleet_report",
        "ANSIBLE_NOCOLOR": "1",
        "PYTHONDONTWRITEBYTECODE": "1",
    })
    return out


def run_playbook(env, report_dir, playbook, *extra):
    env = dict(env, AIFABRIC_REPORTS_ROOT=str(report_dir))
    argv = [ANSIBLE_PLAYBOOK, "-i", os.path.join(PLAYBOOKS, "fleet_report_inventory.ini"), playbook] + list(extra)
    return subprocess.run(argv, env=env, cwd=PLAYBOOKS, capture_output=True, text=True, timeout=300, check=False)


@pytest.fixture(scope="module")
def first_run(env, tmp_path_factory):
    report_dir = tmp_path_factory.mktemp("reports")
    proc = run_playbook(env, report_dir, "fleet_report.yml")
    assert proc.returncode in (2, 4), proc.stdout[-4000:] + proc.stderr[-4000:]     # failed + unreachable hosts
    assert "FLEET REPORT:" in proc.stdout, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert "Callback dispatch" not in proc.stdout + proc.stderr
    run_dir = os.path.realpath(str(report_dir / "latest"))
    return report_dir, run_dir, proc


def load(run_dir, name):
    with open(os.path.join(run_dir, name), encoding="utf-8") as handle:
        return handle.read()


def test_every_file_is_written_and_lists_every_targeted_host(first_run):
    _report_dir, run_dir, proc = first_run
    assert sorted(os.listdir(run_dir)) == ["ctrf.json", "junit.xml", "report.html", "results.json", "summary.md"]
    data = json.loads(load(run_dir, "results.json"))
    assert sorted(set(r["host"] for r in data["records"])) == HOSTS
    assert data["run"]["hosts_targeted"] == ["node1", "node2", "node3", "node4", "dead"]
    assert data["run"]["inventory_host_count"] == 5 and data["summary"]["hosts_total"] == 5
    assert data["run"]["playbooks"] == ["fleet_report.yml"]
    root = ET.fromstring(load(run_dir, "junit.xml").encode("utf-8"))
    assert sorted(set(c.get("classname") for c in root.iter("testcase"))) == HOSTS
    assert len(list(root.iter("testcase"))) == len(data["records"])
    md = load(run_dir, "summary.md")
    page = load(run_dir, "report.html")
    for host in HOSTS:
        assert "| %s |" % host in md and ">%s<" % host in page
    assert run_dir in proc.stdout


def progress_lines(stdout):
    return [line for line in stdout.splitlines() if line.startswith("aifabric ")]


def test_each_task_prints_one_progress_line_per_stage_under_its_own_results(first_run):
    """Issue 8 item 5: one line per stage of a task once it finished on every host, from the record stream."""
    stdout = first_run[2].stdout
    lines = progress_lines(stdout)
    # dead's reason is ssh's message as this Ansible words it, shortened
    assert lines[0].startswith("aifabric env: 4/4 hosts, 2 pass, 1 warn, 1 error (dead: host unreachable: ")
    assert lines[0].endswith(")") and len(lines[0]) < 160
    assert lines[1:] == [
        "aifabric rdma ib_write_bw: 1/1 hosts, 1 pass, bw_avg_gbit_s 390.5",      # one task per planned pair
        "aifabric rdma ib_write_bw: 1/1 hosts, 1 fail, bw_avg_gbit_s 180.2 (node1: bw_avg_gbit_s 180.2 < 380 expected)",
        "aifabric gpu: 2/2 hosts, 2 pass",
        "aifabric gpu: 1/1 hosts, 1 fail (node3: 12 volatile uncorrectable ECC errors)",
    ]
    sections = dict((part.split("]", 1)[0], part) for part in stdout.split("\nTASK [")[1:])
    assert "aifabric env: " in sections["Probe (synthetic test records)"]
    assert "aifabric rdma ib_write_bw: " in sections["Pairwise records with a per-size series (synthetic test records)"]
    assert "aifabric gpu: 2/2 hosts" in sections["A loop whose items return records"]
    assert "aifabric gpu: 1/1 hosts" in sections["A failed task with records"].split("PLAY [")[0]


def test_records_validate_against_the_schema(first_run):
    with open(os.path.join(REPO, "docs", "results.schema.json"), encoding="utf-8") as handle:
        validator = jsonschema.Draft202012Validator(json.load(handle))
    data = json.loads(load(first_run[1], "results.json"))
    for rec in data["records"]:
        assert list(validator.iter_errors(rec)) == [], rec


def test_each_callback_path_shows_in_the_records(first_run):
    data = json.loads(load(first_run[1], "results.json"))
    got = dict(((r["host"], r["check"], r["target"], r["peer"]), r) for r in data["records"])
    dead = got[("dead", "env.reachable", None, None)]
    assert dead["status"] == "error" and "127.0.0.2" in dead["reason"]
    task = got[("node2", "env.task", "A failed task without records", None)]
    assert task["status"] == "error" and "tool exploded on node2" in task["reason"]
    assert "stderr of the failing tool" in task["raw"]
    assert got[("node4", "env.coverage", None, None)]["status"] == "error"
    assert got[("node3", "gpu.ecc", "0", None)]["status"] == "fail"                 # failed task keeps its records
    assert not any(r["host"] == "node1" and r["check"] == "env.task" for r in data["records"])   # ignored
    assert {k[2] for k in got if k[1] == "gpu.loop_item"} == {"0", "1"}
    assert len([k for k in got if k[1] == "gpu.loop_item"]) == 4
    drift = got[("node3", "env.package.drift", "torch", None)]
    assert drift["status"] == "warn" and drift["tool"]["name"] == "fleet-analysis"
    assert got[("node1", "rdma.ib_write_bw", "mlx5_0", "node3")]["series"][0] == {"size_bytes": 4096, "bw_avg_gbit_s": 60.0}


def test_html_escapes_tool_text(first_run):
    page = load(first_run[1], "report.html")
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt; kernel too old" in page


def test_set_stats_summary_is_the_reports_verdict(first_run):
    """One record path, one verdict: the run_summary step (set_stats, what AWX shows) and results.json agree
    on every host (before: the set_stats filter summarised a hand-collected subset of the records and said
    ['dead', 'node4'] while the report failed node2 and node3 too)."""
    data = json.loads(load(first_run[1], "results.json"))
    stats = data["run"]["set_stats"]["_run"]
    summary = stats["test_summary"]
    assert stats["test_hosts"] == dict((h["host"], h["status"]) for h in data["summary"]["hosts"])
    assert sorted(stats["test_hosts"]) == HOSTS
    for key in ("worst_status", "counts", "records_total", "hosts_total", "hosts_by_status"):
        assert summary[key] == data["summary"][key], key
    assert summary["failed_hosts_total"] == len(data["summary"]["failed_hosts"])
    assert sorted(summary["failed_hosts"]) == sorted(data["summary"]["failed_hosts"]) == ["dead", "node2", "node3", "node4"]
    assert summary["run_dir"] == summary["report_dir"] == first_run[1]      # report_dir: deprecated, until 3.0.0
    assert data["run"]["run_dir"] == data["run"]["report_dir"] == first_run[1]


def test_second_run_shows_changes_since_the_first(env, first_run):
    report_dir, first_dir, _proc = first_run
    proc = run_playbook(env, report_dir, "fleet_report.yml")
    assert proc.returncode in (2, 4)
    second_dir = os.path.realpath(str(report_dir / "latest"))
    assert second_dir != first_dir
    data = json.loads(load(second_dir, "results.json"))
    first_id = json.loads(load(first_dir, "results.json"))["run"]["run_id"]
    deltas = data["history"]["deltas"]
    assert data["history"]["db"] == str(report_dir / "history.sqlite")
    assert {d["host"] for d in deltas} == set(HOSTS)
    assert all(d["previous_run"] == first_id and not d["status_changed"] for d in deltas)
    os_delta = [d for d in deltas if d["host"] == "node1" and d["check"] == "env.os"][0]
    assert os_delta["metrics"]["mem_total_bytes"]["delta"] == 0


def test_report_playbook_reanalyses_idempotently(env, first_run):
    report_dir, first_dir, _proc = first_run
    before = sorted(os.listdir(str(report_dir)))
    dest = os.path.join(str(report_dir), "reanalysed")
    argv = ["-e", "report_input=%s" % os.path.join(first_dir, "results.json"), "-e", "run_dir=%s" % dest,
            "-e", '{"report_drift_pins": {"version": "2.4.1"}}']
    playbook = os.path.join(REPO, "playbooks", "report.yml")
    one = run_playbook(dict(env, ANSIBLE_INVENTORY="localhost,"), report_dir, playbook, "-c", "local", *argv)
    assert one.returncode == 0, one.stdout[-4000:] + one.stderr[-4000:]
    data = json.loads(load(dest, "results.json"))
    drift = [r for r in data["records"] if r["check"] == "env.package.drift"]
    assert [(r["host"], r["status"]) for r in drift] == [("node3", "fail")]       # pinned: fail, not warn
    two = run_playbook(dict(env, ANSIBLE_INVENTORY="localhost,"), report_dir, playbook, "-c", "local", *argv)
    assert two.returncode == 0
    assert "changed=0" in two.stdout.split("PLAY RECAP")[-1]
    assert sorted(os.listdir(str(report_dir))) == sorted(before + ["reanalysed"])   # the callback wrote no run
    assert "[DEPRECATION WARNING]" not in one.stdout + one.stderr


def test_report_playbook_takes_the_former_report_dir_with_a_deprecation_warning(env, first_run, tmp_path):
    """-e report_dir=DIR (the run directory's name before 2.0.0) still writes the report there, and says it is
    deprecated (run_dir)."""
    dest = tmp_path / "old-name"
    playbook = os.path.join(REPO, "playbooks", "report.yml")
    proc = run_playbook(dict(env, ANSIBLE_INVENTORY="localhost,"), tmp_path / "reports", playbook, "-c", "local",
                        "-e", "report_input=%s" % os.path.join(first_run[1], "results.json"), "-e", "report_dir=%s" % dest)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert json.loads((dest / "results.json").read_text())["run"]["run_dir"] == str(dest)
    text = " ".join((proc.stdout + proc.stderr).split())
    assert "[DEPRECATION WARNING]" in text and "report_dir" in text, text[-3000:]


def test_report_playbook_turns_a_malformed_record_into_an_error_record(env, first_run, tmp_path):
    """Before: one record with "host": 5 in results.json stopped the whole re-analysis."""
    data = json.loads(load(first_run[1], "results.json"))
    data["records"].append({"host": 5, "check": "env.os", "status": "pass"})
    src = tmp_path / "results.json"
    src.write_text(json.dumps(data))
    dest = tmp_path / "out"
    playbook = os.path.join(REPO, "playbooks", "report.yml")
    proc = run_playbook(dict(env, ANSIBLE_INVENTORY="localhost,"), tmp_path / "reports", playbook, "-c", "local",
                        "-e", "report_input=%s" % src, "-e", "run_dir=%s" % dest)
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    out = json.loads((dest / "results.json").read_text())
    bad = [r for r in out["records"] if r["status"] == "error" and "invalid result record" in (r["reason"] or "")]
    assert len(bad) == 1 and "host must be a string" in bad[0]["reason"], bad
    assert len(out["records"]) >= len(data["records"])


def test_bad_configuration_disables_the_callback_and_the_summary_step_says_why(env, tmp_path):
    proc = run_playbook(dict(env, AIFABRIC_DRIFT_PINS="[not json"), tmp_path, "fleet_report.yml", "--limit", "node1")
    assert proc.returncode == 2, proc.stdout[-4000:] + proc.stderr[-4000:]      # the summary step failed
    out = proc.stdout + proc.stderr
    assert "aifabric.acceptance.fleet_report is disabled: bad configuration" in out
    assert "bad configuration: drift_pins is not JSON" in out.split("Summarise the run")[-1]   # ... and at that step
    assert "FLEET REPORT:" not in proc.stdout and os.listdir(str(tmp_path)) == []


def test_without_the_callback_the_summary_step_fails_with_the_line_that_enables_it(env, tmp_path):
    """Before: a run without the callback (an installed collection run from outside the repo) exited 0
    with no report and said nothing."""
    cfg = tmp_path / "outside.cfg"
    cfg.write_text("[defaults]\nhost_key_checking = False\n")     # an ansible.cfg that is not the repo's
    bare = dict(env, ANSIBLE_CONFIG=str(cfg))
    bare.pop("ANSIBLE_CALLBACKS_ENABLED")
    proc = run_playbook(bare, tmp_path, "fleet_report.yml", "--limit", "node1")
    assert proc.returncode == 2, proc.stdout[-4000:] + proc.stderr[-4000:]
    assert "ANSIBLE_CALLBACKS_ENABLED=aifabric.acceptance.fleet_report" in proc.stdout + proc.stderr
    assert os.listdir(str(tmp_path)) == ["outside.cfg"]


def test_a_run_that_targets_no_host_fails_and_writes_nothing(env, tmp_path):
    """Before: a typo in the inventory path exited 0 and wrote a 'SKIP - 0 hosts' report, latest and history."""
    env = dict(env, AIFABRIC_REPORTS_ROOT=str(tmp_path))
    argv = [ANSIBLE_PLAYBOOK, "-i", os.path.join(PLAYBOOKS, "no-such-inventory"), "fleet_report.yml"]
    proc = subprocess.run(argv, env=env, cwd=PLAYBOOKS, capture_output=True, text=True, timeout=300, check=False)
    assert proc.returncode == 2, proc.stdout[-4000:] + proc.stderr[-4000:]
    out = proc.stdout + proc.stderr
    assert "no host was targeted" in out and "-e acceptance_hosts=all" in out and "gpu_nodes" in out
    assert "make acceptance INVENTORY=inventories/localhost" in out          # a command that works where the user is
    assert os.listdir(str(tmp_path)) == []                                    # no report, no latest, no history


def test_check_mode_writes_nothing(env, tmp_path):
    """Before: -C wrote a report directory, latest and a history row."""
    proc = run_playbook(env, tmp_path, "fleet_report.yml", "-C", "--limit", "node1,node3")
    assert proc.returncode == 2, proc.stdout[-4000:] + proc.stderr[-4000:]     # node3's failing task
    assert "FLEET REPORT:" in proc.stdout and "check mode: no report, no history row written" in proc.stdout
    assert os.listdir(str(tmp_path)) == []


def test_pins_from_the_environment_and_limit(env, tmp_path):
    proc = run_playbook(dict(env, AIFABRIC_DRIFT_PINS='{"version": "2.3.0"}', AIFABRIC_REPORT_FORMATS="json"),
                        tmp_path, "fleet_report.yml", "--limit", "node1,node4", "-v")
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-4000:]
    # -v: the same one line per stage, nothing more; node1's pairs with node2 and node3 are no pairs of this run
    # (--limit leaves their peers out): not admitted, no rdma line, and no report host beyond the two targeted
    assert progress_lines(proc.stdout) == ["aifabric env: 1/1 hosts, 1 pass", "aifabric gpu: 1/1 hosts, 1 pass"]
    run_dir = os.path.realpath(str(tmp_path / "latest"))
    assert os.listdir(run_dir) == ["results.json"]
    data = json.loads(load(run_dir, "results.json"))
    assert data["run"]["hosts_targeted"] == ["node1", "node4"]        # --limit is respected
    assert sorted(set(r["host"] for r in data["records"])) == ["node1", "node4"]
    assert not any(r["check"].startswith("rdma.") for r in data["records"])
    refused = [r for r in data["records"] if r["host"] == "node1" and r["check"] == "env.task"]
    assert len(refused) == 2 and all(r["status"] == "error" for r in refused), refused
    drift = [r for r in data["records"] if r["check"] == "env.package.drift"]
    assert [(r["host"], r["status"]) for r in drift] == [("node1", "fail")]
