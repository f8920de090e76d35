# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filter aifabric.acceptance.group_screen_hosts (plugin_utils/group_screen.kept): the hosts the screen's next
rounds may still use - the set the role's round loop goes on with. What matters is that it never leaves out a host a
later round plans (a test's host, its launcher, a known-good partner): driven round by round through the real
planner on whole fleets - bad nodes, noise (healthy tests failing, bad ones passing), topology groups with hosts of no
group, one and two runs per verdict - every round's tests stay inside the hosts kept after the round before, and
the kept set only shrinks; at 1000 hosts with 5 bad nodes it drops most of the fleet after the recheck."""

from __future__ import annotations

import random

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.aifabric.acceptance.plugins.filter.group_screen import group_screen
from ansible_collections.aifabric.acceptance.plugins.filter.group_screen_hosts import FilterModule, group_screen_hosts
from ansible_collections.aifabric.acceptance.plugins.module_utils import results
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import group_screen as planner


def _drive(hosts, bad, seed, topology=None, noise=0.0, evidence=2, group_size=None, rounds=40):
    """[(the round's tests' hosts, the hosts kept before it)] of a screen driven to its end (noise: the chance that
    a test's outcome is the wrong one)."""
    rng = random.Random(seed)
    outcomes, kept, seen = [], list(hosts), []
    for _round in range(rounds):
        tests = [t for t in planner.plan(hosts, outcomes, group_size=group_size, topology=topology, evidence=evidence)
                 if len(t["hosts"]) >= 2]
        if not tests:
            break
        seen.append((set(h for t in tests for h in t["hosts"]), set(kept)))
        for test in tests:
            right = not any(h in bad for h in test["hosts"])
            outcomes.append((test["hosts"], right if rng.random() >= noise else not right))
        kept = planner.kept(hosts, outcomes, topology, evidence)
    return seen


@pytest.mark.parametrize("evidence", [1, 2])
@pytest.mark.parametrize("noise", [0.0, 0.1])
@pytest.mark.parametrize("shape", ["flat", "leaves", "leaves with hosts of no group"])
def test_no_round_plans_a_host_the_round_before_left_out(shape, noise, evidence):
    dropped = 0
    for n in (8, 16, 40):
        hosts = ["n%02d" % i for i in range(n)]
        topology = None
        if shape != "flat":
            topology = dict((h, "leaf%d" % (i // 8)) for i, h in enumerate(hosts)
                            if shape == "leaves" or i % 7 != 3)
        for seed in range(6):
            bad = set(random.Random(seed + n).sample(hosts, 1 + seed % 3))
            for size in (None, 2, 4):
                seen = _drive(hosts, bad, seed, topology, noise, evidence, size)
                for index, (used, kept) in enumerate(seen):
                    assert used <= kept, (shape, n, seed, size, index, sorted(used - kept))
                    if index:
                        assert kept <= seen[index - 1][1]          # a host left out never comes back
                dropped += len(hosts) - len(seen[-1][1])
    assert dropped > 0                                            # the rule does leave hosts out


def test_a_thousand_hosts_with_five_bad_ones_walk_a_third_of_the_rounds():
    hosts = ["n%04d" % i for i in range(1000)]
    bad = set(random.Random(1).sample(hosts, 5))
    seen = _drive(hosts, bad, 1)
    walked = sum(len(kept) for _used, kept in seen)
    assert all(used <= kept for used, kept in seen)
    assert len(seen) >= 6 and walked < 0.4 * 1000 * len(seen), (len(seen), walked)
    assert [len(kept) for _used, kept in seen][:2] == [1000, 1000]      # the screen and its recheck: every host


def rec(test, status):
    return results.make("nccl.all_reduce", status, reason=None if status == "pass" else "x", host=test["hosts"][0],
                        params={"argv": ["mpirun"], "env": {planner.MARKER_ENV: test["marker"]}})


def test_the_filter_reads_the_screen_records_as_the_planner_does():
    hosts = ["h%d" % i for i in range(8)]
    assert group_screen_hosts(hosts) == hosts                     # before the first round: every host
    first = group_screen(hosts, group_size=2, evidence=1)
    records = [rec(t, "fail" if "h5" in t["hosts"] else "pass") for t in first]
    records.append(results.make("nccl.all_reduce", "fail", reason="no marker", host="h7"))
    # one run per verdict: [h4, h5] failed, the rest known good; 2 not known good -> the first 2 + 1 + 1 known good
    assert group_screen_hosts(hosts, records=records, check="nccl.all_reduce", evidence=1) == [
        "h0", "h1", "h2", "h3", "h4", "h5"]
    assert group_screen_hosts(hosts, records=records, check="nccl.alltoall", evidence=1) == hosts
    leaves = dict((h, "A" if i < 4 else "B") for i, h in enumerate(hosts))
    assert group_screen_hosts(hosts, records=records, topology=leaves, check="", evidence=1) == hosts
    assert FilterModule().filters()["group_screen_hosts"] is group_screen_hosts


@pytest.mark.parametrize("kwargs, message", [
    ({"records": "x"}, "records must be a list"),
    ({"check": 3}, "check must be a check name"),
    ({"evidence": 0}, "evidence must be >= 1"),
    ({"topology": ["a"]}, "topology must map"),
])
def test_bad_input_is_named(kwargs, message):
    with pytest.raises(AnsibleFilterError, match=message):
        group_screen_hosts(["a", "b"], **kwargs)
    with pytest.raises(AnsibleFilterError, match="listed twice"):
        group_screen_hosts(["a", "a"])
