# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The HCA's PCI link in the rdma.port records (issue 19: GPU<->HCA paths bounded by link generation x width).

The attribute texts are REAL: parsers/fixtures/pci_sysfs/h100-kernel618-sysfs-pci-links.txt, a `cat` of every PCI
function's class, vendor, device and link attributes on a lent H100 machine (kernel 6.18), next to nvidia-smi's
figures for the same GPU. No HCA capture exists, so the CX-4 host's /sys/class/infiniband tree (test_env_probe's
cx4_infiniband) gets, under each RDMA device's ``device`` directory, the GPU function's link files as captured.
Where a test trains a link narrower (width "8") it writes the kernel's format for it (pci-sysfs.c: "%u\\n") and says so.
"""

from __future__ import annotations

import csv
import importlib.util
import os
import shutil

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.aifabric.acceptance.plugins.module_utils import env_probe, probe_host, results
from ansible_collections.aifabric.acceptance.tests.unit.plugins.module_utils.parsers.mutations import mutated as mutated_text
from ansible_collections.aifabric.acceptance.tests.unit.helpers import parser_fixture

HERE = os.path.dirname(os.path.abspath(__file__))
PCI = parser_fixture("pci_sysfs")
CAPTURE = os.path.join(PCI, "h100-kernel618-sysfs-pci-links.txt")
SMI_CSV = os.path.join(PCI, "h100-driver580-nvidia-smi-pcie.csv")
GPU_FUNCTION = "0000:00:06.0"
# drivers/pci/probe.c pci_speed_string(): the PCIe entries of its table, and what it returns past the table's end
KERNEL_SPEEDS = {"2.5 GT/s PCIe": 1, "5.0 GT/s PCIe": 2, "8.0 GT/s PCIe": 3, "16.0 GT/s PCIe": 4,
                 "32.0 GT/s PCIe": 5, "64.0 GT/s PCIe": 6, "Unknown": None}
# current_link_speed_show() before pci_speed_string() (older kernels: a switch of its own, "Unknown speed")
OLD_KERNEL_SPEEDS = {"2.5 GT/s": 1, "5 GT/s": 2, "8 GT/s": 3, "16 GT/s": 4, "32 GT/s": 5, "Unknown speed": None}


def _probe_tests():
    spec = importlib.util.spec_from_file_location("hca_pcie_env_probe_tests", os.path.join(HERE, "test_env_probe.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PROBE = _probe_tests()


def pci_capture():
    """{PCI address: {attribute: sysfs text, or None where cat found no such file}} of the real capture."""
    out, current = {}, None
    with open(CAPTURE, encoding="utf-8") as handle:
        for line in handle:
            line = line.rstrip("\n")
            if line.startswith("== "):
                current = out.setdefault(line[3:], {})
                continue
            name, _sep, text = line.partition(": ")
            current[name] = None if text.startswith("cat: ") else text + "\n"   # sysfs_emit ends with a newline
    return out


def gpu_link_texts():
    """The four link attribute texts of the captured GPU function, as the kernel printed them."""
    return dict((name, pci_capture()[GPU_FUNCTION][name]) for name in env_probe.PCI_LINK_FILES)


def write_hca_link(root, hca, texts):
    """Write ``texts`` ({attribute: text or None: left out}) as /sys/class/infiniband/<hca>/device/<attribute>."""
    for name, text in texts.items():
        if text is not None:
            PROBE.put(root, "%s/%s/device/%s" % (probe_host.IB_CLASS, hca, name), text)


def put_behind_port(root, hca, port_texts, bridge="0000:00:01.0", function="0000:01:00.0"):
    """Lay <hca>/device out as the kernel does: a link to the PCI function under its upstream port's directory
    (/sys/devices/pci0000:00/<bridge>/<function>), and write ``port_texts`` ({attribute: text}) in <bridge>: the
    upstream port's max_link_speed and max_link_width."""
    base = os.path.join(str(root), "sys/devices/pci0000:00", bridge)
    link = os.path.join(str(root), "sys/class/infiniband", hca, "device")
    target = os.path.join(base, function)
    os.makedirs(base, exist_ok=True)
    if os.path.isdir(link) and not os.path.islink(link):
        shutil.move(link, target)
    else:
        os.makedirs(target)
    os.symlink(target, link)
    for name, text in port_texts.items():
        PROBE.put(root, "/sys/devices/pci0000:00/%s/%s" % (bridge, name), text)


