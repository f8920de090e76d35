# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Report writers: results.json, summary.md, junit.xml and one self-contained report.html.

Input is the report structure of ``fleet.build_report`` (run, summary, findings,
problems, history, records). Every file is written to a temporary name and moved into
place with ``os.replace``, so a reader never sees half a file. All text that came from
a tool or a host (reasons, raw output, host names, facts) is escaped: HTML through
Jinja2 with autoescape, XML through ElementTree after removing characters XML 1.0 forbids.

Controller-only (plugin_utils), no Ansible types.
"""

from __future__ import annotations

import contextlib
import datetime
import glob
import html
import json
import math
import os
import re
import shutil
import signal
import statistics
import tempfile
import threading
import time
import xml.etree.ElementTree as ET

from jinja2 import Environment

from ansible_collections.aifabric.acceptance.plugins.module_utils import results

FORMATS = {"json": "results.json", "md": "summary.md", "junit": "junit.xml", "html": "report.html"}
STATUS_ORDER = tuple(sorted(results.STATUSES, key=results.SEVERITY.get, reverse=True))   # worst first
# Heat-map value: the first of these metrics present in a pairwise record.
HEAT_METRICS = ("bw_avg_gbit_s", "busbw_max_gbyte_s", "lat_typical_us")
HEAT_MAX_HOSTS = 128     # above this, a matrix is shown as its worst pairs and per-host spread
HEAT_WORST_PAIRS = 50
# Curve axes: the first of these keys present (as a number) in a series row.
SERIES_X = ("size_bytes", "msg_size_bytes", "bytes", "size")
SERIES_Y = ("oop_busbw_gbyte_s", "busbw_gbyte_s", "ip_busbw_gbyte_s", "bus_bw_gbyte_s", "busbw", "bus_bw", "bw_avg_gbit_s", "bw_average_gbit_s",
            "bw_avg_mbyte_s", "bw_avg_mib_s", "bw_avg", "algbw_gbyte_s", "algbw", "alg_bw", "bw_gbit_s", "bw")
MAX_CURVES_PER_CHART = 64
_XML_BAD = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


# ---------------------------------------------------------------- files


@contextlib.contextmanager
def deferred_interrupts():
    """Hold SIGINT and SIGTERM while the block runs, then deliver them (main thread only).

    Writing a report and its history row is one step for the user: a Ctrl-C that lands in
    the middle takes effect right after it (as KeyboardInterrupt, or the earlier handler),
    never half way.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    held = []
    previous = {}

    def hold(signum, _frame):
        held.append(signum)

    for signum in (signal.SIGINT, signal.SIGTERM):
        try:
            previous[signum] = signal.signal(signum, hold)
        except (ValueError, OSError):
            pass
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler if handler is not None else signal.SIG_DFL)
        if held:
            signum = held[0]
            handler = previous.get(signum)
            if callable(handler):
                handler(signum, None)
            elif handler != signal.SIG_IGN:
                if signum == signal.SIGINT:
                    raise KeyboardInterrupt()
                os.kill(os.getpid(), signum)


def write_atomic(path, text):
    """Write text to path through a temporary file in the same directory and os.replace."""
    tmp = "%s.tmp-%d" % (path, os.getpid())
    try:
        with open(tmp, "w", encoding="utf-8", newline="\n") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def run_dir_name(run):
    """``<UTC start timestamp>-<short run id>``, e.g. 20261122T101500Z-1a2b3c4d."""
    started = run.get("started") or ""
    try:
        stamp = datetime.datetime.strptime(started, "%Y-%m-%dT%H:%M:%SZ").strftime("%Y%m%dT%H%M%SZ")
    except ValueError:
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return "%s-%s" % (stamp, str(run.get("run_id") or "norunid")[:8])


def point_latest(output_dir, run_dir):
    """``<output_dir>/latest`` symlink to the run directory, plus a LATEST file naming it."""
    name = os.path.basename(run_dir.rstrip(os.sep))
    write_atomic(os.path.join(output_dir, "LATEST"), name + "\n")
    link = os.path.join(output_dir, "latest")
    tmp = "%s.tmp-%d" % (link, os.getpid())
    try:
        if os.path.lexists(tmp):
            os.unlink(tmp)
        os.symlink(name, tmp)
        os.replace(tmp, link)
    except OSError:
        if os.path.lexists(tmp):
            os.unlink(tmp)      # no symlinks here (some filesystems): LATEST still points
    return link


