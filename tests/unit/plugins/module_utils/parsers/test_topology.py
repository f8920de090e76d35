# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The topology parsers on every real capture of tests/unit/fixtures/topology (values as printed), and fuzzed with
mutations of those captures: they never raise."""
from __future__ import annotations

import json
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import topology
from ansible_collections.aifabric.acceptance.tests.unit.plugins.module_utils.parsers.mutations import mutated

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, os.pardir,
                        "fixtures", "topology")


def read(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as handle:
        return handle.read()


LLDP_JSON = sorted(n for n in os.listdir(FIXTURES) if n.endswith(".json"))
IBNETDISCOVER = sorted(n for n in os.listdir(FIXTURES) if n.startswith("ibnetdiscover-"))
OMPI = "ibnetdiscover-ompi-users-2009-infiniscale-iii-hca-1.txt"
PSMN = "ibnetdiscover-psmn-x5-2020-voltaire-qdr-no-hostnames.txt"


# ---------------------------------------------------------------- lldpctl -f json

def test_two_neighbours_are_a_list_and_ifname_port_ids_name_the_switch_port():
    parsed = topology.parse_lldpctl_json(read("lldpd-1.0.16-node1-two-ports-portid-ifname.json"))
    assert parsed["error"] is None and parsed["problems"] == []
    assert parsed["neighbors"] == {
        "eth0": {"switch": "leaf1", "switch_port": "swp1", "chassis_id": "b6:e8:fd:21:bc:f0", "port_id": "swp1",
                 "port_id_subtype": "ifname", "port_descr": "swp1"},
        "eth1": {"switch": "leaf1", "switch_port": "swp2", "chassis_id": "b6:e8:fd:21:bc:f0", "port_id": "swp2",
                 "port_id_subtype": "ifname", "port_descr": "swp2"}}


def test_one_neighbour_is_a_mapping_and_a_mac_port_id_takes_the_port_description():
    parsed = topology.parse_lldpctl_json(read("lldpd-1.0.16-node2-one-port-portid-mac.json"))
    assert json.loads(read("lldpd-1.0.16-node2-one-port-portid-mac.json"))["lldp"]["interface"].keys() == {"eth0"}
    assert parsed["neighbors"] == {"eth0": {
        "switch": "leaf1", "switch_port": "swp3", "chassis_id": "a2:87:74:6b:bd:2f", "port_id": "d2:77:02:ca:3b:1e",
        "port_id_subtype": "mac", "port_descr": "swp3"}}


def _local_port_id(value, descr):
    """The lldpd capture node2-one-port-portid-ifname.json with its neighbour's port ID edited to subtype ``local``
    (lldpd src/lib/atoms/port.c port_id_subtype_map: LLDP_PORTID_SUBTYPE_LOCAL prints "local", the ID as sent)."""
    data = json.loads(read("lldpd-1.0.16-node2-one-port-portid-ifname.json"))
    port = data["lldp"]["interface"]["eth0"]["port"]
    port["id"] = {"type": "local", "value": value}
    if descr is None:
        port.pop("descr")
    else:
        port["descr"] = descr
    return json.dumps(data)


@pytest.mark.parametrize("value, descr, switch_port", [
    # Juniper EX3200 (JUNOS 10.0S1.1) as a neighbour, github.com/nocproject/noc sa/profiles/Juniper/JUNOS/tests/
    # Juniper_ex3200_24t_10_0S1_1_get_lldp_neighbors_0001.py (commit 76d601ed570b1f0969aefc40a0bf80b7cf693daf):
    # "Port type: Locally assigned / Port ID: 159 / Port description: xe-0/1/0.0", and that switch's own
    # "show lldp local-information" lists xe-0/1/0.0 with "Interface ID 159" (an interface number, not a name)
    ("159", "xe-0/1/0.0", "xe-0/1/0.0"),
    ("159", None, "159"),                   # a number with no description: the ID as sent, nothing better
    ("swp3", "uplink to node2", "swp3"),    # a locally assigned name is the port
])
def test_a_numeric_locally_assigned_port_id_takes_the_port_description(value, descr, switch_port):
    parsed = topology.parse_lldpctl_json(_local_port_id(value, descr))
    assert parsed["error"] is None and parsed["problems"] == []
    seen = parsed["neighbors"]["eth0"]
    assert (seen["switch_port"], seen["port_id"], seen["port_id_subtype"], seen["port_descr"]) == (
        switch_port, value, "local", descr)


def test_the_two_port_mac_capture():
    parsed = topology.parse_lldpctl_json(read("lldpd-1.0.16-node1-two-ports-portid-mac.json"))
    assert [(k, v["switch"], v["switch_port"], v["port_id"]) for k, v in sorted(parsed["neighbors"].items())] == [
        ("eth0", "leaf1", "swp1", "a2:87:74:6b:bd:2f"), ("eth1", "leaf1", "swp2", "b6:94:e1:f0:de:1b")]


def test_the_switch_sees_three_hosts():
    parsed = topology.parse_lldpctl_json(read("lldpd-1.0.16-leaf1-three-neighbours.json"))
    assert [(k, v["switch"], v["switch_port"]) for k, v in sorted(parsed["neighbors"].items())] == [
        ("swp1", "node1", "eth0"), ("swp2", "node1", "eth1"), ("swp3", "node2", "eth0")]


@pytest.mark.parametrize("name", [n for n in LLDP_JSON if "portid" in n])
def test_json_and_keyvalue_captures_agree(name):
    """The same lldpd run printed both: every neighbour of the JSON is in the keyvalue output, values equal."""
    parsed = topology.parse_lldpctl_json(read(name))
    keyvalue = dict(line.split("=", 1) for line in read(name.replace(".json", ".keyvalue")).splitlines())
    for netdev, seen in parsed["neighbors"].items():
        assert keyvalue["lldp.%s.chassis.name" % netdev] == seen["switch"]
        assert keyvalue["lldp.%s.chassis.mac" % netdev] == seen["chassis_id"]
        assert keyvalue["lldp.%s.port.descr" % netdev] == seen["port_descr"]
        assert keyvalue["lldp.%s.port.%s" % (netdev, "ifname" if "ifname" in name else "mac")] == seen["port_id"]


def test_lldpd_reference_shape_chassis_without_name_and_no_neighbour():
    # lldpd tests/integration/test_lldpcli.py test_json_output's expected shape; a chassis with no system name is
    # printed unkeyed ({"id": ...}); no neighbour at all is {"lldp": {}}
    text = json.dumps({"lldp": {"interface": {"eth0": {"via": "LLDP", "chassis": {"id": {"type": "mac", "value": "00:00:00:00:00:02"}},
                                                       "port": {"id": {"type": "mac", "value": "00:00:00:00:00:02"}, "descr": "eth1"}}}}})
    assert topology.parse_lldpctl_json(text)["neighbors"]["eth0"]["switch"] == "00:00:00:00:00:02"
    assert topology.parse_lldpctl_json('{"lldp": {}}') == {"neighbors": {}, "error": None, "problems": []}


@pytest.mark.parametrize("text", ["", "   ", "lldpctl: unable to connect", '["lldp"]', '{"lldp": 3}', b"\xff",
                                  "[" * 100000 + "]" * 100000, ('{"lldp": ' + "[" * 50000 + "]" * 50000 + "}").encode(),
                                  '{"lldp": {"interface": ' + '{"a": ' * 60000 + "1" + "}" * 60000 + "}}"])
def test_unreadable_lldp_output_is_an_error_value(text):
    assert topology.parse_lldpctl_json(text)["error"]


# ---------------------------------------------------------------- ibnetdiscover

def test_ompi_capture_names_24_hosts_on_one_switch():
    parsed = topology.parse_ibnetdiscover(read(OMPI))
    assert parsed["error"] is None and parsed["problems"] == [] and parsed["unnamed"] == 0
    assert parsed["switches"] == {"000b8cffff002347": "MT47396 Infiniscale-III Mellanox Technologies"}
    hosts = topology.ibnetdiscover_hosts(parsed)
    assert sorted(hosts) == sorted("node%d" % i for i in range(1, 25))
    assert hosts["node24"] == {"HCA-1": {
        "switch": "MT47396 Infiniscale-III Mellanox Technologies", "switch_guid": "000b8cffff002347", "switch_port": "24",
        "switch_ext_port": None, "ca_guid": "0002c90200267924", "ca_port": 1, "description": "node24 HCA-1", "host": "node24", "hca": "HCA-1"}}
    assert hosts["node21"]["HCA-1"]["switch_port"] == "21"
    assert hosts["node1"]["HCA-1"]["switch_port"] == "1"


def test_psmn_capture_has_no_host_names_and_shared_switch_descriptions_stay_distinct():
    parsed = topology.parse_ibnetdiscover(read(PSMN))
    assert parsed["error"] is None and parsed["problems"] == []
    assert parsed["unnamed"] == len(parsed["links"]) == 89
    assert topology.ibnetdiscover_hosts(parsed) == {}
    names = parsed["switches"]
    assert len(set(names.values())) == len(names)
    assert names["0008f105002036b4"] == "Voltaire 4036 # hoibp0013"
    assert names["0008f10500200b50"] == "Voltaire 4036 - 36 QDR ports switch [S-0008f10500200b50]"
    first = parsed["links"][0]
    assert (first["switch_guid"], first["switch_port"], first["ca_guid"], first["description"]) == (
        "0008f10500200b50", "4", "003048c749cd0000", "MT25408 ConnectX Mellanox Technologies")


def _ompi_rows(*hosts):
    """The Switch line and the named hosts' switch port lines of the OMPI capture (rows copied, for editing)."""
    lines = read(OMPI).splitlines()
    switch = next(line for line in lines if line.startswith("Switch"))
    rows = dict((line.split('# "')[1].split()[0], line) for line in lines if line.startswith("[") and '"H-' in line)
    return switch, [rows[h] for h in hosts]


