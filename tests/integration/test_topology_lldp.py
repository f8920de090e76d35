# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The probe role learns the fabric topology from REAL lldpd over SSH (issue 25 item 2).

Three SSH hosts of the network-namespace fleet (each its own /run, so each its own lldpd socket) and one more
network namespace made here, a "switch" named leaf-<random> (its own UTS namespace), joined by veth pairs:
node1 rail0 - swp1, node1 rail1 - swp2, node2 rail0 - swp3; node3 has no rail. lldpd 1.0.x runs in the switch
(port IDs as interface names, as switches running lldpd send them) and, started over SSH, on every host. The
probe role then runs over SSH with:

- probe_topology_file (controller): node1 rail0 on the leaf's swp1 (right), node2 rail0 on the leaf's swp3 (right);
- probe_topology over it: node2 rail0 on swp9 (wrong: it wins, whole, so node2 is a miscabling);
- probe_ibnetdiscover_file: the real 2009 capture of tests/unit/fixtures/topology, whose CAs are `node1 HCA-1` ...
  `node24 HCA-1` - read once on the controller for the play's hosts.

Asserted: node1's net.topology record names the real neighbour (the leaf, swp1 and swp2, source lldp) and passes;
node2 warns with the mismatch (declared swp9, observed swp3); node3 (lldpd, no neighbour, nothing declared) is a
skip; each host also has the ibnetdiscover record (HCA-1 on the Infiniscale-III switch's port 1, 2, 3).
"""

from __future__ import annotations

import json
import os
import secrets
import shutil
import subprocess
import tempfile
import time

import pytest

from ansible_collections.aifabric.acceptance.tests.integration import netns
from ansible_collections.aifabric.acceptance.tests.integration.test_ssh_fleet import (
    finish, load_report, records_of, ssh, start, tail)

LLDPD = netns.find_tool("lldpd")
LLDPCTL = netns.find_tool("lldpctl")
IN_CI = bool(os.environ.get("CI"))          # CI installs lldpd (.ci/run): there a missing lldpd is a failure
HERE = os.path.dirname(os.path.abspath(__file__))
OMPI = os.path.join(HERE, os.pardir, "unit", "fixtures", "topology", "ibnetdiscover-ompi-users-2009-infiniscale-iii-hca-1.txt")
PLAYBOOK_TIMEOUT_S = 600
NEIGHBOUR_WAIT_S = 45
CMD_TIMEOUT_S = 15
RAILS = (("node1", "rail0", "swp1"), ("node1", "rail1", "swp2"), ("node2", "rail0", "swp3"))

if not (LLDPD and LLDPCTL) and IN_CI:
    raise RuntimeError("lldpd/lldpctl missing in CI (.ci/run installs the lldpd package)")
pytestmark = pytest.mark.skipif(not (LLDPD and LLDPCTL),
                                reason="lldpd is not installed (apt-get install -y lldpd; CI installs it)")

PLAY = """\
- name: The probe role with the fabric topology
  hosts: gpu_nodes
  gather_facts: false
  roles:
    - role: aifabric.acceptance.probe
      vars:
        probe_options: {groups: [env], timeout_s: 30}
"""


def _run(argv, timeout=CMD_TIMEOUT_S):
    proc = subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout, check=False)
    assert proc.returncode == 0, (argv, proc.stdout, proc.stderr)
    return proc


class Switch(object):
    """A network namespace running lldpd as a switch named ``leaf-<hex>``, cabled to the fleet's hosts."""

    def __init__(self, fleet, workdir):
        self.fleet = fleet
        self.ns = "tpsw" + secrets.token_hex(4)
        self.name = "leaf-" + secrets.token_hex(3)
        self.workdir = workdir
        # lldpd's own lldpcli (run at its start to read the configuration, as lldpd's user) must reach the control
        # socket: a directory others may enter, not pytest's private tmp_path; until lldpcli has run, lldpd sends nothing
        self.sockdir = tempfile.mkdtemp(prefix="tpsw-")
        os.chmod(self.sockdir, 0o755)
        self.pids = []

    def up(self):
        ip = netns.find_tool("ip")
        _run([ip, "netns", "add", self.ns])
        for name, rail, port in RAILS:
            host = self.fleet.host(name)
            _run([ip, "link", "add", rail, "netns", host.ns, "type", "veth", "peer", "name", port, "netns", self.ns])
            _run([ip, "-n", host.ns, "link", "set", rail, "up"])
            _run([ip, "-n", self.ns, "link", "set", port, "up"])
        config = os.path.join(self.sockdir, "switch-lldpd.conf")
        with open(config, "w") as handle:
            handle.write("configure lldp portidsubtype ifname\nconfigure lldp tx-interval 1\n")
        log = open(os.path.join(self.workdir, "switch-lldpd.log"), "wb")
        try:
            proc = subprocess.Popen(
                # its own UTS and mount namespaces, with a /run of its own (a tmpfs): lldpd's privilege-separation
                # chroot /run/lldpd and its pid file are made there, never in the machine's /run
                [ip, "netns", "exec", self.ns, netns.find_tool("unshare"), "--uts", "--mount", "--propagation",
                 "private", "--", "sh", "-c",
                 'mount -t tmpfs -o mode=0755 aif-run /run && mkdir -p /run/lldpd && hostname "$1" && shift && exec "$@"',
                 "sh", self.name,
                 LLDPD, "-d", "-u", os.path.join(self.sockdir, "switch.sock"), "-O", config,
                 "-I", ",".join(port for _n, _r, port in RAILS)],
                stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT)
        finally:
            log.close()
        self.proc = self.fleet.track(proc)
        self.pids.append(proc.pid)

    def down(self):
        netns.kill_pids(self.pids)
        subprocess.run([netns.find_tool("ip"), "netns", "del", self.ns], capture_output=True, timeout=CMD_TIMEOUT_S,
                       check=False)
        shutil.rmtree(self.sockdir, ignore_errors=True)


def start_host_lldpd(fleet, host, rails):
    """lldpd on a host, over SSH (in its network, UTS and mount namespaces: its own /run/lldpd.socket); its PID."""
    interfaces = ",".join(rails) or "lo"
    done = ssh(fleet, host, "mkdir -p /run/lldpd && (setsid %s -d -O /dev/null -I %s > %s 2>&1 < /dev/null & echo $!)"
               % (LLDPD, interfaces, os.path.join(host.workdir, "lldpd.log")))
    assert done.returncode == 0, done
    return int(done.stdout.strip().splitlines()[-1])


def wait_neighbours(fleet, switch):
    """Until lldpctl on node1 and node2 shows the switch on every rail (lldpd's keyvalue output)."""
    deadline = time.monotonic() + NEIGHBOUR_WAIT_S
    want = dict(((name, rail), port) for name, rail, port in RAILS)
    seen = {}
    while time.monotonic() < deadline:
        for name in ("node1", "node2"):
            out = ssh(fleet, fleet.host(name), "%s -f keyvalue" % LLDPCTL).stdout
            values = dict(line.split("=", 1) for line in out.splitlines() if "=" in line)
            for (host, rail), port in want.items():
                if host == name and values.get("lldp.%s.chassis.name" % rail) == switch.name:
                    seen[(host, rail)] = values.get("lldp.%s.port.ifname" % rail)
        if seen == want:
            return
        time.sleep(1)
    logs = dict((h.name, ssh(fleet, h, "tail -5 %s; %s" % (os.path.join(h.workdir, "lldpd.log"), LLDPCTL)).stdout)
                for h in fleet.hosts)
    pytest.fail("LLDP neighbours not seen in %ss: %r (want %r); hosts: %r; switch: %s"
                % (NEIGHBOUR_WAIT_S, seen, want, logs, tail(os.path.join(switch.workdir, "switch-lldpd.log"), 8)))


@pytest.mark.fleet(n=3, private_run=True)
def test_probe_role_names_the_real_lldp_neighbour(fleet, controller, tmp_path):
    switch = Switch(fleet, str(tmp_path))
    host_pids = []
    try:
        switch.up()
        for host in fleet.hosts:
            host_pids.append(start_host_lldpd(fleet, host, [r for n, r, _p in RAILS if n == host.name]))
        wait_neighbours(fleet, switch)

        declared_file = tmp_path / "topology.yml"
        declared_file.write_text("node1:\n  rail0: {switch: %s, switch_port: swp1}\n"
                                 "node2:\n  rail0: {switch: %s, switch_port: swp3}\n" % (switch.name, switch.name))
        extra = tmp_path / "vars.json"
        extra.write_text(json.dumps({
            "probe_topology_file": str(declared_file), "probe_ibnetdiscover_file": os.path.abspath(OMPI),
            "probe_topology": {"node2": {"rail0": {"switch": switch.name, "switch_port": "swp9"}}}}))
        playbook = tmp_path / "topology.yml.play.yml"
        playbook.write_text(PLAY)
        report_dir = tmp_path / "reports"
        log = str(tmp_path / "ansible-playbook.log")
        argv = [controller.ansible_playbook, "-i", fleet.inventory, str(playbook), "-e", "@%s" % extra]
        proc = start(fleet, argv, controller.env(fleet, report_dir), log, controller.repo)
        rc = finish(proc, PLAYBOOK_TIMEOUT_S, log)
        assert rc == 0, "ansible-playbook exit %d:\n%s" % (rc, tail(log))
        _run_dir, report = load_report(report_dir, log)
    finally:
        netns.kill_pids(host_pids)
        switch.down()

    topo = [r for r in records_of(report) if r["check"] == "net.topology"]
    lldp = dict((r["host"], r) for r in topo if r["params"].get("source") != "ibnetdiscover")
    ib = dict((r["host"], r) for r in topo if r["params"].get("source") == "ibnetdiscover")
    assert sorted(lldp) == sorted(ib) == ["node1", "node2", "node3"], topo

    node1 = lldp["node1"]
    assert (node1["status"], node1["reason"]) == ("pass", None), node1
    ports = node1["facts"]["ports"]
    assert sorted(ports) == ["rail0", "rail1"]
    for rail, port in (("rail0", "swp1"), ("rail1", "swp2")):
        assert ports[rail]["switch"] == switch.name and ports[rail]["switch_port"] == port, ports
        assert ports[rail]["source"] == "lldp" and ports[rail]["netdev"] == rail and ports[rail]["chassis_id"]

    node2 = lldp["node2"]
    assert node2["status"] == "warn", node2
    assert node2["facts"]["mismatches"] == [{"port": "rail0", "declared": {"switch": switch.name, "switch_port": "swp9"},
                                             "observed": {"switch": switch.name, "switch_port": "swp3"}}]
    assert node2["reason"] == "rail0 is cabled to %s port swp3, declared %s port swp9" % (switch.name, switch.name)

    node3 = lldp["node3"]
    assert node3["status"] == "skip", node3
    assert node3["reason"] == "no topology known: lldpctl saw no LLDP neighbour and nothing declared for this host"

    for index, name in enumerate(("node1", "node2", "node3"), 1):
        assert ib[name]["status"] == "pass", ib[name]
        assert ib[name]["facts"]["ports"] == {"HCA-1": {
            "switch": "MT47396 Infiniscale-III Mellanox Technologies", "switch_port": str(index),
            "source": "ibnetdiscover", "netdev": None, "chassis_id": "S-000b8cffff002347"}}
