# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""env_probe record layer on fake hosts built from REAL captures.

The fake /proc, /sys, /etc trees in tmp_path hold only values captured on real machines:
the lent H100 VM (misc/ubuntu2404-h100vm-*, nvidia_smi/driver580-h100-*, its /sys listings
noted in misc/PROVENANCE.md) and, for RDMA, the CX-4 host behind misc/ibstat-cx4-... and
show_gids/cx4-... (the sysfs files are written from those two parsed captures). Command
outputs are the captured files. Where a test damages a capture (ECC errors, a narrow link),
it edits the real text and says so.
"""

from __future__ import annotations

import os

from ansible_collections.aifabric.acceptance.plugins.module_utils import env_probe, probe_host, results
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import ToolTimeout
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import rdma
from ansible_collections.aifabric.acceptance.plugins.module_utils.runner import Run
from ansible_collections.aifabric.acceptance.tests.unit.helpers import parser_fixture

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = parser_fixture()
SMI = "/usr/bin/nvidia-smi"
PY = "/opt/torch/.venv/bin/python3"


def read(rel):
    with open(os.path.join(FIXTURES, rel), encoding="utf-8") as handle:
        return handle.read()


def put(root, path, text=""):
    full = os.path.join(str(root), path.lstrip("/"))
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w", encoding="utf-8") as handle:
        handle.write(text)


def h100_tree(root):
    """The lent H100 VM (Ubuntu 24.04), from its captures."""
    put(root, "/etc/os-release", read("misc/ubuntu2404-h100vm-os-release.txt"))
    put(root, "/proc/cpuinfo", read("misc/ubuntu2404-h100vm-cpuinfo.txt"))
    put(root, "/proc/meminfo", read("misc/ubuntu2404-h100vm-meminfo.txt"))
    put(root, "/proc/cmdline", read("misc/ubuntu2404-h100vm-cmdline.txt"))
    put(root, "/proc/modules", read("misc/ubuntu2404-h100vm-modules.txt"))
    put(root, "/proc/sys/kernel/osrelease", "6.18.44-fc-v657-gpu\n")
    put(root, "/proc/sys/kernel/version", "#1 SMP PREEMPT_DYNAMIC @0\n")
    put(root, "/sys/devices/system/cpu/online", "0-15\n")
    put(root, "/sys/devices/system/cpu/cpu0/uevent", "")  # no cpufreq/ on that VM
    put(root, "/sys/devices/system/node/node0/cpulist", "0-15\n")
    put(root, "/sys/devices/system/node/node0/meminfo", read("misc/ubuntu2404-h100vm-node0-meminfo.txt"))
    put(root, "/sys/kernel/mm/transparent_hugepage/enabled", "always [madvise] never\n")
    for size in ("hugepages-1048576kB", "hugepages-2048kB"):
        os.makedirs(os.path.join(str(root), "sys/kernel/mm/hugepages", size))
    for name in ("ib_core", "mlx5_core", "mlx5_ib", "nvidia", "nvidia_uvm"):  # its /sys/module listing
        os.makedirs(os.path.join(str(root), "sys/module", name))
    os.makedirs(os.path.join(str(root), "sys/class/infiniband"))  # present but empty there
    # its NCCL files (find / -name 'libnccl.so*'): .so -> .so.2 -> .so.2.28.3, /lib -> usr/lib (merged /usr)
    lib = os.path.join(str(root), "usr/lib/x86_64-linux-gnu")
    put(root, "/usr/lib/x86_64-linux-gnu/libnccl.so.2.28.3", "")
    os.symlink("libnccl.so.2.28.3", os.path.join(lib, "libnccl.so.2"))
    os.symlink("libnccl.so.2", os.path.join(lib, "libnccl.so"))
    os.symlink("usr/lib", os.path.join(str(root), "lib"))
    return root


KERNEL_STATE = {"Active": "4: ACTIVE", "Down": "1: DOWN"}
KERNEL_PHYS = {"LinkUp": "5: LinkUp", "Disabled": "3: Disabled"}
KERNEL_RATE = {"100": "100 Gb/sec (4X EDR)", "10": "10 Gb/sec (4X SDR)"}  # the kernel's words for those rates


def cx4_infiniband(root):
    """/sys/class/infiniband of the CX-4 host, written from its ibstat and show_gids captures."""
    cas = rdma.parse_ibstat(read("misc/ibstat-cx4-mlx5-eth-active-and-ib-down.txt"))
    gids = rdma.parse_show_gids(read("show_gids/cx4-roce-plus-ib-port-empty-netdev-spaces.txt"))
    for ca in cas:
        base = "/sys/class/infiniband/" + ca["ca"]
        guid = ca["node_guid"][2:]
        put(root, base + "/node_guid", ":".join(guid[i:i + 4] for i in range(0, 16, 4)) + "\n")
        put(root, base + "/fw_ver", ca["firmware_version"] + "\n")
        put(root, base + "/hca_type", ca["ca_type"] + "\n")
        for port in ca["ports"]:
            pbase = "%s/ports/%d" % (base, port["port"])
            put(root, pbase + "/state", KERNEL_STATE[port["state"]] + "\n")
            put(root, pbase + "/phys_state", KERNEL_PHYS[port["physical_state"]] + "\n")
            put(root, pbase + "/rate", KERNEL_RATE[port["rate"]] + "\n")
            put(root, pbase + "/link_layer", port["link_layer"] + "\n")
            for row in gids:
                if row["dev"] != ca["ca"] or row["port"] != port["port"]:
                    continue
                put(root, "%s/gids/%d" % (pbase, row["index"]), row["gid"] + "\n")
                put(root, "%s/gid_attrs/types/%d" % (pbase, row["index"]),
                    ("RoCE v2" if row["type"] == "RoCE v2" else "IB/RoCE v1") + "\n")
                if row["netdev"]:
                    put(root, "%s/gid_attrs/ndev/%d" % (pbase, row["index"]), row["netdev"] + "\n")
                    put(root, "%s/device/net/%s/dev_port" % (base, row["netdev"]), "0\n")
            # an empty slot: all zeros; its gid_attrs/types read fails with EINVAL (no file here)
            put(root, "%s/gids/%d" % (pbase, 5), "0000:0000:0000:0000:0000:0000:0000:0000\n")
    return root


class FakeCommands(object):
    """Canned outputs of the captured commands; records every argv."""

    def __init__(self, overrides=None):
        self.calls = []
        self.outputs = {
            (SMI, "-q", "-x"): (0, read("nvidia_smi/driver580-h100-80gb-hbm3-q-x.xml")),
            (SMI, "topo", "-m"): (0, read("nvidia_smi/driver580-h100-topo-m-1gpu.txt")),
            (SMI, "nvlink", "-s"): (0, read("nvidia_smi/driver580-h100-nvlink-s-empty.txt")),
            ("/sbin/ldconfig", "-p"): (0, read("misc/ubuntu2404-h100vm-ldconfig-p.txt")),
            (PY, "-I", "-m", "pip", "freeze", "--all"): (0, read("misc/ubuntu2404-h100vm-pip-freeze.txt")),
            "probe": (0, read("misc/ubuntu2404-h100vm-python-probe-torch-venv.txt")),
            "csv": (0, read("nvidia_smi/driver580-h100-query-gpu-27fields-noheader-nounits.csv")),
        }
        self.outputs.update(overrides or {})

    def __call__(self, argv, timeout_s):
        self.calls.append((list(argv), timeout_s))
        if argv[1:4] == ["-I", "-c", env_probe.PYTHON_PROBE]:
            key = "probe"
        elif argv[1].startswith("--query-gpu="):
            key = "csv"
        else:
            key = tuple(argv)
        value = self.outputs[key]
        if isinstance(value, Exception):
            raise value
        return Run(list(argv), value[0], value[1], "", 0.01)


def host_for(root, commands=None, memlock=(-1, -1), environ=None, gpu=True):
    tools = {"nvidia-smi": SMI if gpu else None, "ldconfig": "/sbin/ldconfig"}
    return probe_host.Host(run=commands or FakeCommands(), which=tools.get, root=str(root),
                           environ=environ if environ is not None else {}, memlock=memlock, executable=PY)


def by(records, check, target=None):
    found = [r for r in records if r["check"] == check and (target is None or r["target"] == target)]
    assert found, "no %s record (target %s)" % (check, target)
    return found[0]


def test_h100_vm_as_captured(tmp_path):
    records = env_probe.probe(host_for(h100_tree(tmp_path)), {"timeout_s": 30, "pip_freeze": True})
    for record in records:
        assert results.validate(record) == []
    env_os = by(records, "env.os")
    assert env_os["facts"]["os_pretty_name"] == "Ubuntu 24.04.3 LTS"
    assert env_os["facts"]["kernel_version"] == "6.18.44-fc-v657-gpu"
    assert env_os["facts"]["os_version"] == "24.04"
    assert by(records, "env.cpu")["metrics"]["cpu_logical_count"] == 16
    assert by(records, "env.cpu_governor")["status"] == "skip"
    assert by(records, "env.numa")["facts"]["numa_cpulists"] == {"node0": "0-15"}
    assert by(records, "env.numa")["facts"]["numa_mem_total_bytes"] == {"node0": 5860848 * 1024}
    modules = by(records, "env.kernel_modules")
    assert modules["facts"]["kernel_modules"]["nvidia"] == "loaded"
    assert modules["facts"]["kernel_modules"]["mlx5_core"] == "builtin"
    assert modules["status"] == "pass"  # no RDMA device, so no peer-memory warning
    hugepages = by(records, "env.hugepages")["facts"]
    assert hugepages == {"transparent_hugepage": "madvise", "hugepage_sizes": ["1048576kB", "2048kB"]}
    system_nccl = by(records, "env.nccl", "system")
    assert system_nccl["facts"]["nccl_version"] == "2.28.3"
    assert system_nccl["facts"]["nccl_libraries"] == {"/usr/lib/x86_64-linux-gnu/libnccl.so.2.28.3": "2.28.3"}
    python_nccl = by(records, "env.nccl", "python:" + PY)
    assert python_nccl["facts"]["nccl_version"] == "2.28.9"
    assert python_nccl["facts"]["nccl_source"] == "torch.cuda.nccl.version()"
    assert by(records, "env.package", PY + ":torch")["facts"]["version"] == "2.11.0"
    assert by(records, "env.package", PY + ":vllm")["status"] == "skip"
    assert by(records, "env.pip_freeze")["metrics"]["package_count"] == 196
    inventory = by(records, "gpu.inventory")
    assert inventory["status"] == "pass"
    assert inventory["facts"]["driver_version"] == "580.159.04" and inventory["facts"]["cuda_version"] == "13.0"
    assert inventory["metrics"]["gpu_count"] == 1
    device = by(records, "gpu.device", "0")
    assert device["status"] == "pass", device["reason"]
    assert device["facts"]["serial"] == "1752524009576"
    assert device["metrics"]["pcie_link_current_width"] == 16
    assert device["facts"]["clocks_event_reasons_active"] == ["gpu_idle"]
    assert by(records, "gpu.topology")["facts"]["cpu_affinity"] == {"GPU0": "0-15"}
    rdma_inv = by(records, "rdma.inventory")
    assert rdma_inv["status"] == "skip" and rdma_inv["reason"] == "no RDMA device: /sys/class/infiniband is empty"
    assert results.count(records)["error"] == 0 and results.count(records)["fail"] == 0


def test_commands_are_argv_lists_with_the_timeout(tmp_path):
    commands = FakeCommands()
    env_probe.probe(host_for(h100_tree(tmp_path), commands), {"timeout_s": 17, "pip_freeze": True})
    assert commands.calls
    for argv, timeout in commands.calls:
        assert isinstance(argv, list) and all(isinstance(a, str) for a in argv)
        assert timeout == 17
    probe_argv = [call[0] for call in commands.calls if call[0][1:3] == ["-I", "-c"]][0]
    assert probe_argv[0] == PY and probe_argv[-1] == "--torch-nccl"
    assert probe_argv[4:8] == ["torch", "sglang", "vllm", "deepspeed"]


def test_cpu_node_without_gpu_or_rdma(tmp_path):
    records = env_probe.probe(host_for(tmp_path, gpu=False), {"groups": ["gpu", "rdma"]})
    assert [(r["check"], r["status"], r["reason"]) for r in records] == [
        ("gpu.inventory", "skip", "no NVIDIA GPU/driver: nvidia-smi not found"),
        ("rdma.inventory", "skip", "no RDMA device: /sys/class/infiniband is absent")]


def test_expected_gpus_on_a_cpu_node_fail(tmp_path):
    records = env_probe.probe(host_for(tmp_path, gpu=False), {"groups": ["gpu"], "expect": {"gpu_count": 8}})
    assert records[0]["status"] == "fail"
    assert records[0]["reason"] == "no NVIDIA GPU/driver: nvidia-smi not found, but expect.gpu_count is 8"


def test_nvidia_smi_sees_no_gpu(tmp_path):
    quoted = read("failures/nvidia-smi-no-devices-were-found-quoted.txt").splitlines()[1]
    commands = FakeCommands({(SMI, "-q", "-x"): (6, quoted + "\n")})
    records = env_probe.probe(host_for(tmp_path, commands), {"groups": ["gpu"]})
    assert [(r["check"], r["status"]) for r in records] == [("gpu.inventory", "skip")]
    assert "No devices were found" in records[0]["reason"]


def test_broken_xml_falls_back_to_the_csv(tmp_path):
    xml = read("nvidia_smi/driver580-h100-80gb-hbm3-q-x.xml")
    commands = FakeCommands({(SMI, "-q", "-x"): (0, xml[: len(xml) // 3])})
    records = env_probe.probe(host_for(tmp_path, commands), {"groups": ["gpu"]})
    inventory = by(records, "gpu.inventory")
    assert inventory["status"] == "pass"
    assert inventory["facts"]["source"].startswith("nvidia-smi --query-gpu (fallback: nvidia-smi -q -x output is not")
    assert inventory["facts"]["cuda_version"] is None  # the CSV does not carry it
    device = by(records, "gpu.device", "0")
    assert device["facts"]["uuid"] == "GPU-ee17be5e-dcd8-4578-ddd6-49176a9e38ab"  # the CSV's GPU
    assert device["metrics"]["power_draw_w"] == 111.75


def test_both_gpu_outputs_broken_is_an_error_with_the_output(tmp_path):
    xml = read("nvidia_smi/driver580-h100-80gb-hbm3-q-x.xml")
    bad_csv = read("failures/nvidia-smi-query-gpu-invalid-field-driver580.txt").splitlines()[1]
    commands = FakeCommands({(SMI, "-q", "-x"): (0, xml[:500]), "csv": (0, bad_csv + "\n")})
    records = env_probe.probe(host_for(tmp_path, commands), {"groups": ["gpu"]})
    assert [(r["check"], r["status"]) for r in records] == [("gpu.inventory", "error")]
    assert "not a valid field" in records[0]["raw"] or "not a valid field" in records[0]["reason"]


def test_nvidia_smi_timeout_is_an_error_record(tmp_path):
    timeout = ToolTimeout("nvidia-smi timed out after 30s on node and was killed",
                          cmd=[SMI, "-q", "-x"], stdout_tail="", stderr_tail="")
    commands = FakeCommands({(SMI, "-q", "-x"): timeout})
    records = env_probe.probe(host_for(tmp_path, commands), {"groups": ["gpu"], "timeout_s": 30})
    assert records[0]["status"] == "error" and "timed out after 30s" in records[0]["reason"]
    assert records[0]["params"]["argv"] == [SMI, "-q", "-x"]


def _damaged_xml(**edits):
    """The real H100 XML with named values changed (the tests that use it say which)."""
    xml = read("nvidia_smi/driver580-h100-80gb-hbm3-q-x.xml")
    for old, new in edits.values():
        assert old in xml
        xml = xml.replace(old, new, 1)
    return xml


def test_gpu_health_rules_name_the_values(tmp_path):
    xml = _damaged_xml(
        ecc=("<dram_uncorrectable>0</dram_uncorrectable>", "<dram_uncorrectable>3</dram_uncorrectable>"),
        width=("<current_link_width>16x</current_link_width>", "<current_link_width>8x</current_link_width>"),
        gen=("<current_link_gen>5</current_link_gen>", "<current_link_gen>1</current_link_gen>"),
        thermal=("<clocks_event_reason_hw_thermal_slowdown>Not Active",
                 "<clocks_event_reason_hw_thermal_slowdown>Active"),
        pending=("<remapped_row_pending>No</remapped_row_pending>", "<remapped_row_pending>Yes</remapped_row_pending>"),
    )
    commands = FakeCommands({(SMI, "-q", "-x"): (0, xml)})
    device = by(env_probe.probe(host_for(tmp_path, commands), {"groups": ["gpu"]}), "gpu.device", "0")
    assert device["status"] == "fail"
    assert "3 volatile uncorrectable ECC errors" in device["reason"]
    assert "PCIe link width x8 < x16 maximum" in device["reason"]
    assert "hw_thermal_slowdown is active" in device["reason"]
    assert "row remapping pending" in device["reason"]
    assert "gen" not in device["reason"].lower().replace("degraded", "")  # gen 1 < 5 at idle is not judged
    assert device["metrics"]["pcie_link_current_gen"] == 1


def test_fabric_state_and_persistence(tmp_path):
    xml = _damaged_xml(state=("<state>N/A</state>", "<state>In Progress</state>"),
                       pm=("<persistence_mode>Enabled</persistence_mode>",
                           "<persistence_mode>Disabled</persistence_mode>"))
    commands = FakeCommands({(SMI, "-q", "-x"): (0, xml)})
    device = by(env_probe.probe(host_for(tmp_path, commands), {"groups": ["gpu"], "expect": {"persistence_mode": True}}),
                "gpu.device", "0")
    assert device["status"] == "fail"
    assert "NVLink fabric state is In Progress" in device["reason"]
    assert "persistence mode is Disabled, expected Enabled" in device["reason"]


def test_gpu_expectations(tmp_path):
    params = {"groups": ["gpu"], "expect": {"gpu_count": 8, "gpu_model": "H200",
                                            "driver_version": "580.159", "cuda_version": "12.4"}}
    inventory = by(env_probe.probe(host_for(tmp_path), params), "gpu.inventory")
    assert inventory["status"] == "fail"
    assert "gpu_count is 1, expected 8" in inventory["reason"]
    assert "does not contain 'H200' on GPU 0 (NVIDIA H100 80GB HBM3)" in inventory["reason"]
    assert "cuda_version is 13.0, expected 12.4" in inventory["reason"]
    assert "driver_version" not in inventory["reason"]  # 580.159 is a prefix of 580.159.04
    assert inventory["expect"]["driver_version"] == {"version": "580.159"}
    ok = by(env_probe.probe(host_for(tmp_path), {"groups": ["gpu"], "expect": {"gpu_count": 1, "gpu_model": "h100"}}),
            "gpu.inventory")
    assert ok["status"] == "pass"


def test_rdma_ports_from_the_cx4_host(tmp_path):
    root = cx4_infiniband(tmp_path)
    records = env_probe.probe(host_for(root), {"groups": ["rdma"]})
    inventory = by(records, "rdma.inventory")
    assert inventory["metrics"] == {"hca_count": 2, "port_count": 2, "active_port_count": 1}
    assert inventory["facts"]["fw_versions"] == {"mlx5_0": "12.28.1002", "mlx5_1": "12.28.1002"}
    roce = by(records, "rdma.port", "mlx5_0/1")
    assert roce["facts"]["state"] == "ACTIVE" and roce["facts"]["link_layer"] == "Ethernet"
    assert roce["facts"]["netdev"] == "ens11f0"
    assert roce["metrics"] == {"gid_count": 2, "roce_v2_gid_count": 1, "rate_gbit_s": 100.0}
    # that host's RoCE port had only link-local GIDs (no IPv4 configured): a warning NCCL users need
    assert roce["status"] == "warn" and "no RoCE v2 GID with an IPv4 address" in roce["reason"]
    ib = by(records, "rdma.port", "mlx5_1/1")
    assert ib["status"] == "warn" and ib["reason"].startswith("port is DOWN/Disabled")
    assert ib["facts"]["gids"][0]["type"] == "IB"
    expect = {"ports_up": True, "hca_count": 2, "port_rate_gbit_s": 200}
    strict = env_probe.probe(host_for(root), {"groups": ["rdma"], "expect": expect})
    assert by(strict, "rdma.inventory")["status"] == "pass"
    assert by(strict, "rdma.port", "mlx5_1/1")["status"] == "fail"
    assert "port rate 100 Gbit/s < 200 Gbit/s expected" in by(strict, "rdma.port", "mlx5_0/1")["reason"]


def test_expected_hcas_on_a_node_without_rdma(tmp_path):
    records = env_probe.probe(host_for(tmp_path), {"groups": ["rdma"], "expect": {"hca_count": 8}})
    assert records[0]["status"] == "fail" and "expect.hca_count is 8" in records[0]["reason"]


def test_peer_memory_warning_needs_gpu_driver_and_hcas(tmp_path):
    root = cx4_infiniband(h100_tree(tmp_path))
    modules = by(env_probe.probe(host_for(root), {"groups": ["env"]}), "env.kernel_modules")
    assert modules["status"] == "warn" and "neither nvidia_peermem nor nv_peer_mem" in modules["reason"]
    required = by(env_probe.probe(host_for(root), {"groups": ["env"], "expect": {"kernel_modules": ["nvidia_peermem"]}}),
                  "env.kernel_modules")
    assert required["status"] == "fail" and "kernel module(s) not loaded: nvidia_peermem" in required["reason"]


def test_no_proc_modules_is_a_skip(tmp_path):
    records = env_probe.probe(host_for(tmp_path), {"groups": ["env"]})
    assert by(records, "env.kernel_modules")["status"] == "skip"
    assert by(records, "env.os")["status"] == "warn"  # no /etc/os-release in an empty tree


def test_memlock_and_env_vars(tmp_path):
    host = host_for(tmp_path, memlock=(8388608, 8388608),
                    environ={"NCCL_IB_HCA": "mlx5_0", "NCCL_DEBUG": "INFO", "HOME": "/root", "CUDA_HOME": "/usr/local/cuda"})
    records = env_probe.probe(host, {"groups": ["env"], "expect": {"memlock_unlimited": True},
                                     "env_vars": ["NCCL_*", "CUDA_HOME"]})
    memlock = by(records, "env.memlock")
    assert memlock["status"] == "fail" and "is 8192 KiB, expected unlimited" in memlock["reason"]
    assert memlock["facts"] == {"memlock_soft": "8388608", "memlock_hard": "8388608"}
    assert by(records, "env.env_vars")["facts"]["env"] == {
        "CUDA_HOME": "/usr/local/cuda", "NCCL_DEBUG": "INFO", "NCCL_IB_HCA": "mlx5_0"}
    unlimited = by(env_probe.probe(host_for(tmp_path), {"groups": ["env"], "expect": {"memlock_unlimited": True}}),
                   "env.memlock")
    assert unlimited["status"] == "pass" and unlimited["facts"]["memlock_soft"] == "unlimited"


def test_governor_rules(tmp_path):
    for cpu, value in (("cpu0", "performance"), ("cpu1", "powersave")):
        put(tmp_path, "/sys/devices/system/cpu/%s/cpufreq/scaling_governor" % cpu, value + "\n")
    record = by(env_probe.probe(host_for(tmp_path), {"groups": ["env"], "expect": {"governor": "performance"}}),
                "env.cpu_governor")
    assert record["status"] == "fail" and "governor is mixed (performance x1, powersave x1)" in record["reason"]


def test_software_expectations_and_missing_pip(tmp_path):
    commands = FakeCommands({(PY, "-I", "-m", "pip", "freeze", "--all"): (1, "/opt/torch/.venv/bin/python3: No module named pip\n")})
    params = {"groups": ["software"], "expect": {"nccl_version": "2.28.9", "package_versions": {"torch": "2.10", "vllm": ""}},
              "pip_freeze": True}
    records = env_probe.probe(host_for(h100_tree(tmp_path), commands), params)
    assert by(records, "env.nccl", "python:" + PY)["status"] == "pass"
    system_nccl = by(records, "env.nccl", "system")
    assert system_nccl["status"] == "fail" and "nccl_version is 2.28.3, expected 2.28.9" in system_nccl["reason"]
    assert "torch version is 2.11.0, expected 2.10" in by(records, "env.package", PY + ":torch")["reason"]
    assert by(records, "env.package", PY + ":torch")["expect"] == {"version": {"version": "2.10"}}
    assert by(records, "env.package", PY + ":vllm")["status"] == "fail"
    assert by(records, "env.package", PY + ":vllm")["expect"] == {"version": {"present": True}}
    assert by(records, "env.pip_freeze")["status"] == "skip"


def test_python_probe_failure_is_an_error_record(tmp_path):
    commands = FakeCommands({"probe": (1, "Traceback (most recent call last):\nSyntaxError: invalid syntax\n")})
    records = env_probe.probe(host_for(tmp_path, commands), {"groups": ["software"]})
    python = by(records, "env.python")
    assert python["status"] == "error" and "exited 1" in python["reason"]
    assert "SyntaxError" in python["raw"]


def test_old_interpreter_without_importlib_metadata(tmp_path):
    old = read("misc/debian12-testbed-pyenv-3.7.16-python-probe.txt")  # pyenv's Python 3.7.16
    records = env_probe.probe(host_for(tmp_path, FakeCommands({"probe": (0, old)})), {"groups": ["software"]})
    assert by(records, "env.python")["status"] == "warn"
    torch = by(records, "env.package", PY + ":torch")
    assert torch["status"] == "error" and "needs Python 3.8+" in torch["reason"]
    assert "cannot be read" in by(records, "env.nccl", "python:" + PY)["reason"]


def failure_text(rel):
    """The tool's output of a failures/ file and its exit code (the '# command:'/'# exit:' frame)."""
    lines = read(rel).splitlines()
    code = lines[-1].split(":", 1)[1].strip()
    return "\n".join(lines[1:-1]) + "\n", int(code) if code.isdigit() else 1


