# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
name: group_screen_topology
short_description: Each host's switch, from the net.topology records, as the group-testing screen's topology
version_added: 1.1.0
author: aifabric.acceptance contributors (@aifabric)
description:
  - Reads the C(net.topology) records of M(aifabric.acceptance.fabric_topology) (LLDP, the declared plan, an
    C(ibnetdiscover) import; docs/topology.md) and gives each host of O(hosts) whose switch they know its topology
    group for the filter aifabric.acceptance.group_screen, as the C(screen) entry point of the role
    aifabric.acceptance.nccl does where C(nccl_screen_topology_var) is empty.
  - A host's group is the one switch all its fabric ports share; where its fabric ports are on several switches (a
    rail-optimized fabric, each rail on its own leaf), the set of them (V(leaf-01 + leaf-02)), so that a group
    stays inside one switch on every rail. Its fabric ports are its RDMA devices (a port named as an RDMA device,
    not as its own network interface); a port named as a network interface (LLDP also sees a management or storage
    NIC's switch, V(eno1) on a management switch) is never used, and a host with no fabric port has no group.
  - Records that are not usable C(net.topology) records (C(skip), C(error), another check) are ignored; a host none
    names, or whose known ports are no RDMA device, is left out (it forms no topology group).
options:
  _input:
    description:
      - "Each host's own C(net.topology) records, C({host: [record, ...]}) (the registered C(results) of its
        M(aifabric.acceptance.fabric_topology) run; a record that names no host is the host's it is listed under)."
    type: dict
    required: true
  hosts:
    description: The hosts of the screen (inventory names).
    type: list
    elements: str
    required: true
  imported:
    description: Records that name their host (the C(results) of an C(ibnetdiscover) import, run once for every host).
    type: list
    elements: dict
    default: []
"""

EXAMPLES = r"""
- name: The switch of every host, from the topology the probe learned
  ansible.builtin.set_fact:
    leaf_of_host: >-
      {{ dict(ansible_play_hosts | zip(ansible_play_hosts | map('extract', hostvars)
              | map(attribute='probe_topology_learned.results', default=[])))
         | aifabric.acceptance.group_screen_topology(hosts=ansible_play_hosts) }}
  run_once: true
"""

RETURN = r"""
_value:
  description: Host to its switch (or set of switches), for the hosts whose switch is known.
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.aifabric.acceptance.plugins.filter import group_screen as screen_filter
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import group_screen as planner


def _records(learned, imported):
    """The records, each naming its host (a host's own record that names none is given its host)."""
    if not isinstance(learned, dict):
        raise AnsibleFilterError("aifabric.acceptance.group_screen_topology: input must map a host to its net.topology "
                                 "records, got %r" % (type(learned).__name__,))
    if not isinstance(imported, (list, tuple)):
        raise AnsibleFilterError("aifabric.acceptance.group_screen_topology: imported must be a list of records, got %r"
                                 % (type(imported).__name__,))
    out = []
    for host, records in learned.items():
        if not screen_filter.is_name(host):
            raise AnsibleFilterError("aifabric.acceptance.group_screen_topology: input must map host names to their "
                                     "records, got the key %.100r" % (host,))
        if not isinstance(records, (list, tuple)):
            raise AnsibleFilterError("aifabric.acceptance.group_screen_topology: the records of %s must be a list, got "
                                     "%r" % (host, type(records).__name__))
        out.extend(dict(r, host=r.get("host") or host) for r in records if isinstance(r, dict))
    return out + [r for r in imported if isinstance(r, dict)]


def group_screen_topology(learned, hosts=None, imported=None):
    """{host: switch group}; see DOCUMENTATION."""
    records = _records(learned, imported if imported is not None else [])
    hosts = screen_filter.host_names(hosts, "hosts", "aifabric.acceptance.group_screen_topology")
    return planner.switch_groups(records, hosts)


class FilterModule(object):
    """aifabric.acceptance.group_screen_topology"""

    def filters(self):
        return {"group_screen_topology": group_screen_topology}
