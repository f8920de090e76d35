# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/rdma.yml with ``use_cuda: auto`` and a latency test with p99/p99.9 limits, over real SSH on
network-namespace hosts (issue 13 items 4 and 5), with the fake perftest of test_rdma_fleet.py as ib_write_lat.

The netns hosts have no NVIDIA GPU: ``auto`` runs env_probe's GPU probe, finds none and every record says that
its HCA ran from host memory, and why - no ``--use_cuda`` is passed. The fake prints the REAL DGX Spark
ib_write_lat capture; node3 is a "bad node" whose pairs print the same capture with a slower tail (the 99 % and
99.9 % columns and t_max edited, the median unchanged): only the tail limits see it, the report fails node3 alone.
"""

from __future__ import annotations

import json
import os
import shutil

import pytest

from ansible_collections.aifabric.acceptance.tests.integration.test_rdma_fleet import PLAYBOOK, events, prepare
from ansible_collections.aifabric.acceptance.tests.integration.test_ssh_fleet import (
    assert_nothing_left, assert_valid_records, finish, load_report, records_of, schema_validator, start, tail)

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "unit", "plugins", "module_utils", "parsers", "fixtures", "perftest")
CAPTURE = "dgx-spark-cx7-ib-write-lat-client-rdma-cm-force-link-ib.txt"
ROW = " 2       1000          1.42           1.93         1.47                1.47             0.00            1.57" \
      "                    1.93"
SLOW = " 2       1000          1.42           12.40        1.47                1.47             0.00            3.85" \
       "                    12.40"
CHECK = "rdma.ib_write_lat"


@pytest.mark.fleet(n=4)
def test_rdma_latency_tails_and_use_cuda_auto_without_gpus(fleet, controller, tmp_path):
    validator = schema_validator(controller)
    report_dir = tmp_path / "reports"
    out = str(tmp_path / "ansible-playbook.log")
    captures = tmp_path / "captures"
    captures.mkdir()
    text = open(os.path.join(FIXTURES, CAPTURE)).read()
    assert ROW in text
    (captures / CAPTURE).write_text(text)
    (captures / "slow-tail.txt").write_text(text.replace(ROW, SLOW))
    settings = {"default": {"duration_s": 0.3, "fixtures": str(captures), "client_output": CAPTURE,
                            "server_output": CAPTURE, "degraded_output": "slow-tail.txt"},
                "node3": {"degraded": True}}
    inventory, extra, log = prepare(
        fleet, tmp_path, settings, devices=("mlx5_0",),
        perftest={"use_cuda": "auto"},
        # the rounds' pairs are counted below: no confirmation pass (on by default; test_rdma_fleet runs it)
        extra_vars={"rdma_tests": ["ib_write_lat"], "rdma_confirm": False,
                    "rdma_expect": {"lat_p99_us": {"max": 2.0}, "lat_p999_us": {"max": 4.0}}})
    bindir = os.path.join(fleet.dir, "bin")
    shutil.copy(os.path.join(bindir, "ib_write_bw"), os.path.join(bindir, "ib_write_lat"))
    os.chmod(os.path.join(bindir, "ib_write_lat"), 0o755)
    proc = start(fleet, controller.playbook_argv(PLAYBOOK, inventory, "-e", extra),
                 controller.env(fleet, report_dir), out, controller.repo)
    rc = finish(proc, 400, out)
    report = load_report(report_dir, out)[1]
    records = records_of(report)
    assert_valid_records(records, validator)
    clients = [r for r in records if r["check"] == CHECK]
    servers = [r for r in records if r["check"] == CHECK + ".server"]
    assert len(clients) == 6 and len(servers) == 6, [(r["check"], r["host"], r["peer"]) for r in records]
    # use_cuda auto on hosts without GPUs: host memory, the reason in every record, no --use_cuda passed
    for rec in clients + servers:
        assert rec["facts"]["memory"] == "host" and rec["facts"]["cuda_device"] is None, rec["facts"]
        assert rec["facts"]["cuda_choice"].startswith("use_cuda auto fell back to host memory: gpu.inventory skip")
        assert not [a for a in rec["params"]["argv"] if a.startswith("--use_cuda")]
    assert "fell back to host memory" in open(out).read()          # the plan task said so before the sweep
    # the tails: node3's pairs fail on p99/p99.9 with the median unchanged, the others pass
    for rec in clients:
        bad = "node3" in (rec["host"], rec["peer"])
        assert rec["metrics"]["lat_typical_us"] == 1.47
        assert rec["status"] == ("fail" if bad else "pass"), rec
        assert rec["expect"]["lat_p99_us"]["max"] == 2.0 and rec["expect"]["lat_p999_us"]["max"] == 4.0
        if bad:
            assert (rec["metrics"]["lat_p99_us"], rec["metrics"]["lat_p999_us"]) == (3.85, 12.4)
    assert report["summary"]["failed_hosts"] == ["node3"], report["summary"]
    node = [r for r in records if r["check"] == CHECK + ".node" and r["status"] != "pass"]
    assert [(r["host"], r["status"]) for r in node] == [("node3", "fail")]
    assert rc == 0, "ansible-playbook exit %d:\n%s" % (rc, tail(out))
    assert events(log)
    assert_nothing_left(fleet)


SMI_SCRIPT = """#!/bin/sh
# stand-in for nvidia-smi: prints REAL captures (integration test of use_cuda auto)
DIR="$(dirname "$(readlink -f "$0")")/smi-captures"
case "$*" in
  "-q -x") exec cat "$DIR/q-x.xml" ;;
  "topo -m") exec cat "$DIR/topo-m.txt" ;;
  "nvlink -s") exec cat "$DIR/nvlink-s.txt" ;;
