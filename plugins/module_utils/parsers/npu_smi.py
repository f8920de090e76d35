# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for Huawei Ascend ``npu-smi info`` and the CANN toolkit's install info (private).

Pure, no I/O, Python 3.8; they never raise. ``parse_info(text)`` returns::

    {"version": "23.0.7" | None,        # the npu-smi / driver version of the banner
     "npus": [{"npu": 0, "name": "910B2", "health": "OK", "power_w": 96.5, "temp_c": 36,
               "hugepages_used": 0, "hugepages_total": 0,
               "chip": 0, "device": None, "bus_id": "0000:C1:00.0", "aicore_pct": 0,
               "memory_used_mb": 0, "memory_total_mb": 0, "hbm_used_mb": 29954, "hbm_total_mb": 65536}],
     "problems": ["line 9: ..."]}      # table lines that could not be read

Layouts read (fixtures/npu_smi, sources in PROVENANCE.md there): the two-line-per-chip table of
``npu-smi info`` with an ``HBM-Usage(MB)`` column (910B) or without it (310B, ``Chip Device`` header,
Bus-Id ``NA``), power ``NA``, and the process table after it (ignored).

``parse_install_info(text)`` reads ``key=value`` lines (``ascend_toolkit_install.info``: package_name,
version, innerversion, arch, path, ...) into a dict.
"""

from __future__ import annotations

import re

BANNER_RE = re.compile(r"npu-smi\s+(\S+)\s+Version:\s*(\S+)")
PAIR_RE = re.compile(r"(?<!\d)(\d+)\s*/\s*(\d+)")   # from the first digit of a number only: linear
NUM_RE = re.compile(r"^-?\d+(?:\.\d+)?$")
HEADER_RE = re.compile(r"\bName\b|\bBus-Id\b")   # the table's two header lines


def _num(token):
    if token is None or not NUM_RE.match(token):
        return None
    value = float(token)
    return int(value) if "." not in token else value


def _cells(line):
    parts = line.strip().strip("|").split("|")
    return [p.strip() for p in parts]


def _figures(cell):
    """([(used, total) pairs], [other figures]) of a table cell such as '96.5  36  0 / 0'."""
    return PAIR_RE.findall(cell), PAIR_RE.sub(" ", cell).split()


def _first_chip_line(cells):
    """Chip line 1: NPU id, name | health | power, temp, hugepages used / total. None without an id and a name."""
    first, second, third = cells
    words = first.split()
    if not words or _num(words[0]) is None or len(words) < 2:
        return None
    pairs, singles = _figures(third)
    npu = {"npu": _num(words[0]), "name": " ".join(words[1:]), "health": second or None,
           "power_w": _num(singles[0]) if singles else None,
           "temp_c": _num(singles[1]) if len(singles) > 1 else None}
    if pairs:
        npu["hugepages_used"], npu["hugepages_total"] = int(pairs[0][0]), int(pairs[0][1])
    return npu


def _second_chip_line(cells):
    """Chip line 2: chip [device] | bus id | aicore %, memory used / total [, hbm used / total]."""
    first, second, third = cells
    words = first.split()
    pairs, singles = _figures(third)
    return {"chip": _num(words[0]) if words else None,
            "device": _num(words[1]) if len(words) > 1 else None,
            "bus_id": second if second and second != "NA" else None,
            "aicore_pct": _num(singles[0]) if singles else None,
            "memory_used_mb": int(pairs[0][0]) if pairs else None,
            "memory_total_mb": int(pairs[0][1]) if pairs else None,
            "hbm_used_mb": int(pairs[1][0]) if len(pairs) > 1 else None,
            "hbm_total_mb": int(pairs[1][1]) if len(pairs) > 1 else None}


def _starts_process_table(stripped):
    return "Process id" in stripped or "No running processes" in stripped


def parse_info(text):
    out = {"version": None, "npus": [], "problems": []}
    if not isinstance(text, str):
        out["problems"].append("output is %s, not text" % type(text).__name__)
        return out
    current = None   # an NPU whose first table line was read, waiting for its second
    in_process_table = False
    for number, raw in enumerate(text.splitlines(), 1):
        line = raw.rstrip()
        match = BANNER_RE.search(line)
        if match:
            out["version"] = match.group(2)
            continue
        stripped = line.strip()
        if not stripped.startswith("|"):
            continue
        in_process_table = in_process_table or _starts_process_table(stripped)
        if in_process_table or HEADER_RE.search(stripped):
            continue   # the process table (ignored) and the two header lines
        cells = _cells(stripped)
        if len(cells) != 3:
            out["problems"].append("line %d: expected 3 cells, found %d: %r" % (number, len(cells), stripped[:120]))
        elif current is None:
            current = _first_chip_line(cells)
            if current is None:
                out["problems"].append("line %d: no NPU id and name in %r" % (number, cells[0]))
        else:
            current.update(_second_chip_line(cells))
            out["npus"].append(current)
            current = None
    if current is not None:
        out["problems"].append("NPU %s: its second table line is missing (truncated output)" % current["npu"])
    return out


def parse_install_info(text):
    """key=value lines of the CANN toolkit's ascend_toolkit_install.info (other lines ignored)."""
    out = {}
    for line in (text or "").splitlines() if isinstance(text, str) else ():
        if "=" in line and not line.lstrip().startswith("#"):
            key, value = line.split("=", 1)
            key = key.strip()
            if re.match(r"^[A-Za-z_][A-Za-z0-9_]*$", key):
                out[key] = value.strip()
    return out
