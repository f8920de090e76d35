# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The CTRF export (plugin_utils/ctrf.py): it validates against the CTRF schema of ctrf-io/ctrf (a copy in
tests/unit/fixtures/ctrf/, MIT), and on a whole fleet with a known bad node, a known bad link and healthy hosts,
results.json's host verdicts, junit.xml's test suites and ctrf.json's tests agree host by host: a host has a failed
test exactly when its verdict is fail or error."""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET

import pytest

from ansible_collections.aifabric.acceptance.plugins.module_utils import results
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import ctrf, fleet, render
from ansible_collections.aifabric.acceptance.tests.unit.plugins.plugin_utils import synthetic_fleet

jsonschema = pytest.importorskip("jsonschema")
HERE = os.path.dirname(os.path.abspath(__file__))
SCHEMA = os.path.join(HERE, os.pardir, os.pardir, "fixtures", "ctrf", "ctrf.schema.json")
REAL_RUN = os.path.join(HERE, "fixtures", "h200x2-acceptance-results.json")
CPU_ONLY = os.path.join(HERE, "fixtures", "cpu-only-acceptance-results.json")
RUN = {"run_id": "ctrf", "started": synthetic_fleet.STARTED, "ended": "2026-11-22T10:30:00Z"}


@pytest.fixture(scope="module")
def validator():
    with open(SCHEMA, encoding="utf-8") as handle:
        schema = json.load(handle)
    return jsonschema.Draft7Validator(schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)


def _fleet_report():
    """A 16-host all-pairs RDMA fleet (one bad node, one bad link) plus a host whose probe erred and one that skips."""
    built = synthetic_fleet.build(16, "all", confirm=True)
    recs = list(built.records)
    recs.append(results.error("env.reachable", "host unreachable: Connection refused", host="gpu-down",
                              raw="ssh: connect to host 10.0.0.4 port 22: Connection refused"))
    recs.append(results.skip("gpu.inventory", "no NVIDIA GPU/driver: nvidia-smi not found", host="gpu0001"))
    recs.append(results.make("env.os", "warn", host="gpu0002", reason="kernel 6.1 is older than the fleet's 6.8"))
    report = fleet.build_report(recs, dict(RUN, hosts_targeted=built.hosts + ["gpu-down"]))
    return built, report


def _junit_failed_hosts(text):
    root = ET.fromstring(text)
    return sorted(s.get("name") for s in root.findall("testsuite")
                  if int(s.get("failures")) + int(s.get("errors")) > 0)


def test_a_fleet_export_validates_and_agrees_with_junit_and_results_host_by_host(validator):
    built, report = _fleet_report()
    doc = ctrf.document(report)
    errors = sorted(validator.iter_errors(doc), key=str)
    assert not errors, [e.message for e in errors[:5]]
    verdicts = dict((h["host"], h["status"]) for h in report["summary"]["hosts"])
    bad = sorted(h for h, s in verdicts.items() if s in ("fail", "error"))
    assert bad == sorted([built.bad_node, "gpu-down"])               # the bad node fails, the dead host errs
    ctrf_failed = sorted(set(t["suite"][0] for t in doc["results"]["tests"] if t["status"] == "failed"))
    assert ctrf_failed == bad
    assert _junit_failed_hosts(render.render_format("junit", report)) == bad
    assert doc["results"]["extra"]["hosts"] == verdicts
    link_ends = sorted(built.bad_link)
    for end in link_ends:                                             # the bad link's ends warn, never fail
        assert verdicts[end] == "warn"
        assert end not in ctrf_failed


def test_one_test_per_record_with_labels_metrics_and_the_status_map():
    _built, report = _fleet_report()
    doc = ctrf.document(report)
    tests = doc["results"]["tests"]
    assert len(tests) == len(report["records"])
    summary = doc["results"]["summary"]
    assert summary["tests"] == len(tests)
    assert summary["passed"] + summary["failed"] + summary["skipped"] + summary["other"] == len(tests)
    assert summary["start"] == ctrf._ms(RUN["started"]) and summary["stop"] == ctrf._ms(RUN["ended"])
    by_raw = {}
    for test, rec in zip(tests, report["records"]):
        by_raw.setdefault(rec["status"], set()).add(test["status"])
        assert test["rawStatus"] == rec["status"]
        assert test["labels"]["host"] == rec["host"] and test["labels"]["check"] == rec["check"]
        assert test["tags"] == [rec["check"].split(".")[0]]
        if rec.get("metrics"):
            assert test["extra"]["metrics"] == rec["metrics"]
    assert by_raw["skip"] == {"skipped"} and by_raw["error"] == {"failed"} and by_raw["pass"] == {"passed"}
    warned = [t for t in tests if t["rawStatus"] == "warn" and "pair_status" not in t.get("extra", {})]
    assert warned and all(t["status"] == "passed" and t["extra"]["warning"] == t["message"] for t in warned)
    judged = [t for t in tests if "pair_status" in t.get("extra", {})]
    assert judged and all(t["status"] == "passed" and t["extra"]["judged_by"] == "attribution" for t in judged)


@pytest.mark.parametrize("path", [REAL_RUN, CPU_ONLY], ids=["h200x2", "cpu-only"])
def test_real_runs_export_valid_ctrf(validator, path):
    """results.json files of real acceptance runs (fixtures/PROVENANCE.md) re-exported."""
    with open(path, encoding="utf-8") as handle:
        report = json.load(handle)
    text = render.render_format("ctrf", report)
    doc = json.loads(text)
    errors = sorted(validator.iter_errors(doc), key=str)
    assert not errors, [e.message for e in errors[:5]]
    assert doc["results"]["tool"] == {"name": "aifabric.acceptance", "version": report["run"]["collection_version"]}
    assert doc["runId"] == report["run"]["run_id"]
    assert doc["results"]["summary"]["tests"] == len(report["records"])
    statuses = [r["status"] for r in report["records"]]
    assert doc["results"]["summary"]["skipped"] == statuses.count("skip")


def test_hostile_text_stays_json_and_valid(validator):
    rec = results.make("env.os", "fail", host='<a href="x">', reason="kernel \x00\x1b[31m \u2028 \"quoted\"",
                       raw="\ud800 lone surrogate? no: " + "x" * 10, metrics={"value": float("nan")})
    report = fleet.build_report([rec], RUN)
    doc = json.loads(render.render_format("ctrf", report))
    assert not list(validator.iter_errors(doc))
    test = doc["results"]["tests"][0]
    assert test["message"].endswith('kernel \x00\x1b[31m \u2028 "quoted"')      # tool text kept as it was, as JSON
    assert test["status"] == "failed" and test["rawStatus"] == "error"
