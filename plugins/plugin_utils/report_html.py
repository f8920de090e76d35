# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""report.html: one self-contained page that a person hunting the bad node reads.

The page is static HTML for what must be seen first (verdict header, run metadata, findings with
their evidence as readable rows, the host table) plus the data of the run embedded ONCE, compactly
(a string table and rows of small integers; gzip + base64 when large), from which inline JavaScript
renders on demand: the problems list (filterable), per-host drill-down (expanded lazily), bandwidth
vs message size plots (fleet median, p10-p90 band, expectation line, log2 size axis in human units),
per-rail pairwise heat maps coloured against the expectation, per-GPU GEMM bars and latency
histograms. No network: the JavaScript and CSS are written for this file (no third-party asset).

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

from jinja2 import Environment

from ansible_collections.aifabric.acceptance.plugins.module_utils import results
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import compare, verdict

STATUS_CODE = {"pass": 0, "skip": 1, "warn": 2, "fail": 3, "error": 4}
STATUS_NAMES = ["pass", "skip", "warn", "fail", "error"]
SERIES_X = ("size_bytes", "msg_size_bytes", "bytes", "size")
SERIES_Y = ("oop_busbw_gbyte_s", "busbw_gbyte_s", "ip_busbw_gbyte_s", "bus_bw_gbyte_s", "busbw", "bus_bw",
            "bw_avg_gbit_s", "bw_average_gbit_s", "bw_avg_mbyte_s", "bw_avg_mib_s", "bw_avg", "algbw_gbyte_s",
            "algbw", "alg_bw", "bw_gbit_s", "bw")
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
KIND_ORDER = {"node": 0, "link": 1, "required_not_run": 2, "drift": 3, "fleet_outlier": 4}


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


def human_bytes(value):
    value = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return ("%d %s" % (value, unit)) if value.is_integer() else ("%s %s" % (rnd(value, 3), unit))
        value /= 1024.0
    return str(value)


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


def finding_row(item):
    """{kind, status, check, target, hosts, text}: what one finding says, in one readable sentence."""
    ev = item.get("evidence") or {}
    kind = item.get("kind") or "?"
    hosts = item.get("hosts") or []
    status = "warn"
    if kind == "node":
        status = "fail"
        text = "suspect node: %s of %s pairs low (%s failed); %s fleet median %s, limit %s" % (
            fmt(ev.get("low_pairs")), fmt(ev.get("pairs")), fmt(ev.get("failed_pairs")), ev.get("metric") or "",
            fmt(ev.get("fleet_median")), fmt(ev.get("limit")))
        if ev.get("low_peers"):
            text += "; low with: " + _pairs_text(ev["low_peers"])
        if ev.get("good_peers"):
            text += "; good with: " + _hosts_text(ev["good_peers"], 4)
    elif kind == "link":
        text = "%s link %s: %s %s vs fleet median %s (limit %s)%s" % (
            "suspect" if not ev.get("needs_confirmation") else "unconfirmed low",
            " <-> ".join(hosts), ev.get("metric") or "", fmt(ev.get("value")), fmt(ev.get("fleet_median")),
            fmt(ev.get("limit")), "; failed its expectation" if ev.get("failed") else "")
        if ev.get("needs_confirmation"):
            text += "; needs the confirmation pass (node or link cannot be told apart yet)"
        if ev.get("errors"):
            text += "; errors: " + "; ".join(str(e) for e in ev["errors"])
    elif kind == "drift":
        status = ev.get("status") or "warn"
        sizes = ev.get("group_sizes") or {}
        total = sum(v for v in sizes.values() if isinstance(v, int))
        expected = ev.get("expected")
        others = [(value, sizes.get(value, 0), (ev.get("groups") or {}).get(value) or [])
                  for value in sizes if value != expected]
        others.sort(key=lambda x: x[1])
        text = "%s: expected %s (%s, %s of %s hosts); %s" % (
            ev.get("subject") or ev.get("fact"), fmt(expected), ev.get("source") or "majority",
            fmt(sizes.get(expected)) if expected in sizes else "0", total,
            "; ".join("%s on %d host%s (%s)" % (fmt(v), n, "" if n == 1 else "s", _hosts_text(hs, 5))
                      for v, n, hs in others[:5]) or "no deviating host")
    elif kind == "fleet_outlier":
        text = "%s below the fleet: median %s, limit %s (%s samples%s)" % (
            ev.get("metric") or "", fmt(ev.get("median")), fmt(ev.get("limit")), fmt(ev.get("samples")),
            (", %s" % ev["shape"]) if ev.get("shape") else "")
    else:
        text = "; ".join("%s: %s" % (k, fmt(v)[:200]) for k, v in sorted(ev.items()))
        if kind in ("required_not_run",):
            status = "fail"
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


_ENCODE = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), default=str).encode


class _Table:
    """A string table: each distinct string stored once, referred to by its index."""

    def __init__(self):
        self.items = [""]
        self.index = {"": 0}

    def __call__(self, text):
        if text is None:
            return 0
        if not isinstance(text, str):
            text = _ENCODE(text)
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


def _series_keys(series):
    first = series[0] if series and isinstance(series[0], dict) else {}
    xkey = next((k for k in SERIES_X if _num(first.get(k)) is not None), None)
    ykey = next((k for k in SERIES_Y if _num(first.get(k)) is not None), None)
    if xkey and ykey:
        return xkey, ykey
    rows = [r for r in series if isinstance(r, dict)]
    xkey = xkey or next((k for k in SERIES_X if any(_num(r.get(k)) is not None for r in rows)), None)
    ykey = ykey or next((k for k in SERIES_Y if any(_num(r.get(k)) is not None for r in rows)), None)
    if ykey is None:
        ykey = next((k for r in rows for k in r if "bw" in k.lower() and _num(r.get(k)) is not None), None)
    return xkey, ykey


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