def _same_content(path, text):
    try:
        with open(path, encoding="utf-8", newline="") as handle:
            return handle.read() == text
    except (OSError, UnicodeDecodeError):
        return False


def write_report(report, directory, formats=None, check_mode=False):
    """Write the chosen formats into directory (a file whose content is unchanged is left alone).

    Returns ({format: path}, [formats whose file changed]). In check mode nothing is written.
    """
    if not check_mode:
        os.makedirs(directory, exist_ok=True)
    writers = {"json": render_json, "md": render_md, "junit": render_junit, "html": render_html}
    files, changed = {}, []
    for fmt in formats or list(FORMATS):
        path = os.path.join(directory, FORMATS[fmt])
        text = writers[fmt](report)
        files[fmt] = path
        if _same_content(path, text):
            continue
        changed.append(fmt)
        if not check_mode:
            write_atomic(path, text)
    return files, changed


STALE_PARTIAL_S = 3600


def _remove_stale_partials(parent):
    """Temporary report directories of a writer that was killed (SIGKILL) more than an hour ago."""
    now = time.time()
    for path in glob.glob(os.path.join(glob.escape(parent), ".*.tmp-*")):
        try:
            if os.path.isdir(path) and not os.path.islink(path) and now - os.lstat(path).st_mtime > STALE_PARTIAL_S:
                shutil.rmtree(path, ignore_errors=True)
        except OSError:
            pass


def write_report_dir(report, directory, formats=None):
    """Write a NEW report directory atomically: every file goes into a hidden temporary
    directory next to it, which is then renamed to ``directory``. A reader (and an interrupted
    run) sees either no directory or a complete one. Returns ({format: path}, [formats])."""
    parent = os.path.dirname(os.path.abspath(directory))
    os.makedirs(parent, exist_ok=True)
    _remove_stale_partials(parent)
    tmp = tempfile.mkdtemp(prefix=".%s.tmp-" % os.path.basename(directory), dir=parent)
    try:
        umask = os.umask(0o022)
        os.umask(umask)
        os.chmod(tmp, 0o777 & ~umask)       # as a plain mkdir would make it (mkdtemp makes 0700)
        _files, changed = write_report(report, tmp, formats)
        os.rename(tmp, directory)           # atomic; fails rather than merge into an existing directory
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    files = dict((fmt, os.path.join(directory, FORMATS[fmt])) for fmt in formats or list(FORMATS))
    return files, changed


# ---------------------------------------------------------------- helpers


def label(record):
    """check[target][peer]: the name of a record in junit and tables."""
    name = record.get("check") or "?"
    if record.get("target"):
        name += "[%s]" % record["target"]
    if record.get("peer"):
        if not record.get("target"):
            name += "[-]"
        name += "[%s]" % record["peer"]
    return name


def _key(record):
    return (record.get("host") or "", record.get("check") or "", record.get("target") or "", record.get("peer") or "")


def _delta_index(report):
    deltas = (report.get("history") or {}).get("deltas") or []
    return dict(((d.get("host") or "", d.get("check") or "", d.get("target") or "", d.get("peer") or ""), d)
                for d in deltas)


def _num(value):
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    return float(value)


def fmt_value(value):
    if isinstance(value, float):
        if value == 0 or 0.001 <= abs(value) < 1e9:
            return ("%.3f" % value).rstrip("0").rstrip(".")
        return "%.3g" % value
    if isinstance(value, (dict, list)):
        return json.dumps(value, sort_keys=True, default=str)
    return str(value)


def describe_delta(delta):
    """One line: 'was fail (run 1a2b3c4d) -> now pass; bw_avg_gbit_s +12.5 (+3.4%)'."""
    if not delta:
        return ""
    run = str(delta.get("previous_run") or "")[:8]
    if delta.get("new"):
        return "new since run %s" % run
    parts = []
    if delta.get("status_changed"):
        parts.append("was %s (run %s), now %s" % (delta.get("previous_status"), run, delta.get("status")))
    else:
        parts.append("%s as in run %s" % (delta.get("status"), run))
    for name, m in sorted((delta.get("metrics") or {}).items()):
        if m.get("delta"):
            pct = "" if m.get("delta_pct") is None else " (%+.1f%%)" % m["delta_pct"]
            parts.append("%s %s%s" % (name, ("%+.6g" % m["delta"]), pct))
    return "; ".join(parts)


