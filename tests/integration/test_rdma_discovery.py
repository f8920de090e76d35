# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/rdma.yml on its DEFAULT paths (issue 13): env_probe discovers the devices, nothing is given.

Every netns host sees its own /sys (netns.Fleet(sysfs=...), laid over /sys in that host's sshd mount
namespace only): the /sys/class/infiniband of the real CX-4 host (test_env_probe.cx4_infiniband: written
from its ibstat and show_gids captures, plus the PCI ids its CA type MT4115 implies and the IPv4-mapped GIDs
the kernel adds once the RoCE netdev has an address, here the host's own; mlx5_0 is an ACTIVE 100 Gb/s RoCE
port, mlx5_1 an InfiniBand port that is DOWN) and a cpufreq tree under
/sys/devices/system/cpu/cpu*/ (governor powersave). No rdma_hcas, no rdma_state_root, no rdma_cpu_sysfs:
the probe finds mlx5_0 on every host, perftest_sweep reads its port rate from the same sysfs, the runners use
the default state root and the default cpufreq tree. The fake ib_write_bw (tests/integration/fake_perftest)
prints real perftest captures; a "degraded" node prints a real, slower capture in every pair it is in.

Every host also has its own /run (Fleet(private_run=True)), as separate machines do: the default state root
/run/aifabric-acceptance/perftest holds per-machine state (the governor hold file), which hosts sharing the
controller's /run would share (each would take the others' hold for its own and leave its governors set).

0. the harness: a host sees its own /sys/class/infiniband (or none), its own /sys/class/net and cpufreq tree, and
   its own /run; the controller's /sys, /sys/class and /run are unchanged. A fake tree that would need entries
   of a directory listed per network namespace, or anything outside sys/, is refused.
1. 5 hosts, mode all, node3 degraded: rc 0, the devices each host's probe found come from its own sysfs view
   (the GID each host used maps its own address), the sweep ran on them (every pair, on mlx5_0), every record
   has a host, no error and no env.task record (issue 13 saw "records have no host" and a spurious env.task
   error on this path), every host set and restored its own governors, nothing is left in any host's state
   root, and the verdicts of the whole fleet are exactly right: node3 fails (a node finding), every other host
   warns for its InfiniBand port that is down, in results.json and in the run summary (set_stats). The
   controller's own /sys is unchanged afterwards.
2. a mixed fleet with the confirmation pass: a host without RDMA device (the first host of the play) and a host
   whose ports are all down take no part, each with a verdict that says why; the one remaining pair is measured.
   Failed before the fix of the sweep tasks (now roles/rdma/tasks/sweep.yml): a run_once step of the sweep was skipped for every
   host when the first host took no part, and every testable host ended with an env.task error (rc 2).
3. 6 hosts, node2 killed and node5 silenced mid-sweep: rc 4, the survivors' pairs pass, the lost hosts' pairs
   are error edges, nobody else is blamed; node5's runner ends with its lease and restores its governors.
