# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fleet logic on plain dicts: collection per (host, task), host accounting, pipeline, summary.

Task results here are plain dicts shaped like Ansible's (msg, stderr, results, loop items);
records are real ones (real_records.py) where the test is about measured data, and small
SYNTHETIC records where the test is about fleet bookkeeping only.
"""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.aifabric.acceptance.plugins.module_utils import results
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import analysis_records, drift, fleet
from ansible_collections.aifabric.acceptance.tests.unit.plugins.plugin_utils import real_records

jsonschema = pytest.importorskip("jsonschema")
SCHEMA_PATH = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "docs", "results.schema.json")


@pytest.fixture(scope="module")
def validator():
    with open(SCHEMA_PATH, encoding="utf-8") as handle:
        return jsonschema.Draft202012Validator(json.load(handle))


def synthetic(check="env.os", status="pass", **kw):
    """A SYNTHETIC module record as a module returns it (no host: modules do not know it)."""
    rec = {"check": check, "status": status}
    rec.update(kw)
    return rec


def hosts_of(records):
    return sorted(set(r["host"] for r in records))


# ------------------------------------------------------------------ collection


def test_ok_records_get_host_and_every_field(validator):
    col = fleet.Collector()
    col.target(["a"])
    col.task_ok("a", "t1", "probe", {"results": [synthetic(metrics={"mem_total_bytes": 1})]}, started="2026-11-22T10:00:00Z")
    [rec] = col.records()
    assert rec["host"] == "a"
    assert set(rec) == set(results.FIELDS)
    assert rec["started"] == "2026-11-22T10:00:00Z"
    assert list(validator.iter_errors(rec)) == []


def test_real_records_pass_through_unchanged_but_for_host(validator):
    real = real_records.nccl_records(host=None)
    col = fleet.Collector()
    col.target(["h200-a"])
    col.task_ok("h200-a", "t1", "nccl", {"results": real, "rc": 0})
    out = col.records()
    assert len(out) == len(real) == 4
    for before, after in zip(real, out):
        assert after["host"] == "h200-a"
        assert after["metrics"] == before["metrics"]
        assert after["series"] == before["series"]
        assert list(validator.iter_errors(after)) == []


def test_a_record_of_a_run_once_launcher_keeps_the_host_of_its_play_it_names():
    col = fleet.Collector()
    col.target(["launcher", "rank-host-2"])
    col.task_ok("launcher", "t1", "mpirun", {"results": [synthetic(host="rank-host-2")]},
                participants=["launcher", "rank-host-2"])
    assert [r["host"] for r in col.records()] == ["rank-host-2", "launcher"]   # + launcher's env.coverage


def test_other_modules_results_lists_are_not_records():
    col = fleet.Collector()
    col.target(["a"])
    col.task_ok("a", "t1", "pip", {"results": [{"name": "x", "state": "present"}]})
    col.task_ok("a", "t2", "plain", {"results": ["a", "b"]})
    [rec] = col.records()
    assert rec["check"] == fleet.MISSING_CHECK and rec["status"] == "error"


def test_loop_items_records_are_collected():
    col = fleet.Collector()
    col.target(["a"])
    items = [
        {"ansible_loop_var": "item", "item": "0", "results": [synthetic("gpu.x", target="0")]},
        {"ansible_loop_var": "item", "item": "1", "results": [synthetic("gpu.x", target="1")]},
        {"ansible_loop_var": "item", "item": "2", "changed": False},   # an item without records
    ]
    col.task_ok("a", "t1", "loop", {"results": items})
    assert [r["target"] for r in col.records()] == ["0", "1"]


def test_failed_task_without_records_is_an_env_task_error_quoting_the_msg():
    col = fleet.Collector()
    col.target(["a"])
    col.task_failed("a", "t1", "Run nccl", {"msg": "mpirun exited 1", "stderr": "ORTE was unable\n"})
    [rec] = col.records()
    assert (rec["check"], rec["status"], rec["target"]) == ("env.task", "error", "Run nccl")
    assert "mpirun exited 1" in rec["reason"] and "Run nccl" in rec["reason"]
    assert "ORTE was unable" in rec["raw"]


def test_failed_task_with_records_keeps_them_and_adds_no_error():
    col = fleet.Collector()
    col.target(["a"])
    col.task_failed("a", "t1", "ecc", {"msg": "failed", "results": [synthetic("gpu.ecc", "fail", reason="12 errors")]})
    assert [(r["check"], r["status"]) for r in col.records()] == [("gpu.ecc", "fail")]


def test_ignored_failure_without_records_is_not_a_host_error():
    col = fleet.Collector()
    col.target(["a"])
    col.task_ok("a", "t0", "probe", {"results": [synthetic()]})
    col.task_failed("a", "t1", "optional", {"msg": "nope"}, ignore_errors=True)
    assert [r["check"] for r in col.records()] == ["env.os"]


def test_ignored_failure_with_records_keeps_them():
    col = fleet.Collector()
    col.task_failed("a", "t1", "x", {"msg": "nope", "results": [synthetic("gpu.ecc", "fail", reason="bad")]},
                    ignore_errors=True)
    assert [r["check"] for r in col.records()] == ["gpu.ecc"]


def test_failed_loop_items_without_records_are_reported():
    col = fleet.Collector()
    items = [
        {"ansible_loop_var": "item", "item": "0", "results": [synthetic("gpu.x", target="0")]},
        {"ansible_loop_var": "item", "item": "1", "failed": True, "msg": "item one broke"},
    ]
    col.task_failed("a", "t1", "loop", {"results": items, "msg": "One or more items failed"})
    recs = col.records()
    assert [r["check"] for r in recs] == ["gpu.x", "env.task"]
    assert "item one broke" in recs[1]["reason"]


def test_unreachable_host_is_one_env_reachable_error():
    col = fleet.Collector()
    col.target(["a", "dead"])
    col.task_ok("a", "t1", "probe", {"results": [synthetic()]})
    col.task_unreachable("dead", "t1", "probe", {"msg": "ssh: connect to host 127.0.0.2 port 1: Connection refused"})
    col.task_unreachable("dead", "t2", "again", {"msg": "still down"})
    recs = [r for r in col.records() if r["host"] == "dead"]
    assert len(recs) == 1
    assert recs[0]["check"] == "env.reachable" and "Connection refused" in recs[0]["reason"]


def test_targeted_host_without_records_is_an_error_or_skip():
    col = fleet.Collector()
    col.target(["a", "quiet"])
    col.task_ok("a", "t1", "probe", {"results": [synthetic()]})
    col.task_skipped("quiet", "t1", "probe")
    rec = [r for r in col.records() if r["host"] == "quiet"][0]
    assert (rec["check"], rec["status"]) == ("env.coverage", "error")
    assert "1 skipped" in rec["reason"]
    col.missing_status = "skip"
    assert [r for r in col.records() if r["host"] == "quiet"][0]["status"] == "skip"


def test_a_host_without_records_in_an_interrupted_run_says_where_the_run_stopped():
    """Its reason says the run was interrupted and in which task of which play (it said "tasks: 1 ok" and no more)."""
    col = fleet.Collector()
    col.target(["a", "quiet"])
    col.task_ok("a", "t1", "probe", {"results": [synthetic()]})
    col.task_ok("quiet", "t1", "probe", {})
    stopped = {"reason": "SIGINT", "task": "aifabric.acceptance.gpu : Measure GEMM throughput on every GPU",
               "play": "GPU acceptance of every host, one node at a time"}
    rec = [r for r in col.records(interrupted=stopped) if r["host"] == "quiet"][0]
    assert (rec["check"], rec["status"]) == ("env.coverage", "error")
    assert rec["reason"] == ("interrupted (SIGINT) during task 'aifabric.acceptance.gpu : Measure GEMM throughput on "
                             "every GPU' of play 'GPU acceptance of every host, one node at a time', before this host "
                             "returned a result record (tasks done on it: 1 ok)"), rec["reason"]
    assert rec["facts"] == {"interrupted": "SIGINT", "task": stopped["task"], "play": stopped["play"]}
    # not interrupted: what it was
    rec = [r for r in col.records() if r["host"] == "quiet"][0]
    assert rec["reason"] == "host was targeted but no task returned a result record for it (tasks: 1 ok)"


def test_invalid_record_becomes_an_error_record_not_dropped():
    col = fleet.Collector()
    col.task_ok("a", "t1", "probe", {"results": [synthetic("env.os", "fail")]})   # fail without a reason
    [rec] = col.records()
    assert rec["status"] == "error" and rec["check"] == "env.os"
    assert "must say why" in rec["reason"]


def test_nan_metrics_become_null_so_json_stays_valid():
    col = fleet.Collector()
    col.task_ok("a", "t1", "p", {"results": [synthetic(metrics={"x_us": float("nan")})]})
    assert col.records()[0]["metrics"] == {"x_us": None}


def test_target_is_a_union_over_plays_in_first_seen_order():
    col = fleet.Collector()
    col.target(["b", "a"])
    col.target(["a", "c"])
    assert col.hosts_targeted == ["b", "a", "c"]


EVENTS = st.lists(st.tuples(
    st.sampled_from(["ok", "ok_empty", "failed", "ignored", "unreachable", "skipped"]),
    st.integers(0, 5),      # host index
    st.integers(0, 3),      # task index
), max_size=40)


@settings(max_examples=200, deadline=None)
@given(n_hosts=st.integers(1, 6), events=EVENTS)
def test_report_host_count_always_equals_hosts_targeted(n_hosts, events):
    hosts = ["h%d" % i for i in range(n_hosts)]
    col = fleet.Collector()
    col.target(hosts)
    for kind, hi, ti in events:
        host, task = hosts[hi % n_hosts], "t%d" % ti
        if kind == "ok":
            col.task_ok(host, task, task, {"results": [synthetic(target=task)]})
        elif kind == "ok_empty":
            col.task_ok(host, task, task, {"changed": False})
        elif kind == "failed":
            col.task_failed(host, task, task, {"msg": "boom"})
        elif kind == "ignored":
            col.task_failed(host, task, task, {"msg": "boom"}, ignore_errors=True)
        elif kind == "unreachable":
            col.task_unreachable(host, task, task, {"msg": "down"})
        else:
            col.task_skipped(host, task, task)
    recs = col.records()
    assert hosts_of(recs) == sorted(hosts)
    assert fleet.summarize(recs)["hosts_total"] == n_hosts
    for rec in recs:
        assert results.validate(rec) == []


# ------------------------------------------------------------------ pipeline


def test_default_pipeline_has_drift():
    assert drift.analyze in fleet.ANALYSES


def _drifting_fleet():
    """SYNTHETIC env.package records: one host of three runs another torch."""
    return [results.make("env.package", "pass", host=h, target="torch", facts={"version": v})
            for h, v in (("a", "2.4.1"), ("b", "2.4.1"), ("c", "2.3.0"))]


@pytest.mark.usefixtures("frozen_clock")
def test_analyze_adds_records_and_findings_and_is_idempotent():
    measured = _drifting_fleet()
    out, findings, problems = fleet.analyze(measured, {}, started="2026-11-22T10:00:00Z")
    assert problems == []
    added = [r for r in out if analysis_records.is_analysis_record(r)]
    assert [(r["host"], r["check"], r["status"]) for r in added] == [("c", "env.package.drift", "warn")]
    assert added[0]["tool"] == {"name": "fleet-analysis", "version": "drift"}
    assert findings[0]["kind"] == "drift" and findings[0]["analysis"] == "drift"
    again, findings2, _problems = fleet.analyze(out, {}, started="2026-11-22T10:00:00Z")
    assert again == out and findings2 == findings
    assert measured == _drifting_fleet()       # measured records are never rewritten


def test_a_broken_analysis_is_a_problem_and_the_others_still_run():
    def broken(records, config):
        raise KeyError("oops")

    def no_tool(records, config):
        return [results.make("env.os", "warn", reason="x", host="a")], [{"kind": "node"}]

    out, findings, problems = fleet.analyze(_drifting_fleet(), {}, analyses=[broken, no_tool, drift.analyze])
    assert any("broken failed: KeyError" in p for p in problems)
    assert any("tool.name is not 'fleet-analysis'" in p for p in problems)
    assert any("invalid finding" in p for p in problems)
    assert [f["kind"] for f in findings] == ["drift"]
    assert sum(1 for r in out if analysis_records.is_analysis_record(r)) == 1


def test_a_new_analysis_needs_only_a_function():
    """What fleet_relative/attribution do: a function returning analysis records + findings."""
    def slow_nodes(records, config):
        new = [analysis_records.record("slow_nodes", "rdma.ib_write_bw.fleet", "warn", "a", reason="below median")]
        return new, [analysis_records.finding("node", "rdma.ib_write_bw", ["a"], target="mlx5_0", evidence={"k": 1})]

    report = fleet.build_report(_drifting_fleet(), {"run_id": "r1", "started": "2026-11-22T10:00:00Z"},
                                analyses=fleet.ANALYSES + [slow_nodes])
    assert {f["kind"] for f in report["findings"]} == {"drift", "node"}
    assert report["summary"]["hosts_total"] == 3


# ------------------------------------------------------------------ summary


def _mixed():
    """SYNTHETIC records of five hosts with every status."""
    return [
        results.make("env.os", "pass", host="ok1"),
        results.make("env.os", "skip", reason="n/a", host="ok1"),
        results.make("env.os", "warn", reason="old", host="w1"),
        results.make("gpu.ecc", "fail", reason="ecc", host="f1"),
        results.make("gpu.x", "fail", reason="x", host="f2"),
        results.make("gpu.y", "fail", reason="y", host="f2"),
        results.error("env.reachable", "down", host="e1"),
    ]


def test_summary_counts_and_worst_hosts_first():
    s = fleet.summarize(_mixed())
    assert s["counts"] == {"pass": 1, "warn": 1, "fail": 3, "skip": 1, "error": 1}
    assert s["hosts_total"] == 5
    # skip ranks below pass: ok1 (pass + skip) is a pass host (issue 7: it used to be a skip host)
    assert s["hosts_by_status"] == {"pass": 1, "warn": 1, "fail": 2, "skip": 0, "error": 1}
    assert s["worst_status"] == "error"
    assert [h["host"] for h in s["worst_hosts"]] == ["e1", "f2", "f1", "w1"]
    assert s["failed_hosts"] == ["e1", "f2", "f1"]
    assert s["worst_hosts"][1]["checks"] == ["gpu.x", "gpu.y"]
    assert [h["host"] for h in s["hosts"]][-1] == "ok1"


def test_compact_summary_caps_host_lists():
    recs = [results.make("gpu.ecc", "fail", reason="ecc", host="n%02d" % i) for i in range(30)]
    c = fleet.compact_summary(fleet.summarize(recs), max_hosts=5, run_dir="/r")
    assert len(c["failed_hosts"]) == 5 and c["failed_hosts_total"] == 30
    assert c["run_dir"] == c["report_dir"] == "/r" and "hosts" not in c
    json.dumps(c)


def test_console_lines_name_counts_hosts_and_path():
    lines = fleet.console_lines(fleet.summarize(_mixed()), "/r/report.html")
    assert lines[0].startswith("FLEET REPORT: ERROR: 5 hosts: 1 error, 2 fail, 1 warn, 1 pass; 7 records")
    assert "fail 3" in lines[0] and "e1 error (env.reachable)" in lines[1]
    assert lines[-1] == "  report: /r/report.html"


# ------------------------------------------------------------------ run, publish, re-analysis


def _run(run_id="1a2b3c4d5e6f", started="2026-11-22T10:00:00Z"):
    return fleet.run_metadata(run_id, started, "2026-11-22T10:05:00Z", ["a", "b", "c"], inventory_host_count=4,
                              playbooks=["acceptance.yml"], ansible_version="2.19.14")


def test_run_metadata_has_versions_and_counts():
    run = _run()
    assert run["collection_version"] == fleet.collection_version()
    assert run["collection_version"]
    assert run["hosts_targeted_count"] == 3 and run["inventory_host_count"] == 4


def test_publish_writes_one_directory_per_run_and_latest(tmp_path):
    report = fleet.build_report(_drifting_fleet(), _run())
    out = fleet.publish(report, reports_root=str(tmp_path), history_db=str(tmp_path / "h.sqlite"))
    assert os.path.basename(out["dir"]) == "20261122T100000Z-1a2b3c4d"
    assert sorted(os.listdir(out["dir"])) == ["ctrf.json", "junit.xml", "report.html", "results.json", "summary.md"]
    assert os.path.realpath(str(tmp_path / "latest")) == out["dir"]
    assert (tmp_path / "LATEST").read_text().strip() == "20261122T100000Z-1a2b3c4d"
    assert sorted(out["changed"]) == ["ctrf", "html", "json", "junit", "md"]


def test_publish_survives_a_broken_history_store(tmp_path):
    bad = tmp_path / "not-a-db.sqlite"
    bad.write_text("this is not sqlite " * 100)
    report = fleet.build_report(_drifting_fleet(), _run())
    out = fleet.publish(report, reports_root=str(tmp_path), history_db=str(bad))
    assert out["warnings"] and "history store" in out["warnings"][0]
    assert os.path.exists(out["files"]["json"])


def test_reanalysis_is_idempotent_and_drops_old_analysis(tmp_path):
    report = fleet.build_report(_drifting_fleet() + real_records.nccl_records("a"), _run())
    first = fleet.publish(report, dest=str(tmp_path / "re"))
    data = fleet.load_results(first["files"]["json"])
    pinned = fleet.reanalyze(data, {"drift_pins": {"version": "2.4.1"}})
    drifted = [r for r in pinned["records"] if analysis_records.is_analysis_record(r)]
    assert [(r["host"], r["status"]) for r in drifted] == [("c", "fail")]
    fleet.publish(pinned, dest=str(tmp_path / "re"))
    again = fleet.reanalyze(fleet.load_results(first["files"]["json"]), {"drift_pins": {"version": "2.4.1"}})
    out = fleet.publish(again, dest=str(tmp_path / "re"))
    assert out["changed"] == []


def test_load_results_rejects_other_json(tmp_path):
    path = tmp_path / "x.json"
    path.write_text(json.dumps({"records": []}))
    with pytest.raises(ValueError, match="not a fleet report"):
        fleet.load_results(str(path))