def test_a_dual_port_hca_s_lowest_port_gets_the_bare_name_whatever_the_block_order():
    """One CA (one device, two ports: ConnectX-3/mlx4 style, ca_port 1 and 2) cabled to two switches, the switch of
    its port 2 printed first. Built from the OMPI capture's rows (copied and edited: a second switch, node24's CA on
    port 2 of it); the real capture is untouched."""
    switch, (row,) = _ompi_rows("node24")
    second = switch.replace("000b8cffff002347", "000b8cffff00aaaa").replace("Infiniscale-III", "Infiniscale-III B")
    text = "\n".join([second, row.replace('[1]\t', '[2]\t', 1).replace('"[1]', '"[2]'), "", switch, row]) + "\n"
    parsed = topology.parse_ibnetdiscover(text)
    assert parsed["problems"] == [] and [link["ca_port"] for link in parsed["links"]] == [2, 1]
    ports = topology.ibnetdiscover_hosts(parsed)["node24"]
    assert sorted(ports) == ["HCA-1", "HCA-1/2"]
    assert (ports["HCA-1"]["switch"], ports["HCA-1"]["ca_port"]) == ("MT47396 Infiniscale-III Mellanox Technologies", 1)
    assert (ports["HCA-1/2"]["switch"], ports["HCA-1/2"]["ca_port"]) == ("MT47396 Infiniscale-III B Mellanox Technologies", 2)


