# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Risky items of issue 22 ("Kubernetes that works on a real cluster") around the device plugin, the preflight and
the node verdicts that the issue's defect files do not test, against the fake API server over real HTTP:

- the preflight's WARN on a healthy NVIDIA device plugin whose start-up config JSON holds ``failOnInitError``;
- ``k8s_node_verdicts`` writing ``spec.taints`` over another controller's taint change (no resourceVersion
  precondition, no retry on 409 Conflict);
- the device plugin's render mode (manifests to a directory, no API server);
- the rdma_device_plugin role's probe path (no ``probe_records``) with only the shipped RBAC
  (extras/k8s/rbac-device-plugin.yml), namespace by namespace.
"""

from __future__ import annotations

import json
import os

import pytest
import yaml

pytest.importorskip("kubernetes")
pytest.importorskip("kmock")

from ansible.module_utils.testing import patch_module_args  # noqa: E402
from ansible_collections.aifabric.acceptance.tests.k8s import fake_rdma_plugin as frp  # noqa: E402
from ansible_collections.aifabric.acceptance.tests.k8s.fake_apiserver import fake_cluster, gpu_nodes  # noqa: E402
from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules.module_harness import (  # noqa: E402
    Exit, patch_exits)

from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_api, k8s_entry  # noqa: E402
from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_node_verdicts as nv  # noqa: E402
from ansible_collections.aifabric.acceptance.plugins.modules import k8s_device_plugin, k8s_node_verdicts  # noqa: E402
from ansible_collections.aifabric.acceptance.plugins.modules import k8s_preflight  # noqa: E402
from ansible_collections.aifabric.acceptance.tests.integration.test_k8s_device_plugin_lifecycle import (  # noqa: E402
    cx4_records, rbac_grants, request_grant)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
HEALTHY_LOG = os.path.join(ROOT, "tests", "k8s", "fixtures", "nvidia_device_plugin", "healthy-v0.17.0.log")
ROLE = os.path.join(ROOT, "roles", "rdma_device_plugin")
RBAC = os.path.join(ROOT, "extras", "k8s", "rbac-device-plugin.yml")


def call(module, args):
    with patch_module_args(args):
        with pytest.raises(Exit) as exc:
            module.main()
    return exc.value


def _plugin_pod(fake, log_text):
    """The static manifest's NVIDIA device plugin pod on gpu-node-01, running, with ``log_text`` as its log."""
    from kubernetes import client
    fake.server.script("hang", pod="nvidia-device-plugin-daemonset-*", log=log_text)
    client.CoreV1Api(fake.api).create_namespaced_pod("kube-system", {
        "apiVersion": "v1", "kind": "Pod",
        "metadata": {"name": "nvidia-device-plugin-daemonset-x7k2p", "labels": {"name": "nvidia-device-plugin-ds"}},
        "spec": {"nodeName": "gpu-node-01", "containers": [
            {"name": "nvidia-device-plugin-ctr", "image": "nvcr.io/nvidia/k8s-device-plugin:v0.17.0"}]}})
    fake.server.settle(5)
    # a "hang" pod's log stays empty in the fake kubelet: the plugin's log is what it printed at start-up
    fake.server.controller.logs[("kube-system", "nvidia-device-plugin-daemonset-x7k2p", "nvidia-device-plugin-ctr")] = \
        log_text.encode("utf-8")


# --------------------------------------------------------------------------- preflight: failOnInitError

def test_preflight_passes_a_healthy_plugin_whose_config_says_fail_on_init_error(tmp_path, monkeypatch):
    patch_exits(monkeypatch)
    with open(HEALTHY_LOG, encoding="utf-8") as handle:
        text = handle.read()
    assert '"failOnInitError": true,' in text
    with fake_cluster(tmp_path, nodes=gpu_nodes(1)) as fake:
        _plugin_pod(fake, text)
        res = call(k8s_preflight, {"kubeconfig": fake.kubeconfig, "hosts": ["gpu-node-01"], "expect": {"gpu_count": 8}})
    (plugin,) = [r for r in res.kwargs["results"] if r["check"] == "k8s.nvidia_device_plugin"]
    assert plugin["status"] == "pass", plugin["reason"]
    assert "log_problems" not in plugin["facts"], plugin["facts"]


