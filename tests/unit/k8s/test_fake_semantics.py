# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fake API server's cluster semantics (tests/k8s/fake_apiserver.py), each against the official
``kubernetes`` client over real HTTP: TTL-after-finished, activeDeadlineSeconds, deletion propagation,
log reads, PodSecurity and ResourceQuota admission with the job controller's FailedCreate, the kubelet
outcomes ContainerCreating / transient ErrImagePull / eviction, the node-status delay and NFD labels."""

from __future__ import annotations

import re
import time

import pytest

pytest.importorskip("kubernetes")
pytest.importorskip("kmock")

from kubernetes import client  # noqa: E402
from kubernetes.client.rest import ApiException  # noqa: E402

from ansible_collections.aifabric.acceptance.tests.k8s.fake_apiserver import (  # noqa: E402
    NAME_ALPHABET, NFD_CURRENT, NODES, fake_cluster, gpu_nodes)

NS = "default"


@pytest.fixture
def fake_k8s(tmp_path):
    with fake_cluster(tmp_path) as fake:
        yield fake


@pytest.fixture
def graceful_k8s(tmp_path):
    """Pods linger 5 ticks with a deletionTimestamp after their deletion (their grace period)."""
    with fake_cluster(tmp_path, pod_grace_ticks=5) as fake:
        yield fake


def wait(predicate, timeout=10.0, what="condition"):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.02)
    raise AssertionError("timed out waiting for %s" % what)


def job(name, ttl=None, deadline=None, spec=None, containers=None):
    pspec = dict({"restartPolicy": "Never", "containers": containers or [{"name": "main", "image": "busybox"}]},
                 **(spec or {}))
    body = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"backoffLimit": 0, "template": {"spec": pspec}}}
    if ttl is not None:
        body["spec"]["ttlSecondsAfterFinished"] = ttl
    if deadline is not None:
        body["spec"]["activeDeadlineSeconds"] = deadline
    return body


def pod(name, containers=("main",), restart="Never", **spec):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": dict({"restartPolicy": restart,
                          "containers": [{"name": c, "image": "busybox"} for c in containers]}, **spec)}


def job_pods(fake, name):
    return fake.server.pods("job-name=%s" % name)


def job_status(fake, name):
    return client.BatchV1Api(fake.api).read_namespaced_job(name, NS).status or client.V1JobStatus()


def api_error(call):
    with pytest.raises(ApiException) as info:
        call()
    return info.value


def read_log(fake, name, **kwargs):
    return client.CoreV1Api(fake.api).read_namespaced_pod_log(name, NS, _preload_content=False, **kwargs).data


def phase(fake, name):
    found = [p for p in fake.server.pods() if p["metadata"]["name"] == name]
    return (found[0].get("status") or {}).get("phase") if found else None


# --- TTL-after-finished, activeDeadlineSeconds, propagation
def test_ttl_after_finished_deletes_job_pods_and_logs(fake_k8s):
    fake_k8s.server.script("succeed", job="ttl", log="result 42\n")
    client.BatchV1Api(fake_k8s.api).create_namespaced_job(NS, job("ttl", ttl=600))
    wait(lambda: job_status(fake_k8s, "ttl").succeeded == 1, what="the Job to complete")
    name = job_pods(fake_k8s, "ttl")[0]["metadata"]["name"]
    assert read_log(fake_k8s, name) == b"result 42\n"
    fake_k8s.server.settle(3)
    assert job_pods(fake_k8s, "ttl"), "the TTL has not passed yet"
    fake_k8s.server.advance_clock(600)
    wait(lambda: not fake_k8s.leftovers(), what="the TTL controller's deletion")
    assert api_error(lambda: read_log(fake_k8s, name)).status == 404


def test_active_deadline_deletes_active_pods_gracefully(graceful_k8s):
    fake = graceful_k8s
    fake.server.script("hang", job="dl", log="step 1 done\n")
    client.BatchV1Api(fake.api).create_namespaced_job(NS, job("dl", deadline=3600))
    name = wait(lambda: [p["metadata"]["name"] for p in job_pods(fake, "dl")
                         if (p.get("status") or {}).get("phase") == "Running"], what="a running pod")[0]
    fake.server.advance_clock(3600)
    cond = wait(lambda: job_status(fake, "dl").conditions, what="the Failed condition")[0]
    assert (cond.type, cond.reason) == ("Failed", "DeadlineExceeded")
    assert cond.message == "Job was active longer than specified deadline"
    terminating = job_pods(fake, "dl")
    assert terminating and terminating[0]["metadata"].get("deletionTimestamp"), "SIGTERM first: a grace period"
    wait(lambda: not job_pods(fake, "dl"), what="the pod to be gone")
    assert api_error(lambda: read_log(fake, name)).status == 404


def test_delete_job_background_collects_pods(fake_k8s):
    fake_k8s.server.script("hang", job="bg")
    client.BatchV1Api(fake_k8s.api).create_namespaced_job(NS, job("bg"))
    wait(lambda: job_pods(fake_k8s, "bg"), what="the pod")
    client.BatchV1Api(fake_k8s.api).delete_namespaced_job("bg", NS, propagation_policy="Background")
    wait(lambda: not fake_k8s.leftovers(), what="the GC")


def test_delete_job_without_policy_orphans_pods(fake_k8s):
    """batch/v1 Jobs default to orphanDependents (pkg/registry/batch/job/strategy.go)."""
    fake_k8s.server.script("hang", job="orph")
    client.BatchV1Api(fake_k8s.api).create_namespaced_job(NS, job("orph"))
    wait(lambda: job_pods(fake_k8s, "orph"), what="the pod")
    client.BatchV1Api(fake_k8s.api).delete_namespaced_job("orph", NS)
    fake_k8s.server.settle(5)
    left = job_pods(fake_k8s, "orph")
    assert len(left) == 1 and not left[0]["metadata"].get("ownerReferences")
    assert [x.split("/")[0] for x in fake_k8s.leftovers()] == ["Pod"]


def test_delete_job_foreground_waits_for_its_pods(graceful_k8s):
    fake = graceful_k8s
    fake.server.script("hang", job="fg")
    client.BatchV1Api(fake.api).create_namespaced_job(NS, job("fg"))
    wait(lambda: job_pods(fake, "fg"), what="the pod")
    client.BatchV1Api(fake.api).delete_namespaced_job("fg", NS, propagation_policy="Foreground")
    fake.server.settle(2)
    owner = client.BatchV1Api(fake.api).read_namespaced_job("fg", NS)
    assert owner.metadata.deletion_timestamp and "foregroundDeletion" in owner.metadata.finalizers
    assert job_pods(fake, "fg")[0]["metadata"].get("deletionTimestamp")
    wait(lambda: not fake.leftovers(), what="the pods, then the Job")


# --- log reads
def test_log_multi_container_needs_a_container_name(fake_k8s):
    fake_k8s.server.script("hang", pod="two", log="x\n")
    client.CoreV1Api(fake_k8s.api).create_namespaced_pod(NS, pod("two", containers=("main", "sidecar")))
    wait(lambda: phase(fake_k8s, "two") == "Running", what="Running")
    err = api_error(lambda: read_log(fake_k8s, "two"))
    assert err.status == 400
    assert "a container name must be specified for pod two, choose one of: [main sidecar]" in err.body
    assert read_log(fake_k8s, "two", container="sidecar") == b""
    err = api_error(lambda: read_log(fake_k8s, "two", container="nope"))
    assert err.status == 400 and "container nope is not valid for pod two" in err.body


def test_log_previous(fake_k8s):
    fake_k8s.server.script("crash_loop", pod="crashy", log="boom\n")
    fake_k8s.server.script("succeed", pod="fine", log="ok\n")
    core = client.CoreV1Api(fake_k8s.api)
    core.create_namespaced_pod(NS, pod("crashy", restart="Always"))
    core.create_namespaced_pod(NS, pod("fine"))
    wait(lambda: phase(fake_k8s, "fine") == "Succeeded", what="Succeeded")
    wait(lambda: any(((s.get("lastState") or {}).get("terminated")) for p in fake_k8s.server.pods()
                     if p["metadata"]["name"] == "crashy" for s in p["status"].get("containerStatuses") or []),
         what="a restart")
    assert read_log(fake_k8s, "crashy", previous=True) == b"boom\n"
    err = api_error(lambda: read_log(fake_k8s, "fine", previous=True))
    assert err.status == 400 and 'previous terminated container \\"main\\" in pod \\"fine\\" not found' in err.body
    core.delete_namespaced_pod("fine", NS)
    assert api_error(lambda: read_log(fake_k8s, "fine")).status == 404


# --- admission
def test_pod_security_baseline_rejects_host_network_and_ipc_lock(fake_k8s):
    fake_k8s.server.namespace("psa", {"pod-security.kubernetes.io/enforce": "baseline"})
    body = pod("rdma", hostNetwork=True)
    body["spec"]["containers"][0]["securityContext"] = {"capabilities": {"add": ["IPC_LOCK"]}}
    err = api_error(lambda: client.CoreV1Api(fake_k8s.api).create_namespaced_pod("psa", body))
    assert err.status == 403
    assert ('pods \\"rdma\\" is forbidden: violates PodSecurity \\"baseline:latest\\": host namespaces '
            '(hostNetwork=true), non-default capabilities (container \\"main\\" must not include \\"IPC_LOCK\\" in '
            'securityContext.capabilities.add)') in err.body
    client.CoreV1Api(fake_k8s.api).create_namespaced_pod("psa", pod("plain"))   # baseline admits a plain pod


def test_pod_security_restricted_and_privileged(fake_k8s):
    fake_k8s.server.namespace("strict", {"pod-security.kubernetes.io/enforce": "restricted"})
    fake_k8s.server.namespace("open", {"pod-security.kubernetes.io/enforce": "privileged"})
    err = api_error(lambda: client.CoreV1Api(fake_k8s.api).create_namespaced_pod("strict", pod("plain")))
    assert err.status == 403 and "allowPrivilegeEscalation != false" in err.body and "runAsNonRoot != true" in err.body
    body = pod("host", hostNetwork=True)
    client.CoreV1Api(fake_k8s.api).create_namespaced_pod("open", body)


def test_resource_quota_rejects_pods_without_requests(fake_k8s):
    fake_k8s.server.quota(NS, {"requests.cpu": "64", "requests.memory": "256Gi"})
    core = client.CoreV1Api(fake_k8s.api)
    err = api_error(lambda: core.create_namespaced_pod(NS, pod("bare")))
    assert err.status == 403
    assert ('pods \\"bare\\" is forbidden: failed quota: compute-resources: must specify requests.cpu for: main; '
            'requests.memory for: main') in err.body
    body = pod("sized")
    body["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "1", "memory": "1Gi"}}
    core.create_namespaced_pod(NS, body)      # requests default to limits


def test_job_pods_rejected_give_failed_create_event(fake_k8s):
    fake_k8s.server.namespace("psa", {"pod-security.kubernetes.io/enforce": "baseline"})
    client.BatchV1Api(fake_k8s.api).create_namespaced_job("psa", job("hostnet", spec={"hostNetwork": True}))
    events = wait(lambda: [e for e in client.CoreV1Api(fake_k8s.api).list_namespaced_event("psa").items
                           if e.reason == "FailedCreate"], what="FailedCreate")
    assert events[0].type == "Warning" and events[0].involved_object.kind == "Job"
    assert events[0].involved_object.name == "hostnet"
    # validating admission names the pod with its generated name (<job>-<5 of NAME_ALPHABET>), not generateName
    assert re.match(r'Error creating: pods "hostnet-[%s]{5}" is forbidden: violates PodSecurity "baseline:latest": '
                    r'host namespaces \(hostNetwork=true\)$' % NAME_ALPHABET, events[0].message), events[0].message
    fake_k8s.server.settle(3)
    assert not fake_k8s.server.pods() and len(events) == 1


def test_quota_refusal_names_init_containers_and_the_indexed_pod(fake_k8s):
    """The pod evaluator's text (pkg/quota/v1/evaluator/core/pods.go): resources sorted, each with its containers
    (init containers too) sorted; an Indexed Job's refused pod named <job>-<index>-<suffix>."""
    fake_k8s.server.quota(NS, {"requests.cpu": "64", "limits.memory": "256Gi", "pods": "10"})
    body = job("idx", containers=[{"name": "main", "image": "busybox", "resources": {"requests": {"cpu": "1"}}},
                                  {"name": "side", "image": "busybox"}])
    body["spec"].update(completionMode="Indexed", completions=1, parallelism=1)
    body["spec"]["template"]["spec"]["initContainers"] = [{"name": "init", "image": "busybox"}]
    client.BatchV1Api(fake_k8s.api).create_namespaced_job(NS, body)
    events = wait(lambda: [e for e in client.CoreV1Api(fake_k8s.api).list_namespaced_event(NS).items
                           if e.reason == "FailedCreate"], what="FailedCreate")
    assert re.match(r'Error creating: pods "idx-0-[%s]{5}" is forbidden: failed quota: compute-resources: must '
                    r'specify limits.memory for: init,main,side; requests.cpu for: init,side$' % NAME_ALPHABET,
                    events[0].message), events[0].message


