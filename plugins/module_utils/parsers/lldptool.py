# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The LLDP neighbour's TLVs as open-lldp's ``lldptool`` prints them (private).

One format, two tools: ``lldptool -t -n -i <netdev>`` (lldpad, the neighbour TLVs received on an interface) and Huawei's
``hccn_tool -i N -lldp -g`` (an Ascend NPU's RoCE port) print each TLV's name on its own line (``Port ID TLV``) and its
values on the following lines, each indented with a tab (``\tIfname: 400GE1/1/20:2``); a value may run over several
lines, the lines after the first not indented (a System Description). open-lldp prints them in lldptool_cmds.c
``print_tlvs`` and each module's ``print_tlv`` (lldp_mand_clif.c: the TLV name, then ``\t`` and the value: ``MAC: ``,
``Ifname: ``, ``Local: ``, ``Interface Alias: ``, ``IPv4: `` ... for the chassis and port IDs). An empty output means
no neighbour was heard (lldpad answers a port without a received LLDPDU with no TLV). Output filtered by
``grep Ifname`` (only the value lines) is read too.

Pure, no I/O, Python 3.8; it never raises. ``parse_tlvs(text)`` returns the values read (strings as printed, None
when absent) and ``problems``: values that are not what the field holds.

Sources: tests/unit/fixtures/topology/README.md (lldptool: lldpad 1.1 against lldpd, a Huawei CE6855 and an Arista
EOS switch) and tests/unit/plugins/module_utils/parsers/fixtures/hccn_tool/PROVENANCE.md (hccn_tool).
"""

from __future__ import annotations

import re

from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers._common import (
    add_problem, is_uint, numbered_lines)

# ASCII digits only: "\d" matches any Unicode decimal digit, which int() reads (Arabic-Indic digits as a number)
IPV4_RE = re.compile(r"^([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})\.([0-9]{1,3})$")
# The key and the value each end on a non-blank character, so a run of blanks is read once (linear; a lazy
# group before "\s*" re-read the run from each of its characters).
KV_RE = re.compile(r"^\s*([A-Za-z](?:[A-Za-z0-9 _-]*?[A-Za-z0-9_-])??)\s*:\s*((?:.*\S)?)\s*$")
TLV_RE = re.compile(r"^(\S.*\bTLV)\s*$")


def is_ipv4(value):
    """True for a dotted-quad IPv4 address."""
    match = IPV4_RE.match(value or "")
    return bool(match) and all(int(part) <= 255 for part in match.groups())


def parse_tlvs(text):
    """The TLV text -> the neighbour: {"neighbor": bool, "chassis_id", "port_id", "port_id_subtype" (the key as
    printed: ``Ifname``, ``MAC``, ``Local`` ...), "port_description", "system_name", "system_description",
    "mgmt_ipv4", "max_frame_size", "tlvs": [names in order], "problems"}."""
    out = {"neighbor": False, "chassis_id": None, "port_id": None, "port_id_subtype": None, "port_description": None,
           "system_name": None, "system_description": None, "mgmt_ipv4": None, "max_frame_size": None, "tlvs": [],
           "problems": []}
    values = {}          # TLV name -> value lines (stripped), first occurrence of a name wins
    current = None
    loose = []           # value lines before any TLV name (output filtered by grep)
    for _number, line in numbered_lines(text):
        heading = TLV_RE.match(line)
        if heading and not line[0].isspace():
            current = heading.group(1)
            out["tlvs"].append(current)
            values.setdefault(current, [])
            continue
        (values[current] if current is not None else loose).append(line.strip())
    out["neighbor"] = bool(out["tlvs"]) or bool(loose)

    def first(name):
        got = values.get(name) or []
        return got[0] if got else None

    def keyed(lines, wanted=None):
        for line in lines:
            match = KV_RE.match(line)
            if match and (wanted is None or match.group(1).lower() == wanted):
                return match.group(1), match.group(2)
        return None, None

    chassis = first("Chassis ID TLV")
    if chassis is not None:
        key, value = keyed([chassis])
        out["chassis_id"] = value if key else chassis
    subtype, port = keyed(values.get("Port ID TLV") or [])
    if subtype is None:
        subtype, port = keyed(loose, "ifname")
    if subtype is None and first("Port ID TLV"):
        port = first("Port ID TLV")
    out["port_id"], out["port_id_subtype"] = port, subtype
    out["port_description"] = first("Port Description TLV")
    out["system_name"] = first("System Name TLV")
    description = [v for v in values.get("System Description TLV") or [] if v]
    out["system_description"] = " ".join(description) or None
    _key, ipv4 = keyed(values.get("Management Address TLV") or [], "ipv4")
    if ipv4 is not None and not is_ipv4(ipv4):
        add_problem(out, "Management Address TLV: IPv4 %r is not an IPv4 address" % ipv4[:100])
        ipv4 = None
    out["mgmt_ipv4"] = ipv4
    frame = first("Maximum Frame Size TLV")
    if frame is not None:
        if is_uint(frame):
            out["max_frame_size"] = int(frame)
        else:
            add_problem(out, "Maximum Frame Size TLV is not a number: %r" % frame[:100])
    if loose and out["tlvs"]:
        add_problem(out, "value line before the first TLV name: %r" % loose[0][:200])
    if out["neighbor"] and out["port_id"] is None:
        add_problem(out, "no Port ID in the LLDP output")
    return out
