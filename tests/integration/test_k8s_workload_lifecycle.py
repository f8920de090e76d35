# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The k8s_workload module's whole lifecycle against the fake API server over real HTTP
(tests/k8s/fake_apiserver.py: kmock + scripted job controller, scheduler and kubelet).

Pod logs are what the pods would print: the entry program (k8s_entry.py) run here around a real captured tool
output. Every scenario - success, unschedulable, image pull failure, crash, OOM, timeout, interrupt - ends with
records for every planned check (errors name the reason, never a silent gap) and zero objects of the run left."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading

import pytest

pytest.importorskip("kubernetes")
pytest.importorskip("kmock")

from ansible.module_utils.testing import patch_module_args  # noqa: E402
from ansible_collections.aifabric.acceptance.tests.k8s.fake_apiserver import (  # noqa: E402
    FakeApiServer, fake_cluster)
from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules.module_harness import (  # noqa: E402
    Exit, patch_exits)

from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_api, k8s_entry, results  # noqa: E402
from ansible_collections.aifabric.acceptance.plugins.modules import k8s_workload  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
UNIT = os.path.join(os.path.dirname(HERE), "unit", "plugins")
NCCL_TEXT = os.path.join(UNIT, "module_utils", "parsers", "fixtures", "nccl_tests", "h200x2-nccl-tests-2.19.6",
                         "all_reduce_g2.txt")
PERFTEST = os.path.join(UNIT, "module_utils", "parsers", "fixtures", "perftest")
IMAGE = "registry.example.com/acceptance/nccl-tests:2.17-mpi"
NODES = ["gpu-node-01", "gpu-node-02"]
# one collective (the captured log is all_reduce's; the default runs nccl_test's seven)
ONE = {"collectives": ["all_reduce"]}


def pod_log(label, path, tmp_path):
    """The log a pod of the collection prints when its tool printed the file ``path`` (run for real)."""
    spec = {"steps": [{"label": label, "argv": ["cat", path], "timeout_s": 30}]}
    out = subprocess.run([sys.executable, k8s_entry.__file__, "run", "--spec", json.dumps(spec)],
                         capture_output=True, timeout=60, check=True).stdout
    log = tmp_path / ("%s.log" % label)
    log.write_bytes(out)
    return str(log)


@pytest.fixture
def fake_k8s(tmp_path):
    """A fresh fake cluster (4 nodes of 8 GPUs) per test."""
    with fake_cluster(tmp_path) as fake:
        yield fake


@pytest.fixture
def run(fake_k8s, monkeypatch):
    patch_exits(monkeypatch)

    def call(args):
        args = dict({"image": IMAGE, "kubeconfig": fake_k8s.kubeconfig, "unschedulable_grace_s": 0,
                     "image_pull_grace_s": 0, "cleanup_timeout_s": 30, "timeout_s": 60}, **args)
        with patch_module_args(args):
            with pytest.raises(Exit) as exc:
                k8s_workload.main()
        return exc.value
    return call


def by_check(records):
    return sorted((r["host"], r["check"], r["status"]) for r in records)


def test_success_records_host_is_the_node_and_nothing_remains(fake_k8s, run, tmp_path):
    fake_k8s.server.script("succeed", log_file=pod_log("all_reduce", NCCL_TEXT, tmp_path))
    res = run({"kind": "nccl_test", "hosts": NODES, "run_id": "ok1", "gpus_per_pod": 2, "nccl_test": ONE})
    assert not res.failed, res.kwargs
    records = res.kwargs["results"]
    assert by_check(records) == [("gpu-node-01", "nccl.all_reduce", "pass"), ("gpu-node-02", "nccl.all_reduce", "pass")]
    assert all(results.validate(r) == [] and r["params"]["substrate"] == "kubernetes" for r in records)
    assert all(r["params"]["pod"].startswith(r["params"]["job"] + "-") for r in records)
    assert res.kwargs["objects"] == ["ConfigMap/default/aif-ok1-code", "Job/default/aif-ok1-nccl-test-0",
                                     "Job/default/aif-ok1-nccl-test-1"]
    assert res.kwargs["leftover"] == [] and fake_k8s.leftovers("ok1") == []


