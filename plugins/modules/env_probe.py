#!/usr/bin/python
# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: env_probe
short_description: Probe a GPU/RDMA node (OS, CPU, memory, NVIDIA GPUs, RDMA HCAs, software) and return result records
version_added: 1.0.0
author:
  - aifabric.acceptance contributors (@aifabric)
description:
  - Reads what acceptance teams look at first on a GPU/RDMA node and returns one result record per check
    (C(env.*), C(gpu.*), C(rdma.*)); see the collection's C(docs/env_probe.md) for every check, fact and rule.
  - C(env) - OS, kernel, CPU model/count, CPU frequency governor, memory, NUMA nodes, C(ulimit -l) (memlock),
    IOMMU/ACS hints, hugepages, kernel modules of interest, and the environment variables you ask for.
  - C(software) - the Python version and package versions of each interpreter (read with C(importlib.metadata) in a
    subprocess of that interpreter, never imported into the module), the NCCL library on disk and torch's NCCL,
    an optional C(pip freeze) digest.
  - C(gpu) - C(nvidia-smi -q -x) (falling back to C(--query-gpu) CSV), C(nvidia-smi nvlink -s) and
    C(nvidia-smi topo -m); one record per GPU plus a node inventory and a topology record. No C(nvidia-smi) on a
    node without NVIDIA GPUs on its PCI bus is a C(skip), not an error.
  - C(rdma) - HCAs, ports, GIDs and netdevs read from C(/sys/class/infiniband); one record per HCA port.
    No RDMA device is a C(skip).
  - Every command runs with a timeout, as an argv list. The module only reads; it never changes the node.
extends_documentation_fragment: [aifabric.acceptance._attributes, aifabric.acceptance._attributes.results]
attributes:
  check_mode:
    support: full
    details:
      - The probes only read files and run read-only commands, so they run in check mode too.
  diff_mode:
    support: none
  idempotent:
    support: full
    details:
      - Nothing is changed; C(changed) is always false.
