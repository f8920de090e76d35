# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Baseline expectations: "fail below 95 % of baseline X", a fleet analysis that only ADDS records.

A baseline is a frozen copy of one run's headline values (kind ``run``: per host, check and
target) or of its fleet medians (kind ``medians``: per check and target), stored under a
name in the history store by ``playbooks/baseline.yml`` (:func:`history.save_baseline`).

Configuration (the ``baseline`` key of the analysis config)::

    baseline:
      name: h200-2026-11       # the baseline to hold this run against
      min_pct: 95              # a value below 95 % of the baseline fails (above 100/95 for latencies)
      status: fail             # status of a record beyond it (fail or warn)

:func:`resolve_config` loads the named baseline from the history store into the config
(``baseline.data``); :func:`analyze` itself does no I/O. For every measured, judged,
non-pairwise record with a baseline value of a metric with a direction
(:func:`compare.direction`), it adds one record ``<check>.baseline`` (``pass`` or ``fail``)
with the floor (or ceiling) in its ``expect`` and reason. Pairwise records measure links:
attribution judges those, never this analysis; nor the group screen's records (a group, not a host).

Controller-only (plugin_utils); imports nothing from Ansible.
"""

from __future__ import annotations

from ansible_collections.aifabric.acceptance.plugins.module_utils import thresholds
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import analysis_records, compare, group_screen, history

NAME = "baseline"
DEFAULT_MIN_PCT = thresholds.BASELINE_MIN_PCT
JUDGED = ("pass", "warn", "fail")


def settings(config):
    """The effective ``baseline`` settings, or None when the config has none. Raises ValueError."""
    given = (config or {}).get(NAME)
    if not given:
        return None
    if not isinstance(given, dict) or not isinstance(given.get("name"), str) or not given["name"]:
        raise ValueError("baseline must be a mapping with a name, e.g. {name: X, min_pct: 95}, got %r" % (given,))
    out = {"name": given["name"], "min_pct": given.get("min_pct", DEFAULT_MIN_PCT),
           "status": given.get("status", "fail"), "data": given.get("data")}
    pct = out["min_pct"]
    if isinstance(pct, bool) or not isinstance(pct, (int, float)) or not 0 < pct <= 100:
        raise ValueError("baseline min_pct must be a number above 0 and at most 100, got %r" % (pct,))
    if out["status"] not in ("fail", "warn"):
        raise ValueError("baseline status must be fail or warn, got %r" % (out["status"],))
    return out


def resolve_config(config, history_db):
    """The config with the named baseline loaded from the history store (``baseline.data``).
    Raises ValueError when the baseline is not there."""
    wanted = settings(config)
    if wanted is None:
        return config
    if not history_db:
        raise ValueError("baseline %r needs a history store (history_db) to read it from" % wanted["name"])
    try:
        found = history.load_baseline(history_db, wanted["name"])
    except history.HistoryError as exc:
        raise ValueError(str(exc)) from exc
    if found is None:
        names = [b["name"] for b in history.baselines(history_db)]
        raise ValueError("no baseline %r in %s (there are: %s); make one with playbooks/baseline.yml" % (
            wanted["name"], history.display_name(history_db), ", ".join(names) or "none"))
    out = dict(config)
    out[NAME] = dict(config[NAME], data=found)
    return out


def analyze(records, config):
    """Add a ``<check>.baseline`` record per measured record the baseline has values for."""
    wanted = settings(config)
    if wanted is None:
        return [], []
    base = wanted["data"]
    if not isinstance(base, dict) or not isinstance(base.get("data"), dict):
        raise ValueError("baseline %r was not loaded (resolve_config) before the analysis" % wanted["name"])
    pct = float(wanted["min_pct"])
    source = "baseline %s (%s of run %s) x %s %%" % (base["name"], base["kind"], str(base["source_run"])[:8],
                                                     ("%g" % pct))
    added, failing = [], []
    for rec in records:
        if (analysis_records.is_analysis_record(rec) or rec.get("status") not in JUDGED or rec.get("peer")
                or not rec.get("host") or group_screen.is_screen_record(rec)):
            continue    # the group screen's records measure a group, not their launcher (the screen analysis's)
        values = compare.baseline_reference(base, rec) or {}
        metrics, expect, bad = {}, {}, []
        for metric, ref in sorted(values.items()):
            now = (rec.get("metrics") or {}).get(metric)
            better = compare.direction(rec.get("check"), metric)
            if better is None or isinstance(now, bool) or not isinstance(now, (int, float)):
                continue
            metrics[metric] = now
            if better == "higher":
                limit = round(ref * pct / 100.0, 6)
                expect[metric] = {"min": limit, "source": source}
                if now < limit:
                    bad.append("%s %s < %s (%g %% of baseline %s)" % (metric, _fmt(now), _fmt(limit), pct, _fmt(ref)))
            else:
                limit = round(ref * 100.0 / pct, 6)
                expect[metric] = {"max": limit, "source": source}
                if now > limit:
                    bad.append("%s %s > %s (baseline %s / %g %%)" % (metric, _fmt(now), _fmt(limit), _fmt(ref), pct))
        if not metrics:
            continue
        status = wanted["status"] if bad else "pass"
        reason = ("below baseline %s: %s" % (base["name"], "; ".join(bad))) if bad else None
        added.append(analysis_records.record(
            NAME, "%s.baseline" % rec["check"], status, rec["host"], reason=reason, target=rec.get("target"),
            metrics=metrics, expect=expect, params={"baseline": base["name"], "min_pct": pct,
                                                    "baseline_kind": base["kind"], "source_run": base["source_run"]}))
        if bad:
            failing.append(rec["host"])
    findings = []
    if failing:
        findings.append(analysis_records.finding("baseline", None, failing, evidence={
            "baseline": base["name"], "min_pct": pct, "kind": base["kind"], "source_run": base["source_run"]}))
    return added, findings


def _fmt(value):
    return ("%.3f" % value).rstrip("0").rstrip(".") if isinstance(value, float) else str(value)
