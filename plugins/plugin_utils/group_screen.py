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

With a topology, a host is judged inside its own group (a leaf whose uplink is slow must not be reported as bad
nodes, issue 25): every screen, bisect and rescreen test stays inside one group, a single suspect is confirmed with
a known-good host of its own group first, and a failing test whose only not-known-good host met known-good hosts of
other groups only does not confirm it (the uplink could be what is slow): it is a pool of one, confirmed inside its
group once a host there is known good (a host alone in its group is judged across). A host without a group (its
switch unknown) in a screen where others have one is never confirmed bad: it is tried with known-good hosts of
``TRIES`` groups it has not failed with (a pass clears it), then left unresolved. The paths BETWEEN the groups
are screened the same way one level up: **span** tests of one known-good host per group (groups of about the
square root of the groups, bisected, a single group confirmed with known-good groups), in the same rounds as the
rest on hosts the round does not use; a group confirmed slow to the rest is ``group_verdicts``' slow group.

``plan(hosts, outcomes, ...)`` -> the next round: ``[{"hosts": [...], "purpose": screen|bisect|confirm|rescreen|span}]``,
empty when every host (and group) is known good or bad. ``state(hosts, outcomes, topology)`` -> ``(good, bad, pools,
unknown)``; ``group_verdicts(hosts, outcomes, topology)`` -> ``(slow groups, unresolved groups)``; ``kept(hosts,
outcomes, topology)`` -> the hosts the next rounds may still use (a playbook's round loop goes on with them only).
Controller-only (plugin_utils), pure, no Ansible imports.
"""

from __future__ import annotations

import math
from urllib.parse import quote, unquote

from ansible_collections.aifabric.acceptance.plugins.plugin_utils import cabling

FILLER = 1            # known-good hosts added to a single suspect: a collective needs two nodes or more
TRIES = 2             # groups a host without a topology group is tried with before it is left unresolved
EVIDENCE = 2          # runs a host verdict rests on: passes to be known good, failing confirmations to be bad
MARGIN_PCT = 5.0      # the inconclusive band: a figure within this many % of its bound is run again (docs/group-screen.md)
LEGACY = {"evidence": 1, "margin_pct": 0.0}   # what a marker that names neither was planned with (one run decided)


def default_group_size(count):
    """About the square root of the fleet, at least 2 (a collective needs two nodes)."""
    return max(2, int(round(math.sqrt(max(count, 1)))))


def _key(topology, host):
    """The topology group of a host (its leaf, rack or clique), None when the topology does not name one."""
    value = (topology or {}).get(host)
    return None if value is None or str(value) == "" else str(value)


def _in_use(topology, hosts):
    """True when the screen uses a topology: some host has a group."""
    return any(_key(topology, h) is not None for h in hosts)


def _conclusive(host, tested, topology, hosts, alone_across=True):
    """A failing test whose only host not known good is ``host`` confirms it bad - unless the topology says a slow
    path can explain it: the host has a topology group with other hosts, and no known-good host of the test is in
    it (the test crossed an uplink, whose slowness would look the same); or the host has no group (its switch is
    unknown) in a screen that uses a topology: no test of it is known to stay inside its switch, so none confirms
    it (it is tried with other groups, ``_loose_fillers``, and a pass clears it). Without a topology in the screen
    the failure confirms it (the known weakness, docs/group-screen.md)."""
    key = _key(topology, host)
    if key is None:
        return not _in_use(topology, hosts)
    if any(h != host and _key(topology, h) == key for h in tested):
        return True
    return alone_across and not any(h != host and _key(topology, h) == key for h in hosts)


def _passes(outcomes):
    """{host: [index of each passing run it took part in]}."""
    out = {}
    for index, (tested, passed) in enumerate(outcomes):
        if passed is True:
            for host in tested:
                out.setdefault(host, []).append(index)
    return out


def _failing_runs(outcomes, evidence):
    """([(index, hosts, soft)], pending): every failing run (``soft`` False), and every set of hosts whose runs were
    all inside the inconclusive band ``evidence`` times (one run, ``soft`` True: localised like a failing test, never
    believed as one); ``pending``: the sets inside the band fewer times (to run again as they were), in order."""
    fails, inside, decided, first = [], {}, set(), {}
    for index, (tested, passed) in enumerate(outcomes):
        key = frozenset(tested)
        if passed is None:
            inside.setdefault(key, []).append(index)
            first.setdefault(key, list(tested))
        else:
            decided.add(key)
            if not passed:
                fails.append((index, key, False))
    pending = []
    for key, seen in inside.items():
        if key in decided:
            continue
        if len(seen) >= evidence:
            fails.append((seen[-1], key, True))
        else:
            pending.append(first[key])
    return sorted(fails, key=lambda f: f[0]), pending


def _resets(fails, bad, passes, evidence, topology=None):
    """{host: [index of each failing run it took part in that no OTHER bad host explains]}: a host's passes before
    such a run no longer count (a host that passed once and then failed is not cleared by that pass) - except a run
    across topology groups (a slow path between them explains it as well), and the known-good partners of a
    confirmation (a failing run whose one host not known good then is its suspect: the run is evidence about the
    suspect, and the partners stay known good while it is judged). None with ``evidence`` 1: one pass clears
    a host for good, as the screen of one run per verdict did."""
    if evidence == 1:
        return None
    out = {}
    for index, tested, _inside in fails:          # in run order: a reset counts from the run after it
        if topology and len(set(_key(topology, h) for h in tested)) > 1:
            continue
        known = set(h for h in tested if _good_at(h, index, passes, out, evidence))
        for host in tested - known if len(tested - known) == 1 else tested:   # a confirmation: its suspect only
            if not (tested & bad) - {host}:
                out.setdefault(host, []).append(index)
    return out


def _good_at(host, index, passes, resets, evidence):
    """True when ``host`` passed ``evidence`` runs before run ``index`` since its last failing run before it that no
    other bad host explains (_resets; any pass with ``evidence`` 1)."""
    last = max([j for j in (resets or {}).get(host, ()) if j < index], default=-1)
    return sum(1 for j in passes.get(host, ()) if last < j < index) >= evidence


def _confirmations(hosts, fails, topology, passes, resets, evidence):
    """({host: [(index, partners)]}, {host: [index]}): the failing runs that confirm ``host`` (_conclusive), hard and
    inside the band (soft): runs whose other hosts were all known good when they ran (_good_at) - a confirmation
    planned for it, never the bisection's failing runs that led to it (they were chosen for failing: no independent
    evidence). With ``evidence`` 1, as the screen of one run per verdict did: a failing run whose other hosts are
    known good now."""
    final = set(h for h in passes if _good_at(h, float("inf"), passes, resets, evidence))
    hard, soft = {}, {}
    for index, tested, inside in fails:
        when = float("inf") if evidence == 1 else index
        good = final if evidence == 1 else set(h for h in tested if _good_at(h, when, passes, resets, evidence))
        rest = tested - good
        if len(rest) != 1:
            continue
        host = next(iter(rest))
        if _conclusive(host, tested, topology, hosts, alone_across=evidence == 1):
            (soft if inside else hard).setdefault(host, []).append((index, tested - {host}))
    return hard, soft


def _localised(host, seen, fails, explained):
    """True when a failing run of ``host`` besides its confirmations (``seen``) and the one that first put it under
    suspicion localised it: two failing runs of it that are not confirmations and that no other host of
    ``explained`` (the bad hosts) explains - a failing bisection half that held it. A host named by elimination
    alone (a failing group whose first halves all passed names the rest without a run of its own) has one: the
    group's failure, which a noisy run of healthy hosts produces as well."""
    confirming = set(i for i, _p in seen)
    own = [i for i, tested, _inside in fails
           if host in tested and i not in confirming and not (tested & explained) - {host}]
    return len(own) >= 2


