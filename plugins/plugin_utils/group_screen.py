# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Adaptive group testing of a fleet with multi-node collectives: screen -> bisect -> confirm (issue 25 item 1).

A collective over a group of nodes (nccl-tests or the torch probe across them) runs at the speed of its slowest
member: a group below its expectation holds at least one bad node, a group at it holds none (for faults a
collective sees: a slow or broken node; see "what a group test cannot see" in docs/group-screen.md). Instead of
testing every node (or every pair), the fleet is split into groups that run in parallel, and only the groups that
fail are split further.

The planner is stateless: each round's tests follow from the outcomes so far, ``[(hosts, passed)]``, so a playbook
(or the simulation in bench/group_screen_sim.py) runs a round, appends its outcomes and asks again:

- **known good**: every host of a passing test;
- **bad** (confirmed): the one host of a failing test whose other hosts are all known good;
- **pools**: the hosts of a failing test that holds no confirmed-bad host, less the known good - each pool holds
  at least one bad host; a pool of one is a bad host (the rule above);
- **round 0** (screen): groups of ``group_size`` hosts (default about the square root of the fleet), inside the
  topology groups when a ``topology`` ({host: rack, leaf or clique}) is given, so that a group shares a switch;
- **next rounds** (bisect, binary splitting): for each smallest pool, test its first half. A passing half makes
  its hosts known good, and the rest of the pool is the pool (no test needed to learn it); a failing half is the
  new pool. A half of one host is tested with known-good hosts (``filler`` of them: the confirmation);
- hosts left that are neither known good, bad nor in a pool (they shared a failing test with a bad host, or were
  never tested) are screened again, in groups;
- tests of one round never share a host; known-good fillers are spread over the tests.

``plan(hosts, outcomes, ...)`` -> the next round: ``[{"hosts": [...], "purpose": screen|bisect|confirm|rescreen}]``,
empty when every host is known good or bad. ``state(hosts, outcomes)`` -> ``(good, bad, pools, unknown)``.
Controller-only (plugin_utils), pure, no Ansible imports.
"""

from __future__ import annotations

import math

FILLER = 1            # known-good hosts added to a single suspect: a collective needs two nodes or more


def default_group_size(count):
    """About the square root of the fleet, at least 2 (a collective needs two nodes)."""
    return max(2, int(round(math.sqrt(max(count, 1)))))


def state(hosts, outcomes):
    """(good, bad, pools, unknown) after the outcomes: sets of hosts, and the pools as a list of sorted lists (the
    smallest pools only: a pool holding a smaller one is answered by it)."""
    hosts = list(hosts)
    good, bad = set(), set()
    for tested, passed in outcomes:
        if passed:
            good.update(tested)
    changed = True
    while changed:                          # a confirmed bad host can make another failing test uninformative
        changed = False
        for tested, passed in outcomes:
            rest = set(tested) - good
            if not passed and len(rest) == 1 and not rest & bad:
                bad.update(rest)
                changed = True
    pools = []
    for tested, passed in outcomes:
        if passed or set(tested) & bad:
            continue
        pool = frozenset(set(tested) - good)
        if len(pool) >= 2 and pool not in pools:
            pools.append(pool)
    smallest = [p for p in pools if not any(q < p for q in pools)]
    # two pools may overlap (a rescreen group with a pool's host): keep them disjoint, the smaller first
    chosen, taken = [], set()
    for pool in sorted(smallest, key=lambda p: (len(p), sorted(p))):
        if not pool & taken:
            chosen.append(sorted(pool, key=hosts.index))
            taken |= pool
    unknown = set(hosts) - good - bad - taken
    return good, bad, chosen, unknown


def _chunks(members, size):
    """Members split into groups of about ``size`` (never a group of one when there are two or more)."""
    if not members:
        return []
    count = max(1, int(math.ceil(len(members) / float(size))))
    base, extra = divmod(len(members), count)
    out, start = [], 0
    for index in range(count):
        end = start + base + (1 if index < extra else 0)
        out.append(members[start:end])
        start = end
    return out


def _screen_groups(members, size, topology):
    """Groups of about ``size``, each inside one topology group when a topology is given."""
    if not topology:
        return _chunks(members, size)
    by_group = {}
    for host in members:
        by_group.setdefault(str(topology.get(host, "")), []).append(host)
    out = []
    for key in sorted(by_group):
        out.extend(_chunks(by_group[key], size))
    return out


def _with_fillers(test, good, used, order):
    """A test of one host gets known-good fillers not used elsewhere in the round (None when there is none)."""
    if len(test["hosts"]) >= 2:
        return test
    spare = [h for h in order if h in good and h not in used][:FILLER]
    if not spare:
        return None
    used.update(spare)
    return dict(test, hosts=test["hosts"] + spare, purpose="confirm")


def plan(hosts, outcomes, group_size=None, topology=None):
    """The next round's tests (see the module docstring); [] when every host is resolved."""
    order = list(hosts)
    size = group_size or default_group_size(len(order))
    if not outcomes:
        return [{"hosts": g, "purpose": "screen"} for g in _screen_groups(order, size, topology)]
    good, _bad, pools, unknown = state(order, outcomes)
    tests = []
    for pool in pools:
        half = pool[:int(math.ceil(len(pool) / 2.0))]
        tests.append({"hosts": half, "purpose": "bisect"})
    left = [h for h in order if h in unknown]
    tests.extend({"hosts": g, "purpose": "rescreen"} for g in _screen_groups(left, size, topology))
    used = set(h for t in tests for h in t["hosts"])
    out = []
    for test in tests:
        ready = _with_fillers(test, good, used, order)
        if ready is not None:
            out.append(ready)
    return out