def test_a_former_kind_name_runs_its_check_with_a_deprecation_warning(fake_k8s, run, tmp_path, monkeypatch):
    """kind nccl and the option group nccl (the names before 2.0.0): the same pods and records as nccl_test, and the
    module says that the kind is deprecated."""
    said = []
    monkeypatch.setattr(k8s_workload.AnsibleModule, "deprecate", lambda self, msg, **kw: said.append((msg, kw)))
    fake_k8s.server.script("succeed", log_file=pod_log("all_reduce", NCCL_TEXT, tmp_path))
    res = run({"kind": "nccl", "hosts": NODES, "run_id": "old2", "gpus_per_pod": 2, "nccl": ONE})
    assert not res.failed, res.kwargs
    assert by_check(res.kwargs["results"]) == [(n, "nccl.all_reduce", "pass") for n in NODES]
    assert res.kwargs["objects"] == ["ConfigMap/default/aif-old2-code", "Job/default/aif-old2-nccl-test-0",
                                     "Job/default/aif-old2-nccl-test-1"]
    assert [(msg.split(":")[0], kw["version"]) for msg, kw in said] == [("kind nccl is deprecated", "3.0.0")]
    assert fake_k8s.leftovers("old2") == []


def test_perftest_round_server_and_client(fake_k8s, run, tmp_path):
    client = pod_log("mlx5_0", os.path.join(PERFTEST, "cx7-ndr-ib-read-bw-client-report-gbits-cpufreq-warning.txt"),
                     tmp_path)
    server = pod_log("mlx5_0", os.path.join(PERFTEST, "rxe-softroce-ib-send-lat-server-glued-columns.txt"), tmp_path)
    fake_k8s.server.script("succeed", pod="aif-pt1-pt-r0-p0-c-*", log_file=client)
    fake_k8s.server.script("succeed", pod="aif-pt1-pt-r0-p0-s-*", log_file=server)
    res = run({"kind": "perftest_sweep", "hosts": NODES, "run_id": "pt1", "gpus_per_pod": 0, "rounds": [[NODES]],
               "perftest_sweep": {"test": "ib_read_bw", "hcas": ["mlx5_0"]}})
    records = res.kwargs["results"]
    assert [(r["host"], r["peer"], r["check"]) for r in sorted(records, key=lambda r: r["check"])] == [
        ("gpu-node-02", "gpu-node-01", "rdma.ib_read_bw"), ("gpu-node-01", "gpu-node-02", "rdma.ib_read_bw.server")]
    assert fake_k8s.leftovers("pt1") == []


@pytest.mark.parametrize("script,needle", [
    ({"kind": "image_pull"}, "ImagePull"),
    ({"kind": "fail", "log": "Segmentation fault (core dumped)\n", "exit_code": 139}, "139"),
    ({"kind": "oom"}, "OOMKilled"),
])
def test_pod_failures_are_error_records_naming_the_reason(fake_k8s, run, script, needle):
    fake_k8s.server.script(script.pop("kind"), **script)
    res = run({"kind": "nccl_test", "hosts": NODES, "run_id": "bad1", "nccl_test": {"collectives": ["all_reduce", "all_gather"]}})
    records = res.kwargs["results"]
    assert by_check(records) == [(n, c, "error") for n in NODES for c in ("nccl.all_gather", "nccl.all_reduce")]
    assert all(needle in r["reason"] for r in records), [r["reason"] for r in records]
    assert fake_k8s.leftovers("bad1") == []
    print(records[0]["reason"])


