# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPUDirect pairs bounded by the PCIe links of the path (issue 19), on whole fleets from real captures.

- ``rdma.port`` records: the environment probe run on the CX-4 host's sysfs tree (test_env_probe.cx4_infiniband,
  mlx5_0's rate set to the HDR port the perftest captures were measured on, as test_hw19_rdma_line_rate does), each
  RDMA device given the PCI link attribute texts of the GPU function of the real H100 sysfs capture ("32.0 GT/s
  PCIe", "16": test_env_probe_hca_pcie.gpu_link_texts). The degraded node's HCA link is the test's edit: trained at
  "5.0 GT/s PCIe" x"8" (the kernel's words for gen2 and width 8) below its captured gen5 x16 max.
- ``gpu.device`` records: the healthy 2x H100 run's (gen5 x16 GPUs).
- The pairs: real perftest captures recorded as the sweep records a GPUDirect pair (``use_cuda 0``, no port rate,
  so no floor of their own): the HDR captures (201.8 and 195.0 Gbit/s at 8 MiB) for healthy pairs, the ConnectX-3
  one (30.7 Gbit/s at 8 MiB) for pairs through the slow node. Host names and the rail are the test's labels.
Every test asserts exactly which hosts fail.
"""

from __future__ import annotations

import importlib.util
import os

from ansible_collections.aifabric.acceptance.plugins.module_utils import env_probe, perftest_pairs
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import Context
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import perftest as perftest_tool
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import coverage

HERE = os.path.dirname(os.path.abspath(__file__))


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


LINE = _load("hw19_pcie_line_rate_tests", os.path.join(HERE, "test_hw19_rdma_line_rate.py"))
PCIE = _load("hw19_pcie_probe_tests", os.path.join(HERE, "..", "module_utils", "test_env_probe_hca_pcie.py"))
HOSTS = ["n1", "n2", "n3", "n4"]
X8_GEN2 = {"current_link_speed": "5.0 GT/s PCIe\n", "current_link_width": "8\n"}


def _ports(tmp_path, host, link=None):
    """The probe's rdma records of the CX-4 host (mlx5_0 at HDR), both HCAs with the captured gen5 x16 link, or
    ``link``'s edits of it; ``link`` False: no link files (what the probe finds where sysfs has none)."""
    root = tmp_path / host
    PCIE.PROBE.cx4_infiniband(root)
    PCIE.PROBE.put(root, "/sys/class/infiniband/mlx5_0/ports/1/rate", "200 Gb/sec (4X HDR)\n")
    for hca in ("mlx5_0", "mlx5_1"):
        if link is not False:
            PCIE.write_hca_link(root, hca, dict(PCIE.gpu_link_texts(), **(link or {})))
    return [dict(rec, host=host) for rec in env_probe.probe(PCIE.PROBE.host_for(root), {"groups": ["rdma"]})]


def _fleet(tmp_path, hosts, links=None):
    out = []
    for host in hosts:
        out += _ports(tmp_path, host, (links or {}).get(host)) + LINE._h100(host)
    return out


def _gdr(name, host, peer):
    """A GPUDirect pair as the sweep records it (use_cuda 0, its planner's facts) from a real capture: no floor."""
    facts = perftest_pairs.cuda_facts(["mlx5_0"], {"use_cuda": "0"})["mlx5_0"]
    with open(os.path.join(LINE.PERFTEST, name), encoding="utf-8") as fh:
        text = fh.read()
    rec = perftest_tool.records(text, Context(params={"test": "ib_write_bw"}, rc=0, host=host, peer=peer,
                                              side="client", target="mlx4_0" if name == LINE.BAD else "ib0",
                                              facts=dict(facts, ib_port=1)))[0]
    assert rec["status"] == "pass" and rec["facts"]["memory"] == "gpu" and rec["expect"] == {}
    return dict(rec, target="mlx5_0")        # the rail's label (the captures' devices are ib0 and mlx4_0)


def _mesh(hosts, slow=lambda a, b: False, pair=_gdr):
    out, i = [], 0
    for a in hosts:
        for b in hosts:
            if a != b:
                out.append(pair(LINE.BAD if slow(a, b) else LINE.GOOD[i % 2], a, b))
                i += 1
    return out


def _judged(done):
    return [r for r in done if r["check"] == "rdma.ib_write_bw.hardware"]


def test_a_healthy_gpudirect_fleet_is_judged_on_its_path_and_passes(tmp_path):
    hosts, done, _findings = LINE._verdicts(_fleet(tmp_path, HOSTS) + _mesh(HOSTS))
    assert hosts == {"n1": "warn", "n2": "warn", "n3": "warn", "n4": "warn"}      # the probe's RoCE GID warn only
    judged = _judged(done)
    assert len(judged) == 12 and {r["status"] for r in judged} == {"pass"}
    assert {r["expect"]["bw_avg_gbit_s"]["min"] for r in judged} == {180.0}
    one = next(r for r in judged if r["host"] == "n1" and r["peer"] == "n2")
    assert one["facts"]["derivation"] == (
        "90 % of min(the lower active port rate of both ends, 200 Gbit/s; HCA PCIe link of n1 mlx5_0 (gen5 x16 = "
        "504.1 Gbit/s); HCA PCIe link of n2 mlx5_0 (gen5 x16 = 504.1 Gbit/s); PCIe link of GPU 0 of n1 (gen5 x16 = "
        "504.1 Gbit/s)) = 200 Gbit/s, set by the port rate")
    assert one["expect"]["bw_avg_gbit_s"]["source"].startswith(
        "derived from the probed port rates and PCIe links (lanes x GB/s per lane and direction after line encoding")
    found = coverage.coverage(done)
    assert found["unjudged_total"] == 0


def test_an_hca_trained_at_x8_lowers_the_floor_of_its_pairs_and_warns_on_its_port(tmp_path):
    """n3's HCA trained at gen2 x8 (32 Gbit/s, below the 200 Gbit/s port): its pairs measure 30.7 Gbit/s and are
    held to 90 % of that link, not of the port; the probe's own rdma.port verdict names the narrow link."""
    fleet = _fleet(tmp_path, HOSTS, {"n3": X8_GEN2}) + _mesh(HOSTS, slow=lambda a, b: "n3" in (a, b))
    hosts, done, findings = LINE._verdicts(fleet)
    assert hosts == {"n1": "warn", "n2": "warn", "n3": "warn", "n4": "warn"}
    judged = _judged(done)
    assert len(judged) == 12 and {r["status"] for r in judged} == {"pass"}
    slow = [r for r in judged if "n3" in (r["host"], r["peer"])]
    assert len(slow) == 6 and {r["expect"]["bw_avg_gbit_s"]["min"] for r in slow} == {28.8}
    assert all(r["facts"]["derivation"].endswith(
        ") = 32 Gbit/s, set by the HCA PCIe link of n3 mlx5_0 (gen2 x8 = 32 Gbit/s)") for r in slow)
    assert {r["expect"]["bw_avg_gbit_s"]["min"] for r in judged if r not in slow} == {180.0}
    port = next(r for r in done if r["check"] == "rdma.port" and r["host"] == "n3" and r["target"] == "mlx5_0/1")
    assert port["status"] == "warn" and port["reason"].endswith("; HCA PCIe link x8 below its x16 max")
    assert not [r for r in done if r["check"] == "rdma.port" and r["host"] != "n3"
                and "HCA PCIe" in (r.get("reason") or "")]
    assert not [f for f in findings if f["analysis"] == "hardware"]


def test_the_x8_hca_bounds_host_memory_pairs_too(tmp_path):
    """The same fleet with imported host-memory pairs: the HCA's PCIe link is on their path as well, so n3's pairs
    are held to it; with only the port rate (no link files), the same pairs fail n3 against 180 Gbit/s."""
    pairs = _mesh(HOSTS, slow=lambda a, b: "n3" in (a, b), pair=LINE._pair)
    hosts, done, _findings = LINE._verdicts(_fleet(tmp_path / "x8", HOSTS, {"n3": X8_GEN2}) + pairs)
    assert hosts == {"n1": "warn", "n2": "warn", "n3": "warn", "n4": "warn"}
    assert {r["status"] for r in _judged(done)} == {"pass"}
    blind, _done, _findings = LINE._verdicts(_fleet(tmp_path / "nolink", HOSTS, dict((h, False) for h in HOSTS))
                                             + pairs)
    assert blind == {"n1": "warn", "n2": "warn", "n3": "fail", "n4": "warn"}


def test_a_bad_node_among_healthy_gpudirect_hosts_fails_alone(tmp_path):
    fleet = _fleet(tmp_path, HOSTS) + _mesh(HOSTS, slow=lambda a, b: "n3" in (a, b))
    hosts, done, findings = LINE._verdicts(fleet)
    assert hosts == {"n1": "warn", "n2": "warn", "n3": "fail", "n4": "warn"}
    failed = [r for r in _judged(done) if r["status"] == "fail"]
    assert {r["host"] for r in failed} == {"n3"} and not [r for r in _judged(done) if r["status"] == "warn"]
    assert all("n3 is the common factor: 3 of 3 of its pairs are low or below their floor" in r["reason"]
               and "bw 30.746 Gbit/s < 180 Gbit/s expected (90 % of min(" in r["reason"] for r in failed)
    assert {tuple(f["hosts"]) for f in findings if f["analysis"] == "hardware"} == {("n3",)}


def test_without_one_ends_hca_link_a_gpudirect_pair_stays_unjudged(tmp_path):
    fleet = (_ports(tmp_path, "n1") + _ports(tmp_path, "n2", link=False) + LINE._h100("n1") + LINE._h100("n2")
             + [_gdr(LINE.GOOD[0], "n1", "n2")])
    _hosts, done, _findings = LINE._verdicts(fleet)
    assert not _judged(done)
    [unjudged] = coverage.coverage(done)["unjudged"]
    assert unjudged["why"] == (
        "not judged from the hardware: a GPUDirect figure (use_cuda) is bounded by min(port rate, the GPU's PCIe "
        "link, the HCA's PCIe link); the probe records give the GPU's (GPU 0: PCIe gen5 x16 = 504.1 Gbit/s) but not "
        "the HCA's (rdma.port carries no PCIe generation or width)")


def test_the_named_gpus_link_bounds_its_hosts_gpudirect_pairs(tmp_path):
    """The test's edit: n1's GPU 0 reports a gen3 x16 link (126.1 Gbit/s, below the 200 Gbit/s ports): n1's
    GPUDirect pairs (n1 the client, GPU 0 named) are held to 90 % of it; the other pairs keep the port's floor."""
    fleet = _fleet(tmp_path, HOSTS) + _mesh(HOSTS)
    for rec in fleet:
        if rec["check"] == "gpu.device" and rec["host"] == "n1" and str(rec["target"]) == "0":
            rec["metrics"] = dict(rec["metrics"], pcie_link_max_gen=3, pcie_link_current_gen=3)
    hosts, done, _findings = LINE._verdicts(fleet)
    assert hosts == {"n1": "warn", "n2": "warn", "n3": "warn", "n4": "warn"}
    floors = dict(((r["host"], r["peer"]), r["expect"]["bw_avg_gbit_s"]["min"]) for r in _judged(done))
    assert {floors[("n1", p)] for p in ("n2", "n3", "n4")} == {113.472}
    assert {f for (h, _p), f in floors.items() if h != "n1"} == {180.0}
    one = next(r for r in _judged(done) if r["host"] == "n1")
    assert one["facts"]["derivation"].endswith("set by the PCIe link of GPU 0 of n1 (gen3 x16 = 126.1 Gbit/s)")