# --- kubelet outcomes
def test_container_creating_never_ends(fake_k8s):
    fake_k8s.server.script("container_creating", pod="stuck", reason="FailedCreatePodSandBox")
    client.CoreV1Api(fake_k8s.api).create_namespaced_pod(NS, pod("stuck"))
    wait(lambda: fake_k8s.server.events("stuck") and [e for e in fake_k8s.server.events("stuck")
                                                      if e["reason"] == "FailedCreatePodSandBox"], what="the event")
    fake_k8s.server.settle(5)
    st = [p for p in fake_k8s.server.pods() if p["metadata"]["name"] == "stuck"][0]["status"]
    assert st["phase"] == "Pending"
    assert st["containerStatuses"][0]["state"]["waiting"]["reason"] == "ContainerCreating"
    err = api_error(lambda: read_log(fake_k8s, "stuck"))
    assert err.status == 400 and "is waiting to start: ContainerCreating" in err.body


@pytest.mark.parametrize("cause,reason,needle", [
    ("runtime_handler", "FailedCreatePodSandBox", 'failed to get sandbox runtime: no runtime for "nvidia" is configured'),
    ("runtime_class_missing", "FailedCreatePodSandBox", 'runtimeclass.node.k8s.io "nvidia" not found'),
    ("network_not_ready", "NetworkNotReady", "network is not ready: container runtime network not ready: "
                                             "NetworkReady=false reason:NetworkPluginNotReady"),
    ("mount", "FailedMount", 'MountVolume.SetUp failed for volume "config"'),
])
def test_kubelet_start_failures_keep_the_pod_creating_with_their_event(fake_k8s, cause, reason, needle):
    """The kubelet's words (pkg/kubelet/events/event.go reasons; kuberuntime_manager.go "Failed to create pod
    sandbox: %v" around containerd's and the RuntimeClass manager's errors; kubelet.go NetworkNotReady), repeated
    while the pod waits in ContainerCreating, as the kubelet's retries record them."""
    fake_k8s.server.script("container_creating", pod="stuck", cause=cause)
    client.CoreV1Api(fake_k8s.api).create_namespaced_pod(NS, pod("stuck", runtimeClassName="nvidia"))
    wait(lambda: len([e for e in fake_k8s.server.events("stuck") if e["reason"] == reason]) >= 2, what="2 events")
    events = [e for e in fake_k8s.server.events("stuck") if e["reason"] == reason]
    assert all(e["type"] == "Warning" and needle in e["message"] for e in events), events[0]["message"]
    st = [p for p in fake_k8s.server.pods() if p["metadata"]["name"] == "stuck"][0]["status"]
    assert st["phase"] == "Pending" and st["containerStatuses"][0]["state"]["waiting"]["reason"] == "ContainerCreating"


