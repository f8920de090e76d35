# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The k8s_device_plugin module against the fake API server over real HTTP, with a DaemonSet controller and the
RDMA shared device plugin emulated (tests/k8s/fake_rdma_plugin.py).

The nodes' RDMA ports are the env probe's records of the real CX-4 host (test_env_probe.cx4_infiniband: sysfs written
from its ibstat and show_gids captures), plus the PCI ids its capture implies (CA type MT4115 = PCI device 0x1013 of
vendor 0x15b3; mlx5's vendor_part_id is the PCI device id). Where a node must differ (an InfiniBand port, another
device id) the test says so. The crash-looping plugin's log is a real one (tests/k8s/fixtures/rdma_shared_dp)."""

from __future__ import annotations

import copy
import os

import pytest

pytest.importorskip("kubernetes")
pytest.importorskip("kmock")

from ansible.module_utils.testing import patch_module_args  # noqa: E402
from ansible_collections.aifabric.acceptance.tests.k8s import fake_rdma_plugin as frp  # noqa: E402
from ansible_collections.aifabric.acceptance.tests.k8s.fake_apiserver import fake_cluster  # noqa: E402
from ansible_collections.aifabric.acceptance.tests.unit.plugins.module_utils import test_env_probe as tep  # noqa: E402
from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules.module_harness import (  # noqa: E402
    Exit, patch_exits)

from ansible_collections.aifabric.acceptance.plugins.module_utils import env_probe, results  # noqa: E402
from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_device_plugin as dp  # noqa: E402
from ansible_collections.aifabric.acceptance.plugins.modules import k8s_device_plugin  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
CRASH_LOG = os.path.join(ROOT, "tests", "k8s", "fixtures", "rdma_shared_dp", "crash-exclusive-netns.log")
RES = "rdma/hca_shared_devices_a"


def cx4_records(tmp_path, host):
    """env_probe rdma records of the real CX-4 host, as node ``host`` would report them."""
    root = tep.cx4_infiniband(tmp_path / host)
    for hca in ("mlx5_0", "mlx5_1"):
        tep.put(root, "/sys/class/infiniband/%s/device/vendor" % hca, "0x15b3\n")
        tep.put(root, "/sys/class/infiniband/%s/device/device" % hca, "0x1013\n")
    return results.with_host(env_probe.probe(tep.host_for(root), {"groups": ["rdma"]}), host)


def port(records, target):
    return next(r for r in records if r["check"] == "rdma.port" and r["target"] == target)


def fleet_nodes(records_by_node, unlabelled=()):
    """Fake node dicts whose plugin-visible devices are exactly what each node's probe records show."""
    devices = dp.devices_from_records([r for recs in records_by_node.values() for r in recs])
    return [frp.rdma_node(name, devices.get(name, []), labels={} if name in unlabelled else None)
            for name in records_by_node]


@pytest.fixture
def run(monkeypatch):
    patch_exits(monkeypatch)

    def call(fake, args, check_mode=False):
        args = dict({"kubeconfig": fake.kubeconfig, "verify_timeout_s": 5, "delete_timeout_s": 10}, **args)
        if check_mode:
            args["_ansible_check_mode"] = True
        with patch_module_args(args):
            with pytest.raises(Exit) as exc:
                k8s_device_plugin.main()
        return exc.value
    return call


def plugin_objects(fake):
    return sorted("%s/%s/%s" % (p, ns, name) for _g, _v, p, ns, name, _raw in fake.server.objects()
                  if ns == "kube-system" and p in ("configmaps", "daemonsets", "pods"))


