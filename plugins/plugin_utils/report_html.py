# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""report.html: one self-contained page that a person hunting the bad node reads.

The page is static HTML for what must be seen first (verdict header, run metadata, findings with
their evidence as readable rows, the host table) plus the data of the run embedded ONCE, compactly
(a string table and rows of small integers; gzip + base64 when large), from which inline JavaScript
renders on demand: the problems list (filterable), per-host drill-down (expanded lazily), bandwidth
vs message size plots (fleet median, p10-p90 band, expectation line, log2 size axis in human units),
per-rail pairwise heat maps coloured against the expectation, per-GPU GEMM bars and latency
histograms. No network: the JavaScript, CSS and Jinja2 template are package files written for this page
(``report_assets/``, shipped in the collection; no third-party asset).

Everything from a tool or a host reaches the page either through Jinja2 autoescape, or as JSON
inside a ``<script type="application/json">`` block with ``<``, ``>`` and ``&`` written as \\u escapes,
and the JavaScript only ever puts it into the page with ``textContent`` (never ``innerHTML``).

Controller-only (plugin_utils), no Ansible types.
"""

from __future__ import annotations

import base64
import gzip
import json
import math
import os

from jinja2 import Environment
from markupsafe import Markup

from ansible_collections.aifabric.acceptance.plugins.module_utils import results, thresholds
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import compare, coverage, port_counter_links, verdict
from ansible_collections.aifabric.acceptance.plugins.plugin_utils.summary import plural

STATUS_CODE = {"pass": 0, "skip": 1, "warn": 2, "fail": 3, "error": 4}
STATUS_NAMES = ["pass", "skip", "warn", "fail", "error"]
# The curves: per series family (results.SERIES_FAMILIES, the mirror of docs/results.schema.json's x-plot), its x
# column and the y columns drawn against it, the first with a number in some row wins: {family: (x, (y, ...))}. A
# family without y columns (latency) and a check of no family are not drawn.
SERIES_PLOT = dict((name, (family["x"], tuple(family["plot"]))) for name, family in results.SERIES_FAMILIES.items())
HEAT_METRICS = ("bw_avg_gbit_s", "busbw_max_gbyte_s", "lat_typical_us")
HEAT_FULL_MAX = 300          # hosts of a matrix drawn cell by cell; above, hosts are binned (worst pair per block)
HEAT_BINS = 200
HEAT_WORST = 20
FLAGGED_CURVES = 10
PASSING_PAIRS_LISTED = 60000  # above this many passing pairwise records, they are not listed per host
CURVES_PER_GROUP = 20000      # above this many curves in a group, only the band and the flagged curves are kept
COMPRESS_ABOVE = 1500000      # bytes of JSON above which the data is embedded gzip + base64
FINDINGS_SHOWN = 300
PROBLEMS_STATIC = 100
# The burn-in soak's series over time (family "soak": x t_ms): drawn per node, not as message-size curves. Only the
# nodes where a GPU's gpu.soak / gpu.soak.peers record warns or fails, that GPU highlighted beside its siblings; at most
# SOAK_NODES nodes (worst first; the page says how many more). A series holds at most thresholds.SOAK["series_points"]
# (120) windows per GPU.
SOAK_FAMILY = "soak"
SOAK_CHECKS = ("gpu.soak", "gpu.soak.peers")
SOAK_METRICS = ("tflops", "power_w", "temperature_c", "sm_clock_mhz")
SOAK_NODES = 8
KIND_ORDER = {"node": 0, "group": 1, "link": 2, "peers": 3, "hardware": 4, "required_not_run": 5, "drift": 6,
              "fleet_outlier": 7}


_NUMBERS = (int, float)


def _num(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def rnd(value, digits=4):
    """A float with ``digits`` significant digits (371.35499999999996 -> 371.4); ints unchanged."""
    if isinstance(value, float) and math.isfinite(value):
        if value == 0:
            return 0
        out = float("%.*g" % (digits, value))
        return int(out) if out.is_integer() and abs(out) < 1e15 else out
    return value


def fmt(value, digits=4):
    """Human text of a value: rounded numbers, compact JSON for structures."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        value = rnd(value, digits)
    if isinstance(value, (dict, list)):
        return json.dumps(_rounded(value), sort_keys=True, ensure_ascii=False, separators=(", ", ": "), default=str)
    if value is None:
        return "-"
    return str(value)


def _rounded(value):
    if isinstance(value, float):
        return rnd(value, 6)
    if isinstance(value, dict):
        return dict((k, _rounded(v)) for k, v in value.items())
    if isinstance(value, list):
        return [_rounded(v) for v in value]
    return value


def label(record):
    """check[target][peer]: the name of a record in tables, junit and the drill-down."""
    name = record.get("check") or "?"
    if record.get("target"):
        name += "[%s]" % record["target"]
    if record.get("peer"):
        if not record.get("target"):
            name += "[-]"
        name += "[%s]" % record["peer"]
    return name


def judged_pair(rec, counted):
    """A pairwise record that attribution judged, or a port record whose errors a link explains (port_counter_links):
    it counts toward no host (docs/results.md); junit.xml and ctrf.json show its fail/error/warn as a passing case
    that names its own status and what judged it (:func:`judged_by`)."""
    return (bool(rec.get("peer")) or rec.get("check") == port_counter_links.CHECK) and id(rec) not in counted


def judged_by(rec):
    """(the analysis, the records that carry the verdict) of a record :func:`judged_pair` says yes to."""
    if rec.get("check") == port_counter_links.CHECK:
        return port_counter_links.NAME, port_counter_links.LINK_CHECK
    return "attribution", "%s.node / %s.link" % (rec.get("check"), rec.get("check"))


