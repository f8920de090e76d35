# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for Huawei ``hccn_tool`` outputs of one NPU device's RoCE port (private).

Pure, no I/O, Python 3.8; they never raise. Every function returns a dict with the values read (strings as printed,
None when absent) and ``problems``: lines that could not be read or values that are not what the field holds.

- ``parse_ip(text)``      ``hccn_tool -i N -ip -g``:      ``ipaddr:29.1.112.213`` / ``netmask:255.255.0.0``
- ``parse_link(text)``    ``hccn_tool -i N -link -g``:    ``link status: UP``
- ``parse_gateway(text)`` ``hccn_tool -i N -gateway -g``: ``default gateway:11.12.165.1, Iface:eth0``
- ``parse_lldp(text)``    ``hccn_tool -i N -lldp -g``:    the neighbour's TLVs as lldptool prints them, read by the
  one parser of that format, ``lldptool.parse_tlvs`` (also open-lldp's ``lldptool -t -n -i <netdev>``).

Layouts and their public sources: tests/unit/plugins/module_utils/parsers/fixtures/hccn_tool/PROVENANCE.md.
"""

from __future__ import annotations

import re

from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import lldptool
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers._common import add_problem, numbered_lines

# the lldptool layout is shared with open-lldp's lldptool: one parser (parsers/lldptool.py), also the key: value lines
KV_RE = lldptool.KV_RE
is_ipv4 = lldptool.is_ipv4
parse_lldp = lldptool.parse_tlvs

GATEWAY_RE = re.compile(r"^\s*default gateway\s*:\s*(?P<gw>[^,\s]+)(?:\s*,\s*Iface\s*:\s*(?P<iface>\S+))?\s*$", re.I)
LINK_RE = re.compile(r"^\s*link status\s*:\s*(?P<status>\S+)\s*$", re.I)


def parse_ip(text):
    """``-ip -g`` -> {"ipaddr", "netmask", "problems"}."""
    out = {"ipaddr": None, "netmask": None, "problems": []}
    for number, line in numbered_lines(text):
        match = KV_RE.match(line)
        key = match.group(1).lower() if match else None
        if key in ("ipaddr", "netmask"):
            value = match.group(2)
            if out[key] is not None:
                add_problem(out, "line %d: %s printed twice: %r" % (number, key, line.strip()[:200]))
            elif not is_ipv4(value):
                add_problem(out, "line %d: %s %r is not an IPv4 address" % (number, key, value[:100]))
            else:
                out[key] = value
        else:
            add_problem(out, "line %d: not an ipaddr/netmask line: %r" % (number, line.strip()[:200]))
    return out


def parse_link(text):
    """``-link -g`` -> {"link_status": "UP" | "DOWN" | other word as printed | None, "problems"}."""
    out = {"link_status": None, "problems": []}
    for number, line in numbered_lines(text):
        match = LINK_RE.match(line)
        if match and out["link_status"] is None:
            out["link_status"] = match.group("status").upper()
        else:
            add_problem(out, "line %d: not a single link status line: %r" % (number, line.strip()[:200]))
    return out


def parse_gateway(text):
    """``-gateway -g`` -> {"gateway", "gateway_iface", "problems"}."""
    out = {"gateway": None, "gateway_iface": None, "problems": []}
    for number, line in numbered_lines(text):
        match = GATEWAY_RE.match(line)
        if match and out["gateway"] is None and is_ipv4(match.group("gw")):
            out["gateway"], out["gateway_iface"] = match.group("gw"), match.group("iface")
        else:
            add_problem(out, "line %d: not a default gateway line: %r" % (number, line.strip()[:200]))
    return out