def test_generated_selectors_healthy_fleet_idempotent_and_removed(tmp_path, run):
    recs = dict((n, cx4_records(tmp_path, n)) for n in ("gpu-node-01", "gpu-node-02", "gpu-node-03"))
    probe = [r for rs in recs.values() for r in rs]
    with fake_cluster(tmp_path, nodes=fleet_nodes(recs)) as fake:
        frp.install(fake.server)
        args = {"probe_records": probe, "hosts": sorted(recs)}
        first = run(fake, args)
        assert not first.failed, first.kwargs
        assert first.kwargs["changed"] is True
        # generated from the probe: the one port the plugin can see (mlx5_1 has no netdev) is RoCE on a CX-4
        assert first.kwargs["config"]["configList"] == [
            {"resourceName": "hca_shared_devices_a", "resourcePrefix": "rdma", "rdmaHcaMax": 1000,
             "selectors": {"vendors": ["15b3"], "deviceIDs": ["1013"], "linkTypes": ["ether"]}}]
        recs_out = first.kwargs["results"]
        assert sorted((r["host"], r["check"], r["target"], r["status"]) for r in recs_out) == [
            (n, "k8s.rdma_device_plugin", RES, "pass") for n in sorted(recs)]
        assert all(r["metrics"]["allocatable"] == 1000 for r in recs_out)
        for r in recs_out:
            assert results.validate(r) == []
        before = plugin_objects(fake)
        requests = len(fake.server.requests)

        second = run(fake, args)
        assert second.kwargs["changed"] is False
        assert {a["action"] for a in second.kwargs["actions"]} == {"unchanged"}
        assert plugin_objects(fake) == before          # no pod was rolled
        sent = [m for m, _p, _q in fake.server.requests[requests:] if str(m).rsplit(".", 1)[-1].upper()
                in ("POST", "PATCH", "PUT", "DELETE")]
        assert sent == []

        gone = run(fake, {"state": "absent"})
        assert gone.kwargs["changed"] is True and not gone.failed
        fake.server.settle(3)
        assert plugin_objects(fake) == []
        again = run(fake, {"state": "absent"})
        assert again.kwargs["changed"] is False
        assert {a["action"] for a in again.kwargs["actions"]} == {"absent"}


def test_check_mode_changes_nothing(tmp_path, run):
    recs = {"gpu-node-01": cx4_records(tmp_path, "gpu-node-01")}
    with fake_cluster(tmp_path, nodes=fleet_nodes(recs)) as fake:
        frp.install(fake.server)
        args = {"probe_records": recs["gpu-node-01"], "hosts": ["gpu-node-01"]}
        dry = run(fake, args, check_mode=True)
        assert dry.kwargs["changed"] is True and dry.kwargs["results"] == []
        assert [a["action"] for a in dry.kwargs["actions"]] == ["created", "created"]
        assert plugin_objects(fake) == []
        assert run(fake, args).kwargs["changed"] is True
        before = plugin_objects(fake)
        # a changed setting, in check mode: reported as an update, nothing patched
        dry = run(fake, dict(args, rdma_hca_max=63), check_mode=True)
        assert dry.kwargs["changed"] is True
        assert {a["action"] for a in dry.kwargs["actions"]} == {"updated"}
        cm = [raw for _g, _v, p, ns, name, raw in fake.server.objects() if p == "configmaps" and ns == "kube-system"]
        assert '"rdmaHcaMax": 1000' in cm[0]["data"]["config.json"]
        dry = run(fake, {"state": "absent"}, check_mode=True)
        assert dry.kwargs["changed"] is True and plugin_objects(fake) == before


def test_changed_config_rolls_the_plugin_pods_and_the_new_count_shows(tmp_path, run):
    recs = {"gpu-node-01": cx4_records(tmp_path, "gpu-node-01")}
    with fake_cluster(tmp_path, nodes=fleet_nodes(recs)) as fake:
        frp.install(fake.server)
        args = {"probe_records": recs["gpu-node-01"], "hosts": ["gpu-node-01"]}
        assert run(fake, args).kwargs["results"][0]["metrics"]["allocatable"] == 1000
        pods = [p for p in plugin_objects(fake) if p.startswith("pods/")]
        res = run(fake, dict(args, rdma_hca_max=63))
        assert [a["action"] for a in res.kwargs["actions"]] == ["updated", "updated"]
        assert res.kwargs["results"][0]["status"] == "pass"
        assert res.kwargs["results"][0]["metrics"]["allocatable"] == 63
        assert not set(pods) & set(p for p in plugin_objects(fake) if p.startswith("pods/"))


