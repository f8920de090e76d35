# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The preflight judges on node, pod and NetworkPolicy dicts. The node conditions are a real node's, transcribed
from the `kubectl describe node` output in kubernetes-sigs/dra-driver-nvidia-gpu#46 (type, status, reason, message
as printed); where a test breaks a node (NotReady, pressure, GPUs missing) it says so."""

from __future__ import annotations

import copy

from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_preflight as pf
from ansible_collections.aifabric.acceptance.plugins.module_utils import results

REAL_CONDITIONS = [
    {"type": "NetworkUnavailable", "status": "False", "reason": "CalicoIsUp", "message": "Calico is running on this node"},
    {"type": "MemoryPressure", "status": "False", "reason": "KubeletHasSufficientMemory",
     "message": "kubelet has sufficient memory available"},
    {"type": "DiskPressure", "status": "False", "reason": "KubeletHasNoDiskPressure",
     "message": "kubelet has no disk pressure"},
    {"type": "PIDPressure", "status": "False", "reason": "KubeletHasSufficientPID",
     "message": "kubelet has sufficient PID available"},
    {"type": "Ready", "status": "True", "reason": "KubeletReady",
     "message": "kubelet is posting ready status. AppArmor enabled"},
]


def node(name="gpu-node-01", gpus=8, alloc_gpus=None, rdma=1000, labels=None, conditions=None):
    alloc = {"cpu": "96", "memory": "1Ti"}
    cap = dict(alloc)
    if gpus is not None:
        cap["nvidia.com/gpu"] = str(gpus)
        alloc["nvidia.com/gpu"] = str(gpus if alloc_gpus is None else alloc_gpus)
    if rdma is not None:
        alloc["rdma/hca_shared_devices_a"] = str(rdma)
    lab = {"kubernetes.io/hostname": name, "nvidia.com/gpu.present": "true",
           "feature.node.kubernetes.io/custom-rdma.available": "true"}
    lab.update(labels or {})
    return {"metadata": {"name": name, "labels": lab}, "spec": {},
            "status": {"conditions": copy.deepcopy(REAL_CONDITIONS if conditions is None else conditions),
                       "capacity": cap, "allocatable": alloc}}


def by_check(records):
    return dict((r["check"], r) for r in records)


def test_healthy_real_node_passes_everything():
    recs = by_check(pf.node_records(node(), expect_gpus=8))
    assert {c: r["status"] for c, r in recs.items()} == {"k8s.node": "pass", "k8s.gpu": "pass", "k8s.rdma": "pass"}
    assert recs["k8s.node"]["facts"]["conditions"]["Ready"] == "True"
    for r in recs.values():
        assert results.validate(r) == []


def test_not_ready_and_pressure():
    cond = copy.deepcopy(REAL_CONDITIONS)
    cond[-1].update(status="False", reason="KubeletNotReady", message="container runtime network not ready")
    rec = by_check(pf.node_records(node(conditions=cond)))["k8s.node"]
    assert rec["status"] == "fail" and "KubeletNotReady" in rec["reason"] and "journalctl -u kubelet" in rec["reason"]
    cond = copy.deepcopy(REAL_CONDITIONS)
    cond[2].update(status="True", reason="KubeletHasDiskPressure", message="kubelet has disk pressure")
    rec = by_check(pf.node_records(node(conditions=cond)))["k8s.node"]
    assert rec["status"] == "warn" and "DiskPressure (kubelet has disk pressure)" in rec["reason"]
    assert by_check(pf.node_records(node(conditions=[])))["k8s.node"]["status"] == "error"


def test_gpu_capacity_vs_allocatable():
    rec = by_check(pf.node_records(node(alloc_gpus=7)))["k8s.gpu"]
    assert rec["status"] == "fail" and "allocatable 7 < capacity 8: 1 GPU(s) marked unhealthy" in rec["reason"]
    assert rec["metrics"] == {"gpu_capacity": 8, "gpu_allocatable": 7}
    rec = by_check(pf.node_records(node(gpus=None)))["k8s.gpu"]
    assert rec["status"] == "fail" and "device plugin is not running" in rec["reason"]
    rec = by_check(pf.node_records(node(gpus=4), expect_gpus=8))["k8s.gpu"]
    assert rec["status"] == "fail" and "expected 8" in rec["reason"]
    cpu = node(gpus=None, rdma=None, labels={"nvidia.com/gpu.present": "false"})
    recs = by_check(pf.node_records(cpu))
    assert recs["k8s.gpu"]["status"] == "skip" and recs["k8s.rdma"]["status"] == "skip"


def test_gpu_node_without_rdma():
    rec = by_check(pf.node_records(node(rdma=None)))["k8s.rdma"]
    assert rec["status"] == "fail" and "no rdma/* resource" in rec["reason"]
    assert "aifabric.acceptance.rdma_device_plugin" in rec["reason"]
    rec = by_check(pf.node_records(node(rdma=None, labels={"feature.node.kubernetes.io/custom-rdma.available": ""})))
    assert "no NFD RDMA label (feature.node.kubernetes.io/rdma.available or " in rec["k8s.rdma"]["reason"]
    assert "so the device plugin is not scheduled here" in rec["k8s.rdma"]["reason"]
    # NFD >= v0.14 labels the node rdma.available (no custom- prefix): the plugin's placement, not NFD, is at fault
    for label in ("feature.node.kubernetes.io/rdma.available", "feature.node.kubernetes.io/pci-15b3.present"):
        rec = by_check(pf.node_records(node(rdma=None, labels={"feature.node.kubernetes.io/custom-rdma.available": "",
                                                               label: "true"})))["k8s.rdma"]
        assert "not scheduled here" not in rec["reason"] and "rdma_device_plugin" in rec["reason"], label
        assert rec["facts"]["nfd_labels"][label] == "true"


def test_plugin_config_json_is_not_a_log_problem():
    """The plugin prints its config at start-up; "failOnInitError" matches 'fail' but is a setting."""
    text = ('I1129 11:18:42.708036       1 main.go:353] \nRunning with config:\n{\n  "version": "v1",\n'
            '  "flags": {\n    "failOnInitError": true,\n    "plugin": {\n      "deviceListStrategy": [\n'
            '        "envvar"\n      ]\n    }\n  }\n}\n'
            "I1129 11:18:42.712265       1 main.go:381] No devices found. Waiting indefinitely.\n")
    assert pf.log_problems(text) == ["I1129 11:18:42.712265       1 main.go:381] No devices found. Waiting indefinitely."]
    # a log cut by tailLines inside the JSON: its member lines are still no problems
    assert pf.log_problems('    "failOnInitError": false,\n    "mofedEnabled": false\n') == []


# the health checker's Info lines (NVIDIA/k8s-device-plugin internal/rm/health.go, klog.Infof format strings; the
# event is go-nvml's EventData printed with %+v): EventType 1 is nvmlEventTypeSingleBitEccError, 8 XidCriticalError
ECC_SBE = ("I1206 10:41:07.118262       1 health.go:134] Skipping non-nvmlEventTypeXidCriticalError event: "
           "{Device:{Handle:0x7f3c5c0e2f38} EventType:1 EventData:0 GpuInstanceId:4294967295 "
           "ComputeInstanceId:4294967295}")
IGNORED_XID = ("I1206 10:42:11.502913       1 health.go:139] Skipping event {Device:{Handle:0x7f3c5c0e2f38} "
               "EventType:8 EventData:13 GpuInstanceId:4294967295 ComputeInstanceId:4294967295}")
XID_79 = ("I1206 10:43:55.004417       1 health.go:169] XidCriticalError: Xid=79 on "
          "Device=GPU-5a2e4e0b-2d1c-7b5e-aa0c-0b3e0ee1d5d1; marking device as unhealthy.")


def test_an_info_line_naming_an_event_type_is_no_problem():
    """A healthy plugin after an ECC single-bit event, or an Xid it ignores, logs an Info line with "Error" in the
    event type's name: no warning. An Info line that marks a device unhealthy, and any W/E line, is one."""
    assert pf.log_problems(ECC_SBE + "\n" + IGNORED_XID + "\n") == []
    assert pf.log_problems(ECC_SBE + "\n" + XID_79 + "\n") == [XID_79]
    warning = ("W1206 10:44:00.000001       1 health.go:82] Could not determine device placement for 0: x; "
               "Marking it unhealthy.")
    assert pf.log_problems(warning) == [warning]
    plugin = {"metadata": {"name": "nvidia-device-plugin-daemonset-j76n5", "namespace": "kube-system",
                           "labels": {"name": "nvidia-device-plugin-ds"}},
              "status": {"phase": "Running", "containerStatuses": [{"name": "c", "ready": True}]}}
    assert pf.nvidia_plugin_records(node(), plugin, ECC_SBE)[0]["status"] == "pass"


