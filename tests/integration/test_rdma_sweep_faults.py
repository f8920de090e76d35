# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/rdma.yml at fleet scale (issue 13): one runner per host, faults, interrupts, default paths.

1. mode all on 6 hosts; once the sweep runs, node2 dies (power loss: link down, every process killed) and
   node5 goes silent (link down, its processes keep running). The play ends (rc 4, both unreachable), prints
   one progress line per round, every pair of the survivors passes, every pair with a lost host is an
   ``error`` edge, attribution blames nobody else, and node5's runner stops by itself when its lease
   expires (nothing left running, state removed, governors restored).
2. the DEFAULT state root (/run/aifabric-acceptance/perftest) and the DEFAULT cpufreq tree (no
   rdma_state_root, no rdma_cpu_sysfs), ansible-playbook interrupted with SIGINT mid-sweep: every runner
   stops within its lease, and the run leaves nothing behind on any host.

The device list is still given here (rdma_hcas): these hosts see the controller's /sys, which has no
/sys/class/infiniband to discover. test_rdma_discovery.py gives each host its own /sys/class/infiniband
(netns.Fleet(sysfs=...)) and runs the same faults on the default paths with device discovery.
"""

from __future__ import annotations

import glob
import os
import re
import signal
import subprocess
import time

import pytest

from ansible_collections.aifabric.acceptance.tests.integration import netns
from ansible_collections.aifabric.acceptance.tests.integration.test_rdma_fleet import (
    CHECK, PLAYBOOK, events, governors, prepare, state_left)
from ansible_collections.aifabric.acceptance.tests.integration.test_ssh_fleet import (
    assert_nothing_left, assert_valid_records, finish, load_report, records_of, schema_validator, start, tail)

DEFAULT_ROOT = "/run/aifabric-acceptance/perftest"


def sweep_processes(fleet):
    """Processes of the sweep on the fleet's hosts (runners, perftest stand-ins, async wrappers); sshd aside."""
    found = []
    for pid in netns.procs_in_netns([h.ns_id for h in fleet.hosts]):
        try:
            with open("/proc/%d/cmdline" % pid, "rb") as handle:
                cmd = handle.read().replace(b"\0", b" ").decode("utf-8", "replace")
        except OSError:
            continue
        if "perftest_sweep" in cmd or "async_wrapper" in cmd or "ib_write_bw" in cmd or "fake_perftest" in cmd:
            found.append("%d %s" % (pid, cmd[:160]))
    return found


def wait_gone(fleet, limit_s):
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        left = sweep_processes(fleet)
        if not left:
            return []
        time.sleep(0.5)
    return sweep_processes(fleet)


def wait_for_event(proc, log, out, event, limit_s=120):
    """Wait until the fake perftest logged ``event`` (the sweep runs); fail if the play ends first."""
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline:
        if any(e["event"] == event for e in events(log)):
            return
        assert proc.poll() is None, "the play ended before the sweep ran:\n%s" % tail(out)
        time.sleep(0.1)
    pytest.fail("the sweep never ran:\n%s" % tail(out))


def assert_lost_hosts_only(report, records, clients, fleet, lost):
    """Every pair of the survivors passes; every pair with a lost host is an edge attribution sees (an error on
    at least 4 of them); nobody but the lost hosts is blamed or failed; every survivor's node verdict passes."""
    survivors = sorted(h.name for h in fleet.hosts if h.name not in lost)
    by_pair = {}
    for rec in clients:
        by_pair.setdefault(frozenset((rec["host"], rec["peer"])), []).append(rec)
    for i, a in enumerate(survivors):
        for b in survivors[i + 1:]:
            recs = by_pair.get(frozenset((a, b)))
            assert recs and all(r["status"] == "pass" for r in recs), (a, b, recs)
    errors = 0
    for a in survivors:
        for b in lost:
            recs = by_pair.get(frozenset((a, b)))
            assert recs, "no record for the pair %s-%s: attribution cannot see it" % (a, b)
            errors += sum(1 for r in recs if r["status"] == "error")
    assert errors >= 4, [r for r in clients if r["status"] == "error"]
    blamed = set()
    for finding in report.get("findings") or []:
        if finding.get("analysis") == "attribution" and finding["kind"] == "node":
            blamed.update(finding["hosts"])
    assert blamed <= lost, report.get("findings")
    assert set(report["summary"]["failed_hosts"]) <= lost, report["summary"]
    for name in survivors:
        node = [r for r in records if r["check"] == CHECK + ".node" and r["host"] == name]
        assert node and node[0]["status"] == "pass", (name, node)