def test_whole_fleet_each_failure_cause_on_its_own_node(tmp_path, run):
    """Five nodes: one healthy, and one for each cause; exactly the four bad nodes fail, each with its own why."""
    names = ["gpu-node-01", "gpu-node-02", "gpu-node-03", "gpu-node-04", "gpu-node-05"]
    recs = dict((n, cx4_records(tmp_path, n)) for n in names)
    # gpu-node-02: its mlx5_0 port was set to InfiniBand (mlxconfig LINK_TYPE_P1=IB; its netdev is then ib0)
    p2 = port(recs["gpu-node-02"], "mlx5_0/1")
    p2["facts"].update(link_layer="InfiniBand", netdevs=[{"name": "ib0", "operstate": "up"}], netdev="ib0")
    # gpu-node-05: a ConnectX-5 (PCI device 0x1017) instead of the fleet's ConnectX-4
    for r in recs["gpu-node-05"]:
        if r["check"] == "rdma.port":
            r["facts"]["device_id"] = "1017"
    with fake_cluster(tmp_path, nodes=fleet_nodes(recs, unlabelled=("gpu-node-04",))) as fake:
        frp.install(fake.server)
        fake.server.script("crash_loop", node="gpu-node-03", pod="rdma-shared-dp-ds-*", log_file=CRASH_LOG)
        res = run(fake, {
            "resource_list": [{"name": "hca_shared_devices_a",
                               "selectors": {"vendors": ["15b3"], "deviceIDs": ["1013"], "linkTypes": ["ether"]}}],
            "probe_records": [r for rs in recs.values() for r in rs], "hosts": names, "verify_timeout_s": 3})
        assert not res.failed, res.kwargs
        by_node = dict((r["host"], r) for r in res.kwargs["results"])
        assert sorted(by_node) == names
        assert dict((n, r["status"]) for n, r in by_node.items()) == {
            "gpu-node-01": "pass", "gpu-node-02": "fail", "gpu-node-03": "fail", "gpu-node-04": "fail",
            "gpu-node-05": "fail"}
        assert by_node["gpu-node-02"]["facts"]["cause"] == "link_layer"
        assert "port in the wrong link layer: mlx5_0/1 (ib0 15b3:1013 infiniband) is infiniband" in \
            by_node["gpu-node-02"]["reason"]
        assert "no devices in device pool" in by_node["gpu-node-02"]["reason"]       # the plugin's own log line
        crash = by_node["gpu-node-03"]["reason"]
        assert "is crash-looping" in crash and "CrashLoopBackOff" in crash
        assert by_node["gpu-node-03"]["facts"]["cause"] == "crash_loop"
        assert "Exiting.. can not change : incorrect RDMA subsystem network namespace" in crash
        assert "node not selected" in by_node["gpu-node-04"]["reason"]
        assert "matches no term of the DaemonSet's required node affinity" in by_node["gpu-node-04"]["reason"]
        for label in dp.RDMA_NODE_LABELS:
            assert "%s In true" % label in by_node["gpu-node-04"]["reason"]
        assert by_node["gpu-node-05"]["facts"]["cause"] == "no_match"
        assert "selector matches no device of this node" in by_node["gpu-node-05"]["reason"]
        assert "15b3:1017" in by_node["gpu-node-05"]["reason"]
        assert by_node["gpu-node-01"]["metrics"]["allocatable"] == 1000
        for r in res.kwargs["results"]:
            assert results.validate(r) == []


def test_node_missing_from_the_cluster_is_an_error(tmp_path, run):
    recs = {"gpu-node-01": cx4_records(tmp_path, "gpu-node-01")}
    with fake_cluster(tmp_path, nodes=fleet_nodes(recs)) as fake:
        frp.install(fake.server)
        res = run(fake, {"probe_records": recs["gpu-node-01"], "hosts": ["gpu-node-01", "gpu-node-99"],
                         "verify_timeout_s": 2})
        status = dict((r["host"], r["status"]) for r in res.kwargs["results"])
        assert status == {"gpu-node-01": "pass", "gpu-node-99": "error"}


