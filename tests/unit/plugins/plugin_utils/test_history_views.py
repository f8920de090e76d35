# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""History people use: index.html, JSON-lines export, retention, run-to-run comparison, baselines.

Fleets are built from REAL records: the nccl-tests 2.19.6 JSON of a 2x H200 host (real_records)
copied to several host names, and a real ib_read_lat capture through the perftest record builder.
A "slow" host is the real record with its bandwidth scaled, as a degraded node would measure.
"""

from __future__ import annotations

import copy
import datetime
import io
import json
import os
import re
import sqlite3

import pytest

from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import Context
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import perftest_sweep as perftest_tool
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import baseline, compare, fleet, history
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import history_index
from ansible_collections.aifabric.acceptance.tests.unit.plugins.plugin_utils import real_records

HOSTS = ("h200-a", "h200-b", "h200-c", "h200-d")
LAT_CAPTURE = os.path.join(real_records.PERFTEST_DIR, "mlx4-ib-read-lat-client-a-all-sizes.txt")
BUSBW = "busbw_max_gbyte_s"


def fleet_records(scale=None):
    """nccl records for every host; scale: {host: factor} applied to every bandwidth metric."""
    out = []
    for host in HOSTS:
        for rec in real_records.nccl_records(host):
            factor = (scale or {}).get(host)
            if factor:
                for name in list(rec["metrics"]):
                    if name.endswith("_gbyte_s"):
                        rec["metrics"][name] = round(rec["metrics"][name] * factor, 5)
            out.append(rec)
    return out


def lat_record(host, factor=1.0):
    with open(LAT_CAPTURE, encoding="utf-8") as handle:
        text = handle.read()
    rec = perftest_tool.records(text, Context(params={"test": "ib_read_lat"}, rc=0, host=host, target="mlx4_0"))[0]
    for name in list(rec["metrics"]):
        if name.endswith("_us"):
            rec["metrics"][name] = round(rec["metrics"][name] * factor, 4)
    return rec


def run_meta(run_id, started):
    return fleet.run_metadata(run_id, started, started, list(HOSTS), playbooks=["playbooks/nccl.yml"])


def publish(tmp_path, records, run_id, started, **kwargs):
    report = fleet.build_report(records, run_meta(run_id, started))
    report.update(kwargs.pop("preset", {}))
    out = fleet.publish(report, reports_root=str(tmp_path / "reports"), history_db=str(tmp_path / "reports" / "h.sqlite"),
                        **kwargs)
    return report, out


def _inside(tmp_path, path):
    assert os.path.realpath(path).startswith(os.path.realpath(str(tmp_path)) + os.sep)


# ---------------------------------------------------------------- comparison


def test_direction_follows_the_metric():
    assert compare.direction("nccl.all_reduce", BUSBW) == "higher"
    assert compare.direction("rdma.ib_write_bw", "bw_avg_gbit_s") == "higher"
    assert compare.direction("gpu.gemm_bf16", "tflops") == "higher"
    assert compare.direction("rdma.ib_read_lat", "lat_typical_us") == "lower"
    assert compare.direction("rdma.ib_read_lat", "lat_p99_us") == "lower"
    assert compare.direction("nccl.all_reduce", "ranks") is None          # a count: no better way
    assert compare.direction("nccl.all_reduce", "max_size_bytes") is None


def test_previous_run_comparison_names_exactly_the_regressed_and_improved_hosts(tmp_path):
    """b lost 10 % bandwidth, c gained 10 %, d moved 2 % (noise under the 5 % margin); a's latency doubled."""
    first = fleet_records() + [lat_record("h200-a")]
    publish(tmp_path, first, "run1", "2026-11-20T10:00:00Z")
    second = fleet_records({"h200-b": 0.9, "h200-c": 1.1, "h200-d": 0.98}) + [lat_record("h200-a", 2.0)]
    report, out = publish(tmp_path, second, "run2", "2026-11-21T10:00:00Z")
    comparison = report["comparison"]
    assert comparison["against"] == {"kind": "previous", "name": "previous run of each host", "run_ids": ["run1"]}
    assert comparison["margin_pct"] == compare.DEFAULT_MARGIN_PCT
    regressed = set((d["host"], d["check"]) for d in comparison["regressions"])
    improved = set((d["host"], d["check"]) for d in comparison["improvements"])
    assert set(h for h, _c in regressed) == {"h200-a", "h200-b"}
    assert ("h200-a", "rdma.ib_read_lat") in regressed and not any(h == "h200-a" for h, c in regressed if c != "rdma.ib_read_lat")
    assert set(h for h, _c in improved) == {"h200-c"}
    lat = [d for d in comparison["regressions"] if d["metric"] == "lat_typical_us"][0]
    assert (lat["better"], lat["reference"], lat["current"], lat["change_pct"]) == ("lower", 1.99, 3.98, 100.0)
    bw = [d for d in comparison["regressions"] if d["host"] == "h200-b" and d["metric"] == BUSBW
          and d["check"] == "nccl.all_reduce"][0]
    assert bw["change_pct"] == pytest.approx(-10.0, abs=0.01) and bw["better"] == "higher"
    assert comparison["hosts"]["h200-b"]["regressions"] > 0 and "h200-d" not in comparison["hosts"]
    # the documented key of results.json, and the summary.md section
    with open(out["files"]["json"], encoding="utf-8") as handle:
        assert json.load(handle)["comparison"] == comparison
    with open(out["files"]["md"], encoding="utf-8") as handle:
        md = handle.read()
    assert "## Comparison" in md and "**%d regressions**" % comparison["totals"]["regressions"] in md
    assert "| h200-b | nccl.all_reduce | busbw_max_gbyte_s (higher is better) |" in md
    assert "h200-d" not in md.split("## Comparison")[1]