def counted_ids(records):
    """ids of the records that count toward a host's verdict (verdict.host_records), for the records
    list of the report being rendered (render.write_report computes them once and gives them to its writers)."""
    ids = set()
    for recs in verdict.host_records(records).values():
        ids.update(id(r) for r in recs)
    return ids


# ---------------------------------------------------------------- findings as readable rows


def _hosts_text(hosts, limit=8):
    hosts = list(hosts or [])
    return ", ".join(hosts[:limit]) + (" and %d more" % (len(hosts) - limit) if len(hosts) > limit else "")


def _pairs_text(mapping, limit=6):
    items = list((mapping or {}).items())
    text = ", ".join("%s %s" % (k, fmt(v)) for k, v in items[:limit])
    return text + (" ..." if len(items) > limit else "")


def _count(value, word):
    """A count from an analysis' evidence with its noun (a count that is not an int is shown as it is)."""
    return plural(value, word) if isinstance(value, int) and not isinstance(value, bool) else "%s %ss" % (fmt(value), word)


def _node_text(ev, _hosts):
    if ev.get("text"):
        return str(ev["text"])        # a finding that makes its own sentence (port_counter_links)
    text = "%s: %s of %s low (%s failed); %s fleet median %s, limit %s" % (
        "suspect node, needs confirmation (too few known-good peers are low with it)" if ev.get("needs_confirmation")
        else "suspect node", fmt(ev.get("low_pairs")), _count(ev.get("pairs"), "pair"), fmt(ev.get("failed_pairs")), ev.get("metric") or "",
        fmt(ev.get("fleet_median")), fmt(ev.get("limit")))
    if ev.get("low_peers"):
        text += "; low with: " + _pairs_text(ev["low_peers"])
    if ev.get("good_peers"):
        text += "; good with: " + _hosts_text(ev["good_peers"], 4)
    return text


def _link_text(ev, hosts):
    if ev.get("text"):
        return str(ev["text"])        # a finding that makes its own sentence (port_counter_links)
    text = "%s link %s: %s %s vs fleet median %s (limit %s)%s" % (
        "suspect" if not ev.get("needs_confirmation") else "unconfirmed low",
        " <-> ".join(hosts), ev.get("metric") or "", fmt(ev.get("value")), fmt(ev.get("fleet_median")),
        fmt(ev.get("limit")), "; failed its expectation" if ev.get("failed") else "")
    if ev.get("needs_confirmation"):
        text += "; needs the confirmation pass (node or link cannot be told apart yet)"
    if ev.get("errors"):
        text += "; errors: " + "; ".join(str(e) for e in ev["errors"])
    return text


def _drift_text(ev, _hosts):
    sizes = ev.get("group_sizes") or {}
    total = sum(v for v in sizes.values() if isinstance(v, int))
    expected = ev.get("expected")
    others = [(value, sizes.get(value, 0), (ev.get("groups") or {}).get(value) or [])
              for value in sizes if value != expected]
    others.sort(key=lambda x: x[1])
    return "%s: expected %s (%s, %s of %s); %s" % (
        ev.get("subject") or ev.get("fact"), fmt(expected), ev.get("source") or "majority",
        fmt(sizes.get(expected)) if expected in sizes else "0", plural(total, "host"),
        "; ".join("%s on %s (%s)" % (fmt(v), plural(n, "host"), _hosts_text(hs, 5))
                  for v, n, hs in others[:5]) or "no deviating host")


def _outlier_text(ev, _hosts):
    return "%s below the fleet: median %s, limit %s (%s%s)" % (
        ev.get("metric") or "", fmt(ev.get("median")), fmt(ev.get("limit")), _count(ev.get("samples"), "sample"),
        (", %s" % ev["shape"]) if ev.get("shape") else "")


def _hardware_text(ev, _hosts):
    if ev.get("text"):
        return str(ev["text"])        # an RDMA pair's judgement: its sentence (node or link) is made by hardware.py
    return "busbw %s GB/s < %s GB/s expected at %s ranks (%s)" % (
        fmt(ev.get("busbw_max_gbyte_s")), fmt(ev.get("expected_min")), fmt(ev.get("ranks")), ev.get("derivation") or "")


def _peers_text(ev, _hosts):
    return str(ev.get("text") or _evidence_text(ev, _hosts))


def _evidence_text(ev, _hosts):
    return "; ".join("%s: %s" % (k, fmt(v)[:200]) for k, v in sorted(ev.items()))


# kind -> (its status: a word, or a function of the evidence; its sentence: a function of (evidence, hosts));
# a kind not listed is a warn whose evidence is listed field by field
_FINDING_KINDS = {
    "node": (lambda ev: "warn" if ev.get("needs_confirmation") else "fail", _node_text),
    "link": ("warn", _link_text),
    "drift": (lambda ev: ev.get("status") or "warn", _drift_text),
    "fleet_outlier": ("warn", _outlier_text),
    "required_not_run": ("fail", _evidence_text),
    "hardware": (lambda ev: ev.get("status") or "fail", _hardware_text),
    "peers": (lambda ev: ev.get("status") or "fail", _peers_text),
    "group": ("warn", _peers_text),       # attribution's shared-path finding: its sentence is in the evidence
}
_OTHER_KIND = ("warn", _evidence_text)


def unjudged_rows(judgement):
    """The unjudged headline figures grouped by check and reason: [{check, why, hosts}] (a fleet's many hosts with
    the same gap are one row)."""
    groups = {}
    for item in (judgement or {}).get("unjudged") or []:
        key = (str(item.get("check") or ""), str(item.get("why") or ""))
        target = "%s[%s]" % (item.get("host"), item.get("target")) if item.get("target") not in (None, "") \
            else str(item.get("host"))
        groups.setdefault(key, []).append(target)
    return [{"check": check, "why": why, "hosts": hosts} for (check, why), hosts in sorted(groups.items())]


