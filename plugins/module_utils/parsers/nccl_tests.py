# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for NVIDIA nccl-tests / ROCm rccl-tests output (text and ``-J`` JSON).

Pure functions, no I/O; they raise only ParseError (whose message quotes the
offending line). Both return the same structure::

    {
      "format": "text" | "json",
      "version": "2.19.6" | None,          # nccl-tests version (2.18+ prologue)
      "nccl_version": "2.28.9" | None,     # library version (prologue, NCCL INFO or bare lines)
      "collective": "all_reduce" | None,   # from "Collective test starting:" or JSON args
      "params": {"nthread": 1, "ngpus": 2, "min_bytes": 8, ...},
      "devices": [{"rank": 0, "group": 0, "pid": 2554, "host": "vm", "device": 0,
                   "bus_id": "0000:00:06", "name": "NVIDIA H200"}],
      "ranks": 2 | None,
      "wrong_kind": "count" | "max_error" | None,   # '#wrong' (2.11+) vs old float 'error'/'res'
      "rows": [{"size": 8, "count": 2, "type": "float", "redop": "sum", "root": -1,
                "out_of_place": {"time_us": .., "algbw_gbyte_s": .., "busbw_gbyte_s": .., "wrong": ..},
                "in_place": {...} | None}],   # '-I 1' (2.19+): cells add iter_min_us, iter_max_us,
                                                 # iter_p99_us, iter_cv_pct; "per_iteration": True is set
      "out_of_bounds": {"count": 0, "ok": True} | None,
      "avg_busbw_gbyte_s": 111.153 | None,
      "complete": True,                    # the footer ('Avg bus bandwidth') was printed
      "failures": ["vm: Test NCCL failure common.cu:958 '...'", ...],
      "warnings": ["... NCCL WARN ..."],
      "duplicate_ranks": [0],              # ranks listed twice: a non-MPI build under mpirun
      "duplicate_headers": 1,              # extra parameter blocks (same cause)
      "argv": [...], "env": [...],         # JSON only: what the tool says it ran
    }

