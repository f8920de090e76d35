# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The torch all-reduce probe's data check: a tolerance by dtype, as nccl-tests checks (issue 7).

The sums are replayed in real IEEE arithmetic without torch: Python's struct module rounds to IEEE
754 binary16 ('e' format, round-to-nearest-even) and bfloat16 is float32 rounded to its upper 16 bits
(round-to-nearest-even), so each addition below is exactly what a device computes in that dtype. The
order is NCCL's ring reduce-scatter: the chunk that starts at rank s is summed s, s+1, ..., s-1.
The GPU test at the end runs the worker itself (skipped where torch or two CUDA GPUs are missing).
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys

import pytest

from ansible_collections.aifabric.acceptance.plugins.module_utils import gpu_worker, torch_worker


def _half(x):
    return struct.unpack("<e", struct.pack("<e", x))[0]


def _bf16(x):
    bits = struct.unpack("<I", struct.pack("<f", x))[0]
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return struct.unpack("<f", struct.pack("<I", bits))[0]


ROUND = {"half": _half, "bfloat16": _bf16, "float": lambda x: struct.unpack("<f", struct.pack("<f", x))[0]}


def _remembered(rounding):
    """``rounding`` with its answers kept: the partial sums repeat (integers up to the total), and a dict look-up is
    far cheaper than struct's pack and unpack; the values are the same."""
    seen = {}

    def rnd(x):
        try:
            return seen[x]
        except KeyError:
            seen[x] = y = rounding(x)
            return y
    return rnd


def ring_sums(world, dtype, value):
    """Every chunk's result of a ring all-reduce of ``value(rank)`` in ``dtype`` arithmetic.

    Two chunks whose ranks add the same inputs in the same order have the same result: with inputs that repeat every
    ``period`` ranks (a divisor of the world), the chunks that start at rank ``period`` and beyond repeat the first
    ``period`` chunks' sums, so only those are added up (contribution(): 2 of 2048 at 2048 ranks)."""
    rnd = _remembered(ROUND[dtype])
    inputs = [rnd(value(rank)) for rank in range(world)]
    period = next(p for p in range(1, world + 1) if world % p == 0 and inputs[p:] + inputs[:p] == inputs)
    out = set()
    for start in range(period):
        acc = inputs[start]
        for k in range(1, world):
            acc = rnd(acc + inputs[(start + k) % world])
        out.add(acc)
    return out


def test_old_check_flags_correct_low_precision_sums_as_corruption():
    """The defect: rank + 1 on every rank, compared for exact equality."""
    def old(rank):
        return float(rank + 1)

    for dtype, world in (("bfloat16", 23), ("bfloat16", 64), ("half", 64), ("half", 128)):
        results = ring_sums(world, dtype, old)
        assert any(r != world * (world + 1) / 2.0 for r in results), (dtype, world)


@pytest.mark.parametrize("dtype", ["half", "bfloat16", "float"])
def test_ring_sums_pass_the_new_check_at_every_scale(dtype):
    for world in list(range(2, 80)) + [128, 171, 172, 256, 512, 1024, 1365, 1366, 2048]:
        for result in ring_sums(world, dtype, torch_worker.contribution):
            assert torch_worker.within_tolerance(result, dtype, world), (dtype, world, result)


def test_tolerance_is_zero_while_sums_are_exact():
    assert torch_worker.check_tolerance("bfloat16", 171) == 0.0      # total 171 + 85 = 256 = 2**8
    assert torch_worker.check_tolerance("bfloat16", 172) > 0.0       # total 258
    assert torch_worker.check_tolerance("half", 1365) == 0.0         # total 2047
    assert torch_worker.check_tolerance("half", 1366) > 0.0          # total 2049
    assert torch_worker.check_tolerance("float", 8) == 0.0
    assert torch_worker.check_tolerance("double", 1 << 20) == 0.0
    # beyond the exact range: (world - 1) half-ulps of the total
    assert torch_worker.check_tolerance("bfloat16", 256) == 255 * 2.0 / 2  # total 384, ulp(384) = 2


@pytest.mark.parametrize("dtype,world", [("bfloat16", 8), ("bfloat16", 64), ("bfloat16", 170),
                                         ("half", 8), ("half", 512), ("float", 1024)])
def test_a_lost_or_doubled_contribution_is_caught(dtype, world):
    total = torch_worker.expected_sum(world)
    for rank in (0, 1, world - 1):
        lost = ROUND[dtype](total - torch_worker.contribution(rank))
        doubled = ROUND[dtype](total + torch_worker.contribution(rank))
        assert not torch_worker.within_tolerance(lost, dtype, world)
        assert not torch_worker.within_tolerance(doubled, dtype, world)


def test_workers_import_without_torch():
    code = ("import sys; from ansible_collections.aifabric.acceptance.plugins.module_utils import gpu_worker, "
            "torch_worker; print('torch' in sys.modules)")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert run.returncode == 0 and run.stdout.strip() == "False", run.stderr
    assert "def check_tolerance" in gpu_worker.source()


def _gpus():
    try:
        import torch  # pylint: disable=import-outside-toplevel
    except ImportError:
        return 0
    return torch.cuda.device_count() if torch.cuda.is_available() else 0


@pytest.mark.skipif(_gpus() < 2, reason="needs torch and two CUDA GPUs (run on the device machine)")
@pytest.mark.parametrize("dtype", ["bfloat16", "half", "float"])
def test_worker_data_check_on_gpus(tmp_path, dtype):
    """On real GPUs: every size of a bf16/half/float all-reduce passes the data check (#wrong 0)."""
    worker, _changed = gpu_worker.stage(str(tmp_path))
    out = str(tmp_path / "out.json")
    run = subprocess.run([sys.executable, worker, "allreduce", "--launcher", "spawn", "--dtype", dtype,
                          "--min-bytes", "1M", "--max-bytes", "256M", "--iters", "2", "--warmup", "1",
                          "--json-out", out], capture_output=True, text=True, timeout=600, check=False)
    assert run.returncode == 0, run.stdout + run.stderr
    with open(out) as handle:
        doc = json.load(handle)
    assert doc["out_of_bounds"]["count"] == 0 and doc["config"]["check_tolerance"] >= 0
    assert all(row["in_place"]["nwrong"] == 0 for row in doc["results"])
    assert os.path.getsize(out) > 0
