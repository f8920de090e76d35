# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Naming the switch (issue 25 item 2): whole fleets on leaf switches with the hosts' ``net.topology`` records
(facts.ports: port -> switch and switch port, the contract of the topology module), all pairs measured (the real
pairings filter, the real expectations: synthetic_fleet.pair_records), run through fleet.build_report as
playbooks/report.yml runs it. Every test asserts the verdict of EVERY host.

- one leaf's uplink at 55 % + a bad node on another leaf + a bad link: exactly three findings, the group naming its
  leaf and the switch ports; the same verdicts as without topology;
- topology for some hosts only; topology records that are skip/error (ignored); a host's records from two runs (the
  latest wins); a miscabled port's ``warn`` (changes no attribution verdict);
- a group behind two switches; a part of a switch (a line card); a bad node behind the bad switch;
- two rails cabled to different leaves, the bad leaf on rail mlx5_1 only: the finding is on mlx5_1 and names it;
- the line-rate path (hardware.py, pairs without a floor of their own: import mode): a bad switch is one group, not
  a link per pair.
"""

from __future__ import annotations

import os
import random

import pytest

from ansible_collections.aifabric.acceptance.plugins.filter.pairings import pairings
from ansible_collections.aifabric.acceptance.plugins.module_utils import results
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import fabric_topology as topology_tool
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import fleet, hardware, cabling
from ansible_collections.aifabric.acceptance.tests.unit.plugins.plugin_utils import synthetic_fleet

HERE = os.path.dirname(os.path.abspath(__file__))
IBNETDISCOVER = os.path.join(HERE, os.pardir, os.pardir, "fixtures", "topology",
                             "ibnetdiscover-ompi-users-2009-infiniscale-iii-hca-1.txt")
RUN = {"run_id": "switch", "started": synthetic_fleet.STARTED, "ended": "2026-11-22T10:30:00Z"}
NODE_CHECK = synthetic_fleet.CHECK + ".node"
BAD_NODE, BAD_LINK = "l6h2", ("l1h0", "l5h7")


def hosts_of(leaves=8, per_leaf=8):
    return ["l%dh%d" % (leaf, i) for leaf in range(leaves) for i in range(per_leaf)]


def leaf_of(host):
    return int(host[1:host.index("h")])


def measure(hosts, factor, rails=("mlx5_0",), seed=11, noise=0.005):
    """All pairs of ``hosts`` on every rail; a pair's figure is the healthy one x ``factor(server, client, rail)``."""
    rng = random.Random(seed)
    records = []
    for rail in rails:
        for rnd in pairings(hosts, mode="all"):
            for server, client in rnd:
                value = synthetic_fleet.HEALTHY_GBIT_S * (1.0 + rng.gauss(0.0, noise)) * factor(server, client, rail)
                records.extend(dict(rec, target=rail) for rec in synthetic_fleet.pair_records(server, client, value))
    return records


def faults(bad_leaves=(3,), uplink=0.55, bad_node=BAD_NODE, bad_link=BAD_LINK, rail=None):
    """The figure of a pair: across the uplink of ``bad_leaves`` (on ``rail`` only, when given) at ``uplink``, through
    the bad node at 45 %, over the bad link at 38 %."""
    def factor(server, client, on):
        value = 1.0
        if (rail is None or on == rail) and (leaf_of(server) in bad_leaves) != (leaf_of(client) in bad_leaves):
            value *= uplink
        if bad_node in (server, client):
            value *= 0.45
        if bad_link and {server, client} == set(bad_link):
            value *= 0.38
        return value
    return factor


def topology_record(host, ports, status="pass", started=synthetic_fleet.STARTED, reason=None):
    """The one ``net.topology`` record of a host (the topology module's contract)."""
    return results.make("net.topology", status, host=host, reason=reason, facts={"ports": ports},
                        tool={"name": "lldpctl", "version": "1.0.16"}, started=started)