def test_plugin_container_is_named_in_multi_container_pods():
    def p(*containers):
        return {"spec": {"containers": [dict(c) for c in containers]}}
    helm = p({"name": "nvidia-device-plugin-sidecar", "command": ["config-manager"]},
             {"name": "nvidia-device-plugin-ctr", "command": ["nvidia-device-plugin"]})
    assert pf.plugin_container(helm) == "nvidia-device-plugin-ctr"
    assert pf.plugin_container(p({"name": "istio-proxy"}, {"name": "nvidia-device-plugin"})) == "nvidia-device-plugin"
    assert pf.plugin_container(p({"name": "linkerd-proxy"}, {"name": "plugin", "command": ["/usr/bin/nvidia-device-plugin"]})) \
        == "plugin"
    assert pf.plugin_container(p({"name": "istio-proxy"}, {"name": "gpu"})) == "gpu"
    assert pf.plugin_container(p({"name": "only"})) == "only"
    assert pf.plugin_container({"spec": {}}) is None
    rec = by_check(pf.node_records(node(rdma=0)))["k8s.rdma"]
    assert rec["status"] == "fail" and "rdma/hca_shared_devices_a at 0" in rec["reason"]


def pod(name, env=None, labels=None, phase="Running", scheduled=None):
    status = {"phase": phase}
    if scheduled is not None:
        status["conditions"] = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                                 "message": scheduled}]
    return {"metadata": {"name": name, "labels": dict({"job": "llm"}, **(labels or {}))},
            "spec": {"containers": [{"name": "main", "env": [{"name": k, "value": v} for k, v in (env or {}).items()]
                                     + [{"name": "HOME", "value": "/root"}]}]},
            "status": status}


