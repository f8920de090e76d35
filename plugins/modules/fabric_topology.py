#!/usr/bin/python
# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: fabric_topology
short_description: Learn which switch and switch port each fabric port of a host is cabled to
version_added: 1.1.0
author: aifabric.acceptance contributors (@aifabric)
description:
  - Makes one C(net.topology) record per host whose C(facts.ports) maps each port of the host (the RDMA device name,
    for example C(mlx5_0), when the network interface belongs to one, else the interface name) to the switch and
    switch port it is cabled to, and where that was learnt (C(source) C(lldp), C(declared) or C(ibnetdiscover)).
    The fleet analysis reads these records to name a switch whose links are bad (docs/topology.md).
  - "LLDP (O(lldp)): runs C(lldpctl -f json) (lldpd) on the host. The switch is the neighbour's system name (else
    its chassis ID); the switch port is the neighbour's port ID when it is an interface name or a local name,
    else its port description (lldpd's default MAC port ID puts the interface name there; a locally assigned
    port ID that is a number, the interface index Junos sends, gives way to the port description too). Where
    C(lldpctl) is not installed, or its C(lldpd) is not running, and open-lldp's C(lldptool) is (C(lldpad)), it runs
    C(lldptool -t -n -i <interface>) (the neighbour's TLVs) for each network interface with a device (a NIC port; not
    C(lo), a bridge, a veth or a bond) and each interface of an RDMA device, and reads the switch and switch port by
    the same rules; an interface C(lldpad) runs no agent on (C(Device not found or inactive)) has no neighbour. A host
    with neither tool gives nothing from this source and the record says so."
  - "Ascend NPUs (also O(lldp)): on a host where C(npu-smi info) lists NPUs, runs C(hccn_tool -i <device> -lldp -g)
    for each (the device id and C(hccn_tool) as C(env_probe) finds them: PATH, then the Ascend driver's
    C(/usr/local/Ascend/driver/tools/hccn_tool)); the NPU's RoCE port is the port C(npu<device>) (C(npu0) ...,
    C(netdev) null: the port is on the NPU, not a host interface), a fabric port. C(hccn_tool) prints the TLVs as
    C(lldptool) does and one parser reads both."
  - "Declared (O(declared)): the ports the user says this host has, C({port: {switch, switch_port}}). A port both
    declared and seen by LLDP on another switch or switch port is a miscabling: the record is C(warn) and lists it
    in C(facts.mismatches) (what LLDP sees is what the port reports)."
  - "InfiniBand (O(from_output)): a saved C(ibnetdiscover) output, read once for the hosts of O(hosts) (run it with
    C(run_once)). A CA is matched to a host by its node description C(<host> <hca>) (C(node01 mlx5_0),
    C(node24 HCA-1)); the inventory name or its first label must equal C(<host>). A host the file does not name
    gets a C(skip) record. A CA whose description is not C(<host> <hca>) (a firmware default such as
    C(MT25408 ConnectX Mellanox Technologies)) names no host and is only counted."
  - "The record: C(pass) when at least one port is known, C(skip) (with the reason) when no source gave anything
    (no LLDP tool installed, or installed with no C(lldpd)/C(lldpad) running, and nothing declared),
    C(warn) for a miscabling, C(error) when a tool failed or printed what cannot be read (its output kept in
    C(raw)) or O(declared) is not the right shape. C(skip) never changes a host's verdict."
  - It only reads (sysfs, C(lldpctl), C(lldptool), C(npu-smi), C(hccn_tool), a file), so it runs the same in check mode.
extends_documentation_fragment:
  - aifabric.acceptance._attributes
  - aifabric.acceptance._attributes.results
attributes:
  check_mode:
    support: full
    details: It only reads; check mode runs it in full.
  diff_mode:
    support: none
  idempotent:
    support: full
    details: It changes nothing.