def port(switch, switch_port, source="lldp", netdev=None):
    return {"switch": switch, "switch_port": switch_port, "source": source, "netdev": netdev,
            "chassis_id": "c8:2a:14:00:00:%02x" % (sum(map(ord, switch)) % 256)}


def leaf_name(leaf, rail=None):
    return ("leaf-%02d" % leaf) if rail is None else ("%s-leaf-%02d" % (rail, leaf))


def leaf_topology(hosts, status="pass"):
    """mlx5_0 of host lXhY cabled to leaf-0X port Eth1/(Y+1)."""
    return [topology_record(h, {"mlx5_0": port(leaf_name(leaf_of(h)), "Eth1/%d" % (int(h.split("h")[1]) + 1))},
                            status=status) for h in hosts]


def report_of(records):
    report = fleet.build_report(records, dict(RUN))
    assert report["problems"] == []
    return report, dict((h["host"], h["status"]) for h in report["summary"]["hosts"])


def found(report, analysis="attribution"):
    return sorted((f["kind"], tuple(f["hosts"]), f["target"]) for f in report["findings"] if f.get("analysis") == analysis)


def group_finding(report):
    [one] = [f for f in report["findings"] if f.get("analysis") == "attribution" and f["kind"] == "group"]
    return one


def node_records(report):
    return dict(((r["host"], r["target"]), r) for r in report["records"] if r["check"] == NODE_CHECK)


def expected_status(hosts, group, fail=(BAD_NODE,), warn=BAD_LINK):
    return dict((h, "fail" if h in fail else "warn" if h in tuple(group) + tuple(warn) else "pass") for h in hosts)


def test_the_group_names_its_switch_and_the_three_findings_stay_three():
    hosts = hosts_of()
    measured = measure(hosts, faults())
    group = tuple(h for h in hosts if leaf_of(h) == 3)
    report, status = report_of(measured + leaf_topology(hosts))
    assert found(report) == sorted([("group", group, "mlx5_0"), ("node", (BAD_NODE,), "mlx5_0"),
                                    ("link", BAD_LINK, "mlx5_0")])
    assert status == expected_status(hosts, group)
    finding = group_finding(report)
    text = finding["evidence"]["text"]
    assert text.startswith("8 hosts of rdma.ib_write_bw on mlx5_0 behind switch leaf-03 (ports Eth1/1-8) share a bad "
                           "path: all 8 hosts of leaf-03 (l3h0, l3h1, ")
    assert "suspect the switch leaf-03, its uplink or the rack, not 8 bad nodes" in text
    assert finding["evidence"]["switches"] == {"leaf-03": list(group)}
    assert finding["evidence"]["ports"] == dict((h, "leaf-03 Eth1/%d" % (i + 1)) for i, h in enumerate(group))
    assert "no_topology" not in finding["evidence"]
    nodes = node_records(report)
    for host in group:
        assert nodes[(host, "mlx5_0")]["status"] == "warn" and nodes[(host, "mlx5_0")]["reason"] == text
        assert nodes[(host, "mlx5_0")]["facts"]["switch"] == "leaf-03"
    assert "switch" not in nodes[(BAD_NODE, "mlx5_0")]["facts"]
    # the topology names the switch; it changes no verdict
    plain, plain_status = report_of(measured)
    assert plain_status == status and found(plain) == found(report)
    assert "switch" not in group_finding(plain)["evidence"] and "leaf-03" not in group_finding(plain)["evidence"]["text"]


