# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""RDMA line-rate floors in every path, GPUDirect and NPU figures (issue 19), on whole fleets from real captures.

- The hosts' ``rdma.port`` records come from the environment probe run on the CX-4 host's sysfs tree (written from
  its real ibstat and show_gids captures by tests/unit/plugins/module_utils/test_env_probe.py's cx4_infiniband),
  with mlx5_0's rate file set to the kernel's words for the HDR port the perftest captures below were measured on
  ("200 Gb/sec (4X HDR)"); that one edit is the test's.
- The pairs are imported perftest outputs (tools.perftest_sweep.from_output: the perftest module's import mode, whose
  records carry no port rate): the HDR captures (superbench ib_write_bw, 201.8 and 195.0 Gbit/s at 8 MiB) for
  healthy pairs and the ConnectX-3 one (mlx4 ib_write_bw, 30.7 Gbit/s at 8 MiB) for a bad pair. Host names and the
  rail are the test's labels.
Every test asserts exactly which hosts fail.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import os

from ansible_collections.aifabric.acceptance.plugins.module_utils import env_probe
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import Context, hccl_test as hccl
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import perftest_sweep as perftest_tool
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import analysis_pipeline, coverage, hardware, summary
from ansible_collections.aifabric.acceptance.tests.unit.helpers import parser_fixture

HERE = os.path.dirname(os.path.abspath(__file__))
PARSERS = parser_fixture()
PERFTEST = os.path.join(PARSERS, "perftest")
GOOD = ("superbench-ib-write-bw-loopback-8M-server-client-concat.txt",
        "superbench-ib-write-bw-loopback-all-sizes-interleaved.txt")
BAD = "mlx4-ib-write-bw-client-a-all-sizes-MB.txt"
H100 = os.path.join(HERE, "fixtures", "h100x2-judgement", "healthy.results.json")


def _probe_module():
    spec = importlib.util.spec_from_file_location(
        "hw19_env_probe_tests", os.path.join(HERE, "..", "module_utils", "test_env_probe.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


PROBE = _probe_module()


def _ports(tmp_path, host, rate="200 Gb/sec (4X HDR)"):
    """The rdma.inventory and rdma.port records the probe gives on the CX-4 host, mlx5_0 at ``rate``."""
    root = tmp_path / host
    PROBE.cx4_infiniband(root)
    PROBE.put(root, "/sys/class/infiniband/mlx5_0/ports/1/rate", rate + "\n")
    out = []
    for rec in env_probe.probe(PROBE.host_for(root), {"groups": ["rdma"]}):
        out.append(dict(rec, host=host))
    return out


def _pair(name, host, peer):
    """The imported record of a real capture (import mode: no port rate in it), as the pair host -> peer."""
    rec = perftest_tool.from_output(os.path.join(PERFTEST, name), {"peer": peer}, host)[0]
    assert rec["status"] == "pass" and rec["check"] == "rdma.ib_write_bw"
    return dict(rec, target="mlx5_0")        # the rail's label: the captures were measured on ib0 and mlx4_0


def _mesh(hosts, bad=lambda a, b: False):
    out, i = [], 0
    for a in hosts:
        for b in hosts:
            if a != b:
                out.append(_pair(BAD if bad(a, b) else GOOD[i % 2], a, b))
                i += 1
    return out


def _verdicts(records):
    done, findings, problems = analysis_pipeline.analyze(records, {})
    assert problems == []
    return {h["host"]: h["status"] for h in summary.summarize(done)["hosts"]}, done, findings


def _probed(tmp_path, hosts):
    return [rec for host in hosts for rec in _ports(tmp_path, host)]


HOSTS = ["n1", "n2", "n3", "n4"]


def test_the_imported_pairs_carry_no_floor_of_their_own():
    rec = _pair(GOOD[0], "n1", "n2")
    assert rec["facts"]["imported_from"].endswith(GOOD[0]) and rec["expect"] == {}
    assert rec["metrics"]["bw_avg_gbit_s"] == 201.802394


def test_a_bad_node_fails_alone_and_its_healthy_peers_pass(tmp_path):
    fleet = _probed(tmp_path, HOSTS) + _mesh(HOSTS, bad=lambda a, b: "n3" in (a, b))
    hosts, done, findings = _verdicts(fleet)
    # the probe's own warn on the RoCE port (no IPv4 RoCE v2 GID in the capture) is every host's floor verdict
    assert hosts == {"n1": "warn", "n2": "warn", "n3": "fail", "n4": "warn"}
    judged = [r for r in done if r["check"] == "rdma.ib_write_bw.hardware"]
    assert {r["host"] for r in judged if r["status"] == "fail"} == {"n3"}
    assert not [r for r in judged if r["status"] == "warn"]
    bad = next(r for r in judged if r["status"] == "fail")
    assert bad["reason"] == ("%s -> %s on mlx5_0: bw 30.746 Gbit/s < 180 Gbit/s expected (90 %% of the lower active "
                             "port rate of both ends, 200 Gbit/s); n3 is the common factor: 3 of 3 of its pairs are "
                             "low or below their floor" % (bad["facts"]["measured_host"], "n3" if bad["facts"][
                                 "measured_host"] != "n3" else bad["peer"]))
    assert bad["expect"]["bw_avg_gbit_s"]["source"].startswith("derived from the probed port rates: 90 % of the lower")
    assert {tuple(f["hosts"]) for f in findings if f["analysis"] == "hardware"} == {("n3",)}


def test_a_fleet_uniformly_below_line_rate_fails_every_node(tmp_path):
    """The defect: imported pairs at a sixth of their line rate all passed (the fleet's median judged them)."""
    fleet = _probed(tmp_path, HOSTS) + _mesh(HOSTS, bad=lambda a, b: True)
    before, _done, _findings = _verdicts([r for r in fleet if r["check"] != "rdma.port"])
    assert before == {"n1": "pass", "n2": "pass", "n3": "pass", "n4": "pass"}
    hosts, _done, _findings = _verdicts(fleet)
    assert hosts == {"n1": "fail", "n2": "fail", "n3": "fail", "n4": "fail"}


def test_a_bad_link_warns_both_ends_and_fails_no_host(tmp_path):
    fleet = _probed(tmp_path, HOSTS) + _mesh(HOSTS, bad=lambda a, b: {a, b} == {"n1", "n2"})
    hosts, done, findings = _verdicts(fleet)
    assert hosts == {"n1": "warn", "n2": "warn", "n3": "warn", "n4": "warn"}
    bad = [r for r in done if r["check"] == "rdma.ib_write_bw.hardware" and r["status"] != "pass"]
    assert sorted((r["host"], r["peer"], r["status"]) for r in bad) == [
        ("n1", "n2", "warn"), ("n1", "n2", "warn"), ("n2", "n1", "warn"), ("n2", "n1", "warn")]
    assert all(r["reason"].startswith("link n1 <-> n2, n%d -> n%d on mlx5_0: bw 30.746 Gbit/s < 180 Gbit/s" % (
        (1, 2) if r["facts"]["measured_host"] == "n1" else (2, 1))) for r in bad)
    assert all("the link (cable, port, switch path) is the suspect" in r["reason"] for r in bad)
    assert [f["hosts"] for f in findings if f["analysis"] == "hardware"] == [["n1", "n2"]]


def test_one_pair_below_line_rate_goes_on_the_link(tmp_path):
    fleet = _probed(tmp_path, ["n1", "n2"]) + [_pair(BAD, "n1", "n2")]
    hosts, done, _findings = _verdicts(fleet)
    assert hosts == {"n1": "warn", "n2": "warn"}
    [one, two] = [r for r in done if r["check"] == "rdma.ib_write_bw.hardware"]
    assert {one["host"], two["host"]} == {"n1", "n2"} and one["status"] == two["status"] == "warn"
    assert "node or link cannot be told apart" in one["reason"]


def test_a_healthy_fleet_passes_with_every_pair_judged_by_the_hardware(tmp_path):
    fleet = _probed(tmp_path, HOSTS) + _mesh(HOSTS)
    hosts, done, _findings = _verdicts(fleet)
    assert hosts == {"n1": "warn", "n2": "warn", "n3": "warn", "n4": "warn"}      # the probe's RoCE GID warn only
    assert {r["status"] for r in done if r["check"] == "rdma.ib_write_bw.hardware"} == {"pass"}
    found = coverage.coverage(done)
    assert found["unjudged_total"] == 0 and found["headline_total"] == 12
    assert all("hardware" in j["judges"] for j in found["judged_by"])


def test_the_sweeps_own_floor_wins_and_nothing_is_added(tmp_path):
    """A pair the SSH sweep judged against the port rate (its record has the floor) is not judged twice."""
    fleet = _probed(tmp_path, HOSTS) + _mesh(HOSTS)
    for rec in fleet:
        if rec["check"] == "rdma.ib_write_bw":
            # the rule the sweep's module computes with both ends' port rates (perftest_run's planner facts)
            rec["expect"] = perftest_tool.default_rules("ib_write_bw", rec["metrics"], dict(
                rec["facts"], port_rate_gbit_s=200.0), {"line_rate_floor_pct": 90, "peer_rate_gbit_s": 200.0})
            assert rec["expect"]["bw_avg_gbit_s"]["min"] == 180.0
    _hosts, done, _findings = _verdicts(fleet)
    assert not [r for r in done if r["check"] == "rdma.ib_write_bw.hardware"]
    assert coverage.coverage(done)["by_judge"]["hardware"] == 12


def test_without_port_records_the_pairs_are_unjudged_with_the_reason(tmp_path):
    hosts, done, _findings = _verdicts(_mesh(["n1", "n2", "n3"]))
    assert hosts == {"n1": "pass", "n2": "pass", "n3": "pass"}
    found = coverage.coverage(done)
    # judged by attribution (the fleet's median) only, so nothing is listed unjudged; the hardware says why it
    # could not judge
    assert found["unjudged"] == [] and found["by_judge"] == {"attribution": 6}
    why = hardware.not_judged(done)
    assert sorted(host for host, _check, _target in why) == ["n1", "n2", "n3"]
    assert why[("n1", "rdma.ib_write_bw", "mlx5_0")].startswith(
        "not judged from the hardware: no active port rate of mlx5_0 port 1 in the rdma.port records of n1 or n")


def _h100(host):
    with open(H100, encoding="utf-8") as fh:
        records = analysis_pipeline.strip_analysis(json.load(fh)["records"])
    return [dict(copy.deepcopy(r), host=host) for r in records if r["check"] == "gpu.device"]


def _gpudirect(host, peer):
    """A GPUDirect pair as the sweep records it (its planner's facts: GPU 0's memory) without a port rate in its
    facts (the planner found no port), so the record has no floor of its own."""
    facts = perftest_tool.cuda_facts(["mlx5_0"], {"use_cuda": "0"})["mlx5_0"]
    with open(os.path.join(PERFTEST, GOOD[0]), encoding="utf-8") as fh:
        text = fh.read()
    rec = perftest_tool.records(text, Context(params={"test": "ib_write_bw"}, rc=0, host=host, peer=peer,
                                              side="client", target="ib0", facts=dict(facts, ib_port=1)))[0]
    assert rec["status"] == "pass" and rec["facts"]["memory"] == "gpu" and rec["expect"] == {}
    return dict(rec, target="mlx5_0")        # the rail's label (the capture's device is ib0)


def test_a_gpudirect_pair_is_listed_unjudged_naming_the_missing_hca_pcie_link(tmp_path):
    fleet = _probed(tmp_path, ["n1", "n2"]) + _h100("n1") + _h100("n2") + [_gpudirect("n1", "n2")]
    _hosts, done, _findings = _verdicts(fleet)
    assert not [r for r in done if r["check"] == "rdma.ib_write_bw.hardware"]
    [unjudged] = coverage.coverage(done)["unjudged"]
    assert unjudged["check"] == "rdma.ib_write_bw" and unjudged["why"] == (
        "not judged from the hardware: a GPUDirect figure (use_cuda) may be bound by the HCAs' or the GPU's PCIe "
        "link below the port rate, and the probe records lack the HCA PCIe link of n1 mlx5_0 and the HCA PCIe link "
        "of n2 mlx5_0; the GPU's is known (GPU 0: PCIe gen5 x16 = 504.1 Gbit/s)")


def test_hccl_figures_are_unjudged_for_want_of_an_npu_link_rate():
    """A real HCCL Test capture (16 ranks): no profile rule, and the probe records carry no NPU link rate."""
    path = os.path.join(PARSERS, "hccl_test", "hccl-vm-all-reduce-2MB-16rank-aveg-time.txt")
    rec = dict(hccl.from_output(path, {"ranks": 16, "op": "sum"})[0], host="npu-1")
    assert rec["metrics"]["busbw_max_gbyte_s"] is not None and rec["metrics"]["ranks"] == 16
    _hosts, done, _findings = _verdicts([rec])
    [unjudged] = coverage.coverage(done)["unjudged"]
    assert unjudged["check"] == rec["check"] and unjudged["why"] == hardware.NPU_UNJUDGED
    assert unjudged["why"] == (
        "not judged from the hardware: no NPU link rate in the probe records (npu-smi and hccn_tool report no HCCS "
        "link rate; the NPU RoCE port speed, hccn_tool -i N -speed -g, is not probed yet and would bound only "
        "multi-node runs); set a profile or acceptance_expect rule")


def test_a_peer_given_as_an_address_gets_no_record(tmp_path):
    """The other end is not a host of the run (an address): the pair is held to this end's port rate, and its link
    judgement lands on this end only (verdict.host_records gives such a peer no entry either)."""
    fleet = _probed(tmp_path, ["n1"]) + [_pair(BAD, "n1", "192.0.2.7")]
    hosts, done, _findings = _verdicts(fleet)
    assert hosts == {"n1": "warn"}
    [judged] = [r for r in done if r["check"] == "rdma.ib_write_bw.hardware"]
    assert judged["host"] == "n1" and judged["peer"] == "192.0.2.7" and judged["status"] == "warn"
    assert "(90 % of the active port rate of n1 (192.0.2.7 has no rdma.port record of mlx5_0 port 1), 200 Gbit/s)" \
        in judged["reason"]