def port_texts(speed="32.0 GT/s PCIe\n", width="16\n"):
    """An upstream port's maxima; the defaults are the capture's GPU function's words (gen5 x16)."""
    return {"max_link_speed": speed, "max_link_width": width}


def _ports(root):
    return dict((r["target"], r) for r in env_probe.probe(PROBE.host_for(root), {"groups": ["rdma"]})
                if r["check"] == "rdma.port")


def test_the_capture_is_what_nvidia_smi_says_of_the_same_gpu():
    with open(SMI_CSV, encoding="utf-8") as handle:
        [row] = [dict((k.strip(), v.strip()) for k, v in r.items()) for r in csv.DictReader(handle)]
    gpu = pci_capture()[GPU_FUNCTION]
    assert gpu["vendor"] == "0x10de\n" and row["pci.bus_id"].lower().endswith(GPU_FUNCTION.lower()[5:])
    link = env_probe.hca_pci_link(gpu)
    assert dict((k, v) for k, v in link.items() if "effective" not in k) == {
        "pcie_link_current_gen": int(row["pcie.link.gen.current"]),
        "pcie_link_current_width": int(row["pcie.link.width.current"]),
        "pcie_link_max_gen": int(row["pcie.link.gen.max"]), "pcie_link_max_width": int(row["pcie.link.width.max"])}
    assert link == {"pcie_link_current_gen": 5, "pcie_link_current_width": 16, "pcie_link_max_gen": 5,
                    "pcie_link_max_width": 16, "pcie_link_effective_max_gen": 5, "pcie_link_effective_max_width": 16}


def test_functions_without_link_attributes_give_no_link():
    """The capture's host bridge and virtio functions have no link files (cat: No such file): nothing, no error."""
    bare = [attrs for address, attrs in pci_capture().items() if address != GPU_FUNCTION]
    assert len(bare) >= 5 and all(attrs["current_link_speed"] is None for attrs in bare)
    assert [env_probe.hca_pci_link(attrs) for attrs in bare] == [{}] * len(bare)


def test_the_kernels_words_give_the_generation():
    for text, gen in list(KERNEL_SPEEDS.items()) + list(OLD_KERNEL_SPEEDS.items()):
        assert env_probe.pcie_gen(text + "\n") == gen, text
    for text in ("", None, "133 MHz PCI-X 533", "8x AGP", "12.0 GT/s PCIe", "32.0 GT/s PCIe extra"):
        assert env_probe.pcie_gen(text) is None, text
    assert [env_probe.pcie_width(t) for t in ("16\n", "8\n", "1\n", "0\n", "", None, "x16", "-1", "123")] == \
        [16, 8, 1, None, None, None, None, None, None]


def test_rdma_port_records_carry_the_hca_link(tmp_path):
    root = PROBE.cx4_infiniband(tmp_path)
    before = _ports(root)
    for hca in ("mlx5_0", "mlx5_1"):
        write_hca_link(root, hca, gpu_link_texts())
    after = _ports(root)
    for target, rec in after.items():
        assert results.validate(rec) == []
        assert rec["metrics"] == dict(before[target]["metrics"], pcie_link_current_gen=5, pcie_link_current_width=16,
                                      pcie_link_max_gen=5, pcie_link_max_width=16, pcie_link_effective_max_gen=5,
                                      pcie_link_effective_max_width=16)
        assert (rec["status"], rec["reason"]) == (before[target]["status"], before[target]["reason"])
    assert "pcie_link_current_gen" not in before["mlx5_0/1"]["metrics"]      # no link files: absent, not an error