def test_unschedulable_names_the_scheduler_message(fake_k8s, run):
    res = run({"kind": "env_probe", "hosts": NODES, "run_id": "uns1", "gpus_per_pod": 16})
    records = res.kwargs["results"]
    assert by_check(records) == [(n, "env.probe", "error") for n in NODES]
    assert all("Insufficient nvidia.com/gpu" in r["reason"] for r in records), [r["reason"] for r in records]
    print(records[0]["reason"])
    assert fake_k8s.leftovers("uns1") == []


def test_timeout_is_an_error_record_and_the_run_is_removed(fake_k8s, run):
    fake_k8s.server.script("hang")
    res = run({"kind": "gemm_bench", "hosts": NODES[:1], "run_id": "slow1", "timeout_s": 2})
    (record,) = res.kwargs["results"]
    assert record["status"] == "error" and "timeout" in record["reason"] and record["host"] == NODES[0]
    assert fake_k8s.leftovers("slow1") == []


def test_sigterm_interrupt_cleans_up_and_still_reports(fake_k8s, run):
    fake_k8s.server.script("hang")
    timer = threading.Timer(1.5, os.kill, (os.getpid(), signal.SIGTERM))
    previous = signal.getsignal(signal.SIGTERM)
    timer.start()
    try:
        res = run({"kind": "nccl_test", "hosts": NODES, "run_id": "int1", "timeout_s": 60, "nccl_test": ONE})
    finally:
        timer.cancel()
        signal.signal(signal.SIGTERM, previous)
    records = res.kwargs["results"]
    assert by_check(records) == [(n, "nccl.all_reduce", "error") for n in NODES]
    assert all("interrupted" in r["reason"] for r in records)
    print(records[0]["reason"])
    assert res.kwargs["leftover"] == [] and fake_k8s.leftovers("int1") == []


def test_indexed_multinode_launch(fake_k8s, run, tmp_path):
    fake_k8s.server.script("succeed", pod="aif-mn1-mn-0-*", log_file=pod_log("all_reduce", NCCL_TEXT, tmp_path))
    res = run({"kind": "nccl_test_multinode", "hosts": NODES, "run_id": "mn1", "launcher": "indexed", "nccl_test": ONE})
    assert res.kwargs["launcher"] == "indexed"
    (record,) = res.kwargs["results"]
    assert record["check"] == "nccl.all_reduce" and record["host"] in NODES
    assert record["params"]["hosts"] == NODES and record["params"]["launcher"] == "indexed"
    assert record["status"] == "pass", record["reason"]
    assert fake_k8s.leftovers("mn1") == []


def test_torch_probe_across_nodes(fake_k8s, run, tmp_path, monkeypatch):
    proof = os.path.join(os.path.dirname(UNIT), "plugins", "modules", "fixtures", "h200x2-proof-1")
    result = str(tmp_path / "probe.json")
    script = "import shutil,sys; shutil.copyfile(%r, %r); sys.stdout.write(open(%r).read())" % (
        os.path.join(proof, "probe_spawn.json"), result, os.path.join(proof, "probe_spawn.txt"))
    spec = {"steps": [{"label": "allreduce", "argv": [sys.executable, "-c", script], "timeout_s": 30,
                       "result_file": result}]}
    log = tmp_path / "rank0.log"
    log.write_bytes(subprocess.run([sys.executable, k8s_entry.__file__, "run", "--spec", json.dumps(spec)],
                                   capture_output=True, timeout=60, check=True).stdout)
    fake_k8s.server.script("succeed", pod="aif-ar1-ar-0-*", log_file=str(log))
    res = run({"kind": "allreduce_probe", "hosts": NODES, "run_id": "ar1", "gpus_per_pod": 2})
    (record,) = res.kwargs["results"]
    assert record["check"] == "nccl.torch_all_reduce" and record["status"] == "pass", record["reason"]
    assert record["host"] in NODES and record["params"]["hosts"] == NODES
    assert fake_k8s.leftovers("ar1") == []


