# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""perftest's adapter: ``OPTIONS``, ``records(text, ctx)``, ``from_output(path, params, host)`` (see tools/__init__.py).

One side (``ctx.side``: client or server) of one device (``ctx.target``, rail ``ctx.index``) of one test
(``params["test"]``); ``ctx.facts`` are the planner's facts (port rate, GID choice, governor); a client is judged
against ``params["peer_rate_gbit_s"][ctx.index]`` (the server's port rate of that rail). The record is built here
(``side_records``: the outcome of one side, its metrics, facts and series); its built-in expectations are
perftest_pairs.default_rules. ``OPTIONS``: what a run of one test between two hosts takes; those of its options that
the perftest and perftest_sweep modules share are perftest_pairs.TEST_SPEC's (with the modules' state, governor and
binary path plumbing). Pods import this module (k8s_plan.CODE_MODULES): Python 3.8+, no Ansible imports.
"""

from __future__ import annotations

import re

from ansible_collections.aifabric.acceptance.plugins.module_utils import expectations, imports, perftest_pairs, results
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import ParseError
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import perftest as parser
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import Context

# perftest_pairs.TEST_SPEC's options that describe the run (its others are the modules' plumbing)
SHARED_OPTIONS = ("ib_port", "gid_index", "size", "all_sizes", "iterations", "duration_s", "qps", "bidirectional",
                  "rdma_cm", "report_gbits", "ignore_cpu_freq", "atomic_operation", "extra_args", "timeout_s", "expect",
                  "line_rate_floor_pct", "tool_dir")
OPTIONS = dict(
    test=dict(type="str", choices=list(perftest_pairs.TESTS)),
    hcas=dict(type="list", elements="str"),
    port=dict(type="int", default=18515),
    use_cuda=dict(type="str"),
    connect_timeout_s=dict(type="int", default=60),
    peer_rate_gbit_s=dict(type="list", elements="float"),
    **dict((name, perftest_pairs.TEST_SPEC[name]) for name in SHARED_OPTIONS),
)
DEFAULT_TEST = "ib_write_bw"
DEFAULT_LINE_RATE_PCT = perftest_pairs.TEST_SPEC["line_rate_floor_pct"]["default"]   # for callers that do not pass it


def rules_params(params, index, test):
    """The params a client of rail ``index`` is judged with: the server's port rate of that rail."""
    rules = dict(params)
    rules.setdefault("line_rate_floor_pct", DEFAULT_LINE_RATE_PCT)
    rates = params.get("peer_rate_gbit_s") or []
    rules["peer_rate_gbit_s"] = rates[index] if index < len(rates) else (rates[0] if len(rates) == 1 else None)
    rules["test"] = test
    return rules


def records(text, ctx):
    """The record of one side of one device from perftest's text."""
    params = ctx.params
    test = params.get("test") or DEFAULT_TEST
    built = {
        "test": test, "side": ctx.side, "host": ctx.host,
        "peer": ctx.peer or params.get("peer_name") or params.get("peer"), "device": ctx.target,
        "params": rules_params(params, ctx.index, test), "argv": ctx.argv,
        "tool_version": ctx.tool_version, "started": ctx.started, "attempts": ctx.attempts,
        "duration_s": ctx.duration_s, "facts": ctx.facts or {}, "timed_out": ctx.timed_out,
        "timeout_s": params.get("timeout_s"),
    }
    return side_records(text, ctx.rc, built)


def from_output(path, params, host):
    """Import mode: the record of a saved output (test and side from the output when the options leave them)."""
    text = imports.read_output(path)
    test = params.get("test")
    side = params.get("side")
    try:
        parsed = parser.parse(text)
        test = parsed.get("tool") or test
        side = side or parsed.get("side")
    except ParseError:
        # no table to read (a server that prints none, a cut capture): the title still names the program
        test = parser.tool_named(text) or test
    hcas = params.get("hcas") or [None]
    return imports.bounded(records(text, Context(params=dict(params, test=test or DEFAULT_TEST, timeout_s=None),
                                                 side=side or "client", host=host, target=hcas[0],
                                                 facts={"imported_from": path})))