# rdma-core infiniband-diags/ibnetdiscover.c (github.com/linux-rdma/rdma-core), out_switch_port:
#   "%s[%d]" (prefix, local port), then out_ext_port(port) "[ext %d]" when grouping (-g) and the port has an external
#   number, "\t%s[%d]%s" (node_name: '"S-<guid>' / '"H-<guid>' with the closing quote, remote port, the remote's
#   "[ext %d]"), "(%" PRIx64 ") " (remote port GUID, not for a switch), "\t\t# \"%s\" lid %d %s%s" (description,
#   lid, width, speed)
def _upstream_switch_port(port, rtype, rguid, rport, desc, ext=None, rext=None, pguid=None):
    line = "[%d]" % port + ("[ext %d]" % ext if ext else "")
    line += '\t"%s-%s"[%d]%s' % (rtype, rguid, rport, "[ext %d]" % rext if rext else "")
    line += "(%x) " % pguid if pguid is not None else ""
    return line + '\t\t# "%s" lid %d %s%s' % (desc, 3, "4x", "SDR")


def test_ibnetdiscover_g_ext_ports_of_both_ends_are_read():
    switch = 'Switch\t24 "S-0008f10400411a08"\t\t# "ISR9288/ISR9096 Voltaire sLB-24" base port 0 lid 2 lmc 0'
    text = "\n".join([
        switch,
        _upstream_switch_port(1, "S", "0008f10400411b10", 13, "ISR9288 Voltaire sFB-12", ext=1, rext=7),
        _upstream_switch_port(2, "H", "0002c90200267924", 1, "node24 mlx4_0", ext=2, pguid=0x2c90200267925),
        _upstream_switch_port(3, "H", "0002c90200267930", 1, "node25 mlx4_0", pguid=0x2c90200267931),
        _upstream_switch_port(4, "S", "0008f10400411b10", 14, "ISR9288 Voltaire sFB-12", rext=8)]) + "\n"
    parsed = topology.parse_ibnetdiscover(text)
    assert parsed["error"] is None and parsed["problems"] == []
    links = dict((link["host"], link) for link in parsed["links"])
    assert (links["node24"]["switch_port"], links["node24"]["switch_ext_port"]) == ("2", "2")
    assert (links["node25"]["switch_port"], links["node25"]["switch_ext_port"]) == ("3", None)
    assert links["node24"]["ca_guid"] == "0002c90200267924" and links["node24"]["hca"] == "mlx4_0"