"""

from __future__ import annotations

import glob
import os
import re

import pytest

from ansible_collections.aifabric.acceptance.tests.integration import netns
from ansible_collections.aifabric.acceptance.tests.integration import test_rdma_sweep_faults as faults
from ansible_collections.aifabric.acceptance.tests.integration.test_rdma_fleet import (
    CHECK, PLAYBOOK, events, prepare, state_left)
from ansible_collections.aifabric.acceptance.tests.integration.test_ssh_fleet import (
    assert_accounts_for, assert_nothing_left, assert_valid_records, finish, load_report, records_of, schema_validator,
    ssh, start, tail)
from ansible_collections.aifabric.acceptance.tests.unit.plugins.module_utils import test_env_probe as tep

DEFAULT_ROOT = "/run/aifabric-acceptance/perftest"
CPU_SYSFS = "/sys/devices/system/cpu"
# every CPU of this machine gets a fake cpufreq tree: the governor module (default root) writes only fake files
CPUS = tuple(sorted(n for n in os.listdir(CPU_SYSFS) if re.match(r"cpu[0-9]+$", n))) if os.path.isdir(CPU_SYSFS) else ()
N_HOSTS = 5


def ipv4_gid(address):
    """The GID the kernel adds for an IPv4 address of a RoCE netdev: ::ffff:a.b.c.d, in sysfs notation."""
    a, b, c, d = (int(x) for x in address.split("."))
    return "0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x" % (a, b, c, d)


def cx4_host(host, root):
    """The sysfs a host sees: the real CX-4 host's /sys/class/infiniband with the host's address on its RoCE
    netdev, and a cpufreq tree per CPU."""
    tep.cx4_infiniband(root)
    for hca in ("mlx5_0", "mlx5_1"):
        tep.put(root, "/sys/class/infiniband/%s/device/vendor" % hca, "0x15b3\n")
        tep.put(root, "/sys/class/infiniband/%s/device/device" % hca, "0x1013\n")
    # the captured GID table predates an IPv4 address on ens11f0 (perftest could not route over RoCE there);
    # with one configured, the kernel adds that address as an IPv4-mapped GID, RoCE v1 then v2, at the next
    # free indices (as in the real capture show_gids/mlx5-bond-roce-ipv4-tabs.txt: indices 2 and 3)
    port = "/sys/class/infiniband/mlx5_0/ports/1"
    for index, kind in ((2, "IB/RoCE v1"), (3, "RoCE v2")):
        tep.put(root, "%s/gids/%d" % (port, index), ipv4_gid(host.ip) + "\n")
        tep.put(root, "%s/gid_attrs/types/%d" % (port, index), kind + "\n")
        tep.put(root, "%s/gid_attrs/ndev/%d" % (port, index), "ens11f0\n")
    fake_cpufreq(root)


def fake_cpufreq(root):
    """A cpufreq tree for every CPU (governor powersave, performance offered)."""
    for cpu in CPUS:
        tep.put(root, "%s/%s/cpufreq/scaling_governor" % (CPU_SYSFS, cpu), "powersave\n")
        tep.put(root, "%s/%s/cpufreq/scaling_available_governors" % (CPU_SYSFS, cpu), "performance powersave\n")


def assert_cpufreq_faked(fleet):
    """Before a playbook may set governors on the default path: every governor file a host sees is its fake one."""
    assert CPUS, "no %s/cpuN here" % CPU_SYSFS
    for host in fleet.hosts:
        for cpu in CPUS:
            path = "%s/%s/cpufreq/scaling_governor" % (CPU_SYSFS, cpu)
            assert os.path.samefile(host.path(path), os.path.join(host.sysfs_root, path.lstrip("/"))), (host, path)


def governors(host):
    values = set()
    for cpu in CPUS:
        with open(os.path.join(host.sysfs_root, CPU_SYSFS.lstrip("/"), cpu, "cpufreq", "scaling_governor")) as handle:
            values.add(handle.read().strip())
    return values


def sys_mounts():
    """The controller's mounts at or below /sys (mount point and source), to compare before and after."""
    with open("/proc/self/mountinfo") as handle:
        return sorted(tuple(line.split()[3:5]) for line in handle if line.split()[4].startswith(netns.SYSFS))


def default_paths_inventory(inventory):
    """Drop what prepare() gives every host: the device list, the state root and the cpufreq tree."""
    with open(inventory) as handle:
        text = handle.read()
    for var in ("rdma_hcas", "rdma_state_root", "rdma_cpu_sysfs"):
        text = re.sub(r" %s=\S+" % var, "", text)
    assert "rdma_hcas" not in text and "rdma_state_root" not in text and "rdma_cpu_sysfs" not in text, text
    with open(inventory, "w") as handle:
        handle.write(text)


def one_hca(host, root):
    """node1: cx4_host; the others: a cpufreq tree only (no /sys/class/infiniband)."""
    if host.name == "node1":
        cx4_host(host, root)
    else:
        fake_cpufreq(root)