def run(hosts, measure, group_size=None, topology=None, max_rounds=64):
    """Drive the screen to the end with ``measure(round_tests) -> [passed, ...]`` (a simulation, or a test's
    stand-in). Returns {"good", "bad", "unresolved", "rounds": [[test, ...], ...], "outcomes"}."""
    outcomes, rounds = [], []
    for _index in range(max_rounds):
        tests = plan(hosts, outcomes, group_size=group_size, topology=topology)
        if not tests:
            break
        results = measure(tests)
        rounds.append(tests)
        outcomes.extend((t["hosts"], bool(ok)) for t, ok in zip(tests, results))
    good, bad, pools, unknown = state(hosts, outcomes)
    unresolved = sorted(set(h for p in pools for h in p) | unknown)
    return {"good": sorted(good), "bad": sorted(bad), "unresolved": unresolved, "rounds": rounds,
            "outcomes": outcomes}


# ------------------------------------------------------------------ the screen's records (a playbook's rounds)
#
# A screen test is one multi-node run launched from the first host of its group. Its record (nccl.<collective>)
# is the launcher's, and nothing in a measured record names the group by inventory name (params.argv holds the
# mpirun argv with a hostfile, facts.hosts the node names the tool printed). The screen therefore exports one
# environment variable to every rank of the run, MARKER_ENV = "round=<n> purpose=<purpose> hosts=<h1> <h2> ...",
# which the record carries in params.env like the rest of the run's environment: the test's round, purpose and
# hosts (inventory names, never containing a space). No module option and no record field is added for it.

MARKER_ENV = "AIFABRIC_SCREEN"
PURPOSES = ("screen", "bisect", "confirm", "rescreen")
OUTCOME = {"pass": True, "warn": True, "fail": False, "error": False}      # skip: not an outcome


def marker(round_index, purpose, hosts):
    """The MARKER_ENV value of one test. ValueError on a host name that cannot be carried."""
    hosts = [str(h) for h in hosts]
    if purpose not in PURPOSES:
        raise ValueError("purpose must be one of %s, got %r" % (", ".join(PURPOSES), purpose))
    if len(hosts) < 2 or any(not h or any(c.isspace() for c in h) for h in hosts):
        raise ValueError("a screen test needs two hosts or more, named without spaces, got %r" % (hosts,))
    return "round=%d purpose=%s hosts=%s" % (int(round_index), purpose, " ".join(hosts))


def parse_marker(value):
    """{round, purpose, hosts} of a MARKER_ENV value, or None when it is not one."""
    if not isinstance(value, str):
        return None
    words = value.split()
    if len(words) < 4 or not words[0].startswith("round=") or not words[1].startswith("purpose=") \
            or not words[2].startswith("hosts="):
        return None
    try:
        round_index = int(words[0][len("round="):])
    except ValueError:
        return None
    purpose = words[1][len("purpose="):]
    hosts = [words[2][len("hosts="):]] + words[3:]
    if purpose not in PURPOSES or round_index < 0 or not all(hosts) or len(hosts) < 2:
        return None
    return {"round": round_index, "purpose": purpose, "hosts": hosts}


def screen_of(record):
    """The screen test a measured record belongs to ({round, purpose, hosts}), or None."""
    if not isinstance(record, dict):
        return None
    params = record.get("params")
    env = params.get("env") if isinstance(params, dict) else None
    return parse_marker(env.get(MARKER_ENV)) if isinstance(env, dict) else None


def is_screen_record(record):
    """True for the measured record of a screen test (it measures a group, not its host)."""
    tool = record.get("tool") if isinstance(record, dict) else None
    measured = not (isinstance(tool, dict) and tool.get("name") == "fleet-analysis")
    return measured and screen_of(record) is not None


def screen_outcomes(records, check=None):
    """[(hosts, passed)] of the screen records (of ``check`` when given), in record order: pass and warn pass,
    fail and error fail (a run that could not finish holds a node that cannot run it), skip is no outcome."""
    out = []
    for rec in records or []:
        test = screen_of(rec) if is_screen_record(rec) else None
        if test is None or (check is not None and rec.get("check") != check):
            continue
        passed = OUTCOME.get(rec.get("status"))
        if passed is not None:
            out.append((test["hosts"], passed))
    return out


def max_rounds(count, group_size=None, extra=5):
    """The bound on a screen's rounds: one screen round, binary splitting of the largest group (log2 of it),
    one confirmation, and ``extra`` rounds for the rescreens that follow a confirmed bad node."""
    size = min(max(count, 2), group_size or default_group_size(count))
    return 2 + int(math.ceil(math.log(max(size, 2), 2))) + extra
