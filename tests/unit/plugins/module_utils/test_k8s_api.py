# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""k8s_api against the fake API server over real HTTP (tests/k8s/fake_apiserver.py).

Every lifecycle test ends by asserting that no object of its run is left in the store.
"""

from __future__ import annotations

import os
import signal

import pytest

pytest.importorskip("kubernetes")
pytest.importorskip("kmock")

from hypothesis import given, settings, strategies as st  # noqa: E402

from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_api  # noqa: E402
from ansible_collections.aifabric.acceptance.tests.k8s.fake_apiserver import (  # noqa: E402
    FakeApiServer, api_client, fake_cluster)
from ansible_collections.aifabric.acceptance.tests.unit.helpers import parser_fixture  # noqa: E402
from ansible_collections.aifabric.acceptance.tests.unit.k8s.test_fake_semantics import wait  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
NCCL_LOG = parser_fixture("nccl_tests", "h200x2-nccl-tests-2.19.6", "all_reduce_g2.txt")
CRASH_LOG = parser_fixture("failures", "nvidia-smi-couldnt-communicate-with-driver.txt")
PERFTEST = parser_fixture("perftest")
PT_SERVER = os.path.join(PERFTEST, "amd-ionic-rocm-gdr-ib-write-bw-server-a-MiB-only-last-size.txt")
PT_CLIENT = os.path.join(PERFTEST, "amd-ionic-rocm-gdr-ib-write-bw-client-a-MiB.txt")
NS = "default"


@pytest.fixture
def fake_k8s(tmp_path):
    """A fresh fake cluster per test (tests/k8s/fake_apiserver.py)."""
    with fake_cluster(tmp_path) as fake:
        yield fake


def read(path):
    with open(path, "rb") as fh:
        return fh.read().decode("utf-8", "replace")


def indexed_job(name, completions, gpus=8, nodes=None, restart="Never", image="nvcr.io/nvidia/pytorch:25.01-py3"):
    """An Indexed Job of ``completions`` pods, pinned to ``nodes`` by hostname affinity when given."""
    spec = {"restartPolicy": restart, "subdomain": name,
            "containers": [{"name": "main", "image": image, "command": ["all_reduce_perf", "-b", "8", "-e", "1G"],
                            "resources": {"limits": {"nvidia.com/gpu": str(gpus)},
                                          "requests": {"nvidia.com/gpu": str(gpus)}}}]}
    if nodes:
        spec["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "kubernetes.io/hostname", "operator": "In", "values": list(nodes)}]}]}}}
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
            "spec": {"completionMode": "Indexed", "completions": completions, "parallelism": completions,
                     "backoffLimit": 0, "template": {"spec": spec}}}


def support_objects(name):
    return [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name + "-probe"},
             "data": {"probe.py": "print('hello')\n"}},
            {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": name + "-ssh"}, "type": "Opaque",
             "stringData": {"id_ed25519": "not-a-real-key"}},
            {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
             "spec": {"clusterIP": "None", "selector": {"job-name": name}, "publishNotReadyAddresses": True}}]


def bare_pod(name, node, restart="Never"):
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"restartPolicy": restart, "nodeName": node,
                     "containers": [{"name": "probe", "image": "python:3.12-slim", "command": ["python3", "-V"]}]}}


# ---------------------------------------------------------------- lifecycle over HTTP

def test_success_indexed_job_logs_and_cleanup(fake_k8s):
    run = "run-ok-1"
    fake_k8s.server.script("succeed", log_file=NCCL_LOG)
    objs = support_objects("nccl") + [indexed_job("nccl", 2, nodes=["gpu-node-02", "gpu-node-03"])]
    refs = k8s_api.create(fake_k8s.api, objs, run, namespace=NS)
    assert [r["kind"] for r in refs] == ["ConfigMap", "Secret", "Service", "Job"]
    assert all(r["uid"] for r in refs)            # 201 bodies were read (v37 maps only 201 for some creates)
    out = k8s_api.wait(fake_k8s.api, NS, k8s_api.run_selector(run), 2, timeout_s=30)
    assert [o["outcome"] for o in out] == ["succeeded", "succeeded"]
    assert sorted(o["node"] for o in out) == ["gpu-node-02", "gpu-node-03"]
    assert sorted(o["labels"]["batch.kubernetes.io/job-completion-index"] for o in out) == ["0", "1"]
    assert all(o["name"].startswith("nccl-%s-" % o["annotations"]["batch.kubernetes.io/job-completion-index"])
               for o in out)
    assert all(o["exit_code"] == 0 for o in out)
    for o in out:
        assert k8s_api.logs(fake_k8s.api, NS, o["name"]) == read(NCCL_LOG)
    # pods carry the run label (template labelled) and the managed-by label
    assert all(p["metadata"]["labels"][k8s_api.MANAGED_BY_KEY] == k8s_api.MANAGED_BY_VALUE
               for p in fake_k8s.server.pods(k8s_api.run_selector(run)))
    assert len(fake_k8s.leftovers(run)) == 6      # ConfigMap, Secret, Service, Job and the Job's 2 pods
    assert k8s_api.cleanup(fake_k8s.api, NS, run, timeout_s=10) == []
    assert fake_k8s.leftovers(run) == []


def test_pair_server_and_client_get_their_own_captures(fake_k8s):
    """A perftest pair: server pod on one node, client pod on the other, each log the real capture of its side."""
    run = "run-pair"
    fake_k8s.server.script("succeed", pod="pt-server-*", log_file=PT_SERVER)
    fake_k8s.server.script("succeed", pod="pt-client-*", log_file=PT_CLIENT)
    pods = [bare_pod("pt-server-gpu-node-01", "gpu-node-01"), bare_pod("pt-client-gpu-node-02", "gpu-node-02")]
    k8s_api.create(fake_k8s.api, pods, run, namespace=NS)
    out = {o["name"]: o for o in k8s_api.wait(fake_k8s.api, NS, k8s_api.run_selector(run), 2, timeout_s=30)}
    assert {n: (o["outcome"], o["node"]) for n, o in out.items()} == {
        "pt-server-gpu-node-01": ("succeeded", "gpu-node-01"), "pt-client-gpu-node-02": ("succeeded", "gpu-node-02")}
    assert k8s_api.logs(fake_k8s.api, NS, "pt-server-gpu-node-01") == read(PT_SERVER)
    assert k8s_api.logs(fake_k8s.api, NS, "pt-client-gpu-node-02") == read(PT_CLIENT)
    assert k8s_api.cleanup(fake_k8s.api, NS, run, timeout_s=10) == []
    assert fake_k8s.leftovers(run) == []


def test_logs_are_bounded_and_tail(fake_k8s):
    run = "run-logs"
    fake_k8s.server.script("succeed", log_file=NCCL_LOG)
    k8s_api.create(fake_k8s.api, [bare_pod("probe", "gpu-node-01")], run, namespace=NS)
    out = k8s_api.wait(fake_k8s.api, NS, k8s_api.run_selector(run), 1, timeout_s=30)
    assert out[0]["outcome"] == "succeeded"
    full = read(NCCL_LOG)
    assert k8s_api.logs(fake_k8s.api, NS, "probe", limit_bytes=100) == full.encode()[:100].decode("utf-8", "replace")
    assert k8s_api.logs(fake_k8s.api, NS, "probe", tail_lines=2) == "".join(full.splitlines(True)[-2:])
    assert k8s_api.cleanup(fake_k8s.api, NS, run, timeout_s=10) == []
    assert fake_k8s.leftovers(run) == []


def test_unschedulable_names_the_scheduler_message(fake_k8s):
    run = "run-unsched"
    k8s_api.create(fake_k8s.api, [indexed_job("big", 1, gpus=16)], run, namespace=NS)
    out = k8s_api.wait(fake_k8s.api, NS, k8s_api.run_selector(run), 1, timeout_s=30, unschedulable_grace_s=0)
    assert len(out) == 1 and out[0]["outcome"] == "unschedulable"
    assert out[0]["message"].startswith("0/4 nodes are available: 4 Insufficient nvidia.com/gpu.")
    assert out[0]["node"] is None
    line = k8s_api.diagnose(fake_k8s.api, NS, out[0]["name"])
    assert line.startswith("Unschedulable: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu.")
    assert k8s_api.cleanup(fake_k8s.api, NS, run, timeout_s=10) == []
    assert fake_k8s.leftovers(run) == []


def test_unschedulable_waits_for_its_grace_then_taint_reason(fake_k8s):
    """A pod pinned to a tainted node: not an error before the grace period, then the taint is named."""
    server = fake_k8s.server
    server.nodes[0]["taints"] = [{"key": "nvidia.com/gpu", "value": "maintenance", "effect": "NoSchedule"}]
    run = "run-taint"
    job = indexed_job("tainted", 1, nodes=["gpu-node-01"])
    k8s_api.create(fake_k8s.api, [job], run, namespace=NS)
    out = k8s_api.wait(fake_k8s.api, NS, k8s_api.run_selector(run), 1, timeout_s=2, unschedulable_grace_s=60)
    assert out[0]["outcome"] == "timeout"         # grace not over: still a timeout, with the reason
    assert "had untolerated taint {nvidia.com/gpu: maintenance}" in out[0]["message"]
    out = k8s_api.wait(fake_k8s.api, NS, k8s_api.run_selector(run), 1, timeout_s=30, unschedulable_grace_s=0)
    assert out[0]["outcome"] == "unschedulable"
    assert "1 node(s) had untolerated taint {nvidia.com/gpu: maintenance}" in out[0]["message"]
    assert "3 node(s) didn't match Pod's node affinity/selector" in out[0]["message"]
    assert k8s_api.cleanup(fake_k8s.api, NS, run, timeout_s=10) == []
    assert fake_k8s.leftovers(run) == []


def test_pinning_by_match_fields_node_name(fake_k8s):
    """``matchFields metadata.name`` pins by node name (labels may differ from names); a name no node has
    is unschedulable with the scheduler's affinity reason."""
    fake_k8s.server.nodes[2]["labels"]["kubernetes.io/hostname"] = "not-the-name"
    run = "run-fields"
    job = indexed_job("pinned", 1)
    terms = [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gpu-node-03"]}]}]
    job["spec"]["template"]["spec"]["affinity"] = {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}}
    lost = indexed_job("lost", 1)
    lost["spec"]["template"]["spec"]["affinity"] = {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gpu-node-99"]}]}]}}}
    k8s_api.create(fake_k8s.api, [job, lost], run, namespace=NS)
    outcomes = k8s_api.wait(fake_k8s.api, NS, k8s_api.run_selector(run), 2, timeout_s=30, unschedulable_grace_s=0)
    out = {o["labels"]["job-name"]: o for o in outcomes}
    assert (out["pinned"]["outcome"], out["pinned"]["node"]) == ("succeeded", "gpu-node-03")
    assert out["lost"]["outcome"] == "unschedulable"
    # a name no node has: the NodeAffinity PreFilter's node set holds no node of the snapshot (schedule_one.go)
    assert "4 node(s) didn't satisfy plugin(s) [NodeAffinity]" in out["lost"]["message"]
    assert k8s_api.cleanup(fake_k8s.api, NS, run, timeout_s=10) == []
    assert fake_k8s.leftovers(run) == []


def test_image_pull_failure(fake_k8s):
    run = "run-pull"
    fake_k8s.server.script("image_pull", node="gpu-node-04")
    job = indexed_job("pull", 2, nodes=["gpu-node-03", "gpu-node-04"], image="registry.example/nccl:missing")
    k8s_api.create(fake_k8s.api, [job], run, namespace=NS)
    out = {o["node"]: o for o in k8s_api.wait(fake_k8s.api, NS, k8s_api.run_selector(run), 2, timeout_s=30,
                                              image_pull_grace_s=0)}
    assert out["gpu-node-03"]["outcome"] == "succeeded"
    assert out["gpu-node-04"]["outcome"] == "image_pull"
    assert out["gpu-node-04"]["reason"] in ("ErrImagePull", "ImagePullBackOff")
    line = k8s_api.diagnose(fake_k8s.api, NS, out["gpu-node-04"]["name"])
    assert "registry.example/nccl:missing" in line
    assert line.split(":")[0] in ("ErrImagePull", "ImagePullBackOff")
    assert k8s_api.cleanup(fake_k8s.api, NS, run, timeout_s=10) == []
    assert fake_k8s.leftovers(run) == []


def test_diagnose_names_the_container_of_a_multi_container_pod(fake_k8s):
    """A real API answers a log read without ``container`` on a two-container pod (a sidecar, a service mesh)
    with 400; the diagnosis names the failed container, so the log tail is kept."""
    run = "run-crash-2c"
    fake_k8s.server.script("fail", node="gpu-node-01", log_file=CRASH_LOG, exit_code=9)
    pod = bare_pod("env-gpu-node-01", "gpu-node-01")
    pod["spec"]["containers"].append({"name": "sidecar", "image": "python:3.12-slim", "command": ["sleep", "1"]})
    k8s_api.create(fake_k8s.api, [pod], run, namespace=NS)
    (bad,) = k8s_api.wait(fake_k8s.api, NS, k8s_api.run_selector(run), 1, timeout_s=30)
    line = k8s_api.diagnose(fake_k8s.api, NS, bad["name"])
    last = [ln for ln in read(CRASH_LOG).splitlines() if ln.strip()][-1].strip()
    assert last in line, line
    assert k8s_api.cleanup(fake_k8s.api, NS, run, timeout_s=10) == []


def test_crash_exit_code_and_log_tail(fake_k8s):
    run = "run-crash"
    fake_k8s.server.script("fail", node="gpu-node-01", log_file=CRASH_LOG, exit_code=9)
    k8s_api.create(fake_k8s.api, [bare_pod("env-gpu-node-01", "gpu-node-01"),
                                  bare_pod("env-gpu-node-02", "gpu-node-02")], run, namespace=NS)
    out = {o["node"]: o for o in k8s_api.wait(fake_k8s.api, NS, k8s_api.run_selector(run), 2, timeout_s=30)}
    assert out["gpu-node-02"]["outcome"] == "succeeded"
    bad = out["gpu-node-01"]
    assert (bad["outcome"], bad["exit_code"], bad["phase"]) == ("failed", 9, "Failed")
    line = k8s_api.diagnose(fake_k8s.api, NS, bad["name"])
    assert "container probe exited 9" in line
    last = [ln for ln in read(CRASH_LOG).splitlines() if ln.strip()][-1].strip()
    assert last in line                           # the log tail of the real capture
    assert k8s_api.cleanup(fake_k8s.api, NS, run, timeout_s=10) == []
    assert fake_k8s.leftovers(run) == []


def test_oom_killed(fake_k8s):
    run = "run-oom"
    fake_k8s.server.script("oom", job="gemm")
    k8s_api.create(fake_k8s.api, [indexed_job("gemm", 1)], run, namespace=NS)
    out = k8s_api.wait(fake_k8s.api, NS, k8s_api.run_selector(run), 1, timeout_s=30)
    assert (out[0]["outcome"], out[0]["exit_code"], out[0]["reason"]) == ("oom_killed", 137, "OOMKilled")
    assert "OOMKilled" in k8s_api.diagnose(fake_k8s.api, NS, out[0]["name"])
    assert k8s_api.cleanup(fake_k8s.api, NS, run, timeout_s=10) == []
    assert fake_k8s.leftovers(run) == []


def test_crash_loop_is_not_waited_out(fake_k8s):
    run = "run-loop"
    fake_k8s.server.script("crash_loop", pod="looper")
    k8s_api.create(fake_k8s.api, [bare_pod("looper", "gpu-node-01", restart="OnFailure")], run, namespace=NS)
    out = k8s_api.wait(fake_k8s.api, NS, k8s_api.run_selector(run), 1, timeout_s=30)
    assert (out[0]["outcome"], out[0]["exit_code"]) == ("crash_loop", 1)
    assert k8s_api.cleanup(fake_k8s.api, NS, run, timeout_s=10) == []
    assert fake_k8s.leftovers(run) == []


def test_timeout_reports_each_unfinished_pod(fake_k8s):
    run = "run-hang"
    fake_k8s.server.script("hang", node="gpu-node-02")
    k8s_api.create(fake_k8s.api, [indexed_job("hang", 2, nodes=["gpu-node-01", "gpu-node-02"])], run, namespace=NS)
    out = {o["node"]: o for o in k8s_api.wait(fake_k8s.api, NS, k8s_api.run_selector(run), 2, timeout_s=2)}
    assert out["gpu-node-01"]["outcome"] == "succeeded"
    assert out["gpu-node-02"]["outcome"] == "timeout"
    assert out["gpu-node-02"]["message"].startswith("still Running after ")
    assert k8s_api.cleanup(fake_k8s.api, NS, run, timeout_s=10) == []
    assert fake_k8s.leftovers(run) == []


def test_watch_410_gone_relists(fake_k8s):
    run = "run-gone"
    fake_k8s.server.script("succeed", run_ticks=20)
    fake_k8s.server.expire_next_watches(3)
    k8s_api.create(fake_k8s.api, [indexed_job("gone", 2)], run, namespace=NS)
    out = k8s_api.wait(fake_k8s.api, NS, k8s_api.run_selector(run), 2, timeout_s=30)
    assert [o["outcome"] for o in out] == ["succeeded", "succeeded"]
    watches = [r for r in fake_k8s.server.requests if r[2].get("watch") == "true"]
    assert len(watches) >= 4                      # 3 expired + at least one that saw the end
    assert all(r[2].get("timeoutSeconds") and r[2].get("labelSelector") for r in watches)
    assert fake_k8s.server.take_expiry() is False
    assert k8s_api.cleanup(fake_k8s.api, NS, run, timeout_s=10) == []
    assert fake_k8s.leftovers(run) == []


def test_gang_fail_fast_and_done_selector(fake_k8s):
    """Launcher + workers: the launcher must finish; a worker that cannot schedule ends the wait at once."""
    run = "run-gang"
    launcher = bare_pod("mpi-launcher", "gpu-node-01")
    launcher["metadata"]["labels"] = {"role": "launcher"}
    worker = indexed_job("mpi-worker", 2, gpus=16)   # cannot fit anywhere
    fake_k8s.server.script("hang", pod="mpi-launcher")
    k8s_api.create(fake_k8s.api, [worker, launcher], run, namespace=NS)
    out = k8s_api.wait(fake_k8s.api, NS, k8s_api.run_selector(run), 1, timeout_s=30, done_selector="role=launcher",
                       fail_fast=True, unschedulable_grace_s=0)
    by = {o["name"]: o for o in out}
    workers = [o["outcome"] for o in out if o["name"].startswith("mpi-worker")]
    assert len(workers) == 2 and "unschedulable" in workers and set(workers) <= {"unschedulable", "aborted"}
    assert by["mpi-launcher"]["outcome"] == "aborted"
    assert "ended unschedulable" in by["mpi-launcher"]["message"]
    assert k8s_api.cleanup(fake_k8s.api, NS, run, timeout_s=10) == []
    assert fake_k8s.leftovers(run) == []


def test_gang_fail_fast_accounts_for_every_pod_when_the_first_list_came_early(fake_k8s, monkeypatch):
    """The interleaving that made test_gang_fail_fast_and_done_selector flaky: the wait's first list is taken before
    the job controller made the workers, its watch starts once the scheduler marked both Unschedulable, and the
    watch's initial ADDED events end the wait at the first one - the second worker, further down the same burst,
    was never seen and had no outcome. The wait lists once more when a fail_fast stop ends it."""
    run = "run-gang-early"
    launcher = bare_pod("mpi-launcher", "gpu-node-01")
    launcher["metadata"]["labels"] = {"role": "launcher"}
    fake_k8s.server.script("hang", pod="mpi-launcher")
    k8s_api.create(fake_k8s.api, [launcher, indexed_job("mpi-worker", 2, gpus=16)], run, namespace=NS)
    wait(lambda: len([p for p in fake_k8s.server.pods() if (p.get("status") or {}).get("conditions")]) == 3,
         what="the launcher bound, both workers Unschedulable")
    real, calls = k8s_api._list_pods, []   # pylint: disable=protected-access

    def first_list_before_the_workers(*args, **kwargs):
        items, rv = real(*args, **kwargs)
        calls.append(len(items))
        if len(calls) == 1:
            items = [p for p in items if not p["metadata"]["name"].startswith("mpi-worker")]
        return items, rv
    monkeypatch.setattr(k8s_api, "_list_pods", first_list_before_the_workers)
    out = k8s_api.wait(fake_k8s.api, NS, k8s_api.run_selector(run), 1, timeout_s=30, done_selector="role=launcher",
                       fail_fast=True, unschedulable_grace_s=0)
    workers = sorted(o["outcome"] for o in out if o["name"].startswith("mpi-worker"))
    assert len(workers) == 2 and "unschedulable" in workers and set(workers) <= {"unschedulable", "aborted"}, out
    assert k8s_api.cleanup(fake_k8s.api, NS, run, timeout_s=10) == []


def test_guard_cleans_up_on_keyboard_interrupt(fake_k8s):
    run = "run-ctrlc"
    fake_k8s.server.script("hang")
    with pytest.raises(KeyboardInterrupt):
        with k8s_api.guard(fake_k8s.api, NS, run, timeout_s=10) as g:
            k8s_api.create(fake_k8s.api, support_objects("x") + [indexed_job("x", 2)], run, namespace=NS)
            k8s_api.wait(fake_k8s.api, NS, k8s_api.run_selector(run), 2, timeout_s=1)
            assert len(fake_k8s.leftovers(run)) == 6
            raise KeyboardInterrupt()
    assert g.leftover == []
    assert fake_k8s.leftovers(run) == []


def test_guard_turns_sigterm_into_cleanup_and_restores_handler(fake_k8s):
    run = "run-term"
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(k8s_api.Terminated):
        with k8s_api.guard(fake_k8s.api, NS, run, timeout_s=10) as g:
            k8s_api.create(fake_k8s.api, [bare_pod("p1", "gpu-node-01")], run, namespace=NS)
            assert fake_k8s.leftovers(run) == ["Pod/default/p1"]
            signal.raise_signal(signal.SIGTERM)
    assert g.leftover == []
    assert fake_k8s.leftovers(run) == []
    assert signal.getsignal(signal.SIGTERM) is before


def test_guard_cleans_up_on_success_and_error(fake_k8s):
    with k8s_api.guard(fake_k8s.api, NS, "run-g1") as g:
        k8s_api.create(fake_k8s.api, [bare_pod("a", "gpu-node-01")], "run-g1", namespace=NS)
    assert g.leftover == [] and fake_k8s.leftovers("run-g1") == []
    with pytest.raises(ValueError):
        with k8s_api.guard(fake_k8s.api, NS, "run-g2") as g:
            k8s_api.create(fake_k8s.api, [bare_pod("b", "gpu-node-01")], "run-g2", namespace=NS)
            raise ValueError("boom")
    assert g.leftover == [] and fake_k8s.leftovers("run-g2") == []


def test_cleanup_touches_only_its_own_run(fake_k8s):
    k8s_api.create(fake_k8s.api, support_objects("a") + [bare_pod("a", "gpu-node-01")], "run-a", namespace=NS)
    k8s_api.create(fake_k8s.api, support_objects("b") + [bare_pod("b", "gpu-node-02")], "run-b", namespace=NS)
    assert k8s_api.cleanup(fake_k8s.api, NS, "run-a", timeout_s=10) == []
    assert fake_k8s.leftovers("run-a") == []
    assert fake_k8s.leftovers("run-b") == ["ConfigMap/default/b-probe", "Pod/default/b", "Secret/default/b-ssh",
                                           "Service/default/b"]
    assert k8s_api.cleanup(fake_k8s.api, NS, "run-b", timeout_s=10, propagation="Foreground") == []
    assert fake_k8s.leftovers() == []


def test_cleanup_waits_for_terminating_pods_and_reports_what_is_left(tmp_path):
    """Pods linger for their grace period after DELETE: a short cleanup names them, a longer one sees them go."""
    with fake_cluster(tmp_path, pod_grace_ticks=40) as fake:         # ~0.8 s of "terminating"
        fake.server.script("hang")
        run = "run-grace"
        k8s_api.create(fake.api, support_objects("g") + [indexed_job("g", 2)], run, namespace=NS)
        out = k8s_api.wait(fake.api, NS, k8s_api.run_selector(run), 2, timeout_s=1)
        assert [o["outcome"] for o in out] == ["timeout", "timeout"]
        left = k8s_api.cleanup(fake.api, NS, run, timeout_s=0.1)
        assert len(left) == 2 and all(item.startswith("Pod/default/g-") for item in left)
        assert all(p["metadata"].get("deletionTimestamp") for p in fake.server.pods(k8s_api.run_selector(run)))
        assert k8s_api.cleanup(fake.api, NS, run, timeout_s=20) == []
        assert fake.leftovers(run) == []


def test_create_conflict_and_partial_create_is_cleaned(fake_k8s):
    run = "run-409"
    k8s_api.create(fake_k8s.api, [bare_pod("dup", "gpu-node-01")], run, namespace=NS)
    with pytest.raises(k8s_api.K8sError) as err:
        k8s_api.create(fake_k8s.api, [support_objects("c")[0], bare_pod("dup", "gpu-node-01")], run, namespace=NS)
    assert "cannot create Pod default/dup: HTTP 409" in str(err.value)
    assert err.value.details["status"] == 409
    assert "ConfigMap/default/c-probe" in fake_k8s.leftovers(run)
    assert k8s_api.cleanup(fake_k8s.api, NS, run, timeout_s=10) == []
    assert fake_k8s.leftovers(run) == []


def test_create_forbidden_names_the_missing_permission(fake_k8s):
    fake_k8s.server.forbid("create", "jobs")
    with pytest.raises(k8s_api.K8sError) as err:
        k8s_api.create(fake_k8s.api, [indexed_job("denied", 1)], "run-403", namespace="gpu-tests")
    text = str(err.value)
    assert "HTTP 403" in text and 'cannot create resource "jobs" in API group "batch"' in text
    assert "needs verb 'create' on resource 'jobs' in API group 'batch' in namespace 'gpu-tests'" in text
    assert fake_k8s.leftovers() == []


def test_custom_objects_create_and_cleanup(tmp_path):
    with FakeApiServer(operators=("mpi",)) as server:
        api = api_client(server)
        try:
            assert k8s_api.discover(api, [k8s_api.MPIJOB_GV, k8s_api.VOLCANO_GV, "v1"]) == {k8s_api.MPIJOB_GV, "v1"}
            mpijob = {"apiVersion": k8s_api.MPIJOB_GV, "kind": "MPIJob", "metadata": {"name": "nccl-mn"},
                      "spec": {"slotsPerWorker": 8, "launcherCreationPolicy": "WaitForWorkersReady",
                               "mpiReplicaSpecs": {"Launcher": {"replicas": 1, "template": {"spec": {}}},
                                                   "Worker": {"replicas": 2, "template": {"spec": {}}}}}}
            refs = k8s_api.create(api, [mpijob], "run-mpi", namespace=NS)
            assert refs[0]["uid"] and refs[0]["name"] == "nccl-mn"
            stored = [raw for g, v, p, ns, name, raw in server.objects() if p == "mpijobs"]
            labels = stored[0]["spec"]["mpiReplicaSpecs"]["Worker"]["template"]["metadata"]["labels"]
            assert labels[k8s_api.RUN_LABEL] == "run-mpi"
            assert "MPIJob/default/nccl-mn" in server.leftovers("run-mpi")
            assert k8s_api.cleanup(api, NS, "run-mpi", timeout_s=10) == []
            assert server.leftovers("run-mpi") == []
            server.settle()
            assert server.leftovers() == []       # what the operator made (owned by the MPIJob) was GC'd
        finally:
            api.close()
    with FakeApiServer() as server:
        api = api_client(server)
        try:
            assert k8s_api.discover(api, [k8s_api.MPIJOB_GV, k8s_api.VOLCANO_GV]) == set()
        finally:
            api.close()


def _gang_template(role, gpus=None, node_pin=None):
    container = {"name": role, "image": "registry.example/nccl-tests:2.17-mpi"}
    if gpus:
        container["resources"] = {"limits": {"nvidia.com/gpu": str(gpus)}}
    spec = {"restartPolicy": "Never", "containers": [container]}
    return {"metadata": {"labels": {"role": role}}, "spec": spec}


def _mpijob(name, workers, gpus=8):
    return {"apiVersion": k8s_api.MPIJOB_GV, "kind": "MPIJob", "metadata": {"name": name},
            "spec": {"slotsPerWorker": gpus, "launcherCreationPolicy": "WaitForWorkersReady",
                     "runPolicy": {"cleanPodPolicy": "Running", "backoffLimit": 0},
                     "mpiReplicaSpecs": {"Launcher": {"replicas": 1, "template": _gang_template("launcher")},
                                         "Worker": {"replicas": workers,
                                                    "template": _gang_template("worker", gpus)}}}}


def _vcjob(name, workers, gpus=8):
    master = {"name": "mpimaster", "replicas": 1, "template": _gang_template("launcher"),
              "policies": [{"event": "TaskCompleted", "action": "CompleteJob"}]}
    worker = {"name": "mpiworker", "replicas": workers, "template": _gang_template("worker", gpus)}
    return {"apiVersion": k8s_api.VOLCANO_GV, "kind": "Job", "metadata": {"name": name},
            "spec": {"minAvailable": workers + 1, "schedulerName": "volcano", "plugins": {"ssh": [], "svc": []},
                     "policies": [{"event": "PodFailed", "action": "AbortJob"}], "tasks": [master, worker]}}


@pytest.mark.parametrize("operator, manifest, launcher_prefix", [
    ("mpi", _mpijob("mn", 2), "mn-launcher-"), ("volcano", _vcjob("mn", 2), "mn-mpimaster-0")])
def test_operator_gang_launcher_log_and_cleanup(tmp_path, operator, manifest, launcher_prefix):
    """Multi-node launch through an operator: the launcher's log is the real nccl-tests capture; workers are
    not required to finish; deleting the one custom object (and what the run label finds) leaves nothing."""
    with fake_cluster(tmp_path, operators=(operator,)) as fake:
        fake.server.script("succeed", pod=launcher_prefix + "*", log_file=NCCL_LOG)
        run = "run-" + operator
        k8s_api.create(fake.api, [manifest], run, namespace=NS)
        out = k8s_api.wait(fake.api, NS, k8s_api.run_selector(run), 1, timeout_s=30, done_selector="role=launcher",
                           fail_fast=True)
        launcher = [o for o in out if o["labels"].get("role") == "launcher"]
        workers = [o for o in out if o["labels"].get("role") == "worker"]
        assert [o["outcome"] for o in launcher] == ["succeeded"]
        assert launcher[0]["name"].startswith(launcher_prefix)
        assert sorted(o["outcome"] for o in workers) in ([], ["running", "running"])
        assert len({o["node"] for o in workers}) == len(workers)     # 8 GPUs each: one worker per node
        assert k8s_api.logs(fake.api, NS, launcher[0]["name"]) == read(NCCL_LOG)
        assert k8s_api.cleanup(fake.api, NS, run, timeout_s=10) == []
        assert fake.leftovers(run) == []
        fake.server.settle()
        assert fake.leftovers() == []             # the operator's Service, ConfigMap and worker pods were GC'd


def test_operator_gang_worker_that_cannot_schedule_aborts_the_wait(tmp_path):
    with fake_cluster(tmp_path, operators=("mpi",)) as fake:
        run = "run-mpi-big"
        k8s_api.create(fake.api, [_mpijob("big", 2, gpus=16)], run, namespace=NS)
        out = k8s_api.wait(fake.api, NS, k8s_api.run_selector(run), 1, timeout_s=30, done_selector="role=launcher",
                           fail_fast=True, unschedulable_grace_s=0)
        assert "unschedulable" in [o["outcome"] for o in out]
        assert all(o["labels"]["role"] == "worker" for o in out)   # WaitForWorkersReady: no launcher yet
        assert k8s_api.cleanup(fake.api, NS, run, timeout_s=10) == []
        assert fake.leftovers(run) == []
        fake.server.settle()
        assert fake.leftovers() == []


def test_pod_deleted_while_waiting(fake_k8s):
    run = "run-del"
    fake_k8s.server.script("hang")
    k8s_api.create(fake_k8s.api, [bare_pod("victim", "gpu-node-01")], run, namespace=NS)

    from kubernetes import client
    import threading
    timer = threading.Timer(0.5, lambda: client.CoreV1Api(fake_k8s.api).delete_namespaced_pod(
        "victim", NS, _preload_content=False))
    timer.start()
    try:
        out = k8s_api.wait(fake_k8s.api, NS, k8s_api.run_selector(run), 1, timeout_s=20)
    finally:
        timer.join()
    assert out[0]["outcome"] == "deleted"
    assert k8s_api.cleanup(fake_k8s.api, NS, run, timeout_s=10) == []
    assert fake_k8s.leftovers(run) == []


# ---------------------------------------------------------------- connection

def test_connect_from_kubeconfig_param_and_env(fake_k8s, monkeypatch):
    for var in ("K8S_AUTH_KUBECONFIG", "K8S_AUTH_HOST", "K8S_AUTH_API_KEY", "KUBECONFIG"):
        monkeypatch.delenv(var, raising=False)
    api = k8s_api.connect({"kubeconfig": fake_k8s.kubeconfig})
    try:
        assert api.configuration.host == fake_k8s.server.url
        k8s_api.create(api, [bare_pod("c1", "gpu-node-01")], "run-conn", namespace=NS)
    finally:
        api.close()
    monkeypatch.setenv("K8S_AUTH_KUBECONFIG", fake_k8s.kubeconfig)
    api = k8s_api.connect({"kubeconfig": None, "context": None})
    try:
        assert k8s_api.cleanup(api, NS, "run-conn", timeout_s=10) == []
    finally:
        api.close()
    assert fake_k8s.leftovers() == []


def test_connect_host_and_api_key_need_no_kubeconfig(monkeypatch):
    monkeypatch.setenv("KUBECONFIG", "/nonexistent/kubeconfig")
    api = k8s_api.connect({"host": "https://10.0.0.1:6443", "api_key": "s3cret", "validate_certs": False,
                           "ca_cert": None})
    try:
        assert api.configuration.host == "https://10.0.0.1:6443"
        assert api.configuration.api_key == {"authorization": "Bearer s3cret"}
        assert api.configuration.verify_ssl is False
    finally:
        api.close()


def test_connect_errors_are_clear(tmp_path, monkeypatch):
    for var in ("K8S_AUTH_KUBECONFIG", "K8S_AUTH_HOST", "K8S_AUTH_CONTEXT", "KUBERNETES_SERVICE_HOST"):
        monkeypatch.delenv(var, raising=False)
    with pytest.raises(k8s_api.K8sError, match="kubeconfig .*/missing does not exist"):
        k8s_api.connect({"kubeconfig": str(tmp_path / "missing")})
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "nothing-here"))
    monkeypatch.setenv("HOME", str(tmp_path))
    with pytest.raises(k8s_api.K8sError, match="no Kubernetes connection: not in a cluster"):
        k8s_api.connect({})