def test_transient_image_pull_then_success(fake_k8s):
    fake_k8s.server.script("image_pull_transient", pod="slowpull", pull_ticks=6, log="done\n")
    client.CoreV1Api(fake_k8s.api).create_namespaced_pod(NS, pod("slowpull"))
    seen = set()

    def done():
        for p in fake_k8s.server.pods():
            if p["metadata"]["name"] == "slowpull":
                for s in (p.get("status") or {}).get("containerStatuses") or []:
                    seen.add(((s.get("state") or {}).get("waiting") or {}).get("reason"))
                return (p.get("status") or {}).get("phase") == "Succeeded"
        return False
    wait(done, what="Succeeded")
    assert "ErrImagePull" in seen
    assert read_log(fake_k8s, "slowpull") == b"done\n"


def test_eviction(fake_k8s):
    fake_k8s.server.script("evicted", pod="victim")
    client.CoreV1Api(fake_k8s.api).create_namespaced_pod(NS, pod("victim"))
    wait(lambda: phase(fake_k8s, "victim") == "Failed", what="Failed")
    st = [p for p in fake_k8s.server.pods() if p["metadata"]["name"] == "victim"][0]["status"]
    assert st["reason"] == "Evicted" and st["message"].startswith("The node was low on resource: memory.")
    assert [e["reason"] for e in fake_k8s.server.events("victim")][-1] == "Evicted"