@pytest.mark.fleet(n=2, sysfs=one_hca, private_run=True)
def test_each_host_sees_its_own_sysfs_and_run_the_controller_nothing(fleet):
    """The harness itself: what a host sees under /sys and /run is its own; the controller's stay as they were."""
    controller_sys = sys_mounts()
    controller_class = sorted(os.listdir("/sys/class"))
    node1, node2 = fleet.host("node1"), fleet.host("node2")
    marker = "/run/%s-private" % fleet.tag
    script = ("ls /sys/class; echo --; ls /sys/class/net; echo --; ls /sys/class/infiniband 2>&1; echo --; "
              "cat /sys/class/infiniband/mlx5_0/ports/1/gids/3 /sys/class/infiniband/mlx5_0/ports/1/rate 2>&1; "
              "echo --; cat /sys/devices/system/cpu/cpu0/cpufreq/scaling_governor; echo --; ls -A /run; "
              "echo --; touch %s && ls %s" % (marker, marker))
    assert_cpufreq_faked(fleet)
    seen = {}
    for host in (node1, node2):
        done = ssh(fleet, host, script)
        assert done.returncode == 0, done
        seen[host.name] = [part.split() for part in done.stdout.split("--\n")]
    try:
        assert not os.path.exists(marker), "a host wrote to the controller's /run"
        one, two = seen["node1"], seen["node2"]
        assert one[0] == sorted(controller_class + ["infiniband"]) and two[0] == controller_class
        assert one[1] == two[1] == ["eth0", "lo"]                       # each host's own network namespace
        assert one[2] == ["mlx5_0", "mlx5_1"] and "No such file or directory" in " ".join(two[2])
        assert one[3] == [ipv4_gid(node1.ip), "100", "Gb/sec", "(4X", "EDR)"], one[3]
        assert one[4] == two[4] == ["powersave"]
        assert one[5] == two[5] == ["lock", "sshd"]                     # a fresh /run each
        assert os.path.exists(node1.path(marker)) and os.path.exists(node2.path(marker))
    finally:
        if os.path.exists(marker) and os.path.isfile(marker):           # only if the private /run failed
            os.remove(marker)
    assert sys_mounts() == controller_sys and sorted(os.listdir("/sys/class")) == controller_class
    with open("/proc/self/mountinfo") as handle:
        assert fleet.dir not in handle.read()
    assert_nothing_left(fleet)


def test_sysfs_view_refuses_what_it_cannot_lay_safely(tmp_path):
    """Entries of a directory listed per network namespace, and anything outside sys/, are refused."""
    net = tmp_path / "a"
    tep.put(net, "/sys/class/net/eth9/operstate", "up\n")
    tep.put(net, "/sys/class/infiniband/mlx5_0/fw_ver", "12.28.1002\n")
    with pytest.raises(netns.FleetError, match="differs per network namespace"):
        netns._sysfs_mounts(str(net))
    other = tmp_path / "b"
    tep.put(other, "/etc/hostname", "x\n")
    with pytest.raises(netns.FleetError, match="holds sys/ and nothing else"):
        netns._sysfs_mounts(str(other))
    fine = tmp_path / "c"
    tep.put(fine, "/sys/class/infiniband/mlx5_0/fw_ver", "12.28.1002\n")
    mounts = netns._sysfs_mounts(str(fine))
    assert mounts[-1] == (str(fine / "sys" / "class"), "/sys/class")
    assert sorted(target for _source, target in mounts[:-1]) == sorted(
        str(fine / "sys" / "class" / name) for name in os.listdir("/sys/class"))
    assert all(source == "/sys/class/" + os.path.basename(target) for source, target in mounts[:-1])
    # a directory where /sys has a symlink (cpuN/cpufreq -> ../cpufreq/policyN on machines with cpufreq): the
    # directory holding it is replaced by its completed copy, the real symlinks copied as symlinks
    cpu = CPU_SYSFS + "/" + CPUS[0]
    links = [n for n in os.listdir(cpu) if os.path.islink(os.path.join(cpu, n))]
    if links:
        linked = tmp_path / "d"
        tep.put(linked, "%s/%s/fake" % (cpu, links[0]), "x\n")
        mounts = netns._sysfs_mounts(str(linked))
        copy = str(linked) + cpu
        assert mounts[-1] == (copy, cpu) and os.path.isdir(os.path.join(copy, links[0]))
        assert all(os.readlink(os.path.join(copy, n)) == os.readlink(os.path.join(cpu, n)) for n in links[1:])


