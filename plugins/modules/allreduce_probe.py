#!/usr/bin/python
# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: allreduce_probe
short_description: All-reduce bus bandwidth through torch.distributed (NCCL), for hosts without nccl-tests
version_added: 1.0.0
author:
  - aifabric.acceptance contributors (@aifabric)
description:
  - Runs an all-reduce bandwidth sweep through C(torch.distributed) with the NCCL backend, one process per GPU,
    with the host's own Python (the one that has PyTorch). Same message sizes, timing and bus bandwidth formula as
    nccl-tests' C(all_reduce_perf) (algbw = bytes / time, busbw = algbw x 2(n-1)/n, GB/s = 1e9 bytes/s).
  - C(torch.distributed.all_reduce) works in place (NCCL send buffer = receive buffer), so its figures compare with
    nccl-tests' in-place columns; the out-of-place cells of the series stay empty.
  - Launches its worker program (shipped in the collection as C(module_utils/torch_worker.py), written to a directory
    on the target) either with its own launcher (C(torch.multiprocessing), one host) or with Open MPI's C(mpirun),
    one rank per GPU over O(hosts) (the multi-node path; the worker must then exist at the same path on every host,
    see O(stage_only)).
  - Returns one result record C(nccl.torch_all_reduce) with the same metrics and series as the
    M(aifabric.acceptance.nccl_test) C(nccl.all_reduce) record, judged by the same hardware profiles.
  - A run on one host whose record fails on its figures (not on wrong data) runs once more, within what is left of
    O(timeout_s), and is judged on both runs - C(fail) only when both fail, C(warn) "inconclusive" when they disagree;
    the record keeps both figures (metrics C(run1_busbw_max_gbyte_s), C(run2_busbw_max_gbyte_s)) and says in
    C(params.runs) how many runs its status rests on. A run over several hosts is not retested (C(params.runs) 1).
extends_documentation_fragment: [aifabric.acceptance._attributes, aifabric.acceptance._attributes.results,
                                 aifabric.acceptance._attributes.benchmark, aifabric.acceptance._profiles, aifabric.acceptance._torch,
                                 aifabric.acceptance._collective_launch.mpirun_extra_args]
attributes:
  check_mode:
    details: Returns the command that would run and empty results; starts no process on the GPUs.
