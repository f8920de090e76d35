# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The port counter window's ``ethtool -S`` path end to end, on a REAL network interface: the port_counters module
runs over real SSH on a network-namespace host (tests/integration/playbooks/port_counters_window.yml), reads the
real ``ethtool -S`` of a veth this test creates in that host's namespace, the controller sends real traffic into it
between the two readings, and the after record carries the veth's real counters and their growth.

The host sees a test-made /sys/class/infiniband (netns.Fleet(sysfs=...), in its sshd mount namespace only): one
RoCE port ``rxe0/1`` whose network interface (``device/net/<name>``) is the veth - the way a real mlx5 or rxe
device names its netdev. Everything the test creates (the veth pair, the sender's namespace) carries this run's
random suffix (prefix ``aftx``: no fleet's tag, ``aft`` and hex digits) and is deleted on every path; nothing is aimed
at a real interface of the machine.

What veth's ``ethtool -S`` prints (fixtures/port_counters/ethtool-6.1-veth-S-*.txt, captured on this machine):
``peer_ifindex`` and per-queue XDP/NAPI counters. ``rx_queue_0_xdp_packets`` counts what reaches the receiving veth
through its NAPI path, which veth takes when GRO is on at the receiver and the sender does not segment (TSO and GSO
off on the sender): the test sets both on its own veths.
"""

from __future__ import annotations

import json
import os
import secrets
import sys
import time

import pytest

from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import port_counters as parser
from ansible_collections.aifabric.acceptance.tests.integration import netns
from ansible_collections.aifabric.acceptance.tests.integration.test_ssh_fleet import (
    assert_valid_records, finish, load_report, records_of, schema_validator, start, tail)
from ansible_collections.aifabric.acceptance.tests.unit.helpers import parser_fixture, read
from ansible_collections.aifabric.acceptance.tests.unit.plugins.module_utils import test_env_probe as tep
from ansible_collections.aifabric.acceptance.tests.unit.plugins.module_utils import test_port_counters as tpc

PLAYBOOK = os.path.join("tests", "integration", "playbooks", "port_counters_window.yml")
SUFFIX = secrets.token_hex(3)
RX = "aftx%sr" % SUFFIX          # the host's end (its RDMA port's netdev): 11 characters, within IFNAMSIZ
TX = "aftx%st" % SUFFIX          # the sender's end, in SENDER
SENDER = "aftx%ss" % SUFFIX      # the sender's network namespace
RX_ADDR, TX_ADDR = "10.214.250.1", "10.214.250.2"    # inside the two namespaces only: no route to anything else
PACKETS, PAYLOAD = 500, 1000
PORT = "rxe0/1"
BEFORE = read(parser_fixture("port_counters", "ethtool-6.1-veth-S-before.txt"))
CMD_TIMEOUT_S = 15

pytestmark = pytest.mark.skipif(not netns.find_tool("ethtool"), reason="ethtool is not installed (bindep.txt)")


def roce_port(host, root):
    """The sysfs the host sees: rxe0 port 1, Ethernet link layer, ACTIVE, real healthy counter values, its netdev
    the test's veth (the directory device/net/<RX>, as the kernel lists a device's interfaces)."""
    tpc.sysfs(root, {PORT: {"counters": tpc.healthy(), "hw_counters": {"out_of_buffer": "0"}}})
    base = "/sys/class/infiniband/rxe0"
    tep.put(root, base + "/ports/1/link_layer", "Ethernet\n")
    tep.put(root, base + "/ports/1/state", tep.KERNEL_STATE["Active"] + "\n")
    os.makedirs(os.path.join(root, base.lstrip("/"), "device", "net", RX))


def ip(*args, check=True):
    return netns._run([netns.find_tool("ip")] + list(args), timeout=CMD_TIMEOUT_S, check=check)


def in_netns(ns, *argv):
    return netns._run([netns.find_tool("ip"), "netns", "exec", ns] + list(argv), timeout=CMD_TIMEOUT_S)


def make_veth(host):
    """The veth pair: RX in the host's namespace, TX in SENDER (made here); GRO on RX, no segmentation on TX."""
    ip("netns", "add", SENDER)
    ip("-n", host.ns, "link", "add", RX, "type", "veth", "peer", "name", TX, "netns", SENDER)
    ip("-n", host.ns, "addr", "add", RX_ADDR + "/30", "dev", RX)
    ip("-n", SENDER, "addr", "add", TX_ADDR + "/30", "dev", TX)
    ip("-n", host.ns, "link", "set", RX, "up")
    ip("-n", SENDER, "link", "set", TX, "up")
    ethtool = netns.find_tool("ethtool")
    in_netns(host.ns, ethtool, "-K", RX, "gro", "on")
    in_netns(SENDER, ethtool, "-K", TX, "tso", "off", "gso", "off")
    return json.loads(ip("-n", SENDER, "-j", "link", "show", TX).stdout)[0]["ifindex"]


def remove_veth(host):
    """Delete SENDER (its end of the pair goes with it, and the host's end with its peer); say what is left."""
    if SENDER in netns._netns_names():
        ip("netns", "del", SENDER, check=False)
    if host.ns in netns._netns_names() and ip("-n", host.ns, "link", "show", RX, check=False).returncode == 0:
        ip("-n", host.ns, "link", "del", RX, check=False)
    left = [SENDER] if SENDER in netns._netns_names() else []
    if host.ns in netns._netns_names() and ip("-n", host.ns, "link", "show", RX, check=False).returncode == 0:
        left.append(RX)
    return left


def traffic_argv():
    """What the stage runs on the controller: PACKETS UDP datagrams from SENDER to the host's veth."""
    script = ("import socket\nsock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)\n"
              "for _ in range(%d):\n    sock.sendto(b'x' * %d, (%r, 9))\n" % (PACKETS, PAYLOAD, RX_ADDR))
    return ["timeout", "30", netns.find_tool("ip"), "netns", "exec", SENDER, sys.executable, "-I", "-c", script]


@pytest.mark.fleet(n=1, sysfs=roce_port)
def test_the_module_reads_a_real_veths_ethtool_statistics_and_their_growth(fleet, controller, tmp_path):
    host = fleet.host("node1")
    report_dir = tmp_path / "reports"
    out = str(tmp_path / "ansible-playbook.log")
    try:
        peer_ifindex = make_veth(host)
        extra = json.dumps({"aft_traffic_argv": traffic_argv()})
        started = time.monotonic()
        proc = start(fleet, controller.playbook_argv(PLAYBOOK, fleet.inventory, "-e", extra),
                     controller.env(fleet, report_dir), out, controller.repo)
        rc = finish(proc, 180, out)
        elapsed = time.monotonic() - started
        assert rc == 0, "ansible-playbook exit %d:\n%s" % (rc, tail(out))
    finally:
        left = remove_veth(host)
    assert left == [], "left behind: %s" % left

    records = records_of(load_report(report_dir, out)[1])
    assert_valid_records(records, schema_validator(controller))
    window = [r for r in records if r["check"] == "rdma.port_counters"]
    (before,) = [r for r in window if r["params"]["phase"] == "before"]
    (after,) = [r for r in window if r["params"]["phase"] == "after"]
    read_before = before["facts"]["snapshot"]["ports"][PORT]
    assert before["facts"]["snapshot"]["ethtool"] is True and read_before["netdev"] == RX and read_before["unread"] == {}

    # the real veth's statistics: the names its ethtool prints (the captured fixture's), its real peer
    names = set(parser.parse_ethtool_stats(BEFORE)["counters"])
    assert set(read_before["ethtool"]) == names and set(after["facts"]["after"]["ethtool"]) == names
    assert read_before["ethtool"]["peer_ifindex"] == peer_ifindex == after["facts"]["after"]["ethtool"]["peer_ifindex"]

    # the traffic between the readings: every datagram went through the receiver's NAPI path (ARP adds a few)
    grown = after["facts"]["growth"]["ethtool"]
    assert PACKETS <= grown["rx_queue_0_xdp_packets"] <= PACKETS + 10, grown
    assert grown["rx_queue_0_xdp_bytes"] >= PACKETS * PAYLOAD, grown
    assert after["facts"]["after"]["ethtool"]["rx_queue_0_drops"] == read_before["ethtool"]["rx_queue_0_drops"]
    assert (after["target"], after["status"], after["facts"]["netdev"], after["facts"]["link_layer"]) == (
        PORT, "pass", RX, "Ethernet"), after
    assert after["facts"]["unread"] == {} and after["metrics"]["window_s"] > 0
    print("port counter window over a real veth (%d datagrams): %.1f s" % (PACKETS, elapsed))
