# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Kubernetes path with pods that really run (issue 21, "Pods that really run").

The fake API server (tests/k8s/fake_apiserver.py) schedules the pods the k8s_workload module creates; the
process kubelet (tests/k8s/process_kubelet.py) runs them as real processes: each pod in its own network, PID,
UTS and mount namespace, the collection's code ConfigMap (read from the server's store) mounted at
/opt/aifabric, the pod's env and hostname, a cluster-DNS stand-in for the headless Services, and fake tool
binaries on PATH that replay real captures. The records the module returns are compared field by field with
what the SSH path's own module code returns on the same captures in the same kind of sandbox (leaving out
only what legitimately differs: times, params, host and peer).
"""

from __future__ import annotations

import json
import os
import sys
import sysconfig
import time
import uuid

import pytest

pytest.importorskip("kubernetes")
pytest.importorskip("kmock")

from ansible.module_utils.testing import patch_module_args  # noqa: E402
from ansible_collections.aifabric.acceptance.tests.k8s.fake_apiserver import fake_cluster  # noqa: E402
from ansible_collections.aifabric.acceptance.tests.k8s import process_kubelet  # noqa: E402
from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules.module_harness import (  # noqa: E402
    Exit, patch_exits)
from ansible_collections.aifabric.acceptance.plugins.modules import k8s_workload  # noqa: E402

WHY_NOT = process_kubelet.missing_prerequisites()
pytestmark = pytest.mark.skipif(WHY_NOT is not None, reason=str(WHY_NOT))

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SMI = os.path.join(ROOT, "tests", "unit", "plugins", "module_utils", "parsers", "fixtures", "nvidia_smi")
IMAGE = "registry.example.com/acceptance/tools:1"
# what legitimately differs between two runs on two substrates: when, how long, the substrate's params, the host
VOLATILE = ("started", "duration_s", "params", "host", "peer")
# live readings of this machine (not captures): they change between two reads
LIVE = {"env.memory": ("mem_available_bytes",)}
# collections root (the directory holding ansible_collections/): the SSH path's module imports from it
COLLECTIONS = os.path.dirname(os.path.dirname(os.path.dirname(ROOT)))


def h200_nvidia_smi(directory):
    """A fake nvidia-smi answering with the real captures of a 2x H200 machine (driver 580)."""
    return process_kubelet.fake_tool(directory, "nvidia-smi", [
        (["-q", "-x"], os.path.join(SMI, "driver580-h200x2-q-x.xml"), 0),
        (["nvlink", "-s"], os.path.join(SMI, "driver580-h200x2-nvlink-s.txt"), 0),
        (["topo", "-m"], os.path.join(SMI, "h200x2-nccl-tests-2.19.6", "nvidia_smi_topo.txt"), 0),
        (["--query-gpu"], os.path.join(SMI, "driver580-h200x2-query-gpu-27fields-header-units.csv"), 0),
    ])


@pytest.fixture
def cluster(tmp_path):
    """A fake cluster whose kubelet runs every pod for real; fake tools in tmp_path/tools."""
    tools = tmp_path / "tools"
    h200_nvidia_smi(str(tools))
    with fake_cluster(tmp_path) as fake:
        with process_kubelet.ProcessKubelet(fake.server, path=[str(tools)], python=sys.executable,
                                            timeout_s=120) as kubelet:
            fake.server.script("process", runner=kubelet)
            fake.kubelet = kubelet
            yield fake
            assert fake.leftovers() == [], fake.leftovers()


def run_module(fake, monkeypatch, args):
    patch_exits(monkeypatch)
    args = dict({"image": IMAGE, "kubeconfig": fake.kubeconfig, "unschedulable_grace": 0, "cleanup_timeout": 30,
                 "timeout": 120, "gpus": 0}, **args)
    with patch_module_args(args):
        with pytest.raises(Exit) as exc:
            k8s_workload.main()
    return exc.value


def run_in_sandbox(kubelet, node, name, argv, env=None, wait_s=120):
    """Run ``argv`` in a pod sandbox of ``node`` made by the same kubelet, outside the API server (the SSH path's
    stand-in: the same PATH, fake tools, interpreter and kernel view as the pods); returns (exit code, log)."""
    pod = {"metadata": {"uid": str(uuid.uuid4()), "namespace": "ssh", "name": name, "labels": {}},
           "spec": {"nodeName": node, "hostname": name, "containers": [{
               "name": "main", "command": argv, "env": [{"name": k, "value": v} for k, v in (env or {}).items()]}]}}
    handle = kubelet.start(pod)
    deadline = time.monotonic() + wait_s
    ended = None
    while ended is None and time.monotonic() < deadline:
        time.sleep(0.1)
        ended = kubelet.poll(handle)
    if ended is None:
        kubelet.stop(handle, 0)
        pytest.fail("the SSH-path run %s did not end in %ss" % (name, wait_s))
    return ended["main"][0], kubelet.logs(handle)["main"].decode("utf-8", "replace")


def ssh_path_module(kubelet, node, module, args):
    """The SSH path's module (plugins/modules/<module>.py), run as Ansible runs it on a host: its args file."""
    args_file = os.path.join(kubelet.dir, "%s-args.json" % module)
    with open(args_file, "w") as handle:
        json.dump({"ANSIBLE_MODULE_ARGS": args}, handle)
    # "python3" as the pods start it (the same interpreter path: the env probe records it), with Ansible importable
    code, out = run_in_sandbox(kubelet, node, "ssh-" + module.replace("_", "-"), [
        "python3", "-m", "ansible_collections.aifabric.acceptance.plugins.modules." + module, args_file],
        env={"PYTHONPATH": COLLECTIONS + os.pathsep + sysconfig.get_paths()["purelib"]})
    assert code == 0, out[-3000:]
    return json.loads(out[out.index("{"):])["results"]