# --- node status, NFD labels
def test_node_status_delay_between_plugin_registration_and_allocatable(tmp_path):
    with fake_cluster(tmp_path, node_status_delay_ticks=10) as fake:
        ctl = fake.server.controller

        async def register():          # what a device plugin hook does when the plugin registered
            async with fake.server.emu._lock:
                ctl.nodes[0]["allocatable"]["rdma/hca"] = "1000"
                await ctl._patch((NODES, None, ctl.nodes[0]["name"]),
                                 {"status": {"allocatable": {"rdma/hca": "1000"}, "capacity": {"rdma/hca": "1000"}}})
        fake.server.call(register())
        core = client.CoreV1Api(fake.api)
        assert "rdma/hca" not in (core.read_node(ctl.nodes[0]["name"]).status.allocatable or {})
        assert "rdma/hca" not in ctl.nodes[0]["allocatable"], "the scheduler does not see it yet either"
        wait(lambda: (core.read_node(ctl.nodes[0]["name"]).status.allocatable or {}).get("rdma/hca") == "1000",
             what="allocatable")


def test_gpu_nodes_carry_current_nfd_labels():
    labels = gpu_nodes(1)[0]["labels"]
    assert labels["feature.node.kubernetes.io/rdma.available"] == "true"
    assert labels["feature.node.kubernetes.io/pci-15b3.present"] == "true"
    assert "feature.node.kubernetes.io/custom-rdma.available" not in labels
    assert set(NFD_CURRENT) <= set(labels)
    legacy = gpu_nodes(1, nfd="legacy")[0]["labels"]
    assert legacy["feature.node.kubernetes.io/custom-rdma.available"] == "true"
    assert "feature.node.kubernetes.io/rdma.available" not in legacy


