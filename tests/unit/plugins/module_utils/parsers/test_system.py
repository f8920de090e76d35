# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""System parsers on real captures of the lent H100 VM and of the Debian 12 development machine."""

from __future__ import annotations

import os

import pytest

from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import ParseError
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import system
from ansible_collections.aifabric.acceptance.tests.unit.helpers import parser_fixture

HERE = os.path.dirname(os.path.abspath(__file__))
MISC = parser_fixture("misc")


def read(name):
    with open(os.path.join(MISC, name), encoding="utf-8") as handle:
        return handle.read()


def test_os_release():
    ubuntu = system.parse_os_release(read("ubuntu2404-h100vm-os-release.txt"))
    assert (ubuntu["ID"], ubuntu["VERSION_ID"], ubuntu["PRETTY_NAME"]) == ("ubuntu", "24.04", "Ubuntu 24.04.3 LTS")
    assert ubuntu["VERSION_CODENAME"] == "noble"  # unquoted value
    debian = system.parse_os_release(read("debian12-testbed-os-release.txt"))
    assert (debian["ID"], debian["VERSION_ID"]) == ("debian", "12")
    with pytest.raises(ParseError, match="unreadable line"):
        system.parse_os_release("this is not os-release\n")


def test_cpuinfo():
    h100 = system.parse_cpuinfo(read("ubuntu2404-h100vm-cpuinfo.txt"))
    assert h100 == {"model": "Intel(R) Xeon(R) Processor", "vendor": "GenuineIntel", "logical_cpus": 16,
                    "sockets": 1, "cores_per_socket": 16, "hypervisor": True}
    dev = system.parse_cpuinfo(read("debian12-testbed-cpuinfo.txt"))
    assert dev["model"] == "AMD EPYC" and dev["logical_cpus"] == 2 and dev["vendor"] == "AuthenticAMD"


def test_meminfo():
    mem = system.parse_meminfo(read("ubuntu2404-h100vm-meminfo.txt"))
    assert mem["MemTotal"] == 131981020 * 1024
    assert mem["MemAvailable"] == 131497196 * 1024
    assert mem["HugePages_Total"] == 0 and mem["Hugepagesize"] == 2048 * 1024  # counts stay counts
    assert system.parse_meminfo(read("debian12-testbed-meminfo.txt"))["MemTotal"] == 24684096 * 1024
    with pytest.raises(ParseError, match="no MemTotal"):
        system.parse_meminfo("MemFree: 1 kB\n")


def test_node_meminfo_is_not_proc_meminfo():
    # /sys/devices/system/node/node0/meminfo prefixes 'Node 0': env_probe reads it with its own regex
    with pytest.raises(ParseError, match="unreadable line 'Node 0 MemTotal"):
        system.parse_meminfo(read("ubuntu2404-h100vm-node0-meminfo.txt"))


def test_cmdline_hints():
    h100 = system.parse_cmdline(read("ubuntu2404-h100vm-cmdline.txt"))
    assert h100["params"] == {"pci": "realloc=off"}  # words after '--' belong to init and are ignored
    assert h100["pci_options"] == ["realloc=off"]
    assert h100["iommu_passthrough"] is False and h100["iommu_off"] is False and h100["iommu_requested"] is None
    assert system.parse_cmdline(read("debian12-testbed-cmdline.txt"))["params"] == {}


def test_cmdline_iommu_words():
    # the kernel's documented spellings (Documentation/admin-guide/kernel-parameters.txt)
    hints = system.parse_cmdline("BOOT_IMAGE=/vmlinuz intel_iommu=on iommu=pt pcie_acs_override=downstream,multifunction")
    assert hints["iommu_passthrough"] is True and hints["iommu_requested"] is True
    assert hints["acs_override"] == "downstream,multifunction" and hints["acs_config"] is None
    assert system.parse_cmdline("amd_iommu=off")["iommu_off"] is True
    assert system.parse_cmdline("pci=noats pci=realloc=off")["pci_options"] == ["noats", "realloc=off"]


