# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations


class ModuleDocFragment:
    # The matrix shape of the GEMM modules (gemm_bench, gpu_soak): C = A x B with A m x k and B k x n
    # (tools/gemm_bench.SHAPE_OPTIONS is their argument spec).
    DOCUMENTATION = r"""
options:
  m:
    description:
      - Rows of A and C.
      - Must be 1 or more.
    type: int
    default: 8192
  n:
    description:
      - Columns of B and C.
      - Must be 1 or more.
    type: int
    default: 8192
  k:
    description:
      - Columns of A, rows of B.
      - Must be 1 or more.
    type: int
    default: 8192
"""
