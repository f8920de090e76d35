# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Report writers: results.json, summary.md, junit.xml, ctrf.json (plugin_utils/ctrf.py) and one self-contained report.html.

Input is the report structure of ``fleet.build_report`` (run, summary, findings,
problems, history, records). Every file is written to a temporary name and moved into
place with ``os.replace``, so a reader never sees half a file. All text that came from
a tool or a host (reasons, raw output, host names, facts) is escaped: HTML through
Jinja2 with autoescape, XML through ElementTree after removing characters XML 1.0 forbids.

Controller-only (plugin_utils), no Ansible types.
"""

from __future__ import annotations

import datetime
import glob
import json
import math
import os
import re
import secrets
import shutil
import stat
import tempfile
import time
import xml.sax.saxutils

from ansible_collections.aifabric.acceptance.plugins.module_utils import results, statedir
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import ctrf, report_html
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import compare
from ansible_collections.aifabric.acceptance.plugins.plugin_utils.normalize import without_cyclic_gc

FORMATS = {"json": "results.json", "md": "summary.md", "junit": "junit.xml", "ctrf": "ctrf.json", "html": "report.html"}
STATUS_ORDER = tuple(sorted(results.STATUSES, key=results.SEVERITY.get, reverse=True))   # worst first
_XML_BAD = re.compile("[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


# ---------------------------------------------------------------- files


def write_atomic(path, text, mode=0o644):
    """Write text to path atomically (statedir.write_file) after its directory passed statedir.trusted_dir.

    Report files stay readable by others (``mode`` 0644, directories 0755, by design) but a directory another
    user owns or can write, or an untrusted link on the way, is refused (StateError says which rule); a file or
    link planted at ``path`` is replaced, never followed.
    """
    directory = statedir.trusted_dir(os.path.dirname(os.path.abspath(path)), private=False, what="report directory")
    return statedir.write_file(directory, os.path.basename(path), text, mode=mode)


def run_dir_name(run):
    """``<UTC start timestamp>-<short run id>``, e.g. 20261122T101500Z-1a2b3c4d."""
    started = run.get("started") or ""
    try:
        stamp = datetime.datetime.strptime(started, "%Y-%m-%dT%H:%M:%SZ").strftime("%Y%m%dT%H%M%SZ")
    except ValueError:
        stamp = datetime.datetime.now(datetime.timezone.utc).strftime("%Y%m%dT%H%M%SZ")
    return "%s-%s" % (stamp, str(run.get("run_id") or "norunid")[:8])


def point_latest(reports_root, run_dir):
    """``<reports_root>/latest`` symlink to the run directory, plus a LATEST file naming it."""
    name = os.path.basename(run_dir.rstrip(os.sep))
    reports_root = os.path.dirname(write_atomic(os.path.join(reports_root, "LATEST"), name + "\n"))
    link = os.path.join(reports_root, "latest")
    tmp = os.path.join(reports_root, ".latest.tmp-%s" % secrets.token_hex(8))     # unguessable: never pre-planted
    try:
        os.symlink(name, tmp)
        os.replace(tmp, link)
    except OSError:
        if os.path.lexists(tmp):
            os.unlink(tmp)      # no symlinks here (some filesystems): LATEST still points
    return link


class _Compare:
    """Whether the chunks written match the file at ``path`` byte for byte (read alongside, as much as each chunk:
    neither the old file nor the new text is ever held whole). A missing file, or a link, is different."""

    def __init__(self, path):
        try:
            fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
        except OSError:
            self.old, self.same = None, False
            return
        self.old, self.same = os.fdopen(fd, "rb"), True

    def feed(self, chunks):
        """The chunks, each encoded (UTF-8) and compared as it passes through."""
        for chunk in chunks:
            data = chunk.encode("utf-8") if isinstance(chunk, str) else chunk
            if self.same:
                self.same = self.old.read(len(data)) == data
            yield data

    def done(self):
        """True when the file held exactly what was fed; closes it."""
        if self.old is None:
            return False
        try:
            return self.same and not self.old.read(1)
        finally:
            self.old.close()


def _chunks(fmt, report, counted):
    """The text of one format as an iterable of chunks (a writer returns its text, or the chunks of it)."""
    out = WRITERS[fmt](report, counted)
    return (out,) if isinstance(out, str) else out


def render_format(fmt, report, counted=None):
    """The whole text of one format (``fmt``: a key of FORMATS), as its file holds it."""
    return "".join(_chunks(fmt, report, counted))


@without_cyclic_gc
def write_report(report, directory, formats=None, check_mode=False):
    """Write the chosen formats into directory (a file whose content is unchanged is left alone).

    Returns ({format: path}, [formats whose file changed]). In check mode nothing is written.
    """
    if not check_mode:
        staged = stage_report(report, directory, formats, fresh=False)
        staged.commit()
        return staged.files, staged.changed
    files, changed = {}, []
    counted = report_html.counted_ids(report["records"])
    for fmt in formats or list(FORMATS):
        files[fmt] = os.path.join(directory, FORMATS[fmt])
        compare_with = _Compare(files[fmt])
        for _data in compare_with.feed(_chunks(fmt, report, counted)):
            pass
        if not compare_with.done():
            changed.append(fmt)
    return files, changed


STALE_PARTIAL_S = 3600


def _remove_stale_partials(parent):
    """Temporary report directories of a writer that was killed (SIGKILL) more than an hour ago."""
    now = time.time()
    for path in glob.glob(os.path.join(glob.escape(parent), ".*.tmp-*")):
        try:
            info = os.lstat(path)
            if stat.S_ISDIR(info.st_mode) and info.st_uid == os.geteuid() and now - info.st_mtime > STALE_PARTIAL_S:
                shutil.rmtree(path, ignore_errors=True)
        except OSError:
            pass


class StagedReport:
    """Report files written (each fsynced) into a hidden temporary directory, not yet in place: :meth:`commit`
    puts them there (renames: no new space needed), :meth:`discard` removes them. ``files``: {format: the path it
    will have}; ``changed``: the formats whose file differs from the one in place (all of them in a new
    directory)."""

    def __init__(self, directory, tmp, fresh, files, changed):
        self.directory, self.tmp, self.fresh = directory, tmp, fresh
        self.files, self.changed = files, changed

    def commit(self):
        """A new directory: the temporary one renamed to it (atomic; fails rather than merge into an existing
        directory). An existing one: each changed file renamed over its namesake (each atomic)."""
        try:
            if self.fresh:
                os.rename(self.tmp, self.directory)
                self.tmp = None
            else:
                for fmt in self.changed:
                    os.replace(os.path.join(self.tmp, FORMATS[fmt]), self.files[fmt])
        finally:
            self.discard()

    def discard(self):
        """Remove the temporary directory (nothing once committed)."""
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp = None


@without_cyclic_gc
def stage_report(report, directory, formats=None, fresh=True):
    """Write the chosen formats into a hidden temporary directory next to ``directory`` (``fresh``: a NEW report
    directory, made whole by the commit) or inside it (an existing one, whose files the commit replaces); returns
    the :class:`StagedReport`. Each file is streamed to disk as its writer makes it (a fleet's results.json is
    never one string in memory)."""
    what = "report directory"
    if fresh:
        parent = statedir.trusted_dir(os.path.dirname(os.path.abspath(directory)), private=False, what=what)
        directory = os.path.join(parent, os.path.basename(directory))
    else:
        parent = directory = statedir.trusted_dir(directory, private=False, what=what)
    _remove_stale_partials(parent)
    tmp = tempfile.mkdtemp(prefix=".%s.tmp-" % os.path.basename(directory), dir=parent)
    try:
        umask = os.umask(0o022)
        os.umask(umask)
        os.chmod(tmp, 0o777 & ~umask)       # as a plain mkdir would make it (mkdtemp makes 0700)
        counted = report_html.counted_ids(report["records"])    # the records that count toward a host, for every writer
        files, changed = {}, []
        for fmt in formats or list(FORMATS):
            files[fmt] = os.path.join(directory, FORMATS[fmt])
            compare_with = None if fresh else _Compare(files[fmt])
            chunks = _chunks(fmt, report, counted)
            statedir.write_file(tmp, FORMATS[fmt], compare_with.feed(chunks) if compare_with else chunks, mode=0o644)
            if compare_with is None or not compare_with.done():
                changed.append(fmt)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return StagedReport(directory, tmp, fresh, files, changed)


# ---------------------------------------------------------------- helpers


label = report_html.label     # check[target][peer]: the name of a record in junit and tables (one definition)
plural = report_html.plural   # "1 host", "2 hosts": every count the reports print


def _key(record):
    return (record.get("host") or "", record.get("check") or "", record.get("target") or "", record.get("peer") or "")


def _delta_index(report):
    deltas = (report.get("history") or {}).get("deltas") or []
    return dict(((d.get("host") or "", d.get("check") or "", d.get("target") or "", d.get("peer") or ""), d)
                for d in deltas)


def _num(value):
    if type(value) is float:    # pylint: disable=unidiomatic-typecheck  # the common case first (twice a testcase)
        return value if value - value == 0.0 else None      # NaN and infinities: None
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


JSON_CHUNK_RECORDS = 2000      # records encoded per chunk of results.json (about 2 MB of text)


def _dumps(value, check_circular=True):
    """Compact JSON text. ``check_circular=False`` for values that are trees (records: parsed from JSON or copied by
    normalize.plain), which the encoder then need not track (a few per cent of the encoding)."""
    return json.dumps(value, ensure_ascii=False, allow_nan=False, separators=(",", ":"), default=str,
                      check_circular=check_circular)


def json_chunks(report, counted=None):  # pylint: disable=unused-argument  # every writer's signature
    """results.json as chunks of text: compact JSON (no indentation: the C encoder, and a third smaller at fleet
    scale), the records encoded a few thousand at a time. The chunks joined are ``json.dumps`` of the report."""
    if type(report) is not dict or any(type(key) is not str for key in report):  # pylint: disable=unidiomatic-typecheck
        yield _dumps(report) + "\n"
        return
    sep = "{"
    for key, value in report.items():
        if key == "records" and isinstance(value, list) and value:     # (a report's records: analysis_records.Records)
            yield "%s%s:[" % (sep, _dumps(key))
            for start in range(0, len(value), JSON_CHUNK_RECORDS):
                yield ("," if start else "") + _dumps(value[start:start + JSON_CHUNK_RECORDS], check_circular=False)[1:-1]
            yield "]"
        else:
            yield "%s%s:%s" % (sep, _dumps(key), _dumps(value))
        sep = ","
    yield "}\n" if sep == "," else "{}\n"


# ---------------------------------------------------------------- markdown


_md = compare.md_text


def _md_header(report):
    """Title, run line, interrupted note, verdict line, the status table and the analysis problems."""
    run, summary = report.get("run") or {}, report["summary"]
    out = ["# Fleet acceptance report", ""]
    out.append("Run `%s` · %s → %s · ansible-core %s · aifabric.acceptance %s" % (
        _md(run.get("run_id")), _md(run.get("started")), _md(run.get("ended")),
        _md(run.get("ansible_version")), _md(run.get("collection_version"))))
    out.append("")
    if run.get("interrupted"):
        out.append("> **Interrupted run** (%s): the records measured before it stopped; the checks after "
                   "that point did not run." % _md(report_html.interrupted_text(run)))
        out.append("")
    out.append("**%s** — %s (targeted %s, inventory %s), %s" % (
        summary["worst_status"].upper(), plural(summary["hosts_total"], "host"), run.get("hosts_targeted_count", "?"),
        run.get("inventory_host_count", "?"), plural(summary["records_total"], "record")))
    out.append("")
    stages, not_covered = report_html.stage_lines(report)
    out += ["- **%s**: %s%s" % (s["title"], "not run - " if s["state"] == "not run" else "", _md(s["text"])) for s in stages]
    if not_covered:
        out += ["", "> %s" % not_covered]
    required = report_html.required_lines(report.get("run") or {})
    if required:
        out += ["", "Required checks (a host where one did not run fails):", ""]
        out += ["- %s on %s" % (_md(checks), _md(hosts)) for checks, hosts in required]
    out.append("")
    out.append("| | " + " | ".join(STATUS_ORDER) + " |")
    out.append("|---|" + "---|" * len(STATUS_ORDER))
    out.append("| records | " + " | ".join(str(summary["counts"][s]) for s in STATUS_ORDER) + " |")
    out.append("| hosts (worst status) | " + " | ".join(str(summary["hosts_by_status"][s]) for s in STATUS_ORDER) + " |")
    out.append("")
    for problem in report.get("problems") or []:
        out.append("> analysis problem: %s" % _md(problem))
    return out


def _md_findings(report):
    findings = report.get("findings") or []
    out = ["## Findings", ""]
    if not findings:
        return out + ["None.", ""]
    out.append("| status | kind | check | target | hosts | evidence |")
    out.append("|---|---|---|---|---|---|")
    for f in report_html.finding_rows(findings):
        hosts = f["hosts"]
        out.append("| %s | %s | %s | %s | %s | %s |" % (
            f["status"], _md(f["kind"]), _md(f["check"]), _md(f["target"]),
            _md(", ".join(hosts[:20]) + (" (+%d)" % (len(hosts) - 20) if len(hosts) > 20 else "")),
            _md(f["text"])))
    out.append("")
    return out


def _md_judgement(summary):
    given = summary.get("judgement") or {}
    if not given.get("headline_total"):
        return []
    judges = ", ".join("%s %d" % (k, v) for k, v in sorted((given.get("by_judge") or {}).items()))
    out = ["## Judgement", "", "%d of %s judged (%s); **%d unjudged**." % (
        given["judged"], plural(given["headline_total"], "headline figure"), judges or "none", given["unjudged_total"]), ""]
    if given.get("unjudged"):
        out += ["| host | check | target | why not judged |", "|---|---|---|---|"]
        out += ["| %s | %s | %s | %s |" % (
            _md(u.get("host") or ""), _md(u.get("check") or ""), _md(str(u.get("target") or "")), _md(u.get("why") or ""))
            for u in given["unjudged"]]
        out.append("")
    return out


def _md_hosts(summary):
    out = ["## Hosts", "", "| host | worst | error | fail | warn | skip | pass | checks |", "|---|---|---|---|---|---|---|---|"]
    for h in summary["hosts"]:
        c = h["counts"]
        out.append("| %s | %s | %d | %d | %d | %d | %d | %s |" % (
            _md(h["host"]), h["status"], c["error"], c["fail"], c["warn"], c["skip"], c["pass"],
            _md(", ".join(h["checks"][:8]))))
    out.append("")
    return out


def _md_problems(report, counted, deltas):
    # the records that count toward a host's verdict (docs/results.md): a pairwise record of a matrix that
    # attribution judged counts toward no host; its verdict is in the .node/.link records and the findings
    counted = report_html.counted_ids(report["records"]) if counted is None else counted
    bad = _sorted_records([r for r in report["records"]      # chosen, then sorted (the same order: a stable sort)
                           if r.get("status") in ("error", "fail", "warn") and id(r) in counted])
    out = ["## Problems", ""]
    if not bad:
        return out + ["None.", ""]
    out += ["| host | check | status | reason | since last run |", "|---|---|---|---|---|"]
    for r in bad:
        out.append("| %s | %s | %s | %s | %s |" % (
            _md(r.get("host")), _md(label(r)), r["status"], _md(r.get("reason")),
            _md(describe_delta(deltas.get(_key(r))))))
    out.append("")
    return out


def _md_changes(report, deltas):
    changed = [d for d in deltas.values() if d.get("status_changed") and not d.get("new")]
    history = report.get("history") or {}
    out = ["## Changes since the previous run", ""]
    if not history.get("db"):
        return out + ["History is off.", ""]
    if not deltas:
        return out + ["No earlier run of these hosts in %s." % _md(history.get("db")), ""]
    new = sum(1 for d in deltas.values() if d.get("new"))
    out.append("%s, %s (history: %s)." % (plural(len(changed), "status change"), plural(new, "new check"),
                                          _md(history.get("db"))))
    out.append("")
    if changed:
        out += ["| host | check | before | now | metrics |", "|---|---|---|---|---|"]
        for d in sorted(changed, key=lambda d: (d["host"], d["check"])):
            out.append("| %s | %s | %s | %s | %s |" % (
                _md(d["host"]), _md(label(d)), d.get("previous_status"), d.get("status"),
                _md(describe_delta(dict(d, status_changed=False)).split("; ", 1)[-1] if d.get("metrics") else "")))
        out.append("")
    return out


def render_md(report, counted=None):
    """summary.md. ``counted``: report_html.counted_ids of the report's records (computed when not given)."""
    deltas = _delta_index(report)
    out = _md_header(report)
    out += _md_findings(report)
    out += _md_judgement(report["summary"])
    out += _md_hosts(report["summary"])
    out += _md_problems(report, counted, deltas)
    out += _md_changes(report, deltas)
    out += compare.md_lines(report)      # ## Comparison (plugin_utils/compare.py)
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------- junit


