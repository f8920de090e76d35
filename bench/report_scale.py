# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report at fleet scale, measured against a plain JSON load + dump of the same input.

Input: N hosts, each carrying the records of the REAL 2x H200 acceptance run
(tests/unit/plugins/plugin_utils/fixtures/h200x2-acceptance-results.json: env probes, GPU devices, GEMM
per GPU, the torch all-reduce with its per-size series), the REAL nccl-tests 2.19.6 -J runs of the same
machine (4 collectives with per-size series, tests/unit/plugins/module_utils/parsers/fixtures), GEMM and
device records replicated to 8 GPUs, and perftest ib_write_bw client+server records for 8 rails on two
rounds of a ring (each host against its next two neighbours), whose per-size series are a REAL --report_gbits
capture. About 100 records per host. Injected: one slow node (all its pairs at 45 %), one slow link,
one host with an old driver (drift). ``--mesh`` instead makes a full mesh of one rail: n*(n-1)/2 pairs,
one client record each at one message size (1000 hosts: 499,500 pair records), and no host records.
``--source PATH`` (or ``--source real``: the judgement run of tests/unit/plugins/plugin_utils/fixtures/h200x2-judgement
with the most records per host) instead replicates a results.json a real run wrote to N hosts, every record and
per-size series kept, renamed per host; the input is then the results.json the report writes of those records
(summary, findings and analysis records of N hosts, as a run of N hosts would have written it).

Modes (each measured in a fresh child process, so peak RSS is that of the mode alone):
- ``baseline``: json.load + json.dump of the input results.json;
- ``reanalyze``: fleet.read_results + fleet.reanalyze + fleet.publish, in process (what the report action of
  playbooks/report.yml runs);
- ``playbook``: what a user runs, ``ansible-playbook playbooks/report.yml -e report_input=<input> -e report_dir=<dir>``
  from the checkout (its ansible.cfg), process start included; ANSIBLE_COLLECTIONS_PATH is
  ``--collections-path`` (default: a link to this checkout in the work directory, never another installed copy). Its
  CPU time and peak RSS are those of ansible-playbook and its workers
  (RUSAGE_CHILDREN of the child that runs it);
- ``callback``: the live callback's path: Collector with its record stream and progress tally, one task
  per check family with one result per host (the streaming of the play, ``feed_s``), Collector.load of
  the stream, fleet.build_report + publish (the end of the run).

``--shapes 44 100 300 [--pairs with|without|both]``: for each shape (records per host, analysis records included),
the fleet of ``shaped_results`` (the real h200x2-judgement runs with noise, a ring of perftest pairs with a real
per-size series, padded with small env.package records), measured with the ``playbook`` mode against the
``baseline`` of the same file; one markdown table row per shape (bench/results/report_scale_shapes.json).

    cd <staged collection> && PYTHONPATH=<stage> python bench/report_scale.py [--hosts 1000] [--mesh] [--repeat 3]
    cd <checkout> && PYTHONPATH=/tmp/aif-dev python bench/report_scale.py --hosts 1000 --shapes 44 100 300
    cd <checkout> && PYTHONPATH=/tmp/aif-dev python bench/report_scale.py --source real --hosts 1000 --repeat 3

Each mode's wall time and CPU time (user + sys of its process) are compared with the baseline of the same
round; on a shared machine the CPU-time ratio is the steadier one.

