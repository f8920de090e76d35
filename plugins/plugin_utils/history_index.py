# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""``reports/index.html``: every run in the history store, its verdict counts, and a trend per headline metric.

One self-contained file (inline CSS and SVG, no script, no network; the page is the package file
``report_assets/index.html``, a %-format); every text from a
run (ids, host names, playbook names) is HTML-escaped. A run whose report directory is next to
the index (``<reports>/<UTC stamp>-<run id>/``) links to its ``report.html``.

The headline metrics are the fleet-relative analysis's default rules (nccl busbw, GEMM TFLOP/s,
RDMA bandwidth and latency); each run row in the store carries their fleet medians
(``meta.headline``, written by :func:`history.record_run`). Also here: :func:`after_run`, the one
call the callback makes after it wrote a run (index, retention, Prometheus export).

Controller-only (plugin_utils); imports nothing from Ansible.
"""

from __future__ import annotations

import html
import os

from ansible_collections.aifabric.acceptance.plugins.plugin_utils import exports, history, render, report_html

INDEX_FILE = "index.html"
INDEX_PAGE = report_html.asset("index.html")    # the page, a %-format of ("2 runs", store, trend table, rows)
STATUS_ORDER = ("error", "fail", "warn", "pass", "skip")
COLORS = {"error": "#7b1fa2", "fail": "#c62828", "warn": "#ef6c00", "pass": "#2e7d32", "skip": "#757575"}
SPARK_W, SPARK_H = 240, 40
ENV_KEEP_RUNS = "AIFABRIC_HISTORY_KEEP_RUNS"
ENV_KEEP_DAYS = "AIFABRIC_HISTORY_KEEP_DAYS"
ENV_PROMETHEUS_DIR = "AIFABRIC_PROMETHEUS_DIR"
ENV_PROMETHEUS_PER_HOST = "AIFABRIC_PROMETHEUS_PER_HOST"


def _e(text):
    return html.escape("" if text is None else str(text), quote=True)


def _fmt(value):
    if isinstance(value, float):
        return ("%.2f" % value).rstrip("0").rstrip(".")
    return str(value)


def better_of(name):
    """'higher' or 'lower' for a headline name 'check metric'."""
    check, metric = name.split(" ", 1)
    for rule in history.headline_rules():
        if rule["metric"] == metric and history.fnmatch.fnmatchcase(check, rule["check"]):
            return rule["better"]
    return "higher"


def sparkline(values, labels=None):
    """An inline SVG polyline of the values (None = a run without this metric: a gap); each point's
    tooltip is its label (the run) and value."""
    labels = labels or [""] * len(values)
    points = [(i, v) for i, v in enumerate(values) if v is not None]
    if not points:
        return ""
    lo, hi = min(v for _i, v in points), max(v for _i, v in points)
    span = (hi - lo) or 1.0
    n = max(len(values) - 1, 1)
    coords = ["%.1f,%.1f" % (4 + (SPARK_W - 8) * i / n, SPARK_H - 4 - (SPARK_H - 8) * (v - lo) / span)
              for i, v in points]
    dots = "".join('<circle cx="%s" cy="%s" r="2.5"><title>%s: %s</title></circle>' % (
        tuple(c.split(",")) + (_e(labels[i]), _e(_fmt(v)))) for c, (i, v) in zip(coords, points))
    return ('<svg width="%d" height="%d" viewBox="0 0 %d %d" role="img" aria-label="trend">'
            '<polyline fill="none" stroke="#1565c0" stroke-width="1.5" points="%s"/>'
            '<g fill="#1565c0">%s</g></svg>' % (SPARK_W, SPARK_H, SPARK_W, SPARK_H, " ".join(coords), dots))


def _run_row(entry, reports_root):
    """The table row of one run: its link, start, worst status, hosts per status, hosts, playbooks, flags."""
    meta = entry["meta"] or {}
    verdict = meta.get("verdict") or {}
    by_status = verdict.get("hosts_by_status") or {}
    worst = verdict.get("worst_status") or "?"
    run_dir = render.run_dir_name({"run_id": entry["run_id"], "started": entry["started"]})
    link = _e(entry["run_id"][:8])
    if reports_root and os.path.isfile(os.path.join(reports_root, run_dir, "report.html")):
        link = '<a href="%s/report.html">%s</a>' % (_e(run_dir), link)
    counts = " ".join('<span class="c" style="background:%s">%d %s</span>' % (COLORS[s], by_status[s], s)
                      for s in STATUS_ORDER if by_status.get(s))
    flags = []
    if meta.get("interrupted"):
        flags.append("interrupted")
    return ("<tr><td>%s</td><td>%s</td><td class=\"v\" style=\"color:%s\">%s</td><td>%s</td><td>%s</td>"
            "<td>%s</td><td>%s</td></tr>" % (
                link, _e(entry["started"]), COLORS.get(worst, "#000"), _e(worst.upper()), counts or "?",
                _e(verdict.get("hosts_total", meta.get("hosts_targeted_count", "?"))),
                _e(", ".join(os.path.basename(str(p)) for p in meta.get("playbooks") or [])),
                _e(", ".join(flags))))


def _trend_table(entries):
    """The table of the headline metrics' trends over the runs (oldest first), or a line saying there is none."""
    names = sorted(set(n for e in entries for n in ((e["meta"] or {}).get("headline") or {})))
    trends = []
    run_labels = ["%s %s" % (e["run_id"][:8], e["started"]) for e in entries]
    for name in names:
        values = [((e["meta"] or {}).get("headline") or {}).get(name) for e in entries]
        known = [v for v in values if v is not None]
        last, first = known[-1], known[0]
        change = "" if first == 0 or len(known) < 2 else "%+.1f %%" % (100.0 * (last - first) / abs(first))
        trends.append("<tr><td>%s</td><td>%s is better</td><td>%s</td><td>%s</td><td>%s</td><td>%d</td></tr>" % (
            _e(name), _e(better_of(name)), sparkline(values, run_labels), _e(_fmt(last)), _e(change), len(known)))
    if not trends:
        return '<p class="muted">No headline metric measured yet.</p>'
    return ("<table><thead><tr><th>headline metric</th><th></th><th>trend</th><th>latest</th>"
            "<th>first to latest</th><th>runs</th></tr></thead><tbody>%s</tbody></table>" % "".join(trends))


