# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fake cluster's operators (tests/k8s/fake_operators.py) make what upstream's controllers make: mpi-operator
v0.8.2's Service, hostfile ConfigMap, ssh Secret, workers and launcher Job (created at once or once the workers are
Ready); Volcano v1.15's pods, ssh Secret with its ssh config, the svc plugin's hosts ConfigMap, env, Service and
NetworkPolicy. Also the process kubelet's resolver rules (search list, dnsPolicy) without running a pod."""

from __future__ import annotations

import base64

import pytest

pytest.importorskip("kubernetes")
pytest.importorskip("kmock")

from kubernetes import client  # noqa: E402

from ansible_collections.aifabric.acceptance.tests.k8s import fake_operators as ops  # noqa: E402
from ansible_collections.aifabric.acceptance.tests.k8s import process_kubelet  # noqa: E402
from ansible_collections.aifabric.acceptance.tests.k8s.fake_apiserver import fake_cluster  # noqa: E402
from ansible_collections.aifabric.acceptance.tests.unit.k8s.test_fake_semantics import wait  # noqa: E402

NS = "default"


@pytest.fixture
def fake_k8s(tmp_path):
    with fake_cluster(tmp_path, operators=("mpi", "volcano")) as fake:
        yield fake


def stored(fake, plural, name):
    for _g, _v, p, _ns, n, raw in fake.server.objects():
        if p == plural and n == name:
            return raw
    return None


def container(name="main", **extra):
    return dict({"name": name, "image": "img:1"}, **extra)


def mpijob(name, policy=None, host_network=False):
    worker = {"containers": [container()]}
    if host_network:
        worker["hostNetwork"] = True
    spec = {"slotsPerWorker": 2, "mpiReplicaSpecs": {
        "Launcher": {"replicas": 1, "template": {"spec": {"containers": [container(command=["mpirun", "x"])]}}},
        "Worker": {"replicas": 2, "template": {"spec": worker}}}}
    if policy:
        spec["launcherCreationPolicy"] = policy
    return {"apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "metadata": {"name": name}, "spec": spec}


def create(fake, group, version, plural, body):
    client.CustomObjectsApi(fake.api).create_namespaced_custom_object(group, version, NS, plural, body)


def test_mpijob_objects_as_mpi_operator_makes_them(fake_k8s):
    fake_k8s.server.script("hang", pod="pi-launcher")
    create(fake_k8s, "kubeflow.org", "v2beta1", "mpijobs", mpijob("pi", host_network=True))
    launcher = wait(lambda: stored(fake_k8s, "jobs", "pi-launcher"), what="the launcher Job")
    svc = stored(fake_k8s, "services", "pi")
    assert svc["spec"]["selector"] == {ops.MPI_OPERATOR_LABEL: "mpi-operator", ops.MPI_JOB_NAME_LABEL: "pi"}
    assert svc["spec"]["clusterIP"] == "None" and svc["spec"]["publishNotReadyAddresses"] is False
    config = stored(fake_k8s, "configmaps", "pi-config")["data"]
    assert config["hostfile"] == "pi-worker-0.pi.default.svc slots=2\npi-worker-1.pi.default.svc slots=2\n"
    assert config["discover_hosts.sh"].startswith("#!/bin/sh\n")
    secret = stored(fake_k8s, "secrets", "pi-ssh")
    assert secret["type"] == "kubernetes.io/ssh-auth"
    assert base64.b64decode(secret["data"]["ssh-privatekey"]).startswith(b"-----BEGIN EC PRIVATE KEY-----")
    assert base64.b64decode(secret["data"]["ssh-publickey"]).startswith(b"ecdsa-sha2-nistp521 ")
    pods = dict((p["metadata"]["name"], p) for p in fake_k8s.server.pods())
    worker = pods["pi-worker-1"]
    assert worker["metadata"]["labels"][ops.MPI_JOB_ROLE_LABEL] == "worker"
    assert worker["metadata"]["labels"][ops.MPI_REPLICA_INDEX_LABEL] == "1"
    wspec = worker["spec"]
    assert (wspec["hostname"], wspec["subdomain"], wspec["dnsPolicy"]) == ("pi-worker-1", "pi", "ClusterFirstWithHostNet")
    assert wspec["dnsConfig"]["searches"] == ["pi.default.svc.cluster.local"]
    assert wspec["containers"][0]["command"] == ["/usr/sbin/sshd", "-De"]      # no command in the template
    assert {"name": "K_MPI_JOB_ROLE", "value": "worker"} in wspec["containers"][0]["env"]
    (ssh,) = [v for v in wspec["volumes"] if v["name"] == "ssh-auth"]
    assert ssh["secret"]["defaultMode"] == 0o600 and [i["path"] for i in ssh["secret"]["items"]] == [
        "id_rsa", "id_rsa.pub", "authorized_keys"]
    lspec = launcher["spec"]["template"]["spec"]
    env = dict((e["name"], e.get("value")) for e in lspec["containers"][0]["env"])
    assert env["OMPI_MCA_orte_keep_fqdn_hostnames"] == "true"
    assert env["OMPI_MCA_plm_rsh_args"] == "-o ConnectionAttempts=10"
    assert env["OMPI_MCA_orte_default_hostfile"] == "/etc/mpi/hostfile" and env["OMPI_MCA_orte_set_default_slots"] == "2"
    assert env["NVIDIA_VISIBLE_DEVICES"] is None and env["K_MPI_JOB_ROLE"] == "launcher"
    assert (lspec["hostname"], lspec["subdomain"]) == ("pi-launcher", "pi")
    assert {"name": "mpi-job-config", "mountPath": "/etc/mpi"} in lspec["containers"][0]["volumeMounts"]
    assert lspec["restartPolicy"] == "OnFailure"          # the Launcher replica's default


def test_mpijob_wait_for_workers_ready_holds_the_launcher(fake_k8s):
    """WaitForWorkersReady counts the workers' Ready condition (countReadyWorkerPods), not their phase."""
    fake_k8s.server.script("container_creating", pod="gated-worker-1", reason="FailedMount")
    create(fake_k8s, "kubeflow.org", "v2beta1", "mpijobs", mpijob("gated", policy="WaitForWorkersReady"))
    wait(lambda: any(p["metadata"]["name"] == "gated-worker-0" and p["status"].get("phase") == "Running"
                     for p in fake_k8s.server.pods()), what="worker 0 running")
    fake_k8s.server.settle(10)
    assert stored(fake_k8s, "jobs", "gated-launcher") is None
    create(fake_k8s, "kubeflow.org", "v2beta1", "mpijobs", mpijob("eager"))      # AtStartup: at once
    wait(lambda: stored(fake_k8s, "jobs", "eager-launcher"), what="the AtStartup launcher")


def vcjob(name, ssh=(), svc=()):
    def task(tname, replicas, completes=False):
        out = {"name": tname, "replicas": replicas, "template": {"spec": {"containers": [container()]}}}
        if completes:
            out["policies"] = [{"event": "TaskCompleted", "action": "CompleteJob"}]
        return out
    return {"apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": {"name": name},
            "spec": {"minAvailable": 3, "schedulerName": "volcano", "plugins": {"ssh": list(ssh), "svc": list(svc)},
                     "tasks": [task("mpimaster", 1, True), task("mpi-worker", 2)]}}


def gpu_vcjob(name, workers, gpus, queue=None):
    """A vcjob whose workers each ask ``gpus`` nvidia.com/gpu (the gang: minAvailable = every pod)."""
    job = vcjob(name)
    job["spec"]["tasks"][1]["replicas"] = workers
    job["spec"]["minAvailable"] = workers + 1
    job["spec"]["tasks"][1]["template"]["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": gpus}}
    if queue:
        job["spec"]["queue"] = queue
    return job


