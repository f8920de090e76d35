# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The probe starts on every host at once (probe_async, the role probe's default), so its time does not grow with
forks; a job that outlives its limit is reported, not waited on for ever.

test_probe_jobs_overlap_with_one_fork: acceptance.yml --tags probe on four hosts with forks 1 (ANSIBLE_FORKS),
each host's probe made slow by a stand-in Python in probe_options.pythons (it sleeps PROBE_SLEEP_S, then is the
hosts' python3: the package probe runs it). Each host's stand-in writes when it started and ended: with
probe_async each host's probe begins while the one begun before it still runs (its start does not wait for it);
with probe_async: false (as before) they run one after the other (no two spans overlap). The wall times are printed, not asserted (a loaded
machine; bench/e2e_model.py measures them). The check before the run says what forks 1 costs. The records of
the two runs are the same, field by field, less what differs between any two runs of the probe (started,
duration_s, the available memory, the time stamp of lldpctl's warning quoted in the topology's reason).

test_job_past_its_limit_is_reported: the GPU stage's GEMM (the same start + aifabric.acceptance.job_wait as the
probe's) on two hosts, its limit gpu_gemm.timeout_s + 10 s + aifabric_task_margin_s; on one host the GEMM module
itself is stopped (SIGSTOP from its stand-in Python: a module that hangs where no timeout of its own reaches it).
async_wrapper kills it at the job's limit and the wait reports it ("Timeout exceeded", an error record of that
host) long before the run's hang limit; the other host's check is what it is.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import time

import pytest

from ansible_collections.aifabric.acceptance.tests.integration.test_ssh_fleet import (
    assert_nothing_left, assert_valid_records, finish, load_report, records_of, schema_validator, start, tail)

PROBE_SLEEP_S = 15
RUN_LIMIT_S = 300
VOLATILE = ("started", "duration_s")
# readings of the host that change by themselves between two runs (env.memory's available memory): compared by
# presence, not value; and the time stamps of a tool's own messages quoted in a reason (lldpctl's warning)
DRIFTING = ("mem_available_bytes",)
STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d")

STAND_IN = """#!/bin/sh
# aifabric.acceptance integration test (throwaway): a slow Python for the probe of {host}
date +%s.%N >> {spans}.start
sleep {sleep_s}
date +%s.%N >> {spans}.end
exec /usr/bin/python3 "$@"
"""

STOP_MODULE = """#!/bin/sh
# aifabric.acceptance integration test (throwaway): the GEMM's Python on {host} stops the module that runs it
pid=$PPID
while [ "$pid" -gt 1 ]; do
  if tr '\\000' ' ' < /proc/$pid/cmdline | grep -q AnsiballZ_gemm_bench; then
    echo "$pid" >> {stopped}
    kill -STOP "$pid"
    exit 0
  fi
  pid=$(awk '/^PPid:/ {{print $2}}' /proc/$pid/status)
done
exit 1
"""


def _script(host, name, text, **fields):
    path = os.path.join(host.workdir, name)
    with open(path, "w") as handle:
        handle.write(text.format(host=host.name, **fields))
    os.chmod(path, 0o755)
    return path


def _spans(fleet):
    """{host: (start, end)} of each host's stand-in Python (the first run of it)."""
    out = {}
    for host in fleet.hosts:
        base = os.path.join(host.workdir, "probe-python")
        with open(base + ".start") as first, open(base + ".end") as last:
            out[host.name] = (float(first.readline()), float(last.readline()))
        os.unlink(base + ".start")
        os.unlink(base + ".end")
    return out


def _run(fleet, controller, tmp_path, name, argv, forks, async_dir):
    report_dir = tmp_path / name
    out = str(tmp_path / (name + ".log"))
    env = controller.env(fleet, report_dir, extra={"ANSIBLE_FORKS": str(forks), "ANSIBLE_ASYNC_DIR": async_dir})
    began = time.monotonic()
    rc = finish(start(fleet, argv, env, out, controller.repo), RUN_LIMIT_S, out)
    return rc, time.monotonic() - began, out, report_dir


def comparable(records):
    """Records less what differs between any two runs of the probe, sorted."""
    out = []
    for rec in records:
        rec = dict((k, v) for k, v in rec.items() if k not in VOLATILE)
        for part in ("metrics", "facts"):
            if isinstance(rec.get(part), dict):
                rec[part] = dict((k, "<drifts>" if k in DRIFTING else v) for k, v in rec[part].items())
        out.append(STAMP.sub("<time>", json.dumps(rec, sort_keys=True)))
    return sorted(out)


