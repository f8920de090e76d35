# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Attribution simulator: how well does plugin_utils/attribution.py name bad nodes and links?

Generates fleets of N hosts (one rail), a pairing schedule (the real pairings
filter: all / ring / random k), injects bad nodes (every pair through them runs
at ``--node-factor`` of line rate) and bad links (one pair at ``--link-factor``),
adds Gaussian measurement noise (``--noise`` as a fraction of line rate), a
rate of spurious errors, transient lows (``--transient p``: a healthy pair measures
``--transient-factor`` of its figure with probability p; ``--miss q``: a pair through a
bad node measures healthy with probability q; both drawn from the trial's seeded
generator), builds the pairwise records and runs the real analysis.
For screening schedules it then runs the confirmation pass the playbook runs
(every suspect against known-good hosts) and analyses again.

Reports precision and recall of node findings and of link findings (a link
finding counts when it names exactly an injected bad link; an unconfirmed link
finding is not a verdict and is counted separately), over ``--trials`` seeds.
Link recall is over the bad links the schedule measured at all
(``bad_links_measured``, summed over trials): screening schedules (ring, a few
random matchings) test a small share of all pairs, and a link nobody tested
cannot be named by any analysis.

Run from the collection root with the collection importable, e.g.:

    PYTHONPATH=/tmp/at python bench/attribution_sim.py --hosts 1024 --mode random --rounds 3
    PYTHONPATH=/tmp/at python bench/attribution_sim.py --sweep      # the table in docs/rdma.md
    PYTHONPATH=/tmp/at python bench/attribution_sim.py --noise-table --real-spread --trials 100   # docs/rdma.md, "Noise"
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time

from ansible_collections.aifabric.acceptance.plugins.filter.pairings import pairings
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import attribution

import real_spread      # bench/real_spread.py, beside this file

CHECK = "rdma.ib_write_bw"
LINE_RATE = 400.0
EFFICIENCY = 0.975   # what a healthy NDR pair measures (ib_write_bw 64 KiB ~ 390 Gbit/s)


def make_fleet(n, bad_nodes, bad_links, rng):
    hosts = ["node%04d" % i for i in range(n)]
    nodes = set(rng.sample(hosts, bad_nodes))
    links = set()
    healthy = [h for h in hosts if h not in nodes]
    while len(links) < bad_links and len(healthy) >= 2:
        a, b = rng.sample(healthy, 2)
        links.add(frozenset((a, b)))
    return hosts, nodes, links


def measure(server, client, truth, args, rng):
    nodes, links = truth
    if rng.random() < args.error_rate:
        return {"check": CHECK, "status": "error", "host": client, "peer": server, "target": "mlx5_0",
                "reason": "Couldn't connect (simulated)", "metrics": {}}
    value = LINE_RATE * EFFICIENCY
    if server in nodes or client in nodes:
        if not (args.miss and rng.random() < args.miss):
            value *= args.node_factor
    elif frozenset((server, client)) in links:
        value *= args.link_factor
    elif args.transient and rng.random() < args.transient:
        value *= args.transient_factor
    value += rng.gauss(0.0, args.noise * LINE_RATE)
    # plain dicts with the record's fields the analysis reads (results.make is
    # not needed for the measurement model and would dominate the run time)
    return {"check": CHECK, "status": "pass", "host": client, "peer": server, "target": "mlx5_0",
            "metrics": {"bw_avg_gbit_s": max(value, 0.0)}}


def schedule(hosts, args, seed):
    if args.mode == "random":
        return pairings(hosts, mode="random", random_rounds=args.rounds, seed=seed)
    return pairings(hosts, mode=args.mode)