def test_topology_for_some_hosts_names_what_it_knows():
    hosts = hosts_of()
    unknown = ("l3h2", "l3h5", "l0h0", "l6h6")
    group = tuple(h for h in hosts if leaf_of(h) == 3)
    report, status = report_of(measure(hosts, faults()) + leaf_topology([h for h in hosts if h not in unknown]))
    assert status == expected_status(hosts, group)
    assert found(report) == sorted([("group", group, "mlx5_0"), ("node", (BAD_NODE,), "mlx5_0"),
                                    ("link", BAD_LINK, "mlx5_0")])
    evidence = group_finding(report)["evidence"]
    known = [h for h in group if h not in unknown]
    assert evidence["switches"] == {"leaf-03": known} and evidence["no_topology"] == ["l3h2", "l3h5"]
    assert sorted(evidence["ports"]) == known
    assert ("behind 1 switch: leaf-03: all 6 hosts of leaf-03 (l3h0, l3h1, l3h3, l3h4, l3h6, l3h7) (ports Eth1/1-2, "
            "Eth1/4-5, Eth1/7-8); switch not known for l3h2, l3h5 - suspect what they share (the switch leaf-03, its "
            "uplink, the rack), not 8 bad nodes") in evidence["text"]
    nodes = node_records(report)
    assert nodes[("l3h0", "mlx5_0")]["facts"]["switch"] == "leaf-03"
    assert "switch" not in nodes[("l3h2", "mlx5_0")]["facts"]


def test_skip_and_error_topology_records_are_ignored_and_the_latest_record_wins():
    hosts = hosts_of()
    measured = measure(hosts, faults())
    plain, plain_status = report_of(measured)
    ignored = [topology_record(h, {"mlx5_0": port("leaf-99", "Eth9/9")}, status="skip" if i % 2 else "error",
                               reason="lldpctl not installed" if i % 2 else "lldpctl timed out after 10 s")
               for i, h in enumerate(hosts)]
    report, status = report_of(measured + ignored)
    # an error record is its host's own error (the topology could not be read); attribution's verdicts are the same
    assert status == dict((h, "error" if i % 2 == 0 else plain_status[h]) for i, h in enumerate(hosts))
    assert node_records(report) == node_records(plain) and found(report) == found(plain)
    assert group_finding(report)["evidence"] == group_finding(plain)["evidence"]
    # two runs merged: the later record of a host wins, wherever it is in the records; a later skip says nothing
    older = [topology_record(h, {"mlx5_0": port("leaf-old", "Eth2/1")}, started="2026-11-21T09:00:00Z") for h in hosts]
    later_skip = [topology_record(h, {}, status="skip", started="2026-11-23T09:00:00Z", reason="no LLDP neighbour")
                  for h in hosts]
    report, status = report_of(measured + leaf_topology(hosts) + older + later_skip)
    assert status == plain_status
    assert list(group_finding(report)["evidence"]["switches"]) == ["leaf-03"]


def test_a_group_behind_two_switches_says_which_hosts_are_behind_which():
    """Leaves 2 and 3 share a bad path to the rest (a spine link both use): one group of 16 hosts on 2 switches."""
    hosts = hosts_of()
    group = tuple(h for h in hosts if leaf_of(h) in (2, 3))
    report, status = report_of(measure(hosts, faults(bad_leaves=(2, 3))) + leaf_topology(hosts))
    assert status == expected_status(hosts, group)
    assert found(report) == sorted([("group", group, "mlx5_0"), ("node", (BAD_NODE,), "mlx5_0"),
                                    ("link", BAD_LINK, "mlx5_0")])
    evidence = group_finding(report)["evidence"]
    assert evidence["switches"] == {"leaf-02": list(group[:8]), "leaf-03": list(group[8:])}
    assert ("- behind 2 switches: leaf-02: all 8 hosts of leaf-02 (l2h0, l2h1, l2h2, l2h3, l2h4, l2h5, l2h6, l2h7) "
            "(ports Eth1/1-8); leaf-03: all 8 hosts of leaf-03 (l3h0, ") in evidence["text"]
    assert ("suspect what they share (the uplinks of leaf-02 and leaf-03, a switch between them and the rest of the "
            "fleet, the rack), not 16 bad nodes") in evidence["text"]


