# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""RDMA parsers on real captures (show_gids, ibdev2netdev, ibstat) and the sysfs model."""

from __future__ import annotations

import json
import os
import sys

import pytest

from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import ParseError
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import rdma
from ansible_collections.aifabric.acceptance.tests.unit.helpers import parser_fixture

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = parser_fixture()
PARSERS = {
    "show_gids": rdma.parse_show_gids,
    "ibdev2netdev": rdma.parse_ibdev2netdev,
}


def _files():
    out = []
    for tool in PARSERS:
        for name in sorted(os.listdir(os.path.join(FIXTURES, tool))):
            if name.endswith(".txt"):
                out.append(tool + "/" + name)
    for name in ("misc/ibstat-cx4-mlx5-eth-active-and-ib-down.txt", "misc/ibstat-mlx4-cx3-2port-ib-eth-tmux-border.txt"):
        out.append(name)
    return out


FILES = _files()


def read(rel):
    with open(os.path.join(FIXTURES, rel), encoding="utf-8") as handle:
        return handle.read()


def failure_output(rel):
    """The tool's text of a shared/fixtures/failures file (drop its '# command:' and '# exit:' frame)."""
    lines = read(rel).splitlines()
    return "\n".join(line for line in lines if not line.startswith(("# command:", "# exit:")))


def parser_for(rel):
    if "ibstat" in rel:
        return rdma.parse_ibstat
    return PARSERS[rel.split("/")[0]]


def parse_or_error(rel):
    try:
        return parser_for(rel)(read(rel))
    except ParseError as exc:
        return {"parse_error": str(exc)}


def golden_path(rel):
    tool, name = rel.split("/", 1)
    return os.path.join(FIXTURES, tool, "golden", name + ".parsed.json")


def test_fixture_set():
    assert len(FILES) == 8  # 4 show_gids + 2 ibdev2netdev + 2 misc


@pytest.mark.parametrize("rel", FILES, ids=FILES)
def test_matches_golden(rel):
    with open(golden_path(rel), encoding="utf-8") as handle:
        assert parse_or_error(rel) == json.load(handle)


# --- figures read by eye ------------------------------------------------------------------


def test_show_gids_layouts():
    cx4 = rdma.parse_show_gids(read("show_gids/cx4-roce-plus-ib-port-empty-netdev-spaces.txt"))
    assert [(r["dev"], r["index"], r["type"], r["netdev"]) for r in cx4] == [
        ("mlx5_0", 0, "RoCE v1", "ens11f0"), ("mlx5_0", 1, "RoCE v2", "ens11f0"), ("mlx5_1", 0, "RoCE v1", None)]
    pod = rdma.parse_show_gids(read("show_gids/k8s-macvlan-pod-gid-indices-start-at-4-tabs-fragment.txt"))
    assert [r["index"] for r in pod if r["dev"] == "mlx5_0"] == [4, 5, 6, 7]
    assert pod[3] == {"dev": "mlx5_0", "port": 1, "index": 7, "gid": "0000:0000:0000:0000:0000:ffff:0a98:000c",
                      "ipv4": "10.152.0.12", "type": "RoCE v2", "netdev": "net1"}
    hrn3 = rdma.parse_show_gids(read("show_gids/huawei-hrn3-bond-plus-mlx5-bond-v2-only-tabs.txt"))
    assert hrn3[1]["ipv4"] == "27.105.180.3" and rdma.gid_ipv4(hrn3[1]["gid"]) == "27.105.180.3"


def test_show_gids_footer_must_match():
    text = read("show_gids/mlx5-bond-roce-ipv4-tabs.txt").replace("n_gids_found=4", "n_gids_found=5")
    with pytest.raises(ParseError, match="n_gids_found=5 but 4 rows"):
        rdma.parse_show_gids(text)