def reasons_of(fake, kind, name):
    return [(e["type"], e["reason"], e["message"]) for e in fake.server.events()
            if e["involvedObject"].get("kind") == kind and e["involvedObject"]["name"].startswith(name)]


@pytest.mark.parametrize("queue,capability,workers,why", [
    ("small", {"nvidia.com/gpu": 8}, 2, "queue resource quota insufficient"),     # 16 GPUs > the queue's 8
    (None, None, 5, "resource in cluster is overused"),       # 40 GPUs > 4 nodes x 8 idle x 1.2
])
def test_volcano_podgroup_not_enqueued_creates_no_pod(fake_k8s, queue, capability, workers, why):
    """Volcano's enqueue (capacity/proportion, overcommit): the PodGroup stays Pending, no pod is made, and the
    scheduler and the job controller say why - on the PodGroup and on the vcjob (PodGroupPending)."""
    if queue:
        fake_k8s.server.volcano_queue(queue, capability)
    create(fake_k8s, "batch.volcano.sh", "v1alpha1", "jobs", gpu_vcjob("big", workers, 8, queue))
    wait(lambda: reasons_of(fake_k8s, "Job", "big"), what="PodGroupPending")
    fake_k8s.server.settle(5)
    assert [p for p in fake_k8s.server.pods() if p["metadata"]["name"].startswith("big-")] == []
    (pg,) = [raw for _g, _v, p, _ns, n, raw in fake_k8s.server.objects() if p == "podgroups"]
    uid = stored(fake_k8s, "jobs", "big")["metadata"]["uid"]
    assert pg["metadata"]["name"] == "big-" + uid and pg["status"]["phase"] == "Pending"
    assert pg["spec"]["minMember"] == workers + 1 and pg["spec"]["minResources"]["nvidia.com/gpu"] == 8 * workers
    (cond,) = pg["status"]["conditions"]
    gang = "0/0 tasks in gang unschedulable: pod group is not ready, %d minAvailable" % (workers + 1)
    assert (cond["type"], cond["reason"], cond["message"]) == ("Unschedulable", "NotEnoughResources", gang)
    assert set(reasons_of(fake_k8s, "PodGroup", "big")) == {("Normal", "Unschedulable", why),
                                                            ("Warning", "Unschedulable", gang)}
    assert reasons_of(fake_k8s, "Job", "big") == [
        ("Warning", "PodGroupPending", "PodGroup %s:big unschedule,reason: %s" % (NS, gang))]