def test_preflight_still_warns_when_the_plugin_found_no_device(tmp_path, monkeypatch):
    """The same start-up, ending as NVIDIA/k8s-device-plugin#1080's did: the problem line is named, the config's
    failOnInitError is not."""
    patch_exits(monkeypatch)
    with open(HEALTHY_LOG, encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    keep = lines[:lines.index(next(ln for ln in lines if "Retrieving plugins." in ln)) + 1]
    text = "\n".join(keep + ["I1129 11:18:42.712265       1 main.go:381] No devices found. Waiting indefinitely."]) + "\n"
    with fake_cluster(tmp_path, nodes=gpu_nodes(1)) as fake:
        _plugin_pod(fake, text)
        res = call(k8s_preflight, {"kubeconfig": fake.kubeconfig, "hosts": ["gpu-node-01"]})
    (plugin,) = [r for r in res.kwargs["results"] if r["check"] == "k8s.nvidia_device_plugin"]
    assert plugin["status"] == "warn", plugin
    assert plugin["facts"]["log_problems"] == [
        "I1129 11:18:42.712265       1 main.go:381] No devices found. Waiting indefinitely."]


# --------------------------------------------------------------------------- node verdicts: 409 and retry

def test_node_verdict_taint_keeps_a_taint_another_controller_added_meanwhile(tmp_path, monkeypatch):
    """Between the module's read of the nodes and its patch, the node controller taints gpu-node-01
    NoExecute (node.kubernetes.io/unreachable). The verdict's taint patch must not write the old taint list over
    it: with a resourceVersion precondition the API answers 409, and the module reads again and retries."""
    from kubernetes import client
    patch_exits(monkeypatch)
    unreachable = {"key": "node.kubernetes.io/unreachable", "effect": "NoExecute"}
    with fake_cluster(tmp_path, nodes=gpu_nodes(2)) as fake:
        real_list = k8s_api.list_nodes
        raced = []

        def list_then_race(api, *args, **kwargs):
            out = real_list(api, *args, **kwargs)
            if not raced:            # once: the other controller's write lands after our read
                raced.append(True)
                client.CoreV1Api(fake.api).patch_node("gpu-node-01", {"spec": {"taints": [unreachable]}})
            return out
        monkeypatch.setattr(k8s_api, "list_nodes", list_then_race)
        res = call(k8s_node_verdicts, {"kubeconfig": fake.kubeconfig, "run_id": "v409", "taint": True,
                                       "verdicts": {"gpu-node-01": "fail", "gpu-node-02": "pass"}})
        assert not res.failed, res.kwargs
        node = client.CoreV1Api(fake.api).read_node("gpu-node-01").to_dict()
    taints = sorted((t["key"], t["effect"]) for t in node["spec"]["taints"])
    assert taints == [(nv.TAINT_KEY, "NoSchedule"), ("node.kubernetes.io/unreachable", "NoExecute")], taints
    assert node["metadata"]["labels"][nv.LABEL] == "fail"


def test_node_verdict_gives_up_after_repeated_conflicts(tmp_path, monkeypatch):
    """A node that changes before every one of our patches: a clear error after the retries, not an overwrite."""
    from kubernetes import client
    patch_exits(monkeypatch)
    real_patch = client.CoreV1Api.patch_node
    ours = []

    def race_each_patch(self, name, body, **kwargs):
        ours.append(body)
        real_patch(self, name, {"metadata": {"annotations": {"example.com/heartbeat": str(len(ours))}}})
        return real_patch(self, name, body, **kwargs)
    with fake_cluster(tmp_path, nodes=gpu_nodes(1)) as fake:
        monkeypatch.setattr(client.CoreV1Api, "patch_node", race_each_patch)
        res = call(k8s_node_verdicts, {"kubeconfig": fake.kubeconfig, "run_id": "v409b", "taint": True,
                                       "verdicts": {"gpu-node-01": "fail"}})
        monkeypatch.setattr(client.CoreV1Api, "patch_node", real_patch)
        node = client.CoreV1Api(fake.api).read_node("gpu-node-01").to_dict()
    assert res.failed
    assert "409 Conflict" in res.kwargs["msg"] and "gpu-node-01" in res.kwargs["msg"], res.kwargs["msg"]
    assert len(ours) == nv.CONFLICT_RETRIES + 1
    assert all(b["metadata"]["resourceVersion"] for b in ours)        # every attempt carried its precondition
    assert not node["spec"].get("taints"), node["spec"]


# --------------------------------------------------------------------------- device plugin: render mode

def test_device_plugin_render_mode_writes_the_manifests_without_a_cluster(tmp_path, monkeypatch):
    patch_exits(monkeypatch)
    recs = cx4_records(tmp_path, "gpu-node-01")
    out = tmp_path / "manifests"

    def no_cluster(*_args, **_kwargs):
        raise AssertionError("render mode must not connect to a cluster")
    monkeypatch.setattr(k8s_api, "connect", no_cluster)
    args = {"render_dir": str(out), "probe_records": recs, "hosts": ["gpu-node-01"], "use_cdi": True,
            "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]}
    dry = call(k8s_device_plugin, dict(args, _ansible_check_mode=True))
    assert not dry.failed and dry.kwargs["changed"] is False and not out.exists()
    res = call(k8s_device_plugin, args)
    assert not res.failed, res.kwargs
    assert res.kwargs["changed"] is True and res.kwargs["results"] == []
    names = sorted(os.listdir(str(out)))
    assert names == ["00-configmap-rdma-devices.yaml", "01-daemonset-rdma-shared-dp-ds.yaml"]
    assert res.kwargs["files"] == [str(out / n) for n in names] == dry.kwargs["files"]
    assert all(os.stat(str(out / n)).st_mode & 0o777 == 0o600 for n in names)
    cm, ds = [yaml.safe_load((out / n).read_text()) for n in names]
    assert json.loads(cm["data"]["config.json"]) == res.kwargs["config"]
    spec = ds["spec"]["template"]["spec"]
    assert spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert {"name": "dynamic-cdi", "mountPath": "/var/run/cdi"} in spec["containers"][0]["volumeMounts"]
    # the rendered files are the objects the module applies against a cluster
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    for obj in (cm, ds):
        kubernetes_validate.validate(obj, "1.28", strict=True)


def test_device_plugin_render_run_in_a_playbook_writes_no_error_report(tmp_path):
    """A playbook that only renders the plugin's manifests (k8s_device_plugin render_dir, run once for the fleet)
    measured nothing by design: the fleet report says so and writes no report in which every node is an error."""
    import subprocess
    import sys
    from ansible_collections.aifabric.acceptance.tests.integration.conftest import collections_path
    playbook_bin = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    if not os.access(playbook_bin, os.X_OK) or not collections_path():
        pytest.skip("no ansible-playbook next to this Python, or the collection is not importable")
    recs = cx4_records(tmp_path, "gpu-node-01")
    (tmp_path / "hosts.yml").write_text(
        "all:\n  vars:\n    ansible_connection: local\n    ansible_python_interpreter: %s\n  children:\n"
        "    gpu_nodes:\n      hosts:\n        gpu-node-01:\n        gpu-node-02:\n" % sys.executable)
    (tmp_path / "render.yml").write_text(yaml.safe_dump([{
        "name": "Render the RDMA shared device plugin", "hosts": "gpu_nodes", "gather_facts": False,
        "tasks": [{"name": "Render", "aifabric.acceptance.k8s_device_plugin": {
            "render_dir": str(tmp_path / "manifests"), "probe_records": recs, "hosts": ["gpu-node-01"]},
            "run_once": True, "delegate_to": "localhost"}]}]))
    report_dir = tmp_path / "reports"
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=collections_path(),
               ANSIBLE_CALLBACKS_ENABLED="aifabric.acceptance.fleet_report", AIFABRIC_REPORTS_ROOT=str(report_dir),
               AIFABRIC_HISTORY_DB=str(tmp_path / "history.sqlite"), ANSIBLE_NOCOLOR="1", PYTHONDONTWRITEBYTECODE="1")
    proc = subprocess.run([playbook_bin, "-i", str(tmp_path / "hosts.yml"), str(tmp_path / "render.yml")], env=env,
                          capture_output=True, text=True, timeout=300, check=False, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
    assert sorted(os.listdir(str(tmp_path / "manifests"))) == ["00-configmap-rdma-devices.yaml",
                                                               "01-daemonset-rdma-shared-dp-ds.yaml"]
    assert "FLEET REPORT: render only (render_dir=%s)" % (tmp_path / "manifests") in proc.stdout, proc.stdout[-3000:]
    assert not (report_dir / "latest").exists()


def test_device_plugin_render_mode_refuses_state_absent(tmp_path, monkeypatch):
    patch_exits(monkeypatch)
    res = call(k8s_device_plugin, {"render_dir": str(tmp_path / "m"), "state": "absent"})
    assert res.failed and "state=absent needs a cluster" in res.kwargs["msg"]


# --------------------------------------------------------------------------- the role's probe path, shipped RBAC only

def test_role_probe_path_runs_with_only_the_shipped_rbac(tmp_path):
    """ansible-playbook aifabric.acceptance.rdma_device_plugin with the role's defaults and no probe records, on GPU
    nodes tainted nvidia.com/gpu:NoSchedule that carry current NFD labels: the probe pods (host network, in the
    plugin's namespace) schedule and report each node's ports, the plugin is deployed with selectors generated from
    them and passes on every node, state=absent removes it; every API call of both runs is granted by
    extras/k8s/rbac-device-plugin.yml in the namespace it was made in, and every grant is used."""
    import subprocess
    import sys
    from ansible_collections.aifabric.acceptance.plugins.module_utils import env_probe
    from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_device_plugin as dp
    from ansible_collections.aifabric.acceptance.tests.integration.conftest import collections_path
    from ansible_collections.aifabric.acceptance.tests.unit.plugins.module_utils import test_env_probe as tep
    playbook_bin = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    if not os.access(playbook_bin, os.X_OK) or not collections_path():
        pytest.skip("no ansible-playbook next to this Python, or the collection is not importable")
    names = ["gpu-node-01", "gpu-node-02"]
    recs = dict((n, cx4_records(tmp_path, n)) for n in names)
    devices = dp.devices_from_records([r for rs in recs.values() for r in rs])
    gpu_taint = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    nodes = [frp.rdma_node(n, devices[n], taints=[gpu_taint]) for n in names]
    # what the entry program prints in each probe pod: the env probe's records of the node's (CX-4) sysfs
    root = tep.cx4_infiniband(tmp_path / "probe")
    for hca in ("mlx5_0", "mlx5_1"):
        tep.put(root, "/sys/class/infiniband/%s/device/vendor" % hca, "0x15b3\n")
        tep.put(root, "/sys/class/infiniband/%s/device/device" % hca, "0x1013\n")
    probed = env_probe.probe(tep.host_for(root), {"groups": ["rdma"]})
    probe_log = k8s_entry.RECORDS + json.dumps(probed, sort_keys=True) + "\n"
    with open(RBAC) as handle:
        (probe_ns,) = [d for d in yaml.safe_load(handle)["items"] if d["kind"] == "Namespace"]
    with fake_cluster(tmp_path, nodes=nodes) as fake:
        frp.install(fake.server)
        # the namespace as the shipped file creates it (PodSecurity "privileged": the probe pods use the host network)
        fake.server.namespace(probe_ns["metadata"]["name"], probe_ns["metadata"]["labels"])
        fake.server.script("succeed", pod="aif-*-env-*", log=probe_log)
        inventory = tmp_path / "hosts.yml"
        inventory.write_text("all:\n  children:\n    gpu_nodes:\n      hosts:\n" + "".join("        %s:\n" % n for n in names))
        report_dir = tmp_path / "reports"
        env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=collections_path(),
                   ANSIBLE_CALLBACKS_ENABLED="aifabric.acceptance.fleet_report", AIFABRIC_REPORTS_ROOT=str(report_dir),
                   AIFABRIC_HISTORY_DB=str(tmp_path / "history.sqlite"), ANSIBLE_NOCOLOR="1",
                   PYTHONDONTWRITEBYTECODE="1")
        extra = {"k8s_connection": {"kubeconfig": fake.kubeconfig}, "rdma_device_plugin_verify_timeout_s": 10,
                 "k8s_image": "registry.example.com/acceptance/gpu-tools:2026.11"}

        def play(more):
            proc = subprocess.run([playbook_bin, "-i", str(inventory), "aifabric.acceptance.rdma_device_plugin", "-v",
                                   "-e", json.dumps(dict(extra, **more))], env=env, capture_output=True, text=True,
                                  timeout=300, check=False, cwd=str(tmp_path))
            assert proc.returncode == 0, proc.stdout[-4000:] + proc.stderr[-2000:]
            return proc.stdout

        play({})
        with open(str(report_dir / "latest" / "results.json"), encoding="utf-8") as handle:
            records = json.load(handle)["records"]
        ports = sorted((r["host"], r["target"]) for r in records if r["check"] == "rdma.port")
        assert ports == [(n, t) for n in names for t in ("mlx5_0/1", "mlx5_1/1")], ports
        mine = sorted((r["host"], r["status"]) for r in records if r["check"] == "k8s.rdma_device_plugin")
        reasons = [r["reason"] for r in records if r["check"] == "k8s.rdma_device_plugin"]
        assert mine == [(n, "pass") for n in names], reasons
        probes = [raw for _g, _v, p, ns, name, raw in fake.server.objects() if p == "pods" and "-env-" in name]
        daemonsets = [raw for _g, _v, p, ns, name, raw in fake.server.objects() if p == "daemonsets"]
        assert [d["metadata"]["namespace"] for d in daemonsets] == ["kube-system"]
        cms = [raw for _g, _v, p, ns, name, raw in fake.server.objects() if p == "configmaps" and name == "rdma-devices"]
        assert json.loads(cms[0]["data"]["config.json"])["configList"][0]["selectors"] == {
            "deviceIDs": ["1013"], "linkTypes": ["ether"], "vendors": ["15b3"]}
        allocatable = dict((n["name"], n.get("allocatable", {}).get("rdma/hca_shared_devices_a"))
                           for n in fake.server.controller.nodes)
        assert allocatable == {"gpu-node-01": "1000", "gpu-node-02": "1000"}, allocatable
        assert probes == [], [p["metadata"]["name"] for p in probes]        # the probe cleaned up after itself
        play({"rdma_device_plugin_state": "absent"})
        used = set(filter(None, (request_grant(m, p, q) for m, p, q in fake.server.requests)))
    granted = rbac_grants(RBAC)
    assert sorted(used - granted, key=str) == [], "\n".join(map(str, sorted(used - granted, key=str)))
    # every grant of the probe's namespace and of the cluster scope is used, but the diagnosis of a probe pod that
    # does not finish (none does here) and the deletion of a pod a Job left behind (when the cleanup finds one);
    # kube-system's grants: test_k8s_device_plugin_lifecycle's RBAC test
    probe = probe_ns["metadata"]["name"]
    diagnosis = {(probe, "", "pods", "get"), (probe, "", "events", "list"), (probe, "", "pods", "delete")}
    # the end-to-end step's (off by default; test_k8s_device_plugin_lifecycle.py's end-to-end test uses them)
    diagnosis |= {(probe, "", "services", "create"), (probe, "", "services", "delete")}
    unused = sorted((g for g in granted - used - diagnosis if g[0] in (probe, None)), key=str)
    assert unused == [], "\n".join(map(str, unused))