def test_list_nodes_by_label(fake_k8s):
    fake_k8s.server.nodes[2]["labels"]["nvidia.com/gpu.present"] = "false"
    names = [n["metadata"]["name"] for n in k8s_api.list_nodes(fake_k8s.api)]
    assert names == ["gpu-node-01", "gpu-node-02", "gpu-node-03", "gpu-node-04"]
    gpu = k8s_api.list_nodes(fake_k8s.api, "kubernetes.io/hostname=gpu-node-02")
    assert [n["metadata"]["name"] for n in gpu] == ["gpu-node-02"]
    assert gpu[0]["status"]["allocatable"]["nvidia.com/gpu"] == "8"
    fake_k8s.server.forbid("list", "nodes")
    with pytest.raises(k8s_api.K8sError, match="needs verb 'list' on resource 'nodes'"):
        k8s_api.list_nodes(fake_k8s.api)


def test_connection_argspec_matches_kubernetes_core_names():
    spec = k8s_api.connection_argspec()
    assert spec["api_key"]["no_log"] is True and spec["password"]["no_log"] is True
    assert spec["validate_certs"]["aliases"] == ["verify_ssl"]
    assert spec["ca_cert"]["aliases"] == ["ssl_ca_cert"]
    assert {"kubeconfig", "context", "host", "proxy", "client_cert", "client_key"} <= set(spec)