def comparable(records):
    """record key -> the record less what legitimately differs between the substrates."""
    out = {}
    for record in records:
        key = (record["check"], record.get("target"))
        assert key not in out, "two records for %s" % (key,)
        out[key] = dict((k, v) for k, v in record.items() if k not in VOLATILE)
        live = LIVE.get(record["check"], ())
        if live:
            out[key]["metrics"] = dict((k, v) for k, v in (record.get("metrics") or {}).items() if k not in live)
    return out


def test_env_probe_pods_really_run_the_code_configmap_and_match_the_ssh_path(cluster, monkeypatch):
    """kind env on two nodes: each pod runs the entry program from the code ConfigMap mounted at /opt/aifabric (no
    other copy of it is reachable: its interpreter starts without the collection on its path), probes with the fake
    nvidia-smi replaying the 2x H200 captures, and its records equal the SSH path's env_probe module's field by
    field."""
    nodes = ["gpu-node-01", "gpu-node-02"]
    res = run_module(cluster, monkeypatch, {"kind": "env", "nodes": nodes, "run_id": "rp-env"})
    assert not res.failed, res.kwargs
    records = res.kwargs["results"]
    assert sorted(set(r["host"] for r in records)) == nodes
    gpu = [r for r in records if r["check"] == "gpu.inventory"]
    assert [(r["host"], r["status"]) for r in gpu] == [(n, "pass") for n in nodes], gpu
    ssh = comparable(ssh_path_module(cluster.kubelet, nodes[0], "env_probe",
                                     {"groups": ["env", "gpu", "rdma", "software"]}))
    for node in nodes:
        mine = comparable([r for r in records if r["host"] == node])
        assert sorted(mine) == sorted(ssh)
        diffs = dict((key, (mine[key], ssh[key])) for key in ssh if mine[key] != ssh[key])
        assert diffs == {}
    assert res.kwargs["leftover"] == [] and cluster.leftovers("rp-env") == []
    assert not os.path.exists("/opt/aifabric"), "the code volume was mounted outside the pods' mount namespaces"
