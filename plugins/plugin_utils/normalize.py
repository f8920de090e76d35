# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Records in: every record a task returned checked and completed to the contract (stage 2 of the controller
pipeline, docs/report.md). Plain JSON values (:func:`plain`), :func:`normalize` (an invalid record becomes an
``error`` record that says why), the records of one task result (:func:`extract_records`) and the message of a
failed one. Controller-only (plugin_utils), no Ansible imports.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import json
import math

from ansible_collections.aifabric.acceptance.plugins.module_utils import results

MISSING_CHECK = "env.coverage"      # a targeted host that produced no record at all
UNREACHABLE_CHECK = "env.reachable"
TASK_CHECK = "env.task"             # a failed task that returned no records
REASON_MAX = 600
NO_HOST = "(no host)"


@contextlib.contextmanager
def no_cyclic_gc():
    """Python's cyclic garbage collector off while a report is read, analysed or written, then as it was.

    Parsing and analysing a fleet's records allocates millions of dicts and lists; each allocation burst made the
    collector walk every live object again (about a fifth of the report's time at 1000 hosts). The report's data
    are trees (JSON values, records, findings), freed by reference counting as before; the collector runs again
    when the block ends (and then finds any cycle made inside it)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def without_cyclic_gc(func):
    """``func`` run inside :func:`no_cyclic_gc`."""
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        with no_cyclic_gc():
            return func(*args, **kwargs)
    return wrapper


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


def shorten(text, limit=REASON_MAX):
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
        return _invalid(rec, problems, host, started, task_name)
    if parsed_json and len(rec) == _FIELD_COUNT and rec["started"]:
        return rec      # every field present (validate: none unknown), each of its type: complete as it is
    return _completed(rec, started)


def _invalid(rec, problems, host, started, task_name):
    """The ``error`` record that replaces an invalid record (a mapping), saying what was wrong."""
    check = rec.get("check") if isinstance(rec.get("check"), str) and results.CHECK_RE.match(rec["check"]) else TASK_CHECK
    return results.error(
        check, shorten("task %r returned an invalid result record: %s" % (task_name or "?", "; ".join(problems))),
        host=(rec.get("host") if isinstance(rec.get("host"), str) and rec.get("host") else host) or NO_HOST,
        target=rec.get("target") if isinstance(rec.get("target"), str) else None,
        raw=json.dumps(rec, sort_keys=True, default=str), started=started)


def _completed(rec, started):
    """A valid record with every field of the contract (empty mappings and series for the missing ones)."""
    out = {}
    for key in results.FIELDS:
        out[key] = rec.get(key)
    for key in ("metrics", "expect", "facts", "params", "tool"):
        out[key] = out[key] or {}
    out["series"] = out["series"] or []
    out["schema_version"] = results.record_version(rec)     # none: written before versions (version 0)
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
            return shorten(value)
    return "no message"


def raw_text(result):
    parts = []
    for key in ("stderr", "module_stderr", "stdout", "module_stdout", "exception"):
        value = result.get(key) if isinstance(result, dict) else None
        if value:
            parts.append("%s:\n%s" % (key, value))
    return "\n".join(parts) or None
