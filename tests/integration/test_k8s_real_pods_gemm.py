# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GEMM check on the Kubernetes path with pods that really run (issue 21, "the env/gemm path ... run end to end
with real processes over this kubelet, and the records equal the SSH path's on the same captures").

The pod runs the collection's entry program from the code ConfigMap, which runs the GEMM worker (also from the
ConfigMap) with the pod's ``python3``. No GPU and no PyTorch here: that ``python3`` is a fake that answers the
worker's ``gemm`` command with the output of a real run on a 2x H200 machine (tests/unit/plugins/modules/fixtures/
h200x2-proof-1/gemm_bare.txt: 10 warmup + 50 timed 8192^3 products per GPU and dtype) and is the real interpreter
for everything else (the entry program itself). The SSH path's gemm_bench module runs in a sandbox of the same
kubelet with the same ``python3`` and the same options, and its records equal the pod's field by field (less what
legitimately differs: times, params, host)."""

from __future__ import annotations

import os
import sys

import pytest

pytest.importorskip("kubernetes")
pytest.importorskip("kmock")

from ansible_collections.aifabric.acceptance.tests.k8s import process_kubelet  # noqa: E402
# the cluster fixture of test_k8s_real_pods (a fake cluster whose kubelet runs every pod for real), used by name
from ansible_collections.aifabric.acceptance.tests.integration.test_k8s_real_pods import (  # noqa: E402,F401 pylint: disable=unused-import
    ROOT, WHY_NOT, cluster, comparable, run_module, ssh_path_module)

pytestmark = pytest.mark.skipif(WHY_NOT is not None, reason=str(WHY_NOT))

GEMM_CAPTURE = os.path.join(ROOT, "tests", "unit", "plugins", "modules", "fixtures", "h200x2-proof-1", "gemm_bare.txt")
# the shape of the captured run: both paths ask for exactly it (the fake answers nothing else)
SHAPE = {"dtypes": ["bf16", "fp16"], "m": 8192, "n": 8192, "k": 8192, "iterations": 50, "warmup_iterations": 10}


def torch_python(directory):
    """``python3`` that answers the GEMM worker's ``gemm`` command of the captured shape with the real run's output
    and execs the real interpreter for anything else."""
    want = ["gemm", "--dtypes", "bf16,fp16", "--m", "8192", "--n", "8192", "--k", "8192", "--iters", "50",
            "--warmup", "10"]
    return process_kubelet.fake_tool(directory, "python3", [(want, GEMM_CAPTURE, 0)], fallback=sys.executable)


def test_gemm_pod_runs_the_worker_from_the_code_configmap_and_matches_the_ssh_path(cluster, monkeypatch, tmp_path):
    """kind gemm on one node: the pod's entry program runs the worker (both from /opt/aifabric), the worker's
    output is the real 2x H200 run; the records (one per GPU and dtype) equal gemm_bench's on the same output."""
    torch_python(str(tmp_path / "tools"))           # the cluster fixture's tool directory, first on every PATH
    node = "gpu-node-01"
    res = run_module(cluster, monkeypatch, {"kind": "gemm_bench", "hosts": [node], "run_id": "rp-gemm", "gpus_per_pod": 2,
                                            "gemm_bench": dict(SHAPE)})
    assert not res.failed, res.kwargs
    records = res.kwargs["results"]
    assert sorted((r["host"], r["check"], r["target"]) for r in records) == [
        (node, "gpu.gemm_%s" % dtype, gpu) for dtype in ("bf16", "fp16") for gpu in ("0", "1")], records
    assert all(r["metrics"].get("tflops") for r in records), records
    ssh = comparable(ssh_path_module(cluster.kubelet, node, "gemm_bench", dict(SHAPE)))
    mine = comparable(records)
    assert sorted(mine) == sorted(ssh)
    diffs = dict((key, (mine[key], ssh[key])) for key in ssh if mine[key] != ssh[key])
    assert diffs == {}
    assert res.kwargs["leftover"] == [] and cluster.leftovers("rp-gemm") == []