def _sorted_records(records):
    return sorted(records, key=lambda r: (-results.SEVERITY.get(r.get("status"), 0), r.get("host") or "", label(r)))


# ---------------------------------------------------------------- json


def render_json(report):
    return json.dumps(report, indent=1, ensure_ascii=False, allow_nan=False, default=str) + "\n"


# ---------------------------------------------------------------- markdown


def _md(text):
    text = "" if text is None else str(text)
    text = html.escape(" ".join(text.split()), quote=False)
    return text.replace("|", "\\|").replace("`", "'")


def render_md(report):
    run, summary = report.get("run") or {}, report["summary"]
    deltas = _delta_index(report)
    out = ["# Fleet acceptance report", ""]
    out.append("Run `%s` · %s → %s · ansible-core %s · aifabric.acceptance %s" % (
        _md(run.get("run_id")), _md(run.get("started")), _md(run.get("ended")),
        _md(run.get("ansible_version")), _md(run.get("collection_version"))))
    out.append("")
    if run.get("interrupted"):
        out.append("> **Interrupted run** (%s): the records measured before it stopped; the checks after "
                   "that point did not run." % _md(run.get("interrupt_reason") or "interrupted"))
        out.append("")
    out.append("**%s** — %d hosts (targeted %s, inventory %s), %d records" % (
        summary["worst_status"].upper(), summary["hosts_total"], run.get("hosts_targeted_count", "?"),
        run.get("inventory_host_count", "?"), summary["records_total"]))
    out.append("")
    out.append("| | " + " | ".join(STATUS_ORDER) + " |")
    out.append("|---|" + "---|" * len(STATUS_ORDER))
    out.append("| records | " + " | ".join(str(summary["counts"][s]) for s in STATUS_ORDER) + " |")
    out.append("| hosts (worst status) | " + " | ".join(str(summary["hosts_by_status"][s]) for s in STATUS_ORDER) + " |")
    out.append("")
    for problem in report.get("problems") or []:
        out.append("> analysis problem: %s" % _md(problem))
    findings = report.get("findings") or []
    out += ["## Findings", ""]
    if not findings:
        out += ["None.", ""]
    else:
        out.append("| kind | check | target | hosts | evidence |")
        out.append("|---|---|---|---|---|")
        for f in findings:
            hosts = f.get("hosts") or []
            out.append("| %s | %s | %s | %s | %s |" % (
                _md(f.get("kind")), _md(f.get("check")), _md(f.get("target") or ""),
                _md(", ".join(hosts[:20]) + (" (+%d)" % (len(hosts) - 20) if len(hosts) > 20 else "")),
                _md(fmt_value(f.get("evidence") or {})[:400])))
        out.append("")
    out += ["## Hosts", "", "| host | worst | error | fail | warn | skip | pass | checks |", "|---|---|---|---|---|---|---|---|"]
    for h in summary["hosts"]:
        c = h["counts"]
        out.append("| %s | %s | %d | %d | %d | %d | %d | %s |" % (
            _md(h["host"]), h["status"], c["error"], c["fail"], c["warn"], c["skip"], c["pass"],
            _md(", ".join(h["checks"][:8]))))
    out.append("")
    bad = [r for r in _sorted_records(report["records"]) if r.get("status") in ("error", "fail", "warn")]
    out += ["## Problems", ""]
    if not bad:
        out += ["None.", ""]
    else:
        out += ["| host | check | status | reason | since last run |", "|---|---|---|---|---|"]
        for r in bad:
            out.append("| %s | %s | %s | %s | %s |" % (
                _md(r.get("host")), _md(label(r)), r["status"], _md(r.get("reason")),
                _md(describe_delta(deltas.get(_key(r))))))
        out.append("")
    changed = [d for d in deltas.values() if d.get("status_changed") and not d.get("new")]
    history = report.get("history") or {}
    out += ["## Changes since the previous run", ""]
    if not history.get("db"):
        out += ["History is off.", ""]
    elif not deltas:
        out += ["No earlier run of these hosts in %s." % _md(history.get("db")), ""]
    else:
        new = sum(1 for d in deltas.values() if d.get("new"))
        out.append("%d status changes, %d new checks (history: %s)." % (len(changed), new, _md(history.get("db"))))
        out.append("")
        if changed:
            out += ["| host | check | before | now | metrics |", "|---|---|---|---|---|"]
            for d in sorted(changed, key=lambda d: (d["host"], d["check"])):
                out.append("| %s | %s | %s | %s | %s |" % (
                    _md(d["host"]), _md(label(d)), d.get("previous_status"), d.get("status"),
                    _md(describe_delta(dict(d, status_changed=False)).split("; ", 1)[-1] if d.get("metrics") else "")))
            out.append("")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- junit