Everything else (status, metrics, expectations) is decided by the record layer.
"""

from __future__ import annotations

import json
import math
import re

from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import ParseError
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import prefixes

# Open MPI --tag-output / rank prefixes: "[1,0]<stdout>:" (also "[1,0]<stderr>:"), anything a cluster launcher
# prints before them, and Slurm 'srun -l' task numbers (" 0: ") are removed by parsers/prefixes.py.


def _hash_optional(body):
    """A line the tool prints as a '#' comment, also read without its '#' (copies that lost the marks)."""
    return re.compile(r"^#?\s*" + body)


PER_ITER_RE = re.compile(r"^#\s*Per-Iteration Report:")
VERSION_RE = re.compile(r"nccl-tests version (\S+)(?: nccl-headers=(\d+))?(?: nccl-library=(\d+))?")
NCCL_VERSION_RE = re.compile(r"NCCL version (\d+\.\d+\.\d+)")
COMPILED_RE = re.compile(r"NCCL Tests compiled with NCCL (\d+(?:\.\d+)*)")
START_RE = re.compile(r"Collective test (starting|concluded): (\S+)")
RANK_RE = _hash_optional(
    r"Rank\s+(\d+)(?:\s+Group\s+(\d+))?(?:\s+Pid\s+(\d+))?\s+on\s+(\S+)\s+device\s+(\d+)"
    r"\s+\[([^\]]*)\]\s*((?:.*\S)?)\s*$")   # the name ends on a non-blank: linear in runs of blanks
PARAMS_RE = _hash_optional(r"nThread\s+\d+")
OOB_RE = _hash_optional(r"Out of bounds values\s*:\s*(\d+)\s+(OK|FAILED)")
AVG_RE = _hash_optional(r"Avg bus bandwidth\s*:\s*(\S+)")
ROW_RE = re.compile(r"^\s*\d+\s+\d+\s+\S")
FAILURE_RE = re.compile(
    r"(Test NCCL failure|NCCL failure|Test CUDA failure|CUDA failure|Test failure|"
    r"Invalid number of GPUs|NCCL error|cudaErrorNoDevice|Segmentation fault|"
    r"mpirun noticed that process|Primary job\s+terminated normally, but)")
WARN_RE = re.compile(r"\bNCCL WARN\b")
JSON_OUTPUT_RE = re.compile(r"^#\s*Writing JSON output to (\S+)")

# Column names as printed by every known version, mapped to one vocabulary.
META_NAMES = {"size": "size", "bytes": "size", "count": "count", "n": "count", "type": "type",
              "redop": "redop", "op": "redop", "root": "root"}
GROUP_NAMES = {"time": "time_us", "algbw": "algbw_gbyte_s", "busbw": "busbw_gbyte_s",
               "#wrong": "wrong", "error": "wrong", "res": "wrong",
               # nccl-tests 2.19 '-I 1' per-iteration columns after each group's #wrong
               "i_min": "iter_min_us", "i_max": "iter_max_us", "i_p99": "iter_p99_us", "i_cv%": "iter_cv_pct"}
GROUP_KEYS = ["time_us", "algbw_gbyte_s", "busbw_gbyte_s", "wrong"]
ITER_KEYS = ["iter_min_us", "iter_max_us", "iter_p99_us", "iter_cv_pct"]
PLACEMENTS = ("out_of_place", "in_place")
# 2.11+ unified layout, used for header-less fragments (the tail of a table).
MODERN_COLUMNS = ["size", "count", "type", "redop", "root",
                  "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong"]
MAX_KEPT_LINES = 20
PARAM_KEYS = (
    ("nthread", r"nThread\s+(\d+)"), ("ngpus", r"nGpus\s+(\d+)"),
    ("min_bytes", r"minBytes\s+(\d+)"), ("max_bytes", r"maxBytes\s+(\d+)"),
    ("warmup_iters", r"warmup iters:\s*(\d+)"), ("iters", r"(?<!warmup )(?<!agg )iters:\s*(\d+)"),
    ("agg_iters", r"agg iters:\s*(\d+)"), ("validation", r"validation:\s*(\d+)"),
    ("graph", r"graph:\s*(\d+)"), ("unalign", r"unalign:\s*(\d+)"),
)
STEP_RE = re.compile(r"step:\s*(\d+)\((factor|bytes)\)")


def nccl_code_to_version(code):
    """NCCL_VERSION_CODE to text: 22809 -> '2.28.9' (codes >= 2.9 are X*10000 + Y*100 + Z)."""
    try:
        code = int(code)
    except (TypeError, ValueError, OverflowError):   # OverflowError: a JSON 'nccl_version' of Infinity
        return None
    if code >= 10000:
        return "%d.%d.%d" % (code // 10000, (code % 10000) // 100, code % 100)
    if code >= 1000:
        return "%d.%d.%d" % (code // 1000, (code % 1000) // 100, code % 100)
    return None


def collective_name(binary_or_name):
    """'./all_reduce_perf' or 'all_reduce_perf_mpi' -> 'all_reduce'."""
    if not binary_or_name:
        return None
    base = str(binary_or_name).replace("\\", "/").rsplit("/", 1)[-1]
    base = re.sub(r"_perf(_mpi)?$", "", base)
    if not re.match(r"^[a-z][a-z0-9_]*$", base):
        return None
    return base


def _number(token, line, integer=False):
    """A numeric cell: int/float, None for 'N/A' (and rccl's trailing '*' marks)."""
    token = token.rstrip("*")
    if token in ("N/A", "n/a", "-nan", "nan", "inf", "-inf"):
        return None
    try:
        if integer:
            return int(token)
        value = float(token)
    except ValueError:
        raise ParseError("nccl-tests: cannot read %r as a number in line %r" % (token, line.strip()))
    if math.isnan(value) or math.isinf(value):
        return None
    return value


def _empty():
    return {
        "format": "text", "version": None, "nccl_version": None, "collective": None,
        "params": {}, "devices": [], "ranks": None, "wrong_kind": None, "rows": [],
        "out_of_bounds": None, "avg_busbw_gbyte_s": None, "complete": False,
        "failures": [], "warnings": [], "duplicate_ranks": [], "duplicate_headers": 0,
        "json_output": None, "layout_assumed": False, "argv": None, "env": None,
    }


def _header_columns(line):
    """Column names of a '#  size  count  type ...' header line, or None if it is not one."""
    body = line.lstrip("#").split()
    if len(body) < 5:
        return None
    first = body[0].lower()
    if first not in ("size", "bytes"):
        return None
    cols = []
    for name in body:
        key = name.lower()
        if key in META_NAMES:
            cols.append(META_NAMES[key])
        elif key in GROUP_NAMES:
            cols.append(name if key == "#wrong" else key)
        else:
            return None
    return cols


def _layout(cols, line):
    """Split header columns into metadata columns and 4-wide measurement groups."""
    meta = []
    idx = 0
    while idx < len(cols) and cols[idx] in META_NAMES.values():
        meta.append(cols[idx])
        idx += 1
    rest = [GROUP_NAMES.get(c.lower()) for c in cols[idx:]]     # a metadata name among the groups: no layout
    width = 8 if "iter_min_us" in rest else 4
    groups = len(rest) // width
    if None in rest or groups < 1 or groups > 2 or len(rest) % width or "size" not in meta:
        raise ParseError("nccl-tests: unexpected column header %r" % line.strip())
    for g in range(groups):
        if rest[g * width:g * width + width] != (GROUP_KEYS + ITER_KEYS)[:width]:
            raise ParseError("nccl-tests: unexpected column order in header %r" % line.strip())
    wrong_name = cols[idx + 3].lower()
    return meta, groups, ("count" if wrong_name == "#wrong" else "max_error"), width


def _row(line, meta, groups, wrong_kind, width=4):
    tokens = line.split()
    expected = len(meta) + width * groups
    row_meta = list(meta)
    if len(tokens) == expected - 1 and "redop" in row_meta:
        # Old alltoall prints an empty redop cell under a 'redop' header.
        row_meta.remove("redop")
    elif len(tokens) != expected:
        raise ParseError("nccl-tests: expected %d columns, found %d in row %r"
                         % (expected, len(tokens), line.strip()))
    row = {"size": None, "count": None, "type": None, "redop": None, "root": None}
    for name, token in zip(row_meta, tokens):
        if name in ("size", "count"):
            row[name] = _number(token, line, integer=True)
        elif name == "root":
            row[name] = _number(token, line, integer=True)
        else:
            row[name] = token
    if row["size"] is None:
        raise ParseError("nccl-tests: row without a size %r" % line.strip())
    values = tokens[len(row_meta):]
    for g, placement in enumerate(PLACEMENTS):
        if g >= groups:
            row[placement] = None
            continue
        cells = values[g * width:g * width + width]
        wrong = _number(cells[3], line, integer=False)
        if wrong is not None and wrong_kind == "count":
            if wrong != int(wrong) or wrong < 0:
                raise ParseError("nccl-tests: #wrong %r is not a count in row %r" % (cells[3], line.strip()))
            wrong = int(wrong)
        row[placement] = {
            "time_us": _number(cells[0], line),
            "algbw_gbyte_s": _number(cells[1], line),
            "busbw_gbyte_s": _number(cells[2], line),
            "wrong": wrong,
        }
        for key, token in zip(ITER_KEYS, cells[4:]):
            row[placement][key] = _number(token, line)
    return row


def _params(line):
    params = {}
    for key, pattern in PARAM_KEYS:
        match = re.search(pattern, line)
        if match:
            params[key] = int(match.group(1))
    step = STEP_RE.search(line)
    if step:
        params["step_" + step.group(2)] = int(step.group(1))
    return params


def _keep(bucket, line):
    if len(bucket) < MAX_KEPT_LINES:
        bucket.append(line.strip())


def _device(match):
    """The devices[] entry of a RANK_RE match."""
    return {
        "rank": int(match.group(1)),
        "group": None if match.group(2) is None else int(match.group(2)),
        "pid": None if match.group(3) is None else int(match.group(3)),
        "host": match.group(4), "device": int(match.group(5)),
        "bus_id": match.group(6), "name": match.group(7) or None,
    }


def _in_comment(regex):
    """A finder for lines that count only as the tool's '#' comments."""
    def find(text):
        return regex.search(text) if text.lstrip().startswith("#") else None
    return find


def _is_comment(stripped):
    return stripped.startswith("#")


class _TextReader:
    """One text parse: the lines read so far (``out``) and the column layout in force.

    Each ``_read_*`` method takes (what the kind's finder returned, the line, the line without its end blanks)
    and says whether the line is nccl-tests output proper (True) or only something worth noting (False).
    """

    def __init__(self):
        self.out = _empty()
        self.layout = None
        self.seen_ranks = set()
        self.duplicates = set()
        self.params_blocks = 0
        self.recognised = False

    def feed(self, line, stripped):
        """Read one non-blank line: the first kind of _TEXT_LINES whose finder matches it decides."""
        for find, on_stripped, read in _TEXT_LINES:
            found = find(stripped if on_stripped else line)
            if found:
                self.recognised = read(self, found, line, stripped) or self.recognised
                return
        # Anything else is noise (NCCL INFO, launcher chatter, other ranks' lines).

    def _read_warning(self, unused_match, line, unused_stripped):
        _keep(self.out["warnings"], line)
        return True

    def _read_failure(self, unused_match, line, unused_stripped):
        _keep(self.out["failures"], line)
        return True

    def _read_version(self, match, unused_line, unused_stripped):
        self.out["version"] = match.group(1)
        self.out["nccl_version"] = nccl_code_to_version(match.group(3) or match.group(2)) or self.out["nccl_version"]
        return True

    def _read_library_version(self, match, unused_line, unused_stripped):
        self.out["nccl_version"] = self.out["nccl_version"] or match.group(1)
        return False

    def _read_collective(self, match, unused_line, unused_stripped):
        self.out["collective"] = self.out["collective"] or collective_name(match.group(2))
        return True

    def _read_per_iteration(self, unused_match, unused_line, unused_stripped):
        self.out["per_iteration"] = True   # set only when printed: '-I 1' runs
        return True

    def _read_json_output(self, match, unused_line, unused_stripped):
        self.out["json_output"] = match.group(1)
        return False

    def _read_params(self, unused_match, unused_line, stripped):
        self.params_blocks += 1
        if self.params_blocks == 1:
            self.out["params"] = _params(stripped)
        return True

    def _read_rank(self, match, unused_line, unused_stripped):
        device = _device(match)
        rank = device["rank"]
        if rank in self.seen_ranks and rank not in self.duplicates:
            self.out["duplicate_ranks"].append(rank)
            self.duplicates.add(rank)
        self.seen_ranks.add(rank)
        self.out["devices"].append(device)
        return True

    def _read_out_of_bounds(self, match, unused_line, unused_stripped):
        self.out["out_of_bounds"] = {"count": int(match.group(1)), "ok": match.group(2) == "OK"}
        return False

    def _read_average(self, match, line, unused_stripped):
        self.out["avg_busbw_gbyte_s"] = _number(match.group(1), line)
        self.out["complete"] = True
        return True

    def _read_header(self, cols, unused_line, stripped):
        layout = _layout(cols, stripped)
        if self.layout is not None and self.out["rows"]:
            raise ParseError("nccl-tests: a second column header after data rows %r" % stripped)
        self.layout = layout
        self.out["wrong_kind"] = layout[2]
        return True

    def _read_other_comment(self, unused_match, unused_line, unused_stripped):
        return False

    def _read_row(self, unused_match, line, stripped):
        if self.layout is None:
            # A fragment without its header: only the 2.11+ layout is assumed.
            if len(line.split()) != len(MODERN_COLUMNS):
                raise ParseError("nccl-tests: data row before any column header %r" % stripped)
            self.layout = _layout(MODERN_COLUMNS, " ".join(MODERN_COLUMNS))
            self.out["wrong_kind"] = self.layout[2]
            self.out["layout_assumed"] = True
        self.out["rows"].append(_row(line, *self.layout))
        return True

    def result(self, text):
        if not self.recognised:
            first = next((ln.strip() for ln in text.splitlines() if ln.strip()), "")
            raise ParseError("nccl-tests: no nccl-tests header, table or failure line found (first line %r)"
                             % first[:200])
        self.out["duplicate_headers"] = max(0, self.params_blocks - 1)
        self.out["ranks"] = len(self.seen_ranks) if self.seen_ranks else None
        return self.out


# The kinds of text line, in the order they are tried: (finder, applied to the stripped line (True) or to the
# line itself, reader). The column header qualifies with its '#' or without it (copies that lost the comment
# marks, such as the A3 Mega capture in fixtures/nccl_tests/PROVENANCE.md): only a line of known column names.
_TEXT_LINES = (
    (WARN_RE.search, False, _TextReader._read_warning),
    (FAILURE_RE.search, False, _TextReader._read_failure),
    (_in_comment(VERSION_RE), False, _TextReader._read_version),
    (NCCL_VERSION_RE.search, False, _TextReader._read_library_version),
    (COMPILED_RE.search, False, _TextReader._read_library_version),
    (_in_comment(START_RE), False, _TextReader._read_collective),
    (PER_ITER_RE.match, True, _TextReader._read_per_iteration),
    (JSON_OUTPUT_RE.match, True, _TextReader._read_json_output),
    (PARAMS_RE.match, True, _TextReader._read_params),
    (RANK_RE.match, True, _TextReader._read_rank),
    (OOB_RE.match, True, _TextReader._read_out_of_bounds),
    (AVG_RE.match, True, _TextReader._read_average),
    (_header_columns, True, _TextReader._read_header),
    (_is_comment, True, _TextReader._read_other_comment),
    (ROW_RE.match, False, _TextReader._read_row),
)


def parse_text(text):
    """Parse the text output of one nccl-tests/rccl-tests binary run."""
    if text is None:
        raise ParseError("nccl-tests: no output to parse")
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    reader = _TextReader()
    for raw in text.splitlines():
        line = prefixes.strip(raw.rstrip("\r"))[0]
        stripped = line.strip()
        if stripped:
            reader.feed(line, stripped)
    return reader.result(text)


def _jnum(value, where):
    """A number of the JSON document; None for null, NaN and infinities (a cell with no figure)."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ParseError("nccl-tests JSON: %s is a boolean, not a number" % where)
    if isinstance(value, str):
        text = value.strip()
        try:
            value = float(text) if any(c in text.lower() for c in ".en") else int(text)
        except ValueError:
            raise ParseError("nccl-tests JSON: %s is %r, not a number" % (where, value))
    if isinstance(value, float) and (math.isnan(value) or math.isinf(value)):
        return None
    if isinstance(value, (int, float)):
        return value
    raise ParseError("nccl-tests JSON: %s has type %s, not a number" % (where, type(value).__name__))


def _jint(value, where):
    """An integer field (size, count, root, ...); None when absent or not a finite number."""
    number = _jnum(value, where)
    if number is None:
        return None
    if isinstance(number, float):
        if number != int(number):
            raise ParseError("nccl-tests JSON: %s is %r, not a whole number" % (where, value))
        number = int(number)
    return number


def _jbool(value):
    if isinstance(value, bool):
        return value
    if isinstance(value, str):
        return value.strip().lower() in ("true", "ok", "1", "yes")
    return bool(value)


def _jplacement(cell, where):
    if cell is None:
        return None
    if not isinstance(cell, dict):
        raise ParseError("nccl-tests JSON: %s is not an object: %r" % (where, cell))
    wrong = _jnum(cell.get("nwrong"), where + ".nwrong")
    if isinstance(wrong, float) and wrong.is_integer():
        wrong = int(wrong)
    return {
        "time_us": _jnum(cell.get("time"), where + ".time"),
        "algbw_gbyte_s": _jnum(cell.get("alg_bw"), where + ".alg_bw"),
        "busbw_gbyte_s": _jnum(cell.get("bus_bw"), where + ".bus_bw"),
        "wrong": wrong,
    }


# params key <- the JSON document's config key
_JSON_PARAMS = (("nthread", "nthreads"), ("ngpus", "ngpus"), ("min_bytes", "minimum_bytes"),
                ("max_bytes", "maximum_bytes"), ("step_factor", "step_factor"), ("step_bytes", "step_bytes"),
                ("warmup_iters", "warmup_iters"), ("iters", "iterations"),
                ("agg_iters", "aggregated_iterations"), ("validation", "validation"), ("graph", "graph"))


def _json_document(text):
    """The decoded document: an object with a 'results' list, else ParseError."""
    try:
        doc = json.loads(text)
    except (TypeError, ValueError) as exc:
        lines = (text or "").splitlines()
        lineno = getattr(exc, "lineno", 1) or 1
        bad = lines[lineno - 1] if 0 < lineno <= len(lines) else (text or "")[:200]
        raise ParseError("nccl-tests JSON: not valid JSON (%s) at line %r" % (exc, bad[:200]))
    if not isinstance(doc, dict) or not isinstance(doc.get("results"), list):
        raise ParseError("nccl-tests JSON: no 'results' list in the document (starts %r)" % (text or "")[:120])
    return doc


def _jstrings(value):
    """A copy of a list of strings; None for anything else."""
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    return None


def _jparams(config):
    params = {}
    for key, jkey in _JSON_PARAMS:
        if jkey in config:
            value = _jnum(config[jkey], "config." + jkey)
            if value is not None:
                params[key] = value
    return params


def _jdevices(config):
    devices = config.get("devices") if isinstance(config.get("devices"), list) else []
    out = []
    for i, dev in enumerate(devices):
        if not isinstance(dev, dict):
            raise ParseError("nccl-tests JSON: config.devices[%d] is not an object: %r" % (i, dev))
        out.append({
            "rank": dev.get("rank"), "group": dev.get("group"), "pid": dev.get("pid"),
            "host": dev.get("hostname"), "device": dev.get("device"),
            "bus_id": dev.get("device_hex"), "name": dev.get("device_info"),
        })
    return out


def _jranks(devices, params):
    """One device entry per process; each drives nthreads x ngpus ranks. None without entries."""
    if not devices:
        return None
    per = _jint(params.get("ngpus"), "config.ngpus") or 1
    per *= _jint(params.get("nthread"), "config.nthreads") or 1
    return len(devices) * per


def _jrow(res, where):
    if not isinstance(res, dict):
        raise ParseError("nccl-tests JSON: %s is not an object: %r" % (where, res))
    size = _jint(res.get("size"), where + ".size")
    if size is None:
        raise ParseError("nccl-tests JSON: %s has no size" % where)
    return {
        "size": size,
        "count": _jint(res.get("count"), where + ".count"),
        "type": res.get("type") if isinstance(res.get("type"), str) else None,
        "redop": res.get("redop") if isinstance(res.get("redop"), str) else None,
        "root": _jint(res.get("root"), where + ".root"),
        "out_of_place": _jplacement(res.get("out_of_place"), where + ".out_of_place"),
        "in_place": _jplacement(res.get("in_place"), where + ".in_place"),
    }


def _jfooter(out, doc):
    """Out-of-bounds count, average bus bandwidth (the run completed) and the tool's error lines."""
    oob = doc.get("out_of_bounds")
    if isinstance(oob, dict) and "count" in oob:
        out["out_of_bounds"] = {"count": _jint(oob.get("count"), "out_of_bounds.count") or 0,
                                "ok": _jbool(oob.get("okay", True))}
    avg = doc.get("average_bus_bandwidth")
    if isinstance(avg, dict) and "bandwidth" in avg:
        out["avg_busbw_gbyte_s"] = _jnum(avg.get("bandwidth"), "average_bus_bandwidth.bandwidth")
        out["complete"] = True
    errors = doc.get("errors")
    if isinstance(errors, list):
        out["failures"] = [str(e) for e in errors if isinstance(e, str) and e.strip()][:MAX_KEPT_LINES]


def parse_json(text):
    """Parse the ``-J FILE`` JSON document of nccl-tests >= 2.18 (schema 'version' 3 and later)."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    doc = _json_document(text)
    out = _empty()
    out["format"] = "json"
    out["wrong_kind"] = "count"
    out["argv"] = _jstrings(doc.get("args"))
    out["collective"] = collective_name(out["argv"][0]) if out["argv"] else None
    out["env"] = _jstrings(doc.get("env"))
    out["nccl_version"] = nccl_code_to_version(doc.get("nccl_version"))
    config = doc.get("config") if isinstance(doc.get("config"), dict) else {}
    out["params"] = _jparams(config)
    out["devices"] = _jdevices(config)
    out["ranks"] = _jranks(out["devices"], out["params"])
    out["rows"] = [_jrow(res, "results[%d]" % i) for i, res in enumerate(doc["results"])]
    _jfooter(out, doc)
    return out


def parse(text):
    """Text or JSON, decided by the first non-blank character."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    if (text or "").lstrip().startswith("{"):
        return parse_json(text)
    return parse_text(text)
