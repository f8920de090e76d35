# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/gpu.yml with gpu_async (each check started on every host as an async job and waited for with
aifabric.acceptance.job_wait) gives the same records as without it (each check one task per host, forks hosts at a
time), and its waits print no "FAILED - RETRYING" line per poll.

Four hosts, one scenario each, with the stand-in nccl-tests (tests/integration/fixtures/fake_nccl_tests: replays a
captured H200 run) and the hosts' own python3 (no PyTorch: the GEMM and the all-reduce probe say so):
  node1 healthy      the collective passes
  node2 failing      gpu_expect asks for more bus bandwidth than the capture has: fail
  node3 missing tool no nccl-tests in tool_dir: skip (if_missing: skip, the role's)
  node4 timed out    the stand-in sleeps past gpu_nccl.timeout_s: the module stops it, an error record
Both runs on the same fleet; every record is compared field by field, less the fields that differ between any two
runs (started, duration_s, the random run id a module makes when none is given, the task's remote temporary
directory where a worker is staged, and the environment probe's
readings: its env.* records are compared by host, check, target and status). After the async run the jobs'
files are gone from ANSIBLE_ASYNC_DIR (async_status mode: cleanup) and no process is left on the hosts.
"""

from __future__ import annotations

import difflib
import json
import os
import re

import pytest
import yaml

from ansible_collections.aifabric.acceptance.tests.integration.fixtures.fake_nccl_tests import fake_perf
from ansible_collections.aifabric.acceptance.tests.integration.test_ssh_fleet import (
    assert_nothing_left, assert_valid_records, finish, load_report, records_of, schema_validator, start, tail)

PLAYBOOK = "playbooks/gpu.yml"
RUN_LIMIT_S = 300
VOLATILE = ("started", "duration_s")
RUN_ID = re.compile(r"\b[0-9a-f]{16,}\b")       # a module's own run id (random when none is given)
# the remote temporary directory where a worker or a -J file goes: a random name in any run; a pipelined module makes
# its own (ansible-moduletmp-<time>-<random>), an async job, never pipelined, runs in the task's (ansible-tmp-...)
TMP_DIR = re.compile(r"ansible-(?:module)?tmp-[0-9.]+-[0-9A-Za-z_-]+")


def scenario(fleet, tmp_path):
    """The inventory (host_vars files: one scenario per host) and the stage's variables."""
    bindir = os.path.join(fleet.dir, "nccl-tests")
    empty = os.path.join(fleet.dir, "no-nccl-tests")
    os.makedirs(bindir)
    os.makedirs(empty)
    fake_perf.install(bindir, ["all_reduce_perf"])
    nccl = {"tool_dir": bindir, "gpus_per_process": 1, "collectives": ["all_reduce"], "timeout_s": 20}
    per_host = {
        "node1": {"gpu_nccl": nccl},
        "node2": {"gpu_nccl": nccl, "gpu_expect": {"nccl.all_reduce": {"busbw_max_gbyte_s": {"min": 100000}}}},
        "node3": {"gpu_nccl": dict(nccl, tool_dir=empty)},
        "node4": {"gpu_nccl": dict(nccl, timeout_s=3), "gpu_env": {"FAKE_NCCL_SLEEP": "60"}},
    }
    inventory = fleet.write_inventory(path=str(tmp_path / "inventory.ini"))
    os.makedirs(tmp_path / "host_vars")
    for name, variables in per_host.items():
        with open(tmp_path / "host_vars" / (name + ".yml"), "w") as handle:
            yaml.safe_dump(variables, handle)
    variables = {"gpu_hosts": fleet.group, "gpu_async_poll_s": 1, "gpu_allreduce_probe": {"timeout_s": 30},
                 "gpu_gemm": {"timeout_s": 30}}
    return inventory, variables


def run_stage(fleet, controller, tmp_path, inventory, variables, name, async_dir):
    report_dir = tmp_path / name
    out = str(tmp_path / (name + ".log"))
    env = controller.env(fleet, report_dir, extra={"ANSIBLE_ASYNC_DIR": async_dir, "AIFABRIC_FAIL_ON": "never"})
    proc = start(fleet, controller.playbook_argv(PLAYBOOK, inventory, "-e", json.dumps(variables)), env, out,
                 controller.repo)
    rc = finish(proc, RUN_LIMIT_S, out)
    assert rc in (0, 2), "ansible-playbook rc %d:\n%s" % (rc, tail(out))
    return records_of(load_report(report_dir, out)[1]), out, rc


def comparable(records):
    """Records less what differs between any two runs, sorted. The environment probe's records (env.*) read what
    changes by itself (free memory, the load): their host, check, target and status are compared."""
    out = []
    for rec in records:
        if rec["check"].startswith("env."):
            rec = dict((k, rec[k]) for k in ("host", "check", "target", "status"))
        text = json.dumps(dict((k, v) for k, v in rec.items() if k not in VOLATILE), sort_keys=True)
        out.append(TMP_DIR.sub("<ansible-tmp>", RUN_ID.sub("<run id>", text)))
    return sorted(out)


@pytest.mark.fleet(n=4)
def test_gpu_async_gives_the_records_of_the_plain_run(fleet, controller, tmp_path):
    validator = schema_validator(controller)
    inventory, variables = scenario(fleet, tmp_path)
    async_dir = os.path.join(fleet.dir, "async-jobs")
    plain, _log, plain_rc = run_stage(fleet, controller, tmp_path, inventory, dict(variables, gpu_async=False), "plain",
                                      async_dir)
    assert not os.path.exists(async_dir) or not os.listdir(async_dir)      # no job without async
    jobs, out, rc = run_stage(fleet, controller, tmp_path, inventory, variables, "async", async_dir)
    assert rc == plain_rc, (rc, plain_rc)
    assert_valid_records(jobs, validator)
    with open(out) as handle:
        log = handle.read()
    # it did run as jobs: one start a host for every check (job_chain), one wait a host (job_wait over the jobs)
    assert "TASK [aifabric.acceptance.gpu : Start - Run the GPU stage's checks on every host" in log
    # the wait polls quietly: no "FAILED - RETRYING" line per poll of a job still running, and one line per host and
    # check, in the stage's order
    assert "FAILED - RETRYING" not in log, [line for line in log.splitlines() if "FAILED - RETRYING" in line][:5]
    wait = log.split("TASK [aifabric.acceptance.gpu : Run the GPU stage's checks (one line per check and host)]", 1)[1]
    wait = wait.split("TASK [", 1)[0]
    lines = re.findall(r"^(?:ok|changed|failed|fatal): \[(node\d)\] => \(item=(\w+)\)", wait, re.M)
    assert sorted(lines) == sorted((node, check) for node in ("node1", "node2", "node3", "node4")
                                   for check in ("probe", "gemm", "allreduce_probe", "nccl")), wait
    for node in ("node1", "node2", "node3", "node4"):
        assert [c for n, c in lines if n == node] == ["probe", "gemm", "allreduce_probe", "nccl"], wait

    by = dict((name, dict((r["check"], r["status"]) for r in jobs if r["host"] == name and r["check"].startswith("nccl.all")))
              for name in ("node1", "node2", "node3", "node4"))
    assert by == {"node1": {"nccl.all_reduce": "pass"}, "node2": {"nccl.all_reduce": "fail"},
                  "node3": {"nccl.all_reduce": "skip"}, "node4": {"nccl.all_reduce": "error"}}, by
    assert "timed out" in [r for r in jobs if r["host"] == "node4" and r["check"] == "nccl.all_reduce"][0]["reason"]
    # every check of the stage ran on every host (the probe, GEMM and the all-reduce probe: no PyTorch here)
    for name in ("node1", "node2", "node3", "node4"):
        checks = set(r["check"] for r in jobs if r["host"] == name)
        assert {"gpu.inventory", "nccl.all_reduce"} <= checks and any(c.startswith("gpu.gemm") for c in checks), checks
    ours, theirs = comparable(jobs), comparable(plain)
    assert ours == theirs, "\n".join(difflib.unified_diff(theirs, ours, "gpu_async: false", "gpu_async: true", lineterm=""))
    left = os.listdir(async_dir) if os.path.isdir(async_dir) else []
    assert not left, "job files left in ANSIBLE_ASYNC_DIR: %s" % left      # every finished job forgotten
    assert_nothing_left(fleet)


@pytest.mark.fleet(n=2)
def test_gpu_async_in_check_mode_runs_each_check_as_a_task(fleet, controller, tmp_path):
    """ansible-playbook --check: no job (gpu_async is off in check mode, whatever the ansible-core: before 2.17 async
    and check mode on one task failed it); each module answers in a task of its own what it would run."""
    inventory = fleet.write_inventory(path=str(tmp_path / "inventory.ini"))
    async_dir = os.path.join(fleet.dir, "async-jobs")
    report_dir = tmp_path / "check"
    out = str(tmp_path / "check.log")
    env = controller.env(fleet, report_dir, extra={"ANSIBLE_ASYNC_DIR": async_dir, "AIFABRIC_FAIL_ON": "never"})
    argv = controller.playbook_argv(PLAYBOOK, inventory, "--check", "-e", json.dumps({"gpu_hosts": fleet.group}))
    rc = finish(start(fleet, argv, env, out, controller.repo), RUN_LIMIT_S, out)
    assert rc == 0, "ansible-playbook --check rc %d:\n%s" % (rc, tail(out))
    with open(out) as handle:
        log = handle.read()
    assert "Start - Run the GPU stage's checks" not in log and "job_chain" not in log      # no job
    for check in ("Measure GEMM throughput on every GPU", "Run nccl-tests collectives on every GPU of the host"):
        ran = log.split("TASK [aifabric.acceptance.gpu : %s]" % check, 1)[1].split("TASK [", 1)[0]
        assert "ok: [node1]" in ran and "ok: [node2]" in ran, ran
    assert not os.path.exists(async_dir) or not os.listdir(async_dir)
    assert_nothing_left(fleet)
