# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""topology.parse_lldptool (and lldptool.parse_tlvs under it) on the real lldptool captures of
tests/unit/fixtures/topology (lldpad 1.1 against lldpd, a Huawei CE6855 and an Arista EOS switch as published) and the
real hccn_tool -lldp -g captures (the same layout), values as printed; fuzzed with mutations of them: never raises."""
from __future__ import annotations

import os
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import hccn_tool, lldptool, topology
from ansible_collections.aifabric.acceptance.tests.unit.plugins.module_utils.parsers.mutations import mutated

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, os.pardir, os.pardir, os.pardir, "fixtures", "topology")
HCCN = os.path.join(HERE, "fixtures", "hccn_tool")
ETH0 = "lldpad-1.1-lldptool-t-n-i-eth0.txt"
HUAWEI = "lldptool-t-n-huawei-ce6855-vrp-8.180.txt"
ARISTA = "lldptool-t-n-arista-eos-4.16.7m-dcs-7150s.txt"
HCCN_FULL = "arthurchiao-910b1-hccn-tool-i3-lldp-g-huawei-vrp-switch.txt"
HCCN_GREP = "deepseekv3-910b3-8npu-hccn-tool-lldp-g-grep-ifname-loop-i0-7.txt"


def read(name, where=FIXTURES):
    with open(os.path.join(where, name), encoding="utf-8") as handle:
        return handle.read()


LLDPTOOL = sorted(n for n in os.listdir(FIXTURES) if "lldptool-t-n" in n)


def test_parse_lldp_of_hccn_tool_is_the_one_lldptool_parser():
    assert hccn_tool.parse_lldp is lldptool.parse_tlvs


@pytest.mark.parametrize("name, port", [(ETH0, "swp1"), ("lldpad-1.1-lldptool-t-n-i-eth1.txt", "swp2")])
def test_lldpad_against_lldpd_names_the_switch_and_its_ifname_port(name, port):
    parsed = topology.parse_lldptool(read(name))
    assert parsed["error"] is None and parsed["problems"] == []
    assert parsed["neighbor"] == {"switch": "leaf1", "switch_port": port, "chassis_id": "86:46:14:1f:76:4c",
                                  "port_id": port, "port_id_subtype": "ifname", "port_descr": port}
    tlvs = lldptool.parse_tlvs(read(name))
    assert tlvs["tlvs"][:4] == ["Chassis ID TLV", "Port ID TLV", "Time to Live TLV", "System Name TLV"]
    assert tlvs["tlvs"][-1] == "End of LLDPDU TLV" and tlvs["port_id_subtype"] == "Ifname"
    assert tlvs["mgmt_ipv4"] is None          # lldpd sent its IPv6 link-local address only


def test_no_neighbour_is_an_empty_output_and_no_error():
    text = read("lldpad-1.1-lldptool-t-n-i-eth2-no-neighbour.txt")
    assert text == ""
    assert topology.parse_lldptool(text) == {"neighbor": None, "error": None, "problems": []}


def test_a_huawei_ce6855_with_a_multi_line_system_description():
    parsed = topology.parse_lldptool(read(HUAWEI))
    assert parsed["error"] is None and parsed["problems"] == []
    assert parsed["neighbor"] == {"switch": "HB.LF-RZ.M1.102-HW-CE6855-U1-A2-In-254.79-DPVS-Test",
                                  "switch_port": "10GE1/0/15", "chassis_id": "18:cf:24:3c:72:c1",
                                  "port_id": "10GE1/0/15", "port_id_subtype": "ifname", "port_descr": None}
    tlvs = lldptool.parse_tlvs(read(HUAWEI))
    assert tlvs["system_description"].startswith("Huawei Versatile Routing Platform Software VRP (R) software")
    assert (tlvs["mgmt_ipv4"], tlvs["max_frame_size"]) == ("10.44.2.79", 9216)


def test_an_arista_eos_published_with_spaces_for_tabs():
    parsed = topology.parse_lldptool(read(ARISTA))
    assert parsed["error"] is None and parsed["problems"] == []
    assert parsed["neighbor"] == {"switch": "BAS-FIC-0H1E-12S-C02.picotrading.com", "switch_port": "Ethernet4",
                                  "chassis_id": "44:4c:a8:d6:f9:05", "port_id": "Ethernet4", "port_id_subtype": "ifname",
                                  "port_descr": "RATE-BAS-P005_P4P2"}


def test_hccn_tool_lldp_output_reads_the_same():
    """The published capture elides the chassis MAC ('MAC: ...') and has no System Name TLV: the switch is the ID as
    printed. The 'grep Ifname' capture has only the port: no switch to name, an error value that says so."""
    parsed = topology.parse_lldptool(read(HCCN_FULL, HCCN))
    assert parsed["error"] is None
    assert parsed["neighbor"]["switch"] == "..." and parsed["neighbor"]["switch_port"] == "400GE1/1/20:2"
    assert parsed["problems"] == ["Management Address TLV: IPv4 '26.xx.xx.xx' is not an IPv4 address"]
    first_device = read(HCCN_GREP, HCCN).splitlines(True)[0]
    parsed = topology.parse_lldptool(first_device)
    assert parsed["neighbor"] is None
    assert parsed["error"] == "a neighbour without a System Name or Chassis ID TLV (TLVs: none)"


@pytest.mark.parametrize("port_line, descr, switch_port, subtype", [
    # the real eth0 capture with its Port ID line edited to lldp_mand_clif.c's other port ID subtypes
    ("\tMAC: 86:46:14:1f:76:4d", "swp1", "swp1", "mac"),           # lldpd's default: the description names it
    ("\tLocal: 159", "xe-0/1/0.0", "xe-0/1/0.0", "local"),         # Junos: the interface index, the name as description
    ("\tLocal: swp3", "uplink", "swp3", "local"),
    ("\tInterface Alias: uplink-7", None, "uplink-7", "ifalias"),
])
def test_port_id_subtypes_follow_the_lldpctl_rule(port_line, descr, switch_port, subtype):
    lines = read(ETH0).splitlines()
    lines[lines.index("\tIfname: swp1")] = port_line
    at = lines.index("Port Description TLV")
    if descr is None:
        del lines[at:at + 2]
    else:
        lines[at + 1] = "\t" + descr
    neighbor = topology.parse_lldptool("\n".join(lines) + "\n")["neighbor"]
    assert (neighbor["switch_port"], neighbor["port_id_subtype"], neighbor["port_descr"]) == (switch_port, subtype, descr)


def test_a_neighbour_without_port_id_or_description_is_an_error_value():
    removed = ("Port ID TLV", "\tIfname: swp1", "Port Description TLV", "\tswp1")
    lines = [line for line in read(ETH0).splitlines() if line not in removed]
    parsed = topology.parse_lldptool("\n".join(lines))
    assert parsed["neighbor"] is None
    assert parsed["error"] == "a neighbour (leaf1) without a Port ID or Port Description TLV"


@pytest.mark.parametrize("name", ["lldpad-1.1-lldptool-t-n-i-eth0-no-daemon.txt", "lldpad-1.1-lldptool-t-n-i-lo.txt"])
def test_lldptool_s_own_messages_are_no_neighbour_text(name):
    """What lldptool prints without lldpad, or for an interface lldpad does not manage, is not TLV text: the module
    reads the exit status and the message first (fabric_topology); the parser alone names no switch from it."""
    parsed = topology.parse_lldptool(read(name))
    assert parsed["neighbor"] is None and parsed["error"]


@st.composite
def mutated_capture(draw):
    name = draw(st.sampled_from(LLDPTOOL + [HCCN_FULL]))
    return draw(mutated(read(name, HCCN if name == HCCN_FULL else FIXTURES)))


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_capture())
def test_mutated_captures_never_raise(text):
    out = topology.parse_lldptool(text)
    assert out["error"] is None or isinstance(out["error"], str)
    assert out["neighbor"] is None or (out["neighbor"]["switch"] and out["neighbor"]["switch_port"])
    assert isinstance(out["problems"], list)


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(max_size=200), st.binary(max_size=200), st.none(), st.integers()))
def test_any_input_never_raises(value):
    out = topology.parse_lldptool(value)
    assert out["error"] is None or isinstance(out["error"], str)


NON_ASCII_DIGITS = ("\u00b2", "\u0663", "\uff11", "\u00b9")      # superscript two, Arabic-Indic three, fullwidth one, superscript one


@pytest.mark.parametrize("digit", NON_ASCII_DIGITS)
def test_a_non_ascii_digit_in_the_frame_size_is_a_problem_not_a_crash(digit):
    """"\u00b2".isdigit() is True and int() rejects it: the parser raised (its contract: never). Non-ASCII digits
    are no number lldptool prints, "\u0663" (which int() reads as 3) included."""
    text = read(HUAWEI)
    frame = re.search(r"Maximum Frame Size TLV\n\t([0-9]+)", text)
    edited = text[:frame.start(1)] + frame.group(1)[:-1] + digit + text[frame.end(1):]
    tlvs = lldptool.parse_tlvs(edited)
    assert tlvs["max_frame_size"] is None
    assert any(problem.startswith("Maximum Frame Size TLV is not a number") for problem in tlvs["problems"])


@pytest.mark.parametrize("digit", NON_ASCII_DIGITS)
def test_a_local_port_id_of_non_ascii_digits_is_a_name_not_a_number(digit):
    assert topology.port_name("local", "15" + digit, "xe-0/1/0.0") == "15" + digit
    assert topology.port_name("local", "159", "xe-0/1/0.0") == "xe-0/1/0.0"