def test_env_drift_is_named_per_variable():
    same = {"NCCL_IB_HCA": "mlx5_0,mlx5_1", "NCCL_SOCKET_IFNAME": "eth0"}
    pods = [pod("w-0", same), pod("w-1", same), pod("w-2", dict(same, NCCL_IB_HCA="mlx5_0"))]
    (rec,) = pf.env_drift_records("train", "job=llm", pods)
    assert rec["status"] == "warn" and rec["host"] == "namespace/train"
    assert "NCCL_IB_HCA: w-0=mlx5_0,mlx5_1, w-1=mlx5_0,mlx5_1, w-2=mlx5_0" in rec["reason"]
    assert list(rec["facts"]["drift"]) == ["NCCL_IB_HCA"]
    (rec,) = pf.env_drift_records("train", "job=llm", pods[:2])
    assert rec["status"] == "pass" and rec["facts"]["env"] == same
    assert pf.env_drift_records("train", "job=llm", [])[0]["status"] == "skip"


def test_pending_pods_with_the_schedulers_message():
    msg = ("0/4 nodes are available: 4 Insufficient nvidia.com/gpu. preemption: 0/4 nodes are available: "
           "4 No preemption victims found for incoming pod.")
    recs = pf.pending_records("train", [pod("w-0"), pod("w-1", phase="Pending", scheduled=msg)])
    assert [(r["target"], r["status"]) for r in recs] == [("w-1", "fail")]
    assert "4 Insufficient nvidia.com/gpu" in recs[0]["reason"] and "lower the request" in recs[0]["reason"]


def policy(name, spec):
    return {"metadata": {"name": name}, "spec": spec}


