# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/rdma.yml over real SSH on network-namespace hosts, with a fake ib_write_bw.

The fake (tests/integration/fake_perftest/ib_write_bw) behaves like perftest where the
orchestration can tell: the server listens on its TCP port and waits, the client connects
(or fails with perftest's "Couldn't connect" wording while nobody listens), the pair stays
connected for the test's duration, and both print REAL captured perftest outputs. It is
put first on the hosts' PATH through rdma_environment. Each host gets a fake cpufreq tree
(rdma_cpu_sysfs) so the governor is set and restored for real, and its own state root.
The role's variables (roles/rdma): rdma_perftest gets the runners' options, rdma_pairings the pairings.

1. mode all on 4 hosts x 2 rails with forks=2: every pair and rail measured, both rails
   of a pair at once, no deadlock, governors restored, nothing left running.
2. mode star around node2, node2 killed while a client is connected to it: the play ends,
   the pairs with node2 are `error`, node2 is unreachable in the report, the survivors'
   governors are restored and nothing is left running.
3. mode random (one matching) + rdma_confirm on 6 hosts, node3 a "bad node" (every pair it is
   in prints a real, slower capture): the confirmation pass turns the unresolved low pair into a
   node finding for node3 in results.json.
"""

from __future__ import annotations

import glob
import json
import os
import re
import shutil
import time

import pytest

from ansible_collections.aifabric.acceptance.plugins.module_utils import statedir
from ansible_collections.aifabric.acceptance.tests.integration.test_ssh_fleet import (
    assert_nothing_left, assert_valid_records, finish, load_report, records_of, schema_validator, start, tail)

PLAYBOOK = "playbooks/rdma.yml"
HERE = os.path.dirname(os.path.abspath(__file__))
FAKE = os.path.join(HERE, "fake_perftest", "ib_write_bw")
FIXTURES = os.path.join(HERE, "..", "unit", "plugins", "module_utils", "parsers", "fixtures", "perftest")
CHECK = "rdma.ib_write_bw"


def state_left(state):
    """What a perftest state root holds beyond each host's own directory (``<host id>/``), its marker and its
    governor files: those stay, like the state root itself."""
    left = []
    for name in sorted(os.listdir(state)) if os.path.isdir(state) else []:
        path = os.path.join(state, name)
        if not os.path.isdir(path) or os.path.islink(path):
            left.append(name)
            continue
        left.extend(os.path.join(name, entry) for entry in sorted(os.listdir(path))
                    if entry != statedir.MARKER and not entry.startswith("governor"))
    return left


# the runners' options of every test here (rdma_perftest): the governor set for real, short process limits
PERFTEST = {"cpu_governor": "performance", "timeout_s": 60, "connect_timeout_s": 20, "collect_timeout_s": 30,
            "port": 18515}


def prepare(fleet, tmp_path, settings, extra_vars=None, host_vars=None, devices=("mlx5_0", "mlx5_1"), perftest=None):
    """Fake perftest on PATH, fake cpufreq per host, inventory; returns (inventory, -e JSON, log path).
    ``perftest``: rdma_perftest keys over PERFTEST."""
    bindir = os.path.join(fleet.dir, "bin")
    os.makedirs(bindir, exist_ok=True)
    shutil.copy(FAKE, os.path.join(bindir, "ib_write_bw"))
    shutil.copy(os.path.join(os.path.dirname(FAKE), "fake_perftest.py"), os.path.join(bindir, "fake_perftest.py"))
    os.chmod(os.path.join(bindir, "ib_write_bw"), 0o755)
    log = os.path.join(fleet.dir, "fake_perftest.log")
    conf = {"default": dict({"duration_s": 0.5, "log": log, "fixtures": os.path.abspath(FIXTURES)},
                            **settings.get("default", {}))}
    conf.update(dict((k, v) for k, v in settings.items() if k != "default"))
    with open(os.path.join(bindir, "fake_perftest.json"), "w") as handle:
        json.dump(conf, handle)
    per_host = {}
    for host in fleet.hosts:
        cpu = os.path.join(host.workdir, "cpu")
        for i in range(2):
            d = os.path.join(cpu, "cpu%d" % i, "cpufreq")
            os.makedirs(d, exist_ok=True)
            with open(os.path.join(d, "scaling_governor"), "w") as handle:
                handle.write("powersave\n")
            with open(os.path.join(d, "scaling_available_governors"), "w") as handle:
                handle.write("performance powersave\n")
        per_host[host.name] = {"rdma_cpu_sysfs": cpu, "rdma_state_root": os.path.join(host.workdir, "perftest"),
                               "rdma_hcas": json.dumps(list(devices)).replace(" ", "")}
        per_host[host.name].update((host_vars or {}).get(host.name, {}))
    inventory = fleet.write_inventory(path=str(tmp_path / "inventory.ini"), host_vars=per_host)
    variables = {
        "rdma_hosts": fleet.group,
        "rdma_environment": {"PATH": bindir + ":/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin"},
        "rdma_perftest": dict(PERFTEST, **(perftest or {})),
    }
    variables.update(extra_vars or {})
    return inventory, json.dumps(variables), log


def events(log):
    if not os.path.exists(log):
        return []
    with open(log) as handle:
        return [json.loads(line) for line in handle if line.strip()]


def governors(host):
    values = set()
    for i in range(2):
        with open(os.path.join(host.workdir, "cpu", "cpu%d" % i, "cpufreq", "scaling_governor")) as handle:
            values.add(handle.read().strip())
    return values


def assert_no_host_in_two_steps_at_once(evs, base_port, devices):
    """A host takes part in one test at a time (both rails of one step together): what a measurement needs.
    Per host and step (from the TCP port), the test runs from the client's connect (server: accept) to its
    end; the steps of one host must not overlap."""
    spans = {}
    for ev in evs:
        start = (ev["role"], ev["event"]) in (("client", "connected"), ("server", "accepted"))
        if not start and ev["event"] != "finished":
            continue
        slot = (ev["port"] - base_port) // devices
        span = spans.setdefault(ev["host"], {}).setdefault(slot, [None, None])
        if start:
            span[0] = ev["time"] if span[0] is None else min(span[0], ev["time"])
        else:
            span[1] = ev["time"] if span[1] is None else max(span[1], ev["time"])
    assert spans
    for host, slots in spans.items():
        ordered = sorted(slots.values())
        assert all(a is not None and b is not None for a, b in ordered), (host, slots)
        for (_s1, end), (start, _e2) in zip(ordered, ordered[1:]):
            assert end <= start, "%s ran two steps at once: one ended at %.3f, the next began at %.3f (%s)" % (
                host, end, start, slots)


def test_the_overlap_check_sees_a_host_in_two_tests_at_once():
    """The invariant itself (no fleet): two steps of one host back to back pass; a client that connects to its
    next server while that server's host is still in its previous test is caught."""
    def ev(host, role, event, port, t):
        return {"host": host, "role": role, "event": event, "port": port, "time": t}
    clean = [ev("a", "client", "connected", 18515, 0.0), ev("b", "server", "accepted", 18515, 0.0),
             ev("a", "client", "finished", 18515, 3.0), ev("b", "server", "finished", 18515, 3.0),
             ev("b", "client", "connected", 18516, 3.2), ev("c", "server", "accepted", 18516, 3.2),
             ev("b", "client", "finished", 18516, 6.2), ev("c", "server", "finished", 18516, 6.2)]
    assert_no_host_in_two_steps_at_once(clean, base_port=18515, devices=1)
    early = [e for e in clean if not (e["host"] == "b" and e["port"] == 18516 and e["event"] == "connected")]
    early.append(ev("b", "client", "connected", 18516, 2.0))          # b's next test began before 3.0
    with pytest.raises(AssertionError, match="b ran two steps at once"):
        assert_no_host_in_two_steps_at_once(early, base_port=18515, devices=1)


@pytest.mark.fleet(n=4)
def test_rdma_all_pairs_two_rails(fleet, controller, tmp_path):
    validator = schema_validator(controller)
    report_dir = tmp_path / "reports"
    out = str(tmp_path / "ansible-playbook.log")
    inventory, extra, log = prepare(fleet, tmp_path, {"default": {"duration_s": 0.5}})
    async_dir = os.path.join(fleet.dir, "async-jobs")       # every host's runner's job file (one directory: one machine)
    env = controller.env(fleet, report_dir, extra={"ANSIBLE_FORKS": "2", "ANSIBLE_ASYNC_DIR": async_dir})
    started = time.monotonic()
    # the counter window off (test_port_counters_fleet.py runs it on): neither of its tasks reads or judges a port;
    # -vvv: the wait says how it polls each runner
    proc = start(fleet, controller.playbook_argv(PLAYBOOK, inventory, "-e", extra, "-e", '{"rdma_counter_window": false}',
                                                 "-vvv"),
                 env, out, controller.repo)
    rc = finish(proc, 300, out)
    elapsed = time.monotonic() - started
    assert rc == 0, "ansible-playbook exit %d:\n%s" % (rc, tail(out))

    report = (load_report(report_dir, out))[1]
    records = records_of(report)
    assert_valid_records(records, validator)
    assert not [r for r in records if r["check"].startswith("rdma.port_counters")]
    log_text = open(out).read()
    for task in ("Read every RDMA port's counters before the rounds", "Judge the growth of every RDMA port's counters"):
        ran = log_text.split("TASK [aifabric.acceptance.rdma : " + task, 1)[1].split("TASK [", 1)[0]
        assert "ok:" not in ran and "changed:" not in ran and "skipping:" in ran, (task, ran)
    clients = [r for r in records if r["check"] == CHECK]
    servers = [r for r in records if r["check"] == CHECK + ".server"]
    # 4 hosts: 6 pairs in 3 rounds, 2 rails each
    assert len(clients) == 12 and len(servers) == 12, [(r["host"], r["peer"], r["check"]) for r in records]
    pairs = set((frozenset((r["host"], r["peer"])), r["target"]) for r in clients)
    assert len(pairs) == 12
    for rec in clients:
        assert rec["status"] == "pass", rec
        assert rec["metrics"]["bw_avg_gbit_s"] == 779.21          # the real capture, in Gbit/s
        assert rec["facts"]["cpu_governor"].startswith(("set to performance", "performance (already set"))
        assert rec["series"] and rec["series"][-1]["tool_unit"] == "Gb/sec"
    for rec in servers:
        assert rec["status"] == "pass" and rec["metrics"]["bw_avg_gbit_s"] == pytest.approx(159.756258)
    assert report.get("findings") == [], report.get("findings")
    # the progress counts pairs, not rails (it said "12/6 pairs done")
    assert "rdma ib_write_bw round 3/3: 6/6 pairs done, 0 failing" in open(out).read(), tail(out)
    # both rails of a pair ran at the same time, on distinct ports
    evs = events(log)
    by_client = {}
    for ev in evs:
        if ev["role"] == "client":
            by_client.setdefault((ev["host"], ev["address"]), []).append(ev)
    assert len(by_client) == 6
    for evlist in by_client.values():
        connected = [e for e in evlist if e["event"] == "connected"]
        finished = [e for e in evlist if e["event"] == "finished"]
        ports = sorted(e["port"] for e in connected)
        # each step has its own pair of ports (18515 + step x 2 devices): a client running ahead of its
        # server never reaches the server of an earlier step
        assert ports[1] == ports[0] + 1 and (ports[0] - 18515) % 2 == 0 and ports[0] < 18515 + 2 * 3, ports
        assert max(e["time"] for e in connected) < min(e["time"] for e in finished)
    assert_no_host_in_two_steps_at_once(evs, base_port=18515, devices=2)
    for host in fleet.hosts:
        assert governors(host) == {"powersave"}, host.name
        assert not glob.glob(os.path.join(host.workdir, "perftest", "*", "governor.json"))
        assert state_left(os.path.join(host.workdir, "perftest")) == [], host.name
    # each runner's status was polled by the light poll (the SSH connection pipelines: the module's status code, not
    # its payload), and the records above are what it returned
    for host in fleet.hosts:
        assert re.search(r"perftest_sweep: the runner's status polled by a light poll \(the connection pipelines\)"
                         r"[^\n]*%s" % re.escape(host.name), log_text) or \
            ("<%s> perftest_sweep: the runner's status polled by a light poll" % host.name) in log_text, host.name
    # the wait's last poll removed each runner's async job file (no async_status cleanup task of its own)
    assert os.path.isdir(async_dir) and os.listdir(async_dir) == [], os.listdir(async_dir)
    assert "Forget the finished async job" not in open(out).read()
    print("rdma.yml mode all, 4 hosts x 2 rails, forks 2: %.1f s" % elapsed)
    assert_nothing_left(fleet)


@pytest.mark.fleet(n=3)
def test_rdma_server_host_dies_mid_round(fleet, controller, tmp_path):
    validator = schema_validator(controller)
    report_dir = tmp_path / "reports"
    out = str(tmp_path / "ansible-playbook.log")
    victim = fleet.host("node2")
    inventory, extra, log = prepare(
        # stall_s: node1's client, connected to node2 when it dies, gives up 8 s after the test (the fake's
        # default is 30 s, what a tool left alone waits; not what is tested here)
        fleet, tmp_path, {"default": {"duration_s": 4, "stall_s": 8}},
        extra_vars={"rdma_pairings": {"mode": "star", "reference": "node2"}},
        # short polls and poll bound: the dead host is found by the polls (their defaults are not what is tested)
        perftest={"connect_timeout_s": 6, "poll_s": 1, "poll_timeout_s": 10})
    proc = start(fleet, controller.playbook_argv(PLAYBOOK, inventory, "-e", extra),
                 controller.env(fleet, report_dir), out, controller.repo)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if any(e["role"] == "client" and e["event"] == "connected" and e["address"] == victim.ip
               for e in events(log)):
            break
        assert proc.poll() is None, "the play ended before a client reached node2:\n%s" % tail(out)
        time.sleep(0.1)
    else:
        pytest.fail("no client connected to node2 in time:\n%s" % tail(out))
    fleet.kill_host("node2")
    rc = finish(proc, 240, out)
    assert rc == 4, "ansible-playbook must end with rc 4 (a host unreachable), got %d:\n%s" % (rc, tail(out))

    report = (load_report(report_dir, out))[1]
    records = records_of(report)
    assert_valid_records(records, validator)
    clients = [r for r in records if r["check"] == CHECK]
    # star around node2: node1 and node3 are its clients, both rails; every one of them failed
    assert sorted((r["host"], r["target"]) for r in clients) == [
        ("node1", "mlx5_0"), ("node1", "mlx5_1"), ("node3", "mlx5_0"), ("node3", "mlx5_1")], clients
    for rec in clients:
        assert rec["peer"] == "node2" and rec["status"] == "error", rec
    lost = [r for r in clients if "exchange" in (r["facts"].get("error_kind") or "")]
    refused = [r for r in clients if "connect" == r["facts"].get("error_kind")]
    assert lost and refused, [r["reason"] for r in clients]
    dead = [r for r in records if r["host"] == "node2"]
    assert dead and any(r["status"] == "error" and "unreachable" in (r["reason"] or "") for r in dead), dead
    for name in ("node1", "node3"):
        host = fleet.host(name)
        assert governors(host) == {"powersave"}, name
        assert not glob.glob(os.path.join(host.workdir, "perftest", "*", "governor.json")), name
    assert_nothing_left(fleet)


@pytest.mark.fleet(n=6)
def test_rdma_random_screening_then_confirmation_names_the_bad_node(fleet, controller, tmp_path):
    """One random matching finds one low pair; the confirmation pass pits both ends against
    known-good hosts and re-tests the pair: the report names node3 (a node finding), not a link."""
    report_dir = tmp_path / "reports"
    out = str(tmp_path / "ansible-playbook.log")
    inventory, extra, log = prepare(
        fleet, tmp_path, {"default": {"duration_s": 0.3}, "node3": {"degraded": True}},
        extra_vars={"rdma_pairings": {"mode": "random", "random_rounds": 1, "seed": 5}, "rdma_confirm": True},
        devices=("mlx5_0",))
    async_dir = os.path.join(fleet.dir, "async-jobs")
    proc = start(fleet, controller.playbook_argv(PLAYBOOK, inventory, "-e", extra),
                 controller.env(fleet, report_dir, extra={"ANSIBLE_ASYNC_DIR": async_dir}), out, controller.repo)
    rc = finish(proc, 400, out)
    assert rc == 0, "ansible-playbook exit %d:\n%s" % (rc, tail(out))
    assert os.listdir(async_dir) == [], os.listdir(async_dir)     # both sweeps' runners' job files removed
    report = load_report(report_dir, out)[1]
    records = records_of(report)
    clients = [r for r in records if r["check"] == CHECK]
    first_pass = 3                                   # one perfect matching of 6 hosts
    assert len(clients) > first_pass, "no confirmation pass ran:\n%s" % tail(out)
    with_node3 = [r for r in clients if "node3" in (r["host"], r["peer"])]
    assert len(with_node3) >= 3 and all(r["metrics"]["bw_avg_gbit_s"] < 100 for r in with_node3), with_node3
    mine = [f for f in report["findings"] if f.get("analysis") == "attribution"]
    assert [(f["kind"], f["hosts"], f["target"]) for f in mine] == [("node", ["node3"], "mlx5_0")], mine
    # every host of the matrix gets its verdict from attribution: node3 fails, everyone else passes
    node_records = [r for r in records if r["check"] == CHECK + ".node" and r["status"] != "pass"]
    assert [(r["host"], r["status"]) for r in node_records] == [("node3", "fail")]
    assert "node is the common factor" in node_records[0]["reason"]
    assert report["summary"]["failed_hosts"] == ["node3"]
    assert report["summary"]["hosts_by_status"]["pass"] == len(fleet.hosts) - 1
    assert events(log)
    assert_nothing_left(fleet)


@pytest.mark.fleet(n=2)
def test_rdma_check_mode_starts_nothing(fleet, controller, tmp_path):
    report_dir = tmp_path / "reports"
    out = str(tmp_path / "ansible-playbook.log")
    inventory, extra, log = prepare(fleet, tmp_path, {})
    proc = start(fleet, controller.playbook_argv(PLAYBOOK, inventory, "-e", extra, "--check"),
                 controller.env(fleet, report_dir), out, controller.repo)
    rc = finish(proc, 200, out)
    assert rc == 0, "ansible-playbook --check exit %d:\n%s" % (rc, tail(out))
    assert events(log) == []                                      # no perftest process ran
    for host in fleet.hosts:
        assert governors(host) == {"powersave"}
        assert not os.path.exists(os.path.join(host.workdir, "perftest")), os.listdir(host.workdir)
    assert_nothing_left(fleet)
