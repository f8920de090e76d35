# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Kubernetes plans (which pods, pinned where, running what) and pod logs -> records.

The pod side is exercised for real: the entry program (k8s_entry.py, what every pod runs) is started as a
process whose "tool" prints a real captured output, so its log is what a pod's log would be; the records the
Kubernetes path builds from it equal the SSH path's (the modules') for the same output, host = node name."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile

import pytest
from ansible_collections.aifabric.acceptance.tests.unit.plugins.module_utils import k8s_cases as cases
from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules.test_gpu_modules import (  # pylint: disable=unused-import
    NCCL_FIXTURES, PROOF, _call, _runner, module_env)  # noqa: F401 - module_env is a fixture
from ansible_collections.aifabric.acceptance.tests.unit.helpers import read
from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules.test_perftest_module import (
    FIXTURES as PERFTEST_FIXTURES)
from hypothesis import example, given, settings, strategies as st

from ansible_collections.aifabric.acceptance.plugins.module_utils import env_probe, k8s_entry, k8s_plan, probe_host
from ansible_collections.aifabric.acceptance.plugins.module_utils import results
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import Context
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import perftest_sweep as perftest_tool
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import AcceptanceError
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import rdma
from ansible_collections.aifabric.acceptance.plugins.modules import gemm_bench, nccl_test
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import allreduce_probe as torch_allreduce_tool
from ansible_collections.aifabric.acceptance.plugins.module_utils import runner as tool_runner

ENTRY = k8s_entry.__file__
# what a pod has: the code ConfigMap's package tree only, never this checkout's collection (PYTHONPATH would hide a
# module missing from k8s_plan.CODE_MODULES)
POD_ENV = dict((k, v) for k, v in os.environ.items() if k != "PYTHONPATH")
G2 = os.path.join(NCCL_FIXTURES, "h200x2-nccl-tests-2.19.6")
VOLATILE = ("started", "duration_s", "params", "host", "peer")
POD = {"image": "img", "namespace": "acc"}


def _stable(record):
    return dict((k, v) for k, v in record.items() if k not in VOLATILE)


def write_code_tree(root):
    """The code ConfigMap as a pod mounts it under root; returns its lib directory."""
    for path, text in k8s_plan.code_files().items():
        target = os.path.join(str(root), path)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, "w") as handle:
            handle.write(text)
    return os.path.join(str(root), "lib")


def pod_log(steps, command="run", timeout=120, **spec):
    """Run the entry program as a pod would (its stdout is the pod's log), with the code ConfigMap's tree."""
    with tempfile.TemporaryDirectory() as root:
        spec = dict(spec, steps=steps)
        spec.setdefault("lib", write_code_tree(root))
        proc = subprocess.run([sys.executable, ENTRY, command, "--spec", json.dumps(spec)], capture_output=True,
                              env=POD_ENV, timeout=timeout, check=False)
    return proc.returncode, proc.stdout.decode("utf-8", "replace")


def ok(slot, node="gpu-node-01"):
    return {"name": slot["job"] + "-abcde", "node": node, "outcome": "succeeded", "phase": "Succeeded",
            "labels": {k8s_plan.SLOT_LABEL: slot["slot"]}}


# --------------------------------------------------------------------------- same records as the SSH path

