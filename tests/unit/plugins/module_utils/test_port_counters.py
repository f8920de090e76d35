# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fabric port counters over a window: the sysfs reader on a test-made tree of real values, ethtool -S on real
outputs (fixtures/port_counters/README.md), and the verdicts on a whole fleet."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings

from ansible_collections.aifabric.acceptance.plugins.module_utils import probe_host, results
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import port_counters as parser
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import port_counters as tool
from ansible_collections.aifabric.acceptance.tests.unit.helpers import parser_fixture, read
from ansible_collections.aifabric.acceptance.tests.unit.plugins.module_utils.parsers.mutations import mutated

MLX5 = read(parser_fixture("port_counters", "ethq-issue8-mlx5_core-cx4-ubuntu18.04-ethtool-S-head.txt"))
BE2NET = read(parser_fixture("port_counters", "ethq-issue7-be2net-ethtool-S-head.txt"))
VIRTIO = read(parser_fixture("port_counters", "ethtool-6.1-virtio_net-eth0-S.txt"))
NO_STATS = read(parser_fixture("port_counters", "ethtool-6.1-lo-S-no-stats.txt"))
VETH_BEFORE = read(parser_fixture("port_counters", "ethtool-6.1-veth-S-before.txt"))
VETH_AFTER = read(parser_fixture("port_counters", "ethtool-6.1-veth-S-after.txt"))


def gpud_counters():
    """{name: value} of the real mlx5_1 port 1 counters (leptonai/gpud pull request 943)."""
    text = read(parser_fixture("port_counters", "gpud-pr943-mlx5_1-port1-counters.txt"))
    out, name = {}, None
    for line in text.splitlines():
        if line.startswith("=== ./"):
            name = line[len("=== ./"):-len(" ===")]
        elif line.strip() and name:
            out[name] = line.strip()
    return out


def rdma_stat_counters():
    """{name: value} of the real mlx5_0/1 hw counters that ``rdma stat show -p`` printed (netdev, 2019-07-10)."""
    text = read(parser_fixture("port_counters", "rdma-stat-p-mlx5_0-1-hw-counters-netdev-2019.txt"))
    return dict(line.split() for line in text.splitlines() if line.startswith("\t"))


def sysfs(root, ports):
    """A test-made /sys/class/infiniband under ``root``: {"mlx5_0/1": {"counters": {...}, "hw_counters": {...}}}."""
    for key, groups in ports.items():
        dev, number = key.split("/")
        base = os.path.join(root, "sys/class/infiniband", dev, "ports", number)
        for group, values in groups.items():
            os.makedirs(os.path.join(base, group), exist_ok=True)
            for name, value in values.items():
                with open(os.path.join(base, group, name), "w", encoding="utf-8") as handle:
                    handle.write("%s\n" % value)
        with open(os.path.join(base, "link_layer"), "w", encoding="utf-8") as handle:
            handle.write("InfiniBand\n")
    return probe_host.Host(root=str(root), which=lambda name: None)


def healthy():
    values = gpud_counters()
    values.update(link_downed="3", port_xmit_discards="120", excessive_buffer_overrun_errors="0")
    return values


def test_reader_on_real_values_keeps_every_counter(tmp_path):
    hw_counters = {"out_of_buffer": "0", "np_cnp_sent": "17"}
    host = sysfs(tmp_path, {"mlx5_1/1": {"counters": gpud_counters(), "hw_counters": hw_counters}})
    snap = tool.snapshot(host, {"ethtool": True})
    port = snap["ports"]["mlx5_1/1"]
    assert port["counters"]["port_xmit_data"] == 205143497464492 and port["counters"]["link_downed"] == 255
    assert port["hw_counters"] == {"np_cnp_sent": 17, "out_of_buffer": 0} and port["link_layer"] == "InfiniBand"


