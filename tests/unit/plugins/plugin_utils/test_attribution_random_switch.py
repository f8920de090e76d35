# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A bad switch under the default pairing of a large fleet (mode auto: random matchings above 32 hosts, then the
confirmation pass), as the RDMA role runs it: the rounds of the real pairings filter, measured by a synthetic fleet
(synthetic_fleet.pair_records: the real expectations), the confirmation rounds the run_summary step plans from the
report's findings (attribution.plan_confirmation), measured the same way, then the report of both passes.

Random matchings almost never pair two hosts of one leaf, so after the first pass every host behind a slow leaf
uplink is low with all its peers - a suspect node. The confirmation pass pairs the suspect nodes with each other too
(by switch where the topology is known, else by name): hosts behind one bad path are fine with each other, two bad
nodes are not, and the report names one group, not 8 bad nodes."""

from __future__ import annotations

import random

from ansible_collections.aifabric.acceptance.plugins.filter.pairings import pairings
from ansible_collections.aifabric.acceptance.plugins.module_utils import results
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import attribution, fleet
from ansible_collections.aifabric.acceptance.tests.unit.plugins.plugin_utils import synthetic_fleet

RUN = {"run_id": "random-switch", "started": synthetic_fleet.STARTED, "ended": "2026-11-22T10:30:00Z"}


class Fleet:
    """leaves x per_leaf hosts; a pair crossing the bad leaf's uplink runs at ``uplink``; a bad node at 45 %."""

    def __init__(self, leaves=16, per_leaf=8, bad_leaf=3, uplink=0.55, bad_nodes=(), seed=5, names=None):
        self.hosts = ["l%02dh%d" % (leaf, i) for leaf in range(leaves) for i in range(per_leaf)]
        self.leaf_of = dict((h, int(h[1:3])) for h in self.hosts)
        self.bad_leaf, self.uplink, self.bad_nodes = bad_leaf, uplink, set(bad_nodes)
        self.rng = random.Random(seed)
        self.names = names or dict((h, h) for h in self.hosts)       # inventory names (host -> name)

    def measure(self, rounds):
        records = []
        for rnd in rounds:
            for server, client in rnd:
                value = synthetic_fleet.HEALTHY_GBIT_S * (1.0 + self.rng.gauss(0.0, 0.005))
                a, b = self.host_of(server), self.host_of(client)
                if self.bad_leaf is not None and (self.leaf_of[a] == self.bad_leaf) != (self.leaf_of[b] == self.bad_leaf):
                    value *= self.uplink
                if self.bad_nodes & {a, b}:
                    value *= 0.45
                records.extend(synthetic_fleet.pair_records(server, client, value))
        return records

    def host_of(self, name):
        return next(h for h, n in self.names.items() if n == name)

    def topology(self):
        return [results.make("net.topology", "pass", host=self.names[h], facts={"ports": {"mlx5_0": {
            "switch": "leaf-%02d" % self.leaf_of[h], "switch_port": "Eth1/%d" % (int(h[4:]) + 1), "source": "declared",
            "netdev": None, "chassis_id": None}}}) for h in self.hosts]


def two_passes(fleet_, extra=()):
    names = [fleet_.names[h] for h in fleet_.hosts]
    first = fleet_.measure(pairings(names, seed=7)) + list(extra)        # mode auto: 128 hosts -> 3 random rounds
    report = fleet.build_report(first, dict(RUN))
    rounds = attribution.plan_confirmation(report["findings"], names, per_suspect=2, records=report["records"])
    final = fleet.build_report(first + fleet_.measure(rounds), dict(RUN))
    status = dict((h["host"], h["status"]) for h in final["summary"]["hosts"])
    kinds = sorted((f["kind"], tuple(f["hosts"])) for f in final["findings"] if f.get("analysis") == "attribution")
    return report, final, status, kinds


def first_pass_failed(report):
    return sorted(h["host"] for h in report["summary"]["hosts"] if h["status"] == "fail")


def test_a_bad_leaf_under_random_rounds_is_one_group_after_confirmation_not_8_bad_nodes():
    fleet_ = Fleet(bad_nodes=["l10h5"])
    leaf = tuple(h for h in fleet_.hosts if fleet_.leaf_of[h] == 3)
    report, final, status, kinds = two_passes(fleet_)
    # the first pass alone: the leaf's 8 hosts and the bad node fail as bad nodes (and a host that drew two of them)
    assert set(leaf + ("l10h5",)) <= set(first_pass_failed(report))
    assert kinds == sorted([("group", leaf), ("node", ("l10h5",))])
    assert [h for h, s in status.items() if s == "fail"] == ["l10h5"]
    assert sorted(h for h, s in status.items() if s == "warn") == list(leaf)
    assert all(s == "pass" for h, s in status.items() if h not in leaf + ("l10h5",))
    assert "not 8 bad nodes" in next(f for f in final["findings"] if f["kind"] == "group")["evidence"]["text"]


def test_with_the_topology_the_suspects_are_paired_by_switch_and_the_group_names_it():
    # inventory names that do not sort by leaf: only the topology puts the leaf's suspects next to each other
    order = random.Random(3).sample(range(128), 128)
    fleet_ = Fleet(bad_nodes=["l10h5", "l12h1"])
    fleet_.names = dict((h, "node%03d" % order[i]) for i, h in enumerate(fleet_.hosts))
    leaf = tuple(sorted(fleet_.names[h] for h in fleet_.hosts if fleet_.leaf_of[h] == 3))
    bad = tuple(sorted(fleet_.names[h] for h in ("l10h5", "l12h1")))
    _report, final, status, kinds = two_passes(fleet_, extra=fleet_.topology())
    assert kinds == sorted([("group", leaf), ("node", (bad[0],)), ("node", (bad[1],))])
    assert sorted(h for h, s in status.items() if s == "fail") == list(bad)
    assert sorted(h for h, s in status.items() if s == "warn") == list(leaf)
    assert "leaf-03" in next(f for f in final["findings"] if f["kind"] == "group")["evidence"]["text"]


