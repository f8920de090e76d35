# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for nvidia-smi outputs (private; pure functions, no I/O).

Two readers produce the SAME per-GPU model (a dict, keys in GPU_KEYS), so the
record layer does not care where the data came from:

- ``parse_xml``        ``nvidia-smi -q -x`` (preferred; parsed with the standard library)
- ``parse_query_csv``  ``nvidia-smi --query-gpu=... --format=csv[,noheader][,nounits]``
  (fallback when -q -x fails), then ``gpus_from_query`` for the model

and ``parse_topo`` reads the ``nvidia-smi topo -m`` matrix.

GPU indexes: ``nvidia-smi -q -x`` lists GPUs in nvidia-smi's index order
(PCI bus order), so the position in the output is the index; the CSV has an
``index`` field. Values that nvidia-smi prints as N/A or [Not Supported] become None.
Every function raises only errors.ParseError (message quotes the offending text).
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import ParseError
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers._common import is_uint, quote as _quote

GPU_KEYS = (
    "index", "name", "serial", "uuid", "bus_id", "vbios_version", "persistence_mode",
    "memory_total_mib", "ecc_mode_current", "ecc_mode_pending",
    "ecc_volatile_correctable", "ecc_volatile_uncorrectable",
    "ecc_aggregate_correctable", "ecc_aggregate_uncorrectable",
    "retired_pages_single_bit", "retired_pages_double_bit", "retired_pages_pending",
    "remapped_rows_correctable", "remapped_rows_uncorrectable", "remapped_rows_pending",
    "remapped_rows_failure", "clocks_event_reasons", "pcie_gen_current", "pcie_gen_max",
    "pcie_width_current", "pcie_width_max", "performance_state", "temperature_c",
    "power_draw_w", "power_limit_w", "mig_mode", "fabric_state", "fabric_status", "compute_mode",
)

# NVML nvmlClocksEventReason* bits, for clocks_event_reasons.active in --query-gpu.
REASON_BITS = (
    (0x1, "gpu_idle"), (0x2, "applications_clocks_setting"), (0x4, "sw_power_cap"),
    (0x8, "hw_slowdown"), (0x10, "sync_boost"), (0x20, "sw_thermal_slowdown"),
    (0x40, "hw_thermal_slowdown"), (0x80, "hw_power_brake_slowdown"),
    (0x100, "display_clocks_setting"),
)
_NA = ("", "n/a", "[n/a]", "not supported", "[not supported]", "[unknown error]", "unknown error",
       "requested functionality has been deprecated", "[insufficient permissions]")
# (one way to match each blank: a value with a long run of blanks is read in linear time)
_NUM_RE = re.compile(r"^\s*([-+]?\d+(?:\.\d+)?)(?:\s*[A-Za-z%/()]+)?(?:\s*\w+\(s\))?\s*$")
_ANSI_RE = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")


def _na(value):
    if value is None:
        return None
    value = value.strip()
    if value.lower() in _NA:
        return None
    return value


def _number(value):
    """'81559 MiB' -> 81559, '74.46 W' -> 74.46, '16x' -> 16, 'N/A' -> None."""
    value = _na(value)
    if value is None:
        return None
    if value.endswith("x") and is_uint(value[:-1]):
        return int(value[:-1])
    match = _NUM_RE.match(value)
    if not match:
        return None
    num = match.group(1)
    return float(num) if "." in num else int(num)


number = _number     # the one reader of nvidia-smi's numbers with units (parsers.burnin, tools.copy_bandwidth)


def _yes(value):
    """Yes/No (and Active/Not Active, Enabled/Disabled) -> True/False, N/A -> None."""
    value = _na(value)
    if value is None:
        return None
    low = value.lower()
    if low in ("yes", "active", "enabled", "true", "1"):
        return True
    if low in ("no", "not active", "disabled", "false", "0"):
        return False
    return None


def _empty_gpu(index):
    gpu = dict((key, None) for key in GPU_KEYS)
    gpu["index"] = index
    gpu["clocks_event_reasons"] = {}
    return gpu


