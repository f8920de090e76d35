# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""aifabric.acceptance.group_screen_topology: each host's switch from the net.topology records, as the screen's
topology when the user names none (the screen entry point of the nccl role)."""

from __future__ import annotations

import random

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.aifabric.acceptance.plugins.filter.group_screen_topology import group_screen_topology
from ansible_collections.aifabric.acceptance.plugins.module_utils import results
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import group_screen


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
        topo("d", [("eno1", "mgmt-7", "eno1")]),                                  # only a management port: none
        topo("e", [], status="skip"),                                                # nothing known
        results.make("nccl.all_reduce", "pass", host="f"),
        topo("h", [("mlx5_0", "leaf-3", None)], source="declared"),                 # declared, no interface seen
    ]
    learned = {}
    for rec in records:                                  # as registered: a host's own records name no host
        learned.setdefault(rec["host"], []).append(dict(rec, host=None))
    assert group_screen_topology(learned, hosts=["a", "b", "c", "d", "e", "f", "g", "h"]) == {
        "a": "leaf-1", "b": "leaf-1", "c": "leaf-1 + leaf-2", "h": "leaf-3"}
    assert group_screen_topology(learned, hosts=["b"]) == {"b": "leaf-1"}


def test_an_ibnetdiscover_import_adds_ports_to_the_lldp_record():
    learned = {"a": [dict(topo("a", [("eno1", "mgmt-7", "eno1")]), host=None)]}
    imported = [topo("a", [("mlx5_0", "ib-leaf [S-0002c90200000001]", None)], source="ibnetdiscover")]
    assert group_screen_topology(learned, hosts=["a"], imported=imported) == {"a": "ib-leaf [S-0002c90200000001]"}
    assert group_screen_topology(learned, hosts=["a"]) == {}      # no fabric port: no group, never the management switch


def _fleet(seed):
    """An InfiniBand fleet of leaves of 8 (ibnetdiscover import: mlx5_0), lldpd seeing only each host's management
    NIC eno1 on a management switch of 4 hosts that cuts across the leaves; one leaf's uplink slow; 0-2 bad hosts."""
    rnd = random.Random(seed)
    leaves = rnd.choice([3, 4, 6])
    hosts = ["h%02d" % i for i in range(8 * leaves)]
    leaf = dict((h, "L%d" % (i // 8)) for i, h in enumerate(hosts))
    mgmt = dict((h, "m%d" % ((i % 8) // 4 + 2 * (i // 16))) for i, h in enumerate(hosts))
    learned = dict((h, [dict(topo(h, [("eno1", mgmt[h], "eno1")]), host=None)]) for h in hosts)
    imported = [topo(h, [("mlx5_0", leaf[h], None)], source="ibnetdiscover") for h in hosts]
    return rnd, hosts, leaf, learned, imported


@pytest.mark.parametrize("seed", range(12))
def test_a_fleet_with_management_switches_is_grouped_by_its_ib_leaves_only(seed):
    """The screen's learned topology names the IB leaf of every host and never a management switch; with only the
    management neighbours known, no host has a group (the screen runs without a topology, not across slow uplinks
    believing them one leaf)."""
    rnd, hosts, leaf, learned, imported = _fleet(seed)
    slow, bad = "L%d" % rnd.randrange(len(set(leaf.values()))), set(rnd.sample(hosts, rnd.randint(0, 2)))
    groups = group_screen_topology(learned, hosts=hosts, imported=imported)
    assert groups == leaf
    assert group_screen_topology(learned, hosts=hosts) == {}

    def measure(tests):
        return [not (set(t["hosts"]) & bad) and (len(set(leaf[h] for h in t["hosts"])) == 1
                                                 or slow not in set(leaf[h] for h in t["hosts"])) for t in tests]
    out = group_screen.run(hosts, measure, topology=groups)
    assert out["bad"] == sorted(bad) and out["unresolved"] == []
    # the slow leaf is judged as a group (slow, or unresolved where a span test cannot tell which of two it is)
    assert slow in out["slow_groups"] + out["unresolved_groups"] and not set(out["slow_groups"]) - {slow}


@pytest.mark.parametrize("learned, hosts, imported", [([], ["a"], None), ({}, "a", None), ({}, [""], None),
                                                      ({}, None, None), ({"a": {}}, ["a"], None), ({}, ["a"], {})])
def test_bad_input_is_a_clear_error(learned, hosts, imported):
    with pytest.raises(AnsibleFilterError, match="group_screen_topology"):
        group_screen_topology(learned, hosts=hosts, imported=imported)


@pytest.mark.parametrize("learned, hosts", [({1: []}, ["a"]), ({"a b": []}, ["a"]), ({}, ["groups=x"]), ({}, [["a"]]),
                                            ({}, ["n" * 256])])
def test_a_host_name_that_is_no_host_name_is_refused(learned, hosts):
    """Non-string or impossible host names (in the records' keys or in hosts) were ignored silently."""
    with pytest.raises(AnsibleFilterError, match="group_screen_topology: .*host name"):
        group_screen_topology(learned, hosts=hosts)