def test_limit_range_defaults_and_max(fake_k8s):
    fake_k8s.server.limit_range(NS, [{"type": "Container", "default": {"cpu": "1", "memory": "1Gi"},
                                      "max": {"cpu": "32"}}])
    core = client.CoreV1Api(fake_k8s.api)
    core.create_namespaced_pod(NS, pod("bare"))
    bare = core.read_namespaced_pod("bare", NS)
    # defaultRequest defaults to default; both set where the container says nothing
    assert bare.spec.containers[0].resources.limits == {"cpu": "1", "memory": "1Gi"}
    assert bare.spec.containers[0].resources.requests == {"cpu": "1", "memory": "1Gi"}
    assert bare.metadata.annotations["kubernetes.io/limit-ranger"] == (
        "LimitRanger plugin set: cpu, memory request for container main; cpu, memory limit for container main")
    body = pod("sized")
    body["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "8"}, "limits": {"cpu": "16", "memory": "8Gi"}}
    core.create_namespaced_pod(NS, body)
    sized = core.read_namespaced_pod("sized", NS).spec.containers[0].resources
    assert sized.limits == {"cpu": "16", "memory": "8Gi"} and sized.requests == {"cpu": "8", "memory": "8Gi"}
    body = pod("big")
    body["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "64"}}
    err = api_error(lambda: core.create_namespaced_pod(NS, body))
    assert err.status == 403
    assert 'pods \\"big\\" is forbidden: maximum cpu usage per Container is 32, but limit is 64' in err.body


# --- the scheduler's fit (NodeResourcesFit, NodePorts) and the quota / webhook refusals
def _sized(name, node=None, gpus=0, cpu=None, memory=None, host_port=None):
    body = pod(name)
    c = body["spec"]["containers"][0]
    limits = dict(({"nvidia.com/gpu": str(gpus)} if gpus else {}), **({"cpu": cpu} if cpu else {}))
    limits.update({"memory": memory} if memory else {})
    c["resources"] = {"limits": limits}
    if host_port:
        c["ports"] = [{"containerPort": host_port, "hostPort": host_port}]
    if node:
        body["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
            "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node]}]}]}}}
    return body


def _scheduled(fake, name):
    def cond():
        found = [p for p in fake.server.pods() if p["metadata"]["name"] == name]
        for c in (found[0].get("status") or {}).get("conditions") or [] if found else []:
            if c["type"] == "PodScheduled":
                return c
        return None
    return wait(cond, what="PodScheduled of %s" % name)


def test_scheduler_fit_counts_bound_pods_requests_and_host_ports(tmp_path):
    """NodeResourcesFit: a pod whose cpu/memory/GPU requests exceed the node's allocatable minus the requests of the
    pods bound there stays Pending (every insufficient resource named); NodePorts: a hostPort a bound pod holds; the
    nodes the pod's matchFields leave out "didn't satisfy plugin(s) [NodeAffinity]" (its PreFilter result) and
    preemption is "not helpful" for them (FitError.Error's sorted histogram, upstream's wording: the message below
    is, to the counts, one a cluster printed - "0/4 nodes are available: 1 Insufficient cpu, 3 node(s) didn't
    satisfy plugin(s) [NodeAffinity]. preemption: 0/4 nodes are available: 1 No preemption victims found for
    incoming pod, 3 Preemption is not helpful for scheduling.")."""
    nodes = gpu_nodes(3, gpus=8)
    with fake_cluster(tmp_path, nodes=nodes) as fake:
        core = client.CoreV1Api(fake.api)
        fake.server.script("hang")
        core.create_namespaced_pod(NS, _sized("holder", "gpu-node-02", gpus=6, cpu="90", memory="1000Gi",
                                              host_port=2222))
        assert _scheduled(fake, "holder")["status"] == "True"
        core.create_namespaced_pod(NS, _sized("big", "gpu-node-02", gpus=4, cpu="8", memory="32Gi"))
        core.create_namespaced_pod(NS, _sized("port", "gpu-node-02", host_port=2222))
        core.create_namespaced_pod(NS, _sized("fits", "gpu-node-02", gpus=2, cpu="6", memory="24Gi",
                                              host_port=2223))
        big, port = _scheduled(fake, "big"), _scheduled(fake, "port")
        assert _scheduled(fake, "fits")["status"] == "True"
        assert big["status"] == "False" and big["reason"] == "Unschedulable"
        assert big["message"] == (
            "0/3 nodes are available: 1 Insufficient cpu, 1 Insufficient memory, 1 Insufficient nvidia.com/gpu, "
            "2 node(s) didn't satisfy plugin(s) [NodeAffinity]. preemption: 0/3 nodes are available: 1 No preemption "
            "victims found for incoming pod, 2 Preemption is not helpful for scheduling."), big["message"]
        assert port["message"] == (
            "0/3 nodes are available: 1 node(s) didn't have free ports for the requested pod ports, 2 node(s) "
            "didn't satisfy plugin(s) [NodeAffinity]. preemption: 0/3 nodes are available: 1 No preemption victims "
            "found for incoming pod, 2 Preemption is not helpful for scheduling."), port["message"]
        events = [e for e in fake.server.events() if e["reason"] == "FailedScheduling"]
        assert {e["involvedObject"]["name"] for e in events} == {"big", "port"}
        assert all(e["type"] == "Warning" and e["source"]["component"] == "default-scheduler" for e in events)
        core.delete_namespaced_pod("holder", NS)      # its requests and port are free again: both bind
        assert wait(lambda: _scheduled(fake, "big")["status"] == "True" and _scheduled(fake, "port")["status"]
                    == "True", what="rescheduling")


def test_quota_exceeded_and_webhook_denial_in_upstream_words(fake_k8s):
    """ResourceQuota: a pod whose requests on top of the namespace's unfinished pods pass ``hard`` is refused with
    "exceeded quota: Q, requested: ..., used: ..., limited: ..." (only the exceeded resources); a validating webhook's
    denial is 'admission webhook "N" denied the request: M' (no "is forbidden" prefix: ToStatusErr's own status)."""
    core = client.CoreV1Api(fake_k8s.api)
    fake_k8s.server.script("hang")
    fake_k8s.server.quota(NS, {"requests.nvidia.com/gpu": "4", "requests.cpu": "64"})
    core.create_namespaced_pod(NS, _sized("one", gpus=4, cpu="8"))
    err = api_error(lambda: core.create_namespaced_pod(NS, _sized("two", gpus=2, cpu="8")))
    assert err.status == 403
    assert ('pods \\"two\\" is forbidden: exceeded quota: compute-resources, requested: requests.nvidia.com/gpu=2, '
            'used: requests.nvidia.com/gpu=4, limited: requests.nvidia.com/gpu=4') in err.body, err.body
    fake_k8s.server.webhook("validation.gatekeeper.sh", '[require-owner] you must provide labels: {"owner"}',
                            lambda p: p["metadata"].get("name", "").startswith("deny"))
    err = api_error(lambda: core.create_namespaced_pod(NS, _sized("deny-me")))
    assert ('admission webhook \\"validation.gatekeeper.sh\\" denied the request: [require-owner] you must provide '
            'labels: {\\"owner\\"}') in err.body and "is forbidden" not in err.body, err.body
    client.BatchV1Api(fake_k8s.api).create_namespaced_job(NS, job("deny-job", containers=[
        {"name": "main", "image": "busybox", "resources": {"limits": {"cpu": "1"}}}]))
    events = wait(lambda: [e for e in core.list_namespaced_event(NS).items if e.reason == "FailedCreate"],
                  what="FailedCreate")
    assert re.match(r'Error creating: admission webhook "validation.gatekeeper.sh" denied the request: '
                    r'\[require-owner\]', events[0].message), events[0].message
