#!/usr/bin/python
# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: k8s_workload
short_description: Run one acceptance check as Kubernetes workloads and return the same result records as the SSH path
version_added: 1.0.0
author:
  - aifabric.acceptance contributors (@aifabric)
description:
  - Runs one kind of check on Kubernetes nodes, in the user's image, and returns C(results) records shaped exactly like
    the SSH path's (C(env.*), C(gpu.*), C(nccl.*), C(rdma.*)), with C(host) = the node name and
    C(params.substrate=kubernetes) plus the pod and job names. Pod logs are the tools' own text, read by the same
    parsers and judged by the same code as the SSH modules.
  - A kind is the name of the module that runs the same tool over SSH (V(nccl_test_multinode) is nccl_test's gang
    form, one launch across the nodes).
  - V(env_probe) - one Job per node (pinned by node name) runs the collection's own environment probe, shipped into the
    pod in a ConfigMap; V(gemm_bench), V(nccl_test), V(gpu_soak) and V(copy_bandwidth) - one Job per node with all its
    GPUs; V(perftest_sweep) - per round of disjoint pairs, a server Job and a client Job pinned to the two nodes of
    each pair (a headless Service names the servers), every rail at once; V(nccl_test_multinode) - one MPI launch over
    every node through an MPIJob (kubeflow.org/v2beta1), a Volcano Job (batch.volcano.sh/v1alpha1) or, with no
    operator, an Indexed Job plus headless Service whose index 0 starts C(mpirun) once every worker's sshd answers
    (keys from a per-run Secret); V(allreduce_probe) - the torch all-reduce probe across nodes, an Indexed Job plus
    headless Service running C(torchrun) in every pod with env rendezvous on the index-0 pod's DNS name; V(dcgm_diag)
    and V(port_counters) - one Job per node runs the collection's own C(aifabric.acceptance.dcgm_diag) or
    C(aifabric.acceptance.port_counters) code on the node (the image needs C(dcgmi), or C(ethtool) for the RoCE
    counters; sysfs is the node's); V(fabric_topology) - one Job per node runs the collection's own
    C(aifabric.acceptance.fabric_topology) code on the node (LLDP, the declared ports).
  - Waits with watches and a timeout; a pod that never schedules, cannot pull its image, cannot start on its node
    (sandbox, CNI, RuntimeClass or volume failures, within O(sandbox_grace_s) and O(mount_grace_s)), crashes, is
    OOM-killed or runs out of time gives an C(error) record naming the reason from its status and events, never a
    silent gap. Pods that cannot be created end the step with the controller's C(FailedCreate) (an operator's
    C(MPIJobFailed)) message - at once when admission refuses the pod's own spec (PodSecurity, a ResourceQuota's
    "must specify", a LimitRange's max), after O(quota_grace_s) for an exceeded ResourceQuota and
    O(admission_grace_s) for an admission webhook's denial; a Volcano Job whose PodGroup is not enqueued ends it after
    O(podgroup_grace_s) with the scheduler's reason.
  - Each pod's log is read the moment that pod ends (or is seen being deleted), not when the whole step ends, and
    each step's result is printed by the pod when that step ends (a deadline, an eviction or a SIGTERM during a later
    step keeps the steps already measured); a log gone with its pod says V(pod deleted (TTL/GC)).
  - Every object carries one run label; they are all deleted when the module ends - on success, failure, timeout,
    SIGTERM and Ctrl-C. O(state=absent) removes what a run id left behind.
  - O(render_dir) writes every manifest it would apply as YAML and applies nothing (no cluster needed).
  - "Runs on the controller (C(delegate_to: localhost) or a play on localhost) and needs the C(kubernetes) Python client
    there; see the collection's C(docs/kubernetes.md)."
extends_documentation_fragment: [aifabric.acceptance._attributes, aifabric.acceptance._k8s_auth, aifabric.acceptance._attributes.results]
attributes:
  check_mode:
    support: full
    details:
      - Builds the plan and returns the objects it would create and empty results; creates nothing and writes no file.
  diff_mode:
    support: none
  idempotent:
    support: none
    details: Every run starts new workloads (and removes them); O(state=absent) removes leftovers of a run id.
