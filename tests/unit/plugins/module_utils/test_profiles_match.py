# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Hardware profiles are matched on the parsed model and form factor, never by substring (issue 7).

The GPU names are the ones real tools print:
- from this project's captures: "NVIDIA H200" (fixtures h200x2-*, nvidia_smi/h200-*), "NVIDIA H100 80GB HBM3"
  (nvidia_smi/driver580-h100-*), "A100-SXM4-40GB" (nccl_tests/superbench-*-8xA100-*, old CUDA names had no
  vendor prefix), "Tesla K80", "Tesla P100-PCIE-16GB", "Tesla V100-PCIE-16GB", "Tesla V100-SXM2-16GB",
  "Tesla T4", "NVIDIA GeForce RTX 3090", "NVIDIA RTX A4000", "GeForce GTX TITAN Black" (nvidia_smi/*),
  "GeForce RTX 2080 Ti" (nccl_tests/*);
- from public nvidia-smi outputs and the NVIDIA Linux driver README's supported-products table (product
  name -> PCI device id; public copy, index id 67161954526): "NVIDIA H100 PCIe" (2331; nvidia-smi table,
  index id 31353373741), "NVIDIA H100 NVL" (2321; nvidia-smi table, index id 14249706504), "NVIDIA H100"
  (2339), "NVIDIA H200 NVL" (233B), "NVIDIA GH200 480GB" (2342; nvidia-smi name, index id 53112800128),
  "NVIDIA A100-SXM4-80GB" (CUDA device name, index id 60344306518).
"""

from __future__ import annotations

import pytest

from ansible_collections.aifabric.acceptance.plugins.module_utils import expectations

# name -> (model, form factor)
NAMES = {
    "NVIDIA H200": ("H200", "SXM"),
    "NVIDIA H100 80GB HBM3": ("H100", "SXM"),
    "A100-SXM4-40GB": ("A100", "SXM"),
    "NVIDIA A100-SXM4-80GB": ("A100", "SXM"),
    "Tesla K80": ("K80", None),
    "Tesla P100-PCIE-16GB": ("P100", "PCIe"),
    "Tesla V100-PCIE-16GB": ("V100", "PCIe"),
    "Tesla V100-SXM2-16GB": ("V100", "SXM"),
    "Tesla T4": ("T4", None),
    "NVIDIA GeForce RTX 3090": (None, None),
    "GeForce RTX 2080 Ti": (None, None),
    "NVIDIA RTX A4000": ("A4000", None),
    "GeForce GTX TITAN Black": (None, None),
    "NVIDIA H100 PCIe": ("H100", "PCIe"),
    "NVIDIA H100 NVL": ("H100", "NVL"),
    "NVIDIA H100": ("H100", None),
    "NVIDIA H200 NVL": ("H200", "NVL"),
    "NVIDIA GH200 480GB": ("GH200", "superchip"),
}

# name, GPU count -> built-in profile chosen (None: none applies)
DETECT = [
    ("NVIDIA H200", 8, "h200-sxm-8gpu"),
    ("NVIDIA H100 80GB HBM3", 8, "h100-sxm-8gpu"),
    ("A100-SXM4-40GB", 8, "a100-sxm-8gpu"),
    ("NVIDIA A100-SXM4-80GB", 8, "a100-sxm-8gpu"),
    # before issue 7 each of these matched a profile by substring:
    ("NVIDIA H100 PCIe", 8, None),      # 'H100' put PCIe cards under the SXM floor
    ("NVIDIA H100 NVL", 2, None),       # and NVL cards
    ("NVIDIA H100", 8, None),           # form factor unknown: no floor rather than a wrong one
    ("NVIDIA GH200 480GB", 1, None),    # 'H200' matched GH200
    ("NVIDIA H200 NVL", 8, None),
    ("Tesla V100-SXM2-16GB", 8, None),
    ("Tesla K80", 4, None),
    ("NVIDIA GeForce RTX 3090", 2, None),
    ("GeForce GTX TITAN Black", 1, None),
]


@pytest.mark.parametrize("name", sorted(NAMES))
def test_gpu_names_parse_to_model_and_form_factor(name):
    got = expectations.parse_gpu_name(name)
    assert (got["model"], got["form_factor"]) == NAMES[name]


@pytest.mark.parametrize("name,count,profile", DETECT)
def test_detect_profile_on_exact_model_and_form_factor(name, count, profile):
    chosen, why = expectations.detect_profile(name, count, expectations.all_profiles())
    assert chosen == profile, why
    assert why


def test_gpu_count_rule():
    profiles = expectations.all_profiles()
    name, why = expectations.detect_profile("NVIDIA H200", 2, profiles)
    # per-GPU rules apply at any count; collective rules only at the ranks they were measured at
    assert name == "h200-sxm-8gpu" and "differs" in why and "per-GPU" in why
    gemm, _sizes, _src = expectations.profile_rules(name, "gpu.gemm_bf16", {}, profiles)
    assert gemm["tflops"]["min"] == 600
    two, _sizes, _src = expectations.profile_rules(name, "nccl.all_reduce", {"nodes": 1, "ranks": 2}, profiles)
    assert two["busbw_max_gbyte_s"]["min"] == 310
    # an entry that names no ranks applies only at the profile's own node shape (gpus_per_node x nodes)
    mine = {"site-h200": {"match": {"gpu_model": "H200", "form_factor": "SXM", "gpus_per_node": 8}, "checks": {
        "nccl.all_reduce": [{"metrics": {"busbw_max_gbyte_s": {"min": 300}}, "source": "site"}]}}}
    profiles = expectations.all_profiles(mine)
    assert expectations.profile_rules("site-h200", "nccl.all_reduce", {"nodes": 2, "ranks": 16}, profiles)[0] == \
        {"busbw_max_gbyte_s": {"min": 300, "source": "site"}}
    assert expectations.profile_rules("site-h200", "nccl.all_reduce", {"nodes": 1, "ranks": 2},
                                      profiles) == (None, None, None)
    # without gpus_per_node the profile says nothing about the count: its entries apply as written
    loose = {"any-h200": {"match": {"gpu_model": "H200"}, "checks": {
        "nccl.all_reduce": [{"metrics": {"busbw_max_gbyte_s": {"min": 300}}, "source": "site"}]}}}
    profiles = expectations.all_profiles(loose)
    assert expectations.profile_rules("any-h200", "nccl.all_reduce", {"nodes": 1, "ranks": 2}, profiles)[0]


def test_user_profile_match_is_validated():
    with pytest.raises(expectations.ExpectationError, match="model name"):
        expectations.all_profiles({"x": {"match": {"gpu_model": "H1.0*"}, "checks": {}}})
    with pytest.raises(expectations.ExpectationError, match="form_factor"):
        expectations.all_profiles({"x": {"match": {"gpu_model": "H100", "form_factor": "OAM2"}, "checks": {}}})
    with pytest.raises(expectations.ExpectationError, match="unknown keys"):
        expectations.all_profiles({"x": {"match": {"gpu_model": "H100", "gpus": 8}, "checks": {}}})
    # a user profile for PCIe cards is chosen for them, and only for them
    pcie = {"h100-pcie": {"match": {"gpu_model": "H100", "form_factor": "PCIe"}, "checks": {}}}
    profiles = expectations.all_profiles(pcie)
    assert expectations.detect_profile("NVIDIA H100 PCIe", 4, profiles)[0] == "h100-pcie"
    assert expectations.detect_profile("NVIDIA H100 80GB HBM3", 8, profiles)[0] == "h100-sxm-8gpu"
