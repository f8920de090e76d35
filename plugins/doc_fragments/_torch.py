# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations


class ModuleDocFragment:
    # The option of the PyTorch benchmark modules (allreduce_probe, gemm_bench): the Python that runs their worker.
    DOCUMENTATION = r"""
options:
  python:
    description: Python interpreter on the target that can import C(torch) with CUDA.
    type: str
    default: python3
"""