def test_network_policies_that_block_nccl():
    pods = [pod("w-0"), pod("w-1")]
    deny = policy("default-deny", {"podSelector": {}, "policyTypes": ["Ingress"]})
    allow = policy("allow-job", {"podSelector": {"matchLabels": {"job": "llm"}},
                                 "ingress": [{"from": [{"podSelector": {"matchLabels": {"job": "llm"}}}]}]})
    ports = policy("only-29500", {"podSelector": {"matchLabels": {"job": "llm"}}, "policyTypes": ["Ingress"],
                                  "ingress": [{"from": [{"podSelector": {}}], "ports": [{"port": 29500}]}]})
    other = policy("web", {"podSelector": {"matchLabels": {"app": "web"}}, "policyTypes": ["Ingress"]})
    found = pf.network_policy_records("train", "job=llm", pods, [deny, allow, ports, other])
    recs = dict((r["target"], r["status"]) for r in found)
    assert recs == {"default-deny": "fail", "allow-job": "pass", "only-29500": "fail"}
    egress = policy("egress-dns-only", {"podSelector": {}, "policyTypes": ["Egress"],
                                        "egress": [{"to": [{"namespaceSelector": {}}], "ports": [{"port": 53}]}]})
    (rec,) = pf.network_policy_records("train", "job=llm", pods, [egress])
    assert rec["status"] == "fail" and "restricts Egress" in rec["reason"]
    same_ns = policy("same-ns", {"podSelector": {}, "ingress": [{"from": [{"namespaceSelector": {
        "matchLabels": {"kubernetes.io/metadata.name": "train"}}}]}]})
    assert pf.network_policy_records("train", "job=llm", pods, [same_ns])[0]["status"] == "pass"


_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=6),
                       lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                                   max_size=3), max_leaves=10)


_obj = st.fixed_dictionaries({}, optional={
    "metadata": _values | st.fixed_dictionaries({}, optional={"name": _values, "labels": _values}),
    "spec": _values | st.fixed_dictionaries({}, optional={
        "containers": _values | st.lists(st.fixed_dictionaries({}, optional={"env": _values | st.lists(
            st.fixed_dictionaries({}, optional={"name": _values, "value": _values, "valueFrom": _values}))})),
        "podSelector": _values, "policyTypes": _values, "ingress": _values, "egress": _values,
        "unschedulable": _values}),
    "status": _values | st.fixed_dictionaries({}, optional={
        "conditions": _values | st.lists(st.fixed_dictionaries({}, optional={
            "type": st.sampled_from(["Ready", "PodScheduled", "DiskPressure"]) | _values, "status": _values,
            "message": _values})),
        "capacity": _values, "allocatable": _values, "phase": st.sampled_from(["Pending", "Running"]) | _values,
        "containerStatuses": _values, "nodeInfo": _values})})


@settings(max_examples=300, deadline=None)
@given(_obj)
def test_judges_never_raise_on_odd_objects(obj):
    for rec in pf.node_records(obj):
        assert results.validate(rec) == []
    pf.pending_records("ns", [obj])
    pf.network_policy_records("ns", "a=b", [obj], [obj])
    pf.env_drift_records("ns", "a=b", [obj, obj])
    pf.is_nvidia_plugin_pod(obj)
    pf.is_gpu_node(obj)
    for rec in pf.nvidia_plugin_records(obj, obj, "E0101 x\nok"):
        assert results.validate(rec) == []


def test_nvidia_device_plugin_from_its_real_log():
    import os
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "..", "..", "..", "k8s", "fixtures", "nvidia_device_plugin", "nvml-not-loaded.log")
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    plugin = {"metadata": {"name": "nvidia-device-plugin-daemonset-j76n5", "namespace": "kube-system",
                           "labels": {"name": "nvidia-device-plugin-ds"}},
              "status": {"phase": "Running", "containerStatuses": [{"name": "c", "ready": True}]}}
    assert pf.is_nvidia_plugin_pod(plugin) and pf.is_gpu_node(node())
    (rec,) = pf.nvidia_plugin_records(node(), plugin, text)
    assert rec["status"] == "warn"
    assert rec["facts"]["log_problems"] == ["2022/05/13 23:09:23 Failed to initialize NVML: could not load NVML library."]
    assert pf.nvidia_plugin_records(node(), plugin, "")[0]["status"] == "pass"
    assert pf.nvidia_plugin_records(node(), None)[0]["status"] == "fail"
    crash = copy.deepcopy(plugin)
    crash["status"]["containerStatuses"] = [{"name": "c", "ready": False,
                                             "state": {"waiting": {"reason": "CrashLoopBackOff"}}}]
    (rec,) = pf.nvidia_plugin_records(node(), crash, text)
    assert rec["status"] == "fail" and "not ready (CrashLoopBackOff)" in rec["reason"] and "NVML" in rec["reason"]