# --------------------------------------------------------------------------- XML


def _reject_entities(text):
    """Guard before expat sees the text: no DTD with ENTITY declarations (billion laughs).

    Real nvidia-smi XML carries only ``<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_vNN.dtd">``,
    which expat does not fetch; an internal subset with entities is refused outright.
    """
    head = text[:4096]
    if "<!ENTITY" in text or ("<!DOCTYPE" in head and "[" in head.split("<!DOCTYPE", 1)[1].split(">", 1)[0]):
        raise ParseError("nvidia-smi XML declares a DTD internal subset or entities; refusing to parse it",
                         line=_quote(head))


def _txt(node, path):
    if node is None:
        return None
    found = node.find(path)
    if found is None or found.text is None:
        return None
    return found.text.strip()


def _ecc_kind(name):
    """'unc' / 'corr' for an ECC counter named ...uncorrectable / ...correctable (lower case), else None."""
    if "uncorrectable" in name:
        return "unc"
    if "correctable" in name:
        return "corr"
    return None


def _bit_kind(name, single, double):
    """'corr' for a single-bit section, 'unc' for a double-bit one (old drivers), else None."""
    for prefix, kind in ((single, "corr"), (double, "unc")):
        if name.startswith(prefix):
            return kind
    return None


def _ecc_totals(counts):
    """(correctable, uncorrectable) sums of (kind, count) pairs; None for a kind never counted."""
    corr = unc = None
    for kind, count in counts:
        if kind == "corr":
            corr = (corr or 0) + count
        elif kind == "unc":
            unc = (unc or 0) + count
    return corr, unc


def _xml_ecc_counts(node):
    for child in list(node):
        tag = child.tag.lower()
        if len(child):
            total = _number(_txt(child, "total"))
            if total is not None:
                yield _bit_kind(tag, "single_bit", "double_bit"), total
            continue
        value = _number(child.text)
        if value is not None and "threshold" not in tag:
            yield _ecc_kind(tag), value


def _ecc_sums(node):
    """(correctable, uncorrectable) totals of an ecc_errors/volatile|aggregate element.

    Handles the three generations: single_bit/double_bit with a <total> (old),
    sram_/dram_ (un)correctable leaves (Ampere..Blackwell). None when nothing is reported.
    """
    if node is None:
        return None, None
    return _ecc_totals(_xml_ecc_counts(node))


def parse_xml(text):
    """``nvidia-smi -q -x`` -> {driver_version, cuda_version, attached_gpus, gpus: [model]}."""
    if not isinstance(text, str) or not text.strip():
        raise ParseError("nvidia-smi -q -x printed nothing")
    _reject_entities(text)
    try:
        root = ET.fromstring(text.strip().encode("utf-8"))
    except ET.ParseError as exc:
        lines = text.splitlines()
        lineno = getattr(exc, "position", (0, 0))[0]
        bad = lines[lineno - 1] if 0 < lineno <= len(lines) else ""
        raise ParseError("nvidia-smi -q -x output is not well-formed XML (%s): line %s" % (exc, _quote(bad)))
    if root.tag != "nvidia_smi_log":
        raise ParseError("nvidia-smi -q -x root element is <%s>, expected <nvidia_smi_log>" % root.tag)
    out = {
        "driver_version": _na(_txt(root, "driver_version")),
        "cuda_version": _na(_txt(root, "cuda_version")),
        "attached_gpus": _number(_txt(root, "attached_gpus")),
        "gpus": [],
    }
    for index, gpu in enumerate(root.findall("gpu")):
        out["gpus"].append(_gpu_from_xml(index, gpu))
    if out["attached_gpus"] is not None and out["attached_gpus"] != len(out["gpus"]):
        raise ParseError("nvidia-smi -q -x says attached_gpus %s but lists %d <gpu> elements (truncated output?)"
                         % (out["attached_gpus"], len(out["gpus"])))
    return out