def _plots(records, rec_index, strings):
    groups = {}
    for rec in records:
        series = rec.get("series")
        if not series:
            continue
        xkey, ykey = _series_keys(series)
        if not xkey or not ykey:
            continue
        points = {}
        for row in series:
            if type(row) is dict:   # pylint: disable=unidiomatic-typecheck  # (hot loop: exact types are plain JSON)
                x, y = row.get(xkey), row.get(ykey)
                if type(x) in _NUMBERS and type(y) in _NUMBERS and x > 0 and math.isfinite(y):  # pylint: disable=unidiomatic-typecheck
                    points[x] = y
        if len(points) >= 2:
            groups.setdefault((rec["check"], rec.get("target") or "", ykey), []).append((rec, xkey, points))
    out = []
    for (check, target, ykey), items in sorted(groups.items()):
        sizes = sorted(set(x for _r, _xk, pts in items for x in pts))
        if len(sizes) > 64:
            continue
        col = dict((x, i) for i, x in enumerate(sizes))
        per_size = [[] for _size in sizes]
        for _rec, _xk, pts in items:
            for x, y in pts.items():
                per_size[col[x]].append(y)
        for values in per_size:
            values.sort()
        med = [rnd(_percentile(v, 50)) for v in per_size]
        p10 = [rnd(_percentile(v, 10)) for v in per_size]
        p90 = [rnd(_percentile(v, 90)) for v in per_size]
        last = len(sizes) - 1

        def at_max(item, last=last, sizes=sizes):
            pts = item[2]
            return pts.get(sizes[last], min(pts.values()))

        ranked = sorted(items, key=at_max)
        flagged = [it for it in ranked if it[0].get("status") in ("fail", "error", "warn")][:FLAGGED_CURVES]
        if len(flagged) < 3 and len(items) > 3 and med[last]:
            flagged += [it for it in ranked[:3] if at_max(it) < 0.9 * med[last] and it not in flagged]
        curves = []
        keep = items if len(items) <= CURVES_PER_GROUP else flagged
        for rec, _xk, pts in keep:
            ys = [pts.get(x) for x in sizes]        # the page rounds for display
            curves.append([rec_index[id(rec)], strings(ys)])
        floor, points = _expect_line([it[0] for it in items], ykey)
        out.append({"check": check, "target": target, "x": items[0][1], "y": ykey, "n": len(items),
                    "sizes": [rnd(x) for x in sizes], "med": med, "p10": p10, "p90": p90,
                    "floor": rnd(floor) if floor is not None else None,
                    "floorAt": [[rnd(x), rnd(v)] for x, v in points if x in col],
                    "flagged": [rec_index[id(it[0])] for it in flagged], "curves": curves})
    return out


