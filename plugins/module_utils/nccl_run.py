# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""nccl-tests' SSH-path run (private). Its argv and records come from its adapter, tools.nccl_test (``run_env``,
``nccl_argv``, ``launch_argv``, ``records``: what the Kubernetes planner uses too).

``run_collectives(module, params, tag)`` is the SSH path (runs on the host that launches): every process
of the run carries the run tag (launch.TAG_ENV, exported to every rank with ``-x``); after each run,
whatever its end (success, timeout, failure, interrupt), launch.terminate stops what is left on this host,
and the ``aifabric.acceptance.cleanup`` module does the same on the other hosts; ``timed_out_run(...)`` gives the
error record and the ``runs`` entry of a run its time limit ended (hccl_run's SSH path uses it too).
Runs on the targets: Python 3.8+, no Ansible imports (``module`` is duck-typed).
"""

from __future__ import annotations

import os
import re
import time

from ansible_collections.aifabric.acceptance.plugins.module_utils import launch, results, runner
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import _collective, _mpirun
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import ToolMissing, ToolTimeout
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import Context, replace
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import nccl_test as adapter

TOOL = adapter.TOOL
INSTALL_HINT = "install nccl-tests with the role aifabric.acceptance.nccl_tests or set tool_dir"


# --------------------------------------------------------------------------- the SSH path

def _gpu_count(module):
    smi = module.get_bin_path("nvidia-smi", required=False)
    if not smi:
        return None
    run = runner.run(module, [smi, "-L"], 60)
    if run.rc != 0:
        return None
    return len([ln for ln in run.stdout.splitlines() if ln.startswith("GPU ")]) or None


def _ranks_per_node(module, asked):
    """The ranks per host of a run over hosts: ``asked``, or with 0 one per GPU of this host (the launcher; every
    host of the run is taken to have as many), counted with nvidia-smi -L - a read-only query, run in check mode too
    (the argv shown is the one that would run). OptionError when they cannot be counted."""
    if asked:
        return asked
    gpus = _gpu_count(module)
    if not gpus:
        raise _mpirun.OptionError("ranks_per_node 0 means one rank per GPU of this host, and nvidia-smi -L found "
                                  "none here (or is missing): set ranks_per_node (>= 1) with hosts")
    return gpus


def _supports_json(module, binary, mode):
    if mode == "never":
        return False
    if mode == "always":
        return True
    try:
        run = runner.run(module, [binary, "-h"], 60)
    except ToolTimeout:
        return False
    return bool(re.search(r"(^|\s)\[?-J\b|--output_file", run.stdout + run.stderr))


def _read_json(path):
    if not path or not os.path.isfile(path):
        return None
    with open(path, "rb") as handle:
        return handle.read().decode("utf-8", "replace")


def collective_binary(module, p, name, check, started, tool, hint, records, cmds):
    """The path of one collective's binary (nccl-tests, hccl_test), or None when it is missing: then a
    ``skip``/``error`` record (``if_missing``) is added to ``records`` (in check mode, the would-be command
    to ``cmds``)."""
    try:
        return runner.find_tool(module, name, path=p["tool_dir"], hint=hint)
    except ToolMissing as exc:
        if module.check_mode:
            cmds.append([os.path.join(p["tool_dir"] or "", name)])
            return None
        maker = results.skip if p["if_missing"] == "skip" else results.error
        records.append(maker(check, str(exc), params={"tool_dir": p["tool_dir"]}, started=started,
                             tool={"name": tool}))
        return None


def timed_out_run(exc, swept, collective, check, argv, env, started, tool):
    """(error record, ``runs`` entry) of a collective's run that its time limit ended (launch.run_tagged's
    ToolTimeout ``exc``; also hccl_run): the reason says how many leftover processes of the run were stopped on
    this host (``swept``); the record and the entry keep the output's tail."""
    tail = (exc.details.get("stdout_tail") or "") + (exc.details.get("stderr_tail") or "")
    reason = str(exc)
    if swept:
        reason += "; stopped %d leftover process(es) of the run on this host" % len(set(item["pid"] for item in swept))
    record = results.error(check, reason, raw=tail, params={"argv": argv, "env": env}, started=started,
                           tool={"name": tool})
    return record, {"collective": collective, "rc": exc.details.get("rc"), "stdout": results.trim(tail), "swept": swept}