def _x(text):
    return _XML_BAD.sub("\ufffd", "" if text is None else str(text))


_XML_SAFE = re.compile(r"[\w .,:;@+\-/()\[\]%=#*~!?']*")     # needs no escaping in an attribute or text


def _a(text):
    """An XML attribute value (quoted), tool text made safe."""
    text = "" if text is None else str(text)
    if _XML_SAFE.fullmatch(text):
        return '"%s"' % text
    return xml.sax.saxutils.quoteattr(_x(text), {"\n": "&#10;", "\r": "&#13;", "\t": "&#9;"})


def _t(text):
    return xml.sax.saxutils.escape(_x(text))


def _properties(out, indent, items):
    if items:
        out.append("%s<properties>" % indent)
        out.extend('%s  <property name=%s value=%s />' % (indent, _a(name), _a(value)) for name, value in items)
        out.append("%s</properties>" % indent)


_judged = report_html.judged_pair     # one rule for junit.xml and ctrf.json


def _tally(recs, counted):
    """Statuses as the testcases show them (a judged pair's fail/error/warn is a passing case)."""
    out = dict((s, 0) for s in results.STATUSES)
    for rec in recs:
        status = rec.get("status")
        if _judged(rec, counted) and status in ("fail", "error", "warn"):
            status = "pass"
        out[status] = out.get(status, 0) + 1
    return out


