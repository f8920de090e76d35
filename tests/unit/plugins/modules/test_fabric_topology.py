# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""aifabric.acceptance.fabric_topology: a fake lldpctl on PATH that prints a REAL lldpd capture, a missing
lldpctl, declared vs observed (miscabling -> warn), bad declared types (error), sysfs naming of RDMA ports (a test
tree), and import mode on the real ibnetdiscover captures."""
from __future__ import annotations

import os
import shlex
import stat

import pytest
from ansible.module_utils import basic

from ansible_collections.aifabric.acceptance.plugins.module_utils import probe_host, results
from ansible_collections.aifabric.acceptance.plugins.module_utils.runner import Run
from ansible_collections.aifabric.acceptance.plugins.modules import fabric_topology
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import fabric_topology as topology_tool
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import cabling
from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules.module_harness import patch_exits, run_main

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "fixtures", "topology")
TWO_PORTS = os.path.join(FIXTURES, "lldpd-1.0.16-node1-two-ports-portid-ifname.json")
ONE_PORT_MAC = os.path.join(FIXTURES, "lldpd-1.0.16-node2-one-port-portid-mac.json")
OMPI = os.path.join(FIXTURES, "ibnetdiscover-ompi-users-2009-infiniscale-iii-hca-1.txt")
PSMN = os.path.join(FIXTURES, "ibnetdiscover-psmn-x5-2020-voltaire-qdr-no-hostnames.txt")


@pytest.fixture
def fake_lldpctl(tmp_path, monkeypatch):
    """Put a fake lldpctl first on PATH; ``use(capture, rc=0)`` makes it print that file (to stderr when rc != 0)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    script = bindir / "lldpctl"

    def use(capture, rc=0):
        target = ">&2" if rc else ""
        script.write_text("#!/bin/sh\necho \"$@\" > %s\ncat %s %s\nexit %d\n"
                          % (shlex.quote(str(tmp_path / "argv")), shlex.quote(capture), target, rc))
        script.chmod(script.stat().st_mode | stat.S_IXUSR)
        return tmp_path / "argv"
    monkeypatch.setenv("PATH", "%s%s%s" % (bindir, os.pathsep, os.environ.get("PATH", "")))
    # the other LLDP sources stay absent whatever this machine has installed (test_fabric_topology_lldptool_npu.py)
    real = basic.AnsibleModule.get_bin_path
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", lambda self, name, *a, **k: None if name in (
        "lldptool", "npu-smi", "hccn_tool") else real(self, name, *a, **k))
    patch_exits(monkeypatch)
    return use


def test_real_capture_through_a_fake_lldpctl(fake_lldpctl):
    argv = fake_lldpctl(TWO_PORTS)
    out = run_main(fabric_topology.main, {})
    assert not out.failed
    (record,) = out.kwargs["results"]
    assert argv.read_text().split() == ["-f", "json"]
    assert (record["check"], record["status"], record["reason"], record["host"]) == ("net.topology", "pass", None, None)
    assert record["facts"]["ports"] == {
        "eth0": {"switch": "leaf1", "switch_port": "swp1", "source": "lldp", "netdev": "eth0", "chassis_id": "b6:e8:fd:21:bc:f0"},
        "eth1": {"switch": "leaf1", "switch_port": "swp2", "source": "lldp", "netdev": "eth1", "chassis_id": "b6:e8:fd:21:bc:f0"}}
    assert record["metrics"] == {"ports_count": 2}
    assert out.kwargs["counts"]["pass"] == 1
    assert results.validate(record) == []


def test_check_mode_runs_it_in_full(fake_lldpctl):
    fake_lldpctl(ONE_PORT_MAC)
    out = run_main(fabric_topology.main, {"_ansible_check_mode": True})
    assert out.kwargs["results"][0]["facts"]["ports"]["eth0"]["switch_port"] == "swp3"


