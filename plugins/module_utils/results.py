# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The result record: the one contract between every part of the collection.

A record is a plain JSON-able dict (see docs/results.md and docs/results.schema.json):

    host, peer, check, target, status, reason, metrics, expect, facts, series,
    params, tool, started, duration_s, raw, schema_version

``schema_version`` (:data:`SCHEMA_VERSION`) names the layout the record was made in; a record without one (an
old results.json) is version 0. From version 1 a record's ``series`` rows follow the schema of its family
(:data:`SERIES_FAMILIES`, the mirror of docs/results.schema.json's ``$defs``).

This module is private to the collection (no stable API) and imports nothing
from Ansible, so parsers, modules, filters and the callback all share it.
It must run on the oldest target Python (3.8).
"""

from __future__ import annotations

import datetime
import functools
import math
import re

STATUSES = ("pass", "warn", "fail", "skip", "error")
# Worst last: used to rank hosts and to fold several verdicts into one. ``skip`` ranks below
# ``pass``: a skipped check says nothing against a host, so a host (or a run) is ``skip`` only
# when nothing ran on it (docs/results.md, "Verdicts").
SEVERITY = {"skip": 0, "pass": 1, "warn": 2, "fail": 3, "error": 4}
JUDGED = ("pass", "warn", "fail")    # statuses that claim a measurement was judged
FAMILIES = ("env", "gpu", "nccl", "hccl", "rdma", "k8s", "net")
CHECK_RE = re.compile(r"^(env|gpu|nccl|hccl|rdma|k8s|net)\.[a-z0-9_]+(\.[a-z0-9_]+)*$")
# Metric names carry their unit (docs/results.md).
METRIC_RE = re.compile(r"^[a-z][a-z0-9_]*$")
FIELDS = (
    "host", "peer", "check", "target", "status", "reason", "metrics", "expect",
    "facts", "series", "params", "tool", "started", "duration_s", "raw", "schema_version",
)
# The record layout this code makes and reads: 1 = the series of each family follow its schema. A record without
# schema_version is version 0 (results.json written before versions): read and analysed, its series only a list of
# mappings. A record of a later version than this is refused (its fields may mean what this code does not know).
SCHEMA_VERSION = 1
RAW_MAX_CHARS = 4000
# params.runs: how many independent runs of the measurement a judged record's status rests on (docs/results.md, "Runs")
RUNS = "runs"
RAW_MAX_LINES = 40

# ---------------------------------------------------------------- series: one schema per record family
# Each family: the checks it covers (a regular expression on ``check``), the x column (the message size), the
# columns of a row (name -> (JSON types, required)) and ``plot``: the y columns report.html draws against x, the
# first one with a number wins (none: the family is not drawn). Units live in the column names, as in metrics.
# This table mirrors docs/results.schema.json ($defs series_<family>, x-plot); a test holds them equal.
_INT, _INT_NULL, _NUM_NULL, _STR, _STR_NULL = ("integer",), ("integer", "null"), ("number", "null"), ("string",), (
    "string", "null")


def _collective_columns(extra=()):
    """nccl-tests' per-size table (collectives.series_rows): out-of-place (oop_) and in-place (ip_) cells."""
    columns = {"size_bytes": (_INT, True), "count": (_INT_NULL, True), "type": (_STR_NULL, True),
               "redop": (_STR_NULL, True), "root": (_INT_NULL, True)}
    for prefix in ("oop_", "ip_"):
        for name in ("time_us", "algbw_gbyte_s", "busbw_gbyte_s", "wrong"):
            columns[prefix + name] = (_NUM_NULL, True)
        for name in ("iter_min_us", "iter_max_us", "iter_p99_us", "iter_cv_pct"):     # '-I 1' runs only
            columns[prefix + name] = (_NUM_NULL, False)
    columns.update(extra)
    return columns


_COLLECTIVE_PLOT = ("oop_busbw_gbyte_s", "ip_busbw_gbyte_s", "oop_algbw_gbyte_s", "ip_algbw_gbyte_s")
SERIES_FAMILIES = {
    "collective": {
        "checks": r"^nccl\.", "x": "size_bytes", "plot": _COLLECTIVE_PLOT, "columns": _collective_columns(),
        "what": "nccl-tests collectives (nccl.<collective>) and the torch all_reduce probe (nccl.torch_all_reduce)"},
    "hccl": {
        "checks": r"^hccl\.", "x": "size_bytes", "plot": _COLLECTIVE_PLOT,
        "columns": _collective_columns({"check_result": (_STR_NULL, False)}),
        "what": "HCCL Test collectives (hccl.<collective>): nccl-tests' columns and the tool's own check result"},
    "perftest_bw": {
        "checks": r"^rdma\.ib_(write|read|send|atomic)_bw(\.server)?$", "x": "msg_size_bytes", "plot": ("bw_avg_gbit_s",),
        "columns": {"msg_size_bytes": (_INT, True), "iterations": (_INT, True), "bw_peak_gbit_s": (_NUM_NULL, True),
                    "bw_avg_gbit_s": (_NUM_NULL, True), "msg_rate_mpps": (_NUM_NULL, True),
                    "tool_unit": (_STR_NULL, True), "tool_bw_peak": (_NUM_NULL, True), "tool_bw_avg": (_NUM_NULL, True)},
        "what": "perftest bandwidth tests (rdma.ib_<verb>_bw, .server: the server side)"},
    "perftest_lat": {
        "checks": r"^rdma\.ib_(write|read|send|atomic)_lat(\.server)?$", "x": "msg_size_bytes", "plot": (),
        "columns": dict([("msg_size_bytes", (_INT, True)), ("iterations", (_INT, True))] + [
            ("lat_%s_us" % name, (_NUM_NULL, True)) for name in ("min", "max", "typical", "avg", "stdev", "p99", "p999")]),
        "what": "perftest latency tests (rdma.ib_<verb>_lat, .server: the server side); not drawn"},
    "soak": {
        "checks": r"^gpu\.soak$", "x": "t_ms", "plot": ("tflops", "power_w", "temperature_c", "sm_clock_mhz"),
        "columns": {"t_ms": (_INT, True), "tflops": (_NUM_NULL, True), "power_w": (_NUM_NULL, True),
                    "temperature_c": (_NUM_NULL, True), "sm_clock_mhz": (_NUM_NULL, True), "reasons": (_STR_NULL, True)},
        "what": "the burn-in soak (gpu.soak): throughput and telemetry over time, one row per window"},
}
_JSON_TYPES = {"integer": (int,), "number": (int, float), "string": (str,), "null": (type(None),)}
# per family: (compiled checks, required columns, {column: exact Python types}) for validate's hot loop
_SERIES_RULES = dict((name, (re.compile(family["checks"]),
                             frozenset(c for c, (_t, required) in family["columns"].items() if required),
                             dict((c, frozenset(t for j in types for t in _JSON_TYPES[j]))
                                  for c, (types, _r) in family["columns"].items())))
                     for name, family in SERIES_FAMILIES.items())
SERIES_PROBLEMS_SHOWN = 3
_VALID_ROW_SHAPES = {}          # family -> the row shapes (columns, exact value types) found valid: checked once
_VALID_ROW_SHAPES_MAX = 4096


def series_family(check):
    """The name of the series family of a check (SERIES_FAMILIES), None when its records carry no series."""
    return _series_family(check) if isinstance(check, str) else None


@functools.lru_cache(maxsize=4096)
def _series_family(check):
    return next((name for name, rule in _SERIES_RULES.items() if rule[0].match(check)), None)


class RecordError(ValueError):
    """A record that breaks the contract (a programming error in the caller)."""


def utc_now():
    """The current time as an ISO 8601 UTC string with a Z suffix."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def trim(text, max_lines=RAW_MAX_LINES, max_chars=RAW_MAX_CHARS):
    """Keep the tail of a tool's output (the end is where tools print their errors)."""
    if text is None:
        return None
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    lines = text.splitlines()
    cut = len(lines) > max_lines
    tail = "\n".join(lines[-max_lines:])
    if len(tail) > max_chars:
        tail = tail[-max_chars:]
        cut = True
    if cut:
        return "[... %d lines trimmed ...]\n%s" % (max(len(lines) - max_lines, 0), tail)
    return tail


def _finite(value):
    return not (isinstance(value, float) and (math.isnan(value) or math.isinf(value)))


def nonfinite_metrics(record):
    """Names of the metrics of a record whose value is NaN or infinite (sorted)."""
    metrics = record.get("metrics") if isinstance(record, dict) else None
    if not metrics or not isinstance(metrics, dict):
        return []       # (no metric: many records, e.g. the probe's)
    return sorted(str(name) for name, value in metrics.items() if not _finite(value))


def demote_nonfinite(record):
    """A record whose NaN/inf metrics are null, and that is never pass/warn/fail for it.

    A NaN or infinite metric is not a measurement: a ``pass``, ``warn`` or ``fail`` record
    that carries one becomes ``error`` ("metric X is not a finite number (nan)"), its other
    fields kept; ``skip`` and ``error`` records keep their status. Used by :func:`make` and by
    the controller on every record it receives (fleet.normalize). Returns a new dict (the input
    is not modified); anything that is not a mapping is returned as it is.
    """
    bad = nonfinite_metrics(record)
    if not bad:
        return record
    record = dict(record)
    metrics = record["metrics"]
    record["metrics"] = dict((k, v if _finite(v) else None) for k, v in metrics.items())
    if record.get("status") in JUDGED:
        why = "; ".join("metric %s is not a finite number (%s)" % (name, metrics[name]) for name in bad)
        was = record.get("status")
        record["status"] = "error"
        record["reason"] = "%s: a %s record without a finite measurement is an error%s" % (
            why, was, ("; " + record["reason"]) if isinstance(record.get("reason"), str) and record["reason"] else "")
    return record


def make(check, status, reason=None, host=None, peer=None, target=None, metrics=None,
         expect=None, facts=None, params=None, tool=None, started=None, duration_s=None,
         raw=None, series=None):
    """Build one record and check it against the contract.

    Raises RecordError on a contract breach: that is a bug in the caller,
    never a property of the measured hardware.
    """
    record = {
        "host": host,
        "peer": peer,
        "check": check,
        "target": None if target is None else str(target),
        "status": status,
        "reason": reason,
        "metrics": dict(metrics or {}),
        "expect": dict(expect or {}),
        "facts": dict(facts or {}),
        "series": list(series or []),
        "params": dict(params or {}),
        "tool": dict(tool or {}),
        "started": started or utc_now(),
        "duration_s": None if duration_s is None else round(float(duration_s), 3),
        "raw": trim(raw),
        "schema_version": SCHEMA_VERSION,
    }
    record = demote_nonfinite(record)
    problems = validate(record)
    if problems:
        raise RecordError("invalid result record for %r: %s" % (check, "; ".join(problems)))
    return record


def skip(check, reason, **kwargs):
    """Not applicable or not present (no GPU, no HCA): says why."""
    return make(check, "skip", reason=reason, **kwargs)


def error(check, reason, raw=None, **kwargs):
    """The check could not run or its output could not be read: says why, keeps the output."""
    return make(check, "error", reason=reason, raw=raw, **kwargs)


def _field_names(record):
    problems = ["unknown field %r" % key for key in record if key not in FIELDS]
    return problems + ["missing field %r" % key for key in ("check", "status") if key not in record]


def _check_and_status(record):
    problems = []
    check = record.get("check")
    if not isinstance(check, str) or not CHECK_RE.match(check):
        problems.append("check %r is not family.name with family in %s" % (check, ", ".join(FAMILIES)))
    status = record.get("status")
    if status not in STATUSES:
        problems.append("status %r is not one of %s" % (status, ", ".join(STATUSES)))
    reason = record.get("reason")
    if reason is not None and not isinstance(reason, str):
        problems.append("reason must be a string")
    if status in ("warn", "fail", "skip", "error") and not reason:
        problems.append("a %s record must say why (reason)" % status)
    return problems


def _field_types(record):
    problems = ["%s must be a string or null" % key for key in ("host", "peer", "target", "started", "raw")
                if record.get(key) is not None and not isinstance(record[key], str)]
    return problems + ["%s must be a mapping" % key for key in ("metrics", "expect", "facts", "params", "tool")
                       if not isinstance(record.get(key, {}), dict)]


def _metric_values(record):
    problems = []
    metrics = record.get("metrics")
    for name, value in (metrics.items() if isinstance(metrics, dict) else ()):
        if not isinstance(name, str) or not METRIC_RE.match(name):
            problems.append("metric name %r is not snake_case" % (name,))
        if value is not None and not isinstance(value, (int, float)):
            problems.append("metric %s must be a number or null, not %s" % (name, type(value).__name__))
        elif not _finite(value):
            problems.append("metric %s is not a finite number (%s)" % (name, value))
    return problems


def _fact_values(record):
    facts = record.get("facts")
    return ["fact %s has a non-JSON type %s" % (name, type(value).__name__)
            for name, value in (facts.items() if isinstance(facts, dict) else ())
            if value is not None and not isinstance(value, (str, int, float, bool, list, dict))]


def _series_and_duration(record):
    problems = []
    series = record.get("series", [])
    if not isinstance(series, list) or not all(isinstance(row, dict) for row in series):
        problems.append("series must be a list of mappings (one per row of the tool's table)")
    elif series and record_version(record) >= 1:
        problems.extend(series_problems(record.get("check"), series))
    duration = record.get("duration_s")
    if duration is not None and (not isinstance(duration, (int, float)) or duration < 0):
        problems.append("duration_s must be a non-negative number or null")
    return problems


def record_version(record):
    """The layout version of a record: its schema_version, 0 when it has none (written before versions)."""
    version = record.get("schema_version")
    return version if type(version) is int else 0     # pylint: disable=unidiomatic-typecheck  # not a bool


def _runs(record):
    params = record.get("params")
    runs = params.get(RUNS) if isinstance(params, dict) else None
    if runs is None or (type(runs) is int and runs >= 1):    # pylint: disable=unidiomatic-typecheck  # not a bool
        return []
    return ["params.%s must be a whole number >= 1, not %r" % (RUNS, runs)]


def _schema_version(record):
    if "schema_version" not in record:
        return []
    version = record["schema_version"]
    if type(version) is not int or version < 0:     # pylint: disable=unidiomatic-typecheck  # a bool is no version
        return ["schema_version must be a whole number >= 0, not %r" % (version,)]
    if version > SCHEMA_VERSION:
        return ["schema_version %d is newer than this collection reads (%d): read it with the aifabric.acceptance "
                "release that wrote it, or a later one" % (version, SCHEMA_VERSION)]
    return []


def _row_problems(row, required, types):
    problems = ["missing column %s" % name for name in sorted(required.difference(row))]
    for name, value in row.items():
        allowed = types.get(name)
        if allowed is None:
            problems.append("unknown column %r" % (name,))
        elif type(value) not in allowed:     # pylint: disable=unidiomatic-typecheck  # exact JSON types (no bool)
            problems.append("column %s is %s, not %s" % (name, type(value).__name__, "/".join(sorted(
                t.__name__.replace("NoneType", "null") for t in allowed))))
    return problems


def series_problems(check, series):
    """The problems of a series against the schema of its check's family (SERIES_FAMILIES): a check without a
    family carries no series; every row has its family's required columns, no other columns, each of its type."""
    family = series_family(check)
    if family is None:
        return ["check %s has no series schema (docs/results.schema.json): its series must be empty, got %d rows"
                % (check, len(series))]
    _pattern, required, types = _SERIES_RULES[family]
    valid = _VALID_ROW_SHAPES.setdefault(family, set())
    problems = []
    for number, row in enumerate(series, 1):
        shape = (tuple(row), tuple(map(type, row.values())))     # columns and exact types: few distinct ones per tool
        if shape in valid:
            continue
        found = _row_problems(row, required, types)
        if not found and len(valid) < _VALID_ROW_SHAPES_MAX:
            valid.add(shape)
        problems.extend("series row %d (%s family): %s" % (number, family, p) for p in found)
    if len(problems) > SERIES_PROBLEMS_SHOWN:
        problems = problems[:SERIES_PROBLEMS_SHOWN] + ["... %d more series problems" % (len(problems) - SERIES_PROBLEMS_SHOWN)]
    return problems


# validate's field checks in the order their problems are listed: each record -> [problem]
_FIELD_CHECKS = (_field_names, _check_and_status, _field_types, _metric_values, _fact_values, _runs, _schema_version,
                 _series_and_duration)


_FIELD_SET = frozenset(FIELDS)
_TEXT_FIELDS = ("host", "peer", "target", "started", "raw")
_MAPPING_FIELDS = ("metrics", "expect", "facts", "params", "tool")
_NEEDS_REASON = frozenset(("warn", "fail", "skip", "error"))
_STATUS_SET = frozenset(STATUSES)
_FACT_TYPES = frozenset((str, int, float, bool, list, dict, type(None)))
_GOOD_CHECKS = set()        # check names and metric names that matched their pattern (few distinct ones per run)
_GOOD_METRIC_NAMES = set()
_GOOD_NAMES_MAX = 100000


def _good_name(name, pattern, seen):
    if type(name) is not str:     # pylint: disable=unidiomatic-typecheck  # (a str subclass: the field checks)
        return False
    if name in seen:
        return True
    if not pattern.match(name):
        return False
    if len(seen) < _GOOD_NAMES_MAX:
        seen.add(name)
    return True


def _good_metrics(metrics):
    for name, value in metrics.items():
        if not _good_name(name, METRIC_RE, _GOOD_METRIC_NAMES):
            return False
        kind = type(value)
        if kind is float:
            if value - value != 0.0:      # nan or inf
                return False
        elif kind is not int and value is not None:
            return False
    return True


def _plainly_valid(record):
    """True when ``record`` is certainly valid (the common case, checked in one pass without building a problem
    list); False when it may not be: then the field checks below say what is wrong. Never True for a record any of
    them would find a problem in."""
    get = record.get
    status = get("status")
    if type(status) is not str or status not in _STATUS_SET:     # pylint: disable=unidiomatic-typecheck
        return False
    if not _FIELD_SET.issuperset(record) or "check" not in record:
        return False
    reason = get("reason")
    if (reason is not None and type(reason) is not str) or (not reason and status in _NEEDS_REASON):  # pylint: disable=unidiomatic-typecheck
        return False
    return _good_name(record["check"], CHECK_RE, _GOOD_CHECKS) and _plain_fields(record) and _plain_series(record)


def _plain_fields(record):
    """The fields of a certainly valid record (see _plainly_valid) other than check, status, reason and series."""
    get = record.get
    for key in _TEXT_FIELDS:
        value = get(key)
        if value is not None and type(value) is not str:     # pylint: disable=unidiomatic-typecheck
            return False
    for key in _MAPPING_FIELDS:
        if type(get(key, {})) is not dict:     # pylint: disable=unidiomatic-typecheck
            return False
    metrics, facts, params = get("metrics"), get("facts"), get("params")
    if (metrics and not _good_metrics(metrics)) or (facts and not _FACT_TYPES.issuperset(map(type, facts.values()))):
        return False
    runs = params.get(RUNS) if params else None
    if runs is not None and not (type(runs) is int and runs >= 1):     # pylint: disable=unidiomatic-typecheck
        return False
    version = get("schema_version", 0)
    if type(version) is not int or not 0 <= version <= SCHEMA_VERSION:     # pylint: disable=unidiomatic-typecheck
        return False
    duration = get("duration_s")
    return duration is None or (type(duration) in (int, float) and duration >= 0)     # pylint: disable=unidiomatic-typecheck


def _plain_series(record):
    """The series of a certainly valid record (see _plainly_valid): a list of mappings, of its family's schema from
    layout version 1 on."""
    series = record.get("series", [])
    if type(series) is not list:     # pylint: disable=unidiomatic-typecheck
        return False
    if series:
        if not all(type(row) is dict for row in series):     # pylint: disable=unidiomatic-typecheck
            return False
        if record_version(record) >= 1 and series_problems(record["check"], series):
            return False
    return True


def validate(record):
    """Return a list of contract problems (empty when the record is valid).

    Mirrors docs/results.schema.json without needing jsonschema on the target.
    """
    if not isinstance(record, dict):
        return ["record is %s, not a dict" % type(record).__name__]
    if type(record) is dict and _plainly_valid(record):     # pylint: disable=unidiomatic-typecheck
        return []
    problems = []
    for field_check in _FIELD_CHECKS:
        problems.extend(field_check(record))
    return problems


def worst(statuses, default="pass"):
    """The most severe status of an iterable of statuses (error > fail > warn > pass > skip).

    ``skip`` is the least severe: the worst of ``pass`` and ``skip`` is ``pass``.
    """
    result = None
    for status in statuses:
        if result is None or SEVERITY.get(status, 0) > SEVERITY.get(result, 0):
            result = status
    return default if result is None else result


def count(records):
    """Counts per status, every status present (zero when absent)."""
    counts = dict((s, 0) for s in STATUSES)
    for record in records:
        status = record.get("status")
        if status in counts:
            counts[status] += 1
    return counts


def with_host(records, host):
    """Fill in the host of records that have none (modules do not know their inventory name)."""
    out = []
    for record in records:
        record = dict(record)
        if not record.get("host"):
            record["host"] = host
        out.append(record)
    return out


# ---------------------------------------------------------------- runs: what a verdict rests on

def rests_on(records, runs=1):
    """``records`` with ``params.runs`` = ``runs`` on each judged one (``pass``, ``warn``, ``fail``): the number of
    independent runs of the measurement its status rests on (docs/results.md, "Runs"). ``skip`` and ``error``
    records measured nothing and are left as they are. Changes the records in place; returns the list."""
    for record in records:
        if record.get("status") in JUDGED:
            record.setdefault("params", {})[RUNS] = runs
    return records


def retested(first, retest, metric, better="higher"):
    """The record of a measurement judged on two runs: ``first``, and ``retest``, the same check and target measured
    again because ``first`` failed (or looked low). Both figures of ``metric`` stay, as ``run1_<metric>`` and
    ``run2_<metric>``.

    - both judged: the record of the better run (the less severe status, then the better figure: ``better``
      ``higher`` or ``lower``), ``params.runs`` 2, ``fail`` only when both failed; when one run failed and the other
      did not, ``warn``, inconclusive ("its two runs disagree", both runs in the reason): never ``fail`` on one run
      that the other contradicts, nor ``pass``;
    - a retest that measured nothing (``error``, ``skip``): ``first``, its reason saying so, ``params.runs`` 1.
    """
    if retest.get("status") not in JUDGED:
        out = dict(first, params=dict(first.get("params") or {}, **{RUNS: 1}))
        if out.get("status") != "pass":
            out["reason"] = "%s (one run; retest: %s)" % (out.get("reason"), retest.get("reason"))
        return out
    figures = [(run.get("metrics") or {}).get(metric) for run in (first, retest)]

    def rank(run_figure):
        run, figure = run_figure
        sign = 1 if better == "higher" else -1
        return (-SEVERITY.get(run.get("status"), 0), figure is not None, sign * (figure or 0))

    best = max(zip((first, retest), figures), key=rank)[0]
    out = dict(best, metrics=dict(best.get("metrics") or {}), params=dict(best.get("params") or {}, **{RUNS: 2}),
               started=first.get("started"),
               duration_s=_sum_durations(first.get("duration_s"), retest.get("duration_s")))
    out["metrics"]["run1_" + metric], out["metrics"]["run2_" + metric] = figures
    failed = [run.get("status") == "fail" for run in (first, retest)]
    if any(failed) and not all(failed):
        out["status"] = "warn"
        out["reason"] = "inconclusive: its two runs disagree: run 1 %s, run 2 %s" % tuple(
            _run_said(run, metric, figure) for run, figure in zip((first, retest), figures))
        out["raw"] = out.get("raw") or first.get("raw") or retest.get("raw")
    elif all(failed):
        out["reason"] = "%s (both runs: %s %s, then %s)" % (out.get("reason"), metric, _figure(figures[0]),
                                                            _figure(figures[1]))
    problems = validate(out)
    if problems:
        raise RecordError("invalid retested record for %r: %s" % (out.get("check"), "; ".join(problems)))
    return out


def _run_said(run, metric, figure):
    if run.get("status") == "fail":
        return "failed (%s)" % run.get("reason")
    if run.get("status") == "warn":
        return "warned (%s)" % run.get("reason")
    return "passed with %s %s" % (metric, _figure(figure))


def _figure(value):
    return "%.6g" % value if isinstance(value, float) else str(value)


def _sum_durations(first, second):
    return None if first is None or second is None else round(float(first) + float(second), 3)
