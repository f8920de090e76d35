# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every task of the shipped playbooks and roles that runs on a host has its own time limit (issue 18, item 11).

A host that goes silent (link down, power off) is noticed by SSH only through keep-alives, which an installed
collection, an AWX project or an inventory with its own ``ansible_ssh_common_args`` does not have: an ordinary task
then waits on it forever. So every task that talks to a host carries a ``timeout:``, and with the defaults that
limit is the worst case of its module (the tool's own limits, the kill-after and cleanup the module adds) plus
``aifabric_task_margin_s``: never shorter, or a slow but healthy host would be cut.

The playbooks are loaded by Ansible's own parser (blocks, ``always:``, imported playbooks, module names resolved
from this tree) in a subprocess with an empty ansible.cfg (no ``task_timeout`` to hide a missing limit). A task
runs on a host unless it is delegated to localhost, its play runs on localhost, or its action needs no connection
(set_fact, group_by, debug, assert, set_stats, run_summary, includes). The dynamically included task files
(playbooks/tasks, roles/perftest and roles/nccl_tests, the nccl role's screen rounds and their cleanup, included from
plays on hosts) are checked the same way.
"""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
import tempfile

import yaml

from ansible_collections.aifabric.acceptance.plugins.action import job_wait
from ansible_collections.aifabric.acceptance.plugins.module_utils import hccl_run, launch, runner
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import _mpirun
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import fabric_topology as topology_tool

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
TAIL = ("ansible_collections", "aifabric", "acceptance")
INCLUDED = ("roles/rdma/tasks/sweep.yml", "playbooks/tasks/run_summary.yml", "roles/perftest/tasks",
            "roles/nccl_tests/tasks", "roles/nccl/tasks/screen_round.yml", "roles/nccl/tasks/screen_cleanup.yml")

MARGIN = 60                                  # aifabric_task_margin_s
QUERY = 60                                   # nvidia-smi -L, a binary's -h: the limit the modules give a query
KILL = runner.KILL_AFTER_S                   # SIGKILL after a tool's limit
CLEANUP = 2 * launch.GRACE_S + 5             # run-tag cleanup: launchers, the rest, SIGKILL
PROBE_COMMAND = 60 + KILL                    # env_probe: one command at its limit (timeout, default 60)
# env_probe's commands, one after the other: per Python (its own, python3 on PATH) the package probe, ldconfig,
# nvidia-smi -q -x, --query-gpu, nvlink -s, topo -m; npu-smi info, 4 hccn_tool queries per NPU (16 at most)
NPU_COMMANDS = 1 + 4 * 16
ALL_COMMANDS = 2 + 1 + 4 + NPU_COMMANDS
ALLREDUCE = 900 + QUERY + KILL + min(900, 120) + KILL + KILL + CLEANUP      # gpu.yml / nccl.yml defaults


def module_default(module, option):
    """An option's default from the module's own documentation."""
    with open(os.path.join(REPO, "plugins", "modules", module + ".py")) as handle:
        text = handle.read()
    doc = text.split('DOCUMENTATION = r"""', 1)[1].split('"""', 1)[0]
    return yaml.safe_load(doc)["options"][option]["default"]


# fabric_topology: every command at most timeout_s, all of a host's together 2 x timeout_s (lldpctl, npu-smi info) +
# PER_PORT_S for each interface and NPU asked, at most MAX_ASKED; then the last command's kill-after
TOPOLOGY = (topology_tool.FIXED_COMMANDS * module_default("fabric_topology", "timeout_s")
            + topology_tool.PER_PORT_S * topology_tool.MAX_ASKED + KILL)
HCCL_COLLECTIVES = len(hccl_run.adapter.OPTIONS["collectives"]["default"])     # hccl_test's default collectives


def collective_default():
    return _mpirun.COLLECTIVE_SPEC["timeout_s"]["default"]


# the GPU stage's checks -> their worst case with every variable at its default, from the modules' own limits
GPU_LIMITS = {
    "probe": ALL_COMMANDS * PROBE_COMMAND + MARGIN,
    "gemm": module_default("gemm_bench", "timeout_s") + KILL + MARGIN,
    "allreduce_probe": ALLREDUCE + MARGIN,
    # 7 collectives, each: nvidia-smi -L, -h, the run, its kill-after, the cleanup
    "nccl": 7 * (2 * (QUERY + KILL) + collective_default() + KILL + CLEANUP) + MARGIN,
}
# each check's own task without gpu_async (tasks/check_<check>.yml)
GPU_TASKS = {
    "probe": "Probe OS, GPUs, RDMA and software",
    "gemm": "Measure GEMM throughput on every GPU",
    "allreduce_probe": "Measure all-reduce bus bandwidth over every GPU (torch.distributed, NCCL)",
    "nccl": "Run nccl-tests collectives on every GPU of the host",
}
GPU_START = "Start - Run the GPU stage's checks on every host, one after the other (one job a check)"
GPU_WAIT = "Run the GPU stage's checks (one line per check and host)"

GPU_POLL_BOUND = max(MARGIN, 30)     # the bound of each call of the GPU stage's wait for a job (job_wait)


def gpu_wait_timeout(limit):
    """The timeout of the GPU stage's wait for a job: wait_timeout_s (the job's limit + 30 s), then 2 bounded calls
    (the last poll, the removal of the job's file: the bound + 6 s each), + 30 s."""
    return limit + 30 + 2 * (GPU_POLL_BOUND + 6) + 30


# the probe role's steps -> their worst case with every variable at its default
PROBE_LIMITS = {
    "Probe OS, CPU, memory, GPUs, RDMA and software": ALL_COMMANDS * PROBE_COMMAND + MARGIN,
}

# (playbook, task name) -> its timeout with every variable at its default, from the modules' own limits
EXPECTED = {
    # the probe (probe_async, the default): as the GPU stage, each step's start and the wait for its job
    **dict((("acceptance_ssh.yml", "aifabric.acceptance.probe : Start - " + name), 60 + MARGIN) for name in PROBE_LIMITS),
    **dict((("acceptance_ssh.yml", "aifabric.acceptance.probe : " + name), gpu_wait_timeout(limit))
           for name, limit in PROBE_LIMITS.items()),
    # the topology step: one short pipelined task per host (a job's start and wait cost more than its run)
    ("acceptance_ssh.yml", "aifabric.acceptance.probe : Learn the fabric topology of this host (its LLDP neighbours, its declared ports)"):
        TOPOLOGY + MARGIN,
    # the GPU stage (gpu_async, the default): the start of every check's job (60 s + the margin) and the wait for each
    # job (a loop item a job: the wait, then its last poll and the job file's removal, each bounded by the margin, at
    # least 30 s, + 6 s; + 30 s); each job's own limit is GPU_LIMITS' (test_gpu_checks_run_as_bounded_jobs)
    ("gpu.yml", "aifabric.acceptance.gpu : " + GPU_START): 60 + MARGIN,
    **dict((("gpu.yml", "aifabric.acceptance.gpu : %s [%s]" % (GPU_WAIT, check)), gpu_wait_timeout(limit))
           for check, limit in GPU_LIMITS.items()),
    ("hccl.yml", "aifabric.acceptance.hccl : Probe the NPUs"): NPU_COMMANDS * PROBE_COMMAND + MARGIN,
    # set_env.sh, then the 4 default collectives, each: the run, its kill-after, the cleanup
    ("hccl.yml", "aifabric.acceptance.hccl : Run the collectives on one node"):
        hccl_run.SCRIPT_TIMEOUT_S + KILL + HCCL_COLLECTIVES * (collective_default() + KILL + CLEANUP) + MARGIN,
    ("hccl.yml", "aifabric.acceptance.hccl : Stop whatever of the single-node run is left on this host"): CLEANUP + MARGIN,
    ("hccl.yml", "aifabric.acceptance.hccl : Run HCCL Test across the hosts through mpirun"):
        hccl_run.SCRIPT_TIMEOUT_S + KILL + HCCL_COLLECTIVES * (collective_default() + KILL + CLEANUP) + MARGIN,
    ("hccl.yml", "aifabric.acceptance.hccl : Stop whatever of the run is left on every host"): CLEANUP + MARGIN,
    ("nccl.yml", "aifabric.acceptance.nccl : Stage the all-reduce probe's worker at the same path on every host"): MARGIN,
    # nvidia-smi -L once (ranks_per_node 0: one rank per GPU of the launcher), then 7 collectives across the hosts,
    # each: -h, the run, its kill-after, the cleanup
    ("nccl.yml", "aifabric.acceptance.nccl : Run nccl-tests across the hosts through mpirun"):
        QUERY + KILL + 7 * (QUERY + KILL + collective_default() + KILL + CLEANUP) + MARGIN,
    ("nccl.yml", "aifabric.acceptance.nccl : Run the all-reduce probe across the hosts through mpirun"): ALLREDUCE + MARGIN,
    ("nccl.yml", "aifabric.acceptance.nccl : Stop whatever of the run is left on every host (timeouts, failures, interrupts)"):
        CLEANUP + MARGIN,
    # rdma_hcas not given and no use_cuda: the rdma group only, which reads sysfs
    ("rdma.yml", "aifabric.acceptance.rdma : Probe the RDMA ports (where rdma_hcas is not given) and the GPU topology (use_cuda auto)"): MARGIN,
    ("rdma.yml", "aifabric.acceptance.rdma : Read the port rate of every device (the bandwidth floor of its peers' clients)"): 180,
    # no device found: nothing can be running
    ("rdma.yml", "aifabric.acceptance.rdma : Remove whatever the run left behind"): MARGIN,
}

LOADER = r'''
import json, sys
from ansible.plugins.loader import init_plugin_loader, action_loader
collections, repo, playbooks, included = sys.argv[1], sys.argv[2], json.loads(sys.argv[3]), json.loads(sys.argv[4])
extra_vars = json.loads(sys.argv[5])
init_plugin_loader([collections])
import os
from ansible.inventory.manager import InventoryManager
from ansible.parsing.dataloader import DataLoader
from ansible.playbook import Playbook
from ansible.playbook.block import Block
from ansible.playbook.helpers import load_list_of_blocks
from ansible.playbook.play import Play
from ansible.template import Templar, trust_as_template
from ansible.vars.manager import VariableManager
from ansible import constants as C

INCLUDES = C._ACTION_ALL_INCLUDE_IMPORT_TASKS + C._ACTION_ALL_PROPER_INCLUDE_IMPORT_ROLES

loader = DataLoader()
inventory = InventoryManager(loader=loader, sources="node1,")
manager = VariableManager(loader=loader, inventory=inventory)
manager._extra_vars = extra_vars      # as -e gives them
host = inventory.get_host("node1")


def tasks(blocks):
    for item in blocks:
        if isinstance(item, Block):
            for part in (item.block, item.rescue, item.always):
                yield from tasks(part)
        else:
            yield item


def on_host(play, task):
    local = play.hosts in ("localhost", ["localhost"]) or play.connection == "local"
    if local or task.delegate_to in ("localhost", "127.0.0.1") or task.action in C._ACTION_META + INCLUDES:
        return False
    plugin = action_loader.get(task.action, class_only=True) if action_loader.has_plugin(task.action) else None
    return plugin is None or getattr(plugin, "_requires_connection", True)


def resolved(templar, values):
    """The values that template with what is known before the run (a limit that depends on what an earlier task
    found on the host is left out: its presence is what counts then)."""
    out = {}
    for key, value in values.items():
        try:
            out[key] = templar.template(value)
        except Exception:  # pylint: disable=broad-except
            pass
    return out


def row(source, play, task, value, more=None, item=None):
    name = task.get_name() + (" [%s]" % item if item else "")
    return dict({"source": source, "play": play.get_name(), "task": name, "action": task.action,
                 "on_host": on_host(play, task), "timeout": value}, **(more or {}))


def bounds(templar, task):
    """A polled task's other limits (async, retries x delay), as they template before the run."""
    got = resolved(templar, {"async": task.async_val, "poll": task.poll, "retries": task.retries, "delay": task.delay})
    out = dict((key, got.get(key, "unresolved")) for key in ("async", "poll", "retries", "delay"))
    if task.action == "aifabric.acceptance.job_wait":       # its bounds are its arguments
        out["args"] = resolved(templar, task.args)
    if task.action == "aifabric.acceptance.job_chain":      # its jobs' limits are theirs
        out["jobs"] = resolved(templar, task.args).get("jobs", "unresolved")
    return out


def expanded(play, blocks):
    """The tasks, with the gpu role's includes loaded in place, in their role, as they would run: tasks/main.yml's
    include of chain.yml or checks.yml (its file name templated with the run's variables), and checks.yml's include
    of check_<check>.yml (every check's file)."""
    for task in tasks(blocks):
        yield task
        name = str(task.args.get("_raw_params") or task.args.get("file") or "") if task.action in INCLUDES else ""
        if task._role is None or "{{" not in name or task._role.get_name() != "aifabric.acceptance.gpu":
            continue
        folder = os.path.join(task._role._role_path, "tasks")
        if "{{ __gpu_check }}" in name:
            files = sorted(f for f in os.listdir(folder) if f.startswith("check_") and f.endswith(".yml"))
        else:
            files = [Templar(loader=loader, variables=manager.get_vars(play=play, host=host, task=task)).template(
                trust_as_template(name))]
        for one in files:
            data = loader.load_from_file(os.path.join(folder, one), trusted_as_template=True)
            yield from expanded(play, load_list_of_blocks(data, play=play, role=task._role, task_include=task,
                                                          variable_manager=manager, loader=loader))


out = []
for name in playbooks:
    facts = {}      # what set_fact tasks set on the host earlier in the run (limits computed once for several plays)
    for play in Playbook.load(os.path.join(repo, "playbooks", name), variable_manager=manager, loader=loader).get_plays():
        jobs = []       # what the last job_chain task starts: the loop over them that waits is a row per job
        for task in expanded(play, play.compile()):
            variables = dict(manager.get_vars(play=play, host=host, task=task), **facts)
            templar = Templar(loader=loader, variables=variables)
            if task.action in C._ACTION_SET_FACT:
                facts.update(resolved(templar, task.args))
            if task.loop_control and task.loop_control.loop_var == "__gpu_job":
                for job in jobs:
                    one = Templar(loader=loader, variables=dict(variables, __gpu_job=dict(job, ansible_job_id="j1.1")))
                    out.append(row(name, play, task, resolved(one, {"timeout": task.timeout}).get("timeout", "unresolved"),
                                   bounds(one, task), item=job["name"]))
                continue
            more = bounds(templar, task)
            if isinstance(more.get("jobs"), list):
                jobs = more["jobs"]
            out.append(row(name, play, task, resolved(templar, {"timeout": task.timeout}).get("timeout", "unresolved"),
                           more))
host_play = Play.load({"hosts": "node1", "gather_facts": False}, variable_manager=manager, loader=loader)
for path in included:
    data = loader.load_from_file(os.path.join(repo, path))
    for task in tasks(load_list_of_blocks(data, play=host_play, variable_manager=manager, loader=loader)):
        out.append(row(path, host_play, task, task.timeout))
print(json.dumps(out))
'''


def collections_path():
    """The directory above ansible_collections/ through which this tree is importable."""
    for entry in [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p] + list(sys.path):
        candidate = os.path.join(entry or ".", *TAIL)
        if os.path.isdir(candidate) and os.path.realpath(candidate) == os.path.realpath(REPO):
            return entry
    parts = REPO.split(os.sep)
    assert tuple(parts[-3:]) == TAIL, "cannot tell where aifabric.acceptance is importable from"
    return os.sep.join(parts[:-3])


def load_tasks(extra_vars=None, playbooks=None, with_included=True):
    """The rows of every task of ``playbooks`` (default: every playbook) and, ``with_included``, of INCLUDED."""
    if playbooks is None:
        playbooks = sorted(name for name in os.listdir(os.path.join(REPO, "playbooks")) if name.endswith(".yml"))
    included = []
    for path in INCLUDED if with_included else ():
        full = os.path.join(REPO, path)
        included += [path] if os.path.isfile(full) else sorted(
            os.path.join(path, name) for name in os.listdir(full) if name.endswith(".yml"))
    with tempfile.TemporaryDirectory() as tmp:
        config = os.path.join(tmp, "ansible.cfg")
        open(config, "w").close()
        env = dict(os.environ, ANSIBLE_CONFIG=config, ANSIBLE_LOCAL_TEMP=tmp, ANSIBLE_HOME=tmp)
        done = subprocess.run([sys.executable, "-c", LOADER, collections_path(), REPO, json.dumps(playbooks),
                               json.dumps(included), json.dumps(extra_vars or {})], env=env, capture_output=True,
                              text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr[-4000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


@functools.lru_cache(maxsize=None)
def all_rows():
    """Every playbook's and included file's rows with the defaults: loaded once, when a test asks (not when the file
    is collected: each pytest-xdist worker collects every file)."""
    return load_tasks()


def test_every_task_on_a_host_has_its_own_timeout():
    missing = ["%s: %s (%s)" % (r["source"], r["task"], r["action"]) for r in all_rows()
               if r["on_host"] and not r["timeout"]]
    assert not missing, "tasks that run on a host without a timeout:\n" + "\n".join(missing)
    assert len([r for r in all_rows() if r["on_host"]]) >= 40, all_rows()       # the walk saw the playbooks' and roles' tasks


def test_controller_tasks_are_told_apart():
    """The rule is not vacuous: the summary, set_fact and k8s tasks (delegated to localhost) are controller work."""
    local = set((r["source"], r["action"]) for r in all_rows() if not r["on_host"])
    assert ("gpu.yml", "aifabric.acceptance.run_summary") in local
    assert ("acceptance_ssh.yml", "ansible.builtin.set_fact") in local
    assert ("k8s_acceptance.yml", "aifabric.acceptance.k8s_workload") in local
    assert ("gpu.yml", "aifabric.acceptance.gemm_bench") not in local


def test_timeouts_with_the_defaults_cover_the_modules_own_limits():
    found = {}
    for r in all_rows():
        key = (r["source"], r["task"])
        if key in EXPECTED:
            found.setdefault(key, set()).add(r["timeout"])
    wrong = dict((key, (sorted(found.get(key, [])), want)) for key, want in EXPECTED.items()
                 if found.get(key) != {want})
    assert not wrong, "task -> (timeouts found, expected):\n" + "\n".join("%s: %s" % item for item in wrong.items())


def _gpu_rows(rows):
    return dict((r["task"].split(" : ", 1)[1], r) for r in rows
                if r["source"] == "gpu.yml" and r["task"].startswith("aifabric.acceptance.gpu : "))


def test_gpu_checks_run_as_bounded_jobs():
    """gpu_async (the default): one task starts every check's job, each may run for its check's worst case (its
    limit, past its tools' limits by the margin: the module's own kill and cleanup come first), and the wait for each
    job (job_wait, a loop item a job) goes on for that long + 30 s, each poll bounded by the margin (at least 30 s);
    the wait's own timeout lies past the action's worst case (its deadline and message come first); the start has
    its own, short, timeout (the rows of EXPECTED)."""
    rows = _gpu_rows(all_rows())
    start = rows[GPU_START]
    assert start["action"] == "aifabric.acceptance.job_chain", start
    assert [(job["name"], job["timeout_s"]) for job in start["jobs"]] == list(GPU_LIMITS.items()), start["jobs"]
    for check, limit in GPU_LIMITS.items():
        wait = rows["%s [%s]" % (GPU_WAIT, check)]
        assert wait["action"] == "aifabric.acceptance.job_wait", (check, wait)
        args = wait["args"]
        assert (args["wait_timeout_s"], args["poll_s"], args["poll_timeout_s"], args["unreachable_after_polls"],
                args["cleanup"]) == (limit + 30, 5, GPU_POLL_BOUND, 2, True), (check, args)
        assert wait["timeout"] > job_wait.worst_case_s(args["wait_timeout_s"], args["poll_timeout_s"]), (check, wait)
    assert not [name for name in rows if name in GPU_TASKS.values()], rows      # no check's own task


def test_gpu_checks_without_async_have_their_worst_case_as_timeout():
    """gpu_async: false: each check is a task of its own (no job), limited by the check's worst case, as before."""
    rows = _gpu_rows(load_tasks({"gpu_async": False}, playbooks=["gpu.yml"], with_included=False))
    for check, limit in GPU_LIMITS.items():
        task = rows[GPU_TASKS[check]]
        assert (task["timeout"], task["async"]) == (limit, 0), (check, task)
    assert GPU_START not in rows and not [name for name in rows if name.startswith(GPU_WAIT)], rows


def _probe_rows(rows):
    return dict((r["task"].split(" : ", 1)[1], r) for r in rows
                if r["source"] == "acceptance_ssh.yml" and r["task"].startswith("aifabric.acceptance.probe : "))


def test_probe_steps_run_as_bounded_jobs():
    """probe_async (the default): the probe as the GPU stage's checks - the job may run for the
    step's worst case, its wait that + 30 s, each poll bounded by the margin (at least 30 s), polled every 2 s."""
    rows = _probe_rows(all_rows())
    for name, limit in PROBE_LIMITS.items():
        start, wait = rows["Start - " + name], rows[name]
        assert (start["async"], start["poll"]) == (limit, 0), (name, start)
        assert wait["action"] == "aifabric.acceptance.job_wait", (name, wait)
        args = wait["args"]
        assert (args["wait_timeout_s"], args["poll_s"], args["poll_timeout_s"], args["unreachable_after_polls"],
                args["cleanup"]) == (limit + 30, 2, GPU_POLL_BOUND, 2, True), (name, args)
        assert wait["timeout"] > job_wait.worst_case_s(args["wait_timeout_s"], args["poll_timeout_s"]), (name, wait)


def test_probe_steps_without_async_have_their_worst_case_as_timeout():
    """probe_async: false: the start is the run itself (async 0), limited by its worst case, as before."""
    rows = _probe_rows(load_tasks({"probe_async": False}, playbooks=["acceptance_ssh.yml"], with_included=False))
    for name, limit in PROBE_LIMITS.items():
        start = rows["Start - " + name]
        assert (start["timeout"], start["async"]) == (limit, 0), (name, start)