def test_launcher_chosen_by_api_discovery(tmp_path, monkeypatch):
    patch_exits(monkeypatch)
    for operators, want in (((), "indexed"), (("volcano",), "volcano"), (("mpi", "volcano"), "mpijob")):
        with FakeApiServer(operators=operators) as server:
            args = {"kind": "nccl_test_multinode", "hosts": NODES, "image": IMAGE, "run_id": "disc",
                    "kubeconfig": server.write_kubeconfig(str(tmp_path / "kc")), "_ansible_check_mode": True}
            with patch_module_args(args):
                with pytest.raises(Exit) as exc:
                    k8s_workload.main()
            assert exc.value.kwargs["launcher"] == want and exc.value.kwargs["results"] == []
            assert server.leftovers() == []                       # check mode created nothing


def test_state_absent_removes_leftovers_of_a_run(fake_k8s, run):
    k8s_api.create(fake_k8s.api, [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "aif-old-code"},
                                   "data": {}}], "old1", namespace="default")
    k8s_api.create(fake_k8s.api, [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "aif-keep-code"},
                                   "data": {}}], "keep1", namespace="default")
    assert fake_k8s.leftovers("old1") == ["ConfigMap/default/aif-old-code"]
    res = run({"state": "absent", "run_id": "old1"})
    assert res.kwargs["leftover"] == [] and fake_k8s.leftovers("old1") == []
    assert fake_k8s.leftovers("keep1") == ["ConfigMap/default/aif-keep-code"]


def _rbac_rules():
    import yaml
    with open(os.path.join(os.path.dirname(os.path.dirname(HERE)), "extras", "k8s", "rbac.yml")) as handle:
        docs = yaml.safe_load(handle)["items"]
    rules = set()
    for doc in docs:
        if doc["kind"] in ("Role", "ClusterRole"):
            for rule in doc["rules"]:
                for group in rule["apiGroups"]:
                    for res in rule["resources"]:
                        for verb in rule["verbs"]:
                            rules.add((group, res, verb))
    return rules


def _request_permission(method, path, params):
    """(apiGroup, resource[/subresource], verb) of one API request, or None for discovery."""
    parts = [p for p in path.split("/") if p]
    if parts[:2] == ["api", "v1"]:
        group, rest = "", parts[2:]
    elif parts[:1] == ["apis"] and len(parts) > 3:
        group, rest = parts[1], parts[3:]
    else:
        return None                                   # /api, /apis, /version: discovery (system:discovery)
    if rest[:1] == ["namespaces"] and len(rest) > 2:
        rest = rest[2:]
    if not rest:
        return None
    resource = rest[0] + ("/" + rest[2] if len(rest) > 2 else "")
    named = len(rest) > 1
    method = str(method).rsplit(".", maxsplit=1)[-1].upper()          # kmock records "method.GET"
    verb = {"POST": "create", "DELETE": "delete", "PUT": "update", "PATCH": "patch"}.get(method)
    if verb is None:
        verb = "get" if named else ("watch" if str(params.get("watch")).lower() in ("1", "true") else "list")
    return group, resource, verb


def test_the_shipped_rbac_role_allows_every_call_and_nothing_more(fake_k8s, run, tmp_path):
    fake_k8s.server.script("fail", pod="aif-rb1-nccl-test-1-*", log="boom\n")
    fake_k8s.server.script("succeed", log_file=pod_log("all_reduce", NCCL_TEXT, tmp_path))
    run({"kind": "nccl_test", "hosts": NODES, "run_id": "rb1", "label_selector": "nvidia.com/gpu.present=true"})
    run({"kind": "nccl_test_multinode", "hosts": NODES, "run_id": "rb2", "launcher": "indexed"})
    run({"state": "absent", "run_id": "rb1"})
    used = set(filter(None, (_request_permission(m, p, q) for m, p, q in fake_k8s.server.requests)))
    allowed = _rbac_rules()
    assert used - allowed == set()
    # least privilege: every rule is exercised, but the operators' create/delete (their CRDs are not served here)
    # and deleting pods (cleanup deletes pods only when the Job's garbage collection has not removed them yet)
    unused = allowed - used
    assert unused <= {("kubeflow.org", "mpijobs", "create"), ("kubeflow.org", "mpijobs", "delete"),
                      ("batch.volcano.sh", "jobs", "create"), ("batch.volcano.sh", "jobs", "delete"),
                      ("", "pods", "delete")}, unused


