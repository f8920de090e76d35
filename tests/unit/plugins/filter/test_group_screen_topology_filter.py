# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""aifabric.acceptance.group_screen_topology: each host's switch from the net.topology records, as the screen's
topology when the user names none (the screen entry point of the nccl role)."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.aifabric.acceptance.plugins.filter.group_screen_topology import group_screen_topology
from ansible_collections.aifabric.acceptance.plugins.module_utils import results


def topo(host, ports, status="pass", source="lldp"):
    entries = dict((name, {"switch": switch, "switch_port": "swp%d" % i, "source": source, "netdev": netdev,
                           "chassis_id": None}) for i, (name, switch, netdev) in enumerate(ports))
    return results.make("net.topology", status, host=host, facts={"ports": entries, "mismatches": []},
                        reason=None if status == "pass" else "no topology known")


def test_one_switch_a_rail_set_a_management_port_and_unknown_hosts():
    records = [
        topo("a", [("mlx5_0", "leaf-1", "ens1f0"), ("eno1", "mgmt-7", "eno1")]),     # management port left out
        topo("b", [("mlx5_0", "leaf-1", "ens1f0"), ("mlx5_1", "leaf-1", "ens2f0")]),
        topo("c", [("mlx5_0", "leaf-1", "ens1f0"), ("mlx5_1", "leaf-2", "ens2f0")]),  # rail-optimized: the set
        topo("d", [("eth1", "leaf-3", "eth1")], source="declared"),                 # no RDMA port: all ports
        topo("e", [], status="skip"),                                                # nothing known
        results.make("nccl.all_reduce", "pass", host="f"),
    ]
    learned = {}
    for rec in records:                                  # as registered: a host's own records name no host
        learned.setdefault(rec["host"], []).append(dict(rec, host=None))
    assert group_screen_topology(learned, hosts=["a", "b", "c", "d", "e", "f", "g"]) == {
        "a": "leaf-1", "b": "leaf-1", "c": "leaf-1 + leaf-2", "d": "leaf-3"}
    assert group_screen_topology(learned, hosts=["b"]) == {"b": "leaf-1"}


def test_an_ibnetdiscover_import_adds_ports_to_the_lldp_record():
    learned = {"a": [dict(topo("a", [("eno1", "mgmt-7", "eno1")]), host=None)]}
    imported = [topo("a", [("mlx5_0", "ib-leaf [S-0002c90200000001]", None)], source="ibnetdiscover")]
    assert group_screen_topology(learned, hosts=["a"], imported=imported) == {"a": "ib-leaf [S-0002c90200000001]"}
    assert group_screen_topology(learned, hosts=["a"]) == {"a": "mgmt-7"}      # no fabric port: all its ports


@pytest.mark.parametrize("learned, hosts, imported", [([], ["a"], None), ({}, "a", None), ({}, [""], None),
                                                      ({}, None, None), ({"a": {}}, ["a"], None), ({}, ["a"], {})])
def test_bad_input_is_a_clear_error(learned, hosts, imported):
    with pytest.raises(AnsibleFilterError, match="group_screen_topology"):
        group_screen_topology(learned, hosts=hosts, imported=imported)