def test_nccl_pod_log_gives_the_records_of_the_nccl_test_module(module_env, monkeypatch, tmp_path):
    fixture = os.path.join(G2, "all_reduce_g2.txt")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "all_reduce_perf").write_text("#!/bin/sh\n")
    (bindir / "all_reduce_perf").chmod(0o755)
    monkeypatch.setattr(tool_runner, "spawn", _runner(module_env, lambda argv: (0, read(fixture), "")))
    ssh = _call(nccl_test.main, {"tool_dir": str(bindir), "collectives": ["all_reduce"], "json_output": "never",
                                 "gpus_per_process": 2})
    (from_ssh,) = ssh.kwargs["results"]

    plan = k8s_plan.build("nccl_test", ["gpu-node-01"], dict(POD, gpus_per_pod=2), "t1", {"tool_dir": "/opt/nccl-tests/build", "collectives": ["all_reduce"]})
    (slot,) = plan["steps"][0]["slots"]
    assert slot["sections"][0]["argv"][1:] == ssh.kwargs["cmd"][0][1:]     # the same nccl-tests argv
    rc, log = pod_log([{"label": "all_reduce", "argv": ["cat", fixture], "timeout_s": 30}])
    assert rc == 0
    (from_k8s,) = k8s_plan.slot_records(plan, slot, ok(slot), log)
    assert from_ssh["status"] == "pass" and results.validate(from_k8s) == []
    assert _stable(from_k8s) == _stable(from_ssh)
    assert from_k8s["host"] == "gpu-node-01"
    assert from_k8s["params"]["substrate"] == "kubernetes" and from_k8s["params"]["job"] == "aif-t1-nccl-test-0"
    assert from_k8s["params"]["pod"] == "aif-t1-nccl-test-0-abcde" and from_k8s["params"]["argv"] == slot["sections"][0]["argv"]


def test_gemm_pod_log_gives_the_records_of_the_gemm_bench_module(module_env, monkeypatch):
    text = read(os.path.join(PROOF, "gemm_bare.txt"))
    monkeypatch.setattr(tool_runner, "spawn", _runner(module_env, lambda argv: (0, text, "")))
    ssh = _call(gemm_bench.main, {})
    plan = k8s_plan.build("gemm_bench", ["gpu-node-02"], POD, "t1")
    (slot,) = plan["steps"][0]["slots"]
    assert slot["sections"][0]["argv"][1] == ssh.kwargs["cmd"][1] == "-I"     # isolated, both ways
    assert slot["sections"][0]["argv"][3:] == ssh.kwargs["cmd"][3:]       # the same worker arguments
    rc, log = pod_log([{"label": "gemm", "argv": ["cat", os.path.join(PROOF, "gemm_bare.txt")], "timeout_s": 30}])
    from_k8s = k8s_plan.slot_records(plan, slot, ok(slot, "gpu-node-02"), log)
    assert [_stable(r) for r in from_k8s] == [_stable(r) for r in ssh.kwargs["results"]]
    assert len(from_k8s) == 4 and {r["host"] for r in from_k8s} == {"gpu-node-02"}


@pytest.mark.parametrize("client,server", [
    ("cx7-ndr-ib-read-bw-client-report-gbits-cpufreq-warning.txt", "rxe-softroce-ib-send-lat-server-glued-columns.txt"),
    ("perftest-client-failed-to-modify-qp-to-rts.txt", "perftest-ib-write-bw-server-couldnt-create-ib-resources.txt"),
])
def test_perftest_pod_logs_give_the_records_of_the_ssh_path(client, server):
    opts = {"hcas": ["mlx5_0"], "expect": {"bw_avg_gbit_s": {"min": 100}}}
    plan = k8s_plan.build("perftest_sweep", ["n1", "n2"], dict(POD, gpus_per_pod=0), "t1", opts, rounds=[[["n1", "n2"]]])
    step = plan["steps"][0]
    by_role = dict((s["role"], s) for s in step["slots"])
    assert by_role["server"]["node"] == "n1" and by_role["client"]["node"] == "n2"
    params = k8s_plan.options_of("perftest_sweep", opts)
    for role, name, node, peer in (("client", client, "n2", "n1"), ("server", server, "n1", "n2")):
        slot = by_role[role]
        rc, log = pod_log([{"label": "mlx5_0", "argv": ["cat", os.path.join(PERFTEST_FIXTURES, name)],
                            "timeout_s": 30}], parallel=True)
        from_k8s = k8s_plan.slot_records(plan, slot, ok(slot, node), log)
        text = read(os.path.join(PERFTEST_FIXTURES, name))
        from_ssh = perftest_tool.records(text, Context(
            params=dict(params, peer_name=peer), rc=0, side=role, host=node, target="mlx5_0", index=0,
            facts=slot["sections"][0]["facts"]))
        assert [_stable(r) for r in from_k8s] == [_stable(r) for r in from_ssh]
        assert [(r["host"], r["peer"]) for r in from_k8s] == [(node, peer)]
        assert from_k8s[0]["check"].startswith("rdma.")


