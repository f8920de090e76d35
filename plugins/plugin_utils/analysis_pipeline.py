# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The analysis pipeline (stage 3 of the controller pipeline, docs/report.md): :data:`ANALYSES`, run by
:func:`analyze` once per new data (:func:`analysis_entry` / :func:`reuse_analysis`: a run_summary step's analysis,
stored in the stream, is the report's while no later entry changed the records). Each entry is a function
``analyze(records, config) -> (new_records, findings)``; it receives the measured records plus the records added
by the analyses before it, and may only ADD records (see ``analysis_records.py``). To add an analysis, write the function
and append it to ANALYSES. Controller-only (plugin_utils), no Ansible imports.
"""

from __future__ import annotations

import sys

from ansible_collections.aifabric.acceptance.plugins.module_utils import results
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import (
    analysis_records, attribution, baseline, drift, fleet_relative, hardware, peers, port_counter_links, screen_analysis, verdict)
from ansible_collections.aifabric.acceptance.plugins.plugin_utils.normalize import normalize, plain

ANALYSES = [
    drift.analyze,
    attribution.analyze,
    port_counter_links.analyze,
    screen_analysis.analyze,
    fleet_relative.analyze,
    baseline.analyze,
    hardware.analyze,
    peers.analyze,
    verdict.analyze_required,
]


def _analysis_name(func):
    """The analysis's NAME (on the function or its module, as drift.NAME), else the function name."""
    module = sys.modules.get(getattr(func, "__module__", None) or "")
    return getattr(func, "NAME", None) or getattr(module, "NAME", None) or getattr(func, "__name__", "analysis")


def strip_analysis(records):
    """The measured records only (what a re-analysis starts from)."""
    return [r for r in records if not analysis_records.is_analysis_record(r)]


def analyze(records, config=None, analyses=None, started=None):
    """Run the analysis pipeline. Returns (all records, findings, problems).

    Starts from the measured records (analysis records already present are dropped, so
    running it twice gives the same result). An analysis that raises or returns broken
    data is reported in ``problems`` and does not stop the others. ``started`` (the run's
    end time) becomes the start time of every analysis record, so a re-analysis of the
    same run writes the same records.
    """
    config = dict(config or {})
    out = strip_analysis(records)
    count = len(out)        # the measured records come first: each analysis finds them without a walk
    findings, problems = [], []
    for func in ANALYSES if analyses is None else analyses:
        name = _analysis_name(func)
        given = analysis_records.split(out, count)
        try:
            new, found = func(given, config)
        except Exception as exc:  # pylint: disable=broad-except  # one bad analysis must not lose the report
            problems.append("analysis %s failed: %s: %s" % (name, type(exc).__name__, exc))
            continue
        for rec in new or []:
            bad = results.validate(rec)
            if not analysis_records.is_analysis_record(rec):
                bad.append("tool.name is not %r" % analysis_records.TOOL_NAME)
            if bad:
                problems.append("analysis %s returned an invalid record: %s" % (name, "; ".join(bad)))
                continue
            rec = normalize(rec, rec.get("host"))
            if started:
                rec["started"] = started
            out.append(rec)
        for item in found or []:
            bad = analysis_records.validate_finding(item)
            if bad:
                problems.append("analysis %s returned an invalid finding: %s" % (name, "; ".join(bad)))
                continue
            findings.append(plain(dict(item, analysis=name)))
    return analysis_records.split(out, count), findings, problems


def analysis_entry(report, config, after):
    """The stream entry of a report's analysis (see :func:`build_report`'s ``prior``): made of ``config`` and of the
    first ``after`` entries of the stream."""
    return {"e": "analysis", "after": after, "config": plain(dict(config or {})),
            "records": analysis_records.added(report["records"]),
            "findings": report["findings"], "problems": list(report["problems"])}


def reuse_analysis(records, prior, started=None):
    """(records, findings, problems) of :func:`analyze` from a stored analysis of the same records and config."""
    added = [dict(r, started=started) if started else dict(r) for r in prior.get("records") or []]
    measured = strip_analysis(records)
    out = measured + added
    if all(analysis_records.is_analysis_record(r) for r in added):
        out = analysis_records.split(out, len(measured))
    return out, list(prior.get("findings") or []), list(prior.get("problems") or [])
