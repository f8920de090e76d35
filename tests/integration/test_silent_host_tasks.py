# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/gpu.yml with no SSH keep-alives: a host that goes silent during an ordinary task never hangs the run
(issue 18, item 11, beyond the RDMA sweep).

The inventory sets its own ``ansible_ssh_common_args`` without ServerAlive options (as every bastion/ProxyJump
inventory does), so SSH alone never notices a host whose link went down. On one host the GPU stage's Python is a
stand-in that says it started and then runs for FAKE_RUN_S (a GEMM run); while it runs, that host's link goes down.
The module there ends (the tool's own timeout), but its answer never reaches the controller: only the task's own
``timeout:`` (gpu_gemm's timeout_s + the kill-after + aifabric_task_margin_s) ends the wait, or, with gpu_async, the
wait's own bound on each poll (the action job_wait). The play then goes on
with the other hosts: their verdicts are what they are without the silent host (every check ran, none is an
error), and the silent host is an error in the report. The limit on ansible-playbook is the hang detector (before
every remote task had its own timeout, the gemm task was still waiting on the silent host at that limit), not a
performance figure.
"""

from __future__ import annotations

import json
import os
import time

import pytest

from ansible_collections.aifabric.acceptance.tests.integration.test_rdma_silent_host import without_keepalives
from ansible_collections.aifabric.acceptance.tests.integration.test_rdma_sweep_faults import silence
from ansible_collections.aifabric.acceptance.tests.integration.test_ssh_fleet import (
    assert_nothing_left, assert_set_stats_agree, assert_valid_records, finish, load_report, records_of,
    schema_validator, start, tail)

PLAYBOOK = "playbooks/gpu.yml"
SILENT = "node2"
HANG_LIMIT_S = 180
FAKE_RUN_S = 20         # the stand-in GEMM run: it ends by itself, but its answer never arrives
GEMM_TIMEOUT_S = 5      # gpu_gemm: {timeout_s}: the module kills the stand-in after this
MARGIN_S = 10           # aifabric_task_margin_s
KILL_AFTER_S = 10       # runner.KILL_AFTER_S: SIGKILL this long after the timeout's SIGTERM
BOUND_S = GEMM_TIMEOUT_S + KILL_AFTER_S + MARGIN_S      # the gemm task's timeout: 25 s (gpu_async: false)
POLL_BOUND_S = max(MARGIN_S, 30)        # gpu_async: each poll of the GEMM job: the margin, at least 30 s
UNREACHABLE_AFTER_POLLS = 2             # gpu_async: failed polls in a row that make the host unreachable
GEMM_TASK = "Measure GEMM throughput on every GPU"       # gpu_async: false, the check's own task
GPU_WAIT = "Run the GPU stage's checks (one line per check and host)"     # gpu_async: the wait for the chain's jobs

FAKE_PYTHON = """#!/bin/sh
# aifabric.acceptance integration test (throwaway): the GPU stage's Python on {host}: it started, then it runs
echo "$$ $*" >> {started}
sleep {run_s}
"""


def stand_in_python(fleet, name):
    """(path, started file): the GPU stage's Python of ``name``, a GEMM run that takes FAKE_RUN_S."""
    host = fleet.host(name)
    path = os.path.join(host.workdir, "gpu-python")
    started = os.path.join(host.workdir, "gpu-python.started")
    with open(path, "w") as handle:
        handle.write(FAKE_PYTHON.format(host=name, started=started, run_s=FAKE_RUN_S))
    os.chmod(path, 0o755)
    return path, started


def wait_started(proc, started, out, limit_s=120):
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if os.path.exists(started):
            return
        assert proc.poll() is None, "the play ended before the GEMM run started:\n%s" % tail(out)
        time.sleep(0.1)
    pytest.fail("the GEMM run never started on %s:\n%s" % (SILENT, tail(out)))


@pytest.mark.parametrize("config, gpu_async", [("repo", True), ("none", True), ("repo", False)])
def test_gpu_stage_silent_host_without_keepalives(fleet, controller, tmp_path, config, gpu_async):
    """config repo: the repository's ansible.cfg (its keep-alives replaced by the inventory's ssh args, task_timeout
    7200 s); none: no ansible.cfg at all, as an installed collection runs (pipelining comes from the playbook: without
    it, ansible-core's removal of the timed-out module's temporary directory would wait on the silent host).

    gpu_async (the role's default): the GEMM runs as a job on every host; the silent host's next poll of it hangs
    until the wait's own bound on it (POLL_BOUND_S, the action job_wait's, whatever the SSH options), and after
    UNREACHABLE_AFTER_POLLS failed polls the host is unreachable (rc 4), in the task that carries the check's name.
    Without it the GEMM task itself waits until its timeout (BOUND_S) and fails (rc 2); that task is the check's start
    task."""
    validator = schema_validator(controller)
    report_dir = tmp_path / "reports"
    out = str(tmp_path / "ansible-playbook.log")
    fake, started_file = stand_in_python(fleet, SILENT)
    inventory = fleet.write_inventory(path=str(tmp_path / "inventory.ini"), host_vars={SILENT: {"gpu_python": fake}})
    without_keepalives(inventory)
    variables = {"gpu_hosts": fleet.group, "gpu_gemm": {"timeout_s": GEMM_TIMEOUT_S}, "aifabric_task_margin_s": MARGIN_S,
                 "gpu_async": gpu_async}
    bound_s, task = (POLL_BOUND_S, GPU_WAIT) if gpu_async else (BOUND_S, GEMM_TASK)
    # the jobs' files (gpu_async) in the fleet's directory: the silenced host's are never forgotten (it does not answer)
    env = controller.env(fleet, report_dir, extra={"ANSIBLE_ASYNC_DIR": os.path.join(fleet.dir, "async-jobs")})
    if config == "none":
        empty = tmp_path / "ansible.cfg"
        empty.write_text("")
        env["ANSIBLE_CONFIG"] = str(empty)
    proc = start(fleet, controller.playbook_argv(PLAYBOOK, inventory, "-e", json.dumps(variables)), env, out,
                 controller.repo)
    wait_started(proc, started_file, out)
    silenced = time.monotonic()
    silence(fleet, SILENT)
    rc = finish(proc, HANG_LIMIT_S, out)
    ended = time.monotonic()
    want_rc = 4 if gpu_async else 2     # a host unreachable (the wait), or failed (the task's timeout)
    assert rc == want_rc, "ansible-playbook must end with rc %d, got %d:\n%s" % (want_rc, rc, tail(out))
    assert ended - silenced >= bound_s - 5, "the gemm task ended before its bound: %.1f s" % (ended - silenced)

    report = load_report(report_dir, out)[1]
    records = records_of(report)
    assert_valid_records(records, validator)
    silent = [r for r in records if r["host"] == SILENT]
    if gpu_async:       # the wait's bounded polls: "2 failed polls in a row (no answer from the host: ...)"
        why = "%d failed polls in a row" % UNREACHABLE_AFTER_POLLS
        timed_out = [r for r in silent if r["status"] == "error" and r["check"] == "env.reachable" and why in r["reason"]]
    else:
        timed_out = [r for r in silent if r["status"] == "error" and "Timed out after %d second(s)" % bound_s in r["reason"]]
    assert timed_out, silent
    assert timed_out[0]["params"]["task"] == "aifabric.acceptance.gpu : " + task, timed_out
    assert not [r for r in silent if r["check"].startswith("gpu.gemm")], silent     # its answer never arrived
    for name in sorted(h.name for h in fleet.hosts if h.name != SILENT):
        mine = [r for r in records if r["host"] == name]
        checks = set(r["check"] for r in mine)
        # the whole stage ran there: the probe, GEMM, the all-reduce probe and nccl-tests (skips: no GPU here)
        assert {"gpu.inventory", "gpu.gemm", "nccl.torch_all_reduce", "nccl.all_reduce"} <= checks, sorted(checks)
        assert not [r for r in mine if r["status"] == "error"], [r for r in mine if r["status"] == "error"]
    verdicts = dict((h["host"], h["status"]) for h in report["summary"]["hosts"])
    assert verdicts[SILENT] == "error" and report["summary"]["failed_hosts"] == [SILENT], report["summary"]
    assert_set_stats_agree(report)
    print("gpu.yml, 3 hosts, ansible.cfg %s, gpu_async %s, no keep-alives, %s silenced during its GEMM run: ended "
          "%.1f s after the silence (bound %d s)" % (config, gpu_async, SILENT, ended - silenced, bound_s))
    assert_nothing_left(fleet)
