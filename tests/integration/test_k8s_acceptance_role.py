# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/k8s_acceptance.yml through the role aifabric.acceptance.k8s (issue 23), with real ansible-playbook
runs in render mode (no cluster):

- ``--tags gpu`` runs only the GPU workloads (GEMM and single-node nccl-tests), ``--tags rdma`` only perftest;
- a misspelt variable inside a role mapping (``k8s_pod: {gpus: 8}``) fails at the role's start with the argument
  spec's message, before any manifest is written;
- the stage variables shared with the SSH roles reach the manifests (gpu_gemm's iterations, nccl_options' pods'
  own ssh_port, rdma_pairings' mode, k8s_rdma_pod over k8s_pod).
Every path the runs write is under the test's tmp_path.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

from ansible_collections.aifabric.acceptance.tests.integration.conftest import collections_path

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")
NODES = ["node-a", "node-b", "node-c"]


@pytest.fixture(scope="module")
def env():
    collections = collections_path()
    if not collections:
        pytest.fail("cannot tell where aifabric.acceptance is importable from: set AIFABRIC_TEST_COLLECTIONS")
    out = dict(os.environ)
    for name in ("ANSIBLE_COLLECTIONS_PATHS", "ANSIBLE_INVENTORY", "AIFABRIC_HISTORY_DB"):
        out.pop(name, None)
    out.update({"ANSIBLE_CONFIG": os.path.join(REPO, "ansible.cfg"), "ANSIBLE_COLLECTIONS_PATH": collections,
                "ANSIBLE_CALLBACKS_ENABLED": "aifabric.acceptance.fleet_report", "ANSIBLE_NOCOLOR": "1",
                "PYTHONDONTWRITEBYTECODE": "1"})
    return out


def _render(env, tmp_path, extra, *args):
    inventory = tmp_path / "inventory.ini"
    inventory.write_text("[gpu_nodes]\n%s\n" % "\n".join(NODES), encoding="utf-8")
    render = tmp_path / "render"
    variables = dict({"k8s_render_dir": str(render), "k8s_run_id": "tr"}, **extra)
    argv = [ANSIBLE_PLAYBOOK, "-i", str(inventory), os.path.join(REPO, "playbooks", "k8s_acceptance.yml"),
            "-e", json.dumps(variables)] + list(args)
    proc = subprocess.run(argv, env=dict(env, AIFABRIC_REPORTS_ROOT=str(tmp_path / "reports")), cwd=str(tmp_path),
                          capture_output=True, text=True, timeout=300, check=False)
    return proc, render


def _dirs(render):
    return sorted(os.listdir(str(render))) if render.exists() else []


def _manifests(render, run_id):
    out = []
    for name in sorted(os.listdir(str(render / run_id))):
        with open(str(render / run_id / name), encoding="utf-8") as handle:
            out.extend(d for d in yaml.safe_load_all(handle) if d)
    return out


@pytest.mark.parametrize("tags, runs", [
    ("gpu", ["tr-gemm", "tr-nccl"]),
    ("rdma", ["tr-counters0", "tr-counters1", "tr-rdma"]),     # the counter window (default on) around perftest
    ("probe,nccl", ["tr-ar", "tr-env", "tr-mn", "tr-topology"]),
])
def test_a_stage_tag_runs_only_that_stages_workloads(env, tmp_path, tags, runs):
    proc, render = _render(env, tmp_path, {"k8s_rdma_hcas": ["mlx5_0"]}, "--tags", tags)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert _dirs(render) == runs


def test_a_misspelt_key_fails_before_any_stage(env, tmp_path):
    # the first play refuses it (issue 33), with what it probably meant ...
    proc, render = _render(env, tmp_path, {"k8s_pod": {"gpus": 8}})
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "the run stops before any stage" in out and "k8s_pod.gpus" in out, out[-3000:]
    assert _dirs(render) == []
    # ... and with acceptance_strict_vars=false (only a warning for the names), the role's argument spec, which the
    # first play checks for every host, still does: ansible-core's message, the key under its mapping
    proc, render = _render(env, tmp_path, {"k8s_pod": {"gpus": 8}, "acceptance_strict_vars": False})
    out = (proc.stdout + proc.stderr).replace("\n", " ")
    assert proc.returncode != 0
    assert ("the argument spec of the role aifabric.acceptance.k8s (entry point main) refuses: k8s_pod.gpus. "
            "Supported parameters include") in out, out[-3000:]
    assert _dirs(render) == []


def test_the_shared_stage_variables_reach_the_manifests(env, tmp_path):
    extra = {"k8s_rdma_hcas": ["mlx5_0"], "gpu_gemm": {"iterations": 7}, "nccl_options": {"ssh_port": 2022},
             "rdma_pairings": {"mode": "star"}, "rdma_tests": ["ib_write_bw", "ib_read_bw"],
             "k8s_pod": {"gpus_per_pod": 4, "host_network": True}, "k8s_rdma_pod": {"host_network": False},
             "gpu_checks": ["gemm"], "nccl_checks": ["nccl"],
             "probe_topology": {NODES[0]: {"mlx5_0": {"switch": "leaf-01", "switch_port": 7}}},
             "k8s_lldpd_socket": "/run/lldpd.socket"}
    proc, render = _render(env, tmp_path, extra)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    assert _dirs(render) == ["tr-counters0", "tr-counters1", "tr-env", "tr-gemm", "tr-mn", "tr-rdma", "tr-rdma1",
                             "tr-topology"]
    # the fabric topology: one pod per node, each with its own declared ports, the node's lldpd socket mounted
    declared = {}
    for job in [d for d in _manifests(render, "tr-topology") if d["kind"] == "Job"]:
        spec = job["spec"]["template"]["spec"]
        command = json.loads(spec["containers"][0]["command"][-1])
        assert command["adapter"] == "fabric_topology" and spec["hostNetwork"] is True
        assert spec["volumes"][-1]["hostPath"] == {"path": "/run/lldpd.socket", "type": "Socket"}
        declared[spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][
            "nodeSelectorTerms"][0]["matchFields"][0]["values"][0]] = command["params"]["declared"]
    assert declared == dict((n, {"mlx5_0": {"switch": "leaf-01", "switch_port": 7}} if n == NODES[0] else {})
                            for n in NODES)
    # the counter window: one port_counters pod per node before and after the perftest pods, with k8s_rdma_pod
    for run_id, phase in (("tr-counters0", "before"), ("tr-counters1", "after")):
        jobs = [d for d in _manifests(render, run_id) if d["kind"] == "Job"]
        assert len(jobs) == len(NODES)
        for job in jobs:
            spec = job["spec"]["template"]["spec"]
            assert not spec.get("hostNetwork")
            command = json.loads(spec["containers"][0]["command"][-1])
            assert command["adapter"] == "port_counters" and command["params"]["phase"] == phase
    gemm = [d for d in _manifests(render, "tr-gemm") if d["kind"] == "Job"]
    assert len(gemm) == len(NODES)
    pod = gemm[0]["spec"]["template"]["spec"]
    assert pod["hostNetwork"] is True
    assert pod["containers"][0]["resources"]["limits"]["nvidia.com/gpu"] == "4"
    argv = json.loads(pod["containers"][0]["command"][-1])["steps"][0]["argv"]
    assert argv[argv.index("--iters") + 1] == "7"
    ports = [p["port"] for d in _manifests(render, "tr-mn") if d["kind"] == "Service" for p in d["spec"]["ports"]]
    assert 2022 in ports
    for run_id in ("tr-rdma", "tr-rdma1"):
        jobs = [d for d in _manifests(render, run_id) if d["kind"] == "Job"]
        # star: node-a against each other node, one round per pair (two rounds of one pair with three nodes)
        assert len(jobs) == 2 * 2
        specs = [j["spec"]["template"]["spec"] for j in jobs]
        assert all(not s.get("hostNetwork") for s in specs)
        assert all("nvidia.com/gpu" not in (s["containers"][0].get("resources") or {}).get("limits", {}) for s in specs)


def test_a_run_without_an_image_fails_at_the_start_saying_what_it_needs(env, tmp_path):
    inventory = tmp_path / "inventory.ini"
    inventory.write_text("[gpu_nodes]\n%s\n" % "\n".join(NODES), encoding="utf-8")
    argv = [ANSIBLE_PLAYBOOK, "-i", str(inventory), os.path.join(REPO, "playbooks", "k8s_acceptance.yml")]
    proc = subprocess.run(argv, env=dict(env, AIFABRIC_REPORTS_ROOT=str(tmp_path / "reports")), cwd=str(tmp_path),
                          capture_output=True, text=True, timeout=300, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0
    assert "k8s_image is required" in out, out[-3000:]
    assert "Environment probe on every node" not in out          # no workload started