def test_ibdev2netdev_plain_and_verbose():
    assert rdma.parse_ibdev2netdev(read("ibdev2netdev/sriov-cni-cx4-roce-2-ports-up.txt"))[1] == {
        "dev": "mlx5_1", "port": 1, "netdev": "enp2s0f1", "netdev_state": "Up"}
    rows = rdma.parse_ibdev2netdev(read("ibdev2netdev/sriov-cni-cx4-v-verbose-with-4-vfs.txt"))
    assert rows[0]["board"] == "CX456A - ConnectX-4 QSFP" and rows[0]["fw"] == "12.23.1020"
    assert rows[0]["psid"] == "MT1523X04353" and rows[0]["port_state"] == "ACTIVE"
    assert rows[5] == {"dev": "mlx5_5", "port": 1, "netdev": "enp2s0f5", "netdev_state": "Down", "pci": "0000:02:00.2",
                       "part": "MT4116", "psid": None, "board": None, "fw": "12.23.1020", "port_state": "DOWN"}


def test_ibdev2netdev_not_installed_is_a_parse_error():
    with pytest.raises(ParseError, match="command not found"):
        rdma.parse_ibdev2netdev(failure_output("failures/ibdev2netdev-not-installed-debian.txt"))


def test_ibstat_captures():
    cx4 = rdma.parse_ibstat(read("misc/ibstat-cx4-mlx5-eth-active-and-ib-down.txt"))
    assert [(c["ca"], c["firmware_version"], c["ports"][0]["state"], c["ports"][0]["link_layer"]) for c in cx4] == [
        ("mlx5_0", "12.28.1002", "Active", "Ethernet"), ("mlx5_1", "12.28.1002", "Down", "InfiniBand")]
    tmux = rdma.parse_ibstat(read("misc/ibstat-mlx4-cx3-2port-ib-eth-tmux-border.txt"))
    assert len(tmux) == 1 and [p["rate"] for p in tmux[0]["ports"]] == ["40", "10"]
    assert tmux[0]["node_guid"] == "0xf45214030091ba10"
    assert rdma.parse_ibstat(failure_output("failures/ibstat-no-rdma-device.txt")) == []


# --- the sysfs model ----------------------------------------------------------------------

# sysfs contents of the host behind ibstat-cx4-mlx5-eth-active-and-ib-down.txt and
# show_gids/cx4-roce-plus-ib-port-empty-netdev-spaces.txt (the same Hurray0/rdma_test host: node GUID
# 0x248a070300b1bc04, RoCE GID fe80::268a:07ff:feb1:bc04). Values are those captures' numbers written
# in the kernel's sysfs format ('4: ACTIVE', '100 Gb/sec (4X EDR)': the words in parentheses are how the
# kernel spells that rate); nothing else is invented: files the captures do not show (board_id, PCI ids)
# stay absent, and slot 2 is an empty (all-zero) GID whose type read fails with EINVAL.
CX4_SYSFS = {
    "mlx5_0/node_guid": "248a:0703:00b1:bc04\n",
    "mlx5_0/sys_image_guid": "248a:0703:00b1:bc04\n",
    "mlx5_0/fw_ver": "12.28.1002\n",
    "mlx5_0/hca_type": "MT4115\n",
    "mlx5_0/ports/1/state": "4: ACTIVE\n",
    "mlx5_0/ports/1/phys_state": "5: LinkUp\n",
    "mlx5_0/ports/1/rate": "100 Gb/sec (4X EDR)\n",
    "mlx5_0/ports/1/link_layer": "Ethernet\n",
    "mlx5_0/ports/1/gids/0": "fe80:0000:0000:0000:268a:07ff:feb1:bc04\n",
    "mlx5_0/ports/1/gids/1": "fe80:0000:0000:0000:268a:07ff:feb1:bc04\n",
    "mlx5_0/ports/1/gids/2": "0000:0000:0000:0000:0000:0000:0000:0000\n",
    "mlx5_0/ports/1/gid_attrs/types/0": "IB/RoCE v1\n",
    "mlx5_0/ports/1/gid_attrs/types/1": "RoCE v2\n",
    "mlx5_0/ports/1/gid_attrs/types/2": None,  # EINVAL on an empty slot
    "mlx5_0/ports/1/gid_attrs/ndev/0": "ens11f0\n",
    "mlx5_0/ports/1/gid_attrs/ndev/1": "ens11f0\n",
    "mlx5_0/device/net/ens11f0/dev_port": "0\n",
    "mlx5_0/device/net/ens11f0/operstate": "up\n",
    "mlx5_1/node_guid": "248a:0703:00b1:bc05\n",
    "mlx5_1/fw_ver": "12.28.1002\n",
    "mlx5_1/hca_type": "MT4115\n",
    "mlx5_1/ports/1/state": "1: DOWN\n",
    "mlx5_1/ports/1/phys_state": "3: Disabled\n",
    "mlx5_1/ports/1/rate": "10 Gb/sec (4X SDR)\n",
    "mlx5_1/ports/1/link_layer": "InfiniBand\n",
    "mlx5_1/ports/1/lid": "0x2\n",
    "mlx5_1/ports/1/sm_lid": "0x1\n",
    "mlx5_1/ports/1/gids/0": "fe80:0000:0000:0000:248a:0703:00b1:bc05\n",
    "mlx5_1/ports/1/gid_attrs/types/0": "IB/RoCE v1\n",
    "mlx5_1/ports/1/gid_attrs/ndev/0": None,
}


