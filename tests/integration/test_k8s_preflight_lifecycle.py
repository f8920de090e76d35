# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The k8s_preflight module against the fake API server over real HTTP: a 4-node fleet where gpu-node-02 is
NotReady, gpu-node-03 has a GPU marked unhealthy and gpu-node-04 has no RDMA resource; a training job with one pod
that cannot schedule, NCCL env drift and a default-deny NetworkPolicy. Exactly those nodes and findings fail. Node
conditions are a real node's (test_k8s_preflight.REAL_CONDITIONS); the pending pod's message is the fake scheduler's
(the scheduler's own format)."""

from __future__ import annotations

import copy
import os

import pytest

pytest.importorskip("kubernetes")
pytest.importorskip("kmock")

from ansible.module_utils.testing import patch_module_args  # noqa: E402
from ansible_collections.aifabric.acceptance.tests.k8s.fake_apiserver import fake_cluster, gpu_nodes  # noqa: E402
from ansible_collections.aifabric.acceptance.tests.unit.plugins.module_utils.test_k8s_preflight import (  # noqa: E402
    REAL_CONDITIONS)
from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules.module_harness import (  # noqa: E402
    Exit, patch_exits)

from ansible_collections.aifabric.acceptance.plugins.module_utils import results  # noqa: E402
from ansible_collections.aifabric.acceptance.plugins.modules import k8s_preflight  # noqa: E402

NVML_LOG = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "k8s", "fixtures",
                        "nvidia_device_plugin", "nvml-not-loaded.log")
from ansible_collections.aifabric.acceptance.tests.integration.test_k8s_device_plugin_lifecycle import (  # noqa: E402
    ROOT, _rules)
from ansible_collections.aifabric.acceptance.tests.integration.test_k8s_workload_lifecycle import (  # noqa: E402
    _request_permission)


def test_preflight_whole_fleet_and_training_namespace(tmp_path, monkeypatch):
    from kubernetes import client
    patch_exits(monkeypatch)
    nodes = gpu_nodes(4, extra={"rdma/hca_shared_devices_a": "1000"})
    del nodes[3]["allocatable"]["rdma/hca_shared_devices_a"]
    with fake_cluster(tmp_path, nodes=nodes) as fake:
        core = client.CoreV1Api(fake.api)
        for n in nodes:
            cond = copy.deepcopy(REAL_CONDITIONS)
            status = {"conditions": cond}
            if n["name"] == "gpu-node-02":
                cond[-1].update(status="False", reason="KubeletNotReady",
                                message="container runtime network not ready")
            if n["name"] == "gpu-node-03":       # one GPU marked unhealthy by the device plugin
                status["allocatable"] = dict(n["allocatable"], **{"nvidia.com/gpu": "7"})
            core.patch_node_status(n["name"], {"status": status})
        for i, hca in enumerate(["mlx5_0,mlx5_1", "mlx5_0,mlx5_1", "mlx5_0"]):
            core.create_namespaced_pod("default", {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "llm-worker-%d" % i, "labels": {"job": "llm"}},
                "spec": {"containers": [{"name": "main", "image": "train:1", "env": [
                    {"name": "NCCL_IB_HCA", "value": hca}, {"name": "NCCL_DEBUG", "value": "INFO"}],
                    "resources": {"limits": {"nvidia.com/gpu": "16" if i == 2 else "8"}}}]}})
        client.CustomObjectsApi(fake.api).create_namespaced_custom_object(
            "networking.k8s.io", "v1", "default", "networkpolicies", {
                "apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                "metadata": {"name": "default-deny"}, "spec": {"podSelector": {}, "policyTypes": ["Ingress"]}})
        # the NVIDIA device plugin (static manifest's labels, kube-system): healthy on 01 and 04, on 03 with the real
        # log of a plugin that cannot load NVML, none on 02
        fake.server.script("hang", pod="nvidia-device-plugin-daemonset-*")
        for n in ("gpu-node-01", "gpu-node-03", "gpu-node-04"):
            core.create_namespaced_pod("kube-system", {
                "apiVersion": "v1", "kind": "Pod",
                "metadata": {"name": "nvidia-device-plugin-daemonset-%s" % n[-2:],
                             "labels": {"name": "nvidia-device-plugin-ds"}},
                "spec": {"nodeName": n, "containers": [
                    {"name": "nvidia-device-plugin-ctr", "image": "nvcr.io/nvidia/k8s-device-plugin:v0.14.3"}]}})
        fake.server.settle(5)
        with open(NVML_LOG, "rb") as handle:
            fake.server.controller.logs[("kube-system", "nvidia-device-plugin-daemonset-03",
                                         "nvidia-device-plugin-ctr")] = handle.read()
        args = {"kubeconfig": fake.kubeconfig, "hosts": [n["name"] for n in nodes], "namespace": "default",
                "label_selector": "job=llm", "expect": {"gpu_count": 8}}
        first = len(fake.server.requests)
        with patch_module_args(args):
            with pytest.raises(Exit) as exc:
                k8s_preflight.main()
        used = set(filter(None, (_request_permission(m, p, q) for m, p, q in fake.server.requests[first:])))
    # the shipped read-only RBAC allows every call and nothing more
    allowed = _rules(os.path.join(ROOT, "extras", "k8s", "rbac-preflight.yml"))
    assert used - allowed == set() and allowed - used == set(), (used, allowed)
    res = exc.value
    assert not res.failed, res.kwargs
    assert res.kwargs["changed"] is False
    records = res.kwargs["results"]
    for r in records:
        assert results.validate(r) == []
    bad = sorted((r["host"], r["check"], r["target"], r["status"]) for r in records if r["status"] != "pass")
    assert bad == [
        ("gpu-node-02", "k8s.node", None, "fail"),
        ("gpu-node-02", "k8s.nvidia_device_plugin", None, "fail"),
        ("gpu-node-03", "k8s.gpu", None, "fail"),
        ("gpu-node-03", "k8s.nvidia_device_plugin", None, "warn"),
        ("gpu-node-04", "k8s.rdma", None, "fail"),
        ("namespace/default", "k8s.nccl_env", "job=llm", "warn"),
        ("namespace/default", "k8s.network_policy", "default-deny", "fail"),
        ("namespace/default", "k8s.pending_pod", "llm-worker-2", "fail"),
    ], bad
    why = dict(((r["host"], r["check"]), r["reason"]) for r in records)
    assert "KubeletNotReady" in why[("gpu-node-02", "k8s.node")]
    assert "allocatable 7 < capacity 8" in why[("gpu-node-03", "k8s.gpu")]
    assert "Insufficient nvidia.com/gpu" in why[("namespace/default", "k8s.pending_pod")]
    assert "NCCL_IB_HCA" in why[("namespace/default", "k8s.nccl_env")]
    assert "NCCL_DEBUG" not in why[("namespace/default", "k8s.nccl_env")]
    assert "Failed to initialize NVML: could not load NVML library." in why[("gpu-node-03", "k8s.nvidia_device_plugin")]
    assert "no NVIDIA device plugin pod" in why[("gpu-node-02", "k8s.nvidia_device_plugin")]


def test_shipped_preflight_rbac_validates():
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    import yaml
    with open(os.path.join(ROOT, "extras", "k8s", "rbac-preflight.yml")) as handle:
        items = yaml.safe_load(handle)["items"]
    for obj in items:
        for version in ("1.28", "1.37"):
            kubernetes_validate.validate(copy.deepcopy(obj), version, strict=True)