def _record_properties(rec):
    """A testcase's properties: its metrics, then its expectation bounds (``expect.<metric>.<bound>``)."""
    if not rec.get("metrics") and not rec.get("expect"):
        return []       # (many records: the probe's)
    return [(k, fmt_value(v)) for k, v in sorted((rec.get("metrics") or {}).items())] + [
        ("expect.%s.%s" % (k, bound), fmt_value(rule[bound]))
        for k, rule in sorted((rec.get("expect") or {}).items()) if isinstance(rule, dict)
        for bound in ("min", "max", "equals") if bound in rule]


# the element a testcase of each status carries (pass: none); (reason, details) -> one line
_JUNIT_OUTCOME = {
    "fail": lambda reason, details: '      <failure message=%s type="fail">%s</failure>' % (_a(reason), _t(details)),
    "error": lambda reason, details: '      <error message=%s type="error">%s</error>' % (_a(reason), _t(details)),
    "skip": lambda reason, _details: '      <skipped message=%s />' % _a(reason),
    "warn": lambda reason, _details: '      <system-out>%s</system-out>' % _t("WARN: " + reason),
}


def _junit_outcome(rec, counted):
    """The testcase's outcome line, or None for a passing case."""
    status, reason = rec.get("status"), rec.get("reason") or ""
    if _judged(rec, counted) and status in ("fail", "error", "warn"):
        # a pair of a matrix that attribution judged counts toward no host (docs/results.md): its
        # verdict is the .node/.link testcases'; shown, not failed, so a suite fails only with its host
        return '      <system-out>%s</system-out>' % _t(
            "%s %s (judged by %s: see %s): %s" % (
                "PAIR" if rec.get("peer") else "PORT", status.upper(), *report_html.judged_by(rec), reason))
    outcome = _JUNIT_OUTCOME.get(status)
    return outcome(reason, rec.get("raw") or reason) if outcome else None


