# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every built-in threshold of the collection, as data, each with the source it comes from.

One place for the numbers that judge a measurement: hardware profiles (GPU GEMM, NCCL and HCCL collectives),
RDMA bandwidth floors and latency limits (perftest), the per-iteration jitter limit (nccl-tests ``-I 1``), the
GPU and NPU health rules of the environment probe, and the physical ranges that make a figure impossible. The
code that applies them (expectations, tools/perftest_sweep, collectives, env_probe) holds no number of its own.

Every threshold carries a ``source`` naming a measurement (what ran, on what, when) or a document, never a file
of the collection's tests; ``sources()`` lists them all (a unit test checks each one). Estimates say so and how
they were derived: they are floors that catch broken hardware, not performance targets; calibrate them with
your own fleet (fleet-relative rules do that automatically).

Plain Python data: module_utils files are the only collection files that travel to the targets inside a
module's payload (a YAML file beside them would not), and targets need no PyYAML. Imports nothing.
"""

from __future__ import annotations

# ---------------------------------------------------------------------------------------- hardware profiles
# What a healthy node of a known kind should deliver. Users add or override profiles with their own YAML file,
# loaded on the controller and passed to the modules as the ``profiles`` option (docs/expectations.md).
#
# Shape of one profile::
#
#     name:
#       description: text
#       match: {gpu_model: H100, form_factor: SXM, gpus_per_node: 8}
#                                       # gpu_model: the model token of the GPU name, matched exactly
#                                       # (expectations.parse_gpu_name: "NVIDIA H100 80GB HBM3" is
#                                       # H100/SXM, "NVIDIA H100 PCIe" H100/PCIe, "NVIDIA GH200 480GB"
#                                       # GH200/superchip); form_factor: SXM, PCIe, NVL or superchip;
#                                       # gpus_per_node: the node shape the collective rules describe
#       checks:
#         <check>:                      # e.g. nccl.all_reduce, gpu.gemm_bf16
#           - when: {nodes: 1, ranks: 2}   # optional; keys: nodes, ranks, nodes_min, nodes_max,
#                                          # ranks_min, ranks_max, algo (NCCL_ALGO when forced)
#             metrics: {<metric>: {min: .., max: .., warn_below_pct: ..}}
#             sizes: {<bytes>: {busbw_gbyte_s: {min: ..}}}   # per message size (series rows)
#             source: where the numbers come from (quoted in every verdict)
#
# The most specific matching entry wins (the one whose ``when`` names the most keys).
# GPU-count rule: per-GPU checks (gpu.gemm_*) apply at any GPU count; a collective entry applies at the
# ranks its ``when`` names, and one that names no ranks only at ranks == nodes x gpus_per_node.
# Every number says where it comes from: a measurement (file named) or an estimate
# (how it was derived). Estimates are floors to catch broken hardware, not
# performance targets; calibrate them with your own fleet (fleet-relative rules do
# that automatically).

GIB8 = "8589934592"

_H200_X2_MEASURED = ("nccl-tests 2.19.6 on 2x H200 NV18, NCCL 2.28.9, NVLS off: all_reduce busbw 344.8 (out-of-place) / "
                     "345.7 (in-place) GB/s at 8 GiB (all_reduce_perf -b 8 -e 8G -f 2 -g 2, measured 2026-11-22 on the "
                     "nvidia-h200-x2 device machine)")
_NVLINK4_ESTIMATE = ("estimate: NVLink4 gives 450 GB/s per direction per GPU; NCCL ring all_reduce without NVLS "
                     "reaches about 80 %% of that (~360 GB/s); floor set at ~%d GB/s. Calibrate with your fleet")
_A100_MEASURED = ("nccl-tests (pre-2.11) on 8x A100-SXM4-40GB: all_reduce busbw 235.3 GB/s at 8 GB "
                  "(all_reduce_perf -g 8, the recorded run that the microsoft/superbenchmark project publishes)")

PROFILES = {
    "h200-sxm-8gpu": {
        "description": "NVIDIA H200 SXM (141 GB HBM3e), NVLink4 through NVSwitch, 8 GPUs per node (HGX H200)",
        "match": {"gpu_model": "H200", "form_factor": "SXM", "gpus_per_node": 8},
        "checks": {
            "gpu.gemm_bf16": [{
                "metrics": {"tflops": {"min": 600, "warn_below_pct": 95}},
                "source": "profile h200-sxm-8gpu: sustained 8192^3 bf16 (>= 1 s warmup, 200 timed products) measured "
                          "654.8-684.7 TFLOP/s on 2x H200 held at the 700 W power cap (SM 1410-1530 MHz); "
                          "floor ~92 % of the lowest (gemm_bench, 2026-11-22, collection GPU proof runs 2 and 3). "
                          "Short bursts reach 792-800",
            }],
            "gpu.gemm_fp16": [{
                "metrics": {"tflops": {"min": 575, "warn_below_pct": 95}},
                "source": "profile h200-sxm-8gpu: sustained 8192^3 fp16 measured 626.5-657.1 TFLOP/s on 2x H200 at "
                          "the 700 W power cap (SM 1410-1440 MHz); floor ~92 % of the lowest (gemm_bench, 2026-11-22, "
                          "collection GPU proof runs 2 and 3)",
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
                          "sustained bf16 8192^3 measured 655-685 TFLOP/s (gemm_bench, 2026-11-22); a burst on an "
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
PROFILE_ALIASES = {"nccl.torch_all_reduce": "nccl.all_reduce"}

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


# ---------------------------------------------------------------------------------------- RDMA (perftest)
# Bandwidth floor at the sizes where every real capture is at >= 95 % of line rate, in % of the lower active
# port rate of both ends (the module option line_rate_floor_pct, user variable rdma_perftest.line_rate_floor_pct).
RDMA_LINE_RATE_PCT = {
    "value": 90, "unit": "% of line rate",
    "source": "every real perftest capture on a known port rate measures >= 95 % of line rate at its plateau "
              "(the RDMA_BW_FLOORS sources below); 90 % leaves a margin for a loaded host",
}
_SB_LOOPBACK = ("ib_write_bw -a loopback on one HCA published by the microsoft/superbenchmark project (HDR 200 Gb/s "
                "IB, 1 QP)")
_HDR_SEND = ("ib_send_bw --report_gbit -a -F on an HDR 200 Gb/s IB port, 1 QP, in an H20 GPU node's published setup "
             "notes (public GitHub file, index id 41638043664)")
_CX7_NDR = ("the public notes 'How to connect two GPU servers using Infiniband DAC cables' (ConnectX-7 NDR, "
            "public GitHub file, index id 58145501009)")
_HCCN_200G = ("perftest reports of a 200 Gb/s RoCE port of a Huawei NPU host, run through hccn_tool's perftest "
              "wrapper (public notes, index id 69688778807: ib_read_bw and ib_write_bw at 1 MiB, 23302.26 and "
              "23293.09 MiB/s = 97.7 %)")
# Bandwidth floors by verb and message size, in % of the lower active port rate of the two ends (unidirectional;
# bidirectional runs double it, see tools/perftest_sweep.default_rules). Each band is (smallest message size in bytes,
# floor % or None, source). None at a band means RDMA_LINE_RATE_PCT (the configured line_rate_floor_pct).
# Below the plateau the floor is 90 % of the lowest healthy figure seen in that band, rounded down to a multiple
# of 5 %, and never above line_rate_floor_pct. Below the smallest band there is no default floor at all: real
# captures show healthy links far below line rate there (message rate, not the link, limits small messages), so
# nothing is judged and the expectation says so (RDMA_NO_FLOOR).
RDMA_BW_FLOORS = {
    "write": (
        (1048576, None, "95.7 %% of line rate at 1 MiB and 97.5 %% at 8 MiB in %s; 97.7 %% in %s"
         % (_SB_LOOPBACK, _HCCN_200G)),
        (65536, 80, "lowest healthy figure 88.8 %% of line rate at 64 KiB (90.0 %% at 128 KiB, 94.0 %% at 256 KiB) "
                    "in %s" % _SB_LOOPBACK),
    ),
    "read": (
        (1048576, None, "97.7 %% of line rate at 1 MiB in %s" % _HCCN_200G),
        (65536, 70, "ConnectX-7 NDR at 64 KiB: 328.61 Gb/s = 82.2 %% of 400 (ib_read_bw --report_gbits in %s)"
         % _CX7_NDR),
    ),
    "send": (
        (2097152, None, "96.3 %% of line rate at 2 MiB and 98.3 %% at 8 MiB in %s" % _HDR_SEND),
        (1048576, 80, "93.6 %% of line rate at 1 MiB in %s" % _HDR_SEND),
    ),
}
RDMA_NO_FLOOR = {
    "write": "healthy links measure 42 % of line rate at 4 KiB and 78 % at 32 KiB (" + _SB_LOOPBACK + ")",
    "read": "no real capture of ib_read_bw below 64 KiB on a known port rate",
    "send": ("healthy links measure 54.4 % (" + _HDR_SEND + ") to 97.6 % (ib_send_bw, 64 KiB, in " + _CX7_NDR
             + ") of line rate at 64 KiB"),
}
# Small-message latency limits (typical latency, or the average in duration mode), per verb, in microseconds,
# at message sizes up to RDMA_LAT_SMALL_BYTES.
RDMA_LAT_LIMITS_US = {"write": 2.5, "send": 2.5, "read": 4.5}
RDMA_LAT_SMALL_BYTES = 64
RDMA_LAT_SOURCE = "NGC multinode criterion for small-message %s latency"

# ---------------------------------------------------------------------------------------- nccl-tests jitter
# '-I 1' per-iteration report: a multi-rank run whose i_cv% (stdev/mean of the per-iteration times) is above
# cv_warn_pct at a message size of min_size_bytes or more warns (small sizes are launch-latency bound).
NCCL_JITTER = {
    "cv_warn_pct": {
        "value": 25.0, "unit": "%",
        "source": "estimate: an iteration-time spread of a quarter of the mean; no multi-rank -I 1 capture to "
                  "calibrate from (a 1-rank run on one H100, nccl-tests 2.19.6 -I 1, 2026-11-23, measured "
                  "out-of-place i_cv% 6.6-39.8 % at 1 MiB and more, but one rank is never judged). Calibrate with "
                  "your fleet",
    },
    "min_size_bytes": {
        "value": 1 << 20, "unit": "bytes",
        "source": "estimate: below 1 MiB an iteration takes tens of microseconds (the same H100 run), where kernel "
                  "launch time, not the interconnect, sets the spread",
    },
}

# ---------------------------------------------------------------------------------------- health rules (env_probe)
# GPU (nvidia-smi -q -x) ECC counters: a count above ``max`` gives ``status``. The aggregate rule applies only
# while the volatile count is 0 (the volatile rule already names the problem).
GPU_ECC_RULES = {
    "ecc_volatile_uncorrectable": {
        "max": 0, "status": "fail",
        "source": "NVIDIA GPU Memory Error Management (docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt): an "
                  "uncorrectable ECC error since the last driver load means data was lost on this GPU",
    },
    "ecc_aggregate_uncorrectable": {
        "max": 0, "status": "warn",
        "source": "NVIDIA GPU Memory Error Management: lifetime uncorrectable errors are history (row remapping "
                  "may have repaired them); the volatile count says whether they still happen",
    },
}
# Active clocks-event reasons that mean the hardware is slowing itself down: (reason, status, source).
GPU_CLOCK_EVENT_REASONS = (
    ("hw_slowdown", "fail", "nvidia-smi -q documentation (Clocks Event Reasons): HW Slowdown, the hardware cuts "
                            "its clocks (thermal, power brake or power supply)"),
    ("hw_thermal_slowdown", "fail", "nvidia-smi -q documentation: HW Thermal Slowdown, the GPU or memory is too hot"),
    ("hw_power_brake_slowdown", "fail", "nvidia-smi -q documentation: HW Power Brake Slowdown, an external power "
                                        "brake assertion (the power supply or the system)"),
    ("sw_thermal_slowdown", "warn", "nvidia-smi -q documentation: SW Thermal Slowdown, the driver lowers clocks to "
                                    "hold the temperature target: a cooling problem in the making"),
)
# npu-smi health words other than OK: these warn, anything else fails.
NPU_HEALTH = {
    "warn": ("Warning",),
    "source": "npu-smi info documentation (Ascend): Health is OK, Warning, Alarm or Critical; only Warning leaves "
              "the NPU usable",
}

# ---------------------------------------------------------------------------------------- physical ranges
# A figure outside its physical range was not measured: whatever an expectation says, a record that carries one is
# ``error`` (expectations.physical_check). A name is looked up exactly first, then by the longest ``*suffix`` that
# ends it (units live in metric names); a name found in neither is not checked.
# (name or *suffix, min, max, source: why the bound holds)
PHYSICAL_RANGES = (
    ("iterations", 1, None, "a measured row ran at least one iteration"),
    ("iterations_count", 1, None, "a measurement ran at least one iteration"),
    ("iters_count", 1, None, "a measurement ran at least one iteration"),
    ("ranks", 1, None, "a collective has at least one rank"),
    ("m", 1, None, "a matrix product has positive dimensions"),
    ("n", 1, None, "a matrix product has positive dimensions"),
    ("k", 1, None, "a matrix product has positive dimensions"),
    ("count", 0, None, "an element count is never negative"),
    ("utilization_pct", 0, 100, "a share of time"),
    ("tflops", 0, 20000, "no GPU's dense peak reaches 20,000 TFLOP/s: the highest datasheet figure, Blackwell "
                         "Ultra's dense FP4, is about 15,000"),
    ("*_gbit_s", 0, 3200, "no RDMA port carries more than 800 Gb/s (XDR, 800GbE); a bidirectional test sums both "
                          "directions, 1,600 Gb/s; 3,200 is twice that"),
    ("*_gbyte_s", 0, 10000, "no GPU link carries 10,000 GB/s: NVLink 5, the fastest, carries 1,800 GB/s per GPU, "
                            "both directions together"),
    ("*_us", 0, None, "a time is never negative"),
    ("*_ms", 0, None, "a time is never negative"),
    ("*_bytes", 0, None, "a size is never negative"),
    ("*_count", 0, None, "a count is never negative"),
    ("*_total", 0, None, "a count is never negative"),
    ("*_wrong", 0, None, "a count of wrong elements (or a largest error) is never negative"),
    ("*_mpps", 0, None, "a message rate is never negative"),
    ("*_pct", 0, None, "a percentage of this kind is never negative"),
    ("*_w", 0, None, "a power draw is never negative"),
    ("*_mhz", 0, None, "a clock is never negative"),
)


# Relations between the figures of one measurement (issue 34 rule 5): a record (or a series row) whose figures break
# one is ``error``, as a figure outside its range is. ``PLAUSIBLE_POSITIVE``: figures that are never 0 (a time below
# the tool's resolution is not a measurement); ``PLAUSIBLE_ORDER``: figures that can only come in this order (each
# <= the next), checked where every one of them was measured (a 0.00 BW peak is perftest's "not measured").
_PERFTEST_LAT_SOURCE = ("perftest's latency tests print microseconds with two decimals (perftest_parameters.h "
                        "REPORT_FMT_LAT): a round trip over a wire takes time, so 0.00 is below the resolution, not a "
                        "measured latency")
PLAUSIBLE_POSITIVE = (
    ("lat_min_us", _PERFTEST_LAT_SOURCE), ("lat_typical_us", _PERFTEST_LAT_SOURCE),
    ("lat_avg_us", _PERFTEST_LAT_SOURCE), ("lat_max_us", _PERFTEST_LAT_SOURCE),
)
PLAUSIBLE_ORDER = (
    (("bw_avg_gbit_s", "bw_peak_gbit_s"),
     "perftest's BW average is the bytes over the whole run's time, its BW peak the bytes over the fastest interval "
     "(perftest_parameters.c, print_report_bw): an average above the peak was not measured"),
    (("lat_min_us", "lat_typical_us", "lat_max_us"),
     "perftest's t_typical is the median of the sorted samples, t_min the first and t_max the last (print_report_lat)"),
    (("lat_min_us", "lat_avg_us", "lat_max_us"), "an average of samples lies between their least and greatest"),
    (("lat_min_us", "lat_p99_us", "lat_p999_us", "lat_max_us"),
     "perftest's 99 % and 99.9 % percentiles are samples of the sorted list between its first and last (print_report_lat)"),
)
PLAUSIBLE_ORDER_SLACK = 0.01    # the last printed digit: perftest rounds each figure to two decimals on its own

# A GEMM's TFLOP/s is recomputed from its printed time and matrix size (2*m*n*k / time: a multiply and an add per
# term; torch_worker.py) and held to the dense peak of the GPU model's datasheet for its dtype: a figure above it
# was not measured. Keyed by expectations.parse_gpu_name's (model, form factor); dense (no 2:4 sparsity) figures,
# at boost clock. A model or form factor not listed is held to PHYSICAL_RANGES' tflops bound only.
GEMM_PEAK_MARGIN_PCT = 5.0
GEMM_PEAK_MARGIN_SOURCE = ("estimate: datasheet peaks are rounded boost-clock figures; a healthy H100 SXM bf16 8192^3 "
                           "GEMM measures about 700-800 TFLOP/s, far below; 5 % above the peak is never measured")
GEMM_RECOMPUTE_TOLERANCE_PCT = 1.0
GEMM_RECOMPUTE_SOURCE = ("torch_worker.py prints time_ms and tflops = 2*m*n*k/time as floats of the same run: they "
                         "agree to rounding; 1 % apart, the figure does not follow from the time and size printed")
_H100_SXM = "NVIDIA H100 Tensor Core GPU datasheet (2023), H100 SXM column, dense (half the 'with sparsity' figures)"
_H100_PCIE = "NVIDIA H100 Tensor Core GPU datasheet (2023), H100 PCIe column, dense (half the 'with sparsity' figures)"
_H100_NVL = "NVIDIA H100 Tensor Core GPU datasheet (2023), H100 NVL column, dense (half the 'with sparsity' figures)"
_H200_SXM = "NVIDIA H200 Tensor Core GPU datasheet (2024), H200 SXM column, dense (half the 'with sparsity' figures)"
_H200_NVL = "NVIDIA H200 Tensor Core GPU datasheet (2024), H200 NVL column, dense (half the 'with sparsity' figures)"
_A100 = "NVIDIA A100 Tensor Core GPU datasheet (2021), A100 80GB SXM and PCIe columns, dense"
GEMM_PEAK_TFLOPS = {
    ("H100", "SXM"): ({"bf16": 989.4, "fp16": 989.4, "tf32": 494.7, "fp32": 66.9, "fp8": 1978.9}, _H100_SXM),
    ("H100", "PCIe"): ({"bf16": 756.0, "fp16": 756.0, "tf32": 378.0, "fp32": 51.2, "fp8": 1513.0}, _H100_PCIE),
    ("H100", "NVL"): ({"bf16": 835.5, "fp16": 835.5, "tf32": 417.5, "fp32": 60.0, "fp8": 1670.5}, _H100_NVL),
    ("H200", "SXM"): ({"bf16": 989.4, "fp16": 989.4, "tf32": 494.7, "fp32": 66.9, "fp8": 1978.9}, _H200_SXM),
    ("H200", "NVL"): ({"bf16": 835.5, "fp16": 835.5, "tf32": 417.5, "fp32": 60.0, "fp8": 1670.5}, _H200_NVL),
    ("A100", "SXM"): ({"bf16": 312.0, "fp16": 312.0, "tf32": 156.0, "fp32": 19.5}, _A100),
    ("A100", "PCIe"): ({"bf16": 312.0, "fp16": 312.0, "tf32": 156.0, "fp32": 19.5}, _A100),
}


# ---------------------------------------------------------------------------------------- hardware-derived floors
# The "hardware" analysis (plugins/plugin_utils/hardware.py) judges a collective's busbw against the links the
# host's own probe found, at any GPU or rank count: floor = link figure x HEALTHY_EFFICIENCY[collective] x
# HARDWARE_MARGIN. busbw is nccl-tests' bus bandwidth, already normalised by the rank count (its doc/PERFORMANCE.md),
# so one per-GPU link figure serves 2, 4 or 8 ranks. The efficiencies are the lowest busbw / link figure of healthy
# runs at sizes >= 1 GiB (the plateau): smaller runs are not judged by it (HARDWARE_MIN_BYTES).
_H100_X2_HEALTHY = ("playbooks/acceptance.yml on 2x H100 80GB HBM3 NV18 (18 x 26.562 GB/s = 478.1 GB/s per GPU and "
                    "direction), nccl-tests 2.19.6, NCCL 2.28.9, NVLS off, sizes to 1 GiB, measured 2026-11-25 on the "
                    "nvidia-h100-x2 device machine (the judgement_proof.sh hardware script, scenario healthy)")
_H200_X2_HEALTHY = ("nccl-tests 2.19.6 on 2x H200 NV18 (478.1 GB/s), NCCL 2.28.9, NVLS off, sizes to 8 GiB, measured "
                    "2026-11-22 on the nvidia-h200-x2 device machine")
HEALTHY_EFFICIENCY = {
    # collective: (lowest healthy busbw / link figure, what was measured)
    "all_reduce": (0.695, "all_reduce busbw 332.3 GB/s on " + _H100_X2_HEALTHY + "; 345.7 on " + _H200_X2_HEALTHY),
    "all_gather": (0.605, "all_gather busbw 289.0 GB/s on " + _H100_X2_HEALTHY + "; 313.3 on " + _H200_X2_HEALTHY),
    "reduce_scatter": (0.56, "reduce_scatter busbw 267.5 GB/s on " + _H100_X2_HEALTHY + "; 297.0 on "
                       + _H200_X2_HEALTHY),
    "alltoall": (0.74, "alltoall busbw 354.8 GB/s on " + _H100_X2_HEALTHY + "; 364.9 on " + _H200_X2_HEALTHY),
    "broadcast": (0.776, "broadcast busbw 370.9 GB/s on " + _H100_X2_HEALTHY),
    "reduce": (0.778, "reduce busbw 372.2 GB/s on " + _H100_X2_HEALTHY),
    "sendrecv": (0.755, "sendrecv busbw 360.9 GB/s on " + _H100_X2_HEALTHY),
    "torch_all_reduce": (0.733, "torch.distributed all_reduce busbw 350.8 GB/s (allreduce_probe) on " + _H100_X2_HEALTHY),
}
HARDWARE_MARGIN = 0.8
HARDWARE_MARGIN_SOURCE = ("estimate: 80 % of the lowest healthy efficiency; the same 2x H100 with a competing bf16 "
                          "matmul on one GPU measured 26-45 % of the link figure and with NCCL_P2P_DISABLE=1 5-10 % "
                          "(the judgement_proof.sh hardware script, scenarios loaded and nop2p, 2026-11-25), both below it")
HARDWARE_MIN_BYTES = 1 << 30
# PCIe per-lane bandwidth per direction in GB/s by generation, after line encoding (PCI-SIG base specifications:
# 8b/10b for gen 1-2, 128b/130b for gen 3-5, FLIT for gen 6)
PCIE_LANE_GBYTE_S = {1: 0.25, 2: 0.5, 3: 0.985, 4: 1.969, 5: 3.938, 6: 7.563}
PCIE_EFFICIENCY = (0.43, "all_reduce busbw 27.4 GB/s through host memory over PCIe gen5 x16 (63.0 GB/s) on the 2x H100 "
                         "of " + _H100_X2_HEALTHY.split(" (", 1)[0] + " with NCCL_P2P_DISABLE=1 (scenario nop2p): the "
                         "slowest path PCIe GPUs take; GPUs with PCIe peer-to-peer do better")
# The "peers" analysis (plugins/plugin_utils/peers.py): a GPU far below its siblings in the same node.
PEERS = {"fail_below_pct": 80.0, "warn_below_pct": 90.0}
PEERS_SOURCE = ("estimate: healthy GPUs of one node measured within 5 % of each other (bf16 GEMM 656 / 683 TFLOP/s on "
                "2x H100, 655-685 on 2x H200); a competing matmul on one GPU brought it to 46 % of its sibling "
                "(the judgement_proof.sh hardware script, 2026-11-25)")


# ---------------------------------------------------------------------------------------- burn-in soak, copy bandwidth
# tools/gpu_soak.py and tools/copy_bandwidth.py: each rule (value, status, source). Measured on the lent H100 (1x H100 80GB
# HBM3, driver 580.159.04, torch 2.11.0+cu130) by tests/hardware/burnin_proof.sh on 2026-12-06.
_SOAK_MEASURED = ("60 s soak of bf16 8192^3 on 1x H100 80GB HBM3 (burnin_proof.sh, 2026-12-06): healthy 685.7-692.3 "
                  "TFLOP/s a window (median 687.9), power median 698 W of 700 W, 33-65 C; with a competing matmul "
                  "312.2 TFLOP/s at 692 W; under a 200 W cap (nvidia-smi -pl) 188.9 TFLOP/s at 199 W")
SOAK = {
    "jitter_warn_pct": (5.0, "warn", "estimate: healthy windows spread 0.2 % (coefficient of variation) in " + _SOAK_MEASURED
                        + "; 5 % is 25 times that"),
    "jitter_fail_pct": (15.0, "fail", "estimate: a GPU whose one-second throughput varies by 15 % (CV) is throttling "
                        "or shared; three times the warn level"),
    "power_of_limit_min_pct": (80.0, "warn", "the GEMM drew 99-100 % of the enforced limit in every scenario of "
                               + _SOAK_MEASURED + ": a GPU that stays below 80 % was not loaded by the soak"),
    "power_cap_min_pct": (95.0, "warn", "nvidia-smi -pl sets the enforced limit below power.default_limit; a limit "
                          "below 95 % of the default is a cap someone set (" + _SOAK_MEASURED + ")"),
    "temperature_spread_warn_c": (15.0, "warn", "estimate: GPUs of one node under the same load run within a few "
                                  "degrees of each other (the soaked H100 rose 33 to 65 C); 15 C apart is a cooling "
                                  "difference (airflow, a fan, a heat sink)"),
    "warmup_fraction": (0.1, None, "the first windows run at lower clocks (98-115 TFLOP/s in the first 0.3 s of "
                        + _SOAK_MEASURED + "): the first 10 % of the soak (at least 3 s) is not judged"),
    "series_points": (120, None, "the record keeps at most 120 points of each GPU's series (a 30 min soak: one every "
                      "15 s), enough to draw it and small enough for the run's records"),
}
SOAK_COUNTER_RULES = (
    # (metric, status when it grows, source)
    ("new_xid_count", "fail", "NVIDIA Xid catalogue (docs.nvidia.com/deploy/xid-errors): an Xid is a driver-reported "
                              "GPU error; a new one during a soak is a fault found by the load"),
    ("ecc_uncorrected_growth_count", "fail", "NVIDIA GPU Memory Error Management: an uncorrectable ECC error means "
                                             "data was lost"),
    ("remapped_uncorrectable_growth_count", "fail", "NVIDIA GPU Memory Error Management: a row remapped for an "
                                                    "uncorrectable error during the run"),
    ("ecc_corrected_growth_count", "warn", "NVIDIA GPU Memory Error Management: corrected errors are survivable; "
                                           "their growth under load is worth watching"),
    ("pcie_replay_growth_count", "warn", "PCI Express Base Specification (data link layer replay): replays recover "
                                         "from link errors; their growth during a run is a marginal link"),
)
# host <-> device copies over PCIe: the lowest healthy share of the link figure (gen x width x PCIE_LANE_GBYTE_S)
HOST_COPY_EFFICIENCY = (0.86, "1x H100 80GB HBM3 on PCIe gen5 x16 (63.0 GB/s): pinned 256 MiB copies host-to-device "
                              "54.2 GB/s, device-to-host 55.2 GB/s (burnin_proof.sh copy worker, 2026-12-06; bare torch "
                              "54.9 / 55.2); RTX 4090 gen4 x16 (31.5 GB/s): 23.9-27.1 GB/s (nvbandwidth issue #15)")
COPY_MARGIN = (0.8, "estimate: 80 % of the lowest healthy efficiency, as HARDWARE_MARGIN for the collectives")
# GPU pairs over NVLink: the share of the source GPU's NVLink figure (links x per-link rate) a healthy copy reaches
NVLINK_COPY_EFFICIENCY = (0.5, "estimate: nvbandwidth's README shows 276 GB/s device-to-device copies on an 8-GPU NVLink "
                               "node; no pair could be measured here (the lent machines have one GPU). A floor at half "
                               "the link figure catches a pair that lost links; calibrate with your fleet")


# ---------------------------------------------------------------------------------------- fleet analyses (controller)
# Defaults of the analyses that add records (plugins/plugin_utils: fleet_relative, attribution, baseline, compare);
# the analysis config (docs/report.md, docs/history.md) overrides each. The numbers' sources are in ANALYSIS_SOURCES.
FLEET_RELATIVE = {"enabled": True, "k": 3.0, "min_drop_pct": 5.0, "min_samples": 4, "status": "fail"}
ATTRIBUTION = {
    "attribution_low_pct": 10.0,
    "attribution_min_edges": 2,
    "attribution_node_fraction": 0.5,
    "attribution_mad_k": 4.0,
}
BASELINE_MIN_PCT = 95.0
COMPARE_MARGIN_PCT = 5.0
_LEYS = ("Leys et al., 'Detecting outliers: Do not use standard deviation around the mean, use absolute deviation "
         "around the median', Journal of Experimental Social Psychology 49 (2013): a cut at 3 scaled MADs "
         "(1.4826 x MAD) is their very conservative one")
_GEMM_SPREAD = ("sustained bf16 GEMM on 2x H200 measured 654.8-684.7 TFLOP/s across GPUs and runs on one healthy "
                "host (gemm_bench, 2026-11-22): a 4.5 % spread")
ANALYSIS_SOURCES = {
    "FLEET_RELATIVE/k": _LEYS,
    "FLEET_RELATIVE/min_drop_pct": "estimate: a healthy fleet spreads by a few %% (%s); 5 %% keeps that noise from "
                                   "being flagged however small the MAD" % _GEMM_SPREAD,
    "FLEET_RELATIVE/min_samples": "estimate: a median and MAD of fewer than 4 values cannot tell an outlier from the "
                                  "fleet (with 3, one slow value moves the MAD as much as the median)",
    "ATTRIBUTION/attribution_low_pct": "estimate: a link below 90 % of the fleet median of its check and rail is "
                                       "low; healthy RDMA links measure >= 95 % of line rate at their plateau (the "
                                       "RDMA_BW_FLOORS sources)",
    "ATTRIBUTION/attribution_min_edges": "estimate: one low edge cannot say which end is at fault; two can",
    "ATTRIBUTION/attribution_node_fraction": "estimate: a node is suspect when most (more than half) of its edges "
                                             "are low, so a single bad link never condemns both its ends",
    "ATTRIBUTION/attribution_mad_k": "estimate: stricter than the fleet-relative cut (3 scaled MADs, " + _LEYS
                                     + ") because an edge carries the noise of both its ends",
    "BASELINE_MIN_PCT": "estimate: a value below 95 % of the frozen baseline is beyond the run-to-run spread of one "
                        "healthy host (" + _GEMM_SPREAD + ")",
    "COMPARE_MARGIN_PCT": "estimate: changes within 5 % of the reference are noise (" + _GEMM_SPREAD + ")",
}


# ---------------------------------------------------------------------------------------- fabric port counters
# How much a port's error counter may grow during a run window (tools/port_counters: read before and after the RDMA
# stage or a soak). ``group``: where the counter lives (``counters``: /sys/class/infiniband/<dev>/ports/<p>/counters,
# the InfiniBand PMA PortCounters; ``hw_counters``: the same port's driver counters; ``ethtool``: ``ethtool -S`` of
# the port's network interface). Growth above ``fail_above`` fails the port, above ``warn_above`` warns; ``flap``
# names a link that went down. ``fault``: where a growth is counted - ``link``, a physical-layer error counted at one
# end of one cable (the cable, its transceivers, the switch port or the NIC: the fleet analysis port_counters tells the
# link from the host, docs/attribution.md), or ``host``, congestion or a host-side shortage (never a cable, never a
# failure on its own). Counters not listed here are kept in the record, with their growth, never judged.
_IBQUERYERRORS = ("rdma-core infiniband-diags ibqueryerrors(8), FILES/ERROR THRESHOLD: the error_thresholds example "
                  "sets SymbolErrorCounter=10 and LinkErrorRecoveryCounter=10 as the level at which a port is reported")
_LINK_DOWN = ("InfiniBand Architecture Specification Vol. 1, PortCounters LinkDownedCounter: the number of times the "
              "port training state machine failed the link error recovery process and downed the link; no link is "
              "taken down on purpose during an acceptance window, so one is a flap")
_ANY = "estimate: a healthy link in an acceptance window shows none; one is reported (warn), more than 10 fail as %s"
PORT_COUNTER_RULES = {
    "symbol_error": {"group": "counters", "fault": "link", "warn_above": 0, "fail_above": 10, "source": _IBQUERYERRORS},
    "link_error_recovery": {"group": "counters", "fault": "link", "warn_above": 0, "fail_above": 10, "source": _IBQUERYERRORS},
    "link_downed": {"group": "counters", "fault": "link", "warn_above": None, "fail_above": 0, "flap": True,
                    "source": _LINK_DOWN},
    "port_rcv_errors": {"group": "counters", "fault": "link", "warn_above": 0, "fail_above": 10,
                        "source": _ANY % "ibqueryerrors does for SymbolErrorCounter (" + _IBQUERYERRORS + ")"},
    "local_link_integrity_errors": {"group": "counters", "fault": "link", "warn_above": 0, "fail_above": 10,
                                    "source": _ANY % "ibqueryerrors does for SymbolErrorCounter"},
    "excessive_buffer_overrun_errors": {"group": "counters", "fault": "link", "warn_above": 0, "fail_above": 10,
                                        "source": _ANY % "ibqueryerrors does for SymbolErrorCounter"},
    "port_xmit_discards": {"group": "counters", "fault": "host", "warn_above": 0, "fail_above": None,
                           "source": "estimate: discards on send are congestion or a peer that stopped reading, not a "
                                     "cable fault: reported (warn), never failed on their own"},
    "out_of_buffer": {"group": "hw_counters", "fault": "host", "warn_above": 0, "fail_above": None,
                      "source": "estimate: the mlx5 driver's out_of_buffer counts packets dropped for lack of a "
                                "receive WQE (a host-side shortage, not the link): reported (warn)"},
    "link_down_events_phy": {"group": "ethtool", "fault": "link", "warn_above": None, "fail_above": 0, "flap": True,
                             "source": "mlx5 ethtool -S link_down_events_phy, the physical port's link-down count: "
                                       "as " + _LINK_DOWN},
    "rx_crc_errors_phy": {"group": "ethtool", "fault": "link", "warn_above": 0, "fail_above": 10,
                          "source": _ANY % "ibqueryerrors does for SymbolErrorCounter"},
    "rx_symbol_err_phy": {"group": "ethtool", "fault": "link", "warn_above": 0, "fail_above": 10, "source": _IBQUERYERRORS},
    "rx_discards_phy": {"group": "ethtool", "fault": "host", "warn_above": 0, "fail_above": None,
                        "source": "estimate: receive discards of a lossless RoCE port mean PFC did not hold: reported "
                                  "(warn)"},
}
# the widths of the PMA PortCounters error counters (InfiniBand Architecture Specification Vol. 1, PortCounters
# attribute): they stop at their largest value, so a counter at it cannot show growth (reset it, perfquery -R)
PORT_COUNTER_BITS = {"symbol_error": 16, "link_error_recovery": 8, "link_downed": 8, "port_rcv_errors": 16,
                     "port_rcv_remote_physical_errors": 16, "port_rcv_switch_relay_errors": 16,
                     "port_xmit_discards": 16, "port_xmit_constraint_errors": 8, "port_rcv_constraint_errors": 8,
                     "local_link_integrity_errors": 4, "excessive_buffer_overrun_errors": 4, "VL15_dropped": 16}
PORT_COUNTER_BITS_SOURCE = ("InfiniBand Architecture Specification Vol. 1, PortCounters attribute: error counters of "
                            "4, 8 and 16 bits that stop at their maximum; a real mlx5 port reads link_downed 255 and "
                            "port_xmit_discards 65535 (leptonai/gpud pull request 943)")


def sources():
    """[(threshold name, source)] for every built-in threshold above (profiles rule by rule)."""
    found = [("RDMA_LINE_RATE_PCT", RDMA_LINE_RATE_PCT["source"]), ("NPU_HEALTH", NPU_HEALTH["source"])]
    for name, profile in sorted(PROFILES.items()):
        for check, entries in sorted(profile["checks"].items()):
            found.extend(("%s/%s/%d" % (name, check, i), entry.get("source")) for i, entry in enumerate(entries))
    for verb, bands in sorted(RDMA_BW_FLOORS.items()):
        found.extend(("RDMA_BW_FLOORS/%s/%d" % (verb, band[0]), band[2]) for band in bands)
    found.extend(("RDMA_NO_FLOOR/%s" % verb, text) for verb, text in sorted(RDMA_NO_FLOOR.items()))
    found.extend(("RDMA_LAT_LIMITS_US/%s" % verb, RDMA_LAT_SOURCE % verb) for verb in sorted(RDMA_LAT_LIMITS_US))
    found.extend(("NCCL_JITTER/%s" % key, rule["source"]) for key, rule in sorted(NCCL_JITTER.items()))
    found.extend(("GPU_ECC_RULES/%s" % key, rule["source"]) for key, rule in sorted(GPU_ECC_RULES.items()))
    found.extend(("GPU_CLOCK_EVENT_REASONS/%s" % r[0], r[2]) for r in GPU_CLOCK_EVENT_REASONS)
    found.extend(("PHYSICAL_RANGES/%s" % r[0], r[3]) for r in PHYSICAL_RANGES)
    found.extend(("PLAUSIBLE_POSITIVE/%s" % name, why) for name, why in PLAUSIBLE_POSITIVE)
    found.extend(("PLAUSIBLE_ORDER/%s" % "<=".join(names), why) for names, why in PLAUSIBLE_ORDER)
    found.extend(("GEMM_PEAK_TFLOPS/%s/%s" % key, value[1]) for key, value in sorted(GEMM_PEAK_TFLOPS.items()))
    found.extend([("GEMM_PEAK_MARGIN_PCT", GEMM_PEAK_MARGIN_SOURCE), ("GEMM_RECOMPUTE_TOLERANCE_PCT",
                                                                      GEMM_RECOMPUTE_SOURCE)])
    found.extend(("HEALTHY_EFFICIENCY/%s" % k, v[1]) for k, v in sorted(HEALTHY_EFFICIENCY.items()))
    found.extend([("HARDWARE_MARGIN", HARDWARE_MARGIN_SOURCE), ("PCIE_EFFICIENCY", PCIE_EFFICIENCY[1]),
                  ("PEERS", PEERS_SOURCE)])
    found.extend(("SOAK/%s" % key, rule[2]) for key, rule in sorted(SOAK.items()))
    found.extend(("SOAK_COUNTER_RULES/%s" % rule[0], rule[2]) for rule in SOAK_COUNTER_RULES)
    found.extend([("HOST_COPY_EFFICIENCY", HOST_COPY_EFFICIENCY[1]), ("COPY_MARGIN", COPY_MARGIN[1]),
                  ("NVLINK_COPY_EFFICIENCY", NVLINK_COPY_EFFICIENCY[1])])
    numbers = ["FLEET_RELATIVE/%s" % k for k in ("k", "min_drop_pct", "min_samples")]
    numbers += ["ATTRIBUTION/%s" % k for k in sorted(ATTRIBUTION)] + ["BASELINE_MIN_PCT", "COMPARE_MARGIN_PCT"]
    found.extend((name, ANALYSIS_SOURCES.get(name)) for name in numbers)
    found.extend(("PORT_COUNTER_RULES/%s" % k, rule["source"]) for k, rule in sorted(PORT_COUNTER_RULES.items()))
    found.append(("PORT_COUNTER_BITS", PORT_COUNTER_BITS_SOURCE))
    return found