def _judged(hard, soft, passes, evidence, fails=(), explained=frozenset()):
    """(bad, doubt, suspects): a host failed ``evidence`` confirmations with different known-good partners and passed
    no run after the first is bad - with ``evidence`` 2 or more, one more confirmation where no failing run of its own
    localised it (_localised): the evidence against a host named by elimination is its confirmations only, each of
    which a healthy host fails with the noise's probability; one that passed a run after it is in doubt
    ("disagree"), as is one whose confirmation stayed inside the band ("band"); one with fewer failing confirmations
    is a suspect ({host: the partners it failed with}: its next confirmation takes another)."""
    bad, doubt, suspects = set(), {}, {}
    for host, seen in hard.items():
        first = seen[0][0]
        partners = set(p for _i, p in seen)
        needed = evidence + (1 if evidence > 1 and not _localised(host, seen, fails, explained) else 0)
        if any(j > first for j in passes.get(host, ())):
            doubt[host] = "disagree"
        elif len(seen) >= needed:      # the planner took another partner each time where there was one
            bad.add(host)
        else:
            suspects[host] = set().union(*partners)
    for host in soft:
        if host not in bad and host not in doubt:
            doubt[host] = "band"
            suspects.pop(host, None)
    return bad, doubt, suspects


def _pools(hosts, fails, passes, good, bad, doubt):
    """The smallest pools, disjoint, the smaller first: of each failing run holding no bad host, the hosts neither
    known good, in doubt, nor passing a run after it (a pass before it does not clear a host of it)."""
    pools = []
    for index, tested, _inside in fails:
        if tested & bad:
            continue
        pool = frozenset(h for h in tested if h not in good and h not in doubt
                         and not any(j > index for j in passes.get(h, ())))
        if pool and pool not in pools:
            pools.append(pool)
    smallest = [p for p in pools if not any(q < p for q in pools)]
    # two pools may overlap (a rescreen group with a pool's host): keep them disjoint, the smaller first
    chosen, taken = [], set()
    for pool in sorted(smallest, key=lambda p: (len(p), sorted(p))):
        if not pool & taken:
            chosen.append(sorted(pool, key=hosts.index))
            taken |= pool
    return chosen, taken


