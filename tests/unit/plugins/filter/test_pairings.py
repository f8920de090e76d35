# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

import itertools

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.aifabric.acceptance.plugins.filter.pairings import FilterModule, pairings


def hosts(n):
    return ["node%02d" % i for i in range(n)]


def assert_disjoint(rounds):
    for rnd in rounds:
        seen = [h for pair in rnd for h in pair]
        assert len(seen) == len(set(seen)), rnd
        for pair in rnd:
            assert len(pair) == 2 and pair[0] != pair[1]


@pytest.mark.parametrize("n", list(range(2, 18)) + [31, 64, 101])
def test_all_is_a_one_factorisation(n):
    rounds = pairings(hosts(n), mode="all")
    assert_disjoint(rounds)
    assert len(rounds) == (n - 1 if n % 2 == 0 else n)
    covered = [frozenset(p) for rnd in rounds for p in rnd]
    assert len(covered) == len(set(covered)) == n * (n - 1) // 2
    assert set(covered) == set(frozenset(p) for p in itertools.combinations(hosts(n), 2))
    for rnd in rounds:
        # a perfect matching for even n, one idle host for odd n
        assert len(rnd) == n // 2


@pytest.mark.parametrize("n", [4, 8, 16, 9])
def test_all_balances_roles(n):
    rounds = pairings(hosts(n), mode="all", alternate=True)
    counts = dict((h, 0) for h in hosts(n))
    for rnd in rounds:
        for server, client in rnd:
            counts[server] += 1
            counts[client] -= 1
    # each host serves about as often as it is client (difference at most 2 over the whole schedule)
    assert max(abs(v) for v in counts.values()) <= 2, counts


def test_directed_covers_both_orientations():
    rounds = pairings(hosts(6), mode="all", directed=True)
    assert len(rounds) == 10
    assert_disjoint(rounds)
    ordered = [tuple(p) for rnd in rounds for p in rnd]
    assert set(ordered) == set(itertools.permutations(hosts(6), 2))


@pytest.mark.parametrize("n,expected_rounds", [(2, 1), (4, 2), (6, 2), (5, 3), (7, 3)])
def test_ring(n, expected_rounds):
    rounds = pairings(hosts(n), mode="ring", alternate=False)
    assert_disjoint(rounds)
    assert len(rounds) == expected_rounds
    edges = set(frozenset(p) for rnd in rounds for p in rnd)
    ring = set(frozenset((hosts(n)[i], hosts(n)[(i + 1) % n])) for i in range(n))
    assert edges == ring


def test_random_is_seeded_and_perfect():
    a = pairings(hosts(10), mode="random", random_rounds=3, seed=7)
    b = pairings(hosts(10), mode="random", random_rounds=3, seed=7)
    c = pairings(hosts(10), mode="random", random_rounds=3, seed=8)
    assert a == b and a != c
    assert len(a) == 3
    assert_disjoint(a)
    for rnd in a:
        assert sorted(h for p in rnd for h in p) == hosts(10)
    odd = pairings(hosts(7), mode="random", random_rounds=2, seed=1)
    for rnd in odd:
        assert len(rnd) == 3


def test_random_rounds_default_is_three_and_rounds_is_not_an_argument():
    """The one default of the random rounds (issue 23: 3 over SSH, 1 on Kubernetes before) is the filter's; the
    retired argument name is refused, not silently ignored."""
    assert len(pairings(hosts(8), mode="random")) == 3
    with pytest.raises(TypeError):
        pairings(hosts(8), mode="random", rounds=1)  # pylint: disable=unexpected-keyword-arg
    with pytest.raises(AnsibleFilterError, match="random_rounds must be at least 1"):
        pairings(hosts(8), mode="random", random_rounds=0)


def test_star():
    rounds = pairings(hosts(4), mode="star", reference="node02")
    assert rounds == [[["node02", "node00"]], [["node02", "node01"]], [["node02", "node03"]]]
    assert pairings(hosts(3), mode="star")[0][0][0] == "node00"
    with pytest.raises(AnsibleFilterError, match="reference host"):
        pairings(hosts(3), mode="star", reference="nope")


def test_groups_cross_only():
    names = hosts(6)
    racks = {"node00": "r1", "node01": "r1", "node02": "r2", "node03": "r2", "node04": "r3", "node05": "r3"}
    rounds = pairings(names, mode="groups", groups=racks)
    assert_disjoint(rounds)
    pairs = [frozenset(p) for rnd in rounds for p in rnd]
    expected = set(frozenset(p) for p in itertools.combinations(names, 2) if racks[p[0]] != racks[p[1]])
    assert len(pairs) == len(set(pairs)) and set(pairs) == expected
    assert pairings(names[:2], mode="groups", groups={"node00": "a", "node01": "a"}) == []
    with pytest.raises(AnsibleFilterError, match="without a group"):
        pairings(names, mode="groups", groups={"node00": "a"})


@pytest.mark.parametrize("kwargs,needle", [
    ({"mode": "mesh"}, "mode must be one of"),
    ({"mode": "random", "random_rounds": 0}, "at least 1"),
    ({"mode": "random", "random_rounds": "x"}, "integer"),
    ({"mode": "groups"}, "mapping"),
    ({"all_pairs_max_hosts": 1}, "at least 2"),
    ({"all_pairs_max_hosts": "x"}, "all_pairs_max_hosts must be an integer"),
    ({"all_pairs_max_hosts": True}, "all_pairs_max_hosts must be an integer"),
])
def test_errors_name_the_filter(kwargs, needle):
    with pytest.raises(AnsibleFilterError) as info:
        pairings(hosts(4), **kwargs)
    assert "aifabric.acceptance.pairings" in str(info.value) and needle in str(info.value)


@pytest.mark.parametrize("n,limit,expect", [
    (2, 32, "all"), (32, 32, "all"), (33, 32, "random"), (1000, 32, "random"), (9, 8, "random"), (8, 8, "all")])
def test_auto_is_every_pair_up_to_the_limit_then_random(n, limit, expect):
    """The default mode: every pair while that takes at most limit - 1 rounds, the random matchings above."""
    auto = pairings(hosts(n), all_pairs_max_hosts=limit, seed=3)
    assert auto == pairings(hosts(n), mode=expect, seed=3)
    assert auto == pairings(hosts(n), mode="auto", all_pairs_max_hosts=limit, seed=3)
    assert len(auto) == ((n - 1 if n % 2 == 0 else n) if expect == "all" else 3)
    if n == 1000:
        assert len(auto) == 3 and all(len(rnd) == 500 for rnd in auto)    # 3 rounds of 500 pairs, not 999 rounds


def test_input_errors_and_trivial():
    with pytest.raises(AnsibleFilterError, match="twice"):
        pairings(["a", "a"])
    with pytest.raises(AnsibleFilterError, match="list"):
        pairings("a,b")
    assert pairings([]) == [] and pairings(["a"]) == []
    assert FilterModule().filters()["pairings"] is pairings
