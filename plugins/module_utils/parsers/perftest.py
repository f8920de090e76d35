# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse the text output of perftest (ib_{write,read,send,atomic}_{bw,lat}) - pure, no I/O (private).

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
  optional reST indentation), the test title (``RDMA_Write Bidirectional BW Test``; the atomic tests name
  their operation: ``Atomic FETCH_AND_ADD BW Test``, ``Atomic CMP_AND_SWAP Latency Test``; their tables are
  the bandwidth and latency tables of the other verbs, at perftest's fixed 8-byte size);
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
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers._common import is_uint

# perftest's unit definitions (see module docstring).
BYTES_PER_UNIT = {"MB/sec": 1048576.0, "MiB/sec": 1048576.0}
GBIT_UNITS = ("Gb/sec",)

SEPARATOR_RE = re.compile(r"^\s*-{20,}\s*$")
# The atomic tests name their operation after the verb (perftest_parameters.c ctx_print_test_info prints
# atomicTypesStr[user_param->atomicType] after "Atomic"): "Atomic FETCH_AND_ADD BW Test", "Atomic CMP_AND_SWAP
# Latency Test".
ATOMIC_OPERATIONS = ("FETCH_AND_ADD", "CMP_AND_SWAP")
TITLE_RE = re.compile(
    r"^\s*(?P<verb>RDMA_Write|RDMA_Read|Send|Atomic|RDMA_Write_Imm)\s*(?:(?P<atomic>FETCH_AND_ADD|CMP_AND_SWAP)\s+)?"
    r"(?P<bidir>Bidirectional\s+)?(?P<kind>BW|Latency)\s+Test\s*$")
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
# a row: size, iterations, then a figure - or what C's printf makes of a NaN or an infinity ("nan", "inf", "-nan"):
# such a row is read, and refused as a non-numeric field (issue 34), never skipped as if it were not a row
ROW_START_RE = re.compile(r"^\s*\d+\s+\d+\s+(?:[-+0-9.]|(?i:nan|inf)\b)")
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

# (category, phrases) - the first category with a phrase in the line names the failure. Categories:
#   no_device  - no RDMA device / the named one is absent (a `skip`, not a failure)
#   port       - the port is not active ('Port number 1 state is Down'): the root cause of what follows
#   completion - a work completion failed during the run ('Completion with error at client',
#                'Failed status 12: wr_id 0 syndrom 0x81', 'Failed to complete run_iter_bw'), often after rows
#   connect    - could not reach the peer's TCP port (retryable while the server starts)
#   exchange   - the out-of-band key exchange broke (peer died or mismatched options)
#   qp         - QP state transition failed (fabric, GID, MTU or routing problem)
#   resources  - could not create verbs resources (driver, memlock, firmware)
#   other      - any other perftest failure line
ERROR_PHRASES = (
    ("port", (r"Port number \d+ state is \w+",)),
    ("completion", (
        r"Completion with error at (client|server)", r"Failed status \d+\s*:", r"Failed to complete run_iter",
        r"Error occurred while running", r"^\s*scnt=\d+, ccnt=\d+", r"^\s*rcnt=\d+\s*$")),
    ("no_device", (
        r"Did not detect devices", r"Unable to find the Infiniband/RoCE device", r"If device exists, check if driver is up",
        r"No IB devices found", r"IB device \S+ not found", r"Failed to get IB devices list")),
    ("connect", (
        r"Couldn't connect to", r"Unable to open file descriptor for socket connection",
        r"Unable to init the socket connection", r"Couldn't listen to port", r"Unable to create the socket connection")),
    ("exchange", (
        r"ethernet_read_keys", r"ethernet_write_keys", r"Couldn't read remote address", r"Unable to read to socket",
        r"Failed to exchange data", r"Couldn't exchange", r"Failed to exchange", r"Unable to write to socket")),
    ("qp", (r"Failed to modify QP", r"Unable to Connect the HCA's through the link", r"Couldn't modify QP")),
    ("resources", (
        r"Couldn't get device attributes", r"Unable to create QP", r"Failed to create QP", r"Couldn't create IB resources",
        r"Couldn't allocate", r"Couldn't get context", r"Couldn't create", r"Couldn't register", r"Failed to allocate",
        r"Can't produce a report")),
    ("other", (r"^\s*(Couldn't|Unable to|Failed to|Error:?\s)",)),
)
# (category, regex): each category's phrases as one regex, searched in the line (bounded: no nested repetition).
ERROR_RULES = tuple((category, re.compile("|".join(phrases))) for category, phrases in ERROR_PHRASES)
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
    """The failure category of one line (the first of ERROR_RULES found in it), or None."""
    for category, rule in ERROR_RULES:
        if rule.search(line):
            return category
    return None


# --- the line classifier: each line gets one kind, from its own text alone ---------------------------------------
#
# Kinds (the value that comes with each):
SKIP = "skip"             # blank, the stars around a banner, provenance of a capture file (# command:, # exit:)
BANNER = "banner"         # "* Waiting for client to connect... *": the next block is a server's
TITLE = "title"           # "RDMA_Write BW Test": (verb, kind, bidirectional)
SEPARATOR = "separator"   # a row of dashes: ends the header block, closes a table that has rows
HEADING = "heading"       # a table's column heading: the table's layout (see _heading_layout)
ROW = "row"               # a result row (read against the layout of the table it belongs to)
ERROR = "error"           # a perftest failure line: its category
ADDRESS = "address"       # "local address: LID ... QPN ...": (side, entry)
GID = "gid"               # "GID: 00:00:...": the GID of the address line before it
RUN_TIME = "run_time"     # "Total run time: 5.00s": seconds
WARNING = "warning"       # a tool warning (noise that casts doubt or is a fact, see doubtful_warnings)
NOTE = "note"             # other known noise
TEXT = "text"             # anything else: a header pair line inside a header block, else a note
PROVENANCE_PREFIXES = ("# command:", "# exit:")
ADDRESS_FIELD_RE = re.compile(r"\b(LID|QPN|PSN|OUT|RKey|VAddr)\s+(\S+)")

# Every regex here is anchored (match) or searched for a phrase without nested repetition, and the structural ones
# run only on lines whose first visible character can start them: one line costs time in proportion to its length.


def _heading_layout(line):
    """The layout of a column heading line, None for a line that is none; ParseError for a heading not readable."""
    bw_head = BW_HEADER_RE.match(line)
    if bw_head:
        if bw_head.group("unit") != bw_head.group("unit2"):
            raise ParseError("perftest bandwidth header mixes units: %r" % line)
        unit = bw_head.group("unit")
        if unit not in BYTES_PER_UNIT and unit not in GBIT_UNITS:
            raise ParseError("unknown perftest bandwidth unit %r in %r" % (unit, line))
        return {"table": "bw", "unit": unit, "msgrate": bool(bw_head.group("msgrate")),
                "extra_columns": _extra_columns(bw_head.group("rest"), line)}
    if LAT_HEADER_RE.match(line):
        return {"table": "lat", "duration": False}
    if LAT_DURATION_HEADER_RE.match(line):
        return {"table": "lat", "duration": True}
    if ANY_TABLE_HEADER_RE.match(line):
        raise ParseError("unsupported perftest table layout: %r" % line)
    return None


def _structural_kind(line, first):
    """Banner, title, separator, heading or row: each is told by the line's first visible character first."""
    if first == "*":
        if BANNER_RE.match(line):
            return BANNER, None
        return (SKIP, None) if STARS_RE.match(line) else None
    if first == "-":
        return (SEPARATOR, None) if SEPARATOR_RE.match(line) else None
    if first == "#":
        layout = _heading_layout(line)
        return (HEADING, layout) if layout else None
    if is_uint(first):
        return (ROW, None) if ROW_START_RE.match(line) else None
    title = TITLE_RE.match(line) if first in "RSA" else None
    if title:
        return TITLE, (VERBS[title.group("verb")], "bw" if title.group("kind") == "BW" else "lat",
                       bool(title.group("bidir")), title.group("atomic"))
    return None


def _address_entry(rest):
    entry = {"raw": rest.strip()}
    for key, value in ADDRESS_FIELD_RE.findall(rest):
        entry[key.lower()] = value
    return entry


def _prose_kind(line, body):
    """Failure, address, GID, run time, tool noise or other text."""
    category = _classify(line)
    if category:
        return ERROR, category
    address = ADDRESS_RE.match(line)
    if address:
        return ADDRESS, (address.group("side"), _address_entry(address.group("rest")))
    gid = GID_LINE_RE.match(line)
    if gid:
        return GID, gid.group("gid")
    run_time = RUN_TIME_RE.match(line)
    if run_time:
        return RUN_TIME, float(run_time.group("s"))
    if any(rule.match(line) for rule in NOISE_RES):
        warning = body.startswith("Conflicting CPU frequency") or body.upper().startswith("WARNING:")
        return (WARNING if warning else NOTE), body
    return TEXT, None


def classify_line(line):
    """``(kind, value)`` of one line (right-stripped), from its text alone. Pure; ParseError for a table heading
    that cannot be read."""
    body = line.lstrip()
    if not body or body.startswith(PROVENANCE_PREFIXES):
        return SKIP, None
    return _structural_kind(line, body[0]) or _prose_kind(line, body)


# --- the state machine: the kinds, in order, build the blocks ---------------------------------------------------

BLOCK_INHERITED = ("title", "header", "local", "remote", "side")
TEST_KEYS = ("verb", "kind", "bidirectional", "atomic_operation")
TABLE_KEYS = TEST_KEYS + ("table", "unit", "extra_columns", "header", "msgrate", "duration")


def _copy_present(target, source, keys):
    for key in keys:
        if key in source:
            target[key] = source[key]


class _Reader:
    """The parse state: the blocks read so far (the last one is ``current``) and what the output said besides."""

    def __init__(self):
        self.blocks = []
        self.current = None
        self.in_header = False
        self.pending_server = False
        self.errors = []
        self.errors_after = []
        self.warnings = _Kept()
        self.notes = _Kept()
        self.rows_seen = False
        self.run_time = None
        self.last_gid_owner = None
        self.handlers = {
            BANNER: self.banner, TITLE: self.title, SEPARATOR: self.separator, HEADING: self.heading,
            ROW: self.row, ERROR: self.error, ADDRESS: self.address, GID: self.gid, RUN_TIME: self.set_run_time,
            WARNING: self.warning, NOTE: self.note, TEXT: self.text,
        }

    def feed(self, line):
        kind, value = classify_line(line)
        handler = self.handlers.get(kind)
        if handler is not None:
            handler(value, line)

    def _open(self, block):
        self.blocks.append(block)
        self.current = block
        return block

    def _take_server(self, block):
        """A block opened after a server banner is the server's."""
        if self.pending_server:
            block["side"] = "server"
            self.pending_server = False

    def banner(self, _value, _line):
        self.pending_server = True
        if self.current is not None:
            self.current["closed"] = True

    def title(self, value, line):
        current = self.current
        if current is not None and current["title"] is None and not current["rows"] and not current["header"]:
            current["title"] = line.strip()
        else:
            current = self._open(_new_block(line.strip()))
        current["verb"], current["kind"], current["bidirectional"], current["atomic_operation"] = value
        self._take_server(current)
        self.in_header = True

    def separator(self, _value, _line):
        self.in_header = False
        if self.current is not None and self.current["rows"]:
            self.current["closed"] = True

    def heading(self, layout, _line):
        """A table heading: a new block unless the current one has no table rows yet and is still open (then the
        heading is its table); a block without rows that it replaces hands over its title, header and addresses."""
        self.in_header = False
        previous = self.current
        if previous is None or previous["rows"] or previous["closed"]:
            block = _new_block(None)
            if previous is not None and not previous["rows"]:
                self.blocks.pop()   # previous: the current block is always the last one
                block.update((key, previous[key]) for key in BLOCK_INHERITED)
                _copy_present(block, previous, TEST_KEYS)
            self._open(block)
            self._take_server(block)
        self.current.update(layout)

    def row(self, _value, line):
        target = self.current
        if target is None or "table" not in target:
            raise ParseError("perftest table row without a table header: %r" % line)
        if target["table"] == "bw":
            row = _bw_row(line, target["extra_columns"], target.get("msgrate", True))
        else:
            row = _lat_row(line, target.get("duration", False))
        key = _row_key(row)
        if target["closed"]:
            if key in target["row_keys"]:
                self.notes.append("row repeated after the table (interleaved capture), ignored: %s" % line.strip())
                return
            target = self._orphan(target)
        if key in target["row_keys"]:
            self.notes.append("duplicate row ignored (interleaved capture): %s" % line.strip())
            return
        target["rows"].append(row)
        target["row_keys"].add(key)
        self.rows_seen = True

    def _orphan(self, closed):
        """Rows after a closed table: a block of their own, with the closed table's test and layout."""
        orphan = _new_block(closed["title"])
        _copy_present(orphan, closed, TABLE_KEYS)
        orphan["side"] = "server" if self.pending_server else None
        self.pending_server = False
        return self._open(orphan)

    def error(self, category, line):
        self.errors.append((category, line.strip()))
        if self.rows_seen:
            self.errors_after.append(line.strip())

    def address(self, value, _line):
        side, entry = value
        if self.current is None:
            self._open(_new_block(None))
        self.current[side].append(entry)
        self.last_gid_owner = entry

    def gid(self, gid, _line):
        if self.last_gid_owner is not None:
            self.last_gid_owner["gid"] = gid

    def set_run_time(self, seconds, _line):
        self.run_time = seconds

    def warning(self, text, _line):
        if text not in self.warnings:
            self.warnings.append(text)

    def note(self, text, _line):
        if text not in self.notes:
            self.notes.append(text)

    def text(self, _value, line):
        if self.in_header and self.current is not None:
            pairs = header_pairs(line)
            if pairs:
                for key, value in pairs:
                    self.current["header"].setdefault(key.strip(), value)
                return
        # Unknown line outside any table: keep it as a note, do not fail on it
        # (tools and wrappers print banners we cannot enumerate).
        self.notes.append(line.strip())


def _main_block(reader, text):
    """The block the result describes: the longest table (the first of equals); ParseError when there is neither
    a table nor a failure line."""
    tables = [b for b in reader.blocks if b.get("table") and b["rows"]]
    if not tables and not reader.errors:
        if any(b.get("table") for b in reader.blocks):
            raise ParseError("perftest printed a table header but no result rows (truncated output?)")
        snippet = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
        raise ParseError("no perftest result table and no known perftest error in the output "
                         "(first line: %r)" % snippet[:200])
    main = max(tables, key=lambda b: len(b["rows"])) if tables else (reader.blocks[0] if reader.blocks else _new_block())
    if main.get("table") and main.get("kind") and main["table"] != main["kind"]:
        raise ParseError("perftest %s test printed a %s table" % (main["kind"], main["table"]))
    return main, len(tables)


def _result(reader, main, tables):
    # the most telling category first (the root cause, not its follow-on errors), in order within a category
    errors_out = [item[1] for item in sorted(reader.errors, key=lambda item: ERROR_PRIORITY.index(item[0]))]
    present = set(item[0] for item in reader.errors)
    error_kind = next((c for c in ERROR_PRIORITY if c in present), None)
    kind = main.get("kind") or main.get("table")
    verb = main.get("verb")
    return {
        "test": main.get("title"),
        "verb": verb,
        "kind": kind,
        "bidirectional": bool(main.get("bidirectional")),
        # the atomic tests' operation as the title names it (FETCH_AND_ADD or CMP_AND_SWAP); None for other verbs
        "atomic_operation": main.get("atomic_operation"),
        "tool": "ib_%s_%s" % (verb, kind) if verb in ("write", "read", "send", "atomic") and kind else None,
        "side": main.get("side"),
        "header": dict(main.get("header") or {}),
        "unit": main.get("unit"),
        "rows": list(main.get("rows") or []),
        # the table was closed: perftest's separator line after its rows (or the next output's server banner);
        # False when the output stops inside the table (a killed run, a cut capture)
        "complete": bool(main.get("rows")) and bool(main.get("closed")),
        "blocks": tables,
        "errors": errors_out,
        "error_kind": error_kind,
        "errors_after_rows": reader.errors_after,
        "warnings": list(reader.warnings),
        "notes": list(reader.notes),
        "local": list(main.get("local") or []),
        "remote": list(main.get("remote") or []),
        "run_time_s": reader.run_time,
        # the table's layout: perftest 1.x bandwidth tables have no MsgRate column; latency tables of
        # duration mode (-D) print only t_avg and tps (the other latency keys of its rows are None)
        "msgrate_column": main.get("msgrate", True) if main.get("table") == "bw" else None,
        "lat_duration_mode": bool(main.get("duration")) if main.get("table") == "lat" else None,
    }


def parse(text):
    """Parse one perftest output (stdout and stderr together) into a dict.

    Keys: ``test`` (title), ``verb`` (write/read/send/atomic/...), ``kind`` (bw/lat or None),
    ``bidirectional``, ``atomic_operation`` (FETCH_AND_ADD/CMP_AND_SWAP for the atomic tests, else None),
    ``tool`` (ib_<verb>_<kind>, None when unknown), ``side``
    (server/client/None), ``header`` (mapping of the header block), ``unit``
    (bandwidth unit as printed), ``rows`` (the table of the main block, tool units),
    ``blocks`` (number of tables seen), ``complete`` (the main table was closed, see below), ``errors`` (perftest
    failure lines),
    ``error_kind``, ``errors_after_rows`` (failure lines printed after the first result row: the run broke
    after measuring; the rows are kept), ``warnings`` (every tool warning line; doubtful_warnings() keeps those that
    cast doubt), ``notes``, ``local``/``remote`` (address lines of the main block), ``run_time_s``.

    Each line is classified once (classify_line) and fed to a small state machine (_Reader): linear time.
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if text is None:
        raise ParseError("no perftest output to parse")
    reader = _Reader()
    for raw_line in text.splitlines():
        reader.feed(raw_line.rstrip())
    main, tables = _main_block(reader, text)
    return _result(reader, main, tables)


def tool_named(text):
    """The perftest program (``ib_<verb>_<kind>``) the first test title of ``text`` names, or None: for an output
    ``parse`` cannot read (a server that prints no table, a cut capture), which still says what ran. Never raises."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    for line in (text or "").splitlines():
        title = TITLE_RE.match(line) if line.lstrip()[:1] in ("R", "S", "A") else None
        if title:
            verb = VERBS[title.group("verb")]
            if verb in ("write", "read", "send", "atomic"):
                return "ib_%s_%s" % (verb, "bw" if title.group("kind") == "BW" else "lat")
            return None
    return None


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