options:
  launcher:
    description:
      - V(spawn) starts one process per GPU on this host through C(torch.multiprocessing).
      - V(mpirun) starts the ranks through Open MPI's C(mpirun) over O(hosts) (also valid for one host).
    type: str
    choices: [spawn, mpirun]
    default: spawn
  ranks_per_node:
    description:
      - Processes (GPUs) per host. V(0) means every GPU that PyTorch sees on this host.
      - Must be 0 or more.
    type: int
    default: 0
  hosts:
    description: Hosts for C(mpirun), rank 0's first (for example C(groups['gpu_nodes'])). Default is this host alone.
    type: list
    elements: str
    default: []
  master_addr:
    description: Rendezvous address of rank 0 for the C(mpirun) launcher. Default is the first of O(hosts).
    type: str
  master_port:
    description:
      - Rendezvous TCP port. V(0) picks a free port on this host.
      - Must be between 0 and 65535.
    type: int
    default: 0
  min_bytes:
    description: Smallest message (nccl-tests C(-b) syntax, for example V(1M)).
    type: str
    default: 1M
  max_bytes:
    description: Largest message (nccl-tests C(-e) syntax, for example V(8G)).
    type: str
    default: 8G
  step_factor:
    description:
      - Multiplication factor between sizes (nccl-tests C(-f)).
      - Must be 2 or more.
    type: int
    default: 2
  iterations:
    description:
      - Timed iterations per size (nccl-tests C(-n)).
      - Must be 1 or more.
    type: int
    default: 20
  warmup_iterations:
    description:
      - Untimed iterations per size before timing (nccl-tests C(-w)).
      - Must be 0 or more.
    type: int
    default: 5
  datatype:
    description: Element type.
    type: str
    choices: [float, half, bfloat16, double]
    default: float
  verify_data:
    description: Verify the reduced values once per size (untimed), like nccl-tests C(-c 1); wrong elements fail the check.
    type: bool
    default: true
  env:
    description:
      - Environment for the ranks (for example C(NCCL_NVLS_ENABLE), C(NCCL_ALGO), C(NCCL_SOCKET_IFNAME),
        C(NCCL_IB_HCA)); passed with C(-x) through C(mpirun).
      - A forced C(NCCL_ALGO) is recorded in the record's facts and shape.
    type: dict
    default: {}
  mpirun:
    description: The C(mpirun) program (name on PATH or absolute path).
    type: str
    default: mpirun
  mpirun_mca:
    description: MCA parameters passed as C(--mca NAME VALUE).
    type: dict
    default: {}
  tcp_if_include:
    description: Network (interface or CIDR) for Open MPI's TCP traffic (C(btl_tcp_if_include), C(oob_tcp_if_include)).
    type: str
  worker_dir:
    description:
      - Directory on the target where the worker program is written; the worker runs from it (as root on many nodes).
      - Created C(0700) when absent. An existing one is used only when it is owned by the module's user, not writable
        by group or others, and no link on its way could be re-pointed by another user; otherwise the task fails and
        says which rule it breaks.
      - Default with O(launcher=mpirun) or O(stage_only=true) (every host needs the same path) is
        C(/run/aifabric-acceptance/worker) as root (C(/run) is writable by root alone), else
        C($XDG_RUNTIME_DIR/aifabric-acceptance/worker) or C(~/.cache/aifabric-acceptance/worker); with
        O(launcher=spawn) the module's temporary directory.
    type: path
  stage_only:
    description: Only write the worker into O(worker_dir) and return (prepares every host of a multi-node C(mpirun) run).
    type: bool
    default: false
  timeout_s:
    description:
      - Seconds before the whole run is stopped (a retest of a failing one-host run runs within what the first run
        left of them, and only when at least the first run's time is left). With O(launcher=mpirun), C(mpirun) gets C(SIGTERM) first (it tears
        down its daemons and ranks on every host), C(SIGKILL) 10 seconds later; then every process left on this
        host that carries the run id is stopped. The same cleanup runs when the module itself is interrupted.
      - Must be 1 or more.
    type: int
    default: 900
  run_id:
    description:
      - Identifier of this run, exported as C(AIFABRIC_RUN_TAG) to the launcher and (with C(-x)) to every rank on
        every host, so that M(aifabric.acceptance.cleanup) run on every host can stop whatever the run left behind.
        Default an unguessable new identifier, returned as C(run_id).
      - 1-128 letters, digits, V(_), V(.), V(:) or V(-), starting with a letter or digit.
    type: str
  expect:
    description:
      - "User thresholds per metric (C(min), C(max), C(warn_below_pct)), or per check (C({nccl.torch_all_reduce: {...}}));
        they override the profile's."
    type: dict
    default: {}
seealso:
  - module: aifabric.acceptance.nccl_test
"""

EXAMPLES = r"""
- name: All-reduce probe over every GPU of this host
  aifabric.acceptance.allreduce_probe:
    python: /opt/torch/.venv/bin/python3
    env:
      NCCL_NVLS_ENABLE: "0"

- name: Same, one rank per GPU through mpirun (the multi-node launch path)
  aifabric.acceptance.allreduce_probe:
    launcher: mpirun
    ranks_per_node: 2
    hosts: [localhost]
    mpirun_extra_args: [--oversubscribe]

- name: Two nodes -- stage the worker everywhere, then launch from the first host
  block:
    - name: Stage the worker
      aifabric.acceptance.allreduce_probe:
        stage_only: true
        worker_dir: /run/aifabric-acceptance/worker
    - name: Run across the group
      aifabric.acceptance.allreduce_probe:
        launcher: mpirun
        worker_dir: /run/aifabric-acceptance/worker
        hosts: "{{ groups['gpu_nodes'] }}"
        ranks_per_node: 8
        tcp_if_include: 10.0.0.0/24
        env:
          NCCL_SOCKET_IFNAME: eth0
      run_once: true