def test_api_unreachable_is_a_clear_error():
    from kubernetes import client
    cfg = client.Configuration()
    cfg.host = "http://127.0.0.1:9"               # discard port: connection refused
    api = client.ApiClient(configuration=cfg)
    try:
        with pytest.raises(k8s_api.K8sError, match="cannot create ConfigMap default/x-probe.*API server reachable"):
            k8s_api.create(api, support_objects("x")[:1], "run-x", namespace=NS)
        left = k8s_api.cleanup(api, NS, "run-x", timeout_s=0.1)
        assert len(left) == 1 and left[0].startswith("API server unreachable, nothing of the run could be listed")
    finally:
        api.close()


def test_wait_on_a_server_that_never_answers_raises_instead_of_hanging():
    """A TCP peer that accepts and then says nothing (a wedged API server or proxy): the wait's requests are
    bounded by its deadline plus WAIT_SLACK_S, and it ends with an error naming the problem."""
    import socket
    import threading
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    held = []
    stop = threading.Event()

    def accept():
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                held.append(listener.accept()[0])
            except OSError:
                pass
    thread = threading.Thread(target=accept, daemon=True)
    thread.start()
    api = k8s_api.connect({"host": "http://127.0.0.1:%d" % listener.getsockname()[1], "api_key": "x"})
    try:
        with pytest.raises(k8s_api.K8sError, match="cannot watch pods .* within 1 s"):
            k8s_api.wait(api, NS, k8s_api.run_selector("run-wedged"), 1, timeout_s=1)
        assert held                                   # it did connect: the bound is the read timeout
        left = k8s_api.cleanup(api, NS, "run-wedged", timeout_s=0.5)
        assert len(left) == 1 and left[0].startswith("API server unreachable, nothing of the run could be listed")
    finally:
        api.close()
        stop.set()
        thread.join(5)
        for conn in held:
            conn.close()
        listener.close()