# --------------------------------------------------------------------------- the record of one side

# The servers that measure nothing, by the title their output prints (the pair's figures are in the client's record):
# read_lat.c and atomic_lat.c: "Only Client post read request" - the server exchanges keys, prints no table, exits 0;
# atomic_bw.c before perftest commit c57509e (2013-10-29, "added bw report to server in write/read/atomic tests",
# so perftest 2.0 and older) - the server prints its header and addresses only.
_SILENT_SERVERS = {
    "ib_read_lat": re.compile(r"^\s*RDMA_Read Latency Test\s*$", re.M),
    "ib_atomic_lat": re.compile(r"^\s*Atomic (FETCH_AND_ADD|CMP_AND_SWAP) Latency Test\s*$", re.M),
    "ib_atomic_bw": re.compile(r"^\s*Atomic (FETCH_AND_ADD|CMP_AND_SWAP) BW Test\s*$", re.M),
}


def side_records(text, rc, fields):
    """One record from one perftest output. Never raises on the tool's output.

    ``fields``: test, side (client/server), host, peer, device, params (module params), argv, tool_version,
    started, attempts, duration_s, facts (extra facts: port rate, GID choice, governor), timed_out (bool),
    timeout_s, extra_reason. ``records`` (the entry every caller uses) makes them from a Context.
    """
    side = _Side(text, rc, fields)
    if fields.get("timed_out"):
        return [side.error(side.timed_out())]
    try:
        parsed = parser.parse(text)
    except ParseError as exc:
        return [side.unreadable(exc)]
    if not parsed["rows"]:
        return [side.failed(parsed)]
    mismatch = not_what_was_asked(parsed, side.test, fields.get("device")) or other_operation(
        parsed, side.test, (fields.get("params") or {}).get("atomic_operation"))
    if mismatch:
        side.facts.update({"test": parsed.get("test"), "device_reported": parsed["header"].get("Device")})
        return [side.error(mismatch)]
    return [side.measured(parsed)]


class _Side(object):
    """The record of one side being built: its check, the fields every outcome carries, its facts."""

    def __init__(self, text, rc, fields):
        self.text = text
        self.rc = rc
        self.fields = fields
        self.test = fields["test"]
        self.side = fields["side"]
        self.check = "rdma.%s%s" % (self.test, ".server" if self.side == "server" else "")
        self.common = dict(host=fields.get("host"), peer=fields.get("peer"), target=fields.get("device"),
                           tool={"name": "perftest", "version": fields.get("tool_version")},
                           started=fields.get("started"), duration_s=fields.get("duration_s"),
                           params={"argv": fields.get("argv"), "attempts": fields.get("attempts", 1),
                                   "timeout_s": fields.get("timeout_s")})
        sweep = (fields.get("params") or {}).get("sweep_name")
        if sweep:       # which sweep of a run measured it (perftest_sweep: main, confirm); attribution reads it
            self.common["params"]["sweep_name"] = sweep
        self.facts = dict(fields.get("facts") or {})
        self.facts["side"] = self.side

    def error(self, reason, raw=True):
        return results.error(self.check, reason, raw=self.text if raw else None, facts=self.facts, **self.common)

    def skip(self, reason, raw=True):
        return results.skip(self.check, reason, raw=self.text if raw else None, facts=self.facts, **self.common)

    def timed_out(self):
        return "%s %s on %s timed out after %ss and was killed%s" % (
            self.test, self.side, self.fields.get("device"), self.fields.get("timeout_s"),
            " (no client connected?)" if self.side == "server" else " (is the server side running and reachable?)")

    def unreadable(self, exc):
        """The record of an output the parser cannot read."""
        title = _SILENT_SERVERS.get(self.test)
        if self.side == "server" and self.rc in (0, None) and title and title.search(self.text or ""):
            return self.skip("%s's server measures nothing (only the client posts %s; this perftest prints no report "
                             "on the server); the pair's figures are in the client's record" % (
                                 self.test, "reads" if self.test == "ib_read_lat" else "atomics"), raw=False)
        return self.error("could not read %s output (rc %s): %s" % (self.test, self.rc, exc))

    def failed(self, parsed):
        """The record of an output without a result row: no device here (skip), else the tool's failure."""
        message = "; ".join(parsed["errors"][:4])
        if parsed["error_kind"] == "no_device":
            return self.skip("no RDMA device for %s on %s: %s" % (self.test, self.fields.get("device") or "this host",
                                                                  message))
        self.facts["error_kind"] = parsed["error_kind"]
        return self.error("%s %s failed (%s, rc %s): %s" % (self.test, self.side, parsed["error_kind"], self.rc, message))

    def measured(self, parsed):
        """The record of an output with result rows: its metrics judged (client side), what doubts it, what broke."""
        kind = perftest_pairs.kind_of(self.test)
        metrics = metrics_of(parsed, kind)
        self.facts.update(header_facts(parsed))
        status, reason = warned(parsed, self.fields.get("extra_reason"))
        expect = {}
        if self.side == "client":
            rules = perftest_pairs.default_rules(self.test, metrics, self.facts, self.fields.get("params") or {})
            try:
                status, reason, expect = expectations.judge(metrics, rules, status, reason)
            except expectations.ExpectationError as exc:
                return self.error("bad expectation: %s" % exc, raw=False)
        problem = incomplete_run(parsed, "%s %s" % (self.test, self.side), self.rc)
        if problem:
            # The run did not end as a complete, valid run: an error whatever the rows say; the rows printed so far
            # are kept (metrics, series).
            if parsed.get("errors_after_rows"):
                self.facts["error_kind"] = parsed.get("error_kind")
            status, reason = "error", problem if not reason else "%s; %s" % (problem, reason)
        record = results.make(self.check, status, reason=reason, metrics=metrics, expect=expect, facts=self.facts,
                              series=_series(parsed, kind), raw=self.text if status != "pass" else None, **self.common)
        return expectations.physical_check(record, raw=self.text)