def _x(text):
    return _XML_BAD.sub("\ufffd", "" if text is None else str(text))


def _metrics_text(record):
    lines = ["%s = %s" % (k, fmt_value(v)) for k, v in sorted((record.get("metrics") or {}).items())]
    if record.get("expect"):
        lines.append("expect: %s" % fmt_value(record["expect"]))
    return "\n".join(lines)


def render_junit(report):
    records = report["records"]
    counts = report["summary"]["counts"]
    run = report.get("run") or {}
    suites = ET.Element("testsuites", name="aifabric.acceptance")
    suite = ET.SubElement(suites, "testsuite", {
        "name": "aifabric.acceptance", "tests": str(len(records)), "failures": str(counts["fail"]),
        "errors": str(counts["error"]), "skipped": str(counts["skip"]),
        "timestamp": _x(run.get("started") or ""), "id": _x(run.get("run_id") or ""),
    })
    for rec in records:
        case = ET.SubElement(suite, "testcase", {
            "classname": _x(rec.get("host") or "(no host)"), "name": _x(label(rec)),
            "time": "%.3f" % (_num(rec.get("duration_s")) or 0.0),
        })
        status, reason = rec.get("status"), _x(rec.get("reason") or "")
        details = "\n".join(t for t in (_metrics_text(rec), rec.get("raw") or "") if t)
        if status == "fail":
            ET.SubElement(case, "failure", message=reason, type="fail").text = _x(details or reason)
        elif status == "error":
            ET.SubElement(case, "error", message=reason, type="error").text = _x(details or reason)
        elif status == "skip":
            ET.SubElement(case, "skipped", message=reason)
        out = []
        if status == "warn":
            out.append("WARN: %s" % (rec.get("reason") or ""))
        if status in ("pass", "warn") and details:
            out.append(details)
        if out:
            ET.SubElement(case, "system-out").text = _x("\n".join(out))
    ET.indent(suites)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode") + "\n"


# ---------------------------------------------------------------- html


def _heat_color(value, median, lower_is_better):
    if value is None or not median:
        return "#ddd"
    score = (median / value if value else 0.0) if lower_is_better else value / median
    hue = 120.0 * max(0.0, min(1.0, (score - 0.5) / 0.5))
    return "hsl(%d, 65%%, 72%%)" % round(hue)


def heatmaps(records):
    """One matrix per (check, target) of the pairwise records (those with ``peer``)."""
    groups = {}
    for rec in records:
        if rec.get("peer"):
            groups.setdefault((rec["check"], rec.get("target")), []).append(rec)
    maps = []
    for (check, target), recs in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        metric = next((m for m in HEAT_METRICS
                       if any(_num((r.get("metrics") or {}).get(m)) is not None for r in recs)), None)
        cells = {}
        for rec in recs:
            value = _num((rec.get("metrics") or {}).get(metric)) if metric else None
            cells[(rec.get("host") or "", rec["peer"])] = (value, rec)
        values = [v for v, _r in cells.values() if v is not None]
        median = statistics.median(values) if values else None
        lower = bool(metric) and metric.endswith("_us")
        rows = sorted(set(h for h, _p in cells))
        cols = sorted(set(p for _h, p in cells))
        if max(len(rows), len(cols)) > HEAT_MAX_HOSTS:
            # A full N x N table is quadratic (1024 hosts: a million cells, tens of MB of HTML):
            # show the worst pairs and every host's spread instead.
            maps.append(_compact_matrix(check, target, metric, median, lower, cells))
            continue
        table = []
        for host in rows:
            line = []
            for peer in cols:
                if (host, peer) not in cells:
                    line.append(None)
                    continue
                value, rec = cells[(host, peer)]
                line.append({
                    "text": "-" if value is None else fmt_value(round(value, 2)),
                    "color": _heat_color(value, median, lower),
                    "status": rec.get("status"),
                    "title": "%s -> %s: %s %s%s" % (host, peer, rec.get("status"), metric or "",
                                                    (" - " + rec["reason"]) if rec.get("reason") else ""),
                })
            table.append({"host": host, "cells": line})
        maps.append({"check": check, "target": target, "metric": metric, "median": median,
                     "median_text": "-" if median is None else fmt_value(round(median, 3)),
                     "lower_is_better": lower, "cols": cols, "rows": table})
    return maps