@pytest.mark.fleet(n=N_HOSTS, sysfs=cx4_host, private_run=True)
def test_rdma_discovers_devices_and_sweeps_on_default_paths(fleet, controller, tmp_path):
    controller_sys = sys_mounts()
    controller_class = sorted(os.listdir("/sys/class"))
    validator = schema_validator(controller)
    report_dir = tmp_path / "reports"
    out = str(tmp_path / "ansible-playbook.log")
    run_id = "rdma-itest-" + os.urandom(12).hex()
    run_dirs = os.path.join(DEFAULT_ROOT, "*", run_id)     # <state root>/<host id>/<run id>
    assert ".." not in run_id
    inventory, extra, log = prepare(
        fleet, tmp_path, {"default": {"duration_s": 0.3}, "node3": {"degraded": True}},
        # the rounds' pairs are counted below: no confirmation pass (on by default; test_rdma_fleet runs it)
        extra_vars={"rdma_run_id": run_id, "rdma_confirm": False}, perftest={"poll_s": 1})
    default_paths_inventory(inventory)
    assert_cpufreq_faked(fleet)
    proc = start(fleet, controller.playbook_argv(PLAYBOOK, inventory, "-e", extra),
                 controller.env(fleet, report_dir), out, controller.repo)
    rc = finish(proc, 300, out)
    assert rc == 0, "ansible-playbook exit %d:\n%s" % (rc, tail(out))

    report = load_report(report_dir, out)[1]
    records = records_of(report)
    assert_valid_records(records, validator)
    names = sorted(h.name for h in fleet.hosts)
    assert [r for r in records if not r.get("host")] == []
    # discovery: every host's probe read its own sysfs view (the CX-4 host: one ACTIVE RoCE port, one IB port down)
    for name in names:
        inv = [r for r in records if r["check"] == "rdma.inventory" and r["host"] == name]
        assert len(inv) == 1 and inv[0]["status"] == "pass", inv
        assert inv[0]["facts"]["hcas"] == ["mlx5_0", "mlx5_1"] and inv[0]["metrics"]["active_port_count"] == 1
        ports = dict((r["target"], r) for r in records if r["check"] == "rdma.port" and r["host"] == name)
        assert sorted(ports) == ["mlx5_0/1", "mlx5_1/1"], ports
        assert ports["mlx5_0/1"]["facts"]["state"] == "ACTIVE" and ports["mlx5_1/1"]["facts"]["state"] == "DOWN"
    # no spurious error from the probe or from any task
    errors = [(r["host"], r["check"], r["reason"]) for r in records if r["status"] == "error"]
    assert errors == [], errors
    assert [r for r in records if r["check"] == "env.task"] == []

    # the sweep ran on the discovered device only, every pair of the 5 hosts
    clients = [r for r in records if r["check"] == CHECK]
    pairs = sorted(tuple(sorted((r["host"], r["peer"]))) for r in clients)
    assert pairs == [(a, b) for i, a in enumerate(names) for b in names[i + 1:]], pairs
    assert set(r["target"] for r in clients) == {"mlx5_0"}
    ips = dict((h.name, h.ip) for h in fleet.hosts)
    for rec in clients + [r for r in records if r["check"] == CHECK + ".server"]:
        # the port rate, link layer and GID each host used come from its own sysfs view: the GID maps its own address
        assert rec["facts"]["port_rate_gbit_s"] == 100 and rec["facts"]["link_layer"] == "Ethernet", rec["facts"]
        assert rec["facts"]["gid_choice"] == "RoCE v2 GID 3 (%s on ens11f0)" % ips[rec["host"]], rec["facts"]
        # every host set its own governors (its own cpufreq tree, its own hold file under its own /run)
        assert rec["facts"]["cpu_governor"] == "set to performance (was powersave)", rec["facts"]
    for rec in clients:
        if "node3" in (rec["host"], rec["peer"]):
            assert rec["metrics"]["bw_avg_gbit_s"] < 90, rec           # under 90 % of the 100 Gb/s port
        else:
            assert rec["status"] == "pass" and rec["metrics"]["bw_avg_gbit_s"] == 779.21, rec
    ran = set((e["host"], e["device"]) for e in events(log) if e["event"] == "finished")
    assert ran == set((name, "mlx5_0") for name in names), ran

    # the verdicts of the whole fleet: node3 fails (attribution names it), every other host warns for the one
    # thing wrong with it (its InfiniBand port mlx5_1/1 is down), in results.json and in the run summary
    mine = [f for f in report["findings"] if f.get("analysis") == "attribution"]
    assert [(f["kind"], f["hosts"], f["target"]) for f in mine] == [("node", ["node3"], "mlx5_0")], mine
    node_records = dict((r["host"], r["status"]) for r in records if r["check"] == CHECK + ".node")
    assert node_records == dict((name, "fail" if name == "node3" else "pass") for name in names), node_records
    expected = dict((name, "fail" if name == "node3" else "warn") for name in names)
    assert dict((h["host"], h["status"]) for h in report["summary"]["hosts"]) == expected, report["summary"]["hosts"]
    warned = sorted((r["host"], r["check"], r["target"]) for r in records if r["status"] == "warn")
    assert warned == [(name, "rdma.port", "mlx5_1/1") for name in names], warned
    assert_accounts_for(report, records, names, ["node3"])       # the set_stats summary (run_summary) agrees
    assert report["run"]["set_stats"]["_run"]["aifabric_hosts"] == expected

    for host in fleet.hosts:
        assert governors(host) == {"powersave"}, host.name
        state = host.path(DEFAULT_ROOT)       # this host's own /run
        assert os.path.isdir(state), "%s: the runners did not use the default state root" % host.name
        assert state_left(state) == [], host.name
        assert not glob.glob(os.path.join(state, "*", "governor.json")), host.name      # no holder left
    assert not glob.glob(run_dirs), "a host wrote to the controller's /run: %s" % glob.glob(run_dirs)
    assert_nothing_left(fleet)
    assert sys_mounts() == controller_sys
    assert sorted(os.listdir("/sys/class")) == controller_class and not os.path.exists("/sys/class/infiniband")
    with open("/proc/self/mountinfo") as handle:
        assert fleet.dir not in handle.read()