def test_modules():
    mods = system.parse_modules(read("ubuntu2404-h100vm-modules.txt"))
    assert mods == {"nvidia_uvm": {"size": 1830912, "refcount": None, "state": "Live"},
                    "nvidia": {"size": 14299136, "refcount": None, "state": "Live"}}
    with pytest.raises(ParseError):
        system.parse_modules("garbage\n")


def test_cpulist_and_choice():
    assert system.parse_cpulist("0-15") == 16
    assert system.parse_cpulist("48-63,176-191") == 32  # from topo-m-8gpu-nv12-10nic-nic-legend-tabs.txt
    assert system.parse_cpulist("") == 0
    with pytest.raises(ParseError):
        system.parse_cpulist("5-1")
    assert system.parse_selected("always [madvise] never\n") == "madvise"  # both machines print this
    assert system.summarize_values(["performance\n"] * 3) == ("performance", {"performance": 3})
    assert system.summarize_values(["performance", "powersave"]) == ("mixed", {"performance": 1, "powersave": 1})


def test_ldconfig_nccl():
    libs = system.parse_ldconfig(read("ubuntu2404-h100vm-ldconfig-p.txt"))
    assert libs == [{"name": "libnccl.so.2", "arch": "libc6,x86-64", "path": "/lib/x86_64-linux-gnu/libnccl.so.2"},
                    {"name": "libnccl.so", "arch": "libc6,x86-64", "path": "/lib/x86_64-linux-gnu/libnccl.so"}]
    assert len(system.parse_ldconfig(read("ubuntu2404-h100vm-ldconfig-p.txt"), prefix="lib")) > 500
    assert system.nccl_version_from_filename("libnccl.so.2.28.3") == "2.28.3"
    assert system.nccl_version_from_filename("libnccl.so.2") is None


def test_python_probe_outputs():
    venv = system.parse_probe(read("ubuntu2404-h100vm-python-probe-torch-venv.txt"))
    assert venv["python_version"] == "3.12.3" and venv["executable"] == "/opt/torch/.venv/bin/python3"
    assert venv["packages"]["torch"] == "2.11.0" and venv["packages"]["vllm"] is None
    assert venv["torch_nccl_version"] == "2.28.9" and venv["torch_version"] == "2.11.0+cu130"
    assert venv["packages"]["nvidia-nccl-cu13"] == "2.28.9"
    # the H200 x2 host's torch reported the same NCCL as a tuple: '2.11.0+cu130 (2, 28, 9)' (env.txt)
    assert "(2, 28, 9)" in read("h200x2-nccl-tests-2.19.6/env.txt")
    plain = system.parse_probe(read("ubuntu2404-h100vm-python-probe-system-python.txt"))
    assert plain["packages"] == {"torch": None, "numpy": None} and "torch_nccl_version" not in plain
    with pytest.raises(ParseError, match="no AIFABRIC_PROBE_JSON"):
        system.parse_probe("Traceback (most recent call last):\n")
    with pytest.raises(ParseError, match="unreadable"):
        system.parse_probe(system.PROBE_MARKER + "{not json")


def test_pip_freeze_digest():
    lines, digest = system.parse_pip_freeze(read("ubuntu2404-h100vm-pip-freeze.txt"))
    assert len(lines) == 196 and "nvidia-nccl-cu13==2.28.9" in lines
    assert len(digest) == 64
    # order and blank lines do not change the digest; a version does
    shuffled = "\n".join(reversed(read("ubuntu2404-h100vm-pip-freeze.txt").splitlines())) + "\n\n"
    assert system.parse_pip_freeze(shuffled)[1] == digest
    bumped = read("ubuntu2404-h100vm-pip-freeze.txt").replace("nvidia-nccl-cu13==2.28.9", "nvidia-nccl-cu13==2.28.3")
    assert system.parse_pip_freeze(bumped)[1] != digest
