# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for Linux system files and small probe outputs (private; pure, no I/O).

os-release, /proc/cpuinfo, /proc/meminfo, /proc/cmdline (IOMMU/ACS/hugepage hints),
/proc/modules, cpulist strings (NUMA from sysfs), the scaling governor set,
``ldconfig -p`` (libnccl), the env_probe Python probe's JSON line and ``pip freeze``.
Every function raises only errors.ParseError (message quotes the offending line).
"""

from __future__ import annotations

import hashlib
import json
import re

from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import ParseError
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers._common import is_uint, quote as _quote

PROBE_MARKER = "AIFABRIC_PROBE_JSON:"


def _text(text, what):
    if not isinstance(text, str):
        raise ParseError("%s is not text" % what)
    return text


def parse_os_release(text):
    """/etc/os-release -> {KEY: value} (quotes removed)."""
    out = {}
    for line in _text(text, "os-release").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = re.match(r"^([A-Z][A-Z0-9_]*)=(.*)$", line)
        if not match:
            raise ParseError("os-release: unreadable line %s" % _quote(line))
        value = match.group(2).strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        out[match.group(1)] = value
    if not out:
        raise ParseError("os-release is empty")
    return out


def _cpuinfo_blocks(text):
    """/proc/cpuinfo -> its blank-line separated blocks, each {key: value}."""
    blocks, current = [], {}
    for line in _text(text, "cpuinfo").splitlines():
        if not line.strip():
            if current:
                blocks.append(current)
                current = {}
            continue
        if ":" not in line:
            raise ParseError("cpuinfo: line without ':' %s" % _quote(line))
        key, value = line.split(":", 1)
        current[key.strip()] = value.strip()
    if current:
        blocks.append(current)
    return blocks


def _cpu_entries(blocks):
    """The blocks that describe one logical CPU each (a numbered 'processor'); ParseError when there are none."""
    cpus = [b for b in blocks if "processor" in b]
    if not cpus:
        raise ParseError("cpuinfo: no 'processor' entries")
    # old arm kernels put a 'Processor : <model>' line in a header block: not a CPU entry
    cpus = [c for c in cpus if is_uint(c["processor"])]
    if not cpus:
        raise ParseError("cpuinfo: no numbered 'processor' entries")
    return cpus


def _cpu_model(first, blocks):
    """The first CPU's 'model name', 'Model' or 'cpu', else a header block's 'Hardware' or 'Processor' (old arm)."""
    return first.get("model name") or first.get("Model") or first.get("cpu") or \
        next((b.get("Hardware") or b.get("Processor") for b in blocks if b.get("Hardware") or b.get("Processor")), None)


def parse_cpuinfo(text):
    """/proc/cpuinfo -> {model, logical_cpus, sockets, cores_per_socket, vendor, flags_of_interest}."""
    blocks = _cpuinfo_blocks(text)
    cpus = _cpu_entries(blocks)
    first = cpus[0]
    sockets = set(c.get("physical id") for c in cpus if c.get("physical id") is not None)
    cores = first.get("cpu cores")
    flags = set((first.get("flags") or first.get("Features") or "").split())
    return {
        "model": _cpu_model(first, blocks),
        "vendor": first.get("vendor_id") or first.get("CPU implementer"),
        "logical_cpus": len(cpus),
        "sockets": len(sockets) or None,
        "cores_per_socket": int(cores) if cores and is_uint(cores) else None,
        "hypervisor": "hypervisor" in flags,
    }


def parse_meminfo(text):
    """/proc/meminfo -> {Key: bytes or count}; 'kB' values are converted to bytes."""
    out = {}
    for line in _text(text, "meminfo").splitlines():
        if not line.strip():
            continue
        match = re.match(r"^([\w()]+):\s+(\d+)(?:\s+(kB))?\s*$", line)
        if not match:
            raise ParseError("meminfo: unreadable line %s" % _quote(line))
        value = int(match.group(2))
        out[match.group(1)] = value * 1024 if match.group(3) else value
    if "MemTotal" not in out:
        raise ParseError("meminfo: no MemTotal line")
    return out


# kernel parameters that matter to GPU/RDMA acceptance (IOMMU, ACS, hugepages, isolation)
CMDLINE_KEYS = (
    "intel_iommu", "amd_iommu", "iommu", "iommu.passthrough", "iommu.strict", "pcie_acs_override",
    "pci", "hugepages", "hugepagesz", "default_hugepagesz", "transparent_hugepage", "isolcpus",
    "nohz_full", "numa_balancing", "pcie_aspm", "processor.max_cstate", "intel_idle.max_cstate", "config_acs",
)


def parse_cmdline(text):
    """/proc/cmdline -> {params: {key: value or True}, hints: {...}} for CMDLINE_KEYS.

    Stops at a bare ``--`` (what follows belongs to init). Repeated keys keep the last value,
    except ``pci=`` options that the kernel merges (joined by commas).
    """
    params = {}
    for word in _text(text, "cmdline").split():
        if word == "--":
            break
        key, sep, value = word.partition("=")
        if key not in CMDLINE_KEYS:
            continue
        value = value if sep else True
        if key == "pci" and key in params and isinstance(params[key], str) and isinstance(value, str):
            value = params[key] + "," + value
        params[key] = value
    pci = params.get("pci") if isinstance(params.get("pci"), str) else ""
    passthrough = params.get("iommu") == "pt" or str(params.get("iommu.passthrough")) in ("1", "y", "on")
    return {
        "params": params,
        "iommu_passthrough": passthrough,
        "iommu_requested": params.get("intel_iommu") in ("on", "sm_on") or params.get("amd_iommu") in ("on", "force_isolation")
        or params.get("iommu") in ("pt", "force", "on") or None,
        "iommu_off": params.get("intel_iommu") == "off" or params.get("amd_iommu") == "off" or params.get("iommu") == "off",
        "acs_override": params.get("pcie_acs_override"),
        "acs_config": params.get("config_acs"),
        "pci_options": [o for o in pci.split(",") if o],
    }


def parse_modules(text):
    """/proc/modules -> {name: {size, refcount, state}}."""
    out = {}
    for line in _text(text, "/proc/modules").splitlines():
        if not line.strip():
            continue
        parts = line.split()
        if len(parts) < 5 or not is_uint(parts[1]):
            raise ParseError("/proc/modules: unreadable line %s" % _quote(line))
        out[parts[0]] = {"size": int(parts[1]), "refcount": int(parts[2]) if is_uint(parts[2]) else None,
                         "state": parts[4]}
    return out


def parse_cpulist(text):
    """'0-15,32-47' -> number of CPUs (32); '' -> 0."""
    text = _text(text, "cpulist").strip()
    if not text:
        return 0
    total = 0
    for part in text.split(","):
        match = re.match(r"^(\d+)(?:-(\d+))?(?::\d+/\d+)?$", part.strip())
        if not match:
            raise ParseError("cpulist: unreadable range %s in %s" % (_quote(part), _quote(text)))
        low = int(match.group(1))
        high = int(match.group(2)) if match.group(2) else low
        if high < low:
            raise ParseError("cpulist: reversed range %s" % _quote(part))
        total += high - low + 1
    return total


def _bracketed(text):
    """The text between the first '[' and the ']' after it that enclose something, or None: what a regex search
    for '[', one or more characters other than ']', ']' finds, without re-reading the text from every '[' (linear)."""
    start = text.find("[")
    while start != -1:
        end = text.find("]", start + 1)
        if end == -1:
            return None
        if end > start + 1:
            return text[start + 1:end]
        start = text.find("[", start + 1)
    return None


def parse_selected(text):
    """'always [madvise] never' -> 'madvise' (sysfs multiple-choice files)."""
    selected = _bracketed(_text(text, "sysfs choice"))
    if selected is not None:
        return selected
    value = text.strip()
    if not value or " " in value:
        raise ParseError("sysfs choice has no [selected] value: %s" % _quote(text))
    return value


def summarize_values(values):
    """['performance'] * 62 + ['powersave'] * 2 -> ('mixed', {'performance': 62, 'powersave': 2});
    a single value -> (value, {value: n}); nothing -> (None, {})."""
    counts = {}
    for value in values:
        value = (value or "").strip()
        if value:
            counts[value] = counts.get(value, 0) + 1
    if not counts:
        return None, {}
    if len(counts) == 1:
        return list(counts)[0], counts
    return "mixed", counts


_LDCONFIG_RE = re.compile(r"^\s*(\S+)\s+\(([^)]*)\)\s+=>\s+(\S+)\s*$")


def parse_ldconfig(text, prefix="libnccl.so"):
    """``ldconfig -p`` -> [{name, arch, path}] for libraries whose name starts with ``prefix``."""
    out = []
    lines = _text(text, "ldconfig -p").splitlines()
    for line in lines:
        if not line.strip() or re.match(r"^\d+ libs found in cache", line.strip()) or line.startswith("Cache generated"):
            continue
        match = _LDCONFIG_RE.match(line)
        if not match:
            raise ParseError("ldconfig -p: unreadable line %s" % _quote(line))
        if match.group(1).startswith(prefix):
            out.append({"name": match.group(1), "arch": match.group(2), "path": match.group(3)})
    return out


def nccl_version_from_filename(name):
    """'libnccl.so.2.28.3' -> '2.28.3'; 'libnccl.so.2' -> None (only the soname major)."""
    match = re.match(r"^libnccl\.so\.(\d+\.\d+\.\d+)$", name or "")
    return match.group(1) if match else None


def parse_probe(text):
    """The JSON line the env_probe Python probe prints after PROBE_MARKER (the last one wins).

    Anything else on stdout (warnings a package prints at import) is ignored.
    """
    found = None
    for line in _text(text, "python probe output").splitlines():
        if line.startswith(PROBE_MARKER):
            found = line[len(PROBE_MARKER):]
    if found is None:
        raise ParseError("python probe printed no %s line; output starts %s"
                         % (PROBE_MARKER, _quote(text.strip()[:120])))
    try:
        data = json.loads(found)
    except ValueError as exc:
        raise ParseError("python probe JSON is unreadable (%s): %s" % (exc, _quote(found)))
    if not isinstance(data, dict) or not isinstance(data.get("python_version"), str) \
            or not isinstance(data.get("packages", {}), dict):
        raise ParseError("python probe JSON lacks python_version/packages: %s" % _quote(found))
    return data


def parse_pip_freeze(text):
    """``pip freeze`` -> (sorted normalised requirement lines, sha256 hex of them joined by newlines).

    Lines are stripped, comments and blank lines dropped, names lower-cased before '=='
    so that the digest is stable across pip versions' spelling of the same set.
    """
    lines = []
    for line in _text(text, "pip freeze").splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("WARNING") or line.startswith("ERROR"):
            raise ParseError("pip freeze printed a diagnostic line: %s" % _quote(line))
        name, sep, rest = line.partition("==")
        lines.append((name.lower().replace("_", "-") + sep + rest) if sep else line)
    lines.sort()
    digest = hashlib.sha256("\n".join(lines).encode("utf-8")).hexdigest()
    return lines, digest