esac
echo "unsupported: $*" >&2
exit 2
"""
SMI_FIXTURES = os.path.join(HERE, "..", "unit", "plugins", "module_utils", "parsers", "fixtures", "nvidia_smi")


@pytest.mark.fleet(n=2)
def test_rdma_use_cuda_auto_gives_each_rail_its_closest_gpu(fleet, controller, tmp_path):
    """Each host's nvidia-smi prints the real 8-GPU / 10-HCA ``topo -m`` (GPU pairs behind a PCIe switch with HCA
    pairs) beside the real H100 ``-q -x`` and ``nvlink -s``: the sweep gives mlx5_0 GPU 0 and mlx5_1 GPU 1 (PXB)
    on both ends, the argv says so and so does every record."""
    validator = schema_validator(controller)
    report_dir = tmp_path / "reports"
    out = str(tmp_path / "ansible-playbook.log")
    inventory, extra, log = prepare(
        fleet, tmp_path, {"default": {"duration_s": 0.3}}, devices=("mlx5_0", "mlx5_1"),
        perftest={"use_cuda": "auto"})
    bindir = os.path.join(fleet.dir, "bin")
    captures = os.path.join(bindir, "smi-captures")
    os.makedirs(captures)
    for name, source in (("q-x.xml", "driver580-h100-80gb-hbm3-q-x.xml"),
                         ("topo-m.txt", "topo-m-8gpu-nv12-10nic-nic-legend-tabs.txt"),
                         ("nvlink-s.txt", "driver580-h100-nvlink-s-empty.txt")):
        shutil.copy(os.path.join(SMI_FIXTURES, source), os.path.join(captures, name))
    smi = os.path.join(bindir, "nvidia-smi")
    with open(smi, "w") as handle:
        handle.write(SMI_SCRIPT)
    os.chmod(smi, 0o755)
    variables = json.loads(extra)
    variables["rdma_nvidia_smi_path"] = smi
    proc = start(fleet, controller.playbook_argv(PLAYBOOK, inventory, "-e", json.dumps(variables)),
                 controller.env(fleet, report_dir), out, controller.repo)
    rc = finish(proc, 300, out)
    assert rc == 0, "ansible-playbook exit %d:\n%s" % (rc, tail(out))
    records = records_of(load_report(report_dir, out)[1])
    assert_valid_records(records, validator)
    pairs = [r for r in records if r["check"] in ("rdma.ib_write_bw", "rdma.ib_write_bw.server")]
    assert len(pairs) == 4, [(r["check"], r["host"], r["target"]) for r in records]
    for rec in pairs:
        gpu = {"mlx5_0": 0, "mlx5_1": 1}[rec["target"]]
        facts = rec["facts"]
        assert (facts["memory"], facts["cuda_device"], facts["cuda_link"]) == ("gpu", gpu, "PXB"), facts
        assert facts["cuda_choice"] == "use_cuda auto: GPU%d is the closest free GPU (PXB) to %s" % (gpu, rec["target"])
        assert "--use_cuda=%d" % gpu in rec["params"]["argv"]
        assert rec["status"] == "pass", rec
    topology = [r for r in records if r["check"] == "gpu.topology"]
    assert len(topology) == 2 and all(r["facts"]["gpu_nic_affinity"]["GPU0"]["nics"] == ["mlx5_0", "mlx5_1"]
                                      for r in topology)
    assert "mlx5_1: use_cuda auto: GPU1 is the closest free GPU (PXB) to mlx5_1" in open(out).read()
    assert events(log)
    assert_nothing_left(fleet)
