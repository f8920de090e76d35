# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""NPU RoCE port facts (hccn_tool) in the env_probe `npu` group (issue 12 item 2): the parsers on real captures
(fixtures/hccn_tool, PROVENANCE.md there), the probe's records, skip without hccn_tool, errors that keep the text,
a whole fleet with one NPU port down, drift of the port facts across hosts, and fuzzed captures.

The hosts are fakes that answer `npu-smi info` with a real 8x 910B2 capture and every `hccn_tool -i N ...` with the
device's part of a real 8-NPU capture (the published loops print the devices one after the other)."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.aifabric.acceptance.plugins.module_utils import env_probe, probe_host, results
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import ToolTimeout
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import hccn_tool
from ansible_collections.aifabric.acceptance.plugins.module_utils.runner import Run
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import drift, fleet
from ansible_collections.aifabric.acceptance.tests.unit.plugins.module_utils.parsers.mutations import mutated
from ansible_collections.aifabric.acceptance.tests.unit.helpers import parser_fixture, read

HERE = os.path.dirname(os.path.abspath(__file__))
HCCN = parser_fixture("hccn_tool")
NPU_SMI = parser_fixture("npu_smi")
B910 = "vllm-ascend-issue362-npu-smi-23.0.7-8x910B2-info.txt"
B310 = "davinci-mini-310B4-npu-smi-23.0.rc3-info-memory-no-hbm.txt"
IP_LOOP = "deepseekv3-910b3-8npu-hccn-tool-ip-g-loop-i0-7.txt"
GW_LOOP = "deepseekv3-910b3-8npu-hccn-tool-gateway-g-loop-i0-7.txt"
LLDP_LOOP = "deepseekv3-910b3-8npu-hccn-tool-lldp-g-grep-ifname-loop-i0-7.txt"
LLDP_FULL = "arthurchiao-910b1-hccn-tool-i3-lldp-g-huawei-vrp-switch.txt"
IP3 = "arthurchiao-910b1-hccn-tool-i3-ip-g.txt"
UP = "mindcluster-docs-hccn-tool-link-g-up.txt"
DOWN = "ascend-common-hccn-go-comment-link-g-down.txt"
TOOL = "/usr/local/Ascend/driver/tools/hccn_tool"
SMI = "/usr/local/sbin/npu-smi"


def _per_device(name, lines_per_device):
    lines = read(HCCN, name).splitlines(True)
    return ["".join(lines[i:i + lines_per_device]) for i in range(0, len(lines), lines_per_device)]


def _outputs():
    """{(device, option): (rc, text)} of a healthy 8-NPU host, from the real captures."""
    out = {}
    for device, (ip, gw, lldp) in enumerate(zip(_per_device(IP_LOOP, 2), _per_device(GW_LOOP, 1),
                                                _per_device(LLDP_LOOP, 1))):
        out[(device, "-ip")] = (0, ip)
        out[(device, "-gateway")] = (0, gw)
        out[(device, "-lldp")] = (0, lldp)
        out[(device, "-link")] = (0, read(HCCN, UP))
    return out


def _host(root, outputs=None, smi_text=None, on_path=False, install=True):
    outputs = _outputs() if outputs is None else outputs
    calls = []
    if install or on_path:      # on PATH or not, hccn_tool is a file of the host (the path rule checks it)
        tool = root / TOOL.lstrip("/")
        tool.parent.mkdir(parents=True, exist_ok=True)
        tool.write_text("")

    def run(argv, timeout_s):
        calls.append((list(argv), timeout_s))
        if argv[0] == SMI:
            return Run(list(argv), 0, smi_text or read(NPU_SMI, B910), "", 0.01)
        answer = outputs[(int(argv[2]), argv[3])]
        if isinstance(answer, Exception):
            raise answer
        rc, text = answer
        return Run(list(argv), rc, text if rc == 0 else "", text if rc else "", 0.01)

    which = {"npu-smi": SMI, "hccn_tool": TOOL if on_path else None}.get
    host = probe_host.Host(run=run, which=which, root=str(root), environ={})
    host.calls = calls
    return host


def _network(records):
    return [r for r in records if r["check"] == "gpu.npu_network"]


# --------------------------------------------------------------------------- parsers on the captures

def test_ip_of_every_device_as_captured():
    parsed = [hccn_tool.parse_ip(text) for text in _per_device(IP_LOOP, 2)]
    assert [(p["ipaddr"], p["netmask"]) for p in parsed] == [("11.12.165.8%d" % i, "255.255.255.0") for i in range(8)]
    assert all(p["problems"] == [] for p in parsed)
    assert hccn_tool.parse_ip(read(HCCN, IP3)) == {"ipaddr": "29.1.112.213", "netmask": "255.255.0.0", "problems": []}


