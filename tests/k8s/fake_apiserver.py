# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A fake Kubernetes API server over real HTTP, with a scripted job controller, scheduler and kubelet.

No kube-apiserver can run on the development and CI machines (../shared/testbed.md), so the
Kubernetes path is tested against this: kmock 0.8's in-memory ``KubernetesEmulator``
(pinned: the subclass uses its private ``rendering`` module) served by aiohttp on
127.0.0.1, made strict enough for the official ``kubernetes`` client (testbed.md, "Emu"):

- server-populated metadata (uid, resourceVersion, creationTimestamp, namespace); a PATCH/PUT whose body
  carries ``metadata.resourceVersion`` is a precondition: 409 Conflict when the stored object has another one;
  201 on create; ``kind``/``apiVersion`` on lists; core discovery ``groupVersion: v1``;
- ``labelSelector`` (equality forms) and simple ``fieldSelector`` (``a.b=c``) on lists
  AND watches; watches honour ``timeoutSeconds`` (kmock's hang until the client gives up);
- ``FakeApiServer.expire_next_watches(n)``: the next n watches that resume from a
  resourceVersion get a ``410 Gone`` ERROR event, as an etcd compaction would;
- pod logs as ``text/plain`` (``limitBytes``, ``tailLines``), answered as the API server
  (pkg/registry/core/pod/strategy.go ``LogLocation``) and the kubelet (pkg/kubelet/kubelet_pods.go
  ``validateContainerLogStatus``) do: 400 "a container name must be specified for pod P, choose one of:
  [a b]" without ``container`` on a multi-container pod, 400 for an unknown container, 400 while the
  container waits to start, ``previous=true`` the last terminated instance's log or 400 "previous
  terminated container "C" in pod "P" not found", 404 once the pod is gone;
- **DELETE propagation** (pkg/controller/garbagecollector): ``Background`` (the GC removes dependents
  after the owner), ``Foreground`` (the owner gets the ``foregroundDeletion`` finalizer and a
  deletionTimestamp, its dependents go first, then it), ``Orphan`` (dependents lose the ownerReference);
  the default is Orphan for batch/v1 Jobs (pkg/registry/batch/job/strategy.go), Background otherwise;
- **admission** of pods (API creates and the controllers' own): the LimitRanger
  (``FakeApiServer.limit_range(ns, limits)``) gives containers the namespace LimitRange's ``default`` limits and
  ``defaultRequest`` requests they lack (annotation ``kubernetes.io/limit-ranger``) and refuses a limit above
  ``max`` or a request below ``min`` - 403 'pods "P" is forbidden: maximum cpu usage per Container is 2, but limit
  is 64'; then PodSecurity (pod-security-admission's
  policy checks) at the ``pod-security.kubernetes.io/enforce`` level of the namespace's labels
  (``FakeApiServer.namespace(name, labels)``): ``baseline`` refuses host namespaces, privileged, added
  non-default capabilities (IPC_LOCK), hostPath volumes and hostPorts, ``restricted`` also
  allowPrivilegeEscalation, capabilities not dropped, runAsNonRoot, seccompProfile - 403 'pods "P" is
  forbidden: violates PodSecurity "baseline:latest": host namespaces (hostNetwork=true), ...'; then
  ResourceQuota (``FakeApiServer.quota(ns, hard)``): a quota on cpu/memory refuses pods whose containers do
  not request them - 403 'failed quota: Q: must specify requests.cpu for: main; ...'
  (pkg/quota/v1/evaluator/core/pods.go), and refuses a pod whose usage on top of the namespace's unfinished pods
  passes ``hard`` - 403 'pods "P" is forbidden: exceeded quota: Q, requested: requests.nvidia.com/gpu=2, used:
  requests.nvidia.com/gpu=4, limited: requests.nvidia.com/gpu=4'; validating admission webhooks
  (``FakeApiServer.webhook(name, message, match)``) before it - 'admission webhook "N" denied the request: M'.
  A controller whose pod is refused records a ``FailedCreate``
  Warning event "Error creating: <message>" on its owner (pkg/controller/controller_utils.go), once.

``Controller`` (runs in the server's event loop, one tick every ``tick_s``) plays the
cluster's moving parts for the objects the code under test creates:

- **job controller**: a ``batch/v1`` Job gets ``parallelism`` pods (``<job>-<rand5>``), or for
  ``completionMode: Indexed`` one pod per index (``<job>-<index>-<rand5>``, label and
  annotation ``batch.kubernetes.io/job-completion-index``, hostname ``<job>-<index>``,
  the template's subdomain), labelled ``job-name``/``controller-uid`` and owned by the Job;
  counts succeeded/failed, replaces failed pods up to ``backoffLimit``, sets the
  ``Complete`` / ``Failed`` (BackoffLimitExceeded, DeadlineExceeded) conditions;
  ``activeDeadlineSeconds`` passed: the active pods are deleted (pkg/controller/job ``deleteActivePods``:
  with ``pod_grace_ticks`` they terminate first, SIGTERM-style) and the Job fails with DeadlineExceeded;
  a Job being deleted (Foreground) gets no new pods;
- **TTL-after-finished controller** (pkg/controller/ttlafterfinished): a finished Job with
  ``ttlSecondsAfterFinished`` is deleted with Foreground propagation that many seconds after it finished -
  its pods and their logs with it (MPIJob ``runPolicy.ttlSecondsAfterFinished`` and Volcano's
  ``spec.ttlSecondsAfterFinished`` the same way). Seconds are **cluster seconds**: wall seconds times
  ``clock_scale`` plus what ``FakeApiServer.advance_clock(s)`` added (deadlines use the same clock);
- **scheduler**: binds a pod to a node that passes kube-scheduler's filters in the default profile's order
  (``Controller.fit``): the NodeAffinity PreFilter (``matchFields`` ``metadata.name In``), ``nodeName``, taints vs
  tolerations, ``nodeSelector`` and required node affinity (``In``/``NotIn``/``Exists`` on node labels such as
  ``kubernetes.io/hostname``), NodePorts (a ``hostPort`` a pod bound there holds), NodeResourcesFit (cpu, memory and
  extended-resource requests - ``nvidia.com/gpu``, ``rdma/...`` - against allocatable minus the requests of the
  pods bound there; allocatable ``pods``), required pod anti-affinity; else ``PodScheduled=False/Unschedulable``
  with the scheduler's message as FitError words it (``0/3 nodes are available: 1 Insufficient nvidia.com/gpu, 2
  node(s) didn't match pod anti-affinity rules. preemption: 0/3 nodes are available: 3 No preemption victims found
  for incoming pod.``) and a ``FailedScheduling`` Warning event, retried every tick;
- **graceful deletion** (``pod_grace_ticks=N``): a deleted pod keeps running with a
  ``deletionTimestamp`` for N ticks before it is gone, as a real pod does for its grace period;
- **kubelet**: moves a bound pod through Pending → Running → Succeeded/Failed with
  container statuses, exit codes and events, following the **script** of the first
  matching ``Behaviour`` (by node, job, pod name prefix): ``succeed`` (exit 0),
  ``fail`` (exit code), ``oom`` (OOMKilled, exit 137), ``image_pull``
  (ErrImagePull → ImagePullBackOff, never starts), ``crash_loop`` (restartPolicy
  OnFailure/Always: CrashLoopBackOff, its log also the ``previous`` one), ``hang`` (Running forever),
  ``container_creating`` (waiting ContainerCreating forever, its ``reason`` Warning event repeated as the
  kubelet's retries do: ``cause`` mount - FailedMount -, cni - FailedCreatePodSandBox, the CNI ADD failed -,
  runtime_handler - FailedCreatePodSandBox, containerd has no handler for the pod's RuntimeClass -,
  runtime_class_missing, network_not_ready - NetworkNotReady, the node's CNI not initialised; Behaviour.CAUSES), ``image_pull_transient``
  (ErrImagePull/ImagePullBackOff for ``pull_ticks`` ticks, then runs and succeeds), ``evicted``
  (phase Failed, reason Evicted, the kubelet's message and event), ``process`` (real processes,
  tests/k8s/process_kubelet.py); any kind with ``start_ticks=N`` first waits N ticks bound in ContainerCreating
  with the kubelet's Normal ``Pulling`` event (an uncached image); logs are the bytes of a real captured output
  file (``log_file``) or given text;
- **node status**: with ``node_status_delay_ticks=N`` an allocatable change a device plugin hook
  publishes reaches the Node (and the scheduler) N ticks later, as the kubelet's periodic node-status
  update lags the plugin's registration; ``gpu_nodes()`` carries the labels current node-feature-discovery
  publishes for an RDMA HCA (``NFD_CURRENT``: ``rdma.capable``, ``rdma.available``, ``pci-15b3.present``
  with network-operator's ``deviceLabelFields: [vendor]``), ``nfd="legacy"`` the ``custom-rdma.*`` labels
  of NFD < v0.14, ``nfd=None`` none.

- **operators**, when the server is started with ``operators=("mpi", "volcano")`` (their CRDs are
  then served and discovered): mpi-operator v0.8.2 and Volcano's job controller with its ssh and svc
  plugins, object by object as upstream makes them (tests/k8s/fake_operators.py: the MPIJob's Service,
  hostfile ConfigMap, ssh Secret, workers ``<name>-worker-<i>`` and - at once, or with
  ``launcherCreationPolicy: WaitForWorkersReady`` once every worker is Ready - the launcher Job with
  the OMPI_MCA_* environment; a vcjob's pods ``<job>-<task>-<i>``, its ssh Secret with the ssh config,
  the svc plugin's hosts ConfigMap, VC_*_HOSTS env, headless Service and NetworkPolicy). Workers run
  sshd in real life: unless a rule matches them they ``hang``. Everything an operator creates is
  owned by its object and garbage-collected with it;
- **readiness**: a running pod gets the ``Ready`` condition (ContainersReady, Ready) - a ``process``
  pod once its tcpSocket readiness probes connect - and loses it when it ends.

``FakeApiServer`` runs all that in a background thread with its own event loop (the
official client is synchronous), writes a kubeconfig, and lists what is stored
(``leftovers(run_id)``) so tests can assert that nothing of a run remains.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import fnmatch
import itertools
import json
import os
import random
import threading
import uuid

import kmock
import yaml
from kmock._internal import rendering   # private module: kmock is pinned to 0.8 (requirements-test.txt)

from ansible_collections.aifabric.acceptance.tests.k8s import fake_operators

RUN_LABEL = "aifabric.acceptance/run-id"
INDEX_KEY = "batch.kubernetes.io/job-completion-index"
# with pod_grace_ticks > 0 every pod carries this finalizer, so a DELETE only marks it (deletionTimestamp)
# and the fake kubelet removes it that many ticks later, as a real pod lingers for its grace period
FINALIZER = "fake.aifabric.acceptance/graceful-termination"

PODS = kmock.resource("", "v1", "pods")
EVENTS = kmock.resource("", "v1", "events")
NODES = kmock.resource("", "v1", "nodes")
NAMESPACES = kmock.resource("", "v1", "namespaces")
QUOTAS = kmock.resource("", "v1", "resourcequotas")
LIMITRANGES = kmock.resource("", "v1", "limitranges")
CRDS = kmock.resource("apiextensions.k8s.io", "v1", "customresourcedefinitions")
JOBS = kmock.resource("batch", "v1", "jobs")
MPIJOBS = kmock.resource("kubeflow.org", "v2beta1", "mpijobs")
VCJOBS = kmock.resource("batch.volcano.sh", "v1alpha1", "jobs")

# kind of every resource this fake stores, for leftovers() ("Kind/namespace/name")
KINDS = {
    ("", "v1", "pods"): "Pod", ("", "v1", "services"): "Service", ("", "v1", "configmaps"): "ConfigMap",
    ("", "v1", "secrets"): "Secret", ("", "v1", "serviceaccounts"): "ServiceAccount",
    ("batch", "v1", "jobs"): "Job", ("apps", "v1", "daemonsets"): "DaemonSet",
    ("kubeflow.org", "v2beta1", "mpijobs"): "MPIJob", ("batch.volcano.sh", "v1alpha1", "jobs"): "VolcanoJob",
    ("", "v1", "events"): "Event", ("", "v1", "nodes"): "Node", ("", "v1", "namespaces"): "Namespace",
    ("", "v1", "resourcequotas"): "ResourceQuota", ("", "v1", "limitranges"): "LimitRange",
    ("networking.k8s.io", "v1", "networkpolicies"): "NetworkPolicy",
    ("scheduling.volcano.sh", "v1beta1", "podgroups"): "PodGroup",
    ("apiextensions.k8s.io", "v1", "customresourcedefinitions"): "CustomResourceDefinition",
}


# what generateName appends: 5 characters of this alphabet (k8s.io/apiserver/pkg/storage/names/generate.go
# SimpleNameGenerator, k8s.io/apimachinery/pkg/util/rand ``String``: no vowels, no 0/1/3 - no words, no look-alikes)
NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"


def _suffix():
    """The 5 random characters the job controller and generateName append."""
    return "".join(random.choice(NAME_ALPHABET) for dummy in range(5))


def _now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def match_labels(labels, selector):
    """Equality-based label selector (``a=b``, ``a==b``, ``a!=b``, ``a``, ``!a``), comma = AND."""
    for term in filter(None, (t.strip() for t in (selector or "").split(","))):
        if "!=" in term:
            key, value = term.split("!=", 1)
            if labels.get(key) == value:
                return False
        elif "=" in term:
            key, value = term.split("==", 1) if "==" in term else term.split("=", 1)
            if labels.get(key) != value:
                return False
        elif term.startswith("!"):
            if term[1:] in labels:
                return False
        elif term not in labels:
            return False
    return True


def match_fields(obj, selector):
    """Field selector of ``a.b=c`` / ``a.b!=c`` terms (the forms kubectl and the client send)."""
    for term in filter(None, (t.strip() for t in (selector or "").split(","))):
        negate = "!=" in term
        key, value = term.split("!=" if negate else ("==" if "==" in term else "="), 1)
        cur = obj
        for part in key.split("."):
            cur = cur.get(part) if isinstance(cur, dict) else None
        if (str(cur) == value if cur is not None else value == "") == negate:
            return False
    return True


def _propagation(request):
    """The DELETE's propagation policy: the DeleteOptions body (``propagationPolicy``, or the old
    ``orphanDependents``) or the query; else the resource's default, as pkg/registry/batch/job/strategy.go
    ``DefaultGarbageCollectionPolicy`` has it: batch/v1 Jobs orphan their pods, everything else Background."""
    body = request.data if isinstance(request.data, dict) else {}
    policy = body.get("propagationPolicy") or request.params.get("propagationPolicy")
    orphan = body.get("orphanDependents", request.params.get("orphanDependents"))
    if not policy and orphan is not None:
        policy = "Orphan" if str(orphan).lower() == "true" else "Background"
    if not policy:
        policy = "Orphan" if request.resource == JOBS else "Background"
    return policy


_VERBS = {kmock.action.CREATE: "create", kmock.action.LIST: "list", kmock.action.WATCH: "watch",
          kmock.action.FETCH: "get", kmock.action.UPDATE: "patch", kmock.action.DELETE: "delete"}


class Emu(kmock.KubernetesEmulator):
    """kmock's emulator made strict enough for the official client (see the module docstring)."""

    _rv = itertools.count(1000)
    fake = None                      # the FakeApiServer, set by it
    deletions = 0                    # DELETE requests served (the controller's GC runs only after one)

    def __attrs_post_init__(self):
        super().__attrs_post_init__()
        # the official client asks for "/apis/" and "/api/" (trailing slash); a real server serves both
        self.fallback["get /apis/"] << self._serve_apis
        self.fallback["get /api/"] << self._serve_api

    async def _handle(self, request):
        if request.resource is not None and isinstance(request.data, dict):
            md = request.data.setdefault("metadata", {})
            if request.action == kmock.action.CREATE:
                if request.resource == PODS and self.fake is not None and self.fake.pod_grace_ticks:
                    md.setdefault("finalizers", []).append(FINALIZER)
                if request.namespace:
                    md.setdefault("namespace", request.namespace)
                if not md.get("name") and md.get("generateName"):
                    md["name"] = md["generateName"] + _suffix()
                md.setdefault("uid", str(uuid.uuid4()))
                md.setdefault("creationTimestamp", _now())
                md.setdefault("generation", 1)
            if request.action == kmock.action.UPDATE and md.get("resourceVersion") and request.name is not None:
                # optimistic concurrency: a patch/update carrying metadata.resourceVersion applies only to that
                # version (staging/src/k8s.io/apiserver/pkg/registry/generic/registry/store.go, 409 Conflict)
                key = (request.resource, request.namespace, request.name)
                stored = self._objects[key] if key in self._objects and not self._objects[key].deleted else None
                have = ((stored.raw.get("metadata") or {}) if stored is not None else {}).get("resourceVersion")
                if have is not None and str(have) != str(md["resourceVersion"]):
                    return await self._render_error(kmock.KubernetesError(
                        status=409, reason="Conflict", message='Operation cannot be fulfilled on %s "%s": the object '
                        'has been modified; please apply your changes to the latest version and try again' % (
                            request.resource.plural, request.name)))
            if request.action in (kmock.action.CREATE, kmock.action.UPDATE):
                md["resourceVersion"] = str(next(self._rv))
        if request.action == kmock.action.DELETE:
            self.deletions += 1
            if request.resource is not None and request.name is not None and self.fake is not None:
                async with self._lock:
                    await self.fake.controller.propagate(request.resource, request.namespace, request.name,
                                                         _propagation(request))
        if request.action == kmock.action.CREATE and request.resource == PODS and self.fake is not None \
                and isinstance(request.data, dict):
            async with self._lock:
                denied = self.fake.controller.admit(request.namespace or "default", request.data)
            if denied:
                return await self._render_error(kmock.KubernetesError(status=403, reason="Forbidden", message=denied))
        if self.fake is not None:
            self.fake.requests.append((str(request.method), request.url.path, dict(request.params)))
            verb = _VERBS.get(request.action)
            if request.resource is not None and (verb, request.resource.plural) in self.fake.forbidden:
                res = request.resource
                return await self._render_error(kmock.KubernetesError(
                    status=403, reason="Forbidden",
                    message='%s%s is forbidden: User "system:serviceaccount:%s:tester" cannot %s resource "%s" in '
                            'API group "%s" in the namespace "%s"' % (
                                res.plural, "." + res.group if res.group else "", request.namespace or "default",
                                verb, res.plural, res.group, request.namespace)))
        return await super()._handle(request)

    async def _serve_create(self, request):
        return rendering.Response(status=201, payload=await super()._serve_create(request))

    async def _serve_list(self, request):
        out = await super()._serve_list(request)
        res = request.resource
        info = self.resources[res]
        out["kind"] = "%sList" % info.kind if info.kind else "List"
        out["apiVersion"] = "%s/%s" % (res.group, res.version) if res.group else res.version
        out["metadata"] = {"resourceVersion": str(next(self._rv))}
        lsel, fsel = request.params.get("labelSelector"), request.params.get("fieldSelector")
        out["items"] = [o for o in out["items"]
                        if match_labels((o.get("metadata") or {}).get("labels") or {}, lsel)
                        and match_fields(o, fsel)]
        return out

    async def _serve_version(self, request):
        out = await super()._serve_version(request)
        if request.resource.group == "":
            out["groupVersion"] = request.resource.version
        return out

    async def _serve_fetch(self, request):
        if request.subresource == "log" and request.resource == PODS:
            return await self._serve_log(request)
        return await super()._serve_fetch(request)

    async def _serve_log(self, request):
        """The pod log endpoint as the API server (pkg/registry/core/pod/strategy.go ``LogLocation``) and the
        kubelet (pkg/kubelet/kubelet_pods.go ``validateContainerLogStatus``) answer it: 404 once the pod is gone;
        400 "a container name must be specified for pod P, choose one of: [a b]" without ``container`` on a
        multi-container pod; 400 "container C is not valid for pod P"; ``previous=true`` gives the last terminated
        instance's log, or 400 "previous terminated container "C" in pod "P" not found"."""
        async with self._lock:
            key = (PODS, request.namespace, request.name)
            obj = self._objects[key] if key in self._objects else None
            pod = None if obj is None or obj.deleted else obj.raw
        if pod is None:
            raise kmock.KubernetesObjectNotFoundError(message='pods "%s" not found' % request.name)
        statuses = (pod.get("status") or {}).get("containerStatuses") or []
        declared = [c.get("name") for c in (pod.get("spec") or {}).get("containers") or []]
        container = request.params.get("container")
        if not container and len(declared) > 1:
            message = "a container name must be specified for pod %s, choose one of: [%s]" % (
                request.name, " ".join(declared))
            inits = [c.get("name") for c in (pod.get("spec") or {}).get("initContainers") or []]
            if inits:
                message += " or one of the init containers: [%s]" % " ".join(inits)
            raise kmock.KubernetesError(status=400, reason="BadRequest", message=message)
        container = container or (declared[0] if declared else (statuses[0]["name"] if statuses else None))
        if declared and container not in declared:
            raise kmock.KubernetesError(status=400, reason="BadRequest", message="container %s is not valid for "
                                        "pod %s" % (container, request.name))
        logs = self.fake.controller.logs
        if str(request.params.get("previous", "")).lower() == "true":
            mine = [s for s in statuses if s.get("name") == container and (s.get("lastState") or {}).get("terminated")]
            if not mine:
                raise kmock.KubernetesError(status=400, reason="BadRequest", message='previous terminated container '
                                            '"%s" in pod "%s" not found' % (container, request.name))
            logs = self.fake.controller.previous_logs
        else:
            started = [s for s in statuses if s.get("name") == container
                       and ((s.get("state") or {}).get("running") or (s.get("state") or {}).get("terminated")
                            or (s.get("lastState") or {}).get("terminated"))]
            if not started:
                waiting = [s for s in statuses if s.get("name") == container]
                reason = (((waiting[0].get("state") or {}).get("waiting") or {}).get("reason")
                          if waiting else "ContainerCreating") or "ContainerCreating"
                raise kmock.KubernetesError(status=400, reason="BadRequest", message='container "%s" in pod "%s" '
                                            "is waiting to start: %s" % (container, request.name, reason))
        data = logs.get((request.namespace, request.name, container), b"")
        tail = request.params.get("tailLines")
        if tail:
            lines = data.splitlines(True)
            data = b"".join(lines[-int(tail):]) if int(tail) > 0 else b""
        limit = request.params.get("limitBytes")
        if limit:
            data = data[:int(limit)]
        return rendering.Response(status=200, headers={"Content-Type": "text/plain; charset=utf-8"}, payload=data)

    async def _serve_watch(self, request):
        timeout = float(request.params.get("timeoutSeconds") or 0) or None
        lsel, fsel = request.params.get("labelSelector"), request.params.get("fieldSelector")
        if request.params.get("resourceVersion") and self.fake is not None and self.fake.take_expiry():
            yield b""
            yield {"type": "ERROR", "object": {"kind": "Status", "apiVersion": "v1", "status": "Failure",
                                               "code": 410, "reason": "Expired",
                                               "message": "too old resource version: %s (%d)" % (
                                                   request.params["resourceVersion"], next(self._rv))}}
            return
        # kmock's own watch takes its snapshot and joins the event bus at different moments, so an
        # object created in between is never seen; here both happen under the store's lock.
        yield b""
        bus = self._buses[request.resource]
        async with self._lock:
            current = [obj.raw for (res, ns, name), obj in self._objects.items()
                       if res == request.resource and not obj.deleted
                       and (request.namespace is None or ns == request.namespace)
                       and (request.name is None or name == request.name)]
            marker = await bus.mark()

        def wanted(obj):
            md = obj.get("metadata") or {}
            return ((request.namespace is None or md.get("namespace") == request.namespace)
                    and (request.name is None or md.get("name") == request.name)
                    and match_labels(md.get("labels") or {}, lsel) and match_fields(obj, fsel))

        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout if timeout else None
        stream = bus.stream(since=marker)
        try:
            for raw in current:
                if wanted(raw):
                    yield {"type": "ADDED", "object": raw}
            while True:
                remaining = None if deadline is None else deadline - loop.time()
                if remaining is not None and remaining <= 0:
                    return
                try:
                    event = await asyncio.wait_for(anext(stream), remaining)
                except (asyncio.TimeoutError, StopAsyncIteration):
                    return
                if wanted(event.get("object") or {}):
                    yield event
        finally:
            with contextlib.suppress(Exception):
                await stream.aclose()
            with contextlib.suppress(Exception):
                await bus.unmark(marker)


class Behaviour(object):
    """What the fake kubelet does with a pod that a rule matches (see the module docstring)."""

    KINDS = ("succeed", "fail", "oom", "image_pull", "crash_loop", "hang", "process",
             "container_creating", "image_pull_transient", "evicted")
    # ``container_creating``: the sandbox never comes up (``reason`` FailedMount, FailedCreatePodSandBox - CNI or
    # RuntimeClass -, with ``message``): waiting ContainerCreating forever, one Warning event;
    # ``image_pull_transient``: ErrImagePull / ImagePullBackOff for ``pull_ticks`` ticks, then it runs and succeeds;
    # ``evicted``: runs ``run_ticks``, then the kubelet evicts it (phase Failed, reason Evicted, event Evicted)
    WAITING = {"FailedMount": 'MountVolume.SetUp failed for volume "config" : configmap "config" not found',
               "FailedCreatePodSandBox": 'Failed to create pod sandbox: rpc error: code = Unknown desc = failed to '
                                         'setup network for sandbox: plugin type="calico" failed (add): error getting '
                                         'ClusterInformation: connection is unauthorized: Unauthorized'}
    # ``cause`` -> (the kubelet's event reason, its message; %(handler)s: the pod's runtimeClassName), as the kubelet
    # words them: FailedCreatePodSandBox "Failed to create pod sandbox: %v" (kuberuntime_manager.go SyncPod) around
    # containerd's "failed to get sandbox runtime: no runtime for %q is configured" (a RuntimeClass whose handler the
    # node's runtime lacks) or the RuntimeClass manager's NotFound; NetworkNotReady "%s: %v" of
    # NetworkNotReadyErrorMsg and the runtime's NetworkReady condition (kubelet.go SyncPod, RuntimeCondition.String)
    CAUSES = {
        "mount": ("FailedMount", WAITING["FailedMount"]),
        "cni": ("FailedCreatePodSandBox", WAITING["FailedCreatePodSandBox"]),
        "runtime_handler": ("FailedCreatePodSandBox", 'Failed to create pod sandbox: rpc error: code = Unknown desc = '
                                                      'failed to get sandbox runtime: no runtime for "%(handler)s" is '
                                                      'configured'),
        "runtime_class_missing": ("FailedCreatePodSandBox", 'Failed to create pod sandbox: runtimeclass.node.k8s.io '
                                                            '"%(handler)s" not found'),
        "network_not_ready": ("NetworkNotReady", "network is not ready: container runtime network not ready: "
                                                 "NetworkReady=false reason:NetworkPluginNotReady message:Network "
                                                 "plugin returns error: cni plugin not initialized"),
    }

    def __init__(self, kind="succeed", log=None, log_file=None, exit_code=None, run_ticks=2,
                 node=None, job=None, pod=None, runner=None, reason="FailedMount", message=None, pull_ticks=3,
                 cause=None, start_ticks=0):
        if cause is not None:
            reason, message = self.CAUSES[cause][0], message or self.CAUSES[cause][1]
        self.reason, self.pull_ticks = reason, pull_ticks
        # ``start_ticks``: the pod waits bound in ContainerCreating this long first (an uncached image being pulled:
        # the kubelet's Normal "Pulling" event), then starts as its kind says
        self.start_ticks = int(start_ticks)
        self.message = message or self.WAITING.get(reason, reason)
        if kind not in self.KINDS:
            raise ValueError("behaviour %r is not one of %s" % (kind, ", ".join(self.KINDS)))
        if (kind == "process") != (runner is not None):
            raise ValueError("behaviour 'process' needs a runner (and only it takes one)")
        # ``process``: the pod's containers really run. ``runner.start(pod) -> handle`` when the pod starts;
        # ``runner.poll(handle) -> None`` while it runs, else {container: (exit code, reason)}; ``runner.logs(handle)
        # -> {container: bytes}`` (read at every tick: logs grow while the pod runs); ``runner.stop(handle, grace_s)``
        # when the pod is deleted (SIGTERM, the grace period, SIGKILL)
        self.runner = runner
        self.kind, self.run_ticks = kind, run_ticks
        self.node, self.job, self.pod = node, job, pod
        if log_file:
            with open(log_file, "rb") as fh:
                log = fh.read()
        self.log = log.encode() if isinstance(log, str) else (log or b"")
        default_code = {"succeed": 0, "fail": 1, "oom": 137, "crash_loop": 1, "image_pull_transient": 0,
                        "evicted": 137}.get(kind)
        self.exit_code = default_code if exit_code is None else exit_code

    def matches(self, pod):
        md = pod.get("metadata") or {}
        if self.node and (pod.get("spec") or {}).get("nodeName") != self.node:
            return False
        if self.job and (md.get("labels") or {}).get("job-name") != self.job:
            return False
        if self.pod and not fnmatch.fnmatchcase(md.get("name") or "", self.pod):
            return False
        return True


def _quantity(value):
    """Integer count of an extended-resource quantity ("8", 8, "1k" is not used for devices)."""
    try:
        return int(str(value))
    except ValueError:
        return 0


class Controller(object):
    """Job controller + scheduler + kubelet + GC, one reconcile pass per tick (see module docstring)."""

    def __init__(self, emu, nodes, tick_s=0.02, grace_ticks=0, clock_scale=1.0, node_status_delay_ticks=0):
        self.emu, self.nodes, self.tick_s, self.grace_ticks = emu, nodes, tick_s, grace_ticks
        # cluster time (activeDeadlineSeconds, ttlSecondsAfterFinished) = wall seconds x clock_scale + what
        # advance_clock() added: a test makes a 600 s TTL pass in one call, not in 10 minutes
        self.clock_scale, self.clock_offset, self.clock_t0 = clock_scale, 0.0, None
        self.node_status_delay_ticks = node_status_delay_ticks
        self.node_status_pending = {}    # (node, resource) -> (value, tick it reaches the Node's status)
        self.previous_logs = {}          # (namespace, pod, container) -> the last terminated instance's bytes
        self.finished_at = {}            # owner uid -> cluster time its finish was first seen (TTL controller)
        self.foreground = set()          # keys of objects in foreground deletion (finalizer foregroundDeletion)
        self.events_seen = set()         # (uid, reason, message) of owner events already recorded
        self.terminating = {}            # pod uid -> tick its deletion was first seen
        self.rules = []
        self.mpi_version = None          # the fake mpi-operator's version (FakeApiServer.mpi_version)
        self.default = Behaviour("succeed")
        self.logs = {}                   # (namespace, pod, container) -> bytes
        self.state = {}                  # pod uid -> dict(stage, ticks, behaviour)
        self.job_pods = {}               # job uid -> {pod name: last pod seen}
        self.job_started = {}            # job uid -> loop time first seen
        self.defaults = {}               # pod name -> behaviour kind when no rule matches (operator workers)
        self.volcano_queues = {}         # Volcano queue name -> capability {resource: count} (absent: unlimited)
        self.ticks = 0                   # reconcile passes done
        self.own_deletions = 0           # deletions by the controller itself (GC runs only after any)
        self.gc_seen = -1
        self.error = None
        self.task = None
        # extra reconcile steps, run after the operators (tests/k8s/fake_rdma_plugin.py: DaemonSets, RDMA plugin)
        self.hooks = []
        self.webhooks = []      # (name, message, match(pod)): validating admission webhooks that deny a pod

    # --- store helpers (called with emu._lock held)
    def _all(self, resource):
        return [(key, obj) for key, obj in self.emu._objects.items() if key[0] == resource and not obj.deleted]

    def clock(self):
        """Cluster seconds since the controller started (see ``clock_scale`` and ``advance_clock``)."""
        now = asyncio.get_running_loop().time()
        if self.clock_t0 is None:
            self.clock_t0 = now
        return (now - self.clock_t0) * self.clock_scale + self.clock_offset

    def _dependents(self, uid):
        return [(key, obj.raw) for key, obj in self.emu._objects.items() if not obj.deleted
                and any(r.get("uid") == uid for r in obj.raw["metadata"].get("ownerReferences") or [])]

    async def propagate(self, resource, namespace, name, policy):
        """What a DELETE with ``policy`` does to the dependents (the garbage collector,
        pkg/controller/garbagecollector): Orphan strips their ownerReference at once; Foreground puts the
        ``foregroundDeletion`` finalizer on the owner (the DELETE then only sets its deletionTimestamp) and the
        GC deletes the dependents first, the owner when none is left; Background leaves them to the GC."""
        key = (resource, namespace, name)
        if key not in self.emu._objects or self.emu._objects[key].deleted:
            return
        raw = self.emu._objects[key].raw
        uid = raw["metadata"].get("uid")
        dependents = self._dependents(uid)
        if policy == "Orphan":
            for dkey, dep in dependents:
                await self._patch(dkey, {"metadata": {"ownerReferences": [
                    r for r in dep["metadata"].get("ownerReferences") or [] if r.get("uid") != uid]}})
        elif policy == "Foreground" and dependents and not raw["metadata"].get("deletionTimestamp"):
            self.foreground.add(key)
            await self._patch(key, {"metadata": {"finalizers": list(raw["metadata"].get("finalizers") or [])
                                                 + ["foregroundDeletion"]}})

    async def _delete_foreground(self, key):
        """A controller's own DELETE with propagationPolicy Foreground (the TTL controller's)."""
        self.own_deletions += 1
        await self.propagate(key[0], key[1], key[2], "Foreground")
        if key in self.foreground:
            await self._patch(key, {"metadata": {"deletionTimestamp": _now()}})
        else:
            await self._delete(key)

    async def _foreground(self):
        """Owners in foreground deletion: their dependents go first, then the owner itself."""
        for key in sorted(self.foreground, key=str):
            obj = self.emu._objects[key] if key in self.emu._objects else None
            if obj is None or obj.deleted:
                self.foreground.discard(key)
                continue
            dependents = self._dependents(obj.raw["metadata"].get("uid"))
            for dkey, dep in dependents:
                if not dep["metadata"].get("deletionTimestamp"):
                    await self._remove(dkey)
            if not dependents:
                self.foreground.discard(key)
                await self._delete(key)

    def admit(self, namespace, pod, name=None):
        """None when a pod may be created in ``namespace``, else the API's refusal message: the LimitRanger first (it
        mutates ``pod``: the namespace's LimitRange defaults, ``_limit_range``), then PodSecurity admission (its
        ``enforce`` level from the namespace's labels), then the validating webhooks (``FakeApiServer.webhook``),
        then ResourceQuota (see ``_pod_security``, ``_quota_missing`` and ``_quota_exceeded``)."""
        name = name or (pod.get("metadata") or {}).get("name") or (pod.get("metadata") or {}).get("generateName")
        ns_key = (NAMESPACES, None, namespace)
        ns_obj = self.emu._objects[ns_key] if ns_key in self.emu._objects else None
        labels = ((ns_obj.raw.get("metadata") or {}).get("labels") or {}) if ns_obj is not None \
            and not ns_obj.deleted else {}
        limited = self._limit_ranger(namespace, pod, name)
        if limited:
            return limited
        level = labels.get("pod-security.kubernetes.io/enforce", "privileged")
        violations = _pod_security(pod, level)
        if violations:
            return 'pods "%s" is forbidden: violates PodSecurity "%s:%s": %s' % (
                name, level, labels.get("pod-security.kubernetes.io/enforce-version", "latest"), ", ".join(violations))
        for hook_name, message, match in self.webhooks:
            if match(pod):      # ValidatingAdmissionWebhook runs before ResourceQuota (the plugins' order)
                return 'admission webhook "%s" denied the request: %s' % (hook_name, message)
        for (res, ns, qname), obj in sorted(self.emu._objects.items(), key=lambda kv: str(kv[0])):
            if res != QUOTAS or ns != namespace or obj.deleted:
                continue
            hard = (obj.raw.get("spec") or {}).get("hard") or {}
            missing = _quota_missing(pod, hard)
            if missing:
                return 'pods "%s" is forbidden: failed quota: %s: must specify %s' % (name, qname, missing)
            exceeded = _quota_exceeded(pod, hard, [o.raw for _k, o in self._all(PODS) if o.raw["metadata"].get(
                "namespace") == namespace and (o.raw.get("status") or {}).get("phase") not in ("Succeeded", "Failed")])
            if exceeded:
                return 'pods "%s" is forbidden: exceeded quota: %s, %s' % (name, qname, exceeded)
        return None

    def _limit_ranger(self, namespace, pod, name):
        """Apply every LimitRange of ``namespace`` to ``pod`` (in place), as the LimitRanger admission plugin
        does; its 403 message when a container breaks a max or min."""
        problems = []
        for (res, ns, _lname), obj in sorted(self.emu._objects.items(), key=lambda kv: str(kv[0])):
            if res == LIMITRANGES and ns == namespace and not obj.deleted:
                problems.extend(_limit_range(pod, (obj.raw.get("spec") or {}).get("limits") or []))
        if not problems:
            return None
        return 'pods "%s" is forbidden: %s' % (name, problems[0] if len(problems) == 1
                                               else "[%s]" % ", ".join(problems))

    async def owner_event(self, owner, namespace, reason, message, type_="Warning", component="job-controller",
                          once_key=None):
        """An event on an owner object (e.g. the job controller's FailedCreate on a Job), recorded once per
        ``once_key`` (default: the message)."""
        seen = (owner.get("uid"), reason, message if once_key is None else once_key)
        if seen in self.events_seen:
            return
        self.events_seen.add(seen)
        await self._add(EVENTS, namespace, {
            "apiVersion": "v1", "kind": "Event", "metadata": {"name": "%s.%x" % (owner["name"], random.getrandbits(48))},
            "involvedObject": {"kind": owner.get("kind"), "namespace": namespace, "name": owner["name"],
                               "uid": owner.get("uid"), "apiVersion": owner.get("apiVersion")},
            "reason": reason, "message": message, "type": type_, "count": 1,
            "source": {"component": component}, "firstTimestamp": _now(), "lastTimestamp": _now(),
            "reportingComponent": component})

    async def _emit(self, resource, kind, raw):
        await self.emu._buses[resource].put({"type": kind, "object": raw})

    async def _patch(self, key, changes):
        if key[0] == NODES and self.node_status_delay_ticks and ((changes.get("status") or {}).get("allocatable")):
            changes = self._delay_node_status(key[2], changes)
            if not changes:
                return
        obj = self.emu._objects[key]
        changes = dict(changes)
        changes.setdefault("metadata", {})["resourceVersion"] = str(next(self.emu._rv))
        obj.patch(changes)
        await self._emit(key[0], "MODIFIED", obj.raw)

    async def _add(self, resource, namespace, body):
        md = body.setdefault("metadata", {})
        if resource == PODS:
            owners = md.get("ownerReferences") or []
            # PodSecurity and ResourceQuota are validating admission: they run after the store generated the name
            # (registry/generic/registry/store.go BeforeCreate, then createValidation), and their 403 names the pod
            # with it (apiserver/pkg/endpoints/handlers/rest AdmissionToValidateObjectFunc: "in case the generated
            # name is populated"; admission/errors.go extractResourceName): 'pods "<job>-<index>-x7k2p" is forbidden'
            denied = self.admit(namespace, body)
            if denied:       # the controller's create is refused: its event on the owner (_refusal_event), recorded
                # once per owner and refusal (the controllers back off between tries: a test sees one event)
                for ref in owners[:1]:
                    reason, message, component = _refusal_event(ref, md["name"], denied)
                    await self.owner_event(ref, namespace, reason, message, component=component,
                                           once_key=denied.replace(md["name"], ""))
                return None
        if resource == PODS and self.grace_ticks:
            md.setdefault("finalizers", []).append(FINALIZER)
        md.setdefault("namespace", namespace)
        md.setdefault("uid", str(uuid.uuid4()))
        md.setdefault("creationTimestamp", _now())
        md["resourceVersion"] = str(next(self.emu._rv))
        key = (resource, namespace, md["name"])
        if key in self.emu._objects:
            self.emu._objects[key].create(body)
        else:
            self.emu._objects[key] = body
        await self._emit(resource, "ADDED", self.emu._objects[key].raw)

    async def _delete(self, key):
        self.own_deletions += 1
        obj = self.emu._objects[key]
        raw = obj.raw
        obj.delete()
        await self._emit(key[0], "DELETED", raw)

    async def _remove(self, key):
        """Delete as a controller does (through the API): a pod with a grace period first terminates."""
        raw = self.emu._objects[key].raw
        if key[0] == PODS and self.grace_ticks:
            if not raw["metadata"].get("deletionTimestamp"):
                await self._patch(key, {"metadata": {"deletionTimestamp": _now(), "deletionGracePeriodSeconds": 30}})
            return
        if key[0] == PODS:
            self._forget(raw)
        await self._delete(key)

    async def event(self, pod, reason, message, type_="Normal", component="kubelet"):
        md = pod["metadata"]
        name = "%s.%x" % (md["name"], random.getrandbits(48))
        await self._add(EVENTS, md["namespace"], {
            "apiVersion": "v1", "kind": "Event", "metadata": {"name": name},
            "involvedObject": {"kind": "Pod", "namespace": md["namespace"], "name": md["name"],
                               "uid": md.get("uid"), "apiVersion": "v1"},
            "reason": reason, "message": message, "type": type_, "count": 1,
            "source": {"component": component}, "firstTimestamp": _now(), "lastTimestamp": _now(),
            "reportingComponent": component})

    # --- the loop
    async def run(self):
        while True:
            try:
                async with self.emu._lock:
                    await self.reconcile()
                    self.ticks += 1
            except Exception as exc:   # a bug here must fail tests loudly, not hang them
                self.error = exc
                raise
            await asyncio.sleep(self.tick_s)

    async def reconcile(self):
        await self._mpi_operator()
        await self._volcano()
        for hook in self.hooks:
            await hook(self)
        await self._jobs()
        await self._ttl()
        await self._foreground()
        await self._gc()
        await self._node_status()
        await self._scheduler()
        await self._kubelet()
        self._reap_vanished()

    # --- job controller
    async def _jobs(self):
        by_owner = {}
        for _key, obj in self._all(PODS):
            for ref in obj.raw["metadata"].get("ownerReferences") or []:
                by_owner.setdefault(ref.get("uid"), []).append(obj.raw)
        for key, obj in self._all(JOBS):
            job = obj.raw
            md, spec, status = job["metadata"], job.get("spec") or {}, job.get("status") or {}
            finished = any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
                           for c in status.get("conditions") or [])
            if md.get("deletionTimestamp") or finished:
                continue
            mine = by_owner.get(md["uid"], [])
            # pods deleted by someone else count as failed (their state is gone)
            known = self.job_pods.setdefault(md["uid"], {})
            for p in mine:
                known[p["metadata"]["name"]] = p
            phases = {n: (p.get("status") or {}).get("phase") for n, p in known.items()}
            live = {p["metadata"]["name"] for p in mine}
            for name in list(known):
                if name not in live and phases.get(name) not in ("Succeeded", "Failed"):
                    phases[name] = "Failed"
            succeeded = sum(1 for v in phases.values() if v == "Succeeded")
            failed = sum(1 for v in phases.values() if v == "Failed")
            active = [n for n in live if phases.get(n) not in ("Succeeded", "Failed")]
            indexed = spec.get("completionMode") == "Indexed"
            completions = spec.get("completions")
            parallelism = spec.get("parallelism", 1 if completions is None else completions)
            want = completions if completions is not None else parallelism
            backoff = spec.get("backoffLimit", 6)
            changes = {"status": {"active": len(active), "succeeded": succeeded, "failed": failed,
                                  "startTime": status.get("startTime") or _now()}}
            deadline = spec.get("activeDeadlineSeconds")
            started = self.job_started.setdefault(md["uid"], self.clock())
            cond = None
            if succeeded >= want:
                cond = ("Complete", None, None)
            elif failed > backoff:
                cond = ("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit")
            elif deadline is not None and self.clock() - started >= deadline:
                cond = ("Failed", "DeadlineExceeded", "Job was active longer than specified deadline")
            if cond:
                ctype, reason, message = cond
                condition = {"type": ctype, "status": "True", "lastTransitionTime": _now(), "lastProbeTime": _now()}
                if reason:
                    condition.update(reason=reason, message=message)
                changes["status"]["conditions"] = [condition]
                if ctype == "Complete":
                    changes["status"]["completionTime"] = _now()
                for name in active:     # the job controller deletes what still runs (deleteActivePods):
                    # SIGTERM, the grace period (pod_grace_ticks), then gone - its log with it
                    await self._remove((PODS, md["namespace"], name))
                changes["status"]["active"] = 0
                await self._patch(key, changes)
                continue
            # create the pods that are missing
            if indexed:
                done_or_running = {(p.get("metadata") or {}).get("annotations", {}).get(INDEX_KEY)
                                   for n, p in known.items()
                                   if phases.get(n) == "Succeeded" or n in active}
                todo = [str(i) for i in range(want) if str(i) not in done_or_running]
                todo = todo[:max(0, parallelism - len(active))]
            else:
                todo = [None] * max(0, min(parallelism, want - succeeded) - len(active))
            for index in todo:
                await self._make_job_pod(job, index)
            if status.get("active") != len(active) or status.get("succeeded") != succeeded \
                    or status.get("failed") != failed:
                await self._patch(key, changes)

    async def _ttl(self):
        """The TTL-after-finished controller (pkg/controller/ttlafterfinished/ttlafterfinished_controller.go): a
        finished Job (Complete/Failed) with ``ttlSecondsAfterFinished`` is deleted that many cluster seconds after
        it finished, with propagationPolicy Foreground - its pods, and so their logs, go with it. The operators do
        the same with their own field (mpi-operator ``runPolicy.ttlSecondsAfterFinished``, Volcano
        ``spec.ttlSecondsAfterFinished``)."""
        for resource, ttl_of, done_of in (
                (JOBS, lambda o: (o.get("spec") or {}).get("ttlSecondsAfterFinished"),
                 lambda o: any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
                               for c in (o.get("status") or {}).get("conditions") or [])),
                (MPIJOBS, lambda o: ((o.get("spec") or {}).get("runPolicy") or {}).get("ttlSecondsAfterFinished"),
                 lambda o: any(c.get("type") in ("Succeeded", "Failed") and c.get("status") == "True"
                               for c in (o.get("status") or {}).get("conditions") or [])),
                (VCJOBS, lambda o: (o.get("spec") or {}).get("ttlSecondsAfterFinished"),
                 lambda o: (((o.get("status") or {}).get("state") or {}).get("phase")
                            in ("Completed", "Aborted", "Failed")))):
            for key, obj in self._all(resource):
                raw = obj.raw
                ttl = ttl_of(raw)
                if ttl is None or raw["metadata"].get("deletionTimestamp") or not done_of(raw):
                    continue
                finished = self.finished_at.setdefault(raw["metadata"]["uid"], self.clock())
                if self.clock() - finished >= int(ttl):
                    await self._delete_foreground(key)

    def _delay_node_status(self, node, changes):
        """Allocatable changes reach the Node's status ``node_status_delay_ticks`` after the device plugin
        registered them (the kubelet's node-status update period, 10 s by default: --node-status-update-frequency);
        until then the scheduler still sees the old values. Returns what may be written now (nothing)."""
        node_dict = next((n for n in self.nodes if n["name"] == node), {})
        current = (self.emu._objects[(NODES, None, node)].raw.get("status") or {}).get("allocatable") or {}
        for res, value in changes["status"]["allocatable"].items():
            pending = self.node_status_pending.get((node, res))
            if pending is None or pending[0] != value:
                self.node_status_pending[(node, res)] = (value, self.ticks + self.node_status_delay_ticks)
            if res in current:
                node_dict.setdefault("allocatable", {})[res] = current[res]
            else:
                (node_dict.get("allocatable") or {}).pop(res, None)
        return None

    async def _node_status(self):
        due = {}
        for (node, res), (value, tick) in list(self.node_status_pending.items()):
            if tick <= self.ticks:
                due.setdefault(node, {})[res] = value
                del self.node_status_pending[(node, res)]
        for node, alloc in sorted(due.items()):
            next((n for n in self.nodes if n["name"] == node), {}).setdefault("allocatable", {}).update(alloc)
            obj = self.emu._objects[(NODES, None, node)]
            obj.patch({"status": {"allocatable": alloc, "capacity": alloc},
                       "metadata": {"resourceVersion": str(next(self.emu._rv))}})
            await self._emit(NODES, "MODIFIED", obj.raw)

    async def _make_job_pod(self, job, index):
        md, spec = job["metadata"], job.get("spec") or {}
        template = json.loads(json.dumps(spec.get("template") or {}))
        suffix = _suffix()
        name = "%s-%s%s" % (md["name"], "%s-" % index if index is not None else "", suffix)
        tmd = template.get("metadata") or {}
        labels = dict(tmd.get("labels") or {})
        labels.update({"job-name": md["name"], "controller-uid": md["uid"],
                       "batch.kubernetes.io/job-name": md["name"], "batch.kubernetes.io/controller-uid": md["uid"]})
        annotations = dict(tmd.get("annotations") or {})
        pspec = template.get("spec") or {}
        if index is not None:
            labels[INDEX_KEY] = index
            annotations[INDEX_KEY] = index
            pspec.setdefault("hostname", "%s-%s" % (md["name"], index))
        await self._add(PODS, md["namespace"], {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": labels, "annotations": annotations,
                         "ownerReferences": [{"apiVersion": "batch/v1", "kind": "Job", "name": md["name"],
                                              "uid": md["uid"], "controller": True,
                                              "blockOwnerDeletion": True}]},
            "spec": pspec, "status": {"phase": "Pending"}})

    async def _gc(self):
        """Delete what is owned only by objects that are gone (the GC after Background deletion)."""
        deletions = self.emu.deletions + self.own_deletions
        if deletions == self.gc_seen:
            return              # nothing was deleted since the last pass: nothing can be orphaned
        self.gc_seen = deletions
        uids = {obj.raw["metadata"].get("uid") for _key, obj in self.emu._objects.items() if not obj.deleted}
        for key, obj in list(self.emu._objects.items()):
            if obj.deleted:
                continue
            owners = obj.raw["metadata"].get("ownerReferences") or []
            if owners and not any(r.get("uid") in uids for r in owners):
                await self._remove(key)

    # --- operators (only where the FakeApiServer serves their CRD)
    def _owned_pods(self, owner_uid):
        return [(key, obj.raw) for key, obj in self._all(PODS)
                if any(r.get("uid") == owner_uid for r in obj.raw["metadata"].get("ownerReferences") or [])]

    async def _finish_owner(self, key, owned, status):
        """Kill the owner's pods that still run (cleanPodPolicy Running / Volcano's CompleteJob) and set status."""
        for pkey, pod in owned:
            if (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed"):
                await self._remove(pkey)
        await self._patch(key, {"status": status})

    async def _mpi_operator(self):
        """kubeflow mpi-operator v0.8.2 (tests/k8s/fake_operators.py)."""
        await fake_operators.mpi_operator(self, JOBS, PODS)

    async def _volcano(self):
        """Volcano's job controller with its ssh and svc plugins (tests/k8s/fake_operators.py)."""
        await fake_operators.volcano(self, PODS)

    async def _add_template_pod(self, ns, name, template, owner, labels, subdomain=None, default=None,
                                annotations=None):
        template = json.loads(json.dumps(template))
        tmd = template.get("metadata") or {}
        pspec = template.get("spec") or {}
        pspec.setdefault("hostname", name)
        if subdomain:
            pspec.setdefault("subdomain", subdomain)
        if default:
            self.defaults[name] = default
        await self._add(PODS, ns, {
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "labels": dict(tmd.get("labels") or {}, **labels),
                         "annotations": dict(tmd.get("annotations") or {}, **(annotations or {})),
                         "ownerReferences": owner},
            "spec": pspec, "status": {"phase": "Pending"}})

    def _forget(self, pod):
        self._stop_process(pod)
        self.state.pop(pod["metadata"].get("uid"), None)

    # --- scheduler
    def _used(self):
        used = {}
        for _key, obj in self._all(PODS):
            pod = obj.raw
            node = (pod.get("spec") or {}).get("nodeName")
            if not node or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            used.setdefault(("__pods__", node), []).append(pod)
            for res, qty in _requests(pod).items():
                used[(node, res)] = used.get((node, res), 0) + qty
        return used

    def fit(self, pod, node, used):
        """[] when ``pod`` fits ``node``, else the reasons of the first filter plugin that refuses it, in the default
        profile's order and words (pkg/scheduler/framework/plugins): NodeName, TaintToleration, NodeAffinity (and
        its PreFilter: a matchFields metadata.name In list leaves the other nodes out, "node(s) didn't satisfy
        plugin(s) [NodeAffinity]" - schedule_one.go findNodesThatFitPod's status of the nodes absent from the
        PreFilter result), NodePorts (a hostPort a pod bound there holds), NodeResourcesFit (noderesources/fit.go
        fitsRequest: every resource the pod requests beyond the node's allocatable minus the requests of the pods
        bound there, "Insufficient <name>"; "Too many pods" past allocatable pods), InterPodAffinity. A node that
        publishes no cpu/memory allocatable is not checked for them (the fakes' hand-made nodes)."""
        spec = pod.get("spec") or {}
        labels = node.get("labels") or {}
        if not _affinity_ok(spec, {}, node["name"], fields_only=True):
            return ["node(s) didn't satisfy plugin(s) [NodeAffinity]"]
        if spec.get("nodeName") and spec["nodeName"] != node["name"]:
            return ["node(s) didn't match the requested node name"]
        for taint in node.get("taints") or []:
            if taint.get("effect") in ("NoSchedule", "NoExecute") and not _tolerated(taint, spec.get("tolerations")):
                return ["node(s) had untolerated taint {%s: %s}" % (taint["key"], taint.get("value", ""))]
        selector = spec.get("nodeSelector") or {}
        if any(labels.get(k) != v for k, v in selector.items()) or not _affinity_ok(spec, labels, node["name"]):
            return ["node(s) didn't match Pod's node affinity/selector"]
        uid = (pod.get("metadata") or {}).get("uid")
        taken = [hp for other in used.get(("__pods__", node["name"]), []) for hp in _host_ports(other)
                 if uid is None or other["metadata"].get("uid") != uid]
        if _ports_conflict(_host_ports(pod), taken):
            return ["node(s) didn't have free ports for the requested pod ports"]
        short = self._insufficient(pod, node, used)
        if short:
            return short
        if not self._anti_affinity_ok(pod, node, used):
            return ["node(s) didn't match pod anti-affinity rules"]
        return []

    @staticmethod
    def _insufficient(pod, node, used):
        """NodeResourcesFit's reasons for ``pod`` on ``node`` (fitsRequest): "Too many pods", then cpu, memory, then
        the extended resources the pod requests, sorted."""
        alloc = node.get("allocatable") or {}
        out = []
        if "pods" in alloc and len(used.get(("__pods__", node["name"]), [])) + 1 > _quantity(alloc["pods"]):
            out.append("Too many pods")
        wants = _requests(pod)
        for res in ["cpu", "memory"] + sorted(r for r in wants if "/" in r):
            qty = wants.get(res, 0)
            if qty <= 0 or (res in ("cpu", "memory") and res not in alloc):
                continue
            have = _amount(alloc[res]) if res in ("cpu", "memory") else _quantity(alloc.get(res, 0))
            if qty > have - used.get((node["name"], res), 0):
                out.append("Insufficient %s" % res)
        return out

    def _anti_affinity_ok(self, pod, node, used):
        """Required pod anti-affinity (the scheduler's InterPodAffinity filter): no pod of the term's namespaces
        (default: the pod's own) that its labelSelector matches may run in the node's topology domain (the nodes
        with the same value of ``topologyKey``, e.g. kubernetes.io/hostname: the node itself)."""
        terms = (((pod.get("spec") or {}).get("affinity") or {}).get("podAntiAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution") or []
        for term in terms:
            key = term.get("topologyKey")
            value = (node.get("labels") or {}).get(key)
            if value is None:
                continue
            namespaces = term.get("namespaces") or [pod["metadata"].get("namespace")]
            domain = [n["name"] for n in self.nodes if (n.get("labels") or {}).get(key) == value]
            for name in domain:
                for other in used.get(("__pods__", name), []):
                    if other["metadata"].get("namespace") in namespaces and other["metadata"].get("uid") != \
                            pod["metadata"].get("uid") and _selector_matches(term.get("labelSelector") or {},
                                                                             other["metadata"].get("labels") or {}):
                        return False
        return True

    async def _scheduler(self):
        used = self._used()
        for key, obj in self._all(PODS):
            pod = obj.raw
            if (pod.get("spec") or {}).get("nodeName") and self.state.get(pod["metadata"]["uid"]):
                continue
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            reasons = {}
            chosen = None
            for node in self.nodes:
                why = self.fit(pod, node, used)
                if not why:
                    chosen = node
                    break
                reasons[node["name"]] = why
            uid = pod["metadata"]["uid"]
            if chosen is None:
                message = fit_error(self.nodes, reasons)
                cond = [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                         "message": message, "lastTransitionTime": _now()}]
                if (pod.get("status") or {}).get("conditions") != cond and \
                        self.state.get(uid, {}).get("unsched") != message:
                    self.state[uid] = {"stage": "unschedulable", "unsched": message}
                    await self._patch(key, {"status": {"phase": "Pending", "conditions": cond}})
                    await self.event(pod, "FailedScheduling", message, "Warning", "default-scheduler")
                continue
            for res, qty in _requests(pod).items():
                used[(chosen["name"], res)] = used.get((chosen["name"], res), 0) + qty
            bound = dict(pod, spec=dict(pod.get("spec") or {}, nodeName=chosen["name"]))
            used.setdefault(("__pods__", chosen["name"]), []).append(bound)
            fallback = Behaviour(self.defaults[pod["metadata"]["name"]]) if pod["metadata"]["name"] in self.defaults \
                else self.default     # operators' workers run sshd: they never finish by themselves
            behaviour = next((r for r in self.rules if r.matches(bound)), fallback)
            self.state[uid] = {"stage": "bound", "ticks": 0, "behaviour": behaviour}
            await self._patch(key, {"spec": {"nodeName": chosen["name"]},
                                    "status": {"phase": "Pending", "conditions": [
                                        {"type": "PodScheduled", "status": "True", "lastTransitionTime": _now()}]}})
            await self.event(pod, "Scheduled", "Successfully assigned %s/%s to %s" % (
                pod["metadata"]["namespace"], pod["metadata"]["name"], chosen["name"]), "Normal", "default-scheduler")

    # --- kubelet
    async def _kubelet(self):
        for key, obj in self._all(PODS):
            pod = obj.raw
            if pod["metadata"].get("deletionTimestamp"):      # terminating: gone after the grace period
                self._stop_process(pod)
                since = self.terminating.setdefault(pod["metadata"]["uid"], self.ticks)
                if self.ticks - since >= self.grace_ticks:
                    self._forget(pod)
                    await self._delete(key)
                continue
            st = self.state.get(pod["metadata"]["uid"])
            if not st or st["stage"] in ("unschedulable", "done"):
                continue
            st["ticks"] += 1
            b = st["behaviour"]
            containers = list((pod.get("spec") or {}).get("containers") or [])
            names = [c.get("name") for c in containers] or ["main"]
            image = containers[0].get("image", "") if containers else ""
            ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
            restart = (pod.get("spec") or {}).get("restartPolicy", "Always")
            if await self._kubelet_outcome(key, pod, st, names, image):
                continue
            if st["stage"] == "bound" and st["ticks"] <= b.start_ticks:
                if st["ticks"] == 1:
                    await self._patch(key, {"status": {"containerStatuses": [
                        _cs(n, image, waiting=("ContainerCreating", None)) for n in names]}})
                    await self.event(pod, "Pulling", 'Pulling image "%s"' % image)
                continue
            if st["stage"] == "bound":
                if b.kind == "image_pull":
                    msg = 'Failed to pull image "%s": rpc error: code = NotFound desc = failed to pull and unpack ' \
                          'image "%s": failed to resolve reference "%s": not found' % (image, image, image)
                    await self._patch(key, {"status": {"containerStatuses": [
                        _cs(n, image, waiting=("ErrImagePull", msg)) for n in names]}})
                    await self.event(pod, "Failed", msg, "Warning")
                    st["stage"] = "pull_backoff"
                    continue
                await self.event(pod, "Pulled", 'Container image "%s" already present on machine' % image)
                for n in names:
                    await self.event(pod, "Started", "Started container %s" % n)
                    self.logs[(ns, name, n)] = b""
                if b.kind == "process":
                    st["handle"] = b.runner.start(pod)
                ready = b.kind != "process"     # a process pod: once its readiness probes pass (_process_tick)
                st["ready"] = ready
                await self._patch(key, {"status": {"phase": "Running", "startTime": _now(), "containerStatuses": [
                    _cs(n, image, running=True, ready=ready) for n in names], "conditions": _conditions(ready)}})
                st["stage"], st["ticks"] = "running", 0
            elif st["stage"] == "running" and b.kind == "process":
                await self._process_tick(key, pod, st, names, image)
            elif st["stage"] == "pull_backoff":
                msg = 'Back-off pulling image "%s"' % image
                await self._patch(key, {"status": {"containerStatuses": [
                    _cs(n, image, waiting=("ImagePullBackOff", msg)) for n in names]}})
                await self.event(pod, "BackOff", msg, "Normal")
                st["stage"] = "done"
            elif st["stage"] == "running" and st["ticks"] >= b.run_ticks and b.kind != "hang":
                for n in names:
                    self.logs[(ns, name, n)] = b.log
                if b.kind == "crash_loop" and restart != "Never":
                    for n in names:
                        self.previous_logs[(ns, name, n)] = b.log
                    await self._patch(key, {"status": {"phase": "Running", "containerStatuses": [
                        _cs(n, image, waiting=("CrashLoopBackOff", "back-off 10s restarting failed container=%s "
                                                                   "pod=%s" % (n, name)),
                            last=(b.exit_code, "Error"), restarts=3) for n in names]}})
                    await self.event(pod, "BackOff", "Back-off restarting failed container %s in pod %s" % (
                        names[0], name), "Warning")
                    st["stage"] = "done"
                    continue
                ok = b.exit_code == 0 and b.kind in ("succeed", "image_pull_transient")
                reason = "Completed" if ok else {"oom": "OOMKilled"}.get(b.kind, "Error")
                phase = "Succeeded" if ok else "Failed"
                await self._patch(key, {"status": {"phase": phase, "containerStatuses": [
                    _cs(n, image, terminated=(b.exit_code, reason)) for n in names],
                    "conditions": _conditions(False, "PodCompleted")}})
                if phase == "Failed" and b.kind == "oom":
                    await self.event(pod, "OOMKilling", "Memory cgroup out of memory: Killed process (%s)"
                                     % names[0], "Warning", "kernel-monitor")
                st["stage"] = "done"

    async def _kubelet_outcome(self, key, pod, st, names, image):
        """The kubelet outcomes of ``container_creating``, ``image_pull_transient`` and ``evicted``; True when
        this tick's work for the pod is done here."""
        b = st["behaviour"]
        if b.kind == "container_creating":
            if st["stage"] == "bound":
                await self._patch(key, {"status": {"containerStatuses": [
                    _cs(n, image, waiting=("ContainerCreating", None)) for n in names]}})
                st["stage"] = "creating"
            if st["stage"] == "creating" and st["ticks"] % 25 == 1:    # the kubelet retries with back-off
                await self.event(pod, b.reason, b.message % {
                    "handler": (pod.get("spec") or {}).get("runtimeClassName") or ""} if "%(" in b.message
                    else b.message, "Warning")
            return True
        if b.kind == "image_pull_transient" and st["stage"] == "bound" and st["ticks"] <= b.pull_ticks:
            if st["ticks"] in (1, b.pull_ticks):
                reason = "ErrImagePull" if st["ticks"] == 1 else "ImagePullBackOff"
                msg = 'Failed to pull image "%s": rpc error: code = Unknown desc = failed to pull and unpack image ' \
                      '"%s": failed to copy: httpReadSeeker: failed open: unexpected status code 429 Too Many ' \
                      'Requests' % (image, image) if reason == "ErrImagePull" else 'Back-off pulling image "%s"' % image
                await self._patch(key, {"status": {"containerStatuses": [
                    _cs(n, image, waiting=(reason, msg)) for n in names]}})
                await self.event(pod, "Failed" if reason == "ErrImagePull" else "BackOff", msg, "Warning")
            return True
        if b.kind == "evicted" and st["stage"] == "running" and st["ticks"] >= b.run_ticks:
            ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
            for n in names:
                self.logs[(ns, name, n)] = b.log
            msg = "The node was low on resource: memory. Threshold quantity: 100Mi, available: 51200Ki. Container " \
                  "%s was using 1048576Ki, request is 0, has larger consumption of memory. " % names[0]
            await self._patch(key, {"status": {"phase": "Failed", "reason": "Evicted", "message": msg,
                                               "conditions": _conditions(False, "PodFailed"),
                                               "containerStatuses": [_cs(n, image, terminated=(137, "Error"))
                                                                     for n in names]}})
            await self.event(pod, "Evicted", msg, "Warning")
            st["stage"] = "done"
            return True
        return False

    async def _process_tick(self, key, pod, st, names, image):
        """A ``process`` pod: its logs so far, and its end when its processes ended."""
        b, handle = st["behaviour"], st.get("handle")
        ns, name = pod["metadata"]["namespace"], pod["metadata"]["name"]
        for container, data in (b.runner.logs(handle) or {}).items():
            self.logs[(ns, name, container)] = data
        ended = b.runner.poll(handle)
        if ended is None:
            ready = b.runner.is_ready(handle)
            if ready != st.get("ready"):       # the prober's verdict changed: Ready and the containers' ready flags
                st["ready"] = ready
                await self._patch(key, {"status": {"containerStatuses": [
                    _cs(n, image, running=True, ready=ready) for n in names], "conditions": _conditions(ready)}})
            return
        codes = [ended.get(n, (1, "Error")) for n in names]
        phase = "Succeeded" if all(code == 0 for code, _reason in codes) else "Failed"
        await self._patch(key, {"status": {"phase": phase, "containerStatuses": [
            _cs(n, image, terminated=(code, reason)) for n, (code, reason) in zip(names, codes)],
            "conditions": _conditions(False, "PodCompleted" if phase == "Succeeded" else "PodFailed")}})
        st["stage"] = "done"

    def _reap_vanished(self):
        """The processes of ``process`` pods that are gone from the store (deleted at once, or garbage-collected)."""
        present = set(obj.raw["metadata"].get("uid") for _key, obj in self._all(PODS))
        for uid, st in list(self.state.items()):
            if uid not in present and st.get("handle") is not None and not st.get("stopping"):
                st["stopping"] = True
                st["behaviour"].runner.stop(st["handle"], 0)

    def stop_all_processes(self):
        """Every ``process`` pod's processes (the server stops)."""
        for st in list(self.state.values()):
            b = st.get("behaviour")
            if b is not None and b.kind == "process" and st.get("handle") is not None and not st.get("stopping"):
                st["stopping"] = True
                b.runner.stop(st["handle"], 0)

    def _stop_process(self, pod):
        st = self.state.get(pod["metadata"]["uid"]) or {}
        b = st.get("behaviour")
        if b is not None and b.kind == "process" and st.get("handle") is not None and not st.get("stopping"):
            st["stopping"] = True
            b.runner.stop(st["handle"], (pod["metadata"].get("deletionGracePeriodSeconds") or 30))


def _conditions(ready, reason=None):
    """A scheduled pod's conditions: PodScheduled, Initialized, ContainersReady and Ready (False with ``reason``:
    PodCompleted once it ended, ContainersNotReady while a probe fails) - what mpi-operator's countReadyWorkerPods
    and a Service's endpoints (publishNotReadyAddresses false) look at."""
    status = "True" if ready else "False"
    reason = None if ready else (reason or "ContainersNotReady")
    out = [{"type": "PodScheduled", "status": "True", "lastTransitionTime": _now()},
           {"type": "Initialized", "status": "True", "lastTransitionTime": _now()}]
    for ctype in ("ContainersReady", "Ready"):
        cond = {"type": ctype, "status": status, "lastTransitionTime": _now()}
        if reason:
            cond["reason"] = reason
        out.append(cond)
    return out


def _refusal_event(owner, pod, denied):
    """(reason, message, component) of the event a controller records on its ``owner`` (an ownerReference) when the
    API refuses its pod ``pod`` with ``denied`` (the 403's message):

    - Job, DaemonSet (pkg/controller/controller_utils.go RealPodControl.createPods):
      FailedCreate "Error creating: <err>";
    - MPIJob (mpi-operator mpi_job_controller.go getOrCreateWorker): MPIJobFailed "worker pod created failed: <err>";
    - Volcano Job (job_controller_actions.go syncJob): FailedCreate "Error creating pods: [failed to create pod <name>,
      err: <the StatusError as Go's %#v prints it>]".
    """
    kind, group = owner.get("kind"), (owner.get("apiVersion") or "").split("/")[0]
    if kind == "MPIJob":
        return "MPIJobFailed", "worker pod created failed: %s" % denied, "mpi-job-controller"
    if group == "batch.volcano.sh":
        status = ('&errors.StatusError{ErrStatus:v1.Status{TypeMeta:v1.TypeMeta{Kind:"", APIVersion:""}, '
                  'ListMeta:v1.ListMeta{SelfLink:"", ResourceVersion:"", Continue:"", RemainingItemCount:(*int64)(nil)}, '
                  'Status:"Failure", Message:%s, Reason:"Forbidden", Details:(*v1.StatusDetails)(nil), Code:403}}'
                  % json.dumps(denied))
        return ("FailedCreate", "Error creating pods: [failed to create pod %s, err: %s]" % (pod, status),
                "vc-controller-manager")
    component = {"Job": "job-controller", "DaemonSet": "daemonset-controller"}.get(kind, "controller")
    return "FailedCreate", "Error creating: %s" % denied, component


def _cs(name, image, running=False, waiting=None, terminated=None, last=None, restarts=0, ready=None):
    state = {}
    if running:
        state["running"] = {"startedAt": _now()}
    if waiting:
        state["waiting"] = {"reason": waiting[0], "message": waiting[1]}
    if terminated:
        state["terminated"] = {"exitCode": terminated[0], "reason": terminated[1], "startedAt": _now(),
                               "finishedAt": _now()}
    out = {"name": name, "image": image, "imageID": "", "ready": bool(running) if ready is None else bool(ready),
           "started": bool(running),
           "restartCount": restarts, "state": state, "lastState": {}}
    if last:
        out["lastState"] = {"terminated": {"exitCode": last[0], "reason": last[1], "finishedAt": _now()}}
    return out


def _requests(pod):
    """What ``pod`` asks of a node, as NodeResourcesFit and the pod quota evaluator count it (component-helpers
    resource.PodRequests): per resource the sum over its containers, raised to any one init container's; requests
    default to limits (API defaulting). ``cpu`` in cores, ``memory`` in bytes (``_amount``), extended resources
    (names with a '/': nvidia.com/gpu, rdma/...) as counts."""
    def of(container):
        res = container.get("resources") or {}
        merged = dict(res.get("limits") or {}, **(res.get("requests") or {}))
        return dict((k, _amount(v) if k in ("cpu", "memory") else _quantity(v)) for k, v in merged.items()
                    if k in ("cpu", "memory") or "/" in k)

    spec = pod.get("spec") or {}
    total = {}
    for c in spec.get("containers") or []:
        for k, v in of(c).items():
            total[k] = total.get(k, 0) + v
    for c in spec.get("initContainers") or []:
        for k, v in of(c).items():
            total[k] = max(total.get(k, 0), v)
    return total


def _host_ports(pod):
    """The (protocol, hostIP, hostPort) a pod's containers claim on their node (NodePorts: hostIP default 0.0.0.0,
    protocol TCP)."""
    return [(p.get("protocol") or "TCP", p.get("hostIP") or "0.0.0.0", int(p["hostPort"]))
            for c in (pod.get("spec") or {}).get("containers") or [] for p in c.get("ports") or [] if p.get("hostPort")]


def _ports_conflict(wanted, taken):
    """HostPortInfo.CheckConflict (pkg/scheduler/framework/types.go): the same protocol and port, and the same IP or
    either 0.0.0.0."""
    return any(proto == p2 and port == port2 and "0.0.0.0" in (ip, ip2) or (proto, ip, port) == (p2, ip2, port2)
               for proto, ip, port in wanted for p2, ip2, port2 in taken)


# the filter plugins' reasons that preemption cannot help (framework.UnschedulableAndUnresolvable: NodeName,
# TaintToleration, NodeAffinity and its PreFilter result); the others (NodePorts, NodeResourcesFit,
# InterPodAffinity) are Unschedulable, and preemption finds no victim in the fake (all pods have one priority)
UNRESOLVABLE = ("node(s) didn't match the requested node name", "node(s) didn't match Pod's node affinity/selector",
                "node(s) didn't satisfy plugin(s) [NodeAffinity]")


def fit_error(nodes, reasons):
    """The scheduler's FailedScheduling message (pkg/scheduler/framework/types.go FitError.Error): "0/N nodes are
    available: " and the histogram of every node's reasons, each "<count> <reason>", sorted as strings and joined
    with ", ", then the preemption's own "preemption: 0/N nodes are available: ..." (pkg/scheduler/framework/
    preemption: "No preemption victims found for incoming pod" for the nodes preemption could help, "Preemption is
    not helpful for scheduling" for the others). ``reasons``: node name -> its reasons (the first failing plugin's:
    NodeResourcesFit lists every insufficient resource)."""
    def histogram(pairs):
        counts = {}
        for reason in pairs:
            counts[reason] = counts.get(reason, 0) + 1
        return ", ".join(sorted("%d %s" % (n, r) for r, n in counts.items()))
    flat = [r for name in reasons for r in reasons[name]]
    verdicts = ["Preemption is not helpful for scheduling" if any(r in UNRESOLVABLE or r.startswith(
        "node(s) had untolerated taint") for r in reasons[name]) else "No preemption victims found for incoming pod"
        for name in reasons]
    return "0/%d nodes are available: %s. preemption: 0/%d nodes are available: %s." % (
        len(nodes), histogram(flat), len(nodes), histogram(verdicts))


# PodSecurity (staging/src/k8s.io/pod-security-admission/policy/): the capabilities baseline allows to add
# (check_capabilities_baseline.go) and the message shape of admission/admission.go ("violates PodSecurity ...")
BASELINE_CAPS = ("AUDIT_WRITE", "CHOWN", "DAC_OVERRIDE", "FOWNER", "FSETID", "KILL", "MKNOD", "NET_BIND_SERVICE",
                 "SETFCAP", "SETGID", "SETPCAP", "SETUID", "SYS_CHROOT")


def _names(containers):
    return ("container %s" if len(containers) == 1 else "containers %s") % ", ".join('"%s"' % c for c in containers)


def _pod_security(pod, level):
    """The PodSecurity violations of ``pod`` at ``level`` (privileged: none), in the checks' own words."""
    if level not in ("baseline", "restricted"):
        return []
    spec = pod.get("spec") or {}
    containers = list(spec.get("initContainers") or []) + list(spec.get("containers") or [])
    out = []
    hosts = ["%s=true" % k for k in ("hostNetwork", "hostPID", "hostIPC") if spec.get(k)]
    if hosts:
        out.append("host namespaces (%s)" % ", ".join(hosts))
    privileged = [c["name"] for c in containers if (c.get("securityContext") or {}).get("privileged")]
    if privileged:
        out.append("privileged (%s must not set securityContext.privileged=true)" % _names(privileged))
    caps = [(c["name"], [a for a in (((c.get("securityContext") or {}).get("capabilities") or {}).get("add") or [])
                         if a not in BASELINE_CAPS]) for c in containers]
    caps = [(n, a) for n, a in caps if a]
    if caps:
        out.append("non-default capabilities (%s)" % "; ".join(
            'container "%s" must not include %s in securityContext.capabilities.add' % (
                n, ", ".join('"%s"' % x for x in a)) for n, a in caps))
    host_paths = [v["name"] for v in spec.get("volumes") or [] if v.get("hostPath")]
    if host_paths:
        noun = "volume" if len(host_paths) == 1 else "volumes"
        out.append("hostPath volumes (%s %s)" % (noun, ", ".join('"%s"' % v for v in host_paths)))
    ports = [(c["name"], p["hostPort"]) for c in containers for p in c.get("ports") or [] if p.get("hostPort")]
    if ports:
        out.append("hostPort (%s)" % "; ".join('container "%s" uses hostPort %s' % cp for cp in ports))
    if level == "restricted":
        out.extend(_restricted(spec, containers))
    return out


def _restricted(spec, containers):
    """What ``restricted`` asks beyond baseline (check_allowPrivilegeEscalation.go, check_capabilities_restricted.go,
    check_runAsNonRoot.go, check_seccompProfile_restricted.go)."""
    psc = spec.get("securityContext") or {}
    out = []
    escalate = [c["name"] for c in containers if (c.get("securityContext") or {}).get("allowPrivilegeEscalation")
                is not False]
    if escalate:
        out.append("allowPrivilegeEscalation != false (%s must set securityContext.allowPrivilegeEscalation=false)"
                   % _names(escalate))
    nodrop = [c["name"] for c in containers if "ALL" not in (((c.get("securityContext") or {}).get("capabilities")
                                                              or {}).get("drop") or [])]
    if nodrop:
        out.append('unrestricted capabilities (%s must set securityContext.capabilities.drop=["ALL"])'
                   % _names(nodrop))
    root = [c["name"] for c in containers if not (c.get("securityContext") or {}).get("runAsNonRoot",
                                                                                      psc.get("runAsNonRoot"))]
    if root:
        out.append("runAsNonRoot != true (pod or %s must set securityContext.runAsNonRoot=true)" % _names(root))
    seccomp = [c["name"] for c in containers if ((c.get("securityContext") or {}).get("seccompProfile")
                                                 or psc.get("seccompProfile") or {}).get("type")
               not in ("RuntimeDefault", "Localhost")]
    if seccomp:
        out.append('seccompProfile (pod or %s must set securityContext.seccompProfile.type to "RuntimeDefault" or '
                   '"Localhost")' % _names(seccomp))
    return out


def _limit_range(pod, items):
    """The LimitRanger admission plugin (plugin/pkg/admission/limitranger/admission.go) for one LimitRange's
    ``items`` on ``pod``, in place: each container of type ``Container`` items gets the ``default`` limits and
    ``defaultRequest`` requests it lacks (a LimitRange without defaultRequest defaults it to ``default``:
    SetDefaults_LimitRangeItem), recorded in the ``kubernetes.io/limit-ranger`` annotation
    (``mergeContainerResources``); then the ``max`` (limit) and ``min`` (request) of each resource are checked
    (``PodValidateLimitFunc``). Returns the violations in the plugin's words."""
    problems, notes = [], []
    for item in items:
        if item.get("type") != "Container":
            continue
        limits_default = dict(item.get("default") or {})
        requests_default = dict(limits_default, **(item.get("defaultRequest") or {}))
        for c in (pod.get("spec") or {}).get("containers") or []:
            res = c.setdefault("resources", {})
            limits, requests = res.setdefault("limits", {}), res.setdefault("requests", {})
            for k, v in limits.items():
                requests.setdefault(k, v)          # API defaulting, before admission: requests default to limits
            set_limits = sorted(k for k in limits_default if k not in limits)
            set_requests = sorted(k for k in requests_default if k not in requests)
            limits.update((k, limits_default[k]) for k in set_limits)
            requests.update((k, requests_default[k]) for k in set_requests)
            if set_requests:
                notes.append("%s request for container %s" % (", ".join(set_requests), c.get("name")))
            if set_limits:
                notes.append("%s limit for container %s" % (", ".join(set_limits), c.get("name")))
            for k, most in (item.get("max") or {}).items():
                if k in limits and _amount(limits[k]) > _amount(most):
                    problems.append("maximum %s usage per Container is %s, but limit is %s" % (k, most, limits[k]))
            for k, least in (item.get("min") or {}).items():
                if k in requests and _amount(requests[k]) < _amount(least):
                    problems.append("minimum %s usage per Container is %s, but request is %s" % (k, least, requests[k]))
    if notes:
        pod.setdefault("metadata", {}).setdefault("annotations", {})["kubernetes.io/limit-ranger"] = \
            "LimitRanger plugin set: " + "; ".join(notes)
    return problems


_UNITS = {"m": 1e-3, "": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30,
          "Ti": 2 ** 40}


def _amount(value):
    """A cpu/memory quantity's value ("500m" -> 0.5, "1Gi" -> 2**30)."""
    text = str(value)
    number = text.rstrip("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ")
    return float(number) * _UNITS[text[len(number):]]


def _quota_missing(pod, hard):
    """ResourceQuota admission's "must specify" text for a pod under a quota of ``hard`` (the pod evaluator's
    ``Constraints``, pkg/quota/v1/evaluator/core/pods.go: a quota on cpu/memory requires every container and init
    container to request - or limit - it; "<resource> for: <containers, sorted, ','>" per resource, sorted, "; "
    between; the admission plugin wraps it as "failed quota: <quota>: <that>",
    staging/src/k8s.io/apiserver/pkg/admission/plugin/resourcequota/controller.go), or "" when nothing is missing.
    Requests default to limits, as the API defaults them."""
    wanted = {"cpu": ("requests", "cpu"), "memory": ("requests", "memory"), "requests.cpu": ("requests", "cpu"),
              "requests.memory": ("requests", "memory"), "limits.cpu": ("limits", "cpu"),
              "limits.memory": ("limits", "memory")}
    missing = {}
    spec = pod.get("spec") or {}
    for c in list(spec.get("containers") or []) + list(spec.get("initContainers") or []):
        res = c.get("resources") or {}
        limits = res.get("limits") or {}
        requests = dict(limits, **(res.get("requests") or {}))
        for name in hard:
            if name in wanted:
                kind, what = wanted[name]
                if what not in (requests if kind == "requests" else limits):
                    missing.setdefault(name, []).append(c.get("name"))
    return "; ".join("%s for: %s" % (name, ",".join(sorted(missing[name]))) for name in sorted(missing))


def _pod_usage(pod):
    """The quota usage of one pod (pkg/quota/v1/evaluator/core/pods.go podComputeUsageHelper): pods, count/pods,
    cpu/requests.cpu, memory/requests.memory, limits.cpu, limits.memory and requests.<extended resource>."""
    out = {"pods": 1, "count/pods": 1}
    for res, qty in _requests(pod).items():
        out["requests." + res] = qty
        if res in ("cpu", "memory"):
            out[res] = qty
    for c in (pod.get("spec") or {}).get("containers") or []:
        for res, qty in ((c.get("resources") or {}).get("limits") or {}).items():
            if res in ("cpu", "memory"):
                out["limits." + res] = out.get("limits." + res, 0) + _amount(qty)
    return out


def _quantity_text(name, value):
    """A quota quantity as resource.Quantity's String() gives it for the values here: whole cores, else
    millicores; memory in the largest binary suffix that divides it; counts as integers."""
    if name.endswith("cpu"):
        return "%d" % value if value == int(value) else "%dm" % round(value * 1000)
    if name.endswith("memory"):
        for suffix in ("Ti", "Gi", "Mi", "Ki"):
            if value and value % _UNITS[suffix] == 0:
                return "%d%s" % (value // _UNITS[suffix], suffix)
    return "%d" % value


def _quota_exceeded(pod, hard, pods):
    """ResourceQuota admission's refusal when ``pod``'s usage on top of ``pods``' (the namespace's pods not yet
    terminal: the quota's status.used) goes past ``hard``: "requested: ..., used: ..., limited: ..." with each the
    exceeded resources only, "name=quantity" sorted and joined with "," (apiserver/pkg/admission/plugin/resourcequota
    controller.go CheckRequest and prettyPrint; the caller prefixes "exceeded quota: <quota>, "); "" when it fits."""
    want = dict((k, v) for k, v in _pod_usage(pod).items() if k in hard)
    used = {}
    for other in pods:
        for k, v in _pod_usage(other).items():
            if k in hard:
                used[k] = used.get(k, 0) + v
    limit = dict((k, _amount(v) if k.endswith(("cpu", "memory")) else _quantity(v)) for k, v in hard.items())
    over = sorted(k for k, v in want.items() if used.get(k, 0) + v > limit[k])
    if not over:
        return ""

    def pretty(values):
        return ",".join("%s=%s" % (k, _quantity_text(k, values.get(k, 0))) for k in over)
    return "requested: %s, used: %s, limited: %s" % (pretty(want), pretty(used), pretty(limit))


def _selector_matches(selector, labels):
    """A metav1.LabelSelector (matchLabels and matchExpressions In/NotIn/Exists/DoesNotExist) against labels."""
    if any(labels.get(k) != v for k, v in (selector.get("matchLabels") or {}).items()):
        return False
    for expr in selector.get("matchExpressions") or []:
        have, values = labels.get(expr.get("key")), expr.get("values") or []
        if not {"In": have in values, "NotIn": have not in values, "Exists": have is not None,
                "DoesNotExist": have is None}.get(expr.get("operator"), False):
            return False
    return True


def _tolerated(taint, tolerations):
    for tol in tolerations or []:
        if tol.get("effect") and tol["effect"] != taint.get("effect"):
            continue
        if tol.get("operator") == "Exists" and (not tol.get("key") or tol["key"] == taint["key"]):
            return True
        if tol.get("key") == taint["key"] and tol.get("value", "") == taint.get("value", ""):
            return True
    return False


def _affinity_ok(spec, labels, node_name, fields_only=False):
    """Required node affinity: ``matchExpressions`` on node labels and ``matchFields`` on
    ``metadata.name`` (the only field the API allows there); terms ORed, requirements ANDed. ``fields_only``: the
    NodeAffinity PreFilter's node set (node_affinity.go PreFilter: only when every term names nodes by
    ``metadata.name In``)."""
    required = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    terms = required.get("nodeSelectorTerms") or []
    if fields_only and not all(any(f.get("key") == "metadata.name" and f.get("operator") == "In"
                                   for f in t.get("matchFields") or []) for t in terms):
        return True
    if not terms:
        return True
    fields = {"metadata.name": node_name}
    for term in terms:
        ok = True
        for source, exprs in ((labels, () if fields_only else term.get("matchExpressions")),
                              (fields, term.get("matchFields"))):
            for expr in exprs or []:
                have = source.get(expr.get("key"))
                op, values = expr.get("operator"), expr.get("values") or []
                ok = ok and {"In": have in values, "NotIn": have not in values, "Exists": have is not None,
                             "DoesNotExist": have is None}.get(op, False)
        if ok:
            return True
    return False


# node-feature-discovery's labels for a node with a Mellanox HCA. Current NFD (>= v0.14, source/kernel and
# source/pci; the built-in rule "rdma.available" since the custom source's rule moved out) publishes
# rdma.capable/rdma.available, and pci-15b3.present with the device label fields network-operator configures
# (deviceLabelFields: [vendor]); before v0.14 the rule came from the custom source as custom-rdma.*.
NFD_CURRENT = {"feature.node.kubernetes.io/rdma.capable": "true", "feature.node.kubernetes.io/rdma.available": "true",
               "feature.node.kubernetes.io/pci-15b3.present": "true"}
NFD_LEGACY = {"feature.node.kubernetes.io/custom-rdma.capable": "true",
              "feature.node.kubernetes.io/custom-rdma.available": "true"}


def gpu_nodes(n=4, gpus=8, prefix="gpu-node-", extra=None, nfd="current"):
    """``n`` node dicts with ``gpus`` nvidia.com/gpu each, the usual hostname label and the NFD labels of a
    node with an RDMA HCA: ``nfd="current"`` (NFD_CURRENT), ``"legacy"`` (the custom-rdma.* form of NFD < v0.14)
    or None (no NFD)."""
    out = []
    nfd_labels = {"current": NFD_CURRENT, "legacy": NFD_LEGACY, None: {}}[nfd]
    for i in range(1, n + 1):
        name = "%s%02d" % (prefix, i)
        alloc = {"nvidia.com/gpu": str(gpus), "cpu": "96", "memory": "1Ti"}
        alloc.update(extra or {})
        labels = dict({"kubernetes.io/hostname": name, "nvidia.com/gpu.present": "true"}, **nfd_labels)
        out.append({"name": name, "labels": labels, "allocatable": alloc, "taints": []})
    return out


class FakeApiServer(object):
    """The fake API server + controller on 127.0.0.1 in a background thread.

    ``start()``/``stop()`` (or ``with``); ``url``; ``write_kubeconfig(path)``;
    ``script(kind, node=..., job=..., pod=..., log_file=..., exit_code=...)`` adds a rule
    (first match wins; default: succeed with an empty log); ``leftovers(run_id=None)`` lists
    the stored objects ("Kind/namespace/name") of a run (or every object but Nodes/Events);
    ``pods()``, ``events()``; ``expire_next_watches(n)``; ``requests`` records every call.
    """

    def __init__(self, nodes=None, operators=(), tick_s=0.02, pod_grace_ticks=0, clock_scale=1.0,
                 node_status_delay_ticks=0):
        self.nodes = nodes if nodes is not None else gpu_nodes()
        self.clock_scale, self.node_status_delay_ticks = clock_scale, node_status_delay_ticks
        self.operators = tuple(operators)
        self.mpi_version = None          # mpi-operator v0.8.2; operators=("mpi-v0.4",): v0.4.0's naming
        self.tick_s = tick_s
        self.pod_grace_ticks = pod_grace_ticks
        self.requests = []
        self.forbidden = set()           # {(verb, plural)} answered 403, as a Role without them would
        self._expire = 0
        self._elock = threading.Lock()
        self.loop = None
        self.thread = None
        self.url = None

    # --- lifecycle
    def start(self, timeout=10):
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="fake-apiserver", daemon=True)
        self.thread.start()
        self.call(self._astart(), timeout)
        return self

    async def _astart(self):
        self.emu = Emu()
        self.emu.fake = self
        self.emu.resources.load_bundled()
        if "mpi-v0.4" in self.operators:
            self.operators = tuple(o for o in self.operators if o != "mpi-v0.4") + ("mpi",)
            self.mpi_version = fake_operators.MPI_V04
        if "mpi" in self.operators:
            self.emu.resources["kubeflow.org/v2beta1/mpijobs"] = {
                "kind": "MPIJob", "namespaced": True, "singular": "mpijob",
                "verbs": ["create", "delete", "get", "list", "watch", "patch"]}
        if "volcano" in self.operators:
            self.emu.resources["batch.volcano.sh/v1alpha1/jobs"] = {
                "kind": "Job", "namespaced": True, "singular": "job",
                "verbs": ["create", "delete", "get", "list", "watch", "patch"]}
            self.emu.resources["scheduling.volcano.sh/v1beta1/podgroups"] = {
                "kind": "PodGroup", "namespaced": True, "singular": "podgroup",
                "verbs": ["create", "delete", "get", "list", "watch", "patch"]}
        await self.emu.__aenter__()
        self.server = kmock.Server(self.emu)
        await self.server.__aenter__()
        self.url = str(self.server.url).rstrip("/")
        self.controller = Controller(self.emu, self.nodes, self.tick_s, self.pod_grace_ticks, self.clock_scale,
                                     self.node_status_delay_ticks)
        self.controller.mpi_version = self.mpi_version
        async with self.emu._lock:
            if "mpi" in self.operators:     # the operator's manifest installs its CRD
                await self.controller._add(CRDS, None, fake_operators.mpi_crd(self.mpi_version))
            for node in self.nodes:
                await self.controller._add(NODES, None, {
                    "apiVersion": "v1", "kind": "Node",
                    "metadata": {"name": node["name"], "labels": node.get("labels") or {}},
                    "spec": {"taints": node.get("taints") or []},
                    "status": {"allocatable": dict(node.get("allocatable") or {}),
                               "capacity": dict(node.get("allocatable") or {})}})
        self.controller.task = asyncio.get_running_loop().create_task(self.controller.run())

    def stop(self, timeout=10):
        if self.loop is None:
            return
        try:
            self.controller.stop_all_processes()
            self.call(self._astop(), timeout)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(timeout)
            self.loop.close()
            self.loop = None

    async def _astop(self):
        self.controller.task.cancel()
        with contextlib.suppress(BaseException):
            await self.controller.task
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.server.__aexit__(None, None, None), 5)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.emu.__aexit__(None, None, None), 5)

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()
        return False

    def call(self, coro, timeout=10):
        """Run ``coro`` in the server's loop and return its result (from the test thread)."""
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    # --- scenario API
    def script(self, kind="succeed", **kwargs):
        """Add a kubelet rule (``Behaviour(kind, node=, job=, pod=, log=, log_file=, exit_code=)``)."""
        rule = Behaviour(kind, **kwargs)
        self.controller.rules.append(rule)
        return rule

    def advance_clock(self, seconds):
        """Move the cluster clock (TTL-after-finished, activeDeadlineSeconds) ``seconds`` forward."""
        async def advance():
            async with self.emu._lock:
                self.controller.clock()
                self.controller.clock_offset += seconds
        self.call(advance())

    def namespace(self, name, labels=None):
        """Create (or relabel) Namespace ``name``: e.g. ``{"pod-security.kubernetes.io/enforce": "baseline"}``."""
        async def put():
            async with self.emu._lock:
                key = (NAMESPACES, None, name)
                if key in self.emu._objects and not self.emu._objects[key].deleted:
                    await self.controller._patch(key, {"metadata": {"labels": dict(labels or {})}})
                else:
                    await self.controller._add(NAMESPACES, None, {"apiVersion": "v1", "kind": "Namespace",
                                                                  "metadata": {"name": name,
                                                                               "labels": dict(labels or {})}})
        self.call(put())

    def quota(self, namespace, hard, name="compute-resources"):
        """A ResourceQuota ``name`` in ``namespace`` with ``hard`` (e.g. ``{"requests.cpu": "64"}``)."""
        async def put():
            async with self.emu._lock:
                await self.controller._add(QUOTAS, namespace, {"apiVersion": "v1", "kind": "ResourceQuota",
                                                               "metadata": {"name": name}, "spec": {"hard": dict(hard)}})
        self.call(put())

    def limit_range(self, namespace, limits, name="defaults"):
        """A LimitRange ``name`` in ``namespace`` with ``limits`` (its items, e.g. ``[{"type": "Container",
        "default": {"cpu": "1", "memory": "1Gi"}}]``): the LimitRanger applies it to every pod created there."""
        async def put():
            async with self.emu._lock:
                await self.controller._add(LIMITRANGES, namespace, {"apiVersion": "v1", "kind": "LimitRange",
                                                                    "metadata": {"name": name},
                                                                    "spec": {"limits": list(limits)}})
        self.call(put())

    def volcano_queue(self, name, capability):
        """Volcano Queue ``name`` with ``capability`` ({resource: count}, e.g. ``{"nvidia.com/gpu": 8}``): a
        vcjob's PodGroup in it is enqueued only while the queue's enqueued minResources stay within it."""
        async def put():
            async with self.emu._lock:
                self.controller.volcano_queues[name] = dict(capability)
        self.call(put())

    def webhook(self, name, message, match):
        """A validating admission webhook ``name`` that denies every pod create ``match(pod)`` is true for, with
        ``message`` (its AdmissionResponse status message): the API answers 'admission webhook "<name>" denied the
        request: <message>' (apiserver/pkg/admission/plugin/webhook/errors/statuserror.go ToStatusErr), and a
        controller records it in its FailedCreate event as it does any refusal."""
        self.controller.webhooks.append((name, message, match))

    def forbid(self, verb, plural):
        """Answer ``verb`` on ``plural`` with 403 Forbidden from now on (RBAC without that permission)."""
        self.forbidden.add((verb, plural))

    def settle(self, ticks=2, timeout=10):
        """Wait until the controller made ``ticks`` more passes (e.g. the GC ran after a deletion)."""
        async def waiter():
            target = self.controller.ticks + ticks
            while self.controller.ticks < target:
                await asyncio.sleep(self.tick_s / 2)
        self.call(waiter(), timeout)

    def expire_next_watches(self, n=1):
        """The next ``n`` watches that resume from a resourceVersion get 410 Gone."""
        with self._elock:
            self._expire += n

    def take_expiry(self):
        with self._elock:
            if self._expire > 0:
                self._expire -= 1
                return True
        return False

    def write_kubeconfig(self, path, namespace="default", context="fake"):
        doc = {"apiVersion": "v1", "kind": "Config", "current-context": context,
               "clusters": [{"name": "fake", "cluster": {"server": self.url}}],
               "users": [{"name": "tester", "user": {"token": "fake-token"}}],
               "contexts": [{"name": context, "context": {"cluster": "fake", "user": "tester",
                                                          "namespace": namespace}}]}
        with open(path, "w") as fh:
            yaml.safe_dump(doc, fh)
        return path

    # --- inspection (thread-safe: runs in the server loop under its lock)
    async def _snapshot(self):
        async with self.emu._lock:
            return [(key, obj.raw) for key, obj in self.emu._objects.items() if not obj.deleted]

    def objects(self):
        """[(group, version, plural, namespace, name, body)] of everything stored now."""
        out = []
        for (res, ns, name), raw in self.call(self._snapshot()):
            out.append((res.group, res.version, res.plural, ns, name, raw))
        return out

    def leftovers(self, run_id=None):
        """Sorted "Kind/namespace/name" of what is stored: of run ``run_id`` (its label), or
        every object except Nodes and Events when ``run_id`` is None."""
        out = []
        for group, version, plural, ns, name, raw in self.objects():
            kind = KINDS.get((group, version, plural), plural)
            labels = (raw.get("metadata") or {}).get("labels") or {}
            if run_id is None and kind in ("Node", "Event", "Namespace", "ResourceQuota", "LimitRange",
                                           "CustomResourceDefinition"):
                continue
            if run_id is not None and labels.get(RUN_LABEL) != run_id:
                continue
            out.append("%s/%s/%s" % (kind, ns, name))
        return sorted(out)

    def pods(self, selector=None):
        return [raw for g, v, p, ns, name, raw in self.objects()
                if (g, v, p) == ("", "v1", "pods") and match_labels(raw["metadata"].get("labels") or {}, selector)]

    def events(self, pod=None):
        return [raw for g, v, p, ns, name, raw in self.objects()
                if (g, v, p) == ("", "v1", "events") and (pod is None or raw["involvedObject"]["name"] == pod)]