def _heat(records, host_idx):
    groups = {}
    for rec in records:
        if rec.get("peer"):
            groups.setdefault((rec["check"], rec.get("target") or ""), []).append(rec)
    checks = set(c for c, _t in groups)
    out = []
    for (check, target), recs in sorted(groups.items()):
        if check.endswith(".server") and check[:-len(".server")] in checks:
            continue            # the server side of the same pairs: the client's matrix shows them
        metric = next((m for m in HEAT_METRICS if any(_num((r.get("metrics") or {}).get(m)) is not None
                                                      for r in recs[:500])), None)
        lower = bool(metric) and metric.endswith("_us")
        values = []
        mins = []
        for rec in recs:
            value = _num((rec.get("metrics") or {}).get(metric)) if metric else None
            values.append(value)
            rule = (rec.get("expect") or {}).get(metric) if metric else None
            if isinstance(rule, dict) and _num(rule.get("max" if lower else "min")) is not None:
                mins.append(rule["max" if lower else "min"])
        measured = sorted(v for v in values if v is not None)
        median = _percentile(measured, 50)
        if mins:
            ref, ref_kind = sorted(mins)[len(mins) // 2], "expectation"
        else:
            ref, ref_kind = median, "fleet median"
        names = sorted(set(r.get("host") or "" for r in recs) | set(r["peer"] for r in recs))
        pos = dict((h, i) for i, h in enumerate(names))
        n = len(names)
        binned = n > HEAT_FULL_MAX
        size = int(math.ceil(n / float(HEAT_BINS))) if binned else 1
        blocks = {}
        worst = []
        for rec, value in zip(recs, values):
            status = STATUS_CODE.get(rec.get("status"), 4)
            if value is None or not ref:
                ratio = 0 if status >= 3 else -1
            else:
                ratio = (ref / value if value else 0.0) if lower else value / ref
            i, j = pos[rec.get("host") or ""], pos[rec["peer"]]
            key = (i // size, j // size)
            score = (ratio if ratio >= 0 else 9.0) - (10 if status >= 3 else 0)
            old = blocks.get(key)
            if old is None or score < old[0]:
                blocks[key] = (score, ratio, status)
            worst.append((score, i, j, value, status))
        worst.sort()
        cells = []
        for (bi, bj), (_score, ratio, status) in blocks.items():
            cells.extend((bi, bj, int(round(ratio * 1000)) if ratio >= 0 else -1, status))
        axis = ([host_idx.get(h, -1) for h in names] if not binned else
                [[host_idx.get(names[b], -1), host_idx.get(names[min(b + size, n) - 1], -1)]
                 for b in range(0, n, size)])
        out.append({"check": check, "target": target, "metric": metric or "", "lower": lower, "ref": rnd(ref),
                    "refKind": ref_kind, "median": rnd(median), "n": n, "pairs": len(recs), "bin": size,
                    "axis": axis, "cells": cells,
                    "worst": [[host_idx.get(names[i], -1), host_idx.get(names[j], -1), rnd(v), s]
                              for _sc, i, j, v, s in worst[:HEAT_WORST] if _sc < 0.95]})
    return out


def _gemm(records, host_idx):
    groups = {}
    for rec in records:
        if rec["check"].startswith("gpu.gemm") and not rec.get("peer"):
            value = _num((rec.get("metrics") or {}).get("tflops"))
            if value is not None:
                groups.setdefault(rec["check"], []).append((rec, value))
    out = []
    for check, items in sorted(groups.items()):
        per_gpu = {}
        floors = []
        for rec, value in items:
            per_gpu.setdefault(str(rec.get("target") or "-"), []).append((value, rec))
            rule = (rec.get("expect") or {}).get("tflops")
            if isinstance(rule, dict) and _num(rule.get("min")) is not None:
                floors.append(rule["min"])
        bars = []
        for gpu in sorted(per_gpu, key=lambda g: (len(g), g)):
            vals = sorted(per_gpu[gpu], key=lambda x: x[0])
            only = [v for v, _r in vals]
            low_value, low_rec = vals[0]
            bars.append({"gpu": gpu, "n": len(vals), "med": rnd(_percentile(only, 50)), "p10": rnd(_percentile(only, 10)),
                         "p90": rnd(_percentile(only, 90)), "min": rnd(low_value),
                         "minHost": host_idx.get(low_rec.get("host"), -1), "minStatus": STATUS_CODE.get(low_rec.get("status"), 4)})
        out.append({"check": check, "bars": bars, "floor": rnd(sorted(floors)[len(floors) // 2]) if floors else None})
    return out


def _latency(records):
    groups = {}
    for rec in records:
        metrics = rec.get("metrics") or {}
        name = next((k for k in ("lat_typical_us", "lat_avg_us", "t_typical_us", "t_avg_us") if _num(metrics.get(k)) is not None), None)
        if name:
            groups.setdefault((rec["check"], rec.get("target") or "", name), []).append(rnd(metrics[name]))
    return [{"check": c, "target": t, "metric": m, "values": sorted(v)} for (c, t, m), v in sorted(groups.items())]


def build_data(report, deltas_text, counted=None):
    """The compact data the page's JavaScript renders from (see the module docstring). ``counted``: the
    :func:`counted_ids` of the report's records (computed here when not given)."""
    strings = _Table()
    summary = report["summary"]
    records = report["records"]
    host_order = [h["host"] for h in summary["hosts"]]
    host_idx = dict((h, i) for i, h in enumerate(host_order))
    for rec in records:
        for name in (rec.get("host"), rec.get("peer")):
            if name and name not in host_idx:
                host_idx[name] = len(host_order)
                host_order.append(name)
    counted = counted_ids(records) if counted is None else counted
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
        metrics = rec.get("metrics") or {}
        rows.append([
            host, strings(rec.get("check")), strings(rec.get("target")),
            host_idx[rec["peer"]] if rec.get("peer") else -1,
            STATUS_CODE.get(rec.get("status"), 4),
            strings(rec.get("reason")),
            strings(metrics) if metrics else 0,           # the page rounds figures for display
            strings(rec.get("expect")) if rec.get("expect") else 0,
            strings(rec.get("facts")) if rec.get("facts") else 0,
            strings(rec.get("raw")),
            strings(deltas_text(rec)),
            1 if id(rec) in counted else 0,
            1 if (rec.get("tool") or {}).get("name") == "fleet-analysis" else 0,
        ])
    hosts = []
    by_name = dict((h["host"], h) for h in summary["hosts"])
    for name in host_order:
        h = by_name.get(name)
        hosts.append([name, STATUS_CODE.get(h["status"], 4) if h else -1])
    starts = [0] * (len(host_order) + 1)
    for row in rows:
        starts[row[0] + 1] += 1
    for i in range(len(host_order)):
        starts[i + 1] += starts[i]
    plots = _plots([r for r in records if id(r) in rec_index], rec_index, strings)
    data = {
        "hosts": hosts, "starts": starts, "recs": rows, "unlisted": unlisted,
        "plots": plots, "heat": _heat(records, host_idx), "gemm": _gemm(records, host_idx),
        "lat": _latency(records), "S": strings.items,
    }
    return data


def embed(data):
    """(mode, text) of the data for the page: JSON safe inside <script>, or gzip + base64 when large."""
    text = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False, default=str)
    if len(text) > COMPRESS_ABOVE:
        packed = base64.b64encode(gzip.compress(text.encode("utf-8"), compresslevel=6, mtime=0)).decode("ascii")
        return "gzip", packed
    return "json", text.replace("&", "\\u0026").replace("<", "\\u003c").replace(">", "\\u003e").replace(
        "\u2028", "\\u2028").replace("\u2029", "\\u2029")


# ---------------------------------------------------------------- the page


CSS = r"""
*{box-sizing:border-box}body{font:14px/1.4 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0;color:#1d2430;background:#f6f7f9}
main{max-width:1400px;margin:0 auto;padding:12px 20px 40px}
h1{font-size:22px;margin:6px 0}h2{font-size:18px;margin:22px 0 8px;border-bottom:1px solid #d5d9e0;padding-bottom:3px}
h3{font-size:15px;margin:14px 0 4px}
.badge{display:inline-block;padding:1px 8px;border-radius:10px;font-weight:600;font-size:12px;text-transform:uppercase;white-space:nowrap}
.pass{background:#c8ebd3;color:#11502a}.skip{background:#e4e6ea;color:#444}.warn{background:#fde4b8;color:#6b4300}
.fail{background:#f6b9b3;color:#7a130b}.error{background:#dcc3ea;color:#4a1466}
.head{display:flex;flex-wrap:wrap;gap:8px 28px;align-items:baseline}
.chips span{margin-right:6px;cursor:pointer}.meta{font-size:12px;
 color:#444;margin:6px 0;display:grid;grid-template-columns:repeat(auto-fill,minmax(260px,1fr));gap:2px 16px}
.meta strong{color:#222;font-weight:600}.banner{background:#fde4b8;border:1px solid #e0a030;padding:8px 12px;margin:8px 0;border-radius:4px;
 font-weight:600}
.wrap{overflow-x:auto;max-width:100%}
table{border-collapse:collapse;background:#fff;margin:4px 0 10px;font-size:13px}
th,td{border-bottom:1px solid #e3e6eb;padding:3px 8px;text-align:left;vertical-align:top}
th{background:#eef0f3;position:sticky;top:0;cursor:pointer;white-space:nowrap;user-select:none}
td.n{text-align:right;font-variant-numeric:tabular-nums}td.h{white-space:nowrap;font-family:ui-monospace,Menlo,Consolas,monospace}
td.t{max-width:760px}tr.sel td{background:#fff7d6}
a{color:#1457b8;cursor:pointer;text-decoration:none}a:hover{text-decoration:underline}
.muted{color:#6b7280;font-size:12px}.ctl{margin:6px 0;display:flex;flex-wrap:wrap;gap:8px;align-items:center}
input,select{font:inherit;padding:2px 6px}
.scroll{max-height:420px;overflow:auto;border:1px solid #e3e6eb}
.grid{display:flex;flex-wrap:wrap;gap:14px;align-items:flex-start}.card{background:#fff;border:1px solid #e3e6eb;border-radius:4px;
 padding:8px;max-width:680px}
pre{white-space:pre-wrap;word-break:break-word;background:#f3f4f6;padding:4px 6px;margin:2px 0;max-height:18em;overflow:auto;font-size:12px}
.kv{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px;min-width:230px}.kv pre{white-space:pre-wrap;word-break:normal;max-width:420px}
#detail{background:#fff;border:2px solid #1457b8;border-radius:4px;padding:8px 12px;margin:10px 0}
svg text{font-size:11px;fill:#333}canvas{image-rendering:pixelated}
.tip{position:fixed;pointer-events:none;background:#222;color:#fff;font-size:12px;padding:3px 6px;border-radius:3px;display:none;
 z-index:9;max-width:480px}
"""

# The page's script. Plain ES2017, no library. Data reaches the DOM only through textContent.
JS = r"""
"use strict";
(function(){
const ST=["pass","skip","warn","fail","error"];
const $=(id)=>document.getElementById(id);
function el(tag,attrs,...kids){const e=document.createElement(tag);if(attrs)for(const k in attrs){if(k==="text")e.textContent=attrs[k];
 else if(k==="cls")e.className=attrs[k];else if(k.startsWith("on"))e.addEventListener(k.slice(2),attrs[k]);else e.setAttribute(k,attrs[k]);}
 for(const c of kids){if(c==null)continue;e.appendChild(typeof c==="string"?document.createTextNode(c):c);}return e;}
const NS="http://www.w3.org/2000/svg";
function sv(tag,attrs,text){const e=document.createElementNS(NS,tag);for(const k in attrs)e.setAttribute(k,attrs[k]);if(text!=null)e.textContent=text;
 return e;}
function num(v){if(v==null||typeof v!=="number")return v==null?"-":String(v);if(Number.isInteger(v))return String(v);const a=Math.abs(v);
 return String(Number(v.toPrecision(a>=1000?6:4)));}
function bytes(v){const u=["B","KiB","MiB","GiB","TiB"];let i=0;
 while(Math.abs(v)>=1024&&i<u.length-1){v/=1024;i++;}return (Number.isInteger(v)?v:Number(v.toPrecision(3)))+" "+u[i];}
function badge(s){return el("span",{cls:"badge "+s,text:s});}
let D=null;
const S=(i)=>D.S[i];
const HN=(i)=>i>=0?D.hosts[i][0]:"";
const tip=el("div",{cls:"tip"});document.body.appendChild(tip);
function showTip(ev,text){tip.textContent=text;tip.style.display="block";tip.style.left=(ev.clientX+12)+"px";tip.style.top=(ev.clientY+12)+"px";}
function hideTip(){tip.style.display="none";}
function parse(i){if(!i)return null;try{return JSON.parse(S(i));}catch(e){return S(i);}}
function recLabel(r){let n=S(r[1]);if(r[2])n+="["+S(r[2])+"]";if(r[3]>=0){if(!r[2])n+="[-]";n+="["+HN(r[3])+"]";}return n;}
async function load(){
 const node=$("report-data");const mode=node.getAttribute("data-mode");const text=node.textContent;
 if(mode==="gzip"){
  const bin=atob(text.trim());const buf=new Uint8Array(bin.length);for(let i=0;i<bin.length;i++)buf[i]=bin.charCodeAt(i);
  if(typeof DecompressionStream==="undefined"){
   throw new Error("this browser cannot decompress the report data (no DecompressionStream); open results.json instead");}
  const stream=new Blob([buf]).stream().pipeThrough(new DecompressionStream("gzip"));
  return JSON.parse(await new Response(stream).text());
 }
 return JSON.parse(text);
}
// ---------------------------------------------------------------- tables: sort + filter
function sortable(table){
 const ths=table.querySelectorAll("th");ths.forEach((th,col)=>th.addEventListener("click",()=>{
  const body=table.tBodies[0];const rows=Array.from(body.rows);const dir=th.dataset.dir==="a"?-1:1;th.dataset.dir=dir===1?"a":"d";
  const key=(r)=>{const c=r.cells[col];const v=c.dataset.v!==undefined?c.dataset.v:c.textContent;
 const f=parseFloat(v);return isNaN(f)?v.toLowerCase():f;};
  rows.sort((a,b)=>{const x=key(a),y=key(b);return (x>y?1:x<y?-1:0)*dir;});rows.forEach(r=>body.appendChild(r));}));
}
function hostFilter(){
 const q=$("hq").value.toLowerCase(),st=$("hs").value;let shown=0;
 for(const tr of $("hosts").tBodies[0].rows){const ok=(!st||tr.dataset.s===st)&&(!q||tr.textContent.toLowerCase().includes(q));
 tr.style.display=ok?"":"none";if(ok)shown++;}
 $("hcount").textContent=shown+" shown";
}
// ---------------------------------------------------------------- problems (records that count toward a host)
let PROBLEMS=null;
function problems(){
 if(PROBLEMS)return PROBLEMS;PROBLEMS=[];
 for(let i=0;i<D.recs.length;i++){const r=D.recs[i];if(r[4]>=2&&r[11])PROBLEMS.push(i);}
 PROBLEMS.sort((a,b)=>D.recs[b][4]-D.recs[a][4]||a-b);return PROBLEMS;
}
function renderProblems(){
 const q=$("pq").value.toLowerCase(),st=$("ps").value,body=$("problems").tBodies[0];const list=problems();
 const out=[];let total=0;
 for(const i of list){const r=D.recs[i];if(st&&ST[r[4]]!==st)continue;
  if(q){const hay=(HN(r[0])+" "+recLabel(r)+" "+S(r[5])).toLowerCase();if(!hay.includes(q))continue;}
  total++;if(out.length<300)out.push(i);}
 body.textContent="";
 for(const i of out){const r=D.recs[i];body.appendChild(el("tr",null,el("td",{cls:"h"},hostLink(r[0])),el("td",null,badge(ST[r[4]])),el("td",{cls:"h",
text:recLabel(r)}),el("td",{cls:"t",text:S(r[5])}),el("td",{cls:"t",text:S(r[10])})));
 }
 $("pcount").textContent=total+" matching"+(total>out.length?" (first "+out.length+" shown: filter to narrow)":"");
}
function hostLink(h){return el("a",{text:HN(h),onclick:(e)=>{e.preventDefault();openHost(h);}});}
// ---------------------------------------------------------------- plots
function niceTicks(max,n){if(!(max>0))max=1;const raw=max/n;
 const p=Math.pow(10,Math.floor(Math.log10(raw)));const m=[1,2,2.5,5,10].find(x=>x*p>=raw)*p;
 const top=Math.ceil(max/m-1e-9)*m;const out=[];for(let k=0;k*m<=top+m*1e-6;k++)out.push(k*m);return out;}
function curveChart(p,extra,small){
 const W=small?520:620,H=small?260:300,L=58,R=14,T=16,B=44;const xs=p.sizes.map(Math.log2);const x0=xs[0],x1=xs[xs.length-1];
 let ymax=Math.max(...p.p90.filter(v=>v!=null),...p.med.filter(v=>v!=null),p.floor||0);
 for(const c of (extra||[]))for(const v of c.ys)if(v!=null&&v>ymax)ymax=v;
 const ticks=niceTicks(ymax||1,5);ymax=ticks[ticks.length-1]||1;
 const X=(i)=>L+(W-L-R)*(x1>x0?(xs[i]-x0)/(x1-x0):0.5),Y=(v)=>H-B-(H-T-B)*(v/ymax);
 const s=sv("svg",{width:W,height:H,viewBox:"0 0 "+W+" "+H,role:"img"});
 s.appendChild(sv("rect",{x:0,y:0,width:W,height:H,fill:"#fff"}));
 for(const t of ticks){s.appendChild(sv("line",{x1:L,x2:W-R,y1:Y(t),y2:Y(t),stroke:"#eceef1"}));
 s.appendChild(sv("text",{x:L-6,y:Y(t)+4,"text-anchor":"end"},num(t)));}
 const step=Math.max(1,Math.ceil(p.sizes.length/9));
 const lastI=p.sizes.length-1;p.sizes.forEach((v,i)=>{if((lastI-i)%step)return;s.appendChild(sv("line",{x1:X(i),x2:X(i),y1:H-B,y2:H-B+4,
stroke:"#444"}));s.appendChild(sv("text",{x:X(i),y:H-B+16,"text-anchor":"middle"},p.x.indexOf("bytes")>=0||p.x==="size"?bytes(v):num(v)));});
 s.appendChild(sv("line",{x1:L,x2:W-R,y1:H-B,y2:H-B,stroke:"#444"}));s.appendChild(sv("line",{x1:L,x2:L,y1:T,y2:H-B,stroke:"#444"}));
 s.appendChild(sv("text",{x:(L+W-R)/2,y:H-8,"text-anchor":"middle"},"message size (log2 axis)"));
 s.appendChild(sv("text",{x:12,y:(T+H-B)/2,"text-anchor":"middle",transform:"rotate(-90 12 "+((T+H-B)/2)+")"},p.y));
 const band=[];p.p90.forEach((v,i)=>{if(v!=null)band.push(X(i)+","+Y(v));});
 for(let i=p.p10.length-1;i>=0;i--)if(p.p10[i]!=null)band.push(X(i)+","+Y(p.p10[i]));
 if(p.n>1)s.appendChild(sv("polygon",{points:band.join(" "),fill:"#9cc3f0",opacity:"0.45"}));
 const line=(ys,attrs,title)=>{const pts=[];ys.forEach((v,i)=>{if(v!=null)pts.push(X(i).toFixed(1)+","+Y(v).toFixed(1));});
 const pl=sv("polyline",Object.assign({points:pts.join(" "),fill:"none"},attrs));if(title)pl.appendChild(sv("title",{},title));s.appendChild(pl);};
 line(p.med,{stroke:"#1457b8","stroke-width":2},"fleet median");
 if(p.floor!=null&&p.floor<=ymax){s.appendChild(sv("line",{x1:L,x2:W-R,y1:Y(p.floor),y2:Y(p.floor),stroke:"#c0392b","stroke-dasharray":"6 4"}));
 s.appendChild(sv("text",{x:W-R-2,y:Y(p.floor)-4,"text-anchor":"end",fill:"#c0392b"},"expected min "+num(p.floor)));}
 for(const [x,v] of p.floorAt||[]){const i=p.sizes.indexOf(x);if(i>=0)s.appendChild(sv("circle",{cx:X(i),cy:Y(v),r:4,fill:"none",stroke:"#c0392b"}));}
 const colors=["#d62728","#ff7f0e","#9467bd","#8c564b","#e377c2","#bcbd22","#17becf","#7f7f7f","#2ca02c","#1f77b4"];
 const legend=[["#1457b8","fleet median ("+p.n+")"],["#9cc3f0","p10-p90"]];if(p.floor!=null)legend.push(["#c0392b","expected min"]);
 (extra||[]).forEach((c,k)=>{line(c.ys,{stroke:c.color||colors[k%colors.length],"stroke-width":1.6},
c.name);legend.push([c.color||colors[k%colors.length],c.name]);});
 const box=el("div",{cls:"card"},el("div",{text:p.check+(p.target?" ["+p.target+"]":"")+": "+p.y}),s);
 const lg=el("div",{cls:"muted"});legend.forEach(([c,n])=>{lg.appendChild(el("span",
{style:"display:inline-block;width:10px;height:10px;margin:0 4px 0 10px;background:"+c}));lg.appendChild(document.createTextNode(n));});
 box.appendChild(lg);
 return box;
}
function curveOf(p,ri){const c=p.curves.find(c=>c[0]===ri);return c?parse(c[1]):null;}
function renderPlots(){
 const box=$("plots");box.textContent="";
 if(!D.plots.length){box.appendChild(el("p",{cls:"muted",text:"No record has a per-size series."}));return;}
 for(const p of D.plots){const extra=[];for(const ri of p.flagged){
 const ys=curveOf(p,ri);const r=D.recs[ri];if(ys)extra.push({ys:ys,name:HN(r[0])+(r[3]>=0?" -> "+HN(r[3]):"")+" ("+ST[r[4]]+")"});}
  box.appendChild(curveChart(p,extra));}
}
// ---------------------------------------------------------------- heat maps
function heatColor(ratio,st){if(st===4&&ratio<0)return "#8e44ad";if(ratio<0)return "#ccc";const r=ratio/1000;
 if(r>=1)return "hsl(130,55%,"+(r>1.1?48:58)+"%)";if(r>=0.95)return "hsl(75,70%,55%)";
 const t=Math.max(0,Math.min(1,(r-0.5)/0.45));return "hsl("+Math.round(45*t)+",80%,"+Math.round(45+10*t)+"%)";}
function renderHeat(){
 const box=$("heat");box.textContent="";
 if(!D.heat.length){box.appendChild(el("p",{cls:"muted",text:"No pairwise records."}));return;}
 for(const m of D.heat){
  const n=m.axis.length,cell=Math.max(2,Math.min(16,Math.floor(460/n))),pad=6,size=n*cell;
  const c=el("canvas",{width:size+2*pad,height:size+2*pad});const g=c.getContext("2d");g.fillStyle="#f3f4f6";g.fillRect(0,0,size+2*pad,size+2*pad);
  const grid=new Map();
  for(let k=0;k<m.cells.length;k+=4){const i=m.cells[k],j=m.cells[k+1],ratio=m.cells[k+2],st=m.cells[k+3];grid.set(i*n+j,[ratio,st]);
   g.fillStyle=heatColor(ratio,st);g.fillRect(pad+j*cell,pad+i*cell,cell,cell);
   if(st>=3&&cell>=4){g.strokeStyle="#000";g.lineWidth=1;g.strokeRect(pad+j*cell+0.5,pad+i*cell+0.5,cell-1,cell-1);}}
  if(cell<8){for(let k=0;k<m.cells.length;k+=4){const ratio=m.cells[k+2],st=m.cells[k+3];if(st<3&&!(ratio>=0&&ratio<950))continue;
   const x=pad+m.cells[k+1]*cell+cell/2,y=pad+m.cells[k]*cell+cell/2;g.fillStyle=heatColor(ratio,st);g.strokeStyle="#000";g.lineWidth=1.5;
   g.beginPath();g.arc(x,y,5,0,2*Math.PI);g.fill();g.stroke();}}
  const name=(a)=>m.bin>1?HN(a[0])+" .. "+HN(a[1]):HN(a);
  c.addEventListener("mousemove",(ev)=>{const b=c.getBoundingClientRect();const j=Math.floor((ev.clientX-b.left-pad)/cell),
i=Math.floor((ev.clientY-b.top-pad)/cell);
   if(i<0||j<0||i>=n||j>=n){hideTip();return;}const v=grid.get(i*n+j);
   showTip(ev,
name(m.axis[i])+" -> "+name(m.axis[j])+": "+(v?(v[0]<0?"no value":Math.round(v[0]/10)+" % of "+m.refKind)+" ("+ST[v[1]]+")":"not measured")+
(m.bin>1?" [worst pair of the block]":""));
 });
  c.addEventListener("mouseleave",hideTip);
  c.addEventListener("click",
(ev)=>{const b=c.getBoundingClientRect();const i=Math.floor((ev.clientY-b.top-pad)/cell);if(i>=0&&i<n)openHost(m.bin>1?m.axis[i][0]:m.axis[i]);});
  const card=el("div",{cls:"card"},el("div",{text:m.check+(m.target?" ["+m.target+"]":"")+": "+(m.metric||"status only")}),
   el("div",{cls:"muted",
text:m.n+" hosts, "+m.pairs+" pairs; colour = value vs "+m.refKind+" "+num(m.ref)+(m.lower?" (lower is better)":"")+"; fleet median "+num(m.median)+
(m.bin>1?"; "+m.bin+" hosts per row/column, each block shows its worst pair":"")+". Row: host (client), column: peer; black outline: failed pair"+
(cell<8?"; circled: pairs below 95 % or failed":"")+". Hover for names, click for the host."}),
   el("div",{cls:"wrap"},c));
  if(m.worst.length){const t=el("table",null,el("thead",null,el("tr",null,el("th",{text:"host"}),el("th",{text:"peer"}),el("th",{text:m.metric}),
el("th",{text:"status"}))),el("tbody"));
   for(const w of m.worst)t.tBodies[0].appendChild(el("tr",null,el("td",{cls:"h"},hostLink(w[0])),el("td",{cls:"h"},hostLink(w[1])),el("td",{cls:"n",
text:num(w[2])}),el("td",null,badge(ST[w[3]]))));
   card.appendChild(el("div",{cls:"muted",text:"lowest pairs (below 95 % of the "+m.refKind+")"}));card.appendChild(t);}
  box.appendChild(card);}
}
// ---------------------------------------------------------------- GEMM and latency
function bars(title,items,floor,unit){
 const W=Math.max(260,60+items.length*46),H=240,L=50,B=34,T=14;let ymax=Math.max(floor||0,...items.map(b=>b.hi!=null?b.hi:b.v));
 const ticks=niceTicks(ymax||1,4);ymax=ticks[ticks.length-1]||1;
 const Y=(v)=>H-B-(H-T-B)*v/ymax;const s=sv("svg",{width:W,height:H,role:"img"});s.appendChild(sv("rect",{x:0,y:0,width:W,height:H,fill:"#fff"}));
 for(const t of ticks){s.appendChild(sv("line",{x1:L,x2:W-6,y1:Y(t),y2:Y(t),stroke:"#eceef1"}));
 s.appendChild(sv("text",{x:L-5,y:Y(t)+4,"text-anchor":"end"},num(t)));}
 items.forEach((b,k)=>{const x=L+8+k*46;const r=sv("rect",{x:x,y:Y(b.v),width:30,height:Math.max(0,H-B-Y(b.v)),
fill:b.color||"#5b8fd6"});r.appendChild(sv("title",{},b.title));s.appendChild(r);
  if(b.lo!=null){s.appendChild(sv("line",{x1:x+15,x2:x+15,y1:Y(b.lo),y2:Y(b.hi),stroke:"#222"}));}
  if(b.min!=null){const c=sv("circle",{cx:x+15,cy:Y(b.min),r:3.5,fill:b.minColor||"#c0392b"});
 c.appendChild(sv("title",{},b.minTitle||""));s.appendChild(c);}
  s.appendChild(sv("text",{x:x+15,y:H-B+14,"text-anchor":"middle"},b.label));
 if(b.sub)s.appendChild(sv("text",{x:x+15,y:H-B+27,"text-anchor":"middle",style:"font-size:9px"},b.sub));});
 s.appendChild(sv("line",{x1:L,x2:W-6,y1:H-B,y2:H-B,stroke:"#444"}));
 if(floor!=null){s.appendChild(sv("line",{x1:L,x2:W-6,y1:Y(floor),y2:Y(floor),stroke:"#c0392b","stroke-dasharray":"6 4"}));
 s.appendChild(sv("text",{x:W-8,y:Y(floor)-4,"text-anchor":"end",fill:"#c0392b"},"expected min "+num(floor)));}
 return el("div",{cls:"card"},el("div",{text:title+(unit?" ("+unit+")":"")}),s);
}
function renderGemm(){
 const box=$("gemm");box.textContent="";
 for(const g of D.gemm){box.appendChild(bars(g.check+": per GPU, fleet median with p10-p90, red dot = lowest host",g.bars.map(b=>({v:b.med,lo:b.p10,
hi:b.p90,min:b.min,label:"GPU "+b.gpu,
  title:"GPU "+b.gpu+": median "+num(b.med)+" over "+b.n+" hosts",minTitle:"lowest: "+HN(b.minHost)+" "+num(b.min)+" ("+ST[b.minStatus]+")",
minColor:b.minStatus>=2?"#c0392b":"#555"}
 )),g.floor,"TFLOP/s"));}
 for(const l of D.lat){const v=l.values,lo=v[0],hi=v[v.length-1],nb=Math.min(30,Math.max(5,Math.ceil(Math.sqrt(v.length))));
 const w=(hi-lo)/nb||1;const cnt=new Array(nb).fill(0);
  for(const x of v)cnt[Math.min(nb-1,Math.floor((x-lo)/w))]++;
  box.appendChild(bars(l.check+(l.target?" ["+l.target+"]":"")+": distribution of "+l.metric+" over "+v.length+" records",cnt.map((c,i)=>({v:c,
label:num(lo+i*w),title:c+" records in "+num(lo+i*w)+" .. "+num(lo+(i+1)*w)})),null,"records"));
 }
 if(!D.gemm.length&&!D.lat.length)box.appendChild(el("p",{cls:"muted",text:"No GEMM or latency records."}));
}
// ---------------------------------------------------------------- per-host drill-down
function kvText(obj){if(obj==null)return "";if(typeof obj!=="object")return String(obj);
 return Object.keys(obj).sort().map(k=>k+" = "+valText(obj[k])).join("\n");}
function valText(v){if(typeof v==="number")return num(v);if(v&&typeof v==="object"&&!Array.isArray(v)){
 const t=Object.keys(v).filter(k=>k!=="source").map(k=>k+" "+valText(v[k])).join(", ");return v.source?t+" ("+v.source+")":t;}
 return typeof v==="string"?v:JSON.stringify(v);}
function openHost(h){
 const box=$("detail");box.textContent="";box.style.display="block";
 const a=D.starts[h],b=D.starts[h+1];const st=D.hosts[h][1];
 box.appendChild(el("h3",null,"Host ",el("span",{cls:"h",text:HN(h)})," ",st>=0?badge(ST[st]):el("span",{cls:"muted",text:"(peer only)"}),el("span",
{cls:"muted",text:"  "+(b-a)+" records"+(D.unlisted[h]?", "+D.unlisted[h]+" passing pairs not listed (see the heat map)":"")}),
  " ",el("a",{text:"[close]",onclick:()=>{box.style.display="none";}})));
 const extra=[];const gemm=[];
 const t=el("table",null,el("thead",null,el("tr",null,...["check","status","reason","metrics","expect","facts","since last run"].map(x=>el("th",
{text:x})))),el("tbody"));
 for(let i=a;i<b;i++){const r=D.recs[i];const tr=el("tr",null,el("td",{cls:"h",text:recLabel(r)+(r[12]?" (analysis)":"")}),el("td",null,
badge(ST[r[4]])),
   el("td",{cls:"t"},S(r[5]),r[9]?el("details",null,el("summary",{text:"output"}),el("pre",{text:S(r[9])})):null),
   el("td",{cls:"kv"},el("pre",{text:kvText(parse(r[6]))})),el("td",{cls:"kv"},r[7]?el("pre",{text:kvText(parse(r[7]))}):null),
   el("td",{cls:"kv"},r[8]?el("details",null,el("summary",{text:"facts"}),el("pre",{text:kvText(parse(r[8]))})):null),el("td",{cls:"t",
text:S(r[10])}));
  if(!r[11]&&r[3]>=0)tr.title="a pairwise record judged by attribution: it counts toward no host (see the .node/.link records)";
  t.tBodies[0].appendChild(tr);
  const m=parse(r[6]);if(m&&S(r[1]).startsWith("gpu.gemm")&&typeof m.tflops==="number")gemm.push({check:S(r[1]),v:m.tflops,label:"GPU "+S(r[2]),
sub:(m.sm_clock_mhz!=null?num(m.sm_clock_mhz)+" MHz ":"")+(m.power_w!=null?num(m.power_w)+" W":""),
color:r[4]>=3?"#c0392b":r[4]===2?"#e0a030":"#5b8fd6",title:recLabel(r)+": "+num(m.tflops)+" TFLOP/s"});
 }
 const charts=el("div",{cls:"grid"});const mineAll=[];
 for(const p of D.plots){const mine=p.curves.filter(c=>c[0]>=a&&c[0]<b);
 if(mine.length)mineAll.push([Math.max(...mine.map(c=>D.recs[c[0]][4])),p,mine]);}
 mineAll.sort((x,y)=>y[0]-x[0]);
 for(const [_w,p,mine] of mineAll){const ex=mine.slice(0,8).map(c=>{const r=D.recs[c[0]];return {ys:parse(c[1]),name:recLabel(r)+" ("+ST[r[4]]+")",
color:r[4]>=3?"#d62728":r[4]===2?"#ff7f0e":undefined};});
 charts.appendChild(curveChart(p,ex,true));}
 const checks=[...new Set(gemm.map(g=>g.check))];for(const c of checks){
 const fl=(D.gemm.find(g=>g.check===c)||{}).floor;charts.appendChild(bars(c+" on "+HN(h),gemm.filter(g=>g.check===c),fl,"TFLOP/s"));}
 box.appendChild(el("div",{cls:"wrap scroll"},t));box.appendChild(charts);
 box.scrollIntoView({behavior:"auto",block:"start"});
}
// ---------------------------------------------------------------- start
function start(){
 sortable($("hosts"));$("hq").addEventListener("input",hostFilter);$("hs").addEventListener("change",hostFilter);
 document.querySelectorAll("[data-host]").forEach(a=>a.addEventListener("click",(e)=>{e.preventDefault();if(D)openHost(+a.dataset.host);}));
 document.querySelectorAll("[data-st]").forEach(c=>c.addEventListener("click",
()=>{$("hs").value=c.dataset.st;hostFilter();$("hosts").scrollIntoView();}));
 load().then((data)=>{D=data;$("pq").addEventListener("input",renderProblems);$("ps").addEventListener("change",
renderProblems);sortable($("problems"));
  renderProblems();renderPlots();renderHeat();renderGemm();document.body.setAttribute("data-ready","1");
 }).catch((err)=>{$("loaderr").textContent="The interactive parts could not load: "+err.message;document.body.setAttribute("data-ready","error");});
}
start();
})();
"""

TEMPLATE = r"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{ verdict_word }}: fleet acceptance report {{ run.run_id }}</title>
<style>{{ css }}</style></head><body><main>
<div class="head"><h1>Fleet acceptance: <span class="badge {{ summary.worst_status }}" style="font-size:18px">{{ summary.worst_status }}</span></h1>
<div class="chips">{{ summary.hosts_total }} hosts:
{% for s in statuses %}{% if summary.hosts_by_status[s] %}<span class="badge {{ s }}" data-st="{{ s }}" title="show these hosts">
{{- summary.hosts_by_status[s] }} {{ s }}</span>{% endif %}{% endfor %}
<span class="muted">{{ summary.records_total }} records</span></div></div>
{% if run.interrupted %}<div class="banner">Interrupted run ({{ run.interrupt_reason or "interrupted" }}): the records measured
 before it stopped; the checks after that point did not run.</div>{% endif %}
<div class="meta">{% for k, v in meta %}<div>{{ k }}: <strong>{{ v }}</strong></div>{% endfor %}</div>
{% for p in problems %}<div class="banner">analysis problem: {{ p }}</div>{% endfor %}
<p id="loaderr" class="muted"></p>

<h2>Findings ({{ findings | length }})</h2>
{% if findings %}<div class="wrap"><table id="findings"><thead><tr><th>status</th><th>kind</th><th>check</th><th>hosts</th><th>evidence</th></tr></thead><tbody>
{% for f in findings[:max_findings] %}<tr><td><span class="badge {{ f.status }}">{{ f.status }}</span></td><td>{{ f.kind }}</td>
<td class="h">{{ f.check }}{% if f.target %} [{{ f.target }}]{% endif %}</td>
<td class="h">{% for h in f.hosts[:6] %}<a data-host="{{ host_index.get(h, -1) }}">{{ h }}</a>{% if not loop.last %}, {% endif %}{% endfor %}
{%- if f.hosts | length > 6 %} and {{ f.hosts | length - 6 }} more{% endif %}</td>
<td class="t">{{ f.text }}</td></tr>{% endfor %}</tbody></table></div>
{% if findings | length > max_findings %}<p class="muted">{{ findings | length - max_findings }} more findings in results.json.</p>{% endif %}
{% else %}<p>None: no bad node, bad link, drift or fleet outlier found.</p>{% endif %}
<div id="detail" style="display:none"></div>

<h2>Problems</h2>
<p class="muted">Every warn/fail/error record that counts toward a host's verdict (pairwise records that attribution
judged count toward no host: their verdict is in the .node/.link records and the findings above). Click a host for its records.</p>
<div class="ctl"><input id="pq" placeholder="filter host, check, reason" size="34"><select id="ps"><option value="">any status</option>
{% for s in ("error", "fail", "warn") %}<option>{{ s }}</option>{% endfor %}</select><span id="pcount" class="muted"></span></div>
<div class="scroll"><table id="problems"><thead><tr><th>host</th><th>status</th><th>check</th><th>reason</th><th>since last run</th></tr></thead><tbody>
{% for r in static_problems %}<tr><td class="h">{{ r.host }}</td><td><span class="badge {{ r.status }}">{{ r.status }}</span></td>
<td class="h">{{ r.label }}</td><td class="t">{{ r.reason }}</td><td class="t">{{ r.delta }}</td></tr>{% endfor %}
</tbody></table></div>

<h2>Hosts</h2>
<div class="ctl"><input id="hq" placeholder="filter host or check" size="30"><select id="hs"><option value="">any verdict</option>
{% for s in statuses %}<option>{{ s }}</option>{% endfor %}</select><span id="hcount" class="muted">{{ hosts | length }} shown</span></div>
<div class="scroll"><table id="hosts"><thead><tr><th>host</th><th>verdict</th>{% for s in statuses %}<th>{{ s }}</th>
{% endfor %}<th>checks at its verdict</th></tr></thead><tbody>
{% for h in hosts %}<tr data-s="{{ h.status }}"><td class="h"><a data-host="{{ h.i }}">{{ h.host }}</a></td>
<td data-v="{{ 9 - h.rank }}"><span class="badge {{ h.status }}">{{ h.status }}</span></td>
{% for s in statuses %}<td class="n">{{ h.counts[s] }}</td>{% endfor %}<td>{{ h.checks }}</td></tr>{% endfor %}
</tbody></table></div>

<h2>Bandwidth by message size</h2>
<p class="muted">Fleet median (line), p10-p90 band, expectation (dashed red), the failing/warning or lowest curves named; log2 size axis.</p>
<div id="plots" class="grid"></div>
<h2>Pairwise heat maps</h2>
<div id="heat" class="grid"></div>
<h2>GPU GEMM and latency</h2>
<div id="gemm" class="grid"></div>
{% if comparison %}<h2>Comparison</h2>
<p>Against {{ comparison.against }}, noise margin {{ comparison.margin }} %: {{ comparison.compared }} records compared,
<strong>{{ comparison.totals.regressions }} regressions</strong>, {{ comparison.totals.improvements }} improvements,
{{ comparison.totals.status_changes }} status changes.</p>
{% for title, rows in comparison.lists %}{% if rows %}<h3>{{ title }}</h3>
<div class="scroll"><table><thead><tr><th>host</th><th>check</th><th>metric</th><th>before</th><th>now</th><th>change</th></tr></thead><tbody>
{% for d in rows %}<tr><td class="h">{{ d.host }}</td><td class="h">{{ d.label }}</td><td>{{ d.metric }}</td><td class="n">{{ d.before }}</td>
<td class="n">{{ d.now }}</td><td class="n">{{ d.change }}</td></tr>{% endfor %}</tbody></table></div>{% endif %}{% endfor %}{% endif %}
{% if changes %}<h2>Changes since the previous run</h2>
<div class="scroll"><table><thead><tr><th>host</th><th>check</th><th>before</th><th>now</th><th>detail</th></tr></thead><tbody>
{% for d in changes %}<tr><td class="h">{{ d.host }}</td><td class="h">{{ d.label }}</td>
<td><span class="badge {{ d.previous_status }}">{{ d.previous_status }}</span></td>
<td><span class="badge {{ d.status }}">{{ d.status }}</span></td><td>{{ d.text }}</td></tr>{% endfor %}</tbody></table></div>{% endif %}
<p class="muted">History: {{ history_text }}. Full data: results.json next to this file.</p>
</main>
<script type="application/json" id="report-data" data-mode="{{ data_mode }}">{{ data_text | safe }}</script>
<script>{{ js | safe }}</script>
</body></html>
"""

_ENV = Environment(autoescape=True, trim_blocks=False)
_TEMPLATE = _ENV.from_string(TEMPLATE)


def render(report, deltas_text, changes, history_text, counted=None):
    """The page for a report structure of ``fleet.build_report`` (``counted``: as for :func:`build_data`)."""
    summary = report["summary"]
    run = report.get("run") or {}
    counted = counted_ids(report["records"]) if counted is None else counted
    data = build_data(report, deltas_text, counted)
    mode, text = embed(data)
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
                       "reason": rec.get("reason") or "", "delta": deltas_text(rec)})
    started, ended = run.get("started") or "", run.get("ended") or ""
    meta = [("run", run.get("run_id")), ("started", started), ("ended", ended),
            ("playbooks", ", ".join(run.get("playbooks") or []) or "-"),
            ("hosts targeted", "%s of %s in the inventory" % (
                run.get("hosts_targeted_count", "?"), run.get("inventory_host_count", "?"))),
            ("ansible-core", run.get("ansible_version")), ("aifabric.acceptance", run.get("collection_version")),
            ("python", run.get("python_version")), ("controller", run.get("controller"))]
    if run.get("check_mode"):
        meta.append(("check mode", "yes"))
    if run.get("required_checks"):
        meta.append(("required checks", fmt(run["required_checks"])[:300]))
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
    return _TEMPLATE.render(
        comparison=comparison, css=CSS, js=JS, run=run, summary=summary, statuses=order, verdict_word=summary["worst_status"].upper(),
        meta=[(k, v if v not in (None, "") else "-") for k, v in meta], problems=report.get("problems") or [],
        findings=finding_rows(report.get("findings")), max_findings=FINDINGS_SHOWN, host_index=host_index,
        static_problems=static, hosts=hosts, changes=changes, history_text=history_text,
        data_mode=mode, data_text=text)