@pytest.mark.fleet(n=4)
def test_probe_jobs_overlap_with_one_fork(fleet, controller, tmp_path):
    validator = schema_validator(controller)
    stand_ins = dict((h.name, {"probe_options": json.dumps({"pythons": [_script(
        h, "probe-python.sh", STAND_IN, spans=os.path.join(h.workdir, "probe-python"), sleep_s=PROBE_SLEEP_S)]})})
        for h in fleet.hosts)
    inventory = str(tmp_path / "inventory.ini")
    fleet.write_inventory(path=inventory)
    os.makedirs(tmp_path / "host_vars")
    for name, variables in stand_ins.items():
        (tmp_path / "host_vars" / (name + ".yml")).write_text(
            "probe_options: %s\n" % variables["probe_options"])
    async_dir = os.path.join(fleet.dir, "async-jobs")
    runs = {}
    for mode in (True, False):
        argv = controller.playbook_argv("playbooks/acceptance.yml", inventory, "--tags", "probe", "-e",
                                        json.dumps({"acceptance_hosts": fleet.group, "probe_async": mode}))
        rc, wall, out, report_dir = _run(fleet, controller, tmp_path, "async" if mode else "plain", argv, 1, async_dir)
        assert rc == 0, "ansible-playbook rc %d:\n%s" % (rc, tail(out))
        records = records_of(load_report(report_dir, out)[1])
        assert_valid_records(records, validator)
        runs[mode] = (records, _spans(fleet), wall, out)

    records, spans, wall, out = runs[True]
    log = open(out).read()
    assert "TASK [aifabric.acceptance.probe : Start - Probe OS, CPU, memory, GPUs, RDMA and software]" in log
    assert "FAILED - RETRYING" not in log
    # each host's probe began before the one begun before it had ended: no start waited for a probe (on a loaded
    # machine a start takes seconds: all four at one moment would ask for a longer stand-in)
    begun = sorted(spans.values())
    assert all(two[0] < one[1] for one, two in zip(begun, begun[1:])), spans
    plain_records, plain_spans, plain_wall = runs[False][:3]
    ordered = sorted(plain_spans.values())
    assert all(one[1] <= two[0] for one, two in zip(ordered, ordered[1:])), plain_spans    # one after the other
    # the check before the run says what the forks cost, and how to raise them
    assert "forks 1 for 4 hosts" in log and "ansible-playbook -f 4" in log, tail(out)
    # every host probed, and the same records, field by field
    assert set(r["host"] for r in records) == set(h.name for h in fleet.hosts)
    probed = [r["host"] for r in records if r["check"] == "env.python" and r["target"].endswith("probe-python.sh")]
    assert sorted(probed) == sorted(h.name for h in fleet.hosts), probed        # each host's stand-in ran
    ours, theirs = comparable(records), comparable(plain_records)
    assert ours == theirs, [line for line in ours if line not in theirs][:3] + ["--"] + \
        [line for line in theirs if line not in ours][:3]
    left = os.listdir(async_dir) if os.path.isdir(async_dir) else []
    assert not left, "job files left in ANSIBLE_ASYNC_DIR: %s" % left
    print("probe, 4 hosts, forks 1, %d s a host's probe: probe_async %.1f s, probe_async: false %.1f s"
          % (PROBE_SLEEP_S, wall, plain_wall))
    assert_nothing_left(fleet)


MARGIN_S = 5
GEMM_TIMEOUT_S = 1
JOB_LIMIT_S = GEMM_TIMEOUT_S + 10 + MARGIN_S       # the role gpu's limit of the GEMM's job (__gpu_jobs.gemm.async)


