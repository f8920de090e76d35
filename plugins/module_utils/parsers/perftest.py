# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse the text output of perftest (ib_{write,read,send}_{bw,lat}) - pure, no I/O (private).

``parse(text)`` returns a plain dict; it keeps the tool's own units (``MB/sec``,
``MiB/sec``, ``Gb/sec``, ``usec``) and the tool's own figures. Converting to the
record's Gbit/s happens once, in ``gbit_s()`` below, with perftest's own
definition of its units (perftest_resources.c, print_report_bw):

    format_factor = (user_param->report_fmt == MBS) ? 0x100000 : 125000000;
    bw = bytes_per_second / format_factor

so ``MB/sec`` (perftest <= 4.x headers) and ``MiB/sec`` (newer headers, same
factor, only the label was corrected) are 2**20 bytes/s, and ``Gb/sec``
(``--report_gbits``) is 10**9 bit/s.

What is recognised (see the fixtures' README for every variation):
- the header block (``Key : value`` pairs, one or two per line, tabs or spaces,
  optional reST indentation), the test title (``RDMA_Write Bidirectional BW Test``);
- bandwidth tables (5 columns, optional CPU_Util column; perftest 1.x: 4 columns, no MsgRate)
  and latency tables (9 columns; two columns glued together by the tool's printf are split
  back; duration mode ``-D``: 4 columns ``t_avg[usec]`` and ``tps average``);
- interleaved noise (CPU frequency warnings, ROCm/CUDA buffer lines, Connected/
  Completed/Total run time), several blocks (client + server in one capture),
  server banners, rows repeated after the table;
- perftest's failure messages (no device, cannot connect, QP transitions,
  key exchange, resource creation): returned in ``errors`` with a category.