def test_a_wider_margin_hides_smaller_changes(tmp_path):
    publish(tmp_path, fleet_records(), "run1", "2026-11-20T10:00:00Z")
    report, _out = publish(tmp_path, fleet_records({"h200-b": 0.9}), "run2", "2026-11-21T10:00:00Z",
                           preset={compare.MARGIN_KEY: 15.0})
    assert report["comparison"]["margin_pct"] == 15.0 and report["comparison"]["regressions"] == []
    assert compare.MARGIN_KEY not in report


def test_first_run_has_no_comparison_and_says_so(tmp_path):
    report, out = publish(tmp_path, fleet_records(), "run1", "2026-11-20T10:00:00Z")
    assert report["comparison"] is None
    with open(out["files"]["md"], encoding="utf-8") as handle:
        assert "No earlier run of these hosts to compare with" in handle.read()


def test_compare_with_a_results_json_a_run_id_and_a_baseline(tmp_path):
    db = str(tmp_path / "reports" / "h.sqlite")
    _r1, out1 = publish(tmp_path, fleet_records(), "run1", "2026-11-20T10:00:00Z")
    current = fleet_records({"h200-c": 0.8})
    by_file = compare.compare_with(current, out1["files"]["json"], db, load_results=fleet.load_results)
    by_run = compare.compare_with(current, "run1", db)
    assert by_file["against"]["kind"] == "results"
    assert by_run["against"] == {"kind": "run", "name": "run1", "run_ids": ["run1"]}
    for found in (by_file, by_run):
        assert set(d["host"] for d in found["regressions"]) == {"h200-c"} and found["improvements"] == []
    history.save_baseline(db, "h200-nov", "run1", kind="medians")
    by_base = compare.compare_with(current, "h200-nov", db)
    assert by_base["against"]["kind"] == "baseline" and set(d["host"] for d in by_base["regressions"]) == {"h200-c"}
    with pytest.raises(ValueError, match="names nothing"):
        compare.compare_with(current, "no-such-run", db)
    with pytest.raises(ValueError, match="no history_db"):
        compare.compare_with(current, "run1", None)


# ---------------------------------------------------------------- baselines


def test_baseline_fails_exactly_the_host_below_95_pct_of_it(tmp_path):
    """Whole fleet: c at 90 % of the frozen fleet medians fails, a/b/d (100 %, 97 %, 104 %) pass."""
    db = str(tmp_path / "h.sqlite")
    history.record_run(db, run_meta("run1", "2026-11-20T10:00:00Z"), fleet_records())
    frozen = history.save_baseline(db, "h200-nov", "run1", kind="medians")
    assert frozen["data"]["nccl.all_reduce|"][BUSBW] == 345.68839      # the real measured figure
    config = baseline.resolve_config({"baseline": {"name": "h200-nov", "min_pct": 95}}, db)
    records = fleet_records({"h200-b": 0.97, "h200-c": 0.90, "h200-d": 1.04})
    report = fleet.build_report(records, run_meta("run2", "2026-11-21T10:00:00Z"), config)
    added = [r for r in report["records"] if r["check"].endswith(".baseline")]
    assert len(added) == len(records)
    assert set(r["host"] for r in added if r["status"] == "fail") == {"h200-c"}
    assert report["summary"]["failed_hosts"] == ["h200-c"]
    assert dict((h["host"], h["status"]) for h in report["summary"]["hosts"]) == {
        "h200-a": "pass", "h200-b": "pass", "h200-c": "fail", "h200-d": "pass"}
    bad = [r for r in added if r["host"] == "h200-c" and r["check"] == "nccl.all_reduce.baseline"][0]
    assert bad["expect"][BUSBW]["min"] == round(345.68839 * 0.95, 6) and "below baseline h200-nov" in bad["reason"]
    assert [f["hosts"] for f in report["findings"] if f["kind"] == "baseline"] == [["h200-c"]]
    # a re-analysis drops and re-adds them: idempotent
    again = fleet.build_report(report["records"], report["run"], config)
    assert again["records"] == report["records"]