def test_per_rail_resources_one_per_hca(tmp_path, run):
    recs = {"gpu-node-01": cx4_records(tmp_path, "gpu-node-01")}
    # a second netdev-carrying rail: mlx5_1 as an IPoIB port ib1 (the real capture's mlx5_1 has no netdev)
    p = port(recs["gpu-node-01"], "mlx5_1/1")
    p["facts"].update(netdevs=[{"name": "ib1", "operstate": "up"}], netdev="ib1", device_id="1013", vendor_id="15b3")
    with fake_cluster(tmp_path, nodes=fleet_nodes(recs)) as fake:
        frp.install(fake.server)
        res = run(fake, {"probe_records": recs["gpu-node-01"], "hosts": ["gpu-node-01"], "per_rail": True})
        assert res.kwargs["resources"] == ["rdma/hca_shared_devices_a_mlx5_0", "rdma/hca_shared_devices_a_mlx5_1"]
        assert [e["selectors"]["ifNames"] for e in res.kwargs["config"]["configList"]] == [["ens11f0"], ["ib1"]]
        assert sorted((r["target"], r["status"]) for r in res.kwargs["results"]) == [
            ("rdma/hca_shared_devices_a_mlx5_0", "pass"), ("rdma/hca_shared_devices_a_mlx5_1", "pass")]


def test_foreign_plugin_is_never_touched_without_adopt(tmp_path, run):
    recs = {"gpu-node-01": cx4_records(tmp_path, "gpu-node-01")}
    with fake_cluster(tmp_path, nodes=fleet_nodes(recs)) as fake:
        from kubernetes import client
        client.CoreV1Api(fake.api).create_namespaced_config_map("kube-system", {
            "apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "rdma-devices", "namespace": "kube-system"},
            "data": {"config.json": "{}"}})
        res = run(fake, {"probe_records": recs["gpu-node-01"], "hosts": ["gpu-node-01"]})
        assert res.failed and "not managed by aifabric.acceptance" in res.kwargs["msg"]
        gone = run(fake, {"state": "absent"})
        assert not gone.failed
        assert "kept (not managed by aifabric.acceptance)" in [a["action"] for a in gone.kwargs["actions"]]
        assert plugin_objects(fake) == ["configmaps/kube-system/rdma-devices"]


def test_bad_selectors_fail_before_anything_is_sent(tmp_path, run):
    with fake_cluster(tmp_path, nodes=[frp.rdma_node("gpu-node-01", [])]) as fake:
        res = run(fake, {"resource_list": [{"name": "a", "selectors": {"linkTypes": ["Ethernet"]}}]})
        assert res.failed and "linkTypes ['Ethernet']" in res.kwargs["msg"] and "ether" in res.kwargs["msg"]
        res = run(fake, {"probe_records": [], "hosts": ["gpu-node-01"]})
        assert res.failed and "run the env probe on them first" in res.kwargs["msg"]
        assert plugin_objects(fake) == []


# --------------------------------------------------------------------------- RBAC

def _rules(path):
    """(apiGroup, resource, verb) of every Role/ClusterRole rule of a shipped List (any namespace)."""
    import yaml
    with open(path) as handle:
        docs = yaml.safe_load(handle)["items"]
    out = set()
    for doc in docs:
        if doc["kind"] in ("Role", "ClusterRole"):
            for rule in doc["rules"]:
                for group in rule["apiGroups"]:
                    for res in rule["resources"]:
                        for verb in rule["verbs"]:
                            out.add((group, res, verb))
    return out