def finding_row(item):
    """{kind, status, check, target, hosts, text}: what one finding says, in one readable sentence."""
    ev = item.get("evidence") or {}
    kind = item.get("kind") or "?"
    hosts = item.get("hosts") or []
    status, sentence = _FINDING_KINDS.get(kind, _OTHER_KIND)
    status = status(ev) if callable(status) else status
    text = sentence(ev, hosts)
    return {"kind": kind, "status": status, "check": item.get("check") or "", "target": item.get("target") or "",
            "hosts": list(hosts), "text": text[:1200]}


def finding_rows(findings):
    """Readable rows, worst kinds first; the findings of one kind, check and hosts on several targets (a bad
    node on every rail) become one row that names the targets."""
    rows = [finding_row(f) for f in findings or []]
    rows.sort(key=lambda r: (KIND_ORDER.get(r["kind"], 9), -results.SEVERITY.get(r["status"], 0), r["check"],
                             r["hosts"], r["target"]))
    out = []
    for row in rows:
        last = out[-1] if out else None
        if last and (last["kind"], last["status"], last["check"], last["hosts"]) == (
                row["kind"], row["status"], row["check"], row["hosts"]) and row["target"]:
            last["targets"].append(row["target"])
            continue
        out.append(dict(row, targets=[row["target"]] if row["target"] else []))
    for row in out:
        if len(row["targets"]) > 1:
            row["text"] = "on %d targets (%s); on %s: %s" % (
                len(row["targets"]), ", ".join(row["targets"]), row["targets"][0], row["text"])
            row["target"] = "%s .. %s" % (row["targets"][0], row["targets"][-1])
    return out


# ---------------------------------------------------------------- the embedded data


_ENCODER = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str)


def _one_encoder(encoder):
    """``encoder.encode`` made once: JSONEncoder.encode builds a new C encoder on every call, which cost more
    than the encoding itself for the ~100,000 small values of a 1000-host page. The same C encoder, built here
    once (no circular check: the values are records read from JSON), or ``encoder.encode`` where there is none."""
    make = getattr(json.encoder, "c_make_encoder", None)
    basestring = getattr(json.encoder, "c_encode_basestring", None)
    if make is None or basestring is None:
        return encoder.encode
    c_encode = make(None, encoder.default, basestring, None, encoder.key_separator, encoder.item_separator,
                    encoder.sort_keys, encoder.skipkeys, encoder.allow_nan)

    def encode(value):
        return "".join(c_encode(value, 0))
    return encode


_ENCODE = _one_encoder(_ENCODER)


class _Table:
    """A string table: each distinct string stored once, referred to by its index."""

    def __init__(self):
        self.items = [""]
        self.index = {"": 0}

    def __call__(self, text):
        if text is None:
            return 0
        if type(text) is not str:     # pylint: disable=unidiomatic-typecheck
            text = _ENCODE(text) if not isinstance(text, str) else text
        got = self.index.get(text)
        if got is None:
            got = self.index[text] = len(self.items)
            self.items.append(text)
        return got


def _percentile(sorted_values, pct):
    if not sorted_values:
        return None
    pos = (len(sorted_values) - 1) * pct / 100.0
    low = int(math.floor(pos))
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (pos - low)


def _series_keys(check, series):
    """(x column, y column) of a record's series, from its family's schema (SERIES_PLOT): the first of the family's
    y columns with a number in some row; (None, None) for a family that is not drawn, or a series without one."""
    family = results.series_family(check)
    if family == SOAK_FAMILY:           # a series over time: the soak section draws it (_soak), not the size plots
        return None, None
    x_key, y_keys = SERIES_PLOT.get(family, (None, ()))
    rows = [r for r in series if isinstance(r, dict)]
    ykey = next((k for k in y_keys if any(_num(r.get(k)) is not None for r in rows)), None)
    return (x_key, ykey) if ykey else (None, None)


def _unit(name):
    for suffix in ("_gbyte_s", "_gbit_s", "_mbyte_s", "_mib_s", "_us", "_tflops"):
        if name.endswith(suffix):
            return suffix
    return ""


