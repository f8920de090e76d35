# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Group-testing screen simulator: how many multi-node collective runs, rounds and how much wall time does the
screen -> bisect -> confirm cycle of plugin_utils/group_screen.py take for N nodes with d bad ones, and which faults
does it miss?

For N = 8 ... 1000 and d = 0 ... 5 bad nodes placed at random (``--trials`` seeds each), the real planner
(group_screen.plan) is driven round by round; a test fails when it holds a bad node (a slow or broken node slows
every collective it takes part in). Printed per (N, d): the mean and worst number of collective runs, of rounds
(the tests of one round run in parallel, on disjoint nodes), the wall time, and whether every bad node was found
and no good one named.

Wall time of one round = launch + the collective over the round's largest group, modelled from a REAL capture:
the per-size times of nccl-tests all_reduce_perf on 2x H200 (tests/unit/plugins/plugin_utils/fixtures/
h200x2-judgement/healthy.results.json, 8 B .. 1 GiB, -n 20 -w 1 as run there), each size taking the longer of
the capture's own time and the time the size needs at ``--busbw`` GB/s of bus bandwidth between nodes (ring
all-reduce: 2 (g-1)/g x size / busbw), in and out of place; ``--launch-s`` for mpirun's start over SSH.

What a group test cannot see: a bad LINK between two nodes slows a ring collective only when the two nodes are
neighbours in its ring. ``--links`` injects one bad link per trial (no bad node) and prints the share the screen
finds (the two ends in a failing test whose bisection names one of them) - the false-negative rate the pairwise RDMA
sweep is for.

Noise (``--noise``, issue 38): real runs are noisy - a healthy collective now and then falls under its threshold, a
faulty node now and then squeaks above it. Each test's outcome is drawn (seeded per trial): a test of healthy nodes
fails with probability ``p``, a test holding a bad node passes with probability ``q``. Printed per (N, d, p, q,
evidence): the trials in which a healthy host was confirmed bad, the healthy hosts condemned in all, the bad nodes
named (``fail``), left ``warn`` (unresolved or inconclusive) and cleared (``pass``), rounds and runs - the screen of
one run per verdict (``evidence`` 1) beside the default (2).

Run from the collection root with the collection importable:

    PYTHONPATH=/tmp/aif-dev python bench/group_screen_sim.py              # the table in docs/group-screen.md
    PYTHONPATH=/tmp/aif-dev python bench/group_screen_sim.py --links
    PYTHONPATH=/tmp/aif-dev python bench/group_screen_sim.py --slow-leaf   # with a topology, one slow leaf uplink
    PYTHONPATH=/tmp/aif-dev python bench/group_screen_sim.py --slow-leaf --unknown 4   # 4 hosts' switches unknown
    PYTHONPATH=/tmp/aif-dev python bench/group_screen_sim.py --noise --trials 100       # noise: evidence 1 vs 2
    PYTHONPATH=/tmp/aif-dev python bench/group_screen_sim.py --noise --spread --evidence 2 --trials 100   # figures
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics

from ansible_collections.aifabric.acceptance.plugins.plugin_utils import group_screen

import real_spread      # bench/real_spread.py, beside this file (python puts the script's folder on sys.path)

HERE = os.path.dirname(os.path.abspath(__file__))
CAPTURE = os.path.join(HERE, os.pardir, "tests", "unit", "plugins", "plugin_utils", "fixtures", "h200x2-judgement",
                       "healthy.results.json")
SIZES = (8, 16, 32, 64, 128, 232, 256, 512, 1000)
BAD = (0, 1, 2, 3, 5)


def capture_times():
    """[(size_bytes, out-of-place us, in-place us)] of the real all_reduce capture, and its iteration counts."""
    with open(CAPTURE, encoding="utf-8") as handle:
        report = json.load(handle)
    rec = next(r for r in report["records"] if r["check"] == "nccl.all_reduce")
    rows = [(row["size_bytes"], row["oop_time_us"], row["ip_time_us"]) for row in rec["series"]]
    return rows, rec["duration_s"]


def collective_s(group, rows, busbw_gbyte_s, iterations=20, warmup=1):
    """Seconds of one all_reduce_perf sweep over ``group`` nodes (see the module docstring)."""
    factor = 2.0 * (group - 1) / group if group > 1 else 0.0
    total_us = 0.0
    for size, oop_us, ip_us in rows:
        need_us = factor * size / (busbw_gbyte_s * 1e3)        # bytes / (GB/s) = ns; / 1e3 -> us
        total_us += (iterations + warmup) * (max(oop_us, need_us) + max(ip_us, need_us))
    return total_us / 1e6


