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


READ_CHUNK = 1 << 23        # characters of a results.json read at a time (8 Mi)
BATCH_CHARS = 1 << 22       # about this much text of records parsed by one json call (4 Mi)
RECORD_START = ',{"host":'  # where a record of a results.json this collection wrote may begin
BATCH_TRIES = 8             # candidate ends of a batch tried before the rest is parsed in one call
_SPACE = " \t\n\r"


class _Fallback(Exception):
    """The document is not laid out as :func:`read_document` expects: it is parsed whole instead."""


class _Reader:
    """A JSON text read a chunk at a time (``buf[pos:]`` is what is not parsed yet)."""

    def __init__(self, handle, decoder):
        self.handle, self.decoder = handle, decoder
        self.buf, self.pos, self.eof = "", 0, False

    def more(self, least=0):
        """Read at least ``least`` more characters, and at least READ_CHUNK (fewer at the end); False at the end of
        the file."""
        chunk = self.handle.read(max(least, READ_CHUNK))
        if not chunk:
            self.eof = True
            return False
        self.buf = self.buf[self.pos:] + chunk
        self.pos = 0
        return True

    def char(self):
        """The next character that is not white space (reading on as needed); '' at the end."""
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in _SPACE:
                self.pos += 1
            if self.pos < len(self.buf) or not self.more():
                return self.buf[self.pos:self.pos + 1]

    def expect(self, chars):
        """The next character, one of ``chars`` (else _Fallback), taken."""
        found = self.char()
        if not found or found not in chars:
            raise _Fallback()
        self.pos += 1
        return found

    def value(self):
        """The next JSON value, reading on (twice as much each time) until it parses and does not end where the text
        read so far ends (a number there may go on); _Fallback when it does not parse."""
        self.char()
        while True:
            try:
                value, end = self.decoder.raw_decode(self.buf, self.pos)
            except ValueError:
                value, end = None, -1
            if (end < 0 or end == len(self.buf)) and self.more(len(self.buf)):
                continue
            if end < 0:
                raise _Fallback() from None
            self.pos = end
            return value

    def records(self, intern):
        """The elements of the array that starts here, parsed a batch of records at a time, each batch given to
        ``intern``."""
        self.expect("[")
        if self.char() == "]":
            self.pos += 1
            return []
        out = []
        while True:
            items = self._batch()
            intern(items)
            out.extend(items)
            if self.expect(",]") == "]":
                return out

    def _batch(self):
        """The next records: the text up to a record start (RECORD_START) at least BATCH_CHARS ahead that parses as
        whole values (a start inside a record does not: the next one is tried), or the rest of the array."""
        ahead, tries = BATCH_CHARS, 0
        while tries < BATCH_TRIES:
            cut = self.buf.find(RECORD_START, self.pos + ahead)
            if cut < 0:
                if self.eof:
                    break
                if len(self.buf) - self.pos > BATCH_CHARS + 2 * READ_CHUNK:
                    raise _Fallback()       # no record start in 20 MB: not the layout this collection writes
                ahead = max(ahead, len(self.buf) - self.pos - len(RECORD_START))
                self.more()
                continue
            tries += 1
            text = "[" + self.buf[self.pos:cut] + "]"
            try:
                items, end = self.decoder.raw_decode(text)
            except ValueError:
                items, end = None, 0
            if end == len(text):
                self.pos = cut
                return items
            ahead = cut + 1 - self.pos
        while True:         # the rest of the array in one call
            try:
                items, end = self.decoder.raw_decode("[" + self.buf[self.pos:])
            except ValueError:
                if self.more(len(self.buf)):
                    continue
                raise _Fallback() from None
            self.pos += end - 2     # onto the array's closing bracket
            return items


_TEXT_FIELDS = ("host", "check", "status", "started", "target", "peer")
_TEXT_MAPS = ("facts", "tool", "params", "expect")