def test_volcano_podgroup_enqueued_when_the_gang_fits(fake_k8s):
    fake_k8s.server.volcano_queue("small", {"nvidia.com/gpu": 16})
    create(fake_k8s, "batch.volcano.sh", "v1alpha1", "jobs", gpu_vcjob("fits", 2, 8, "small"))
    wait(lambda: len([p for p in fake_k8s.server.pods() if p["metadata"]["name"].startswith("fits-")]) == 3,
         what="3 pods")
    (pg,) = [raw for _g, _v, p, _ns, n, raw in fake_k8s.server.objects() if p == "podgroups"]
    assert pg["status"]["phase"] == "Inqueue" and reasons_of(fake_k8s, "Job", "fits") == []


def test_volcano_plugins_make_keys_ssh_config_hosts_env_service_and_policy(fake_k8s):
    fake_k8s.server.script("hang", pod="vj-mpimaster-0")
    create(fake_k8s, "batch.volcano.sh", "v1alpha1", "jobs", vcjob("vj", ssh=["--ssh-port=2222"]))
    pods = wait(lambda: len(fake_k8s.server.pods()) == 3 and dict(
        (p["metadata"]["name"], p) for p in fake_k8s.server.pods()), what="3 pods")
    worker = pods["vj-mpi-worker-1"]
    labels, annotations = worker["metadata"]["labels"], worker["metadata"]["annotations"]
    assert labels[ops.VC_TASK_INDEX] == "1" and labels[ops.VC_TASK_SPEC] == "mpi-worker"
    assert labels[ops.VC_JOB_NAMESPACE] == NS and labels[ops.VC_QUEUE_NAME] == "default"
    assert annotations[ops.VC_GROUP_ANNOTATION].startswith("vj-") and annotations[ops.VC_TASK_INDEX] == "1"
    spec = worker["spec"]
    assert (spec["hostname"], spec["subdomain"], spec["schedulerName"]) == ("vj-mpi-worker-1", "vj", "volcano")
    mounts = spec["containers"][0]["volumeMounts"]
    assert {"name": "vj-ssh", "mountPath": "/root/.ssh", "subPath": ".ssh"} in mounts
    assert {"name": "vj-svc", "mountPath": "/etc/volcano"} in mounts
    env = dict((e["name"], e["valueFrom"]["configMapKeyRef"]) for e in spec["containers"][0]["env"])
    assert env["VC_MPI_WORKER_HOSTS"] == {"name": "vj-svc", "key": "VC_MPI_WORKER_HOSTS"}
    assert set(env) == {"VC_MPIMASTER_HOSTS", "VC_MPIMASTER_NUM", "VC_MPI_WORKER_HOSTS", "VC_MPI_WORKER_NUM"}
    config = base64.b64decode(stored(fake_k8s, "secrets", "vj-ssh")["data"]["config"]).decode()
    assert config.startswith("StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\nHost vj-mpimaster-0\n"
                             "  HostName vj-mpimaster-0.vj\n  Port 2222\n")
    assert "Host vj-mpi-worker-1\n  HostName vj-mpi-worker-1.vj\n  Port 2222\n" in config
    hosts = stored(fake_k8s, "configmaps", "vj-svc")["data"]
    assert hosts == {"mpimaster.host": "vj-mpimaster-0.vj", "VC_MPIMASTER_HOSTS": "vj-mpimaster-0.vj",
                     "VC_MPIMASTER_NUM": "1", "mpi_worker.host": "vj-mpi-worker-0.vj\nvj-mpi-worker-1.vj",
                     "VC_MPI_WORKER_HOSTS": "vj-mpi-worker-0.vj,vj-mpi-worker-1.vj", "VC_MPI_WORKER_NUM": "2"}
    svc = stored(fake_k8s, "services", "vj")
    assert svc["spec"]["selector"] == {ops.VC_JOB_NAME: "vj", ops.VC_JOB_NAMESPACE: NS}
    assert svc["spec"]["publishNotReadyAddresses"] is False
    policy = stored(fake_k8s, "networkpolicies", "vj")
    assert policy["spec"]["ingress"] == [{"from": [{"podSelector": {"matchLabels": svc["spec"]["selector"]}}]}]


