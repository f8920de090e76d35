# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A bad switch is one suspect, not N bad nodes (issue 25 item 2): whole fleets on leaf switches, all pairs measured
(the real pairings filter, the real expectations: synthetic_fleet.pair_records), with one leaf whose uplink is slow
(its hosts are fine with each other and slow to everyone else), one bad node on a healthy leaf and one bad link.
The report (fleet.build_report, as playbooks/report.yml runs it) gives exactly three findings - the group, the node
and the link - and exactly these host verdicts: the node fails, the group's hosts and the link's ends warn, every
other host passes. Before the group rule, the leaf's 8 hosts failed as 8 bad nodes."""

from __future__ import annotations

import random

import pytest

from ansible_collections.aifabric.acceptance.plugins.filter.pairings import pairings
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import attribution, fleet
from ansible_collections.aifabric.acceptance.tests.unit.plugins.plugin_utils import synthetic_fleet

RUN = {"run_id": "groups", "started": synthetic_fleet.STARTED, "ended": "2026-11-22T10:30:00Z"}


def leaf_fleet(leaves=8, per_leaf=8, bad_leaf=3, uplink=0.55, bad_node=None, bad_link=None, node_factor=0.45,
               link_factor=0.38, seed=11, noise=0.005):
    """All pairs of leaves x per_leaf hosts; a pair crossing the bad leaf's uplink runs at ``uplink``."""
    hosts = ["l%dh%d" % (leaf, i) for leaf in range(leaves) for i in range(per_leaf)]
    leaf_of = dict((h, int(h[1:h.index("h")])) for h in hosts)
    rng = random.Random(seed)
    records = []
    for rnd in pairings(hosts, mode="all"):
        for server, client in rnd:
            value = synthetic_fleet.HEALTHY_GBIT_S * (1.0 + rng.gauss(0.0, noise))
            if bad_leaf is not None and (leaf_of[server] == bad_leaf) != (leaf_of[client] == bad_leaf):
                value *= uplink
            if bad_node in (server, client):
                value *= node_factor
            if bad_link and {server, client} == set(bad_link):
                value *= link_factor
            records.extend(synthetic_fleet.pair_records(server, client, value))
    return hosts, leaf_of, records


def verdicts(records):
    report = fleet.build_report(records, dict(RUN))
    return report, dict((h["host"], h["status"]) for h in report["summary"]["hosts"])


def attribution_findings(report):
    return sorted((f["kind"], tuple(f["hosts"])) for f in report["findings"] if f.get("analysis") == "attribution")


def test_a_bad_switch_a_bad_node_and_a_bad_link_give_exactly_three_findings():
    bad_node, bad_link = "l6h2", ("l1h0", "l5h7")
    hosts, leaf_of, records = leaf_fleet(bad_node=bad_node, bad_link=bad_link)
    report, status = verdicts(records)
    group = tuple(h for h in hosts if leaf_of[h] == 3)
    assert attribution_findings(report) == sorted([("group", group), ("node", (bad_node,)), ("link", bad_link)])
    assert [h for h, s in status.items() if s == "fail"] == [bad_node]
    assert sorted(h for h, s in status.items() if s == "warn") == sorted(group + bad_link)
    assert all(s == "pass" for h, s in status.items() if h not in group + bad_link + (bad_node,))
    finding = next(f for f in report["findings"] if f["kind"] == "group")
    assert "share a bad path" in finding["evidence"]["text"] and "not 8 bad nodes" in finding["evidence"]["text"]
    assert finding["evidence"]["inside"] == 28 and finding["evidence"]["inside_good"] == 28
    assert finding["evidence"]["outside"] == 8 * 56
    member = next(r for r in report["records"] if r["check"] == synthetic_fleet.CHECK + ".node" and r["host"] == group[0])
    assert member["status"] == "warn" and member["facts"]["attribution"] == "group"
    assert member["facts"]["group"] == list(group)


def test_a_bad_node_behind_the_bad_switch_stays_a_node():
    bad_node = "l3h4"                       # on the bad leaf: slow to its switch-mates too
    hosts, leaf_of, records = leaf_fleet(bad_node=bad_node)
    report, status = verdicts(records)
    group = tuple(h for h in hosts if leaf_of[h] == 3 and h != bad_node)
    assert attribution_findings(report) == sorted([("group", group), ("node", (bad_node,))])
    assert [h for h, s in status.items() if s == "fail"] == [bad_node]
    assert sorted(h for h, s in status.items() if s == "warn") == sorted(group)


def test_two_bad_nodes_are_two_nodes_not_a_group():
    """Two bad nodes are low with each other as well: nothing joins them."""
    hosts, _leaf_of, records = leaf_fleet(bad_leaf=None)
    slow = ("l2h1", "l4h6")
    rng = random.Random(3)
    records = []
    for rnd in pairings(hosts, mode="all"):
        for server, client in rnd:
            value = synthetic_fleet.HEALTHY_GBIT_S * (1.0 + rng.gauss(0.0, 0.005))
            for host in slow:
                if host in (server, client):
                    value *= 0.45
            records.extend(synthetic_fleet.pair_records(server, client, value))
    report, status = verdicts(records)
    assert attribution_findings(report) == [("node", (slow[0],)), ("node", (slow[1],))]
    assert sorted(h for h, s in status.items() if s != "pass") == sorted(slow)


def test_a_healthy_fleet_has_no_group():
    _hosts, _leaf_of, records = leaf_fleet(bad_leaf=None)
    report, status = verdicts(records)
    assert attribution_findings(report) == []
    assert set(status.values()) == {"pass"}


@pytest.mark.parametrize("uplink", [0.55, 0.8, 0.0])
def test_sensitivity_any_uplink_below_the_low_bound_is_found(uplink):
    """The group rule sees what the edge rule calls low: below 90 % of the fleet median (0.0: the uplink is down,
    every crossing pair errs or measures nothing useful)."""
    hosts, leaf_of, records = leaf_fleet(leaves=4, per_leaf=6, bad_leaf=1, uplink=uplink if uplink else 0.01)
    report, status = verdicts(records)
    group = tuple(h for h in hosts if leaf_of[h] == 1)
    assert attribution_findings(report) == [("group", group)]
    assert not [h for h, s in status.items() if s == "fail"]


def test_groups_of_is_pure_on_a_small_graph():
    """Two hosts fine with each other and low to the three others: most of their pairs are low, so they are the
    suspects, and one group; the three (2 of 4 pairs low: not most) are not."""
    a, b = ["a1", "a2", "a3"], ["b1", "b2"]
    edges, low = {}, {}
    for i, x in enumerate(a + b):
        for y in (a + b)[i + 1:]:
            pair = frozenset((x, y))
            edges[pair] = 1.0
            low[pair] = (x in a) != (y in a)
    nodes, links, groups, _unconfirmed = attribution.attribute(edges, low, 2, 0.5)
    assert [members for members, _ev in groups] == [b]
    assert groups[0][1] == {"inside_good": 1, "inside": 1, "outside_low": 6, "outside": 6}
    assert nodes == {} and links == []