def test_part_of_a_switch_is_a_port_group_not_the_switch():
    """Hosts 0-3 of leaf 3 are slow to every host but each other (their line card); hosts 4-7 of leaf 3 are fine."""
    hosts = hosts_of()
    card = ("l3h0", "l3h1", "l3h2", "l3h3")

    def factor(server, client, _rail):
        value = 0.55 if (server in card) != (client in card) else 1.0
        return value * faults(bad_leaves=())(server, client, _rail)
    report, status = report_of(measure(hosts, factor) + leaf_topology(hosts))
    assert status == expected_status(hosts, card)
    evidence = group_finding(report)["evidence"]
    assert evidence["switches"] == {"leaf-03": list(card)}
    assert evidence["text"].startswith(
        "4 hosts of rdma.ib_write_bw on mlx5_0 behind switch leaf-03 (ports Eth1/1-4) share a bad path: 4 of the 8 "
        "hosts of leaf-03 (not l3h4, l3h5, l3h6, l3h7: a port group or line card of leaf-03 rather than the whole "
        "switch) (l3h0, l3h1, l3h2, l3h3) are fine with each other")
    assert "suspect that part of switch leaf-03 (a port group, a line card), its uplink or the rack" in evidence["text"]


def test_a_bad_node_behind_the_bad_switch_is_named_apart():
    hosts = hosts_of()
    node = "l3h4"
    group = tuple(h for h in hosts if leaf_of(h) == 3 and h != node)
    report, status = report_of(measure(hosts, faults(bad_node=node, bad_link=None)) + leaf_topology(hosts))
    assert status == expected_status(hosts, group, fail=(node,), warn=())
    assert found(report) == sorted([("group", group, "mlx5_0"), ("node", (node,), "mlx5_0")])
    text = group_finding(report)["evidence"]["text"]
    assert "7 of the 8 hosts of leaf-03 (the other, l3h4, is a suspect node)" in text
    assert "suspect the switch leaf-03, its uplink or the rack, not 7 bad nodes" in text


def test_two_rails_on_different_leaves_the_bad_leaf_on_one_rail():
    """mlx5_0 of every host on rail 0's leaf, mlx5_1 on rail 1's; rail 1's leaf 3 has the slow uplink. The finding is
    on mlx5_1 and names rail 1's leaf; mlx5_0 is clean but for the node and the link."""
    hosts = hosts_of()
    rails = ("mlx5_0", "mlx5_1")
    cabling = [topology_record(h, dict((rail, port(leaf_name(leaf_of(h), rail), "Eth1/%d" % (int(h.split("h")[1]) + 1),
                                                   netdev="ens%df0np0" % (i + 1)))
                                       for i, rail in enumerate(rails))) for h in hosts]
    report, status = report_of(measure(hosts, faults(rail="mlx5_1"), rails=rails) + cabling)
    group = tuple(h for h in hosts if leaf_of(h) == 3)
    assert status == expected_status(hosts, group)
    assert found(report) == sorted([("group", group, "mlx5_1")] + [
        (kind, who, rail) for rail in rails for kind, who in (("node", (BAD_NODE,)), ("link", BAD_LINK))])
    finding = group_finding(report)
    assert finding["target"] == "mlx5_1" and finding["evidence"]["switches"] == {"mlx5_1-leaf-03": list(group)}
    assert "behind switch mlx5_1-leaf-03 (ports Eth1/1-8)" in finding["evidence"]["text"]
    nodes = node_records(report)
    assert all(nodes[(h, "mlx5_0")]["status"] == "pass" for h in group)
    assert all(nodes[(h, "mlx5_1")]["facts"]["switch"] == "mlx5_1-leaf-03" for h in group)


