# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The alert rules of extras/prometheus/ against what the exporter really writes.

The fleet: the synthetic RDMA fleet of synthetic_fleet (a known bad node and a known bad link, the
confirmation pass run), the real nccl-tests records of the H200 run on every host (the bad node's busbw
lowered to 80 %), gpu.inventory records where one healthy host carries another driver version (drift), and
one targeted host that gave no record (error). fleet.build_report judges it; exports.prometheus writes the
text the textfile collector reads. Every metric name, label name and matcher of the rules is checked against
that text, and, when promtool is installed (Debian package ``prometheus``), ``promtool check rules`` and
``promtool test rules`` run on both files with input series taken sample by sample from that text: the set of
firing alerts is asserted exactly.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import statistics
import subprocess

import pytest
import yaml

from ansible_collections.aifabric.acceptance.plugins.module_utils import results
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import exports, fleet
from ansible_collections.aifabric.acceptance.tests.unit.plugins.plugin_utils import real_records, synthetic_fleet

parser = pytest.importorskip("prometheus_client.parser", reason="prometheus_client (requirements-test.txt) is needed")

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
RULES = os.path.join(ROOT, "extras", "prometheus", "aifabric-rules.yml")
OPERATOR = os.path.join(ROOT, "extras", "prometheus", "aifabric-prometheusrule.yml")
PROMQL_WORDS = {"by", "on", "without", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool",
                "offset", "max", "min", "sum", "count", "avg", "quantile", "time", "absent", "humanizeDuration"}
BANDWIDTH = ("busbw_max_gbyte_s", "bw_avg_gbit_s")
STATUS_OF = {"fail": 3, "error": 4}