def test_build_hcas_matches_what_the_tools_printed():
    hcas = rdma.build_hcas(CX4_SYSFS)
    ibstat = rdma.parse_ibstat(read("misc/ibstat-cx4-mlx5-eth-active-and-ib-down.txt"))
    gids = rdma.parse_show_gids(read("show_gids/cx4-roce-plus-ib-port-empty-netdev-spaces.txt"))
    assert [h["name"] for h in hcas] == [c["ca"] for c in ibstat]
    for hca, ca in zip(hcas, ibstat):
        assert hca["fw_ver"] == ca["firmware_version"]
        assert "0x" + hca["node_guid"].replace(":", "") == ca["node_guid"]
        port, tool_port = hca["ports"][0], ca["ports"][0]
        assert port["state"].lower() == tool_port["state"].lower()
        assert port["phys_state"] == tool_port["physical_state"]
        assert port["rate_gbit_s"] == float(tool_port["rate"])
        assert port["link_layer"] == tool_port["link_layer"]
    built = [(h["name"], p["port"], g["index"], g["gid"], g["type"], g["netdev"])
             for h in hcas for p in h["ports"] for g in p["gids"]]
    # show_gids prints 'v1' for the IB port's GID too; the model says IB there (link layer InfiniBand)
    assert built == [(r["dev"], r["port"], r["index"], r["gid"], "IB" if r["dev"] == "mlx5_1" else r["type"],
                      r["netdev"]) for r in gids]
    assert hcas[0]["ports"][0]["netdevs"] == [{"name": "ens11f0", "operstate": "up"}]
    assert hcas[1]["ports"][0]["netdevs"] == []  # IB port without IPoIB: show_gids has no DEV either


def test_build_hcas_rejects_garbage_gids():
    broken = dict(CX4_SYSFS)
    broken["mlx5_0/ports/1/gids/1"] = "fe80::zz\n"
    with pytest.raises(ParseError, match="is not a GID"):
        rdma.build_hcas(broken)


def test_state_and_rate_helpers():
    assert rdma.parse_state("4: ACTIVE") == ("ACTIVE", 4)
    assert rdma.parse_state("PORT_ACTIVE (4)") == ("ACTIVE", 4)
    assert rdma.parse_rate("400 Gb/sec (4X NDR)") == (400.0, "4X NDR")
    assert rdma.parse_rate("2.5 Gb/sec (1X SDR)") == (2.5, "1X SDR")
    assert rdma.parse_rate("garbage") == (None, None)
    assert rdma.gid_ipv4("0000:0000:0000:0000:0000:ffff:0a60:531a") == "10.96.83.26"
    assert rdma.gid_ipv4("fe80:0000:0000:0000:0e42:a1ff:fead:479a") is None


def regen():
    for rel in FILES:
        path = golden_path(rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(parse_or_error(rel), handle, indent=1, sort_keys=True)
            handle.write("\n")
        print("wrote", os.path.relpath(path, FIXTURES))


if __name__ == "__main__" and "--regen" in sys.argv:
    regen()