def _perftest_pod(tmp_path, options, role="client"):
    """A perftest pod of a 2-node plan on the CX-4 host's sysfs (built from its captures); returns
    (plan, slot, log, device, hcas). Its tool stand-in prints a real 100G RoCE client output."""
    from ansible_collections.aifabric.acceptance.tests.unit.plugins.module_utils.test_env_probe import cx4_infiniband
    root = cx4_infiniband(tmp_path / "root")
    hcas = rdma.build_hcas(probe_host.read_infiniband(probe_host.Host(root=str(root))))
    device = next(h["name"] for h in hcas
                  if any(p.get("link_layer") == "Ethernet" and p.get("state") == "ACTIVE" for p in h["ports"]))
    tool = tmp_path / "ib_write_bw"
    tool.write_text("#!/bin/sh\ncat %s\n" % os.path.join(PERFTEST_FIXTURES, ROCE_CLIENT))
    tool.chmod(0o755)
    plan = k8s_plan.build("perftest_sweep", ["n1", "n2"], dict(POD, gpus_per_pod=0), "t1",
                          dict(options, hcas=[device], tool_dir=str(tmp_path)), rounds=[[["n1", "n2"]]])
    slot = next(s for s in plan["steps"][0]["slots"] if s["role"] == role)
    job = next(o for o in plan["steps"][0]["objects"] if o["metadata"]["name"] == slot["job"])
    spec = json.loads(job["spec"]["template"]["spec"]["containers"][0]["command"][4])
    spec["perftest"].update({"lib": write_code_tree(tmp_path), "sysfs_root": str(root)})   # the pod's /opt/aifabric/lib
    with socket.socket() as ready:       # the server pod's ready port, which a client waits for
        ready.bind(("127.0.0.1", 0))
        ready.listen(8)
        if role == "client":
            assert spec["wait_hosts"] == ["s0.aif-t1-pt-r0"] and spec["wait_port"] == 18514
            spec.update({"wait_hosts": ["127.0.0.1"], "wait_port": ready.getsockname()[1]})
        proc = subprocess.run([sys.executable, ENTRY, "run", "--spec", json.dumps(spec)], capture_output=True,
                              env=POD_ENV, timeout=60, check=True)
    return plan, slot, proc.stdout.decode(), device, hcas


ROCE_CLIENT = "roce100g-ib-write-bw-client-bidir-D5-gbits-peak-and-cpufreq-warnings.txt"


def test_perftest_pod_plans_its_rails_from_the_nodes_sysfs_as_the_ssh_path(tmp_path):
    """The pod reads its node's port (rate, link layer) with the SSH path's device_plan; the client's bandwidth
    floor is then the lower port rate of both ends (the server pod's rates), as on the SSH path."""
    plan, slot, log, device, hcas = _perftest_pod(tmp_path, {"gid_index": 1})
    _text, info = k8s_plan.split_sections(log)[0][device]
    params = dict(k8s_plan.options_of("perftest_sweep", {"gid_index": 1}), hcas=[device])
    want = perftest_tool.device_plan([device], params, hcas)
    assert info["facts"] == json.loads(json.dumps(want[0][4])) and info["facts"]["port_rate_gbit_s"] == 100
    assert info["argv"][info["argv"].index("-x") + 1] == "1"
    (record,) = k8s_plan.slot_records(plan, slot, ok(slot, "n2"), log, peer_rates=[100.0])
    (from_ssh,) = perftest_tool.records(read(os.path.join(PERFTEST_FIXTURES, ROCE_CLIENT)), Context(
        params=dict(params, peer_name="n1", peer_rates_gbit_s=[100.0]), rc=0, side="client", host="n2", target=device,
        index=0, facts=info["facts"]))
    assert _stable(record) == _stable(from_ssh)
    floor = record["expect"]["bw_avg_gbit_s"]                # judged against both ends' port rates, as on SSH
    assert floor["min"] > 100 and "both ends" in floor["source"], floor