@pytest.mark.cluster
def test_env_probe_on_a_real_cluster(request, monkeypatch):
    """Against the cluster of $KUBECONFIG: the env probe on one node (AIFABRIC_K8S_TEST_NODE, default the first
    node) in $AIFABRIC_K8S_TEST_IMAGE (any image with python3; default python:3.12-slim), namespace
    $AIFABRIC_K8S_TEST_NAMESPACE (default: default); records come back with host = the node, nothing is left."""
    if "cluster" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("real-cluster test: select it with -m cluster (and set KUBECONFIG)")
    if not os.environ.get("KUBECONFIG"):
        pytest.skip("real-cluster test: KUBECONFIG is not set")
    patch_exits(monkeypatch)
    api = k8s_api.connect({"kubeconfig": os.environ["KUBECONFIG"]})
    node = os.environ.get("AIFABRIC_K8S_TEST_NODE")
    if not node:
        from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_run
        node = k8s_run.select_nodes(api, [], "kubernetes.io/os=linux")[0]
    namespace = os.environ.get("AIFABRIC_K8S_TEST_NAMESPACE", "default")
    run_id = "ct" + os.urandom(4).hex()
    args = {"kind": "env_probe", "hosts": [node], "run_id": run_id, "gpus_per_pod": 0, "shm_size": "", "ipc_lock": False,
            "namespace": namespace, "image": os.environ.get("AIFABRIC_K8S_TEST_IMAGE", "python:3.12-slim"),
            "kubeconfig": os.environ["KUBECONFIG"], "timeout_s": 600, "env_probe": {"groups": ["env"]}}
    with patch_module_args(args):
        with pytest.raises(Exit) as exc:
            k8s_workload.main()
    records = exc.value.kwargs["results"]
    assert records and {r["host"] for r in records} == {node}
    assert any(r["check"] == "env.os" and r["status"] == "pass" for r in records), records
    assert exc.value.kwargs["leftover"] == []
    assert k8s_api.cleanup(api, namespace, run_id, timeout_s=30) == []


# --------------------------------------------------------------------------- the playbook, end to end

def _entry_log(tmp_path, name, command, spec, env=None):
    out = subprocess.run([sys.executable, k8s_entry.__file__, command, "--spec", json.dumps(spec)],
                         capture_output=True, timeout=120, check=True, env=env).stdout
    path = tmp_path / name
    path.write_bytes(out)
    return str(path)


