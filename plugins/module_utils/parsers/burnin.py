# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers of the burn-in worker's output (burnin_worker.py soak / copy), of nvbandwidth's text output, of kernel-log
Xid lines and of the replay counters in ``nvidia-smi -q``. Pure, no I/O; Python 3.8.

- ``parse_soak(text)``: the soak's windows per GPU, the nvidia-smi ``-lms`` samples per GPU (the tool's own CSV,
  read by parsers.nvidia_smi.parse_query_csv), the Xid lines and PCIe replay counters before and after;
- ``parse_copy(text)``: the copy worker's measurements;
- ``parse_nvbandwidth(text)``: nvbandwidth's matrices as the same measurements (``kind``, ``src``, ``dst``, ``gbyte_s``);
- ``parse_xids(lines)``, ``parse_pcie_replays(text)``.

Each raises ParseError only when the output holds no result at all; a damaged line is skipped and named in
``problems``.
"""

from __future__ import annotations

import json
import re

from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import ParseError
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import nvidia_smi
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers._common import as_text, quote

# the worker's markers (burnin_worker.py: the worker imports nothing from the collection, so they are repeated here
# and a unit test holds both equal)
SOAK_MARK = "AIFABRIC_SOAK "
START_MARK = "AIFABRIC_SOAK_START "
END_MARK = "AIFABRIC_SOAK_END "
SMI_MARK = "AIFABRIC_SMI "
XID_MARK = "AIFABRIC_XID "
PCIE_MARK = "AIFABRIC_PCIE "
COPY_MARK = "AIFABRIC_COPY "
COPY_START_MARK = "AIFABRIC_COPY_START "
_XID_RE = re.compile(r"NVRM: Xid \(PCI:([0-9A-Fa-f:.]{1,20})\): (\d{1,5})\b")
_GPU_RE = re.compile(r"^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*$")
_REPLAY_RE = re.compile(r"^\s*Replays Since Reset\s*:\s*(\S+)\s*$")
# telemetry columns -> the names a sample carries (the header's names: nvidia-smi prints clocks.sm as clocks.current.sm)
_SAMPLE_NUMBERS = {
    "power.draw": "power_w", "enforced.power.limit": "power_limit_w", "power.limit": "power_limit_w",
    "power.default_limit": "power_default_limit_w", "temperature.gpu": "temperature_c",
    "temperature.memory": "memory_temperature_c", "clocks.current.sm": "sm_clock_mhz", "clocks.sm": "sm_clock_mhz",
    "clocks.max.sm": "max_sm_clock_mhz", "utilization.gpu": "utilization_pct",
    "ecc.errors.corrected.volatile.total": "ecc_corrected", "ecc.errors.uncorrected.volatile.total": "ecc_uncorrected",
    "remapped_rows.correctable": "remapped_correctable", "remapped_rows.uncorrectable": "remapped_uncorrectable",
    "retired_pages.single_bit_ecc.count": "retired_sbe", "retired_pages.double_bit.count": "retired_dbe",
}
_REASON_PREFIXES = ("clocks_event_reasons.", "clocks_throttle_reasons.")


def _json_line(line, mark, out):
    try:
        item = json.loads(line[len(mark):])
    except ValueError:
        item = None
    if not isinstance(item, dict):
        out["problems"].append("unreadable line %s" % quote(line))
        return None
    return item


def parse_xids(lines):
    """Kernel-log lines -> [{"bus": "0000:01:00", "xid": 32, "line": text}] for each NVRM Xid line."""
    found = []
    for line in lines or []:
        match = _XID_RE.search(as_text(line))
        if match:
            found.append({"bus": match.group(1).lower(), "xid": int(match.group(2)), "line": as_text(line).strip()})
    return found


def parse_pcie_replays(text):
    """``nvidia-smi -q`` -> {bus id (lower case): Replays Since Reset (int, None when N/A)}."""
    out, bus = {}, None
    for line in as_text(text).splitlines():
        gpu = _GPU_RE.match(line.strip())
        if gpu:
            bus = gpu.group(1).lower()
            continue
        match = _REPLAY_RE.match(line)
        if match and bus is not None:
            value = match.group(1)
            out[bus] = int(value) if value.isascii() and value.isdigit() else None
    return out


def _reasons(row):
    """The active clock-event reasons of a sample: the bit mask's names, and each per-reason column that says Active."""
    active = set()
    for field, value in row.items():
        if not field.startswith(_REASON_PREFIXES):
            continue
        name = field.split(".", 1)[1]
        if name == "active":
            try:
                active.update(k for k, on in nvidia_smi.reasons_from_mask(value).items() if on)
            except ParseError:
                continue
        elif (value or "").strip().lower() == "active":
            active.add(name)
    active.discard("gpu_idle")
    return sorted(active)