def run_collectives(module, p, tag=None):
    """Run every collective of p["collectives"] on this host (mpirun over p["hosts"] when given).

    ``tag``: the run tag every process carries (default p["run_id"], else a new one).

    Returns (records, cmds, runs). A missing binary is a ``skip`` or ``error`` record (p["if_missing"]).
    """
    tag = tag or p.get("run_id") or launch.new_tag()
    env = adapter.run_env(p)
    tagged_env = dict(env)
    tagged_env[launch.TAG_ENV] = launch.check_tag(tag)   # every rank carries it (-x), records do not
    multi = bool(p["hosts"])
    if multi:
        p = dict(p, ranks_per_node=_ranks_per_node(module, p["ranks_per_node"]))
    records, cmds, runs = [], [], []
    mpirun = None
    hostfile = None
    for collective in p["collectives"]:
        name = adapter.binary_name(collective)
        check = "nccl.%s" % collective
        started = results.utc_now()
        binary = collective_binary(module, p, name, check, started, TOOL, INSTALL_HINT, records, cmds)
        if binary is None:
            continue
        if multi and mpirun is None:
            mpirun = runner.find_tool(module, os.path.basename(p["mpirun"]),
                                      path=p["mpirun"] if os.path.isabs(p["mpirun"]) else None,
                                      hint="install Open MPI (Debian/Ubuntu: openmpi-bin)")
            hostfile = os.path.join(module.tmpdir, "hostfile")
            if not module.check_mode:
                with open(hostfile, "w") as handle:
                    handle.write(_mpirun.hostfile_text(p["hosts"], p["ranks_per_node"]))
        gpus = p["gpus_per_process"]
        if gpus in (None, 0):
            gpus = 1 if multi else (None if module.check_mode else _gpu_count(module))
        json_path = None
        if not module.check_mode and _supports_json(module, binary, p["json_output"]):
            json_path = os.path.join(module.tmpdir, "%s.json" % collective)
        argv = adapter.nccl_argv(binary, p, gpus_per_process=gpus, json_path=json_path)
        if multi:
            argv = adapter.launch_argv(argv, mpirun, p, tagged_env, hostfile=hostfile, allow_run_as_root=os.geteuid() == 0)
        cmds.append(argv)
        if module.check_mode:
            continue
        begun = time.monotonic()
        run, timed_out, swept = launch.run_tagged(module, argv, p["timeout_s"], tagged_env, tag, foreground=multi)
        if timed_out is not None:
            record, entry = timed_out_run(timed_out, swept, collective, check, argv, env, started, TOOL)
            records.append(record)
            runs.append(entry)
            continue
        runs.append({"collective": collective, "rc": run.rc, "stdout": results.trim(run.output), "swept": swept})
        ctx = Context(params=p, rc=run.rc, hosts=p["hosts"], collective=collective, document=_read_json(json_path),
                      started=started, duration_s=run.elapsed_s, argv=argv, env=env)
        found = adapter.records(run.output, ctx)
        if not multi and any(_collective.retest_worth(r) for r in found):
            found = _retested(module, p, found, ctx, (tagged_env, tag, time.monotonic() - begun), json_path, runs)
        records.extend(found)
    return records, cmds, runs


def _retested(module, p, first, ctx, launched, json_path, runs):
    """The records of a single-node run that failed, judged on a second run of the same argv (results.retested)
    within what is left of its ``timeout_s`` (runner.retest_limit; ``launched``: the run's environment and tag, and
    the seconds the first run and its cleanup took); its ``runs`` entry says ``retest``. A run over hosts is never
    retested here: the group screen repeats those itself, with other partners."""
    tagged_env, tag, spent_s = launched
    limit_s, why_not = runner.retest_limit(p["timeout_s"], spent_s, ctx.duration_s or 0)
    started = results.utc_now()
    if limit_s is None:
        again = [results.error(first[0]["check"], why_not, started=started, tool={"name": TOOL})]
        return [results.retested(record, again[0], _collective.HEADLINE) for record in first]
    if json_path and os.path.exists(json_path):
        os.unlink(json_path)       # the retest's own document, or none
    run, timed_out, swept = launch.run_tagged(module, ctx.argv, limit_s, tagged_env, tag)
    if timed_out is not None:
        again, entry = timed_out_run(timed_out, swept, ctx.collective, first[0]["check"], ctx.argv, ctx.env, started,
                                     TOOL)
        again = [again]
    else:
        entry = {"collective": ctx.collective, "rc": run.rc, "stdout": results.trim(run.output), "swept": swept}
        again = adapter.records(run.output, replace(ctx, rc=run.rc, document=_read_json(json_path), started=started,
                                                    duration_s=run.elapsed_s))
    runs.append(dict(entry, retest=True))
    return [results.retested(record, again[0], _collective.HEADLINE) for record in first]
