# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""From inventory to verdict at 1000 nodes: each stage's fixed and per-host cost, measured, fitted, projected.

For N in --sizes (default 8 16 24) the bench brings up N fake bare hosts (network namespaces with their own sshd,
tests/integration/netns.py) and runs every stage as a user runs it, one ``ansible-playbook`` each, with the
collection's playbooks, over real SSH, once with --forks (default 5, ansible-core's own default) and once with
forks = N:

  probe    playbooks/acceptance.yml --tags probe     (env_probe runs for real on the hosts)
  gpu      playbooks/gpu.yml, gpu_run_probe: false  (as acceptance.yml runs it; the hosts have no GPU, so the
           stage's tasks run and record skips: the orchestration cost, not the tools'), gpu_async: true (the
           role's default: each check started on every host as a job and polled)
  rdma     playbooks/rdma.yml, rdma_pairings {mode: random, random_rounds: 3, seed: 1}, rdma_confirm: true,
           FAKE ib_write_bw (tests/integration/fake_perftest: real TCP server/client, captured outputs) of
           --pair-s seconds a test
  screen   playbooks/nccl_screen.yml (the collective group screen), real Open MPI mpirun over SSH, FAKE
           all_reduce_perf (tests/integration/fixtures/fake_nccl_tests: replays a captured H200 run at once)
  report   playbooks/report.yml on the rdma run's results.json (re-analysis and every report file)

Each run's wall time (process start to exit) is split by a bench-only callback (bench/callback_plugins/e2e_timer.py)
into process start, the variables' check, the stage's own plays, the run summary (the fleet_report callback's
results.json and report files) and the exit. The fakes' own time is taken out (the rdma rounds' span from the fake's
log; the fake nccl-tests' runtime is inside the launch), then per stage

    T(N, f) = a + b * N + c * ceil(N / f)        (least squares over the 2 x len(sizes) runs)

a: fixed (process start, variables' check, plays), b: per host (the controller's serial work per host: templating,
results, the summary), c: per wave of f hosts (one task's remote round trip, module start on the host).
The projection at --project nodes adds the REAL tools' time, from real runs:

  probe    + ceil(N/f) x (real probe's tool time per host - the fleet's)   (h200x2-judgement healthy run)
  gpu      + the GPU stage's tool time per host, once with gpu_async (every host's tools run at the same time;
             rows measured before it, without a gpu_async key: ceil(N/f) x)  (idem: GEMM, all-reduce probe, nccl-tests)
  rdma     + rounds x (perftest's per-pair time + the measured per-round overhead): rounds = 3 (+ confirmation
             rounds when there are suspects) for random, N-1 for mode all           (h200x2-ring8 records)
  screen   + the collective's time over each round's largest group, + a launch for each round after the first
             (bench/group_screen_sim.py, --bad bad nodes); its CPU terms at the simulator's rounds at 1000: fixed
             + per host + per host and round, fitted over runs of two numbers of rounds or more (--screen-bad K
             measures the screen with K slow hosts; --screen-rows-from adds those runs to the fit); with one
             number of rounds, its per-host terms x the simulator's rounds over the rounds the fleet's screen ran
             (its round loop stops once the screen is over); rows measured before that (no rounds_run): x the bound
             of rounds at 1000 over that at the largest fleet, as the loop's tasks ran, or were skipped, on every
             host up to the bound; rows that say their host_rounds (the hosts each round walked: the round loop
             goes on with the hosts the next rounds may use, group_screen.kept, replayed over the run's records)
             fit the cost per host and round over those, and project it at the simulator's host-rounds per host
  report   max(the fit, the measured report.yml at 1000 hosts of issue 26: --report-1000-s)

Needs root (network namespaces), Open MPI's mpirun. Run from the collection root, the collection importable:

    PYTHONPATH=/tmp/aif-dev .venv/bin/python bench/e2e_model.py            # about 12 minutes on 2 CPUs
Prints the measured runs, the fit and the projection; writes bench/results/e2e_model.json.
--probe-sync measures the probe with probe_async: false (as before the role had it: forks hosts at a time).
--stages gpu (for example) measures those stages only and writes bench/results/e2e_model.<stages>.json; then
--rows-from bench/results/e2e_model.json --stage-rows-from bench/results/e2e_model.gpu.json fits and projects the
earlier rows with those stages' rows replaced by the new ones (same hosts and forks).
--publish "WHAT" writes the fit's per-host costs (host /host, main /host of each stage) to
playbooks/vars/scale_model.yml, the table the run's forks warning reads (playbooks/check_vars.yml) and
docs/scale-model.md publishes; WHAT says where and when they were measured.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import re
import resource
import shutil
import statistics
import sys
import tempfile
import time

from ansible_collections.aifabric.acceptance.plugins.plugin_utils import group_screen
from ansible_collections.aifabric.acceptance.tests.integration import netns
from ansible_collections.aifabric.acceptance.tests.integration.conftest import Controller
from ansible_collections.aifabric.acceptance.tests.integration.fixtures.fake_nccl_tests import fake_perf
from ansible_collections.aifabric.acceptance.tests.integration.test_rdma_fleet import events, prepare
from ansible_collections.aifabric.acceptance.tests.integration.test_ssh_fleet import finish, load_report, start

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
STAGES = ("probe", "gpu", "rdma", "screen", "report")
FIXTURES = os.path.join(REPO, "tests", "unit", "plugins", "plugin_utils", "fixtures")
# real acceptance runs (probe + GPU stage) on one GPU host each: the 2x H200 fixture, and 4x H100 captured for this
# bench (tests/hardware/judgement_proof.sh, SCENARIOS=healthy, on the lent nvidia-h100-x4 machine; docs/scale-model.md)
GPU_RUNS = (os.path.join(HERE, "e2e_inputs", "h100x4-acceptance-healthy.results.json"),
            os.path.join(FIXTURES, "h200x2-judgement", "healthy.results.json"))
RDMA_RUN = os.path.join(FIXTURES, "golden", "h200x2-ring8.results.json")
PLAY_CHECK = "Check the inventory's variables (names like the collection's that it does not read)"  # check_vars.yml
PLAY_SUMMARY = "Publish the run summary"
RUN_TIMEOUT_S = 600
PERFTEST_PORT = 18515


class _Path(str):
    """Enough of pathlib for prepare(): tmp_path / "name"."""

    def __truediv__(self, other):
        return _Path(os.path.join(self, other))


# ---------------------------------------------------------------- the real tools' times (inputs)

# checks whose records come from one tool run and carry its duration: counted once per host
ONE_RUN = (("gpu.gemm_", "gemm"), ("env.python", "python"), ("env.package", "python"))


def _run_key(check):
    for prefix, key in ONE_RUN:
        if check.startswith(prefix):
            return key
    return check


def _distinct_durations(records, prefixes):
    """Per host, the tool time of its records of these check families: each run counted once (GEMM's bf16 and fp16
    records of every GPU share one run's duration, as do the probe's Python and package records)."""
    per_host = {}
    for rec in records:
        if rec["check"].startswith(prefixes) and isinstance(rec.get("duration_s"), (int, float)):
            per_host.setdefault(rec["host"], set()).add((_run_key(rec["check"]), rec["duration_s"]))
    return dict((host, sum(d for _k, d in pairs)) for host, pairs in per_host.items())


def gpu_run_summary(path):
    with open(path, encoding="utf-8") as handle:
        run = json.load(handle)
    gpu = _distinct_durations(run["records"], ("gpu.", "nccl."))
    probe = _distinct_durations(run["records"], ("env.",))
    models = sorted(set(str((r.get("facts") or {}).get("name") or (r.get("facts") or {}).get("model") or "")
                        for r in run["records"] if r["check"] == "gpu.device") - {""})
    return {"run": os.path.relpath(path, REPO), "gpus": sum(1 for r in run["records"] if r["check"] == "gpu.device"),
            "gpu_models": models, "gpu_stage_tool_s": round(max(gpu.values()), 1),
            "probe_tool_s": round(max(probe.values()), 2), "acceptance_wall_s": _wall(run["run"])}


def real_inputs(pair_override=None, gpu_override=None):
    """The real tools' times: the GPU stage's and the probe's per host (the first of GPU_RUNS: the most GPUs), and
    perftest's per-pair time (the longest real record of RDMA_RUN)."""
    gpu_runs = [gpu_run_summary(path) for path in GPU_RUNS if os.path.exists(path)]
    with open(RDMA_RUN, encoding="utf-8") as handle:
        rdma_run = json.load(handle)
    pairs = [r["duration_s"] for r in rdma_run["records"] if re.match(r"^rdma\.ib_\w+(\.server)?$", r["check"])
             and isinstance(r.get("duration_s"), (int, float))]
    return {
        "gpu_stage_tool_s_per_host": gpu_override if gpu_override else gpu_runs[0]["gpu_stage_tool_s"],
        "probe_tool_s_per_host": gpu_runs[0]["probe_tool_s"],
        "gpu_runs": gpu_runs,
        "perftest_pair_s": pair_override if pair_override else max(pairs),
        "perftest_run": os.path.relpath(RDMA_RUN, REPO),
    }


def _wall(run):
    try:
        fmt = "%Y-%m-%dT%H:%M:%SZ"
        return time.mktime(time.strptime(run["ended"], fmt)) - time.mktime(time.strptime(run["started"], fmt))
    except (KeyError, TypeError, ValueError):
        return None


def screen_model(n, trials, busbw, launch_s, bad):
    """Rounds and wall time of the group screen at n nodes with ``bad`` bad nodes (bench/group_screen_sim.py)."""
    sys.path.insert(0, HERE)
    import group_screen_sim  # pylint: disable=import-outside-toplevel
    rows, _duration = group_screen_sim.capture_times()
    runs = [group_screen_sim.trial(n, bad, seed) for seed in range(trials)]
    collective = [sum(group_screen_sim.collective_s(g, rows, busbw) for g in r["largest"]) for r in runs]
    return {"bad_nodes": bad, "rounds_mean": statistics.mean(r["rounds"] for r in runs),
            "rounds_max": max(r["rounds"] for r in runs), "largest_group": max(max(r["largest"]) for r in runs),
            # the rounds a host walks (the round loop goes on with the hosts the next rounds may use), the worst trial's
            "host_rounds_per_host_max": max(r["host_rounds"] for r in runs) / float(n),
            "collective_s_mean": statistics.mean(collective), "collective_s_max": max(collective),
            "launch_s_per_round": launch_s,
            "wall_s_mean": statistics.mean(c + launch_s * r["rounds"] for c, r in zip(collective, runs)),
            "wall_s_max": max(c + launch_s * r["rounds"] for c, r in zip(collective, runs))}


# ---------------------------------------------------------------- one ansible-playbook run, timed

def phases(timer_log, launched, exited):
    """Split one run into process start, variables' check, stage, summary and exit (seconds)."""
    with open(timer_log, encoding="utf-8") as handle:
        evs = [json.loads(line) for line in handle if line.strip()]
    out = {"start": 0.0, "check_vars": 0.0, "stage": 0.0, "summary": 0.0, "exit": 0.0}
    tasks = {}
    if not evs:
        out["stage"] = exited - launched
        return out, []
    out["start"] = evs[0]["time"] - launched
    ends = [e["time"] for e in evs[1:]] + [exited]
    for ev, end in zip(evs, ends):
        if ev["kind"] == "end":
            out["exit"] += end - ev["time"]
            continue
        name = ev.get("play") or ""
        key = "check_vars" if name == PLAY_CHECK else "summary" if name == PLAY_SUMMARY else "stage"
        out[key] += end - ev["time"]
        if ev["kind"] == "task":
            tasks[ev["task"]] = tasks.get(ev["task"], 0.0) + end - ev["time"]
    slowest = sorted(tasks.items(), key=lambda kv: -kv[1])[:5]
    return dict((k, round(v, 2)) for k, v in out.items()), [[name[:70], round(t, 2)] for name, t in slowest]


def hosts_cpu_s(fleet):
    """CPU seconds used so far by the hosts: every live process in the fleet's network namespaces (sshd, its
    sessions, the modules, mpirun), its own time and that of its reaped children. A process that ends moves its time
    into its parent's (an sshd of the host), so differences of two readings count it; an async runner, which
    daemonizes (its parent becomes init), is not counted."""
    total = 0
    for pid in netns.procs_in_netns([host.ns_id for host in fleet.hosts]):
        try:
            with open("/proc/%d/stat" % pid, "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except OSError:
            continue
        total += sum(int(v) for v in fields[11:15])     # utime, stime, cutime, cstime (fields 14-17 of stat)
    return total / float(os.sysconf("SC_CLK_TCK"))


def _own_cpu_s(pid, last):
    """utime + stime of one live process (its own, not its children's), or ``last`` once it is gone."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as handle:
            fields = handle.read().rsplit(b")", 1)[1].split()
    except OSError:
        return last
    if fields[0] == b"Z":
        return last
    return (int(fields[11]) + int(fields[12])) / float(os.sysconf("SC_CLK_TCK"))


def controller_cpu_s():
    """CPU seconds of this process's reaped children: ansible-playbook and its workers (ssh clients included,
    except ControlMaster processes still alive)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def run_playbook(fleet, controller, work, name, playbook, inventory, variables, forks, extra_argv=()):
    report_dir = os.path.join(work, name, "reports")
    os.makedirs(report_dir)
    timer = os.path.join(work, name, "timer.jsonl")
    out = os.path.join(work, name, "ansible-playbook.log")
    env = controller.env(fleet, report_dir, callbacks=("aifabric.acceptance.fleet_report", "e2e_timer"), extra={
        "ANSIBLE_FORKS": str(forks), "ANSIBLE_CALLBACK_PLUGINS": os.path.join(HERE, "callback_plugins"),
        "AIFABRIC_E2E_TIMER_LOG": timer, "AIFABRIC_FAIL_ON": "never"})
    argv = controller.playbook_argv(playbook, inventory, *extra_argv)
    if variables is not None:
        argv += ["-e", json.dumps(variables)]
    cpu0, hosts0 = controller_cpu_s(), hosts_cpu_s(fleet)
    launched = time.time()
    proc = start(fleet, argv, env, out, REPO)
    main_cpu = 0.0
    while proc.poll() is None and time.time() - launched < RUN_TIMEOUT_S:
        main_cpu = _own_cpu_s(proc.pid, main_cpu)
        time.sleep(0.1)
    rc = finish(proc, 30, out)
    exited = time.time()
    cpu1, hosts1 = controller_cpu_s(), hosts_cpu_s(fleet)
    if rc != 0:
        with open(out, encoding="utf-8", errors="replace") as handle:
            raise SystemExit("%s: ansible-playbook rc %d, see %s\n%s" % (name, rc, out, handle.read()[-3000:]))
    split, slowest = phases(timer, launched, exited)
    result = {"wall_s": round(exited - launched, 2), "phases": split, "slowest_tasks": slowest,
              "controller_cpu_s": round(cpu1 - cpu0, 2), "hosts_cpu_s": round(hosts1 - hosts0, 2),
              # ansible-playbook's own process (the strategy loop, the callbacks, the summary: one core) and its
              # workers (the forks: SSH, module transfer; they run in parallel)
              "main_cpu_s": round(main_cpu, 2), "workers_cpu_s": round(max(0.0, cpu1 - cpu0 - main_cpu), 2)}
    if name.endswith("report"):
        return result, None
    run_dir, report = load_report(report_dir, out)
    result["records"] = len(report["records"])
    return result, os.path.join(run_dir, "results.json")


def rdma_span(log, pair_s):
    """Rounds run and the span of the fake tests (first server listening to last test finished)."""
    evs = events(log)
    servers = [e["time"] for e in evs if e["role"] == "server" and e["event"] == "listening"]
    finished = [e["time"] for e in evs if e["event"] == "finished"]
    steps = set(e["port"] for e in evs if e["role"] == "client" and e["event"] == "connected")
    if not servers or not finished:
        return {"rounds": 0, "span_s": 0.0, "overhead_per_round_s": None}
    span = max(finished) - min(servers)
    rounds = len(steps)
    return {"rounds": rounds, "span_s": round(span, 2),
            "overhead_per_round_s": round((span - rounds * pair_s) / rounds, 3) if rounds else None}


def one_size(controller, n, forks_list, pair_s, stages=STAGES, probe_async=True, screen_bad=0):
    work = _Path(tempfile.mkdtemp(prefix="e2e-model-%d-" % n))
    rows = []
    with netns.Fleet(n) as fleet:
        inventory, rdma_extra, perftest_log = prepare(fleet, work, {"default": {"duration_s": pair_s}},
                                                      devices=["mlx5_0"])
        nccl_bin = os.path.join(fleet.dir, "nccl-tests")
        os.makedirs(nccl_bin)
        fake_perf.install(nccl_bin, ["all_reduce_perf"])
        ssh = ("-i %s -F /dev/null -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR"
               % fleet.key)
        screen_vars = {
            "nccl_hosts": fleet.group,
            "nccl_options": {"tool_dir": nccl_bin, "ranks_per_node": 1, "tcp_if_include": fleet.subnet,
                             "timeout_s": 120, "mpirun_mca": {"plm_rsh_args": ssh},
                             "mpirun_extra_args": ["--oversubscribe"]},
            "nccl_env": {"FAKE_NCCL_LOG": os.path.join(fleet.dir, "fake_nccl.log")},
            "nccl_profile": "none",
        }
        if screen_bad:
            # that many hosts (spread over the fleet) slow: a test that holds one replays a captured 0.6 GB/s run,
            # under the floor below, so the screen bisects and confirms (more rounds)
            bad_dir = os.path.join(fleet.dir, "bad-hosts")
            os.makedirs(bad_dir)
            for index in range(screen_bad):
                open(os.path.join(bad_dir, fleet.hosts[(2 * index + 1) * n // (2 * screen_bad)].name), "w").close()
            screen_vars["nccl_env"]["FAKE_NCCL_BAD_DIR"] = bad_dir
            screen_vars["nccl_expect"] = {"nccl.all_reduce": {"busbw_max_gbyte_s": {"min": 100}}}
        rdma_vars = dict(json.loads(rdma_extra), rdma_pairings={"mode": "random", "random_rounds": 3, "seed": 1},
                         rdma_confirm=True)
        for forks in forks_list:
            load = os.getloadavg()
            tag = "f%d" % forks
            row = {"hosts": n, "forks": forks, "loadavg_before": [round(x, 2) for x in load], "stages": {}}
            if "probe" in stages:
                _probe_stage(fleet, controller, work, tag, inventory, forks, row, probe_async)
            if "gpu" in stages:
                res, _path = run_playbook(fleet, controller, work, tag + "-gpu", "playbooks/gpu.yml", inventory,
                                          {"gpu_hosts": fleet.group, "gpu_run_probe": False, "gpu_async": True}, forks)
                res["gpu_async"] = True
                row["stages"]["gpu"] = res
            if set(stages) & {"rdma", "screen", "report"}:
                more = (rdma_vars, perftest_log, pair_s, screen_vars, n, screen_bad)
                _rdma_screen_report(fleet, controller, work, tag, inventory, forks, row, more)
            rows.append(row)
            print(json.dumps(row, sort_keys=True))
            sys.stdout.flush()
    shutil.rmtree(work, ignore_errors=True)
    return rows


def _probe_stage(fleet, controller, work, tag, inventory, forks, row, probe_async=True):
    """acceptance.yml --tags probe (probe_async as given: the role's default, true, or false as before it); the
    probe's own tool time per host (the fleet's Python and packages)."""
    res, probe_results = run_playbook(fleet, controller, work, tag + "-probe", "playbooks/acceptance.yml",
                                      inventory, {"acceptance_hosts": fleet.group, "probe_async": probe_async}, forks,
                                      ("--tags", "probe"))
    res["probe_async"] = probe_async
    with open(probe_results, encoding="utf-8") as handle:
        probe_tool = _distinct_durations(json.load(handle)["records"], ("env.",))
    res["tool_s_per_host"] = round(max(probe_tool.values()), 3) if probe_tool else 0.0
    row["stages"]["probe"] = res


def _rdma_screen_report(fleet, controller, work, tag, inventory, forks, row, more):
    """rdma.yml (random + confirmation, the fake perftest), nccl_screen.yml, report.yml on the rdma run's results."""
    rdma_vars, perftest_log, pair_s, screen_vars, n, screen_bad = more
    if os.path.exists(perftest_log):
        os.unlink(perftest_log)
    res, rdma_results = run_playbook(fleet, controller, work, tag + "-rdma", "playbooks/rdma.yml", inventory,
                                     rdma_vars, forks)
    res["fake"] = rdma_span(perftest_log, pair_s)
    row["stages"]["rdma"] = res
    res, screen_results = run_playbook(fleet, controller, work, tag + "-screen", "playbooks/nccl_screen.yml",
                                       inventory, screen_vars, max(forks, math.ceil(math.sqrt(n))))
    res["rounds_run"] = screen_rounds_run(screen_results)
    res["host_rounds"] = screen_host_rounds(screen_results, [h.name for h in fleet.hosts])
    res["bad_hosts"] = screen_bad
    row["stages"]["screen"] = res
    res, _path = run_playbook(fleet, controller, work, tag + "-report", "playbooks/report.yml", inventory,
                              {"report_input": rdma_results,
                               "report_dir": os.path.join(work, tag + "-report", "out")}, forks)
    row["stages"]["report"] = res


def screen_rounds_run(results):
    """The rounds the screen ran: the distinct rounds its tests' records name (params.env.AIFABRIC_SCREEN)."""
    with open(results, encoding="utf-8") as handle:
        records = json.load(handle)["records"]
    rounds = set()
    for rec in records:
        marker = ((rec.get("params") or {}).get("env") or {}).get("AIFABRIC_SCREEN")
        if isinstance(marker, str) and marker.startswith("round="):
            rounds.add(marker.split()[0])
    return len(rounds)


def screen_host_rounds(results, hosts):
    """The hosts the screen's round loop walked, over its rounds: in each, the hosts the rounds before kept (the
    filter aifabric.acceptance.group_screen_hosts, group_screen.kept, replayed over the run's screen records, with the
    topology groups and rules their markers name); every host in the first."""
    with open(results, encoding="utf-8") as handle:
        records = [r for r in json.load(handle)["records"] if group_screen.is_screen_record(r)]
    by_round, topology, evidence = {}, {}, group_screen.EVIDENCE
    for rec in records:
        test = group_screen.screen_of(rec)
        by_round.setdefault(test["round"], []).append(rec)
        topology.update(test["groups"])
        evidence = test["rules"]["evidence"]
    total, done = 0, []
    for index in sorted(by_round):
        total += len(group_screen.kept(hosts, group_screen.screen_outcomes(done), topology or None, evidence))
        done += by_round[index]
    return total


def _merged(rows, paths):
    """The rows with the stages of each of ``paths``' rows (same hosts and forks) put in place of theirs, in order; a
    path ending in ``:STAGE[,STAGE...]`` gives only those stages of its rows."""
    for path in paths:
        only = None
        head, _sep, tail = path.rpartition(":")
        if head and tail and set(tail.split(",")) <= set(STAGES):
            path, only = head, tail.split(",")
        rows = _merged_one(rows, path, only)
    return rows


def _merged_one(rows, path, only=None):
    with open(path, encoding="utf-8") as handle:
        newer = dict(((r["hosts"], r["forks"]), r) for r in json.load(handle)["rows"])
    if only:
        newer = dict((key, dict(r, stages=dict((s, v) for s, v in r["stages"].items() if s in only)))
                     for key, r in newer.items())
    missing = [(r["hosts"], r["forks"]) for r in rows if (r["hosts"], r["forks"]) not in newer]
    if missing:
        raise SystemExit("%s has no row for (hosts, forks) %s" % (path, missing))
    return [dict(r, stages=dict(r["stages"], **newer[(r["hosts"], r["forks"])]["stages"]),
                 stage_rows_from=r.get("stage_rows_from", []) + [{
                     "path": os.path.relpath(path, REPO), "stages": sorted(newer[(r["hosts"], r["forks"])]["stages"]),
                     "loadavg_before": newer[(r["hosts"], r["forks"])]["loadavg_before"]}])
            for r in rows]


def _screen_samples(paths):
    """(hosts, the screen's result) of every row of ``paths`` (bench/e2e_model.py --stages screen runs)."""
    out = []
    for path in paths:
        with open(path, encoding="utf-8") as handle:
            out.extend((r["hosts"], r["stages"]["screen"]) for r in json.load(handle)["rows"])
    return out


def _write_partial(rows, args, started):
    """Some stages only: their rows (no fit: the model needs every stage), for --stage-rows-from."""
    name = "e2e_model.%s%s.json" % ("-".join(s for s in STAGES if s in args.stages),
                                    "" if args.probe_async else ".probe-sync")
    result = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "bench_wall_s": round(time.time() - started),
              "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
              "stages": list(args.stages), "rows": rows}
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", name), "w", encoding="utf-8") as handle:
        json.dump(result, handle, indent=1, sort_keys=True)
    for r in rows:
        print("%5d hosts forks %-3d %s" % (r["hosts"], r["forks"], "  ".join(
            "%s %.1f s" % (s, r["stages"][s]["wall_s"]) for s in STAGES if s in r["stages"])))
    print("\nbench wall %d s; written bench/results/%s" % (result["bench_wall_s"], name))
    return 0


# ---------------------------------------------------------------- the fit

def lstsq(xs, ys):
    """Ordinary least squares (normal equations, Gauss-Jordan): coefficients of ys ~ xs (rows of features)."""
    k = len(xs[0])
    ata = [[sum(x[i] * x[j] for x in xs) for j in range(k)] for i in range(k)]
    aty = [sum(x[i] * y for x, y in zip(xs, ys)) for i in range(k)]
    m = [row + [v] for row, v in zip(ata, aty)]
    for col in range(k):
        pivot = max(range(col, k), key=lambda r: abs(m[r][col]))
        if abs(m[pivot][col]) < 1e-12:
            raise SystemExit("the fit is singular: too few distinct sizes/forks")
        m[col], m[pivot] = m[pivot], m[col]
        m[col] = [v / m[col][col] for v in m[col]]
        for r in range(k):
            if r != col:
                m[r] = [a - m[r][col] * b for a, b in zip(m[r], m[col])]
    return [m[i][k] for i in range(k)]


def orchestration_s(stage, res):
    """The stage's wall time less the fakes' own test time (only the rdma fake takes measurable time)."""
    wall = res["wall_s"]
    if stage == "rdma":
        wall -= res["fake"]["span_s"]
    return wall


def features(n, forks):
    return [1.0, float(n), float(math.ceil(n / forks))]


def _fit_stage(xs, ys):
    coef = lstsq(xs, ys)
    pred = [sum(c * x for c, x in zip(coef, f)) for f in xs]
    return coef, round(max(abs(p - y) for p, y in zip(pred, ys)), 2)


def screen_round_fit(samples):
    """The screen's CPU seconds (main, workers, hosts) as fixed + per host + per host and round (least squares over
    ``samples``, (hosts, the screen's result) of runs that say their rounds), where they ran two numbers of rounds or
    more; else None."""
    rounds = [res.get("rounds_run") for _n, res in samples]
    if len(samples) < 4 or not all(rounds) or len(set(rounds)) < 2:
        return None
    # the hosts walked over the rounds: every host every round, until the round loop went on with the hosts the
    # next rounds may use (host_rounds)
    xs = [[1.0, float(n), float(res.get("host_rounds", n * res["rounds_run"]))] for n, res in samples]
    out = {}
    for key in ("main_cpu_s", "workers_cpu_s", "hosts_cpu_s"):
        coef, resid = _fit_stage(xs, [res[key] for _n, res in samples])
        out[key] = {"fixed_s": round(coef[0], 3), "per_host_s": round(coef[1], 4), "per_host_round_s": round(coef[2], 4),
                    "max_abs_residual_s": resid}
    return out


def fit(rows, screen_extra=()):
    """Per stage: the wall-time fit a + b N + c ceil(N/f) on this machine, and the CPU fits (controller and hosts,
    each fixed + per host) the real-fleet model uses; for the screen also its CPU per host and round, over its rows
    and ``screen_extra`` ((hosts, the screen's result) of further runs, with other numbers of rounds)."""
    model = {}
    for stage in STAGES:
        coef, resid = _fit_stage([features(r["hosts"], r["forks"]) for r in rows],
                                 [orchestration_s(stage, r["stages"][stage]) for r in rows])
        ctl, ctl_resid = _fit_stage([[1.0, float(r["hosts"])] for r in rows],
                                    [r["stages"][stage]["main_cpu_s"] for r in rows])
        workers, _w_resid = _fit_stage([[1.0, float(r["hosts"])] for r in rows],
                                       [r["stages"][stage]["workers_cpu_s"] for r in rows])
        hosts, hosts_resid = _fit_stage([[1.0, float(r["hosts"])] for r in rows],
                                        [r["stages"][stage]["hosts_cpu_s"] for r in rows])
        model[stage] = {"fixed_s": round(coef[0], 3), "per_host_s": round(coef[1], 4), "per_wave_s": round(coef[2], 3),
                        "max_abs_residual_s": resid,
                        "controller_cpu_fixed_s": round(ctl[0], 3), "controller_cpu_per_host_s": round(ctl[1], 4),
                        "controller_cpu_max_abs_residual_s": ctl_resid,
                        "workers_cpu_fixed_s": round(workers[0], 3), "workers_cpu_per_host_s": round(workers[1], 4),
                        "host_cpu_fixed_s": round(hosts[0], 3), "host_cpu_per_host_s": round(hosts[1], 4),
                        "host_cpu_max_abs_residual_s": hosts_resid}
    overhead = [r["stages"]["rdma"]["fake"]["overhead_per_round_s"] for r in rows
                if r["stages"]["rdma"]["fake"]["overhead_per_round_s"] is not None]
    model["rdma"]["overhead_per_round_s"] = round(max(overhead), 3) if overhead else 0.0
    # the GPU stage measured with gpu_async: each host's tools start with its job, all at once (rows without the key
    # were measured before the role had it: the tools ran forks hosts at a time)
    model["gpu"]["async"] = all(r["stages"]["gpu"].get("gpu_async", False) for r in rows)
    # the probe measured with probe_async: every host's probe runs at the same time (rows without the key: forks hosts
    # at a time, as before the role had it)
    model["probe"]["async"] = all(r["stages"]["probe"].get("probe_async", False) for r in rows)
    # the rounds the fleet's screen ran (its largest fleet's), where every row says: its round loop stops once the
    # screen is over (rows without the key walked the bound of rounds)
    largest = max(r["hosts"] for r in rows)
    ran = [r["stages"]["screen"].get("rounds_run") for r in rows if r["hosts"] == largest]
    model["screen"]["rounds_run"] = max(ran) if all(r["stages"]["screen"].get("rounds_run") for r in rows) else None
    # rows that say the hosts they walked: the round loop goes on with the hosts the next rounds may use
    # (rows without the key walked every host every round, hosts x rounds_run, as the screen's healthy rounds still do)
    model["screen"]["walks_kept"] = any("host_rounds" in res for _n, res in
                                        [(r["hosts"], r["stages"]["screen"]) for r in rows] + list(screen_extra))
    model["screen"]["host_rounds_per_host"] = max(
        float(r["stages"]["screen"].get("host_rounds", r["hosts"] * (r["stages"]["screen"].get("rounds_run") or 0)))
        / r["hosts"] for r in rows if r["hosts"] == largest)
    model["screen"]["per_round"] = screen_round_fit([(r["hosts"], r["stages"]["screen"]) for r in rows]
                                                    + list(screen_extra))
    return model


def screen_growth(model, n, largest, screen):
    """The screen's model at n nodes: (the model, with the screen's CPU terms at the simulator's rounds where the fit
    has a cost per round; the factor of the screen's per-host terms the projection still applies; what it rests on).
    The factor: with a cost per round, 1 for the CPU terms and, for this machine's wall fit, the CPU per host at the
    simulator's rounds over that at the rounds the rows ran; without it, the simulator's rounds (``screen``: the worst
    case's) over the rounds the fleet's screen ran, or, for rows measured while the round loop walked its bound, the
    bound at n over that at the largest fleet."""
    per_round = model["screen"].get("per_round")
    if per_round and model["screen"].get("rounds_run"):
        # the rounds a host walks at n: each of them, or (walks_kept) the simulator's host-rounds per host
        rounds = screen["host_rounds_per_host_max"] if model["screen"].get("walks_kept") else screen["rounds_max"]
        screen_at = dict(model["screen"])
        for key, name in (("main_cpu_s", "controller_cpu"), ("workers_cpu_s", "workers_cpu"), ("hosts_cpu_s", "host_cpu")):
            screen_at[name + "_fixed_s"] = per_round[key]["fixed_s"]
            screen_at[name + "_per_host_s"] = per_round[key]["per_host_s"] + rounds * per_round[key]["per_host_round_s"]
        main = per_round["main_cpu_s"]
        box = ((main["per_host_s"] + rounds * main["per_host_round_s"])
               / (main["per_host_s"] + model["screen"]["host_rounds_per_host"] * main["per_host_round_s"]))
        return (dict(model, screen=screen_at), (1.0, box),
                "CPU per host and round (main %.4f, workers %.4f, hosts %.4f s) x %.2f rounds a host at %d nodes (%d "
                "bad, the simulator's worst); this machine's wall fit x %.2f" % (
                    main["per_host_round_s"], per_round["workers_cpu_s"]["per_host_round_s"],
                    per_round["hosts_cpu_s"]["per_host_round_s"], rounds, n, screen["bad_nodes"], box))
    if model["screen"].get("rounds_run"):
        grow = float(screen["rounds_max"]) / model["screen"]["rounds_run"]
        return (model, (grow, grow), "rounds run: %d at %d nodes (%d bad, the simulator's worst), %d at %d; its per-host "
                "terms x %.2f" % (screen["rounds_max"], n, screen["bad_nodes"], model["screen"]["rounds_run"], largest, grow))
    grow = float(group_screen.max_rounds(n)) / group_screen.max_rounds(largest)
    return (model, (grow, grow), "rounds bound: %d at %d nodes, %d at %d; its per-host terms x %.2f" % (
        group_screen.max_rounds(n), n, group_screen.max_rounds(largest), largest, grow))


def tools_s(model, inputs, n, forks, screen, rdma_rounds, fleet_probe_tool_s):
    """The real tools' time at n nodes (what the fakes do not take), per stage."""
    waves = math.ceil(n / forks)
    return {
        "probe": (1 if model["probe"].get("async") else waves) * max(0.0, inputs["probe_tool_s_per_host"] - fleet_probe_tool_s),
        "gpu": (1 if model["gpu"].get("async") else waves) * inputs["gpu_stage_tool_s_per_host"],
        "rdma": rdma_rounds * (inputs["perftest_pair_s"] + model["rdma"]["overhead_per_round_s"]),
        # the fleet's screen runs (no bad node: one round) already hold one round's mpirun launch (real Open MPI
        # over SSH): added are the collective's own time and the launches of the further rounds (the simulator's)
        "screen": screen["collective_s_max"] + screen["launch_s_per_round"] * max(0, screen["rounds_max"] - 1),
        "report": 0.0,
    }


def project(model, inputs, n, forks, screen, rdma_rounds, report_1000_s, fleet_probe_tool_s, cores,
            screen_grow=(1.0, 1.0)):
    """Two projections of the wall time at n nodes with forks f.

    box:   the wall-time fit of this machine, where the hosts' own work runs on the controller's CPUs too (an
           upper bound nobody meets on a real fleet), plus the real tools' time.
    fleet: a real fleet, where each host does its own work on its own CPUs: the controller's CPU (ansible-playbook's
           own process, fixed + per host, on one core; its workers' fixed + per host over min(f, cores) cores) plus,
           per wave of f hosts, one host's own CPU for the stage (module starts, the probe's reading) and the tools'
           time; no overlap between the controller's and the hosts' work is counted (an upper bound).
    """
    waves = math.ceil(n / forks)
    tools = tools_s(model, inputs, n, forks, screen, rdma_rounds, fleet_probe_tool_s)
    box, fleet = {}, {}
    for s in STAGES:
        m = model[s]
        # the screen's per-host tasks run once per round: its per-host terms grow with its rounds (screen_growth)
        grow, box_grow = screen_grow if s == "screen" else (1.0, 1.0)
        box[s] = m["fixed_s"] + box_grow * (m["per_host_s"] * n + m["per_wave_s"] * waves) + tools[s]
        ctl = (m["controller_cpu_fixed_s"] + grow * m["controller_cpu_per_host_s"] * n
               + max(0.0, m["workers_cpu_fixed_s"] + grow * m["workers_cpu_per_host_s"] * n) / min(forks, cores))
        fleet[s] = ctl + grow * waves * max(0.0, m["host_cpu_per_host_s"]) + tools[s]
    if report_1000_s and n >= 1000:
        box["report"] = max(box["report"], report_1000_s)
        fleet["report"] = max(fleet["report"], report_1000_s)
    return {"nodes": n, "forks": forks, "rdma_rounds": rdma_rounds,
            "tools_s": dict((s, round(v, 1)) for s, v in tools.items()),
            "box_stage_s": dict((s, round(v, 1)) for s, v in box.items()),
            "fleet_stage_s": dict((s, round(v, 1)) for s, v in fleet.items()),
            "box_total_min": round(sum(box.values()) / 60.0, 1),
            "fleet_total_min": round(sum(fleet.values()) / 60.0, 1)}


# ---------------------------------------------------------------- main

def print_tables(rows, model, projections, inputs, screens, growth):
    print("\nmeasured (wall s of each ansible-playbook; rdma: fake tests' span / rounds in brackets)")
    print("%5s %5s %17s %7s %7s %16s %7s %7s" % ("hosts", "forks", "loadavg", "probe", "gpu", "rdma", "screen",
                                                 "report"))
    for r in rows:
        st = r["stages"]
        fake = st["rdma"]["fake"]
        print("%5d %5d %17s %7.1f %7.1f %7.1f [%4.1f/%d] %7.1f %7.1f" % (
            r["hosts"], r["forks"], "/".join("%.2f" % x for x in r["loadavg_before"]), st["probe"]["wall_s"],
            st["gpu"]["wall_s"], st["rdma"]["wall_s"], fake["span_s"], fake["rounds"], st["screen"]["wall_s"],
            st["report"]["wall_s"]))
    print("\nphases (s: start, check_vars, stage, summary, exit) at the largest fleet, default forks")
    big = max((r for r in rows if r["forks"] == rows[0]["forks"]), key=lambda r: r["hosts"])
    for stage in STAGES:
        print("  %-7s %s" % (stage, " ".join("%s=%.1f" % kv for kv in big["stages"][stage]["phases"].items())))
        slowest = big["stages"][stage].get("slowest_tasks", [])
        print("          slowest tasks: %s" % "; ".join("%s %.1f" % (name, t) for name, t in slowest))
    print("\nCPU seconds per run (controller: ansible-playbook and its workers; hosts: every sshd's sessions) and "
          "(controller + hosts) / wall: about 2 = both CPUs of this machine busy")
    for r in rows:
        print("  %3d hosts f=%-3d %s" % (r["hosts"], r["forks"], "  ".join(
            "%s %.1f+%.1f (%.2f)" % (s, r["stages"][s]["controller_cpu_s"], r["stages"][s]["hosts_cpu_s"],
                                     (r["stages"][s]["controller_cpu_s"] + r["stages"][s]["hosts_cpu_s"])
                                     / r["stages"][s]["wall_s"]) for s in STAGES)))
    print("\nfit (least squares over the runs above; the fakes' test time taken out)")
    print("  wall on this machine: T(N, f) = a + b*N + c*ceil(N/f); CPU seconds: fixed + per host, of")
    print("  ansible-playbook's own process (main), its workers, and the hosts")
    print("%-7s %7s %8s %8s %6s | %8s %8s %6s | %8s %8s | %8s %8s %6s" % (
        "stage", "a s", "b s/host", "c s/wave", "resid", "main fix", "main/h", "resid", "work fix", "work/h",
        "host fix", "host/h", "resid"))
    for stage in STAGES:
        m = model[stage]
        print("%-7s %7.2f %8.4f %8.3f %6.2f | %8.3f %8.4f %6.2f | %8.3f %8.4f | %8.3f %8.4f %6.2f" % (
            stage, m["fixed_s"], m["per_host_s"], m["per_wave_s"], m["max_abs_residual_s"],
            m["controller_cpu_fixed_s"], m["controller_cpu_per_host_s"], m["controller_cpu_max_abs_residual_s"],
            m["workers_cpu_fixed_s"], m["workers_cpu_per_host_s"],
            m["host_cpu_fixed_s"], m["host_cpu_per_host_s"], m["host_cpu_max_abs_residual_s"]))
    print("rdma per-round overhead (measured, max): %.3f s" % model["rdma"]["overhead_per_round_s"])
    print("\ninputs (real tools): %s" % json.dumps(inputs, sort_keys=True))
    print("screen's %s" % growth[2])
    for s in screens:
        print("screen at %d nodes, %d bad: %s" % (projections[0]["nodes"], s["bad_nodes"], json.dumps(s, sort_keys=True)))
    for kind, title in (("fleet", "a real fleet (main CPU + workers' CPU / min(forks, cores) + per wave one host's "
                                  "own CPU + real tools)"),
                        ("box", "this machine's wall fit + real tools (hosts' work on the controller's CPUs)")):
        print("\nprojection, %s: minutes" % title)
        print("%6s %5s %-12s %6s %6s %6s %6s %6s %7s" % ("nodes", "forks", "rdma", "probe", "gpu", "rdma", "screen",
                                                         "report", "total"))
        for p in projections:
            st = p[kind + "_stage_s"]
            print("%6d %5d %-12s %6.1f %6.1f %6.1f %6.1f %6.1f %7.1f" % (
                p["nodes"], p["forks"], p["label"], st["probe"] / 60, st["gpu"] / 60, st["rdma"] / 60,
                st["screen"] / 60, st["report"] / 60, p[kind + "_total_min"]))


SCALE_MODEL = os.path.join(REPO, "playbooks", "vars", "scale_model.yml")
PUBLISHED = (("probe", "probe"), ("gpu", "gpu"), ("rdma", "rdma"), ("screen", "nccl_screen"))  # stage, its tag


def published_table(model, measured):
    """The lines of playbooks/vars/scale_model.yml's table (below its comments) from a fit."""
    def row(key):
        return "{%s}" % ", ".join("%s: %.3f" % (tag, max(0.0, model[stage][key])) for stage, tag in PUBLISHED)
    return ["__check_scale_model:", "  measured: %s" % json.dumps(measured),
            "  host_s_per_wave: %s" % row("host_cpu_per_host_s"),
            "  main_s_per_host: %s" % row("controller_cpu_per_host_s")]


def publish(model, measured):
    """Replace the table of playbooks/vars/scale_model.yml (its comments kept) with this fit's."""
    with open(SCALE_MODEL, encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    head = lines[:lines.index("__check_scale_model:")]
    with open(SCALE_MODEL, "w", encoding="utf-8") as handle:
        handle.write("\n".join(head + published_table(model, measured)) + "\n")
    print("published the per-host costs to %s" % os.path.relpath(SCALE_MODEL, REPO))


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[8, 16, 24])
    parser.add_argument("--forks", type=int, default=5, help="the default forks line (ansible-core's default: 5)")
    parser.add_argument("--pair-s", type=float, default=1.0, help="the fake ib_write_bw's test time, seconds")
    parser.add_argument("--project", type=int, default=1000, help="nodes to project to")
    parser.add_argument("--project-forks", type=int, nargs="+", default=[5, 50, 100])
    parser.add_argument("--perftest-pair-s", type=float, default=None,
                        help="perftest's per-pair time (default: the longest real record of %s)" % os.path.basename(RDMA_RUN))
    parser.add_argument("--gpu-s-per-host", type=float, default=None,
                        help="the GPU stage's tool time per host (default: the 4x H100 run of bench/e2e_inputs)")
    parser.add_argument("--busbw", type=float, default=360.0, help="the screen's bus bandwidth between nodes, GB/s")
    parser.add_argument("--bad", type=int, default=5, help="bad nodes for the screen's worst case")
    parser.add_argument("--confirm-rounds", type=int, default=4,
                        help="confirmation rounds after the random screen when it has suspects (docs/rdma.md)")
    parser.add_argument("--controller-cores", type=int, default=8,
                        help="CPU cores of the controller of the real fleet (its workers' share)")
    parser.add_argument("--rows-from", default=None,
                        help="fit and project the runs of an earlier bench/results/e2e_model.json (no fleet)")
    parser.add_argument("--row-sizes", type=int, nargs="+", default=None,
                        help="with --rows-from: only its rows of these numbers of hosts (to merge stage rows measured "
                             "at fewer sizes)")
    parser.add_argument("--stages", nargs="+", choices=STAGES, default=list(STAGES),
                        help="the stages to measure (a subset writes e2e_model.<stages>.json, no fit)")
    parser.add_argument("--stage-rows-from", nargs="+", default=None,
                        help="with --rows-from: the stages these rows hold replace the earlier rows' (same hosts, forks), "
                             "file after file; FILE:screen (for example) takes only those stages of its rows (a --stages "
                             "screen run holds its rdma and report runs too)")
    parser.add_argument("--screen-rows-from", nargs="+", default=None,
                        help="with --rows-from: the screen's runs of these files (--stages screen --screen-bad K: more "
                             "rounds) fitted with the rows' own, for the screen's CPU per host and round")
    parser.add_argument("--screen-bad", type=int, default=0,
                        help="hosts of the fleet slow for the screen (the fake nccl-tests' slow capture, a 100 GB/s floor): "
                             "its rows run more rounds, from which the fit tells the screen's cost per round")
    parser.add_argument("--probe-sync", dest="probe_async", action="store_false",
                        help="measure the probe with probe_async: false (as before the role had it); its rows go to "
                             "e2e_model.<stages>.probe-sync.json")
    parser.add_argument("--publish", metavar="WHAT", default=None,
                        help="write the fit's per-host costs (host /host, main /host) to playbooks/vars/scale_model.yml, "
                             "the one table the run's forks warning, this bench and docs/scale-model.md share; WHAT "
                             "says where and when they were measured")
    parser.add_argument("--report-1000-s", type=float, default=10.1,
                        help="report.yml at 1000 hosts x 101 records, measured for issue 26 item 3")
    args = parser.parse_args(argv)
    started = time.time()
    if args.rows_from:
        with open(args.rows_from, encoding="utf-8") as handle:
            earlier = json.load(handle)
        rows, args.pair_s = earlier["rows"], earlier["pair_s_fake"]
        if args.row_sizes:
            rows = [r for r in rows if r["hosts"] in args.row_sizes]
        if args.stage_rows_from:
            rows = _merged(rows, args.stage_rows_from)
    else:
        controller = Controller()
        problems = controller.problems() + netns.missing_prerequisites()
        if not os.access("/usr/bin/mpirun", os.X_OK):
            problems.append("Open MPI's mpirun is not installed (apt-get install openmpi-bin)")
        if problems:
            raise SystemExit("cannot run: " + "; ".join(problems))
        rows = []
        for n in args.sizes:
            rows.extend(one_size(controller, n, sorted(set([args.forks, n])), args.pair_s, args.stages, args.probe_async,
                                 args.screen_bad))
        if set(args.stages) != set(STAGES):
            return _write_partial(rows, args, started)
    model = fit(rows, _screen_samples(args.screen_rows_from or []))
    inputs = real_inputs(args.perftest_pair_s, args.gpu_s_per_host)
    fleet_probe = max(r["stages"]["probe"].get("tool_s_per_host", 0.0) for r in rows)
    screens = [screen_model(args.project, 10, args.busbw, 15.0, bad) for bad in (0, args.bad)]
    projections = []
    n = args.project
    growth = screen_growth(model, n, max(r["hosts"] for r in rows), screens[-1])
    model_at = growth[0]
    for forks in args.project_forks:
        for label, rounds in (("random+conf", 3 + args.confirm_rounds), ("all", n - 1 if n % 2 == 0 else n)):
            p = project(model_at, inputs, n, forks, screens[-1], rounds, args.report_1000_s, fleet_probe,
                        args.controller_cores, growth[1])
            p["label"] = label
            projections.append(p)
    print_tables(rows, model, projections, inputs, screens, growth)
    out_name = "e2e_model.refit.json" if args.rows_from else "e2e_model.json"
    result = {"date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "bench_wall_s": round(time.time() - started),
              "machine": {"cpus": os.cpu_count(), "platform": platform.platform(), "python": platform.python_version()},
              "pair_s_fake": args.pair_s, "controller_cores": args.controller_cores, "fleet_probe_tool_s_per_host": fleet_probe, "rows": rows, "model": model,
              "inputs": inputs, "screens": screens, "projections": projections}
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", out_name), "w", encoding="utf-8") as handle:
        json.dump(result, handle, indent=1, sort_keys=True)
    print("\nbench wall %d s; written bench/results/%s" % (result["bench_wall_s"], out_name))
    if args.publish:
        publish(model, args.publish)
    return 0


if __name__ == "__main__":
    sys.exit(main())
