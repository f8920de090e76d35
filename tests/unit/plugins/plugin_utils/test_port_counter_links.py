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
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import analysis_pipeline, fleet, render, summary, verdict
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
    # the run's end time pinned: a re-analysis is compared field by field (a wall clock could cross a second)
    out, findings, problems = analysis_pipeline.analyze(copy.deepcopy(records), {}, started="2026-12-06T04:00:00Z")
    assert problems == []
    verdicts = dict((h["host"], h["status"]) for h in summary.summarize(out)["hosts"])
    return out, findings, verdicts


def test_healthy_fleet_passes():
    hosts, pairs = full_mesh(6)
    out, findings, verdicts = run(pairs + port_records(hosts, {}))
    assert set(verdicts.values()) == {"pass"} and findings == []
    assert not [r for r in out if r["check"] == "rdma.port_counters.link"]


def links_of(out):
    return sorted((r["host"], r["peer"], r["target"]) for r in out if r["check"] == "rdma.port_counters.link")


def test_a_bad_cable_between_two_healthy_hosts_fails_no_host_and_names_the_link():
    """n01's mlx5_0 symbol errors grow (40, above the gate of 10: its port record fails) and its pair with n04 is
    slow: the errors and the slow pair are one fault of the link n01 <-> n04. The port record stays as measured
    (fail) and counts toward no host: both ends warn for the link, no host fails; the healthy hosts pass."""
    hosts, pairs = full_mesh(6, bad_links=[("n01", "n04")])
    out, findings, verdicts = run(pairs + port_records(hosts, {"n01": {"mlx5_0": {"symbol_error": 40}}}))
    assert verdicts == {"n00": "pass", "n01": "warn", "n02": "pass", "n03": "pass", "n04": "warn", "n05": "pass"}
    (port,) = [r for r in out if r["check"] == "rdma.port_counters" and r["status"] != "pass"]
    assert (port["host"], port["target"], port["status"]) == ("n01", "mlx5_0/1", "fail")     # the measurement, untouched
    assert port not in verdict.host_records(out)["n01"]
    assert links_of(out) == [("n01", "n04", "mlx5_0"), ("n04", "n01", "mlx5_0")]
    link = [r for r in out if r["check"] == "rdma.port_counters.link" and r["host"] == "n01"][0]
    assert link["facts"]["ports"] == {"n01": "mlx5_0/1"} and link["facts"]["measured_check"] == "rdma.port_counters"
    assert link["facts"]["grown"] == {"symbol_error": 40} and link["facts"]["link"] == ["n01", "n04"]
    assert link["facts"]["pair_check"] == "rdma.ib_write_bw" and "not the node" in link["reason"]
    assert [(f["kind"], f["hosts"], f["target"]) for f in findings if f["check"] == "rdma.port_counters"] == [
        ("link", ["n01", "n04"], "mlx5_0")]
    # attribution calls the same pair a link, not a node
    assert sorted(r["host"] for r in out if r["check"] == "rdma.ib_write_bw.link") == ["n01", "n04"]


def test_both_ends_of_a_slow_pair_growing_are_one_link():
    hosts, pairs = full_mesh(6, bad_links=[("n01", "n04")])
    grow = {"n01": {"mlx5_0": {"symbol_error": 40}}, "n04": {"mlx5_0": {"port_rcv_errors": 12}}}
    out, findings, verdicts = run(pairs + port_records(hosts, grow))
    assert sorted(h for h, v in verdicts.items() if v != "pass") == ["n01", "n04"] and "fail" not in verdicts.values()
    assert links_of(out) == [("n01", "n04", "mlx5_0"), ("n04", "n01", "mlx5_0")]
    link = [r for r in out if r["check"] == "rdma.port_counters.link"][0]
    assert link["facts"]["ports"] == {"n01": "mlx5_0/1", "n04": "mlx5_0/1"}
    assert link["facts"]["grown"] == {"symbol_error": 40, "port_rcv_errors": 12}
    assert len([f for f in findings if f["check"] == "rdma.port_counters"]) == 1


def test_a_nic_erroring_on_every_link_fails_exactly_its_host():
    """n02's ports on both rails grow (its pairs are fine: the errors are corrected, the NIC is not): several links
    agree, the common end is the host - it fails, on its own port records. Next to it a bad cable n01 <-> n04 fails
    nobody."""
    hosts, pairs = full_mesh(6, bad_links=[("n01", "n04")])
    grow = {"n02": {"mlx5_0": {"symbol_error": 30}, "mlx5_1": {"symbol_error": 25}},
            "n01": {"mlx5_0": {"symbol_error": 40}}}
    out, findings, verdicts = run(pairs + port_records(hosts, grow))
    assert verdicts == {"n00": "pass", "n01": "warn", "n02": "fail", "n03": "pass", "n04": "warn", "n05": "pass"}
    mine = [f for f in findings if f["check"] == "rdma.port_counters" and f["kind"] == "node"]
    assert sorted((f["hosts"], f["target"]) for f in mine) == [(["n02"], "mlx5_0"), (["n02"], "mlx5_1")]
    assert "grew on 2 of its ports" in mine[0]["evidence"]["text"]
    counted = [r for r in verdict.host_records(out)["n02"] if r["check"] == "rdma.port_counters"]
    assert sorted((r["target"], r["status"]) for r in counted) == [("mlx5_0/1", "fail"), ("mlx5_1/1", "fail")]
    assert links_of(out) == [("n01", "n04", "mlx5_0"), ("n04", "n01", "mlx5_0")]