options:
  lldp:
    description:
      - Read the LLDP neighbours of the host's interfaces with C(lldpctl -f json) (lldpd), else C(lldptool -t -n -i
        <interface>) (lldpad), where installed; and of its Ascend NPUs' RoCE ports with C(hccn_tool -i <device> -lldp -g).
      - Not used with O(from_output).
    type: bool
    default: true
  declared:
    description:
      - "This host's declared ports, C({port: {switch, switch_port}}). The port is an RDMA device name or a network
        interface name (an interface of an RDMA device is read as that device; an interface of none, a management NIC,
        stays an interface, which the fleet analyses never take for a fabric port). C(switch) is a non-empty string;
        C(switch_port) a string, an integer or absent."
      - Anything else (not a mapping, a missing C(switch), an unknown key) makes the record C(error) and says where.
      - Not used with O(from_output).
    type: raw
    default: {}
  from_output:
    description:
      - Import mode, a saved C(ibnetdiscover) output (a file on the host the module runs on) to make the records of
        O(hosts) from.
    type: path
  hosts:
    description:
      - With O(from_output), the hosts to make records for (the play's hosts); each gets one record.
    type: list
    elements: str
    default: []
  timeout_s:
    description:
      - Seconds the commands of a host (C(lldpctl), C(lldptool) per interface, C(npu-smi), C(hccn_tool) per NPU) may
        run together; each gets what is left and is killed at it.
      - Must be 1 or more.
    type: int
    default: 30
"""

EXAMPLES = r"""
- name: Learn the topology from LLDP and what the inventory declares
  aifabric.acceptance.fabric_topology:
    declared:
      mlx5_0: {switch: leaf-01, switch_port: Ethernet1/1}
      mlx5_1: {switch: leaf-02, switch_port: Ethernet1/1}

- name: Read a saved ibnetdiscover output for every host of the play
  aifabric.acceptance.fabric_topology:
    from_output: /var/tmp/ibnetdiscover.txt
    hosts: "{{ ansible_play_hosts_all }}"
  run_once: true
  delegate_to: localhost
"""

RETURN = r"""
results:
  description:
    - The C(net.topology) records (docs/results.md), one per host; C(facts.ports) maps a port to C(switch),
      C(switch_port), C(source), C(netdev) and C(chassis_id); C(facts.mismatches) lists the miscabled ports
      (C(port), C(declared), C(observed)); C(metrics.ports_count); C(params.lldp_tools) the LLDP tools read
      (C(lldpctl), C(lldptool), C(hccn_tool)).
    - Without O(from_output) the record's C(host) is empty (the callback fills in the inventory host); with it,
      each record names its host.
  returned: always
  type: list
  elements: dict
counts:
  description: Records per status.
  returned: always
  type: dict
"""

import math
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aifabric.acceptance.plugins.module_utils import argspec, env_probe, imports, modmain, results, runner
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import ToolTimeout
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import npu_smi, topology

CHECK = "net.topology"
IB_CLASS = "/sys/class/infiniband"
NET_CLASS = "/sys/class/net"
RANGES = {"timeout_s": argspec.POSITIVE}
SPEC = dict(
    lldp=dict(type="bool", default=True),
    declared=dict(type="raw", default={}),
    from_output=dict(type="path"),
    hosts=dict(type="list", elements="str", default=[]),
    timeout_s=dict(type="int", default=30),
)


def rdma_netdevs(host):
    """{netdev: RDMA device} from sysfs (<IB_CLASS>/<dev>/device/net/<netdev>), read through ``host``'s root."""
    found = {}
    for dev in host.listdir(IB_CLASS) or []:
        for netdev in host.listdir("%s/%s/device/net" % (IB_CLASS, dev)) or []:
            found.setdefault(netdev, dev)
    return found


def _same(declared, observed):
    """Case-insensitive equality; a switch name without a domain equals the first label of one with it."""
    if declared is None or observed is None:
        return True
    one, two = str(declared).lower(), str(observed).lower()
    if one == two:
        return True
    return ("." in one) != ("." in two) and one.split(".", maxsplit=1)[0] == two.split(".", maxsplit=1)[0]


class Budget(object):
    """``timeout_s`` for all the commands of one host together: each gets what is left (at least 1 s), so that the
    role's task timeout (one lldpctl's, timeout_s and its kill-after) holds however many interfaces and NPUs it has."""

    def __init__(self, timeout_s):
        self.timeout_s = timeout_s
        self.deadline = time.monotonic() + timeout_s

    def left(self):
        left = self.deadline - time.monotonic()
        if left <= 0:
            raise ToolTimeout("the LLDP commands of this host ran past timeout_s (%d s) together" % self.timeout_s)
        return max(1, int(math.ceil(left)))


# what lldpctl 1.0.16 prints when no lldpd answers on its socket (tests/unit/fixtures/topology/lldpctl-*-no-daemon.txt)
NO_DAEMON = "unable to connect to socket"
# what open-lldp's lldptool prints when no lldpad answers (lldptool.c main: perror("Failed to connect to lldpad -
# clif_open"), exit status 255; tests/unit/fixtures/topology/lldpad-1.1-lldptool-t-n-i-eth0-no-daemon.txt)
LLDPAD_DOWN = "Failed to connect to lldpad"
# lldpad's answer for an interface it runs no LLDP agent on (lldptool_cmds.c print_status: cmd_device_not_found,
# cmd_agent_not_found; exit status 1): that interface has no neighbour to read, nothing failed
LLDPAD_NOT_MANAGED = ("Device not found or inactive", "Agent instance for device not found")


def _port(seen, netdev, source="lldp"):
    return {"switch": seen["switch"], "switch_port": seen["switch_port"], "source": source, "netdev": netdev,
            "chassis_id": seen["chassis_id"]}


def _last_line(text):
    return (text.strip().splitlines() or [""])[-1][:300]


def lldpctl_ports(host, lldpctl, budget):
    """(ports, note, error, raw) from lldpd: ``lldpctl -f json``. note says why there is nothing; error why it failed."""
    argv = [lldpctl, "-f", "json"]
    try:
        run = host.run(argv, budget.left())
    except ToolTimeout as exc:
        return {}, None, str(exc), None
    said = (run.stderr or run.stdout).strip()[-300:]
    if run.rc != 0 and NO_DAEMON in said:
        # installed, its daemon not running: the topology cannot be learned here, nothing is wrong with the host
        return {}, "lldpd is not running (lldpctl: %s)" % said.splitlines()[-1], None, None
    if run.rc != 0:
        return {}, None, "lldpctl -f json exited with %d: %s" % (run.rc, said), run.output
    parsed = topology.parse_lldpctl_json(run.stdout)
    if parsed["error"]:
        return {}, None, parsed["error"], run.output
    names = rdma_netdevs(host)
    ports = dict((names.get(netdev, netdev), _port(seen, netdev)) for netdev, seen in sorted(parsed["neighbors"].items()))
    return ports, None if ports else "lldpctl saw no LLDP neighbour", None, None


def physical_netdevs(host, names):
    """The interfaces lldptool is asked about: each of /sys/class/net with a device (a NIC port, not a bridge, veth,
    bond or lo: LLDP is per cable), and every interface of an RDMA device (``names``)."""
    found = [netdev for netdev in host.listdir(NET_CLASS) or [] if host.exists("%s/%s/device" % (NET_CLASS, netdev))]
    return sorted(set(found) | set(names))


def lldptool_ports(host, lldptool, budget):
    """(ports, note, error, raw) from lldpad: ``lldptool -t -n -i <netdev>`` (the neighbour's TLVs) per interface."""
    names = rdma_netdevs(host)
    netdevs = physical_netdevs(host, names)
    ports, unmanaged = {}, []
    for netdev in netdevs:
        command = "lldptool -t -n -i %s" % netdev
        try:
            run = host.run([lldptool, "-t", "-n", "-i", netdev], budget.left())
        except ToolTimeout as exc:
            return {}, None, str(exc), None
        if run.rc != 0 and LLDPAD_DOWN in run.output:
            return {}, "lldpad is not running (lldptool: %s)" % _last_line(run.output), None, None
        if run.rc != 0 and any(word in run.output for word in LLDPAD_NOT_MANAGED):
            unmanaged.append(netdev)
            continue
        if run.rc != 0:
            return {}, None, "%s exited with %d: %s" % (command, run.rc, _last_line(run.output)), run.output
        parsed = topology.parse_lldptool(run.stdout)
        if parsed["error"]:
            return {}, None, "%s: %s" % (command, parsed["error"]), run.output
        if parsed["neighbor"]:
            ports[names.get(netdev, netdev)] = _port(parsed["neighbor"], netdev)
    if ports or not netdevs:
        return ports, None if ports else "no network interface with a device to ask lldptool about", None, None
    why = " (lldpad manages no LLDP agent on %s)" % ", ".join(unmanaged) if unmanaged else ""
    return ports, "lldptool saw no LLDP neighbour on %s%s" % (", ".join(netdevs), why), None, None


def lldp_ports(host, budget):
    """(ports, note, error, raw, tool): the LLDP source of the host's interfaces - lldpd's lldpctl where installed and
    its daemon runs, else open-lldp's lldptool (lldpad). note says why there is nothing; error why it failed."""
    lldpctl, lldptool = host.which("lldpctl"), host.which("lldptool")
    note = None
    if lldpctl:
        ports, note, error, raw = lldpctl_ports(host, lldpctl, budget)
        if not lldptool or ports or error or not note.startswith("lldpd is not running"):
            return ports, note, error, raw, "lldpctl"
    if lldptool:
        ports, also, error, raw = lldptool_ports(host, lldptool, budget)
        return ports, "; ".join(n for n in (note, also) if n) or None, error, raw, "lldptool"
    return {}, "neither lldpctl (lldpd) nor lldptool (lldpad) is installed (no LLDP source)", None, None, None


def npu_ports(host, budget):
    """(ports, note, error, raw) of the host's Ascend NPUs: ``hccn_tool -i <device> -lldp -g`` for each NPU
    ``npu-smi info`` lists (the device ids and hccn_tool as env_probe finds them), port ``npu<device>``; nothing to
    say (all None) on a host without npu-smi."""
    smi = host.which("npu-smi")
    if not smi:
        return {}, None, None, None
    try:
        run = host.run([smi, "info"], budget.left())
        if run.rc != 0:
            return {}, None, "npu-smi info exited with %d: %s" % (run.rc, _last_line(run.output)), run.output
        devices = [env_probe.npu_device_id(npu) for npu in npu_smi.parse_info(run.stdout)["npus"]]
        tool = env_probe.hccn_tool_path(host)
        if not devices or not tool:
            return {}, "npu-smi info lists no NPU" if not devices else "hccn_tool not found (PATH, %s): no NPU LLDP source" % (
                ", ".join(env_probe.HCCN_TOOL_PATHS)), None, None
        ports = {}
        for device in devices:
            command = "hccn_tool -i %s -lldp -g" % device
            run = host.run([tool, "-i", str(device), "-lldp", "-g"], budget.left())
            if run.rc != 0:
                return {}, None, "%s exited with %d: %s" % (command, run.rc, _last_line(run.output)), run.output
            parsed = topology.parse_lldptool(run.stdout)
            if parsed["error"]:
                return {}, None, "%s: %s" % (command, parsed["error"]), run.output
            if parsed["neighbor"]:
                ports["npu%s" % device] = _port(parsed["neighbor"], None)
    except ToolTimeout as exc:
        return {}, None, str(exc), None
    return ports, None if ports else "hccn_tool saw no LLDP neighbour on NPU device(s) %s" % ", ".join(map(str, devices)), None, None


def observed_ports(host, timeout_s):
    """(ports, note, error, raw, tools) of every LLDP source of the host: its interfaces' and its NPUs'."""
    budget = Budget(timeout_s)
    ports, note, error, raw, tool = lldp_ports(host, budget)
    npu, npu_note, npu_error, npu_raw = npu_ports(host, budget)
    ports.update(npu)
    tools = [name for name, used in ((tool, tool), ("hccn_tool", npu or npu_note or npu_error)) if used]
    return ports, "; ".join(n for n in (note, npu_note) if n) or None, error or npu_error, raw if error else npu_raw, tools


def declared_to_ports(declared, names, interfaces=()):
    """The declared ports keyed like LLDP's: a netdev of an RDMA device is read as the device; a network interface
    of the host (``interfaces``, /sys/class/net) that is no RDMA device's keeps its name and is its own netdev (a
    management NIC: the fleet analyses read only RDMA ports as fabric ports, plugin_utils/topology.fabric_ports)."""
    netdevs = dict((dev, netdev) for netdev, dev in names.items())
    ports = {}
    for port, entry in declared.items():
        name = names.get(port, port)
        if port in names:
            netdev = port
        else:
            netdev = netdevs.get(port) or (port if port in interfaces else None)
        ports[name] = {"switch": entry["switch"], "switch_port": entry["switch_port"], "source": "declared",
                       "netdev": netdev, "chassis_id": None}
    return ports


def merge(declared, observed):
    """(ports, mismatches): LLDP's ports over the declared ones; a declared port LLDP sees elsewhere is a mismatch."""
    ports, mismatches = dict(declared), []
    for port, seen in observed.items():
        want = declared.get(port)
        if want and not (_same(want["switch"], seen["switch"]) and _same(want["switch_port"], seen["switch_port"])):
            mismatches.append({"port": port, "declared": {"switch": want["switch"], "switch_port": want["switch_port"]},
                               "observed": {"switch": seen["switch"], "switch_port": seen["switch_port"]}})
        ports[port] = seen
    return ports, mismatches


def host_record(host, params, started):
    """The one record of this host (LLDP and declared)."""
    declared, errors = topology.declared_ports(params["declared"], "declared")
    if errors:
        return results.error(CHECK, "declared topology: %s" % "; ".join(errors), started=started)
    began = time.monotonic()
    observed, note, failure, raw, tools = ({}, "LLDP not read (lldp: false)", None, None, [])
    if params["lldp"]:
        observed, note, failure, raw, tools = observed_ports(host, params["timeout_s"])
    interfaces = set(host.listdir(NET_CLASS) or []) if declared else set()
    ports, mismatches = merge(declared_to_ports(declared, rdma_netdevs(host), interfaces), observed)
    kwargs = dict(facts={"ports": ports, "mismatches": mismatches}, metrics={"ports_count": len(ports)},
                  params={"lldp": params["lldp"], "declared_ports": sorted(declared), "lldp_tools": tools},
                  started=started, duration_s=time.monotonic() - began, tool={"name": tools[0]} if tools else {})
    if failure:
        return results.make(CHECK, "error", reason=failure, raw=raw, **kwargs)
    if mismatches:
        return results.make(CHECK, "warn", reason="; ".join(
            "%s is cabled to %s port %s, declared %s port %s" % (m["port"], m["observed"]["switch"],
                                                                 m["observed"]["switch_port"], m["declared"]["switch"],
                                                                 m["declared"]["switch_port"]) for m in mismatches), **kwargs)
    if not ports:
        return results.make(CHECK, "skip", reason="no topology known: %s and nothing declared for this host" % note, **kwargs)
    return results.make(CHECK, "pass", **kwargs)


def _short(name):
    return name.split(".")[0].lower()


def ib_records(text, hosts, started):
    """One record per host of ``hosts`` from an ibnetdiscover output."""
    parsed = topology.parse_ibnetdiscover(text)
    if parsed["error"]:
        return [results.error(CHECK, "ibnetdiscover output: %s" % parsed["error"], raw=text, host=name, started=started)
                for name in hosts]
    by_host = topology.ibnetdiscover_hosts(parsed)
    short = {}
    for name in by_host:
        short.setdefault(_short(name), name)
    records = []
    params = {"source": "ibnetdiscover", "switches_count": len(parsed["switches"]), "unnamed_links": parsed["unnamed"]}
    for name in hosts:
        found = by_host.get(name) or by_host.get(short.get(_short(name), ""))
        if not found:
            records.append(results.skip(CHECK, "the ibnetdiscover output names no CA of %s (no node description "
                                        "'%s <hca>'; %d CA link(s) without a host name)" % (name, _short(name), parsed["unnamed"]),
                                        host=name, params=params, started=started))
            continue
        ports = dict((hca, {"switch": link["switch"], "switch_port": link["switch_port"], "source": "ibnetdiscover",
                            "netdev": None, "chassis_id": "S-%s" % link["switch_guid"]}) for hca, link in found.items())
        reason = None if not parsed["problems"] else "; ".join(parsed["problems"])
        records.append(results.make(CHECK, "pass", reason=reason, host=name, facts={"ports": ports, "mismatches": []},
                                    metrics={"ports_count": len(ports)}, params=params, started=started))
    return records


def _topology(module):
    params = module.params
    started = results.utc_now()
    if params["from_output"]:
        if not params["hosts"]:
            module.fail_json(msg="from_output needs hosts (the hosts to make records for)", results=[])
        records = ib_records(imports.read_output(params["from_output"]), params["hosts"], started)
    else:
        host = env_probe.Host(run=lambda argv, timeout_s: runner.run(module, argv, timeout_s),
                              which=lambda name: module.get_bin_path(name, required=False))
        records = [host_record(host, params, started)]
    return dict(changed=False, results=records, counts=results.count(records))


def main():
    module = argspec.module(AnsibleModule, RANGES, argument_spec=SPEC, supports_check_mode=True)
    modmain.run(module, "fabric_topology", _topology, fields={"results": []})


if __name__ == "__main__":
    main()