options:
  kind:
    description:
      - The check to run, named after the module that runs its tool over SSH; V(nccl_test_multinode) is one
        nccl-tests launch across the nodes, V(nccl_test) one per node.
      - Before 2.0.0 the kinds were V(env), V(gemm), V(nccl), V(nccl_multinode), V(perftest), V(allreduce_multinode),
        V(dcgm) and V(soak); those names are still accepted, with a deprecation warning, until 3.0.0.
    type: str
    choices: [env_probe, gemm_bench, nccl_test, perftest_sweep, nccl_test_multinode, allreduce_probe, dcgm_diag,
              port_counters, gpu_soak, copy_bandwidth, fabric_topology, env, gemm, nccl, nccl_multinode, perftest, allreduce_multinode,
              dcgm, soak]
  state:
    description: V(present) runs the check; V(absent) deletes every object labelled with O(run_id).
    type: str
    choices: [present, absent]
    default: present
  run_id:
    description:
      - Identifies the objects of one run (label C(aifabric.acceptance/run-id) and the name prefix C(aif-<run_id>-)).
        1-20 characters of V(a-z), V(0-9) and V(-). Default is a random id.
      - Required with O(state=absent).
    type: str
  render_dir:
    description:
      - Write every manifest into C(<render_dir>/<run_id>/) as YAML and apply nothing; no cluster is needed.
      - Directories are created C(0700) and files C(0600) (the Secret holds the run's ssh private key). An existing
        directory is used only when it is owned by the module's user, not writable by group or others, and no link on
        its way could be re-pointed by another user; otherwise the task fails and says which rule it breaks.
    type: path
  hosts:
    description: Node names to run on (the inventory's hosts). With O(label_selector), only the matching ones of these.
    type: list
    elements: str
    default: []
  label_selector:
    description:
      - Label selector of the nodes to run on (for example V(nvidia.com/gpu.present=true)). Needs the cluster.
      - Text; the C(nodeSelector) mapping every pod must match is O(node_labels).
    type: str
  namespace:
    description: Namespace of every object.
    type: str
    default: default
  image:
    description: The user's image with the tools (nccl-tests built with MPI, perftest, PyTorch for V(gemm_bench)) and C(python3).
    type: str
  image_pull_policy:
    description: C(imagePullPolicy) of every container.
    type: str
    choices: [Always, IfNotPresent, Never]
  image_pull_secrets:
    description: Names of C(imagePullSecrets).
    type: list
    elements: str
    default: []
  tolerations:
    description: "Pod tolerations, as Kubernetes writes them (for example C({key: nvidia.com/gpu, operator: Exists}))."
    type: list
    elements: dict
    default: []
  node_labels:
    description: C(nodeSelector) labels every pod must match (on top of the pinning to O(hosts)).
    type: dict
    default: {}
  gpus_per_pod:
    description: C(nvidia.com/gpu) per pod (requests = limits); use every GPU of a node.
    type: int
    default: 8
  resources:
    description:
      - "Extended resources per pod, requests = limits (for example C({rdma/hca_shared_devices_a: 1}))."
      - C(cpu) and C(memory) are not given here but with O(cpu_request), O(cpu_limit), O(memory_request) and
        O(memory_limit).
      - An operator's launcher pod (V(mpijob), V(volcano)) takes none of these (it holds no GPU); its requests and
        limits are O(nccl_test)'s C(launcher_cpu) and C(launcher_memory).
    type: dict
    default: {}
  cpu_request:
    description:
      - CPU request of every pod that runs a check (a Kubernetes quantity). Empty leaves it out.
      - Every pod states its cpu and memory requests and limits, so a namespace C(LimitRange) never gives it its
        defaults (often 1 CPU and 1Gi, which throttle GEMM and nccl-tests' ranks and cap C(/dev/shm) at 1Gi, then
        OOM-kill it) and a C(ResourceQuota) on cpu/memory admits it.
    type: str
    default: "8"
  cpu_limit:
    description:
      - CPU limit of every pod that runs a check; above the busy threads of 8 ranks and their NCCL proxies, so the
        CFS quota does not throttle them. Empty leaves it out (a namespace C(LimitRange) default then applies).
    type: str
    default: "64"
  memory_request:
    description:
      - Memory request of every pod that runs a check. Empty leaves it out.
    type: str
    default: 32Gi
  memory_limit:
    description:
      - Memory limit of every pod that runs a check. It must exceed O(shm_size) - the memory-backed C(/dev/shm)
        is charged to the pod's memory and capped at its limit - with room for the tools' own memory (8 GEMM or
        nccl-tests processes). Empty leaves it out (a namespace C(LimitRange) default then applies).
    type: str
    default: 128Gi
  host_network:
    description: C(hostNetwork) (with C(dnsPolicy=ClusterFirstWithHostNet)), for RDMA/RoCE without a secondary network.
    type: bool
    default: false
  ipc_lock:
    description: Add the C(IPC_LOCK) capability (pinned memory for RDMA).
    type: bool
    default: true
  privileged:
    description: Privileged containers. Only when you ask; prefer device-plugin resources.
    type: bool
    default: false
  shm_size:
    description: Size of the memory-backed C(/dev/shm) (NCCL needs more than the container default). Empty disables it.
    type: str
    default: 16Gi
  env:
    description: Environment of every container (C(NCCL_*), C(UCX_*), ...).
    type: dict
    default: {}
  env_from_configmaps:
    description: ConfigMaps whose keys become environment variables (C(envFrom)).
    type: list
    elements: str
    default: []
  runtime_class:
    description: C(runtimeClassName) (for example V(nvidia)).
    type: str
  service_account:
    description: C(serviceAccountName) of the pods (its token is not mounted).
    type: str
  active_deadline_s:
    description:
      - C(activeDeadlineSeconds) of every Job (of the launcher Job on V(mpijob)).
      - Default is what the pods' steps may take plus 600 s to start (scheduling, image pull) - for example
        V(nccl_test) with four collectives, C(4 x nccl_test.timeout_s) + 600; V(nccl_test_multinode) adds the
        launcher's C(wait_workers_s); V(env_probe) counts every command the probe may run (the python probe and pip
        freeze per interpreter, ldconfig, four nvidia-smi calls; with the V(npu) group npu-smi and four hccn_tool
        queries for each of up to 16 NPUs) times C(env_probe.timeout_s); V(perftest_sweep) 600 s for its server pod's
        start + C(connect_timeout_s + timeout_s).
      - A value shorter than the steps is refused (the deadline would kill a pod in the middle of a step).
    type: int
  ttl_after_finished_s:
    description: C(ttlSecondsAfterFinished) of every Job (a safety net; the module deletes its objects itself).
    type: int
    default: 600
  labels:
    description: Extra labels on every object and pod.
    type: dict
    default: {}
  annotations:
    description:
      - "Annotations of every pod (the pod templates of every Job, MPIJob replica and Volcano task), for example
        C({k8s.v1.cni.cncf.io/networks: rdma-net}) or Multus' JSON form as a string, to attach SR-IOV or host-device
        RDMA networks."
      - Names are qualified names (C([prefix/]name)); values are strings.
    type: dict
    default: {}
  python:
    description: The Python program in the image.
    type: str
    default: python3
  launcher:
    description:
      - How V(nccl_test_multinode) launches. V(auto) asks the API server (API discovery) and takes V(mpijob) when
        C(kubeflow.org/v2beta1) is served, else V(volcano) when C(batch.volcano.sh/v1alpha1) is, else V(indexed).
        Render mode cannot ask, so V(auto) renders V(indexed) there.
    type: str
    choices: [auto, indexed, mpijob, volcano]
    default: auto
  rounds:
    description:
      - V(perftest_sweep) - rounds of disjoint C([server, client]) pairs of node names, from the
        C(aifabric.acceptance.pairings) filter.
    type: list
    elements: list
  env_probe:
    description: V(env_probe) - options of the C(aifabric.acceptance.env_probe) module (same names, same defaults).
    type: dict
    default: {}
  gemm_bench:
    description:
      - V(gemm_bench) - options of the C(aifabric.acceptance.gemm_bench) module (dtypes, m, n, k, iterations, expect,
        ...).
      - Before 2.0.0 named O(gemm), still accepted with a deprecation warning until 3.0.0.
    type: dict
    default: {}
    aliases: [gemm]
  dcgm_diag:
    description:
      - V(dcgm_diag) - options of the C(aifabric.acceptance.dcgm_diag) module (level, dcgmi_path, host_engine,
        timeout_s).
      - Before 2.0.0 named O(dcgm), still accepted with a deprecation warning until 3.0.0.
    type: dict
    default: {}
    aliases: [dcgm]
  port_counters:
    description:
      - V(port_counters) - options of the C(aifabric.acceptance.port_counters) module (phase, before, stage, ethtool,
        timeout_s). With C(phase=after), C(before) is the before run's C(results) (every node's); each node's pod gets
        its own.
    type: dict
    default: {}
  fabric_topology:
    description:
      - V(fabric_topology) - options of the C(aifabric.acceptance.fabric_topology) module (lldp, timeout_s) but
        C(declared), and the pods' own C(topology) and C(lldpd_socket). One Job per node runs the collection's own
        C(fabric_topology) code on the node, the same records as over SSH (LLDP with C(lldpctl) or C(lldptool), the
        Ascend NPUs' with C(hccn_tool), from the image's C(PATH) or the Ascend driver's path).
      - "C(topology) - the declared topology of every node, C({node: {port: {switch, switch_port}}}); each node's pod
        gets its own entry as the module's C(declared)."
      - C(lldpd_socket) - the node's lldpd socket (for example V(/run/lldpd.socket)), mounted read-only (a hostPath
        of type C(Socket)) where the image's C(lldpctl) asks, C(/run/lldpd.socket); a node without it does not start
        the pod (its record says why). V("") (the default) mounts nothing.
      - "Give C(host_network: true) in the pod options: the interfaces a pod sees (C(/sys/class/net), the ones
        C(lldptool) is asked about and C(lldpctl)'s are named by) are the node's only on the host network."
      - Import mode (C(from_output), an C(ibnetdiscover) output) runs on the controller with the module itself.
    type: dict
    default: {}
  gpu_soak:
    description:
      - V(gpu_soak) - options of the C(aifabric.acceptance.gpu_soak) module (duration_s, datatype, sample_ms, expect,
        ...); one Job per node with all its GPUs, the same worker and records as over SSH.
      - Before 2.0.0 named O(soak), still accepted with a deprecation warning until 3.0.0.
    type: dict
    default: {}
    aliases: [soak]
  copy_bandwidth:
    description:
      - V(copy_bandwidth) - options of the C(aifabric.acceptance.copy_bandwidth) module (size_bytes, iterations,
        peer_copies, expect, ...); one Job per node with all its GPUs.
      - C(use_nvbandwidth) must say what the image has - V(never) (the collection's PyTorch worker) or V(always)
        (C(nvbandwidth), with C(nvidia-smi) for the link facts); V(auto), the module's default, is refused in a pod.
    type: dict
    default: {}
  nccl_test:
    description:
      - V(nccl_test) and V(nccl_test_multinode) - options of the C(aifabric.acceptance.nccl_test) module (collectives,
        tool_dir, min_bytes, max_bytes, env, expect, mpirun_mca, ...), plus for V(nccl_test_multinode) the workers'
        sshd port C(ssh_port) (V(2222)) on every launcher, the launcher's C(alive_port) (V(2223)), how long the
        launcher waits for every worker's sshd C(wait_workers_s) (V(600)), the cluster's DNS domain
        C(cluster_domain) (V(cluster.local)) for the pods' DNS search entry and the cpu/memory (requests = limits)
        of an operator's launcher pod C(launcher_cpu) (V(1)) and C(launcher_memory) (V(1Gi)).
      - V(nccl_test_multinode) - mpirun reaches the workers' sshd with C(-p ssh_port), the run's key,
        C(StrictHostKeyChecking=no), C(UserKnownHostsFile=/dev/null) and C(ConnectionAttempts=10) (a
        C(plm_rsh_args) in C(mpirun_mca) is appended), keeps host names whole (C(orte_keep_fqdn_hostnames)) and
        forwards every name of O(env) to the remote ranks with C(-x) (names of O(env_from_configmaps) only when
        listed in C(mpirun_env_forward)).
      - Before 2.0.0 named O(nccl), still accepted with a deprecation warning until 3.0.0.
    type: dict
    default: {}
    aliases: [nccl]
  perftest_sweep:
    description:
      - V(perftest_sweep) - options of the C(aifabric.acceptance.perftest) module (test, hcas, port, gid_index,
        duration_s, expect, ...), plus C(tool_dir), C(connect_timeout_s) (counted from the server pod's
        readiness) and C(ready_port) (V(18514)) - the server pod opens it once it runs, the client waits for it up
        to 600 s.
      - Before 2.0.0 named O(perftest), still accepted with a deprecation warning until 3.0.0.
    type: dict
    default: {}
    aliases: [perftest]
  allreduce_probe:
    description:
      - V(allreduce_probe) - options of the C(aifabric.acceptance.allreduce_probe) module (min_bytes, max_bytes,
        step_factor, iterations, warmup_iterations, datatype, verify_data, env, expect, ...), plus C(torchrun) (V(torchrun)) and
        C(master_port) (V(29500)).
    type: dict
    default: {}
  timeout_s:
    description:
      - Seconds to wait for the pods of one step (one round) before they count as timed out.
      - Default is the pods' deadline (O(active_deadline_s), given or derived) plus 600 s of start-up. Set together
        with O(active_deadline_s), a value shorter than that is refused.
      - Set alone, it is your bound on the wait and is kept even when shorter than the pods' deadline plus start-up;
        the result then carries a warning naming both figures - pods still inside their deadline will be stopped at
        O(timeout_s) seconds and count as timed out.
    type: int
  cleanup_timeout_s:
    description: Seconds to wait for every object of the run to be gone.
    type: int
    default: 120
  unschedulable_grace_s:
    description:
      - Seconds a pod may stay C(Unschedulable) (a cluster autoscaler may still add a node) before it gives an C(error)
        record with the scheduler's message.
    type: int
    default: 60
  image_pull_grace_s:
    description:
      - Seconds a pod may keep failing to pull its image with an error the kubelet retries (C(ErrImagePull),
        C(ImagePullBackOff) - a registry's rate limit or a slow mirror) before it gives an C(error) record naming
        the image and the kubelet's message. A final pull error (C(InvalidImageName)) is an error at once.
    type: int
    default: 120
  sandbox_grace_s:
    description:
      - Seconds a pod bound to its node may stay in C(ContainerCreating) after the kubelet's first
        C(FailedCreatePodSandBox) (the CNI plugin failed, the node's runtime has no handler for the RuntimeClass, the
        RuntimeClass is unknown), C(FailedPodSandBoxStatus) or C(NetworkNotReady) (the node's CNI is not initialised)
        warning before it gives an C(error) record naming the node, the pod and the event's message. The kubelet
        retries these with back-off; a CNI plugin still starting on a fresh node clears within this time.
      - In a gang (V(nccl_test_multinode), V(allreduce_probe)) the step ends then; that node's record carries the
        reason.
    type: int
    default: 180
  mount_grace_s:
    description:
      - Seconds a pod bound to its node may stay in C(ContainerCreating) after the kubelet's first C(FailedMount),
        C(FailedAttachVolume) or C(FailedMapVolume) warning (a ConfigMap, Secret or volume that does not come; a CSI
        attach that fails) before it gives an C(error) record naming the node, the pod and the event's message. The
        kubelet gives up on one mount attempt after about 2 minutes and retries.
    type: int
    default: 300
  podgroup_grace_s:
    description:
      - V(nccl_test_multinode) with a Volcano Job - seconds its PodGroup may stay C(Pending) (not enqueued, so Volcano
        creates no pod) after Volcano's first C(PodGroupPending)/C(Unschedulable) event before the step gives an
        C(error) record with the scheduler's words (C(queue resource quota insufficient) - the queue's capability;
        C(resource in cluster is overused) - the gang is larger than the free GPUs).
    type: int
    default: 300
  quota_grace_s:
    description:
      - Seconds the pods of a step may keep being refused by the namespace's ResourceQuota (C(exceeded quota) - other
        pods of the namespace hold it; the controller retries the create) after the first such C(FailedCreate)
        (C(MPIJobFailed), Volcano's C(FailedCreate)) event before the step gives an C(error) record naming the object,
        the event and the quota's requested/used/limited figures (the node too where the pod was planned for one).
      - A quota that the pod's own spec breaks (C(failed quota ... must specify)) ends the step at once.
    type: int
    default: 120
  admission_grace_s:
    description:
      - Seconds the pods of a step may keep being denied by a validating admission webhook (C(admission webhook
        <name> denied the request)) after the first such C(FailedCreate) (C(MPIJobFailed), Volcano's C(FailedCreate))
        event before the step gives an C(error) record naming the object, the event and the webhook's message (the
        node too where the pod was planned for one).
      - A PodSecurity or LimitRange refusal (the pod's own spec) ends the step at once.
    type: int
    default: 60
  _task_timeout_s:
    description:
      - Internal to the module's action plugin (never set it in a task) - the task's own time limit (its C(timeout),
        a play's or C(task_timeout)); the module cuts its waits and returns, its objects removed, before it, so Ansible
        never abandons it while it still holds the nodes. The M(aifabric.acceptance.k8s_workload) tasks of the
        C(k8s) role set their C(timeout) from the plan (the C(aifabric.acceptance.k8s_task_timeout) filter), so
        nothing is cut there.
    type: int
requirements:
  - kubernetes >= 37 (Python client, on the controller; not needed for O(render_dir))
seealso:
  - module: aifabric.acceptance.env_probe
  - module: aifabric.acceptance.nccl_test
  - module: aifabric.acceptance.perftest
"""

EXAMPLES = r"""
- name: Environment probe on two nodes, in the user's image
  aifabric.acceptance.k8s_workload:
    kind: env_probe
    hosts: [gpu-node-01, gpu-node-02]
    image: nvcr.io/nvidia/pytorch:25.01-py3
    namespace: acceptance
  delegate_to: localhost
  run_once: true
  register: env_k8s

- name: Pairwise ib_write_bw on every rail, rounds from the pairings filter
  aifabric.acceptance.k8s_workload:
    kind: perftest_sweep
    hosts: "{{ groups['gpu_nodes'] }}"
    rounds: "{{ groups['gpu_nodes'] | aifabric.acceptance.pairings(mode='all') }}"
    image: registry.example.com/acceptance/perftest:6.22
    host_network: true
    resources: {rdma/hca_shared_devices_a: 1}
    gpus_per_pod: 0
    perftest_sweep:
      test: ib_write_bw
      hcas: [mlx5_0, mlx5_1, mlx5_2, mlx5_3]
  delegate_to: localhost
  run_once: true

- name: Multi-node all_reduce, launcher chosen by API discovery
  aifabric.acceptance.k8s_workload:
    kind: nccl_test_multinode
    hosts: "{{ groups['gpu_nodes'] }}"
    image: registry.example.com/acceptance/nccl-tests:2.17-mpi
    nccl_test:
      collectives: [all_reduce]
      tool_dir: /opt/nccl-tests/build
      env: {NCCL_IB_HCA: "=mlx5_0,mlx5_1"}
  delegate_to: localhost
  run_once: true

- name: Write every manifest, apply nothing
  aifabric.acceptance.k8s_workload:
    kind: nccl_test
    hosts: [gpu-node-01]
    image: registry.example.com/acceptance/nccl-tests:2.17-mpi
    render_dir: /srv/aifabric/k8s-manifests

- name: Remove what an interrupted run left behind
  aifabric.acceptance.k8s_workload:
    state: absent
    run_id: acc-20261123
    namespace: acceptance
"""

RETURN = r"""
results:
  description: Result records (one per check and node, pair or launch), C(host) = node name; see C(docs/results.md).
  returned: always
  type: list
  elements: dict
  sample:
    - host: gpu-node-01
      check: nccl.all_reduce
      status: pass
      params: {substrate: kubernetes, namespace: acceptance, job: aif-r1-nccl-test-0, pod: aif-r1-nccl-test-0-x7k2p}
run_id:
  description: The run id (label value and name prefix of every object).
  returned: always
  type: str
launcher:
  description: The launcher used (or rendered) for V(nccl_test_multinode).
  returned: when O(kind=nccl_test_multinode)
  type: str
objects:
  description: C(Kind/namespace/name) of every object created (or that would be).
  returned: always
  type: list
  elements: str
files:
  description: The manifest files written by render mode (or that would be, in check mode).
  returned: when O(render_dir) is set
  type: list
  elements: str
leftover:
  description: Objects of the run still present after cleanup (empty when all are gone).
  returned: when the module talked to a cluster
  type: list
  elements: str
"""

import os
import time
import uuid

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_api, k8s_plan, k8s_run, results, statedir
from ansible_collections.aifabric.acceptance.plugins.module_utils import argspec, modmain

POD_OPTIONS = ("image", "image_pull_policy", "image_pull_secrets", "namespace", "tolerations", "node_labels",
               "gpus_per_pod", "resources", "cpu_request", "cpu_limit", "memory_request", "memory_limit",
               "host_network", "ipc_lock", "shm_size", "env", "env_from_configmaps", "runtime_class",
               "service_account", "privileged", "active_deadline_s", "ttl_after_finished_s", "labels", "annotations",
               "python")
# each kind's option group: its module's name (the gang form's, its tool's)
KIND_OPTIONS = dict((kind, kind[:-len(k8s_plan.MULTINODE)] if kind.endswith(k8s_plan.MULTINODE) else kind)
                    for kind in k8s_plan.KINDS)
NCCL_GANG = "nccl_test" + k8s_plan.MULTINODE     # the kind of one nccl-tests launch across the nodes


def argument_spec():
    spec = dict(
        kind=dict(type="str", choices=list(k8s_plan.KINDS) + list(k8s_plan.KINDS_RENAMED)),
        state=dict(type="str", choices=["present", "absent"], default="present"),
        run_id=dict(type="str"),
        render_dir=dict(type="path"),
        hosts=dict(type="list", elements="str", default=[]),
        label_selector=dict(type="str"),
        namespace=dict(type="str", default="default"),
        image=dict(type="str"),
        image_pull_policy=dict(type="str", choices=["Always", "IfNotPresent", "Never"]),
        image_pull_secrets=dict(type="list", elements="str", default=[], no_log=False),
        tolerations=dict(type="list", elements="dict", default=[]),
        node_labels=dict(type="dict", default={}),
        gpus_per_pod=dict(type="int", default=8),
        resources=dict(type="dict", default={}),
        cpu_request=dict(type="str", default="8"),
        cpu_limit=dict(type="str", default="64"),
        memory_request=dict(type="str", default="32Gi"),
        memory_limit=dict(type="str", default="128Gi"),
        host_network=dict(type="bool", default=False),
        ipc_lock=dict(type="bool", default=True),
        privileged=dict(type="bool", default=False),
        shm_size=dict(type="str", default="16Gi"),
        env=dict(type="dict", default={}),
        env_from_configmaps=dict(type="list", elements="str", default=[]),
        runtime_class=dict(type="str"),
        service_account=dict(type="str"),
        active_deadline_s=dict(type="int"),
        ttl_after_finished_s=dict(type="int", default=600),
        labels=dict(type="dict", default={}),
        annotations=dict(type="dict", default={}),
        python=dict(type="str", default="python3"),
        launcher=dict(type="str", choices=list(k8s_plan.LAUNCHERS), default="auto"),
        rounds=dict(type="list", elements="list"),
        env_probe=dict(type="dict", default={}),
        gemm_bench=dict(type="dict", default={}, **argspec.renamed("gemm")),
        dcgm_diag=dict(type="dict", default={}, **argspec.renamed("dcgm")),
        port_counters=dict(type="dict", default={}),
        fabric_topology=dict(type="dict", default={}),
        nccl_test=dict(type="dict", default={}, **argspec.renamed("nccl")),
        perftest_sweep=dict(type="dict", default={}, **argspec.renamed("perftest")),
        allreduce_probe=dict(type="dict", default={}),
        gpu_soak=dict(type="dict", default={}, **argspec.renamed("soak")),
        copy_bandwidth=dict(type="dict", default={}),
        timeout_s=dict(type="int"),
        cleanup_timeout_s=dict(type="int", default=120),
        unschedulable_grace_s=dict(type="int", default=60),
        image_pull_grace_s=dict(type="int", default=120),
        sandbox_grace_s=dict(type="int", default=k8s_api.SANDBOX_GRACE_S),
        mount_grace_s=dict(type="int", default=k8s_api.MOUNT_GRACE_S),
        podgroup_grace_s=dict(type="int", default=k8s_api.PODGROUP_GRACE_S),
        quota_grace_s=dict(type="int", default=k8s_api.QUOTA_GRACE_S),
        admission_grace_s=dict(type="int", default=k8s_api.ADMISSION_GRACE_S),
        _task_timeout_s=dict(type="int"),
    )
    spec.update(k8s_api.connection_argspec())
    return spec


STARTED = time.monotonic()     # the task's limit counts from before the module started: measure from here


def main():
    module = AnsibleModule(
        argument_spec=argument_spec(),
        required_if=[("state", "absent", ("run_id",)), ("state", "present", ("kind", "image"))],
        supports_check_mode=True,
    )
    p = module.params
    p["kind"], deprecation = k8s_plan.current_kind(p["kind"])
    if deprecation:
        module.deprecate(deprecation, version="3.0.0", collection_name="aifabric.acceptance")  # k8s_plan.KINDS_RENAMED_UNTIL
    run_id = p["run_id"] or "r" + uuid.uuid4().hex[:8]
    modmain.run(module, "k8s_workload", lambda module: _state(module, p, run_id), fields={"run_id": run_id})


def _state(module, p, run_id):
    if p["state"] == "absent":
        _absent(module, p, run_id)
    pod = dict((k, p[k]) for k in POD_OPTIONS)
    options = p[KIND_OPTIONS[p["kind"]]]
    if p["render_dir"]:
        _render(module, p, pod, options, run_id)
    _present(module, p, pod, options, run_id)


def _absent(module, p, run_id):
    api = k8s_api.connect(p)
    if module.check_mode:
        module.exit_json(changed=False, run_id=run_id, results=[], objects=[], leftover=[])
    leftover = k8s_api.cleanup(api, p["namespace"], run_id, timeout_s=p["cleanup_timeout_s"])
    module.exit_json(changed=True, run_id=run_id, results=[], objects=[], leftover=leftover)


def _render(module, p, pod, options, run_id):
    if p["label_selector"] and not p["hosts"]:
        module.fail_json(msg="render mode needs hosts (it does not ask a cluster which nodes match label_selector)")
    launcher = "indexed" if p["launcher"] == "auto" else p["launcher"]
    plan = plan_of(p, p["hosts"], pod, options, run_id, launcher, k8s_run.ssh_keys)
    directory = os.path.join(p["render_dir"], statedir.check_name(run_id, "run_id"))
    files = k8s_run.render(plan, directory, write=not module.check_mode)
    out = dict(changed=not module.check_mode, run_id=run_id, results=[], files=files,
               objects=k8s_run.object_names(plan))
    if p["kind"] == NCCL_GANG:
        out["launcher"] = launcher
    module.exit_json(**out)


def _present(module, p, pod, options, run_id):
    api = k8s_api.connect(p)
    nodes = k8s_run.select_nodes(api, p["hosts"], p["label_selector"])
    launcher = p["launcher"]
    if p["kind"] == NCCL_GANG and launcher == "auto":
        launcher = k8s_run.choose_launcher(api)
    mpi_service = k8s_run.mpi_operator_service(api) if p["kind"] == NCCL_GANG and launcher == "mpijob" else None
    plan = plan_of(p, nodes, pod, options, run_id, launcher, k8s_run.ssh_keys, mpi_service=mpi_service)
    out = dict(run_id=run_id, objects=k8s_run.object_names(plan))
    if p["kind"] == NCCL_GANG:
        out["launcher"] = launcher
    timeout, warning = k8s_plan.check_timeout(plan, p["timeout_s"], p["active_deadline_s"] is not None)
    if warning:
        module.warn(warning)
    deadline = None
    if p["_task_timeout_s"]:
        deadline = STARTED + p["_task_timeout_s"] - k8s_run.reserve_s(p["cleanup_timeout_s"])
        worst = k8s_run.worst_case_s(plan, timeout, p["cleanup_timeout_s"])
        if worst > p["_task_timeout_s"]:
            module.warn("the task's time limit %d s is shorter than this plan's worst case %d s (%d step(s) of up to "
                        "%d s, cleanup %d s): the waits are cut so that the module ends, its objects removed, before "
                        "Ansible's limit" % (p["_task_timeout_s"], worst, len(plan["steps"]), timeout,
                                             p["cleanup_timeout_s"]))
    if module.check_mode:
        module.exit_json(changed=False, results=[], **out)
    graces = dict((name, p[name + "_grace_s"]) for name in ("sandbox", "mount", "podgroup", "quota", "admission"))
    records, leftover = k8s_run.execute(api, plan, timeout, p["cleanup_timeout_s"], p["unschedulable_grace_s"],
                                        p["image_pull_grace_s"], graces=graces, deadline=deadline)
    module.exit_json(changed=True, results=records, counts=results.count(records), leftover=leftover, **out)


def plan_of(p, nodes, pod, options, run_id, launcher, keys, mpi_service=None):
    """The plan of the module's parameters ``p`` over ``nodes`` with ``launcher`` (resolved); ``keys()`` makes the
    per-run ssh key pair an Indexed multi-node launch needs; ``mpi_service``: k8s_run.mpi_operator_service's."""
    multinode = p["kind"] == NCCL_GANG
    return k8s_plan.build(p["kind"], nodes, pod, run_id, options, rounds=p["rounds"],
                          launcher=launcher if multinode else "indexed",
                          ssh_keys=keys() if multinode and launcher == "indexed" else None, mpi_service=mpi_service)


def task_timeout_s(args, margin_s):
    """The ``timeout:`` of a task running this module with ``args`` (module_defaults included): the worst case of
    its plan - every launcher ``auto`` may pick - plus ``margin_s``. No cluster is asked: ``hosts`` bound the nodes
    (a ``label_selector`` only removes some)."""
    spec = argument_spec()
    aliases = dict((alias, name) for name, opt in spec.items() for alias in opt.get("aliases") or ())
    args = dict((aliases.get(name, name), value) for name, value in args.items())
    unknown = sorted(set(args) - set(spec))
    if unknown:
        raise k8s_api.K8sError("k8s_workload has no option %s" % ", ".join(unknown))
    p = dict((name, args.get(name, opt.get("default"))) for name, opt in spec.items())
    p["kind"] = k8s_plan.current_kind(p["kind"])[0]     # a former name: the task's module gives the warning
    pod = dict((k, p[k]) for k in POD_OPTIONS)
    options = p[KIND_OPTIONS[p["kind"]]]
    launchers = ["indexed", "mpijob", "volcano"] if p["kind"] == NCCL_GANG and p["launcher"] == "auto" \
        else [p["launcher"]]
    worst = 0
    for launcher in launchers:
        plan = plan_of(p, p["hosts"], pod, options, p["run_id"] or "r0", launcher,
                       lambda: {"id_ed25519": "", "id_ed25519.pub": ""})
        wait_s, _warning = k8s_plan.check_timeout(plan, p["timeout_s"], p["active_deadline_s"] is not None)
        worst = max(worst, k8s_run.worst_case_s(plan, wait_s, p["cleanup_timeout_s"]))
    return worst + int(margin_s)


if __name__ == "__main__":
    main()