def _gpu_from_xml(index, gpu):
    model = _empty_gpu(index)
    model["name"] = _na(_txt(gpu, "product_name"))
    model["serial"] = _na(_txt(gpu, "serial"))
    model["uuid"] = _na(_txt(gpu, "uuid"))
    model["bus_id"] = _na(_txt(gpu, "pci/pci_bus_id")) or _na(gpu.get("id"))
    model["vbios_version"] = _na(_txt(gpu, "vbios_version"))
    model["persistence_mode"] = _na(_txt(gpu, "persistence_mode"))
    model["memory_total_mib"] = _number(_txt(gpu, "fb_memory_usage/total"))
    model["ecc_mode_current"] = _na(_txt(gpu, "ecc_mode/current_ecc"))
    model["ecc_mode_pending"] = _na(_txt(gpu, "ecc_mode/pending_ecc"))
    errors = gpu.find("ecc_errors")
    if errors is not None:
        model["ecc_volatile_correctable"], model["ecc_volatile_uncorrectable"] = _ecc_sums(errors.find("volatile"))
        model["ecc_aggregate_correctable"], model["ecc_aggregate_uncorrectable"] = _ecc_sums(errors.find("aggregate"))
    model["retired_pages_single_bit"] = _number(_txt(gpu, "retired_pages/multiple_single_bit_retirement/retired_count"))
    model["retired_pages_double_bit"] = _number(_txt(gpu, "retired_pages/double_bit_retirement/retired_count"))
    pending = _txt(gpu, "retired_pages/pending_retirement")
    if _na(pending) is None:
        pending = _txt(gpu, "retired_pages/pending_blacklist")
    model["retired_pages_pending"] = _yes(pending)
    model["remapped_rows_correctable"] = _number(_txt(gpu, "remapped_rows/remapped_row_corr"))
    model["remapped_rows_uncorrectable"] = _number(_txt(gpu, "remapped_rows/remapped_row_unc"))
    model["remapped_rows_pending"] = _yes(_txt(gpu, "remapped_rows/remapped_row_pending"))
    model["remapped_rows_failure"] = _yes(_txt(gpu, "remapped_rows/remapped_row_failure"))
    for section, prefix in (("clocks_event_reasons", "clocks_event_reason_"),
                            ("clocks_throttle_reasons", "clocks_throttle_reason_")):
        node = gpu.find(section)
        if node is None:
            continue
        for child in list(node):
            if child.tag.startswith(prefix):
                state = _yes(child.text)
                if state is not None:
                    model["clocks_event_reasons"][child.tag[len(prefix):]] = state
    link = "pci/pci_gpu_link_info/"
    model["pcie_gen_current"] = _number(_txt(gpu, link + "pcie_gen/current_link_gen"))
    model["pcie_gen_max"] = _number(_txt(gpu, link + "pcie_gen/max_link_gen"))
    model["pcie_width_current"] = _number(_txt(gpu, link + "link_widths/current_link_width"))
    model["pcie_width_max"] = _number(_txt(gpu, link + "link_widths/max_link_width"))
    model["performance_state"] = _na(_txt(gpu, "performance_state"))
    model["temperature_c"] = _number(_txt(gpu, "temperature/gpu_temp"))
    for section in ("gpu_power_readings", "power_readings"):
        if gpu.find(section) is None:
            continue
        draw = _number(_txt(gpu, section + "/instant_power_draw"))
        limit = _number(_txt(gpu, section + "/current_power_limit"))
        model["power_draw_w"] = draw if draw is not None else _number(_txt(gpu, section + "/power_draw"))
        model["power_limit_w"] = limit if limit is not None else _number(_txt(gpu, section + "/power_limit"))
        break
    model["mig_mode"] = _na(_txt(gpu, "mig_mode/current_mig"))
    model["fabric_state"] = _na(_txt(gpu, "fabric/state"))
    model["fabric_status"] = _na(_txt(gpu, "fabric/status"))
    model["compute_mode"] = _na(_txt(gpu, "compute_mode"))
    return model