def test_a_miscabled_ports_warn_changes_no_attribution_verdict():
    hosts = hosts_of()
    measured = measure(hosts, faults())
    cabled = leaf_topology(hosts)
    miscabled = [topology_record(r["host"], r["facts"]["ports"], status="warn",
                                 reason="mlx5_0 is cabled to leaf-03 Eth1/1, the declared plan says leaf-00 Eth1/1")
                 if r["host"] == "l0h0" else r for r in cabled]
    report, status = report_of(measured + miscabled)
    clean, clean_status = report_of(measured + cabled)
    verdicts = dict((key, (r["status"], r["reason"])) for key, r in node_records(report).items())
    assert verdicts == dict((key, (r["status"], r["reason"])) for key, r in node_records(clean).items())
    assert found(report) == found(clean)
    # the host's own verdict carries its topology warn; attribution's are the same
    assert status == dict(clean_status, l0h0="warn") and clean_status["l0h0"] == "pass"


def test_placement_reads_the_port_the_netdev_or_the_one_shared_switch():
    ports = {"mlx5_0": {"switch": "a", "switch_port": "p1", "netdev": "ens1"},
             "mlx5_1": {"switch": "b", "switch_port": "p2", "netdev": "ens2"}}
    assert cabling.placement(ports, "mlx5_1") == cabling.Placement("b", "mlx5_1", "p2")
    assert cabling.placement(ports, "ens1") == cabling.Placement("a", "mlx5_0", "p1")
    assert cabling.placement(ports, None) is None and cabling.placement(ports, "mlx5_2") is None
    same = {"ens1": {"switch": "a", "switch_port": "swp2", "netdev": "ens1"},
            "ens2": {"switch": "a", "switch_port": "swp1", "netdev": "ens2"}}
    # a target no port is: unknown, never the switch the other ports share (a management switch: see below)
    assert cabling.placement(same, "mlx5_0") is None
    # a matrix without a rail: the switch the host's fabric ports (RDMA devices) share, never its plain interfaces'
    assert cabling.placement(same, None) is None
    fabric = {"mlx5_0": {"switch": "a", "switch_port": "swp2", "netdev": "ens1"},
              "mlx5_1": {"switch": "a", "switch_port": "swp1", "netdev": "ens2"},
              "eno1": {"switch": "mgmt", "switch_port": "ge-0/0/1", "netdev": "eno1"}}
    assert cabling.placement(fabric, None) == cabling.Placement("a", None, "swp1,swp2")
    assert cabling.port_ranges(["Eth1/3", "Eth1/1", "Eth1/2", "Eth1/10", "swp1", None, "mgmt"]) == \
        "Eth1/1-3, Eth1/10, mgmt, swp1"