# ---------------------------------------------------------------- pure helpers

def test_bad_run_id_and_manifest_are_refused(fake_k8s):
    with pytest.raises(k8s_api.K8sError, match="not a valid Kubernetes label value"):
        k8s_api.run_selector("Run id with spaces")
    with pytest.raises(k8s_api.K8sError, match="not a Kubernetes manifest"):
        k8s_api.create(fake_k8s.api, [{"kind": "Pod"}], "run-1", namespace=NS)
    with pytest.raises(k8s_api.K8sError, match="has no namespace"):
        k8s_api.create(fake_k8s.api, [bare_pod("p", "n")], "run-1")


def test_label_object_does_not_mutate_and_labels_templates():
    job = indexed_job("j", 1)
    copy = k8s_api.label_object(job, "r-1")
    assert "labels" not in job["metadata"]
    assert copy["metadata"]["labels"][k8s_api.RUN_LABEL] == "r-1"
    assert copy["spec"]["template"]["metadata"]["labels"][k8s_api.RUN_LABEL] == "r-1"


_json = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=5),
                     lambda kids: st.lists(kids, max_size=3) | st.dictionaries(
                         st.sampled_from(["status", "phase", "containerStatuses", "initContainerStatuses", "state",
                                          "waiting", "terminated", "reason", "exitCode", "lastState", "conditions",
                                          "type", "message", "metadata", "spec", "nodeName", "name"]),
                         kids, max_size=4), max_leaves=25)


