#!/usr/bin/python
# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: k8s_preflight
short_description: Quick Kubernetes diagnosis for distributed training, as result records per node and per namespace
version_added: 1.0.0
author:
  - aifabric.acceptance contributors (@aifabric)
description:
  - Reads the cluster (nothing is created or changed) and returns records whose reason says what to do next.
  - Per node (C(host) = node name) - C(k8s.node) Ready, memory/disk/PID pressure and cordon; C(k8s.gpu)
    C(nvidia.com/gpu) capacity vs allocatable (GPUs the device plugin marked unhealthy, a GPU node whose plugin is not
    registered); C(k8s.rdma) the C(rdma/*) resources and the NFD RDMA/SR-IOV labels (C(rdma.available) of NFD from
    v0.14 on, C(custom-rdma.available) before, C(pci-15b3.present)), failing a GPU node without any;
    C(k8s.nvidia_device_plugin) on GPU nodes, the NVIDIA device plugin's pod there (labels of the static manifest, the
    Helm chart or the GPU operator, any namespace) and the problems among its recent log lines (the plugin
    container's log, named in the request - a real API refuses an unnamed one on a pod with a sidecar; the
    configuration the plugin prints at start-up, C(failOnInitError) and all, is not read as a problem).
  - Per namespace (C(host) = C(namespace/<name>)), with O(namespace) - C(k8s.pending_pod) for every Pending pod with
    the scheduler's message; with O(label_selector) (the training job's pods) also C(k8s.nccl_env), the C(NCCL_*)/C(UCX_*)
    environment of those pods with every variable that differs across them, and C(k8s.network_policy) for every
    NetworkPolicy that selects them, failing one that restricts traffic without allowing every port between them.
  - "Runs on the controller (C(delegate_to: localhost)) and needs the C(kubernetes) Python client there."
extends_documentation_fragment: [aifabric.acceptance._attributes, aifabric.acceptance._k8s_auth, aifabric.acceptance._attributes.results]
attributes:
  check_mode:
    support: full
    details: Read-only; runs the same in check mode.
  diff_mode:
    support: none
  idempotent:
    support: full
    details: Changes nothing.
options:
  hosts:
    description: Node names to judge (the inventory's hosts). Empty - every node of the cluster.
    type: list
    elements: str
    default: []
  namespace:
    description: Namespace of the training job (pending pods, env drift, NetworkPolicies). Omit for node records only.
    type: str
  label_selector:
    description:
      - Label selector of the training job's pods (equality terms, for example V(training.kubeflow.org/job-name=llm)).
      - Needs O(namespace).
    type: str
  expect:
    description:
      - Expectations of the environment, with the names of M(aifabric.acceptance.env_probe)'s C(expect) keys (the
        inventory's C(acceptance_expect)); the preflight judges O(expect.gpu_count) only, and any other key is an error.
    type: dict
    default: {}
    suboptions:
      gpu_count:
        description: GPUs every GPU node must have allocatable (C(k8s.gpu) fails on a node with another count).
        type: int
requirements:
  - kubernetes >= 37 (Python client, on the controller)
seealso:
  - module: aifabric.acceptance.k8s_device_plugin
  - module: aifabric.acceptance.k8s_workload
"""

EXAMPLES = r"""
- name: Preflight the nodes of the inventory and the job that hangs
  aifabric.acceptance.k8s_preflight:
    hosts: "{{ ansible_play_hosts_all }}"
    namespace: training
    label_selector: training.kubeflow.org/job-name=llm-70b
    expect: {gpu_count: 8}
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
results:
  description: Records C(k8s.node), C(k8s.gpu), C(k8s.rdma), C(k8s.nvidia_device_plugin) per node and C(k8s.pending_pod), C(k8s.nccl_env),
    C(k8s.network_policy) per namespace; see C(docs/kubernetes.md).
  returned: always
  type: list
  elements: dict
  sample:
    - host: gpu-node-02
      check: k8s.gpu
      status: fail
      reason: "nvidia.com/gpu allocatable 7 < capacity 8: 1 GPU(s) marked unhealthy by the device plugin (...)"
"""


from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_api, k8s_preflight, modmain


def argument_spec():
    spec = dict(
        hosts=dict(type="list", elements="str", default=[]),
        namespace=dict(type="str"),
        label_selector=dict(type="str"),
        expect=dict(type="dict", default={}, options=dict(gpu_count=dict(type="int"))),
    )
    spec.update(k8s_api.connection_argspec())
    return spec


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True,
                           required_by={"label_selector": ("namespace",)})
    modmain.run(module, "k8s_preflight", _collect, fields={"results": []})


def _collect(module):
    p = module.params
    try:
        k8s_preflight.split_selector(p["label_selector"])
    except ValueError as exc:
        module.fail_json(msg=str(exc), results=[])
    expect_gpus = (p["expect"] or {}).get("gpu_count")
    if expect_gpus is not None and expect_gpus < 0:
        module.fail_json(msg="expect.gpu_count must be >= 0, got %d" % expect_gpus, results=[])
    try:
        api = k8s_api.connect(p)
        records = k8s_preflight.collect(api, nodes=p["hosts"], namespace=p["namespace"], selector=p["label_selector"],
                                        expect_gpus=expect_gpus)
    except k8s_api._api_errors() as exc:
        module.fail_json(msg=str(k8s_api._fail("cannot read the cluster", exc)), results=[])
    return dict(changed=False, results=records)


if __name__ == "__main__":
    main()