def trial(n, d, seed, group_size=None):
    rng = random.Random(seed)
    hosts = ["n%04d" % i for i in range(n)]
    bad = set(rng.sample(hosts, d))

    def measure(tests):
        return [not (set(t["hosts"]) & bad) for t in tests]

    result = group_screen.run(hosts, measure, group_size=group_size)
    exact = set(result["bad"]) == bad and not result["unresolved"]
    largest = [max(len(t["hosts"]) for t in rnd) for rnd in result["rounds"]]
    return {"runs": sum(len(r) for r in result["rounds"]), "rounds": len(result["rounds"]), "largest": largest,
            "exact": exact, "host_rounds": host_rounds(hosts, result)}


def host_rounds(hosts, result, topology=None, evidence=group_screen.EVIDENCE):
    """The hosts walked over the rounds of ``result`` (group_screen.run): in each round, the hosts the rounds before
    kept (group_screen.kept: the hosts a playbook's round loop goes on with), every host in the first."""
    total, done = 0, 0
    for rnd in result["rounds"]:
        total += len(group_screen.kept(hosts, result["outcomes"][:done], topology, evidence))
        done += len(rnd)
    return total


def slow_leaf_trial(n, per_leaf, d, seed, unknown=0):
    """The topology-aware screen on ``n`` hosts on leaves of ``per_leaf`` (cabled in a random order), one leaf's
    uplink slow (a test across it fails) and ``d`` bad nodes elsewhere: exact when the bad nodes fail, nothing else,
    and the slow leaf is named (the group finding). ``unknown``: that many hosts' switches are not known to the
    planner (one bad node among them when d > 0, the rest at random): they have no topology group."""
    rng = random.Random(seed)
    hosts = ["n%04d" % i for i in range(n)]
    cabled = list(hosts)
    rng.shuffle(cabled)
    topology = dict((h, "leaf-%d" % (i // per_leaf)) for i, h in enumerate(cabled))
    slow = topology[cabled[0]]
    bad = set(rng.sample([h for h in hosts if topology[h] != slow], d))
    hidden = set(sorted(bad)[:1]) if unknown else set()
    hidden |= set(rng.sample(sorted(set(hosts) - hidden), max(0, unknown - len(hidden))))
    known = dict((h, g) for h, g in topology.items() if h not in hidden)

    def measure(tests):
        out = []
        for test in tests:
            leaves = set(topology[h] for h in test["hosts"])
            out.append(not (set(test["hosts"]) & bad) and not (slow in leaves and len(leaves) > 1))
        return out

    groups = len(set(known.values()))
    result = group_screen.run(hosts, measure, topology=known, max_rounds=group_screen.max_rounds(n, groups=groups))
    exact = set(result["bad"]) == bad and not result["unresolved"] and result["slow_groups"] == [slow]
    largest = [max(len(t["hosts"]) for t in rnd) for rnd in result["rounds"]]
    return {"runs": sum(len(r) for r in result["rounds"]), "rounds": len(result["rounds"]), "largest": largest,
            "exact": exact, "false_fail": bool(set(result["bad"]) - bad),
            "named": bad <= set(result["bad"]) | set(result["unresolved"]), "slow_named": result["slow_groups"] == [slow],
            "healthy_unresolved": len(set(result["unresolved"]) - bad)}


def noisy_measure(bad, p, q, rng):
    """The measure of a noisy fleet: a test of healthy nodes fails with probability ``p``, a test holding a bad node
    passes with probability ``q`` (``rng``: the trial's own, seeded)."""
    def measure(tests):
        return [(rng.random() < q) if set(t["hosts"]) & bad else (rng.random() >= p) for t in tests]
    return measure


HEALTHY_GBYTE_S = 345.0       # the captured 2x H200 all_reduce busbw at 8 GiB (CAPTURE's run)
SLOW_FACTOR = 0.6             # a bad node's collective, as the transient's: 60 % of the healthy figure
TRANSIENT_FACTOR = 0.6


def figure_measure(bad, p, q, rng, spread, floor_pct=90.0, margin_pct=group_screen.MARGIN_PCT):
    """The measure of a noisy fleet by its figures: each test's bus bandwidth is the healthy figure times (1 + a
    Gaussian of sd ``spread``: the real run-to-run spread, bench/real_spread.py), times SLOW_FACTOR when it holds a
    bad node (unless it misses, with probability ``q``), times TRANSIENT_FACTOR for a transient (probability ``p``,
    healthy tests); judged against a floor at ``floor_pct`` % of the healthy figure and turned into an outcome by
    the screen's own rule (group_screen.outcome: clear of the floor, clearly under it, or inside the band)."""
    floor = HEALTHY_GBYTE_S * floor_pct / 100.0

    def measure(tests):
        out = []
        for test in tests:
            value = HEALTHY_GBYTE_S * (1.0 + rng.gauss(0.0, spread))
            if set(test["hosts"]) & bad:
                value *= 1.0 if rng.random() < q else SLOW_FACTOR
            elif rng.random() < p:
                value *= TRANSIENT_FACTOR
            record = {"status": "pass" if value >= floor else "fail", "metrics": {"busbw_max_gbyte_s": value},
                      "expect": {"busbw_max_gbyte_s": {"min": floor}}}
            out.append(group_screen.outcome(record, margin_pct))
        return out
    return measure


def noise_trial(n, d, p, q, seed, evidence, spread=None):
    """One noisy fleet of ``n`` hosts with ``d`` bad nodes, screened with ``evidence`` runs per verdict; with
    ``spread``, outcomes come from figures (figure_measure), otherwise drawn directly (noisy_measure)."""
    rng = random.Random(seed)
    hosts = ["n%04d" % i for i in range(n)]
    bad = set(rng.sample(hosts, d))
    measure = noisy_measure(bad, p, q, rng) if spread is None else figure_measure(bad, p, q, rng, spread)
    result = group_screen.run(hosts, measure, evidence=evidence,
                              max_rounds=group_screen.max_rounds(n, evidence=evidence))
    failed, good = set(result["bad"]), set(result["good"])
    return {"condemned": len(failed - bad), "named": len(bad & failed), "cleared": len(bad & good),
            "warned": len(bad - failed - good), "rounds": len(result["rounds"]),
            "runs": sum(len(r) for r in result["rounds"]), "healthy_warn": len(set(result["unresolved"]) - bad)}


def noise_table(args):
    """The --noise table (docs/group-screen.md, "Noise"); with --spread, outcomes from figures (figure_measure)."""
    spread = real_spread.run_to_run_sd() if args.spread else None
    if spread is not None:
        print("figures: healthy %.0f GB/s x (1 + N(0, %.2f %%)) (bench/real_spread.py), floor 90 %%, band %g %%"
              % (HEALTHY_GBYTE_S, 100 * spread, group_screen.MARGIN_PCT))
    columns = ("N", "d", "p %", "q %", "ev", "trials w/ healthy fail", "healthy failed", "bad fail", "bad warn",
               "bad pass", "rounds", "max", "runs", "max", "healthy warn/trial")
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    for n in args.sizes:
        for d in (0, 1, 2, 3):
            for p, q in ((0.005, 0.0), (0.005, 0.02), (0.02, 0.0), (0.02, 0.02)):
                for evidence in args.evidence:
                    runs = [noise_trial(n, d, p, q, seed, evidence, spread) for seed in range(args.trials)]
                    print("| %d | %d | %g | %g | %d | %d | %d | %d | %d | %d | %.1f | %d | %.1f | %d | %.2f |" % (
                        n, d, 100 * p, 100 * q, evidence, sum(1 for r in runs if r["condemned"]),
                        sum(r["condemned"] for r in runs), sum(r["named"] for r in runs),
                        sum(r["warned"] for r in runs), sum(r["cleared"] for r in runs),
                        statistics.mean(r["rounds"] for r in runs), max(r["rounds"] for r in runs),
                        statistics.mean(r["runs"] for r in runs), max(r["runs"] for r in runs),
                        statistics.mean(r["healthy_warn"] for r in runs)))


def wall_s(largest, rows, busbw, launch_s):
    return sum(launch_s + collective_s(g, rows, busbw) for g in largest)


def link_trial(n, seed, group_size=None):
    """One bad link, no bad node: does the screen notice it (a failing test) and name an end?"""
    rng = random.Random(seed)
    hosts = ["n%04d" % i for i in range(n)]
    a, b = rng.sample(hosts, 2)

    def measure(tests):
        out = []
        for test in tests:
            ring = test["hosts"]
            adjacent = any({ring[i], ring[(i + 1) % len(ring)]} == {a, b} for i in range(len(ring))) and len(ring) > 1
            out.append(not adjacent)
        return out

    result = group_screen.run(hosts, measure, group_size=group_size)
    return bool(set(result["bad"]) & {a, b})


def slow_leaf_unknown(args, rows):
    """The --slow-leaf table with ``args.unknown`` hosts' switches unknown: no healthy host may fail; a bad node is
    failed or unresolved (named); the healthy hosts left unresolved and the slow leaf named, counted."""
    columns = ("N", "leaf", "d", "runs", "max", "rounds", "max", "wall min", "bad named", "slow named",
               "healthy unresolved", "healthy host failed")
    print("%6s %5s %3s %7s %6s %7s %6s %9s %s %s %s %s" % columns)
    for n, per_leaf in ((64, 8), (256, 16), (1000, 32)):
        for d in (0, 1, 5):
            runs = [slow_leaf_trial(n, per_leaf, d, seed, args.unknown) for seed in range(args.trials)]
            walls = [wall_s(r["largest"], rows, args.busbw, args.launch_s) / 60.0 for r in runs]
            print("%6d %5d %3d %7.1f %6d %7.1f %6d %9.1f %9d %10d %18.2f %s" % (
                n, per_leaf, d, statistics.mean(r["runs"] for r in runs), max(r["runs"] for r in runs),
                statistics.mean(r["rounds"] for r in runs), max(r["rounds"] for r in runs), statistics.mean(walls),
                sum(r["named"] for r in runs), sum(r["slow_named"] for r in runs),
                statistics.mean(r["healthy_unresolved"] for r in runs), any(r["false_fail"] for r in runs)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--busbw", type=float, default=360.0,
                        help="bus bandwidth between nodes, GB/s (8 x 400 Gb/s NDR rails: 400 GB/s line rate)")
    parser.add_argument("--launch-s", type=float, default=15.0, help="mpirun start over SSH, per run")
    parser.add_argument("--links", action="store_true", help="the bad-link false-negative rate instead")
    parser.add_argument("--slow-leaf", action="store_true",
                        help="with a topology: one leaf's uplink slow and d bad nodes elsewhere, instead")
    parser.add_argument("--unknown", type=int, default=0,
                        help="with --slow-leaf: this many hosts' switches unknown (no topology group; 2 or more: "
                             "run() would measure a round-0 test of one such host alone)")
    parser.add_argument("--noise", action="store_true",
                        help="healthy tests fail with p, faulty ones pass with q: evidence 1 vs 2 (issue 38)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[777], help="with --noise: the fleet sizes")
    parser.add_argument("--evidence", type=int, nargs="+", default=[1, 2], help="with --noise: the evidence values")
    parser.add_argument("--spread", action="store_true",
                        help="with --noise: outcomes from figures spread like the real captures (bench/real_spread.py)")
    args = parser.parse_args()
    if args.noise:
        noise_table(args)
        return
    rows, duration = capture_times()
    print("capture: %s (all_reduce_perf 8 B..1 GiB on 2x H200, %.1f s as run); busbw %.0f GB/s, launch %.0f s"
          % (os.path.relpath(CAPTURE), duration, args.busbw, args.launch_s))
    if args.links:
        print("%6s %10s" % ("N", "links found"))
        for n in SIZES:
            found = [link_trial(n, seed) for seed in range(args.trials * 5)]
            print("%6d %9.0f %%" % (n, 100.0 * sum(found) / len(found)))
        return
    if args.unknown and not args.slow_leaf:
        parser.error("--unknown needs --slow-leaf")
    if args.unknown == 1 or args.unknown < 0:
        parser.error("--unknown must be 0 or 2 or more")
    if args.slow_leaf and args.unknown:
        slow_leaf_unknown(args, rows)
        return
    if args.slow_leaf:
        columns = ("N", "leaf", "d", "runs", "max", "rounds", "max", "wall min", "exact of %d" % args.trials,
                   "healthy host failed")
        print("%6s %5s %3s %7s %6s %7s %6s %9s %s %s" % columns)
        for n, per_leaf in ((64, 8), (256, 16), (1000, 32)):
            for d in (0, 1, 5):
                runs = [slow_leaf_trial(n, per_leaf, d, seed) for seed in range(args.trials)]
                walls = [wall_s(r["largest"], rows, args.busbw, args.launch_s) / 60.0 for r in runs]
                print("%6d %5d %3d %7.1f %6d %7.1f %6d %9.1f %s %s" % (
                    n, per_leaf, d, statistics.mean(r["runs"] for r in runs), max(r["runs"] for r in runs),
                    statistics.mean(r["rounds"] for r in runs), max(r["rounds"] for r in runs), statistics.mean(walls),
                    sum(r["exact"] for r in runs), any(r["false_fail"] for r in runs)))
        return
    columns = ("N", "d", "runs", "max", "rounds", "max", "wall min", "max min", "exact")
    print("%6s %3s %7s %6s %7s %6s %9s %9s %s" % columns)
    for n in SIZES:
        for d in BAD:
            if d >= n:
                continue
            runs = [trial(n, d, seed) for seed in range(args.trials)]
            walls = [wall_s(r["largest"], rows, args.busbw, args.launch_s) / 60.0 for r in runs]
            print("%6d %3d %7.1f %6d %7.1f %6d %9.1f %9.1f %s" % (
                n, d, statistics.mean(r["runs"] for r in runs), max(r["runs"] for r in runs),
                statistics.mean(r["rounds"] for r in runs), max(r["rounds"] for r in runs),
                statistics.mean(walls), max(walls), all(r["exact"] for r in runs)))


if __name__ == "__main__":
    main()
