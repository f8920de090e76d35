# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Multi-host launches leave nothing behind on any host (issue 9 item 2).

Real Open MPI over real SSH between network-namespace hosts, the stand-in nccl-tests
(fixtures/fake_nccl_tests) told to hang (FAKE_NCCL_SLEEP), and the nccl_test module's
``timeout_s``: after the task returns, no rank may survive on any host. Then the same with the
launcher killed outright (what a lost controller does: the module never gets to clean up),
where the ``aifabric.acceptance.cleanup`` task on every host must find the ranks by their run
tag and stop them. (Killing only the launcher is not enough to orphan ranks: Open MPI's daemons
and the module's own signal handling clean up then; the test kills those too, with SIGKILL.)
"""

from __future__ import annotations

import json
import os
import signal
import time

import pytest

from ansible_collections.aifabric.acceptance.tests.integration import netns
from ansible_collections.aifabric.acceptance.tests.integration.fixtures.fake_nccl_tests import fake_perf
from ansible_collections.aifabric.acceptance.tests.integration.test_ssh_fleet import finish, start, tail

FAKE = "fake_perf.py"


def _on_fleet(fleet, text):
    """Live PIDs on the fleet's hosts (their network namespaces) whose command line contains text: never a process
    of another test or of another run on this machine (tests may run in parallel: pytest -n)."""
    here = set(netns.procs_in_netns([h.ns_id for h in fleet.hosts]))
    return [pid for pid in netns.procs_mentioning(text) if pid in here]


def _survivors(fleet):
    return [netns._describe(pid) for pid in _on_fleet(fleet, FAKE)]


def _ppid(pid):
    with open("/proc/%d/stat" % pid) as handle:
        return int(handle.read().rsplit(")", 1)[1].split()[1])


def _wait_gone(fleet, limit_s):
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline and _survivors(fleet):
        time.sleep(0.2)
    return _survivors(fleet)


def _playbook(tmp_path, fleet, bindir, log, tag, timeout_s, cleanup):
    ssh = "-i %s -F /dev/null -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR" % fleet.key
    first = fleet.hosts[0].name
    run = {
        "tool_dir": bindir, "hosts": [h.name for h in fleet.hosts], "ranks_per_node": 2,
        "collectives": ["all_reduce"], "json_output": "never", "timeout_s": timeout_s,
        "env": {"FAKE_NCCL_SLEEP": "600", "FAKE_NCCL_LOG": log}, "run_id": tag,
        "mpirun_mca": {"plm_rsh_args": ssh}, "mpirun_extra_args": ["--oversubscribe"],
        "tcp_if_include": fleet.subnet,
    }
    plays = [{
        "name": "launch", "hosts": first, "gather_facts": False,
        "tasks": [
            {"name": "hanging collective", "aifabric.acceptance.nccl_test": run, "register": "out"},
            {"name": "save", "ansible.builtin.copy": {"content": "{{ out | to_json }}",
                                                      "dest": str(tmp_path / "out.json")},
             "delegate_to": "localhost"},
        ],
    }]
    if cleanup:
        plays.append({"name": "cleanup", "hosts": fleet.group, "gather_facts": False,
                      "tasks": [{"name": "stop what the run left", "aifabric.acceptance.cleanup": {"run_id": tag},
                                 "register": "swept"},
                                {"name": "save", "ansible.builtin.copy": {
                                    "content": "{{ swept | to_json }}",
                                    "dest": str(tmp_path) + "/swept-{{ inventory_hostname }}.json"},
                                 "delegate_to": "localhost"}]})
    path = tmp_path / "play.yml"
    path.write_text(json.dumps(plays))
    return str(path)


def _setup(fleet):
    if not os.access("/usr/bin/mpirun", os.X_OK):
        pytest.skip("Open MPI's mpirun is not installed (apt-get install openmpi-bin)")
    bindir = os.path.join(fleet.dir, "nccl-tests")
    os.makedirs(bindir)
    fake_perf.install(bindir, ["all_reduce_perf"])
    return bindir, os.path.join(fleet.dir, "fake_nccl.log")


def _ranks_started(log, want, limit_s=60):
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if os.path.exists(log):
            with open(log) as handle:
                if len([ln for ln in handle if ln.strip()]) >= want:
                    return True
        time.sleep(0.2)
    return False


@pytest.mark.fleet(n=2)
def test_timeout_leaves_no_rank_on_any_host(fleet, controller, tmp_path):
    bindir, log = _setup(fleet)
    tag = "t-" + os.urandom(8).hex()
    inventory = fleet.write_inventory(path=str(tmp_path / "inventory.ini"))
    playbook = _playbook(tmp_path, fleet, bindir, log, tag, timeout_s=12, cleanup=False)
    out = str(tmp_path / "ansible.log")
    proc = start(fleet, controller.playbook_argv(playbook, inventory), controller.env(fleet, tmp_path / "r", callbacks=("ansible.builtin.default",)), out,
                 controller.repo)
    assert finish(proc, 180, out) == 0, tail(out)
    with open(str(tmp_path / "out.json")) as handle:
        result = json.load(handle)
    (record,) = result["results"]
    assert record["status"] == "error" and "timed out" in record["reason"], record
    assert result["run_id"] == tag
    # every rank of both hosts started (4 log lines) and none is left once the task has returned
    with open(log) as handle:
        hosts = sorted(set(json.loads(ln)["hostname"] for ln in handle if ln.strip()))
    assert hosts == sorted(h.name for h in fleet.hosts)
    assert _wait_gone(fleet, 5) == []


@pytest.mark.fleet(n=2)
def test_cleanup_task_stops_ranks_whose_launcher_was_killed(fleet, controller, tmp_path):
    bindir, log = _setup(fleet)
    tag = "t-" + os.urandom(8).hex()
    inventory = fleet.write_inventory(path=str(tmp_path / "inventory.ini"))
    playbook = _playbook(tmp_path, fleet, bindir, log, tag, timeout_s=300, cleanup=False)
    out = str(tmp_path / "ansible.log")
    proc = start(fleet, controller.playbook_argv(playbook, inventory), controller.env(fleet, tmp_path / "r", callbacks=("ansible.builtin.default",)), out,
                 controller.repo)
    try:
        assert _ranks_started(log, 4), "the ranks did not start:\n%s" % tail(out)
        # everything but the ranks dies at once, with no chance to clean up (OOM killer, kill -9, a lost
        # controller): the module (mpirun's parent), mpirun and the Open MPI daemons on both hosts
        launchers = [pid for pid in _on_fleet(fleet, "mpirun") if "all_reduce_perf" in netns._cmdline(pid)]
        module = [_ppid(pid) for pid in launchers]
        daemons = _on_fleet(fleet, "orted")
        assert module and launchers and daemons, _survivors(fleet)
        for pid in module + launchers + daemons:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    time.sleep(1)
    left = _survivors(fleet)
    assert left, "nothing survived a SIGKILLed launcher: this test would not prove the cleanup step"
    cleanup = [{"name": "cleanup", "hosts": fleet.group, "gather_facts": False,
                "tasks": [{"aifabric.acceptance.cleanup": {"run_id": tag}, "register": "swept"},
                          {"ansible.builtin.copy": {"content": "{{ swept | to_json }}",
                                                    "dest": str(tmp_path) + "/swept-{{ inventory_hostname }}.json"},
                           "delegate_to": "localhost"}]}]
    path = tmp_path / "cleanup.yml"
    path.write_text(json.dumps(cleanup))
    out2 = str(tmp_path / "cleanup.log")
    proc2 = start(fleet, controller.playbook_argv(str(path), inventory), controller.env(fleet, tmp_path / "r2", callbacks=("ansible.builtin.default",)), out2,
                  controller.repo)
    assert finish(proc2, 120, out2) == 0, tail(out2)
    assert _wait_gone(fleet, 5) == []
    killed = 0
    for host in fleet.hosts:
        with open(str(tmp_path / ("swept-%s.json" % host.name))) as handle:
            swept = json.load(handle)
        killed += len(swept["killed"])
    assert killed >= len(left)


@pytest.mark.fleet(n=2)
def test_interrupted_module_stops_every_rank_on_every_host(fleet, controller, tmp_path):
    """SIGTERM to the module while mpirun runs (what Ansible's worker gets on Ctrl-C or a lost connection):
    the module stops mpirun first, then what is left of the run on its host; nothing survives anywhere."""
    bindir, log = _setup(fleet)
    tag = "t-" + os.urandom(8).hex()
    inventory = fleet.write_inventory(path=str(tmp_path / "inventory.ini"))
    playbook = _playbook(tmp_path, fleet, bindir, log, tag, timeout_s=300, cleanup=False)
    out = str(tmp_path / "ansible.log")
    proc = start(fleet, controller.playbook_argv(playbook, inventory), controller.env(
        fleet, tmp_path / "r", callbacks=("ansible.builtin.default",)), out, controller.repo)
    assert _ranks_started(log, 4), "the ranks did not start:\n%s" % tail(out)
    module = [_ppid(pid) for pid in _on_fleet(fleet, "mpirun") if "all_reduce_perf" in netns._cmdline(pid)]
    assert len(module) == 1, _survivors(fleet)
    os.kill(module[0], signal.SIGTERM)
    rc = finish(proc, 120, out)
    assert rc != 0 and "interrupted by signal 15" in tail(out), tail(out)
    assert _wait_gone(fleet, 5) == []
