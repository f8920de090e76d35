# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The environment probe's adapter: ``OPTIONS`` and ``records(host, params)`` (see tools/__init__.py).

The probe is the collection's own code, not a tool's output to parse: ``records`` is env_probe.probe, which runs the
probe groups on a probe_host.Host (the SSH module's, or a pod's own, k8s_entry) and returns their records.
``OPTIONS`` are the env_probe module's options, all of which describe the probe (the module adds none).
Runs on the targets: Python 3.8+, no Ansible imports.
"""

from __future__ import annotations

from ansible_collections.aifabric.acceptance.plugins.module_utils import env_probe

# the expectations the probes compare with what they find (unset: not compared); docs/glossary.md's "Environment
# expectations" table, the keys of an inventory's acceptance_expect
EXPECT = dict(
    gpu_count=dict(type="int"),
    gpu_model=dict(type="str"),
    driver_version=dict(type="str"),
    cuda_version=dict(type="str"),
    nccl_version=dict(type="str"),
    persistence_mode=dict(type="bool"),
    npu_count=dict(type="int"),
    hca_count=dict(type="int"),
    port_rate_gbit_s=dict(type="float"),
    ports_up=dict(type="bool", default=False),
    memlock_unlimited=dict(type="bool", default=False),
    governor=dict(type="str"),
    kernel_modules=dict(type="list", elements="str", default=[]),
    package_versions=dict(type="dict", default={}),
)

OPTIONS = dict(
    groups=dict(type="list", elements="str", choices=list(env_probe.GROUPS), default=list(env_probe.GROUPS)),
    packages=dict(type="list", elements="str", default=[]),
    env_vars=dict(type="list", elements="str", default=[]),
    pip_freeze=dict(type="bool", default=False),
    pythons=dict(type="list", elements="path", default=[]),
    nvidia_smi_path=dict(type="path"),
    timeout_s=dict(type="int", default=60),
    expect=dict(type="dict", default={}, options=EXPECT),
)

records = env_probe.probe

# its names (docs/architecture.md's table of tools) and what the contract checks (tools/__init__.py)
CHECKS = ("env", "gpu", "rdma")
MODULE = "env_probe"
KUBERNETES = ("env_probe",)
NO_TOOL_NAME = "the probe is the collection's own code; a record names the command it read (nvidia-smi, nccl)"
# how it runs and what its records come from
NO_ARGV = "fixed read-only commands on a probe_host.Host, no options reach an argv"
PARSERS = ("nvidia_smi", "npu_smi", "hccn_tool", "rdma", "system")
NO_IMPORT = "a host probe reads the live host, never a saved output"
NO_GOLDEN = "a host probe: its records are tested on fixture hosts (tests/unit/plugins/module_utils/test_env_probe*)"