def silence(fleet, name):
    """The host's link goes down; its processes keep running (a hung NIC, a cut cable)."""
    host = fleet.host(name)
    subprocess.run([fleet.tools["ip"], "link", "set", host.veth, "down"], check=True, timeout=15)


@pytest.mark.fleet(n=6)
def test_rdma_sweep_host_killed_and_host_silenced(fleet, controller, tmp_path):
    validator = schema_validator(controller)
    report_dir = tmp_path / "reports"
    out = str(tmp_path / "ansible-playbook.log")
    lease_s = 12
    inventory, extra, log = prepare(
        fleet, tmp_path, {"default": {"duration_s": 1.5, "stall_s": 8}},    # see test_rdma_silent_host
        # poll_timeout_s: the silenced host is declared unreachable after two bounded polls (the bound's default,
        # poll_s + 20 s, is not what this test is about)
        perftest={"connect_timeout_s": 8, "lease_s": lease_s, "poll_s": 1, "poll_timeout_s": 10}, devices=("mlx5_0",))
    started = time.monotonic()
    proc = start(fleet, controller.playbook_argv(PLAYBOOK, inventory, "-e", extra),
                 controller.env(fleet, report_dir), out, controller.repo)
    wait_for_event(proc, log, out, "finished")
    fleet.kill_host("node2")
    silence(fleet, "node5")
    rc = finish(proc, 300, out)
    elapsed = time.monotonic() - started
    assert rc == 4, "ansible-playbook must end with rc 4 (hosts unreachable), got %d:\n%s" % (rc, tail(out))
    text = open(out).read()
    lines = re.findall(r"^rdma ib_write_bw round (\d+)/5: \d+/15 pairs done, \d+ failing", text, flags=re.M)
    assert sorted(int(n) for n in lines) == [1, 2, 3, 4, 5], text[-3000:]

    report = load_report(report_dir, out)[1]
    records = records_of(report)
    assert_valid_records(records, validator)
    clients = [r for r in records if r["check"] == CHECK]
    lost = {"node2", "node5"}
    assert_lost_hosts_only(report, records, clients, fleet, lost)
    # the silenced host's runner stops by itself once its lease expires, and with it every perftest it started
    # (they are its own children: they go with it): well before the tools' own 60 s timeout
    assert wait_gone(fleet, lease_s + 30) == []
    for host in fleet.hosts:
        if host.name != "node2":        # a power loss restores nothing
            assert governors(host) == {"powersave"}, host.name
            assert state_left(os.path.join(host.workdir, "perftest")) == [], host.name
    print("rdma sweep, 6 hosts, one killed and one silenced: %.1f s" % elapsed)
    assert_nothing_left(fleet)


@pytest.mark.fleet(n=4)
def test_rdma_sweep_interrupted_on_default_paths_leaves_nothing(fleet, controller, tmp_path):
    report_dir = tmp_path / "reports"
    out = str(tmp_path / "ansible-playbook.log")
    lease_s = 10
    run_id = "rdma-itest-" + os.urandom(12).hex()
    run_dirs = os.path.join(DEFAULT_ROOT, "*", run_id)     # <state root>/<host id>/<run id>, one per host
    assert ".." not in run_id
    inventory, extra, log = prepare(
        fleet, tmp_path, {"default": {"duration_s": 3}},
        perftest={"lease_s": lease_s, "poll_s": 1}, extra_vars={"rdma_run_id": run_id},
        devices=("mlx5_0",))
    # default state root and default cpufreq tree: drop the per-host overrides
    with open(inventory) as handle:
        text = handle.read()
    text = re.sub(r" rdma_cpu_sysfs=\S+", "", re.sub(r" rdma_state_root=\S+", "", text))
    with open(inventory, "w") as handle:
        handle.write(text)
    proc = start(fleet, controller.playbook_argv(PLAYBOOK, inventory, "-e", extra),
                 controller.env(fleet, report_dir), out, controller.repo)
    wait_for_event(proc, log, out, "connected")
    assert glob.glob(run_dirs), "the runners do not use the default state root"
    os.killpg(proc.pid, signal.SIGINT)                  # Ctrl-C
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    left = wait_gone(fleet, lease_s + 20)
    assert left == [], left
    assert not glob.glob(run_dirs), glob.glob(run_dirs)
    assert_nothing_left(fleet)