def mgmt_switch(host):
    """The management switch of a host's eno1 (no RDMA device): racks of 4 hosts, cutting across the leaves of 8."""
    leaf, index = leaf_of(host), int(host.split("h")[1])
    return "mgmt-%02d" % (2 * leaf + index // 4 + 1) if leaf != 3 else "mgmt-%02d" % (index % 2)


def test_a_management_switch_is_never_taken_for_the_fabric_leaf():
    """An InfiniBand fleet running lldpd for its management NIC: every host's eno1 (no RDMA device) is seen on its
    management switch by LLDP; the mlx5_0 leaf comes from an ibnetdiscover import for most hosts. The group names
    the leaf from mlx5_0, never a management switch; hosts whose only known port is eno1 get no switch on mlx5_0."""
    hosts = hosts_of()
    only_mgmt = ("l3h2", "l3h5", "l0h0", "l6h6")
    lldp = [topology_record(h, {"eno1": port(mgmt_switch(h), "ge-0/0/%s" % h.split("h")[1], netdev="eno1")},
                            started="2026-11-22T09:00:00Z") for h in hosts]
    ib = [topology_record(h, {"mlx5_0": port(leaf_name(leaf_of(h)), "Eth1/%d" % (int(h.split("h")[1]) + 1),
                                             source="ibnetdiscover")}) for h in hosts if h not in only_mgmt]
    group = tuple(h for h in hosts if leaf_of(h) == 3)
    report, status = report_of(measure(hosts, faults()) + lldp + ib)
    assert status == expected_status(hosts, group)
    assert found(report) == sorted([("group", group, "mlx5_0"), ("node", (BAD_NODE,), "mlx5_0"),
                                    ("link", BAD_LINK, "mlx5_0")])
    evidence = group_finding(report)["evidence"]
    known = [h for h in group if h not in only_mgmt]
    assert evidence["switches"] == {"leaf-03": known} and evidence["no_topology"] == ["l3h2", "l3h5"]
    assert "mgmt-" not in evidence["text"] and "mgmt-" not in str(evidence)
    nodes = node_records(report)
    assert all(nodes[(h, "mlx5_0")]["facts"].get("switch") in (None, leaf_name(leaf_of(h))) for h in hosts)
    assert all("switch" not in nodes[(h, "mlx5_0")]["facts"] for h in only_mgmt)
    # only the management neighbours known (IB ports send no LLDP): no host has a switch on mlx5_0
    plain, plain_status = report_of(measure(hosts, faults()) + lldp)
    assert plain_status == status and "mgmt-" not in str(group_finding(plain)["evidence"])
    assert not any("switch" in r["facts"] for r in node_records(plain).values())


def test_read_drops_what_the_contract_does_not_allow():
    records = [topology_record("h1", {"mlx5_0": {"switch": "", "switch_port": "x"}, "mlx5_1": "leaf-1",
                                      "mlx5_2": port("leaf-2", None)}),
               topology_record("h2", {"mlx5_0": {"switch_port": "Eth1/1"}})]
    assert cabling.read(records) == {"h1": {"mlx5_2": {"switch": "leaf-2", "switch_port": None, "source": "lldp",
                                                       "netdev": None, "chassis_id": port("leaf-2", None)["chassis_id"]}}}


# ---------------------------------------------------------------- the line-rate path (hardware.py)

def import_mode(records):
    """The pairs as import mode gives them: the client's record without a floor of its own (no expect)."""
    out = []
    for rec in records:
        if rec["check"] == synthetic_fleet.CHECK:
            rec = dict(rec, status="pass", reason=None, expect={})
        out.append(rec)
    return out


def probed_ports(hosts, rate=400.0):
    """The probe's ``rdma.port`` record of each host's mlx5_0 port 1 (the fields hardware.port_rates reads)."""
    return [results.make("rdma.port", "pass", host=h, target="mlx5_0/1", metrics={"rate_gbit_s": rate},
                         facts={"state": "ACTIVE", "link_layer": "InfiniBand"}, started=synthetic_fleet.STARTED)
            for h in hosts]


@pytest.mark.parametrize("cabling", [True, False])
def test_a_bad_switch_on_the_line_rate_path_is_one_group_not_a_link_per_pair(cabling):
    """Before the fix: every pair across the bad uplink was a suspect link (448 hardware findings) and both its
    ends warned, so all 64 hosts warned; now the leaf's hosts warn, one hardware finding names the group (and its
    switch, with the topology records)."""
    hosts = hosts_of()
    group = tuple(h for h in hosts if leaf_of(h) == 3)
    records = import_mode(measure(hosts, faults())) + probed_ports(hosts) + (leaf_topology(hosts) if cabling else [])
    report, status = report_of(records)
    assert status == expected_status(hosts, group)
    expected = sorted([("group", group, "mlx5_0"), ("node", (BAD_NODE,), "mlx5_0"), ("link", BAD_LINK, "mlx5_0")])
    assert found(report) == expected
    hardware = [f for f in report["findings"] if f.get("analysis") == "hardware"]
    assert sorted((f["evidence"]["status"], tuple(f["hosts"])) for f in hardware) == sorted(
        [("warn", group), ("fail", (BAD_NODE,)), ("warn", BAD_LINK)])
    [named] = [f for f in hardware if tuple(f["hosts"]) == group]
    assert named["evidence"]["attribution"] == "group"
    assert named["evidence"]["text"].startswith("8 hosts of rdma.ib_write_bw on mlx5_0%s share a bad path: " % (
        " behind switch leaf-03 (ports Eth1/1-8)" if cabling else ""))
    assert named["evidence"]["text"].endswith("; pairs across it are below the floor derived from the probed port "
                                              "rates (80 % of the lower active port rate of both ends, 400 Gbit/s)")
    judged = [r for r in report["records"] if r["check"] == synthetic_fleet.CHECK + ".hardware"]
    assert set(r["host"] for r in judged if r["status"] == "fail") == {BAD_NODE}
    assert set(r["host"] for r in judged if r["status"] == "warn") == set(group + BAD_LINK)
    member = next(r for r in judged if r["host"] == "l3h0" and r["status"] == "warn")
    assert member["facts"]["attribution"] == "group" and member["facts"]["group"] == list(group)
    assert member["facts"].get("switch") == ("leaf-03" if cabling else None)
    assert member["reason"].startswith("%s -> %s on mlx5_0: bw %s Gbit/s < 320 Gbit/s expected (80 %% of the lower "
                                       "active port rate of both ends, 400 Gbit/s); 8 hosts of rdma.ib_write_bw" % (
                                           member["facts"]["measured_host"], "l3h0" if member["facts"]["measured_host"]
                                           != "l3h0" else member["peer"], "%g" % member["metrics"]["bw_avg_gbit_s"]))
    # the pairs a group explains give its outside ends no record: they pass
    assert not [r for r in judged if r["host"] not in group + BAD_LINK + (BAD_NODE,) and r["status"] != "pass"]


@pytest.mark.parametrize("leaves,per_leaf,uplink,named", [
    (16, 2, 0.55, True), (8, 4, 0.85, True), (4, 8, 0.0, True), (8, 4, 0.93, False)])
def test_sensitivity_which_switches_are_named(leaves, per_leaf, uplink, named):
    """A leaf of 2 hosts is named as surely as one of 8, at any uplink below the low bound (85 %: below 90 % of the
    fleet median; 0: the uplink is down, every pair across it measures next to nothing); at 93 % nothing is low."""
    hosts = hosts_of(leaves, per_leaf)
    bad = tuple(h for h in hosts if leaf_of(h) == 1)
    report, status = report_of(measure(hosts, faults(bad_leaves=(1,), uplink=uplink or 0.01, bad_node=None,
                                                     bad_link=None)) + leaf_topology(hosts))
    if named:
        assert found(report) == [("group", bad, "mlx5_0")]
        assert status == expected_status(hosts, bad, fail=(), warn=())
        assert "behind switch leaf-01 (ports Eth1/1-%d) share a bad path: all %d hosts of leaf-01 " % (
            per_leaf, per_leaf) in group_finding(report)["evidence"]["text"]
    else:
        assert not [f for f in report["findings"] if f["kind"] == "group"]
        assert "fail" not in status.values()


def test_a_fleet_cut_in_two_halves_names_both_switches():
    """Two leaves of 8, the path between them at 55 %: each host's 8 pairs across are most of its 15, so each half is
    a group behind its own switch; both warn, none fails (the path between the two switches is the suspect)."""
    hosts = hosts_of(2, 8)
    report, status = report_of(measure(hosts, faults(bad_leaves=(1,), bad_node=None, bad_link=None))
                               + leaf_topology(hosts))
    halves = [tuple(h for h in hosts if leaf_of(h) == leaf) for leaf in (0, 1)]
    assert found(report) == [("group", halves[0], "mlx5_0"), ("group", halves[1], "mlx5_0")]
    assert set(status.values()) == {"warn"}
    texts = sorted(f["evidence"]["text"] for f in report["findings"] if f["kind"] == "group")
    assert [t[:t.index(" share")] for t in texts] == [
        "8 hosts of rdma.ib_write_bw on mlx5_0 behind switch leaf-0%d (ports Eth1/1-8)" % leaf for leaf in (0, 1)]


def test_the_topology_module_s_records_of_a_real_ibnetdiscover_capture_name_the_switch():
    """The records fabric_topology's import mode makes of a real ibnetdiscover output (24 hosts node1..node24 on one
    24-port InfiniScale III switch, port N to nodeN): hosts 1-6 slow to everyone but each other are 6 of the 24
    hosts of that switch, named with their switch ports. The matrix is on the CA the capture names (HCA-1, its node
    description's device name); on a device no record names (mlx5_0), the switch is not known."""
    hosts = ["node%d" % i for i in range(1, 25)]
    with open(IBNETDISCOVER, encoding="utf-8") as handle:
        cabling = topology_tool.ib_records(handle.read(), hosts, synthetic_fleet.STARTED)
    slow = tuple(hosts[:6])

    def factor(server, client, _rail):
        return 0.55 if (server in slow) != (client in slow) else 1.0
    report, status = report_of(measure(hosts, factor, rails=("HCA-1",)) + cabling)
    assert status == dict((h, "warn" if h in slow else "pass") for h in hosts)
    assert found(report) == [("group", tuple(sorted(slow)), "HCA-1")]
    evidence = group_finding(report)["evidence"]
    switch = "MT47396 Infiniscale-III Mellanox Technologies"
    assert evidence["switches"] == {switch: sorted(slow)}
    assert evidence["ports"] == dict((h, "%s %s" % (switch, h[4:])) for h in slow)
    assert evidence["text"].startswith(
        "6 hosts of rdma.ib_write_bw on HCA-1 behind switch %s (ports 1-6) share a bad path: 6 of the 24 hosts of %s "
        "(not node10, node11, node12, node13, node14, node15, node16, node17 and 10 more: a port group or line card of "
        "%s rather than the whole switch) (node1, node2, node3, node4, node5, node6) are fine with each other"
        % (switch, switch, switch))
    # the same fleet measured on mlx5_0, a device the capture does not name: the same finding, no switch named
    other, other_status = report_of(measure(hosts, factor) + cabling)
    assert other_status == status and found(other) == [("group", tuple(sorted(slow)), "mlx5_0")]
    assert "switches" not in group_finding(other)["evidence"] and switch not in group_finding(other)["evidence"]["text"]


def test_a_hosts_lldp_and_ibnetdiscover_records_add_up_port_by_port():
    """The probe gives a host two net.topology records when an ibnetdiscover file is imported: its Ethernet ports
    (LLDP) and its InfiniBand HCAs (ibnetdiscover). Both count; a port in both takes the later record's entry."""
    lldp = topology_record("n1", {"eth0": port("mgmt-sw", "swp3"), "mlx5_0": port("leaf-old", "Eth2/1")},
                           started="2026-11-22T09:00:00Z")
    ib = topology_record("n1", {"mlx5_0": port("leaf-07", "12"), "mlx5_1": port("leaf-08", "12")},
                         started="2026-11-22T09:00:01Z")
    known = cabling.read([ib, lldp])
    assert sorted(known["n1"]) == ["eth0", "mlx5_0", "mlx5_1"]
    assert (known["n1"]["eth0"]["switch"], known["n1"]["mlx5_0"]["switch"], known["n1"]["mlx5_1"]["switch"]) == (
        "mgmt-sw", "leaf-07", "leaf-08")
    assert cabling.placement(known["n1"], "mlx5_1").switch == "leaf-08"


def test_port_rates_take_ascii_port_numbers_only():
    """A port number that is a digit only outside ASCII ("²": isdigit() is True, int() raises) is no port: the
    analysis used to stop on it."""
    recs = [{"check": "rdma.port", "host": "a", "target": "mlx5_0/\u00b2", "metrics": {"rate_gbit_s": 400.0},
             "facts": {"state": "ACTIVE"}},
            {"check": "rdma.port", "host": "a", "target": "mlx5_0/1", "metrics": {"rate_gbit_s": 400.0},
             "facts": {"state": "ACTIVE"}}]
    assert hardware.port_rates(recs) == {("a", "mlx5_0", 1): 400.0}
