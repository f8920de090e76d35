# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The burn-in soak and the copy-bandwidth matrix judged on whole fleets (every test asserts exactly which hosts fail).

Built from real measurements: the 2x H100 acceptance records of fixtures/h100x2-judgement (snapshot, GEMM and
collectives, healthy), the lent H100's soak outputs (healthy, and under a competing matmul) repeated as the GPUs of
8-GPU nodes, and the 8-GPU NVLink copy matrix of nvbandwidth's README. A GPU that throttles is the loaded capture with
the HW thermal slowdown reason set in its samples after 20 s (the real capture's GPU ran slow without a hardware
reason: the flag is the one thing not measured); a slow pair is one cell of the README matrix halved.
"""

from __future__ import annotations

import os
import re

from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import (

    Context, copy_bandwidth, defaults, gpu_soak as soak)
from ansible_collections.aifabric.acceptance.tests.unit.helpers import parser_fixture, read
from ansible_collections.aifabric.acceptance.tests.unit.plugins.plugin_utils.test_judgement_fleet import (
    HEALTHY, _as_host, _verdicts)

BURNIN = parser_fixture("burnin")
NVB = parser_fixture("nvbandwidth")
SOAK_PARAMS = dict(defaults(soak.OPTIONS), duration_s=60)


def _gpu_lines(text, gpu, throttle_after_s=None):
    """The lines of a one-GPU soak output as GPU ``gpu``'s (its windows' device and its samples' index); with
    ``throttle_after_s`` its samples from then on report HW Thermal Slowdown active."""
    out, rows = [], 0
    for line in text.splitlines():
        if line.startswith("AIFABRIC_SOAK {"):
            out.append(line.replace('"device": 0,', '"device": %d,' % gpu))
        elif line.startswith("AIFABRIC_SMI 2026"):
            cells = line.split(", ")
            cells[1] = str(gpu)
            if throttle_after_s is not None and rows >= throttle_after_s:
                # clocks_event_reasons.hw_thermal_slowdown: header positions 14 and 20 (this worker version asked for
                # both alias names and nvidia-smi printed the field twice)
                cells[14] = cells[20] = "Active"
            rows += 1
            out.append(", ".join(cells))
    return out


def soak_text(gpus=8, slow=None):
    """An 8-GPU node's soak output from the real captures: every GPU the healthy run, GPU ``slow`` the loaded run
    with HW thermal slowdown from 20 s on."""
    healthy = read(os.path.join(BURNIN, "h100-soak_healthy.txt"))
    loaded = read(os.path.join(BURNIN, "h100-soak_loaded.txt"))
    per_run = ("AIFABRIC_SOAK {", "AIFABRIC_SMI 2026", "AIFABRIC_SOAK_END", "AIFABRIC_XID", "AIFABRIC_PCIE")
    head = [ln for ln in healthy.splitlines() if not ln.startswith(per_run)]
    head[0] = head[0].replace('"devices": [0]', '"devices": %s' % list(range(gpus))).replace(
        '"gpu_names": {"0": "NVIDIA H100 80GB HBM3"}',
        '"gpu_names": {%s}' % ", ".join('"%d": "NVIDIA H100 80GB HBM3"' % i for i in range(gpus)))
    body = []
    for gpu in range(gpus):
        body += _gpu_lines(loaded, gpu, 20) if gpu == slow else _gpu_lines(healthy, gpu)
    tail = [ln for ln in healthy.splitlines() if ln.startswith(("AIFABRIC_XID", "AIFABRIC_PCIE", "AIFABRIC_SOAK_END"))]
    return "\n".join(head + body + tail) + "\n"


def soak_records(host, slow=None):
    records = soak.records(soak_text(slow=slow), Context(params=SOAK_PARAMS, rc=0, argv=["python3", "w", "soak"]))
    return _as_host(records, host)


def test_the_soak_text_of_a_node_keeps_the_real_header_position():
    header = next(ln for ln in read(os.path.join(BURNIN, "h100-soak_healthy.txt")).splitlines()
                  if ln.startswith("AIFABRIC_SMI timestamp"))
    assert header.split(", ")[14] == header.split(", ")[20] == "clocks_event_reasons.hw_thermal_slowdown"


def test_a_gpu_that_passes_the_snapshot_but_throttles_under_soak_fails_with_its_reason_and_series():
    fleet = []
    for host in ("node-a", "node-b", "node-c"):
        fleet += _as_host(HEALTHY, host) + soak_records(host, slow=3 if host == "node-b" else None)
    hosts, done, findings = _verdicts(fleet)
    assert hosts == {"node-a": "pass", "node-b": "fail", "node-c": "pass"}
    snapshot = [r for r in done if r["host"] == "node-b" and r["check"] == "gpu.device"]
    assert snapshot and all(r["status"] == "pass" for r in snapshot)        # the snapshot passed it
    failing = sorted((r["check"], str(r["target"])) for r in done if r["host"] == "node-b" and r["status"] == "fail")
    assert failing == [("gpu.soak", "3"), ("gpu.soak.peers", "3")]
    record = next(r for r in done if r["host"] == "node-b" and r["check"] == "gpu.soak" and r["target"] == "3")
    assert "hw_thermal_slowdown active in" in record["reason"] and record["reason"].startswith("tflops 312.")
    assert len(record["series"]) == 62 and record["series"][30]["reasons"] == "hw_thermal_slowdown,sw_power_cap"
    sibling = next(r for r in done if r["host"] == "node-b" and r["check"] == "gpu.soak" and r["target"] == "2")
    assert sibling["status"] == "pass" and len(sibling["series"]) == 62       # the siblings' series beside it
    assert any(f["kind"] == "peers" and f["hosts"] == ["node-b"] for f in findings)


def copy_text(slow=None):
    """The README's 8-GPU write matrix; with ``slow`` (src, dst) that pair's cell halved."""
    text = read(os.path.join(NVB, "readme-v0.8-8gpu-d2d-write-ce.txt"))
    if slow is None:
        return text
    lines = text.splitlines()
    row = lines[3 + slow[0]].split()
    row[1 + slow[1]] = "%.2f" % (float(row[1 + slow[1]]) / 2)
    lines[3 + slow[0]] = "%-4s" % row[0] + "".join("%10s" % c for c in row[1:])
    return "\n".join(lines) + "\n"


def test_a_slow_gpu_pair_is_named_while_the_node_s_all_reduce_passes():
    fleet = []
    for host in ("node-a", "node-b", "node-c"):
        records = copy_bandwidth.records(copy_text((2, 5) if host == "node-b" else None),
                                         Context(params=defaults(copy_bandwidth.OPTIONS), rc=0, argv=["nvbandwidth"]))
        fleet += _as_host(HEALTHY, host) + _as_host(records, host)
    hosts, done, _findings = _verdicts(fleet)
    assert hosts == {"node-a": "pass", "node-b": "fail", "node-c": "pass"}
    failing = [r for r in done if r["host"] == "node-b" and r["status"] == "fail"]
    assert [(r["check"], r["target"]) for r in failing] == [("gpu.copy_p2p_write", "2->5")]
    assert re.match(r"GPU 2 -> GPU 5: 138\.\d+ GB/s is 50 % of the node's other p2p_write copies", failing[0]["reason"])
    allreduce = [r for r in done if r["host"] == "node-b" and r["check"] == "nccl.all_reduce"]
    assert allreduce and all(r["status"] == "pass" for r in allreduce)