def test_declared_and_observed_disagree_is_a_warn(fake_lldpctl):
    fake_lldpctl(TWO_PORTS)
    out = run_main(fabric_topology.main, {"declared": {"eth0": {"switch": "leaf1.example.com", "switch_port": "swp1"},
                                                       "eth1": {"switch": "leaf2", "switch_port": 7},
                                                       "eth5": {"switch": "leaf3"}}})
    (record,) = out.kwargs["results"]
    assert record["status"] == "warn"
    assert record["reason"] == "eth1 is cabled to leaf1 port swp2, declared leaf2 port 7"
    assert record["facts"]["mismatches"] == [{"port": "eth1", "declared": {"switch": "leaf2", "switch_port": "7"},
                                              "observed": {"switch": "leaf1", "switch_port": "swp2"}}]
    ports = record["facts"]["ports"]
    assert ports["eth1"]["source"] == "lldp" and ports["eth0"]["source"] == "lldp"     # leaf1 = leaf1.example.com
    assert ports["eth5"] == {"switch": "leaf3", "switch_port": None, "source": "declared", "netdev": None, "chassis_id": None}
    assert record["metrics"]["ports_count"] == 3


@pytest.mark.parametrize("declared, message", [
    ({"eth0": "leaf1"}, "declared topology: declared.eth0 must be a mapping {switch, switch_port}, got str"),
    ({"eth0": {"switch": ["leaf1"]}}, "declared topology: declared.eth0.switch must be a non-empty string, got ['leaf1']"),
    ({"eth0": {"switch": "leaf1", "switch_port": 1.5}},
     "declared topology: declared.eth0.switch_port must be a non-empty string or an integer, got 1.5")])
def test_bad_declared_types_are_an_error_record(fake_lldpctl, declared, message):
    fake_lldpctl(TWO_PORTS)
    (record,) = run_main(fabric_topology.main, {"declared": declared}).kwargs["results"]
    assert (record["status"], record["reason"]) == ("error", message)


def test_lldpctl_without_its_daemon_is_no_source_not_a_host_error(fake_lldpctl):
    """The real message of lldpctl 1.0.16 when no lldpd runs: the host gets a skip (or its declared ports), never
    an error - an installed but stopped lldpd says nothing about the node."""
    fake_lldpctl(os.path.join(FIXTURES, "lldpctl-1.0.16-no-daemon.txt"), rc=1)
    (record,) = run_main(fabric_topology.main, {}).kwargs["results"]
    assert record["status"] == "skip"
    assert record["reason"].startswith("no topology known: lldpd is not running (lldpctl: ")
    assert "unable to connect to socket /run/lldpd.socket.aif-absent" in record["reason"]
    (record,) = run_main(fabric_topology.main, {"declared": {"eth0": {"switch": "leaf1", "switch_port": "swp1"}}}
                         ).kwargs["results"]
    assert record["status"] == "pass" and record["facts"]["ports"]["eth0"]["source"] == "declared"


def test_lldpctl_failing_or_printing_garbage_is_an_error_with_its_output(fake_lldpctl, tmp_path):
    garbage = tmp_path / "garbage.txt"
    garbage.write_text("lldpctl: invalid option -- 'f'\n")
    fake_lldpctl(str(garbage), rc=1)
    (record,) = run_main(fabric_topology.main, {}).kwargs["results"]
    assert record["status"] == "error"
    assert record["reason"] == "not read: the host's interfaces (lldpctl -f json exited with 1: lldpctl: invalid option -- 'f')"
    assert "invalid option" in record["raw"]
    fake_lldpctl(str(garbage))
    (record,) = run_main(fabric_topology.main, {}).kwargs["results"]
    assert record["status"] == "error" and record["reason"].startswith("not read: the host's interfaces (lldpctl's output is not JSON")
    assert "invalid option" in record["raw"]


def test_declared_ports_are_kept_when_the_lldp_source_fails(fake_lldpctl, tmp_path):
    """lldpctl failing no longer throws the declared ports away (an error record, which the fleet analyses do not
    read): the record is a warn that says what was not read, and the fleet reads the declared switch."""
    garbage = tmp_path / "garbage.txt"
    garbage.write_text("lldpctl: invalid option -- 'f'\n")
    fake_lldpctl(str(garbage), rc=1)
    declared = {"mlx5_0": {"switch": "leaf1", "switch_port": "swp1"}}
    (record,) = run_main(fabric_topology.main, {"declared": declared}).kwargs["results"]
    assert record["status"] == "warn" and results.validate(record) == []
    assert record["reason"] == "not read: the host's interfaces (lldpctl -f json exited with 1: lldpctl: invalid option -- 'f')"
    assert record["facts"]["ports"]["mlx5_0"]["source"] == "declared" and "invalid option" in record["raw"]
    record["host"] = "node1"
    assert cabling.read([record])["node1"]["mlx5_0"]["switch"] == "leaf1"