def test_perftest_pod_without_a_usable_roce_gid_says_why_as_the_ssh_path(tmp_path):
    """That CX-4 port has only link-local RoCE GIDs: the SSH path refuses to guess; so does the pod."""
    plan, slot, log, device, _hcas = _perftest_pod(tmp_path, {}, role="server")
    (record,) = k8s_plan.slot_records(plan, slot, ok(slot, "n1"), log)
    assert record["status"] == "error" and record["host"] == "n1" and record["check"] == "rdma.ib_write_bw.server"
    assert "could not plan %s on n1: no RoCE v2 GID with an IPv4 address" % device in record["reason"]


def test_code_configmap_is_self_contained(tmp_path):
    """Every module the pods get imports from the code ConfigMap's tree alone (a module left out of
    k8s_plan.CODE_MODULES fails here, not in a pod on a real cluster)."""
    lib = write_code_tree(tmp_path)
    names = [n.replace("/", ".") for n in k8s_plan.CODE_MODULES if n != "parsers/__init__"]
    script = ("import importlib, sys; sys.path.insert(0, sys.argv[1])\n"
              "for name in sys.argv[2:]:\n"
              "    importlib.import_module('ansible_collections.aifabric.acceptance.plugins.module_utils.' + name)\n")
    proc = subprocess.run([sys.executable, "-S", "-c", script, lib] + names, capture_output=True,
                          env=POD_ENV, timeout=60, check=False, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr.decode()


def test_env_pod_runs_the_collections_own_probe(tmp_path):
    """The env pod imports env_probe from the code ConfigMap's package tree and prints its records."""
    lib = write_code_tree(tmp_path)
    params = dict(k8s_plan.ENV_DEFAULTS, groups=["env"])
    spec = json.dumps({"params": params, "lib": str(lib)})
    proc = subprocess.run([sys.executable, "-S", ENTRY, "env", "--spec", spec],
                          capture_output=True, env=POD_ENV, timeout=120, check=False, cwd=str(tmp_path))
    assert proc.returncode == 0, proc.stderr
    log = proc.stdout.decode()
    plan = k8s_plan.build("env_probe", ["gpu-node-03"], POD, "t1", {"groups": ["env"]})
    (slot,) = plan["steps"][0]["slots"]
    from_k8s = k8s_plan.slot_records(plan, slot, ok(slot, "gpu-node-03"), log)
    host = probe_host.Host(run=k8s_entry.run_argv, which=lambda n: None,
                           executable=sys.executable)
    from_ssh = env_probe.probe(host, params)
    assert [(r["check"], r["target"], r["status"]) for r in from_k8s] == \
        [(r["check"], r["target"], r["status"]) for r in from_ssh]
    assert {r["host"] for r in from_k8s} == {"gpu-node-03"}
    assert all(results.validate(r) == [] and r["params"]["substrate"] == "kubernetes" for r in from_k8s)


def test_torch_probe_across_nodes_gives_the_probe_record_of_the_ssh_path(tmp_path):
    """Every pod runs torchrun with its own node rank; rank 0's JSON document comes back framed in the log."""
    plan = k8s_plan.build("allreduce_probe", ["n1", "n2"], dict(POD, gpus_per_pod=2), "t1")
    (step,) = plan["steps"]
    svc, job = step["objects"]
    assert job["spec"]["completionMode"] == "Indexed" and svc["metadata"]["name"] == "aif-t1-ar"
    (slot,) = step["slots"]
    argv = slot["sections"][0]["argv"]
    assert argv[:9] == ["torchrun", "--nnodes", "2", "--nproc-per-node", "2", "--node-rank", "{JOB_COMPLETION_INDEX}",
                        "--master-addr", "aif-t1-ar-0.aif-t1-ar"]
    # the pod: a stand-in for torchrun prints the real probe output and writes its real JSON where asked
    text_path, json_path = os.path.join(PROOF, "probe_spawn.txt"), os.path.join(PROOF, "probe_spawn.json")
    # the JSON goes to the entry program's private directory (never a fixed name in /tmp): {RESULT_DIR} in the plan
    json_out = argv[argv.index("--json-out") + 1]
    assert json_out == k8s_plan.PROBE_RESULT and json_out.startswith("{RESULT_DIR}/")
    script = "import shutil,sys; shutil.copyfile(%r, sys.argv[2]); sys.stdout.write(open(%r).read()); print(sys.argv[1])" % (
        json_path, text_path)
    env = dict(POD_ENV, JOB_COMPLETION_INDEX="0", TMPDIR=str(tmp_path))
    spec = {"steps": [{"label": "allreduce", "argv": [sys.executable, "-c", script, "{JOB_COMPLETION_INDEX}", json_out],
                       "timeout_s": 30, "result_file": k8s_plan.PROBE_RESULT}],
            "lib": write_code_tree(tmp_path)}      # the pod's code ConfigMap (the entry program's interrupt guard)
    before = set(os.listdir(str(tmp_path)))
    proc = subprocess.run([sys.executable, ENTRY, "run", "--spec", json.dumps(spec)], capture_output=True,
                          timeout=60, check=True, env=env)
    log = proc.stdout.decode()
    assert set(os.listdir(str(tmp_path))) == before      # its private directory is gone with it
    (record,) = k8s_plan.slot_records(plan, slot, dict(ok(slot, "n2"), labels={}), log)
    params = k8s_plan.options_of("allreduce_probe", {})
    (from_ssh,) = torch_allreduce_tool.records(read(text_path) + "0\n", Context(
        document=read(json_path), rc=0, params=params, nodes=2, launcher="torchrun", ranks_per_node=2,
        hosts=["n1", "n2"]))
    assert record["status"] == "pass" and record["check"] == "nccl.torch_all_reduce"
    assert _stable(record) == _stable(from_ssh)
    assert record["host"] == "n2" and record["params"]["hosts"] == ["n1", "n2"]


# --------------------------------------------------------------------------- never a silent gap

def test_unschedulable_pod_gives_an_error_record_per_check_naming_the_reason():
    plan = k8s_plan.build("nccl_test", ["gpu-node-01"], POD, "t1", {"collectives": ["all_reduce", "all_gather"]})
    (slot,) = plan["steps"][0]["slots"]
    outcome = {"name": "aif-t1-nccl-test-0-x", "node": None, "outcome": "unschedulable", "reason": "Unschedulable",
               "message": "0/4 nodes are available: 4 Insufficient nvidia.com/gpu."}
    records = k8s_plan.slot_records(plan, slot, outcome, "")
    assert [(r["check"], r["status"], r["host"]) for r in records] == [
        ("nccl.all_reduce", "error", "gpu-node-01"), ("nccl.all_gather", "error", "gpu-node-01")]
    assert all("Insufficient nvidia.com/gpu" in r["reason"] and "unschedulable" in r["reason"] for r in records)


def test_log_cut_inside_a_tool_run_is_an_error_with_the_partial_output():
    plan = k8s_plan.build("nccl_test", ["gpu-node-01"], POD, "t1", {"collectives": ["all_reduce", "all_gather"]})
    (slot,) = plan["steps"][0]["slots"]
    head = "\n".join(read(os.path.join(G2, "all_reduce_g2.txt")).splitlines()[:20])
    log = k8s_entry.BEGIN + "all_reduce\n" + head + "\n"
    outcome = {"name": "p", "node": "gpu-node-01", "outcome": "oom_killed", "reason": "OOMKilled",
               "message": "container nccl was OOMKilled (exit 137)", "exit_code": 137}
    first, second = k8s_plan.slot_records(plan, slot, outcome, log)
    assert first["status"] == "error" and "OOMKilled" in first["reason"] and "log stops while all_reduce" in first["reason"]
    assert "# nThread" in first["raw"] or "nccl" in first["raw"].lower()
    assert second["status"] == "error" and "OOMKilled" in second["reason"]


def test_succeeded_pod_without_output_is_an_error_not_a_pass():
    plan = k8s_plan.build("env_probe", ["gpu-node-01"], POD, "t1")
    (slot,) = plan["steps"][0]["slots"]
    (record,) = k8s_plan.slot_records(plan, slot, ok(slot), "python3: can't open file\n")
    assert record["check"] == "env.probe" and record["status"] == "error"
    assert "no env output" in record["reason"] and record["raw"]


def test_tool_timeout_in_the_pod_is_an_error_record():
    plan = k8s_plan.build("perftest_sweep", ["n1", "n2"], dict(POD, gpus_per_pod=0), "t1", {"hcas": ["mlx5_0"]},
                          rounds=[[["n1", "n2"]]])
    slot = next(s for s in plan["steps"][0]["slots"] if s["role"] == "server")
    rc, log = pod_log([{"label": "mlx5_0", "argv": ["sleep", "30"], "timeout_s": 0.5}])
    (record,) = k8s_plan.slot_records(plan, slot, ok(slot, "n1"), log)
    assert record["status"] == "error" and "timed out" in record["reason"] and record["host"] == "n1"


LOG_WORDS = ["AIFABRIC_BEGIN ", "AIFABRIC_END ", "AIFABRIC_RECORDS ", "AIFABRIC_NOTE ", "all_reduce", "env", " ",
             "\n", "{", "}", "\"rc\": 1", "x", "[", "]", "\x00"]


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from(LOG_WORDS), max_size=40).map("".join))
@example("AIFABRIC_RECORDS []\n")
@example("AIFABRIC_RECORDS [{}]\n")
@example("AIFABRIC_BEGIN all_reduce\nAIFABRIC_END all_reduce {\"rc\": 0}\n")
def test_any_log_gives_valid_records_never_an_exception(log):
    for kind in ("env_probe", "nccl_test"):
        plan = k8s_plan.build(kind, ["n1"], POD, "t1")
        (slot,) = plan["steps"][0]["slots"]
        for outcome in (ok(slot, "n1"), {"name": "p", "node": "n1", "outcome": "failed", "exit_code": 1}):
            records = k8s_plan.slot_records(plan, slot, outcome, log)
            assert records and all(results.validate(r) == [] for r in records)