# --------------------------------------------------------------------------- -q text

# --------------------------------------------------------------------------- --query-gpu CSV

# The fields the module asks for in the CSV fallback (order matters for noheader output).
QUERY_FIELDS = (
    "index", "name", "serial", "uuid", "pci.bus_id", "driver_version", "vbios_version", "memory.total",
    "ecc.mode.current", "ecc.mode.pending", "ecc.errors.corrected.volatile.total",
    "ecc.errors.uncorrected.volatile.total", "ecc.errors.corrected.aggregate.total",
    "ecc.errors.uncorrected.aggregate.total", "retired_pages.pending", "persistence_mode",
    "pcie.link.gen.current", "pcie.link.gen.max", "pcie.link.width.current", "pcie.link.width.max",
    "clocks_event_reasons.active", "pstate", "temperature.gpu", "power.draw", "power.limit", "mig.mode.current",
    "compute_mode",
)
_FIELD_TO_KEY = {
    "index": "index", "name": "name", "serial": "serial", "uuid": "uuid", "pci.bus_id": "bus_id",
    "vbios_version": "vbios_version", "memory.total": "memory_total_mib",
    "ecc.mode.current": "ecc_mode_current", "ecc.mode.pending": "ecc_mode_pending",
    "ecc.errors.corrected.volatile.total": "ecc_volatile_correctable",
    "ecc.errors.uncorrected.volatile.total": "ecc_volatile_uncorrectable",
    "ecc.errors.corrected.aggregate.total": "ecc_aggregate_correctable",
    "ecc.errors.uncorrected.aggregate.total": "ecc_aggregate_uncorrectable",
    "retired_pages.pending": "retired_pages_pending", "persistence_mode": "persistence_mode",
    "pcie.link.gen.current": "pcie_gen_current", "pcie.link.gen.max": "pcie_gen_max",
    "pcie.link.width.current": "pcie_width_current", "pcie.link.width.max": "pcie_width_max",
    "pstate": "performance_state", "temperature.gpu": "temperature_c", "power.draw": "power_draw_w",
    "power.limit": "power_limit_w", "mig.mode.current": "mig_mode", "compute_mode": "compute_mode",
}
_NUMERIC = set(("index", "memory_total_mib", "ecc_volatile_correctable", "ecc_volatile_uncorrectable",
                "ecc_aggregate_correctable", "ecc_aggregate_uncorrectable", "pcie_gen_current", "pcie_gen_max",
                "pcie_width_current", "pcie_width_max", "temperature_c", "power_draw_w", "power_limit_w"))
_HEADER_UNIT_RE = re.compile(r"\s*\[[^\]]*\]\s*$")


def parse_query_csv(text, fields=None):
    """``--query-gpu`` CSV -> list of {field: str or None}, one per GPU.

    With a header line (``--format=csv``) the field names come from it (units such as
    ``[MiB]`` stripped); without one (``noheader``) ``fields`` must list the queried fields.
    Cell units (``MiB``, `` %``, `` W``) stay in the strings; N/A cells become None.
    """
    if not isinstance(text, str):
        raise ParseError("nvidia-smi --query-gpu output is not text")
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        raise ParseError("nvidia-smi --query-gpu printed nothing")
    first = [cell.strip() for cell in lines[0].split(",")]
    header = None
    if all(re.match(r"^[a-z_][a-z0-9_.]*(\s*\[[^\]]*\])?$", cell) and not is_uint(cell) for cell in first) \
            and any("." in c or "_" in c or c in ("name", "index", "pstate", "serial", "uuid") for c in first):
        header = [_HEADER_UNIT_RE.sub("", cell) for cell in first]
        lines = lines[1:]
    names = header or list(fields or ())
    if not names:
        raise ParseError("nvidia-smi --query-gpu output has no header and no field list was given: %s"
                         % _quote(lines[0]))
    rows = []
    for line in lines:
        if line.lstrip().startswith(("NVIDIA-SMI", "No devices", "Field ")):
            raise ParseError("nvidia-smi --query-gpu failed: %s" % _quote(line))
        cells = [cell.strip() for cell in line.split(",")]
        if len(cells) != len(names):
            # A product name could hold a comma; nothing else does. Re-join extra cells into 'name'.
            if "name" in names and len(cells) > len(names):
                at = names.index("name")
                extra = len(cells) - len(names)
                cells = cells[:at] + [", ".join(cells[at:at + extra + 1])] + cells[at + extra + 1:]
            else:
                raise ParseError("nvidia-smi --query-gpu row has %d cells, expected %d (%s): %s"
                                 % (len(cells), len(names), ",".join(names), _quote(line)))
        rows.append(dict((name, _na(cell)) for name, cell in zip(names, cells)))
    return rows


