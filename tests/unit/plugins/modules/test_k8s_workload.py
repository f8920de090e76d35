# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""k8s_workload as glue: render mode writes every manifest and needs no cluster, check mode writes nothing,
bad input is a clear failure, and the connection options are kubernetes.core's."""

from __future__ import annotations

import os

import pytest
import yaml
from ansible.module_utils.testing import patch_module_args
from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules.module_harness import Exit, patch_exits

from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_api
from ansible_collections.aifabric.acceptance.plugins.doc_fragments import _k8s_auth
from ansible_collections.aifabric.acceptance.plugins.modules import k8s_workload

NODES = ["gpu-node-01", "gpu-node-02", "gpu-node-03"]
IMAGE = "registry.example.com/acceptance/nccl-tests:2.17-mpi"


@pytest.fixture
def module(monkeypatch):
    patch_exits(monkeypatch)

    def refuse(params):
        raise AssertionError("render and check modes must not connect")
    monkeypatch.setattr(k8s_api, "connect", refuse)


def call(args):
    with patch_module_args(args):
        with pytest.raises(Exit) as exc:
            k8s_workload.main()
    return exc.value


def test_render_writes_every_manifest_and_applies_nothing(module, tmp_path):
    res = call({"kind": "nccl_test_multinode", "hosts": NODES, "image": IMAGE, "render_dir": str(tmp_path),
                "run_id": "rend1", "nccl_test": {"collectives": ["all_reduce"]}})
    assert not res.failed, res.kwargs
    assert res.kwargs["changed"] is True and res.kwargs["results"] == [] and res.kwargs["launcher"] == "indexed"
    files = res.kwargs["files"]
    assert [os.path.basename(f) for f in files] == ["00-configmap-aif-rend1-code.yaml", "01-secret-aif-rend1-ssh.yaml",
                                                    "02-service-aif-rend1-mn.yaml", "03-job-aif-rend1-mn.yaml"]
    assert sorted(os.listdir(str(tmp_path / "rend1"))) == sorted(os.path.basename(f) for f in files)
    with open(files[3]) as handle:
        job = yaml.safe_load(handle)
    assert job["metadata"]["labels"][k8s_api.RUN_LABEL] == "rend1"
    assert job["spec"]["template"]["metadata"]["labels"][k8s_api.RUN_LABEL] == "rend1"
    with open(files[1]) as handle:
        secret = yaml.safe_load(handle)
    assert secret["stringData"]["id_ed25519"].startswith("-----BEGIN OPENSSH PRIVATE KEY-----")
    assert secret["stringData"]["id_ed25519.pub"].startswith("ssh-ed25519 ")


def test_render_is_private_the_ssh_key_above_all(module, tmp_path):
    """The Secret holds the run's ssh private key: every manifest 0600 in 0700 directories (was 0644 in 0755)."""
    res = call({"kind": "nccl_test_multinode", "hosts": NODES, "image": IMAGE, "render_dir": str(tmp_path / "out"),
                "run_id": "priv1", "nccl_test": {"collectives": ["all_reduce"]}})
    assert not res.failed, res.kwargs
    for directory in (tmp_path / "out", tmp_path / "out" / "priv1"):
        assert os.stat(str(directory)).st_mode & 0o777 == 0o700
    for path in res.kwargs["files"]:
        assert os.stat(path).st_mode & 0o777 == 0o600, path