def test_gateway_link_and_grep_filtered_lldp():
    gateways = [hccn_tool.parse_gateway(t) for t in _per_device(GW_LOOP, 1)]
    assert [(g["gateway"], g["gateway_iface"], g["problems"]) for g in gateways] == [
        ("11.12.165.1", "eth%d" % i, []) for i in range(8)]
    assert hccn_tool.parse_link(read(HCCN, UP)) == {"link_status": "UP", "problems": []}
    assert hccn_tool.parse_link(read(HCCN, DOWN)) == {"link_status": "DOWN", "problems": []}
    ports = [hccn_tool.parse_lldp(t) for t in _per_device(LLDP_LOOP, 1)]
    assert [(p["port_id"], p["port_id_subtype"], p["neighbor"]) for p in ports][:3] == [
        ("400GE1/1/5:1", "Ifname", True), ("400GE1/1/5:2", "Ifname", True), ("400GE1/2/5:1", "Ifname", True)]
    assert all(p["problems"] == [] for p in ports)


def test_full_lldp_output_of_a_huawei_switch():
    got = hccn_tool.parse_lldp(read(HCCN, LLDP_FULL))
    assert got["tlvs"] == ["Chassis ID TLV", "Port ID TLV", "System Description TLV", "System Capabilities TLV",
                           "Management Address TLV", "Maximum Frame Size TLV", "End of LLDPDU TLV"]
    assert (got["port_id"], got["port_id_subtype"], got["max_frame_size"]) == ("400GE1/1/20:2", "Ifname", 9216)
    assert got["system_description"] == ("Versatile Routing Platform Software VRP (R) software, Version 8.211 "
                                         "(DX511 V200R021C10SPC600) Huarong DX511")
    assert got["chassis_id"] == "..." and got["system_name"] is None   # the author elided the MAC; no name TLV
    # the published management address is redacted ('26.xx.xx.xx'): not taken for an address, and said so
    assert got["mgmt_ipv4"] is None and got["problems"] == [
        "Management Address TLV: IPv4 '26.xx.xx.xx' is not an IPv4 address"]


def test_no_lldp_neighbour_is_an_empty_output():
    got = hccn_tool.parse_lldp("")
    assert got["neighbor"] is False and got["port_id"] is None and got["problems"] == []


@pytest.mark.parametrize("func,text,needle", [
    (hccn_tool.parse_ip, "ipaddr:10.xx.xx.10\nnetmask:255.255.255.0\n", "not an IPv4 address"),
    (hccn_tool.parse_link, "link status: UP\nlink status: UP\n", "not a single link status line"),
    (hccn_tool.parse_gateway, "Routing table:\n", "not a default gateway line"),
])
def test_unreadable_lines_are_problems_quoting_them(func, text, needle):
    got = func(text)
    assert any(needle in p for p in got["problems"])


# --------------------------------------------------------------------------- the probe

def test_healthy_910b_host_gets_one_network_record_per_npu(tmp_path):
    host = _host(tmp_path)
    records = env_probe.probe(host, {"groups": ["npu"], "timeout_s": 20})
    assert all(results.validate(r) == [] for r in records)
    net = _network(records)
    assert [(r["target"], r["status"]) for r in net] == [(str(i), "pass") for i in range(8)]
    facts = net[5]["facts"]
    assert facts["ipaddr"] == "11.12.165.85" and facts["netmask"] == "255.255.255.0"
    assert facts["gateway"] == "11.12.165.1" and facts["gateway_iface"] == "eth5"
    assert facts["link_status"] == "UP" and facts["lldp_port_id"] == "400GE1/3/5:2" and facts["lldp_neighbor"] is True
    assert "unavailable" not in facts
    # argv lists, the driver's install path (hccn_tool is not on PATH there), the module's timeout
    hccn_calls = [c for c in host.calls if c[0][0] == TOOL]
    assert hccn_calls[:4] == [([TOOL, "-i", "0", opt, "-g"], 20) for opt in ("-link", "-ip", "-gateway", "-lldp")]
    assert len(hccn_calls) == 32 and net[5]["params"]["argv"][1] == [TOOL, "-i", "5", "-ip", "-g"]


def test_hccn_tool_on_path_wins(tmp_path):
    host = _host(tmp_path, on_path=True, install=False)
    net = _network(env_probe.probe(host, {"groups": ["npu"]}))
    assert len(net) == 8 and all(r["status"] == "pass" for r in net)


def test_no_hccn_tool_is_one_skip_with_the_reason(tmp_path):
    records = env_probe.probe(_host(tmp_path, install=False), {"groups": ["npu"]})
    (net,) = _network(records)
    assert net["status"] == "skip" and net["reason"].startswith("hccn_tool not found")
    assert [r["status"] for r in records if r["check"] == "gpu.npu_device"] == ["pass"] * 8


def test_no_npu_smi_means_no_hccn_tool_call(tmp_path):
    host = _host(tmp_path)
    host._which = {"npu-smi": None}.get
    (record,) = env_probe.probe(host, {"groups": ["npu"]})
    assert record["status"] == "skip" and host.calls == []