def _host(root="", capture=None, calls=None):
    def run(argv, timeout_s):
        calls.append((argv, timeout_s))
        with open(capture, encoding="utf-8") as handle:
            return Run(argv, 0, handle.read(), "", 0.01)
    return probe_host.Host(run=run if capture else None, root=str(root),
                           which=lambda name: "/usr/sbin/lldpctl" if capture and name == "lldpctl" else None)


PARAMS = {"lldp": True, "declared": {}, "timeout_s": 7}


def test_missing_lldpctl_and_nothing_declared_is_a_skip():
    record = topology_tool.host_record(_host(), PARAMS, results.utc_now())
    assert record["status"] == "skip"
    assert record["reason"] == ("no topology known: neither lldpctl (lldpd) nor lldptool (lldpad) is installed (no LLDP "
                                "source) and nothing declared for this host")
    assert record["tool"] == {} and record["params"]["lldp_tools"] == []
    assert record["metrics"] == {"ports_count": 0}


def test_missing_lldpctl_with_a_declared_port_passes_from_the_declaration():
    record = topology_tool.host_record(_host(), dict(PARAMS, declared={"mlx5_0": {"switch": "leaf-01", "switch_port": "1"}}),
                                       results.utc_now())
    assert record["status"] == "pass"
    assert record["facts"]["ports"]["mlx5_0"]["source"] == "declared"


def test_lldp_off_reads_nothing():
    calls = []
    record = topology_tool.host_record(_host(capture=TWO_PORTS, calls=calls), dict(PARAMS, lldp=False), results.utc_now())
    assert calls == [] and record["status"] == "skip" and "LLDP not read (lldp: false)" in record["reason"]


def test_a_netdev_of_an_rdma_device_is_named_by_the_device(tmp_path):
    """sysfs /sys/class/infiniband/<dev>/device/net/<netdev> (a test tree under root): eth0 is mlx5_0's interface;
    a declaration by either name is the same port."""
    for dev, netdev in (("mlx5_0", "eth0"), ("mlx5_1", "eth7")):
        (tmp_path / "sys/class/infiniband" / dev / "device/net" / netdev).mkdir(parents=True)
    calls = []
    declared = {"eth0": {"switch": "leaf1", "switch_port": "swp1"}, "mlx5_1": {"switch": "leaf9", "switch_port": "9"}}
    record = topology_tool.host_record(_host(tmp_path, TWO_PORTS, calls), dict(PARAMS, declared=declared),
                                       results.utc_now())
    assert calls == [(["/usr/sbin/lldpctl", "-f", "json"], 7)]
    assert record["status"] == "pass"
    assert record["facts"]["ports"] == {
        "mlx5_0": {"switch": "leaf1", "switch_port": "swp1", "source": "lldp", "netdev": "eth0", "chassis_id": "b6:e8:fd:21:bc:f0"},
        "eth1": {"switch": "leaf1", "switch_port": "swp2", "source": "lldp", "netdev": "eth1", "chassis_id": "b6:e8:fd:21:bc:f0"},
        "mlx5_1": {"switch": "leaf9", "switch_port": "9", "source": "declared", "netdev": "eth7", "chassis_id": None}}