def header_facts(parsed):
    """The facts of a measured run from perftest's header and tables."""
    header = parsed["header"]
    facts = {
        "test": parsed.get("test"), "tool_unit": parsed.get("unit"),
        "bidirectional": parsed.get("bidirectional"),
        "link_type": header.get("Link type"), "transport": header.get("Transport type"),
        "mtu": header.get("Mtu"), "qps": header.get("Number of qps"),
        "gid_index_used": header.get("GID index"), "connection": header.get("Connection type"),
        "device_reported": header.get("Device"),
    }
    if parsed.get("atomic_operation"):
        facts["atomic_operation"] = parsed["atomic_operation"]     # the atomic tests only (the other records unchanged)
    if parsed["warnings"]:
        facts["tool_warnings"] = parsed["warnings"]
    if parsed["blocks"] > 1:
        facts["tables"] = parsed["blocks"]
    return facts


def warned(parsed, extra_reason):
    """(status, reason) before the expectations: ``warn`` with what casts doubt on the figures, else ``pass``.

    Every warning is kept in facts.tool_warnings; only those that cast doubt on the figures (parser.doubtful_warnings:
    not duration mode's "BW peak", not the CPU-frequency one) warn, with the caller's ``extra_reason``.
    """
    notes = []
    doubtful = parser.doubtful_warnings(parsed)
    if doubtful:
        notes.append("perftest warned: %s" % "; ".join(doubtful))
    if extra_reason:
        notes.append(extra_reason)
    if notes:
        return "warn", "; ".join(notes)
    return "pass", None