def test_reader_on_real_mlx5_hw_counters(tmp_path):
    """The mlx5 driver's hw counters of a real ConnectX port (rdma stat's table of them), as files of hw_counters:
    every one read as a number; out_of_buffer growing during the window warns (a host-side counter), the RC retry and
    CNP counters are kept with their growth, not judged."""
    real = rdma_stat_counters()
    assert len(real) == 21 and {"out_of_buffer", "rnr_nak_retry_err", "local_ack_timeout_err", "np_cnp_sent"} <= set(real)
    host = sysfs(tmp_path / "before", {"mlx5_0/1": {"counters": healthy(), "hw_counters": real}})
    before = tool.records(host, {"phase": "before"})[0]
    assert before["facts"]["snapshot"]["ports"]["mlx5_0/1"]["hw_counters"] == dict((k, int(v)) for k, v in real.items())
    grown = dict(real, out_of_buffer="7", rnr_nak_retry_err="3", np_cnp_sent="1200")
    after = sysfs(tmp_path / "after", {"mlx5_0/1": {"counters": healthy(), "hw_counters": grown}})
    (record,) = tool.records(after, {"phase": "after", "before": before})
    assert record["status"] == "warn" and record["reason"].startswith("out_of_buffer grew by 7")
    assert record["metrics"]["out_of_buffer_growth"] == 7 and "rnr_nak_retry_err_growth" not in record["metrics"]
    assert record["facts"]["growth"] == {"hw_counters": {"np_cnp_sent": 1200, "out_of_buffer": 7, "rnr_nak_retry_err": 3}}


def test_saturated_counters_cannot_show_growth(tmp_path):
    """The real port reads link_downed 255 and port_xmit_discards 65535: stuck, so the record warns, never passes."""
    host = sysfs(tmp_path, {"mlx5_1/1": {"counters": gpud_counters()}})
    before = tool.records(host, {"phase": "before"})[0]
    (record,) = tool.records(host, {"phase": "after", "before": before})
    assert record["status"] == "warn" and "link_downed is stuck at its largest value 255" in record["reason"]
    assert "port_xmit_discards is stuck" in record["reason"]


def test_ethtool_stats_on_real_outputs():
    parsed = parser.parse_ethtool_stats(MLX5)
    assert parsed["error"] is None and parsed["counters"]["rx_bytes"] == 2195783498134 and len(parsed["counters"]) == 23
    parsed = parser.parse_ethtool_stats(BE2NET)
    assert parsed["counters"]["rx_pause_frames"] == 0 and parsed["counters"]["rx_dropped_too_short"] == 5710
    parsed = parser.parse_ethtool_stats(VIRTIO)
    assert parsed["error"] is None and parsed["counters"]["tx0_kicks"] > 0 and len(parsed["counters"]) == 20
    assert parser.parse_ethtool_stats(NO_STATS)["error"] == "no 'NIC statistics:' header (not an ethtool -S output)"
    assert parser.parse_value("N/A (no PMA)\n") == (None, "not a number: 'N/A (no PMA)'")


def test_ethtool_stats_of_a_real_veth_and_their_growth():
    """veth's own statistics (captured here, before and after 200 datagrams from its peer): every counter a number,
    the growth of the receive queue's NAPI counters what the traffic was."""
    before, after = parser.parse_ethtool_stats(VETH_BEFORE), parser.parse_ethtool_stats(VETH_AFTER)
    assert before["error"] is None and after["error"] is None and set(before["counters"]) == set(after["counters"])
    assert len(before["counters"]) == 10 and before["counters"]["peer_ifindex"] == 2
    old = {"device": "rxe0", "port": "1", "link_layer": "Ethernet", "netdev": "veth0", "counters": {},
           "hw_counters": {}, "ethtool": before["counters"], "unread": {}}
    new = dict(old, ethtool=after["counters"])
    assert tool.changed(old, new) == {"ethtool": {"rx_queue_0_xdp_bytes": 205780, "rx_queue_0_xdp_packets": 203}}
    record = tool.judge_port("rxe0/1", old, new, 1.0 / 60, {"started": "2026-12-06T08:00:00Z"})
    assert record["status"] == "pass" and record["facts"]["growth"]["ethtool"]["rx_queue_0_xdp_packets"] == 203


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=mutated(MLX5) | mutated(BE2NET) | mutated(VIRTIO) | mutated(VETH_AFTER))
def test_fuzz_ethtool_never_raises(text):
    parsed = parser.parse_ethtool_stats(text)
    assert parsed["error"] or parsed["counters"]
    assert all(isinstance(v, int) for v in parsed["counters"].values())


FLEET = ("node01", "node02", "node03", "node04")


