# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every manifest the Kubernetes path renders validates offline: core kinds with kubernetes-validate (strict) for
the oldest and newest supported Kubernetes, MPIJob/Volcano Job against the upstream CRD openAPIV3Schema, plus the
semantic checks schemas miss (DNS-1123 names, headless Service = pod subdomain, Indexed completions = parallelism,
restartPolicy, GPU requests = limits). The checkers are shown to catch broken manifests too."""

from __future__ import annotations

import copy
import os

import pytest
import yaml
from ansible_collections.aifabric.acceptance.tests.unit.plugins.module_utils import k8s_cases as cases

from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_manifests as km
from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_plan
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import AcceptanceError

kubernetes_validate = pytest.importorskip("kubernetes_validate")
PLANS = cases.plans()
IDS = [name for name, _plan in PLANS]


def _core(objects):
    return [o for o in objects if (o["apiVersion"], o["kind"]) not in cases.CRDS]


@pytest.mark.parametrize("version", cases.K8S_VERSIONS)
@pytest.mark.parametrize("name,plan", PLANS, ids=IDS)
def test_core_objects_validate_strict(name, plan, version):
    objects = _core(cases.rendered(plan))
    assert objects, name
    for obj in objects:
        kubernetes_validate.validate(obj, version, strict=True)


def test_rendered_files_are_the_objects_and_validate(tmp_path):
    paths = cases.render_all(tmp_path)
    assert len(paths) == sum(len(k8s_plan.objects_of(p)) for _n, p in PLANS)
    for path in paths:
        with open(path) as handle:
            obj = yaml.safe_load(handle)
        if (obj["apiVersion"], obj["kind"]) in cases.CRDS:
            continue
        for version in cases.K8S_VERSIONS:
            kubernetes_validate.validate(obj, version, strict=True)
    # the code ConfigMap's files survive the YAML round trip byte for byte
    with open(next(p for p in paths if "configmap" in os.path.basename(p))) as handle:
        data = yaml.safe_load(handle)["data"]
    assert data == k8s_plan.objects_of(PLANS[0][1])[0]["data"]


@pytest.mark.parametrize("name,plan", [c for c in PLANS if c[0] in ("nccl_multinode-mpijob", "nccl_multinode-volcano")],
                         ids=["mpijob", "volcano"])
def test_custom_resources_validate_against_the_upstream_crd(name, plan):
    if cases.schema_dir() is None:
        pytest.skip("CRD schemas not found (../shared/schemas/ absent, e.g. a clean clone; set AIFABRIC_K8S_SCHEMAS)")
    custom = [o for o in cases.rendered(plan) if (o["apiVersion"], o["kind"]) in cases.CRDS]
    assert len(custom) == 1
    validator = cases.crd_validator(*cases.CRDS[(custom[0]["apiVersion"], custom[0]["kind"])])
    errors = sorted(str(e.message) for e in validator.iter_errors(custom[0]))
    assert errors == []
    # the pod specs inside validate as core PodSpecs too (a Pod wrapper, strict)
    for _where, template, _owner in cases._templates(custom[0]):
        for version in cases.K8S_VERSIONS:
            kubernetes_validate.validate({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "x"},
                                          "spec": template["spec"]}, version, strict=True)


def test_crd_validation_catches_typos_and_enums():
    if cases.schema_dir() is None:
        pytest.skip("CRD schemas not found (../shared/schemas/ absent, e.g. a clean clone; set AIFABRIC_K8S_SCHEMAS)")
    mpijob = next(o for o in cases.rendered(dict(PLANS)["nccl_multinode-mpijob"]) if o["kind"] == "MPIJob")
    bad = copy.deepcopy(mpijob)
    bad["spec"]["mpiReplicaSpecs"]["Worker"]["replcas"] = 2
    bad["spec"]["mpiImplementation"] = "OpenMPl"
    validator = cases.crd_validator("kubeflow.org_mpijobs.yaml", "v2beta1")
    messages = " | ".join(e.message for e in validator.iter_errors(bad))
    assert "replcas" in messages and "OpenMPl" in messages


@pytest.mark.parametrize("name,plan", PLANS, ids=IDS)
def test_semantics_schemas_miss(name, plan):
    objects = cases.rendered(plan)
    assert cases.semantic_problems(objects) == []
    run = plan["run_id"]
    for obj in objects:
        assert obj["metadata"]["labels"][km.RUN_LABEL] == run
        assert obj["metadata"]["labels"]["app.kubernetes.io/managed-by"] == "aifabric.acceptance"
        for _where, template, _owner in cases._templates(obj):
            assert template["metadata"]["labels"][km.RUN_LABEL] == run


def test_semantic_checker_catches_what_schemas_miss():
    objects = copy.deepcopy(cases.rendered(dict(PLANS)["nccl_multinode-indexed"]))
    job = next(o for o in objects if o["kind"] == "Job")
    svc = next(o for o in objects if o["kind"] == "Service")
    for version in cases.K8S_VERSIONS:          # all of these pass the schema...
        job["spec"]["parallelism"] = 3
        job["spec"]["template"]["spec"]["restartPolicy"] = "Always"
        job["spec"]["template"]["spec"]["subdomain"] = "other-svc"
        svc["metadata"]["name"] = "Bad_Name"
        res = job["spec"]["template"]["spec"]["containers"][0]["resources"]
        res["requests"]["nvidia.com/gpu"] = "4"
        kubernetes_validate.validate(job, version, strict=True)
    problems = " | ".join(cases.semantic_problems(objects))       # ...and are caught here
    for needle in ("completions 4 != parallelism 3", "restartPolicy 'Always'", "subdomain other-svc has no headless",
                   "Bad_Name", "nvidia.com/gpu requests != limits"):
        assert needle in problems


def test_pod_knobs_reach_the_pod_spec():
    plan = dict(PLANS)["nccl"]
    job = k8s_plan.objects_of(plan)[1]
    pod = job["spec"]["template"]["spec"]
    (container,) = pod["containers"]
    assert pod["restartPolicy"] == "Never" and job["spec"]["backoffLimit"] == 0
    # a TTL below the deadline is raised to it (issue 22 defect 7: a Job that finished first outlives the step)
    assert job["spec"]["activeDeadlineSeconds"] == 7200 and job["spec"]["ttlSecondsAfterFinished"] == 7200
    assert job["spec"]["template"]["metadata"]["annotations"] == dict(cases.FULL_POD["annotations"],
                                                                      **{km.NODE_ANNOTATION: "gpu-node-01"})
    assert pod["hostNetwork"] is True and pod["dnsPolicy"] == "ClusterFirstWithHostNet"
    assert pod["imagePullSecrets"] == [{"name": "registry-cred"}]
    assert pod["runtimeClassName"] == "nvidia" and pod["serviceAccountName"] == "acceptance"
    assert pod["automountServiceAccountToken"] is False
    assert pod["tolerations"] == cases.FULL_POD["tolerations"]
    assert pod["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    terms = pod["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gpu-node-01"]}]}]
    shm = next(v for v in pod["volumes"] if v["name"] == "dshm")
    assert shm["emptyDir"] == {"medium": "Memory", "sizeLimit": "32Gi"}
    assert container["resources"] == {
        "requests": {"nvidia.com/gpu": "8", "rdma/hca_shared_devices_a": "1", "cpu": "8", "memory": "32Gi"},
        "limits": {"nvidia.com/gpu": "8", "rdma/hca_shared_devices_a": "1", "cpu": "64", "memory": "128Gi"}}
    assert container["securityContext"] == {"capabilities": {"add": ["IPC_LOCK"]}}
    env = dict((e["name"], e["value"]) for e in container["env"])
    assert env["NCCL_DEBUG"] == "INFO" and env["NCCL_IB_GID_INDEX"] == "3"
    assert container["envFrom"] == [{"configMapRef": {"name": "nccl-env"}}]
    assert container["imagePullPolicy"] == "IfNotPresent"
    assert container["command"][:2] == ["python3", k8s_plan.ENTRY]


def test_privileged_only_when_asked():
    plain = k8s_plan.build("env_probe", ["n1"], {"image": "img"}, "t2")
    (container,) = k8s_plan.objects_of(plain)[1]["spec"]["template"]["spec"]["containers"]
    assert "privileged" not in container["securityContext"]
    asked = k8s_plan.build("env_probe", ["n1"], {"image": "img", "privileged": True}, "t2")
    (container,) = k8s_plan.objects_of(asked)[1]["spec"]["template"]["spec"]["containers"]
    assert container["securityContext"] == {"privileged": True}
    no_lock = k8s_plan.build("env_probe", ["n1"], {"image": "img", "ipc_lock": False, "shm_size": "", "gpus_per_pod": 0,
                                                   "cpu_request": "", "cpu_limit": "", "memory_request": "",
                                                   "memory_limit": ""}, "t2")
    spec = k8s_plan.objects_of(no_lock)[1]["spec"]["template"]["spec"]
    assert "securityContext" not in spec["containers"][0] and "resources" not in spec["containers"][0]
    assert [v["name"] for v in spec["volumes"]] == ["aifabric-code"]


@pytest.mark.parametrize("pod,needle", [
    ({}, "image is required"),
    ({"image": "i", "resources": {"rdma/hca shared": 1}}, "not a valid Kubernetes resource name"),
    ({"image": "i", "resources": {"rdma/hca_shared_devices_a": "one"}}, "not a Kubernetes quantity"),
    ({"image": "i", "env": {"NCCL DEBUG": "INFO"}}, "environment variable name"),
    ({"image": "i", "namespace": "Acceptance"}, "not a DNS-1123 label"),
    ({"image": "i", "gpu": 8}, "unknown pod option 'gpu'"),
    ({"image": "i", "shm_size": "lots"}, "shm_size"),
    ({"image": "i", "resources": {"cpu": 32}}, "give cpu as the pod options cpu_request and cpu_limit"),
    ({"image": "i", "cpu_limit": "lots"}, "cpu_limit 'lots' is not a Kubernetes quantity"),
    ({"image": "i", "cpu_request": "16", "cpu_limit": "8"}, "cpu_request 16 is above cpu_limit 8"),
    ({"image": "i", "memory_request": "1500Mi", "memory_limit": "1Gi", "shm_size": ""},
     "memory_request 1500Mi is above"),
    ({"image": "i", "memory_request": "8Gi", "memory_limit": "16Gi"},
     "memory_limit 16Gi does not exceed shm_size 16Gi"),
])
def test_bad_pod_options_are_clear_errors(pod, needle):
    with pytest.raises(AcceptanceError, match=needle.replace("(", r"\(")):
        km.pod_options(pod)


def test_shipped_rbac_manifest_validates():
    here = os.path.dirname(os.path.abspath(__file__))
    with open(os.path.join(here, "..", "..", "..", "..", "extras", "k8s", "rbac.yml")) as handle:
        doc = yaml.safe_load(handle)
    assert doc["kind"] == "List"
    kinds = [item["kind"] for item in doc["items"]]
    assert kinds == ["ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding"]
    for item in doc["items"]:
        for version in cases.K8S_VERSIONS:
            kubernetes_validate.validate(item, version, strict=True)
    verbs = set(v for item in doc["items"] for rule in item.get("rules") or [] for v in rule["verbs"])
    assert not verbs & {"update", "patch", "*", "escalate", "bind", "impersonate"}


def test_the_code_config_map_fits_the_api_servers_limit():
    """A ConfigMap holds at most 1 MiB; the collection's code shipped into the pods must stay well below it."""
    size = sum(len(t.encode("utf-8")) for t in k8s_plan.code_files().values())
    assert 100 << 10 < size < 768 << 10, size
    assert set(p for p in k8s_plan.code_files() if not p.startswith("lib/")) == {
        "aifabric_k8s_entry.py", "aifabric_torch_worker.py", "aifabric_burnin_worker.py"}


def test_names_are_checked():
    with pytest.raises(AcceptanceError, match="run_id"):
        km.check_run_id("Run_1")
    with pytest.raises(AcceptanceError, match="run_id"):
        km.check_run_id("r" * 21)
    with pytest.raises(AcceptanceError, match="DNS-1123"):
        km.object_name("r" * 20, "x" * 60)
    assert km.object_name("r1", "pt", "r0", "p3", "s") == "aif-r1-pt-r0-p3-s"
