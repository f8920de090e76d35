# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hardware on the PCI bus that its tool does not see is an ``error``, never a ``skip`` (issue 18, item 1).

The fake /sys/bus/pci/devices trees are written from real listings (parsers/fixtures/misc, PROVENANCE.md there):
the lent H100 VM's sysfs, the 2x H200 VM's, the development machine's (no GPU), the public lspci of a Kunpeng
920 with 8 Ascend 910B and of its KAE ZIP engines, and the ibdev2netdev -v capture of a ConnectX-4 host with 4
SR-IOV VFs. Tool outputs are the real captures. Before the fix a GPU node whose nvidia-smi said "No devices were
found" got ``gpu.inventory`` skip and the run passed, a RoCE NIC without an RDMA device was a skip, and Ascend NPUs
without npu-smi were a skip.
"""

from __future__ import annotations

import os
import re

from ansible_collections.aifabric.acceptance.plugins.module_utils import env_probe, probe_host, results
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import rdma
from ansible_collections.aifabric.acceptance.plugins.module_utils.runner import Run
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import fleet
from ansible_collections.aifabric.acceptance.tests.unit.plugins.module_utils.test_env_probe import (
    H200X2, SMI, FakeCommands, by, failure_text, h100_tree, h200x2_pci, host_for, put, read)

NO_DEVICES = "failures/nvidia-smi-q-x-i-99-no-devices-were-found-driver580.txt"
NPU_SMI = "/usr/local/sbin/npu-smi"
B910 = "npu_smi/vllm-ascend-issue362-npu-smi-23.0.7-8x910B2-info.txt"
# lspci's words (no -nn) -> the numbers sysfs holds, from pci.ids (class 12 "Processing accelerators", vendor 19e5,
# device a250 "HiSilicon ZIP Engine"); "Device d802" is lspci's way of printing a device id pci.ids does not name
LSPCI_CLASSES = {"Processing accelerators": "0x120000"}
LSPCI_VENDORS = {"Huawei Technologies Co., Ltd.": "0x19e5"}
LSPCI_DEVICES = {"HiSilicon ZIP Engine": "0xa250"}


def sysfs_from_listing(root, rel):
    """/sys/bus/pci/devices from a `<name> <vendor> <device> <class> <driver> <pf|vf>` listing (misc/*-sysfs-pci-*)."""
    for line in read(rel).splitlines():
        name, vendor, device, klass, driver, kind = line.split(" ")
        base = "/sys/bus/pci/devices/" + name
        for attr, value in (("vendor", vendor), ("device", device), ("class", klass)):
            put(root, "%s/%s" % (base, attr), value + "\n")
        if driver:
            os.symlink("../../../bus/pci/drivers/" + driver, os.path.join(str(root), base.lstrip("/"), "driver"))
        assert kind == "pf"
    return root


def sysfs_from_lspci(root, rel):
    """/sys/bus/pci/devices of the lspci lines whose class, vendor and device have known numbers."""
    for line in read(rel).splitlines():
        match = re.match(r"^([0-9a-f]{2}:[0-9a-f]{2}\.\d) ([^:]+): (.+?\.) (.+?) \(rev", line)
        if not match or match.group(2) not in LSPCI_CLASSES:
            continue
        address, klass, vendor, device = match.groups()
        device = "0x" + device[len("Device "):] if device.startswith("Device ") else LSPCI_DEVICES[device]
        base = "/sys/bus/pci/devices/0000:" + address
        for attr, value in (("vendor", LSPCI_VENDORS[vendor]), ("device", device), ("class", LSPCI_CLASSES[klass])):
            put(root, "%s/%s" % (base, attr), value + "\n")
    return root


def no_devices(commands=None):
    text, code = failure_text(NO_DEVICES)
    commands = commands or FakeCommands()
    commands.outputs[(SMI, "-q", "-x")] = (code, text)
    return commands


# ------------------------------------------------------------------------------------------------ NVIDIA GPUs


def test_gpu_on_the_pci_bus_that_nvidia_smi_does_not_see_is_an_error(tmp_path):
    root = sysfs_from_listing(tmp_path, "misc/ubuntu2404-h100vm-sysfs-pci-all.txt")
    records = env_probe.probe(host_for(root, no_devices()), {"groups": ["gpu"]})
    assert [(r["check"], r["status"]) for r in records] == [("gpu.inventory", "error")]
    assert records[0]["reason"] == (
        "1 NVIDIA GPU(s) on the PCI bus that nvidia-smi does not see (nvidia-smi found no GPU (No devices were "
        "found)): 0000:00:06.0 (driver nvidia)")
    assert records[0]["metrics"] == {"gpu_count": 0, "pci_gpu_count": 1}
    assert records[0]["raw"] == "No devices were found"


def test_no_nvidia_on_the_pci_bus_keeps_the_skip(tmp_path):
    root = sysfs_from_listing(tmp_path, "misc/debian12-testbed-sysfs-pci-all.txt")  # virtio NIC, class 0x020000
    records = env_probe.probe(host_for(root, no_devices()), {"groups": ["gpu", "rdma"]})
    assert [(r["check"], r["status"]) for r in records] == [("gpu.inventory", "skip"), ("rdma.inventory", "skip")]
    assert records[0]["reason"] == "nvidia-smi found no GPU (No devices were found)"


def test_gpu_the_driver_lost_is_an_error(tmp_path):
    # the 2x H200 VM's PCI listing with the 1x H100 VM's nvidia-smi XML (bus 00000000:00:06.0): 0000:00:07.0 is on
    # the bus and not in nvidia-smi, as after an Xid 79 "fallen off the bus" (was a warn)
    inventory = by(env_probe.probe(host_for(h200x2_pci(tmp_path)), {"groups": ["gpu"]}), "gpu.inventory")
    assert inventory["status"] == "error"
    assert inventory["reason"] == ("1 NVIDIA GPU(s) on the PCI bus that nvidia-smi does not see (it lists 1 of 2): "
                                   "0000:00:07.0 (no driver)")
    assert inventory["metrics"]["pci_gpu_count"] == 2 and inventory["metrics"]["gpu_count"] == 1
    both = by(env_probe.probe(host_for(h200x2_pci(tmp_path / "x"), FakeCommands(H200X2)), {"groups": ["gpu"]}),
              "gpu.inventory")
    assert both["status"] == "pass" and both["metrics"]["pci_gpu_count"] == 2


# ------------------------------------------------------------------------------- Mellanox/NVIDIA RDMA NICs


def sriov_cni_pci(root, klass, vfs_bound=True):
    """The ConnectX-4 host behind ibdev2netdev/sriov-cni-cx4-v-verbose-with-4-vfs.txt: its PCI functions (vendor
    0x15b3; MT4115 = 0x1013 PF, MT4116 = 0x1014 VF, a VF with its physfn link to the first PF)."""
    rows = rdma.parse_ibdev2netdev(read("ibdev2netdev/sriov-cni-cx4-v-verbose-with-4-vfs.txt"))
    for row in rows:
        base = "/sys/bus/pci/devices/" + row["pci"]
        put(root, base + "/vendor", "0x15b3\n")
        put(root, base + "/device", "0x%04x\n" % int(row["part"][2:]))
        put(root, base + "/class", klass + "\n")
        put(root, "%s/net/%s/operstate" % (base, row["netdev"]), row["netdev_state"].lower() + "\n")
        if row["part"] == "MT4116":
            os.symlink("../" + rows[0]["pci"], os.path.join(str(root), base.lstrip("/"), "physfn"))
    return rows


def infiniband_of(root, rows, names):
    """/sys/class/infiniband entries (device link to the PCI function, port 1 state) for the named rows."""
    for row in rows:
        if row["dev"] not in names:
            continue
        base = "/sys/class/infiniband/" + row["dev"]
        put(root, base + "/fw_ver", row["fw"] + "\n")
        put(root, base + "/ports/1/state", "4: ACTIVE\n" if row["port_state"] == "ACTIVE" else "1: DOWN\n")
        put(root, base + "/ports/1/link_layer", "Ethernet\n")
        os.symlink("../../../bus/pci/devices/" + row["pci"], os.path.join(str(root), base.lstrip("/"), "device"))


def test_roce_nics_without_an_rdma_device_are_an_error(tmp_path):
    # the host's ports are Ethernet (enp2s0f* netdevs): class 0x020000; before the fix this was a skip
    sriov_cni_pci(tmp_path, "0x020000")
    records = env_probe.probe(host_for(tmp_path), {"groups": ["rdma"]})
    assert [(r["check"], r["status"]) for r in records] == [("rdma.inventory", "error")]
    assert records[0]["reason"] == (
        "2 Mellanox/NVIDIA network function(s) on the PCI bus that /sys/class/infiniband does not list (no RDMA "
        "device: /sys/class/infiniband is absent; load the RDMA driver stack: mlx5_ib with ib_core and ib_uverbs, "
        "RoCE included): 0000:02:00.0 (Ethernet, no driver), 0000:02:00.1 (Ethernet, no driver)")
    assert records[0]["metrics"] == {"hca_count": 0, "pci_nic_count": 2}   # the 4 VFs are not counted


def test_infiniband_class_without_an_rdma_device_is_an_error(tmp_path):
    sriov_cni_pci(tmp_path, "0x020700")
    os.makedirs(os.path.join(str(tmp_path), "sys/class/infiniband"))
    record = env_probe.probe(host_for(tmp_path), {"groups": ["rdma"], "expect": {"hca_count": 2}})[0]
    assert record["status"] == "error"
    assert record["reason"].startswith(
        "2 Mellanox/NVIDIA network function(s) on the PCI bus that /sys/class/infiniband does not list (no RDMA "
        "device: /sys/class/infiniband is empty; ")
    assert record["reason"].endswith("0000:02:00.0 (InfiniBand, no driver), 0000:02:00.1 (InfiniBand, no driver)")


def test_a_nic_missing_from_the_rdma_devices_is_an_error(tmp_path):
    rows = sriov_cni_pci(tmp_path, "0x020000")
    infiniband_of(tmp_path, rows, ("mlx5_0", "mlx5_1", "mlx5_2"))
    assert by(env_probe.probe(host_for(tmp_path), {"groups": ["rdma"]}), "rdma.inventory")["status"] == "pass"
    # mlx5_1 (the second PF) gone from /sys/class/infiniband, its PCI function still there
    os.unlink(os.path.join(str(tmp_path), "sys/class/infiniband/mlx5_1/device"))
    os.rename(os.path.join(str(tmp_path), "sys/class/infiniband/mlx5_1"), os.path.join(str(tmp_path), "gone"))
    inventory = by(env_probe.probe(host_for(tmp_path), {"groups": ["rdma"]}), "rdma.inventory")
    assert inventory["status"] == "error"
    assert inventory["reason"] == ("1 Mellanox/NVIDIA network function(s) on the PCI bus that /sys/class/infiniband "
                                   "does not list (it lists mlx5_0, mlx5_2): 0000:02:00.1 (Ethernet, no driver)")
    assert inventory["metrics"]["hca_count"] == 2 and inventory["metrics"]["pci_nic_count"] == 2


def test_a_bonded_pf_is_seen_through_its_bond_device(tmp_path):
    # RoCE LAG: both PFs' netdevs are slaves of one bond and one RDMA device (mlx5_bond_0) stands for both
    rows = sriov_cni_pci(tmp_path, "0x020000")
    infiniband_of(tmp_path, rows, ("mlx5_0",))
    os.makedirs(os.path.join(str(tmp_path), "sys/class/net/bond0"))
    for row in rows[:2]:
        os.symlink("../../../../../../class/net/bond0", os.path.join(
            str(tmp_path), "sys/bus/pci/devices/%s/net/%s/master" % (row["pci"], row["netdev"])))
    inventory = by(env_probe.probe(host_for(tmp_path), {"groups": ["rdma"]}), "rdma.inventory")
    assert inventory["status"] == "pass", inventory["reason"]


# ------------------------------------------------------------------------------------ Huawei Ascend NPUs


def npu_host(root, text=None):
    def run(argv, timeout_s):
        return Run(list(argv), 0, text, "", 0.01)
    return probe_host.Host(run=run, which={"npu-smi": NPU_SMI if text is not None else None}.get, root=str(root),
                           environ={})


def test_npus_on_the_pci_bus_without_npu_smi_are_an_error(tmp_path):
    sysfs_from_lspci(tmp_path, "misc/kunpeng920-8x910b-lspci-public.txt")
    records = env_probe.probe(npu_host(tmp_path), {"groups": ["npu"]})
    assert [(r["check"], r["status"]) for r in records] == [("gpu.npu_inventory", "error")]
    assert records[0]["reason"] == (
        "8 Huawei Ascend NPU(s) on the PCI bus that npu-smi does not see (npu-smi not found on PATH: install the "
        "Ascend driver): 0000:08:00.0 (no driver), 0000:0c:00.0 (no driver), 0000:42:00.0 "
        "(no driver), 0000:46:00.0 (no driver), 0000:96:00.0 (no driver), 0000:ab:00.0 (no driver), 0000:c1:00.0 "
        "(no driver), 0000:d6:00.0 (no driver)")
    assert records[0]["metrics"] == {"npu_count": 0, "pci_npu_count": 8}


def test_kunpeng_zip_engines_are_not_npus(tmp_path):
    # same vendor (0x19e5) and class (0x12) as the NPUs: a CPU node with KAE keeps the skip
    sysfs_from_lspci(tmp_path, "misc/kunpeng920-kae-lspci-grep-zip-public.txt")
    assert len(os.listdir(os.path.join(str(tmp_path), "sys/bus/pci/devices"))) == 2
    records = env_probe.probe(npu_host(tmp_path), {"groups": ["npu"]})
    assert [(r["check"], r["status"]) for r in records] == [("gpu.npu_inventory", "skip")]


def test_an_npu_npu_smi_does_not_list_is_an_error(tmp_path):
    # the 8x 910B2 npu-smi capture; its Bus-Ids written as Ascend functions (19e5:d802, class 0x120000, as lspci
    # shows 910B); then NPU 7 (Bus-Id 0000:42:00.0) cut from the real table, as an NPU the driver lost
    text = read(B910)
    for bus in re.findall(r"\| (0000:[0-9A-F]{2}:00\.0) ", text):
        for attr, value in (("vendor", "0x19e5"), ("device", "0xd802"), ("class", "0x120000")):
            put(tmp_path, "/sys/bus/pci/devices/%s/%s" % (bus.lower(), attr), value + "\n")
    inventory = by(env_probe.probe(npu_host(tmp_path, text), {"groups": ["npu"]}), "gpu.npu_inventory")
    assert inventory["status"] == "pass" and inventory["metrics"]["pci_npu_count"] == 8
    lines = text.splitlines(True)
    cut = [i for i, line in enumerate(lines) if line.startswith("| 7 ")][0]
    lost = "".join(lines[:cut] + lines[cut + 3:])
    assert "0000:42:00.0" not in lost
    inventory = by(env_probe.probe(npu_host(tmp_path, lost), {"groups": ["npu"]}), "gpu.npu_inventory")
    assert inventory["status"] == "error"
    assert inventory["reason"] == ("1 Huawei Ascend NPU(s) on the PCI bus that npu-smi does not see (it lists 7 of "
                                   "8): 0000:42:00.0 (no driver)")


# ------------------------------------------------------------------------------------------- whole fleet


def test_fleet_verdict_errors_exactly_the_gpu_node_whose_gpus_nvidia_smi_does_not_see(tmp_path):
    """Three hosts through the controller analysis: a healthy 2x H200 node, the same node whose nvidia-smi says
    "No devices were found", and a CPU node (no NVIDIA on its PCI bus) with the same nvidia-smi answer."""
    hosts = {
        "gpu-ok": (h200x2_pci(h100_tree(tmp_path / "ok")), FakeCommands(H200X2)),
        "gpu-lost": (h200x2_pci(h100_tree(tmp_path / "lost")), no_devices(FakeCommands(H200X2))),
        "cpu-1": (sysfs_from_listing(h100_tree(tmp_path / "cpu"), "misc/debian12-testbed-sysfs-pci-all.txt"),
                  no_devices()),
    }
    records = []
    for name, (root, commands) in sorted(hosts.items()):
        for rec in env_probe.probe(host_for(root, commands), {"groups": ["env", "gpu"]}):
            records.append(dict(rec, host=name))
    report = fleet.build_report(records, {"run_id": "presence", "started": "2026-11-25T10:00:00Z",
                                          "ended": "2026-11-25T10:05:00Z"})
    verdicts = dict((h["host"], h["status"]) for h in report["summary"]["hosts"])
    assert verdicts == {"gpu-ok": "pass", "gpu-lost": "error", "cpu-1": "pass"}
    assert report["summary"]["worst_status"] == "error"
    gpu = dict((r["host"], r) for r in report["records"] if r["check"] == "gpu.inventory")
    assert (gpu["gpu-ok"]["status"], gpu["gpu-lost"]["status"], gpu["cpu-1"]["status"]) == ("pass", "error", "skip")
    assert "0000:00:06.0 (no driver), 0000:00:07.0 (no driver)" in gpu["gpu-lost"]["reason"]
    assert all(results.validate(r) == [] for r in records)