def test_k8s_acceptance_playbook_gives_one_report_with_every_node(fake_k8s, tmp_path):
    """ansible-playbook aifabric.acceptance.k8s_acceptance against the fake cluster (a real subprocess, over HTTP),
    a whole fleet of 4 nodes where gpu-node-03's single-node nccl-tests pod is OOM-killed: every stage runs as
    workloads, the fleet_report callback writes one report whose hosts are the node names, with the same check
    names as the SSH path (the rdma stage inside its counter window: each node its port_counters records), exactly
    gpu-node-03 is not fit (its error names the reason), the others pass; nothing
    of any run is left."""
    from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_plan
    from ansible_collections.aifabric.acceptance.tests.integration.conftest import collections_path
    playbook_bin = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    if not os.access(playbook_bin, os.X_OK) or not collections_path():
        pytest.skip("no ansible-playbook next to this Python, or the collection is not importable")
    lib = tmp_path / "code"
    for path, text in k8s_plan.code_files().items():
        target = lib / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text)
    proof = os.path.join(os.path.dirname(UNIT), "plugins", "modules", "fixtures", "h200x2-proof-1")
    probe_json = str(tmp_path / "probe.json")
    env_spec = {"params": dict(k8s_plan.ENV_DEFAULTS), "lib": str(lib / "lib")}
    logs = {
        # the env pod: the collection's probe for real on this machine (no GPU/HCA here: skip records)
        "aif-e2e-env-env-probe-*": _entry_log(tmp_path, "env.log", "env", env_spec),
        "aif-e2e-gemm-gemm-bench-*": pod_log("gemm", os.path.join(proof, "gemm_bare.txt"), tmp_path),
        "aif-e2e-nccl-nccl-test-*": pod_log("all_reduce", NCCL_TEXT, tmp_path),
        "aif-e2e-mn-mn-0-*": pod_log("all_reduce", NCCL_TEXT, tmp_path),
        "aif-e2e-ar-ar-0-*": _entry_log(tmp_path, "ar.log", "run", {"steps": [{
            "label": "allreduce", "timeout_s": 30, "result_file": probe_json, "argv": [
                sys.executable, "-c", "import shutil,sys; shutil.copyfile(%r, %r); sys.stdout.write(open(%r).read())"
                % (os.path.join(proof, "probe_spawn.json"), probe_json, os.path.join(proof, "probe_spawn.txt"))]}]}),
        # the rdma stage: the perftest pods (captured perftest output) inside the counter window, whose pods run the
        # collection's port_counters adapter for real on this machine (no RDMA device here: skip records)
        # (one captured client/server pair of ib_write_bw on ionic_0)
        "aif-e2e-rdma-*-c-*": pod_log("ionic_0", os.path.join(PERFTEST, "amd-ionic-rocm-gdr-ib-write-bw-client-a-MiB.txt"),
                                      tmp_path),
        "aif-e2e-rdma-*-s-*": pod_log("ionic_0", os.path.join(
            PERFTEST, "amd-ionic-rocm-gdr-ib-write-bw-server-a-MiB-only-last-size.txt"), tmp_path),
    }
    for index, phase in enumerate(("before", "after")):
        counters = {"adapter": "port_counters", "params": dict(k8s_plan.DEFAULTS["port_counters"], phase=phase),
                    "lib": str(lib / "lib")}
        logs["aif-e2e-counters%d-port-counters-*" % index] = _entry_log(tmp_path, "counters%d.log" % index, "adapter",
                                                                        counters)
    # the probe stage's topology pods: the adapter's real output on this machine (no LLDP source: skip records)
    topology = {"adapter": "fabric_topology", "lib": str(lib / "lib"),
                "params": k8s_plan.adapter_params("fabric_topology", k8s_plan.DEFAULTS["fabric_topology"], None)}
    logs["aif-e2e-topology-fabric-topology-*"] = _entry_log(tmp_path, "topology.log", "adapter", topology)
    fake_k8s.server.script("oom", pod="aif-e2e-nccl-nccl-test-2-*")          # the third node: nodes[2] = gpu-node-03
    for pattern, log in logs.items():
        fake_k8s.server.script("succeed", pod=pattern, log_file=log)
    nodes = ["gpu-node-01", "gpu-node-02", "gpu-node-03", "gpu-node-04"]
    inventory = tmp_path / "hosts.yml"
    inventory.write_text("all:\n  children:\n    gpu_nodes:\n      hosts:\n" + "".join("        %s:\n" % n for n in nodes))
    report_dir = tmp_path / "reports"
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(os.path.dirname(os.path.dirname(HERE)), "ansible.cfg"),
               ANSIBLE_COLLECTIONS_PATH=collections_path(), ANSIBLE_CALLBACKS_ENABLED="aifabric.acceptance.fleet_report",
               AIFABRIC_REPORTS_ROOT=str(report_dir), AIFABRIC_HISTORY_DB=str(tmp_path / "history.sqlite"),
               ANSIBLE_NOCOLOR="1", PYTHONDONTWRITEBYTECODE="1")
    extra = {"k8s_run_id": "e2e", "k8s_image": IMAGE, "k8s_connection": {"kubeconfig": fake_k8s.kubeconfig},
             "k8s_launcher": "indexed", "k8s_pod": {"gpus_per_pod": 2}, "gpu_nccl": ONE, "nccl_options": ONE,
             "k8s_rdma_hcas": ["ionic_0"]}
    proc = subprocess.run([playbook_bin, "-i", str(inventory), "aifabric.acceptance.k8s_acceptance",
                           "-e", json.dumps(extra)], env=env, capture_output=True, text=True, timeout=600,
                          check=False, cwd=str(tmp_path))
    assert "FLEET REPORT:" in proc.stdout, proc.stdout[-4000:] + proc.stderr[-4000:]
    with open(str(report_dir / "latest" / "results.json"), encoding="utf-8") as handle:
        data = json.load(handle)
    records = data["records"]
    assert sorted(set(r["host"] for r in records)) == nodes
    for node in nodes:
        checks = set(r["check"] for r in records if r["host"] == node)
        assert {"env.os", "gpu.gemm_bf16", "gpu.gemm_fp16", "nccl.all_reduce", "rdma.ib_write_bw"} <= checks, (
            node, sorted(checks))
    # the counter window: each node's own port_counters records, before and after (skip: no RDMA device here)
    counters = [r for r in records if r["check"] == "rdma.port_counters"]
    assert sorted(r["host"] for r in counters) == sorted(nodes * 2), counters
    assert all(r["status"] == "skip" and r["params"]["substrate"] == "kubernetes" for r in counters), counters
    # the topology pods: each node its own net.topology record (skip: no LLDP source on this machine)
    topo = [r for r in records if r["check"] == "net.topology"]
    assert sorted(r["host"] for r in topo) == nodes and all(r["status"] == "skip" for r in topo), topo
    measured = [r for r in records if r["check"].startswith(("gpu.gemm", "nccl."))
                and (r.get("tool") or {}).get("name") != "fleet-analysis"]    # the analyses' own records are no pod's
    assert all(r["params"].get("substrate") == "kubernetes" for r in measured)
    bad = [(r["host"], r["check"], r["status"]) for r in measured if r["status"] != "pass"]
    assert bad == [("gpu-node-03", "nccl.all_reduce", "error")], bad
    (oom,) = [r for r in measured if r["status"] != "pass"]
    assert "OOMKilled" in oom["reason"] and oom["params"]["pod"].startswith("aif-e2e-nccl-nccl-test-2-")
    multi = [r for r in records if r["params"].get("launcher") == "indexed" or r["check"] == "nccl.torch_all_reduce"]
    assert len(multi) == 2 and all(r["params"]["hosts"] == nodes for r in multi)
    verdicts = dict((h["host"], h["status"]) for h in data["summary"]["hosts"])
    assert verdicts == {"gpu-node-01": "pass", "gpu-node-02": "pass", "gpu-node-03": "error", "gpu-node-04": "pass"}
    assert fake_k8s.leftovers() == []
    assert "FLEET REPORT: ERROR: 4 hosts: 1 error, 3 pass;" in proc.stdout, proc.stdout[-2000:]
    assert proc.returncode == 0, proc.stdout[-3000:]


