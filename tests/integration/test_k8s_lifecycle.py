# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubernetes lifecycle of k8s_api on a whole fake fleet, in real processes, and on a real cluster.

- a 6-node fake cluster (tests/k8s/fake_apiserver.py, over real HTTP, reached through a written
  kubeconfig and ``k8s_api.connect``) with one crashing node, one whose image cannot be pulled,
  one without the RDMA resource, and healthy nodes: exactly those three fail, each with the
  reason the user needs, healthy nodes return the real captured log, and nothing is left;
- Ctrl-C (SIGINT) and SIGTERM sent to a separate Python process blocked in ``wait`` inside
  ``guard``: the process exits and every object of its run is gone;
- ``-m cluster``: the same create/wait/logs/diagnose/cleanup against the cluster of
  ``$KUBECONFIG`` (skipped unless selected AND KUBECONFIG is set).
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
import uuid

import pytest

pytest.importorskip("kubernetes")
pytest.importorskip("kmock")

from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_api  # noqa: E402
from ansible_collections.aifabric.acceptance.tests.k8s.fake_apiserver import (  # noqa: E402
    FakeApiServer, fake_cluster, gpu_nodes)

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(REPO, "tests", "unit", "plugins", "module_utils", "parsers", "fixtures")
NCCL_LOG = os.path.join(FIXTURES, "nccl_tests", "h200x2-nccl-tests-2.19.6", "all_reduce_g2.txt")
CRASH_LOG = os.path.join(FIXTURES, "failures", "nvidia-smi-couldnt-communicate-with-driver.txt")
RDMA = "rdma/hca_shared_devices_a"


@pytest.fixture
def fake_k8s(tmp_path):
    """A fresh fake cluster per test (tests/k8s/fake_apiserver.py)."""
    with fake_cluster(tmp_path) as fake:
        yield fake


def per_node_job(name, nodes, image="nvcr.io/nvidia/pytorch:25.01-py3"):
    """One pod per node: an Indexed Job whose index i is pinned to nodes[i] would need per-index
    affinity; the per-node form the collection uses is one Job per node, as here."""
    out = []
    for node in nodes:
        out.append({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "%s-%s" % (name, node)},
                    "spec": {"backoffLimit": 0, "completions": 1, "parallelism": 1, "template": {
                        "metadata": {"labels": {"aifabric.acceptance/node": node}},
                        "spec": {"restartPolicy": "Never", "nodeSelector": {"kubernetes.io/hostname": node},
                                 "containers": [{"name": "nccl", "image": image,
                                                 "resources": {"limits": {"nvidia.com/gpu": "8", RDMA: "1"}}}]}}}})
    return out


def test_fleet_exactly_the_bad_nodes_fail(tmp_path):
    nodes = gpu_nodes(6, extra={RDMA: "1"})
    del nodes[5]["allocatable"][RDMA]                 # gpu-node-06: the RDMA device plugin is missing
    names = [n["name"] for n in nodes]
    with FakeApiServer(nodes=nodes) as server:
        server.script("fail", node="gpu-node-03", log_file=CRASH_LOG, exit_code=1)
        server.script("image_pull", node="gpu-node-05")
        server.script("succeed", log_file=NCCL_LOG)
        api = k8s_api.connect({"kubeconfig": server.write_kubeconfig(str(tmp_path / "kubeconfig"))})
        run = "fleet-" + uuid.uuid4().hex[:8]
        try:
            with k8s_api.guard(api, "gpu-tests", run, timeout_s=20) as g:
                k8s_api.create(api, per_node_job("nccl", names), run, namespace="gpu-tests")
                out = k8s_api.wait(api, "gpu-tests", k8s_api.run_selector(run), len(names), timeout_s=60,
                                   unschedulable_grace_s=0, image_pull_grace_s=0)
                by_node = {o["labels"]["aifabric.acceptance/node"]: o for o in out}
                assert sorted(by_node) == names
                bad = {n: o["outcome"] for n, o in by_node.items() if o["outcome"] != "succeeded"}
                assert bad == {"gpu-node-03": "failed", "gpu-node-05": "image_pull", "gpu-node-06": "unschedulable"}
                assert "Insufficient %s" % RDMA in by_node["gpu-node-06"]["message"]
                diag = {n: k8s_api.diagnose(api, "gpu-tests", by_node[n]["name"]) for n in bad}
                assert "container nccl exited 1" in diag["gpu-node-03"]
                assert "nvidia-smi" in diag["gpu-node-03"].lower() or "NVIDIA" in diag["gpu-node-03"]
                assert "Failed to pull image" in diag["gpu-node-05"] or "Back-off pulling" in diag["gpu-node-05"]
                assert "1 Insufficient %s" % RDMA in diag["gpu-node-06"]
                with open(NCCL_LOG, "rb") as fh:
                    expected = fh.read().decode("utf-8", "replace")
                for node in ("gpu-node-01", "gpu-node-02", "gpu-node-04"):
                    assert by_node[node]["node"] == node
                    assert k8s_api.logs(api, "gpu-tests", by_node[node]["name"]) == expected
            assert g.leftover == []
            assert server.leftovers(run) == []
            assert server.leftovers() == []
        finally:
            api.close()