def intern_records(records, memo):
    """One copy of each repeated string of the records (``memo``: {text: the copy}): their host, check, status,
    start time, target and peer, the text values of facts, tool, params and expect, the text columns of a series (a
    fleet's records repeat a few thousand strings millions of times): the same values, a quarter less memory at
    1000 hosts. Only exact ``str`` values are replaced."""
    setdefault = memo.setdefault
    for rec in records:
        if rec.__class__ is not dict:
            continue
        for key in _TEXT_FIELDS:
            value = rec.get(key)
            if value.__class__ is str:
                rec[key] = setdefault(value, value)
        for key in _TEXT_MAPS:
            mapping = rec.get(key)
            if mapping and mapping.__class__ is dict:
                for name, value in mapping.items():
                    if value.__class__ is str:
                        mapping[name] = setdefault(value, value)
        series = rec.get("series")
        if series and series.__class__ is list and series[0].__class__ is dict:
            _intern_columns(series, setdefault)


def _intern_columns(series, setdefault):
    """The text columns (those of the first row) of a series' rows, each run of one value looked up once."""
    for column in [name for name, value in series[0].items() if value.__class__ is str]:
        last = None
        for row in series:
            text = row.get(column) if row.__class__ is dict else None
            if text.__class__ is str:
                if text != last:
                    last = setdefault(text, text)
                row[column] = last


def read_document(handle):
    """``(value, finite)`` of the JSON text of ``handle`` (a text file), as :func:`loads_finite` gives them, with
    less memory: when it is an object whose ``records`` array is laid out as this collection writes it, that array
    is parsed a batch of records at a time, each batch's repeated strings made one (:func:`intern_records`), and
    never more than a few chunks of the text are held (json.loads holds all of the text and all of its values at
    once: 1.2 GiB for a 257 MB results.json). Any other text is parsed whole, as before, with the same errors."""
    seen = []

    def constant(name):
        seen.append(name)
        return float(name)

    reader = _Reader(handle, json.JSONDecoder(parse_constant=constant))
    try:
        out = {}
        reader.expect("{")
        if reader.char() == "}":
            reader.pos += 1
        else:
            memo = {}
            while True:
                key = reader.value()
                if type(key) is not str:   # pylint: disable=unidiomatic-typecheck
                    raise _Fallback()
                reader.expect(":")
                if key == "records" and reader.char() == "[":
                    out[key] = reader.records(lambda items: intern_records(items, memo))
                else:
                    out[key] = reader.value()
                if reader.expect(",}") == "}":
                    break
        if reader.char():
            raise _Fallback()
    except (_Fallback, UnicodeDecodeError):
        handle.seek(0)
        return loads_finite(handle.read())
    return out, not seen


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


def item_label(item):
    """What names a loop item (its ``loop_control.label``, else its loop variable's value when that is a name or
    number, else that value's ``name``), or None."""
    if not isinstance(item, dict):
        return None
    value = item.get("_ansible_item_label")
    if value is None:
        value = item.get(item.get("ansible_loop_var") or "item")
        if isinstance(value, dict):
            value = value.get("name")
    return shorten(value, 80) if isinstance(value, (str, int, float)) and not isinstance(value, bool) else None


def failed_items_message(items):
    """One line for loop items that failed without records: how many, which (their labels) and the first's message."""
    labels = [label for label in (item_label(item) for item in items) if label is not None]
    return "%d loop item(s) failed%s: %s" % (len(items), " (%s)" % ", ".join(labels) if labels else "",
                                             failure_message(items[0]))


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
    (:func:`loads_finite`, :func:`read_document`), so it is plain JSON already and is not copied: it is
    completed in place and returned (the caller's parsed document holds it for nobody else; a copy of every
    record of a 1000-host fleet was 136 MiB).
    """
    demoted = results.demote_nonfinite(record)
    rec = demoted if parsed_json and type(demoted) is dict else plain(demoted)  # pylint: disable=unidiomatic-typecheck
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
    """The most useful one-line message of a failed/unreachable task result (of a loop: its first item that failed
    or was unreachable, named by its label - the loop's own message is only "All items completed")."""
    items = result.get("results") if isinstance(result, dict) else None
    if isinstance(items, list):
        bad = [item for item in items if _loop_item(item) and (item.get("unreachable") or item.get("failed"))]
        if bad:
            label = item_label(bad[0])
            return ("%s: " % label if label is not None else "") + failure_message(dict(bad[0], results=None))
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
