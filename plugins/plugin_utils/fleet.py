# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fleet report's core: collect records, account for every host, analyse, summarise.

Used by the ``aifabric.acceptance.fleet_report`` callback (a thin adapter that feeds
plain values into :class:`Collector`, which streams them to the run's record file), by
the ``aifabric.acceptance.run_summary`` action (the same report from that file, for
``set_stats``: :func:`run_summary`) and by the ``aifabric.acceptance.report`` action
(re-analysis of an existing results.json). Controller-only (plugin_utils): may
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
import shutil
import sys
import uuid

from ansible_collections.aifabric.acceptance.plugins.module_utils import results, statedir
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import analysis, attribution, drift, history, render
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import baseline, compare, fleet_relative, run_store, verdict

ANALYSES = [
    drift.analyze,
    attribution.analyze,
    fleet_relative.analyze,
    baseline.analyze,
    verdict.analyze_required,
]

MISSING_CHECK = "env.coverage"      # a targeted host that produced no record at all
UNREACHABLE_CHECK = "env.reachable"
TASK_CHECK = "env.task"             # a failed task that returned no records
REASON_MAX = 600
NO_HOST = "(no host)"
ENABLE_LINE = run_store.ENABLE_LINE
# what k8s_preflight names the host of a namespace's records: "namespace/" + a Kubernetes namespace (DNS-1123 label)
NAMESPACE_HOST_RE = re.compile(r"namespace/[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?\Z")


# ---------------------------------------------------------------- records in


def plain(value):
    """A deep copy made of plain JSON types (drops Ansible's tagged/unsafe str subclasses)."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:     # the common case, exact types first
        return value
    if kind is float:
        return value if math.isfinite(value) else None
    if kind is dict:
        return {(k if type(k) is str else str(k)): plain(v) for k, v in value.items()}  # pylint: disable=unidiomatic-typecheck
    if kind is list:
        return [plain(v) for v in value]
    return _plain_other(value)


def loads_finite(text):
    """``(value, finite)``: JSON text parsed, and whether it had no NaN/Infinity constant (then the value is
    made of plain JSON types only and needs no :func:`plain` copy)."""
    seen = []

    def constant(name):
        seen.append(name)
        return float(name)

    return json.loads(text, parse_constant=constant), not seen


def _plain_other(value):
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


_FIELD_COUNT = len(results.FIELDS)


def normalize(record, host, started=None, task_name=None, parsed_json=False):
    """A record with every field of the contract, ``host`` filled in, plain JSON values.

    An invalid record becomes an ``error`` record that says what was wrong (a record
    is never silently dropped: a broken module must show in the report). A pass/warn/fail
    record with a NaN/inf metric becomes ``error`` (results.demote_nonfinite): it measured nothing.
    ``parsed_json``: the record was just parsed from JSON text without NaN/Infinity constants
    (:func:`loads_finite`), so it is plain JSON already and is not copied again (its nested values
    are shared with the parsed document, which nobody modifies).
    """
    demoted = results.demote_nonfinite(record)
    rec = dict(demoted) if parsed_json and isinstance(demoted, dict) else plain(demoted)
    host = host if isinstance(host, str) and host else None
    if not isinstance(rec, dict):
        return results.error(TASK_CHECK, "task %r returned a result record that is not a mapping" % (task_name or "?"),
                             host=host or NO_HOST, raw=json.dumps(rec, default=str), started=started)
    if not rec.get("host"):
        rec["host"] = host
    problems = results.validate(rec)
    if problems:
        check = rec.get("check") if isinstance(rec.get("check"), str) and results.CHECK_RE.match(rec["check"]) else TASK_CHECK
        return results.error(
            check, _shorten("task %r returned an invalid result record: %s" % (task_name or "?", "; ".join(problems))),
            host=(rec.get("host") if isinstance(rec.get("host"), str) and rec.get("host") else host) or NO_HOST,
            target=rec.get("target") if isinstance(rec.get("target"), str) else None,
            raw=json.dumps(rec, sort_keys=True, default=str), started=started)
    if parsed_json and len(rec) == _FIELD_COUNT and rec["started"]:
        return rec      # every field present (validate: none unknown), each of its type: complete as it is
    out = {}
    for key in results.FIELDS:
        out[key] = rec.get(key)
    for key in ("metrics", "expect", "facts", "params", "tool"):
        out[key] = out[key] or {}
    out["series"] = out["series"] or []
    out["started"] = out["started"] or started or results.utc_now()
    return out


def extract_records(result, host, started=None, task_name=None, normalized=True):
    """Records of one task result (plain dict): ``(records, failed_loop_items)``.

    ``result['results']`` holds records when every element looks like one (has check and
    status); a loop's ``results`` holds per-item results, whose own ``results`` may hold
    records. Any other module's ``results`` list is not records.
    ``normalized=False``: the records as the task returned them (the :class:`Collector` streams them as
    they are and normalizes them when it reads them back, once).
    """
    items = result.get("results") if isinstance(result, dict) else None
    if not isinstance(items, list) or not items:
        return [], []

    def norm(recs):
        return [normalize(x, host, started, task_name) for x in recs] if normalized else list(recs)

    if all(_record_like(x) for x in items):
        return norm(items), []
    records, failed_items = [], []
    for item in items:
        if not _loop_item(item):
            continue
        sub = item.get("results")
        got = []
        if isinstance(sub, list) and sub and all(_record_like(x) for x in sub):
            got = norm(sub)
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


# the stream's encoder: compact, anything JSON has no type for as its str(); no cycle check (task results come
# from JSON; a cycle would still end in RecursionError, as plain() does), which saves a tenth of the encoding
_STREAM_ENCODE = json.JSONEncoder(separators=(",", ":"), default=str, check_circular=False).encode


class Collector:
    """Records by (host, task uuid) as task results arrive, in any order.

    Feed it plain values (host name, task uuid/name, result dict); ask it for
    :meth:`records`: every collected record, plus an ``error`` record for each failed
    or unreachable host, plus a record for each targeted host that produced nothing,
    so the report's host count always equals the number of hosts targeted.

    Every change is one entry, encoded once as a JSON line (the task's records as the task
    returned them; :func:`normalize` checks them when the line is read back). With
    :meth:`open_stream`, each line is appended to a run-scoped JSON-lines file as it happens
    (one ``write`` per task result), and :meth:`load` rebuilds the same collector from that
    file: the one record path that both the ``run_summary`` step (set_stats) and the report
    read. The collector also keeps its lines in memory (compact bytes), so a stream that
    could not be written loses nothing: :meth:`records` of a live collector reads its own
    lines back the same way. ``observer``: a callable given each task entry as it is
    streamed (the callback's progress lines).
    """

    def __init__(self, missing_status="error"):
        self.missing_status = missing_status
        self.hosts_targeted = []
        self.run = {}                # what the stream's first line says about the run
        self.config = {}             # analysis config from the stream (required_checks, ...)
        self.problems = []           # lines of a stream that could not be read
        self.observer = None         # called with each task entry as it is streamed
        self._targeted = set()
        self._lines = []             # a live collector: every entry as its stream line (bytes); None once read back
        self._by_key = {}            # read back: (host, task uuid) -> [records]
        self._unreachable = {}       # host -> error record (first unreachable task)
        self._events = {}            # host -> {"ok": n, "failed": n, ...}
        self._stream = None          # file descriptor of the stream, when open
        self.stream_path = None
        self.stream_error = None     # why the stream stopped being written (it is then incomplete)
        self.entries = 0             # entries applied (read back: the stream's readable lines so far)
        self.analysis = None         # read back: a run_summary step's analysis entry, while no later entry changed
        self._reported = set()       # read back: hosts that have a record (or an unreachable one)

    # stream
    def open_stream(self, path, run=None, config=None):
        """Create the stream file (new, mode 0600, never through a symlink) and write the run line."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        self._stream = os.open(path, flags, 0o600)
        self.stream_path = path
        self._apply({"e": "run", "run": plain(run or {}), "config": plain(config or {}),
                     "missing_status": self.missing_status})

    def close_stream(self):
        if self._stream is not None:
            os.close(self._stream)
            self._stream = None

    @classmethod
    def load(cls, path):
        """A collector rebuilt from a stream file. A line that cannot be read (the last line of a
        run killed mid-write) is skipped and named in :attr:`problems`. Raises OSError."""
        with open(path, encoding="utf-8", errors="replace") as handle:
            return cls._read(handle, path)

    @classmethod
    def _read(cls, lines, name):
        out = cls()
        out._lines = None
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                entry, finite = loads_finite(line)
                out._apply(entry, log=False, parsed_json=finite)
            except (ValueError, TypeError, KeyError, AttributeError) as exc:
                out.problems.append("%s line %d unreadable (%s): skipped" % (name, number, exc))
        return out

    def read_back(self):
        """A live collector's own lines read back (what :meth:`load` makes of its stream file)."""
        if self._lines is None:
            return self
        out = self._read((line.decode("utf-8", "replace") for line in self._lines), "(memory)")
        out.missing_status = self.missing_status
        return out

    def _apply(self, entry, log=True, parsed_json=False):
        kind = entry["e"]
        if kind == "run":
            self.run.update(entry.get("run") or {})
            self.config.update(entry.get("config") or {})
            self.missing_status = entry.get("missing_status") or self.missing_status
        elif kind == "config":
            self._apply_config(entry.get("config") or {})
        elif kind == "target":
            self._apply_target(entry["hosts"])
        elif kind == "task":
            self._apply_task(entry, log, parsed_json)
        elif kind == "analysis" and not log:
            # the analysis a run_summary step made of every entry before it (else of fewer: a line came between)
            self.analysis = entry if entry.get("after") == self.entries else None
        else:
            raise ValueError("unknown stream entry %r" % (kind,))
        self.entries += 1
        if log:
            self._log(entry)

    def _apply_config(self, config):
        self.analysis = None
        for key, value in config.items():
            if isinstance(value, dict) and isinstance(self.config.get(key), dict):
                self.config[key] = dict(self.config[key], **value)
            else:
                self.config[key] = value

    def _apply_target(self, hosts):
        for host in hosts:
            host = str(host)
            if host not in self._targeted:
                self._targeted.add(host)
                self.hosts_targeted.append(host)
                self.analysis = None

    def _apply_task(self, entry, log, parsed_json):
        host = str(entry["host"])
        counts = self._events.setdefault(host, {})
        counts[entry["kind"]] = counts.get(entry["kind"], 0) + 1
        records = entry.get("records") or []
        if records or entry.get("unreachable") or (host in self._targeted and host not in self._reported):
            self.analysis = None     # new records, or a host without records whose missing-host record changes
        if records and not log:     # read back: every record checked and completed here, once
            started, name = entry.get("started"), entry.get("name")
            got = [normalize(r, host, started, name, parsed_json=parsed_json) for r in records]
            self._by_key.setdefault((host, str(entry["task"])), []).extend(got)
            self._reported.update(r["host"] for r in got)
        if entry.get("unreachable") and host not in self._unreachable:
            self._unreachable[host] = entry["unreachable"] if log else normalize(entry["unreachable"], host)
            self._reported.add(host)

    def _log(self, entry):
        try:
            text = _STREAM_ENCODE(entry)
        except (TypeError, ValueError):     # a mapping key JSON cannot hold, a cycle: plain values first
            text = _STREAM_ENCODE(plain(entry))
        line = (text + "\n").encode("utf-8")
        if self._lines is not None:
            self._lines.append(line)
        if self._stream is not None:
            try:
                written = os.write(self._stream, line)     # one write of an O_APPEND fd: lines never interleave
                if written != len(line):
                    raise OSError("short write (%d of %d bytes)" % (written, len(line)))
            except OSError as exc:
                # the stream no longer holds every record: stop using it (the records stay in memory)
                self.stream_error = "cannot write the record stream %s: %s" % (self.stream_path, exc)
                self.close_stream()
        if self.observer is not None and entry["e"] == "task":
            self.observer(entry)

    def release_records(self):
        """Drop the in-memory copy of the records (once the stream has been read back whole, at the end
        of the run: the report is built from that copy, and a fleet's records are hundreds of MB)."""
        self._by_key = {}
        if self._lines is not None:
            self._lines = []

    def set_config(self, **config):
        """Add analysis config (e.g. required_checks) to the run, through the stream when open."""
        self._apply({"e": "config", "config": plain(config)})

    # hosts
    def target(self, hosts):
        """Add hosts a play targets (the union over plays and serial batches)."""
        new = [str(h) for h in hosts if str(h) not in self._targeted]
        if new:
            self._apply({"e": "target", "hosts": list(dict.fromkeys(new))})

    def _task(self, host, task_uuid, task_name, kind, records=None, unreachable=None, started=None):
        entry = {"e": "task", "host": host, "task": str(task_uuid), "kind": kind}
        if task_name:
            entry["name"] = task_name
        if records:
            entry["records"] = records
            entry["started"] = started or results.utc_now()     # of the records that do not say
        if unreachable:
            entry["unreachable"] = unreachable
        self._apply(entry)

    def _admitted(self, host, task_name, records, participants, started):
        """The records a task result of ``host`` may add: each names ``host`` (or no host: then it is
        ``host``'s), or, for a run_once task (``participants``: the hosts of its play), one of those hosts or a
        Kubernetes namespace (``namespace/<name>``: k8s_preflight's records of what belongs to a namespace).

        A pairwise record whose ``peer`` is ``host`` may name the other end of that link, a host of this run.

        A run_once task acts for every host of its play (as Ansible applies a run_once result to all of
        them): a multi-node run's record names them in ``params.hosts``. A record that names any other host
        (an outsider, or a fellow host of the run from a task that does not act for it) becomes an ``error``
        record of ``host`` saying which host it named and why it was refused: one node, or a module, never
        adds records, or hosts, for others.
        """
        allowed = set(participants or ())
        on_behalf = [str(h) for h in participants] if len(allowed) > 1 else None
        out = []
        for rec in records:
            named = rec.get("host")
            if isinstance(named, str) and named and named != host and named not in allowed \
                    and not (allowed and NAMESPACE_HOST_RE.match(named)) and not self._edge_of(host, named, rec):
                rec = self._refused(host, task_name, rec, named, started)
            elif on_behalf:
                params = rec.get("params")
                if params is None or (isinstance(params, dict) and not params.get("hosts")):
                    rec = dict(rec, params=dict(params or {}, hosts=on_behalf))
            out.append(rec)
        return out

    def _edge_of(self, host, named, rec):
        """A pairwise record of a link ``host`` is one end of (its ``peer``), named for the other end, a host of this
        run: the sweep's record of the pair a dead or silent client never measured. A link's records count toward no
        host by themselves: attribution judges them over the whole matrix."""
        return rec.get("peer") == host and named in self._targeted

    def _refused(self, host, task_name, rec, named, started):
        if named in self._targeted:
            why = "it is another host of this run, and only a run_once task returns records for the hosts of its play"
        else:
            why = "it is not a host this run targets"
        check = rec.get("check") if isinstance(rec.get("check"), str) else None
        return results.error(
            TASK_CHECK, _shorten("task %r on %s returned a %s record for host %r, refused: %s" % (
                task_name or "?", host, check or "(no check)", named[:200], why)),
            host=host, target=task_name or None, raw=json.dumps(rec, sort_keys=True, default=str),
            params={"task": task_name, "refused_host": named[:200], "refused_check": check}, started=started)

    # events
    def task_ok(self, host, task_uuid, task_name, result, started=None, participants=None):
        records, _failed = extract_records(result, host, started, task_name, normalized=False)
        self._task(host, task_uuid, task_name, "ok", self._admitted(host, task_name, records, participants, started),
                   started=started)

    def task_failed(self, host, task_uuid, task_name, result, ignore_errors=False, started=None, participants=None):
        """A failed task keeps its records; without records it is an ``env.task`` error
        (unless ignore_errors: then it is not a host error)."""
        records, failed_items = extract_records(result, host, started, task_name, normalized=False)
        records = self._admitted(host, task_name, records, participants, started)
        if ignore_errors:
            self._task(host, task_uuid, task_name, "ignored", records, started=started)
            return
        if not records:
            msg = failure_message(result)
            if failed_items:
                msg = "%d loop item(s) failed: %s" % (len(failed_items), failure_message(failed_items[0]))
            records = [results.error(
                TASK_CHECK, _shorten("task %r failed: %s" % (task_name, msg)), host=host,
                target=task_name or None, raw=_raw(result), params={"task": task_name}, started=started)]
        elif failed_items:
            records = records + [results.error(
                TASK_CHECK, _shorten("task %r: %d loop item(s) failed without results: %s" % (
                    task_name, len(failed_items), failure_message(failed_items[0]))),
                host=host, target=task_name or None, raw=_raw(failed_items[0]),
                params={"task": task_name}, started=started)]
        self._task(host, task_uuid, task_name, "failed", records, started=started)

    def task_unreachable(self, host, task_uuid, task_name, result, started=None):
        record = None
        if host not in self._unreachable:
            record = results.error(
                UNREACHABLE_CHECK, _shorten("host unreachable at task %r: %s" % (task_name, failure_message(result))),
                host=host, raw=_raw(result), params={"task": task_name}, started=started)
        self._task(host, task_uuid, task_name, "unreachable", unreachable=record)

    def task_skipped(self, host, task_uuid, task_name, result=None, participants=None):
        records = []
        if isinstance(result, dict):     # a loop with every item skipped may still carry records
            records, _failed = extract_records(result, host, None, task_name, normalized=False)
            records = self._admitted(host, task_name, records, participants, None)
        self._task(host, task_uuid, task_name, "skipped", records)

    # out
    def records(self):
        """Every record, in a stable order, plus the records that account for every host."""
        if self._lines is not None:
            return self.read_back().records()
        out = []
        for (_host, _uuid), recs in self._by_key.items():
            out.extend(recs)
        out.extend(self._unreachable.values())
        out.extend(missing_host_records(out, self.hosts_targeted, self.missing_status, self._events))
        return out


def _participants(records):
    """host -> the records of multi-node runs it took part in without owning them (``params.hosts``)."""
    out = {}
    for rec in records:
        hosts = (rec.get("params") or {}).get("hosts") if isinstance(rec.get("params"), dict) else None
        if isinstance(hosts, list):
            for host in hosts:
                if isinstance(host, str) and host != rec.get("host"):
                    out.setdefault(host, []).append(rec)
    return out


def missing_host_records(records, hosts, status="error", events=None):
    """A record for each host of ``hosts`` that has no record at all.

    A host named in the ``params.hosts`` of another host's record (a multi-node run launched
    elsewhere) is accounted for by an ``env.coverage`` record that says so: ``pass`` when every
    such run passed, ``skip`` when they all skipped, else ``warn`` (a failing collective does not
    say which of its hosts is bad).
    """
    seen = set(r.get("host") for r in records)
    took_part = _participants(records)
    out = []
    for host in hosts or []:
        if host in seen:
            continue
        runs = took_part.get(host)
        if runs:
            statuses = set(r.get("status") for r in runs)
            derived = "pass" if statuses == {"pass"} else ("skip" if statuses == {"skip"} else "warn")
            names = ", ".join(sorted(set("%s (%s)" % (r.get("check"), r.get("status")) for r in runs)))
            launchers = ", ".join(sorted(set(str(r.get("host")) for r in runs)))
            reason = _shorten("no record of its own: took part in the multi-node run(s) launched from %s: %s; "
                              "their records belong to the launcher" % (launchers, names))
            out.append(results.make(MISSING_CHECK, derived, reason=reason, host=host,
                                    facts={"launchers": sorted(set(str(r.get("host")) for r in runs))}))
            seen.add(host)
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


def verdict_line(summary):
    """The run verdict with the host counts behind it, e.g. ``FAIL: 24 hosts: 1 fail, 2 warn, 21 pass``."""
    counts = summary["hosts_by_status"]
    order = sorted(results.STATUSES, key=results.SEVERITY.get, reverse=True)
    return "%s: %d hosts: %s" % (summary["worst_status"].upper(), summary["hosts_total"],
                                 ", ".join("%d %s" % (counts[s], s) for s in order if counts.get(s)) or "none")


def summarize(records, max_hosts=10):
    """Counts per status, per-host verdict, worst hosts first (records must be complete and analysed).

    A host's verdict is the worst status (error > fail > warn > pass > skip) of the records that
    count toward it (``verdict.host_records``: pairwise records of a matrix that attribution judged
    count toward no host, attribution's ``.node``/``.link`` records do; pairwise records of an
    unjudged matrix count toward both ends). Its ``counts`` are those records' statuses. The run's
    ``worst_status`` is the worst host verdict (``skip`` only when nothing ran anywhere).
    """
    hosts = []
    for host, recs in verdict.host_records(records).items():
        status = verdict.host_status(recs)
        bad = sorted(set(r["check"] for r in recs if r.get("status") == status and status not in ("pass", "skip")))
        hosts.append({"host": host or NO_HOST, "status": status, "counts": results.count(recs), "checks": bad})
    hosts.sort(key=_rank)
    by_status = dict((s, 0) for s in results.STATUSES)
    for h in hosts:
        by_status[h["status"]] += 1
    worst_hosts = [dict(h, checks=h["checks"][:5]) for h in hosts if h["status"] in ("warn", "fail", "error")]
    summary = {
        "counts": results.count(records),
        "records_total": len(records),
        "hosts_total": len(hosts),
        "hosts_by_status": by_status,
        "worst_status": results.worst((h["status"] for h in hosts), default="skip"),
        "failed_hosts": [h["host"] for h in hosts if h["status"] in ("fail", "error")],
        "worst_hosts": worst_hosts[:max_hosts],
        "hosts": hosts,     # every host, worst first: {host, status, counts, checks}
    }
    summary["verdict"] = verdict_line(summary)
    return summary


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
    lines = ["FLEET REPORT: %s; %d records: %s" % (verdict_line(summary), summary["records_total"], counts)]
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


def build_report(records, run, config=None, analyses=None, prior=None):
    """Analyse and summarise: the report structure that results.json holds.

    ``prior``: the analysis a run_summary step stored in the run's stream (:attr:`Collector.analysis`, None once
    a later entry changed the records). When it was made with this ``config`` by the default pipeline, its
    records, findings and problems are this report's (stamped with this run's end): the analyses run once per
    new data, and the report is what :func:`analyze` would give."""
    started = run.get("ended") or run.get("started")
    if analyses is None and prior and prior.get("config") == plain(dict(config or {})):
        records, findings, problems = reuse_analysis(records, prior, started)
    else:
        records, findings, problems = analyze(records, config, analyses, started=started)
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


def analysis_entry(report, config, after):
    """The stream entry of a report's analysis (see :func:`build_report`'s ``prior``): made of ``config`` and of the
    first ``after`` entries of the stream."""
    return {"e": "analysis", "after": after, "config": plain(dict(config or {})),
            "records": [r for r in report["records"] if analysis.is_analysis_record(r)],
            "findings": report["findings"], "problems": list(report["problems"])}


def reuse_analysis(records, prior, started=None):
    """(records, findings, problems) of :func:`analyze` from a stored analysis of the same records and config."""
    added = [dict(r, started=started) if started else dict(r) for r in prior.get("records") or []]
    return strip_analysis(records) + added, list(prior.get("findings") or []), list(prior.get("problems") or [])


def publish(report, output_dir=None, dest=None, formats=None, history_db=None, check_mode=False):
    """Append the run to the history store (when history_db is set) and write the report files.

    Files go into ``dest`` when given (each file replaced atomically), else into a new
    ``<output_dir>/<UTC stamp>-<run id>/`` written as a whole (a hidden temporary directory
    renamed into place), then ``<output_dir>/latest`` is pointed at it, last. SIGINT/SIGTERM
    are held while this runs. A run is stored only with its report: the files are written inside
    the run's history transaction, before its commit, so a report that cannot be written (a full
    disk) rolls the run back (which needs no free space) and its error propagates: a run is either
    stored and written completely, or not at all. A broken history store (it cannot be opened or
    written, or the commit fails: then a report written for it is removed) is a warning, and the
    report is written without history. A ``latest`` that cannot be updated is a warning too. In check
    mode nothing is stored or written (the history is only read), but ``changed`` still says which
    files would change. Returns {"dir", "files": {format: path}, "changed": [formats], "warnings": [...]}.
    """
    warnings = []
    if dest:
        directory = os.path.abspath(dest)
    else:
        directory = os.path.join(os.path.abspath(output_dir), render.run_dir_name(report["run"]))
    report["run"]["report_dir"] = directory
    writer = _ReportWriter(report, directory, formats, fresh=not dest, check_mode=check_mode)
    with render.deferred_interrupts():
        if history_db and not check_mode:
            try:
                history.record_run(history_db, report["run"], report["records"],
                                   before_commit=lambda deltas: writer.write(deltas, history.display_name(history_db)))
            except history.HistoryError as exc:
                writer.undo()       # written for a commit that failed: the run is not in the history
                warnings.append(str(exc))
                writer.write([], error=str(exc))
        else:
            deltas, db, error = [], None, None
            if history_db:
                try:
                    deltas = history.record_run(history_db, report["run"], report["records"], dry_run=True)
                    db = history.display_name(history_db)
                except history.HistoryError as exc:
                    error = str(exc)
                    warnings.append(error)
            writer.write(deltas, db, error=error)
        if not dest and not check_mode:
            try:
                render.point_latest(os.path.abspath(output_dir), directory)
            except (OSError, statedir.StateError) as exc:
                warnings.append("the report is written in %s, but %s could not point at it: %s" % (
                    directory, os.path.join(os.path.abspath(output_dir), "latest"), exc))
    return {"dir": directory, "files": writer.files, "changed": writer.changed, "warnings": warnings}


class _ReportWriter:
    """The report files of :func:`publish`, written with a given history section (again, after a failed commit)."""

    def __init__(self, report, directory, formats, fresh, check_mode):
        self.report, self.directory, self.formats = report, directory, formats
        self.fresh, self.check_mode = fresh and not check_mode, check_mode
        self.comparison = report.get("comparison")          # compare_with's, kept; else made from the deltas
        self.margin = report.get(compare.MARGIN_KEY)
        self.files, self.changed, self.written = {}, [], False

    def write(self, deltas, db=None, error=None):
        self.undo()     # a retried transaction writes the directory anew
        self.report["history"] = {"db": db, "deltas": deltas}
        if error:
            self.report["history"]["error"] = error
        self.report["comparison"] = self.comparison
        if self.margin is not None:
            self.report[compare.MARGIN_KEY] = self.margin
        compare.attach(self.report)     # report["comparison"]: with compare_with's reference, else the previous runs
        if self.fresh:
            self.files, self.changed = render.write_report_dir(self.report, self.directory, self.formats)
        else:
            self.files, self.changed = render.write_report(self.report, self.directory, self.formats,
                                                           check_mode=self.check_mode)
        self.written = True

    def undo(self):
        """Remove the run directory this writer made (``dest`` files are only ever replaced)."""
        if self.written and self.fresh:
            shutil.rmtree(self.directory, ignore_errors=True)
        self.written = False


def load_results(path):
    """Read a results.json written by the callback (or by a re-analysis), or a run's record stream
    (``records.jsonl``, which the callback keeps when the run's report could not be written: see
    :func:`stream_results`). Raises ValueError (OSError when it cannot be read)."""
    return read_results(path)[0]


def read_results(path):
    """:func:`load_results`, and whether its records are plain JSON already (parsed without a NaN/Infinity
    constant: :func:`reanalyze` with ``plain_json=True`` need not copy them again)."""
    with open(path, encoding="utf-8") as handle:
        first = handle.readline()
        if first.startswith('{"e":"run"'):
            return stream_results(path), False
        data, finite = loads_finite(first + handle.read())
    if not isinstance(data, dict) or not isinstance(data.get("records"), list) or not isinstance(data.get("run"), dict):
        raise ValueError("%s is not a fleet report results.json (needs 'run' and 'records')" % path)
    if not data["run"].get("run_id"):
        raise ValueError("%s has no run.run_id" % path)
    return data, finite


def stream_results(path):
    """A record stream read as a results.json: ``{run, records, config}`` (the analysis config the run
    stored, e.g. required_checks, which :func:`reanalyze` applies). Raises ValueError (OSError)."""
    collected = Collector.load(path)
    if not collected.run.get("run_id"):
        raise ValueError("%s is not a fleet report record stream (its first line names no run_id)" % path)
    run = dict(collected.run, hosts_targeted=collected.hosts_targeted,
               hosts_targeted_count=len(collected.hosts_targeted), recovered_from=os.path.abspath(path),
               required_checks=collected.config.get("required_checks") or {})
    if collected.problems:
        run["stream_problems"] = collected.problems
    return {"run": run, "records": collected.records(), "config": dict(collected.config)}


def reanalyze(data, config=None, analyses=None, plain_json=False):
    """The report of an existing results.json, analysed again from its measured records.

    Analysis records and findings of the earlier analysis are dropped first, so the
    result is the same however often it is re-analysed. ``plain_json``: ``data`` is what
    :func:`read_results` just parsed and said is plain JSON (its records are not copied again).
    """
    records = [normalize(r, r.get("host") if isinstance(r, dict) and isinstance(r.get("host"), str) else None,
                         task_name="results.json", parsed_json=plain_json) for r in data["records"]]
    run = plain(data["run"])
    config = dict(data.get("config") or {}, **(config or {}))     # a record stream's own config, then the caller's
    return build_report(records, run, config, analyses)


# ---------------------------------------------------------------- the run summary step


RunSummaryError = run_store.RunSummaryError


def stream_path(controller_pid=None):
    """The record stream of the running ansible-playbook (by default the parent of this worker process: the step
    runs in a worker that ansible-playbook forked), found in the run store; RunSummaryError saying why not."""
    return run_store.find(os.getppid() if controller_pid is None else controller_pid)


def append_config(path, **config):
    """Add analysis config (required_checks, ...) to a run's stream from another process."""
    append_entry(path, {"e": "config", "config": plain(config)})


def append_entry(path, entry):
    """Append one entry (one line, one ``write`` of an O_APPEND descriptor) to a run's stream from another process."""
    line = json.dumps(entry, sort_keys=True, separators=(",", ":"), allow_nan=False) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0))
    try:
        os.write(fd, line.encode("utf-8"))
    finally:
        os.close(fd)