def sample_of(row):
    """One parsed ``--query-gpu`` row -> {index, bus_id, timestamp, power_w, ..., reasons: [active], pending: bool}."""
    sample = {"index": None, "bus_id": row.get("pci.bus_id"), "timestamp": row.get("timestamp")}
    index = row.get("index")
    sample["index"] = int(index) if index is not None and index.isascii() and index.isdigit() else None
    for field, key in _SAMPLE_NUMBERS.items():
        if field in row and key not in sample:
            value = nvidia_smi.number(row[field])
            sample[key] = float(value) if isinstance(value, (int, float)) else None
    sample["reasons"] = _reasons(row)
    sample["remapped_pending"] = (row.get("remapped_rows.pending") or "").strip().lower() == "yes"
    return sample


def parse_samples(lines, out):
    """nvidia-smi ``-lms`` CSV lines (header first) -> {index: [sample]}; damaged rows are skipped into problems."""
    header, samples = None, {}
    for line in lines:
        if line.startswith("timestamp") or (header is None and "," in line and "[" in line):
            header = line
            continue
        if header is None:
            out["problems"].append("nvidia-smi sample before its header %s" % quote(line))
            continue
        try:
            rows = nvidia_smi.parse_query_csv(header + "\n" + line)
        except ParseError as exc:
            out["problems"].append(str(exc))
            continue
        if len(rows) != 1:
            continue
        sample = sample_of(rows[0])
        if sample["index"] is None:
            out["problems"].append("nvidia-smi sample without a GPU index %s" % quote(line))
            continue
        samples.setdefault(sample["index"], []).append(sample)
    return samples


def _soak_line(line, out, smi):
    if line.startswith(START_MARK):
        out["start"] = _json_line(line, START_MARK, out)
    elif line.startswith(END_MARK):
        out["end"] = _json_line(line, END_MARK, out)
    elif line.startswith(SMI_MARK):
        if not line[len(SMI_MARK):].startswith("#"):
            smi.append(line[len(SMI_MARK):])
    elif line.startswith(XID_MARK):
        item = _json_line(line, XID_MARK, out)
        if item and item.get("phase") in ("before", "after"):
            out["xid"][item["phase"]] = {"readable": bool(item.get("readable")), "why": item.get("why"),
                                         "xids": parse_xids(item.get("lines") if isinstance(item.get("lines"), list) else [])}
    elif line.startswith(PCIE_MARK):
        item = _json_line(line, PCIE_MARK, out)
        if item and item.get("phase") in ("before", "after"):
            out["replays"][item["phase"]] = parse_pcie_replays(item.get("text")) if item.get("rc") == 0 else None
    elif line.startswith(SOAK_MARK):
        item = _json_line(line, SOAK_MARK, out)
        if item is None or not isinstance(item.get("device"), int):
            return
        if "error" in item:
            out["errors"][item["device"]] = str(item["error"])
        elif all(isinstance(item.get(k), (int, float)) and not isinstance(item.get(k), bool) for k in ("t_s", "tflops")):
            out["windows"].setdefault(item["device"], []).append(
                {"t_s": float(item["t_s"]), "tflops": float(item["tflops"]), "products": item.get("products")})
        else:
            out["problems"].append("soak window without t_s/tflops %s" % quote(line))


def parse_soak(text):
    """The soak worker's output -> {start, end, skip, windows: {gpu: [{t_s, tflops, products}]}, errors: {gpu: why},
    samples: {gpu: [sample]}, xid: {before|after: {readable, why, xids}}, replays: {before|after: {bus: n}},
    problems}. ParseError when the output has no start line (the worker never ran)."""
    out = {"start": None, "end": None, "skip": None, "windows": {}, "errors": {}, "samples": {}, "xid": {},
           "replays": {}, "problems": []}
    smi = []
    for line in as_text(text).splitlines():
        _soak_line(line.rstrip("\r"), out, smi)
    if out["start"] is None:
        first = next((ln for ln in as_text(text).splitlines() if ln.strip()), "")
        raise ParseError("soak worker: no start line in the output (first line %s)" % quote(first))
    if "skip" in out["start"]:
        out["skip"] = str(out["start"]["skip"])
    out["samples"] = parse_samples(smi, out)
    return out


def _copy_item_ok(item):
    """A copy line names its source and destination, and its figure (if any) is a number."""
    figure = item.get("gbyte_s")
    return "src" in item and "dst" in item and (
        figure is None or (isinstance(figure, (int, float)) and not isinstance(figure, bool)))