def rules_file():
    with open(RULES, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def alerts():
    return dict((rule["alert"], rule) for group in rules_file()["groups"] for rule in group["rules"])


def build_fleet():
    built = synthetic_fleet.build(8, mode="all", confirm=True)
    records = list(built.records)
    for host in built.hosts:
        for rec in real_records.nccl_records(host):
            if host == built.bad_node:
                rec["metrics"]["busbw_max_gbyte_s"] = round(rec["metrics"]["busbw_max_gbyte_s"] * 0.8, 5)
            records.append(rec)
        driver = "565.57.01" if host == built.hosts[-1] else "570.172.08"
        records.append(results.make("gpu.inventory", "pass", host=host,
                                    facts={"driver_version": driver, "cuda_version": "12.8"}))
    targeted = built.hosts + ["gpu-silent"]            # targeted, never answered (as the callback records it)
    records.extend(fleet.missing_host_records(records, targeted))
    run = fleet.run_metadata("0123456789abcdef", "2026-11-22T10:00:00Z", "2026-11-22T10:05:00Z", targeted)
    return built, fleet.build_report(records, run)


@pytest.fixture(scope="module")
def exported():
    built, report = build_fleet()
    text = exports.prometheus(report)
    samples = [s for f in parser.text_string_to_metric_families(text) for s in f.samples]
    return built, report, samples


def label_names(samples):
    """{metric name: set of label names} of the exported samples."""
    out = {}
    for s in samples:
        out.setdefault(s.name, set()).update(s.labels)
    return out


def promql_string(text):
    return text.encode("ascii").decode("unicode_escape")


def test_both_forms_parse_and_carry_the_same_groups():
    plain = rules_file()
    with open(OPERATOR, encoding="utf-8") as handle:
        operator = yaml.safe_load(handle)
    assert operator["apiVersion"] == "monitoring.coreos.com/v1" and operator["kind"] == "PrometheusRule"
    assert operator["metadata"]["name"] == "aifabric-acceptance"
    assert operator["spec"]["groups"] == plain["groups"], "edit extras/prometheus/*.yml together: the groups differ"
    names = [rule["alert"] for group in plain["groups"] for rule in group["rules"]]
    assert len(names) == len(set(names)) and "AifabricNodeFailedAcceptance" in names
    for rule in alerts().values():
        assert rule["labels"]["severity"] in ("critical", "warning") and rule["annotations"]["summary"]


def test_the_fleet_has_the_verdicts_the_alerts_are_tested_on(exported):
    built, report, _samples = exported
    status = dict((h["host"], h["status"]) for h in report["summary"]["hosts"])
    assert [h for h, s in status.items() if s == "fail"] == [built.bad_node]
    assert [h for h, s in status.items() if s == "error"] == ["gpu-silent"]
    assert status[built.hosts[-1]] == "warn"           # the drifting driver


def test_every_name_and_label_of_the_rules_is_exported(exported):
    _built, _report, samples = exported
    labels = label_names(samples)
    values = {}
    for s in samples:
        for key, value in s.labels.items():
            values.setdefault((s.name, key), set()).add(value)
    for name, rule in alerts().items():
        expr = rule["expr"]
        used = set(re.findall(r"\baifabric_[a-z_]+\b", expr))
        assert used and used <= set(labels), (name, used)
        # every other identifier is PromQL's
        bare = re.sub(r'"[^"]*"|\{[^}]*\}|\b(by|on|without|ignoring|group_left|group_right)\s*\([^)]*\)', r"\1", expr)
        words = set(re.findall(r"\b[a-zA-Z_][a-zA-Z0-9_]*\b", bare))
        assert words - used <= PROMQL_WORDS, (name, words - used - PROMQL_WORDS)
        for metric, matchers in re.findall(r"\b(aifabric_[a-z_]+)\{([^}]*)\}", expr):
            for key, op, value in re.findall(r'(\w+)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"', matchers):
                assert key in labels[metric], (name, metric, key)
                pattern = re.compile(r"(?:%s)\Z" % promql_string(value))
                assert any(pattern.match(v) for v in values[(metric, key)]), (name, key, value)   # matches real values
        grouping = set()
        for words_in in re.findall(r"\b(?:by|on|without|ignoring|group_left|group_right)\s*\(([^)]*)\)", expr):
            grouping.update(w.strip() for w in words_in.split(",") if w.strip())
        assert grouping <= set().union(*(labels[m] for m in used)), (name, grouping)


def firing(built, report, samples):
    """The ALERTS series the rules must give on this fleet (every label)."""
    status = dict((h["host"], h["status"]) for h in report["summary"]["hosts"])
    out = []
    for host, verdict in sorted(status.items()):
        if verdict in STATUS_OF:
            alert = "AifabricNodeFailedAcceptance" if verdict == "fail" else "AifabricNodeAcceptanceError"
            out.append({"alertname": alert, "host": host})
    for s in samples:
        if s.name != "aifabric_check_status" or s.value < 2:
            continue
        if s.labels["check"].endswith(".link"):
            out.append(dict({"alertname": "AifabricLinkSuspect"},
                            **dict((k, s.labels[k]) for k in ("host", "peer", "check", "target"))))
        if s.labels["check"].endswith(".drift"):
            out.append(dict({"alertname": "AifabricVersionDrift"},
                            **dict((k, s.labels[k]) for k in ("host", "check", "target"))))
    groups = {}
    for s in samples:
        if s.name == "aifabric_metric" and s.labels["metric"] in BANDWIDTH:
            groups.setdefault((s.labels["check"], s.labels["target"], s.labels["metric"]), []).append(s)
    for group in groups.values():
        if len(group) < 3:
            continue
        floor = 0.9 * statistics.median(s.value for s in group)
        out.extend(dict(s.labels, alertname="AifabricBandwidthBelowFleetMedian") for s in group if s.value < floor)
    severity = dict((name, rule["labels"]["severity"]) for name, rule in alerts().items())
    return [dict(a, alertstate="firing", severity=severity[a["alertname"]]) for a in out]


def test_the_bandwidth_alerts_name_only_the_bad_node_and_the_bad_link(exported):
    built, report, samples = exported
    low = [a for a in firing(built, report, samples) if a["alertname"] == "AifabricBandwidthBelowFleetMedian"]
    nccl = [a for a in low if a["check"].startswith("nccl.")]
    rdma = [a for a in low if a["check"].startswith("rdma.")]
    assert nccl and set(a["host"] for a in nccl) == {built.bad_node}
    assert rdma and all(built.bad_node in (a["host"], a["peer"]) or {a["host"], a["peer"]} == built.bad_link
                        for a in rdma)
    assert any({a["host"], a["peer"]} == built.bad_link for a in rdma)


def series(labels_name, labels):
    return "%s{%s}" % (labels_name, ",".join("%s=%s" % (k, json.dumps(v)) for k, v in sorted(labels.items())))


def annotation(text, labels):
    return re.sub(r"\{\{ \$labels\.(\w+) \}\}", lambda m: labels[m.group(1)], text)


def promtool():
    path = shutil.which("promtool")
    if not path:
        pytest.skip("promtool is not installed (Debian package prometheus): the rules were not evaluated")
    return path


def run_promtool(argv, cwd):
    proc = subprocess.run(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120, check=False)
    return proc.returncode, proc.stdout.decode("utf-8", "replace")


@pytest.mark.parametrize("path", [RULES, OPERATOR])
def test_promtool_checks_the_rules(tmp_path, path):
    tool = promtool()
    with open(path, encoding="utf-8") as handle:
        doc = yaml.safe_load(handle)
    rules = tmp_path / "rules.yml"
    rules.write_text(yaml.safe_dump({"groups": doc["spec"]["groups"] if "spec" in doc else doc["groups"]}))
    rc, out = run_promtool([tool, "check", "rules", str(rules)], str(tmp_path))
    assert rc == 0 and "SUCCESS: %d rules found" % len(alerts()) in out, out


def test_promtool_fires_exactly_the_expected_alerts(tmp_path, exported):
    built, report, samples = exported
    tool = promtool()
    shutil.copy(RULES, str(tmp_path / "rules.yml"))
    # input: every exported sample, held for 30 minutes
    inputs = [{"series": series(s.name, s.labels), "values": "%r+0x30" % s.value} for s in samples]
    expected = firing(built, report, samples)
    failed = [a for a in expected if a["alertname"] == "AifabricNodeFailedAcceptance"]
    assert [a["host"] for a in failed] == [built.bad_node]
    node_rule = alerts()["AifabricNodeFailedAcceptance"]
    tests = {"rule_files": ["rules.yml"], "evaluation_interval": "1m", "tests": [
        {"interval": "1m", "input_series": inputs,
         "promql_expr_test": [
             {"expr": 'ALERTS{alertstate="firing"}', "eval_time": "10m",
              "exp_samples": [{"labels": series("ALERTS", a), "value": 1} for a in expected]}],
         "alert_rule_test": [
             {"eval_time": "10m", "alertname": "AifabricNodeFailedAcceptance",
              "exp_alerts": [{"exp_labels": {"host": built.bad_node, "severity": "critical"},
                              "exp_annotations": dict((k, annotation(v, {"host": built.bad_node}))
                                                      for k, v in node_rule["annotations"].items())}]}]},
        # a run that ended at time 0: stale after 7 days, not before
        {"interval": "10m", "input_series": [{"series": "aifabric_run_timestamp_seconds", "values": "0+0x1300"}],
         "promql_expr_test": [
             {"expr": 'ALERTS{alertname="AifabricResultsStale"}', "eval_time": "6d", "exp_samples": []},
             {"expr": 'ALERTS{alertname="AifabricResultsStale"}', "eval_time": "8d",
              "exp_samples": [{"labels": 'ALERTS{alertname="AifabricResultsStale",alertstate="firing",'
                                         'severity="warning"}', "value": 1}]}]},
        # nothing exported: pending, then firing after its hour
        {"interval": "1m", "input_series": [{"series": 'up{job="node"}', "values": "1+0x90"}],
         "promql_expr_test": [
             {"expr": 'ALERTS{alertname="AifabricResultsMissing"}', "eval_time": "30m",
              "exp_samples": [{"labels": 'ALERTS{alertname="AifabricResultsMissing",alertstate="pending",'
                                         'severity="warning"}', "value": 1}]},
             {"expr": 'ALERTS{alertname="AifabricResultsMissing"}', "eval_time": "75m",
              "exp_samples": [{"labels": 'ALERTS{alertname="AifabricResultsMissing",alertstate="firing",'
                                         'severity="warning"}', "value": 1}]}]},
    ]}
    (tmp_path / "test.yml").write_text(yaml.safe_dump(tests))
    rc, out = run_promtool([tool, "test", "rules", "test.yml"], str(tmp_path))
    assert rc == 0 and "SUCCESS" in out, out