def fleet_window(tmp_path, grow):
    """Each host's before and after snapshot, two ports a host, real healthy values; ``grow``: {(host, port):
    {counter: added}} during the window. Returns {host: [records of phase after]}."""
    out = {}
    for host_name in FLEET:
        ports = dict(("mlx5_%d/1" % i, {"counters": healthy(), "hw_counters": {"out_of_buffer": "0"}}) for i in (0, 1))
        host = sysfs(tmp_path / host_name / "before", ports)
        before = tool.records(host, {"phase": "before", "stage": "rdma"})
        for (name, port), added in grow.items():
            if name == host_name:
                for counter, value in added.items():
                    group = "hw_counters" if counter == "out_of_buffer" else "counters"
                    ports[port][group][counter] = str(int(ports[port][group][counter]) + value)
        after = sysfs(tmp_path / host_name / "after", ports)
        out[host_name] = results.with_host(tool.records(after, {"phase": "after", "before": before, "stage": "rdma"}),
                                           host_name)
    return out


def failing(by_host):
    return sorted((r["host"], r["target"], r["status"]) for rs in by_host.values() for r in rs if r["status"] != "pass")


def test_healthy_fleet_passes(tmp_path):
    by_host = fleet_window(tmp_path, {})
    assert failing(by_host) == [] and sum(len(rs) for rs in by_host.values()) == 8


def test_symbol_errors_growing_and_a_flap_are_named(tmp_path):
    by_host = fleet_window(tmp_path, {("node02", "mlx5_1/1"): {"symbol_error": 40},
                                      ("node03", "mlx5_0/1"): {"link_downed": 1},
                                      ("node04", "mlx5_0/1"): {"out_of_buffer": 5}})
    assert failing(by_host) == [("node02", "mlx5_1/1", "fail"), ("node03", "mlx5_0/1", "fail"),
                                ("node04", "mlx5_0/1", "warn")]
    bad = [r for r in by_host["node02"] if r["target"] == "mlx5_1/1"][0]
    assert bad["metrics"]["symbol_error_growth"] == 40 and "symbol_error grew by 40" in bad["reason"]
    flap = [r for r in by_host["node03"] if r["target"] == "mlx5_0/1"][0]
    assert flap["facts"]["flapped"] and "went down 1 time(s)" in flap["reason"]


def test_no_rdma_device_is_skip_and_after_needs_before(tmp_path):
    host = probe_host.Host(root=str(tmp_path), which=lambda name: None)
    assert tool.records(host, {"phase": "before"})[0]["status"] == "skip"
    host = sysfs(tmp_path, {"mlx5_0/1": {"counters": healthy()}})
    assert tool.records(host, {"phase": "after", "before": None})[0]["status"] == "error"


def test_a_ports_netdev_is_read_with_ethtool_and_a_driver_without_stats_is_unread(tmp_path):
    """The port's interface (device/net/<netdev>) is asked ``ethtool -S`` (the real outputs of a virtio_net and of
    lo); exit status 94 "no stats available" leaves the port's sysfs counters and says why in facts.unread."""
    from ansible_collections.aifabric.acceptance.plugins.module_utils.runner import Run
    calls = []

    def run(argv, timeout_s):
        calls.append((list(argv), timeout_s))
        if argv[-1] == "eth0":
            return Run(list(argv), 0, VIRTIO, "", 0.01)
        return Run(list(argv), 94, "", NO_STATS, 0.01)
    host = sysfs(tmp_path, {"mlx5_0/1": {"counters": healthy()}, "mlx5_1/1": {"counters": healthy()}})
    for dev, netdev in (("mlx5_0", "eth0"), ("mlx5_1", "lo")):
        os.makedirs(os.path.join(str(tmp_path), "sys/class/infiniband", dev, "device/net", netdev))
    host = probe_host.Host(root=str(tmp_path), run=run, which=lambda name: "/usr/sbin/ethtool")
    snap = tool.snapshot(host, {"ethtool": True, "timeout_s": 7})
    assert calls == [(["/usr/sbin/ethtool", "-S", "eth0"], 7), (["/usr/sbin/ethtool", "-S", "lo"], 7)]
    assert snap["ports"]["mlx5_0/1"]["ethtool"]["rx_kicks"] > 0
    assert snap["ports"]["mlx5_1/1"]["ethtool"] == {} and "no stats available" in snap["ports"]["mlx5_1/1"]["unread"]["ethtool"]


@settings(max_examples=200, deadline=None)
@given(text=mutated(read(parser_fixture("port_counters", "gpud-pr943-mlx5_1-port1-counters.txt")))
       | mutated("\n".join(rdma_stat_counters().values())))
def test_fuzz_counter_files_never_raise(text):
    """Each line of the real counter listing, mutated, read as one sysfs file: a number or why not, never a raise."""
    for line in text.splitlines() or [""]:
        value, why = parser.parse_value(line)
        assert (value is None) != (why is None) and (value is None or value >= 0)
