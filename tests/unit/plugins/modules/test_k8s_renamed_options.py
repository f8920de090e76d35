# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The renamed options of k8s_device_plugin, k8s_preflight and k8s_node_verdicts (issue 23, docs/glossary.md) reach
the code that uses them, and the retired names are refused (no aliases)."""

from __future__ import annotations

import pytest

from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_api
from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_node_verdicts as nv
from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_preflight as pf
from ansible_collections.aifabric.acceptance.plugins.modules import k8s_device_plugin, k8s_node_verdicts, k8s_preflight
from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules.module_harness import patch_exits, run_main

RESOURCE = {"name": "hca_shared_devices_a", "selectors": {"vendors": ["15b3"], "linkTypes": ["ether"]}}


@pytest.fixture
def no_cluster(monkeypatch):
    """exit/fail raise; connecting to a cluster returns a marker object (the tests replace what would use it)."""
    patch_exits(monkeypatch)
    api = object()
    monkeypatch.setattr(k8s_api, "connect", lambda _params: api)
    return api


def test_preflight_passes_hosts_label_selector_and_expect_gpu_count(no_cluster, monkeypatch):
    seen = {}

    def collect(api, **kwargs):
        seen.update(kwargs, api=api)
        return []
    monkeypatch.setattr(pf, "collect", collect)
    res = run_main(k8s_preflight.main, {"hosts": ["gpu-node-01"], "namespace": "training",
                                        "label_selector": "job=llm", "expect": {"gpu_count": 8}})
    assert not res.failed, res.kwargs
    assert seen == {"api": no_cluster, "nodes": ["gpu-node-01"], "namespace": "training", "selector": "job=llm",
                    "expect_gpus": 8}


def test_preflight_without_expect_judges_no_gpu_count(no_cluster, monkeypatch):
    seen = {}
    monkeypatch.setattr(pf, "collect", lambda api, **kwargs: seen.update(kwargs) or [])
    assert not run_main(k8s_preflight.main, {}).failed
    assert seen["expect_gpus"] is None and seen["nodes"] == []


@pytest.mark.parametrize("args, words", [
    ({"expect": {"gpu_count": -1}}, ["expect.gpu_count must be >= 0, got -1"]),
    ({"expect": {"hca_count": 2}}, ["hca_count", "gpu_count"]),          # a key the preflight does not judge
    ({"label_selector": "job=llm"}, ["label_selector", "namespace"]),     # the selector needs the namespace
    ({"namespace": "t", "label_selector": "job in (a)"}, ["job in (a)"]),
    ({"selector": "job=llm", "namespace": "t"}, ["selector"]),            # retired names, no aliases
    ({"nodes": ["gpu-node-01"]}, ["nodes"]),
    ({"expect_gpus": 8}, ["expect_gpus"]),
])
def test_preflight_refuses_bad_and_retired_options(no_cluster, monkeypatch, args, words):
    monkeypatch.setattr(pf, "collect", lambda *_a, **_k: pytest.fail("collect must not run"))
    res = run_main(k8s_preflight.main, args)
    assert res.failed
    for word in words:
        assert word in res.kwargs["msg"], res.kwargs["msg"]


def test_device_plugin_render_mode_takes_resource_list_and_periodic_update_interval_s(tmp_path, no_cluster):
    res = run_main(k8s_device_plugin.main, {"render_dir": str(tmp_path / "m"), "resource_list": [RESOURCE],
                                            "periodic_update_interval_s": 30, "_ansible_check_mode": True})
    assert not res.failed, res.kwargs
    assert res.kwargs["config"]["periodicUpdateInterval"] == 30
    assert res.kwargs["resources"] == ["rdma/hca_shared_devices_a"]


@pytest.mark.parametrize("args, words", [
    ({"resource_list": [RESOURCE], "periodic_update_interval_s": -1}, ["periodic_update_interval_s must be >= 0"]),
    ({}, ["resource_list", "probe_records"]),                              # nothing to build the config from
    ({"resources": [RESOURCE]}, ["resources"]),                           # retired names, no aliases
    ({"resource_list": [RESOURCE], "nodes": ["gpu-node-01"]}, ["nodes"]),
    ({"resource_list": [RESOURCE], "verify_timeout": 5}, ["verify_timeout"]),
    ({"resource_list": [RESOURCE], "delete_timeout": 5}, ["delete_timeout"]),
    ({"resource_list": [RESOURCE], "periodic_update_interval": 5}, ["periodic_update_interval"]),
])
def test_device_plugin_refuses_bad_and_retired_options(tmp_path, no_cluster, args, words):
    res = run_main(k8s_device_plugin.main, dict(args, render_dir=str(tmp_path / "m"), _ansible_check_mode=True))
    assert res.failed
    for word in words:
        assert word in res.kwargs["msg"], res.kwargs["msg"]


def test_device_plugin_verifies_the_hosts_within_verify_timeout_s(no_cluster, monkeypatch):
    seen = {}
    monkeypatch.setattr(k8s_device_plugin.dp, "apply", lambda api, objects, **_k: [])

    def verify(api, namespace, name, nodes, names, **kwargs):
        seen.update(nodes=nodes, names=names, timeout_s=kwargs["timeout_s"])
        return []
    monkeypatch.setattr(k8s_device_plugin.dp, "verify", verify)
    res = run_main(k8s_device_plugin.main, {"resource_list": [RESOURCE], "hosts": ["gpu-node-01", "gpu-node-02"],
                                            "verify_timeout_s": 7})
    assert not res.failed, res.kwargs
    assert seen == {"nodes": ["gpu-node-01", "gpu-node-02"], "names": ["rdma/hca_shared_devices_a"], "timeout_s": 7}


def test_device_plugin_removal_waits_delete_timeout_s(no_cluster, monkeypatch):
    seen = {}

    def remove(api, objects, check_mode, timeout_s):
        seen["timeout_s"] = timeout_s
        return [{"object": "DaemonSet/kube-system/rdma-shared-dp-ds", "action": "still present"}]
    monkeypatch.setattr(k8s_device_plugin.dp, "remove", remove)
    res = run_main(k8s_device_plugin.main, {"state": "absent", "delete_timeout_s": 9})
    assert res.failed and seen == {"timeout_s": 9}
    assert res.kwargs["msg"].startswith("still present after 9 s"), res.kwargs["msg"]


def test_the_device_plugin_tolerates_the_gpu_operator_taint_by_default(tmp_path, no_cluster):
    res = run_main(k8s_device_plugin.main, {"render_dir": str(tmp_path / "m"), "resource_list": [RESOURCE]})
    assert not res.failed, res.kwargs
    with open(res.kwargs["files"][1], encoding="utf-8") as fh:
        text = fh.read()
    assert "key: nvidia.com/gpu" in text and "effect: NoSchedule" in text and "operator: Exists" in text


def test_node_verdicts_clears_the_hosts(no_cluster, monkeypatch):
    seen = {}
    monkeypatch.setattr(nv, "remove", lambda api, nodes, check_mode: seen.update(nodes=nodes) or [])
    res = run_main(k8s_node_verdicts.main, {"state": "absent", "hosts": ["gpu-node-03"]})
    assert not res.failed, res.kwargs
    assert seen == {"nodes": ["gpu-node-03"]}
    assert run_main(k8s_node_verdicts.main, {"state": "absent", "nodes": ["gpu-node-03"]}).failed