def _junit_testcase(out, classname, rec, counted):
    """One record's testcase; ``classname``: its host as an attribute value (:func:`_a`)."""
    out.append('    <testcase classname=%s name=%s time="%.3f">' % (
        classname, _a(label(rec)), _num(rec.get("duration_s")) or 0.0))
    _properties(out, "      ", _record_properties(rec))
    line = _junit_outcome(rec, counted)
    if line is not None:
        out.append(line)
    out.append("    </testcase>")


def _junit_hosts(report):
    """(the verdict of each host, {host: its records}, the hosts in suite order: summary order, then the rest sorted)."""
    verdicts = dict((h["host"], h["status"]) for h in report["summary"].get("hosts") or [])
    by_host = {}
    for rec in report["records"]:
        by_host.setdefault(rec.get("host") or "(no host)", []).append(rec)
    order = [h for h in verdicts if h in by_host] + sorted(h for h in by_host if h not in verdicts)
    return verdicts, by_host, order


def junit_chunks(report, counted=None):
    """One ``<testsuite>`` per host (its verdict and the run id as properties), one ``<testcase>`` per
    record of that host (``classname`` = host, metrics and expectation bounds as properties; fail ->
    failure, error -> error, skip -> skipped, warn -> a passing case whose system-out starts with
    ``WARN:``). A pairwise record that attribution judged counts toward no host (docs/results.md): it
    is a passing case whose system-out starts with ``PAIR FAIL`` (or ERROR/WARN), and the verdict is
    in its ``.node``/``.link`` cases, so a suite fails exactly when its host's verdict does. Written as
    text (ElementTree took seconds at fleet scale); tool text is escaped and characters XML 1.0 forbids
    are replaced. Chunks of text: the header, then one per host."""
    records = report["records"]
    run = report.get("run") or {}
    verdicts, by_host, order = _junit_hosts(report)
    counted = report_html.counted_ids(records) if counted is None else counted
    total = _tally(records, counted)
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           '<testsuites name="aifabric.acceptance" tests="%d" failures="%d" errors="%d" skipped="%d">' % (
               len(records), total["fail"], total["error"], total["skip"])]
    stamp, run_id = _a(run.get("started") or ""), _a(run.get("run_id") or "")
    yield "\n".join(out) + "\n"
    for host in order:
        out = []
        recs = by_host[host]
        counts = _tally(recs, counted)
        out.append('  <testsuite name=%s tests="%d" failures="%d" errors="%d" skipped="%d" timestamp=%s id=%s time="%.3f">' % (
            _a(host), len(recs), counts["fail"], counts["error"], counts["skip"], stamp, run_id,
            sum(_num(r.get("duration_s")) or 0.0 for r in recs)))
        _properties(out, "    ", [("verdict", verdicts.get(host, "-")), ("run_id", run.get("run_id") or "")])
        classname = _a(host)
        for rec in recs:
            _junit_testcase(out, classname, rec, counted)
        out.append("  </testsuite>")
        yield "\n".join(out) + "\n"
    yield "</testsuites>\n"


# ---------------------------------------------------------------- html


def render_html(report, counted=None):
    """report.html: see plugins/plugin_utils/report_html.py (static header and findings, data embedded once,
    rendered on demand by inline JavaScript). ``counted``: as for :func:`render_md`."""
    deltas = _delta_index(report)
    changes = [dict(d, label=label(d), text=describe_delta(d)) for d in deltas.values()
               if d.get("status_changed") and not d.get("new")]
    history = report.get("history") or {}
    if history.get("db"):
        history_text = "%s (%s compared with an earlier run)" % (history["db"], plural(len(deltas), "record"))
    else:
        history_text = history.get("error") or "off"
    return report_html.render(report, lambda rec: describe_delta(deltas.get(_key(rec))) if deltas else "",
                              sorted(changes, key=lambda d: (d["host"], d["label"])), history_text, counted)


# format -> its writer (report, counted) -> text, or an iterable of chunks of it; FORMATS names their files
WRITERS = {"json": json_chunks, "md": render_md, "junit": junit_chunks, "ctrf": ctrf.ctrf_chunks, "html": render_html}