# --------------------------------------------------------------------------- the entry program

def test_entry_retries_a_client_while_its_server_is_not_up(tmp_path):
    """perftest's 'Couldn't connect' (the parser's connect kind) is retried; the output of the last attempt counts."""
    counter = tmp_path / "n"
    refused = os.path.join(PERFTEST_FIXTURES, "perftest-couldnt-connect-unable-to-init-socket-pre-fix.txt")
    good = os.path.join(PERFTEST_FIXTURES, "cx7-ndr-ib-read-bw-client-report-gbits-cpufreq-warning.txt")
    script = ("import os,sys\np=%r\nn=int(open(p).read()) if os.path.exists(p) else 0\nopen(p,'w').write(str(n+1))\n"
              "sys.stdout.write(open(%r if n < 2 else %r).read())\nsys.exit(1 if n < 2 else 0)\n"
              % (str(counter), refused, good))
    rc, log = pod_log([{"label": "mlx5_0", "argv": [sys.executable, "-c", script], "timeout_s": 30,
                        "retry_until_s": 60, "retry_delay_s": 0.05}])
    sections, _notes = k8s_plan.split_sections(log)
    text, info = sections["mlx5_0"]
    assert info["attempts"] == 3 and info["rc"] == 0 and text == read(good)


def test_entry_does_not_retry_other_failures():
    failed = os.path.join(PERFTEST_FIXTURES, "perftest-client-failed-to-modify-qp-to-rts.txt")
    rc, log = pod_log([{"label": "mlx5_0", "argv": ["sh", "-c", 'cat "$0"; exit 1', failed], "timeout_s": 30,
                        "retry_until_s": 60, "retry_delay_s": 0.05}])
    _text, info = k8s_plan.split_sections(log)[0]["mlx5_0"]
    assert info["attempts"] == 1 and info["rc"] == 1


