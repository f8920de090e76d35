# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers for RDMA device information (private; pure functions, no I/O).

- ``build_hcas(files)``: the HCA/port/GID model from sysfs file contents
  (what env_probe reads under /sys/class/infiniband; see its docstring for the keys).
- Text parsers of the tools' real captures: ``parse_show_gids``, ``parse_ibdev2netdev`` (incl. -v),
  ``parse_ibstat``. No module calls them: the unit tests write the sysfs trees ``build_hcas`` and the env probe
  read from these captures and cross-check ``build_hcas`` against what the tools printed on the same host.

Every function raises only errors.ParseError (message quotes the offending line).
"""

from __future__ import annotations

import re

from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import ParseError
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers._common import is_uint, quote as _quote

_ZERO_GID = "0000:0000:0000:0000:0000:0000:0000:0000"
_GID_RE = re.compile(r"^[0-9a-fA-F]{4}(:[0-9a-fA-F]{4}){7}$")
_RATE_RE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*Gb/sec(?:\s*\(([^)]*)\))?\s*$")
_STATE_RE = re.compile(r"^\s*(\d+)\s*:\s*(\S+)\s*$")


def gid_ipv4(gid):
    """The IPv4 address of an IPv4-mapped GID (::ffff:a.b.c.d), else None."""
    if not gid:
        return None
    gid = gid.strip().lower()
    if gid.startswith("::ffff:") and gid.count(".") == 3:
        return gid[len("::ffff:"):]
    parts = gid.split(":")
    if len(parts) == 8 and all(p in ("0000", "0") for p in parts[:5]) and parts[5] == "ffff":
        try:
            high, low = int(parts[6], 16), int(parts[7], 16)
        except ValueError:
            return None
        return "%d.%d.%d.%d" % (high >> 8, high & 0xFF, low >> 8, low & 0xFF)
    return None


def gid_type(text):
    """sysfs 'IB/RoCE v1' | 'RoCE v2' | show_gids 'v1'/'v2' -> 'RoCE v1'|'RoCE v2'|'IB'|None."""
    if text is None:
        return None
    low = text.strip().lower()
    if low in ("v2", "roce v2", "roce_v2"):
        return "RoCE v2"
    if low in ("v1", "ib/roce v1", "roce v1", "roce_v1"):
        return "RoCE v1"
    if low == "ib":
        return "IB"
    return text.strip() or None


def parse_state(text):
    """'4: ACTIVE' -> ('ACTIVE', 4); 'PORT_ACTIVE (4)' -> ('ACTIVE', 4); 'LinkUp' -> ('LinkUp', None)."""
    if text is None:
        return None, None
    text = text.strip()
    match = _STATE_RE.match(text)
    if match:
        return match.group(2), int(match.group(1))
    match = re.match(r"^(?:PORT_)?(\S+?)\s*\((\d+)\)$", text)
    if match:
        return match.group(1), int(match.group(2))
    return (text or None), None


def parse_rate(text):
    """'400 Gb/sec (4X NDR)' -> (400.0, '4X NDR'); unreadable -> (None, None)."""
    if text is None:
        return None, None
    match = _RATE_RE.match(text)
    if not match:
        return None, None
    return float(match.group(1)), match.group(2)


# --------------------------------------------------------------------------- sysfs


def build_hcas(files):
    """HCA/port/GID model from sysfs contents.

    ``files`` maps paths relative to /sys/class/infiniband to the file's text, or to
    None when the file exists but could not be read (reading gid_attrs/types/N of an
    empty GID entry fails with EINVAL: that is normal and tolerated). Keys used::

        <hca>/{node_guid,sys_image_guid,fw_ver,board_id,hca_type,node_desc,node_type}
        <hca>/device/{device,vendor,subsystem_device,subsystem_vendor}
        <hca>/device@            basename of the device symlink's target (the PCI address)
        <hca>/ports/<n>/{state,phys_state,rate,link_layer,lid,sm_lid}
        <hca>/ports/<n>/gids/<i>, .../gid_attrs/types/<i>, .../gid_attrs/ndev/<i>
        <hca>/device/net/<ifname>/{dev_port,dev_id,operstate}

    Returns a list of HCA dicts sorted by name, each with ``ports`` sorted by number.
    """
    if not isinstance(files, dict):
        raise ParseError("sysfs contents must be a mapping of path -> text, got %s" % type(files).__name__)
    hcas = {}
    for path, value in files.items():
        if not isinstance(path, str) or (value is not None and not isinstance(value, str)):
            raise ParseError("sysfs entry %s has a non-text value" % _quote(str(path)))
        parts = path.split("/")
        if not parts[0] or not re.match(r"^[\w.\-]+$", parts[0]):
            raise ParseError("sysfs path %s does not start with an RDMA device name" % _quote(path))
        hca = hcas.setdefault(parts[0], {"name": parts[0], "_ports": {}, "_net": {}})
        text = None if value is None else value.strip()
        if len(parts) == 2:
            hca[parts[1]] = text
        elif len(parts) == 3 and parts[1] == "device":
            hca["device/" + parts[2]] = text
        elif len(parts) >= 4 and parts[1] == "ports":
            port = hca["_ports"].setdefault(parts[2], {"_gids": {}, "_types": {}, "_ndev": {}})
            if len(parts) == 4:
                port[parts[3]] = text
            elif len(parts) == 5 and parts[3] == "gids":
                port["_gids"][parts[4]] = text
            elif len(parts) == 6 and parts[3] == "gid_attrs" and parts[4] in ("types", "ndev"):
                port["_" + parts[4]][parts[5]] = text
        elif len(parts) == 5 and parts[1] == "device" and parts[2] == "net":
            hca["_net"].setdefault(parts[3], {})[parts[4]] = text
    return [_hca(hcas[name]) for name in sorted(hcas)]


def _hex_id(value):
    if value is None:
        return None
    value = value.strip().lower()
    return value[2:] if value.startswith("0x") else (value or None)


def _hca(raw):
    hca = {
        "name": raw["name"],
        "node_guid": raw.get("node_guid"),
        "sys_image_guid": raw.get("sys_image_guid"),
        "fw_ver": raw.get("fw_ver"),
        "board_id": raw.get("board_id"),
        "hca_type": raw.get("hca_type"),
        "node_desc": raw.get("node_desc"),
        "node_type": raw.get("node_type"),
        "vendor_id": _hex_id(raw.get("device/vendor")),
        "device_id": _hex_id(raw.get("device/device")),
        "subsystem_vendor_id": _hex_id(raw.get("device/subsystem_vendor")),
        "subsystem_device_id": _hex_id(raw.get("device/subsystem_device")),
        "pci_address": raw.get("device@"),
        "ports": [],
    }
    # netdevs of the PCI function, per port (ibdev2netdev's rule: dev_port, else dev_id, + 1)
    net_by_port = {}
    for ifname in sorted(raw["_net"]):
        attrs = raw["_net"][ifname]
        port_no = None
        for key, base in (("dev_port", 10), ("dev_id", 16)):
            value = attrs.get(key)
            if value:
                try:
                    port_no = int(value, base) + 1
                except ValueError:
                    raise ParseError("%s/device/net/%s/%s is not a number: %s"
                                     % (raw["name"], ifname, key, _quote(value)))
                if key == "dev_id" or port_no > 1:
                    break
        net_by_port.setdefault(port_no or 1, []).append({"name": ifname, "operstate": attrs.get("operstate")})
    for number in sorted(raw["_ports"], key=lambda n: int(n) if is_uint(n) else 0):
        if not is_uint(number):
            raise ParseError("%s/ports/%s: port is not a number" % (raw["name"], number))
        hca["ports"].append(_port(raw["name"], int(number), raw["_ports"][number], net_by_port.get(int(number), [])))
    return hca


def _port(hca, number, raw, netdevs):
    state, state_code = parse_state(raw.get("state"))
    phys, phys_code = parse_state(raw.get("phys_state"))
    rate, rate_text = parse_rate(raw.get("rate"))
    gids = []
    for index in sorted(raw["_gids"], key=lambda i: int(i) if is_uint(i) else -1):
        if not is_uint(index):
            raise ParseError("%s/ports/%d/gids/%s: GID index is not a number" % (hca, number, index))
        gid = raw["_gids"][index]
        if gid is None or gid.lower() == _ZERO_GID or not gid:
            continue
        if not _GID_RE.match(gid):
            raise ParseError("%s/ports/%d/gids/%s is not a GID: %s" % (hca, number, index, _quote(gid)))
        kind = gid_type(raw["_types"].get(index))
        if raw.get("link_layer") == "InfiniBand" and kind == "RoCE v1":
            kind = "IB"  # sysfs says 'IB/RoCE v1' for both; the link layer decides
        gids.append({
            "index": int(index),
            "gid": gid.lower(),
            "type": kind,
            "ipv4": gid_ipv4(gid),
            "netdev": raw["_ndev"].get(index) or None,
        })
    ndevs = sorted(set(g["netdev"] for g in gids if g["netdev"]))
    names = set(n["name"] for n in netdevs)
    netdevs = netdevs + [{"name": name, "operstate": None} for name in ndevs if name not in names]
    return {
        "port": number,
        "state": state, "state_code": state_code,
        "phys_state": phys, "phys_state_code": phys_code,
        "rate_gbit_s": rate, "rate": rate_text,
        "link_layer": raw.get("link_layer"),
        "lid": raw.get("lid"), "sm_lid": raw.get("sm_lid"),
        "netdevs": netdevs,
        "gids": gids,
    }


# --------------------------------------------------------------------------- ibv_devinfo

# --------------------------------------------------------------------------- show_gids

_IPV4_RE = re.compile(r"^\d{1,3}(\.\d{1,3}){3}$")


def parse_show_gids(text):
    """``show_gids`` -> list of {dev, port, index, gid, ipv4, type, netdev}.

    Tabs or spaces; the IPv4 and DEV cells may be empty; indices need not start at 0.
    When the ``n_gids_found=N`` footer is present it must match the row count.
    """
    if not isinstance(text, str):
        raise ParseError("show_gids output is not text")
    rows, footer = [], None
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("DEV") or stripped.startswith("---"):
            continue
        match = re.match(r"^n_gids_found=(\d+)$", stripped)
        if match:
            footer = int(match.group(1))
            continue
        tokens = stripped.split()
        if len(tokens) < 5:
            raise ParseError("show_gids: short row %s" % _quote(line))
        dev, port, index, gid = tokens[:4]
        rest = tokens[4:]
        if not is_uint(port) or not is_uint(index) or not _GID_RE.match(gid):
            raise ParseError("show_gids: unreadable row %s" % _quote(line))
        ipv4 = rest.pop(0) if rest and _IPV4_RE.match(rest[0]) else None
        if not rest or rest[0] not in ("v1", "v2"):
            raise ParseError("show_gids: no v1/v2 GID version in row %s" % _quote(line))
        ver = rest.pop(0)
        if len(rest) > 1:
            raise ParseError("show_gids: extra cells in row %s" % _quote(line))
        rows.append({"dev": dev, "port": int(port), "index": int(index), "gid": gid.lower(),
                     "ipv4": ipv4, "type": gid_type(ver), "netdev": rest[0] if rest else None})
    if footer is not None and footer != len(rows):
        raise ParseError("show_gids: footer n_gids_found=%d but %d rows were read" % (footer, len(rows)))
    if not rows and text.strip() and footer is None:
        raise ParseError("show_gids: no GID rows in %s" % _quote(text.strip().splitlines()[0]))
    return rows


# --------------------------------------------------------------------------- ibdev2netdev

_I2N_RE = re.compile(
    r"^(?:(?P<pci>[0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2}\.[0-7])\s+)?(?P<dev>\S+)\s+"
    r"(?:\((?P<ids>[^)]*)\)\s*(?P<board>.*?)\s*fw\s+(?P<fw>\S+)\s+)?"
    r"port\s+(?P<port>\d+)\s+(?:\((?P<pstate>[^)]*)\)\s+)?==>\s+(?P<netdev>\S+)\s+\((?P<state>[^)]*)\)\s*$")


def parse_ibdev2netdev(text):
    """``ibdev2netdev [-v]`` -> list of {dev, port, netdev, netdev_state, [pci, part, psid, board, fw, port_state]}."""
    if not isinstance(text, str):
        raise ParseError("ibdev2netdev output is not text")
    rows = []
    for line in text.splitlines():
        if not line.strip():
            continue
        # runs of blanks read as one: _I2N_RE's variable parts backtrack over every blank of a long run (a line
        # with long runs took minutes), one blank each keeps the match linear
        match = _I2N_RE.match(" ".join(line.split()))
        if not match:
            raise ParseError("ibdev2netdev: unreadable line %s" % _quote(line))
        row = {"dev": match.group("dev"), "port": int(match.group("port")),
               "netdev": match.group("netdev"), "netdev_state": match.group("state").strip()}
        if match.group("pci"):
            row["pci"] = match.group("pci")
        if match.group("ids") is not None:
            ids = [part.strip() for part in match.group("ids").split(" - ")]
            row["part"] = ids[0] or None
            row["psid"] = ids[1] if len(ids) > 1 and ids[1] not in ("", "NA") else None
            row["board"] = match.group("board") or None
            row["fw"] = match.group("fw")
        if match.group("pstate") is not None:
            row["port_state"] = match.group("pstate").strip()
        rows.append(row)
    return rows


# --------------------------------------------------------------------------- ibstat

_BORDER = "\u2502\u2503|"


def parse_ibstat(text):
    """``ibstat`` -> list of {ca, <fields>, ports: [{port, <fields>}]}.

    Strips terminal-pane borders and right padding (copied captures); lines before
    the first ``CA '...'`` (a shell prompt) are ignored. Empty output -> [].
    """
    if not isinstance(text, str):
        raise ParseError("ibstat output is not text")
    cas = []
    ca = port = None
    for raw in text.splitlines():
        line = raw.lstrip(_BORDER).rstrip()
        if not line.strip():
            continue
        match = re.match(r"^CA '([^']+)'$", line.strip())
        if match:
            ca = {"ca": match.group(1), "ports": []}
            cas.append(ca)
            port = None
            continue
        if ca is None:
            continue
        match = re.match(r"^Port (\d+):$", line.strip())
        if match:
            port = {"port": int(match.group(1))}
            ca["ports"].append(port)
            continue
        match = re.match(r"^(\s*)([A-Za-z][A-Za-z ]*?):\s*(.*)$", line)
        if not match:
            raise ParseError("ibstat: unreadable line %s" % _quote(raw))
        indent = len(match.group(1).expandtabs(8))
        key = re.sub(r"\s+", "_", match.group(2).strip().lower())
        if port is not None and indent > 8:
            port[key] = match.group(3).strip()
        else:
            port = None
            ca[key] = match.group(3).strip()
    for item in cas:
        count = item.get("number_of_ports")
        if count and is_uint(count) and len(item["ports"]) > int(count):
            raise ParseError("ibstat: CA %s lists %d ports but says Number of ports: %s"
                             % (item["ca"], len(item["ports"]), count))
    return cas
