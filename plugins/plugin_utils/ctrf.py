# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""CTRF export: the report as a Common Test Report Format document (ctrf.json), for CI dashboards and tools that
read CTRF (https://ctrf.io; validated against the schema of ctrf-io/ctrf in the tests).

One test per record, as in junit.xml:

- ``name`` is the host and the record's label (``node1 rdma.ib_write_bw[mlx5_0][node2]``), ``suite`` ``[host]``,
  ``testId`` the same text (stable across runs, so a dashboard follows one check of one host);
- ``labels`` hold ``host``, ``check``, ``target``, ``peer`` (those present) and ``family`` (the check's first
  word: gpu, nccl, rdma, ...); ``tags`` ``[family]``;
- ``status``: pass -> ``passed``, fail and error -> ``failed``, skip -> ``skipped``, warn -> ``passed`` with
  ``extra.warning`` (its reason); ``rawStatus`` keeps the record's own status. A pairwise record that attribution
  judged counts toward no host (docs/results.md): it is ``passed`` with ``extra.pair_status`` and
  ``extra.judged_by: attribution`` - the verdict is in its ``.node``/``.link`` tests - exactly as junit.xml shows
  it, so a host has a failed test exactly when its verdict is fail or error;
- ``message`` the reason, ``trace`` the tool output kept in the record (``raw``), ``duration`` milliseconds;
- ``extra.metrics`` every metric, ``extra.expect`` the expectation bounds, ``extra.judged_by`` who judged it.

``results.extra`` carries the run id, the run verdict and every host's verdict; ``summary`` the counts and the
run's start and end in milliseconds. Controller-only (plugin_utils); imports nothing from Ansible.
"""

from __future__ import annotations

import datetime
import functools
import json
import math

from ansible_collections.aifabric.acceptance.plugins.plugin_utils import report_html

SPEC_VERSION = "0.0.0"      # the specVersion of the ctrf-io/ctrf schema the tests validate against
TOOL = "aifabric.acceptance"
STATUS = {"pass": "passed", "fail": "failed", "error": "failed", "skip": "skipped", "warn": "passed"}


def _ms(stamp):
    """Milliseconds since the epoch of an ISO 8601 time (records and runs use UTC ``...Z``), or None."""
    if type(stamp) is str:     # pylint: disable=unidiomatic-typecheck  # (the cache holds exact strings only)
        return _ms_of_text(stamp)
    return _parse_ms(stamp)


@functools.lru_cache(maxsize=65536)
def _ms_of_text(stamp):
    """_parse_ms of a string, remembered: the records of a run share few start times (a pure function of an immutable
    key, so no answer can go stale)."""
    return _parse_ms(stamp)


def _parse_ms(stamp):
    if not stamp:
        return None
    try:
        when = datetime.datetime.fromisoformat(str(stamp).replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=datetime.timezone.utc)
    return int(when.timestamp() * 1000)


def _duration_ms(value):
    if type(value) is float:    # pylint: disable=unidiomatic-typecheck  # the common case first (once a test)
        return int(round(value * 1000)) if value >= 0 and value - value == 0.0 else 0
    try:
        number = float(value)
    except (TypeError, ValueError):
        return 0
    return int(round(number * 1000)) if math.isfinite(number) and number >= 0 else 0


def _plain(value):
    """A JSON value as the CTRF document keeps it (numbers and text as they are; NaN/inf as text)."""
    if isinstance(value, float) and not math.isfinite(value):
        return str(value)
    return value


def _labels(rec, host):
    out = {"host": host}
    for key in ("check", "target", "peer"):
        value = rec.get(key)
        if value:
            out[key] = str(value)
    out["family"] = str(rec.get("check") or "").split(".", 1)[0] or "other"
    return out


def _extra(rec, judged):
    extra = {}
    metrics = rec.get("metrics")
    if metrics:
        extra["metrics"] = {k: _plain(v) for k, v in sorted(metrics.items())}
    rules = rec.get("expect")
    if rules:
        expect = {}
        for key, rule in sorted(rules.items()):
            if isinstance(rule, dict):
                bounds = {b: _plain(rule[b]) for b in ("min", "max", "equals") if b in rule}
                if bounds:
                    expect[key] = bounds
        if expect:
            extra["expect"] = expect
    status = rec.get("status")
    if judged and status in ("fail", "error", "warn"):
        extra["pair_status"] = status
        extra["judged_by"] = report_html.judged_by(rec)[0]
    elif rec.get("judged_by"):
        extra["judged_by"] = rec["judged_by"]
    if status == "warn" and not judged:
        extra["warning"] = rec.get("reason") or "warn"
    return extra


def _judged(rec, counted):
    """A pair of a matrix that attribution judged, of a status that would fail its host (shown as passed)."""
    return rec.get("status") in ("fail", "error", "warn") and report_html.judged_pair(rec, counted)


def _status(rec, judged):
    return "passed" if judged else STATUS.get(rec.get("status"), "other")


def _test(rec, host, counted):
    status = rec.get("status")
    judged = _judged(rec, counted)
    name = "%s %s" % (host, report_html.label(rec))
    labels = _labels(rec, host)
    test = {"name": name, "testId": name, "status": "passed" if judged else STATUS.get(status, "other"),     # _status
            "rawStatus": str(status), "duration": _duration_ms(rec.get("duration_s")), "suite": [host],
            "labels": labels, "tags": [labels["family"]]}
    start = _ms(rec.get("started"))
    if start is not None:
        test["start"] = start
        test["stop"] = start + test["duration"]
    if rec.get("reason"):
        test["message"] = str(rec["reason"])
    if rec.get("raw") and status in ("fail", "error"):
        test["trace"] = str(rec["raw"])
    extra = _extra(rec, judged)
    if extra:
        test["extra"] = extra
    return test


def _summary(records, run, counted):
    """The summary of the tests of ``records`` (as :func:`_test` makes them, without making them)."""
    counts = dict((k, 0) for k in ("passed", "failed", "skipped", "pending", "other"))
    for rec in records:
        counts[_status(rec, _judged(rec, counted))] += 1
    start = _ms(run.get("started"))
    stop = _ms(run.get("ended") or run.get("finished"))
    if start is None or stop is None or stop < start:
        spans = [(begin, begin + _duration_ms(rec.get("duration_s")))
                 for begin, rec in ((_ms(rec.get("started")), rec) for rec in records) if begin is not None]
        if start is None:
            start = min([begin for begin, _end in spans] or [0])
        if stop is None or stop < start:
            stop = max([end for _begin, end in spans] + [start])
    hosts = set(rec.get("host") or "(no host)" for rec in records)
    return dict(tests=len(records), suites=len(hosts), start=start, stop=stop, duration=stop - start, **counts)


def document(report, counted=None, version=None, tests=None):
    """The CTRF document (a dict) of a report; ``tests``: the list it holds as its tests (default: the test of
    every record)."""
    records = report.get("records") or []
    counted = report_html.counted_ids(records) if counted is None else counted
    run = report.get("run") or {}
    summary = report.get("summary") or {}
    if tests is None:
        tests = [_test(rec, rec.get("host") or "(no host)", counted) for rec in records]
    tool = {"name": TOOL}
    version = version or run.get("collection_version")
    if version:
        tool["version"] = str(version)
    doc = {"reportFormat": "CTRF", "specVersion": SPEC_VERSION, "generatedBy": TOOL,
           "results": {"tool": tool, "summary": _summary(records, run, counted), "tests": tests,
                       "extra": {"run_id": run.get("run_id"), "verdict": summary.get("worst_status"),
                                 "hosts": dict((h["host"], h["status"]) for h in summary.get("hosts") or [])}}}
    if run.get("run_id"):
        doc["runId"] = str(run["run_id"])
    stamp = run.get("ended") or run.get("finished") or run.get("started")
    if stamp:
        doc["timestamp"] = str(stamp)
    return doc


CHUNK_TESTS = 2000      # tests encoded per chunk of ctrf.json
_TESTS = '"tests":[]'


def _dumps(value, check_circular=True):
    """Compact JSON text (``check_circular=False``: a tree, as render._dumps)."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"), default=str,
                      check_circular=check_circular)


def ctrf_chunks(report, counted=None):
    """ctrf.json's text (compact, one line, as results.json) as chunks: the document around its tests, the tests
    made and encoded a few thousand at a time (never all of them at once)."""
    records = report.get("records") or []
    counted = report_html.counted_ids(records) if counted is None else counted
    # the document with no test: its first '"tests":[]' is the tests' place (the tool and summary before it have
    # fixed keys, none called "tests" with a list value)
    head, _tests, tail = _dumps(document(report, counted, tests=[])).partition(_TESTS)
    yield head + '"tests":['
    for start in range(0, len(records), CHUNK_TESTS):
        tests = [_test(rec, rec.get("host") or "(no host)", counted) for rec in records[start:start + CHUNK_TESTS]]
        yield ("," if start else "") + _dumps(tests, check_circular=False)[1:-1]      # (tests made here: trees)
    yield "]" + tail + "\n"
