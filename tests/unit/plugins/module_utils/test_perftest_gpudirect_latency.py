# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 13 items 4 and 5: rail-aligned GPUDirect (``use_cuda: auto``) and latency tails in the sweep.

GPU choice: on REAL ``nvidia-smi topo -m`` captures (parsers/fixtures/nvidia_smi), through the records env_probe
makes of them, to the perftest argv and the records. Latency: REAL perftest latency captures
(parsers/fixtures/perftest); where a test needs a slow node or link it edits the real text's figures and says so.
"""

from __future__ import annotations

import copy
import os
import random
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from ansible.module_utils.testing import patch_module_args

from ansible_collections.aifabric.acceptance.plugins.filter.pairings import pairings
from ansible_collections.aifabric.acceptance.plugins.module_utils import env_probe, probe_host
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import Context
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import perftest_sweep as perftest_tool
from ansible_collections.aifabric.acceptance.plugins.module_utils import perftest_sweep
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import AcceptanceError
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import nvidia_smi
from ansible_collections.aifabric.acceptance.plugins.module_utils.runner import Run
from ansible_collections.aifabric.acceptance.plugins.modules import perftest_sweep as sweep_module
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import fleet
from ansible_collections.aifabric.acceptance.tests.unit.helpers import Exit, parser_fixture, raise_on_exit

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = parser_fixture()
SMI = "/usr/bin/nvidia-smi"
TOPO_8GPU_10NIC = "nvidia_smi/topo-m-8gpu-nv12-10nic-nic-legend-tabs.txt"
TOPO_1GPU_3NIC_OLD = "nvidia_smi/topo-m-old-driver-nic-columns-named-mlx5-legend-switch-wording.txt"
TOPO_1GPU_1NIC = "nvidia_smi/topo-m-1gpu-1nic-spaces-nic-legend-sglang-env.txt"
TOPO_H200X2 = "nvidia_smi/h200x2-nccl-tests-2.19.6/nvidia_smi_topo.txt"
TOPO_H100 = "nvidia_smi/driver580-h100-topo-m-1gpu.txt"
WRITE_LAT = "perftest/dgx-spark-cx7-ib-write-lat-client-rdma-cm-force-link-ib.txt"
WRITE_BW = "perftest/cx7-ndr-ib-read-bw-client-report-gbits-cpufreq-warning.txt"
READ_LAT = "perftest/mlx4-ib-read-lat-client-a-all-sizes.txt"


def read(rel):
    with open(os.path.join(FIXTURES, rel), encoding="utf-8") as handle:
        return handle.read()


class TopoHost(object):
    """A host whose ``nvidia-smi topo -m`` prints a captured output."""

    def __init__(self, text):
        self.text = text

    def run(self, argv, timeout_s):
        return Run(list(argv), 0, self.text, "", 0.01)


def probe_records(rel):
    """The gpu.topology record env_probe makes of a captured ``nvidia-smi topo -m`` (its own code path)."""
    text = read(rel)
    gpus = nvidia_smi.parse_topo(text)["gpus"]
    data = {"gpus": [{"index": i} for i in range(len(gpus))]}
    return env_probe._gpu_topology(TopoHost(text), SMI, {}, data, {"name": "nvidia-smi"})  # pylint: disable=protected-access


def topology(rel):
    facts, why = perftest_tool.topology_from_probe(probe_records(rel))
    assert why is None
    return facts


def picks(result):
    return dict((device, (choice["gpu"], choice["link"])) for device, choice in result.items())


# --------------------------------------------------------------------------- the choice (pure)

def test_eight_gpus_ten_hcas_one_gpu_per_rail_then_shared():
    """DGX-like 8 GPUs / 10 HCAs: GPU pairs share a PCIe switch (PXB) with HCA pairs; mlx5_8/9 are SYS to all."""
    devices = ["mlx5_%d" % i for i in range(10)]
    got = perftest_tool.gpus_for_hcas(devices, topology(TOPO_8GPU_10NIC))
    assert picks(got) == {
        "mlx5_0": (0, "PXB"), "mlx5_1": (1, "PXB"), "mlx5_2": (2, "PXB"), "mlx5_3": (3, "PXB"),
        "mlx5_4": (4, "PXB"), "mlx5_5": (5, "PXB"), "mlx5_6": (6, "PXB"), "mlx5_7": (7, "PXB"),
        # more HCAs than GPUs: the least shared of the (all SYS) closest GPUs, lowest index first
        "mlx5_8": (0, "SYS"), "mlx5_9": (1, "SYS"),
    }
    assert got["mlx5_8"]["why"] == "GPU0 is the closest GPU (SYS) to mlx5_8, shared with mlx5_0 (more HCAs than GPUs)"
    assert "shared with mlx5_1" in got["mlx5_9"]["why"]
    # the eight rails of the fabric alone: one GPU each, never shared
    rails = perftest_tool.gpus_for_hcas(devices[:8], topology(TOPO_8GPU_10NIC))
    assert sorted(choice["gpu"] for choice in rails.values()) == list(range(8))
    assert not any("shared" in choice["why"] for choice in rails.values())


def test_the_choice_is_deterministic_and_follows_rail_order():
    topo = topology(TOPO_8GPU_10NIC)
    # the same matrix with its rows and columns in another order gives the same answer
    shuffled = copy.deepcopy(topo)
    rng = random.Random(3)
    rows = list(shuffled["matrix"].items())
    rng.shuffle(rows)
    shuffled["matrix"] = dict((name, dict(sorted(row.items(), key=lambda _kv: rng.random()))) for name, row in rows)
    devices = ["mlx5_%d" % i for i in range(10)]
    assert perftest_tool.gpus_for_hcas(devices, shuffled) == perftest_tool.gpus_for_hcas(devices, topo)
    # two HCAs behind the same switch as GPU0 and GPU1: the first rail takes the lower GPU
    assert picks(perftest_tool.gpus_for_hcas(["mlx5_1", "mlx5_0"], topo)) == {"mlx5_1": (0, "PXB"),
                                                                              "mlx5_0": (1, "PXB")}
    assert picks(perftest_tool.gpus_for_hcas(["mlx5_5", "mlx5_4"], topo)) == {"mlx5_5": (4, "PXB"),
                                                                              "mlx5_4": (5, "PXB")}


def test_closest_wins_over_free_one_gpu_and_three_hcas():
    """Old driver, NIC columns named mlx5_n: GPU0 is PIX to mlx5_0 and mlx5_1, SYS to mlx5_2."""
    got = perftest_tool.gpus_for_hcas(["mlx5_0", "mlx5_1", "mlx5_2"], topology(TOPO_1GPU_3NIC_OLD))
    assert picks(got) == {"mlx5_0": (0, "PIX"), "mlx5_1": (0, "PIX"), "mlx5_2": (0, "SYS")}
    assert "shared with mlx5_0" in got["mlx5_1"]["why"] and "shared with mlx5_0, mlx5_1" in got["mlx5_2"]["why"]


def test_link_order_pix_pxb_phb_node_sys():
    """The ranking on an edited copy of the real 1 GPU / 1 NIC capture: the same HCA at each distance."""
    base = topology(TOPO_1GPU_1NIC)
    assert picks(perftest_tool.gpus_for_hcas(["mlx5_0"], base)) == {"mlx5_0": (0, "PHB")}
    order = []
    for cells in (("SYS", "NODE"), ("NODE", "PHB"), ("PHB", "PXB"), ("PXB", "PIX")):
        # two GPUs, the second one closer: it must win whatever the index
        topo = {"nic_names": base["nic_names"],
                "matrix": {"GPU0": {"GPU0": "X", "GPU1": "NV18", "NIC0": cells[0]},
                           "GPU1": {"GPU0": "NV18", "GPU1": "X", "NIC0": cells[1]}}}
        order.append(picks(perftest_tool.gpus_for_hcas(["mlx5_0"], topo))["mlx5_0"])
    assert order == [(1, "NODE"), (1, "PHB"), (1, "PXB"), (1, "PIX")]


@pytest.mark.parametrize("rel", [TOPO_H200X2, TOPO_H100])
def test_gpus_but_no_nic_in_the_topology_is_host_memory_with_the_reason(rel):
    got = perftest_tool.gpus_for_hcas(["mlx5_0"], topology(rel))
    assert got["mlx5_0"]["gpu"] is None
    assert got["mlx5_0"]["why"] == "mlx5_0 is not in nvidia-smi topo -m (NICs there: none)"


def test_an_hca_the_topology_does_not_name():
    got = perftest_tool.gpus_for_hcas(["mlx5_0", "mlx5_7"], topology(TOPO_1GPU_1NIC))
    assert picks(got) == {"mlx5_0": (0, "PHB"), "mlx5_7": (None, None)}
    assert got["mlx5_7"]["why"] == "mlx5_7 is not in nvidia-smi topo -m (NICs there: mlx5_0)"


# --------------------------------------------------------------------------- into the plan, the argv and the records

def params_for(use_cuda, gpu_probe, test="ib_write_bw"):
    return {"test": test, "port": 18515, "ib_port": 1, "use_cuda": use_cuda, "gpu_probe": gpu_probe,
            "peer_name": "gpu-b", "expect": {}}


def test_auto_reaches_the_argv_and_the_records():
    records = probe_records(TOPO_8GPU_10NIC)
    devices = ["mlx5_0", "mlx5_2", "mlx5_4", "mlx5_6"]
    params = params_for("auto", records)
    plan = perftest_tool.device_plan(devices, params, hcas=None)
    argvs = perftest_tool.argvs_for("/usr/bin/ib_write_bw", params, plan, "client", peer_address="10.0.0.2")
    assert [[a for a in argv if a.startswith("--use_cuda")] for argv in argvs] == [
        ["--use_cuda=0"], ["--use_cuda=2"], ["--use_cuda=4"], ["--use_cuda=6"]]
    # nvidia-smi's numbering is PCI bus order: CUDA is told to number the GPUs the same way
    assert perftest_sweep.tool_env(plan) == {"CUDA_DEVICE_ORDER": "PCI_BUS_ID"}
    facts = plan[1][4]
    assert (facts["memory"], facts["cuda_device"], facts["cuda_link"]) == ("gpu", 2, "PXB")
    assert facts["cuda_choice"] == "use_cuda auto: GPU2 is the closest free GPU (PXB) to mlx5_2"
    # the record of a real run says which GPU served which HCA
    rec, = perftest_tool.records(read(WRITE_BW), Context(
        params=dict(params, test="ib_read_bw"), rc=0, host="gpu-a", target="mlx5_2", index=1, argv=argvs[1],
        facts=facts))
    assert rec["facts"]["cuda_device"] == 2 and rec["facts"]["memory"] == "gpu"
    assert "--use_cuda=2" in rec["params"]["argv"]


def test_auto_without_gpus_falls_back_to_host_memory_and_says_why(tmp_path):
    # a host without nvidia-smi: env_probe's own record ("skip"), then the plan
    host = probe_host.Host(run=lambda argv, timeout_s: None, which=lambda name: None, root=str(tmp_path))
    gpu_records = env_probe.probe(host, {"groups": ["gpu"]})
    assert [r["status"] for r in gpu_records if r["check"] == "gpu.inventory"] == ["skip"]
    for probe in (gpu_records, []):
        plan = perftest_tool.device_plan(["mlx5_0"], params_for("auto", probe), hcas=None)
        argv, = perftest_tool.argvs_for("/usr/bin/ib_write_bw", params_for("auto", probe), plan, "server")
        assert not any(a.startswith("--use_cuda") for a in argv)
        facts = plan[0][4]
        assert facts["memory"] == "host" and facts["cuda_device"] is None
        assert facts["cuda_choice"].startswith("use_cuda auto fell back to host memory: ")
        assert perftest_sweep.tool_env(plan) is None
    assert "gpu.inventory skip: no NVIDIA GPU/driver" in perftest_tool.device_plan(
        ["mlx5_0"], params_for("auto", gpu_records))[0][4]["cuda_choice"]
    assert "env_probe groups [gpu] did not run" in perftest_tool.device_plan(
        ["mlx5_0"], params_for("auto", []))[0][4]["cuda_choice"]
    # GPUs but no NIC in the topology (the real 2x H200 host)
    facts = perftest_tool.device_plan(["mlx5_0"], params_for("auto", probe_records(TOPO_H200X2)))[0][4]
    assert facts["memory"] == "host" and "mlx5_0 is not in nvidia-smi topo -m" in facts["cuda_choice"]


def test_given_index_and_no_cuda():
    plan = perftest_tool.device_plan(["mlx5_0", "mlx5_1"], params_for("3", []), hcas=None)
    argvs = perftest_tool.argvs_for("/usr/bin/ib_write_bw", params_for("3", []), plan, "server")
    assert all("--use_cuda=3" in argv for argv in argvs)
    assert plan[0][4]["cuda_choice"] == "given (use_cuda 3)" and perftest_sweep.tool_env(plan) is None
    plan = perftest_tool.device_plan(["mlx5_0"], params_for(None, []), hcas=None)
    assert plan[0][4] == dict(plan[0][4], memory="host") and "cuda_device" not in plan[0][4]
    with pytest.raises(AcceptanceError, match="neither a GPU index nor 'auto'"):
        perftest_tool.device_plan(["mlx5_0"], params_for("0; reboot", []))
    with pytest.raises(AcceptanceError, match="chosen per device"):
        perftest_tool.build_argv("ib_write_bw", dict(params_for("auto", []), ib_port=1), "mlx5_0", 18515, None,
                                 "server")


def test_module_plan_state_reports_the_gpu_of_every_hca(monkeypatch, tmp_path):
    raise_on_exit(monkeypatch)    # a fail_json raises Fail: the test fails on it
    args = {"phase": "plan", "hcas": ["mlx5_0", "mlx5_1", "mlx5_8"], "use_cuda": "auto",
            "gpu_probe": probe_records(TOPO_8GPU_10NIC), "sysfs_root": str(tmp_path), "inventory_hostname": "gpu-a"}
    with patch_module_args(args):
        with pytest.raises(Exit) as info:
            sweep_module.main()
    out = info.value.args[0]
    assert not out.get("failed"), out
    assert dict((d, (b["memory"], b["cuda_device"], b["cuda_link"])) for d, b in out["buffers"].items()) == {
        # mlx5_8 is SYS to every GPU: it takes the first one no other HCA has
        "mlx5_0": ("gpu", 0, "PXB"), "mlx5_1": ("gpu", 1, "PXB"), "mlx5_8": ("gpu", 2, "SYS")}


# --------------------------------------------------------------------------- latency: tails judged, one expect for all tests

P99 = {"lat_p99_us": {"max": 2.0}, "lat_p999_us": {"max": 4.0}}


def lat_record(text, expect, test="ib_write_lat", host="a", peer="b", side="client"):
    """The record of a run on the device the capture's header names (another device's output is an error)."""
    params = {"test": test, "peer_name": peer, "expect": expect}
    device = re.search(r"Device\s*:\s*(\S+)", text).group(1)
    rec, = perftest_tool.records(text, Context(params=params, rc=0, side=side, host=host, target=device))
    return rec


def slow_tail(text, p99, p999):
    """The real DGX Spark ib_write_lat row with its tail (t_max, 99 %, 99.9 %) made slower: typical unchanged."""
    row = " 2       1000          1.42           1.93         1.47                1.47             0.00            1.57" \
          "                    1.93"
    assert row in text
    slow = " 2       1000          1.42           %.2f         1.47                1.47             0.00            %.2f" \
           "                    %.2f" % (p999, p99, p999)
    return text.replace(row, slow)


def test_latency_records_carry_p99_and_p999_and_are_judged_on_them():
    text = read(WRITE_LAT)
    ok = lat_record(text, P99)
    assert (ok["metrics"]["lat_p99_us"], ok["metrics"]["lat_p999_us"]) == (1.57, 1.93)
    assert ok["status"] == "pass"
    assert ok["expect"]["lat_p99_us"] == {"max": 2.0, "source": "user expectation"}
    assert ok["expect"]["lat_typical_us"]["max"] == 2.5           # the NGC default stays beside them
    slow = lat_record(slow_tail(text, 3.85, 12.4), P99)
    assert slow["status"] == "fail" and slow["metrics"]["lat_typical_us"] == 1.47
    assert "lat_p99_us 3.85 > 2 expected maximum" in slow["reason"]
    assert "lat_p999_us 12.4 > 4 expected maximum" in slow["reason"]
    # per-check rules ({"rdma.<test>": {...}}), as the GPU modules take them
    per_check = {"rdma.ib_write_lat": {"lat_p999_us": {"max": 1.5}}, "rdma.ib_read_lat": {"lat_p99_us": {"max": 9}}}
    rec = lat_record(text, per_check)
    assert rec["status"] == "fail" and "lat_p999_us 1.93 > 1.5" in rec["reason"] and "lat_p99_us" not in rec["expect"]
    read_lat = lat_record(read(READ_LAT), per_check, test="ib_read_lat")
    assert read_lat["status"] == "pass" and read_lat["expect"]["lat_p99_us"]["max"] == 9


def test_one_rdma_expect_serves_bandwidth_and_latency_tests_of_a_sweep():
    """Before: a latency rule in rdma_expect made every bandwidth record of the same sweep an error
    ("lat_p99_us was not measured"), and a bandwidth rule every latency record."""
    expect = dict(P99, bw_avg_gbit_s={"min": 300})
    bw = lat_record(read(WRITE_BW), expect, test="ib_read_bw")
    assert bw["status"] != "error", bw["reason"]
    assert "lat_p99_us" not in bw["expect"] and bw["expect"]["bw_avg_gbit_s"]["min"] == 300
    lat = lat_record(read(WRITE_LAT), expect)
    assert lat["status"] == "pass" and "bw_avg_gbit_s" not in lat["expect"]
    # a metric no perftest test has is still judged (an error naming it: a typo is not silently dropped)
    typo = lat_record(read(WRITE_LAT), {"lat_p99": {"max": 2}})
    assert typo["status"] == "error" and "lat_p99 was not measured" in typo["reason"]


def test_read_lat_server_prints_no_table_and_is_a_skip_not_an_error():
    """read_lat.c: "Only Client post read request" - the server prints its header and address lines, then a
    separator, and exits 0. No real capture of that server exists here: its text is the real mlx4 client
    capture's header and address lines (what the server prints too), without the client's table."""
    client = read(READ_LAT)
    server = client.split(" #bytes")[0]
    rec = lat_record(server, P99, test="ib_read_lat", host="b", peer="a", side="server")
    assert rec["check"] == "rdma.ib_read_lat.server" and rec["status"] == "skip"
    assert "only the client posts reads" in rec["reason"]
    # any other latency server without a table is still an error; so is an ib_read_lat server that failed
    assert lat_record(server.replace("RDMA_Read", "RDMA_Write"), P99, test="ib_write_lat", side="server")[
        "status"] == "error"
    failed, = perftest_tool.records(server, Context(params={"test": "ib_read_lat"}, rc=1, side="server"))
    assert failed["status"] == "error"


# --------------------------------------------------------------------------- whole fleet: tails name the node and the link

def lat_fleet(hosts, bad_node, bad_link, expect):
    """Every pair of an all-pairs sweep of ib_write_lat, records as the sweep makes them (client and server)."""
    text = read(WRITE_LAT)
    records = []
    for rnd in pairings(hosts, mode="all"):
        for server, client in rnd:
            if bad_node in (server, client):
                out = slow_tail(text, 3.85, 12.4)
            elif frozenset((server, client)) == bad_link:
                out = slow_tail(text, 2.61, 9.87)
            else:
                out = text
            records.append(lat_record(out, expect, host=client, peer=server))
            records.append(lat_record(out, expect, host=server, peer=client, side="server"))
    return records


def by_status(summary):
    out = {}
    for entry in summary["hosts"]:
        out.setdefault(entry["status"], set()).add(entry["host"])
    return out


@pytest.mark.parametrize("size", [8, 12])
def test_fleet_bad_tail_node_fails_bad_tail_link_warns_the_rest_pass(size):
    hosts = ["lat%02d" % i for i in range(size)]
    bad_node, bad_link = hosts[2], frozenset((hosts[5], hosts[size - 1]))
    records = lat_fleet(hosts, bad_node, bad_link, P99)
    report = fleet.build_report(records, {"run_id": "lat", "started": "2026-11-23T15:00:00Z",
                                          "ended": "2026-11-23T15:10:00Z"})
    summary = report["summary"]
    hosts_by = by_status(summary)
    assert summary["failed_hosts"] == [bad_node]
    assert hosts_by == {"fail": {bad_node}, "warn": set(bad_link), "pass": set(hosts) - {bad_node} - set(bad_link)}
    node = [r for r in report["records"] if r["host"] == bad_node and r["check"] == "rdma.ib_write_lat.node"]
    assert [r["status"] for r in node] == ["fail"]
    a, b = sorted(bad_link)
    link = [r for r in report["records"] if r["check"] == "rdma.ib_write_lat.link" and r["status"] == "warn"]
    assert sorted(r["host"] for r in link) == [a, b]
    assert all("suspect link %s <-> %s" % (a, b) in r["reason"] for r in link)


def test_fleet_without_tail_thresholds_the_same_tails_pass():
    """The median (lat_typical_us) is the same on every pair: only the p99/p99.9 limits see the slow tails."""
    hosts = ["lat%02d" % i for i in range(8)]
    records = lat_fleet(hosts, hosts[2], frozenset((hosts[5], hosts[7])), {})
    report = fleet.build_report(records, {"run_id": "lat", "started": "2026-11-23T15:00:00Z",
                                          "ended": "2026-11-23T15:10:00Z"})
    assert report["summary"]["failed_hosts"] == [] and by_status(report["summary"]) == {"pass": set(hosts)}


# --------------------------------------------------------------------------- bad input: a clear answer, never a crash

_leaf = st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=6),
                  st.sampled_from(["PIX", "PXB", "PHB", "NODE", "SYS", "SOC", "X", "NV18", "GPU0", "NIC0", "mlx5_0"]))
_keys = st.sampled_from(["GPU0", "GPU1", "NIC0", "mlx5_0", "matrix", "nic_names", "check", "facts", "status",
                         "reason"])
_tree = st.recursive(_leaf, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                    st.dictionaries(_keys, inner, max_size=5)), max_leaves=20)


@settings(max_examples=300, deadline=None)
@given(probe=st.one_of(_tree, st.lists(st.fixed_dictionaries({"check": st.just("gpu.topology"), "facts": _tree}))))
def test_any_gpu_probe_input_gives_a_choice_or_a_reason(probe):
    out = perftest_tool.cuda_facts(["mlx5_0", "mlx5_1"], {"use_cuda": "auto", "gpu_probe": probe})
    for facts in out.values():
        assert facts["memory"] in ("gpu", "host") and facts["cuda_choice"]
        assert (facts["cuda_device"] is None) == (facts["memory"] == "host")
