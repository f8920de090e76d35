# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for Huawei CANN HCCL Test output (``all_reduce_test``, ``all_gather_test``, ...).

Pure, no I/O, Python 3.8. ``parse(text)`` never raises: whatever it is given, it returns::

    {
      "prologue": {"min_bytes": 8192, "max_bytes": 67108864, "iters": 20, "warmup_iters": 5} | None,
      "time_spelling": "aveg_time" | "avg_time" | None,   # the binary prints aveg_time, the docs avg_time
      "rows": [{"size": 8192, "time_us": 764.55, "algbw_gbyte_s": 0.00998,
                "check": "success" | "failed" | "NULL"}],
      "check_errors": [3, ...],           # 'total err is N' lines (-c 1/2 on a failed check)
      "failures": ["hccl interface return err ./common/src/hccl_test_common.cc:538, retcode: 7 "
                   "(This is an error in init_hcclComm.)", ...],   # the tool's own error lines
      "launcher_error": "Fatal error in MPI_Init: ...; ...: gethostbyname failed, HW-AI-LC-1-1 (errno 2)" | None,
      "complete": True | False,           # rows reach the prologue's max_bytes (no prologue: rows exist)
      "prefixes_stripped": 0,             # lines that had a launcher prefix (srun -l, Open MPI tags)
      "problems": ["line 7: ..."],        # lines that looked like table rows but could not be read
    }

Layouts read (fixtures under tests/unit/plugins/module_utils/parsers/fixtures/hccl_test, sources in
PROVENANCE.md there): the header ``data_size(Bytes): | aveg_time(us): | alg_bandwidth(GB/s): |
check_result:`` with either time spelling and any padding; rows ``size | time | bandwidth | word``;
the prologue ``the minbytes is A, maxbytes is B, iters is N, warmup_iters is M``; the per-rank
``hccl interface return err <file>:<line>, retcode: N`` + ``This is an error in <stage>.`` pairs; MPICH
and Open MPI launcher failures printed before any HCCL line; Slurm ``srun -l`` (``0: ``) and Open MPI
``[1,0]<stdout>:`` line prefixes (with anything a cluster launcher puts before the latter).
"""

from __future__ import annotations

import math
import re

from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import prefixes

PROLOGUE_RE = re.compile(
    r"the minbytes is (\d+),\s*maxbytes is (\d+),\s*iters is (\d+),\s*warmup_iters is (\d+)", re.I)
HEADER_RE = re.compile(r"data_size\(Bytes\):\s*\|\s*(aveg_time|avg_time)\(us\):\s*\|\s*alg_bandwidth\(GB/s\):"
                       r"\s*\|\s*check_result:", re.I)
ROW_RE = re.compile(r"^\s*(\d+)\s*\|\s*(\S+)\s*\|\s*(\S+)\s*\|\s*(\S*)$")   # on the line without its end blanks
ROWISH_RE = re.compile(r"^\s*\d+\s*\|")
CHECK_WORDS = {"success": "success", "failed": "failed", "fail": "failed", "null": "NULL"}
HCCL_ERR_RE = re.compile(r"hccl interface return err\b.*", re.I)
STAGE_RE = re.compile(r"^\s*This is an error in (\S+?)\.?\s*$")
TOTAL_ERR_RE = re.compile(r"total err is (\d+)", re.I)
# Launcher (MPI) failure lines: MPICH ('Fatal error in MPI_Init', Hydra '[mpiexec@host]', 'BAD TERMINATION')
# and Open MPI ('mpirun was unable to ...', 'There are not enough slots', 'mpirun noticed that process').
LAUNCHER_RE = re.compile(
    r"(Fatal error in \S+|\[mpiexec@[^\][]*\]|\[proxy:[^\][]*\]|BAD TERMINATION|HYDU_\w+|"
    r"mpirun was unable to|ORTE was unable|There are not enough slots|mpirun noticed that process|"
    r"mpirun has exited due to|Primary job\s+terminated normally, but|ssh: Could not resolve hostname|"
    r"Segmentation fault|error while loading shared libraries)")
# and bash's 'bash: orted: command not found' (a tool missing on a remote host): see _is_launcher_line
STACK_DETAIL_RE = re.compile(r"^\s*\w+\(\d+\)\.*:\s*(\S.*)$")   # MPICH error stack: 'MPID_Init(190)....: text'


def _number(text):
    try:
        value = float(text)
    except (TypeError, ValueError):
        return None
    return value if math.isfinite(value) else None


def strip_prefix(line):
    """(line without a launcher prefix, True when one was removed): parsers/prefixes.py."""
    return prefixes.strip(line)


def _is_launcher_line(text):
    """True for a launcher failure line. bash's 'command not found' is two str.find calls: a regex
    'bash: .*: command not found' re-read the line from every 'bash: ' in it (quadratic)."""
    if LAUNCHER_RE.search(text):
        return True
    at = text.find("bash: ")
    return at != -1 and text.find(": command not found", at + 6) != -1


def _launcher_message(lines):
    """The launcher's failure in one line: its first line plus the most specific detail of an MPICH stack."""
    first = None
    detail = None
    for line in lines:
        text = line.strip()
        if first is None and _is_launcher_line(text):
            first = text
            continue
        if first is not None:
            match = STACK_DETAIL_RE.match(text)
            if match:
                detail = match.group(1).strip()
    if first is None:
        return None
    if not detail or detail in first:
        return first
    return "%s %s" % (first, detail) if first.endswith(":") else "%s: %s" % (first, detail)