"""

RETURN = r"""
results:
  description: One C(nccl.torch_all_reduce) result record (see C(docs/results.md)), or a C(skip)/C(error) record.
  returned: always
  type: list
  elements: dict
  sample:
    - check: nccl.torch_all_reduce
      status: pass
      metrics: {busbw_max_gbyte_s: 343.1, ranks: 2}
cmd:
  description: The argv that ran (or would run, in check mode).
  returned: always
  type: list
  elements: str
tool_rc:
  description:
    - Exit code of the run. Not named C(rc) on purpose, a non-zero C(rc) would fail the task, while a failed
      benchmark is reported as an C(error) record and the play goes on.
  returned: when a process ran
  type: int
retest_rc:
  description: Exit code of the retest of a failing one-host run; null when nothing was retested.
  returned: when a process ran
  type: int
stdout:
  description: The worker's table (trimmed tail).
  returned: when a process ran
  type: str
worker:
  description: Path of the staged worker program.
  returned: always
  type: str
run_id:
  description: The run id every process of the run carried (see O(run_id)).
  returned: when a process ran
  type: str
swept:
  description: Leftover processes of the run stopped on this host after the run (C(pid), C(argv), C(signal)).
  returned: when a process ran
  type: list
  elements: dict
"""

import getpass
import os
import random
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aifabric.acceptance.plugins.module_utils import argspec, expectations, gpu_worker, launch
from ansible_collections.aifabric.acceptance.plugins.module_utils import modmain, results, runner, statedir
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import (
    Context, _collective, _mpirun, replace, allreduce_probe as torch_allreduce)


def _probe_gpus(module, python, timeout_s):
    """(count, model, problem): nvidia-smi -L when present (fast), else ask PyTorch (imports torch, slower)."""
    smi = module.get_bin_path("nvidia-smi", required=False)
    if smi:
        run = runner.run(module, [smi, "-L"], 60)
        names = [ln.split(":", 1)[1].split("(UUID")[0].strip() for ln in run.stdout.splitlines()
                 if ln.startswith("GPU ") and ":" in ln]
        if run.rc == 0 and names:
            return len(names), names[0], None
    code = "import torch; print(torch.cuda.device_count(), '|', torch.cuda.get_device_name(0) if torch.cuda.is_available() else '')"
    run = runner.run(module, runner.python_argv(python, ["-c", code]), min(timeout_s, 120))
    if run.rc != 0:
        return None, None, (run.stderr or run.stdout).strip().splitlines()[-1:] or ["rc %d" % run.rc]
    text = run.stdout.strip().splitlines()[-1] if run.stdout.strip() else ""
    count, _sep, name = text.partition("|")
    try:
        return int(count.strip()), name.strip() or None, None
    except ValueError:
        return None, None, [text]


RANGES = {
    "ranks_per_node": argspec.NON_NEGATIVE, "master_port": (0, 65535), "step_factor": (2, None),
    "iterations": argspec.POSITIVE, "warmup_iterations": argspec.NON_NEGATIVE, "timeout_s": argspec.POSITIVE,
}


# the probe run's options (tools/allreduce_probe.py: the single source, the Kubernetes planner's too) and how this
# module launches its ranks and stages its worker
SPEC = dict(
    python=dict(type="str", default="python3"),
    launcher=dict(type="str", choices=["spawn", "mpirun"], default="spawn"),
    ranks_per_node=dict(type="int", default=0),
    hosts=dict(type="list", elements="str", default=[]),
    master_addr=dict(type="str"),
    master_port=dict(type="int", default=0),
    mpirun=dict(type="str", default="mpirun"),
    mpirun_mca=dict(type="dict", default={}),
    mpirun_extra_args=dict(type="list", elements="str", default=[]),
    tcp_if_include=dict(type="str"),
    worker_dir=dict(type="path"),
    stage_only=dict(type="bool", default=False),
    run_id=dict(type="str"),
    **torch_allreduce.OPTIONS,
)


def main():
    module = argspec.module(AnsibleModule, RANGES, argument_spec=SPEC, supports_check_mode=True)
    modmain.run(module, "allreduce_probe", lambda module: _run(module, module.params),
                user_errors=(_mpirun.OptionError, expectations.ExpectationError),
                interrupt_note=" (the run's processes on this host were stopped; run aifabric.acceptance.cleanup "
                               "with the run_id on the other hosts)")


def _run(module, p):
    env = dict((str(k), str(v)) for k, v in p["env"].items())
    tag = launch.check_tag(p["run_id"] or launch.new_tag())
    env[launch.TAG_ENV] = tag      # exported to every rank with -x (mpirun) and set for the launcher
    shared = p["stage_only"] or p["launcher"] == "mpirun"      # every host needs the same path
    directory = p["worker_dir"] or (statedir.default_root("worker") if shared else module.tmpdir)
    worker = os.path.join(directory, gpu_worker.WORKER_NAME)
    if p["stage_only"]:
        _stage_only(module, directory, worker)
    started = results.utc_now()
    worker_args = torch_allreduce.worker_args(p)
    json_out = os.path.join(module.tmpdir, "probe.json")
    if module.check_mode:
        module.exit_json(changed=False, worker=worker, cmd=runner.python_argv(p["python"], [worker] + worker_args), results=[])
    python_path, gpus, gpu_name = _python_and_gpus(module, p, worker, started)
    ranks_per_node = p["ranks_per_node"] or gpus
    hosts = p["hosts"] or ["localhost"]
    worker, _changed = gpu_worker.stage(directory)
    worker_args += ["--json-out", json_out]
    argv, nodes = _launch_argv(module, p, runner.python_argv(python_path, [worker] + worker_args), env, ranks_per_node, hosts)
    begun = time.monotonic()
    run, exc, swept = launch.run_tagged(module, argv, p["timeout_s"], env, tag, foreground=p["launcher"] == "mpirun")
    if exc is not None:
        reason = str(exc)
        if swept:
            reason += "; stopped %d leftover process(es) of the run on this host" % len(set(i["pid"] for i in swept))
        record = results.error(torch_allreduce.CHECK, reason, raw=exc.details.get("stdout_tail", "") + exc.details.get("stderr_tail", ""),
                               params=torch_allreduce.record_params(p, argv, env, p["launcher"], ranks_per_node, hosts),
                               started=started, tool={"name": torch_allreduce.TOOL})
        module.exit_json(changed=False, worker=worker, cmd=argv, tool_rc=exc.details.get("rc"), run_id=tag,
                         swept=swept, results=[record])
    ctx = Context(params=p, document=_read(json_out), rc=run.rc, gpu_name=gpu_name, gpus=gpus, nodes=nodes, argv=argv,
                  env=env, started=started, duration_s=run.elapsed_s, python=python_path, launcher=p["launcher"],
                  ranks_per_node=ranks_per_node, hosts=hosts)
    records = torch_allreduce.records(run.output, ctx)
    retest_rc = None
    if nodes == 1 and any(_collective.retest_worth(r) for r in records):
        records, retest_rc = _retested(module, p, records, ctx, (tag, time.monotonic() - begun), json_out)
    module.exit_json(changed=False, worker=worker, cmd=argv, tool_rc=run.rc, stdout=results.trim(run.stdout),
                     run_id=tag, swept=swept, results=records, retest_rc=retest_rc)


def _retested(module, p, first, ctx, launched, json_out):
    """(records, the retest's exit code): a one-host probe whose record failed, judged on a second run of the same
    argv (results.retested) within what is left of ``timeout_s`` (runner.retest_limit; ``launched``: the run tag and
    the seconds the first run and its cleanup took). A run over hosts is not retested: the group screen repeats
    those itself, with other partners."""
    tag, spent_s = launched
    limit_s, why_not = runner.retest_limit(p["timeout_s"], spent_s, ctx.duration_s or 0)
    started = results.utc_now()
    tool = {"name": torch_allreduce.TOOL}
    if limit_s is None:
        return [results.retested(r, results.error(torch_allreduce.CHECK, why_not, tool=tool), _collective.HEADLINE)
                for r in first], None
    if os.path.exists(json_out):
        os.unlink(json_out)       # the retest's own result, or none
    run, exc, _swept = launch.run_tagged(module, ctx.argv, limit_s, ctx.env, tag, foreground=p["launcher"] == "mpirun")
    if exc is not None:
        again = results.error(torch_allreduce.CHECK, str(exc), started=started, tool=tool)
    else:
        again = torch_allreduce.records(run.output, replace(ctx, document=_read(json_out), rc=run.rc, started=started,
                                                            duration_s=run.elapsed_s))[0]
    return ([results.retested(r, again, _collective.HEADLINE) for r in first],
            exc.details.get("rc") if exc is not None else run.rc)


def _stage_only(module, directory, worker):
    """O(stage_only): write the worker into its directory (not in check mode) and exit."""
    changed = False
    if not module.check_mode:
        worker, changed = gpu_worker.stage(directory)
    module.exit_json(changed=changed, worker=worker, cmd=[], results=[])


def _python_and_gpus(module, p, worker, started):
    """(Python path, GPU count, GPU model) of the run; exits with a skip record when there is no such Python on this
    host or PyTorch with CUDA is not usable by it."""
    python = p["python"]
    python_path = runner.find_tool(module, os.path.basename(python), path=python if os.path.isabs(python) else None,
                                   required=False, keep_name=True)
    if not python_path:
        module.exit_json(changed=False, worker=worker, cmd=[python], results=[results.skip(
            torch_allreduce.CHECK, "no Python %s on this host (set python: to the interpreter that has PyTorch)" % python,
            started=started)])
    gpus, gpu_name, problem = _probe_gpus(module, python_path, p["timeout_s"])
    if problem or not gpus:
        why = "PyTorch with CUDA is not usable by %s: %s" % (python_path, problem[0] if problem else "no CUDA device visible")
        module.exit_json(changed=False, worker=worker, cmd=[python_path], results=[results.skip(torch_allreduce.CHECK, why, started=started)])
    return python_path, gpus, gpu_name


def _launch_argv(module, p, worker_argv, env, ranks_per_node, hosts):
    """(argv, nodes): the worker (``worker_argv``: Python, worker, its arguments) started by its own launcher on this
    host (spawn), or by Open MPI's mpirun, one rank per GPU over ``hosts``."""
    if p["launcher"] == "spawn":
        if p["hosts"] and len(p["hosts"]) > 1:
            module.fail_json(msg="launcher spawn runs on one host; use launcher: mpirun for %d hosts" % len(p["hosts"]))
        argv = worker_argv + ["--launcher", "spawn", "--nprocs", str(ranks_per_node)]
        if p["master_port"]:
            argv += ["--master-port", str(p["master_port"])]
        return argv, 1
    mpirun = runner.find_tool(module, os.path.basename(p["mpirun"]),
                              path=p["mpirun"] if os.path.isabs(p["mpirun"]) else None,
                              hint="install Open MPI (Debian/Ubuntu: openmpi-bin)")
    master_addr = p["master_addr"] or (hosts[0] if p["hosts"] else "127.0.0.1")
    master_port = p["master_port"] or random.randint(20000, 40000)
    inner = worker_argv + ["--launcher", "mpi", "--master-addr", master_addr, "--master-port", str(master_port)]
    argv = _mpirun.ranks_argv(
        mpirun, inner, hosts, ranks_per_node, env=env, mca=p["mpirun_mca"],
        allow_run_as_root=_is_root(), tcp_if_include=p["tcp_if_include"],
        extra_args=p["mpirun_extra_args"])
    return argv, len(hosts)


def _read(path):
    """The text of the worker's JSON output, None when it wrote none."""
    if not os.path.isfile(path):
        return None
    with open(path) as handle:
        return handle.read()


def _is_root():
    try:
        return os.geteuid() == 0
    except AttributeError:
        return getpass.getuser() == "root"


if __name__ == "__main__":
    main()
