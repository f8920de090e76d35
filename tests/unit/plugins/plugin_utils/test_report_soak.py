# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""report.html's burn-in soak section: the series over time of a warned/failed GPU beside its sibling GPUs.

Fleets of 8-GPU nodes built from the lent H100's real soak captures (parsers/fixtures/burnin: the healthy run for every
GPU, the run under a competing matmul for the slow one, see test_burnin_fleet) through the real records and analyses
pipeline (fleet.build_report with the default analyses).
"""
from __future__ import annotations

import json
import re

from ansible_collections.aifabric.acceptance.plugins.plugin_utils import fleet, render, report_html
from ansible_collections.aifabric.acceptance.tests.unit.plugins.plugin_utils.test_burnin_fleet import soak_records
from ansible_collections.aifabric.acceptance.tests.unit.plugins.plugin_utils.test_judgement_fleet import HEALTHY, _as_host


def soak_report(slow):
    """The report of a fleet: every node the healthy records and an 8-GPU soak; ``slow``: {host: its slow GPU}."""
    hosts = ["node-%s" % c for c in "abcd"]
    records = []
    for host in hosts:
        records += _as_host(HEALTHY, host) + soak_records(host, slow=slow.get(host))
    run = fleet.run_metadata("soak", "2026-12-06T00:00:00Z", "2026-12-06T00:02:00Z", hosts)
    return fleet.build_report(records, run)


def _embedded(page):
    match = re.search(r'<script type="application/json" id="report-data" data-mode="json">(.*?)</script>', page, re.S)
    return json.loads(match.group(1))


def test_the_failing_gpu_is_plotted_over_time_beside_its_siblings_and_only_its_node():
    report = soak_report({"node-b": 3})
    statuses = {h["host"]: h["status"] for h in report["summary"]["hosts"]}
    assert statuses == {"node-a": "pass", "node-b": "fail", "node-c": "pass", "node-d": "pass"}
    page = render.render_html(report)
    data = _embedded(page)
    [panel] = data["soak"]
    assert data["hosts"][panel["host"]][0] == "node-b" and data["soakLeft"] == 0
    assert report_html.STATUS_NAMES[panel["st"]] == "fail" and panel["flagged"] == ["3"]
    assert [(g["gpu"], g["hi"]) for g in panel["gpus"]] == [(str(i), int(i == 3)) for i in range(8)]
    slow, sibling = panel["gpus"][3], panel["gpus"][2]
    for gpu in (slow, sibling):
        assert len(gpu["t"]) == 62 and gpu["t"] == sorted(gpu["t"]) and gpu["t"][-1] > 55       # seconds, 60 s soak
        assert all(len(gpu[k]) == 62 for k in report_html.SOAK_METRICS)
    row = data["recs"][slow["r"]]
    assert data["S"][row[1]] == "gpu.soak" and data["S"][row[2]] == "3" and row[4] == 3        # the record it draws
    median = sorted(slow["tflops"])[31]
    assert median < 0.5 * sorted(sibling["tflops"])[31]             # the loaded capture: half the siblings' throughput
    assert slow["floor"] == 600 and slow["ev"] and all(name == "hw_thermal_slowdown" for _i, name in slow["ev"]) and not sibling["ev"]
    assert slow["t"][slow["ev"][0][0]] >= 19                        # the slowdown set from 20 s on
    assert "<h2>GPU burn-in soak over time</h2>" in page and "<li>node-b GPU 3 (fail) beside 7 siblings</li>" in page
    assert "function timeChart(" in page
    assert sorted((data["S"][data["recs"][i][1]], data["S"][data["recs"][i][2]]) for i in panel["bad"]) == [
        ("gpu.soak", "3"), ("gpu.soak.peers", "3")]          # the reasons the panel shows
    # the soak is a series over time: never a message-size curve
    assert not [p for p in data["plots"] if p["check"] == "gpu.soak"]


def test_a_healthy_fleet_has_no_soak_section():
    page = render.render_html(soak_report({}))
    data = _embedded(page)
    assert "soak" not in data and "soakLeft" not in data
    assert "GPU burn-in soak" not in page and "function timeChart(" not in page
    assert page.count(str(report_html.JS)) == 1                   # report.js as a page without a soak has it
    assert "of None in the inventory" not in page and "of ? in the inventory" in page     # a run without its counts


def test_the_nodes_plotted_are_capped_worst_first_and_the_rest_counted(monkeypatch):
    monkeypatch.setattr(report_html, "SOAK_NODES", 2)
    report = soak_report({"node-a": 1, "node-c": 5, "node-d": 0})
    data = report_html.build_data(report, lambda r: "")
    assert [data["hosts"][p["host"]][0] for p in data["soak"]] == ["node-a", "node-c"] and data["soakLeft"] == 1
    page = render.render_html(report)
    assert "1 more node with a warned or failed soak not plotted" in page