def _compact_matrix(check, target, metric, median, lower, cells):
    """The large-fleet form of a matrix: the worst pairs, then each host's edges (min/median/max)."""
    def badness(item):
        value = item[1][0]
        status = item[1][1].get("status")
        worst_first = 0 if status in ("fail", "error") else 1
        if value is None:
            return (worst_first, 0.0)
        return (worst_first, -value if lower else value)

    worst = []
    for (host, peer), (value, rec) in sorted(cells.items(), key=badness)[:HEAT_WORST_PAIRS]:
        worst.append({"host": host, "peer": peer, "status": rec.get("status"),
                      "text": "-" if value is None else fmt_value(round(value, 2)),
                      "color": _heat_color(value, median, lower), "reason": rec.get("reason") or ""})
    edges = {}
    for (host, peer), (value, _rec) in cells.items():
        if value is not None:
            edges.setdefault(host, []).append(value)
            edges.setdefault(peer, []).append(value)
    spread = []
    for host in sorted(edges):
        values = sorted(edges[host])
        low = values[-1] if lower else values[0]
        spread.append({"host": host, "count": len(values), "min": fmt_value(round(values[0], 2)),
                       "median": fmt_value(round(statistics.median(values), 2)),
                       "max": fmt_value(round(values[-1], 2)), "color": _heat_color(low, median, lower)})
    spread.sort(key=lambda row: row["color"] == "#ddd")
    return {"check": check, "target": target, "metric": metric, "median": median, "compact": True,
            "median_text": "-" if median is None else fmt_value(round(median, 3)), "lower_is_better": lower,
            "pairs": len(cells), "worst": worst, "spread": spread, "cols": [], "rows": []}


def _series_points(series):
    if not series:
        return None, None, []
    xkey = next((k for k in SERIES_X if any(_num(row.get(k)) is not None for row in series)), None)
    ykey = next((k for k in SERIES_Y if any(_num(row.get(k)) is not None for row in series)), None)
    if ykey is None:
        ykey = next((k for row in series for k in row if "bw" in k.lower() and _num(row.get(k)) is not None), None)
    if xkey is None or ykey is None:
        return xkey, ykey, []
    points = sorted((_num(r.get(xkey)), _num(r.get(ykey))) for r in series
                    if _num(r.get(xkey)) is not None and _num(r.get(ykey)) is not None)
    return xkey, ykey, points