def api_client(server):
    """An official-client ``ApiClient`` for ``server`` (what ``k8s_api.connect`` would build)."""
    from kubernetes import client
    cfg = client.Configuration()
    cfg.host = server.url
    cfg.api_key = {"authorization": "Bearer fake-token"}
    return client.ApiClient(configuration=cfg)


class FakeK8s(object):
    """What the ``fake_k8s`` fixture yields: ``server`` (FakeApiServer), ``kubeconfig`` (path),
    ``api`` (an ApiClient on it), ``namespace``, ``leftovers(run_id=None)``."""

    def __init__(self, server, kubeconfig, api, namespace):
        self.server, self.kubeconfig, self.api, self.namespace = server, kubeconfig, api, namespace

    def leftovers(self, run_id=None):
        return self.server.leftovers(run_id)


@contextlib.contextmanager
def fake_cluster(tmp_path, **kwargs):
    """A started FakeApiServer (default: 4 nodes of 8 GPUs) as a ``FakeK8s``; stops it afterwards and
    raises AssertionError if its controller broke. Test modules wrap it in their ``fake_k8s`` fixture::

        @pytest.fixture
        def fake_k8s(tmp_path):
            with fake_cluster(tmp_path) as fake:
                yield fake
    """
    server = FakeApiServer(**kwargs).start()
    api = api_client(server)
    try:
        yield FakeK8s(server, server.write_kubeconfig(os.path.join(str(tmp_path), "kubeconfig")), api, "default")
    finally:
        api.close()
        error = server.controller.error
        server.stop()
    if error is not None:
        raise AssertionError("the fake cluster's controller failed: %r" % (error,))