@settings(max_examples=300, deadline=None)
@given(_json, st.sampled_from([None, 0.0]), st.sampled_from([None, 5.0]))
def test_classify_never_raises_on_odd_pods(pod, since, now):
    outcome, _reason, _message, _code = k8s_api.classify(pod, since, now, 0.0)
    assert outcome is None or outcome == "succeeded" or outcome in k8s_api.ERROR_OUTCOMES


def test_classify_real_shapes():
    pending = {"status": {"phase": "Pending", "conditions": [
        {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
         "message": "0/2 nodes are available: 2 Insufficient rdma/hca_shared_devices_a."}]}}
    assert k8s_api.classify(pending, 10.0, 20.0, 60)[0] is None            # inside the grace period
    assert k8s_api.classify(pending, 10.0, 80.0, 60)[:2] == ("unschedulable", "Unschedulable")
    config = {"status": {"phase": "Pending", "containerStatuses": [
        {"name": "c", "state": {"waiting": {"reason": "CreateContainerConfigError",
                                            "message": 'configmap "x-probe" not found'}}}]}}
    assert k8s_api.classify(config) == ("config_error", "CreateContainerConfigError", 'configmap "x-probe" not found',
                                        None)
    evicted = {"status": {"phase": "Failed", "reason": "Evicted", "message": "The node was low on resource: memory."}}
    assert k8s_api.classify(evicted)[:3] == ("failed", "Evicted", "The node was low on resource: memory.")