def h100_pci(root):
    """The H100's PCI function in sysfs, from its XML: bus 00000000:00:06.0, device 233010DE, class 3/2."""
    put(root, "/sys/bus/pci/devices/0000:00:06.0/vendor", "0x10de\n")
    put(root, "/sys/bus/pci/devices/0000:00:06.0/device", "0x2330\n")
    put(root, "/sys/bus/pci/devices/0000:00:06.0/class", "0x030200\n")
    return root


def test_gpu_on_the_pci_bus_without_nvidia_smi_is_an_error(tmp_path):
    records = env_probe.probe(host_for(h100_pci(tmp_path), gpu=False), {"groups": ["gpu"]})
    assert records[0]["status"] == "error"
    assert records[0]["reason"] == ("1 NVIDIA GPU(s) on the PCI bus that nvidia-smi does not see (nvidia-smi not "
                                    "found on PATH: install the NVIDIA driver utilities or set nvidia_smi_path): "
                                    "0000:00:06.0 (no driver)")


def test_driver_not_loaded(tmp_path):
    text, code = failure_text("failures/nvidia-smi-couldnt-communicate-with-driver.txt")
    commands = FakeCommands({(SMI, "-q", "-x"): (code, text), "csv": (code, text)})
    # a GPU node: the driver is broken -> error, with both attempts in the reason
    gpu_node = env_probe.probe(host_for(h100_pci(tmp_path / "gpu"), commands), {"groups": ["gpu"]})
    assert gpu_node[0]["status"] == "error"
    assert "nvidia-smi -q -x exited 9: NVIDIA-SMI has failed" in gpu_node[0]["reason"]
    assert "the --query-gpu fallback exited 9 too" in gpu_node[0]["reason"]
    # a CPU node built from the same image (no NVIDIA controller on the PCI bus) -> skip
    os.makedirs(os.path.join(str(tmp_path), "cpu", "sys", "bus", "pci", "devices"))
    cpu_node = env_probe.probe(host_for(tmp_path / "cpu", commands), {"groups": ["gpu"]})
    assert cpu_node[0]["status"] == "skip"
    assert cpu_node[0]["reason"].startswith("no NVIDIA GPU on the PCI bus (nvidia-smi is installed but failed")


