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
    C(warn) for a miscabling, or when a command failed, printed what cannot be read (its output kept in C(raw)),
    or was not run for lack of time (see O(timeout_s)): every port read and every declared port is kept, and the
    reason names the interfaces and NPUs not read and why. C(error) when such a failure leaves no port known at
    all, or O(declared) is not the right shape. C(skip) never changes a host's verdict."
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
      - Seconds each command (C(lldpctl), C(lldptool) per interface, C(npu-smi), C(hccn_tool) per NPU) may run; it
        is killed at it.
      - All of a host's commands together run at most 2 x O(timeout_s) (C(lldpctl), C(npu-smi info)) plus 5 s for
        each interface and NPU asked, at most 48 of them (those over it are not asked); a command is given at
        most what is left, and those not run for lack of time are named in the record's reason. The probe role's
        task timeout covers the worst case with the default (docs/topology.md).
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
    from_output: /srv/aifabric/captures/ibnetdiscover.txt
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

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aifabric.acceptance.plugins.module_utils import argspec, modmain, probe_host, results
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import fabric_topology as topology

RANGES = {"timeout_s": argspec.POSITIVE}
SPEC = dict(
    topology.OPTIONS,
    from_output=dict(type="path"),
    hosts=dict(type="list", elements="str", default=[]),
)


def _topology(module):
    params = module.params
    started = results.utc_now()
    if params["from_output"]:
        if not params["hosts"]:
            module.fail_json(msg="from_output needs hosts (the hosts to make records for)", results=[])
        records = topology.from_output(params["from_output"], params["hosts"], started)
    else:
        host = probe_host.module_host(module)
        records = topology.records(host, params, started)
    return dict(changed=False, results=records, counts=results.count(records))


def main():
    module = argspec.module(AnsibleModule, RANGES, argument_spec=SPEC, supports_check_mode=True)
    modmain.run(module, "fabric_topology", _topology, fields={"results": []})


if __name__ == "__main__":
    main()