def test_a_declared_network_interface_that_is_no_rdma_device_keeps_its_interface(tmp_path):
    """A declared eno1 (the host's management NIC, no RDMA device: /sys/class/net/eno1, not under
    /sys/class/infiniband) is keyed and marked as its interface (netdev eno1), so that the fleet analyses never read it
    as a fabric port; a declared RDMA device without an interface (an IB port without IPoIB) keeps netdev None."""
    (tmp_path / "sys/class/infiniband/mlx5_0/device").mkdir(parents=True)
    for netdev in ("eno1", "lo"):
        (tmp_path / "sys/class/net" / netdev).mkdir(parents=True)
    declared = {"eno1": {"switch": "mgmt-7", "switch_port": "ge-0/0/1"}, "mlx5_0": {"switch": "leaf-1", "switch_port": 3}}
    record = topology_tool.host_record(_host(tmp_path), dict(PARAMS, lldp=False, declared=declared), results.utc_now())
    assert record["status"] == "pass"
    assert record["facts"]["ports"] == {
        "eno1": {"switch": "mgmt-7", "switch_port": "ge-0/0/1", "source": "declared", "netdev": "eno1", "chassis_id": None},
        "mlx5_0": {"switch": "leaf-1", "switch_port": "3", "source": "declared", "netdev": None, "chassis_id": None}}


# ---------------------------------------------------------------- import mode: ibnetdiscover

def test_ibnetdiscover_import_one_record_per_host(monkeypatch):
    patch_exits(monkeypatch)
    out = run_main(fabric_topology.main, {"from_output": OMPI, "hosts": ["node1", "node24.cluster", "gpu99"]})
    records = dict((r["host"], r) for r in out.kwargs["results"])
    assert sorted(records) == ["gpu99", "node1", "node24.cluster"]
    assert records["node1"]["status"] == "pass"
    assert records["node1"]["facts"]["ports"] == {"HCA-1": {
        "switch": "MT47396 Infiniscale-III Mellanox Technologies", "switch_port": "1", "source": "ibnetdiscover",
        "netdev": None, "chassis_id": "S-000b8cffff002347"}}
    assert records["node24.cluster"]["facts"]["ports"]["HCA-1"]["switch_port"] == "24"
    assert records["gpu99"]["status"] == "skip"
    assert records["gpu99"]["reason"] == ("the ibnetdiscover output names no CA of gpu99 (no node description "
                                          "'gpu99 <hca>'; 0 CA link(s) without a host name)")


def test_ibnetdiscover_without_host_names_skips_every_host(monkeypatch):
    patch_exits(monkeypatch)
    (record,) = run_main(fabric_topology.main, {"from_output": PSMN, "hosts": ["x5-001"]}).kwargs["results"]
    assert record["status"] == "skip" and "89 CA link(s) without a host name" in record["reason"]


def test_ibnetdiscover_unreadable_file_is_an_error_record_per_host(monkeypatch, tmp_path):
    patch_exits(monkeypatch)
    bad = tmp_path / "not-ibnetdiscover.txt"
    bad.write_text("ibwarn: [12345] mad_rpc_open_port: can't open UMAD port ((null):0)\n")
    out = run_main(fabric_topology.main, {"from_output": str(bad), "hosts": ["a", "b"]})
    assert [(r["host"], r["status"]) for r in out.kwargs["results"]] == [("a", "error"), ("b", "error")]
    assert "not an ibnetdiscover topology" in out.kwargs["results"][0]["reason"]
    assert "mad_rpc_open_port" in out.kwargs["results"][0]["raw"]


def test_from_output_needs_hosts(monkeypatch):
    patch_exits(monkeypatch)
    out = run_main(fabric_topology.main, {"from_output": OMPI})
    assert out.failed and out.kwargs["msg"] == "from_output needs hosts (the hosts to make records for)"


def test_timeout_s_must_be_positive(monkeypatch):
    patch_exits(monkeypatch)
    out = run_main(fabric_topology.main, {"timeout_s": 0})
    assert out.failed and out.kwargs["msg"] == "invalid option value: timeout_s must be >= 1, got 0"


def test_get_bin_path_is_what_finds_lldpctl(monkeypatch):
    """No lldpctl, lldptool or npu-smi anywhere: the module says so in a skip record (main, not only host_record)."""
    patch_exits(monkeypatch)
    real = basic.AnsibleModule.get_bin_path
    hidden = ("lldpctl", "lldptool", "npu-smi")
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path",
                        lambda self, name, *a, **k: None if name in hidden else real(self, name, *a, **k))
    (record,) = run_main(fabric_topology.main, {}).kwargs["results"]
    assert record["status"] == "skip" and "neither lldpctl (lldpd) nor lldptool (lldpad) is installed" in record["reason"]