def rbac_grants(path):
    """{(namespace or None for cluster scope, apiGroup, resource, verb)} the shipped List grants through its bindings
    (a Role in its namespace via a RoleBinding, a ClusterRole cluster-wide via a ClusterRoleBinding)."""
    import yaml
    with open(path) as handle:
        items = yaml.safe_load(handle)["items"]
    roles = dict(((d["kind"], d["metadata"].get("namespace"), d["metadata"]["name"]), d) for d in items
                 if d["kind"] in ("Role", "ClusterRole"))
    out = set()
    for binding in items:
        if binding["kind"] not in ("RoleBinding", "ClusterRoleBinding"):
            continue
        ns = binding["metadata"].get("namespace") if binding["kind"] == "RoleBinding" else None
        ref = binding["roleRef"]
        role = roles.get((ref["kind"], ns if ref["kind"] == "Role" else None, ref["name"]))
        for rule in (role or {}).get("rules", []):
            out.update((ns, g, r, v) for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"])
    return out


def request_grant(method, path, params):
    """(namespace or None, apiGroup, resource[/sub], verb) of one request, or None for discovery."""
    from ansible_collections.aifabric.acceptance.tests.integration.test_k8s_workload_lifecycle import (
        _request_permission)
    perm = _request_permission(method, path, params)
    if perm is None:
        return None
    parts = [p for p in path.split("/") if p]
    rest = parts[2:] if parts[:2] == ["api", "v1"] else parts[3:]
    ns = rest[1] if rest[:1] == ["namespaces"] and len(rest) > 2 else None
    return (ns,) + perm


def test_the_shipped_device_plugin_rbac_allows_every_call_and_nothing_more(tmp_path, run):
    names = ["gpu-node-01", "gpu-node-02", "gpu-node-03"]
    recs = dict((n, cx4_records(tmp_path, n)) for n in names)
    with fake_cluster(tmp_path, nodes=fleet_nodes(recs)) as fake:
        frp.install(fake.server)
        fake.server.script("crash_loop", node="gpu-node-02", pod="rdma-shared-dp-ds-*", log_file=CRASH_LOG)
        fake.server.script("image_pull", node="gpu-node-03", pod="rdma-shared-dp-ds-*")
        args = {"probe_records": [r for rs in recs.values() for r in rs], "hosts": names, "verify_timeout_s": 2}
        out = dict((r["host"], r) for r in run(fake, args).kwargs["results"])
        assert [out[n]["status"] for n in names] == ["pass", "fail", "fail"]
        # a pod that cannot start: the diagnosis from its status and events (image pull), not a crash
        assert out["gpu-node-03"]["facts"]["cause"] == "pod_not_ready"
        assert "is waiting (ImagePullBackOff)" in out["gpu-node-03"]["reason"]
        assert "ghcr.io/mellanox/k8s-rdma-shared-dev-plugin:v1.5.3" in out["gpu-node-03"]["reason"]
        assert run(fake, dict(args, rdma_hca_max=7)).kwargs["changed"] is True
        assert run(fake, {"state": "absent"}).kwargs["changed"] is True
        used = set(filter(None, (request_grant(m, p, q) for m, p, q in fake.server.requests)))
    # granted in the namespace each call was made in (kube-system) or cluster-wide; every such grant is used (the
    # probe namespace's grants: test_k8s_device_plugin_preflight.py's role test)
    allowed = set(g for g in rbac_grants(os.path.join(ROOT, "extras", "k8s", "rbac-device-plugin.yml"))
                  if g[0] in ("kube-system", None))
    assert used - allowed == set()
    assert allowed - used == set()


def test_shipped_device_plugin_rbac_validates():
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    import yaml
    with open(os.path.join(ROOT, "extras", "k8s", "rbac-device-plugin.yml")) as handle:
        items = yaml.safe_load(handle)["items"]
    for obj in items:
        for version in ("1.28", "1.37"):
            kubernetes_validate.validate(copy.deepcopy(obj), version, strict=True)


# --------------------------------------------------------------------------- the playbook, end to end

def test_rdma_device_plugin_playbook_records_land_in_the_fleet_report(tmp_path):
    """ansible-playbook aifabric.acceptance.rdma_device_plugin (a real subprocess, over HTTP) on a 3-node fleet whose
    gpu-node-02 lacks the NFD label: the fleet_report callback writes one report with a k8s.rdma_device_plugin record
    per node, exactly gpu-node-02 fails (not selected), and state=absent removes the plugin again."""
    import json
    import subprocess
    import sys
    from ansible_collections.aifabric.acceptance.tests.integration.conftest import collections_path
    playbook_bin = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    if not os.access(playbook_bin, os.X_OK) or not collections_path():
        pytest.skip("no ansible-playbook next to this Python, or the collection is not importable")
    nodes = ["gpu-node-01", "gpu-node-02", "gpu-node-03"]
    recs = dict((n, cx4_records(tmp_path, n)) for n in nodes)
    with fake_cluster(tmp_path, nodes=fleet_nodes(recs, unlabelled=("gpu-node-02",))) as fake:
        frp.install(fake.server)
        inventory = tmp_path / "hosts.yml"
        inventory.write_text("all:\n  children:\n    gpu_nodes:\n      hosts:\n"
                             + "".join("        %s:\n" % n for n in nodes))
        report_dir = tmp_path / "reports"
        env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"),
                   ANSIBLE_COLLECTIONS_PATH=collections_path(),
                   ANSIBLE_CALLBACKS_ENABLED="aifabric.acceptance.fleet_report",
                   AIFABRIC_REPORTS_ROOT=str(report_dir), AIFABRIC_HISTORY_DB=str(tmp_path / "history.sqlite"),
                   ANSIBLE_NOCOLOR="1", PYTHONDONTWRITEBYTECODE="1")
        extra = {"k8s_connection": {"kubeconfig": fake.kubeconfig}, "rdma_device_plugin_verify_timeout_s": 3,
                 "rdma_device_plugin_probe_records": [r for rs in recs.values() for r in rs]}

        def play(more):
            return subprocess.run([playbook_bin, "-i", str(inventory), "aifabric.acceptance.rdma_device_plugin",
                                   "-e", json.dumps(dict(extra, **more))], env=env, capture_output=True, text=True,
                                  timeout=300, check=False, cwd=str(tmp_path))

        proc = play({})
        assert "FLEET REPORT:" in proc.stdout, proc.stdout[-4000:] + proc.stderr[-4000:]
        with open(str(report_dir / "latest" / "results.json"), encoding="utf-8") as handle:
            data = json.load(handle)
        mine = [r for r in data["records"] if r["check"] == "k8s.rdma_device_plugin"]
        assert sorted((r["host"], r["status"]) for r in mine) == [
            ("gpu-node-01", "pass"), ("gpu-node-02", "fail"), ("gpu-node-03", "pass")]
        verdicts = dict((h["host"], h["status"]) for h in data["summary"]["hosts"])
        assert verdicts == {"gpu-node-01": "pass", "gpu-node-02": "fail", "gpu-node-03": "pass"}
        assert proc.returncode == 0, proc.stdout[-3000:]

        proc = play({"rdma_device_plugin_state": "absent"})
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]
        fake.server.settle(3)
        assert plugin_objects(fake) == []


