# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every wait of the Kubernetes path ends for a reason it names (issue 35, items 1 and 2): whole plans run by the
k8s_workload module against the fake API server (tests/k8s/fake_apiserver.py), with one node's pod stuck the way the
kubelet leaves it - ContainerCreating with its real warning (FailedCreatePodSandBox: a CNI failure, a RuntimeClass
handler the node's runtime lacks; NetworkNotReady; FailedMount) - or a Volcano Job whose PodGroup the scheduler does
not enqueue. The graces are small and the step's own timeout large (600 s): a step that ends at all ended at its
grace, and the record says so (the seconds it waited, the event), never "timeout" or "missing"."""

from __future__ import annotations

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
LONG = 600          # the step's own limit: never reached here
GRACE = 2

# (cause of the fake kubelet, the event reason, what its message says, the grace option that bounds it)
CAUSES = [
    ("cni", "FailedCreatePodSandBox", 'plugin type="calico" failed (add)', "sandbox_grace_s"),
    ("runtime_handler", "FailedCreatePodSandBox", 'no runtime for "nvidia" is configured', "sandbox_grace_s"),
    ("network_not_ready", "NetworkNotReady", "cni plugin not initialized", "sandbox_grace_s"),
    ("mount", "FailedMount", 'MountVolume.SetUp failed for volume "config"', "mount_grace_s"),
]


def module(fake, monkeypatch, args):
    patch_exits(monkeypatch)
    args = dict({"image": IMAGE, "kubeconfig": fake.kubeconfig, "cleanup_timeout_s": 30, "timeout_s": LONG,
                 "runtime_class": "nvidia", "sandbox_grace_s": LONG, "mount_grace_s": LONG,
                 "podgroup_grace_s": LONG}, **args)
    with patch_module_args(args):
        with pytest.raises(Exit) as exc:
            k8s_workload.main()
    assert not exc.value.failed, exc.value.kwargs
    return exc.value.kwargs


def waited_s(reason):
    """The seconds a stuck record says its pod waited after the kubelet's first warning."""
    return int(reason.split("still ContainerCreating ")[1].split(" s after")[0])


@pytest.mark.parametrize("cause,reason,needle,grace", CAUSES)
def test_per_node_jobs_one_node_stuck_in_container_creating(tmp_path, monkeypatch, cause, reason, needle, grace):
    """One Job per node (nccl): the stuck node's record is error with the kubelet's event (node, pod, message) once
    its grace ran out; the other nodes' logs were read and judged (pass); nothing of the run is left."""
    with fake_cluster(tmp_path) as fake:
        fake.server.script("container_creating", node=STUCK, cause=cause)
        fake.server.script("succeed", log_file=pod_log("all_reduce", NCCL_TEXT, tmp_path))
        out = module(fake, monkeypatch, {"kind": "nccl_test", "hosts": NODES, "run_id": "st1", "gpus_per_pod": 2,
                                         "nccl_test": ONE, grace: GRACE})
        records = dict((r["host"], r) for r in out["results"])
        assert sorted(records) == NODES and all(results.validate(r) == [] for r in records.values())
        bad = records[STUCK]
        assert bad["status"] == "error" and bad["check"] == "nccl.all_reduce", bad
        assert reason in bad["reason"] and needle in bad["reason"] and STUCK in bad["reason"], bad["reason"]
        assert bad["params"]["pod"] in bad["reason"] and GRACE <= waited_s(bad["reason"]) < LONG
        assert all(records[n]["status"] == "pass" and records[n]["metrics"] for n in NODES if n != STUCK)
        assert out["leftover"] == [] and fake.leftovers("st1") == []


@pytest.mark.parametrize("cause,reason,needle,grace", CAUSES)
def test_indexed_gang_one_worker_stuck_ends_the_stage_at_its_grace(tmp_path, monkeypatch, cause, reason, needle,
                                                                   grace):
    """An Indexed Job gang (nccl_multinode, launcher indexed): index 0 waits for its workers, index 1's pod is stuck
    on its node. The stage ends at that pod's grace; the run's record is that node's error with the event's reason
    (not the waiting launcher's node, not a timeout)."""
    with fake_cluster(tmp_path) as fake:
        fake.server.script("container_creating", node=STUCK, cause=cause)
        fake.server.script("hang")          # index 0 and 2 wait for every worker's sshd
        out = module(fake, monkeypatch, {"kind": "nccl_test_multinode", "launcher": "indexed", "hosts": NODES,
                                         "run_id": "st2", "gpus_per_pod": 2, "nccl_test": ONE, grace: GRACE})
        (record,) = out["results"]
        assert record["status"] == "error" and record["host"] == STUCK, record
        assert record["params"]["hosts"] == NODES and record["params"]["pod"].startswith("aif-st2-mn-1-")
        assert reason in record["reason"] and needle in record["reason"], record["reason"]
        assert "the gang stopped" in record["reason"] and GRACE <= waited_s(record["reason"]) < LONG
        assert out["leftover"] == [] and fake.leftovers("st2") == []
        print(record["reason"])


def test_volcano_podgroup_not_enqueued_ends_at_its_grace_with_the_reason(tmp_path, monkeypatch):
    """A Volcano Job whose gang (2 x 8 GPUs) does not fit its queue's capability (8 GPUs): Volcano creates no pod.
    The stage ends at podgroup_grace_s with the scheduler's and the job controller's words - never "missing"."""
    with fake_cluster(tmp_path, operators=("volcano",)) as fake:
        fake.server.volcano_queue("default", {"nvidia.com/gpu": 8})
        out = module(fake, monkeypatch, {"kind": "nccl_test_multinode", "launcher": "volcano", "hosts": NODES[:2],
                                         "run_id": "st3", "gpus_per_pod": 8, "nccl_test": ONE,
                                         "podgroup_grace_s": GRACE})
        (record,) = out["results"]
        assert record["status"] == "error" and record["host"] == NODES[0], record
        assert "queue resource quota insufficient" in record["reason"], record["reason"]
        assert "PodGroupPending" in record["reason"] and "no pod was created" in record["reason"]
        assert "pod group is not ready, 3 minAvailable" in record["reason"] and "no pod of" not in record["reason"]
        waited = int(record["reason"].split("not enqueued by the scheduler in ")[1].split(" s")[0])
        assert GRACE <= waited < LONG
        assert out["leftover"] == [] and fake.leftovers("st3") == []
        print(record["reason"])