def test_volcano_flags_disable_the_policy_and_publish_not_ready(fake_k8s):
    create(fake_k8s, "batch.volcano.sh", "v1alpha1", "jobs", vcjob(
        "vk", svc=["--publish-not-ready-addresses=true", "--disable-network-policy=true"]))
    wait(lambda: stored(fake_k8s, "services", "vk"), what="the Service")
    assert stored(fake_k8s, "services", "vk")["spec"]["publishNotReadyAddresses"] is True
    assert stored(fake_k8s, "networkpolicies", "vk") is None
    assert "  Port 22\n" in base64.b64decode(stored(fake_k8s, "secrets", "vk-ssh")["data"]["config"]).decode()


def test_the_operators_pods_are_spread_by_required_anti_affinity(fake_k8s):
    """The scheduler's InterPodAffinity filter: two pods that must not share a hostname domain land apart."""
    body = mpijob("spread")
    body["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["spec"]["affinity"] = {"podAntiAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": [{
            "labelSelector": {"matchLabels": {ops.MPI_JOB_ROLE_LABEL: "worker"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    create(fake_k8s, "kubeflow.org", "v2beta1", "mpijobs", body)

    def bound():
        nodes = [p["spec"].get("nodeName") for p in fake_k8s.server.pods()
                 if p["metadata"]["name"].startswith("spread-worker-")]
        return len(nodes) == 2 and all(nodes) and nodes
    nodes = wait(bound, what="both workers bound")
    assert len(set(nodes)) == 2, nodes


def _pod(namespace, host_network=False, spec=None):
    handle = process_kubelet.Pod("uid", namespace, "p", "gpu-node-01", "p", None, {}, "/nonexistent", host_network)
    process_kubelet.ProcessKubelet.dns_config(handle, spec or {})
    return handle


def test_resolver_rules_search_list_and_dns_policy():
    fqdn = "w-1.svc.team.svc.cluster.local"
    names = process_kubelet.ProcessKubelet.names_for
    assert names(_pod("team"), fqdn) == [fqdn, "w-1.svc", "w-1.svc.team", "w-1.svc.team.svc"]
    assert names(_pod("other"), fqdn) == [fqdn, "w-1.svc.team", "w-1.svc.team.svc"]      # no short form elsewhere
    # mpi-operator's search entry makes the bare host name resolve
    assert "w-1" in names(_pod("team", spec={"dnsConfig": {"searches": ["svc.team.svc.cluster.local"]}}), fqdn)
    # hostNetwork: the node's resolver unless ClusterFirstWithHostNet
    assert names(_pod("team", host_network=True), fqdn) == []
    assert "w-1.svc" in names(_pod("team", host_network=True, spec={"dnsPolicy": "ClusterFirstWithHostNet"}), fqdn)


def test_operators_record_their_own_event_when_admission_refuses_a_pod(fake_k8s):
    """mpi-operator: MPIJobFailed "worker pod created failed: <err>"; Volcano: FailedCreate "Error creating pods:
    [failed to create pod <name>, err: <StatusError>]" - each with the admission's message and the pod's name."""
    fake_k8s.server.namespace("psa", {"pod-security.kubernetes.io/enforce": "baseline"})
    custom = client.CustomObjectsApi(fake_k8s.api)
    custom.create_namespaced_custom_object("kubeflow.org", "v2beta1", "psa", "mpijobs", mpijob("hn", host_network=True))
    vj = vcjob("vh")
    host_pod = {"hostNetwork": True, "containers": [container()]}
    vj["spec"]["tasks"] = [{"name": "w", "replicas": 1, "template": {"spec": host_pod}}]
    custom.create_namespaced_custom_object("batch.volcano.sh", "v1alpha1", "psa", "jobs", vj)

    def events():
        return dict((e.involved_object.name, e) for e in client.CoreV1Api(fake_k8s.api).list_namespaced_event("psa").items
                    if e.reason in ("MPIJobFailed", "FailedCreate"))
    got = wait(lambda: len(events()) == 2 and events(), what="both refusals")
    assert got["hn"].reason == "MPIJobFailed" and got["hn"].message.startswith(
        'worker pod created failed: pods "hn-worker-0" is forbidden: violates PodSecurity "baseline:latest": host '
        'namespaces (hostNetwork=true)'), got["hn"].message
    assert got["vh"].reason == "FailedCreate" and got["vh"].message.startswith(
        'Error creating pods: [failed to create pod vh-w-0, err: &errors.StatusError{'), got["vh"].message
    assert 'Message:"pods \\"vh-w-0\\" is forbidden: violates PodSecurity' in got["vh"].message