def check_required(required):
    """required_checks as {host or "*": [check glob, ...]}; raises ValueError naming what is wrong.

    The one rule is verdict.required_patterns (the analysis that applies them); this only sorts."""
    return dict((host, sorted(set(globs)))
                for host, globs in verdict.required_patterns({"required_checks": required}).items())


def run_summary(path, required_checks=None, controller_pid=None, host_required=None):
    """The verdict of the running playbook so far, from its record stream: (report, collector).

    ``controller_pid``: the ansible-playbook process asking (the parent of the worker that runs the
    step); a stream another process wrote is refused. ``host_required(hosts)`` returns the required
    checks the targeted hosts declare (their ``aifabric_required_checks``); ``required_checks`` is
    merged over them. They are stored in the stream first, so the callback's report at the end of
    the run uses the same configuration: both run the same :func:`build_report` on the same
    records. Raises RunSummaryError when no host was targeted.
    """
    collected = Collector.load(path)
    owner = collected.run.get("controller_pid")
    if controller_pid is not None and owner is not None and owner != controller_pid:
        raise RunSummaryError(   # a stream inherited from an enclosing ansible-playbook, not this run's
            "the aifabric.acceptance.fleet_report callback is not enabled in this ansible-playbook (the record "
            "stream %s belongs to process %s, another run). Enable it: %s" % (path, owner, ENABLE_LINE))
    if not collected.hosts_targeted:
        raise RunSummaryError(
            "no host was targeted: the inventory has no host in the plays' host pattern (a wrong -i path, "
            "an empty group, or a --limit that matches nothing), so there is nothing to report. "
            "Give an inventory with the hosts, e.g.: ansible-playbook -i inventories/example-fleet ... "
            "(or: make acceptance INVENTORY=inventories/example-fleet)")
    required = dict(host_required(collected.hosts_targeted) if host_required else {})
    required.update(required_checks or {})
    required = check_required(required)
    if required:
        append_config(path, required_checks=required)
        collected._apply({"e": "config", "config": {"required_checks": required}}, log=False)
    run = dict(collected.run)
    run.setdefault("ended", run.get("started"))
    config = dict(collected.config)
    report = build_report(collected.records(), run, config, prior=collected.analysis)
    if collected.analysis is None:   # the report at the end of the run takes it while no later entry changes the records
        append_entry(path, analysis_entry(report, config, collected.entries))
    report["problems"].extend(collected.problems)
    return report, collected