def test_launcher_reports_workers_that_never_answered():
    plan = k8s_plan.build("nccl_test_multinode", ["n1", "n2"], POD, "t1", {"collectives": ["all_reduce"]}, launcher="indexed",
                          ssh_keys=cases.KEYS)
    (slot,) = plan["steps"][0]["slots"]
    rc, log = pod_log([{"label": "all_reduce", "argv": ["true"], "timeout_s": 5}],
                      wait_hosts=["127.0.0.1"], wait_port=9, wait_s=0.5)
    assert rc == 3
    (record,) = k8s_plan.slot_records(plan, slot, {"name": "aif-t1-mn-0-x", "node": "n2", "outcome": "failed",
                                                   "exit_code": 3}, log)
    assert record["status"] == "error" and "did not answer ssh" in record["reason"] and record["host"] == "n2"


def test_entry_rejects_a_bad_command_line():
    proc = subprocess.run([sys.executable, ENTRY, "bogus"], capture_output=True, timeout=30, check=False)
    assert proc.returncode == 2 and b"usage" in proc.stderr


# --------------------------------------------------------------------------- plan shapes

def test_perftest_rounds_pin_server_and_client_and_run_every_rail():
    plan = dict(cases.plans())["perftest"]
    assert [s["name"] for s in plan["steps"]] == ["pt-r0", "pt-r1"]
    for step, pairs in zip(plan["steps"], cases.ROUNDS):
        svc = step["objects"][0]
        assert svc["kind"] == "Service" and svc["spec"]["clusterIP"] == "None"
        jobs = dict((o["metadata"]["name"], o) for o in step["objects"][1:])
        for p, (server, client) in enumerate(pairs):
            slots = dict((s["role"], s) for s in step["slots"] if s["slot"].startswith("%s-p%d-" % (step["name"], p)))
            assert (slots["server"]["node"], slots["client"]["node"]) == (server, client)
            assert slots["client"]["peer"] == server and slots["server"]["peer"] == client
            spec = jobs[slots["server"]["job"]]["spec"]["template"]["spec"]
            assert spec["hostname"] == "s%d" % p and spec["subdomain"] == svc["metadata"]["name"]
            client_argvs = [s["argv"] for s in slots["client"]["sections"]]
            assert [a[-1] for a in client_argvs] == ["s%d.%s" % (p, svc["metadata"]["name"])] * 2
            assert [a[a.index("-d") + 1] for a in client_argvs] == ["mlx5_0", "mlx5_1"]
            assert [a[a.index("-p") + 1] for a in client_argvs] == ["18515", "18516"]
            assert [a[a.index("-x") + 1] for a in client_argvs] == ["3", "3"]


