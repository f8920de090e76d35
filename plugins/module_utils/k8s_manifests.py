# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubernetes manifests of the acceptance workloads, built as data (private).

Every object is a plain dict (what the API takes and what render mode writes as
YAML); nothing is text-templated, so no user value (an env value, a node name, an
argv word) can change the structure of a manifest. Builders:

- ``pod_spec(pod, containers, ...)``: the pod knobs users need (image pull secrets,
  node pinning by name or by a node list with one pod per node, tolerations,
  hostNetwork + ClusterFirstWithHostNet, runtimeClassName, serviceAccountName,
  the memory-backed /dev/shm, the code ConfigMap, restartPolicy Never, DNS search
  entries);
- ``container(pod, name, command, gpus)``: image, ``nvidia.com/gpu`` and extended
  resources with requests = limits, cpu/memory requests and limits (a launcher: its own), IPC_LOCK,
  privileged only when asked, NCCL_* env and envFrom ConfigMaps, a tcpSocket
  readiness probe;
- every pod template that runs ranks carries the ``annotations`` pod option (Multus
  ``k8s.v1.cni.cncf.io/networks``, ...), an operator's launcher none;
- ``job`` (one pod, or Indexed with completions = parallelism), ``headless_service``,
  ``config_map``, ``secret``, ``mpi_job`` (kubeflow.org/v2beta1), ``volcano_job``
  (batch.volcano.sh/v1alpha1).

