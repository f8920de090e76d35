# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""aifabric.acceptance.fabric_topology's other LLDP sources, through main with fake executables on PATH that print
REAL captures: open-lldp's lldptool (lldpad 1.1 against lldpd; without lldpad; an interface lldpad does not
manage) and an Ascend host's npu-smi + hccn_tool -lldp -g (a real 8x 910B2 npu-smi info, a real hccn_tool LLDP
output); miscabling against the declared ports, missing tools. sysfs is a test tree (NET_CLASS, IB_CLASS)."""
from __future__ import annotations

import os
import shlex
import stat

import pytest
from ansible.module_utils import basic

from ansible_collections.aifabric.acceptance.plugins.module_utils import env_probe, probe_host, results
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import ToolTimeout
from ansible_collections.aifabric.acceptance.plugins.module_utils.runner import Run
from ansible_collections.aifabric.acceptance.plugins.modules import fabric_topology
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import fabric_topology as topology_tool
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import cabling
from ansible_collections.aifabric.acceptance.tests.unit.helpers import parser_fixture
from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules.module_harness import patch_exits, run_main

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "fixtures", "topology")
TOOLS = ("lldpctl", "lldptool", "npu-smi", "hccn_tool")


def fixture(name):
    return os.path.join(FIXTURES, "lldpad-1.1-lldptool-t-n-i-%s.txt" % name)


NPU_SMI = parser_fixture("npu_smi", "vllm-ascend-issue362-npu-smi-23.0.7-8x910B2-info.txt")
HCCN_FULL = parser_fixture("hccn_tool", "arthurchiao-910b1-hccn-tool-i3-lldp-g-huawei-vrp-switch.txt")
HCCN_GREP = parser_fixture("hccn_tool", "deepseekv3-910b3-8npu-hccn-tool-lldp-g-grep-ifname-loop-i0-7.txt")
EMPTY = fixture("eth2-no-neighbour")


@pytest.fixture
def host(tmp_path, monkeypatch):
    """A host: fake tools in a bin directory (the only place get_bin_path finds TOOLS) and a sysfs test tree with
    eth0 (mlx5_0's interface), eth1, eth2 (NICs: a device link), lo and docker0 (no device)."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for netdev in ("eth0", "eth1", "eth2"):
        (tmp_path / "sys/class/net" / netdev / "device").mkdir(parents=True)
    for netdev in ("lo", "docker0"):
        (tmp_path / "sys/class/net" / netdev).mkdir(parents=True)
    (tmp_path / "sys/class/infiniband/mlx5_0/device/net/eth0").mkdir(parents=True)
    monkeypatch.setattr(topology_tool, "NET_CLASS", str(tmp_path / "sys/class/net"))
    monkeypatch.setattr(topology_tool, "IB_CLASS", str(tmp_path / "sys/class/infiniband"))
    monkeypatch.setattr(env_probe, "HCCN_TOOL_PATHS", (str(tmp_path / "Ascend/driver/tools/hccn_tool"),))
    real = basic.AnsibleModule.get_bin_path

    def get_bin_path(self, name, *args, **kwargs):
        if name in TOOLS:
            return str(bindir / name) if (bindir / name).exists() else None
        return real(self, name, *args, **kwargs)
    monkeypatch.setattr(basic.AnsibleModule, "get_bin_path", get_bin_path)
    patch_exits(monkeypatch)
    log = tmp_path / "argv"

    def tool(name, by_arg=None, default=(EMPTY, 0), arg=4):
        """``name`` prints the capture of its ``arg``-th argument (``by_arg``: {value: (file, rc)}), else ``default``;
        rc 255 writes to stderr (lldptool's perror), other statuses to stdout (its printf). Logs each argv."""
        cases = "".join("  %s) cat %s%s; exit %d;;\n" % (shlex.quote(str(value)), shlex.quote(path),
                                                         " >&2" if rc == 255 else "", rc)
                        for value, (path, rc) in sorted((by_arg or {}).items()))
        path, rc = default
        script = bindir / name
        script.write_text("#!/bin/sh\necho %s \"$@\" >> %s\ncase \"$%d\" in\n%s  *) cat %s%s; exit %d;;\nesac\n" % (
            name, shlex.quote(str(log)), arg, cases, shlex.quote(path), " >&2" if rc == 255 else "", rc))
        script.chmod(script.stat().st_mode | stat.S_IXUSR)
        return log
    return tool


def calls(log):
    return [line.split() for line in log.read_text().splitlines()] if log.exists() else []


def record_of(params=None):
    out = run_main(fabric_topology.main, params or {})
    assert not out.failed, out.kwargs
    (record,) = out.kwargs["results"]
    assert results.validate(record) == []
    return record


# ---------------------------------------------------------------- lldptool (lldpad)

def test_lldptool_reads_each_nic_and_names_an_rdma_interface_by_its_device(host):
    log = host("lldptool", {"eth0": (fixture("eth0"), 0), "eth1": (fixture("eth1"), 0)})
    record = record_of()
    assert calls(log) == [["lldptool", "-t", "-n", "-i", netdev] for netdev in ("eth0", "eth1", "eth2")]  # no lo, docker0
    assert (record["status"], record["reason"]) == ("pass", None)
    assert record["facts"]["ports"] == {
        "mlx5_0": {"switch": "leaf1", "switch_port": "swp1", "source": "lldp", "netdev": "eth0",
                   "chassis_id": "86:46:14:1f:76:4c"},
        "eth1": {"switch": "leaf1", "switch_port": "swp2", "source": "lldp", "netdev": "eth1",
                 "chassis_id": "86:46:14:1f:76:4c"}}
    assert record["tool"] == {"name": "lldptool"} and record["params"]["lldp_tools"] == ["lldptool"]
    # eth1 is no RDMA device's: never a fabric port
    assert sorted(cabling.fabric_ports(record["facts"]["ports"])) == ["mlx5_0"]


def test_lldptool_against_the_declared_ports_finds_the_miscabling(host):
    host("lldptool", {"eth0": (fixture("eth0"), 0)})
    record = record_of({"declared": {"mlx5_0": {"switch": "leaf1", "switch_port": "swp3"}}})
    assert record["status"] == "warn"
    assert record["reason"] == "mlx5_0 is cabled to leaf1 port swp1, declared leaf1 port swp3"
    assert record["facts"]["mismatches"] == [{"port": "mlx5_0", "declared": {"switch": "leaf1", "switch_port": "swp3"},
                                              "observed": {"switch": "leaf1", "switch_port": "swp1"}}]


def test_lldptool_without_lldpad_is_no_source_not_a_host_error(host):
    """The real output of lldptool with no lldpad (exit 255): a skip, or the declared ports - never an error."""
    log = host("lldptool", default=(fixture("eth0-no-daemon"), 255))
    record = record_of()
    assert calls(log) == [["lldptool", "-t", "-n", "-i", "eth0"]]      # the first answer says it all
    assert record["status"] == "skip"
    assert record["reason"] == ("no topology known: lldpad is not running (lldptool: Failed to connect to lldpad - "
                                "clif_open: Invalid argument) and nothing declared for this host")
    record = record_of({"declared": {"eth0": {"switch": "leaf1", "switch_port": "swp1"}}})
    assert record["status"] == "pass" and record["facts"]["ports"]["mlx5_0"]["source"] == "declared"


def test_interfaces_lldpad_does_not_manage_have_no_neighbour(host):
    """'Device not found or inactive' (exit 1, the real answer for lo and a missing interface) is no neighbour."""
    host("lldptool", {"eth1": (fixture("eth1"), 0)}, default=(fixture("nosuch0"), 1))
    record = record_of()
    assert record["status"] == "pass" and sorted(record["facts"]["ports"]) == ["eth1"]
    host("lldptool", default=(fixture("lo"), 1))
    record = record_of()
    assert record["status"] == "skip"
    assert record["reason"] == ("no topology known: lldptool saw no LLDP neighbour on eth0, eth1, eth2 (lldpad manages "
                                "no LLDP agent on eth0, eth1, eth2) and nothing declared for this host")


def test_no_neighbour_anywhere_is_a_skip(host):
    host("lldptool")
    record = record_of()
    assert record["status"] == "skip"
    assert record["reason"] == "no topology known: lldptool saw no LLDP neighbour on eth0, eth1, eth2 and nothing declared for this host"


def test_lldptool_failing_otherwise_is_an_error_with_its_output(host, tmp_path):
    bad = tmp_path / "bad-params.txt"
    bad.write_text("Invalid parameters eth0\n")         # lldptool_cmds.c print_status(cmd_bad_params) + the interface
    host("lldptool", {"eth0": (str(bad), 1)})
    record = record_of()
    assert (record["status"], record["reason"]) == (
        "error", "not read: eth0 (lldptool -t -n -i eth0 exited with 1: Invalid parameters eth0)")
    assert "Invalid parameters" in record["raw"]
    host("lldptool", {"eth0": (HCCN_GREP, 0)})          # TLV values without a TLV naming the switch
    record = record_of()
    assert record["status"] == "error"
    assert record["reason"] == "not read: eth0 (lldptool -t -n -i eth0: a neighbour without a System Name or Chassis ID TLV (TLVs: none))"
    assert "Ifname: 400GE1/1/5:1" in record["raw"]


def test_lldpctl_without_lldpd_gives_way_to_lldptool(host):
    """Both agents' tools installed, lldpd stopped and lldpad running: lldptool answers."""
    host("lldpctl", default=(os.path.join(FIXTURES, "lldpctl-1.0.16-no-daemon.txt"), 1), arg=1)
    host("lldptool", {"eth0": (fixture("eth0"), 0)})
    record = record_of()
    assert record["status"] == "pass" and record["tool"] == {"name": "lldptool"}
    assert record["facts"]["ports"]["mlx5_0"]["switch_port"] == "swp1"
    host("lldptool", default=(fixture("eth0-no-daemon"), 255))
    record = record_of()
    assert record["status"] == "skip"
    assert record["reason"].startswith("no topology known: lldpd is not running (lldpctl: ")
    assert "; lldpad is not running (lldptool: Failed to connect to lldpad" in record["reason"]


# ---------------------------------------------------------------- Ascend NPUs: npu-smi + hccn_tool -lldp -g

def test_each_npu_s_roce_port_is_npu_device(host):
    host("npu-smi", default=(NPU_SMI, 0), arg=1)
    log = host("hccn_tool", default=(HCCN_FULL, 0), arg=2)
    record = record_of()
    assert [c for c in calls(log) if c[0] == "hccn_tool"] == [
        ["hccn_tool", "-i", str(device), "-lldp", "-g"] for device in range(8)]
    assert record["status"] == "pass" and record["params"]["lldp_tools"] == ["hccn_tool"]
    assert sorted(record["facts"]["ports"]) == ["npu%d" % device for device in range(8)]
    # the published capture elides the switch's MAC ("MAC: ...") and sends no System Name: the switch as printed
    assert record["facts"]["ports"]["npu3"] == {
        "switch": "...", "switch_port": "400GE1/1/20:2", "source": "lldp", "netdev": None, "chassis_id": "..."}
    assert record["reason"] is None
    # an NPU port is a fabric port (its name is not a host interface)
    assert len(cabling.fabric_ports(record["facts"]["ports"])) == 8


def test_an_npu_port_cabled_elsewhere_than_declared_is_a_warn(host):
    host("npu-smi", default=(NPU_SMI, 0), arg=1)
    host("hccn_tool", default=(HCCN_FULL, 0), arg=2)
    record = record_of({"declared": {"npu3": {"switch": "...", "switch_port": "400GE1/1/20:1"},
                                     "npu4": {"switch": "...", "switch_port": "400GE1/1/20:2"}}})
    assert record["status"] == "warn"
    assert [m["port"] for m in record["facts"]["mismatches"]] == ["npu3"]


def test_npu_sources_that_give_nothing_or_fail(host, tmp_path):
    host("npu-smi", default=(NPU_SMI, 0), arg=1)
    record = record_of()                                # no hccn_tool
    assert record["status"] == "skip"
    assert "hccn_tool not found (PATH, %s/Ascend/driver/tools/hccn_tool): no NPU LLDP source" % tmp_path in record["reason"]
    host("hccn_tool", arg=2)                            # an empty output: no neighbour on any NPU
    record = record_of()
    assert record["status"] == "skip"
    assert "hccn_tool saw no LLDP neighbour on NPU device(s) 0, 1, 2, 3, 4, 5, 6, 7" in record["reason"]
    host("hccn_tool", {"0": (HCCN_GREP, 0)}, arg=2)     # the port without the switch: cannot be read
    record = record_of()
    assert (record["status"], record["reason"]) == (
        "error", "not read: npu0 (hccn_tool -i 0 -lldp -g: a neighbour without a System Name or Chassis ID TLV (TLVs: none))")
    assert "400GE1/1/5:1" in record["raw"]


def test_npu_and_lldptool_ports_together(host):
    host("npu-smi", default=(NPU_SMI, 0), arg=1)
    host("hccn_tool", default=(HCCN_FULL, 0), arg=2)
    host("lldptool", {"eth0": (fixture("eth0"), 0)})
    record = record_of()
    assert record["status"] == "pass" and record["params"]["lldp_tools"] == ["lldptool", "hccn_tool"]
    assert sorted(record["facts"]["ports"]) == ["mlx5_0"] + ["npu%d" % device for device in range(8)]


def test_a_failing_npu_among_several_loses_only_its_own_port(host, tmp_path):
    """hccn_tool failing on NPU 3 used to throw away the 7 ports read and make the record an error."""
    bad = tmp_path / "hccn-bad.txt"
    bad.write_text("Command execution failed. device id 3\n")
    host("npu-smi", default=(NPU_SMI, 0), arg=1)
    host("hccn_tool", {"3": (str(bad), 1)}, default=(HCCN_FULL, 0), arg=2)
    record = record_of()
    assert sorted(record["facts"]["ports"]) == ["npu%d" % device for device in (0, 1, 2, 4, 5, 6, 7)]
    assert (record["status"], record["reason"]) == (
        "warn", "not read: npu3 (hccn_tool -i 3 -lldp -g exited with 1: Command execution failed. device id 3)")
    assert "Command execution failed" in record["raw"]


# ---------------------------------------------------------------- the time of all of a host's commands

def _clocked_host(tmp_path, monkeypatch, nics, answer_s, given, npu=False):
    """A host with ``nics`` NICs (ens0.., the first 8 of RDMA devices mlx5_0..) whose lldptool answers each in
    ``answer_s`` (virtual time) with a real lldpad capture, or runs past its limit when that is shorter; with
    ``npu``, npu-smi is installed too (a real 8-NPU listing, hccn_tool a real capture)."""
    clock = [1000.0]
    monkeypatch.setattr(topology_tool.time, "monotonic", lambda: clock[0])
    edge = open(fixture("eth0"), encoding="utf-8").read()
    outputs = {"npu-smi": open(NPU_SMI, encoding="utf-8").read(), "hccn_tool": open(HCCN_FULL, encoding="utf-8").read()}

    def run(argv, timeout_s):
        given.append((os.path.basename(argv[0]), argv[2] if "hccn_tool" in argv[0] else argv[-1], timeout_s))
        if answer_s > timeout_s:
            clock[0] += timeout_s
            raise ToolTimeout("%s timed out after %ds on node1 and was killed" % (os.path.basename(argv[0]), timeout_s))
        clock[0] += answer_s
        return Run(argv, 0, outputs.get(os.path.basename(argv[0]), edge), "", answer_s)
    for index in range(nics):
        (tmp_path / ("sys/class/net/ens%d/device" % index)).mkdir(parents=True)
    for index in range(min(nics, 8)):
        (tmp_path / ("sys/class/infiniband/mlx5_%d/device/net/ens%d" % (index, index))).mkdir(parents=True)
    tools = {"lldptool": "/usr/sbin/lldptool", "npu-smi": "/usr/sbin/npu-smi" if npu else None,
             "hccn_tool": "/usr/sbin/hccn_tool" if npu else None}
    if npu:     # hccn_tool is a file of the host: the path rule checks it before it runs
        (tmp_path / "usr/sbin").mkdir(parents=True, exist_ok=True)
        (tmp_path / "usr/sbin/hccn_tool").write_text("")
    return probe_host.Host(run=run, root=str(tmp_path), which=tools.get)


def test_a_slow_lldpad_on_many_nics_is_read_within_the_time_each_interface_adds(tmp_path, monkeypatch):
    """12 NICs whose lldpad answers in 3 s each: 36 s in all used to run past a 30 s budget for every command together
    (an error record, the 9 ports read dropped, the declared ports too); each interface now adds PER_PORT_S."""
    given = []
    host = _clocked_host(tmp_path, monkeypatch, 12, 3, given)
    declared = dict(("mlx5_%d" % index, {"switch": "leaf1", "switch_port": "swp1"}) for index in range(8))
    record = topology_tool.host_record(host, {"lldp": True, "declared": declared, "timeout_s": 30}, results.utc_now())
    assert [call[2] for call in given] == [30] * 12
    assert record["status"] == "pass" and len(record["facts"]["ports"]) == 12


def test_a_spent_budget_keeps_every_port_read_and_names_those_not_read(tmp_path, monkeypatch):
    """lldpad answering in 8 s, timeout_s 10: 2 x 10 s + 5 s per interface = 80 s for 12 NICs, 10 of them read; the
    last two and the NPUs are not asked. The record is a warn with the 10 ports and the declared ones, which the
    fleet reads (the host keeps its switch)."""
    given = []
    host = _clocked_host(tmp_path, monkeypatch, 12, 8, given, npu=True)
    declared = {"ens9": {"switch": "leaf1", "switch_port": "swp9"}}      # not read: the declared entry stays
    record = topology_tool.host_record(host, {"lldp": True, "declared": declared, "timeout_s": 10}, results.utc_now())
    assert [call[1] for call in given] == ["ens0", "ens1", "ens10", "ens11", "ens2", "ens3", "ens4", "ens5", "ens6", "ens7"]
    assert record["status"] == "warn" and results.validate(record) == []
    assert record["reason"] == (
        "not read: ens8, ens9, the NPUs (not run: the host's LLDP time (80 s: 2 x timeout_s 10 s + 5 s per interface "
        "or NPU asked) was spent after 80 s)")
    assert sorted(record["facts"]["ports"]) == ["ens10", "ens11", "ens9"] + ["mlx5_%d" % index for index in range(8)]
    assert record["facts"]["ports"]["ens9"]["source"] == "declared"
    record["host"] = "node1"
    assert sorted(cabling.read([record])["node1"]) == sorted(record["facts"]["ports"])


def test_a_command_past_its_limit_is_named_with_its_limit_and_the_rest_are_read(tmp_path, monkeypatch):
    """Each command runs at most timeout_s; one that runs past it loses its own port only."""
    given = []
    host = _clocked_host(tmp_path, monkeypatch, 2, 20, given)
    record = topology_tool.host_record(host, {"lldp": True, "declared": {}, "timeout_s": 15}, results.utc_now())
    assert [call[2] for call in given] == [15, 15]
    assert (record["status"], record["reason"]) == ("error", (
        "not read: ens0 (lldptool -t -n -i ens0 ran past its limit of 15 s and was killed (lldptool timed out after 15s "
        "on node1 and was killed)); ens1 (lldptool -t -n -i ens1 ran past its limit of 15 s and was killed (lldptool "
        "timed out after 15s on node1 and was killed))"))


def test_at_most_max_asked_interfaces_and_npus_are_asked(tmp_path, monkeypatch):
    """The role's task timeout holds for MAX_ASKED interfaces and NPUs: those over it are not asked, and said so."""
    monkeypatch.setattr(topology_tool, "MAX_ASKED", 10)
    given = []
    host = _clocked_host(tmp_path, monkeypatch, 4, 1, given, npu=True)
    record = topology_tool.host_record(host, {"lldp": True, "declared": {}, "timeout_s": 30}, results.utc_now())
    assert [call[1] for call in given if call[0] == "hccn_tool"] == [str(device) for device in range(6)]
    assert record["status"] == "warn"
    assert record["reason"] == "not read: npu6, npu7 (not asked: at most 10 interfaces and NPUs are asked)"
