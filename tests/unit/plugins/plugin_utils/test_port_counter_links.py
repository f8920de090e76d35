# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A whole fleet through the controller's analysis pipeline and summary: a port whose symbol errors grow during the
RDMA sweep is named and its link attributed (its pair is the slow one), a flapping port (link_downed +1) is named
with the switch port the topology knows, a healthy fleet passes. The port records are the port_counters adapter's
own (tools.port_counters.judge on snapshots of real counter values, test_port_counters.healthy); the pair records
are attribution's test matrix (test_attribution.full_mesh)."""

from __future__ import annotations

import copy

from ansible_collections.aifabric.acceptance.plugins.module_utils import results
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import port_counters
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import analysis_pipeline, summary
from ansible_collections.aifabric.acceptance.tests.unit.plugins.module_utils import test_port_counters as tpc
from ansible_collections.aifabric.acceptance.tests.unit.plugins.plugin_utils.test_attribution import full_mesh

RAILS = ("mlx5_0", "mlx5_1")


def snapshot(epoch_s, grow=None):
    values = dict((k, int(v)) for k, v in tpc.healthy().items())
    ports = {}
    for rail in RAILS:
        counters = dict(values)
        for name, added in ((grow or {}).get(rail) or {}).items():
            counters[name] += added
        ports[rail + "/1"] = {"device": rail, "port": "1", "link_layer": "InfiniBand", "netdev": None,
                              "counters": counters, "hw_counters": {"out_of_buffer": 0}, "ethtool": {}, "unread": {}}
    return {"taken": "2026-12-06T04:00:00Z", "epoch_s": epoch_s, "ports": ports, "ethtool": False}


def port_records(hosts, grow):
    """Each host's after-phase records of a 20-minute window; ``grow``: {host: {rail: {counter: added}}}."""
    out = []
    for host in hosts:
        after = snapshot(1200.0, grow.get(host))
        out.extend(results.with_host(port_counters.judge(snapshot(0.0), after, {"stage": "rdma"}), host))
    return out


def topology_record(host, ports):
    return results.make("net.topology", "pass", host=host, facts={"ports": ports, "mismatches": []},
                        metrics={"ports_count": len(ports)})


def run(records):
    out, findings, problems = analysis_pipeline.analyze(copy.deepcopy(records), {})
    assert problems == []
    verdicts = dict((h["host"], h["status"]) for h in summary.summarize(out)["hosts"])
    return out, findings, verdicts


def test_healthy_fleet_passes():
    hosts, pairs = full_mesh(6)
    out, findings, verdicts = run(pairs + port_records(hosts, {}))
    assert set(verdicts.values()) == {"pass"} and findings == []
    assert not [r for r in out if r["check"] == "rdma.port_counters.link"]


def test_growing_symbol_errors_name_the_port_and_its_slow_link_and_a_flap_is_named():
    hosts, pairs = full_mesh(6, bad_links=[("n01", "n04")])
    grow = {"n01": {"mlx5_0": {"symbol_error": 40}}, "n03": {"mlx5_1": {"link_downed": 1}}}
    topo = topology_record("n03", {"mlx5_1": {"switch": "leaf-02", "switch_port": "Ethernet1/7", "source": "declared",
                                              "netdev": None, "chassis_id": None}})
    out, findings, verdicts = run(pairs + port_records(hosts, grow) + [topo])
    # the hosts: the two erroring ports fail their hosts; the slow pair's other end is warned about its link
    assert verdicts == {"n00": "pass", "n01": "fail", "n02": "pass", "n03": "fail", "n04": "warn", "n05": "pass"}
    bad_ports = sorted((r["host"], r["target"], r["status"]) for r in out
                       if r["check"] == "rdma.port_counters" and r["status"] != "pass")
    assert bad_ports == [("n01", "mlx5_0/1", "fail"), ("n03", "mlx5_1/1", "fail")]
    links = sorted((r["host"], r["peer"], r["target"]) for r in out if r["check"] == "rdma.port_counters.link")
    assert links == [("n01", "n04", "mlx5_0"), ("n03", None, "mlx5_1"), ("n04", "n01", "mlx5_0")]
    slow = [r for r in out if r["check"] == "rdma.port_counters.link" and r["host"] == "n01"][0]
    assert slow["facts"]["grown"] == {"symbol_error": 40} and slow["facts"]["link"] == ["n01", "n04"]
    assert "not the node" in slow["reason"] and "rdma.ib_write_bw" in slow["reason"]
    flap = [r for r in out if r["check"] == "rdma.port_counters.link" and r["host"] == "n03"][0]
    assert flap["facts"]["flapped"] and flap["facts"]["switch_port"] == "Ethernet1/7" and "leaf-02" in flap["reason"]
    assert sorted((f["hosts"], f["target"]) for f in findings if f["check"] == "rdma.port_counters") == [
        (["n01", "n04"], "mlx5_0"), (["n03"], "mlx5_1")]
    # attribution calls the same pair a link, not a node
    assert sorted(r["host"] for r in out if r["check"] == "rdma.ib_write_bw.link") == ["n01", "n04"]


def test_reanalysis_is_idempotent():
    hosts, pairs = full_mesh(6, bad_links=[("n01", "n04")])
    first, _f, _v = run(pairs + port_records(hosts, {"n01": {"mlx5_0": {"symbol_error": 40}}}))
    second, _f, _v = run(first)
    assert sorted(map(repr, first)) == sorted(map(repr, second))