def assess(hosts, outcomes, topology=None, evidence=EVIDENCE):
    """Where every host stands after the outcomes ``[(hosts, passed)]`` (passed: True, False, or None for a run
    inside the inconclusive band): {"good", "bad", "pools", "unknown", "recheck", "doubt", "suspects", "pending"}.

    - **good**: passed ``evidence`` runs; **recheck**: passed fewer, in no pool (it is tested again, in another
      group); a pass clears a host of the failing runs before it (binary splitting), not of those after it;
    - **bad**: failed ``evidence`` confirmations (a failing run whose only host not known good is it, _conclusive)
      with different known-good partners, and passed nothing after the first; **doubt** {host: "disagree" | "band"}:
      passed a run after a failing confirmation, or a confirmation of it stayed inside the band - a warn, tested no
      more; **suspects** {host: partners it failed a confirmation with}: confirmed again with another partner;
    - **pools**: as in the module docstring, of the failing runs (and the sets inside the band ``evidence`` times);
    - **pending**: sets of hosts inside the band fewer times, run again as they were; **unknown**: the rest;
    - **confirmations**: {host: [index of each failing run that confirmed it]} (the evidence of a bad host).
    With ``evidence`` 1 and no run inside the band, this is the screen of one run per verdict."""
    hosts = list(hosts)
    outcomes = [(list(t), p) for t, p in outcomes]
    passes = _passes(outcomes)
    fails, pending = _failing_runs(outcomes, evidence)
    bad = set()
    for _step in range(len(hosts) + 1):     # a bad host explains its runs: its partners' passes before them count
        resets = _resets(fails, bad, passes, evidence, topology)
        hard, soft = _confirmations(hosts, fails, topology, passes, resets, evidence)
        found, doubt, suspects = _judged(hard, soft, passes, evidence, fails, bad)
        if found == bad:
            break
        bad = found
    good = set(h for h in passes if _good_at(h, float("inf"), passes, resets, evidence)) - bad
    pools, taken = _pools(hosts, fails, passes, good, bad, doubt)
    settled = good | bad | set(doubt) | taken
    recheck = set(h for h in passes if h not in settled)
    unknown = set(hosts) - settled - recheck
    return {"good": good, "bad": bad, "pools": pools, "unknown": unknown, "recheck": recheck, "doubt": doubt,
            "suspects": suspects, "pending": pending,
            "confirmations": dict((h, [i for i, _p in seen]) for h, seen in hard.items())}


def state(hosts, outcomes, topology=None, evidence=EVIDENCE):
    """(good, bad, pools, unknown) after the outcomes (assess): sets of hosts, and the pools as a list of sorted
    lists (the smallest pools only: a pool holding a smaller one is answered by it). With a ``topology``, a host that
    failed only with known-good hosts of other topology groups is a pool of one (a suspect to confirm inside its
    group), not bad. ``unknown`` holds the hosts to recheck and those in doubt too."""
    seen = assess(hosts, outcomes, topology, evidence)
    return seen["good"], seen["bad"], seen["pools"], seen["unknown"] | seen["recheck"] | set(seen["doubt"])


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