def test_explicit_nvidia_smi_path_must_exist(tmp_path):
    records = env_probe.probe(host_for(tmp_path), {"groups": ["gpu"], "nvidia_smi_path": "/opt/nvidia/bin/nvidia-smi"})
    assert records[0]["status"] == "error" and "not found at /opt/nvidia/bin/nvidia-smi" in records[0]["reason"]


def test_a_bug_in_one_group_keeps_the_other_groups(tmp_path):
    class Broken(probe_host.Host):
        def listdir(self, path):
            if path == probe_host.IB_CLASS:
                raise RuntimeError("simulated bug")
            return super().listdir(path)

    host = Broken(run=FakeCommands(), which={}.get, root=str(h100_tree(tmp_path)), environ={}, memlock=(-1, -1))
    records = env_probe.probe(host, {"groups": ["gpu", "rdma"]})
    assert by(records, "gpu.inventory")["status"] == "skip"
    broken = by(records, "rdma.probe")
    assert broken["status"] == "error" and "internal error in the rdma probe (RuntimeError: simulated bug)" in broken["reason"]
    assert "Traceback" in broken["raw"]


def test_ib_port_without_subnet_manager(tmp_path):
    # the CX-4 host's IB port, edited to the state an IB port shows when the cable is up but no SM runs
    root = cx4_infiniband(tmp_path)
    put(root, "/sys/class/infiniband/mlx5_1/ports/1/state", "2: INIT\n")
    put(root, "/sys/class/infiniband/mlx5_1/ports/1/phys_state", "5: LinkUp\n")
    port = by(env_probe.probe(host_for(root), {"groups": ["rdma"], "expect": {"ports_up": True}}), "rdma.port", "mlx5_1/1")
    assert port["status"] == "fail"
    assert port["reason"] == "port is INIT/LinkUp: the link is up but no subnet manager has configured the port"


