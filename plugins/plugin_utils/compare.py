# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run-to-run comparison: regressions and improvements per host and check beyond a noise margin.

A comparison matches the measured records of this run with reference values keyed by
(host, check, target, peer) and, for every metric whose direction is known
(:func:`direction`: bandwidth and TFLOP/s higher is better, latency lower is better), calls
a change beyond ``margin_pct`` percent of the reference (default :data:`DEFAULT_MARGIN_PCT`)
a regression or an improvement. Smaller changes are noise and are not listed.

The reference is one of:
- the previous run of each host (the history store's deltas; automatic in every report with history),
- another run in the history store (by run id), or another ``results.json``,
- a baseline (``playbooks/baseline.yml``): per-host values (kind ``run``) or fleet medians per
  (check, target) (kind ``medians``).

The result is the ``comparison`` key of ``results.json`` (see docs/history.md) and a section of
``summary.md``. Controller-only (plugin_utils); imports nothing from Ansible.
"""

from __future__ import annotations

import fnmatch
import functools
import os
import re

from ansible_collections.aifabric.acceptance.plugins.module_utils import thresholds
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import analysis_records, fleet_relative, history

DEFAULT_MARGIN_PCT = thresholds.COMPARE_MARGIN_PCT
MARGIN_KEY = "_compare_margin_pct"  # a caller's margin for attach(), removed from the report there
LIST_MAX = 1000             # entries kept per list in results.json (the totals count all)
MD_ROWS = 50
HIGHER_SUFFIXES = ("_gbit_s", "_gbyte_s", "_tflops", "tflops")
LOWER_SUFFIXES = ("_us",)


@functools.lru_cache(maxsize=4096)
def direction(check, metric):
    """'higher' or 'lower' (which is better) for a metric of a check, None when it has no direction.

    The fleet-relative analysis's rules decide first; then the unit in the name: bandwidth
    (``_gbit_s``, ``_gbyte_s``) and ``tflops`` higher, latency (``_us``) lower."""
    for rule in fleet_relative.DEFAULT_RULES:
        if rule["metric"] == metric and fnmatch.fnmatchcase(check or "", rule["check"]):
            return rule["better"]
    if metric.endswith(HIGHER_SUFFIXES):
        return "higher"
    if metric.endswith(LOWER_SUFFIXES):
        return "lower"
    return None


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def check_margin(margin_pct):
    if isinstance(margin_pct, bool) or not _number(margin_pct) or not 0 <= margin_pct < 100:
        raise ValueError("compare margin_pct must be a number from 0 to below 100, got %r" % (margin_pct,))
    return float(margin_pct)


def _measured(records):
    return [r for r in records if isinstance(r, dict) and not analysis_records.is_analysis_record(r)]


def _entry(key, **extra):
    out = {"host": key[0], "check": key[1], "target": key[2] or None, "peer": key[3] or None}
    out.update(extra)
    return out


NUMBER_TYPES = (int, float)


def compare_pairs(pairs, against, margin_pct=DEFAULT_MARGIN_PCT):
    """The comparison of (key, reference {status, metrics}, current {status, metrics}) pairs.

    Returns {against, margin_pct, compared, regressions, improvements, status_changes,
    hosts: {host: {regressions, improvements}}, totals}."""
    def changes():
        for key, ref, cur in pairs:
            reference = ref.get("metrics") or {}
            yield key, ref.get("status"), cur.get("status"), (
                (metric, reference.get(metric), now) for metric, now in (cur.get("metrics") or {}).items())
    return _compare(changes(), against, margin_pct)


def _compare(changes, against, margin_pct):
    """The comparison of (key, status before, status now, [(metric, before, now)]) items."""
    margin = check_margin(margin_pct)
    regressions, improvements, status_changes = [], [], []
    hosts = {}
    compared = 0
    for key, was, now_status, metrics in changes:
        compared += 1
        if was and now_status and was != now_status:
            status_changes.append(_entry(key, before=was, now=now_status))
        for metric, before, now in metrics:
            # exact types: a bool is no measurement
            if type(now) not in NUMBER_TYPES or type(before) not in NUMBER_TYPES or before == 0:  # pylint: disable=unidiomatic-typecheck
                continue
            change_pct = 100.0 * (now - before) / abs(before)
            if abs(change_pct) <= margin:
                continue
            better = direction(key[1], metric)
            if better is None:
                continue
            worse = change_pct < 0 if better == "higher" else change_pct > 0
            item = _entry(key, metric=metric, better=better, reference=before, current=now,
                          change_pct=round(change_pct, 2))
            (regressions if worse else improvements).append(item)
            counts = hosts.setdefault(key[0], {"regressions": 0, "improvements": 0})
            counts["regressions" if worse else "improvements"] += 1
    regressions.sort(key=lambda d: (-abs(d["change_pct"]), d["host"], d["check"]))
    improvements.sort(key=lambda d: (-abs(d["change_pct"]), d["host"], d["check"]))
    status_changes.sort(key=lambda d: (d["host"], d["check"], d["target"] or "", d["peer"] or ""))
    return {
        "against": against,
        "margin_pct": margin,
        "compared": compared,
        "totals": {"regressions": len(regressions), "improvements": len(improvements),
                   "status_changes": len(status_changes)},
        "hosts": dict(sorted(hosts.items())),
        "regressions": regressions[:LIST_MAX],
        "improvements": improvements[:LIST_MAX],
        "status_changes": status_changes[:LIST_MAX],
    }


def from_deltas(deltas, margin_pct=DEFAULT_MARGIN_PCT):
    """The comparison with the previous run of each host, from the history store's deltas."""
    kept = [d for d in deltas or [] if not d.get("new")]
    if not kept:
        return None
    runs = sorted(set(d.get("previous_run") for d in kept if d.get("previous_run")))
    changes = (((d.get("host") or "", d.get("check") or "", d.get("target") or "", d.get("peer") or ""),
                d.get("previous_status"), d.get("status"),
                ((name, m["previous"], m["current"]) for name, m in (d.get("metrics") or {}).items()))
               for d in kept)
    return _compare(changes, {"kind": "previous", "name": "previous run of each host", "run_ids": runs}, margin_pct)


def against_records(records, reference, against, margin_pct=DEFAULT_MARGIN_PCT):
    """The comparison of this run's records with another run's records (same keys)."""
    index = dict((history.record_key(r), r) for r in _measured(reference))
    pairs = []
    for rec in _measured(records):
        key = history.record_key(rec)
        if key in index:
            pairs.append((key, index[key], rec))
    return compare_pairs(pairs, against, margin_pct)


def baseline_reference(baseline, record):
    """The baseline's values for a record ({metric: value}), or None when it has none."""
    if record.get("peer"):
        return None
    if baseline["kind"] == "run":
        key = "%s|%s|%s" % (record.get("host") or "", record.get("check") or "", record.get("target") or "")
    else:
        key = "%s|%s" % (record.get("check") or "", record.get("target") or "")
    return baseline["data"].get(key)


def against_baseline(records, baseline, margin_pct=DEFAULT_MARGIN_PCT):
    """The comparison of this run's records with a baseline (no statuses: a baseline holds values)."""
    pairs = []
    for rec in _measured(records):
        values = baseline_reference(baseline, rec)
        if values:
            pairs.append((history.record_key(rec), {"metrics": values}, rec))
    return compare_pairs(pairs, {"kind": "baseline", "name": baseline["name"], "baseline_kind": baseline["kind"],
                                 "run_ids": [baseline["source_run"]]}, margin_pct)


def resolve(spec, history_db=None, load_results=None):
    """What ``compare_with`` names: ('results', path, data) for an existing results.json file,
    ('baseline', name, baseline) for a baseline in the store, ('run', run_id, records) for a stored run.

    Tried in that order. Raises ValueError saying what was tried."""
    if not isinstance(spec, str) or not spec.strip():
        raise ValueError("compare_with must be a run id, a results.json path or a baseline name, got %r" % (spec,))
    if os.path.isfile(spec):
        if load_results is None:
            raise ValueError("cannot read %s" % spec)
        return "results", os.path.abspath(spec), load_results(spec)
    tried = ["no file %s" % spec]
    if history_db:
        base = None
        try:
            base = history.load_baseline(history_db, spec)
        except history.HistoryError as exc:
            tried.append(str(exc))
        if base is not None:
            return "baseline", spec, base
        try:
            _meta, rows = history.run_records(history_db, spec)
            return "run", spec, rows
        except history.HistoryError as exc:
            tried.append("no baseline and %s" % exc)
    else:
        tried.append("no history_db to look up a run id or a baseline name in")
    raise ValueError("compare_with %r names nothing: %s" % (spec, "; ".join(tried)))


def compare_with(records, spec, history_db=None, margin_pct=DEFAULT_MARGIN_PCT, load_results=None):
    """The comparison of ``records`` with what ``spec`` names (see :func:`resolve`)."""
    kind, name, ref = resolve(spec, history_db, load_results)
    if kind == "baseline":
        return against_baseline(records, ref, margin_pct)
    if kind == "results":
        run = ref.get("run") or {}
        return against_records(records, ref.get("records") or [],
                               {"kind": "results", "name": name, "run_ids": [run.get("run_id")]}, margin_pct)
    return against_records(records, ref, {"kind": "run", "name": name, "run_ids": [name]}, margin_pct)


def attach(report, margin_pct=None):
    """Set ``report['comparison']``: kept when the caller already set it (compare_with), else the
    comparison with the previous run of each host from the history deltas (None without history).
    The margin: ``margin_pct``, else the report's MARGIN_KEY (taken out of it), else the default."""
    given = report.pop(MARGIN_KEY, None)
    margin_pct = margin_pct if margin_pct is not None else (DEFAULT_MARGIN_PCT if given is None else given)
    if report.get("comparison") is None:
        report["comparison"] = from_deltas((report.get("history") or {}).get("deltas"), margin_pct)
    return report["comparison"]


# ---------------------------------------------------------------- summary.md


# ``_`` between letters or digits (``ib_write_bw``) never starts emphasis: left as it is, for readable raw text
_MD_SPECIAL = re.compile(r"([\\`*\[\]<>!|~&@]|:(?=//)|(?<![A-Za-z0-9])_|_(?![A-Za-z0-9]))")


def md_text(text):
    """Text as literal Markdown (one line): every character with Markdown or HTML meaning backslash-escaped.

    Tool output and host names are hostile input: no link, image, autolink (``https://``, ``www.``, e-mail),
    inline HTML, entity, emphasis, code span or table cell break survives (CommonMark and GitHub-flavoured).
    """
    text = "" if text is None else " ".join(str(text).split())
    return _WWW.sub(r"\1\\.", _MD_SPECIAL.sub(r"\\\1", text))


_WWW = re.compile(r"(?i)\b(www)\.")
_md = md_text


def _label(d):
    name = d["check"]
    if d.get("target"):
        name += "[%s]" % d["target"]
    if d.get("peer"):
        name += "[%s]" % d["peer"]
    return name


def _fmt(value):
    return ("%.3f" % value).rstrip("0").rstrip(".") if isinstance(value, float) else str(value)


def against_text(comparison):
    """What the run was compared with, in words, e.g. 'baseline h200-nov (medians of run 1a2b3c4d)'."""
    against = comparison["against"]
    runs = ", ".join(str(r)[:8] for r in against.get("run_ids") or [] if r)
    kind, name = against["kind"], against.get("name") or ""
    if kind == "previous":
        return "the previous run of each host" + (" (run %s)" % runs if runs else "")
    if kind == "baseline":
        return "baseline %s (%s of run %s)" % (name, against.get("baseline_kind") or "values", runs or "?")
    if kind == "run":
        return "run %s" % name
    return "%s (run %s)" % (name, runs or "?")


def md_lines(report):
    """The ``## Comparison`` section of summary.md (lines)."""
    comparison = report.get("comparison")
    out = ["## Comparison", ""]
    if not comparison:
        return out + ["No earlier run of these hosts to compare with (no history, or their first run).", ""]
    totals = comparison["totals"]
    out.append("Against %s, noise margin %s %%: %d records compared, **%d regressions**, %d improvements, "
               "%d status changes." % (_md(against_text(comparison)), _fmt(comparison["margin_pct"]),
                                       comparison["compared"], totals["regressions"], totals["improvements"],
                                       totals["status_changes"]))
    out.append("")
    for title, key in (("Regressions", "regressions"), ("Improvements", "improvements")):
        rows = comparison[key][:MD_ROWS]
        if not rows:
            continue
        out += ["### %s" % title, "", "| host | check | metric | reference | now | change |", "|---|---|---|---|---|---|"]
        for d in rows:
            out.append("| %s | %s | %s (%s is better) | %s | %s | %+.1f %% |" % (
                _md(d["host"]), _md(_label(d)), _md(d["metric"]), d["better"], _fmt(d["reference"]),
                _fmt(d["current"]), d["change_pct"]))
        if totals[key] > len(rows):
            out.append("")
            out.append("... and %d more (results.json `comparison.%s`)." % (totals[key] - len(rows), key))
        out.append("")
    return out