def _with_fillers(test, good, used, order, topology=None, paths=None, evidence=EVIDENCE):
    """A test of one host gets known-good fillers not used elsewhere in the round, of its own topology group first
    (a suspect confirmed across an uplink could be failed by the uplink), else of the groups whose paths are known
    good, then of those not known slow (``paths``: {group: 0 good, 2 slow}); a suspect that already failed across
    one (``inside``: a suspect, or a host to recheck) only gets fillers of its own group - unless it is alone in
    it - and a suspect confirmed before gets none it failed with (``avoid``: its next confirmation is with another
    known-good host; the same one again where its group has no other), and one whose group has a host to recheck
    (``wait``: known good after its next pass) waits for it. None when there is none."""
    if len(test["hosts"]) >= 2:
        return test
    key = _key(topology, test["hosts"][0])
    avoid = test.get("avoid") or ()
    free = [h for h in order if h in good and h not in used]
    if key is None and _in_use(topology, order):
        return _loose_fillers(test, [h for h in free if h not in avoid], used, topology, paths)
    mates = [h for h in free if key is not None and _key(topology, h) == key]
    mates = [h for h in mates if h not in avoid] or mates
    across = [] if mates else _across(test, [h for h in free if h not in avoid], order, topology, paths, evidence)
    spare = (mates or across)[:FILLER]
    if not spare:
        return None
    used.update(spare)
    return {"hosts": test["hosts"] + spare, "purpose": "confirm"}


def _across(test, free, order, topology, paths, evidence):
    """The known-good hosts of other groups a test of one host may take (``free``), best first: for a recheck (a
    pass across proves the host and the paths, a fail proves nothing) any group not known slow, the groups it failed
    with last; none for a suspect waiting for a mate; for a suspect that failed across already (``inside``), groups
    whose paths are known good that it has not failed with (``TRIES`` of them); otherwise the groups whose paths are
    known good, then those not known slow - known good only for a host alone in its group with ``evidence`` > 1."""
    key = _key(topology, test["hosts"][0])
    alone = not any(h != test["hosts"][0] and _key(topology, h) == key for h in order)
    rank = dict((h, (paths or {}).get(_key(topology, h), 1)) for h in free)
    if test["purpose"] == "recheck":
        failed = test.get("failed_with") or set()
        return sorted((h for h in free if rank[h] < 2), key=lambda h: (_key(topology, h) in failed, rank[h]))
    if test.get("wait"):
        return []
    limit = 1 if alone and evidence > 1 else 2
    across = sorted((h for h in free if rank[h] < limit), key=lambda h: rank[h])  # stable: the hosts' order within
    if test.get("inside") and not alone:
        tried = test.get("tried") or set()
        across = [h for h in across if rank[h] == 0 and _key(topology, h) not in tried] if len(tried) < TRIES else []
    return across


def _loose_fillers(test, free, used, topology, paths):
    """The confirmation of a host without a topology group in a screen that uses one: with a known-good host of a
    group it has not failed with yet (``tried``: the groups of the known-good hosts it failed with, None for hosts
    without a group) - hosts without a group first (they may share its unknown switch), then groups whose paths are
    known good, not known, known slow. None once it has failed with ``TRIES`` groups (it stays unresolved)."""
    tried = test.get("tried") or set()
    if len(tried) >= TRIES:
        return None
    failed = test.get("failed_with") or set()       # a recheck: the groups it failed with last, after the rest
    rank = dict((h, (_key(topology, h) in failed, -1 if _key(topology, h) is None else
                     (paths or {}).get(_key(topology, h), 1))) for h in free)
    spare = sorted((h for h in free if _key(topology, h) not in tried), key=lambda h: rank[h])[:FILLER]
    if not spare:
        return None
    used.update(spare)
    return {"hosts": test["hosts"] + spare, "purpose": "confirm"}


def tried_groups(host, outcomes, good, topology):
    """The topology groups (None: no group) of the known-good hosts ``host`` failed with, alone not known good."""
    out = set()
    for tested, passed in outcomes:
        if not passed and host in tested and set(tested) - good == {host}:
            out.update(_key(topology, h) for h in tested if h != host)
    return out


def group_outcomes(hosts, outcomes, topology, good=None, evidence=EVIDENCE):
    """The screen at the level of the topology groups: (groups, outcomes). ``groups``: the groups with a known-good
    host, in the hosts' order; ``outcomes``: [(groups, passed)] of every test across two groups or more whose hosts
    are all known good (a span test, or a confirmation across an uplink whose suspect was cleared) - its outcome
    is the paths' between the groups, as a test's outcome is its hosts'."""
    if good is None:
        good = state(hosts, outcomes, topology, evidence)[0]
    groups = []
    for host in hosts:
        key = _key(topology, host)
        if key is not None and host in good and key not in groups:
            groups.append(key)
    out = []
    for tested, passed in outcomes:
        keys = [_key(topology, h) for h in tested]
        if None in keys or not set(tested) <= good:
            continue
        distinct = [k for i, k in enumerate(keys) if k not in keys[:i]]
        if len(distinct) >= 2:
            out.append((distinct, passed))
    return groups, out