def _expect_line(records, ykey):
    """The expectation to draw on a curve: per-size floors (``metric@size`` rules) and one floor line
    (a ``min`` rule on a metric of the same unit and kind as the plotted column)."""
    unit = _unit(ykey)
    stem = ykey.replace("oop_", "").replace("ip_", "").split("_")[0]
    floors, points = [], {}
    for rec in records[:200]:
        for name, rule in (rec.get("expect") or {}).items():
            if not isinstance(rule, dict) or _num(rule.get("min")) is None:
                continue
            base, _sep, at = name.partition("@")
            if unit and _unit(base) != unit and not (unit == "" and base == ykey):
                continue
            if stem not in base and base != ykey:
                continue
            if at:
                try:
                    points[float(at)] = rule["min"]
                except ValueError:
                    pass
            else:
                floors.append(rule["min"])
    floor = sorted(floors)[len(floors) // 2] if floors else None
    return floor, sorted(points.items())


def _series_points(series, xkey, ykey):
    """{size: value} of a series' rows whose size is a positive number and value a finite number."""
    points = {}
    for row in series:
        if type(row) is dict:   # pylint: disable=unidiomatic-typecheck  # (hot loop: exact types are plain JSON)
            x, y = row.get(xkey), row.get(ykey)
            if type(x) in _NUMBERS and type(y) in _NUMBERS and x > 0 and math.isfinite(y):  # pylint: disable=unidiomatic-typecheck
                points[x] = y
    return points


def _curve_groups(records):
    """{(check, target, y column): [(record, x column, {size: value}), ...]}: the curves of records with a series
    of at least two points."""
    groups = {}
    for rec in records:
        series = rec.get("series")
        if not series:
            continue
        xkey, ykey = _series_keys(rec.get("check"), series)
        if not xkey or not ykey:
            continue
        points = _series_points(series, xkey, ykey)
        if len(points) >= 2:
            groups.setdefault((rec["check"], rec.get("target") or "", ykey), []).append((rec, xkey, points))
    return groups


def _band(items, sizes, col):
    """Fleet median, p10 and p90 of the curves at each size."""
    per_size = [[] for _size in sizes]
    for _rec, _xk, pts in items:
        for x, y in pts.items():
            per_size[col[x]].append(y)
    for values in per_size:
        values.sort()
    return ([rnd(_percentile(v, 50)) for v in per_size], [rnd(_percentile(v, 10)) for v in per_size],
            [rnd(_percentile(v, 90)) for v in per_size])


def _flagged_curves(items, top, med_top):
    """The curves to point out: failed/errored/warned ones lowest first (at most FLAGGED_CURVES), plus, when fewer
    than 3, up to 3 of the lowest curves that end 10% below the fleet median (``top``: the largest size)."""
    def at_max(item):
        pts = item[2]
        return pts.get(top, min(pts.values()))

    ranked = sorted(items, key=at_max)
    flagged = [it for it in ranked if it[0].get("status") in ("fail", "error", "warn")][:FLAGGED_CURVES]
    if len(flagged) < 3 and len(items) > 3 and med_top:
        flagged += [it for it in ranked[:3] if at_max(it) < 0.9 * med_top and it not in flagged]
    return flagged


def _plot(check, target, ykey, items, rec_index, strings):
    """One plot of a group of curves, or None (more than 64 sizes)."""
    sizes = sorted(set(x for _r, _xk, pts in items for x in pts))
    if len(sizes) > 64:
        return None
    col = dict((x, i) for i, x in enumerate(sizes))
    med, p10, p90 = _band(items, sizes, col)
    flagged = _flagged_curves(items, sizes[-1], med[-1])
    curves = []
    keep = items if len(items) <= CURVES_PER_GROUP else flagged
    for rec, _xk, pts in keep:
        ys = [pts.get(x) for x in sizes]        # the page rounds for display
        curves.append([rec_index[id(rec)], strings(ys)])
    floor, points = _expect_line([it[0] for it in items], ykey)
    return {"check": check, "target": target, "x": items[0][1], "y": ykey, "n": len(items),
            "sizes": [rnd(x) for x in sizes], "med": med, "p10": p10, "p90": p90,
            "floor": rnd(floor) if floor is not None else None,
            # at the size as the page has it (rnd(8589934592.0) would be 8.59e9, a size the axis does not have)
            "floorAt": [[rnd(sizes[col[x]]), rnd(v)] for x, v in points if x in col],
            "flagged": [rec_index[id(it[0])] for it in flagged], "curves": curves}


def _plots(records, rec_index, strings):
    out = []
    for (check, target, ykey), items in sorted(_curve_groups(records).items()):
        plot = _plot(check, target, ykey, items, rec_index, strings)
        if plot is not None:
            out.append(plot)
    return out


def _soak_gpu(rec, row, flagged):
    """One GPU of a soak panel: its series as columns (t in seconds), the windows where a hardware/thermal clock event
    reason of thresholds.GPU_CLOCK_EVENT_REASONS was active (``ev``: [window, reasons]), ``hi`` 1 for the GPU whose
    record warned or failed, ``floor`` its expected minimum TFLOP/s when it has one."""
    rows = [r for r in rec.get("series") or [] if isinstance(r, dict) and _num(r.get("t_ms")) is not None]
    gpu = {"r": row, "gpu": str(rec.get("target") or "-"), "st": STATUS_CODE.get(rec.get("status"), 4),
           "hi": 1 if flagged else 0, "t": [rnd(r["t_ms"] / 1000.0, 4) for r in rows]}
    for name in SOAK_METRICS:
        gpu[name] = [rnd(_num(r.get(name)), 4) if _num(r.get(name)) is not None else None for r in rows]
    events = []
    for i, r in enumerate(rows):
        active = [x for x in str(r.get("reasons") or "").split(",") if x in _SLOWDOWN_REASONS]
        if active:
            events.append([i, ",".join(active)])
    gpu["ev"] = events
    rule = (rec.get("expect") or {}).get("tflops")
    if isinstance(rule, dict) and _num(rule.get("min")) is not None:
        gpu["floor"] = rnd(rule["min"])         # the throughput floor it was judged against
    return gpu


_SLOWDOWN_REASONS = frozenset(r[0] for r in thresholds.GPU_CLOCK_EVENT_REASONS)


def _soak(records, rec_index, host_idx):
    """(the soak panels: per node with a warned/failed gpu.soak or gpu.soak.peers record, every GPU's series, that
    GPU highlighted, ``bad`` the rows of those records (their reasons), at most SOAK_NODES nodes worst first; how many
    such nodes were left out)."""
    flagged, series, bad = {}, {}, {}
    for rec in records:
        check = rec.get("check")
        if check not in SOAK_CHECKS or id(rec) not in rec_index:
            continue
        host = rec.get("host") or ""
        if rec.get("status") in ("warn", "fail"):
            got = flagged.setdefault(host, {})
            target = str(rec.get("target") or "-")
            got[target] = max(got.get(target, 0), STATUS_CODE[rec["status"]])
            bad.setdefault(host, []).append(rec_index[id(rec)])
        if check == "gpu.soak" and rec.get("series") and _measured(rec):
            series.setdefault(host, []).append(rec)
    nodes = sorted((h for h in flagged if series.get(h)),
                   key=lambda h: (-max(flagged[h].values()), host_idx.get(h, 0)))
    panels = []
    for host in nodes[:SOAK_NODES]:
        recs = sorted(series[host], key=lambda r: (len(str(r.get("target"))), str(r.get("target"))))
        gpus = [_soak_gpu(r, rec_index[id(r)], str(r.get("target") or "-") in flagged[host]) for r in recs]
        panels.append({"host": host_idx.get(host, -1), "st": max(flagged[host].values()), "gpus": gpus,
                       "flagged": sorted(flagged[host], key=lambda g: (len(g), g)), "bad": sorted(bad[host])})
    return panels, len(nodes) - len(panels)


def _measured(rec):
    """A record a tool measured: the heat maps, GEMM bars and latency histograms draw measurements; an analysis's
    records (``.link``, ``.hardware``, ``.peers``: judgements of those measurements) are not drawn again."""
    return (rec.get("tool") or {}).get("name") != "fleet-analysis"


def _pair_groups(records):
    """{(check, target): measured pairwise records}, without the ``.server`` side of a check whose client side is
    there (the client's matrix shows those pairs); an analysis's records naming a peer (``.link``, ``.hardware``)
    are judgements of those pairs, not a matrix of their own."""
    groups = {}
    for rec in records:
        if rec.get("peer") and _measured(rec):
            groups.setdefault((rec["check"], rec.get("target") or ""), []).append(rec)
    checks = set(c for c, _t in groups)
    return dict((key, recs) for key, recs in groups.items()
                if not (key[0].endswith(".server") and key[0][:-len(".server")] in checks))


def _heat_metric(recs):
    """The metric a matrix is coloured by: the first of HEAT_METRICS that one of its first 500 records has."""
    return next((m for m in HEAT_METRICS if any(_num((r.get("metrics") or {}).get(m)) is not None
                                                for r in recs[:500])), None)


def _heat_values(recs, metric, lower):
    """(each record's value of the metric or None, the expectation bounds on it: max when lower is better, else min)."""
    values = []
    bounds = []
    bound = "max" if lower else "min"
    for rec in recs:
        values.append(_num((rec.get("metrics") or {}).get(metric)) if metric else None)
        rule = (rec.get("expect") or {}).get(metric) if metric else None
        if isinstance(rule, dict) and _num(rule.get(bound)) is not None:
            bounds.append(rule[bound])
    return values, bounds


def _heat_ratio(value, ref, lower, status):
    """A pair's value against the reference (1 = as expected; lower is worse), or 0 / -1 (no value: bad / not bad)."""
    if value is None or not ref:
        return 0 if status >= 3 else -1
    return (ref / value if value else 0.0) if lower else value / ref


def _heat_blocks(recs, values, pos, size, ref, lower):
    """({(block row, block column): (score, ratio, status) of its worst pair}, [(score, i, j, value, status)] sorted
    worst first). The score is the ratio (9 when none), 10 less for a failed or errored pair."""
    blocks = {}
    worst = []
    for rec, value in zip(recs, values):
        status = STATUS_CODE.get(rec.get("status"), 4)
        ratio = _heat_ratio(value, ref, lower, status)
        i, j = pos[rec.get("host") or ""], pos[rec["peer"]]
        key = (i // size, j // size)
        score = (ratio if ratio >= 0 else 9.0) - (10 if status >= 3 else 0)
        old = blocks.get(key)
        if old is None or score < old[0]:
            blocks[key] = (score, ratio, status)
        worst.append((score, i, j, value, status))
    worst.sort()
    return blocks, worst


def _heat_axis(names, host_idx, binned, size):
    """The hosts of the axis (host indexes), or of each bin of ``size`` hosts ([first, last]) when binned."""
    if not binned:
        return [host_idx.get(h, -1) for h in names]
    n = len(names)
    return [[host_idx.get(names[b], -1), host_idx.get(names[min(b + size, n) - 1], -1)] for b in range(0, n, size)]


def _heat_matrix(check, target, recs, host_idx):
    """One pairwise matrix: cells coloured by the ratio of each pair's value to the expectation (else the fleet
    median), binned (worst pair per block) above HEAT_FULL_MAX hosts, and its worst pairs."""
    metric = _heat_metric(recs)
    lower = bool(metric) and metric.endswith("_us")
    values, bounds = _heat_values(recs, metric, lower)
    median = _percentile(sorted(v for v in values if v is not None), 50)
    if bounds:
        ref, ref_kind = sorted(bounds)[len(bounds) // 2], "expectation"
    else:
        ref, ref_kind = median, "fleet median"
    names = sorted(set(r.get("host") or "" for r in recs) | set(r["peer"] for r in recs))
    n = len(names)
    binned = n > HEAT_FULL_MAX
    size = int(math.ceil(n / float(HEAT_BINS))) if binned else 1
    blocks, worst = _heat_blocks(recs, values, dict((h, i) for i, h in enumerate(names)), size, ref, lower)
    cells = []
    for (bi, bj), (_score, ratio, status) in blocks.items():
        cells.extend((bi, bj, int(round(ratio * 1000)) if ratio >= 0 else -1, status))
    return {"check": check, "target": target, "metric": metric or "", "lower": lower, "ref": rnd(ref),
            "refKind": ref_kind, "median": rnd(median), "n": n, "pairs": len(recs), "bin": size,
            "axis": _heat_axis(names, host_idx, binned, size), "cells": cells,
            "worst": [[host_idx.get(names[i], -1), host_idx.get(names[j], -1), rnd(v), s]
                      for _sc, i, j, v, s in worst[:HEAT_WORST] if _sc < 0.95]}


def _heat(records, host_idx):
    return [_heat_matrix(check, target, recs, host_idx) for (check, target), recs in sorted(_pair_groups(records).items())]


def _gemm(records, host_idx):
    groups = {}
    for rec in records:
        if rec["check"].startswith("gpu.gemm") and not rec.get("peer") and _measured(rec):
            value = _num((rec.get("metrics") or {}).get("tflops"))
            if value is not None:
                groups.setdefault(rec["check"], []).append((rec, value))
    out = []
    for check, items in sorted(groups.items()):
        per_gpu = {}
        floors, softs = [], []
        for rec, value in items:
            per_gpu.setdefault(str(rec.get("target") or "-"), []).append((value, rec))
            rule = (rec.get("expect") or {}).get("tflops")
            if isinstance(rule, dict) and _num(rule.get("min")) is not None:
                floors.append(rule["min"])
                if _num(rule.get("warn_below_pct")):     # the soft floor (expectations.judge_value): warn below it
                    softs.append(rule["min"] * 100.0 / rule["warn_below_pct"])
        bars = []
        for gpu in sorted(per_gpu, key=lambda g: (len(g), g)):
            vals = sorted(per_gpu[gpu], key=lambda x: x[0])
            only = [v for v, _r in vals]
            low_value, low_rec = vals[0]
            bars.append({"gpu": gpu, "n": len(vals), "med": rnd(_percentile(only, 50)), "p10": rnd(_percentile(only, 10)),
                         "p90": rnd(_percentile(only, 90)), "min": rnd(low_value),
                         "minHost": host_idx.get(low_rec.get("host"), -1), "minStatus": STATUS_CODE.get(low_rec.get("status"), 4)})
        out.append({"check": check, "bars": bars, "floor": rnd(sorted(floors)[len(floors) // 2]) if floors else None,
                    "soft": rnd(sorted(softs)[len(softs) // 2]) if softs else None})
    return out


_LATENCY_METRICS = ("lat_typical_us", "lat_avg_us", "t_typical_us", "t_avg_us")


def _latency(records):
    groups = {}
    for rec in records:
        metrics = rec.get("metrics")
        if not metrics:         # (most records: no figure, no latency)
            continue
        name = next((k for k in _LATENCY_METRICS if _num(metrics.get(k)) is not None), None)
        if name and _measured(rec):
            groups.setdefault((rec["check"], rec.get("target") or "", name), []).append(rnd(metrics[name]))
    return [{"check": c, "target": t, "metric": m, "values": sorted(v)} for (c, t, m), v in sorted(groups.items())]


def _host_order(summary, records):
    """(host names: the summary's, then any other host or peer in record order, {name: index})."""
    host_order = [h["host"] for h in summary["hosts"]]
    host_idx = dict((h, i) for i, h in enumerate(host_order))
    for rec in records:
        for name in (rec.get("host"), rec.get("peer")):
            if name and name not in host_idx:
                host_idx[name] = len(host_order)
                host_order.append(name)
    return host_order, host_idx


def _record_row(rec, host, host_idx, strings, deltas_text, counted, judges):
    """One record as a row of small integers (strings and structures as string table indexes); the last field is
    what judged it (coverage.record_judges: "profile", "hardware, peers", "unjudged", "hardware (analysis)")."""
    get = rec.get
    metrics, expect, facts, peer, ident = get("metrics"), get("expect"), get("facts"), get("peer"), id(rec)
    target, reason, raw, delta, judge = get("target"), get("reason"), get("raw"), deltas_text(rec), judges.get(ident)
    return [        # (text fields are a string or None: an empty one is the table's 0, not looked up)
        host, strings(get("check")), strings(target) if target else 0,
        host_idx[peer] if peer else -1,
        STATUS_CODE.get(get("status"), 4),
        strings(reason) if reason else 0,
        strings(metrics) if metrics else 0,           # the page rounds figures for display
        strings(expect) if expect else 0,
        strings(facts) if facts else 0,
        strings(raw) if raw else 0,
        strings(delta) if delta else 0,
        1 if ident in counted else 0,
        1 if (get("tool") or {}).get("name") == "fleet-analysis" else 0,
        strings(judge) if judge else 0,
    ]


def _record_rows(records, host_idx, strings, deltas_text, counted, judges):
    """(rows by host, worst first; {id(record): its row}; {host: passing pairs not listed}). Passing pairwise
    records are counted per host instead of listed when there are more than PASSING_PAIRS_LISTED."""
    passing_pairs = sum(1 for r in records if r.get("peer") and r.get("status") == "pass")
    list_passing_pairs = passing_pairs <= PASSING_PAIRS_LISTED
    order = sorted(range(len(records)), key=lambda i: (
        host_idx.get(records[i].get("host") or "", 0), -results.SEVERITY.get(records[i].get("status"), 0),
        records[i].get("check") or "", records[i].get("target") or "", records[i].get("peer") or ""))
    rows, rec_index, unlisted = [], {}, {}
    for i in order:
        rec = records[i]
        host = host_idx.get(rec.get("host") or "", 0)
        if rec.get("peer") and rec.get("status") == "pass" and not list_passing_pairs:
            unlisted[host] = unlisted.get(host, 0) + 1
            continue
        rec_index[id(rec)] = len(rows)
        rows.append(_record_row(rec, host, host_idx, strings, deltas_text, counted, judges))
    return rows, rec_index, unlisted


def _host_rows(summary, host_order):
    """[name, verdict code (-1: a host of no verdict, e.g. only a peer)] per host."""
    by_name = dict((h["host"], h) for h in summary["hosts"])
    hosts = []
    for name in host_order:
        h = by_name.get(name)
        hosts.append([name, STATUS_CODE.get(h["status"], 4) if h else -1])
    return hosts


def _starts(rows, hosts):
    """Where each host's rows start (rows are by host; the last entry is the number of rows)."""
    starts = [0] * (hosts + 1)
    for row in rows:
        starts[row[0] + 1] += 1
    for i in range(hosts):
        starts[i + 1] += starts[i]
    return starts


def build_data(report, deltas_text, counted=None, judges=None):
    """The compact data the page's JavaScript renders from (see the module docstring). ``counted``: the
    :func:`counted_ids` of the report's records, ``judges``: their coverage.record_judges (computed here when not
    given)."""
    strings = _Table()
    summary = report["summary"]
    records = report["records"]
    host_order, host_idx = _host_order(summary, records)
    counted = counted_ids(records) if counted is None else counted
    judges = coverage.record_judges(records) if judges is None else judges
    rows, rec_index, unlisted = _record_rows(records, host_idx, strings, deltas_text, counted, judges)
    hosts = _host_rows(summary, host_order)
    starts = _starts(rows, len(host_order))
    plots = _plots([r for r in records if id(r) in rec_index], rec_index, strings)
    data = {
        "hosts": hosts, "starts": starts, "recs": rows, "unlisted": unlisted,
        "plots": plots, "heat": _heat(records, host_idx), "gemm": _gemm(records, host_idx),
        "lat": _latency(records), "S": strings.items,
    }
    soak, soak_left = _soak(records, rec_index, host_idx)
    if soak:                            # (absent, not empty: a report without a soak plot is as it was)
        data["soak"], data["soakLeft"] = soak, soak_left
    return data


def embed(data, drop=False):
    """(mode, text) of the data for the page: JSON safe inside <script>, or gzip + base64 when large. ``drop``: the
    record rows and plots are taken out of ``data`` once encoded (what the page's text needs of it is the rest),
    so that they are not held while the text is compressed."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=str)
    if drop:
        for key in ("recs", "plots", "starts"):
            data[key] = None
    if len(text) > COMPRESS_ABOVE:
        raw = text.encode("utf-8")
        del text
        packed = base64.b64encode(gzip.compress(raw, compresslevel=6, mtime=0)).decode("ascii")
        return "gzip", packed
    return "json", text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e").replace(
        "\u2028", "\\u2028").replace("\u2029", "\\u2029")


# ---------------------------------------------------------------- the page


def asset(name):
    """A file of report_assets/ (shipped in the collection): the pages' CSS, script and templates."""
    with open(os.path.join(ASSETS, name), encoding="utf-8", newline="") as handle:
        return handle.read()


# what would end (or, for a script, confuse) the raw-text element an asset is written into: a stylesheet goes into
# <style>, a script into <script> (HTML's "script data" states: "<!--" and "<script" change how "</script>" is found)
_RAW_TEXT_ENDS = {".css": ("</style",), ".js": ("</script", "<!--", "<script")}


def trusted_asset(name, text):
    """The text of a package asset as markup the template inserts RAW (never autoescaped: an escaped
    ``"Segoe UI"`` would void the stylesheet's font rule). Only the page's own files are trusted this way; data
    from a tool or a host never is. ValueError when the text would end the element it is written into."""
    ends = _RAW_TEXT_ENDS.get(os.path.splitext(name)[1], ())
    for end in ends:
        if end in text.lower():
            raise ValueError("report asset %s holds %r: it would end its element in report.html" % (name, end))
    return Markup(text)


ASSETS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "report_assets")
CSS = trusted_asset("report.css", asset("report.css"))
JS = trusted_asset("report.js", asset("report.js"))    # plain ES2017, no library; data reaches the DOM only through textContent
# a page with a soak panel (build_data's "soak"): soak.js written into report.js's closure before its start (it draws
# with that file's helpers), soak.css after report.css; a page without one has report.js and report.css as they are
_JS_START = "// ---------------------------------------------------------------- start\n"
if asset("report.js").count(_JS_START) != 1:
    raise ValueError("report.js has no single start marker for soak.js")
JS_SOAK = trusted_asset("report.js", asset("report.js").replace(_JS_START, asset("soak.js") + _JS_START))
CSS_SOAK = trusted_asset("report.css", asset("report.css") + asset("soak.css"))
_PAGE_ASSETS = {False: (CSS, JS), True: (CSS_SOAK, JS_SOAK)}       # {the page has a soak panel: (css, js)}
TEMPLATE = asset("report.html.j2")

_ENV = Environment(autoescape=True, trim_blocks=False)
_ENV.filters["plural"] = plural
_TEMPLATE = _ENV.from_string(TEMPLATE)


def stage_lines(report):
    """(the stages of coverage.stages for the report's hosts, the sentence that says what the verdict does not
    cover, or None when every stage that is listed ran somewhere)."""
    summary = report["summary"]
    listed = coverage.stages(report["records"], [h["host"] for h in summary["hosts"]], plural)
    missing = [s["title"] for s in listed if s["state"] == "not run"]
    if not missing:
        return listed, None
    ran = [s["title"] for s in listed if s["state"] != "not run"]
    verdict_word = summary["worst_status"].upper()
    if not ran:
        return listed, "No stage ran on any host: this %s says nothing about the hardware." % verdict_word
    return listed, "This %s covers the %s %s only: %s did not run on any host." % (
        verdict_word, _and(ran), "stage" if len(ran) == 1 else "stages", _and(missing))


def interrupted_text(run):
    """"SIGINT, during task 'x' of play 'y'" for an interrupted run's banner (the callback's run.interrupted_in)."""
    text = str(run.get("interrupt_reason") or "interrupted")
    where = run.get("interrupted_in") if isinstance(run.get("interrupted_in"), dict) else {}
    if where.get("task"):
        text += ", during task %r" % str(where["task"])
    if where.get("play"):
        text += "%s play %r" % (" of" if where.get("task") else ", in", str(where["play"]))
    return text


def required_lines(run):
    """[(the checks, comma-separated, "every host" | "39 hosts (a, b, c, ...)")] of the run's required checks,
    the hosts with the same list together: those of every host ("*") first, then most hosts first."""
    try:
        wanted = verdict.required_patterns({"required_checks": run.get("required_checks")})
    except ValueError as exc:
        return [("unreadable", str(exc))]
    groups = {}
    for host, patterns in wanted.items():
        groups.setdefault(", ".join(patterns), []).append(host)
    out = []
    for checks, hosts in sorted(groups.items(), key=lambda item: ("*" not in item[1], -len(item[1]), item[0])):
        named = sorted(h for h in hosts if h != "*")
        if "*" in hosts:
            out.append((checks, "every host"))
        if named:
            out.append((checks, plural(len(named), "host") + coverage.hosts_named(named, -1)))
    return out


def soak_lines(data):
    """The soak section's static text: {"nodes": ["node-b GPU 3 (fail)", ...], "left": nodes not plotted}, or None
    when build_data drew no soak panel."""
    if not data.get("soak"):
        return None
    nodes = []
    for panel in data["soak"]:
        host = data["hosts"][panel["host"]][0] if panel["host"] >= 0 else "-"
        hi = [g for g in panel["gpus"] if g["hi"]]
        nodes.append("%s GPU %s (%s) beside %s" % (host, ", ".join(panel["flagged"]), STATUS_NAMES[panel["st"]],
                                                   plural(len(panel["gpus"]) - len(hi), "sibling")))
    return {"nodes": nodes, "left": data["soakLeft"], "cap": SOAK_NODES}


def _and(words):
    return words[0] if len(words) == 1 else "%s and %s" % (", ".join(words[:-1]), words[-1])


def _counts(run, *keys):
    """The run's counts by ``keys``, "?" for one it does not know (an imported run may hold None)."""
    return tuple("?" if run.get(key) is None else run.get(key) for key in keys)


def render(report, deltas_text, changes, history_text, counted=None):
    """The page for a report structure of ``fleet.build_report`` (``counted``: as for :func:`build_data`)."""
    summary = report["summary"]
    run = report.get("run") or {}
    counted = counted_ids(report["records"]) if counted is None else counted
    judges = coverage.record_judges(report["records"])
    data = build_data(report, deltas_text, counted, judges)
    mode, text = embed(data, drop=True)
    host_index = dict((h[0], i) for i, h in enumerate(data["hosts"]))
    order = sorted(results.STATUSES, key=results.SEVERITY.get, reverse=True)
    hosts = [{"host": h["host"], "i": host_index.get(h["host"], -1), "status": h["status"],
              "rank": results.SEVERITY.get(h["status"], 0), "counts": h["counts"],
              "checks": ", ".join(h["checks"][:6]) + (" ..." if len(h["checks"]) > 6 else "")}
             for h in summary["hosts"]]
    static = []
    bad = [r for r in report["records"] if r.get("status") in ("error", "fail", "warn") and id(r) in counted]
    bad.sort(key=lambda r: (-results.SEVERITY.get(r.get("status"), 0), host_index.get(r.get("host"), 0)))
    for rec in bad[:PROBLEMS_STATIC]:
        static.append({"host": rec.get("host"), "status": rec.get("status"), "label": label(rec),
                       "reason": rec.get("reason") or "", "delta": deltas_text(rec),
                       "judges": judges.get(id(rec)) or "-"})
    started, ended = run.get("started") or "", run.get("ended") or ""
    meta = [("run", run.get("run_id")), ("started", started), ("ended", ended),
            ("playbooks", ", ".join(run.get("playbooks") or []) or "-"),
            ("hosts targeted", "%s of %s in the inventory" % _counts(run, "hosts_targeted_count", "inventory_host_count")),
            ("ansible-core", run.get("ansible_version")), ("aifabric.acceptance", run.get("collection_version")),
            ("python", run.get("python_version")), ("controller", run.get("controller"))]
    if run.get("check_mode"):
        meta.append(("check mode", "yes"))
    comparison = None
    given = report.get("comparison")
    if isinstance(given, dict) and isinstance(given.get("totals"), dict):
        def rows(items):
            return [{"host": d.get("host"), "label": label(d), "metric": d.get("metric") or "status",
                     "before": fmt(d.get("reference", d.get("before"))),
                     "now": fmt(d.get("current", d.get("now"))),
                     "change": ("%+.1f %%" % d["change_pct"]) if _num(d.get("change_pct")) is not None else ""}
                    for d in (items or [])[:100] if isinstance(d, dict)]
        try:
            against = compare.against_text(given)
        except (KeyError, TypeError):
            against = "an earlier run"
        comparison = {"against": against, "margin": fmt(given.get("margin_pct")), "compared": given.get("compared"),
                      "totals": given["totals"],
                      "lists": [("Regressions (worst first)", rows(given.get("regressions"))),
                                ("Improvements", rows(given.get("improvements"))),
                                ("Status changes", rows(given.get("status_changes")))]}
    stages, not_covered = stage_lines(report)
    soak = soak_lines(data)
    return _TEMPLATE.render(
        stages=stages, not_covered=not_covered, comparison=comparison, soak=soak, run=run, summary=summary,
        css=_PAGE_ASSETS[bool(soak)][0], js=_PAGE_ASSETS[bool(soak)][1],
        statuses=order, verdict_word=summary["worst_status"].upper(),
        meta=[(k, v if v not in (None, "") else "-") for k, v in meta], problems=report.get("problems") or [],
        findings=finding_rows(report.get("findings")), max_findings=FINDINGS_SHOWN, host_index=host_index,
        judgement=summary.get("judgement") or {}, unjudged=unjudged_rows(summary.get("judgement")),
        static_problems=static, hosts=hosts, changes=changes, history_text=history_text, required=required_lines(run),
        interrupted=interrupted_text(run),
        data_mode=mode, data_text=Markup(text))     # embed() escaped <, > and & for the <script> block