def test_ctrl_c_of_ansible_playbook_removes_every_object(fake_k8s, tmp_path):
    """Ctrl-C (SIGINT to the whole process group, as a terminal sends it) while the pods run: the module's guard
    deletes every object of the run although ansible-playbook is going down."""
    import time
    from ansible_collections.aifabric.acceptance.tests.integration.conftest import collections_path
    playbook_bin = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
    if not os.access(playbook_bin, os.X_OK) or not collections_path():
        pytest.skip("no ansible-playbook next to this Python, or the collection is not importable")
    fake_k8s.server.script("hang")
    inventory = tmp_path / "hosts.yml"
    inventory.write_text("all:\n  children:\n    gpu_nodes:\n      hosts:\n        gpu-node-01:\n        gpu-node-02:\n")
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(os.path.dirname(os.path.dirname(HERE)), "ansible.cfg"),
               ANSIBLE_COLLECTIONS_PATH=collections_path(), ANSIBLE_CALLBACKS_ENABLED="aifabric.acceptance.fleet_report",
               AIFABRIC_REPORTS_ROOT=str(tmp_path / "reports"), AIFABRIC_HISTORY_DB=str(tmp_path / "history.sqlite"),
               ANSIBLE_NOCOLOR="1", PYTHONDONTWRITEBYTECODE="1")
    extra = {"k8s_run_id": "cc", "k8s_image": IMAGE, "k8s_connection": {"kubeconfig": fake_k8s.kubeconfig},
             "gpu_checks": [], "nccl_checks": [], "k8s_timeout_s": 300}
    proc = subprocess.Popen([playbook_bin, "-i", str(inventory), "aifabric.acceptance.k8s_acceptance",
                             "-e", json.dumps(extra)], env=env, cwd=str(tmp_path), start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and len(fake_k8s.server.pods("aifabric.acceptance/run-id=cc-env")) < 2:
            time.sleep(0.2)
        assert len(fake_k8s.server.pods("aifabric.acceptance/run-id=cc-env")) == 2, "the env pods never started"
        os.killpg(proc.pid, signal.SIGINT)
        proc.wait(60)
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(10)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and fake_k8s.leftovers("cc-env"):
        time.sleep(0.2)
    assert fake_k8s.leftovers("cc-env") == [], proc.stdout.read().decode()[-3000:]


@pytest.mark.parametrize("launcher,operators,launcher_pod", [
    ("mpijob", ("mpi",), "aif-op1-mn-launcher-*"),
    ("volcano", ("volcano",), "aif-op1-mn-mpimaster-0*"),
])
def test_operator_launchers_end_to_end(tmp_path, monkeypatch, launcher, operators, launcher_pod):
    """MPIJob and Volcano Job on the fake cluster with the operators' emulation (workers, launcher, policies):
    the launcher's log gives the record, on the first node, naming every node; discovery picks the operator;
    the operator's object and everything it created are gone afterwards."""
    patch_exits(monkeypatch)
    with fake_cluster(tmp_path, operators=operators) as fake:
        fake.server.script("succeed", pod=launcher_pod, log_file=pod_log("all_reduce", NCCL_TEXT, tmp_path))
        args = {"kind": "nccl_test_multinode", "hosts": NODES, "run_id": "op1", "image": IMAGE, "launcher": "auto",
                "kubeconfig": fake.kubeconfig, "unschedulable_grace_s": 0, "cleanup_timeout_s": 30, "timeout_s": 60,
                "nccl_test": ONE}
        with patch_module_args(args):
            with pytest.raises(Exit) as exc:
                k8s_workload.main()
        res = exc.value
        assert not res.failed, res.kwargs
        assert res.kwargs["launcher"] == launcher
        (record,) = res.kwargs["results"]
        assert (record["check"], record["status"], record["host"]) == ("nccl.all_reduce", "pass", NODES[0])
        assert record["params"]["hosts"] == NODES and record["params"]["launcher"] == launcher
        assert res.kwargs["leftover"] == [] and fake.leftovers("op1") == []
        fake.server.settle()
        assert fake.leftovers() == []          # the operator's own objects (hostfile, Service, launcher Job) too