options:
  groups:
    description:
      - Probe groups to run.
      - V(npu) reads Huawei Ascend NPUs (C(npu-smi info), the CANN toolkit's C(ascend_toolkit_install.info)) into
        C(gpu.npu_inventory) and C(gpu.npu_device) records; a host without C(npu-smi) gets one C(skip) record.
        Each NPU device's RoCE port (C(hccn_tool) link, IPv4 address, netmask, gateway, LLDP neighbour) becomes a
        C(gpu.npu_network) record; a host with NPUs but without C(hccn_tool) gets one C(skip) record for it.
    type: list
    elements: str
    choices: [env, gpu, npu, rdma, software]
    default: [env, gpu, npu, rdma, software]
  packages:
    description:
      - Python distributions to report in addition to V(torch), V(sglang), V(vllm) and V(deepspeed).
      - Names as C(pip) knows them (distribution names), for example V(transformers), V(nvidia-nccl-cu12).
    type: list
    elements: str
    default: []
  env_vars:
    description:
      - Names or shell-style patterns (V(NCCL_*), V(UCX_*), V(CUDA_*)) of environment variables to report.
      - The module sees the environment of the Ansible connection (the SSH session), not that of a job scheduler,
        a container or a systemd unit; set them with C(environment:) on the task to probe a given setting.
    type: list
    elements: str
    default: []
  pip_freeze:
    description: Also report a SHA-256 digest of C(pip freeze --all) for each interpreter (to spot drift).
    type: bool
    default: false
  pythons:
    description:
      - More Python interpreters (paths) whose packages to probe, after the module's own interpreter.
      - Each is executed, so it and every directory on its way must be writable by nobody but root and the module's
        user (symbolic links only when root or the user owns them); otherwise the task fails and says why.
    type: list
    elements: path
    default: []
  nvidia_smi_path:
    description:
      - Path of C(nvidia-smi); default is to look it up on E(PATH).
      - A path given here that does not exist is an C(error) record (not a C(skip)).
      - It is executed, so it and every directory on its way must be writable by nobody but root and the module's
        user; otherwise the task fails and says why.
    type: path
  timeout_s:
    description:
      - Time limit of each command, in seconds.
      - Must be 1 or more.
    type: int
    default: 60
  expect:
    description:
      - What the host must have; each key unset is not judged. The keys are those of an inventory's
        C(acceptance_expect) mapping (the collection's C(docs/glossary.md), Environment expectations).
    type: dict
    default: {}
    suboptions:
      gpu_count:
        description:
          - Number of NVIDIA GPUs expected; a different count fails C(gpu.inventory).
          - Must be 0 or more.
        type: int
      gpu_model:
        description: A case-insensitive substring every GPU's product name must contain, for example V(H100).
        type: str
      driver_version:
        description: Expected NVIDIA driver version; V(580) or V(580.159) match V(580.159.04) (dotted prefix).
        type: str
      cuda_version:
        description: Expected CUDA version reported by the driver (dotted prefix match).
        type: str
      nccl_version:
        description: Expected NCCL version, judged on each C(env.nccl) record (system library, Python's NCCL).
        type: str
      persistence_mode:
        description: When set, every GPU's persistence mode must be enabled (V(true)) or disabled (V(false)).
        type: bool
      npu_count:
        description:
          - Number of Ascend NPUs expected (the C(npu) group); a different count fails C(gpu.npu_inventory), and so
            does a host without C(npu-smi) when it is more than 0.
          - Must be 0 or more.
        type: int
      hca_count:
        description:
          - Number of RDMA devices expected under C(/sys/class/infiniband).
          - Must be 0 or more.
        type: int
      port_rate_gbit_s:
        description:
          - Minimum rate of every ACTIVE HCA port, in Gbit/s (as in sysfs C(rate), for example V(400)).
          - Must be 0 or more.
        type: float
      ports_up:
        description: When true, an HCA port that is not ACTIVE/LinkUp fails; when false it is a warning.
        type: bool
        default: false
      memlock_unlimited:
        description: When true, a limited C(ulimit -l) (RLIMIT_MEMLOCK) fails C(env.memlock).
        type: bool
        default: false
      governor:
        description: Expected CPU frequency governor of every CPU, for example V(performance).
        type: str
      kernel_modules:
        description: Kernel modules that must be loaded (or built in), for example V(nvidia_peermem).
        type: list
        elements: str
        default: []
      package_versions:
        description:
          - Python distributions that must be installed, mapped to an expected version (dotted prefix match),
            or to an empty string to require only their presence.
        type: dict
        default: {}
notes:
  - The memlock limit is read from the module's own process, that is the limits of the Ansible connection; a
    workload started by systemd, Slurm or Kubernetes may run with other limits.
  - PCIe link generation below the maximum is not judged (NVIDIA GPUs lower it at idle to save power);
    a link width below the maximum fails.
seealso:
  - name: nvidia-smi documentation
    description: Field meanings of C(nvidia-smi -q) and C(--query-gpu).
    link: https://docs.nvidia.com/deploy/nvidia-smi/index.html
"""

EXAMPLES = r"""
- name: Probe a node with the defaults
  aifabric.acceptance.env_probe:
  register: probe

- name: Probe an 8x H100 node and judge it
  aifabric.acceptance.env_probe:
    expect:
      gpu_count: 8
      gpu_model: H100
      driver_version: "580.159"
      hca_count: 8
      port_rate_gbit_s: 400
      ports_up: true
      memlock_unlimited: true
      governor: performance
      kernel_modules: [nvidia_peermem]
    env_vars: ["NCCL_*", "UCX_*", "CUDA_*"]
    pythons: [/opt/venv/bin/python]
    pip_freeze: true

- name: Only the software versions of a training venv
  aifabric.acceptance.env_probe:
    groups: [software]
    pythons: [/opt/train/.venv/bin/python]
    packages: [transformers, flash-attn]
    expect:
      package_versions:
        torch: "2.11"
"""

RETURN = r"""
results:
  description: Result records (one per check; see docs/results.schema.json and docs/env_probe.md).
  returned: always
  type: list
  elements: dict
  sample:
    - check: gpu.device
      target: "0"
      status: pass
      facts: {name: NVIDIA H100 80GB HBM3, bus_id: "00000000:00:06.0", ecc_mode_current: Enabled}
      metrics: {memory_total_mib: 81559, ecc_volatile_uncorrectable_count: 0, pcie_link_current_width: 16}
counts:
  description: Number of records per status.
  returned: always
  type: dict
  sample: {pass: 12, warn: 0, fail: 0, skip: 3, error: 0}
"""

import copy
import sys

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aifabric.acceptance.plugins.module_utils import argspec, env_probe, probe_host, results, runner
from ansible_collections.aifabric.acceptance.plugins.module_utils import modmain
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import env_probe as env


RANGES = {"timeout_s": argspec.POSITIVE}
# the bounds of the expect mapping's keys (checked as expect.<key>)
EXPECT_RANGES = {"expect.gpu_count": argspec.NON_NEGATIVE, "expect.npu_count": argspec.NON_NEGATIVE,
                 "expect.hca_count": argspec.NON_NEGATIVE, "expect.port_rate_gbit_s": argspec.NON_NEGATIVE}


# the probe's options, all of them (tools/env_probe.py: the single source, the Kubernetes planner's too)
SPEC = env.OPTIONS


def main():
    # a copy: AnsibleModule fills the expect mapping's suboption defaults into the default mapping it was given
    module = argspec.module(AnsibleModule, RANGES, argument_spec=copy.deepcopy(SPEC), supports_check_mode=True)
    expect = dict(("expect." + key, value) for key, value in (module.params["expect"] or {}).items())
    problems = argspec.violations(expect, EXPECT_RANGES)
    if problems:
        module.fail_json(msg="invalid option value%s: %s" % ("s" if len(problems) > 1 else "", "; ".join(problems)))
    modmain.run(module, "env_probe", _probe)


def _probe(module):
    # the interpreters and nvidia-smi the user names are executed (often as root): each must pass the path rule
    # (runner.checked_file; statedir.StateError, an AcceptanceError: its message is the failure), and runs by the path
    # it checked
    params = dict(module.params)
    params["pythons"] = [runner.checked_file(path, keep_name=True) for path in params["pythons"]]
    params["nvidia_smi_path"] = runner.checked_file(params["nvidia_smi_path"])
    host = probe_host.module_host(module, executable=sys.executable)
    records = env_probe.probe(host, params)
    return dict(changed=False, results=records, counts=results.count(records))


if __name__ == "__main__":
    main()