Anything else that looks like a table but cannot be read raises ParseError
quoting the offending line. Text with neither a table nor a known failure
raises ParseError too: the caller turns that into an ``error`` record.
"""

from __future__ import annotations

import re

from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import ParseError

# perftest's unit definitions (see module docstring).
BYTES_PER_UNIT = {"MB/sec": 1048576.0, "MiB/sec": 1048576.0}
GBIT_UNITS = ("Gb/sec",)

SEPARATOR_RE = re.compile(r"^\s*-{20,}\s*$")
TITLE_RE = re.compile(
    r"^\s*(?P<verb>RDMA_Write|RDMA_Read|Send|Atomic|RDMA_Write_Imm)\s*(?P<bidir>Bidirectional\s+)?"
    r"(?P<kind>BW|Latency)\s+Test\s*$")
# perftest 1.x (OFED 1.5, MLNX_OFED 1.5.3) prints no MsgRate column: its rows have 4 fields.
BW_HEADER_RE = re.compile(
    r"^\s*#bytes\s+#iterations\s+BW peak\[(?P<unit>[A-Za-z/]+)\]\s+BW average\[(?P<unit2>[A-Za-z/]+)\]"
    r"(?P<msgrate>\s+MsgRate\[Mpps\])?(?P<rest>.*)$")
LAT_HEADER_RE = re.compile(
    r"^\s*#bytes\s+#iterations\s+t_min\[usec\]\s+t_max\[usec\]\s+t_typical\[usec\]\s+t_avg\[usec\]"
    r"\s+t_stdev\[usec\]\s+99% percentile\[usec\]\s+99\.9% percentile\[usec\]\s*$")
# Duration mode (-D) of the latency tests: no per-iteration samples are kept, so perftest prints only the
# average and the transactions per second (perftest_parameters.c print_report_lat_duration).
LAT_DURATION_HEADER_RE = re.compile(r"^\s*#bytes\s+#iterations\s+t_avg\[usec\]\s+tps average\s*$")
ANY_TABLE_HEADER_RE = re.compile(r"^\s*#bytes\b")
ROW_START_RE = re.compile(r"^\s*\d+\s+\d+\s+[-+0-9.]")
# A header pair is ``Key : value``: a key of words of [A-Za-z0-9_.*-] joined by single spaces (its first character a
# letter), then a colon, then the value (one run of non-blank characters). header_pairs() reads them in one pass.
KEY_TAIL_RE = re.compile(r"[A-Za-z0-9_.*\-]+(?: [A-Za-z0-9_.*\-]+)*")   # matched on the reversed text before a colon
LETTER_RE = re.compile(r"[A-Za-z]")
VALUE_RE = re.compile(r"\s*(\S+)")
ADDRESS_RE = re.compile(r"^\s*(?P<side>local|remote) address:\s*(?P<rest>.*)$")
GID_LINE_RE = re.compile(r"^\s*GID:\s*(?P<gid>[0-9:]+)\s*$")
BANNER_RE = re.compile(r"^\s*\*\s*Waiting for client to connect\.\.\.\s*\*\s*$")
STARS_RE = re.compile(r"^\s*\*{10,}\s*$")
NUMBER_RE = re.compile(r"^[-+]?\d+(?:\.\d+)?$")
GLUED_RE = re.compile(r"^(\d+\.\d{2})(\d+\.\d{2})$")
RUN_TIME_RE = re.compile(r"^\s*Total run time:\s*(?P<s>\d+(?:\.\d+)?)s\s*$")

# Lines perftest prints that are neither header, table nor failure.
NOISE_RES = (
    re.compile(r"^\s*Conflicting CPU frequency values detected"),
    re.compile(r"^\s*Using sampled CPU speed"),
    re.compile(r"^\s*Disabling dynamic polling"),
    re.compile(r"^\s*(Connected|Completed):\s"),
    re.compile(r"^\s*Using (ROCm|CUDA|Neuron|Gaudi|MLU|OpenCL)\b"),
    re.compile(r"^\s*(allocated|deallocating|destroying|initializing|cuMemAlloc|Picking device)\b", re.I),
    re.compile(r"^\s*WARNING:", re.I),
    re.compile(r"^\s*Requested mtu"),
    re.compile(r"^\s*Perftest version", re.I),
)

# (category, regex) - the first match names the failure. Categories:
#   no_device  - no RDMA device / the named one is absent (a `skip`, not a failure)
#   port       - the port is not active ('Port number 1 state is Down'): the root cause of what follows
#   completion - a work completion failed during the run ('Completion with error at client',
#                'Failed status 12: wr_id 0 syndrom 0x81', 'Failed to complete run_iter_bw'), often after rows
#   connect    - could not reach the peer's TCP port (retryable while the server starts)
#   exchange   - the out-of-band key exchange broke (peer died or mismatched options)
#   qp         - QP state transition failed (fabric, GID, MTU or routing problem)
#   resources  - could not create verbs resources (driver, memlock, firmware)
#   other      - any other perftest failure line
ERROR_RULES = (
    ("port", re.compile(r"Port number \d+ state is \w+")),
    ("completion", re.compile(r"Completion with error at (client|server)|Failed status \d+\s*:|"
                              r"Failed to complete run_iter|Error occurred while running|"
                              r"^\s*scnt=\d+, ccnt=\d+|^\s*rcnt=\d+\s*$")),
    ("no_device", re.compile(r"Did not detect devices|Unable to find the Infiniband/RoCE device|"
                             r"If device exists, check if driver is up|No IB devices found|"
                             r"IB device \S+ not found|Failed to get IB devices list")),
    ("connect", re.compile(r"Couldn't connect to|Unable to open file descriptor for socket connection|"
                           r"Unable to init the socket connection|Couldn't listen to port|"
                           r"Unable to create the socket connection")),
    ("exchange", re.compile(r"ethernet_read_keys|ethernet_write_keys|Couldn't read remote address|"
                            r"Unable to read to socket|Failed to exchange data|Couldn't exchange|"
                            r"Failed to exchange|Unable to write to socket")),
    ("qp", re.compile(r"Failed to modify QP|Unable to Connect the HCA's through the link|"
                      r"Couldn't modify QP")),
    ("resources", re.compile(r"Couldn't get device attributes|Unable to create QP|Failed to create QP|"
                             r"Couldn't create IB resources|Couldn't allocate|Couldn't get context|"
                             r"Couldn't create|Couldn't register|Failed to allocate|Can't produce a report")),
    ("other", re.compile(r"^\s*(Couldn't|Unable to|Failed to|Error:?\s)")),
)
# When several categories appear, the most telling one wins (a connect failure
# printed after a QP failure is a consequence, not the cause).
ERROR_PRIORITY = ("no_device", "port", "resources", "qp", "completion", "exchange", "connect", "other")

# Tool warnings that say nothing about the hardware: they become facts, never a `warn`.
# Every other warning perftest prints casts doubt on the figures and stays `warn`, e.g.
#   perftest_parameters.c:4587-4588 " WARNING: CPU is not PCIe relaxed ordering compliant." /
#     " WARNING: You should disable PCIe RO with `--disable_pcie_relaxed` ..." (the host's root complex
#     is one with a known relaxed-ordering erratum: the figures measured with RO on are suspect),
#   perftest_parameters.c:1473-1474 "Warning: Large message requested and CQ moderation enabled" /
#     "Warning: It can lead to inaccurate results" (perftest itself says the figure may be wrong).
# (linux-rdma/perftest at 00b55b6660d0170dabe2c1b49193e8fbe265086e.)
INFORMATIONAL_WARNINGS = (
    # perftest_parameters.c:1779 (-D duration mode), :1937 (server of a unidirectional send test),
    # :2340 (more than 20000 iterations): perftest only skips the per-iteration timestamps that
    # BW peak needs; BW average is measured as always (print_report_bw, perftest_parameters.c:4705).
    re.compile(r"^\s*WARNING: BW peak won't be measured in this run"),
    # get_clock.c:198: /proc/cpuinfo lists core clocks more than 2 % apart (frequency scaling at
    # work, normal on an idle host); get_cpu_mhz() then uses the sampled cycle rate instead, so
    # the reported bandwidth is still computed with the measured clock.
    re.compile(r"^\s*Conflicting CPU frequency values detected"),
)

VERBS = {"RDMA_Write": "write", "RDMA_Read": "read", "Send": "send", "Atomic": "atomic",
         "RDMA_Write_Imm": "write_imm"}


def gbit_s(value, unit):
    """Convert one perftest bandwidth figure to Gbit/s (10**9 bit/s), exactly as perftest defines its units."""
    if value is None:
        return None
    if unit in GBIT_UNITS:
        return float(value)
    if unit in BYTES_PER_UNIT:
        return float(value) * BYTES_PER_UNIT[unit] * 8.0 / 1e9
    raise ParseError("unknown perftest bandwidth unit %r" % (unit,))


def _new_block(title=None):
    return {"title": title, "header": {}, "kind": None, "unit": None, "extra_columns": [],
            "rows": [], "row_keys": set(), "side": None, "local": [], "remote": [], "closed": False}


def _row_key(row):
    return tuple(row.items())


class _Kept(list):
    """A list that answers ``in`` from a set beside it (``in`` on a plain list made the parse quadratic)."""

    def __init__(self):
        super(_Kept, self).__init__()
        self.seen = set()

    def append(self, item):
        super(_Kept, self).append(item)
        self.seen.add(item)

    def __contains__(self, item):
        return item in self.seen


def _split_row(line, expected):
    tokens = line.split()
    if len(tokens) < expected:
        # perftest prints latency columns with "%-7.2f": a value wider than the
        # column runs into the next one ("2465.901216.65" is 2465.90 and 1216.65).
        fixed = []
        for tok in tokens:
            glued = GLUED_RE.match(tok)
            fixed.extend([glued.group(1), glued.group(2)] if glued else [tok])
        tokens = fixed
    if len(tokens) != expected:
        raise ParseError("perftest table row has %d fields, expected %d: %r" % (len(tokens), expected, line))
    for tok in tokens:
        if not NUMBER_RE.match(tok):
            raise ParseError("perftest table row has a non-numeric field %r: %r" % (tok, line))
    return tokens


def _bw_row(line, extra, msgrate=True):
    """One bandwidth row; ``msg_rate_mpps`` is None where the table has no MsgRate column (perftest 1.x)."""
    first = 5 if msgrate else 4
    tokens = _split_row(line, first + len(extra))
    row = {
        "size_bytes": int(tokens[0]),
        "iterations": int(tokens[1]),
        "bw_peak": float(tokens[2]),
        "bw_avg": float(tokens[3]),
        "msg_rate_mpps": float(tokens[4]) if msgrate else None,
    }
    for name, tok in zip(extra, tokens[first:]):
        row[name] = float(tok)
    return row


LAT_FIELDS = ("t_min", "t_max", "t_typical", "t_avg", "t_stdev", "p99", "p999")


def _lat_row(line, duration=False):
    """One latency row. Every row has the keys of LAT_FIELDS plus ``tps_avg``; what the table does not print is
    None (duration mode prints only t_avg and tps; the iteration table has no tps)."""
    row = {"size_bytes": None, "iterations": None, "tps_avg": None}
    row.update((name, None) for name in LAT_FIELDS)
    if duration:
        tokens = _split_row(line, 4)
        row.update(t_avg=float(tokens[2]), tps_avg=float(tokens[3]))
    else:
        tokens = _split_row(line, 9)
        for name, tok in zip(LAT_FIELDS, tokens[2:]):
            row[name] = float(tok)
    row["size_bytes"], row["iterations"] = int(tokens[0]), int(tokens[1])
    return row


def _extra_columns(rest, line):
    """Optional trailing columns of a BW table (perftest --cpu_util adds CPU_Util[%])."""
    names = []
    for col in rest.split():
        if col.startswith("CPU_Util"):
            names.append("cpu_util_pct")
        else:
            raise ParseError("unsupported perftest bandwidth table layout (column %r): %r" % (col, line))
    return names


def header_pairs(line):
    """The ``(key, value)`` pairs of one header line, left to right (``Dual-port : OFF\t\tDevice : mlx5_0``).

    One pass over the line: each colon looks back for its key (the text since the previous pair, read backwards
    by an anchored match) and forward for its value, and the next pair starts after that value, so no part of
    the line is read twice (a regex search for the pairs re-scanned the line from every position: quadratic).
    """
    pairs, pos = [], 0
    colon = line.find(":")
    while colon != -1:
        tail = KEY_TAIL_RE.match(line[pos:colon].rstrip()[::-1])
        key = tail.group(0)[::-1] if tail else ""
        letter = LETTER_RE.search(key)
        value = VALUE_RE.match(line, colon + 1) if letter else None
        if value:
            pairs.append((key[letter.start():], value.group(1)))
            pos = value.end()
        else:
            pos = colon + 1
        colon = line.find(":", pos)
    return pairs


def _classify(line):
    for category, rule in ERROR_RULES:
        if rule.search(line):
            return category
    return None


def parse(text):
    """Parse one perftest output (stdout and stderr together) into a dict.

    Keys: ``test`` (title), ``verb`` (write/read/send/...), ``kind`` (bw/lat or None),
    ``bidirectional``, ``tool`` (ib_<verb>_<kind>, None when unknown), ``side``
    (server/client/None), ``header`` (mapping of the header block), ``unit``
    (bandwidth unit as printed), ``rows`` (the table of the main block, tool units),
    ``blocks`` (number of tables seen), ``complete`` (the main table was closed, see below), ``errors`` (perftest
    failure lines),
    ``error_kind``, ``errors_after_rows`` (failure lines printed after the first result row: the run broke
    after measuring; the rows are kept), ``warnings`` (every tool warning line; doubtful_warnings() keeps those that cast doubt), ``notes``,
    ``local``/``remote`` (address lines of the main block), ``run_time_s``.
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if text is None:
        raise ParseError("no perftest output to parse")
    blocks = []
    current = None
    in_header = False
    pending_server = False
    errors = []
    errors_after = []
    warnings = _Kept()
    notes = _Kept()
    rows_seen = False
    run_time = None
    last_gid_owner = None

    for raw_line in text.splitlines():
        line = raw_line.rstrip()
        if not line.strip():
            continue
        if line.lstrip().startswith("# command:") or line.lstrip().startswith("# exit:"):
            # provenance lines of captured failure files, never printed by perftest itself
            continue
        if BANNER_RE.match(line):
            pending_server = True
            if current is not None:
                current["closed"] = True
            continue
        if STARS_RE.match(line):
            continue
        title = TITLE_RE.match(line)
        if title:
            if current is not None and current["title"] is None and not current["rows"] and not current["header"]:
                current["title"] = line.strip()
            else:
                current = _new_block(line.strip())
                blocks.append(current)
            current["verb"] = VERBS[title.group("verb")]
            current["kind"] = "bw" if title.group("kind") == "BW" else "lat"
            current["bidirectional"] = bool(title.group("bidir"))
            if pending_server:
                current["side"] = "server"
                pending_server = False
            in_header = True
            continue
        if SEPARATOR_RE.match(line):
            in_header = False
            if current is not None and current["rows"]:
                current["closed"] = True
            continue
        bw_head = BW_HEADER_RE.match(line)
        lat_head = (LAT_HEADER_RE.match(line) or LAT_DURATION_HEADER_RE.match(line)) if not bw_head else None
        if bw_head or lat_head:
            in_header = False
            if current is None or current["rows"] or current["closed"]:
                previous = current
                current = _new_block(None)
                if previous is not None and not previous["rows"]:
                    blocks.pop()   # previous: the current block is always the last one
                    current.update(dict((k, previous[k]) for k in ("title", "header", "local", "remote", "side")))
                    for key in ("verb", "kind", "bidirectional"):
                        if key in previous:
                            current[key] = previous[key]
                blocks.append(current)
                if pending_server:
                    current["side"] = "server"
                    pending_server = False
            if bw_head:
                if bw_head.group("unit") != bw_head.group("unit2"):
                    raise ParseError("perftest bandwidth header mixes units: %r" % line)
                unit = bw_head.group("unit")
                if unit not in BYTES_PER_UNIT and unit not in GBIT_UNITS:
                    raise ParseError("unknown perftest bandwidth unit %r in %r" % (unit, line))
                current["table"] = "bw"
                current["unit"] = unit
                current["msgrate"] = bool(bw_head.group("msgrate"))
                current["extra_columns"] = _extra_columns(bw_head.group("rest"), line)
            else:
                current["table"] = "lat"
                current["duration"] = lat_head.re is LAT_DURATION_HEADER_RE
            continue
        if ANY_TABLE_HEADER_RE.match(line):
            raise ParseError("unsupported perftest table layout: %r" % line)
        if ROW_START_RE.match(line):
            target = current
            if target is None or "table" not in target:
                raise ParseError("perftest table row without a table header: %r" % line)
            if target["table"] == "bw":
                row = _bw_row(line, target["extra_columns"], target.get("msgrate", True))
            else:
                row = _lat_row(line, target.get("duration", False))
            if target["closed"]:
                if _row_key(row) in target["row_keys"]:
                    notes.append("row repeated after the table (interleaved capture), ignored: %s" % line.strip())
                    continue
                orphan = _new_block(target["title"])
                for key in ("verb", "kind", "bidirectional", "table", "unit", "extra_columns", "header", "msgrate",
                            "duration"):
                    if key in target:
                        orphan[key] = target[key]
                orphan["side"] = "server" if pending_server else None
                pending_server = False
                blocks.append(orphan)
                current = target = orphan
            if _row_key(row) in target["row_keys"]:
                notes.append("duplicate row ignored (interleaved capture): %s" % line.strip())
                continue
            target["rows"].append(row)
            target["row_keys"].add(_row_key(row))
            rows_seen = True
            continue
        category = _classify(line)
        if category:
            errors.append((category, line.strip()))
            if rows_seen:
                errors_after.append(line.strip())
            continue
        address = ADDRESS_RE.match(line)
        if address:
            if current is None:
                current = _new_block(None)
                blocks.append(current)
            entry = {"raw": address.group("rest").strip()}
            for key, value in re.findall(r"\b(LID|QPN|PSN|OUT|RKey|VAddr)\s+(\S+)", address.group("rest")):
                entry[key.lower()] = value
            current[address.group("side")].append(entry)
            last_gid_owner = entry
            continue
        gid = GID_LINE_RE.match(line)
        if gid:
            if last_gid_owner is not None:
                last_gid_owner["gid"] = gid.group("gid")
            continue
        run_time_match = RUN_TIME_RE.match(line)
        if run_time_match:
            run_time = float(run_time_match.group("s"))
            continue
        if any(rule.match(line) for rule in NOISE_RES):
            stripped = line.strip()
            if stripped.startswith("Conflicting CPU frequency") or stripped.upper().startswith("WARNING:"):
                if stripped not in warnings:
                    warnings.append(stripped)
            elif stripped not in notes:
                notes.append(stripped)
            continue
        if in_header and current is not None:
            pairs = header_pairs(line)
            if pairs:
                for key, value in pairs:
                    current["header"].setdefault(key.strip(), value)
                continue
        # Unknown line outside any table: keep it as a note, do not fail on it
        # (tools and wrappers print banners we cannot enumerate).
        notes.append(line.strip())

    tables = [b for b in blocks if b.get("table") and b["rows"]]
    # the most telling category first (the root cause, not its follow-on errors), in order within a category
    errors_out = [item[1] for item in sorted(errors, key=lambda item: ERROR_PRIORITY.index(item[0]))]
    error_kind = None
    if errors:
        present = set(item[0] for item in errors)
        error_kind = [c for c in ERROR_PRIORITY if c in present][0]
    if not tables and not errors:
        headers = [b for b in blocks if b.get("table")]
        if headers:
            raise ParseError("perftest printed a table header but no result rows (truncated output?)")
        snippet = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
        raise ParseError("no perftest result table and no known perftest error in the output "
                         "(first line: %r)" % snippet[:200])
    main = max(tables, key=lambda b: len(b["rows"])) if tables else (blocks[0] if blocks else _new_block())
    if main.get("table") and main.get("kind") and main["table"] != main["kind"]:
        raise ParseError("perftest %s test printed a %s table" % (main["kind"], main["table"]))
    kind = main.get("kind") or main.get("table")
    verb = main.get("verb")
    tool = "ib_%s_%s" % (verb, kind) if verb in ("write", "read", "send", "atomic") and kind else None
    return {
        "test": main.get("title"),
        "verb": verb,
        "kind": kind,
        "bidirectional": bool(main.get("bidirectional")),
        "tool": tool,
        "side": main.get("side"),
        "header": dict(main.get("header") or {}),
        "unit": main.get("unit"),
        "rows": list(main.get("rows") or []),
        # the table was closed: perftest's separator line after its rows (or the next output's server banner);
        # False when the output stops inside the table (a killed run, a cut capture)
        "complete": bool(main.get("rows")) and bool(main.get("closed")),
        "blocks": len(tables),
        "errors": errors_out,
        "error_kind": error_kind,
        "errors_after_rows": errors_after,
        "warnings": list(warnings),
        "notes": list(notes),
        "local": list(main.get("local") or []),
        "remote": list(main.get("remote") or []),
        "run_time_s": run_time,
        # the table's layout: perftest 1.x bandwidth tables have no MsgRate column; latency tables of
        # duration mode (-D) print only t_avg and tps (the other latency keys of its rows are None)
        "msgrate_column": main.get("msgrate", True) if main.get("table") == "bw" else None,
        "lat_duration_mode": bool(main.get("duration")) if main.get("table") == "lat" else None,
    }


def doubtful_warnings(parsed):
    """The tool warnings that cast doubt on the figures (all but INFORMATIONAL_WARNINGS)."""
    return [w for w in parsed.get("warnings", []) if not any(rule.match(w) for rule in INFORMATIONAL_WARNINGS)]


def peak_measured(parsed):
    """False when perftest did not measure BW peak: it said so (duration mode, bidirectional server), or every
    row's peak is 0.00 while the average is not (duration mode prints 0.00 where no peak was measured; a real
    peak is never below the average)."""
    if any("BW peak won't be measured" in w for w in parsed.get("warnings", [])):
        return False
    rows = [r for r in parsed.get("rows") or [] if "bw_peak" in r]
    return not (rows and all(r["bw_peak"] == 0 for r in rows) and any(r["bw_avg"] > 0 for r in rows))