def score(findings, nodes, links, measured):
    """Counts; a bad link that no round measured cannot be found by anyone and is counted apart."""
    links = set(link for link in links if link in measured)
    # a node finding that needs confirmation (too few known-good hosts low with it) is a warn, not a fail
    found_nodes = set(h for f in findings if f["kind"] == "node" and not f["evidence"].get("needs_confirmation")
                      for h in f["hosts"])
    confirmed = [f for f in findings if f["kind"] == "link" and not f["evidence"].get("needs_confirmation")]
    pending = [f for f in findings if f["kind"] == "link" and f["evidence"].get("needs_confirmation")]
    found_links = set(frozenset(f["hosts"]) for f in confirmed)
    named = set(h for f in findings for h in f["hosts"])      # a group or link finding: its hosts warn
    return {
        "node_tp": len(found_nodes & nodes), "node_fp": len(found_nodes - nodes), "node_fn": len(nodes - found_nodes),
        "node_warned": len((nodes - found_nodes) & named), "node_passed": len(nodes - named),
        "link_tp": len(found_links & links), "link_fp": len(found_links - links), "link_fn": len(links - found_links),
        "unconfirmed": len(pending),
    }


def trial(args, seed):
    rng = random.Random(seed)
    hosts, nodes, links = make_fleet(args.hosts, args.bad_nodes, args.bad_links, rng)
    rounds = schedule(hosts, args, seed)
    records = [measure(s, c, (nodes, links), args, rng) for rnd in rounds for s, c in rnd]
    started = time.perf_counter()
    verdicts, findings = attribution.analyze(records, {})
    elapsed = time.perf_counter() - started
    extra_rounds = 0
    if args.confirm and attribution.suspects(findings):
        # as playbooks/rdma.yml plans it (run_summary confirm_hosts): from the report's findings and records, the
        # first pass's .node verdicts included (its known-good partners: hosts with two pairs or more, none low)
        confirm = attribution.plan_confirmation(findings, hosts, per_suspect=args.per_suspect,
                                                records=records + verdicts)
        extra_rounds = len(confirm)
        for rnd in confirm:
            for server, client in rnd:
                record = measure(server, client, (nodes, links), args, rng)
                record["params"] = {"sweep_name": attribution.CONFIRM_SWEEP}
                records.append(record)
        started = time.perf_counter()
        findings = (attribution.analyze(records, {}))[1]
        elapsed += time.perf_counter() - started
    measured = set(frozenset((r["host"], r["peer"])) for r in records)
    out = score(findings, nodes, links, measured)
    out.update({"bad_links_measured": sum(1 for link in links if link in measured), "rounds": len(rounds),
                "confirm_rounds": extra_rounds, "pairs": len(records), "analysis_s": elapsed})
    return out


def summarise(args, trials):
    total = dict((k, sum(t[k] for t in trials)) for k in trials[0] if k != "analysis_s")

    def ratio(a, b):
        return None if b == 0 else round(a / b, 3)

    return {
        "hosts": args.hosts, "mode": args.mode, "random_rounds": args.rounds if args.mode == "random" else None,
        "bad_nodes": args.bad_nodes, "bad_links": args.bad_links, "noise": args.noise,
        "error_rate": args.error_rate, "confirm": args.confirm, "trials": len(trials),
        "rounds": trials[0]["rounds"], "confirm_rounds_max": max(t["confirm_rounds"] for t in trials),
        "node_precision": ratio(total["node_tp"], total["node_tp"] + total["node_fp"]),
        "node_recall": ratio(total["node_tp"], total["node_tp"] + total["node_fn"]),
        "link_precision": ratio(total["link_tp"], total["link_tp"] + total["link_fp"]),
        "link_recall": ratio(total["link_tp"], total["link_tp"] + total["link_fn"]),
        "bad_links_measured": total["bad_links_measured"],
        "unconfirmed_links_left": total["unconfirmed"],
        "analysis_s_max": round(max(t["analysis_s"] for t in trials), 3),
    }