def curves(records, width=560, height=260, pad=46):
    """One inline-SVG chart per (check, target): bandwidth (y) against size (x), one line per record."""
    groups = {}
    for rec in records:
        xkey, ykey, points = _series_points(rec.get("series") or [])
        if len(points) >= 2:
            groups.setdefault((rec["check"], rec.get("target")), []).append((rec, xkey, ykey, points))
    charts = []
    colors = {"fail": "#c0392b", "error": "#7d3c98", "warn": "#d68910"}
    palette = ("#1f77b4", "#2ca02c", "#17becf", "#7f7f7f", "#9467bd", "#8c564b", "#1a5276", "#117864")
    for (check, target), items in sorted(groups.items(), key=lambda kv: (kv[0][0], kv[0][1] or "")):
        shown = items[:MAX_CURVES_PER_CHART]
        xs = [x for _r, _xk, _yk, pts in shown for x, _y in pts]
        ys = [y for _r, _xk, _yk, pts in shown for _x, y in pts]
        xmin, xmax, ymax = min(xs), max(xs), max(ys) or 1.0
        use_log = xmin > 0 and xmax / xmin >= 16

        def sx(x, xmin=xmin, xmax=xmax, use_log=use_log):
            if use_log:
                span = math.log2(xmax) - math.log2(xmin) or 1.0
                return pad + (width - 2 * pad) * (math.log2(x) - math.log2(xmin)) / span
            span = (xmax - xmin) or 1.0
            return pad + (width - 2 * pad) * (x - xmin) / span

        def sy(y, ymax=ymax):
            return height - pad + -(height - 2 * pad) * (y / ymax)

        lines = []
        for i, (rec, _xk, _yk, pts) in enumerate(shown):
            lines.append({
                "points": " ".join("%.1f,%.1f" % (sx(x), sy(y)) for x, y in pts),
                "color": colors.get(rec.get("status"), palette[i % len(palette)]),
                "title": "%s%s: %s" % (rec.get("host") or "", (" -> " + rec["peer"]) if rec.get("peer") else "",
                                       rec.get("status")),
            })
        charts.append({
            "check": check, "target": target, "xkey": shown[0][1], "ykey": shown[0][2],
            "width": width, "height": height, "pad": pad, "lines": lines,
            "omitted": len(items) - len(shown), "log": use_log,
            "xmin": fmt_value(xmin), "xmax": fmt_value(xmax), "ymax": fmt_value(round(ymax, 3)),
            "x0": pad, "x1": width - pad, "y0": height - pad, "y1": pad,
        })
    return charts