def mixed_hosts(host, root):
    """node1 (the first host of the play): no RDMA device at all (no /sys/class/infiniband); node4: the CX-4 host
    with its RoCE port down too (the kernel's words for a port with no link, as on its mlx5_1); the others:
    cx4_host."""
    if host.name == "node1":
        fake_cpufreq(root)
        return
    cx4_host(host, root)
    if host.name == "node4":
        tep.put(root, "/sys/class/infiniband/mlx5_0/ports/1/state", tep.KERNEL_STATE["Down"] + "\n")
        tep.put(root, "/sys/class/infiniband/mlx5_0/ports/1/phys_state", tep.KERNEL_PHYS["Disabled"] + "\n")


@pytest.mark.fleet(n=4, sysfs=mixed_hosts, private_run=True)
def test_rdma_discovery_leaves_out_hosts_without_an_active_port(fleet, controller, tmp_path):
    """node1 (no RDMA device) and node4 (every port down) take no part; node2-node3 is measured; the confirmation
    pass (run_summary on the records so far) finds nothing to confirm. Each host's verdict says why. The first
    host of the play taking no part used to fail the sweep on every other host (its run_once step was skipped)."""
    validator = schema_validator(controller)
    report_dir = tmp_path / "reports"
    out = str(tmp_path / "ansible-playbook.log")
    inventory, extra, log = prepare(fleet, tmp_path, {"default": {"duration_s": 0.3}},
                                    extra_vars={"rdma_confirm": True}, perftest={"poll_s": 1})
    default_paths_inventory(inventory)
    assert_cpufreq_faked(fleet)
    proc = start(fleet, controller.playbook_argv(PLAYBOOK, inventory, "-e", extra),
                 controller.env(fleet, report_dir), out, controller.repo)
    rc = finish(proc, 300, out)
    assert rc == 0, "ansible-playbook exit %d:\n%s" % (rc, tail(out))
    text = open(out).read()
    for name in ("node1", "node4"):
        assert "%s has no ACTIVE RDMA port: it takes no part in the rounds" % name in text, tail(out)
    assert "2 hosts, mode auto: 1 rounds x 1 tests, 1 pairs per test" in text, tail(out)

    report = load_report(report_dir, out)[1]
    records = records_of(report)
    assert_valid_records(records, validator)
    assert [r for r in records if not r.get("host")] == []
    assert [r for r in records if r["status"] == "error" or r["check"] == "env.task"] == []
    found = sorted((r["host"], r["check"], r["target"] or "", r["status"]) for r in records if r["check"].startswith("rdma."))
    assert found == [                                   # mode auto (all) pairs node2 (server) with node3 (client)
        ("node1", "rdma.inventory", "", "skip"),
        ("node1", "rdma.port_counters", "", "skip"), ("node1", "rdma.port_counters", "", "skip"),   # before, after
        ("node2", "rdma.ib_write_bw.node", "mlx5_0", "pass"),     # attribution judges a lone pair too
        ("node2", "rdma.ib_write_bw.server", "mlx5_0", "pass"),
        ("node2", "rdma.inventory", "", "pass"), ("node2", "rdma.port", "mlx5_0/1", "pass"),
        ("node2", "rdma.port", "mlx5_1/1", "warn"),
        ("node2", "rdma.port_counters", "", "pass"), ("node2", "rdma.port_counters", "mlx5_0/1", "pass"),
        ("node2", "rdma.port_counters", "mlx5_1/1", "pass"),
        ("node3", "rdma.ib_write_bw", "mlx5_0", "pass"), ("node3", "rdma.ib_write_bw.node", "mlx5_0", "pass"),
        ("node3", "rdma.inventory", "", "pass"), ("node3", "rdma.port", "mlx5_0/1", "pass"),
        ("node3", "rdma.port", "mlx5_1/1", "warn"),
        ("node3", "rdma.port_counters", "", "pass"), ("node3", "rdma.port_counters", "mlx5_0/1", "pass"),
        ("node3", "rdma.port_counters", "mlx5_1/1", "pass"),
        ("node4", "rdma.inventory", "", "pass"), ("node4", "rdma.port", "mlx5_0/1", "warn"),
        ("node4", "rdma.port", "mlx5_1/1", "warn"),
        # the counter window reads every host's ports, taking part or not (node4's are down: nothing grew)
        ("node4", "rdma.port_counters", "", "pass"), ("node4", "rdma.port_counters", "mlx5_0/1", "pass"),
        ("node4", "rdma.port_counters", "mlx5_1/1", "pass"),
    ], found
    counters = [r for r in records if r["check"] == "rdma.port_counters"]
    # node1 has no /sys/class/infiniband: one skip per phase, saying so; the others: the before read (the snapshot of
    # their two ports), then one judged record per port
    assert sorted((r["host"], r["params"]["phase"]) for r in counters if not r["target"]) == [
        ("node1", "after"), ("node1", "before"), ("node2", "before"), ("node3", "before"), ("node4", "before")]
    assert all(r["reason"] == "no RDMA device: /sys/class/infiniband is absent" for r in counters if r["host"] == "node1")
    assert all(r["metrics"]["ports_count"] == 2 for r in counters if r["host"] != "node1" and not r["target"])
    skipped = [r for r in records if r["host"] == "node1"][0]
    assert skipped["reason"] == "no RDMA device: /sys/class/infiniband is absent", skipped
    # a host left out says why: node1 skip (nothing to test), node4 warn (its ports are down), the measured pair
    # warns for its InfiniBand port that is down; no pairwise verdict is made from one pair
    expected = {"node1": "skip", "node2": "warn", "node3": "warn", "node4": "warn"}
    assert dict((h["host"], h["status"]) for h in report["summary"]["hosts"]) == expected, report["summary"]["hosts"]
    assert report["summary"]["failed_hosts"] == [] and report.get("findings") == [], report.get("findings")
    assert_accounts_for(report, records, sorted(expected), [])
    assert sorted(set(e["host"] for e in events(log))) == ["node2", "node3"]
    for host in fleet.hosts:
        assert governors(host) == {"powersave"}, host.name
    assert_nothing_left(fleet)