def test_latency_baseline_fails_above_its_ceiling(tmp_path):
    db = str(tmp_path / "h.sqlite")
    history.record_run(db, run_meta("run1", "2026-11-20T10:00:00Z"), [lat_record(h) for h in HOSTS])
    history.save_baseline(db, "lat", "run1", kind="run")
    config = baseline.resolve_config({"baseline": {"name": "lat", "min_pct": 95}}, db)
    records = [lat_record("h200-a", 1.2)] + [lat_record(h) for h in HOSTS[1:]]
    report = fleet.build_report(records, run_meta("run2", "2026-11-21T10:00:00Z"), config)
    assert report["summary"]["failed_hosts"] == ["h200-a"]


def test_unknown_baseline_is_a_clear_error(tmp_path):
    db = str(tmp_path / "h.sqlite")
    history.record_run(db, run_meta("run1", "2026-11-20T10:00:00Z"), fleet_records())
    history.save_baseline(db, "one", "run1")
    with pytest.raises(ValueError, match=r"no baseline 'two' .*there are: one"):
        baseline.resolve_config({"baseline": {"name": "two"}}, db)
    with pytest.raises(ValueError, match="min_pct"):
        baseline.settings({"baseline": {"name": "one", "min_pct": 150}})
    with pytest.raises(ValueError, match="needs a history store"):
        baseline.resolve_config({"baseline": {"name": "one"}}, None)


# ---------------------------------------------------------------- index, export, retention


def test_index_lists_every_run_with_verdict_counts_and_trends(tmp_path):
    publish(tmp_path, fleet_records(), "run1", "2026-11-20T10:00:00Z")
    publish(tmp_path, fleet_records({"h200-b": 0.9}), "run2", "2026-11-21T10:00:00Z")
    bad = fleet_records({"h200-a": 0.95, "h200-b": 0.8, "h200-c": 0.95, "h200-d": 0.95})
    bad[0]["host"] = "<script>alert(1)</script>"
    publish(tmp_path, bad, "run3", "2026-11-22T10:00:00Z")
    reports = str(tmp_path / "reports")
    path = history_index.write_index(str(tmp_path / "reports" / "h.sqlite"), reports)
    _inside(tmp_path, path)
    with open(path, encoding="utf-8") as handle:
        page = handle.read()
    assert "<script>" not in page and "3 runs in the history store" in page
    rows = re.findall(r"<tr><td>(.*?)</td><td>(.*?)</td><td class=\"v\"[^>]*>(\w+)</td><td>(.*?)</td>", page)
    assert [r[1] for r in rows] == ["2026-11-22T10:00:00Z", "2026-11-21T10:00:00Z", "2026-11-20T10:00:00Z"]
    assert all('href="' in r[0] and "/report.html" in r[0] for r in rows)     # each run directory exists
    # run3: 5 hosts (one record renamed); b at 80 % of the others is the fleet-relative outlier
    assert "1 fail" in rows[0][3] and "4 pass" in rows[0][3] and rows[0][2] == "FAIL"
    assert "4 pass" in rows[2][3] and "fail" not in rows[2][3] and rows[2][2] == "PASS"
    assert "nccl.all_reduce busbw_max_gbyte_s" in page and page.count("<polyline") >= 4
    entries = history.run_index(str(tmp_path / "reports" / "h.sqlite"))
    medians = [e["meta"]["headline"]["nccl.all_reduce %s" % BUSBW] for e in entries]
    assert medians[0] == medians[1] == 345.68839 and medians[2] == round(345.68839 * 0.95, 5)


def test_export_is_json_lines_of_every_run_and_record(tmp_path):
    db = str(tmp_path / "h.sqlite")
    history.record_run(db, run_meta("run1", "2026-11-20T10:00:00Z"), fleet_records())
    history.record_run(db, run_meta("run2", "2026-11-21T10:00:00Z"), fleet_records())
    buffer = io.StringIO()
    assert history.export_jsonl(db, buffer) == (2, 2 * 4 * len(HOSTS))
    lines = [json.loads(line) for line in buffer.getvalue().splitlines()]
    assert [x["run_id"] for x in lines if x["type"] == "run"] == ["run1", "run2"]
    first = [x for x in lines if x["type"] == "record"][0]
    assert set(first) == {"type", "run_id", "host", "check", "target", "peer", "status", "reason", "metrics"}
    assert history.export_jsonl(str(tmp_path / "none.sqlite"), io.StringIO()) == (0, 0)
    assert not os.path.exists(str(tmp_path / "none.sqlite"))


