# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One option name, one meaning across the Kubernetes modules and the device-plugin role (issue 22, review item 2):
``node_labels`` is k8s_workload's nodeSelector mapping; the device plugin's list of any-of label keys is
``node_label_keys`` (its mapping form is ``node_selector``); k8s_workload's text selector of nodes is ``label_selector``."""

from __future__ import annotations

import os

import yaml

from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_device_plugin as dp
from ansible_collections.aifabric.acceptance.plugins.modules import k8s_device_plugin, k8s_preflight, k8s_workload

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
MODULES = (k8s_workload, k8s_device_plugin, k8s_preflight)


def _shape(spec):
    return (spec.get("type", "str"), spec.get("elements"))


def test_node_labels_has_one_type_in_the_kubernetes_modules():
    seen = {}
    for module in MODULES:
        for name, spec in module.argument_spec().items() if hasattr(module, "argument_spec") else ():
            seen.setdefault(name, {})[module.__name__.rsplit(".", 1)[-1]] = _shape(spec)
    mixed = dict((name, by) for name, by in seen.items() if len(set(by.values())) > 1)
    # node_selector is a nodeSelector mapping wherever it is an option (k8s_workload's node-choosing text is
    # label_selector), resources the extended resources of a pod (the device plugin's resource pools are its
    # resource_list) and hosts the node names (issue 23)
    assert not mixed, mixed
    assert "node_labels" not in mixed, mixed["node_labels"]
    assert "node_selector" not in mixed, mixed["node_selector"]
    assert "node_selector" not in k8s_workload.argument_spec()
    assert k8s_workload.argument_spec()["label_selector"] == dict(type="str")


def test_the_device_plugins_label_keys_option():
    spec = k8s_device_plugin.argument_spec()
    assert "node_labels" not in spec
    assert spec["node_label_keys"] == dict(type="list", elements="str", default=list(dp.RDMA_NODE_LABELS), no_log=False)
    assert _shape(spec["node_selector"]) == ("dict", None)
    cfg = dp.config([{"resourceName": "hca", "rdmaHcaMax": 100, "selectors": {"ifNames": ["ib0"]}}], 60)
    daemonset = dp.manifests(cfg, node_label_keys=["example.com/rdma"])[1]
    terms = daemonset["spec"]["template"]["spec"]["affinity"]["nodeAffinity"][
        "requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert [t["matchExpressions"][0]["key"] for t in terms] == ["example.com/rdma"]


def test_the_role_passes_the_renamed_variable():
    role = os.path.join(ROOT, "roles", "rdma_device_plugin")
    with open(os.path.join(role, "meta", "argument_specs.yml"), encoding="utf-8") as handle:
        options = yaml.safe_load(handle)["argument_specs"]["main"]["options"]
    with open(os.path.join(role, "defaults", "main.yml"), encoding="utf-8") as handle:
        defaults = yaml.safe_load(handle)
    with open(os.path.join(role, "tasks", "main.yml"), encoding="utf-8") as handle:
        tasks = handle.read()
    assert "rdma_device_plugin_node_labels" not in options and "rdma_device_plugin_node_labels" not in defaults
    assert options["rdma_device_plugin_node_label_keys"]["type"] == "list"
    assert defaults["rdma_device_plugin_node_label_keys"] == list(dp.RDMA_NODE_LABELS)
    assert "node_label_keys: \"{{ rdma_device_plugin_node_label_keys }}\"" in tasks