def test_indexed_multinode_launch_waits_for_every_worker():
    plan = dict(cases.plans())["nccl_multinode-indexed"]
    (step,) = plan["steps"]
    svc, job = step["objects"]
    assert job["spec"]["completionMode"] == "Indexed" and job["spec"]["completions"] == 4
    assert svc["metadata"]["name"] == job["spec"]["template"]["spec"]["subdomain"] == "aif-t1-mn"
    command = job["spec"]["template"]["spec"]["containers"][0]["command"]
    assert command[2] == "indexed"
    spec = json.loads(command[4])
    hosts = ["aif-t1-mn-%d.aif-t1-mn" % i for i in range(4)]
    assert spec["launcher"]["wait_hosts"] == hosts[1:] and spec["launcher"]["wait_port"] == 2222
    (argv,) = [s["argv"] for s in spec["launcher"]["steps"]]
    assert argv[argv.index("-np") + 1] == "32" and argv[argv.index("-H") + 1] == ",".join(h + ":8" for h in hosts)
    assert argv[argv.index("-g") + 1] == "1"
    assert spec["worker"]["alive"] == "aif-t1-mn-0.aif-t1-mn:2223"
    anti = job["spec"]["template"]["spec"]["affinity"]["podAntiAffinity"]
    assert anti["requiredDuringSchedulingIgnoredDuringExecution"][0]["topologyKey"] == "kubernetes.io/hostname"
    assert plan["setup"][1]["kind"] == "Secret" and step["fail_fast"] is True