def test_a_link_trained_below_its_max_width_warns_on_that_hca(tmp_path):
    """The test's edit: mlx5_1's current_link_width written as "8\\n" (the kernel's "%u\\n"), its max stays x16."""
    root = PROBE.cx4_infiniband(tmp_path)
    write_hca_link(root, "mlx5_0", gpu_link_texts())
    write_hca_link(root, "mlx5_1", dict(gpu_link_texts(), current_link_width="8\n"))
    ports = _ports(root)
    assert ports["mlx5_1/1"]["metrics"]["pcie_link_current_width"] == 8
    assert ports["mlx5_1/1"]["metrics"]["pcie_link_max_width"] == 16
    assert ports["mlx5_1/1"]["status"] == "warn"
    assert ports["mlx5_1/1"]["reason"].split("; ")[-1] == (
        "HCA PCIe link trained x8 below x16, the card's max (upstream port's not read): a degraded link (riser, "
        "slot, seating)")
    assert "HCA PCIe link" not in (ports["mlx5_0/1"]["reason"] or "")


def test_unknown_unreadable_and_partial_links_are_absent(tmp_path):
    """"Unknown" (a speed past the kernel's table), an unreadable attribute (a directory where the file should be:
    the read fails as EINVAL would) and a missing max: only what was read is recorded, never an error."""
    root = PROBE.cx4_infiniband(tmp_path)
    write_hca_link(root, "mlx5_0", dict(gpu_link_texts(), current_link_speed="Unknown\n", max_link_width=None))
    os.makedirs(os.path.join(str(root), "sys/class/infiniband/mlx5_1/device/current_link_width"))
    write_hca_link(root, "mlx5_1", dict(gpu_link_texts(), current_link_width=None))
    ports = _ports(root)
    assert {k: v for k, v in ports["mlx5_0/1"]["metrics"].items() if k.startswith("pcie")} == {
        "pcie_link_current_width": 16, "pcie_link_max_gen": 5, "pcie_link_effective_max_gen": 5}
    assert {k: v for k, v in ports["mlx5_1/1"]["metrics"].items() if k.startswith("pcie")} == {
        "pcie_link_current_gen": 5, "pcie_link_max_gen": 5, "pcie_link_max_width": 16,
        "pcie_link_effective_max_gen": 5, "pcie_link_effective_max_width": 16}
    assert all(r["status"] in ("pass", "warn") and "HCA PCIe" not in (r["reason"] or "") for r in ports.values())


def _pcie(rec):
    return dict((k, v) for k, v in rec["metrics"].items() if k.startswith("pcie"))


def test_an_x16_card_in_an_x8_slot_is_a_design_not_a_fault(tmp_path):
    """The test's edit: mlx5_0 behind an upstream port whose max_link_width is "8\n"; the card (max x16) trained
    at x8: the most both ends support, no warn; the effective max says x8."""
    root = PROBE.cx4_infiniband(tmp_path)
    write_hca_link(root, "mlx5_0", dict(gpu_link_texts(), current_link_width="8\n"))
    put_behind_port(root, "mlx5_0", port_texts(width="8\n"))
    rec = _ports(root)["mlx5_0/1"]
    assert _pcie(rec) == {"pcie_link_current_gen": 5, "pcie_link_current_width": 8, "pcie_link_max_gen": 5,
                          "pcie_link_max_width": 16, "pcie_link_upstream_max_gen": 5, "pcie_link_upstream_max_width": 8,
                          "pcie_link_effective_max_gen": 5, "pcie_link_effective_max_width": 8}
    assert "HCA PCIe" not in (rec["reason"] or "") and results.validate(rec) == []
    assert rec["facts"]["pci_address"] == "0000:01:00.0"          # the link the kernel has, resolved


def test_a_link_trained_at_x8_in_an_x16_slot_warns(tmp_path):
    root = PROBE.cx4_infiniband(tmp_path)
    write_hca_link(root, "mlx5_0", dict(gpu_link_texts(), current_link_width="8\n"))
    put_behind_port(root, "mlx5_0", port_texts())
    rec = _ports(root)["mlx5_0/1"]
    assert _pcie(rec)["pcie_link_effective_max_width"] == 16 and rec["status"] == "warn"
    assert rec["reason"].split("; ")[-1] == (
        "HCA PCIe link trained x8 below x16, the lower max of the card (x16) and its upstream port (x16): a degraded "
        "link (riser, slot, seating)")


