# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The environment probe's adapter: ``OPTIONS`` and ``records(host, params)`` (see tools/__init__.py).

The probe is the collection's own code, not a tool's output to parse: ``records`` is env_probe.probe, which runs the
probe groups on an env_probe.Host (the SSH module's, or a pod's own, k8s_entry) and returns their records.
``OPTIONS`` are the env_probe module's options, all of which describe the probe (the module adds none).
Runs on the targets: Python 3.8+, no Ansible imports.
"""

from __future__ import annotations

from ansible_collections.aifabric.acceptance.plugins.module_utils import env_probe

OPTIONS = dict(
    groups=dict(type="list", elements="str", choices=list(env_probe.GROUPS), default=list(env_probe.GROUPS)),
    packages=dict(type="list", elements="str", default=[]),
    env_vars=dict(type="list", elements="str", default=[]),
    pip_freeze=dict(type="bool", default=False),
    python=dict(type="list", elements="path", default=[]),
    nvidia_smi_path=dict(type="path"),
    timeout=dict(type="int", default=60),
    expect_gpu_count=dict(type="int"),
    # the names and versions the probes compare with what they find (unset: not compared)
    **{"expect_" + name: dict(type="str") for name in ("gpu_model", "driver_version", "cuda_version", "nccl_version")},
    expect_persistence_mode=dict(type="bool"),
    expect_hca_count=dict(type="int"),
    expect_port_rate_gbit_s=dict(type="float"),
    expect_ports_up=dict(type="bool", default=False),
    expect_memlock_unlimited=dict(type="bool", default=False),
    expect_governor=dict(type="str"),
    expect_kernel_modules=dict(type="list", elements="str", default=[]),
    expect_packages=dict(type="dict", default={}),
)

records = env_probe.probe