@pytest.mark.parametrize("description, expected", [
    ("node24 HCA-1", ("node24", "HCA-1")), ("sched-worker1 mlx5_0", ("sched-worker1", "mlx5_0")),
    ("MT25408 ConnectX Mellanox Technologies", (None, None)), ("atlas133", (None, None)), ("", (None, None)),
    ("node01 ConnectX", (None, None))])
def test_host_and_hca(description, expected):
    assert topology.host_and_hca(description) == expected


@pytest.mark.parametrize("text", ["", "hello\nworld", "[1]\t\"H-00\"[1]\t# \"a b1\" lid 3", None])
def test_text_that_is_no_topology_is_an_error_value(text):
    assert topology.parse_ibnetdiscover(text)["error"]


# ---------------------------------------------------------------- declared

def test_declared_ports_read_and_normalized():
    ports, errors = topology.declared_ports({"mlx5_0": {"switch": " leaf-01 ", "switch_port": 12},
                                             "eth2": {"switch": "leaf-02"}})
    assert errors == []
    assert ports == {"mlx5_0": {"switch": "leaf-01", "switch_port": "12"}, "eth2": {"switch": "leaf-02", "switch_port": None}}


@pytest.mark.parametrize("value, message", [
    ("leaf", "declared must be a mapping of port name to {switch, switch_port}, got str"),
    ({"mlx5_0": "leaf"}, "declared.mlx5_0 must be a mapping {switch, switch_port}, got str"),
    ({"mlx5_0": {"switch": 3}}, "declared.mlx5_0.switch must be a non-empty string, got 3"),
    ({"mlx5_0": {"switch": "a", "switch_port": True}}, "declared.mlx5_0.switch_port must be a non-empty string or an integer, got True"),
    ({"mlx5_0": {"switch": "a", "port": 1}}, "declared.mlx5_0: unknown key port (allowed: switch, switch_port)"),
    ({3: {"switch": "a"}}, "declared: a port name must be a non-empty string, got 3")])
def test_declared_ports_errors_say_where(value, message):
    ports, errors = topology.declared_ports(value)
    assert ports == {} and message in errors


def test_declared_fleet():
    hosts, errors = topology.declared_fleet({"gpu01": {"mlx5_0": {"switch": "leaf-01", "switch_port": "1"}}, "gpu02": {}})
    assert errors == [] and hosts == {"gpu01": {"mlx5_0": {"switch": "leaf-01", "switch_port": "1"}}, "gpu02": {}}
    assert topology.declared_fleet([1])[1] == ["topology must be a mapping of host name to its ports, got list"]
    assert topology.declared_fleet({"gpu01": {"mlx5_0": {}}})[1] == ["topology.gpu01.mlx5_0.switch must be a non-empty string, got None"]


# ---------------------------------------------------------------- fuzz: mutated real captures never raise

CASES = [(topology.parse_lldpctl_json, n) for n in LLDP_JSON] + [(topology.parse_ibnetdiscover, n) for n in IBNETDISCOVER]


@st.composite
def mutated_capture(draw):
    func, name = draw(st.sampled_from(CASES))
    return func, draw(mutated(read(name)))


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_capture())
def test_mutated_captures_never_raise(case):
    func, text = case
    out = func(text)
    assert isinstance(out["problems"], list) and (out["error"] is None or isinstance(out["error"], str))
    if func is topology.parse_ibnetdiscover:
        topology.ibnetdiscover_hosts(out)


@settings(max_examples=300, deadline=None)
@given(st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
                    max_leaves=12))
def test_any_json_never_raises(value):
    for wrapped in (value, {"lldp": value}, {"lldp": {"interface": value}}, {"lldp": {"interface": {"eth0": value}}}):
        out = topology.parse_lldpctl_json(json.dumps(wrapped))
        assert out["error"] is None or isinstance(out["error"], str)
    hosts, errors = topology.declared_fleet(value)
    assert isinstance(hosts, dict) and isinstance(errors, list)


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=1, max_value=120000), st.sampled_from(["[", '{"a": ', '{"lldp": {"interface": [']),
       st.booleans())
def test_deeply_nested_json_never_raises(depth, opener, closed):
    """Nesting past the interpreter's recursion limit (json raises RecursionError, not ValueError) is an error value."""
    closer = {"[": "]", '{"a": ': "}", '{"lldp": {"interface": [': "]}}"}[opener]
    text = opener * depth + "1" + (closer * depth if closed else "")
    out = topology.parse_lldpctl_json(text)
    assert out["error"] is None or isinstance(out["error"], str)
    assert isinstance(out["problems"], list)