def test_bad_nodes_alone_stay_bad_nodes_and_healthy_fleets_need_no_confirmation():
    fleet_ = Fleet(bad_leaf=None, bad_nodes=["l01h1", "l01h2", "l09h0"])
    _report, _final, status, kinds = two_passes(fleet_)
    assert kinds == [("node", ("l01h1",)), ("node", ("l01h2",)), ("node", ("l09h0",))]
    assert sorted(h for h, s in status.items() if s != "pass") == ["l01h1", "l01h2", "l09h0"]
    clean = Fleet(bad_leaf=None)
    names = clean.hosts
    report = fleet.build_report(clean.measure(pairings(names, seed=7)), dict(RUN))
    assert attribution.plan_confirmation(report["findings"], names, records=report["records"]) == []


def test_the_suspect_ring_pairs_only_suspect_nodes_never_a_links_ends():
    rounds = attribution.confirmation_rounds(["a", "b", "c", "d", "e", "f", "g", "h"], ["b", "c", "d", "e"],
                                             per_suspect=1, retest=[["d", "e"]], node_suspects=["c", "b"])
    pairs = [sorted(p) for rnd in rounds for p in rnd]
    assert ["b", "c"] in pairs and ["d", "e"] in pairs
    assert not [p for p in pairs if set(p) & {"d", "e"} and set(p) & {"b", "c"}]
    assert len(pairs) == len(set(map(tuple, pairs))) == 1 + 1 + 4


def _random_fleet(seed):
    """40 to 128 hosts on leaves of 8, 1 to 6 bad nodes (half rate), half of the fleets with one slow leaf uplink
    (60 %); the rounds of the default pairing (auto: random above 32 hosts), the confirmation rounds planned from the
    report's findings and verdicts, measured as the RDMA role's confirm sweep records them (params.sweep_name)."""
    rnd = random.Random(seed)
    count = rnd.choice([40, 64, 96, 128])
    hosts = ["h%03d" % i for i in range(count)]
    leaf = dict((h, "leaf-%02d" % (i // 8)) for i, h in enumerate(hosts))
    bad = set(rnd.sample(hosts, rnd.randint(1, 6)))
    slow = "leaf-%02d" % rnd.randrange(count // 8) if rnd.random() < 0.5 else None

    def measure(rounds, sweep):
        out = []
        for rnd_pairs in rounds:
            for server, client in rnd_pairs:
                value = synthetic_fleet.HEALTHY_GBIT_S * rnd.uniform(0.98, 1.0)
                value *= 0.5 if bad & {server, client} else 1.0
                value *= 0.6 if slow and (leaf[server] == slow) != (leaf[client] == slow) else 1.0
                out.append(results.make(synthetic_fleet.CHECK, "pass", host=client, peer=server, target="mlx5_0",
                                        metrics={"bw_avg_gbit_s": value}, params={"sweep_name": sweep}))
        return out

    first = [results.make("net.topology", "pass", host=h, facts={"ports": {"mlx5_0": {
        "switch": leaf[h], "switch_port": None, "source": "ibnetdiscover", "netdev": None, "chassis_id": None}}})
        for h in hosts] + measure(pairings(hosts, seed=seed), "main")
    new, findings = attribution.analyze(first, {})
    measured = measure(attribution.plan_confirmation(findings, hosts, records=first + new), "confirm")
    new, _findings = attribution.analyze(first + measured, {})
    status = dict((r["host"], r["status"]) for r in new if r["check"].endswith(".node"))
    low_share = sum(1 for r in first if r["check"] == synthetic_fleet.CHECK
                    and r["metrics"]["bw_avg_gbit_s"] < 0.9 * synthetic_fleet.HEALTHY_GBIT_S) / (count // 2 * 3)
    return hosts, bad, dict((h, leaf[h] == slow) for h in hosts), status, low_share


def test_random_fleets_under_the_defaults_fail_no_healthy_host():
    """60 random fleets through the default pairing and the confirmation pass. Before: 13 healthy hosts failed in 100
    fleets (a 'known-good' partner that had a low pair with a bad node became a suspect when paired with a second
    one), and 17 bad nodes passed (the confirmation pairs, most of them low, pulled the fleet median down to them).
    Now no healthy host fails, and every bad node fails unless a third of the first pass is low (the sample's median
    is not the healthy rate any more: there, each pair's own line-rate floor is what judges it)."""
    healthy_failed, bad_passed, slow_failed, slow_hosts = [], [], [], 0
    for seed in range(60):
        hosts, bad, behind_slow, status, low_share = _random_fleet(seed)
        healthy_failed += [(seed, h) for h in hosts if h not in bad and not behind_slow[h] and status.get(h) == "fail"]
        if low_share < 1 / 3.0:
            bad_passed += [(seed, h) for h in bad if status.get(h) != "fail"]
        slow_hosts += sum(1 for h in hosts if behind_slow[h] and h not in bad)
        slow_failed += [(seed, h) for h in hosts if behind_slow[h] and h not in bad and status.get(h) == "fail"]
    assert healthy_failed == [] and bad_passed == []
    # the limit stated in docs/attribution.md: a host behind the slow leaf whose switch-mates the rounds did not
    # join to it (a bad node between them in the ring) can still fail
    assert len(slow_failed) <= 0.03 * slow_hosts, (len(slow_failed), slow_hosts)