def parse_args(argv):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--hosts", type=int, default=64)
    parser.add_argument("--mode", choices=("all", "ring", "random"), default="all")
    parser.add_argument("--rounds", type=int, default=3, help="random matchings for --mode random")
    parser.add_argument("--bad-nodes", type=int, default=2)
    parser.add_argument("--bad-links", type=int, default=3)
    parser.add_argument("--node-factor", type=float, default=0.6)
    parser.add_argument("--link-factor", type=float, default=0.6)
    parser.add_argument("--noise", type=float, default=0.02, help="sd of noise, fraction of line rate")
    parser.add_argument("--error-rate", type=float, default=0.0)
    parser.add_argument("--transient", type=float, default=0.0, help="p: a healthy pair transiently low")
    parser.add_argument("--transient-factor", type=float, default=0.6)
    parser.add_argument("--miss", type=float, default=0.0, help="q: a pair through a bad node measures healthy")
    parser.add_argument("--noise-table", action="store_true", help="the noise table (docs/rdma.md)")
    parser.add_argument("--schedules", nargs="+", choices=("all", "ring", "random"), default=["all", "ring", "random"],
                        help="with --noise-table: the schedules (random: 3 rounds)")
    parser.add_argument("--real-spread", action="store_true",
                        help="--noise from the real captures' run-to-run spread (bench/real_spread.py) instead")
    parser.add_argument("--no-confirm", dest="confirm", action="store_false")
    parser.add_argument("--per-suspect", type=int, default=3)
    parser.add_argument("--trials", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--sweep", action="store_true", help="run the standard table (docs/rdma.md)")
    return parser.parse_args(argv)


SWEEP = [
    ["--hosts", "64", "--mode", "all"],
    ["--hosts", "64", "--mode", "all", "--noise", "0.05"],
    ["--hosts", "64", "--mode", "all", "--error-rate", "0.01"],
    ["--hosts", "256", "--mode", "ring"],
    ["--hosts", "256", "--mode", "random", "--rounds", "1"],
    ["--hosts", "256", "--mode", "random", "--rounds", "3"],
    ["--hosts", "1024", "--mode", "random", "--rounds", "3", "--bad-nodes", "8", "--bad-links", "8"],
    ["--hosts", "1024", "--mode", "random", "--rounds", "3", "--bad-nodes", "8", "--bad-links", "8",
     "--no-confirm"],
    ["--hosts", "1024", "--mode", "all", "--bad-nodes", "8", "--bad-links", "8", "--trials", "1"],
]


def noise_table(args):
    """The --noise-table rows (docs/rdma.md, "Noise"): per schedule and (p, q), the trials in which a healthy host
    failed, the healthy hosts failed, the bad nodes missed, and the rounds."""
    columns = ("N", "schedule", "p %", "q %", "trials", "trials w/ healthy fail", "healthy failed", "bad fail",
               "bad warn", "bad pass", "rounds", "confirm rounds max")
    print("| " + " | ".join(columns) + " |")
    print("|" + "---|" * len(columns))
    known = {"all": ["--mode", "all"], "ring": ["--mode", "ring"], "random": ["--mode", "random", "--rounds", "3"]}
    for schedule in (known[name] for name in args.schedules):
        for p, q in ((0.0, 0.0), (0.005, 0.0), (0.02, 0.0), (0.05, 0.0), (0.02, 0.1)):
            run = parse_args(["--hosts", str(args.hosts), "--bad-nodes", str(args.bad_nodes), "--bad-links",
                              str(args.bad_links), "--transient", str(p), "--miss", str(q), "--per-suspect", "2",
                              "--noise", str(args.noise)] + schedule)
            trials = [trial(run, args.seed + i) for i in range(args.trials)]
            print("| %d | %s | %g | %g | %d | %d | %d | %d | %d | %d | %d | %d |" % (
                run.hosts, " ".join(schedule[1:]), 100 * p, 100 * q, len(trials),
                sum(1 for t in trials if t["node_fp"]), sum(t["node_fp"] for t in trials),
                sum(t["node_tp"] for t in trials), sum(t["node_warned"] for t in trials),
                sum(t["node_passed"] for t in trials), trials[0]["rounds"],
                max(t["confirm_rounds"] for t in trials)))
            sys.stdout.flush()


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    args = parse_args(argv)
    if args.real_spread:       # the spread of a healthy figure, as a fraction of the line rate measure() draws it in
        args.noise = real_spread.run_to_run_sd() * EFFICIENCY
        print("noise: %.2f %% of line rate (bench/real_spread.py)" % (100 * args.noise))
    if args.noise_table:
        noise_table(args)
        return 0
    runs = [parse_args(a + [x for x in argv if x != "--sweep"]) for a in SWEEP] if args.sweep else [args]
    for run in runs:
        trials = [trial(run, run.seed + i) for i in range(run.trials)]
        print(json.dumps(summarise(run, trials), sort_keys=True))
        sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