CHILD = textwrap.dedent("""
    import faulthandler
    import signal
    import sys
    faulthandler.register(signal.SIGUSR1)       # the test asks for the stacks when the child does not end
    from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_api
    api = k8s_api.connect({"kubeconfig": sys.argv[1]})
    run = sys.argv[2]
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "forever"},
           "spec": {"completions": 2, "parallelism": 2, "completionMode": "Indexed", "backoffLimit": 0,
                    "template": {"spec": {"restartPolicy": "Never",
                                          "containers": [{"name": "c", "image": "img"}]}}}}
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "forever-cfg"}, "data": {"a": "b"}}
    try:
        with k8s_api.guard(api, "default", run, timeout_s=20) as g:
            k8s_api.create(api, [cm, job], run, namespace="default")
            print("CREATED", flush=True)
            k8s_api.wait(api, "default", k8s_api.run_selector(run), 2, timeout_s=120)
    except KeyboardInterrupt as exc:
        print("INTERRUPTED %s leftover=%r" % (type(exc).__name__, g.leftover), flush=True)
        sys.exit(130)
    print("NOT INTERRUPTED", flush=True)
""")


@pytest.mark.parametrize("sig, name", [(signal.SIGINT, "KeyboardInterrupt"), (signal.SIGTERM, "Terminated")])
def test_signal_to_a_waiting_process_cleans_up(fake_k8s, tmp_path, sig, name):
    fake_k8s.server.script("hang")
    run = "sig-" + uuid.uuid4().hex[:8]
    script = tmp_path / "child.py"
    script.write_text(CHILD)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    # the child starts as a user's process does, SIGINT at its default (Python then raises KeyboardInterrupt): a
    # child inherits an ignored SIGINT, and a test run started in the background by a non-interactive shell
    # (`make test &`, nohup: SigIgn 0x7, SIGHUP/SIGINT/SIGQUIT) ignores it - the child then slept through the signal
    # in its watch's read (its stack, in such a run)
    proc = subprocess.Popen([sys.executable, str(script), fake_k8s.kubeconfig, run], env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:      # wait until both pods run (the child is then inside wait())
            pods = fake_k8s.server.pods("aifabric.acceptance/run-id=%s" % run)
            if len(pods) == 2 and all(p["status"].get("phase") == "Running" for p in pods):
                break
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.05)
        else:
            pytest.fail("the child's pods never ran")
        assert len(fake_k8s.leftovers(run)) == 4          # ConfigMap, Job, 2 pods
        time.sleep(0.3)                                   # let the child enter its watch
        proc.send_signal(sig)
        try:        # the cleanup is bounded by 20 s; the rest is slack for a loaded machine
            out, err = proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGUSR1)      # faulthandler: every thread's stack on stderr
            time.sleep(1)
            proc.kill()
            out, err = proc.communicate()
            pytest.fail("the child did not end within 60 s of %s; its stacks:\n%s\nstdout: %s" % (name, err, out))
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert proc.returncode == 130, (out, err)
    assert "INTERRUPTED %s leftover=[]" % name in out
    assert fake_k8s.leftovers(run) == []


@pytest.mark.cluster
def test_real_cluster_lifecycle(request):
    """Against the cluster of $KUBECONFIG: a tiny Job (image $AIFABRIC_K8S_TEST_IMAGE, default python:3.12-slim)
    succeeds and its log is read; a pod asking for an extended resource nobody has is reported
    unschedulable with the scheduler's message; nothing of the run is left."""
    if "cluster" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("real-cluster test: select it with -m cluster (and set KUBECONFIG)")
    if not os.environ.get("KUBECONFIG"):
        pytest.skip("real-cluster test: KUBECONFIG is not set")
    namespace = os.environ.get("AIFABRIC_K8S_TEST_NAMESPACE", "default")
    image = os.environ.get("AIFABRIC_K8S_TEST_IMAGE", "python:3.12-slim")
    api = k8s_api.connect({"kubeconfig": os.environ["KUBECONFIG"], "context": os.environ.get("K8S_AUTH_CONTEXT")})
    run = "cluster-test-" + uuid.uuid4().hex[:8]
    marker = "aifabric-acceptance-cluster-test %s" % run
    ok = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": run + "-ok"},
          "spec": {"backoffLimit": 0, "activeDeadlineSeconds": 300, "ttlSecondsAfterFinished": 600,
                   "template": {"metadata": {"labels": {"role": "ok"}},
                                "spec": {"restartPolicy": "Never",
                                         "containers": [{"name": "c", "image": image,
                                                         "command": ["sh", "-c", "echo %s" % marker]}]}}}}
    never = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": run + "-never", "labels": {"role": "never"}},
             "spec": {"restartPolicy": "Never",
                      "containers": [{"name": "c", "image": image, "command": ["true"],
                                      "resources": {"limits": {"aifabric.example/never": "1"}}}]}}
    try:
        with k8s_api.guard(api, namespace, run, timeout_s=120) as g:
            k8s_api.create(api, [ok, never], run, namespace=namespace)
            out = k8s_api.wait(api, namespace, k8s_api.run_selector(run), 2, timeout_s=300,
                               unschedulable_grace_s=5)
            by_role = {o["labels"].get("role"): o for o in out}
            assert by_role["ok"]["outcome"] == "succeeded", by_role["ok"]
            assert by_role["ok"]["node"]
            assert marker in k8s_api.logs(api, namespace, by_role["ok"]["name"])
            assert by_role["never"]["outcome"] == "unschedulable", by_role["never"]
            assert "Insufficient aifabric.example/never" in by_role["never"]["message"]
        assert g.leftover == []
    finally:
        api.close()