def reasons_from_mask(value):
    """'0x0000000000000001' -> {'gpu_idle': True, 'sw_power_cap': False, ...}; None when unreadable."""
    value = _na(value)
    if value is None:
        return {}
    try:
        mask = int(value, 16) if value.lower().startswith("0x") else int(value)
    except ValueError:
        raise ParseError("clocks_event_reasons.active is not a bit mask: %s" % _quote(value))
    return dict((name, bool(mask & bit)) for bit, name in REASON_BITS)


def gpus_from_query(rows):
    """Rows of parse_query_csv -> {driver_version, cuda_version: None, gpus: [model]}."""
    out = {"driver_version": None, "cuda_version": None, "attached_gpus": len(rows), "gpus": []}
    for position, row in enumerate(rows):
        model = _empty_gpu(position)
        for field, value in row.items():
            key = _FIELD_TO_KEY.get(field)
            if field == "driver_version":
                out["driver_version"] = out["driver_version"] or value
            elif field in ("clocks_event_reasons.active", "clocks_throttle_reasons.active"):
                model["clocks_event_reasons"] = reasons_from_mask(value)
            elif key == "retired_pages_pending":
                model[key] = _yes(value)
            elif key in _NUMERIC:
                num = _number(value)
                if value is not None and num is None:
                    raise ParseError("nvidia-smi --query-gpu: %s is not a number: %s" % (field, _quote(value)))
                model[key] = num
            elif key:
                model[key] = value
        if model["index"] is None:
            model["index"] = position
        out["gpus"].append(model)
    return out


# --------------------------------------------------------------------------- topo -m

# Closest first: how NCCL and the topo legend rank PCIe paths.
LINK_RANK = {"X": 0, "NV": 1, "PIX": 2, "PXB": 3, "PHB": 4, "NODE": 5, "SYS": 6, "SOC": 6}
_CELL_RE = re.compile(r"^(X|NV\d+|PIX|PXB|PHB|NODE|SYS|SOC)$")
_AFFINITY_COLS = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")


def link_rank(cell):
    """Sort key of a topo cell: NV# (by fewer links last) < PIX < PXB < PHB < NODE < SYS."""
    if cell is None:
        return 99
    if cell.startswith("NV") and is_uint(cell[2:]):
        return 1 - int(cell[2:]) / 1000.0
    return LINK_RANK.get(cell, 99)


def _topo_header_at(lines):
    """Index of the header line: it starts with GPU0 (a matrix row would go on with X)."""
    for at, line in enumerate(lines):
        tokens = line.split()
        if tokens and tokens[0] == "GPU0" and (len(tokens) < 2 or tokens[1] != "X"):
            return at
    raise ParseError("nvidia-smi topo -m: no header line with GPU0 found; first line %s"
                     % _quote(lines[0] if lines else ""))


