# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Shared by the Kubernetes unit tests: the plans of every workload with every pod knob set, and
offline validators (kubernetes-validate for core kinds, the upstream CRD openAPIV3Schema for MPIJob and
Volcano Job, read from ../shared/schemas/ when present)."""

from __future__ import annotations

import copy
import os

from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_plan, k8s_run

K8S_VERSIONS = ("1.28", "1.37")      # oldest and newest Kubernetes the collection supports
NODES = ["gpu-node-01", "gpu-node-02", "gpu-node-03", "gpu-node-04"]
ROUNDS = [[["gpu-node-01", "gpu-node-02"], ["gpu-node-03", "gpu-node-04"]],
          [["gpu-node-03", "gpu-node-01"], ["gpu-node-02", "gpu-node-04"]]]
FULL_POD = {
    "image": "registry.example.com/acceptance/nccl-tests:2.17-mpi",
    "image_pull_policy": "IfNotPresent",
    "image_pull_secrets": ["registry-cred"],
    "namespace": "acceptance",
    "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}],
    "node_labels": {"nvidia.com/gpu.present": "true"},
    "gpus_per_pod": 8,
    "resources": {"rdma/hca_shared_devices_a": 1},
    "host_network": True,
    "shm_size": "32Gi",
    "env": {"NCCL_DEBUG": "INFO", "NCCL_IB_GID_INDEX": 3},
    "env_from_configmaps": ["nccl-env"],
    "runtime_class": "nvidia",
    "service_account": "acceptance",
    "active_deadline_s": 7200,      # covers the longest pod here: 2 collectives x 1800 s
    "ttl_after_finished_s": 300,
    "labels": {"team": "infra"},
    "annotations": {"k8s.v1.cni.cncf.io/networks": "[{\"name\": \"rdma-net\", \"interface\": \"net1\"}]"},
}
KEYS = {"id_ed25519": "-----BEGIN OPENSSH PRIVATE KEY-----\ntest\n-----END OPENSSH PRIVATE KEY-----\n",
        "id_ed25519.pub": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAI test\n"}


def plans(pod=None):
    """(case name, plan) of every kind and launcher."""
    pod = dict(FULL_POD if pod is None else pod)
    out = [
        ("env", k8s_plan.build("env_probe", NODES, pod, "t1", {"expect": {"gpu_count": 8}})),
        ("gemm", k8s_plan.build("gemm_bench", NODES, pod, "t1", {"dtypes": ["bf16"]})),
        ("nccl", k8s_plan.build("nccl_test", NODES, pod, "t1",
                                {"collectives": ["all_reduce", "all_gather"], "tool_dir": "/opt/nccl-tests/build"})),
        ("perftest", k8s_plan.build("perftest_sweep", NODES, dict(pod, gpus_per_pod=0), "t1",
                                    {"hcas": ["mlx5_0", "mlx5_1"], "gid_index": 3}, rounds=ROUNDS)),
    ]
    out.append(("allreduce_multinode", k8s_plan.build("allreduce_probe", NODES, pod, "t1", {"max_bytes": "1G"})))
    out.append(("fabric_topology", k8s_plan.build("fabric_topology", NODES, pod, "t1", {
        "lldpd_socket": "/run/lldpd.socket", "topology": {NODES[0]: {"mlx5_0": {"switch": "leaf-01", "switch_port": 1}}}})))
    for launcher in ("indexed", "mpijob", "volcano"):
        out.append(("nccl_multinode-%s" % launcher, k8s_plan.build(
            "nccl_test_multinode", NODES, pod, "t1", {"collectives": ["all_reduce"], "tool_dir": "/opt/nccl-tests/build"},
            launcher=launcher, ssh_keys=KEYS if launcher == "indexed" else None)))
    return out


def rendered(plan):
    """The objects as render mode writes them (labelled like k8s_api.create labels them)."""
    from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_api
    return [k8s_api.label_object(o, plan["run_id"]) for o in k8s_plan.objects_of(plan)]


# --------------------------------------------------------------------------- CRD schemas

def schema_dir():
    here = os.path.dirname(os.path.abspath(__file__))
    root = os.path.abspath(os.path.join(here, "..", "..", "..", ".."))
    for candidate in (os.environ.get("AIFABRIC_K8S_SCHEMAS"), os.path.join(root, "..", "shared", "schemas"),
                      "/work/shared/schemas"):
        if candidate and os.path.isfile(os.path.join(candidate, "kubeflow.org_mpijobs.yaml")):
            return candidate
    return None


def _convert(node):
    """CRD structural schema -> JSON Schema: int-or-string, nullable; strict unknown fields."""
    if isinstance(node, list):
        return [_convert(n) for n in node]
    if not isinstance(node, dict):
        return node
    node = dict((k, _convert(v)) for k, v in node.items())
    if node.pop("x-kubernetes-int-or-string", False):
        node.pop("type", None)
        node["anyOf"] = [{"type": "integer"}, {"type": "string"}]
    if node.pop("nullable", False) and "type" in node:
        node["type"] = [node["type"], "null"]
    preserve = node.pop("x-kubernetes-preserve-unknown-fields", False)
    if "properties" in node and not preserve and "additionalProperties" not in node:
        node["additionalProperties"] = False
    for key in [k for k in node if k.startswith("x-kubernetes-")]:
        node.pop(key)
    return node


_SCHEMAS = {}


def crd_validator(filename, version):
    import jsonschema
    import yaml
    key = (filename, version)
    if key not in _SCHEMAS:
        with open(os.path.join(schema_dir(), filename)) as handle:
            crd = yaml.safe_load(handle)
        schema = next(v["schema"]["openAPIV3Schema"] for v in crd["spec"]["versions"] if v["name"] == version)
        schema = _convert(copy.deepcopy(schema))
        # apiVersion/kind/metadata are checked by the API server, not by the CRD schema
        schema.setdefault("properties", {})["metadata"] = {"type": "object"}
        _SCHEMAS[key] = jsonschema.Draft202012Validator(schema)
    return _SCHEMAS[key]


CRDS = {("kubeflow.org/v2beta1", "MPIJob"): ("kubeflow.org_mpijobs.yaml", "v2beta1"),
        ("batch.volcano.sh/v1alpha1", "Job"): ("batch.volcano.sh_jobs.yaml", "v1alpha1")}


def render_all(tmpdir):
    """Render every plan into tmpdir (what render mode writes); returns the paths."""
    paths = []
    for name, plan in plans():
        paths += k8s_run.render(plan, os.path.join(str(tmpdir), name))
    return paths


# --------------------------------------------------------------------------- semantic checks schemas miss

def _templates(obj):
    spec = obj.get("spec") or {}
    if "template" in spec:
        yield obj["metadata"]["name"], spec["template"], spec
    for role, replica in (spec.get("mpiReplicaSpecs") or {}).items():
        yield "%s/%s" % (obj["metadata"]["name"], role), replica["template"], replica
    for task in spec.get("tasks") or []:
        yield "%s/%s" % (obj["metadata"]["name"], task["name"]), task["template"], task


def _dns_label(name):
    import re
    return isinstance(name, str) and len(name) <= 63 and re.match(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$", name)


def semantic_problems(objects):
    """What the API server's Go validation (or the workload) would reject and schemas do not see."""
    problems = []
    services = dict((o["metadata"]["name"], o) for o in objects if o["kind"] == "Service")
    config_maps = dict((o["metadata"]["name"], o) for o in objects if o["kind"] == "ConfigMap")
    secrets = set(o["metadata"]["name"] for o in objects if o["kind"] == "Secret")
    for obj in objects:
        name = obj["metadata"]["name"]
        if not _dns_label(name):
            problems.append("%s %s: name is not a DNS-1123 label <= 63" % (obj["kind"], name))
        if obj["kind"] == "Service" and obj["spec"].get("clusterIP") == "None":
            if not _dns_label(name):
                problems.append("headless Service %s: name is not a DNS label" % name)
        if obj["kind"] == "Job" and obj["apiVersion"] == "batch/v1":
            spec = obj["spec"]
            if spec.get("completionMode") not in (None, "NonIndexed", "Indexed"):
                problems.append("Job %s: completionMode %r" % (name, spec.get("completionMode")))
            if spec.get("completionMode") == "Indexed":
                if spec.get("completions") != spec.get("parallelism"):
                    problems.append("Indexed Job %s: completions %s != parallelism %s"
                                    % (name, spec.get("completions"), spec.get("parallelism")))
                if not _dns_label("%s-%d" % (name, int(spec["completions"]) - 1)):
                    problems.append("Indexed Job %s: pod hostname %s-N is longer than 63" % (name, name))
            if spec.get("backoffLimit") != 0:
                problems.append("Job %s: backoffLimit %r (a failed check must not be retried silently)"
                                % (name, spec.get("backoffLimit")))
        for where, template, _owner in _templates(obj):
            pod = template["spec"]
            labels = (template.get("metadata") or {}).get("labels") or {}
            if obj["kind"] == "Job" and pod.get("restartPolicy") not in ("Never", "OnFailure"):
                problems.append("%s: restartPolicy %r" % (where, pod.get("restartPolicy")))
            if pod.get("hostNetwork") and pod.get("dnsPolicy") != "ClusterFirstWithHostNet":
                problems.append("%s: hostNetwork without dnsPolicy ClusterFirstWithHostNet" % where)
            for field in ("hostname", "subdomain"):
                if field in pod and not _dns_label(pod[field]):
                    problems.append("%s: %s %r is not a DNS label" % (where, field, pod[field]))
            if pod.get("subdomain"):
                svc = services.get(pod["subdomain"])
                if svc is None:
                    problems.append("%s: subdomain %s has no headless Service of that name" % (where, pod["subdomain"]))
                elif svc["spec"].get("clusterIP") != "None":
                    problems.append("%s: Service %s is not headless" % (where, pod["subdomain"]))
                elif any(labels.get(k) != v for k, v in svc["spec"]["selector"].items()):
                    problems.append("%s: Service %s does not select these pods" % (where, pod["subdomain"]))
            for volume in pod.get("volumes") or []:
                cm = volume.get("configMap")
                if cm:
                    data = (config_maps.get(cm["name"]) or {}).get("data")
                    if data is None:
                        problems.append("%s: ConfigMap %s is not part of the plan" % (where, cm["name"]))
                    else:
                        missing = [i["key"] for i in cm.get("items") or [] if i["key"] not in data]
                        if missing:
                            problems.append("%s: ConfigMap %s lacks keys %s" % (where, cm["name"], missing))
                if volume.get("secret") and volume["secret"]["secretName"] not in secrets:
                    problems.append("%s: Secret %s is not part of the plan" % (where, volume["secret"]["secretName"]))
            for container in pod["containers"]:
                res = container.get("resources") or {}
                for key, qty in (res.get("limits") or {}).items():
                    if "/" in key and (res.get("requests") or {}).get(key) != qty:
                        problems.append("%s/%s: %s requests != limits" % (where, container["name"], key))
                if (container.get("securityContext") or {}).get("privileged"):
                    problems.append("%s/%s: privileged" % (where, container["name"]))
    return problems