HTML_TEMPLATE = r"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<title>Fleet acceptance report {{ run.run_id }}</title>
<style>
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:.5em 0 1.5em}th,td{border:1px solid #ccc;padding:3px 7px;text-align:left;vertical-align:top}
th{background:#f0f0f0}.pass{background:#d5f5e3}.skip{background:#eaecee}.warn{background:#fdebd0}
.fail{background:#f5b7b1}.error{background:#d7bde2}.mono,pre{font-family:ui-monospace,Menlo,Consolas,monospace;font-size:12px}
pre{white-space:pre-wrap;background:#f8f8f8;padding:4px;margin:2px 0;max-height:20em;overflow:auto}
.heat td{text-align:right;font-family:ui-monospace,monospace;font-size:12px;min-width:3.5em}
.heat td.bad{outline:2px solid #c0392b}.muted{color:#777}details{margin:.3em 0}summary{cursor:pointer}
.counts span{display:inline-block;padding:2px 8px;margin-right:4px;border-radius:3px}
</style></head><body>
<h1>Fleet acceptance report: <span class="{{ summary.worst_status }}">{{ summary.worst_status | upper }}</span></h1>
<p class="mono">run {{ run.run_id }} · {{ run.started }} → {{ run.ended }} · ansible-core {{ run.ansible_version }}
 · aifabric.acceptance {{ run.collection_version }} · {{ run.playbooks | join(", ") }}</p>
{% if run.interrupted %}<p class="warn">Interrupted run ({{ run.interrupt_reason or "interrupted" }}): the records measured
 before it stopped; the checks after that point did not run.</p>{% endif %}
<p>{{ summary.hosts_total }} hosts (targeted {{ run.hosts_targeted_count }}, inventory {{ run.inventory_host_count }}),
 {{ summary.records_total }} records.</p>
<p class="counts">records: {% for s in statuses %}<span class="{{ s }}">{{ s }} {{ summary.counts[s] }}</span>{% endfor %}</p>
<p class="counts">hosts by worst status: {% for s in statuses %}<span class="{{ s }}">{{ s }} {{ summary.hosts_by_status[s] }}</span>{% endfor %}</p>
{% for p in problems %}<p class="warn">analysis problem: {{ p }}</p>{% endfor %}

<h2>Findings</h2>
{% if findings %}<table><tr><th>kind</th><th>check</th><th>target</th><th>hosts</th><th>evidence</th></tr>
{% for f in findings %}<tr><td>{{ f.kind }}</td><td>{{ f.check }}</td><td>{{ f.target or "" }}</td>
<td>{{ f.hosts[:30] | join(", ") }}{% if f.hosts | length > 30 %} (+{{ f.hosts | length - 30 }}){% endif %}</td>
<td><pre>{{ f.evidence_text }}</pre></td></tr>{% endfor %}</table>{% else %}<p>None.</p>{% endif %}

<h2>Hosts</h2>
<table><tr><th>host</th><th>worst</th>{% for s in statuses %}<th>{{ s }}</th>{% endfor %}<th>checks at worst status</th></tr>
{% for h in summary.hosts %}<tr><td><a href="#host-{{ loop.index }}">{{ h.host }}</a></td><td class="{{ h.status }}">{{ h.status }}</td>
{% for s in statuses %}<td>{{ h.counts[s] }}</td>{% endfor %}<td>{{ h.checks[:8] | join(", ") }}</td></tr>{% endfor %}</table>

{% if heatmaps %}<h2>Pairwise matrices</h2>
<p class="muted">Row: host (client side), column: peer. Cell colour relative to the matrix median
(green at or better than the median, red at half of it or worse); a red outline marks a failed or errored pair.</p>
{% for m in heatmaps %}<h3>{{ m.check }}{% if m.target %} [{{ m.target }}]{% endif %}: {{ m.metric or "no metric" }}
 (median {{ m.median_text }}{% if m.lower_is_better %}, lower is better{% endif %})</h3>
{% if m.compact %}<p class="muted">{{ m.pairs }} pairs: too many hosts for a full matrix; the worst
{{ m.worst | length }} pairs, then every host's pairs (worst end coloured).</p>
<table class="heat"><tr><th>host</th><th>peer</th><th>status</th><th>{{ m.metric }}</th><th>reason</th></tr>
{% for w in m.worst %}<tr><td>{{ w.host }}</td><td>{{ w.peer }}</td><td class="{{ w.status }}">{{ w.status }}</td>
<td style="background:{{ w.color }}">{{ w.text }}</td><td>{{ w.reason }}</td></tr>{% endfor %}</table>
<details><summary>every host's pairs</summary><table class="heat"><tr><th>host</th><th>pairs</th><th>min</th><th>median</th><th>max</th></tr>
{% for r in m.spread %}<tr><td>{{ r.host }}</td><td>{{ r.count }}</td><td style="background:{{ r.color }}">{{ r.min }}</td>
<td>{{ r.median }}</td><td>{{ r.max }}</td></tr>{% endfor %}</table></details>
{% else %}<table class="heat"><tr><th></th>{% for c in m.cols %}<th>{{ c }}</th>{% endfor %}</tr>
{% for row in m.rows %}<tr><th>{{ row.host }}</th>{% for cell in row.cells %}{% if cell %}
<td style="background:{{ cell.color }}" class="{{ 'bad' if cell.status in ('fail', 'error') else '' }}"
 title="{{ cell.title }}">{{ cell.text }}</td>{% else %}<td class="muted">·</td>{% endif %}{% endfor %}</tr>
{% endfor %}</table>{% endif %}{% endfor %}{% endif %}

{% if curves %}<h2>Bandwidth by message size</h2>
{% for c in curves %}<h3>{{ c.check }}{% if c.target %} [{{ c.target }}]{% endif %}</h3>
<svg xmlns="http://www.w3.org/2000/svg" width="{{ c.width }}" height="{{ c.height }}" role="img">
<rect x="0" y="0" width="{{ c.width }}" height="{{ c.height }}" fill="#fff"/>
<line x1="{{ c.x0 }}" y1="{{ c.y0 }}" x2="{{ c.x1 }}" y2="{{ c.y0 }}" stroke="#444"/>
<line x1="{{ c.x0 }}" y1="{{ c.y0 }}" x2="{{ c.x0 }}" y2="{{ c.y1 }}" stroke="#444"/>
<text x="{{ c.x0 }}" y="{{ c.y0 + 16 }}" font-size="11">{{ c.xmin }}</text>
<text x="{{ c.x1 }}" y="{{ c.y0 + 16 }}" font-size="11" text-anchor="end">{{ c.xmax }}</text>
<text x="{{ (c.x0 + c.x1) / 2 }}" y="{{ c.height - 6 }}" font-size="11" text-anchor="middle">{{ c.xkey }}{% if c.log %} (log2){% endif %}</text>
<text x="{{ c.x0 - 4 }}" y="{{ c.y1 + 4 }}" font-size="11" text-anchor="end">{{ c.ymax }}</text>
<text x="{{ c.x0 - 4 }}" y="{{ c.y0 }}" font-size="11" text-anchor="end">0</text>
<text x="{{ c.x0 }}" y="{{ c.y1 - 10 }}" font-size="11">{{ c.ykey }}</text>
{% for l in c.lines %}<polyline fill="none" stroke="{{ l.color }}" stroke-width="1.5" points="{{ l.points }}"><title>{{ l.title }}</title></polyline>
{% endfor %}</svg>{% if c.omitted %}<p class="muted">{{ c.omitted }} more curves not drawn.</p>{% endif %}
{% endfor %}{% endif %}

{% if changes %}<h2>Changes since the previous run</h2>
<table><tr><th>host</th><th>check</th><th>before</th><th>now</th><th>detail</th></tr>
{% for d in changes %}<tr><td>{{ d.host }}</td><td>{{ d.label }}</td><td class="{{ d.previous_status }}">{{ d.previous_status }}</td>
<td class="{{ d.status }}">{{ d.status }}</td><td>{{ d.text }}</td></tr>{% endfor %}</table>{% endif %}
<p class="muted">History: {{ history_text }}</p>

<h2>Records</h2>
{% for h in hosts %}<details id="host-{{ loop.index }}"{% if h.status in ('fail', 'error') %} open{% endif %}>
<summary><span class="{{ h.status }}">{{ h.status }}</span> {{ h.host }} ({{ h.records | length }} records)</summary>
<table><tr><th>check</th><th>status</th><th>reason</th><th>metrics</th><th>expect</th><th>facts</th><th>since last run</th></tr>
{% for r in h.records %}<tr><td class="mono">{{ r.label }}</td><td class="{{ r.status }}">{{ r.status }}</td>
<td>{{ r.reason or "" }}{% if r.raw %}<details><summary>output</summary><pre>{{ r.raw }}</pre></details>{% endif %}</td>
<td class="mono">{% for k, v in r.metrics %}{{ k }} = {{ v }}<br>{% endfor %}</td>
<td><pre>{{ r.expect }}</pre></td><td><pre>{{ r.facts }}</pre></td><td>{{ r.delta }}</td></tr>
{% endfor %}</table></details>{% endfor %}
</body></html>
"""


def _pretty(value):
    if not value:
        return ""
    return json.dumps(value, indent=1, sort_keys=True, ensure_ascii=False, default=str)


def render_html(report):
    env = Environment(autoescape=True, trim_blocks=False)
    template = env.from_string(HTML_TEMPLATE)
    deltas = _delta_index(report)
    summary = report["summary"]
    by_host = {}
    for rec in _sorted_records(report["records"]):
        by_host.setdefault(rec.get("host") or "(no host)", []).append({
            "label": label(rec), "status": rec.get("status"), "reason": rec.get("reason"), "raw": rec.get("raw"),
            "metrics": [(k, fmt_value(v)) for k, v in sorted((rec.get("metrics") or {}).items())],
            "expect": _pretty(rec.get("expect")), "facts": _pretty(rec.get("facts")),
            "delta": describe_delta(deltas.get(_key(rec))),
        })
    hosts = [{"host": h["host"], "status": h["status"], "records": by_host.get(h["host"], [])}
             for h in summary["hosts"]]
    changes = [dict(d, label=label(d), text=describe_delta(d)) for d in deltas.values()
               if d.get("status_changed") and not d.get("new")]
    history = report.get("history") or {}
    if history.get("db"):
        history_text = "%s (%d records compared with an earlier run)" % (history["db"], len(deltas))
    else:
        history_text = history.get("error") or "off"
    findings = [dict(f, evidence_text=_pretty(f.get("evidence"))[:4000]) for f in report.get("findings") or []]
    return template.render(
        run=report.get("run") or {}, summary=summary, statuses=STATUS_ORDER, problems=report.get("problems") or [],
        findings=findings, hosts=hosts, heatmaps=heatmaps(report["records"]), curves=curves(report["records"]),
        changes=sorted(changes, key=lambda d: (d["host"], d["label"])), history_text=history_text,
    )