H200X2 = {
    (SMI, "-q", "-x"): (0, read("nvidia_smi/driver580-h200x2-q-x.xml")),
    (SMI, "topo", "-m"): (0, read("nvidia_smi/h200x2-nccl-tests-2.19.6/nvidia_smi_topo.txt")),
    (SMI, "nvlink", "-s"): (0, read("nvidia_smi/driver580-h200x2-nvlink-s.txt")),
}


def h200x2_pci(root):
    """/sys/bus/pci/devices of the 2x H200 VM, from its listing (misc/ubuntu2404-h200x2vm-sysfs-pci-nvidia.txt)."""
    for line in read("misc/ubuntu2404-h200x2vm-sysfs-pci-nvidia.txt").splitlines():
        name, vendor, device, klass = line.split()
        for attr, value in (("vendor", vendor), ("device", device), ("class", klass)):
            put(root, "/sys/bus/pci/devices/%s/%s" % (name, attr), value + "\n")
    return root


def test_h200x2_nvlink_and_fabric(tmp_path):
    records = env_probe.probe(host_for(h200x2_pci(tmp_path), FakeCommands(H200X2)), {"groups": ["gpu"]})
    gpus = env_probe.pci_functions(host_for(tmp_path), env_probe.NVIDIA_GPUS)
    assert [address for address, _class, _driver in gpus] == ["0000:00:06.0", "0000:00:07.0"]
    assert by(records, "gpu.inventory")["metrics"]["gpu_count"] == 2
    for index in ("0", "1"):
        device = by(records, "gpu.device", index)
        assert device["status"] == "pass", device["reason"]
        assert device["metrics"]["nvlink_link_count"] == 18 and device["metrics"]["nvlink_active_link_count"] == 18
        assert device["metrics"]["nvlink_link_speed_min_gbyte_s"] == 26.562
        assert (device["facts"]["fabric_state"], device["facts"]["fabric_status"]) == ("Completed", "Success")
    # GPU 1 of that VM had 40 aggregate correctable ECC errors: reported, not judged
    assert by(records, "gpu.device", "1")["metrics"]["ecc_aggregate_correctable_count"] == 40
    topology = by(records, "gpu.topology")
    assert topology["facts"]["nvlink_peers"] == {"GPU0": {"GPU1": "NV18"}, "GPU1": {"GPU0": "NV18"}}
    assert topology["metrics"]["nvlink_gpu_pair_count"] == 1