def test_a_slower_link_than_both_ends_support_warns_a_gen5_card_in_a_gen4_slot_does_not(tmp_path):
    """The test's edits: "16.0 GT/s PCIe" (the kernel's words for gen4) as the trained speed, and as the upstream
    port's max speed."""
    root = PROBE.cx4_infiniband(tmp_path)
    for hca in ("mlx5_0", "mlx5_1"):
        write_hca_link(root, hca, dict(gpu_link_texts(), current_link_speed="16.0 GT/s PCIe\n"))
    put_behind_port(root, "mlx5_0", port_texts())
    put_behind_port(root, "mlx5_1", port_texts(speed="16.0 GT/s PCIe\n"), bridge="0000:00:02.0",
                    function="0000:02:00.0")
    ports = _ports(root)
    assert ports["mlx5_0/1"]["reason"].split("; ")[-1] == (
        "HCA PCIe link trained gen4 below gen5, the lower max of the card (gen5) and its upstream port (gen5): a "
        "degraded link (riser, slot, seating)")
    assert _pcie(ports["mlx5_1/1"])["pcie_link_effective_max_gen"] == 4
    assert "HCA PCIe" not in (ports["mlx5_1/1"]["reason"] or "")


def test_missing_upstream_attributes_fall_back_to_the_cards_own_max(tmp_path):
    """An upstream port with no link attributes (as the capture's host bridge: no such file), and a function on the
    root bus (its parent is pci0000:00, not a PCI function): the card's max is the comparison; nothing missing warns."""
    root = PROBE.cx4_infiniband(tmp_path)
    write_hca_link(root, "mlx5_0", dict(gpu_link_texts(), current_link_width="8\n"))
    put_behind_port(root, "mlx5_0", {})
    write_hca_link(root, "mlx5_1", dict(gpu_link_texts(), max_link_width=None))
    put_behind_port(root, "mlx5_1", {}, bridge="", function="0000:00:06.0")
    PROBE.put(root, "/sys/devices/pci0000:00/max_link_width", "32\n")      # never read: not a PCI function
    ports = _ports(root)
    assert "pcie_link_upstream_max_width" not in ports["mlx5_0/1"]["metrics"]
    assert ports["mlx5_0/1"]["reason"].split("; ")[-1].startswith(
        "HCA PCIe link trained x8 below x16, the card's max (upstream port's not read)")
    assert _pcie(ports["mlx5_1/1"]) == {"pcie_link_current_gen": 5, "pcie_link_current_width": 16,
                                        "pcie_link_max_gen": 5, "pcie_link_effective_max_gen": 5}
    assert "HCA PCIe" not in (ports["mlx5_1/1"]["reason"] or "")


_TEXTS = [text for attrs in pci_capture().values() for text in attrs.values() if text]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.fixed_dictionaries(dict((name, st.one_of(st.none(), st.text(max_size=30),
                                                   st.sampled_from(_TEXTS).flatmap(mutated_text)))
                                  for name in env_probe.PCI_LINK_FILES
                                  + tuple("upstream_" + n for n in env_probe.PCI_UPSTREAM_FILES))))
def test_fuzzed_link_texts_never_raise(files):
    link = env_probe.hca_pci_link(files)
    assert set(link) <= {"pcie_link_%s_%s" % (w, k) for w in ("current", "max", "upstream_max", "effective_max")
                         for k in ("gen", "width")}
    assert all(link[k] in range(1, 7) for k in link if k.endswith("_gen"))
    assert all(isinstance(link[k], int) and 0 < link[k] < 100 for k in link if k.endswith("_width"))
    for status, reason in env_probe.hca_pci_link_verdicts(link):
        assert status == "warn" and reason.startswith("HCA PCIe link trained ")


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
@given(st.sampled_from(_TEXTS).flatmap(mutated_text), st.sampled_from(env_probe.PCI_LINK_FILES))
def test_the_probe_survives_fuzzed_link_files(tmp_path_factory, text, name):
    root = PROBE.cx4_infiniband(tmp_path_factory.mktemp("fuzz"))
    write_hca_link(root, "mlx5_0", dict(gpu_link_texts(), **{name: text}))
    ports = _ports(root)
    assert set(ports) == {"mlx5_0/1", "mlx5_1/1"}
    assert all(results.validate(r) == [] and r["status"] in ("pass", "warn") for r in ports.values())
