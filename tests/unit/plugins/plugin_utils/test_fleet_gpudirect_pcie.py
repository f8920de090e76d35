# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""RDMA pairs and the PCIe links of their path (issue 19), on whole fleets from real captures.

The rule: a pair is judged on its port rate exactly as the SSH sweep judges it (perftest_tool.default_rules), and
only where no PCIe link of its path (an end's HCA link as it can reach, the named GPU's for GPUDirect) is below the
port rate; where one is, the pair is listed unjudged (no PCIe efficiency is calibrated). A link trained below what
it can reach is the probe's warn on that host's rdma.port, never a lower floor.

- ``rdma.port`` records: the environment probe run on the CX-4 host's sysfs tree (test_env_probe.cx4_infiniband,
  mlx5_0's rate set to the HDR port the perftest captures were measured on, as test_fleet_rdma_line_rate does), each
  RDMA device given the PCI link attribute texts of the GPU function of the real H100 sysfs capture ("32.0 GT/s
  PCIe", "16": test_env_probe_hca_pcie.gpu_link_texts), and where a test says so, laid out behind an upstream port
  (test_env_probe_hca_pcie.put_behind_port) with that port's maxima. The narrower or slower links and ports are the
  tests' edits, in the kernel's words ("5.0 GT/s PCIe" for gen2, "8" for x8). ``healthy``: the test's edits that
  make every probe record pass (mlx5_0 given a RoCE v2 GID with an IPv4 address, as the sysfs of a port with an
  address has it, and mlx5_1's IB port brought up at HDR), so a host's verdict shows what the analysis adds.
- ``gpu.device`` records: the healthy 2x H100 run's (gen5 x16 GPUs).
- The pairs: real perftest captures recorded as the sweep records a GPUDirect pair (``use_cuda 0``, no port rate,
  so no floor of their own): the HDR captures (201.8 and 195.0 Gbit/s at 8 MiB) for healthy pairs, the ConnectX-3
  one (30.7 Gbit/s at 8 MiB) for pairs through the slow node. Host names and the rail are the test's labels.
Every test asserts exactly which hosts fail.
"""

from __future__ import annotations

import importlib.util
import os

from ansible_collections.aifabric.acceptance.plugins.module_utils import env_probe
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import Context
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import perftest_sweep as perftest_tool
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import coverage, hardware

HERE = os.path.dirname(os.path.abspath(__file__))


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


LINE = _load("hw19_pcie_line_rate_tests", os.path.join(HERE, "test_fleet_rdma_line_rate.py"))
PCIE = _load("hw19_pcie_probe_tests", os.path.join(HERE, "..", "module_utils", "test_env_probe_hca_pcie.py"))
HOSTS = ["n1", "n2", "n3", "n4"]
X8_GEN2 = {"current_link_speed": "5.0 GT/s PCIe\n", "current_link_width": "8\n"}
X8 = {"current_link_width": "8\n"}
PASS = dict((h, "pass") for h in HOSTS)


def _healthy(root, index):
    port = "/sys/class/infiniband/mlx5_0/ports/1/"
    PCIE.PROBE.put(root, port + "gids/2", "0000:0000:0000:0000:0000:ffff:0a00:%04x\n" % index)
    PCIE.PROBE.put(root, port + "gid_attrs/types/2", "RoCE v2\n")
    PCIE.PROBE.put(root, port + "gid_attrs/ndev/2", "ens11f0\n")
    port = "/sys/class/infiniband/mlx5_1/ports/1/"
    for name, text in (("state", "4: ACTIVE\n"), ("phys_state", "5: LinkUp\n"), ("rate", "200 Gb/sec (4X HDR)\n")):
        PCIE.PROBE.put(root, port + name, text)


def _ports(tmp_path, host, link=None, port=None, healthy=False):
    """The probe's rdma records of the CX-4 host (mlx5_0 at HDR), both HCAs with the captured gen5 x16 link, or
    ``link``'s edits of it; ``link`` False: no link files (what the probe finds where sysfs has none); ``port``:
    each HCA behind an upstream port with these maxima (PCIE.port_texts)."""
    root = tmp_path / host
    PCIE.PROBE.cx4_infiniband(root)
    PCIE.PROBE.put(root, "/sys/class/infiniband/mlx5_0/ports/1/rate", "200 Gb/sec (4X HDR)\n")
    if healthy:
        _healthy(root, HOSTS.index(host) + 1 if host in HOSTS else 99)
    for i, hca in enumerate(("mlx5_0", "mlx5_1")):
        if link is not False:
            PCIE.write_hca_link(root, hca, dict(PCIE.gpu_link_texts(), **(link or {})))
        if port is not None:
            PCIE.put_behind_port(root, hca, port, bridge="0000:00:%02x.0" % (i + 1), function="0000:%02x:00.0" % (i + 1))
    return [dict(rec, host=host) for rec in env_probe.probe(PCIE.PROBE.host_for(root), {"groups": ["rdma"]})]


def _fleet(tmp_path, hosts, links=None, ports=None, healthy=False):
    out = []
    for host in hosts:
        out += _ports(tmp_path, host, (links or {}).get(host), (ports or {}).get(host), healthy) + LINE._h100(host)
    return out


def _gdr(name, host, peer):
    """A GPUDirect pair as the sweep records it (use_cuda 0, its planner's facts) from a real capture: no floor."""
    facts = perftest_tool.cuda_facts(["mlx5_0"], {"use_cuda": "0"})["mlx5_0"]
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


def _pcie_warns(done):
    return sorted((r["host"], r["target"]) for r in done if r["check"] == "rdma.port" and "HCA PCIe" in (r.get("reason") or ""))


def _slow3(a, b):
    return "n3" in (a, b)


def test_a_healthy_gpudirect_fleet_is_judged_on_its_port_rate_and_passes(tmp_path):
    hosts, done, _findings = LINE._verdicts(_fleet(tmp_path, HOSTS) + _mesh(HOSTS))
    assert hosts == {"n1": "warn", "n2": "warn", "n3": "warn", "n4": "warn"}      # the probe's RoCE GID warn only
    judged = _judged(done)
    assert len(judged) == 12 and {r["status"] for r in judged} == {"pass"}
    assert {r["expect"]["bw_avg_gbit_s"]["min"] for r in judged} == {180.0}
    one = next(r for r in judged if r["host"] == "n1" and r["peer"] == "n2")
    assert one["facts"]["derivation"] == "90 % of the lower active port rate of both ends, 200 Gbit/s"
    assert one["expect"]["bw_avg_gbit_s"]["source"].startswith("derived from the probed port rates: 90 % of the lower")
    assert one["facts"]["pcie_links_not_below_port_rate"] == [
        "the HCA's PCIe link (n1 mlx5_0, reachable gen5 x16 = 504.1 Gbit/s)",
        "the HCA's PCIe link (n2 mlx5_0, reachable gen5 x16 = 504.1 Gbit/s)",
        "the GPU's PCIe link (GPU 0 of n1, gen5 x16 = 504.1 Gbit/s)"]
    assert coverage.coverage(done)["unjudged_total"] == 0


def test_healthy_hosts_pass_and_a_bad_node_fails_alone(tmp_path):
    """With every probe record passing, the analysis leaves healthy hosts at pass; the slow node alone fails."""
    hosts, done, _findings = LINE._verdicts(_fleet(tmp_path / "ok", HOSTS, healthy=True) + _mesh(HOSTS))
    assert hosts == PASS
    assert len(_judged(done)) == 12 and {r["status"] for r in _judged(done)} == {"pass"}
    hosts, done, _findings = LINE._verdicts(_fleet(tmp_path / "bad", HOSTS, healthy=True) + _mesh(HOSTS, slow=_slow3))
    assert hosts == dict(PASS, n3="fail")
    assert {r["host"] for r in _judged(done) if r["status"] != "pass"} == {"n3"}


def test_pcie_bound_pairs_are_listed_unjudged_not_failed(tmp_path):
    """The test's design: every host's HCAs (gen5 x16 cards) sit behind gen2 x8 ports ("5.0 GT/s PCIe", "8") and
    trained at gen2 x8, the most both ends support: 32 Gbit/s, below the 200 Gbit/s ports. The pairs (30.7 Gbit/s)
    are not held to any floor derived from the link: each is listed unjudged, naming the link; no host warns."""
    slots = dict((h, PCIE.port_texts("5.0 GT/s PCIe\n", "8\n")) for h in HOSTS)
    fleet = _fleet(tmp_path, HOSTS, dict((h, X8_GEN2) for h in HOSTS), slots, healthy=True) + \
        _mesh(HOSTS, slow=lambda a, b: True)
    hosts, done, _findings = LINE._verdicts(fleet)
    assert hosts == PASS and not _judged(done) and _pcie_warns(done) == []
    why = hardware.not_judged(done)         # the fleet's relative rule (attribution) alone judges them
    assert sorted(why) == [(h, "rdma.ib_write_bw", "mlx5_0") for h in HOSTS]
    assert why[("n1", "rdma.ib_write_bw", "mlx5_0")] == (
        "not judged from the hardware: path bound by the HCA's PCIe link (n1 mlx5_0, reachable gen2 x8 = 32 Gbit/s) "
        "below the port rate 200 Gbit/s (the lower active port rate of both ends): no calibrated PCIe efficiency")
    # a pair nothing else judges (the only pair of its fleet) is listed unjudged in the summary with that reason
    one_pair = [r for r in fleet if r.get("host") in ("n1", "n2") and r.get("peer") in (None, "n2")]
    [alone] = coverage.coverage(LINE._verdicts(one_pair)[1])["unjudged"]
    assert alone["host"] == "n1" and alone["why"] == why[("n1", "rdma.ib_write_bw", "mlx5_0")]


def test_a_link_trained_at_x8_in_an_x16_slot_warns_on_that_host_only(tmp_path):
    """n3's HCAs (gen5 x16 cards behind gen5 x16 ports) trained at x8: 252 Gbit/s, still above the 200 Gbit/s port,
    so its pairs are judged on the port rate as everywhere; the fault is the probe's warn on n3's rdma.port."""
    ports = dict((h, PCIE.port_texts()) for h in HOSTS)
    hosts, done, _findings = LINE._verdicts(_fleet(tmp_path, HOSTS, {"n3": X8}, ports, healthy=True) + _mesh(HOSTS))
    assert hosts == dict(PASS, n3="warn")
    assert _pcie_warns(done) == [("n3", "mlx5_0/1"), ("n3", "mlx5_1/1")]
    assert {(r["status"], r["expect"]["bw_avg_gbit_s"]["min"]) for r in _judged(done)} == {("pass", 180.0)}


def test_an_x16_card_in_an_x8_slot_does_not_warn(tmp_path):
    """n3's HCAs behind x8 ports ("8") trained at x8: the design, no warn; 252 Gbit/s is above the port rate."""
    ports = dict((h, PCIE.port_texts()) for h in HOSTS)
    ports["n3"] = PCIE.port_texts(width="8\n")
    hosts, done, _findings = LINE._verdicts(_fleet(tmp_path, HOSTS, {"n3": X8}, ports, healthy=True) + _mesh(HOSTS))
    assert hosts == PASS and _pcie_warns(done) == []
    assert len(_judged(done)) == 12


def test_a_degraded_link_does_not_lower_its_own_floor(tmp_path):
    """The defect: n3's HCAs trained at gen2 x8 (32 Gbit/s) below their gen5 x16 max lowered the floor of n3's pairs
    to 28.8 Gbit/s, and its 30.7 Gbit/s pairs passed. What the link can reach (gen5 x16) is above the port rate, so
    the pairs are held to the port's 180 Gbit/s and n3 fails; its rdma.port names the degraded link."""
    fleet = _fleet(tmp_path, HOSTS, {"n3": X8_GEN2}, healthy=True) + _mesh(HOSTS, slow=_slow3)
    hosts, done, findings = LINE._verdicts(fleet)
    assert hosts == dict(PASS, n3="fail")
    assert _pcie_warns(done) == [("n3", "mlx5_0/1"), ("n3", "mlx5_1/1")]
    port = next(r for r in done if r["check"] == "rdma.port" and r["host"] == "n3" and r["target"] == "mlx5_0/1")
    assert port["status"] == "warn" and port["reason"] == (
        "HCA PCIe link trained gen2 below gen5, the card's max (upstream port's not read); x8 below x16, the card's "
        "max (upstream port's not read): a degraded link (riser, slot, seating)")
    assert {r["expect"]["bw_avg_gbit_s"]["min"] for r in _judged(done)} == {180.0}
    assert {tuple(f["hosts"]) for f in findings if f["analysis"] == "hardware"} == {("n3",)}


def test_host_memory_pairs_get_the_same_verdicts_with_or_without_link_figures(tmp_path):
    """The floor never depends on PCIe figures: imported host-memory pairs through the degraded n3 fail n3 alike
    whether the probe read the links or not."""
    pairs = _mesh(HOSTS, slow=_slow3, pair=LINE._pair)
    hosts, _done, _findings = LINE._verdicts(_fleet(tmp_path / "x8", HOSTS, {"n3": X8_GEN2}, healthy=True) + pairs)
    blind, _done, _findings = LINE._verdicts(_fleet(tmp_path / "nolink", HOSTS, dict((h, False) for h in HOSTS),
                                                    healthy=True) + pairs)
    assert hosts == blind == dict(PASS, n3="fail")


def test_a_bad_node_among_healthy_gpudirect_hosts_fails_alone(tmp_path):
    fleet = _fleet(tmp_path, HOSTS) + _mesh(HOSTS, slow=_slow3)
    hosts, done, findings = LINE._verdicts(fleet)
    assert hosts == {"n1": "warn", "n2": "warn", "n3": "fail", "n4": "warn"}
    failed = [r for r in _judged(done) if r["status"] == "fail"]
    assert {r["host"] for r in failed} == {"n3"} and not [r for r in _judged(done) if r["status"] == "warn"]
    assert all("n3 is the common factor: 3 of 3 of its pairs are low or below their floor" in r["reason"]
               and "bw 30.746 Gbit/s < 180 Gbit/s expected (90 % of the lower active port rate of both ends, 200 "
               "Gbit/s)" in r["reason"] for r in failed)
    assert {tuple(f["hosts"]) for f in findings if f["analysis"] == "hardware"} == {("n3",)}


def test_without_one_ends_hca_link_a_gpudirect_pair_stays_unjudged(tmp_path):
    fleet = (_ports(tmp_path, "n1") + _ports(tmp_path, "n2", link=False) + LINE._h100("n1") + LINE._h100("n2")
             + [_gdr(LINE.GOOD[0], "n1", "n2")])
    _hosts, done, _findings = LINE._verdicts(fleet)
    assert not _judged(done)
    [unjudged] = coverage.coverage(done)["unjudged"]
    assert unjudged["why"] == (
        "not judged from the hardware: a GPUDirect figure (use_cuda) may be bound by the HCAs' or the GPU's PCIe "
        "link below the port rate, and the probe records lack the HCA PCIe link of n2 mlx5_0; the GPU's is known "
        "(GPU 0: PCIe gen5 x16 = 504.1 Gbit/s)")


def test_the_named_gpus_link_below_the_port_rate_leaves_its_hosts_gpudirect_pairs_unjudged(tmp_path):
    """The test's edit: n1's GPU 0 reports a gen3 x16 link (126.1 Gbit/s, below the 200 Gbit/s ports): n1's
    GPUDirect pairs (n1 the client, GPU 0 named) are unjudged, naming it; the other pairs keep the port's floor."""
    fleet = _fleet(tmp_path, HOSTS) + _mesh(HOSTS)
    for rec in fleet:
        if rec["check"] == "gpu.device" and rec["host"] == "n1" and str(rec["target"]) == "0":
            rec["metrics"] = dict(rec["metrics"], pcie_link_max_gen=3, pcie_link_current_gen=3)
    hosts, done, _findings = LINE._verdicts(fleet)
    assert hosts == {"n1": "warn", "n2": "warn", "n3": "warn", "n4": "warn"}
    assert sorted((r["host"], r["expect"]["bw_avg_gbit_s"]["min"]) for r in _judged(done)) == \
        [(h, 180.0) for h in ("n2", "n3", "n4") for _i in range(3)]
    why = hardware.not_judged(done)
    assert list(why) == [("n1", "rdma.ib_write_bw", "mlx5_0")]
    assert set(why.values()) == {
        "not judged from the hardware: path bound by the GPU's PCIe link (GPU 0 of n1, gen3 x16 = 126.1 Gbit/s) "
        "below the port rate 200 Gbit/s (the lower active port rate of both ends): no calibrated PCIe efficiency"}
