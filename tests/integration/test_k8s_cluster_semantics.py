# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Defects of issue 22 ("Kubernetes that works on a real cluster") that the fake API server's cluster semantics
(tests/k8s/fake_apiserver.py: TTL-after-finished, activeDeadlineSeconds, PodSecurity admission with the job
controller's FailedCreate, the log endpoint's 400 on multi-container pods, current NFD labels) now show against
today's collection code. Each is expected to fail (strict) until issue 22 fixes it; the fix flips it to a pass,
and then its mark goes."""

from __future__ import annotations

import threading
import time

import pytest

pytest.importorskip("kubernetes")
pytest.importorskip("kmock")

from ansible.module_utils.testing import patch_module_args  # noqa: E402
from ansible_collections.aifabric.acceptance.tests.k8s import fake_rdma_plugin as frp  # noqa: E402
from ansible_collections.aifabric.acceptance.tests.k8s.fake_apiserver import (  # noqa: E402
    NFD_CURRENT, fake_cluster, gpu_nodes)
from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules.module_harness import (  # noqa: E402
    Exit, patch_exits)

from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_plan  # noqa: E402
from ansible_collections.aifabric.acceptance.plugins.modules import k8s_device_plugin, k8s_preflight  # noqa: E402
from ansible_collections.aifabric.acceptance.plugins.modules import k8s_workload  # noqa: E402
from ansible_collections.aifabric.acceptance.tests.integration.test_k8s_device_plugin_lifecycle import (  # noqa: E402
    cx4_records)
from ansible_collections.aifabric.acceptance.tests.integration.test_k8s_workload_lifecycle import (  # noqa: E402
    IMAGE, NCCL_TEXT, pod_log)

NODES = ["gpu-node-01", "gpu-node-02"]


def call(module, args):
    with patch_module_args(args):
        with pytest.raises(Exit) as exc:
            module.main()
    return exc.value


def workload(fake, args):
    return call(k8s_workload, dict({"image": IMAGE, "kubeconfig": fake.kubeconfig, "unschedulable_grace_s": 0,
                                    "cleanup_timeout_s": 30, "timeout_s": 60}, **args))


def test_defect5_device_plugin_runs_on_nodes_with_current_nfd_labels(tmp_path, monkeypatch):
    patch_exits(monkeypatch)
    recs = dict((n, cx4_records(tmp_path, n)) for n in NODES)
    from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_device_plugin as dp
    devices = dp.devices_from_records([r for rs in recs.values() for r in rs])
    nodes = [frp.rdma_node(n, devices.get(n, []), labels=dict(NFD_CURRENT)) for n in NODES]
    with fake_cluster(tmp_path, nodes=nodes) as fake:
        frp.install(fake.server)
        res = call(k8s_device_plugin, {"kubeconfig": fake.kubeconfig, "verify_timeout_s": 5, "delete_timeout_s": 10,
                                       "probe_records": [r for rs in recs.values() for r in rs], "hosts": NODES})
        statuses = sorted((r["host"], r["status"]) for r in res.kwargs.get("results") or [])
        assert statuses == [(n, "pass") for n in NODES], [r.get("reason") for r in res.kwargs.get("results") or []]


def test_defect7_ttl_does_not_delete_results_before_they_are_read(tmp_path, monkeypatch):
    """Node 1's Job finishes first; the cluster's clock then passes the default 600 s TTL (not the 2400 s deadline)
    while node 2 still runs: node 1's Job must still be there (its TTL is never below the step's deadline), and
    both results are read. Driven by events, not by a fast clock: node 2 runs until node 1 is done and the clock
    has moved (a 600x clock made the deadline four wall seconds, which a loaded machine overran)."""
    patch_exits(monkeypatch)
    log = pod_log("all_reduce", NCCL_TEXT, tmp_path)
    seen = {}
    with fake_cluster(tmp_path) as fake:
        fake.server.script("succeed", node="gpu-node-01", log_file=log, run_ticks=2)
        slow = fake.server.script("hang", node="gpu-node-02", log_file=log)

        def on_node(node, phase):
            return [p for p in fake.server.pods() if (p.get("spec") or {}).get("nodeName") == node
                    and (phase is None or (p.get("status") or {}).get("phase") == phase)]

        def node_1_done_then_the_clock_moves():
            try:
                deadline = time.monotonic() + 120
                while not on_node("gpu-node-01", "Succeeded") and time.monotonic() < deadline:
                    time.sleep(0.05)
                seen["node 1 finished"] = bool(on_node("gpu-node-01", "Succeeded"))
                fake.server.advance_clock(900)
                fake.server.settle(5)               # the TTL controller's ticks
                seen["node 1 kept"] = bool(on_node("gpu-node-01", None))
            finally:
                slow.kind = "succeed"               # now node 2 finishes (whatever happened above: no wait to the end)

        mover = threading.Thread(target=node_1_done_then_the_clock_moves, daemon=True)
        mover.start()
        try:
            res = workload(fake, {"kind": "nccl_test", "hosts": NODES, "run_id": "ttl7", "gpus_per_pod": 2,
                                  "nccl_test": {"collectives": ["all_reduce"]}})
        finally:
            slow.kind = "succeed"
            mover.join(150)
        got = sorted((r["host"], r["check"], r["status"]) for r in res.kwargs["results"])
        reasons = [r.get("reason") for r in res.kwargs["results"]]
    assert seen == {"node 1 finished": True, "node 1 kept": True}, seen
    assert got == [(n, "nccl.all_reduce", "pass") for n in NODES], reasons


def test_defect8_active_deadline_covers_the_steps():
    plan = k8s_plan.build("nccl_test", ["gpu-node-01"], {"image": IMAGE}, "dl8",
                          options={"collectives": ["all_reduce", "all_gather", "reduce_scatter", "alltoall"]})
    import json
    for obj in k8s_plan.objects_of(plan):
        if obj["kind"] != "Job":
            continue
        command = obj["spec"]["template"]["spec"]["containers"][0]["command"]
        steps = json.loads(command[command.index("--spec") + 1])["steps"]
        assert obj["spec"]["activeDeadlineSeconds"] >= sum(s["timeout_s"] for s in steps), (
            obj["spec"]["activeDeadlineSeconds"], [s["timeout_s"] for s in steps])


def test_failed_create_fails_fast_with_the_admission_message(tmp_path, monkeypatch):
    patch_exits(monkeypatch)
    with fake_cluster(tmp_path) as fake:
        fake.server.namespace("psa", {"pod-security.kubernetes.io/enforce": "baseline"})
        res = workload(fake, {"kind": "gemm_bench", "hosts": NODES[:1], "run_id": "psa1", "namespace": "psa",
                              "timeout_s": 4})
        (record,) = res.kwargs["results"]
        assert record["status"] == "error"
        assert "violates PodSecurity" in record["reason"], record["reason"]


def test_preflight_reads_the_plugin_log_of_a_multi_container_pod(tmp_path, monkeypatch):
    from kubernetes import client
    patch_exits(monkeypatch)
    with fake_cluster(tmp_path, nodes=gpu_nodes(1)) as fake:
        fake.server.script("hang", pod="nvidia-device-plugin-daemonset-*", log="Starting Plugins.\n")
        client.CoreV1Api(fake.api).create_namespaced_pod("kube-system", {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "nvidia-device-plugin-daemonset-01", "labels": {"name": "nvidia-device-plugin-ds"}},
            "spec": {"nodeName": "gpu-node-01", "containers": [
                {"name": "nvidia-device-plugin-ctr", "image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"},
                {"name": "config-manager", "image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"}]}})
        fake.server.settle(5)
        res = call(k8s_preflight, {"kubeconfig": fake.kubeconfig, "hosts": ["gpu-node-01"], "expect": {"gpu_count": 8}})
    (plugin,) = [r for r in res.kwargs["results"] if r["check"] == "k8s.nvidia_device_plugin"]
    assert "a container name must be specified" not in (plugin.get("reason") or ""), plugin
    assert plugin["status"] == "pass", plugin


def test_transient_image_pull_error_gets_a_grace_period(tmp_path, monkeypatch):
    patch_exits(monkeypatch)
    log = pod_log("all_reduce", NCCL_TEXT, tmp_path)
    with fake_cluster(tmp_path) as fake:
        fake.server.script("image_pull_transient", pull_ticks=25, log_file=log)     # ~0.5 s of ErrImagePull
        res = workload(fake, {"kind": "nccl_test", "hosts": NODES[:1], "run_id": "pull1", "gpus_per_pod": 2,
                              "nccl_test": {"collectives": ["all_reduce"]}})
        (record,) = res.kwargs["results"]
        assert record["status"] == "pass", record.get("reason")


def test_device_plugin_verify_waits_for_the_new_allocatable(tmp_path, monkeypatch):
    from ansible_collections.aifabric.acceptance.tests.integration.test_k8s_device_plugin_lifecycle import fleet_nodes
    patch_exits(monkeypatch)
    recs = {"gpu-node-01": cx4_records(tmp_path, "gpu-node-01")}
    # the kubelet's node-status update lags the plugin's registration by 50 ticks (~1 s)
    with fake_cluster(tmp_path, nodes=fleet_nodes(recs), node_status_delay_ticks=50) as fake:
        frp.install(fake.server)
        args = {"kubeconfig": fake.kubeconfig, "verify_timeout_s": 10, "delete_timeout_s": 10,
                "probe_records": recs["gpu-node-01"], "hosts": ["gpu-node-01"]}
        first = call(k8s_device_plugin, args)
        assert first.kwargs["results"][0]["metrics"]["allocatable"] == 1000, first.kwargs["results"]
        res = call(k8s_device_plugin, dict(args, rdma_hca_max=63))
        (record,) = res.kwargs["results"]
        assert (record["status"], record["metrics"]["allocatable"]) == ("pass", 63), record
