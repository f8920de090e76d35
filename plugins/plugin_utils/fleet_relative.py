# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fleet-relative expectations: flag a result far worse than the fleet's median of the same check and shape.

A node can pass every absolute floor and still be the one slow node that drags a
training job down; an absolute floor may not exist at all for new hardware. This
analysis compares each measured value with the median of the same check, the same
shape (``facts.shape``: message/matrix shape, node and rank counts, forced NCCL
algorithm) and the same GPU model, and flags values beyond a robust margin:

    margin = max(k x 1.4826 x MAD, min_drop_pct % of the median)

(MAD = median absolute deviation; 1.4826 x MAD estimates the standard deviation of
normal data without being moved by the outliers themselves.) A value below
``median - margin`` (above ``median + margin`` for lower-is-better metrics such as
latencies) gets an added record ``<check>.fleet`` with status ``fail`` (configurable),
the median and the margin in its reason. Measured records are never rewritten.

Pairwise records (those with a ``peer``: perftest between two hosts) measure a link, not
a host: the attribution analysis owns their verdicts (node or link, over the whole
matrix), so this analysis never judges them; a pairwise rule here would make every host
that happened to be paired with a slow node a fleet outlier. Nor the group screen's records
(a collective over a group measures the group, not its launcher: the screen analysis's).

Configuration (the ``fleet_relative`` key of the analysis config; all optional):

    enabled: true
    k: 3.0                  # MADs (scaled) beyond the median
    min_drop_pct: 5.0       # never flag a value within this % of the median
    min_samples: 4          # a smaller group is not judged (too few to know the fleet)
    status: fail            # status of the added records (fail or warn)
    rules:                  # which metric of which checks; replaces the defaults below
      - {check: "gpu.gemm_*", metric: tflops, better: higher}

Controller-only (plugin_utils); imports nothing from Ansible.
"""

from __future__ import annotations

import collections
import fnmatch

from ansible_collections.aifabric.acceptance.plugins.module_utils import thresholds
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import analysis_records, group_screen

NAME = "fleet_relative"
MAD_SCALE = 1.4826
DEFAULTS = thresholds.FLEET_RELATIVE     # the numbers and their sources live in module_utils/thresholds.py
DEFAULT_RULES = (
    {"check": "nccl.*", "metric": "busbw_max_gbyte_s", "better": "higher"},
    {"check": "hccl.*", "metric": "busbw_max_gbyte_s", "better": "higher"},
    {"check": "gpu.gemm_*", "metric": "tflops", "better": "higher"},
    {"check": "rdma.*_bw", "metric": "bw_avg_gbit_s", "better": "higher"},
    {"check": "rdma.*_lat", "metric": "lat_typical_us", "better": "lower"},
)
JUDGED = ("pass", "warn", "fail")


def median(values):
    ordered = sorted(values)
    n = len(ordered)
    if n == 0:
        raise ValueError("median of nothing")
    mid = n // 2
    return float(ordered[mid]) if n % 2 else (ordered[mid - 1] + ordered[mid]) / 2.0


def settings(config):
    """The effective settings (defaults overlaid with config['fleet_relative'])."""
    given = (config or {}).get(NAME) or {}
    out = dict(DEFAULTS)
    out.update(dict((k, v) for k, v in given.items() if k != "rules"))
    out["rules"] = list(given.get("rules") or DEFAULT_RULES)
    if out["status"] not in ("fail", "warn"):
        raise ValueError("fleet_relative status must be fail or warn, got %r" % (out["status"],))
    for rule in out["rules"]:
        if rule.get("better", "higher") not in ("higher", "lower") or not rule.get("check") or not rule.get("metric"):
            raise ValueError("fleet_relative rule needs check, metric and better: higher|lower, got %r" % (rule,))
    return out


def _model(record):
    facts = record.get("facts") or {}
    model = facts.get("gpu_model") or facts.get("gpu_models")
    if isinstance(model, list):
        model = ",".join(str(m) for m in model)
    return model or None


def group_key(record):
    """(check, shape, gpu model): what makes two results comparable."""
    facts = record.get("facts") or {}
    return (record.get("check"), facts.get("shape"), _model(record))


def _describe(key):
    check, shape, model = key
    parts = [p for p in (shape, model) if p]
    return "%s [%s]" % (check, ", ".join(parts)) if parts else check


def _fmt(value):
    return ("%.3f" % value).rstrip("0").rstrip(".")


def _samples(records, rules):
    """{(check, shape, gpu model, metric, better): [(record, value)]} of the judged, non-pairwise records."""
    samples = {}
    matching = {}       # (check, rule's pattern) -> whether it matches: few distinct checks, asked once each
    for rec in analysis_records.measured(records):
        if rec.get("status") not in JUDGED or rec.get("peer") or group_screen.is_screen_record(rec):
            continue    # analysis records, unjudged records, pairwise records (attribution owns them) and the
            #             group screen's (a group's measurement: the screen analysis owns them)
        check = str(rec.get("check"))
        for rule in rules:
            key = (check, rule["check"])
            hit = matching.get(key)
            if hit is None:
                hit = matching[key] = fnmatch.fnmatchcase(check, rule["check"])
            if not hit:
                continue
            value = (rec.get("metrics") or {}).get(rule["metric"])
            if isinstance(value, bool) or not isinstance(value, (int, float)):
                continue
            key = group_key(rec) + (rule["metric"], rule.get("better", "higher"))
            samples.setdefault(key, []).append((rec, float(value)))
    return samples


Fleet = collections.namedtuple("Fleet", "median mad margin limit")


def fleet_limit(values, better, k, min_drop_pct):
    """The fleet's median, MAD, margin and limit of one group of values (see the module docstring)."""
    mid = median(values)
    mad = median([abs(v - mid) for v in values])
    margin = max(k * MAD_SCALE * mad, abs(mid) * float(min_drop_pct) / 100.0)
    return Fleet(mid, mad, margin, mid - margin if better == "higher" else mid + margin)


def _outlier_record(rec, value, key, fleet, count, opts):
    """The ``<check>.fleet`` record of one value beyond the fleet's limit."""
    metric, better = key[3], key[4]
    sign = "-" if better == "higher" else "+"
    off_pct = abs(value - fleet.median) / abs(fleet.median) * 100.0 if fleet.median else 0.0
    reason = ("%s %s is %s%% %s the fleet median %s of %s over %d results (limit %s = median %s margin %s; "
              "margin = max(%s x 1.4826 x MAD %s, %s%% of the median))" % (
                  metric, _fmt(value), _fmt(off_pct), "below" if better == "higher" else "above", _fmt(fleet.median),
                  _describe(key[:3]), count, _fmt(fleet.limit), sign, _fmt(fleet.margin), _fmt(opts["k"]),
                  _fmt(fleet.mad), _fmt(float(opts["min_drop_pct"]))))
    rule = {"min": fleet.limit} if better == "higher" else {"max": fleet.limit}
    rule["source"] = "fleet median %s %s margin %s (%d results)" % (_fmt(fleet.median), sign, _fmt(fleet.margin), count)
    return analysis_records.record(
        NAME, "%s.fleet" % rec["check"], opts["status"], rec.get("host"), reason=reason,
        target=rec.get("target"),
        metrics={metric: value, "fleet_median": fleet.median, "fleet_mad": fleet.mad, "fleet_margin": fleet.margin,
                 "deviation_pct": off_pct, "samples_count": count},
        expect={metric: rule},
        facts={"measured_check": rec["check"], "metric": metric, "better": better,
               "shape": key[1], "gpu_model": key[2]},
        started=rec.get("started"))


def analyze(records, config):
    """Return (new_records, findings): one ``<check>.fleet`` record per outlier."""
    opts = settings(config)
    if not opts["enabled"]:
        return [], []
    samples = _samples(records, opts["rules"])
    new, findings = [], []
    for key in sorted(samples, key=lambda k: tuple(str(x) for x in k)):
        group = samples[key]
        if len(group) < int(opts["min_samples"]):
            continue
        better = key[4]
        fleet = fleet_limit([v for _rec, v in group], better, opts["k"], opts["min_drop_pct"])
        outliers = [(rec, value) for rec, value in group
                    if (value < fleet.limit if better == "higher" else value > fleet.limit)]
        new.extend(_outlier_record(rec, value, key, fleet, len(group), opts) for rec, value in outliers)
        if outliers:
            findings.append(analysis_records.finding(
                "fleet_outlier", key[0], [rec.get("host") for rec, _value in outliers if rec.get("host")], evidence={
                    "metric": key[3], "shape": key[1], "gpu_model": key[2], "median": fleet.median, "mad": fleet.mad,
                    "margin": fleet.margin, "limit": fleet.limit, "samples": len(group), "better": better}))
    return new, findings