def group_verdicts(hosts, outcomes, topology, evidence=EVIDENCE):
    """(slow, unresolved): the topology groups confirmed slow to the rest (span tests failing with known-good
    groups only, ``evidence`` times with different partners: the group's uplink), and those the span tests left
    unresolved (in a pool, passed too few, or in doubt); sorted lists."""
    groups, outs = group_outcomes(hosts, outcomes, topology, evidence=evidence)
    if len(groups) < 2:
        return [], []
    seen = assess(groups, outs, evidence=evidence)
    open_ = set(g for pool in seen["pools"] for g in pool) | set(seen["doubt"])
    if any(not passed for _g, passed in outs):
        open_ |= seen["recheck"]
    return sorted(seen["bad"]), sorted(open_)


def _paths(hosts, outcomes, topology, good, evidence=EVIDENCE):
    """{group: 0 when its paths to the rest are known good, 2 when it is confirmed slow to the rest}."""
    groups, outs = group_outcomes(hosts, outcomes, topology, good, evidence)
    if len(groups) < 2:
        return {}
    fine, slow, _pools, _unknown = state(groups, outs, evidence=evidence)
    return dict([(g, 0) for g in fine] + [(g, 2) for g in slow])


def _span_tests(order, outcomes, good, topology, used, evidence=EVIDENCE):
    """The tests across the topology groups (one known-good host of each, not used elsewhere in the round), planned
    like the hosts' screen one level up: groups of groups, bisected and confirmed against groups known good."""
    groups, outs = group_outcomes(order, outcomes, topology, good, evidence)
    if len(groups) < 2:
        return []
    out = []
    for test in plan(groups, outs, evidence=evidence):
        reps = [next((h for h in order if h in good and h not in used and _key(topology, h) == key), None)
                for key in test["hosts"]]
        if None not in reps and len(reps) >= 2:        # a lone group waits for a known-good one to test it with
            used.update(reps)
            out.append({"hosts": reps, "purpose": "span"})
    return out


