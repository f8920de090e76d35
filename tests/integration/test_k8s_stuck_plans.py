# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whole plans per launcher with one node's pod stuck: every stuck state the Kubernetes path knows, for each launcher
of a multi-node stage (Indexed Job, MPIJob, Volcano Job), and for the per-node Jobs of a single-node stage. The
k8s_workload module runs against the fake API server (tests/k8s/fake_apiserver.py: its kubelet, its scheduler's fit
check, its quota and webhook admission, the operators' events as upstream records them); the graces are small and
the step's own limit large (600 s), so a step that ends at all ended at its grace - the record's own words say how
long it waited (the test's clock: the module's figure, never a wall-clock assertion). The stuck node's record is
``error`` with the event's reason; every other node's records are kept and judged."""

from __future__ import annotations

import re

import pytest

pytest.importorskip("kubernetes")
pytest.importorskip("kmock")

from ansible.module_utils.testing import patch_module_args  # noqa: E402
from ansible_collections.aifabric.acceptance.tests.k8s.fake_apiserver import fake_cluster  # noqa: E402
from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules.module_harness import (  # noqa: E402
    Exit, patch_exits)
from ansible_collections.aifabric.acceptance.tests.integration.test_k8s_workload_lifecycle import (  # noqa: E402
    IMAGE, NCCL_TEXT, ONE, pod_log)

from ansible_collections.aifabric.acceptance.plugins.module_utils import results  # noqa: E402
from ansible_collections.aifabric.acceptance.plugins.modules import k8s_workload  # noqa: E402

NODES = ["gpu-node-01", "gpu-node-02", "gpu-node-03"]
STUCK = "gpu-node-02"
LONG = 600          # every step's own limit and every grace not under test: never reached here
GRACE = 2
GRACE_OPTIONS = ("unschedulable", "image_pull", "sandbox", "mount", "podgroup", "quota", "admission")
LAUNCHERS = {"indexed": (), "mpijob": ("mpi",), "volcano": ("volcano",)}
WEBHOOK = ("validation.gatekeeper.sh", '[gpu-node-allowlist] pod is not allowed on this node pool')


def _holder(fake):
    """A pod of another tenant bound to the stuck node, holding 7 of its 8 GPUs and the host port 2222."""
    from kubernetes import client
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "other-tenant"},
            "spec": {"nodeName": STUCK, "restartPolicy": "Never", "containers": [{
                "name": "main", "image": "busybox", "ports": [{"containerPort": 2222, "hostPort": 2222}],
                "resources": {"limits": {"nvidia.com/gpu": "7"}}}]}}
    client.CoreV1Api(fake.api).create_namespaced_pod("default", body)


# state -> (set up the stuck node's pod, the grace option, the event reasons one of which the record names, what its
# message says, the pattern of the seconds the record says it waited)
def _sandbox(fake, _launcher):
    fake.server.script("container_creating", node=STUCK, cause="cni")


def _mount(fake, _launcher):
    fake.server.script("container_creating", node=STUCK, cause="mount")


def _image_pull(fake, _launcher):
    fake.server.script("image_pull", node=STUCK)


def _unschedulable(fake, _launcher):
    fake.server.script("hang", pod="other-tenant")
    _holder(fake)


def _quota(fake, _launcher):
    fake.server.quota("default", {"requests.nvidia.com/gpu": "4"})      # 2 of the 3 ranks' pods (2 GPUs each)


def _admission(fake, _launcher):
    fake.server.webhook(WEBHOOK[0], WEBHOOK[1], lambda pod: re.search(r"-(worker-)?1(-[a-z0-9]{5})?$",
                                                                      pod["metadata"].get("name") or "") is not None)


def _podgroup(fake, _launcher):
    fake.server.volcano_queue("default", {"nvidia.com/gpu": 4})


STATES = {
    "sandbox": (_sandbox, "sandbox", ("FailedCreatePodSandBox",), 'plugin type="calico" failed (add)',
                r"still ContainerCreating (\d+) s after"),
    "mount": (_mount, "mount", ("FailedMount",), 'MountVolume.SetUp failed for volume "config"',
              r"still ContainerCreating (\d+) s after"),
    "image_pull": (_image_pull, "image_pull", ("ErrImagePull", "ImagePullBackOff"), IMAGE,
                   r"still failing after (\d+) s"),
    "unschedulable": (_unschedulable, "unschedulable", ("Unschedulable",),
                      "0/4 nodes are available: 1 Insufficient nvidia.com/gpu", r"still Unschedulable (\d+) s after"),
    "quota": (_quota, "quota", ("FailedCreate", "MPIJobFailed"),
              "exceeded quota: compute-resources, requested: requests.nvidia.com/gpu=2, used: "
              "requests.nvidia.com/gpu=4, limited: requests.nvidia.com/gpu=4",
              r"still refused (\d+) s after the first refusal"),
    "admission": (_admission, "admission", ("FailedCreate", "MPIJobFailed"),
                  "denied the request: %s" % WEBHOOK[1],      # Volcano's %#v of the error escapes the name's quotes
                  r"still refused (\d+) s after the first refusal"),
    "podgroup": (_podgroup, "podgroup", ("PodGroupPending",), "queue resource quota insufficient",
                 r"not enqueued by the scheduler in (\d+) s"),
}
CASES = [(launcher, state) for launcher in LAUNCHERS for state in STATES if state != "podgroup" or
         launcher == "volcano"]


def module(fake, monkeypatch, args):
    patch_exits(monkeypatch)
    args = dict(dict({"image": IMAGE, "kubeconfig": fake.kubeconfig, "cleanup_timeout_s": 30, "timeout_s": LONG},
                     **dict(("%s_grace_s" % g, LONG) for g in GRACE_OPTIONS)), **args)
    with patch_module_args(args):
        with pytest.raises(Exit) as exc:
            k8s_workload.main()
    assert not exc.value.failed, exc.value.kwargs
    return exc.value.kwargs


def _judge(record, state):
    _setup, _grace, reasons, needle, waited = STATES[state]
    assert record["status"] == "error", record
    assert any(r in record["reason"] for r in reasons) and needle in record["reason"], record["reason"]
    seconds = re.search(waited, record["reason"])
    assert seconds and GRACE <= int(seconds.group(1)) < LONG, record["reason"]


@pytest.mark.parametrize("launcher,state", CASES)
def test_multinode_stage_with_one_node_stuck_ends_at_its_grace(tmp_path, monkeypatch, launcher, state):
    """nccl_multinode over three nodes, one rank's pod stuck: the stage ends at that state's grace with one error
    record naming the cause (the event's reason and words) - the stuck node where the pod was bound to one; nothing
    of the run is left."""
    setup, grace, _reasons, _needle, _waited = STATES[state]
    run_id = "sp%s%s" % (launcher[:2], state[:4].replace("_", ""))
    with fake_cluster(tmp_path, operators=LAUNCHERS[launcher]) as fake:
        setup(fake, launcher)
        fake.server.script("hang")          # the ranks wait for each other
        out = module(fake, monkeypatch, {"kind": "nccl_test_multinode", "launcher": launcher, "hosts": NODES,
                                         "run_id": run_id, "gpus_per_pod": 2, "nccl_test": ONE,
                                         "%s_grace_s" % grace: GRACE})
        records = out["results"]
        assert records and all(results.validate(r) == [] for r in records), records
        for record in records:
            _judge(record, state)
            assert record["params"]["hosts"] == NODES
        print(state, launcher, [(r["host"], r["reason"]) for r in records])
        assert out["leftover"] == [] and fake.leftovers(run_id) == []


def _pinned_to_stuck(pod):
    """The pod a per-node Job pins to the stuck node (its matchFields metadata.name values)."""
    terms = ((((pod.get("spec") or {}).get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or []
    return any(f.get("values") == [STUCK] for t in terms for f in t.get("matchFields") or [])


PER_NODE = {"unschedulable": _unschedulable, "image_pull": _image_pull,
            "admission": lambda fake, _l: fake.server.webhook(WEBHOOK[0], WEBHOOK[1], _pinned_to_stuck)}


@pytest.mark.parametrize("state", sorted(PER_NODE))
def test_per_node_stage_with_one_node_stuck_keeps_the_other_nodes_records(tmp_path, monkeypatch, state):
    """One Job per node (nccl): the stuck node's record is error with the event's reason once its grace ran out -
    that node named (the Job pinned to it: its record's host, even for a pod never created); the other nodes'
    logs were read and judged (pass)."""
    _setup, grace, _reasons, _needle, _waited = STATES[state]
    run_id = "pn%s" % state[:5].replace("_", "")
    with fake_cluster(tmp_path) as fake:
        PER_NODE[state](fake, None)
        fake.server.script("succeed", log_file=pod_log("all_reduce", NCCL_TEXT, tmp_path))
        out = module(fake, monkeypatch, {"kind": "nccl_test", "hosts": NODES, "run_id": run_id, "gpus_per_pod": 2,
                                         "nccl_test": ONE, "%s_grace_s" % grace: GRACE})
        records = dict((r["host"], r) for r in out["results"])
        assert sorted(records) == NODES and all(results.validate(r) == [] for r in records.values())
        bad = [n for n in NODES if records[n]["status"] != "pass"]
        assert bad == [STUCK], [(n, r["reason"]) for n, r in records.items()]
        _judge(records[bad[0]], state)
        assert all(records[n]["metrics"] for n in NODES if n not in bad)
        print(state, bad[0], records[bad[0]]["reason"])
        assert out["leftover"] == [] and fake.leftovers(run_id) == []


def test_a_quota_that_clears_within_its_grace_is_no_error(tmp_path, monkeypatch):
    """The other side of quota_grace_s: per-node Jobs under a quota for two of their three pods - the third Job's
    pod is refused (exceeded quota) until one of the first two ended, then created, and every node passes."""
    with fake_cluster(tmp_path) as fake:
        _quota(fake, None)
        fake.server.script("succeed", log_file=pod_log("all_reduce", NCCL_TEXT, tmp_path))
        out = module(fake, monkeypatch, {"kind": "nccl_test", "hosts": NODES, "run_id": "pnquota", "gpus_per_pod": 2,
                                         "nccl_test": ONE, "quota_grace_s": 60})
        assert sorted(r["host"] for r in out["results"]) == NODES
        assert all(r["status"] == "pass" for r in out["results"]), [r["reason"] for r in out["results"]]
        refused = [e for e in fake.server.events() if e["reason"] == "FailedCreate"]
        assert refused and all("exceeded quota: compute-resources" in e["message"] for e in refused), refused
        assert out["leftover"] == [] and fake.leftovers("pnquota") == []
