# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Built-in hardware profiles: what a healthy node of a known kind should deliver.

Plain Python data (module_utils files are the only collection files that travel
to the targets with a module, and targets need no PyYAML). Users add or override
profiles with their own YAML file, loaded on the controller and passed to the
modules as the ``profiles`` option (see docs/expectations.md).

Shape of one profile::

    name:
      description: text
      match: {gpu_model: H100, form_factor: SXM, gpus_per_node: 8}
                                      # gpu_model: the model token of the GPU name, matched exactly
                                      # (expectations.parse_gpu_name: "NVIDIA H100 80GB HBM3" is
                                      # H100/SXM, "NVIDIA H100 PCIe" H100/PCIe, "NVIDIA GH200 480GB"
                                      # GH200/superchip); form_factor: SXM, PCIe, NVL or superchip;
                                      # gpus_per_node: the node shape the collective rules describe
      checks:
        <check>:                      # e.g. nccl.all_reduce, gpu.gemm_bf16
          - when: {nodes: 1, ranks: 2}   # optional; keys: nodes, ranks, nodes_min, nodes_max,
                                         # ranks_min, ranks_max, algo (NCCL_ALGO when forced)
            metrics: {<metric>: {min: .., max: .., warn_below_pct: ..}}
            sizes: {<bytes>: {busbw_gbyte_s: {min: ..}}}   # per message size (series rows)
            source: where the numbers come from (quoted in every verdict)

