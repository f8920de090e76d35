# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""SYNTHETIC pairwise fleets with a known bad node and a known bad link, for the verdict tests and
bench/fleet_verdicts.py.

The schedule is the real ``pairings`` filter (all / ring / random), the confirmation pass is the
real ``attribution.confirmation_rounds`` on the real findings (as ``playbooks/rdma.yml`` runs it),
and every pair gives the records the perftest module returns for one pair: the client record
``rdma.ib_write_bw`` (host = client, peer = server) judged by the real expectations code against a
floor of 90 % of a 400 Gb/s port, and the server record ``rdma.ib_write_bw.server`` (host = server,
peer = client, no expectations). Only the figures are invented: a healthy pair measures 390 Gbit/s
(a ConnectX-7 NDR ib_write_bw at 64 KiB) with 0.5 % noise, a pair through the bad node measures
``node_factor`` of that and the bad link ``link_factor``.

Noise (off unless asked, seeded by the fleet's seed): a healthy pair is transiently low with probability
``transient`` (it measures ``transient_factor`` of its figure: a congestion, a neighbour's job; the pairs it hit are
kept in ``transients``), and a pair through the bad node measures like a healthy one with probability ``miss``.
"""

from __future__ import annotations

import random

from ansible_collections.aifabric.acceptance.plugins.filter.pairings import pairings
from ansible_collections.aifabric.acceptance.plugins.module_utils import expectations, results
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import attribution

CHECK = "rdma.ib_write_bw"
TARGET = "mlx5_0"
HEALTHY_GBIT_S = 390.0
FLOOR = {"min": 360.0, "source": "90 % of the lower active port rate of both ends, 400 Gb/s"}
STARTED = "2026-11-22T10:00:00Z"


def host_names(n):
    return ["gpu%04d" % i for i in range(n)]


def pair_records(server, client, value):
    """The two records of one measured pair (client judged against the floor, server plain)."""
    metrics = {"bw_avg_gbit_s": round(value, 2), "bw_peak_gbit_s": round(value * 1.01, 2),
               "msg_size_bytes": 65536}
    status, reason, expect = expectations.judge(metrics, {"bw_avg_gbit_s": FLOOR})
    tool = {"name": "perftest", "version": "6.22"}
    client_rec = results.make(CHECK, status, reason=reason, host=client, peer=server, target=TARGET,
                              metrics=metrics, expect=expect, facts={"side": "client"}, tool=tool,
                              started=STARTED, duration_s=5.2)
    server_rec = results.make(CHECK + ".server", "pass", host=server, peer=client, target=TARGET,
                              metrics=dict(metrics), facts={"side": "server"}, tool=tool, started=STARTED,
                              duration_s=5.4)
    return results.rests_on([client_rec, server_rec])     # one run each, as the perftest adapter says


class Fleet:
    """Hosts, the injected faults, and a measurement model with seeded noise."""

    def __init__(self, n, mode="all", random_rounds=1, seed=7, node_factor=0.45, link_factor=0.38,
                 noise=0.005, directed=False, transient=0.0, transient_factor=0.6, miss=0.0):
        self.hosts = host_names(n)
        self.mode = mode
        self.rng = random.Random(seed)
        self.node_factor, self.link_factor, self.noise = node_factor, link_factor, noise
        self.transient, self.transient_factor, self.miss = transient, transient_factor, miss
        self.noise_rng = random.Random("noise %d" % seed)     # its own stream: the figures stay as without noise
        self.transients = []        # the healthy pairs a transient made low, in measurement order
        if mode == "random":
            self.rounds = pairings(self.hosts, mode="random", random_rounds=random_rounds, seed=seed, directed=directed)
        else:
            self.rounds = pairings(self.hosts, mode=mode, directed=directed)
        pairs = [frozenset(p) for rnd in self.rounds for p in rnd]
        degree = {}
        for pair in pairs:
            for host in pair:
                degree[host] = degree.get(host, 0) + 1
        # the bad node: a host a quarter into the list. The bad link: a measured pair from the middle of
        # the schedule that does not touch the bad node, and whose ends are not measured with the bad
        # node unless they have many pairs (in a ring, a host with two bad pairs out of two is rightly
        # a suspect node: nothing can tell it from a slow node)
        self.bad_node = self.hosts[n // 4]
        near = set(h for pair in pairs if self.bad_node in pair for h in pair)
        far = [pair for pair in pairs if self.bad_node not in pair
               and all(h not in near or degree[h] >= 4 for h in pair)]
        self.bad_link = far[len(far) // 2]
        self.records = []

    def value(self, server, client):
        value = HEALTHY_GBIT_S * (1.0 + self.rng.gauss(0.0, self.noise))
        pair = frozenset((server, client))
        if self.bad_node in pair:
            if not (self.miss and self.noise_rng.random() < self.miss):
                value *= self.node_factor
        elif pair == self.bad_link:
            value *= self.link_factor
        elif self.transient and self.noise_rng.random() < self.transient:
            value *= self.transient_factor
            self.transients.append(pair)
        return value

    def measure(self, rounds, sweep_name=None):
        """The records of ``rounds``; ``sweep_name``: the sweep's name in their params, as perftest_sweep records it
        (attribution.CONFIRM_SWEEP for the confirmation pass)."""
        for rnd in rounds:
            for server, client in rnd:
                pair = pair_records(server, client, self.value(server, client))
                for rec in pair if sweep_name else ():
                    rec.setdefault("params", {})["sweep_name"] = sweep_name
                self.records.extend(pair)
        return self.records

    def confirm(self, per_suspect=2):
        """The confirmation pass of playbooks/rdma.yml: suspects against known-good hosts, unconfirmed pairs again."""
        verdicts, findings = attribution.analyze(self.records, {})
        extra = attribution.plan_confirmation(findings, self.hosts, per_suspect=per_suspect,
                                              records=self.records + verdicts)
        self.measure(extra, sweep_name=attribution.CONFIRM_SWEEP)
        return extra


def build(n, mode, random_rounds=1, confirm=False, seed=7, directed=False, **noise):
    """A measured fleet: the schedule's records, plus the confirmation pass's when ``confirm``; ``noise``: the
    Fleet's transient, transient_factor, miss."""
    fleet = Fleet(n, mode=mode, random_rounds=random_rounds, seed=seed, directed=directed, **noise)
    fleet.measure(fleet.rounds)
    if confirm:
        fleet.confirm()
    return fleet
