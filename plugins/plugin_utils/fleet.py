# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet report's core: collect records, account for every host, analyse, summarise.

Used by the ``aifabric.acceptance.fleet_report`` callback (a thin adapter that feeds
plain values into :class:`Collector`), by the ``aifabric.acceptance.fleet_summary``
filter (the compact summary for ``set_stats``) and by the ``aifabric.acceptance.report``
action (re-analysis of an existing results.json). Controller-only (plugin_utils): may
use Python 3.11+ and imports nothing from Ansible.

The analysis pipeline is the list :data:`ANALYSES`. Each entry is a function
``analyze(records, config) -> (new_records, findings)``; it receives the measured records
plus the records added by the analyses before it, and may only ADD records (see
``analysis.py``). To add an analysis, write the function and append it to ANALYSES.
"""

from __future__ import annotations

import json
import math
import os
import platform
import re
import sys
import uuid

from ansible_collections.aifabric.acceptance.plugins.module_utils import results
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import analysis, attribution, drift, history, render
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import fleet_relative

ANALYSES = [
    drift.analyze,
    attribution.analyze,
    fleet_relative.analyze,
]

MISSING_CHECK = "env.coverage"      # a targeted host that produced no record at all
UNREACHABLE_CHECK = "env.reachable"
TASK_CHECK = "env.task"             # a failed task that returned no records
REASON_MAX = 600
NO_HOST = "(no host)"


# ---------------------------------------------------------------- records in


def plain(value):
    """A deep copy made of plain JSON types (drops Ansible's tagged/unsafe str subclasses)."""
    if isinstance(value, dict):
        return dict((str(k), plain(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, bool) or value is None:
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return None if (math.isnan(value) or math.isinf(value)) else float(value)
    return str(value)


def _record_like(item):
    return (isinstance(item, dict) and "check" in item and "status" in item
            and "ansible_loop_var" not in item)


def _loop_item(item):
    return isinstance(item, dict) and ("ansible_loop_var" in item or "item" in item)


def _shorten(text, limit=REASON_MAX):
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def normalize(record, host, started=None, task_name=None):
    """A record with every field of the contract, ``host`` filled in, plain JSON values.

    An invalid record becomes an ``error`` record that says what was wrong (a record
    is never silently dropped: a broken module must show in the report).
    """
    rec = plain(record)
    if not isinstance(rec, dict):
        return results.error(TASK_CHECK, "task %r returned a result record that is not a mapping" % (task_name or "?"),
                             host=host, raw=json.dumps(rec, default=str), started=started)
    if not rec.get("host"):
        rec["host"] = host
    problems = results.validate(rec)
    if problems:
        check = rec.get("check") if isinstance(rec.get("check"), str) and results.CHECK_RE.match(rec["check"]) else TASK_CHECK
        return results.error(
            check, _shorten("task %r returned an invalid result record: %s" % (task_name or "?", "; ".join(problems))),
            host=rec.get("host") if isinstance(rec.get("host"), str) else host,
            target=rec.get("target") if isinstance(rec.get("target"), str) else None,
            raw=json.dumps(rec, sort_keys=True, default=str), started=started)
    out = {}
    for key in results.FIELDS:
        out[key] = rec.get(key)
    for key in ("metrics", "expect", "facts", "params", "tool"):
        out[key] = out[key] or {}
    out["series"] = out["series"] or []
    out["started"] = out["started"] or started or results.utc_now()
    return out


def extract_records(result, host, started=None, task_name=None):
    """Records of one task result (plain dict): ``(records, failed_loop_items)``.

    ``result['results']`` holds records when every element looks like one (has check and
    status); a loop's ``results`` holds per-item results, whose own ``results`` may hold
    records. Any other module's ``results`` list is not records.
    """
    items = result.get("results") if isinstance(result, dict) else None
    if not isinstance(items, list) or not items:
        return [], []
    if all(_record_like(x) for x in items):
        return [normalize(x, host, started, task_name) for x in items], []
    records, failed_items = [], []
    for item in items:
        if not _loop_item(item):
            continue
        sub = item.get("results")
        got = []
        if isinstance(sub, list) and sub and all(_record_like(x) for x in sub):
            got = [normalize(x, host, started, task_name) for x in sub]
        records.extend(got)
        if item.get("failed") and not got:
            failed_items.append(item)
    return records, failed_items


def failure_message(result):
    """The most useful one-line message of a failed/unreachable task result."""
    for key in ("msg", "reason", "stderr", "module_stderr", "stdout", "module_stdout"):
        value = result.get(key) if isinstance(result, dict) else None
        if value:
            return _shorten(value)
    return "no message"


def _raw(result):
    parts = []
    for key in ("stderr", "module_stderr", "stdout", "module_stdout", "exception"):
        value = result.get(key) if isinstance(result, dict) else None
        if value:
            parts.append("%s:\n%s" % (key, value))
    return "\n".join(parts) or None


class Collector:
    """Collects records per (host, task uuid) as task results arrive, in any order.

    Feed it plain values (host name, task uuid/name, result dict); ask it for
    :meth:`records`: every collected record, plus an ``error`` record for each failed
    or unreachable host, plus a record for each targeted host that produced nothing,
    so the report's host count always equals the number of hosts targeted.
    """

    def __init__(self, missing_status="error"):
        self.missing_status = missing_status
        self.hosts_targeted = []
        self._targeted = set()
        self._by_key = {}            # (host, task uuid) -> [records]
        self._unreachable = {}       # host -> error record (first unreachable task)
        self._events = {}            # host -> {"ok": n, "failed": n, ...}

    # hosts
    def target(self, hosts):
        """Add hosts a play targets (the union over plays and serial batches)."""
        for host in hosts:
            host = str(host)
            if host not in self._targeted:
                self._targeted.add(host)
                self.hosts_targeted.append(host)

    def _event(self, host, kind):
        counts = self._events.setdefault(host, {})
        counts[kind] = counts.get(kind, 0) + 1

    def _add(self, host, task_uuid, records):
        self._by_key.setdefault((host, str(task_uuid)), []).extend(records)

    # events
    def task_ok(self, host, task_uuid, task_name, result, started=None):
        self._event(host, "ok")
        records, _failed = extract_records(result, host, started, task_name)
        self._add(host, task_uuid, records)

    def task_failed(self, host, task_uuid, task_name, result, ignore_errors=False, started=None):
        """A failed task keeps its records; without records it is an ``env.task`` error
        (unless ignore_errors: then it is not a host error)."""
        self._event(host, "ignored" if ignore_errors else "failed")
        records, failed_items = extract_records(result, host, started, task_name)
        self._add(host, task_uuid, records)
        if ignore_errors:
            return
        if not records:
            msg = failure_message(result)
            if failed_items:
                msg = "%d loop item(s) failed: %s" % (len(failed_items), failure_message(failed_items[0]))
            self._add(host, task_uuid, [results.error(
                TASK_CHECK, _shorten("task %r failed: %s" % (task_name, msg)), host=host,
                target=task_name or None, raw=_raw(result), params={"task": task_name}, started=started)])
        elif failed_items:
            self._add(host, task_uuid, [results.error(
                TASK_CHECK, _shorten("task %r: %d loop item(s) failed without results: %s" % (
                    task_name, len(failed_items), failure_message(failed_items[0]))),
                host=host, target=task_name or None, raw=_raw(failed_items[0]),
                params={"task": task_name}, started=started)])

    def task_unreachable(self, host, task_uuid, task_name, result, started=None):
        self._event(host, "unreachable")
        if host in self._unreachable:
            return
        self._unreachable[host] = results.error(
            UNREACHABLE_CHECK, _shorten("host unreachable at task %r: %s" % (task_name, failure_message(result))),
            host=host, raw=_raw(result), params={"task": task_name}, started=started)

    def task_skipped(self, host, task_uuid, task_name, result=None):
        self._event(host, "skipped")
        if isinstance(result, dict):     # a loop with every item skipped may still carry records
            records, _failed = extract_records(result, host, None, task_name)
            self._add(host, task_uuid, records)

    # out
    def records(self):
        """Every record, in a stable order, plus the records that account for every host."""
        out = []
        for (_host, _uuid), recs in self._by_key.items():
            out.extend(recs)
        out.extend(self._unreachable.values())
        out.extend(missing_host_records(out, self.hosts_targeted, self.missing_status, self._events))
        return out


def missing_host_records(records, hosts, status="error", events=None):
    """A record for each host of ``hosts`` that has no record at all."""
    seen = set(r.get("host") for r in records)
    out = []
    for host in hosts or []:
        if host in seen:
            continue
        counts = (events or {}).get(host) or {}
        what = ", ".join("%d %s" % (n, k) for k, n in sorted(counts.items())) or "no task ran on it"
        reason = "host was targeted but no task returned a result record for it (tasks: %s)" % what
        out.append(results.make(MISSING_CHECK, status, reason=reason, host=host))
        seen.add(host)
    return out


# ---------------------------------------------------------------- analysis


def _analysis_name(func):
    """The analysis's NAME (on the function or its module, as drift.NAME), else the function name."""
    module = sys.modules.get(getattr(func, "__module__", None) or "")
    return getattr(func, "NAME", None) or getattr(module, "NAME", None) or getattr(func, "__name__", "analysis")


def strip_analysis(records):
    """The measured records only (what a re-analysis starts from)."""
    return [r for r in records if not analysis.is_analysis_record(r)]


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
    findings, problems = [], []
    for func in ANALYSES if analyses is None else analyses:
        name = _analysis_name(func)
        try:
            new, found = func(list(out), config)
        except Exception as exc:  # pylint: disable=broad-except  # one bad analysis must not lose the report
            problems.append("analysis %s failed: %s: %s" % (name, type(exc).__name__, exc))
            continue
        for rec in new or []:
            bad = results.validate(rec)
            if not analysis.is_analysis_record(rec):
                bad.append("tool.name is not %r" % analysis.TOOL_NAME)
            if bad:
                problems.append("analysis %s returned an invalid record: %s" % (name, "; ".join(bad)))
                continue
            rec = normalize(rec, rec.get("host"))
            if started:
                rec["started"] = started
            out.append(rec)
        for item in found or []:
            bad = analysis.validate_finding(item)
            if bad:
                problems.append("analysis %s returned an invalid finding: %s" % (name, "; ".join(bad)))
                continue
            findings.append(plain(dict(item, analysis=name)))
    return out, findings, problems


# ---------------------------------------------------------------- summary


def _rank(entry):
    c = entry["counts"]
    return (-results.SEVERITY.get(entry["status"], 0), -c["error"], -c["fail"], -c["warn"], entry["host"])


def summarize(records, max_hosts=10):
    """Counts per status, per-host worst status, worst hosts first (records must be complete)."""
    per_host = {}
    for rec in records:
        per_host.setdefault(rec.get("host") or NO_HOST, []).append(rec)
    hosts = []
    for host, recs in per_host.items():
        status = results.worst(r.get("status") for r in recs)
        bad = sorted(set(r["check"] for r in recs if r.get("status") == status and status not in ("pass", "skip")))
        hosts.append({"host": host, "status": status, "counts": results.count(recs), "checks": bad})
    hosts.sort(key=_rank)
    by_status = dict((s, 0) for s in results.STATUSES)
    for h in hosts:
        by_status[h["status"]] += 1
    worst_hosts = [dict(h, checks=h["checks"][:5]) for h in hosts if h["status"] in ("warn", "fail", "error")]
    return {
        "counts": results.count(records),
        "records_total": len(records),
        "hosts_total": len(hosts),
        "hosts_by_status": by_status,
        "worst_status": results.worst(h["status"] for h in hosts) if hosts else "skip",
        "failed_hosts": [h["host"] for h in hosts if h["status"] in ("fail", "error")],
        "worst_hosts": worst_hosts[:max_hosts],
        "hosts": hosts,     # every host, worst first: {host, status, counts, checks}
    }


def compact_summary(summary, max_hosts=20, report_dir=None):
    """The small dict for set_stats/AWX artifacts and the console (capped host lists)."""
    failed = summary["failed_hosts"]
    return {
        "worst_status": summary["worst_status"],
        "counts": dict(summary["counts"]),
        "records_total": summary["records_total"],
        "hosts_total": summary["hosts_total"],
        "hosts_by_status": dict(summary["hosts_by_status"]),
        "failed_hosts": failed[:max_hosts],
        "failed_hosts_total": len(failed),
        "worst_hosts": [{"host": h["host"], "status": h["status"], "checks": h["checks"]}
                        for h in summary["worst_hosts"][:max_hosts]],
        "report_dir": report_dir,
    }


def console_lines(summary, report_path=None, max_hosts=5):
    """The few lines the callback prints at the end of the play."""
    counts = ", ".join("%s %d" % (s, summary["counts"][s]) for s in results.STATUSES)
    lines = ["FLEET REPORT: %d hosts (%s), %d records: %s" % (
        summary["hosts_total"],
        ", ".join("%d %s" % (n, s) for s, n in summary["hosts_by_status"].items() if n),
        summary["records_total"], counts)]
    worst = summary["worst_hosts"][:max_hosts]
    if worst:
        lines.append("  worst hosts: " + "; ".join(
            "%s %s (%s)" % (h["host"], h["status"], ", ".join(h["checks"][:3])) for h in worst))
    if report_path:
        lines.append("  report: %s" % report_path)
    return lines


# ---------------------------------------------------------------- run metadata


def new_run_id():
    return uuid.uuid4().hex


def collection_version(start=None):
    """Version of this collection: MANIFEST.json (installed) or galaxy.yml (source tree)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(start or __file__))))
    try:
        with open(os.path.join(root, "MANIFEST.json"), encoding="utf-8") as handle:
            return json.load(handle)["collection_info"]["version"]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    try:
        with open(os.path.join(root, "galaxy.yml"), encoding="utf-8") as handle:
            match = re.search(r"^version:\s*['\"]?([^'\"\s]+)", handle.read(), re.M)
            return match.group(1) if match else None
    except OSError:
        return None


def run_metadata(run_id, started, ended, hosts_targeted, inventory_host_count=None,
                 playbooks=None, ansible_version=None, **extra):
    """Run-level metadata written to results.json and the history store."""
    meta = {
        "run_id": run_id,
        "started": started,
        "ended": ended,
        "ansible_version": ansible_version,
        "collection": "aifabric.acceptance",
        "collection_version": collection_version(),
        "python_version": platform.python_version(),
        "controller": platform.node(),
        "playbooks": list(playbooks or []),
        "inventory_host_count": inventory_host_count,
        "hosts_targeted": list(hosts_targeted),
        "hosts_targeted_count": len(hosts_targeted),
    }
    meta.update(extra)
    return plain(meta)


def build_report(records, run, config=None, analyses=None):
    """Analyse and summarise: the report structure that results.json holds."""
    records, findings, problems = analyze(records, config, analyses, started=run.get("ended") or run.get("started"))
    summary = summarize(records)
    return {
        "format_version": 1,
        "run": run,
        "summary": summary,
        "findings": findings,
        "problems": problems,
        "history": None,
        "records": records,
    }


def publish(report, output_dir=None, dest=None, formats=None, history_db=None, check_mode=False):
    """Append the run to the history store (when history_db is set) and write the report files.

    Files go into ``dest`` when given, else into a new ``<output_dir>/<UTC stamp>-<run id>/``
    with ``<output_dir>/latest`` pointing at it. A broken history store is a warning, not a
    lost report. In check mode nothing is stored or written (the history transaction is
    rolled back), but ``changed`` still says which files would change.
    Returns {"dir", "files": {format: path}, "changed": [formats], "warnings": [...]}.
    """
    warnings = []
    report["history"] = {"db": None, "deltas": []}
    if history_db:
        try:
            deltas = history.record_run(history_db, report["run"], report["records"], dry_run=check_mode)
            report["history"] = {"db": os.path.abspath(history_db), "deltas": deltas}
        except history.HistoryError as exc:
            report["history"] = {"db": None, "deltas": [], "error": str(exc)}
            warnings.append(str(exc))
    if dest:
        directory = os.path.abspath(dest)
    else:
        directory = os.path.join(os.path.abspath(output_dir), render.run_dir_name(report["run"]))
    report["run"]["report_dir"] = directory
    files, changed = render.write_report(report, directory, formats, check_mode=check_mode)
    if not dest and not check_mode:
        render.point_latest(os.path.abspath(output_dir), directory)
    return {"dir": directory, "files": files, "changed": changed, "warnings": warnings}


def load_results(path):
    """Read a results.json written by the callback (or by a re-analysis). Raises ValueError."""
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    if not isinstance(data, dict) or not isinstance(data.get("records"), list) or not isinstance(data.get("run"), dict):
        raise ValueError("%s is not a fleet report results.json (needs 'run' and 'records')" % path)
    if not data["run"].get("run_id"):
        raise ValueError("%s has no run.run_id" % path)
    return data


def reanalyze(data, config=None, analyses=None):
    """The report of an existing results.json, analysed again from its measured records.

    Analysis records and findings of the earlier analysis are dropped first, so the
    result is the same however often it is re-analysed.
    """
    records = [normalize(r, r.get("host") if isinstance(r, dict) else None) for r in data["records"]]
    run = plain(data["run"])
    return build_report(records, run, config, analyses)
