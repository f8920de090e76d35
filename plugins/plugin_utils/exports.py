# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Exports of a report for other tools: Prometheus text exposition (node_exporter textfile collector).

Metric families (all gauges; every label value escaped as the text format requires):

``aifabric_check_status{host, check, target, peer}``
    the record's status as a number: 0 skip, 1 pass, 2 warn, 3 fail, 4 error
    (``results.SEVERITY``; alert on ``>= 3``). One sample per (host, check, target, peer):
    the worst status when several records share it. Analysis verdicts (``.node``, ``.link``,
    ``.fleet``, ``.baseline``) are included.
``aifabric_metric{host, check, target, peer, metric}``
    every numeric metric of a measured record, in the unit its name carries (``_gbit_s``,
    ``_us``, ...); the last record's value when several share the labels.
``aifabric_host_status{host}``
    the host verdict, same numbers.
``aifabric_run_timestamp_seconds``
    when the run ended (Unix time); ``aifabric_run_info{run_id, verdict}`` 1.

``target`` and ``peer`` are "" when the record has none. The files are written atomically
(temporary name, then rename), as the textfile collector requires: one file for the fleet
(``aifabric.prom``) or one per host (``aifabric_<host>.prom``).

Controller-only (plugin_utils); imports nothing from Ansible.
"""

from __future__ import annotations

import datetime
import hashlib
import math
import os
import re

from ansible_collections.aifabric.acceptance.plugins.module_utils import results
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import analysis_records, render

FLEET_FILE = "aifabric.prom"
HOST_FILE = "aifabric_%s.prom"
_SAFE_NAME = re.compile(r"[^A-Za-z0-9_.-]")
FAMILIES = (
    ("aifabric_run_info", "The run this file describes (value 1).", ("run_id", "verdict")),
    ("aifabric_run_timestamp_seconds", "When the run ended, Unix time.", ()),
    ("aifabric_host_status", "Host verdict: 0 skip, 1 pass, 2 warn, 3 fail, 4 error.", ("host",)),
    ("aifabric_check_status", "Check status: 0 skip, 1 pass, 2 warn, 3 fail, 4 error.",
     ("host", "check", "target", "peer")),
    ("aifabric_metric", "A measured metric; its unit is in the metric label (_gbit_s, _gbyte_s, _us, _tflops, ...).",
     ("host", "check", "target", "peer", "metric")),
)


_SURROGATE = re.compile("[\ud800-\udfff]")


def _escape(value):
    """A label value as the text format writes it: UTF-8 (a lone surrogate - undecodable tool output kept by
    surrogateescape - becomes U+FFFD), with backslash, double quote and line feed escaped."""
    text = _SURROGATE.sub("\ufffd", str(value))
    return text.replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _finite(value):
    """True for a number the format can carry: finite as a float (an integer past the float range is not)."""
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    try:
        return math.isfinite(float(value))
    except OverflowError:
        return False


def _labels(names, values):
    if not names:
        return ""
    return "{%s}" % ",".join('%s="%s"' % (n, _escape(v)) for n, v in zip(names, values))


def _value(number):
    if isinstance(number, bool):
        number = int(number)
    if isinstance(number, int):
        return str(number)
    return repr(float(number))


def _timestamp(text):
    try:
        when = datetime.datetime.strptime(text or "", "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
    except ValueError:
        return None
    return int(when.timestamp())


def _record_samples(records, hosts, status, metric):
    """Fold the records of the hosts given (all when None) into the check-status and metric families."""
    for rec in records:
        host = rec.get("host") or ""
        if hosts is not None and host not in hosts:
            continue
        key = (host, rec.get("check") or "", rec.get("target") or "", rec.get("peer") or "")
        severity = results.SEVERITY.get(rec.get("status"), 0)
        status[key] = max(status.get(key, severity), severity)
        if analysis_records.is_analysis_record(rec):
            continue
        for name, value in sorted((rec.get("metrics") or {}).items()):
            if _finite(value):
                metric[key + (name,)] = value


def _samples(report, hosts=None):
    """{family: {label tuple: value}} for the hosts given (all when None)."""
    run, summary = report.get("run") or {}, report.get("summary") or {}
    out = dict((name, {}) for name, _help, _labels in FAMILIES)
    out["aifabric_run_info"][(str(run.get("run_id") or ""), str(summary.get("worst_status") or ""))] = 1
    ended = _timestamp(run.get("ended") or run.get("started"))
    if ended is not None:
        out["aifabric_run_timestamp_seconds"][()] = ended
    for host in summary.get("hosts") or []:
        if hosts is None or host["host"] in hosts:
            out["aifabric_host_status"][(host["host"],)] = results.SEVERITY.get(host["status"], 0)
    _record_samples(report.get("records") or [], hosts, out["aifabric_check_status"], out["aifabric_metric"])
    return out


def prometheus(report, hosts=None):
    """The Prometheus text exposition of a report (or of the records of ``hosts`` only)."""
    samples = _samples(report, hosts)
    lines = []
    for name, help_text, names in FAMILIES:
        lines.append("# HELP %s %s" % (name, help_text))
        lines.append("# TYPE %s gauge" % name)
        for labels, value in sorted(samples[name].items()):
            lines.append("%s%s %s" % (name, _labels(names, labels), _value(value)))
    return "\n".join(lines) + "\n"


def host_file_name(host):
    """``aifabric_<host>.prom`` with every character outside [A-Za-z0-9_.-] replaced by '_'; a name that had
    to change gets 8 hex digits of its SHA-256 too, so two hosts never share a file."""
    safe = _SAFE_NAME.sub("_", host or "none")
    if safe != host:
        safe = "%s-%s" % (safe, hashlib.sha256((host or "").encode("utf-8")).hexdigest()[:8])
    return HOST_FILE % safe


def write_prometheus(report, directory, per_host=False):
    """Write the textfile(s) into ``directory`` (created when missing, render.write_atomic's rule); returns the paths."""
    if not per_host:
        path = os.path.join(directory, FLEET_FILE)
        render.write_atomic(path, prometheus(report))
        return [path]
    paths = []
    for host in sorted(set(h["host"] for h in (report.get("summary") or {}).get("hosts") or [])):
        path = os.path.join(directory, host_file_name(host))
        render.write_atomic(path, prometheus(report, hosts={host}))
        paths.append(path)
    return paths