def _dealt(members, size, topology):
    """Hosts to test again, in groups of about ``size`` inside their topology groups, dealt round-robin (a host's
    partners differ from those of the run it passed, cut in order)."""
    out = []
    for group in _screen_groups(members, len(members) or 1, topology):
        count = max(1, len(group) // max(size, 2))
        out.extend(group[i::count] for i in range(count))
    return out


def _suspect_tests(seen, outcomes, topology):
    """The bisect test of each pool (a pool of one: its confirmation, avoiding the partners it already failed with)."""
    tests = []
    for pool in seen["pools"]:
        half = pool[:int(math.ceil(len(pool) / 2.0))]
        test = {"hosts": half, "purpose": "bisect", "inside": len(pool) == 1 and bool(topology)}
        if len(half) == 1 and _key(topology, half[0]) is not None:    # a mate known good soon: no run across
            test["wait"] = any(_key(topology, h) == _key(topology, half[0]) for h in seen["recheck"])
        if len(pool) == 1:
            test["avoid"] = seen["suspects"].get(pool[0], set())
            if topology:
                test["tried"] = tried_groups(pool[0], outcomes, seen["good"], topology)
        tests.append(test)
    return tests


def _again(seen, order, size, topology, outcomes=()):
    """The runs again: each set inside the band run as it was (its hosts unknown otherwise), the unknown hosts screened
    again, the hosts that passed too few runs rechecked in other groups."""
    left = [h for h in order if h in seen["unknown"]]
    tests = []
    for hosts in seen["pending"]:
        if set(hosts) <= set(left):
            tests.append({"hosts": list(hosts), "purpose": "retest"})
            left = [h for h in left if h not in hosts]
    tests.extend({"hosts": g, "purpose": "rescreen"} for g in _screen_groups(left, size, topology))
    recheck = [h for h in order if h in seen["recheck"]]
    for group in _dealt(recheck, size, topology):
        test = {"hosts": group, "purpose": "recheck", "inside": bool(topology)}
        if len(group) == 1 and topology:
            test["failed_with"] = tried_groups(group[0], outcomes, seen["good"], topology)
        tests.append(test)
    return tests


def plan(hosts, outcomes, group_size=None, topology=None, evidence=EVIDENCE):
    """The next round's tests (see the module docstring); [] when every host is resolved."""
    order = list(hosts)
    size = group_size or default_group_size(len(order))
    if not outcomes:
        return [{"hosts": g, "purpose": "screen"} for g in _screen_groups(order, size, topology)]
    seen = assess(order, outcomes, topology, evidence)
    good = seen["good"]
    tests = _suspect_tests(seen, outcomes, topology) + _again(seen, order, size, topology, outcomes)
    used = set(h for t in tests for h in t["hosts"])
    out = []
    paths = _paths(order, outcomes, topology, good, evidence) if topology else {}
    for test in tests:
        ready = _with_fillers(test, good, used, order, topology, paths, evidence)
        if ready is not None:
            out.append({"hosts": ready["hosts"], "purpose": ready["purpose"]})
    if topology:
        out.extend(_span_tests(order, outcomes, good, topology, used, evidence))
    return out


def kept(hosts, outcomes, topology=None, evidence=EVIDENCE):
    """The hosts the screen's next rounds may still use, in the hosts' order (a playbook's round loop keeps them and
    lets the rest go): every host not known good (the tests' own hosts; the bad and those in doubt too, as few as
    they are), and of each topology group (the hosts without one: a group of their own) its first
    ``FILLER * (that count + evidence) + 1`` known-good hosts, in order - what any later round can take from it: each
    test of one host (one not known good: at most that count a round) takes the first ``FILLER`` free known-good
    hosts of a group, past those already taken in its round and those its suspect failed with (``avoid``: fewer
    than ``evidence`` confirmations' partners), and a span test one more. A known-good host stays known good while
    it takes no test, and the group's first ones later are these or hosts known good since (kept now: not known
    good yet). Every host before the first round."""
    order = list(hosts)
    if not outcomes:
        return order
    good = assess(order, outcomes, topology, evidence)["good"]
    reserve = FILLER * (len(order) - len(good) + evidence) + 1
    seen, out = {}, []
    for host in order:
        if host in good:
            key = _key(topology, host)
            seen[key] = seen.get(key, 0) + 1
            if seen[key] > reserve:
                continue
        out.append(host)
    return out


def run(hosts, measure, group_size=None, topology=None, max_rounds=64, evidence=EVIDENCE):
    """Drive the screen to the end with ``measure(round_tests) -> [passed, ...]`` (a simulation, or a test's
    stand-in; passed None: a run inside the inconclusive band). Returns {"good", "bad", "unresolved" (every other
    host), "doubt" ({host: "disagree" | "band"}), "slow_groups", "unresolved_groups", "rounds": [[test, ...], ...],
    "outcomes"}."""
    outcomes, rounds = [], []
    for _index in range(max_rounds):
        tests = plan(hosts, outcomes, group_size=group_size, topology=topology, evidence=evidence)
        if not tests:
            break
        results = measure(tests)
        rounds.append(tests)
        outcomes.extend((t["hosts"], None if ok is None else bool(ok)) for t, ok in zip(tests, results))
    seen = assess(hosts, outcomes, topology, evidence)
    unresolved = sorted(set(hosts) - seen["good"] - seen["bad"])
    slow, groups_unresolved = group_verdicts(hosts, outcomes, topology, evidence) if topology else ([], [])
    return {"good": sorted(seen["good"]), "bad": sorted(seen["bad"]), "unresolved": unresolved,
            "doubt": dict(seen["doubt"]), "slow_groups": slow, "unresolved_groups": groups_unresolved,
            "rounds": rounds, "outcomes": outcomes}


# ------------------------------------------------------------------ the topology the probe learned
#
# Where the user names no topology (nccl_screen_topology_var), the screen groups by the switches the net.topology
# records (module fabric_topology: LLDP, the declared plan, an ibnetdiscover import) give each host's fabric ports.


def switch_group(ports):
    """The screen's topology group of a host from its ports (cabling.read): the one switch all its fabric ports
    share; where they are on several (a rail-optimized fabric: each rail on its own leaf), the set of them,
    ``leaf-01 + leaf-02``: hosts cabled to the same leaves keep a collective inside them on every rail, where the
    first port's switch alone would group hosts whose other rails cross an uplink. None when no fabric port is
    known (cabling.fabric_ports: a management or storage NIC's switch is never the group - it would put hosts of
    several leaves in one group and confirm them across a slow uplink)."""
    ports = cabling.fabric_ports(ports)
    where = cabling.placement(ports, None)
    if where is not None:
        return where.switch
    switches = sorted(set(entry["switch"] for entry in ports.values()))
    return " + ".join(switches) or None


def switch_groups(records, hosts):
    """{host: its switch group} of the ``hosts`` whose switch the ``net.topology`` records know."""
    learned = cabling.read(records)
    out = {}
    for host in hosts:
        group = switch_group(learned.get(host))
        if group is not None:
            out[host] = group
    return out


# ------------------------------------------------------------------ the screen's records (a playbook's rounds)
#
# A screen test is one multi-node run launched from the first host of its group. Its record (nccl.<collective>)
# is the launcher's, and nothing in a measured record names the group by inventory name (params.argv holds the
# mpirun argv with a hostfile, facts.hosts the node names the tool printed). The screen therefore exports one
# environment variable to every rank of the run, MARKER_ENV = "round=<n> purpose=<purpose> hosts=<h1> <h2> ...",
# which the record carries in params.env like the rest of the run's environment: the test's round, purpose and
# hosts (inventory names, never containing a space). No module option and no record field is added for it.

MARKER_ENV = "AIFABRIC_SCREEN"
PURPOSES = ("screen", "bisect", "confirm", "rescreen", "span", "recheck", "retest")
OUTCOME = {"pass": True, "warn": True, "fail": False, "error": False}      # skip: not an outcome
KEYS = ("evidence", "margin_pct")          # the screen's rules, named at the end of every marker


def _group_word(group):
    """A topology group as one word of the marker: URL-quoted, ``-`` for none (a group named ``-`` is ``%2D``)."""
    if group is None or str(group) == "":
        return "-"
    return "%2D" if str(group) == "-" else quote(str(group), safe="")


def _rule_words(rules):
    """The marker's closing words naming the screen's rules (``evidence=2 margin_pct=5``); none for LEGACY."""
    rules = dict(LEGACY, **(rules or {}))
    evidence, margin = int(rules["evidence"]), float(rules["margin_pct"])
    if evidence < 1 or not 0 <= margin < 100:
        raise ValueError("a screen's evidence must be 1 or more and its margin_pct 0 to 100, got %r" % (rules,))
    if evidence == LEGACY["evidence"] and margin == LEGACY["margin_pct"]:
        return ""
    return " evidence=%d margin_pct=%s" % (evidence, ("%g" % margin))


def marker(round_index, purpose, hosts, groups=None, rules=None):
    """The MARKER_ENV value of one test; ``groups``: each host's topology group (None where it has none), given
    when the screen has a topology; ``rules``: {evidence, margin_pct} the screen plans with (named at the end, so
    that the report replays it with the same). ValueError on a host name that cannot be carried."""
    hosts = [str(h) for h in hosts]
    if purpose not in PURPOSES:
        raise ValueError("purpose must be one of %s, got %r" % (", ".join(PURPOSES), purpose))
    if len(hosts) < 2 or any(not h or any(c.isspace() for c in h) or h.startswith(("groups=",) + tuple(
            k + "=" for k in KEYS)) for h in hosts):
        raise ValueError("a screen test needs two hosts or more, named without spaces, got %r" % (hosts,))
    text = "round=%d purpose=%s hosts=%s" % (int(round_index), purpose, " ".join(hosts))
    if groups is not None:
        if len(groups) != len(hosts):
            raise ValueError("a screen test's groups must name one group per host, got %r for %r" % (groups, hosts))
        text += " groups=" + " ".join(_group_word(g) for g in groups)
    return text + _rule_words(rules)


def _rules(words):
    """(words without the closing rule words, {evidence, margin_pct}), or None when a rule word is malformed."""
    rules = dict(LEGACY)
    while words and words[-1].split("=", 1)[0] in KEYS and "=" in words[-1]:
        key, value = words.pop().split("=", 1)
        try:
            rules[key] = int(value) if key == "evidence" else float(value)
        except ValueError:
            return None
    if rules["evidence"] < 1 or not 0 <= rules["margin_pct"] < 100:
        return None
    return words, rules


def parse_marker(value):
    """{round, purpose, hosts, groups, rules} of a MARKER_ENV value (groups: {host: topology group} of the hosts that
    have one, {} when the marker names none; rules: {evidence, margin_pct}, LEGACY when it names none), or None when
    it is not one."""
    if not isinstance(value, str):
        return None
    parsed = _rules(value.split())
    if parsed is None:
        return None
    words, rules = parsed
    if len(words) < 4 or not words[0].startswith("round=") or not words[1].startswith("purpose=") \
            or not words[2].startswith("hosts="):
        return None
    try:
        round_index = int(words[0][len("round="):])
    except ValueError:
        return None
    purpose = words[1][len("purpose="):]
    rest = [words[2][len("hosts="):]] + words[3:]
    cut = next((i for i, w in enumerate(rest) if w.startswith("groups=")), len(rest))
    hosts, groups = rest[:cut], {}
    if cut < len(rest):
        named = [rest[cut][len("groups="):]] + rest[cut + 1:]
        if len(named) != len(hosts):
            return None
        groups = dict((h, unquote(g)) for h, g in zip(hosts, named) if g != "-")
    if purpose not in PURPOSES or round_index < 0 or not all(hosts) or len(hosts) < 2:
        return None
    return {"round": round_index, "purpose": purpose, "hosts": hosts, "groups": groups, "rules": rules}


def screen_of(record):
    """The screen test a measured record belongs to ({round, purpose, hosts, groups, rules}), or None."""
    if not isinstance(record, dict):
        return None
    params = record.get("params")
    if not params:
        return None     # (most records: no parameters)
    env = params.get("env") if isinstance(params, dict) else None
    return parse_marker(env.get(MARKER_ENV)) if isinstance(env, dict) else None


def is_screen_record(record):
    """True for the measured record of a screen test (it measures a group, not its host)."""
    if screen_of(record) is None:
        return False    # (most records: asked first)
    tool = record.get("tool") if isinstance(record, dict) else None
    return not (isinstance(tool, dict) and tool.get("name") == "fleet-analysis")


def _figure(record, name):
    """The value an ``expect`` rule of the record judged: a metric, or ``<column>@<size>`` in its series."""
    metrics = record.get("metrics") if isinstance(record.get("metrics"), dict) else {}
    if name in metrics:
        value = metrics[name]
    elif "@" in name:
        column, _at, size = name.rpartition("@")
        rows = [r for r in record.get("series") or [] if isinstance(r, dict) and str(r.get("size_bytes")) == size]
        value = rows[0].get(column) if rows else None
    else:
        value = None
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def band(record, margin_pct=MARGIN_PCT):
    """The figures of a record inside the inconclusive band: [(name, value, bound)] of every ``min`` or ``max`` of its
    ``expect`` that a figure is within ``margin_pct`` % of, on either side; and the bounds it is outside, clear of the
    band, on the wrong side: ([inside], [clearly failed])."""
    inside, failed = [], []
    expect = record.get("expect") if isinstance(record.get("expect"), dict) else {}
    for name in sorted(expect):
        rule = expect[name] if isinstance(expect[name], dict) else {}
        value = _figure(record, name)
        for side in ("min", "max"):
            bound = rule.get(side)
            if value is None or not isinstance(bound, (int, float)) or isinstance(bound, bool) or bound <= 0:
                continue
            if abs(value - bound) < bound * margin_pct / 100.0:
                inside.append((name, value, bound))
            elif (value < bound) if side == "min" else (value > bound):
                failed.append((name, value, bound))
    return inside, failed


def outcome(record, margin_pct=MARGIN_PCT):
    """A screen record's outcome: True (pass or warn, every judged figure clear of its bound), False (error; fail with
    a figure clearly below its bound, or for a reason no figure inside the band explains), None (inside the band:
    run again, believed neither way), or "skip" (no outcome)."""
    passed = OUTCOME.get(record.get("status"))
    if passed is None:
        return "skip"
    if record.get("status") == "error" or not margin_pct:
        return passed
    inside, failed = band(record, margin_pct)
    if passed:
        return None if inside else True
    return None if inside and not failed else False


def screen_outcomes(records, check=None):
    """[(hosts, passed)] of the screen records (of ``check`` when given), in record order: pass and warn pass,
    fail and error fail (a run that could not finish holds a node that cannot run it), a figure inside the
    inconclusive band of the marker's margin_pct (outcome) is None; skip is no outcome."""
    out = []
    for rec in records or []:
        test = screen_of(rec) if is_screen_record(rec) else None
        if test is None or (check is not None and rec.get("check") != check):
            continue
        passed = outcome(rec, test["rules"]["margin_pct"])
        if passed != "skip":
            out.append((test["hosts"], passed))
    return out


def max_rounds(count, group_size=None, extra=5, groups=0, evidence=EVIDENCE):
    """The bound on a screen's rounds: one screen round, binary splitting of the largest group (log2 of it),
    one confirmation, and ``extra`` rounds for the rescreens that follow a confirmed bad node; with ``evidence``
    runs per verdict, 4 more rounds per run beyond one (the recheck of the hosts that passed once, the repeated
    confirmation, and the rechecks and retests that follow a run of noise); with ``groups`` topology groups (2 or
    more), as many again for the span tests across them (they start once a group has a known-good host, in
    parallel with the rest)."""
    size = min(max(count, 2), group_size or default_group_size(count))
    bound = 2 + int(math.ceil(math.log(max(size, 2), 2))) + extra + 4 * (max(int(evidence), 1) - 1)
    if groups >= 2:
        bound += 2 + int(math.ceil(math.log(default_group_size(groups), 2))) + 2 * (max(int(evidence), 1) - 1)
    return bound
