# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which switch a host's port is cabled to, from the ``net.topology`` records (issue 25, switch attribution).

One ``net.topology`` record per host (target None) carries ``facts.ports``: port name -> ``{"switch": str,
"switch_port": str or None, "source": "lldp" | "declared" | "ibnetdiscover", "netdev": str or None,
"chassis_id": str or None}``. The port name is the RDMA device (``mlx5_0``, what the perftest records carry as
``target``) or a netdev name (then ``netdev`` equals it).

- A record whose status is ``skip`` or ``error`` says nothing (the probe could not learn the topology); ``pass``
  and ``warn`` (a port cabled against the declared plan is still cabled somewhere) do. A port entry without a
  switch name gives nothing.
- A host with several usable records (LLDP or the declared plan, and an ibnetdiscover import; runs merged into one
  report) has the ports of all of them; of a port in several, the entry of the latest ``started`` wins, and of
  records started at the same time the last one in the records, as the other analyses read a host's probe records
  (hardware.port_rates: the last one wins).

:func:`placement` answers "the switch of host H for a matrix on target T": the port whose name or netdev is T,
else unknown (never the switch the host's other ports share: that may be a management or storage switch); for
target None, the one switch all the ports given share, else unknown. :func:`fabric_ports` are a host's RDMA
ports (the screen's topology groups by them).

Controller-only (plugin_utils), no Ansible types.
"""

from __future__ import annotations

import collections
import re

CHECK = "net.topology"
USABLE = ("pass", "warn")
FIELDS = ("switch_port", "source", "netdev", "chassis_id")

# the switch of a host on a rail: ``port`` the host's port (None when the switch is the one all its ports share
# and they are several), ``switch_port`` the switch's port(s) it is cabled to (None when unknown)
Placement = collections.namedtuple("Placement", "switch port switch_port")


def _text(value):
    return value if isinstance(value, str) and value.strip() else None


def _ports(record):
    """{port: {"switch": ..., "switch_port": ..., ...}} of one usable record (entries without a switch dropped)."""
    ports = (record.get("facts") or {}).get("ports")
    out = {}
    for name, entry in (ports.items() if isinstance(ports, dict) else ()):
        if not _text(name) or not isinstance(entry, dict) or not _text(entry.get("switch")):
            continue
        out[name] = dict((key, _text(entry.get(key))) for key in FIELDS)
        out[name]["switch"] = entry["switch"].strip()
    return out


def read(records):
    """{host: {port: {"switch", "switch_port", "source", "netdev", "chassis_id"}}} from the ``net.topology``
    records: every usable record of a host adds its ports (a host has one from LLDP or the declared plan and one
    from an ibnetdiscover import); of a port in several, the latest record's entry wins (see the module
    docstring). Hosts without a port are absent."""
    usable = []
    for index, rec in enumerate(records or ()):
        if not isinstance(rec, dict) or rec.get("check") != CHECK or rec.get("status") not in USABLE:
            continue
        host = _text(rec.get("host"))
        if host is not None:
            usable.append(((str(rec.get("started") or ""), index), host, rec))
    out = {}
    for _key, host, rec in sorted(usable, key=lambda item: item[0]):
        ports = _ports(rec)
        if ports:
            out.setdefault(host, {}).update(ports)
    return out


def placement(ports, target):
    """The :data:`Placement` of a host (its ``ports`` from :func:`read`) for a matrix on ``target``: the port whose
    name or netdev is ``target``; for ``target`` None, the one switch all the host's fabric ports share
    (:func:`fabric_ports`). None when it is unknown (no port is the target; for None, no fabric port or fabric ports
    on several switches; no ports at all)."""
    if not ports:
        return None
    if target is not None:
        for name in sorted(ports):
            entry = ports[name]
            if target in (name, entry.get("netdev")):
                return Placement(entry["switch"], name, entry.get("switch_port"))
        # no port is the target: unknown. The switch the host's other ports share is not the target's: on an
        # InfiniBand host running lldpd the only neighbour LLDP sees is the management NIC's switch (IB ports send
        # no LLDP), which would be named for an mlx5_0 matrix
        return None
    ports = fabric_ports(ports)         # a matrix without a rail measured the fabric: never the management NIC's switch
    if not ports:
        return None
    switches = set(entry["switch"] for entry in ports.values())
    if len(switches) != 1:
        return None
    if len(ports) == 1:
        name, entry = next(iter(ports.items()))
        return Placement(entry["switch"], name, entry.get("switch_port"))
    known = sorted(set(e["switch_port"] for e in ports.values() if e.get("switch_port")), key=_port_key)
    return Placement(switches.pop(), None, ",".join(known) or None)


def fabric_ports(ports):
    """A host's fabric ports (``ports`` from :func:`read`): those that are an RDMA device - the port's name is not its
    own network interface (the module keys an interface of an RDMA device by the device, ``mlx5_0`` with netdev
    ``ens1f0``; an ibnetdiscover HCA or a declared device has no netdev). A port keyed by its interface name is
    no RDMA device (``eno1`` on the management switch, a storage NIC): it carries no RDMA collective, and a
    host without an RDMA port has no fabric port at all."""
    return dict((name, entry) for name, entry in (ports or {}).items() if entry.get("netdev") != name)


def placements(topology, hosts, target):
    """{host: Placement} of the ``hosts`` whose switch on ``target`` is known (``topology`` from :func:`read`)."""
    out = {}
    for host in hosts:
        where = placement(topology.get(host), target)
        if where is not None:
            out[host] = where
    return out


_NUMBERED = re.compile(r"^(.*?)(\d+)$")


def _port_key(name):
    found = _NUMBERED.match(name)
    return (found.group(1), int(found.group(2)), name) if found else (name, -1, name)


def port_ranges(names):
    """Switch port names, runs of consecutive numbers with the same prefix joined: ``Eth1/1-8``, ``swp3, swp5``."""
    runs = []
    for name in sorted(set(n for n in names if n), key=_port_key):
        prefix, number, _name = _port_key(name)
        last = runs[-1] if runs else None
        if last and number >= 0 and last[0] == prefix and last[2] == number - 1:
            last[2] = number
        else:
            runs.append([prefix, number, number, name])
    return ", ".join(run[3] if run[1] == run[2] else "%s%d-%d" % (run[0], run[1], run[2]) for run in runs)