def render_index(entries, reports_root=None, store=None):
    """The HTML of the index for history.run_index() entries (oldest first); the table is newest first."""
    rows = [_run_row(entry, reports_root) for entry in reversed(entries)]
    return INDEX_PAGE % (report_html.plural(len(entries), "run"), _e(store or ""), _trend_table(entries), "\n".join(rows))


def write_index(history_db, reports_root, path=None):
    """Write ``<reports_root>/index.html`` (or ``path``) from the history store; returns its path."""
    entries = history.run_index(history_db)
    path = path or os.path.join(reports_root, INDEX_FILE)
    render.write_atomic(path, render_index(entries, reports_root, history.display_name(history_db)))
    return path


def _env_int(environ, name):
    text = (environ.get(name) or "").strip()
    if not text:
        return None
    try:
        return int(text)
    except ValueError as exc:
        raise ValueError("%s must be a whole number, got %r" % (name, text)) from exc


def after_run(report, reports_root, history_db, environ=None, show=None, warn=None):
    """What the callback does after it wrote a run: retention (``AIFABRIC_HISTORY_KEEP_RUNS`` /
    ``AIFABRIC_HISTORY_KEEP_DAYS``), ``<reports_root>/index.html``, and the Prometheus textfile(s)
    into ``AIFABRIC_PROMETHEUS_DIR`` (one per host with ``AIFABRIC_PROMETHEUS_PER_HOST=1``).
    Returns (notes, warnings), also passed line by line to ``show``/``warn`` when given (the callback's
    display). A failure here is a warning: it never loses the report already written."""
    environ = os.environ if environ is None else environ
    notes, warnings = [], []
    if history_db:
        try:
            gone = history.prune(history_db, keep_runs=_env_int(environ, ENV_KEEP_RUNS),
                                 keep_days=_env_int(environ, ENV_KEEP_DAYS))
            if gone:
                notes.append("history retention removed %d run(s): %s" % (len(gone), ", ".join(gone)))
        except (ValueError, history.HistoryError) as exc:
            warnings.append("history retention: %s" % exc)
        try:
            notes.append("history index: %s" % write_index(history_db, os.path.abspath(reports_root)))
        except (OSError, history.HistoryError) as exc:
            warnings.append("cannot write %s: %s" % (os.path.join(reports_root, INDEX_FILE), exc))
    prom_dir = (environ.get(ENV_PROMETHEUS_DIR) or "").strip()
    if prom_dir:
        try:
            paths = exports.write_prometheus(report, prom_dir, per_host=(environ.get(ENV_PROMETHEUS_PER_HOST) or "")
                                             .strip().lower() in ("1", "true", "yes", "on"))
            notes.append("Prometheus textfile(s): %d in %s" % (len(paths), os.path.abspath(prom_dir)))
        except OSError as exc:
            warnings.append("cannot write the Prometheus textfile into %s: %s" % (prom_dir, exc))
    for line in notes:
        if show:
            show("  " + line)
    for line in warnings:
        if warn:
            warn("aifabric.acceptance.fleet_report: " + line)
    return notes, warnings
