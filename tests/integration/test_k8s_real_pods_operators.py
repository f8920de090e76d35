# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""kind nccl_multinode with launcher mpijob and volcano over pods that really run (issue 21).

The fake cluster's operators (tests/k8s/fake_operators.py: mpi-operator v0.8.2, Volcano v1.15's ssh and svc plugins)
create the launcher and worker pods, the ssh key Secret, the hostfile / hosts ConfigMap, the ssh config, the
headless Service and the OMPI_MCA_* environment as their upstream controllers do; the process kubelet runs the pods
(real OpenSSH sshd in the workers, real Open MPI mpirun in the launcher, the fake all_reduce_perf replaying the real
2x H200 capture as the ranks) with the cluster-DNS stand-in (only Ready pods of the Service, search-path names) and
the pods' image laid over this machine's files (tests/k8s/images.py: the image's /etc/ssh and /run/sshd). With
hostNetwork, every node's own sshd holds port 22 of its network (ProcessKubelet(node_sshd=True)).

Each case's record is compared with what the SSH path's nccl_test module makes of the same capture. Where today's
collection code failed on this emulation because of a defect of issue 22, the case failed (see CASES).
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time

import pytest

pytest.importorskip("kubernetes")
pytest.importorskip("kmock")

from ansible.module_utils.testing import patch_module_args  # noqa: E402
from ansible_collections.aifabric.acceptance.plugins.modules import k8s_workload  # noqa: E402
from ansible_collections.aifabric.acceptance.tests.integration.test_k8s_real_pods import (  # noqa: E402
    NCCL_CAPTURE, WHY_NOT, h200_nvidia_smi, multinode_diffs, ssh_path_module)
from ansible_collections.aifabric.acceptance.tests.k8s import images, process_kubelet  # noqa: E402
from ansible_collections.aifabric.acceptance.tests.k8s.fake_apiserver import fake_cluster  # noqa: E402
from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules.module_harness import (  # noqa: E402
    Exit, patch_exits)

pytestmark = [pytest.mark.skipif(WHY_NOT is not None, reason=str(WHY_NOT)),
              pytest.mark.skipif(not (shutil.which("mpirun") and shutil.which("sshd") and shutil.which("ssh")
                                      and shutil.which("ssh-keygen")),
                                 reason="needs mpirun (Open MPI), sshd, ssh and ssh-keygen")]

TOOLS = "registry.example.com/acceptance/tools:1"          # the user's image: Debian's openssh, defaults
MPI_BASE = "registry.example.com/acceptance/tools-on-mpioperator-base:1"      # built FROM mpioperator/base
NODES = ["gpu-node-01", "gpu-node-02"]


@pytest.fixture(scope="module")
def operators_cluster(tmp_path_factory):
    """One fake cluster with both operators and a process kubelet (both images, node sshds) for every case."""
    if process_kubelet.missing_prerequisites():
        pytest.skip(process_kubelet.missing_prerequisites())
    from ansible_collections.aifabric.acceptance.tests.integration.fixtures.fake_nccl_tests import fake_perf
    tmp = tmp_path_factory.mktemp("k8s-operators")
    tools = tmp / "tools"
    h200_nvidia_smi(str(tools))
    bindir = tmp / "nccl-bin"
    os.makedirs(str(bindir))
    fake_perf.install(str(bindir), ["all_reduce_perf"])
    imgs = {TOOLS: images.tools_image(str(tmp / "img-tools")),
            MPI_BASE: images.mpi_operator_base_image(str(tmp / "img-base"))}
    with fake_cluster(tmp, operators=("mpi", "volcano")) as fake:
        with process_kubelet.ProcessKubelet(fake.server, path=[str(tools)], python=sys.executable, timeout_s=120,
                                            images=imgs, node_sshd=True) as kubelet:
            fake.server.script("process", runner=kubelet)
            fake.kubelet = kubelet
            fake.bindir = str(bindir)
            yield fake
            fake.server.settle(3)
            assert fake.leftovers() == [], fake.leftovers()


def run_module(fake, monkeypatch, args):
    patch_exits(monkeypatch)
    args = dict({"kubeconfig": fake.kubeconfig, "unschedulable_grace_s": 0, "cleanup_timeout_s": 30}, **args)
    with patch_module_args(args):
        with pytest.raises(Exit) as exc:
            k8s_workload.main()
    return exc.value


def _ranks(log):
    if not os.path.exists(log):
        return []
    with open(log) as handle:
        return [json.loads(line) for line in handle if line.strip()]


# (launcher, image, hostNetwork). Before issue 22's fixes (ea3c55d) every case with the tools image failed here as
# on a cluster: the workers started a bare /usr/sbin/sshd, which exits without /run/sshd in a distribution image
# (defect 3; Volcano's own example runs mkdir -p /var/run/sshd first), the launchers' ssh had no
# StrictHostKeyChecking=no/UserKnownHostsFile=/dev/null (defect 3) and, with hostNetwork, the workers' sshd wanted
# port 22, which the node's own sshd holds (defect 2); only the MPIJob on mpi-operator's base image (sshd and ssh on
# 2222, no host key checking, /run/sshd) ran through.
# a pod env entry each rank must see (the fake all_reduce_perf logs every NCCL_* name of its environment)
POD_ENV = {"NCCL_IB_GID_INDEX": "3"}
CASES = [
    pytest.param("mpijob", MPI_BASE, False, id="mpijob-mpioperator-base-image"),
    pytest.param("mpijob", TOOLS, False, id="mpijob-tools-image"),
    pytest.param("mpijob", TOOLS, True, id="mpijob-tools-image-hostnetwork"),
    pytest.param("volcano", TOOLS, False, id="volcano-tools-image"),
    pytest.param("volcano", TOOLS, True, id="volcano-tools-image-hostnetwork"),
]


@pytest.mark.parametrize("launcher,image,host_network", CASES)
def test_nccl_multinode_operator_launchers_run_mpirun_over_real_sshd(
        operators_cluster, monkeypatch, launcher, image, host_network):
    """kind nccl_multinode, 2 nodes x 2 GPUs, through the operator: its launcher pod runs real mpirun, which starts
    orted in both workers over real ssh (the operator's key Secret, its hostfile or the svc plugin's hosts and ssh
    config), and the 4 ranks (the fake all_reduce_perf) run 2 per worker; rank 0 prints the real 2x H200 capture.
    The record equals what the SSH path's nccl_test module makes of that capture in every field the two share,
    less the launch's shape."""
    fake = operators_cluster
    run_id = "op-%s%s%s" % (launcher[:3], "b" if image == MPI_BASE else "t", "h" if host_network else "p")
    ranks_log = os.path.join(fake.kubelet.dir, "ranks-%s.log" % run_id)
    fake.kubelet.env["FAKE_NCCL_LOG"] = ranks_log
    res = run_module(fake, monkeypatch, {
        "kind": "nccl_test_multinode", "hosts": NODES, "run_id": run_id, "gpus_per_pod": 2, "launcher": launcher,
        "image": image, "host_network": host_network, "timeout_s": 25, "env": POD_ENV,
        "nccl_test": {"tool_dir": fake.bindir, "collectives": ["all_reduce"], "mpirun_env_forward": ["FAKE_NCCL_LOG"]}})
    try:
        assert not res.failed, res.kwargs
        records = res.kwargs["results"]
        assert [(r["check"], r["status"]) for r in records] == [("nccl.all_reduce", "pass")], \
            (records[0].get("reason"), (records[0].get("raw") or "")[-2000:])
        ranks = _ranks(ranks_log)
        assert sorted(r["rank"] for r in ranks) == [0, 1, 2, 3], ranks
        # issue 22 defect 4: the pod's env reaches every rank on every worker (orted starts them through sshd, with
        # a fresh environment: only mpirun's -x of every pod env name carries it)
        assert [(r["rank"], r["env"].get("NCCL_IB_GID_INDEX")) for r in sorted(ranks, key=lambda r: r["rank"])] == \
            [(rank, POD_ENV["NCCL_IB_GID_INDEX"]) for rank in range(4)], ranks
        workers = sorted(set(r["hostname"] for r in ranks))
        if not host_network:
            assert len(workers) == 2 and all("-worker-" in h or "-mpiworker-" in h for h in workers), workers
        (ssh,) = ssh_path_module(fake.kubelet, NODES[0], "nccl_test", {"from_output": NCCL_CAPTURE})
        assert multinode_diffs(records[0], ssh) == {}
        assert res.kwargs["leftover"] == [] and fake.leftovers(run_id) == []
    finally:
        fake.kubelet.env.pop("FAKE_NCCL_LOG", None)


NODE_PORT_22 = """\
import socket
c = socket.create_connection(("127.0.0.1", 22), timeout=5)
print(c.recv(256).decode().strip(), flush=True)
s = socket.socket()
s.bind(("0.0.0.0", 22))
"""


def test_a_node_s_own_sshd_holds_port_22_of_its_host_network(operators_cluster):
    """What defect 2 is about: on the host network of a node, port 22 is the node's own sshd - a hostNetwork pod
    reaches it there (an OpenSSH banner that is not the run's sshd) and cannot bind that port itself."""
    from kubernetes import client
    fake = operators_cluster
    core = client.CoreV1Api(fake.api)
    core.create_namespaced_pod("default", {"metadata": {"name": "port22"}, "spec": {
        "restartPolicy": "Never", "hostNetwork": True, "nodeName": "gpu-node-03",
        "containers": [{"name": "main", "image": TOOLS, "command": ["python3", "-c", NODE_PORT_22]}]}})
    deadline = time.monotonic() + 20
    phase = None
    while time.monotonic() < deadline and phase not in ("Succeeded", "Failed"):
        time.sleep(0.1)
        phase = [(p.get("status") or {}).get("phase") for p in fake.server.pods() if p["metadata"]["name"] == "port22"][0]
    log = core.read_namespaced_pod_log("port22", "default")
    core.delete_namespaced_pod("port22", "default", grace_period_seconds=0)
    fake.server.settle(3)
    assert phase == "Failed", (phase, log)
    assert log.startswith("SSH-2.0-OpenSSH_") and "Address already in use" in log, log


@pytest.fixture(scope="module")
def mpi_v04_cluster(tmp_path_factory):
    """A fake cluster whose mpi-operator is v0.4.0 (its <job>-worker naming, fake_operators.MPI_V04)."""
    if process_kubelet.missing_prerequisites():
        pytest.skip(process_kubelet.missing_prerequisites())
    from ansible_collections.aifabric.acceptance.tests.integration.fixtures.fake_nccl_tests import fake_perf
    tmp = tmp_path_factory.mktemp("k8s-mpi-v04")
    tools = tmp / "tools"
    h200_nvidia_smi(str(tools))
    bindir = tmp / "nccl-bin"
    os.makedirs(str(bindir))
    fake_perf.install(str(bindir), ["all_reduce_perf"])
    with fake_cluster(tmp, operators=("mpi-v0.4",)) as fake:
        with process_kubelet.ProcessKubelet(fake.server, path=[str(tools)], python=sys.executable, timeout_s=120,
                                            images={MPI_BASE: images.mpi_operator_base_image(str(tmp / "img"))},
                                            node_sshd=True) as kubelet:
            fake.server.script("process", runner=kubelet)
            fake.kubelet = kubelet
            fake.bindir = str(bindir)
            yield fake
            fake.server.settle(3)
            assert fake.leftovers() == [], fake.leftovers()


@pytest.mark.parametrize("crd_readable", [True, False], ids=["capability-check", "hostfile-fallback"])
def test_mpijob_on_mpi_operator_v04_waits_for_its_worker_names(mpi_v04_cluster, monkeypatch, crd_readable):
    """mpi-operator v0.4.x serves kubeflow.org/v2beta1 (launcher auto picks MPIJob) but names the workers'
    Service and subdomain <job>-worker: the launcher that waited for <job>-worker-<i>.<job> waited wait_workers_s
    for names that never resolve and blamed the workers. It waits for the names the CRD's capability check gives
    or, when the CRD cannot be read, for those of the operator's hostfile; the run passes either way."""
    fake = mpi_v04_cluster
    if not crd_readable:
        fake.server.forbid("get", "customresourcedefinitions")
    run_id = "v04-%s" % ("crd" if crd_readable else "hf")
    ranks_log = os.path.join(fake.kubelet.dir, "ranks-%s.log" % run_id)
    fake.kubelet.env["FAKE_NCCL_LOG"] = ranks_log
    res = run_module(fake, monkeypatch, {
        "kind": "nccl_test_multinode", "hosts": NODES, "run_id": run_id, "gpus_per_pod": 2, "launcher": "auto",
        "image": MPI_BASE, "timeout_s": 40,
        "nccl_test": {"tool_dir": fake.bindir, "collectives": ["all_reduce"], "mpirun_env_forward": ["FAKE_NCCL_LOG"],
                      "wait_workers_s": 15}})
    assert not res.failed, res.kwargs
    assert res.kwargs["launcher"] == "mpijob"
    records = res.kwargs["results"]
    assert [(r["check"], r["status"]) for r in records] == [("nccl.all_reduce", "pass")], \
        (records[0].get("reason"), (records[0].get("raw") or "")[-2000:])
    assert sorted(r["rank"] for r in _ranks(ranks_log)) == [0, 1, 2, 3]
    services = [n for _g, _v, p, _ns, n, _raw in fake.server.objects() if p == "services"]
    assert services == [] and res.kwargs["leftover"] == [] and fake.leftovers(run_id) == []