def _series(parsed, kind):
    out = []
    unit = parsed.get("unit")
    for row in parsed["rows"]:
        if kind == "bw":
            out.append({
                "msg_size_bytes": row["size_bytes"], "iterations": row["iterations"],
                "bw_peak_gbit_s": _round(parser.gbit_s(row["bw_peak"], unit)),
                "bw_avg_gbit_s": _round(parser.gbit_s(row["bw_avg"], unit)),
                "msg_rate_mpps": row["msg_rate_mpps"],
                "tool_unit": unit, "tool_bw_peak": row["bw_peak"], "tool_bw_avg": row["bw_avg"],
            })
        else:
            out.append({
                "msg_size_bytes": row["size_bytes"], "iterations": row["iterations"],
                "lat_min_us": row["t_min"], "lat_max_us": row["t_max"], "lat_typical_us": row["t_typical"],
                "lat_avg_us": row["t_avg"], "lat_stdev_us": row["t_stdev"], "lat_p99_us": row["p99"],
                "lat_p999_us": row["p999"],
            })
    return out


def _round(value):
    return None if value is None else round(value, 6)


def metrics_of(parsed, kind):
    """Headline metrics: bandwidth at the largest message size; latency at the smallest."""
    rows = parsed["rows"]
    if kind == "bw":
        row = max(rows, key=lambda r: r["size_bytes"])
        unit = parsed.get("unit")
        peak = parser.gbit_s(row["bw_peak"], unit) if parser.peak_measured(parsed) else None
        return {
            "bw_avg_gbit_s": _round(parser.gbit_s(row["bw_avg"], unit)),
            "bw_peak_gbit_s": _round(peak),
            "msg_rate_mpps": row["msg_rate_mpps"],
            "msg_size_bytes": row["size_bytes"],
            "iterations_count": row["iterations"],
        }
    row = min(rows, key=lambda r: r["size_bytes"])
    return {
        "lat_min_us": row["t_min"], "lat_max_us": row["t_max"], "lat_typical_us": row["t_typical"],
        "lat_avg_us": row["t_avg"], "lat_stdev_us": row["t_stdev"], "lat_p99_us": row["p99"],
        "lat_p999_us": row["p999"], "msg_size_bytes": row["size_bytes"], "iterations_count": row["iterations"],
    }


def not_what_was_asked(parsed, test, device):
    """Why the output is not a run of ``test`` on ``device`` (the title and the header's Device as printed), or
    None. What the output does not print (no title, no Device line) is not compared."""
    verb, kind = parsed.get("verb"), parsed.get("kind")
    device_printed = parsed["header"].get("Device")
    asked_verb, asked_kind = perftest_pairs.verb_of(test), perftest_pairs.kind_of(test)
    if (verb is None or verb == asked_verb) and (kind is None or kind == asked_kind) \
            and (not device or device_printed is None or device_printed == device):
        return None
    printed = parsed.get("test") or "%s %s" % (verb, kind)
    return ("asked for %s on %s, but the output is of %r on %s: another test's or another device's output, not a "
            "measurement of what was asked" % (test, device or "(any device)", printed,
                                               device_printed or "(device not printed)"))


def other_operation(parsed, test, asked):
    """Why the output of an atomic test is not of the operation asked (``-A``, the title names the one that ran), or
    None; nothing is compared where either is not known (no option given: perftest's default ran)."""
    printed = parsed.get("atomic_operation")
    if perftest_pairs.verb_of(test) != "atomic" or not asked or not printed or printed == asked:
        return None
    return ("asked for %s with atomic_operation %s, but the output's title names %s: another operation's output, "
            "not a measurement of what was asked" % (test, asked, printed))


def incomplete_run(parsed, what, rc):
    """Why a run that printed result rows is not a complete, valid run (an ``error``), or None: a failure after
    the rows, a table the output stops inside of (no closing line: a killed run, a cut capture), or a non-zero
    exit without a failure line (nccl-tests and HCCL Test records say ``error`` for that too)."""
    rows = len(parsed["rows"])
    broke = parsed.get("errors_after_rows") or []
    if broke:
        return "%s failed after %d result row(s) (rc %s): %s" % (what, rows, rc, "; ".join(broke[:3]))
    if not parsed.get("complete"):
        return "%s output ends inside its table after %d result row(s), without perftest's closing line (rc %s): " \
               "a killed run or a cut capture, not a complete measurement" % (what, rows, rc)
    if rc not in (0, None):
        return "%s exited with rc %s after printing its table, without a failure line: not a complete, valid run" % (
            what, rc)
    return None
