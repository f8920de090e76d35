# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers of what a fabric's cabling is learnt from (private): LLDP neighbours, ibnetdiscover, a declared file.

Pure, no I/O, Python 3.8; they never raise. Each returns a dict with what was read and ``error`` (None, or why the
text cannot be read at all) and ``problems`` (parts that could not be read; the rest is kept).

- ``parse_lldpctl_json(text)``: lldpd's ``lldpctl -f json`` (= ``lldpcli -f json show neighbors details``). One
  neighbour: ``{"lldp": {"interface": {"eth0": {...}}}}``; several: ``"interface": [{"eth0": {...}}, {"eth1": ...}]``
  (lldpd's JSON writer folds a one-element list into the element). No neighbour: ``{"lldp": {}}`` (or ``{}``).
  A chassis with a system name is ``{"<name>": {"id": {"type", "value"}, ...}}``, without one ``{"id": ...}``.
  The switch is the system name, else the chassis ID. The switch port is the port ID when its subtype is
  ``ifname`` or ``local`` (what switches send: Ethernet1/1, swp3), except a ``local`` ID that is a number where a
  port description exists (Junos sends its interface index, 159, and the interface name, xe-0/1/0.0, as the
  description), else the port description (lldpd's default ``mac`` port ID puts the interface name there), else
  the port ID as sent. lldpd prints the subtypes ifname, ifalias, local, mac, ip and unhandled
  (src/lib/atoms/port.c).
- ``parse_lldptool(text)``: one interface's neighbour as open-lldp's ``lldptool -t -n -i <netdev>`` prints it, and
  Huawei's ``hccn_tool -i N -lldp -g`` (the same layout, read by ``lldptool.parse_tlvs``). The switch and the switch
  port follow the rule of ``parse_lldpctl_json``; the port ID subtype is lldptool's word in lldpd's spelling
  (``Ifname`` -> ``ifname``, ``Interface Alias`` -> ``ifalias``, ``IPv4``/``IPv6`` -> ``ip``). An empty output is
  no neighbour.
- ``parse_ibnetdiscover(text)``: infiniband-diags' topology file. Each ``Switch`` block's port lines toward a CA
  (``[3]\t"H-0002c9..."[1](2c9...)\t\t# "node01 mlx5_0" lid 5 4xEDR``) give a link: switch (its node description,
  or ``S-<guid>`` when it has none; a description several switches share gets `` [S-<guid>]`` appended so that
  distinct switches keep distinct names), switch port (with ``switch_ext_port``, its external number of ``-g``'s
  ``[ext N]``, or None), the CA's node description, and the host and HCA read from it (``host_and_hca``). Port
  lines toward switches and routers (with the remote's ``[ext N]`` under ``-g``) are read and give no link.
- ``declared_ports(value, where)``: a user's declared ports of one host ``{port: {switch, switch_port}}``.
- ``declared_fleet(value, where)``: a whole declared topology ``{host: {port: {switch, switch_port}}}``.
"""

from __future__ import annotations

import json
import re

from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import lldptool
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers._common import is_uint

MAX_PROBLEMS = 10
# A switch port line of ibnetdiscover (rdma-core infiniband-diags/ibnetdiscover.c out_switch_port): "[%d]" the local
# port, "[ext %d]" its external (front-panel) number when grouping (-g) and it has one, "\t" the remote node type and
# GUID ('"H-<guid>"'), "[%d]" the remote port, "[ext %d]" the REMOTE port's external number (-g), "(%x) " the remote
# port GUID (CAs and routers), then "\t\t# "<remote node description>" lid N <width><speed>".
SWITCH_RE = re.compile(r'^Switch\s+(?P<ports>\d+)\s+"S-(?P<guid>[0-9A-Fa-f]+)"\s*#\s*"(?P<desc>.*?)"(?:\s+(?P<rest>.*))?$')
PORT_RE = re.compile(r'^\[(?P<port>\d+)\](?:\[ext (?P<ext>\d+)\])?\s*"(?P<type>[HSR])-(?P<guid>[0-9A-Fa-f]+)"\[(?P<rport>\d+)\]'
                     r'(?:\[ext (?P<rext>\d+)\])?\s*(?:\((?P<pguid>[0-9A-Fa-fx]+)\))?\s*#\s*"(?P<desc>.*?)"(?:\s+lid\s+(?P<lid>\d+))?')
NODE_RE = re.compile(r"^(Switch|Ca|Rt)\s")
# "<host> <hca>": two words, the second an RDMA device name (mlx5_0, HCA-1, hfi1_0, irdma0, bnxt_re1, qib0)
HCA_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_-]*[0-9]$")
SUBTYPES_AS_NAME = ("ifname", "local")


def _problem(out, message):
    if len(out["problems"]) < MAX_PROBLEMS:
        out["problems"].append(message)


def _text(text):
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return text if isinstance(text, str) else None


def _str(value):
    """A JSON leaf as a string (None for anything else)."""
    return value if isinstance(value, str) else None


# ---------------------------------------------------------------- lldpctl -f json

def _snippet(value):
    """The start of a JSON value as text, for a problem (a value nested too deep to print is said so)."""
    try:
        return json.dumps(value, default=str)[:200]
    except (ValueError, RecursionError):
        return "(a value nested too deep to print)"


def _entries(interfaces):
    """[(interface name, body)] of lldpd's "interface" value (a mapping, or a list of one-key mappings)."""
    items = interfaces if isinstance(interfaces, list) else [interfaces]
    found = []
    for item in items:
        if not isinstance(item, dict):
            found.append((None, item))
        elif isinstance(item.get("name"), str) and "chassis" in item:     # -f json of lldpd 0.7: the name inside
            found.append((item["name"], item))
        else:
            found.extend(item.items())
    return found


def _chassis(chassis):
    """(system name or None, chassis ID or None) of a neighbour's chassis."""
    if isinstance(chassis, list):           # several chassis TLVs: the first
        chassis = chassis[0] if chassis else None
    if not isinstance(chassis, dict):
        return None, None
    if "id" in chassis or len(chassis) != 1:
        body, name = chassis, _str(chassis.get("name"))
    else:
        name, body = next(iter(chassis.items()))
    ident = body.get("id") if isinstance(body, dict) else None
    return name or None, _str(ident.get("value")) if isinstance(ident, dict) else _str(ident)


def _port(port):
    """(switch port, port ID, port ID subtype) of a neighbour's port."""
    if not isinstance(port, dict):
        return None, None, None
    ident = port.get("id")
    subtype = _str(ident.get("type")) if isinstance(ident, dict) else None
    value = _str(ident.get("value")) if isinstance(ident, dict) else _str(ident)
    return port_name(subtype, value, _str(port.get("descr"))), value, subtype


def port_name(subtype, value, descr):
    """The switch port of a neighbour's port ID (``value`` of lldpd's ``subtype``) and port description."""
    if subtype == "local" and value and is_uint(value.strip()) and descr:
        # a locally assigned number (Junos sends its interface index, its port description the interface name)
        return descr
    if subtype in SUBTYPES_AS_NAME and value:
        return value
    return descr or value


def parse_lldpctl_json(text):
    """``lldpctl -f json`` -> {"neighbors": {netdev: {"switch", "switch_port", "chassis_id", "port_id",
    "port_id_subtype", "port_descr"}}, "error", "problems"}."""
    out = {"neighbors": {}, "error": None, "problems": []}
    text = _text(text)
    if text is None or not text.strip():
        out["error"] = "lldpctl printed nothing (expected JSON)"
        return out
    try:
        data = json.loads(text)
    except ValueError as exc:
        out["error"] = "lldpctl's output is not JSON: %s" % exc
        return out
    except RecursionError:
        out["error"] = "lldpctl's output is JSON nested deeper than can be read: %s" % text.strip()[:200]
        return out
    if not isinstance(data, dict) or not isinstance(data.get("lldp", {}), (dict, list)):
        out["error"] = "lldpctl's JSON has no lldp object: %s" % text.strip()[:200]
        return out
    lldp = data.get("lldp") or {}
    if isinstance(lldp, list):              # json0-like nesting: a list of one object
        lldp = lldp[0] if lldp and isinstance(lldp[0], dict) else {}
    for name, body in _entries(lldp.get("interface") or []):
        if not isinstance(name, str) or not isinstance(body, dict):
            _problem(out, "an interface entry that is not {name: {...}}: %s" % _snippet(body))
            continue
        switch, chassis_id = _chassis(body.get("chassis"))
        switch_port, port_id, subtype = _port(body.get("port"))
        if not (switch or chassis_id):
            _problem(out, "%s: a neighbour without a chassis name or ID" % name)
            continue
        if name in out["neighbors"]:
            _problem(out, "%s: more than one LLDP neighbour (%s and %s); the first is kept"
                     % (name, out["neighbors"][name]["switch"], switch or chassis_id))
            continue
        out["neighbors"][name] = {"switch": switch or chassis_id, "switch_port": switch_port, "chassis_id": chassis_id,
                                  "port_id": port_id, "port_id_subtype": subtype,
                                  "port_descr": _str(body.get("port", {}).get("descr")) if isinstance(
                                      body.get("port"), dict) else None}
    return out


# ---------------------------------------------------------------- lldptool (lldpad) and hccn_tool -lldp

# lldptool's word for a port ID subtype (lldp_mand_clif.c) in lldpd's spelling (src/lib/atoms/port.c)
LLDPTOOL_SUBTYPES = {"ifname": "ifname", "local": "local", "mac": "mac", "interface alias": "ifalias", "ipv4": "ip",
                     "ipv6": "ip"}


def parse_lldptool(text):
    """``lldptool -t -n -i <netdev>`` or ``hccn_tool -i N -lldp -g`` -> {"neighbor": None (none heard) or {"switch",
    "switch_port", "chassis_id", "port_id", "port_id_subtype", "port_descr"}, "error", "problems"}."""
    tlvs = lldptool.parse_tlvs(text)
    out = {"neighbor": None, "error": None, "problems": list(tlvs["problems"])}
    if not tlvs["neighbor"]:
        return out
    switch = tlvs["system_name"] or tlvs["chassis_id"]
    subtype = tlvs["port_id_subtype"]
    subtype = LLDPTOOL_SUBTYPES.get(subtype.lower(), subtype.lower()) if subtype else None
    switch_port = port_name(subtype, tlvs["port_id"], tlvs["port_description"])
    if not switch:
        out["error"] = "a neighbour without a System Name or Chassis ID TLV (TLVs: %s)" % (", ".join(tlvs["tlvs"]) or "none")
    elif not switch_port:
        out["error"] = "a neighbour (%s) without a Port ID or Port Description TLV" % switch
    else:
        out["neighbor"] = {"switch": switch, "switch_port": switch_port, "chassis_id": tlvs["chassis_id"],
                           "port_id": tlvs["port_id"], "port_id_subtype": subtype, "port_descr": tlvs["port_description"]}
    return out


# ---------------------------------------------------------------- ibnetdiscover

def host_and_hca(description):
    """(host, hca) of a CA node description "<host> <hca>" (``node01 mlx5_0``, ``node24 HCA-1``); (None, None)
    when it is not two words ending in an RDMA device name (a CA left with its firmware's description, such as
    ``MT25408 ConnectX Mellanox Technologies``, or a bare ``atlas133``: no HCA name to match a port with)."""
    words = (description or "").split()
    if len(words) == 2 and HCA_RE.match(words[1]):
        return words[0], words[1]
    return None, None


def _switch_names(switches):
    """guid -> the switch's name: its description, with [S-guid] when another switch has the same one."""
    seen = {}
    for guid, desc in switches.items():
        seen.setdefault(desc, []).append(guid)
    names = {}
    for guid, desc in switches.items():
        if not desc:
            names[guid] = "S-%s" % guid
        elif len(seen[desc]) > 1:
            names[guid] = "%s [S-%s]" % (desc, guid)
        else:
            names[guid] = desc
    return names


def parse_ibnetdiscover(text):
    """ibnetdiscover's topology -> {"switches": {guid: name}, "links": [{"switch", "switch_guid", "switch_port",
    "ca_guid", "ca_port", "description", "host", "hca"}], "unnamed": count of CA links without "<host> <hca>",
    "error", "problems"}."""
    out = {"switches": {}, "links": [], "unnamed": 0, "error": None, "problems": []}
    text = _text(text)
    if text is None or not text.strip():
        out["error"] = "the ibnetdiscover output is empty"
        return out
    descriptions, raw_links, current, nodes = {}, [], None, 0
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if NODE_RE.match(line):
            nodes += 1
            match = SWITCH_RE.match(line)
            current = match.group("guid").lower() if match else None
            if match:
                descriptions[current] = match.group("desc").strip()
            elif line.startswith("Switch"):
                _problem(out, "line %d: a Switch line that cannot be read: %r" % (number, line[:200]))
            continue
        if current is None or not line.startswith("["):
            continue
        match = PORT_RE.match(line)
        if not match:
            _problem(out, "line %d: a switch port line that cannot be read: %r" % (number, line[:200]))
        elif match.group("type") == "H":
            raw_links.append((current, int(match.group("port")), match.group("ext"), match.group("guid").lower(),
                              int(match.group("rport")), match.group("desc")))
    if not nodes:
        out["error"] = "no Switch or Ca line: not an ibnetdiscover topology (%r)" % text.strip()[:200]
        return out
    names = _switch_names(descriptions)
    out["switches"] = names
    for guid, port, ext, ca_guid, ca_port, desc in raw_links:
        host, hca = host_and_hca(desc)
        out["unnamed"] += host is None
        out["links"].append({"switch": names[guid], "switch_guid": guid, "switch_port": str(port), "switch_ext_port": ext,
                             "ca_guid": ca_guid, "ca_port": ca_port, "description": desc, "host": host, "hca": hca})
    return out


def ibnetdiscover_hosts(parsed):
    """{host: {hca: link}} of the links whose CA description names a host and an HCA. A CA with several ports cabled
    (a dual-port mlx4 device: one RDMA device, ``ca_port`` 1 and 2) keeps its lowest port's link under the HCA name
    (``mlx4_0``, what the RDMA tools name the device by; its port 1) and each other one under ``<hca>/<port>``
    (``mlx4_0/2``), whatever the order of the switch blocks; of links to one CA port, the first is kept."""
    named = [link for link in parsed.get("links") or [] if link.get("host")]
    lowest = {}
    for link in named:
        key = (link["host"], link["hca"])
        lowest[key] = min(lowest.get(key, link["ca_port"]), link["ca_port"])
    hosts = {}
    for link in named:
        ports = hosts.setdefault(link["host"], {})
        bare = link["ca_port"] == lowest[(link["host"], link["hca"])]
        ports.setdefault(link["hca"] if bare else "%s/%d" % (link["hca"], link["ca_port"]), link)
    return hosts


# ---------------------------------------------------------------- declared topology

def _switch_port(value):
    if value is None or (isinstance(value, str) and value.strip()):
        return True, value.strip() if isinstance(value, str) else None
    if isinstance(value, int) and not isinstance(value, bool):
        return True, str(value)
    return False, None


def _named(value, where, what, holds, errors):
    """Yields the keys of a declared mapping whose names are non-empty strings, sorted; an error in ``errors`` for each
    other key as the iteration reaches it, and one for a value that is not a mapping (None: no keys, no error)."""
    if value is None:
        return
    if not isinstance(value, dict):
        errors.append("%s must be a mapping of %s name to %s, got %s" % (where, what, holds, type(value).__name__))
        return
    for name in sorted(value, key=str):
        if not isinstance(name, str) or not name.strip():
            errors.append("%s: a %s name must be a non-empty string, got %r" % (where, what, name))
        else:
            yield name


def declared_ports(value, where="declared"):
    """(ports, errors) of one host's declared ports: {port: {"switch": str, "switch_port": str or None}}.

    ``switch`` is a non-empty string; ``switch_port`` a non-empty string, an integer (read as its decimal string)
    or absent/null; no other key. Every error says where (``where.<port>.<key>``)."""
    ports, errors = {}, []
    for port in _named(value, where, "port", "{switch, switch_port}", errors):
        entry, at = value[port], "%s.%s" % (where, port)
        if not isinstance(entry, dict):
            errors.append("%s must be a mapping {switch, switch_port}, got %s" % (at, type(entry).__name__))
            continue
        unknown = sorted(str(key) for key in entry if key not in ("switch", "switch_port"))
        if unknown:
            errors.append("%s: unknown key%s %s (allowed: switch, switch_port)"
                          % (at, "s" if len(unknown) > 1 else "", ", ".join(unknown)))
        switch = entry.get("switch")
        if not isinstance(switch, str) or not switch.strip():
            errors.append("%s.switch must be a non-empty string, got %r" % (at, switch))
        good, switch_port = _switch_port(entry.get("switch_port"))
        if not good:
            errors.append("%s.switch_port must be a non-empty string or an integer, got %r" % (at, entry.get("switch_port")))
        if not errors:
            ports[port.strip()] = {"switch": switch.strip(), "switch_port": switch_port}
    return (ports, []) if not errors else ({}, errors)


def declared_fleet(value, where="topology"):
    """(hosts, errors) of a declared topology {host: {port: {switch, switch_port}}}."""
    hosts, errors = {}, []
    for host in _named(value, where, "host", "its ports", errors):
        ports, bad = declared_ports(value[host], "%s.%s" % (where, host))
        errors.extend(bad)
        hosts[host] = ports
    return (hosts, []) if not errors else ({}, errors)
