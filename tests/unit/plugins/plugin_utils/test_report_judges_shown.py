# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every record says what judged it, in report.html's rows (issue 19): a whole fleet of real 2x H100 runs
(fixtures/h100x2-judgement: a healthy node and the node whose GPU 1 was loaded), rendered as the run renders it."""

from __future__ import annotations

import copy
import json
import os

from ansible_collections.aifabric.acceptance.plugins.plugin_utils import analysis_pipeline, coverage, fleet, render
from ansible_collections.aifabric.acceptance.tests.unit.plugins.plugin_utils.test_render import _page_data

HERE = os.path.join(os.path.dirname(__file__), "fixtures", "h100x2-judgement")


def _as_host(scenario, host):
    with open(os.path.join(HERE, scenario + ".results.json"), encoding="utf-8") as fh:
        records = analysis_pipeline.strip_analysis(json.load(fh)["records"])
    out = []
    for rec in copy.deepcopy(records):
        rec["host"] = host
        if isinstance(rec.get("facts"), dict) and isinstance(rec["facts"].get("hosts"), list):
            rec["facts"]["hosts"] = [host]
        out.append(rec)
    return out


def _report(records):
    run = fleet.run_metadata("hw19", "2026-11-25T00:00:00Z", "2026-11-25T00:10:00Z", ["good", "loaded"])
    return fleet.build_report(records, run)


def _rows(data):
    """{(host, label): judged-by text} of the page's record rows (the row's last field)."""
    strings = data["S"]
    out = {}
    for row in data["recs"]:
        target = strings[row[2]]
        out[(data["hosts"][row[0]][0], strings[row[1]] + ("[%s]" % target if target else ""))] = strings[row[13]]
    return out


def test_each_record_row_names_its_judge():
    report = _report(_as_host("healthy", "good") + _as_host("loaded", "loaded"))
    assert {h["host"]: h["status"] for h in report["summary"]["hosts"]} == {"good": "pass", "loaded": "fail"}
    page = render.render_html(report)
    rows = _rows(_page_data(page))
    assert rows[("loaded", "gpu.gemm_bf16[1]")] == "fleet, peers, profile"
    assert rows[("loaded", "nccl.all_reduce")] == "hardware"
    assert rows[("good", "nccl.all_reduce")] == "hardware"
    assert rows[("loaded", "nccl.all_reduce.hardware")] == "hardware (analysis)"
    assert rows[("loaded", "gpu.gemm_bf16.peers[1]")] == "peers (analysis)"
    # the static problems (before the script runs) carry the same words
    assert '<th>judged by</th>' in page
    assert '<td class="j">hardware (analysis)</td>' in page


def test_an_unjudged_headline_figure_says_so_in_its_row():
    bare = [r for r in _as_host("healthy", "good") if r["check"] != "gpu.device"]
    report = _report(bare)
    rows = _rows(_page_data(render.render_html(report)))
    assert rows[("good", "nccl.all_reduce")] == "unjudged"
    assert rows[("good", "gpu.gemm_bf16[0]")] == "peers, profile"
    judges = coverage.record_judges(report["records"])
    assert sum(1 for r in report["records"] if judges.get(id(r)) == "unjudged") == report["summary"]["judgement"][
        "unjudged_total"] == 8