def test_render_never_writes_through_a_planted_link(module, tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("precious")
    run_dir = tmp_path / "out" / "plant1"
    run_dir.mkdir(parents=True, mode=0o700)
    os.symlink(str(victim), str(run_dir / "00-configmap-aif-plant1-code.yaml"))
    os.symlink(str(victim), str(run_dir / "00-configmap-aif-plant1-code.yaml.tmp"))
    res = call({"kind": "nccl_test_multinode", "hosts": NODES, "image": IMAGE, "render_dir": str(tmp_path / "out"),
                "run_id": "plant1", "nccl_test": {"collectives": ["all_reduce"]}})
    assert not res.failed, res.kwargs
    assert victim.read_text() == "precious"
    assert not os.path.islink(res.kwargs["files"][0])


def test_render_other_launchers_and_kinds(module, tmp_path):
    for launcher, kind in (("mpijob", "MPIJob"), ("volcano", "Job")):
        res = call({"kind": "nccl_test_multinode", "hosts": NODES, "image": IMAGE, "render_dir": str(tmp_path),
                    "run_id": launcher, "launcher": launcher})
        assert res.kwargs["launcher"] == launcher
        with open(res.kwargs["files"][-1]) as handle:
            assert yaml.safe_load(handle)["kind"] == kind
    res = call({"kind": "perftest_sweep", "hosts": NODES, "image": IMAGE, "render_dir": str(tmp_path), "run_id": "pt",
                "rounds": [[["gpu-node-01", "gpu-node-02"]], [["gpu-node-03", "gpu-node-01"]]],
                "perftest_sweep": {"hcas": ["mlx5_0"]}, "gpus_per_pod": 0, "host_network": True})
    names = [os.path.basename(f) for f in res.kwargs["files"]]
    assert names[1:] == ["01-service-aif-pt-pt-r0.yaml", "02-job-aif-pt-pt-r0-p0-s.yaml",
                         "03-job-aif-pt-pt-r0-p0-c.yaml", "04-service-aif-pt-pt-r1.yaml",
                         "05-job-aif-pt-pt-r1-p0-s.yaml", "06-job-aif-pt-pt-r1-p0-c.yaml"]


def test_check_mode_render_writes_nothing(module, tmp_path):
    res = call({"kind": "env_probe", "hosts": NODES, "image": IMAGE, "render_dir": str(tmp_path / "out"),
                "run_id": "chk", "_ansible_check_mode": True})
    assert res.kwargs["changed"] is False and len(res.kwargs["files"]) == 4
    assert not os.path.exists(str(tmp_path / "out"))
    assert res.kwargs["objects"][0] == "ConfigMap/default/aif-chk-code"


@pytest.mark.parametrize("args,needle", [
    ({"kind": "env_probe", "hosts": NODES}, "image"),
    ({"state": "absent"}, "run_id"),
    ({"kind": "env_probe", "image": IMAGE, "render_dir": "/tmp/x", "label_selector": "a=b"}, "render mode needs hosts"),
    ({"kind": "perftest_sweep", "image": IMAGE, "hosts": NODES, "render_dir": "/tmp/x", "perftest_sweep": {"hcas": ["m"]}},
     "needs rounds"),
    ({"kind": "env_probe", "image": IMAGE, "hosts": NODES, "render_dir": "/tmp/x", "run_id": "Bad_Id"}, "run_id"),
    ({"kind": "gemm_bench", "image": IMAGE, "hosts": NODES, "render_dir": "/tmp/x", "gemm_bench": {"dtype": ["bf16"]}},
     "unknown option 'dtype'"),
])
def test_bad_input_is_a_clear_failure(module, args, needle):
    res = call(args)
    assert res.failed and needle in res.kwargs["msg"]


def test_connection_options_are_kubernetes_core_names():
    spec = k8s_workload.argument_spec()
    for name in ("kubeconfig", "context", "host", "api_key", "validate_certs", "ca_cert", "client_cert",
                 "client_key", "proxy", "no_proxy", "proxy_headers", "username", "password"):
        assert name in spec, name
    assert spec["api_key"]["no_log"] is True and "verify_ssl" in spec["validate_certs"]["aliases"]
    doc = yaml.safe_load(k8s_workload.DOCUMENTATION)["options"]
    doc.update(yaml.safe_load(_k8s_auth.ModuleDocFragment.DOCUMENTATION)["options"])   # the shared fragment
    assert set(doc) == set(spec)                      # every option documented, nothing undocumented


def test_run_mode_without_a_cluster_says_so(monkeypatch, tmp_path):
    patch_exits(monkeypatch)
    for name in ("KUBECONFIG", "K8S_AUTH_KUBECONFIG", "K8S_AUTH_HOST", "KUBERNETES_SERVICE_HOST"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    res = call({"kind": "env_probe", "hosts": NODES, "image": IMAGE, "kubeconfig": str(tmp_path / "missing")})
    assert res.failed and "kubeconfig" in res.kwargs["msg"] and res.kwargs["run_id"].startswith("r")