The most specific matching entry wins (the one whose ``when`` names the most keys).
GPU-count rule: per-GPU checks (gpu.gemm_*) apply at any GPU count; a collective entry applies at the
ranks its ``when`` names, and one that names no ranks only at ranks == nodes x gpus_per_node.
Every number says where it comes from: a measurement (file named) or an estimate
(how it was derived). Estimates are floors to catch broken hardware, not
performance targets; calibrate them with your own fleet (fleet-relative rules do
that automatically).
"""

from __future__ import annotations

GIB8 = "8589934592"

_H200_X2_MEASURED = ("nccl-tests 2.19.6 on 2x H200 NV18, NCCL 2.28.9, NVLS off: all_reduce busbw 344.8 (out-of-place) / "
                     "345.7 (in-place) GB/s at 8 GiB (fixture h200x2-nccl-tests-2.19.6/all_reduce_g2.txt)")
_NVLINK4_ESTIMATE = ("estimate: NVLink4 gives 450 GB/s per direction per GPU; NCCL ring all_reduce without NVLS "
                     "reaches about 80 %% of that (~360 GB/s); floor set at ~%d GB/s. Calibrate with your fleet")
_A100_MEASURED = ("nccl-tests (pre-2.11) on 8x A100-SXM4-40GB: all_reduce busbw 235.3 GB/s at 8 GB "
                  "(fixture superbench-all-reduce-8xA100-old-error-col-validation0.txt)")

PROFILES = {
    "h200-sxm-8gpu": {
        "description": "NVIDIA H200 SXM (141 GB HBM3e), NVLink4 through NVSwitch, 8 GPUs per node (HGX H200)",
        "match": {"gpu_model": "H200", "form_factor": "SXM", "gpus_per_node": 8},
        "checks": {
            "gpu.gemm_bf16": [{
                "metrics": {"tflops": {"min": 600, "warn_below_pct": 95}},
                "source": "profile h200-sxm-8gpu: sustained 8192^3 bf16 (>= 1 s warmup, 200 timed products) measured "
                          "654.8-684.7 TFLOP/s on 2x H200 held at the 700 W power cap (SM 1410-1530 MHz); "
                          "floor ~92 % of the lowest (fixtures h200x2-proof-2/-3). Short bursts reach 792-800",
            }],
            "gpu.gemm_fp16": [{
                "metrics": {"tflops": {"min": 575, "warn_below_pct": 95}},
                "source": "profile h200-sxm-8gpu: sustained 8192^3 fp16 measured 626.5-657.1 TFLOP/s on 2x H200 at "
                          "the 700 W power cap (SM 1410-1440 MHz); floor ~92 % of the lowest (fixtures h200x2-proof-2/-3)",
            }],
            "nccl.all_reduce": [
                {
                    "when": {"nodes": 1, "ranks": 2},
                    "metrics": {"busbw_max_gbyte_s": {"min": 310, "warn_below_pct": 95}},
                    "sizes": {GIB8: {"busbw_gbyte_s": {"min": 310}}},
                    "source": "profile h200-sxm-8gpu (2 GPUs): " + _H200_X2_MEASURED + "; floor 90 %",
                },
                {
                    "when": {"nodes": 1, "ranks": 8},
                    "metrics": {"busbw_max_gbyte_s": {"min": 320, "warn_below_pct": 95}},
                    "source": "profile h200-sxm-8gpu (8 GPUs): " + _NVLINK4_ESTIMATE % 320,
                },
            ],
        },
    },
    "h100-sxm-8gpu": {
        "description": "NVIDIA H100 SXM (80 GB HBM3), NVLink4 through NVSwitch, 8 GPUs per node (HGX/DGX H100)",
        "match": {"gpu_model": "H100", "form_factor": "SXM", "gpus_per_node": 8},
        "checks": {
            "gpu.gemm_bf16": [{
                "metrics": {"tflops": {"min": 600, "warn_below_pct": 95}},
                "source": "profile h100-sxm-8gpu: estimate: same GH100 die, clocks and 700 W cap as the H200, whose "
                          "sustained bf16 8192^3 measured 655-685 TFLOP/s (fixtures h200x2-proof-2/-3); a burst on an "
                          "H100 80GB HBM3 measured 798 (device notes, 2026-11-13). Calibrate with your fleet",
            }],
            "gpu.gemm_fp16": [{
                "metrics": {"tflops": {"min": 575, "warn_below_pct": 95}},
                "source": "profile h100-sxm-8gpu: estimate as the H200's fp16 floor (sustained 626-657 TFLOP/s measured "
                          "on H200). Calibrate with your fleet",
            }],
            "nccl.all_reduce": [
                {
                    "when": {"nodes": 1, "ranks": 8},
                    "metrics": {"busbw_max_gbyte_s": {"min": 320, "warn_below_pct": 95}},
                    "source": "profile h100-sxm-8gpu (8 GPUs): " + _NVLINK4_ESTIMATE % 320,
                },
            ],
        },
    },
    "a100-sxm-8gpu": {
        "description": "NVIDIA A100 SXM4, NVLink3 through NVSwitch, 8 GPUs per node (HGX/DGX A100)",
        "match": {"gpu_model": "A100", "form_factor": "SXM", "gpus_per_node": 8},
        "checks": {
            "gpu.gemm_bf16": [{
                "metrics": {"tflops": {"min": 230, "warn_below_pct": 95}},
                "source": "profile a100-sxm-8gpu: estimate: 312 TFLOP/s dense bf16 datasheet peak; cuBLAS at 8192^3 "
                          "reaches 85-90 %; floor ~74 % of peak",
            }],
            "gpu.gemm_fp16": [{
                "metrics": {"tflops": {"min": 230, "warn_below_pct": 95}},
                "source": "profile a100-sxm-8gpu: estimate as gemm_bf16 (same dense fp16 peak)",
            }],
            "nccl.all_reduce": [
                {
                    "when": {"nodes": 1, "ranks": 8},
                    "metrics": {"busbw_max_gbyte_s": {"min": 210, "warn_below_pct": 95}},
                    "sizes": {GIB8: {"busbw_gbyte_s": {"min": 210}}},
                    "source": "profile a100-sxm-8gpu (8 GPUs): " + _A100_MEASURED + "; floor ~90 %",
                },
            ],
        },
    },
}

# A torch.distributed all-reduce is judged by the same figures as nccl-tests' all_reduce.
ALIASES = {"nccl.torch_all_reduce": "nccl.all_reduce"}

# Ascend NPUs (HCCL Test records, hccl.*): chosen by the hccl playbook from the npu probe's model (profile: auto picks
# none, the HCCL output names no NPU). busbw is HCCL Test's algbw x the nccl-tests factor (docs/hccl.md).
_ASCEND_910B_ESTIMATE = (
    "estimate: Ascend 910B servers join their 8 NPUs in a full mesh of HCCS links, 7 links x 56 GB/s = 392 GB/s "
    "aggregate per NPU (figure quoted in https://www.meemx.com/p/hccl-contest-log-overall, an HCCL contest log on an "
    "8x 910B server; Huawei publishes no HCCL Test busbw for it); floor ~38 %% of that (%d GB/s) to catch a broken "
    "link or a PCIe fallback, not a performance target. Calibrate with your fleet (fleet-relative rules do)")
PROFILES["ascend-910b-8npu"] = {
    "description": "Huawei Ascend 910B (64 GB HBM), 8 NPUs per server in an HCCS full mesh (Atlas 800T A2 class)",
    "match": {"gpu_model": "910B", "gpus_per_node": 8},
    "checks": {
        "hccl.all_reduce": [
            {
                "when": {"nodes": 1, "ranks": 8},
                "metrics": {"busbw_max_gbyte_s": {"min": 150, "warn_below_pct": 90}},
                "source": "profile ascend-910b-8npu (8 NPUs): " + _ASCEND_910B_ESTIMATE % 150,
            },
        ],
    },
}