def test_operator_launchers():
    mpi = dict(cases.plans())["nccl_multinode-mpijob"]["steps"][0]
    (obj,) = mpi["objects"]
    assert obj["spec"]["launcherCreationPolicy"] == "WaitForWorkersReady" and obj["spec"]["slotsPerWorker"] == 8
    assert obj["spec"]["mpiReplicaSpecs"]["Worker"]["replicas"] == 4 and mpi["done_selector"].endswith("=launcher")
    launcher = obj["spec"]["mpiReplicaSpecs"]["Launcher"]["template"]["spec"]["containers"][0]
    # the launcher holds no GPU and no extended resource; its cpu and memory are requests and limits (no namespace
    # LimitRange default below them)
    assert launcher["resources"] == {"requests": {"cpu": "1", "memory": "1Gi"}, "limits": {"cpu": "1", "memory": "1Gi"}}
    volcano = dict(cases.plans())["nccl_multinode-volcano"]["steps"][0]["objects"][0]
    assert volcano["spec"]["minAvailable"] == 5 and set(volcano["spec"]["plugins"]) == {"ssh", "svc"}


@pytest.mark.parametrize("args,needle", [
    (("bogus", ["n1"]), "kind 'bogus'"),
    (("env_probe", []), "no nodes selected"),
    (("env_probe", ["n1", "n1"]), "duplicate node names"),
    (("perftest_sweep", ["n1", "n2"], {"hcas": ["mlx5_0"]}), "needs rounds"),
    (("perftest_sweep", ["n1", "n2"], {"hcas": ["mlx5_0"]}, [[["n1", "n3"]]]), "not selected: n3"),
    (("perftest_sweep", ["n1", "n2", "n3"], {"hcas": ["mlx5_0"]}, [[["n1", "n2"], ["n2", "n3"]]]), "disjoint"),
    (("perftest_sweep", ["n1", "n2"], {}, [[["n1", "n2"]]]), "hcas"),
    (("nccl_test_multinode", ["n1"]), "at least 2 nodes"),
    (("nccl_test", ["n1"], {"colectives": ["all_reduce"]}), "unknown option 'colectives'"),
    (("nccl", ["n1"]), "kind 'nccl' is not one of env_probe"),     # a former name: k8s_workload maps it, with its warning
])
def test_bad_plans_are_clear_errors(args, needle):
    kind, nodes = args[:2]
    options = args[2] if len(args) > 2 else None
    rounds = args[3] if len(args) > 3 else None
    with pytest.raises(AcceptanceError, match=needle):
        k8s_plan.build(kind, nodes, POD, "t1", options, rounds=rounds, launcher="indexed", ssh_keys=cases.KEYS)