def _topo_columns(header):
    """(device columns, affinity columns) of the header line (cells split by tabs, else by runs of 2+ blanks)."""
    cells = [c.strip() for c in (header.split("\t") if "\t" in header else re.split(r"\s{2,}", header))]
    cells = [c for c in cells if c]
    devices = []
    extra = []
    for cell in cells:
        if cell in _AFFINITY_COLS or "Affinity" in cell or "NUMA" in cell:
            extra.append(cell)
        elif not extra:
            if not re.match(r"^[A-Za-z][\w.\-]*$", cell):
                raise ParseError("nvidia-smi topo -m: odd device column %s in header %s" % (_quote(cell), _quote(header)))
            devices.append(cell)
    if not devices or devices[0] != "GPU0":
        raise ParseError("nvidia-smi topo -m: header does not start with GPU0: %s" % _quote(header))
    if len(set(devices)) != len(devices):
        raise ParseError("nvidia-smi topo -m: duplicate device columns in header %s" % _quote(header))
    return devices, extra


class _TopoBody:
    """The lines after the header: matrix rows, then (after a blank line) the legend and the NIC Legend."""

    def __init__(self, devices, extra):
        self.devices = devices
        self.extra = extra
        self.matrix, self.affinity, self.legend = {}, {}, {}
        self.section = "matrix"   # then 'after' (blank line), 'legend', 'nic_legend'

    def feed(self, line):
        stripped = line.strip()
        if not stripped:
            if self.matrix and self.section == "matrix":
                self.section = "after"
        elif stripped.startswith("Legend"):
            self.section = "legend"
        elif stripped.startswith("NIC Legend"):
            self.section = "nic_legend"
        elif self.section == "nic_legend":
            match = re.match(r"^(NIC\d+)\s*:\s*(\S+)$", stripped)
            if not match:
                raise ParseError("nvidia-smi topo -m: unreadable NIC Legend line %s" % _quote(line))
            self.legend[match.group(1)] = match.group(2)
        elif self.section == "matrix":
            self._row(line, stripped.split())

    def _row(self, line, tokens):
        name = tokens[0]
        link_cells = tokens[1:1 + len(self.devices)]
        self._check_row(name, link_cells, line)
        self.matrix[name] = dict(zip(self.devices, link_cells))
        rest = tokens[1 + len(self.devices):]
        if rest:
            self.affinity[name] = dict(zip([_snake(c) for c in self.extra], [_na(v) for v in rest]))

    def _check_row(self, name, link_cells, line):
        if name not in self.devices:
            raise ParseError("nvidia-smi topo -m: row %s is not one of the header's devices: %s"
                             % (_quote(name), _quote(line)))
        if name in self.matrix:
            raise ParseError("nvidia-smi topo -m: row %s appears twice: %s" % (_quote(name), _quote(line)))
        if len(link_cells) != len(self.devices):
            raise ParseError("nvidia-smi topo -m: row %s has %d link cells, expected %d: %s"
                             % (name, len(link_cells), len(self.devices), _quote(line)))
        for cell in link_cells:
            if not _CELL_RE.match(cell):
                raise ParseError("nvidia-smi topo -m: unknown link cell %s in row %s" % (_quote(cell), _quote(line)))
        if link_cells[self.devices.index(name)] != "X":
            raise ParseError("nvidia-smi topo -m: row %s has no X on the diagonal: %s" % (name, _quote(line)))

    def result(self):
        devices, matrix, legend = self.devices, self.matrix, self.legend
        missing = [d for d in devices if d not in matrix]
        gpus = [d for d in devices if re.match(r"^GPU\d+$", d)]
        if any(d in missing for d in gpus):
            raise ParseError("nvidia-smi topo -m: no row for %s (truncated output?)" % ", ".join(d for d in missing if d in gpus))
        nics = [d for d in devices if d not in gpus]
        names = dict((nic, legend.get(nic, nic)) for nic in nics)
        if any(re.match(r"^NIC\d+$", nic) for nic in nics) and legend and set(legend) != set(n for n in nics if n.startswith("NIC")):
            raise ParseError("nvidia-smi topo -m: NIC Legend names %s but the matrix has %s"
                             % (sorted(legend), sorted(nics)))
        return {"devices": devices, "gpus": gpus, "nics": nics, "matrix": matrix, "affinity": self.affinity,
                "nic_legend": legend, "nic_names": names}