@pytest.mark.fleet(n=6, sysfs=cx4_host, private_run=True)
def test_rdma_default_paths_host_killed_and_host_silenced(fleet, controller, tmp_path):
    """Discovery, default state root and default cpufreq; once the sweep runs node2 dies (power loss) and node5
    goes silent (link down, its processes keep running). The play ends (rc 4), the survivors' pairs pass, the
    pairs with a lost host are error edges, nobody else is blamed; node5's runner stops by itself when its lease
    expires and restores node5's own governors; every host that still lives has an empty state root."""
    report_dir = tmp_path / "reports"
    out = str(tmp_path / "ansible-playbook.log")
    lease_s = 12
    inventory, extra, log = prepare(
        fleet, tmp_path, {"default": {"duration_s": 1.5, "stall_s": 8}},    # see test_rdma_silent_host
        # poll_timeout_s: the silenced host is declared unreachable after two bounded polls (not the bound's default)
        perftest={"connect_timeout_s": 8, "lease_s": lease_s, "poll_s": 1, "poll_timeout_s": 10})
    default_paths_inventory(inventory)
    assert_cpufreq_faked(fleet)
    proc = start(fleet, controller.playbook_argv(PLAYBOOK, inventory, "-e", extra),
                 controller.env(fleet, report_dir), out, controller.repo)
    faults.wait_for_event(proc, log, out, "finished")
    fleet.kill_host("node2")
    faults.silence(fleet, "node5")
    rc = finish(proc, 300, out)
    assert rc == 4, "ansible-playbook must end with rc 4 (hosts unreachable), got %d:\n%s" % (rc, tail(out))

    report = load_report(report_dir, out)[1]
    records = records_of(report)
    assert [r for r in records if not r.get("host")] == []
    lost = {"node2", "node5"}
    # every host discovered its device before the faults
    assert sorted(r["host"] for r in records if r["check"] == "rdma.inventory") == sorted(h.name for h in fleet.hosts)
    clients = [r for r in records if r["check"] == CHECK]
    assert [r for r in clients if r["target"] != "mlx5_0"] == []
    faults.assert_lost_hosts_only(report, records, clients, fleet, lost)
    # the silenced host's runner ends with its lease, and with it every perftest it started
    assert faults.wait_gone(fleet, lease_s + 30) == []
    for host in fleet.hosts:
        if host.name == "node2":        # a power loss restores nothing, and its /run is gone with it
            continue
        assert governors(host) == {"powersave"}, host.name
        state = host.path(DEFAULT_ROOT)
        assert state_left(state) == [], host.name
        assert not glob.glob(os.path.join(state, "*", "governor.json")), host.name
    assert_nothing_left(fleet)