def _table_row(line):
    """The row of a line that looks like a table row; None when one of its cells cannot be read."""
    match = ROW_RE.match(line.rstrip())
    if match is None:
        return None
    time_us = _number(match.group(2))
    algbw = _number(match.group(3))
    word = CHECK_WORDS.get(match.group(4).lower())
    if time_us is None or algbw is None or (match.group(4) and word is None):
        return None
    return {"size": int(match.group(1)), "time_us": time_us, "algbw_gbyte_s": algbw, "check": word}


def _complete(rows, prologue):
    """Rows reach the prologue's max_bytes (no prologue: rows exist)."""
    if not rows:
        return False
    last = max(r["size"] for r in rows)
    # sizes are aligned down to the rank count (x512 for large ones) by the tool, never by half
    return prologue is None or last * 2 > prologue["max_bytes"]


class _Reader:
    """One parse: the lines read so far (``out``), the table rows by size and the error line awaiting its stage."""

    def __init__(self, out):
        self.out = out
        self.by_size = {}
        self.header_seen = False
        self.pending = None   # an 'hccl interface return err' line waiting for its 'This is an error in' stage

    def feed(self, number, line):
        for find, read in _LINE_KINDS:
            match = find(line)
            if match:
                read(self, match)
                return
        if self.header_seen and ROWISH_RE.match(line):
            self._read_row(number, line)

    def _read_prologue(self, match):
        if self.out["prologue"] is None:
            self.out["prologue"] = {"min_bytes": int(match.group(1)), "max_bytes": int(match.group(2)),
                                    "iters": int(match.group(3)), "warmup_iters": int(match.group(4))}

    def _read_header(self, match):
        self.header_seen = True
        self.out["time_spelling"] = self.out["time_spelling"] or match.group(1).lower()

    def _read_hccl_error(self, match):
        if self.pending:
            self.out["failures"].append(self.pending)
        self.pending = match.group(0).strip()

    def _read_stage(self, match):
        stage = "This is an error in %s." % match.group(1)
        self.out["failures"].append("%s (%s)" % (self.pending, stage) if self.pending else stage)
        self.pending = None

    def _read_total_err(self, match):
        self.out["check_errors"].append(int(match.group(1)))

    def _read_row(self, number, line):
        row = _table_row(line)
        if row is None:
            self.out["problems"].append("line %d: unreadable table row %r" % (number, line[:120]))
            return
        known = self.by_size.get(row["size"])
        if known is None:
            self.by_size[row["size"]] = row
            self.out["rows"].append(row)
        elif row["check"] == "failed":   # the same size printed again (another rank): a failed check anywhere wins
            known["check"] = "failed"

    def finish(self):
        if self.pending:
            self.out["failures"].append(self.pending)
            self.pending = None


# The kinds of line other than table rows, in the order they are tried: (finder, reader).
_LINE_KINDS = (
    (PROLOGUE_RE.search, _Reader._read_prologue),
    (HEADER_RE.search, _Reader._read_header),
    (HCCL_ERR_RE.search, _Reader._read_hccl_error),
    (STAGE_RE.match, _Reader._read_stage),
    (TOTAL_ERR_RE.search, _Reader._read_total_err),
)


def parse(text):
    """The structure above from one run's output (stdout and stderr). Never raises."""
    out = {"prologue": None, "time_spelling": None, "rows": [], "check_errors": [], "failures": [],
           "launcher_error": None, "complete": False, "prefixes_stripped": 0, "problems": []}
    if not isinstance(text, str):
        out["problems"].append("output is %s, not text" % type(text).__name__)
        return out
    lines = []
    for raw in text.splitlines():
        line, stripped = strip_prefix(raw.rstrip("\r"))
        out["prefixes_stripped"] += int(stripped)
        lines.append(line)
    reader = _Reader(out)
    for number, line in enumerate(lines, 1):
        reader.feed(number, line)
    reader.finish()
    out["launcher_error"] = _launcher_message(lines)
    out["complete"] = _complete(out["rows"], out["prologue"])
    return out
