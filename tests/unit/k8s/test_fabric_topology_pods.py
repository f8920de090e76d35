# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fabric topology as a Kubernetes pod (kind fabric_topology): the pod runs the same adapter code as the SSH module
(k8s_entry ``adapter``, the code ConfigMap's tree only), and its log gives the same net.topology record field by field
on the same inputs: fake lldpctl, lldptool, npu-smi and hccn_tool that print REAL captures (tests/unit/fixtures/
topology, the parsers' hccn_tool and npu_smi fixtures), the same sysfs test tree, the node's entry of the declared
topology as the module's ``declared``."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

import pytest

from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_plan, results
from ansible_collections.aifabric.acceptance.tests.unit.plugins.module_utils import test_k8s_plan as tkp
from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules.test_fabric_topology import (
    FIXTURES, ONE_PORT_MAC, TWO_PORTS)
from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules.test_fabric_topology_lldptool_npu import (  # pylint: disable=unused-import
    EMPTY, HCCN_FULL, NPU_SMI, fixture, host, record_of)  # noqa: F401 - host is a fixture

NODE = "gpu-node-01"
ARISTA = os.path.join(FIXTURES, "lldptool-t-n-arista-eos-4.16.7m-dcs-7150s.txt")
NO_DAEMON = os.path.join(FIXTURES, "lldpctl-1.0.16-no-daemon.txt")
K8S_PARAMS = ("substrate", "namespace", "job", "pod", "run_id", "hosts")


def slot_spec(plan):
    """The --spec the planned pod's command carries."""
    container = plan["steps"][0]["objects"][0]["spec"]["template"]["spec"]["containers"][0]
    argv = container["command"]
    return json.loads(argv[argv.index("--spec") + 1])


def pod_record(bindir, options, root="", node=NODE):
    """The record of a one-node fabric_topology plan's pod: the entry program run as the pod runs it (the code
    ConfigMap's tree, no PYTHONPATH, only ``bindir``'s LLDP tools on PATH, sysfs under ``root``), its log read by
    k8s_plan.slot_records."""
    plan = k8s_plan.build("fabric_topology", [node], dict(tkp.POD, host_network=True), "t1", options)
    slot = plan["steps"][0]["slots"][0]
    env = dict(tkp.POD_ENV, PATH="%s:/usr/bin:/bin" % bindir)
    with tempfile.TemporaryDirectory() as code:
        spec = dict(slot_spec(plan), lib=tkp.write_code_tree(code), root=str(root))
        proc = subprocess.run([sys.executable, tkp.ENTRY, "adapter", "--spec", json.dumps(spec)], capture_output=True,
                              env=env, timeout=120, check=False)
    assert proc.returncode == 0, proc.stderr
    (record,) = k8s_plan.slot_records(plan, slot, tkp.ok(slot, node), proc.stdout.decode())
    assert results.validate(record) == []
    return record


def same(record):
    """The record less the clock and the host (the planner stamps the node); params less the pod's own names."""
    out = tkp._stable(record)
    out["params"] = dict((k, v) for k, v in record["params"].items() if k not in K8S_PARAMS)
    return out


def both(host, tmp_path, params, root=True):
    """(the SSH module's record, the pod's record) of the same tools and tree; the pod gets ``declared`` as its
    node's entry of the plan's topology."""
    ssh = record_of(dict(params))
    options = dict((k, v) for k, v in params.items() if k != "declared")
    if "declared" in params:
        options["topology"] = {NODE: params["declared"], "gpu-node-09": {"mlx5_0": {"switch": "elsewhere"}}}
    pod = pod_record(tmp_path / "bin", options, root=tmp_path if root else "")
    assert pod["host"] == NODE and pod["params"]["substrate"] == "kubernetes"
    assert same(pod) == same(ssh)
    return ssh


def test_lldpctl_capture_and_a_miscabled_declared_port(host, tmp_path):
    host("lldpctl", default=(TWO_PORTS, 0), arg=1)
    declared = {"mlx5_0": {"switch": "leaf1", "switch_port": "swp9"}, "eth2": {"switch": "leaf7", "switch_port": 2}}
    record = both(host, tmp_path, {"declared": declared})
    assert record["status"] == "warn" and record["reason"] == "mlx5_0 is cabled to leaf1 port swp1, declared leaf1 port swp9"
    assert sorted(record["facts"]["ports"]) == ["eth1", "eth2", "mlx5_0"]


def test_lldpctl_mac_port_ids(host, tmp_path):
    host("lldpctl", default=(ONE_PORT_MAC, 0), arg=1)
    record = both(host, tmp_path, {})
    assert record["status"] == "pass" and record["facts"]["ports"]["mlx5_0"]["switch_port"] == "swp3"


def test_lldpctl_without_its_daemon(host, tmp_path):
    host("lldpctl", default=(NO_DAEMON, 1), arg=1)
    assert both(host, tmp_path, {})["status"] == "skip"
    declared = {"mlx5_0": {"switch": "leaf1", "switch_port": "swp1"}}
    assert both(host, tmp_path, {"declared": declared})["status"] == "pass"


def test_lldptool_per_interface(host, tmp_path):
    host("lldptool", {"eth0": (ARISTA, 0), "eth1": (fixture("eth1"), 0)})
    record = both(host, tmp_path, {})
    assert record["status"] == "pass" and record["params"]["lldp_tools"] == ["lldptool"]
    assert record["facts"]["ports"]["mlx5_0"]["switch_port"] == "Ethernet4"


def test_lldptool_without_lldpad(host, tmp_path):
    host("lldptool", default=(fixture("eth0-no-daemon"), 255))
    assert both(host, tmp_path, {})["status"] == "skip"


def test_npu_ports_from_hccn_tool(host, tmp_path):
    """The NPUs' ports need no sysfs: the pod reads the real root (the path rule checks hccn_tool where it is)."""
    host("npu-smi", default=(NPU_SMI, 0), arg=1)
    host("hccn_tool", default=(HCCN_FULL, 0), arg=2)
    record = both(host, tmp_path, {}, root=False)
    assert record["status"] == "pass" and sorted(record["facts"]["ports"]) == ["npu%d" % d for d in range(8)]


@pytest.mark.parametrize("params, status", [
    ({"lldp": False, "declared": {"eth1": {"switch": "leaf2", "switch_port": 4}}}, "pass"),
    ({"declared": "leaf1"}, "error"), ({"declared": {"mlx5_0": {"switch_port": 1}}}, "error"), ({"lldp": False}, "skip")])
def test_no_lldp_and_bad_declarations(host, tmp_path, params, status):
    host("lldpctl", default=(TWO_PORTS, 0), arg=1)
    assert both(host, tmp_path, params)["status"] == status


def test_the_plan_mounts_the_lldpd_socket_only_when_asked():
    plan = k8s_plan.build("fabric_topology", [NODE], tkp.POD, "t1", {"lldpd_socket": "/run/lldpd.socket"})
    spec = plan["steps"][0]["objects"][0]["spec"]["template"]["spec"]
    assert spec["volumes"][-1] == {"name": "lldpd-socket", "hostPath": {"path": "/run/lldpd.socket", "type": "Socket"}}
    assert spec["containers"][0]["volumeMounts"][-1] == {"name": "lldpd-socket", "mountPath": "/run/lldpd.socket",
                                                         "readOnly": True}
    assert "nvidia.com/gpu" not in json.dumps(spec["containers"][0].get("resources"))
    plain = k8s_plan.build("fabric_topology", [NODE], tkp.POD, "t1")["steps"][0]["objects"][0]["spec"]["template"]["spec"]
    assert "lldpd" not in json.dumps(plain)
    # the pod's deadline covers the adapter's own bound: 2 x timeout_s + 5 s x 48 + the kill-after
    assert plan["deadline_s"] == 2 * 30 + 5 * 48 + 5 + k8s_plan.START_UP_S


@pytest.mark.parametrize("options, message", [
    ({"topology": ["gpu-node-01"]}, "topology must be a mapping"),
    ({"lldpd_socket": "run/lldpd.socket"}, "is not an absolute path"),
    ({"lldpd_socket": "/run/../etc/shadow"}, "is not an absolute path"),
    ({"declared": {}}, "unknown option 'declared'")])
def test_the_plan_refuses_bad_options(options, message):
    with pytest.raises(k8s_plan.AcceptanceError, match=message):
        k8s_plan.build("fabric_topology", [NODE], tkp.POD, "t1", options)


# --------------------------------------------------------------------------- a whole fleet, topology from pods

HUAWEI = os.path.join(FIXTURES, "lldptool-t-n-huawei-ce6855-vrp-8.180.txt")
ARISTA_SWITCH = "BAS-FIC-0H1E-12S-C02.picotrading.com"
HUAWEI_SWITCH = "HB.LF-RZ.M1.102-HW-CE6855-U1-A2-In-254.79-DPVS-Test"
# host -> (the LLDP tool its node has, the capture it prints, mlx5_0's interface); the others declare their port
LLDP_NODES = {"l0h0": ("lldpctl", TWO_PORTS, "eth0"), "l0h1": ("lldpctl", TWO_PORTS, "eth1"),
              "l0h2": ("lldpctl", ONE_PORT_MAC, "eth0"), "l1h0": ("lldptool", ARISTA, "eth4"),
              "l2h0": ("lldptool", HUAWEI, "eth3")}
DECLARED = {"l1h1": ARISTA_SWITCH, "l1h2": ARISTA_SWITCH, "l2h1": HUAWEI_SWITCH, "l2h2": HUAWEI_SWITCH,
            "l3h0": "leaf-04", "l3h1": "leaf-04", "l3h2": "leaf-04"}


def node_tree(base, host):
    """A node: its LLDP tool (a fake that prints the REAL capture) in bin/, mlx5_0's interface in its sysfs tree."""
    (base / "bin").mkdir(parents=True)
    tool, capture, netdev = LLDP_NODES.get(host, (None, None, "eth0"))
    (base / "sys/class/infiniband/mlx5_0/device/net" / netdev).mkdir(parents=True)
    (base / "sys/class/net" / netdev / "device").mkdir(parents=True)
    if tool:
        script = base / "bin" / tool
        script.write_text("#!/bin/sh\nexec /bin/cat %s\n" % capture)
        script.chmod(0o755)
    return base


def fleet_topology_from_pods(tmp_path, hosts):
    """The net.topology records of every node as the fabric_topology pods give them (one plan, each pod run as it
    runs on its node, its log read by the planner)."""
    topology = dict((h, {"mlx5_0": {"switch": switch, "switch_port": "Ethernet1/%d" % (i + 5)}})
                    for i, (h, switch) in enumerate(sorted(DECLARED.items())))
    plan = k8s_plan.build("fabric_topology", hosts, dict(tkp.POD, host_network=True), "fleet", {"topology": topology})
    lib = tkp.write_code_tree(tmp_path / "code")
    records = []
    for obj, slot in zip(plan["steps"][0]["objects"], plan["steps"][0]["slots"]):
        command = obj["spec"]["template"]["spec"]["containers"][0]["command"]
        base = node_tree(tmp_path / slot["node"], slot["node"])
        spec = dict(json.loads(command[command.index("--spec") + 1]), lib=lib, root=str(base))
        proc = subprocess.run([sys.executable, tkp.ENTRY, "adapter", "--spec", json.dumps(spec)], capture_output=True,
                              env=dict(tkp.POD_ENV, PATH="%s:/usr/bin:/bin" % (base / "bin")), timeout=120, check=False)
        assert proc.returncode == 0, proc.stderr
        records += k8s_plan.slot_records(plan, slot, tkp.ok(slot, slot["node"]), proc.stdout.decode())
    return records


def test_a_bad_leaf_is_named_from_the_pods_topology(tmp_path):
    """12 nodes behind four switches (leaf1 and the Arista and Huawei switches from real LLDP captures, read by the
    pods' lldpctl and lldptool; the rest declared through the plan's topology): the pairs across leaf1's uplink at
    55 %, one bad link elsewhere. Attribution names leaf1 from the pods' records: its three hosts warn naming it, the
    bad link's two ends warn, every other host passes, none fails."""
    from ansible_collections.aifabric.acceptance.tests.unit.plugins.plugin_utils import test_attribution_switch as tas
    hosts = tas.hosts_of(leaves=4, per_leaf=3)
    topology = fleet_topology_from_pods(tmp_path, hosts)
    assert [(r["host"], r["status"], r["params"]["substrate"]) for r in topology] == [
        (h, "pass", "kubernetes") for h in hosts]
    switches = dict((r["host"], r["facts"]["ports"]["mlx5_0"]["switch"]) for r in topology)
    assert [switches[h] for h in ("l0h0", "l0h1", "l0h2", "l1h0", "l2h0")] == ["leaf1"] * 3 + [ARISTA_SWITCH, HUAWEI_SWITCH]
    bad_link = ("l1h1", "l3h2")
    measured = tas.measure(hosts, tas.faults(bad_leaves=(0,), bad_node="none", bad_link=bad_link))
    report, status = tas.report_of(measured + topology)
    group = ("l0h0", "l0h1", "l0h2")
    assert tas.found(report) == sorted([("group", group, "mlx5_0"), ("link", bad_link, "mlx5_0")])
    assert status == tas.expected_status(hosts, group, fail=(), warn=bad_link)
    finding = tas.group_finding(report)
    assert finding["evidence"]["switches"] == {"leaf1": list(group)}
    assert finding["evidence"]["ports"] == {"l0h0": "leaf1 swp1", "l0h1": "leaf1 swp2", "l0h2": "leaf1 swp3"}
    # without the pods' records the same verdicts, no switch named
    plain, plain_status = tas.report_of(measured)
    assert plain_status == status and "switches" not in tas.group_finding(plain)["evidence"]