def parse_copy(text):
    """The copy worker's output -> {start, items: [{kind, src, dst, gbyte_s | error, bytes}], complete, problems}.
    ParseError when there is no start line."""
    out = {"start": None, "items": [], "complete": False, "problems": []}
    for line in as_text(text).splitlines():
        line = line.rstrip("\r")
        if line.startswith(COPY_START_MARK):
            out["start"] = _json_line(line, COPY_START_MARK, out)
        elif line.startswith(COPY_MARK):
            item = _json_line(line, COPY_MARK, out)
            if item is None:
                continue
            if item.get("kind") == "end":
                out["complete"] = True
            elif item.get("kind") in ("h2d", "d2h", "p2p_read", "p2p_write"):
                if _copy_item_ok(item):
                    out["items"].append(item)
                else:
                    out["problems"].append("copy line without its source, destination or figure %s" % quote(line))
            else:
                out["problems"].append("copy line of unknown kind %s" % quote(line))
    if out["start"] is None:
        first = next((ln for ln in as_text(text).splitlines() if ln.strip()), "")
        raise ParseError("copy worker: no start line in the output (first line %s)" % quote(first))
    return out


# nvbandwidth: "memcpy CE CPU(row) -> GPU(column) bandwidth (GB/s)" and its matrix; (rows, arrow, columns) -> the
# kind of copy and which of row/column is the source (testcases_ce.cpp: read_ce copies column -> row on the row's
# context, write_ce row -> column on the row's context)
_NVB_TITLE_RE = re.compile(r"^memcpy (CE|SM) (CPU|GPU)\(row\) (->|<-|<->) GPU\(column\) bandwidth \(GB/s\)\s*$")
_NVB_KINDS = {("CPU", "->"): ("h2d", "row"), ("CPU", "<-"): ("d2h", "column"),
              ("GPU", "->"): ("p2p_read", "column"), ("GPU", "<-"): ("p2p_write", "row")}
_NVB_RUNNING_RE = re.compile(r"^Running (\w+)\.\s*$")
_NVB_VERSION_RE = re.compile(r"^nvbandwidth Version: (\S+)")


def _nvb_matrix(lines, at, title, test, out):
    """Read the matrix under the title at ``lines[at]``: its items; returns the index after it."""
    engine, rows, arrow = title.group(1), title.group(2), title.group(3)
    kind = _NVB_KINDS.get((rows, arrow))
    columns = lines[at + 1].split() if at + 1 < len(lines) else []
    if not columns or not all(c.isascii() and c.isdigit() for c in columns):
        out["problems"].append("nvbandwidth: no column header under %s" % quote(lines[at]))
        return at + 1
    at += 2
    while at < len(lines) and lines[at].split() and lines[at].split()[0].isascii() and lines[at].split()[0].isdigit():
        cells = lines[at].split()
        row = int(cells[0])
        if len(cells) - 1 != len(columns):
            out["problems"].append("nvbandwidth: row of %d cells under %d columns %s" % (
                len(cells) - 1, len(columns), quote(lines[at])))
        for column, cell in zip(columns, cells[1:]):
            column = int(column)
            if kind is None or (rows == "GPU" and row == column):
                continue
            try:
                value = float(cell) if cell != "N/A" else None
            except ValueError:
                out["problems"].append("nvbandwidth: unreadable cell %s" % quote(cell))
                continue
            src, dst = (("host" if rows == "CPU" else row), column) if kind[1] == "row" else (column, (
                "host" if rows == "CPU" else row))
            out["items"].append({"kind": kind[0], "src": src, "dst": dst, "gbyte_s": value, "engine": engine,
                                 "test": test})
        at += 1
    return at


def parse_nvbandwidth(text):
    """nvbandwidth's text output -> {version, items: [{kind, src, dst, gbyte_s (None: N/A), engine, test}], tests,
    problems}. Bidirectional matrices (<->) are read for no item. ParseError when no matrix is found."""
    out = {"version": None, "items": [], "tests": [], "problems": []}
    lines = [ln.rstrip("\r") for ln in as_text(text).splitlines()]
    test, at, seen = None, 0, 0
    while at < len(lines):
        line = lines[at].strip()
        version = _NVB_VERSION_RE.match(line)
        running = _NVB_RUNNING_RE.match(line)
        title = _NVB_TITLE_RE.match(line)
        if version:
            out["version"] = version.group(1)
        elif running:
            test = running.group(1)
            out["tests"].append(test)
        elif title:
            seen += 1
            at = _nvb_matrix(lines, at, title, test, out)
            continue
        elif line.startswith("ASSERT") or line.startswith("ERROR"):
            out["problems"].append("nvbandwidth: %s" % line[:200])
        at += 1
    if not seen:
        raise ParseError("nvbandwidth: no bandwidth matrix in the output%s" % (
            " (%s)" % out["problems"][-1] if out["problems"] else ""))
    return out