Results are printed and written to bench/results/report_scale.json.
"""

from __future__ import annotations

import argparse
import contextlib
import copy
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
FIXTURES = os.path.join(ROOT, "tests", "unit", "plugins", "plugin_utils", "fixtures")
FIXTURE = os.path.join(FIXTURES, "h200x2-acceptance-results.json")
JUDGEMENT = os.path.join(FIXTURES, "h200x2-judgement")
PLAYBOOK = os.path.join(ROOT, "playbooks", "report.yml")
PARSERS = os.path.join(ROOT, "tests", "unit", "plugins", "module_utils", "parsers", "fixtures")
NCCL_DIR = os.path.join(PARSERS, "nccl_tests", "h200x2-nccl-tests-2.19.6")
PERFTEST = os.path.join(PARSERS, "perftest", "hdr-ib-send-bw-client-a-gbits-1qp.txt")
STARTED = "2026-11-22T14:54:46Z"
RAILS = 8
GPUS = 8


def _read(path):
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def host_template():
    """The records of one host: the real run, nccl-tests series, GEMM/device replicated to 8 GPUs."""
    from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import nccl_test as nccl_tests
    real = json.loads(_read(FIXTURE))["records"]
    out = []
    per_gpu = {}
    for rec in real:
        if rec["check"] in ("gpu.device", "gpu.gemm_bf16", "gpu.gemm_fp16"):
            per_gpu.setdefault(rec["check"], []).append(rec)
            continue
        out.append(rec)
    for check, recs in sorted(per_gpu.items()):
        for gpu in range(GPUS):
            rec = copy.deepcopy(recs[gpu % len(recs)])
            rec["target"] = str(gpu)
            out.append(rec)
    for name in sorted(os.listdir(NCCL_DIR)):
        if name.endswith(".json"):
            out.extend(dict(rec, host="x") for rec in nccl_tests.from_output(os.path.join(NCCL_DIR, name), {}))
    return out


def perftest_rows():
    """The series rows the perftest adapter makes of the real capture (the perftest_bw family's columns)."""
    from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import perftest
    from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import perftest_sweep as adapter
    return adapter._series(perftest.parse(_read(PERFTEST)), "bw")  # pylint: disable=protected-access


def _pair(client, server, rail, factor, rows, floor, mesh=False):
    from ansible_collections.aifabric.acceptance.plugins.module_utils import expectations, results
    series = [dict(r, **dict((k, None if r[k] is None else round(r[k] * factor, 2))
                             for k in ("bw_avg_gbit_s", "bw_peak_gbit_s", "msg_rate_mpps", "tool_bw_avg",
                                       "tool_bw_peak"))) for r in rows]
    last = series[-1]
    metrics = {"bw_avg_gbit_s": last["bw_avg_gbit_s"], "bw_peak_gbit_s": last["bw_peak_gbit_s"],
               "msg_size_bytes": last["msg_size_bytes"]}
    status, reason, expect = expectations.judge(metrics, {"bw_avg_gbit_s": floor})
    tool = {"name": "perftest", "version": "6.22"}
    target = "mlx5_%d" % rail
    if mesh:        # a full mesh runs one message size: the client record of each pair, no series
        return [results.make("rdma.ib_write_bw", status, reason=reason, host=client, peer=server, target=target,
                             metrics=metrics, expect=expect, facts={"side": "client"}, tool=tool,
                             started=STARTED, duration_s=5.2)]
    return [results.make("rdma.ib_write_bw", status, reason=reason, host=client, peer=server, target=target,
                         metrics=metrics, expect=expect, series=series, facts={"side": "client"}, tool=tool,
                         started=STARTED, duration_s=5.2),
            results.make("rdma.ib_write_bw.server", "pass", host=server, peer=client, target=target,
                         metrics=dict(metrics), facts={"side": "server"}, tool=tool, started=STARTED, duration_s=5.4)]


def fleet_results(hosts, mesh=False):
    """The results.json of a synthetic run of ``hosts`` hosts (see the module docstring)."""
    names = ["gpu%04d" % i for i in range(hosts)]
    bad_node, bad_link = names[hosts // 4], (names[hosts // 2], names[hosts // 2 + 1])
    old_driver = names[hosts // 3]
    rows = perftest_rows()
    peak = max(r["bw_avg_gbit_s"] for r in rows)
    floor = {"min": round(peak * 0.9, 1), "source": "90 % of the capture's best bandwidth"}
    records = []
    if not mesh:
        template = host_template()
        for name in names:
            for rec in template:
                rec = copy.deepcopy(rec)
                rec["host"] = name
                if name == old_driver and "driver_version" in rec.get("facts", {}):
                    rec["facts"]["driver_version"] = "570.86.15"
                records.append(rec)
    pairs = []
    if mesh:
        pairs = [(a, b, 0) for i, a in enumerate(names) for b in names[i + 1:]]
    else:
        for i, name in enumerate(names):
            for rail in range(RAILS):
                for step in (1, 2):         # two rounds of a ring: each host against its two next neighbours
                    pairs.append((name, names[(i + step) % hosts], rail))
    for client, server, rail in pairs:
        factor = 1.0
        if bad_node in (client, server):
            factor = 0.45
        elif (client, server) == bad_link and rail == (0 if mesh else 3):
            factor = 0.38
        records.extend(_pair(client, server, rail, factor, rows, floor, mesh=mesh))
    run = {"run_id": "bench%06d%s" % (hosts, "mesh" if mesh else ""), "started": STARTED, "ended": "2026-11-22T15:54:46Z",
           "ansible_version": "2.19.14", "collection_version": "1.0.0", "playbooks": ["playbooks/acceptance.yml"],
           "hosts_targeted": names, "hosts_targeted_count": hosts, "inventory_host_count": hosts}
    return {"format_version": 1, "run": run, "summary": {}, "findings": [], "problems": [], "history": None,
            "records": records}


def real_source():
    """The judgement run (tests/unit/plugins/plugin_utils/fixtures/h200x2-judgement) with the most records per host."""
    best = None
    for name in sorted(os.listdir(JUDGEMENT)):
        if not name.endswith(".results.json"):
            continue
        path = os.path.join(JUDGEMENT, name)
        data = json.loads(_read(path))
        per_host = len(data["records"]) / max(1, len(set(r.get("host") for r in data["records"])))
        rank = (per_host, os.path.getsize(path))     # the most records per host, then the most bytes (series)
        if best is None or rank > best[0]:
            best = (rank, path)
    if best is None:
        raise SystemExit("no *.results.json in %s" % JUDGEMENT)
    return best[1]


def replicated_results(source, hosts, workdir):
    """A results.json of ``hosts`` hosts made of the records of the real run ``source``: each host of the source
    replicated (records, per-size series and all, with host and peer renamed), then analysed and written by the
    report (fleet.reanalyze + fleet.publish, json only), as a run of that many hosts would have written it.
    Returns its path."""
    from ansible_collections.aifabric.acceptance.plugins.plugin_utils import fleet
    real = fleet.load_results(source)
    measured = [r for r in real["records"] if not str(r.get("check", "")).startswith("analysis.")]
    src_hosts = sorted(set(r["host"] for r in measured if isinstance(r.get("host"), str)))
    if not src_hosts:
        raise SystemExit("%s has no host records" % source)
    names = ["gpu%04d" % i for i in range(hosts)]
    width = len(src_hosts)
    records = []
    for block in range(0, hosts, width):
        rename = dict((h, names[(block + j) % hosts]) for j, h in enumerate(src_hosts))
        for rec in measured:
            if rec.get("host") not in rename or rename[rec["host"]] not in names[block:block + width]:
                continue
            rec = copy.deepcopy(rec)
            rec["host"] = rename[rec["host"]]
            if rec.get("peer") in rename:
                rec["peer"] = rename[rec["peer"]]
            records.append(rec)
    run = dict(real["run"], run_id="bench%06dreal" % hosts, hosts_targeted=names, hosts_targeted_count=hosts,
               inventory_host_count=hosts)
    required = run.get("required_checks") or {}     # a source host's required checks are its replicas'
    run["required_checks"] = dict((names[i], required[src_hosts[i % width]]) for i in range(hosts)
                                  if src_hosts[i % width] in required)
    if "*" in required:
        run["required_checks"]["*"] = required["*"]
    report = fleet.reanalyze({"run": run, "records": records})
    out = os.path.join(workdir, "source-report")
    fleet.publish(report, dest=out, formats=["json"])
    return os.path.join(out, "results.json")


SHAPE_SOURCES = ("healthy", "loaded", "nop2p")
PAD_CHECK = "env.package"


def _noisy(rec, rng, spread=0.01):
    """A copy of a measured record with its float metrics moved by a gaussian of ``spread`` (a replica measures
    what the real host measured, give or take its noise): the figures differ between hosts, the rest is the same."""
    rec = copy.deepcopy(rec)
    metrics = rec.get("metrics")
    if isinstance(metrics, dict):
        for key, value in metrics.items():
            if type(value) is float:     # pylint: disable=unidiomatic-typecheck  # counts (ints) stay as measured
                metrics[key] = round(value * (1.0 + rng.gauss(0.0, spread)), 4)
    return rec


def _padding(template, host, index):
    """One small env.* record as a user's package probe makes it (the real run's env.package record, another
    package name): what pads a host to the shape's record count."""
    rec = copy.deepcopy(template)
    rec["host"] = host
    rec["target"] = "userpkg%03d" % index
    return rec


def shaped_results(hosts, per_host, pairs, workdir, seed=39):
    """A results.json of ``hosts`` hosts of about ``per_host`` records each (analysis records included), written by
    the report as a run of that many hosts would have written it. Made of the REAL 2x H200 judgement run
    (tests/unit/plugins/plugin_utils/fixtures/h200x2-judgement: every host the healthy run's 34 measured records
    with 1 % noise on the figures, one host the loaded run's (a slow GPU), one the nop2p run's (collectives below
    their floor); GEMM, probe, nccl-tests with per-size series), with ``pairs``: a ring of perftest ib_write_bw
    pairs (each host against its next two neighbours, client + server records, the client's per-size series a REAL
    --report_gbits capture; 8 rails, fewer when the shape is too small; one slow node, one slow link), padded with
    the real run's small env.package record under other package names to the shape. Returns (path, layout)."""
    import random
    from ansible_collections.aifabric.acceptance.plugins.module_utils import results
    from ansible_collections.aifabric.acceptance.plugins.plugin_utils import fleet
    rng = random.Random(seed)
    real = dict((name, fleet.load_results(os.path.join(JUDGEMENT, "%s.results.json" % name)))
                for name in SHAPE_SOURCES)
    measured = dict((name, [r for r in data["records"] if not str(r.get("check", "")).startswith("analysis.")
                            and (r.get("tool") or {}).get("name") != "fleet-analysis"])
                    for name, data in real.items())
    added = len(real["healthy"]["records"]) - len(measured["healthy"])      # what the analyses add to a host
    base = len(measured["healthy"])
    names = ["gpu%04d" % i for i in range(hosts)]
    special = {names[hosts // 3]: "loaded", names[hosts // 5]: "nop2p"}
    room = max(0, per_host - added - base)
    rails = min(RAILS, max(1, room // 4)) if pairs else 0       # 4 records a rail: 2 ring steps x client + server
    pad = max(0, room - 4 * rails)
    template = next(r for r in measured["healthy"] if r["check"] == PAD_CHECK)
    records = []
    for name in names:
        for rec in measured[special.get(name, "healthy")]:
            rec = _noisy(rec, rng)
            rec["host"] = name
            records.append(rec)
        records.extend(_padding(template, name, i) for i in range(pad))
    if rails:
        rows = perftest_rows()
        peak = max(r["bw_avg_gbit_s"] for r in rows)
        floor = {"min": round(peak * 0.9, 1), "source": "90 % of the capture's best bandwidth"}
        bad_node, bad_link = names[hosts // 4], (names[hosts // 2], names[(hosts // 2 + 1) % hosts])
        for i, client in enumerate(names):
            for rail in range(rails):
                for step in (1, 2):
                    server = names[(i + step) % hosts]
                    factor = 1.0 + rng.gauss(0.0, 0.005)
                    if bad_node in (client, server):
                        factor = 0.45
                    elif (client, server) == bad_link and rail == min(3, rails - 1):
                        factor = 0.38
                    records.extend(results.rests_on(_pair(client, server, rail, factor, rows, floor)))
    run = dict(real["healthy"]["run"], run_id="bench%06dshape%03d%s" % (hosts, per_host, "p" if pairs else ""),
               hosts_targeted=names, hosts_targeted_count=hosts, inventory_host_count=hosts,
               required_checks=dict((n, real["healthy"]["run"]["required_checks"]["localhost"]) for n in names))
    report = fleet.reanalyze({"run": run, "records": records})
    out = os.path.join(workdir, "source-%d-%d%s" % (hosts, per_host, "p" if pairs else ""))
    fleet.publish(report, dest=out, formats=["json"])
    layout = {"base": base, "rails": rails, "pair_records": 4 * rails, "padding": pad, "analysis_added": added}
    return os.path.join(out, "results.json"), layout


def _rss_mib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def run_playbook(path, outdir, collections_path):
    """``ansible-playbook playbooks/report.yml`` as a user runs it, from the checkout: (result dict of the child)."""
    playbook_bin = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    if not os.path.exists(playbook_bin):
        playbook_bin = shutil.which("ansible-playbook")
    if not playbook_bin:
        raise SystemExit("ansible-playbook not found next to %s nor on PATH" % sys.executable)
    env = dict(os.environ)
    if not collections_path:    # this checkout, never another copy of the collection installed elsewhere
        collections_path = os.path.join(os.path.dirname(os.path.abspath(outdir)), "collections")
        link = os.path.join(collections_path, "ansible_collections", "aifabric", "acceptance")
        if not os.path.lexists(link):
            os.makedirs(os.path.dirname(link), exist_ok=True)
            os.symlink(ROOT, link)
    env["ANSIBLE_COLLECTIONS_PATH"] = collections_path
    started = time.perf_counter()
    proc = subprocess.run([playbook_bin, PLAYBOOK, "-e", "report_input=%s" % path, "-e", "report_dir=%s" % outdir],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=3600, check=False)
    total = time.perf_counter() - started
    if proc.returncode:
        print(proc.stdout[-4000:], proc.stderr[-4000:], file=sys.stderr)
        raise SystemExit("ansible-playbook failed (exit %d)" % proc.returncode)
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    sizes = dict((name, os.path.getsize(os.path.join(outdir, name))) for name in sorted(os.listdir(outdir))
                 if os.path.isfile(os.path.join(outdir, name)))
    return {"mode": "playbook", "total_s": round(total, 2), "cpu_s": round(usage.ru_utime + usage.ru_stime, 2),
            "peak_rss_mib": round(usage.ru_maxrss / 1024.0, 1),
            "sizes": {"html": sizes.get("report.html", 0), "json": sizes.get("results.json", 0),
                      "junit": sizes.get("junit.xml", 0), "ctrf": sizes.get("ctrf.json", 0)}}


def child(mode, path, outdir, collections_path=None):
    if mode == "playbook":
        print(json.dumps(run_playbook(path, outdir, collections_path)))
        return
    from ansible_collections.aifabric.acceptance.plugins.plugin_utils import fleet
    started = time.perf_counter()
    usage = resource.getrusage(resource.RUSAGE_SELF)
    cpu0 = usage.ru_utime + usage.ru_stime
    out = {"mode": mode}
    if mode == "baseline":
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
        with open(os.path.join(outdir, "copy.json"), "w", encoding="utf-8") as handle:
            json.dump(data, handle)
    elif mode == "reanalyze":       # what the report action does (plugins/action/report.py), in this process
        with getattr(fleet, "no_cyclic_gc", contextlib.nullcontext)():     # (a checkout before it: measured as is)
            data, plain_json = fleet.read_results(path)
            report = fleet.reanalyze(data, {"drift_pins": {}}, plain_json=plain_json)
            report["compare_margin_pct"] = 5.0     # the input stays referenced while the files are written, as in
            t1 = time.perf_counter()                # the action (freeing it first cost 2 s more here, measured)
            res = fleet.publish(report, dest=outdir)
        out["analyse_s"] = round(t1 - started, 2)
        out["sizes"] = dict((f, os.path.getsize(p)) for f, p in res["files"].items())
        out["verdict"] = report["summary"]["verdict"]
    elif mode == "callback":
        from ansible_collections.aifabric.acceptance.plugins.plugin_utils import progress
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
        by_task = {}        # one task per check family (probe, GEMM, nccl, rdma ...), one result per host
        for rec in data["records"]:
            by_task.setdefault(rec["check"].split(".")[0], {}).setdefault(rec["host"], []).append(rec)
        hosts = data["run"]["hosts_targeted"]
        del data
        started = time.perf_counter()     # the feeding is what the callback does while the play runs
        usage = resource.getrusage(resource.RUSAGE_SELF)
        cpu0 = usage.ru_utime + usage.ru_stime
        col = fleet.Collector()
        tally = progress.Tally()
        col.observer = tally.add
        stream = os.path.join(outdir, "records.jsonl")
        col.open_stream(stream, run={"run_id": "benchcb", "started": STARTED})
        col.target(hosts)
        tally.play(hosts)
        lines = []
        for task, per_host in by_task.items():
            tally.start(task)
            for host in hosts:
                col.task_ok(host, task, "bench " + task, {"results": per_host.pop(host, [])}, started=STARTED)
                lines.extend(tally.take())
        lines.extend(tally.flush())
        col.close_stream()
        out["progress_lines"] = lines
        fed = time.perf_counter()
        collected = fleet.Collector.load(stream)
        col.release_records()       # as the callback does once the stream is read back
        run = fleet.run_metadata("benchcb", STARTED, STARTED, collected.hosts_targeted)
        report = fleet.build_report(collected.records(), run, dict(collected.config))
        del collected
        t1 = time.perf_counter()
        res = fleet.publish(report, reports_root=outdir)
        out["feed_s"] = round(fed - started, 2)
        out["analyse_s"] = round(t1 - fed, 2)
        out["sizes"] = dict((f, os.path.getsize(p)) for f, p in res["files"].items())
        out["verdict"] = report["summary"]["verdict"]
    out["total_s"] = round(time.perf_counter() - started, 2)
    usage = resource.getrusage(resource.RUSAGE_SELF)
    out["cpu_s"] = round(usage.ru_utime + usage.ru_stime - cpu0, 2)
    out["peak_rss_mib"] = round(_rss_mib(), 1)
    print(json.dumps(out))


def _median(values):
    values = sorted(values)
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2.0


def medians(rows):
    """One line per mode: the median over the rounds of its ratio to the baseline (wall and CPU) and its peak RSS;
    ``reanalyze`` is the in-process ratio, ``playbook`` the user's command."""
    label = {"reanalyze": "in-process (fleet.reanalyze + publish)", "playbook": "user's command (ansible-playbook)",
             "callback": "callback path"}
    lines = ["load average at the end: %s" % " ".join("%.2f" % v for v in os.getloadavg())]
    for mode in ("reanalyze", "playbook", "callback"):
        mine = [r for r in rows if r["mode"] == mode and "x_baseline" in r]
        if mine:
            lines.append("%s: median %.2f x the JSON load+dump (CPU %.2f x) over %d round(s), %.2f s vs %.2f s; "
                         "peak RSS %.0f MiB" % (
                             label[mode], _median([r["x_baseline"] for r in mine]),
                             _median([r["x_baseline_cpu"] for r in mine]), len(mine),
                             _median([r["total_s"] for r in mine]),
                             _median([r["total_s"] / r["x_baseline"] for r in mine]),
                             max(r["peak_rss_mib"] for r in mine)))
    return lines


def measure(path, modes, repeat, work, collections_path, extra):
    """Each of ``modes`` on ``path`` in a fresh child process, ``repeat`` rounds interleaved: the rows, each with its
    ratio to the baseline of its round (wall and CPU time)."""
    rows = []
    for round_no in range(repeat):
        for mode in modes:
            outdir = os.path.join(work, "%s-%d" % (mode, round_no))
            os.makedirs(outdir, exist_ok=True)
            argv = [sys.executable, __file__, "--child", mode, path, outdir]
            if collections_path:
                argv += ["--collections-path", collections_path]
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=3600, check=False)
            if proc.returncode:
                print(proc.stderr[-4000:], file=sys.stderr)
                raise SystemExit("mode %s failed (exit %d)" % (mode, proc.returncode))
            row = json.loads(proc.stdout.strip().splitlines()[-1])
            row.update(extra, input_bytes=os.path.getsize(path), round=round_no)
            rows.append(row)
            print(json.dumps(row))
            shutil.rmtree(outdir, ignore_errors=True)     # the next mode's disk writes start from the same state
    for row in rows:
        base = next((r for r in rows if r["mode"] == "baseline" and r["round"] == row["round"]), None)
        if base and row["mode"] != "baseline":
            row["x_baseline"] = round(row["total_s"] / base["total_s"], 2)
            row["x_baseline_cpu"] = round(row["cpu_s"] / base["cpu_s"], 2)
    return rows


def shapes_table(args):
    """--shapes: for each shape (records per host) and pairs option, the shaped fleet of --hosts hosts measured with
    the user's command against the JSON round trip of the same file; one markdown table row each (medians over
    --repeat rounds)."""
    work = args.keep or tempfile.mkdtemp(prefix="report-shapes-")
    os.makedirs(work, exist_ok=True)
    options = {"with": [True], "without": [False], "both": [False, True]}[args.pairs]
    lines = ["| shape | records | input MB | JSON s | report s | ratio | CPU ratio | peak RSS MiB | HTML MB |",
             "|---|---|---|---|---|---|---|---|---|"]
    allrows = []
    for per_host in args.shapes:
        for pairs in options:
            path, layout = shaped_results(args.hosts, per_host, pairs, work)
            with open(path, encoding="utf-8") as handle:
                records = len(json.load(handle)["records"])
            label = "%d/host %s pairs" % (per_host, "with" if pairs else "no")
            print("input %s: %d hosts, %d records, %.1f MB, %s" % (label, args.hosts, records,
                                                                   os.path.getsize(path) / 1e6, layout))
            rows = measure(path, args.modes or ["baseline", "playbook"], args.repeat, work, args.collections_path,
                           {"hosts": args.hosts, "records": records, "shape": per_host, "pairs": pairs,
                            "layout": layout})
            allrows.extend(rows)
            mine = [r for r in rows if r["mode"] == "playbook"]
            base = [r for r in rows if r["mode"] == "baseline"]
            lines.append("| %s | %d | %.0f | %.2f | %.2f | %.2fx | %.2fx | %.0f | %.2f |" % (
                label, records, os.path.getsize(path) / 1e6, _median([r["total_s"] for r in base]),
                _median([r["total_s"] for r in mine]), _median([r["x_baseline"] for r in mine]),
                _median([r["x_baseline_cpu"] for r in mine]), max(r["peak_rss_mib"] for r in mine),
                max(r["sizes"]["html"] for r in mine) / 1e6))
            print(lines[-1])
            if not args.keep:
                shutil.rmtree(os.path.dirname(path), ignore_errors=True)
    lines.append("load average at the end: %s" % " ".join("%.2f" % v for v in os.getloadavg()))
    print("\n".join(lines))
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    with open(os.path.join(HERE, "results", "report_scale_shapes.json"), "w", encoding="utf-8") as handle:
        json.dump(allrows, handle, indent=2)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--hosts", type=int, default=1000)
    parser.add_argument("--mesh", action="store_true", help="a full mesh of one rail instead of the ring + host records")
    parser.add_argument("--modes", nargs="+", choices=["baseline", "reanalyze", "playbook", "callback"],
                        help="default: baseline reanalyze playbook with --source or --input, else baseline reanalyze "
                        "callback")
    parser.add_argument("--source", help="replicate this results.json (a real run's) to --hosts hosts instead of the "
                        "synthetic fleet; 'real': the h200x2-judgement run with the most records per host")
    parser.add_argument("--input", help="measure this results.json as it is (e.g. one --source made and --keep kept)")
    parser.add_argument("--collections-path", default=os.environ.get("ANSIBLE_COLLECTIONS_PATH"),
                        help="ANSIBLE_COLLECTIONS_PATH of the playbook mode (must find this collection; default: a "
                        "link to this checkout made in the work directory)")
    parser.add_argument("--keep", help="write the input results.json here and keep the report directories")
    parser.add_argument("--repeat", type=int, default=1,
                        help="run the modes this many times, interleaved (a shared machine's load moves)")
    parser.add_argument("--shapes", nargs="+", type=int, metavar="RECORDS",
                        help="records per host of the shaped fleets (e.g. 44 100 300; see shaped_results): each is "
                        "measured with the playbook mode against the baseline, and one table row printed per shape")
    parser.add_argument("--pairs", choices=["with", "without", "both"], default="both",
                        help="with --shapes: the shapes with the ring of perftest pair records, without, or both")
    parser.add_argument("--child", nargs=3, metavar=("MODE", "INPUT", "OUTDIR"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(*args.child, collections_path=args.collections_path)
        return
    if args.shapes:
        shapes_table(args)
        return
    if not args.modes:
        args.modes = ["baseline", "reanalyze"] + (["playbook"] if args.source or args.input else ["callback"])
    work = args.keep or tempfile.mkdtemp(prefix="report-scale-")
    os.makedirs(work, exist_ok=True)
    if args.input:
        path = os.path.abspath(args.input)
        with open(path, encoding="utf-8") as handle:
            records = len(json.load(handle)["records"])
    elif args.source:
        source = real_source() if args.source == "real" else args.source
        path = replicated_results(source, args.hosts, work)
        with open(path, encoding="utf-8") as handle:
            records = len(json.load(handle)["records"])
        print("input: %s replicated to %d hosts: %d records, %.1f MB" % (
            os.path.relpath(source, ROOT), args.hosts, records, os.path.getsize(path) / 1e6))
    else:
        path = os.path.join(work, "input-results.json")
        data = fleet_results(args.hosts, mesh=args.mesh)
        records = len(data["records"])
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(data, handle)
        del data
    rows = []
    for round_no in range(args.repeat):
        for mode in args.modes:
            outdir = os.path.join(work, "%s-%d" % (mode, round_no))
            os.makedirs(outdir, exist_ok=True)
            argv = [sys.executable, __file__, "--child", mode, path, outdir]
            if args.collections_path:
                argv += ["--collections-path", args.collections_path]
            proc = subprocess.run(argv, capture_output=True, text=True, timeout=3600, check=False)
            if proc.returncode:
                print(proc.stderr[-4000:], file=sys.stderr)
                raise SystemExit("mode %s failed (exit %d)" % (mode, proc.returncode))
            row = json.loads(proc.stdout.strip().splitlines()[-1])
            row.update(hosts=args.hosts, records=records, mesh=args.mesh, input_bytes=os.path.getsize(path),
                       round=round_no)
            rows.append(row)
            print(json.dumps(row))
            if not args.keep:
                shutil.rmtree(outdir, ignore_errors=True)     # the next mode's disk writes start from the same state
    for row in rows:
        base = next((r for r in rows if r["mode"] == "baseline" and r["round"] == row["round"]), None)
        if base and row["mode"] != "baseline":
            row["x_baseline"] = round(row["total_s"] / base["total_s"], 2)
            row["x_baseline_cpu"] = round(row["cpu_s"] / base["cpu_s"], 2)
            print("%s (round %d): %.2f s = %.2f x baseline (%.2f s); CPU %.2f s = %.2f x (%.2f s); peak RSS %.0f MiB, "
                  "html %.1f MB, json %.1f MB" % (
                      row["mode"], row["round"], row["total_s"], row["x_baseline"], base["total_s"], row["cpu_s"],
                      row["x_baseline_cpu"], base["cpu_s"], row["peak_rss_mib"],
                      row["sizes"].get("html", 0) / 1e6, row["sizes"].get("json", 0) / 1e6))
    for line in medians(rows):
        print(line)
    os.makedirs(os.path.join(HERE, "results"), exist_ok=True)
    name = "report_scale%s.json" % ("_mesh" if args.mesh else "_real" if args.source else "")
    with open(os.path.join(HERE, "results", name), "w", encoding="utf-8") as handle:
        json.dump(rows, handle, indent=2)
    if not args.keep:
        shutil.rmtree(work, ignore_errors=True)     # (never --input's file: it is not under work)


if __name__ == "__main__":
    main()