def test_degraded_nvlink_fails(tmp_path):
    # the real 2x H200 status, edited: GPU 0's links 3 and 7 shown the way nvidia-smi shows an inactive link
    text = read("nvidia_smi/driver580-h200x2-nvlink-s.txt")
    gpu0, gpu1 = text.split("GPU 1:", 1)
    gpu0 = gpu0.replace("Link 3: 26.562 GB/s", "Link 3: <inactive>").replace("Link 7: 26.562 GB/s", "Link 7: <inactive>")
    commands = FakeCommands(H200X2)
    commands.outputs[(SMI, "nvlink", "-s")] = (0, gpu0 + "GPU 1:" + gpu1)
    records = env_probe.probe(host_for(tmp_path, commands), {"groups": ["gpu"]})
    device = by(records, "gpu.device", "0")
    assert device["status"] == "fail" and "NVLink degraded: 16 of 18 links active (inactive: 3, 7)" in device["reason"]
    assert device["facts"]["nvlink_inactive_links"] == [3, 7]
    assert by(records, "gpu.device", "1")["status"] == "pass"


def test_unreadable_nvlink_status_is_a_topology_warning(tmp_path):
    commands = FakeCommands(H200X2)
    commands.outputs[(SMI, "nvlink", "-s")] = (0, "GPU 0: NVIDIA H200\n\tgarbage\n")
    topology = by(env_probe.probe(host_for(tmp_path, commands), {"groups": ["gpu"]}), "gpu.topology")
    assert topology["status"] == "warn" and "NVLink link status unreadable" in topology["reason"]