def test_classify_image_pull_grace():
    """ErrImagePull/ImagePullBackOff (the kubelet retries them) are final only past the grace; a final pull error
    (InvalidImageName) at once; the message names the image."""
    image = "registry.example/nccl:2.17"

    def waiting(reason, message):
        return {"status": {"phase": "Pending", "containerStatuses": [
            {"name": "nccl", "image": image, "state": {"waiting": {"reason": reason, "message": message}}}]}}
    backoff = waiting("ImagePullBackOff", 'Back-off pulling image "%s"' % image)
    assert k8s_api.classify(backoff, pulling_since=10.0, now=40.0, pull_grace_s=60)[0] is None
    outcome, reason, message, _code = k8s_api.classify(backoff, pulling_since=10.0, now=75.0, pull_grace_s=60)
    assert (outcome, reason) == ("image_pull", "ImagePullBackOff")
    assert image in message and "still failing after 65 s" in message
    assert k8s_api.classify(backoff)[0] == "image_pull"        # no first-seen time (a deleted pod, diagnose): at once
    invalid = waiting("InvalidImageName", "couldn't parse image name")
    outcome, _reason, message, _code = k8s_api.classify(invalid, pulling_since=10.0, now=11.0, pull_grace_s=60)
    assert outcome == "image_pull" and image in message