@pytest.mark.fleet(n=2)
def test_job_past_its_limit_is_reported(fleet, controller, tmp_path):
    validator = schema_validator(controller)
    stuck = fleet.hosts[0]
    stopped = os.path.join(stuck.workdir, "stopped")
    python = _script(stuck, "gemm-python.sh", STOP_MODULE, stopped=stopped)
    inventory = fleet.write_inventory(path=str(tmp_path / "inventory.ini"), host_vars={stuck.name: {"gpu_python": python}})
    variables = {"gpu_hosts": fleet.group, "gpu_checks": ["gemm"], "gpu_run_probe": False, "gpu_async_poll_s": 1,
                 "gpu_gemm": {"timeout_s": GEMM_TIMEOUT_S}, "aifabric_task_margin_s": MARGIN_S}
    argv = controller.playbook_argv("playbooks/gpu.yml", inventory, "-e", json.dumps(variables))
    rc, wall, out, report_dir = _run(fleet, controller, tmp_path, "stuck", argv, 5, os.path.join(fleet.dir, "jobs"))
    assert rc == 2, "ansible-playbook must fail the stuck host (rc 2), got %d:\n%s" % (rc, tail(out))
    assert os.path.exists(stopped), "the GEMM module was never stopped:\n%s" % tail(out)
    assert wall < JOB_LIMIT_S + 90, wall        # the job's limit, a poll or two and the play's own work
    records = records_of(load_report(report_dir, out)[1])
    assert_valid_records(records, validator)
    mine = [r for r in records if r["host"] == stuck.name]
    errors = [r for r in mine if r["status"] == "error" and "Timeout exceeded" in (r.get("reason") or "")]
    assert errors, mine
    # the wait of the stage's jobs names the check whose job failed (its loop item)
    assert errors[0]["params"]["task"] == (
        "aifabric.acceptance.gpu : Run the GPU stage's checks (one line per check and host)"), errors
    assert "1 loop item(s) failed (gemm): Timeout exceeded" in errors[0]["reason"], errors
    other = [r for r in records if r["host"] == fleet.hosts[1].name and r["check"].startswith("gpu.gemm")]
    assert other and all(r["status"] != "error" for r in other), other
    print("gpu.yml, the GEMM module stopped on %s: reported after %.1f s (job limit %d s)" % (stuck.name, wall, JOB_LIMIT_S))
    assert_nothing_left(fleet)


def _local_env(controller, home, report_dir, async_dir):
    """The controller's environment for a run on this machine (inventories/localhost: the local connection) under
    ``home`` as HOME - not the user's passwd home, as `make test` runs - with ``async_dir`` as ANSIBLE_ASYNC_DIR
    (None: unset, its default ~/.ansible_async)."""
    env = dict((k, v) for k, v in os.environ.items() if not k.startswith(("ANSIBLE_", "AIFABRIC_")))
    env.update({"HOME": str(home), "ANSIBLE_CONFIG": controller.config, "ANSIBLE_COLLECTIONS_PATH": controller.collections,
                "ANSIBLE_CALLBACKS_ENABLED": "aifabric.acceptance.fleet_report", "AIFABRIC_REPORTS_ROOT": str(report_dir),
                "PYTHONDONTWRITEBYTECODE": "1"})
    if async_dir is not None:
        env["ANSIBLE_ASYNC_DIR"] = async_dir
    return env


@pytest.mark.parametrize("async_dir", [None, "~/jobs", "absolute"])
def test_local_probe_job_is_found_where_it_was_written(controller, tmp_path, async_dir):
    """`make acceptance` on localhost under a HOME that is not the passwd home (`make test`'s .home): the probe's
    job was written by async_wrapper to $HOME/.ansible_async (it expands ~ with its own HOME), and job_wait looked
    for it in ~root's (ansible.builtin.async_status's expansion of ~): "could not find job". Now the status module
    expands the directory on the host as async_wrapper did: ANSIBLE_ASYNC_DIR unset, with ~, or absolute, the job
    file lands in it (async_wrapper makes the directory), is found there (the play passes, no error record) and is
    removed by the wait (cleanup)."""
    home = tmp_path / "home"
    home.mkdir()
    if async_dir == "absolute":
        async_dir = str(tmp_path / "async-jobs")
    expected = os.path.join(str(home), ".ansible_async") if async_dir is None else (
        os.path.join(str(home), "jobs") if async_dir == "~/jobs" else async_dir)
    passwd_jobs = os.path.expanduser("~root/.ansible_async") if os.getuid() == 0 else None
    before = set(os.listdir(passwd_jobs)) if passwd_jobs and os.path.isdir(passwd_jobs) else set()
    report_dir = tmp_path / "reports"
    out = str(tmp_path / "probe.log")
    argv = controller.playbook_argv("playbooks/acceptance.yml", os.path.join(controller.repo, "inventories", "localhost"),
                                    "--tags", "probe")
    with open(out, "wb") as log:
        done = subprocess.run(argv, env=_local_env(controller, home, report_dir, async_dir), cwd=controller.repo,
                              stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, timeout=RUN_LIMIT_S,
                              check=False)
    assert done.returncode == 0, tail(out)
    assert "could not find job" not in tail(out, 400)
    records = records_of(load_report(report_dir, out)[1])
    assert [r for r in records if r["check"] == "env.cpu"], tail(out)
    assert not [r for r in records if r["status"] == "error"], [r for r in records if r["status"] == "error"]
    assert os.path.isdir(expected), "no job directory %s (async_wrapper wrote elsewhere):\n%s" % (expected, tail(out))
    assert os.listdir(expected) == [], "job files left in %s: %s" % (expected, os.listdir(expected))
    if passwd_jobs and os.path.isdir(passwd_jobs):
        assert set(os.listdir(passwd_jobs)) <= before, "a job file in the passwd home's %s" % passwd_jobs