# --------------------------------------------------------------------------- end to end through the new resource

def test_end_to_end_perftest_pods_request_the_new_resource(tmp_path, run):
    """The role's end-to-end step (k8s_workload kind=perftest with the plugin's resource): pods land only where the
    plugin exposes it. gpu-node-03 lacks the NFD label, so its pair's pods cannot schedule and its record is an error
    naming `Insufficient rdma/hca_shared_devices_a`; the pair of the healthy nodes runs (real perftest captures).
    It runs in the role's default e2e namespace, where extras/k8s/rbac-device-plugin.yml grants every call it makes
    (the namespace `default` was granted nothing: a 403 at the first create)."""
    import yaml
    from ansible_collections.aifabric.acceptance.plugins.modules import k8s_workload
    from ansible_collections.aifabric.acceptance.tests.integration.test_k8s_workload_lifecycle import PERFTEST, pod_log
    names = ["gpu-node-01", "gpu-node-02", "gpu-node-03"]
    recs = dict((n, cx4_records(tmp_path, n)) for n in names)
    with fake_cluster(tmp_path, nodes=fleet_nodes(recs, unlabelled=("gpu-node-03",))) as fake:
        frp.install(fake.server)
        res = run(fake, {"probe_records": [r for rs in recs.values() for r in rs], "hosts": names,
                         "verify_timeout_s": 2})
        assert [r["status"] for r in res.kwargs["results"]] == ["pass", "pass", "fail"]
        resource = res.kwargs["resources"][0]
        # one real ib_write_bw run, both sides (pod_log writes <label>.log: script each before the next overwrites it);
        # the pods ask for the device the captures ran on (another device's output is an error, not a measurement)
        fake.server.script("succeed", pod="aif-e2e-pt-r*-c-*", log_file=pod_log(
            "ionic_0", os.path.join(PERFTEST, "amd-ionic-rocm-gdr-ib-write-bw-client-a-MiB.txt"), tmp_path))
        fake.server.script("succeed", pod="aif-e2e-pt-r*-s-*", log_file=pod_log(
            "ionic_0", os.path.join(PERFTEST, "amd-ionic-rocm-gdr-ib-write-bw-server-a-MiB-only-last-size.txt"),
            tmp_path))
        with open(os.path.join(ROOT, "roles", "rdma_device_plugin", "defaults", "main.yml")) as handle:
            namespace = yaml.safe_load(handle)["rdma_device_plugin_e2e_namespace"]
        before = len(fake.server.requests)
        args = {"kind": "perftest_sweep", "hosts": names, "run_id": "e2e", "gpus_per_pod": 0, "kubeconfig": fake.kubeconfig,
                "namespace": namespace,
                "image": "registry.example.com/acceptance/gpu-tools:2026.11", "resources": {resource: 1},
                "host_network": True, "unschedulable_grace_s": 0, "timeout_s": 30, "cleanup_timeout_s": 30,
                "rounds": [[["gpu-node-01", "gpu-node-02"]], [["gpu-node-02", "gpu-node-03"]]],
                "perftest_sweep": {"test": "ib_write_bw", "hcas": ["ionic_0"]}}
        with patch_module_args(args):
            with pytest.raises(Exit) as exc:
                k8s_workload.main()
        out = exc.value.kwargs["results"]
        ran = sorted((r["host"], r["peer"], r["check"]) for r in out if r["status"] != "error")
        assert ("gpu-node-02", "gpu-node-01", "rdma.ib_write_bw") in ran, "\n".join(
            "%s %s %s %s %s" % (r["host"], r["peer"], r["check"], r["status"], r["reason"]) for r in out)
        errors = [r for r in out if r["status"] == "error"]
        assert errors and all("gpu-node-03" in (r["host"], r["peer"]) for r in errors)
        assert all("Insufficient %s" % resource in r["reason"] for r in errors), [r["reason"] for r in errors]
        assert fake.leftovers("e2e") == []
        used = set(filter(None, (request_grant(m, p, q) for m, p, q in fake.server.requests[before:])))
    granted = rbac_grants(os.path.join(ROOT, "extras", "k8s", "rbac-device-plugin.yml"))
    assert sorted(used - granted, key=str) == [], sorted(used - granted, key=str)