def test_retention_keeps_n_runs_and_n_days_and_every_baseline(tmp_path):
    db = str(tmp_path / "h.sqlite")
    for day in range(1, 6):
        history.record_run(db, run_meta("run%d" % day, "2026-11-%02dT10:00:00Z" % day), fleet_records()[:2])
    history.save_baseline(db, "old", "run1")
    now = datetime.datetime(2026, 11, 6, 12, 0, tzinfo=datetime.timezone.utc)
    assert history.prune(db, keep_runs=4, now=now, dry_run=True) == ["run1"]
    assert [r[0] for r in history.runs(db)][0] == "run1"          # dry run removed nothing
    assert history.prune(db, keep_runs=4, now=now) == ["run1"]
    assert history.prune(db, keep_days=3, now=now) == ["run2", "run3"]
    assert [r[0] for r in history.runs(db)] == ["run4", "run5"]
    assert history.load_baseline(db, "old")["source_run"] == "run1"
    with pytest.raises(ValueError, match="keep_runs"):
        history.prune(db, keep_runs=0)


def test_after_run_writes_the_index_applies_retention_and_exports(tmp_path):
    for day in range(1, 4):
        report, _out = publish(tmp_path, fleet_records(), "run%d" % day, "2026-11-%02dT10:00:00Z" % day)
    prom = str(tmp_path / "prom")
    notes, warnings = history_index.after_run(
        report, str(tmp_path / "reports"), str(tmp_path / "reports" / "h.sqlite"),
        environ={history_index.ENV_KEEP_RUNS: "2", history_index.ENV_PROMETHEUS_DIR: prom})
    assert warnings == []
    assert any("removed 1 run(s): run1" in n for n in notes)
    assert os.path.isfile(str(tmp_path / "reports" / "index.html")) and os.listdir(prom) == ["aifabric.prom"]
    _notes, warnings = history_index.after_run(report, str(tmp_path / "reports"), str(tmp_path / "reports" / "h.sqlite"),
                                               environ={history_index.ENV_KEEP_DAYS: "soon"})
    assert warnings == ["history retention: AIFABRIC_HISTORY_KEEP_DAYS must be a whole number, got 'soon'"]


def test_check_mode_stores_nothing_and_writes_nothing(tmp_path):
    """fleet.publish in check mode (report.yml --check): history read, nothing written anywhere."""
    publish(tmp_path, fleet_records(), "run1", "2026-11-20T10:00:00Z")
    before = sorted(os.listdir(str(tmp_path / "reports")))
    report, _out = publish(tmp_path, fleet_records({"h200-b": 0.5}), "run2", "2026-11-21T10:00:00Z", check_mode=True)
    assert [r[0] for r in history.runs(str(tmp_path / "reports" / "h.sqlite"))] == ["run1"]
    assert sorted(os.listdir(str(tmp_path / "reports"))) == before
    assert set(d["host"] for d in report["comparison"]["regressions"]) == {"h200-b"}   # still compared (read only)


def test_run_verdict_stored_with_the_run_matches_the_report(tmp_path):
    records = fleet_records()
    records[0] = copy.deepcopy(records[0])
    records[0]["status"], records[0]["reason"] = "fail", "busbw below floor"
    report, _out = publish(tmp_path, records, "run1", "2026-11-20T10:00:00Z")
    stored = history.run_index(str(tmp_path / "reports" / "h.sqlite"))[0]["meta"]["verdict"]
    assert stored["hosts_by_status"] == report["summary"]["hosts_by_status"]
    assert stored["worst_status"] == report["summary"]["worst_status"] == "fail"


def test_a_store_written_before_baselines_existed_reads_as_having_none(tmp_path):
    """An older store has no baselines table: asking it for one says 'no baseline', not a SQL error."""
    db = str(tmp_path / "old.sqlite")
    conn = sqlite3.connect(db)
    for statement in history.SCHEMA:
        if "baselines" not in statement:
            conn.execute(statement)
    conn.commit()
    conn.close()
    assert history.load_baseline(db, "x") is None and history.baselines(db) == []
    with pytest.raises(ValueError, match=r"no baseline 'x' .*there are: none"):
        baseline.resolve_config({"baseline": {"name": "x"}}, db)
    history.record_run(db, run_meta("run1", "2026-11-20T10:00:00Z"), fleet_records())     # a write adds the table
    assert history.save_baseline(db, "x", "run1")["source_run"] == "run1"