def parse_topo(text):
    """``nvidia-smi topo -m`` -> {devices, gpus, nics, matrix, affinity, nic_legend, nic_names}.

    Copes with tabs or expanded spaces, the ANSI underline codes nvidia-smi puts around
    the header when it writes to a terminal, old drivers naming NIC columns ``mlx5_0``
    and newer ones ``NIC0`` with a ``NIC Legend:`` section. ``matrix[row][col]`` is the
    cell text (``X``, ``NV18``, ``PIX``, ``SYS`` ...); ``nic_names`` maps NICn to mlx5_n.
    """
    if not isinstance(text, str) or not text.strip():
        raise ParseError("nvidia-smi topo -m printed nothing")
    lines = [_ANSI_RE.sub("", line).rstrip() for line in text.splitlines()]
    header_at = _topo_header_at(lines)
    body = _TopoBody(*_topo_columns(lines[header_at].strip()))
    for line in lines[header_at + 1:]:
        body.feed(line)
    return body.result()


_NVLINK_GPU_RE = re.compile(r"^GPU (\d+): (.+?)(?: \(UUID: ([^()]+)\))?$")   # [^()]: linear on repeats
_NVLINK_LINK_RE = re.compile(r"^Link (\d+): (.+)$")


def parse_nvlink_status(text):
    """``nvidia-smi nvlink -s`` -> {index: {name, uuid, links: {n: GB/s float or None when inactive}}}.

    A GPU without NVLink prints nothing (an empty output is an empty mapping). Inactive links
    print a word instead of a speed (``<inactive>``): their value is None and their text is kept
    in ``states``.
    """
    if not isinstance(text, str):
        raise ParseError("nvidia-smi nvlink -s output is not text")
    out = {}
    gpu = None
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        match = _NVLINK_GPU_RE.match(stripped)
        if match and not line[0].isspace():
            index = int(match.group(1))
            if index in out:
                raise ParseError("nvidia-smi nvlink -s lists GPU %d twice: %s" % (index, _quote(line)))
            gpu = out[index] = {"name": match.group(2), "uuid": match.group(3), "links": {}, "states": {}}
            continue
        match = _NVLINK_LINK_RE.match(stripped)
        if not match or gpu is None:
            raise ParseError("nvidia-smi nvlink -s: unreadable line %s" % _quote(line))
        link, value = int(match.group(1)), match.group(2).strip()
        if link in gpu["links"]:
            raise ParseError("nvidia-smi nvlink -s: link %d listed twice: %s" % (link, _quote(line)))
        speed = re.match(r"^(\d+(?:\.\d+)?) GB/s$", value)
        gpu["links"][link] = float(speed.group(1)) if speed else None
        if not speed:
            gpu["states"][link] = value
    return out


def _snake(name):
    return re.sub(r"[^a-z0-9]+", "_", name.lower()).strip("_")


def nvlink_peers(topo):
    """{GPUi: {GPUj: 'NV18'}} for GPU pairs joined by NVLink."""
    out = {}
    for gpu in topo["gpus"]:
        row = topo["matrix"].get(gpu, {})
        peers = dict((other, cell) for other, cell in row.items()
                     if other in topo["gpus"] and other != gpu and cell.startswith("NV"))
        out[gpu] = peers
    return out


def gpu_nic_affinity(topo):
    """{GPUi: {'nics': [closest NIC names], 'link': 'PIX'}}; empty when there are no NICs."""
    out = {}
    for gpu in topo["gpus"]:
        row = topo["matrix"].get(gpu, {})
        best, best_rank = [], None
        for nic in topo["nics"]:
            rank = link_rank(row.get(nic))
            if best_rank is None or rank < best_rank:
                best, best_rank = [nic], rank
            elif rank == best_rank:
                best.append(nic)
        if best:
            out[gpu] = {"nics": [topo["nic_names"].get(n, n) for n in best], "link": row.get(best[0])}
    return out