def test_a_config_change_rolls_a_large_fleet_within_the_verify(tmp_path, run):
    """The DaemonSet controller replaces at most maxUnavailable plugin pods at once (Kubernetes' default: 1, a node at
    a time): on a large fleet a config change then outlasts the verify and healthy nodes not yet rolled read as
    stale or plugin-less. The plugin's DaemonSet rolls a quarter of the fleet at a time: four waves whatever its
    size."""
    one = cx4_records(tmp_path, "gpu-node-01")
    names = ["gpu-node-%02d" % i for i in range(1, 61)]
    recs = dict((n, [dict(r, host=n) for r in one]) for n in names)
    with fake_cluster(tmp_path, nodes=fleet_nodes(recs), tick_s=0.05) as fake:
        frp.install(fake.server)
        args = {"probe_records": [r for rs in recs.values() for r in rs], "hosts": names, "verify_timeout_s": 20}
        first = run(fake, args).kwargs["results"]
        assert set(r["status"] for r in first) == {"pass"}, [
            (r["host"], r["reason"]) for r in first if r["status"] != "pass"][:3]
        (ds,) = [raw for _g, _v, p, _ns, _n, raw in fake.server.objects() if p == "daemonsets"]
        assert ds["spec"]["updateStrategy"]["rollingUpdate"] == {"maxUnavailable": "25%"}
        # four waves end the verify as soon as the last pod is ready: its limit far above a loaded machine's time for
        # them (15 of 60 pods had rolled within 3 s at load 20); a node at a time still outlasts 1 s below
        res = run(fake, dict(args, rdma_hca_max=63, verify_timeout_s=20))
        bad = [(r["host"], r["reason"]) for r in res.kwargs["results"] if r["status"] != "pass"]
        assert bad == [], bad[:3]
        # Kubernetes' own pace, a node at a time: the nodes the rollout had not reached say so
        res = run(fake, dict(args, rdma_hca_max=31, verify_timeout_s=1, max_unavailable="1"))
        bad = [r["reason"] for r in res.kwargs["results"] if r["status"] != "pass"]
        assert bad and all("the DaemonSet's rolling update was not finished (" in r for r in bad), bad[:3]
