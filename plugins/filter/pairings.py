# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
name: pairings
short_description: Who tests against whom - rounds of disjoint server/client pairs
version_added: 1.0.0
author: aifabric.acceptance contributors (@aifabric)
description:
  - Turns a list of hosts into B(rounds) for pairwise tests such as perftest. A round is a list of
    C([server, client]) pairs in which no host appears twice, so every pair of a round can run at
    the same time without a host serving two tests.
  - V(all) is the round-robin "circle" 1-factorisation. For an even number N of hosts it gives N-1
    rounds, each a perfect matching, and covers every unordered pair exactly once. For odd N it adds
    a virtual host, giving N rounds with one host idle per round.
  - V(ring) pairs host i with host i+1 (and the last with the first); the ring's edges are split into
    2 rounds for even N (3 for odd N, since an odd cycle needs 3 colours).
  - V(random) gives O(random_rounds) random perfect matchings (seeded, so the same seed gives the same
    rounds). With odd N one random host idles in each round.
  - "V(auto) (the default) is V(all) up to O(all_pairs_max_hosts) hosts and V(random) above - every pair where that
    takes at most O(all_pairs_max_hosts) - 1 rounds, O(random_rounds) matchings on a large fleet (N - 1 rounds of
    every pair would take hours at 1000 nodes). A random matching cannot tell a bad link from a bad node by itself;
    run the confirmation pass after it (role aifabric.acceptance.rdma's C(rdma_confirm), on by default)."
  - V(star) tests every host against one reference host (O(reference), default the first host),
    one pair per round because the reference can run one test at a time.
  - V(groups) pairs only hosts of different groups (racks, leaf switches), for cross-switch coverage;
    every cross-group pair exactly once, scheduled greedily into rounds of disjoint pairs.
options:
  _input:
    description: The hosts (inventory names), in a stable order. Duplicates are an error.
    type: list
    elements: str
    required: true
  mode:
    description: How to pair the hosts.
    type: str
    choices: [auto, all, ring, random, star, groups]
    default: auto
  all_pairs_max_hosts:
    description:
      - For O(mode=auto), the most hosts whose every pair is tested (V(all)); above it, V(random).
    type: int
    default: 32
  directed:
    description:
      - Cover both orientations of every pair (A serves B, then B serves A). Doubles the rounds.
      - For V(all) the second half of the rounds repeats the first with roles swapped.
    type: bool
    default: false
  alternate:
    description:
      - Balance roles so each host is server about as often as client (the circle method otherwise
        tends to put the same host on the same side). Applies to every mode but V(star).
    type: bool
    default: true
  random_rounds:
    description:
      - Number of random matchings for O(mode=random). The one default of the collection's random rounds, over SSH
        (role aifabric.acceptance.rdma) and on Kubernetes alike.
    type: int
    default: 3
  seed:
    description: Seed for O(mode=random). The same hosts, rounds and seed always give the same result.
    type: int
    default: 0
  reference:
    description: The reference host of O(mode=star) (default the first host). It is always the server.
    type: str
  groups:
    description:
      - For O(mode=groups), a mapping of host to group name (for example each host's rack from a
        host variable). Hosts missing from the mapping are an error.
    type: dict
"""

EXAMPLES = r"""
- name: Rounds covering every pair of the rdma_nodes group
  ansible.builtin.set_fact:
    rdma_rounds: "{{ groups['rdma_nodes'] | aifabric.acceptance.pairings(mode='all') }}"

- name: Three random matchings (screening a large fleet cheaply)
  ansible.builtin.set_fact:
    rdma_rounds: "{{ groups['rdma_nodes'] | aifabric.acceptance.pairings(mode='random', random_rounds=3, seed=42) }}"

- name: Cross-rack pairs only, racks from a host variable
  ansible.builtin.set_fact:
    rdma_rounds: >-
      {{ groups['rdma_nodes'] | aifabric.acceptance.pairings(mode='groups',
         groups=dict(groups['rdma_nodes'] | zip(groups['rdma_nodes'] | map('extract', hostvars, 'rack')))) }}
"""

RETURN = r"""
_value:
  description: The rounds, each a list of C([server, client]) pairs; no host appears twice in a round.
  type: list
  elements: list
"""

import random as _random

from ansible.errors import AnsibleFilterError
from ansible_collections.aifabric.acceptance.plugins.plugin_utils.rounds import pack_rounds

MODES = ("auto", "all", "ring", "random", "star", "groups")


def _fail(message):
    raise AnsibleFilterError("aifabric.acceptance.pairings: %s" % message)


def _check_hosts(hosts):
    if not isinstance(hosts, (list, tuple)):
        _fail("input must be a list of host names, got %s" % type(hosts).__name__)
    hosts = [str(h) for h in hosts]
    seen = set()
    for host in hosts:
        if host in seen:
            _fail("host %r appears twice in the input" % host)
        seen.add(host)
    return hosts


def circle_rounds(hosts):
    """Round-robin 1-factorisation: every unordered pair exactly once, one perfect matching per round."""
    players = list(hosts)
    if len(players) < 2:
        return []
    if len(players) % 2:
        players.append(None)
    n = len(players)
    fixed, rest = players[0], players[1:]
    out = []
    for r in range(n - 1):
        circle = [fixed] + rest[r:] + rest[:r]
        pairs = []
        for i in range(n // 2):
            a, b = circle[i], circle[n - 1 - i]
            if a is None or b is None:
                continue
            # alternate the fixed host's side round by round, and the others by position
            pairs.append([a, b] if (i + r) % 2 == 0 else [b, a])
        out.append(pairs)
    return out


def ring_rounds(hosts):
    """Edges i-(i+1) of the ring, split into rounds of disjoint pairs (2 for even N, 3 for odd N)."""
    n = len(hosts)
    if n < 2:
        return []
    if n == 2:
        return [[[hosts[0], hosts[1]]]]
    edges = [[hosts[i], hosts[(i + 1) % n]] for i in range(n)]
    if n % 2 == 0:
        return [edges[0::2], edges[1::2]]
    return [edges[0:n - 1:2], edges[1:n - 1:2], [edges[n - 1]]]


def random_matchings(hosts, rounds, seed):
    rng = _random.Random(seed)
    out = []
    for unused_index in range(rounds):
        order = list(hosts)
        rng.shuffle(order)
        out.append([[order[i], order[i + 1]] for i in range(0, len(order) - 1, 2)])
    return out


def star_rounds(hosts, reference):
    if reference is None:
        reference = hosts[0] if hosts else None
    if reference not in hosts:
        _fail("reference host %r is not in the input" % (reference,))
    return [[[reference, h]] for h in hosts if h != reference]


def group_rounds(hosts, groups):
    if not isinstance(groups, dict):
        _fail("mode=groups needs groups: a mapping of host to group name")
    missing = [h for h in hosts if h not in groups]
    if missing:
        _fail("hosts without a group: %s" % ", ".join(missing))
    if len(set(str(groups[h]) for h in hosts)) < 2:
        return []
    # circle schedule over all hosts, keep only cross-group pairs, then pack them
    # greedily into as few rounds of disjoint pairs as possible
    edges = [p for rnd in circle_rounds(hosts) for p in rnd if str(groups[p[0]]) != str(groups[p[1]])]
    return pack_rounds(edges)


def _balance(rounds):
    """Swap roles pair by pair so that each host is server about as often as client."""
    served = {}
    out = []
    for rnd in rounds:
        new = []
        for server, client in rnd:
            if served.get(server, 0) > served.get(client, 0):
                server, client = client, server
            served[server] = served.get(server, 0) + 1
            served[client] = served.get(client, 0) - 1
            new.append([server, client])
        out.append(new)
    return out


def resolved_mode(count, mode="auto", all_pairs_max_hosts=32):
    """The mode ``mode`` means for ``count`` hosts: ``auto`` is ``all`` up to ``all_pairs_max_hosts``, else ``random``."""
    if mode not in MODES:
        _fail("mode must be one of %s, got %r" % (", ".join(MODES), mode))
    if mode != "auto":
        return mode
    try:
        limit = int(all_pairs_max_hosts)
    except (TypeError, ValueError):
        limit = -1
    if isinstance(all_pairs_max_hosts, bool) or limit < 2:
        _fail("all_pairs_max_hosts must be an integer of at least 2, got %r" % (all_pairs_max_hosts,))
    return "all" if count <= limit else "random"


def pairings(hosts, mode="auto", directed=False, alternate=True, random_rounds=3, seed=0, reference=None, groups=None,
             all_pairs_max_hosts=32):
    """Rounds of [server, client] pairs; see DOCUMENTATION."""
    hosts = _check_hosts(hosts)
    mode = resolved_mode(len(hosts), mode, all_pairs_max_hosts)
    if mode == "all":
        out = circle_rounds(hosts)
    elif mode == "ring":
        out = ring_rounds(hosts)
    elif mode == "random":
        try:
            count = int(random_rounds)
        except (TypeError, ValueError):
            _fail("random_rounds must be an integer, got %r" % (random_rounds,))
        if count < 1:
            _fail("random_rounds must be at least 1, got %d" % count)
        out = random_matchings(hosts, count, seed)
    elif mode == "star":
        out = star_rounds(hosts, reference)
    else:
        out = group_rounds(hosts, groups)
    if alternate and mode != "star":
        out = _balance(out)
    if directed:
        out = out + [[[client, server] for server, client in rnd] for rnd in out]
    return out


class FilterModule(object):
    """aifabric.acceptance.pairings"""

    def filters(self):
        return {"pairings": pairings}