``pod`` is the dict of pod options of the k8s_workload module (see POD_DEFAULTS).
Imports nothing from Ansible; Python 3.8+.
"""

from __future__ import annotations

import re

from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import AcceptanceError
from ansible_collections.aifabric.acceptance.plugins.module_utils.k8s_api import MANAGED_BY_KEY, MANAGED_BY_VALUE
from ansible_collections.aifabric.acceptance.plugins.module_utils.k8s_api import RUN_LABEL  # one selector per run

KIND_LABEL = "aifabric.acceptance/kind"
ROLE_LABEL = "aifabric.acceptance/role"
NODE_ANNOTATION = "aifabric.acceptance/node"
CODE_MOUNT = "/opt/aifabric"
KEYS_MOUNT = "/etc/aifabric-ssh"
GPU_RESOURCE = "nvidia.com/gpu"
DNS_LABEL_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
RUN_ID_RE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,18}[a-z0-9])?$")
RESOURCE_RE = re.compile(r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
QUANTITY_RE = re.compile(r"^[0-9]+(\.[0-9]+)?(m|k|Ki|M|Mi|G|Gi|T|Ti|P|Pi|E|Ei)?$")
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_.-]*$")
# a qualified name (annotation key): an optional DNS-1123 subdomain prefix and '/', then a name of at most 63
QUALIFIED_RE = re.compile(r"^(([a-z0-9]([-a-z0-9]*[a-z0-9])?)(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?"
                          r"[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")

POD_DEFAULTS = {
    "image": None,
    "image_pull_policy": None,
    "image_pull_secrets": [],
    "namespace": "default",
    "tolerations": [],
    "node_labels": {},
    "gpus_per_pod": 8,
    "resources": {},
    "host_network": False,
    "ipc_lock": True,
    "shm_size": "16Gi",
    # cpu/memory of every pod that runs a check (requests and limits, never left to a namespace LimitRange's
    # defaults: 1 CPU throttles GEMM and nccl-tests' ranks, 1Gi caps the memory-backed /dev/shm); "" leaves one out
    "cpu_request": "8",
    "cpu_limit": "64",
    "memory_request": "32Gi",
    "memory_limit": "128Gi",
    "env": {},
    "env_from_configmaps": [],
    "runtime_class": None,
    "service_account": None,
    "privileged": False,
    "active_deadline_s": None,      # None: the plan's (its pods' steps plus start-up; k8s_plan.deadline_of)
    "ttl_after_finished_s": 600,
    "labels": {},
    "annotations": {},
    "python": "python3",
}


def pod_options(pod):
    """POD_DEFAULTS overlaid with ``pod`` (None values keep the default); raises AcceptanceError on bad values."""
    out = dict(POD_DEFAULTS)
    for key, value in (pod or {}).items():
        if key not in out:
            raise AcceptanceError("unknown pod option %r (known: %s)" % (key, ", ".join(sorted(out))))
        if value is not None:
            out[key] = value
    if not out["image"]:
        raise AcceptanceError("image is required: the user's image with the tools (nccl-tests, perftest, python3)")
    check_dns_label(out["namespace"], "namespace")
    if int(out["gpus_per_pod"]) < 0:
        raise AcceptanceError("gpus_per_pod must be >= 0, got %r" % out["gpus_per_pod"])
    for name, qty in out["resources"].items():
        if not RESOURCE_RE.match(str(name)):
            raise AcceptanceError("resource name %r is not a valid Kubernetes resource name" % (name,))
        if not QUANTITY_RE.match(str(qty)):
            raise AcceptanceError("resource %s: quantity %r is not a Kubernetes quantity" % (name, qty))
    if out["shm_size"] and not QUANTITY_RE.match(str(out["shm_size"])):
        raise AcceptanceError("shm_size %r is not a Kubernetes quantity (for example 16Gi)" % (out["shm_size"],))
    _check_cpu_memory(out)
    for name in out["env"]:
        if not ENV_NAME_RE.match(str(name)):
            raise AcceptanceError("environment variable name %r is not valid" % (name,))
    _check_annotations(out["annotations"])
    if out["active_deadline_s"] is not None and int(out["active_deadline_s"]) < 1:
        raise AcceptanceError("active_deadline_s must be >= 1 (or unset: the plan's), got %r" % out["active_deadline_s"])
    return out


SUFFIXES = {"m": 1e-3, "": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
            "Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40, "Pi": 2 ** 50, "Ei": 2 ** 60}


def quantity(text):
    """The value of a Kubernetes quantity matched by QUANTITY_RE (``"500m"`` -> 0.5, ``"1Gi"`` -> 1073741824)."""
    match = re.match(r"^([0-9]+(?:\.[0-9]+)?)([a-zA-Z]*)$", str(text))
    return float(match.group(1)) * SUFFIXES[match.group(2)]


CPU_MEMORY = ("cpu_request", "cpu_limit", "memory_request", "memory_limit")


def _check_cpu_memory(out):
    """cpu/memory are their own options (requests below limits; the memory limit above /dev/shm, which the kubelet
    charges to the pod's memory and caps at its limit), never ``resources`` keys."""
    for name in ("cpu", "memory"):
        if name in out["resources"]:
            raise AcceptanceError("resources: give %s as the pod options %s_request and %s_limit, not in resources"
                                  % (name, name, name))
    for key in CPU_MEMORY:
        if out[key] not in ("", None) and not QUANTITY_RE.match(str(out[key])):
            raise AcceptanceError("%s %r is not a Kubernetes quantity (for example 8, 500m, 64Gi)" % (key, out[key]))
    for name in ("cpu", "memory"):
        request, limit = out[name + "_request"], out[name + "_limit"]
        if request and limit and quantity(request) > quantity(limit):
            raise AcceptanceError("%s_request %s is above %s_limit %s (the API refuses a request above its limit)"
                                  % (name, request, name, limit))
    if out["shm_size"] and out["memory_limit"] and quantity(out["memory_limit"]) <= quantity(out["shm_size"]):
        raise AcceptanceError("memory_limit %s does not exceed shm_size %s: /dev/shm is memory charged to the pod, "
                              "so NCCL filling it would be OOM-killed; raise memory_limit or lower shm_size"
                              % (out["memory_limit"], out["shm_size"]))


def cpu_memory(pod):
    """(requests, limits) of cpu and memory from the pod options (an empty one left out)."""
    requests, limits = {}, {}
    for name in ("cpu", "memory"):
        if pod.get(name + "_request"):
            requests[name] = str(pod[name + "_request"])
        if pod.get(name + "_limit"):
            limits[name] = str(pod[name + "_limit"])
    return requests, limits


def _check_annotations(annotations):
    """Annotation keys are qualified names (prefix at most 253 characters); values are strings."""
    if not isinstance(annotations, dict):
        raise AcceptanceError("annotations must be a mapping of name to string, got %r" % (annotations,))
    for key, value in annotations.items():
        key = str(key)
        if not QUALIFIED_RE.match(key) or len(key.split("/", maxsplit=1)[0]) > 253:
            raise AcceptanceError("annotation name %r is not a qualified name ([prefix/]name, for example "
                                  "k8s.v1.cni.cncf.io/networks)" % (key,))
        if not isinstance(value, str):
            raise AcceptanceError("annotation %s: the value must be a string (JSON as text for Multus), got %r"
                                  % (key, value))


def template_metadata(labels_, pod, node=None):
    """A pod template's metadata: its labels, the pod option annotations and the node it is pinned to."""
    md = {"labels": dict(labels_)}
    annotations = dict((str(k), v) for k, v in (pod.get("annotations") or {}).items())
    if node:
        annotations[NODE_ANNOTATION] = node
    if annotations:
        md["annotations"] = annotations
    return md


def ranks_only(pod, role):
    """The pod options of an operator's pod of ``role``: its launcher runs no rank and holds no device, so it takes
    none of the pod annotations (a Multus network for the ranks, SR-IOV without a resources injector, would keep
    it in ContainerCreating)."""
    return dict(pod, annotations={}) if role == "launcher" else pod


def check_dns_label(name, what="name"):
    """RFC 1123 label: lower-case alphanumerics and '-', at most 63 characters."""
    if not isinstance(name, str) or len(name) > 63 or not DNS_LABEL_RE.match(name):
        raise AcceptanceError("%s %r is not a DNS-1123 label (a-z, 0-9, '-', at most 63 characters)" % (what, name))
    return name


def check_run_id(run_id):
    if not isinstance(run_id, str) or not RUN_ID_RE.match(run_id):
        raise AcceptanceError("run_id %r must be 1-20 characters of a-z, 0-9 and '-' (it prefixes every object name)"
                              % (run_id,))
    return run_id


def object_name(run_id, *parts):
    """``aif-<run>-<parts>``, checked as a DNS-1123 label (Indexed Job pods append '-<index>-xxxxx')."""
    name = "-".join(["aif", run_id] + [str(p) for p in parts if p not in (None, "")])
    return check_dns_label(name.lower(), "object name")


def labels(pod, run_id, kind, role=None):
    out = dict((str(k), str(v)) for k, v in (pod.get("labels") or {}).items())
    out.update({
        MANAGED_BY_KEY: MANAGED_BY_VALUE,
        "app.kubernetes.io/name": "aifabric-acceptance",
        RUN_LABEL: run_id,
        KIND_LABEL: kind,
    })
    if role:
        out[ROLE_LABEL] = role
    return out


def metadata(name, pod, run_id, kind, role=None, node=None):
    md = {"name": name, "namespace": pod["namespace"], "labels": labels(pod, run_id, kind, role)}
    if node:
        md["annotations"] = {NODE_ANNOTATION: node}
    return md


# --------------------------------------------------------------------------- pod

def container(pod, name, command, gpus=None, extra_env=None, resources=True, mounts=None, ports=None,
              requests=None, readiness_port=None):
    """One container of the user's image; GPU and extended resources with requests = limits.

    ``requests``: requests = limits instead of the pod's GPUs, resources and cpu/memory: a launcher's cpu and memory.
    ``readiness_port``: a tcpSocket readiness probe on that port (Ready = a worker's sshd listens)."""
    env = dict((str(k), str(v)) for k, v in (pod.get("env") or {}).items())
    env.update(extra_env or {})
    out = {
        "name": name,
        "image": pod["image"],
        "command": [str(w) for w in command],
        "env": [{"name": k, "value": env[k]} for k in sorted(env)],
        "volumeMounts": [{"name": "aifabric-code", "mountPath": CODE_MOUNT, "readOnly": True}],
    }
    if pod.get("image_pull_policy"):
        out["imagePullPolicy"] = pod["image_pull_policy"]
    if pod.get("env_from_configmaps"):
        out["envFrom"] = [{"configMapRef": {"name": n}} for n in pod["env_from_configmaps"]]
    if pod.get("shm_size"):
        out["volumeMounts"].append({"name": "dshm", "mountPath": "/dev/shm"})
    out["volumeMounts"].extend(mounts or [])
    if requests or resources:
        both = _resources(pod, gpus, requests)
        if both:
            out["resources"] = both
    security = {}
    if pod.get("privileged"):
        security["privileged"] = True
    elif pod.get("ipc_lock", True):
        security["capabilities"] = {"add": ["IPC_LOCK"]}
    if security:
        out["securityContext"] = security
    if ports:
        out["ports"] = [{"containerPort": int(p), "name": n, "protocol": "TCP"} for n, p in ports]
    if readiness_port:
        out["readinessProbe"] = {"tcpSocket": {"port": int(readiness_port)}, "periodSeconds": 2,
                                 "failureThreshold": 3}
    return out


def _resources(pod, gpus, requests):
    """A container's resources: a launcher's ``requests`` as requests and limits (no namespace LimitRange default
    below them); else the pod's GPUs and extended resources (requests = limits) and its cpu/memory options."""
    if requests:
        given = dict((str(k), str(v)) for k, v in requests.items())
        return {"requests": given, "limits": dict(given)}
    limits = {}
    count = pod["gpus_per_pod"] if gpus is None else gpus
    if count:
        limits[GPU_RESOURCE] = str(int(count))
    for key, qty in (pod.get("resources") or {}).items():
        limits[str(key)] = str(qty)
    cpu_requests, cpu_limits = cpu_memory(pod)
    both = {"requests": dict(limits, **cpu_requests), "limits": dict(limits, **cpu_limits)}
    return dict((k, v) for k, v in both.items() if v)


def node_affinity(nodes):
    """Require one of ``nodes`` by node name (metadata.name: what the DaemonSet controller pins with)."""
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": list(nodes)}]}]}}}


def pod_spec(pod, containers, code_config_map, code_items, nodes=None, spread_label=None, hostname=None,
             subdomain=None, volumes=None, dns_searches=None):
    """A Job's pod spec: restartPolicy Never, pinned to ``nodes`` (one pod per node when ``spread_label``);
    ``dns_searches``: entries added to the pod's DNS search path (the cluster's own stay)."""
    spec = {
        "restartPolicy": "Never",
        "containers": containers,
        "volumes": [{"name": "aifabric-code",
                     "configMap": {"name": code_config_map, "items": list(code_items), "defaultMode": 0o444}}],
        "enableServiceLinks": False,
        "automountServiceAccountToken": False,
    }
    if pod.get("shm_size"):
        spec["volumes"].append({"name": "dshm", "emptyDir": {"medium": "Memory", "sizeLimit": str(pod["shm_size"])}})
    spec["volumes"].extend(volumes or [])
    if pod.get("image_pull_secrets"):
        spec["imagePullSecrets"] = [{"name": n} for n in pod["image_pull_secrets"]]
    if pod.get("node_labels"):
        spec["nodeSelector"] = dict((str(k), str(v)) for k, v in pod["node_labels"].items())
    affinity = node_affinity(nodes) if nodes else {}
    if spread_label:
        affinity["podAntiAffinity"] = {"requiredDuringSchedulingIgnoredDuringExecution": [{
            "labelSelector": {"matchLabels": dict(spread_label)}, "topologyKey": "kubernetes.io/hostname"}]}
    if affinity:
        spec["affinity"] = affinity
    if pod.get("tolerations"):
        spec["tolerations"] = [dict(t) for t in pod["tolerations"]]
    if pod.get("host_network"):
        spec["hostNetwork"] = True
        spec["dnsPolicy"] = "ClusterFirstWithHostNet"
    if pod.get("runtime_class"):
        spec["runtimeClassName"] = pod["runtime_class"]
    if pod.get("service_account"):
        spec["serviceAccountName"] = pod["service_account"]
    if hostname:
        spec["hostname"] = check_dns_label(hostname, "pod hostname")
    if subdomain:
        spec["subdomain"] = check_dns_label(subdomain, "pod subdomain")
    if dns_searches:
        spec["dnsConfig"] = {"searches": list(dns_searches)}
    return spec


# --------------------------------------------------------------------------- objects

def ttl_after_finished(pod):
    """ttlSecondsAfterFinished of a run's Job, MPIJob or Volcano Job; None keeps a finished one (the module deletes
    it). Never below the pod's active deadline: the Job of a step that finished first outlives every other Job of
    the step (none runs longer), or the TTL controller deletes its pod and log before the module reads them."""
    if pod.get("ttl_after_finished_s") is None:
        return None
    return max(int(pod["ttl_after_finished_s"]), int(pod.get("active_deadline_s") or 0))


def job(name, pod, run_id, kind, template_spec, role=None, node=None, indexed_count=None):
    """A batch/v1 Job: backoffLimit 0; Indexed with completions = parallelism = ``indexed_count``."""
    md = metadata(name, pod, run_id, kind, role, node)
    spec = {
        "backoffLimit": 0,
        "template": {"metadata": template_metadata(md["labels"], pod, node), "spec": template_spec},
    }
    if pod.get("active_deadline_s") is not None:
        spec["activeDeadlineSeconds"] = int(pod["active_deadline_s"])
    if ttl_after_finished(pod) is not None:
        spec["ttlSecondsAfterFinished"] = ttl_after_finished(pod)
    if indexed_count:
        spec.update({"completionMode": "Indexed", "completions": int(indexed_count),
                     "parallelism": int(indexed_count)})
    else:
        spec.update({"completions": 1, "parallelism": 1})
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": md, "spec": spec}


def headless_service(name, pod, run_id, kind, selector, ports):
    """A headless Service (clusterIP None) whose name is the pods' subdomain; DNS before readiness."""
    return {
        "apiVersion": "v1", "kind": "Service", "metadata": metadata(name, pod, run_id, kind),
        "spec": {"clusterIP": "None", "publishNotReadyAddresses": True, "selector": dict(selector),
                 "ports": [{"name": n, "port": int(p), "targetPort": int(p), "protocol": "TCP"} for n, p in ports]},
    }


def config_map(name, pod, run_id, files):
    """The code ConfigMap: ``files`` maps a relative path to its text; keys are the paths with '/' -> '__'."""
    data = {}
    for path in sorted(files):
        key = path.replace("/", "__")
        data[key] = files[path]
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": metadata(name, pod, run_id, "code"), "data": data}


def code_volume_items(files):
    """configMap volume items that lay the files out under CODE_MOUNT as their package tree."""
    return [{"key": path.replace("/", "__"), "path": path} for path in sorted(files)]


def secret(name, pod, run_id, string_data):
    return {"apiVersion": "v1", "kind": "Secret", "metadata": metadata(name, pod, run_id, "ssh-keys"),
            "type": "Opaque", "stringData": dict(string_data)}


def mpi_job(name, pod, run_id, launcher_spec, worker_spec, workers, slots, role_kind="nccl_test_multinode"):
    """kubeflow.org/v2beta1 MPIJob: launcher + ``workers`` workers; launcher waits for ready workers."""
    md = metadata(name, pod, run_id, role_kind)

    def replica(spec, count, role):
        lab = dict(md["labels"])
        lab[ROLE_LABEL] = role
        return {"replicas": count, "restartPolicy": "Never",
                "template": {"metadata": template_metadata(lab, ranks_only(pod, role)), "spec": spec}}

    # activeDeadlineSeconds: the launcher Job's (mpi-operator copies the run policy's), from the launcher's start
    run_policy = {"cleanPodPolicy": "Running", "backoffLimit": 0}
    if pod.get("active_deadline_s") is not None:
        run_policy["activeDeadlineSeconds"] = int(pod["active_deadline_s"])
    if ttl_after_finished(pod) is not None:
        run_policy["ttlSecondsAfterFinished"] = ttl_after_finished(pod)
    return {
        "apiVersion": "kubeflow.org/v2beta1", "kind": "MPIJob", "metadata": md,
        "spec": {
            "slotsPerWorker": int(slots),
            "launcherCreationPolicy": "WaitForWorkersReady",
            "sshAuthMountPath": "/root/.ssh",
            "mpiImplementation": "OpenMPI",
            "runPolicy": run_policy,
            "mpiReplicaSpecs": {"Launcher": replica(launcher_spec, 1, "launcher"),
                                "Worker": replica(worker_spec, int(workers), "worker")},
        },
    }


def volcano_job(name, pod, run_id, master_spec, worker_spec, workers, role_kind="nccl_test_multinode"):
    """batch.volcano.sh/v1alpha1 Job: mpimaster + mpiworker tasks, gang of all, ssh and svc plugins.

    With host-network workers, the svc plugin's NetworkPolicy (ingress only from the job's pods, matched by pod
    labels: a host-network peer has none) would drop the workers' orted connecting back to the pod-network
    launcher on Calico/Cilium: ``--disable-network-policy=true`` (volcano pkg/controllers/job/plugins/svc)."""
    md = metadata(name, pod, run_id, role_kind)

    def task(task_name, spec, count, role):
        lab = dict(md["labels"])
        lab[ROLE_LABEL] = role
        out = {"name": task_name, "replicas": int(count),
               "template": {"metadata": template_metadata(lab, ranks_only(pod, role)), "spec": spec}}
        if role == "launcher":
            out["policies"] = [{"event": "TaskCompleted", "action": "CompleteJob"}]
        return out

    return {
        "apiVersion": "batch.volcano.sh/v1alpha1", "kind": "Job", "metadata": md,
        "spec": {
            "minAvailable": int(workers) + 1,
            "schedulerName": "volcano",
            "maxRetry": 1,
            "ttlSecondsAfterFinished": ttl_after_finished(pod),
            "plugins": {"ssh": [], "svc": ["--disable-network-policy=true"] if pod.get("host_network") else []},
            "policies": [{"event": "PodEvicted", "action": "AbortJob"},
                         {"event": "PodFailed", "action": "AbortJob"}],
            "tasks": [task("mpimaster", master_spec, 1, "launcher"),
                      task("mpiworker", worker_spec, int(workers), "worker")],
        },
    }