def test_a_suspect_node_keeps_its_port_errors():
    """n03 is slow with every peer (attribution: a suspect node) and its port's errors grow: no link explains them."""
    hosts, pairs = full_mesh(6, bad_nodes=["n03"])
    out, findings, verdicts = run(pairs + port_records(hosts, {"n03": {"mlx5_0": {"symbol_error": 40}}}))
    assert sorted(h for h, v in verdicts.items() if v != "pass") == ["n03"] and verdicts["n03"] == "fail"
    assert links_of(out) == []
    (item,) = [f for f in findings if f["check"] == "rdma.port_counters"]
    assert item["kind"] == "node" and "suspect node on mlx5_0" in item["evidence"]["text"]


def test_a_flap_without_partner_evidence_is_the_hosts_and_errors_on_a_known_cable_are_the_links():
    """n03's mlx5_1 goes down once (a flap) with no slow pair: a NIC reset does that too, the topology naming its
    switch port is no evidence against the link - n03 fails. n05's mlx5_1 symbol errors grow with no slow pair
    and the topology knows its switch port: receive errors on that cable - n05 warns for the link."""
    hosts, pairs = full_mesh(6)
    grow = {"n03": {"mlx5_1": {"link_downed": 1}}, "n05": {"mlx5_1": {"symbol_error": 20}}}
    topo = [topology_record(h, {"mlx5_1": {"switch": "leaf-02", "switch_port": port, "source": "declared",
                                           "netdev": None, "chassis_id": None}})
            for h, port in (("n03", "Ethernet1/7"), ("n05", "Ethernet1/9"))]
    out, findings, verdicts = run(pairs + port_records(hosts, grow) + topo)
    assert verdicts == {"n00": "pass", "n01": "pass", "n02": "pass", "n03": "fail", "n04": "pass", "n05": "warn"}
    assert links_of(out) == [("n05", None, "mlx5_1")]
    cable = [r for r in out if r["check"] == "rdma.port_counters.link"][0]
    assert cable["facts"]["switch_port"] == "Ethernet1/9" and cable["facts"]["link"] == ["n05", "leaf-02"]
    flap = [f for f in findings if f["check"] == "rdma.port_counters" and f["kind"] == "node"]
    assert [f["hosts"] for f in flap] == [["n03"]] and flap[0]["evidence"]["flapped"]
    assert "a flap needs such partner evidence" in flap[0]["evidence"]["text"]


def test_a_back_to_back_cable_whose_two_ends_grew_is_the_link():
    """n00's mlx5_1 is cabled straight to n05's (the topology names n05 as its neighbour): both ends grow."""
    hosts, pairs = full_mesh(6)
    grow = {"n00": {"mlx5_1": {"symbol_error": 15}}, "n05": {"mlx5_1": {"symbol_error": 18}}}
    topo = [topology_record(a, {"mlx5_1": {"switch": b, "switch_port": "mlx5_1", "source": "lldp", "netdev": None,
                                           "chassis_id": None}}) for a, b in (("n00", "n05"), ("n05", "n00"))]
    out, findings, verdicts = run(pairs + port_records(hosts, grow) + topo)
    assert sorted(h for h, v in verdicts.items() if v != "pass") == ["n00", "n05"] and "fail" not in verdicts.values()
    assert links_of(out) == [("n00", "n05", "mlx5_1"), ("n05", "n00", "mlx5_1")]
    link = [r for r in out if r["check"] == "rdma.port_counters.link"][0]
    assert link["facts"]["ports"] == {"n00": "mlx5_1/1", "n05": "mlx5_1/1"} and "both ends of the cable" in link["reason"]


def test_a_port_explained_by_a_link_is_a_passing_junit_case_naming_its_status():
    hosts, pairs = full_mesh(6, bad_links=[("n01", "n04")])
    report = fleet.build_report(pairs + port_records(hosts, {"n01": {"mlx5_0": {"symbol_error": 40}}}),
                                {"run_id": "r1", "started": "2026-12-06T04:00:00Z"})
    xml = render.render_format("junit", report)
    assert "PORT FAIL (judged by port_counters: see rdma.port_counters.link): symbol_error grew by 40" in xml
    assert "<failure" not in xml and "<error" not in xml


def test_reanalysis_is_idempotent():
    hosts, pairs = full_mesh(6, bad_links=[("n01", "n04")])
    first, _f, _v = run(pairs + port_records(hosts, {"n01": {"mlx5_0": {"symbol_error": 40}}}))
    second, _f, _v = run(first)
    assert sorted(map(repr, first)) == sorted(map(repr, second))