def test_a_failing_query_is_an_error_of_that_device_only(tmp_path):
    outputs = _outputs()
    outputs[(2, "-ip")] = (255, "Error: device 2 query failed")   # what a failure prints is not public: any text
    outputs[(6, "-lldp")] = (1, "lldp not supported")
    outputs[(7, "-link")] = ToolTimeout("did not finish in 20 s")
    outputs[(4, "-lldp")] = ToolTimeout("did not finish in 20 s")
    net = _network(env_probe.probe(_host(tmp_path, outputs), {"groups": ["npu"]}))
    status = dict((r["target"], r["status"]) for r in net)
    assert status == {"0": "pass", "1": "pass", "2": "error", "3": "pass", "4": "pass", "5": "pass", "6": "pass",
                      "7": "error"}
    assert net[2]["reason"] == "hccn_tool -i 2 -ip -g exited 255: Error: device 2 query failed"
    assert "device 2 query failed" in net[2]["raw"]
    # an unavailable LLDP neighbour is noted, not a fault
    assert net[6]["facts"]["unavailable"] == ["hccn_tool -i 6 -lldp -g exited 1: lldp not supported"]
    # a timed-out query costs that query only: device 7 keeps its address, device 4 only misses its neighbour
    assert net[7]["reason"] == "hccn_tool -i 7 -link -g: did not finish in 20 s"
    assert net[7]["facts"]["ipaddr"] == "11.12.165.87" and net[7]["facts"]["lldp_port_id"] == "400GE1/4/5:2"
    assert net[4]["facts"]["unavailable"] == ["hccn_tool -i 4 -lldp -g: did not finish in 20 s"]
    assert net[4]["facts"]["link_status"] == "UP" and "lldp_port_id" not in net[4]["facts"]


def test_310b_board_has_no_roce_port_tool(tmp_path):
    records = env_probe.probe(_host(tmp_path, smi_text=read(NPU_SMI, B310), install=False), {"groups": ["npu"]})
    (net,) = _network(records)
    assert net["status"] == "skip"


# --------------------------------------------------------------------------- whole fleet

def _fleet_records(tmp_path, bad=None):
    records = []
    for name in ("npu-a", "npu-b", "npu-c"):
        outputs = _outputs()
        if bad and name in bad:
            outputs.update(bad[name])
        root = tmp_path / name
        root.mkdir()
        records.extend(results.with_host(env_probe.probe(_host(root, outputs), {"groups": ["npu"]}), name))
    return records


def test_fleet_with_one_npu_port_down_fails_exactly_that_host(tmp_path):
    records = _fleet_records(tmp_path, {"npu-c": {(5, "-link"): (0, read(HCCN, DOWN))}})
    report = fleet.build_report(records, {"run_id": "npu-net", "started": "2026-11-23T15:00:00Z",
                                          "ended": "2026-11-23T15:01:00Z"})
    hosts = dict((h["host"], h["status"]) for h in report["summary"]["hosts"])
    assert hosts == {"npu-a": "pass", "npu-b": "pass", "npu-c": "fail"}
    failed = [r for r in report["records"] if r["status"] == "fail"]
    assert [(r["host"], r["check"], r["target"]) for r in failed] == [("npu-c", "gpu.npu_network", "5")]
    assert failed[0]["reason"] == "RoCE link of NPU device 5 is DOWN (hccn_tool -link -g)"


def test_port_facts_drift_across_the_fleet_when_asked(tmp_path):
    # npu-c's device 3 answers with another real capture (a /16 network): its netmask differs from the fleet's
    records = _fleet_records(tmp_path, {"npu-c": {(3, "-ip"): (0, read(HCCN, IP3))}})
    assert drift.analyze(records, {})[0] == []          # addresses and masks are not compared unless asked
    new, findings = drift.analyze(records, {"drift_facts": [r"^netmask$", r"^lldp_max_frame_size$"]})
    assert [(r["host"], r["check"], r["target"], r["status"]) for r in new] == [
        ("npu-c", "gpu.npu_network.drift", "3", "warn")]
    assert new[0]["reason"] == ("gpu.npu_network[3].netmask is '255.255.0.0', fleet majority is '255.255.255.0' "
                                "(2 of 3 hosts)")
    assert len(findings) == 1


# --------------------------------------------------------------------------- fuzzing

PARSERS = [(hccn_tool.parse_ip, IP_LOOP), (hccn_tool.parse_ip, IP3), (hccn_tool.parse_gateway, GW_LOOP),
           (hccn_tool.parse_lldp, LLDP_LOOP), (hccn_tool.parse_lldp, LLDP_FULL), (hccn_tool.parse_link, UP),
           (hccn_tool.parse_link, DOWN)]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(case=st.sampled_from(PARSERS), data=st.data())
def test_fuzz_parsers_never_raise(case, data):
    func, name = case
    got = func(data.draw(mutated(read(HCCN, name))))
    assert isinstance(got["problems"], list) and len(got["problems"]) <= 10      # _common.add_problem keeps 10 at most


@settings(max_examples=200, deadline=None)
@given(func=st.sampled_from([hccn_tool.parse_ip, hccn_tool.parse_gateway, hccn_tool.parse_lldp,
                             hccn_tool.parse_link]), text=st.one_of(st.text(max_size=300), st.binary(max_size=100)))
def test_fuzz_random_text_never_raises(func, text):
    assert isinstance(func(text)["problems"], list)
