# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The device plugin's pure parts: probe records -> devices -> selectors, the plugin's selection rule and the
causes it explains, the config checks the plugin itself applies at start, and the manifests (kubernetes-validate
strict on the oldest and newest supported Kubernetes). Probe records come from the real CX-4 host's captures
(test_env_probe.cx4_infiniband)."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.aifabric.acceptance.plugins.module_utils import env_probe, results
from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_device_plugin as dp
from ansible_collections.aifabric.acceptance.tests.unit.plugins.module_utils import k8s_cases as cases
from ansible_collections.aifabric.acceptance.tests.unit.plugins.module_utils import test_env_probe as tep


def cx4_records(tmp_path, host="gpu-node-01", ids=True):
    root = tep.cx4_infiniband(tmp_path)
    if ids:     # CA type MT4115 of the capture = PCI device 0x1013 of vendor 0x15b3
        for hca in ("mlx5_0", "mlx5_1"):
            tep.put(root, "/sys/class/infiniband/%s/device/vendor" % hca, "0x15b3\n")
            tep.put(root, "/sys/class/infiniband/%s/device/device" % hca, "0x1013\n")
    return results.with_host(env_probe.probe(tep.host_for(root), {"groups": ["rdma"]}), host)


def test_devices_from_real_probe_records(tmp_path):
    devices = dp.devices_from_records(cx4_records(tmp_path))
    assert devices == {"gpu-node-01": [
        {"hca": "mlx5_0", "port": 1, "vendor": "15b3", "deviceID": "1013", "ifName": "ens11f0", "linkType": "ether",
         "driver": None},
        {"hca": "mlx5_1", "port": 1, "vendor": "15b3", "deviceID": "1013", "ifName": None, "linkType": "infiniband",
         "driver": None}]}


def test_generated_selectors_select_exactly_the_visible_ports(tmp_path):
    devices = dp.devices_from_records(cx4_records(tmp_path))
    (entry,) = dp.generate_config_list(devices)
    # mlx5_1 has no netdev: the plugin (which walks PCI network functions) cannot see it, so it does not widen
    # the selectors to InfiniBand
    assert entry["selectors"] == {"vendors": ["15b3"], "deviceIDs": ["1013"], "linkTypes": ["ether"]}
    assert [d["ifName"] for d in devices["gpu-node-01"] if dp.selector_match(d, entry["selectors"])] == ["ens11f0"]
    rails = dp.generate_config_list(devices, per_rail=True, resource_name="rail")
    assert [(e["resourceName"], e["selectors"]["ifNames"]) for e in rails] == [("rail_mlx5_0", ["ens11f0"])]
    dp.check_config_list(rails)


def test_no_probe_facts_is_a_clear_error(tmp_path):
    with pytest.raises(dp.PluginError, match="run the env probe on them first"):
        dp.generate_config_list(dp.devices_from_records(cx4_records(tmp_path, ids=False)[:1]))


def test_explain_names_each_cause(tmp_path):
    devs = dp.devices_from_records(cx4_records(tmp_path))["gpu-node-01"]
    assert dp.explain(devs, {"vendors": ["15b3"], "linkTypes": ["ether"]})[0] == "matched"
    cause, text = dp.explain(devs, {"vendors": ["15b3"], "ifNames": ["ens11f0"], "linkTypes": ["infiniband"]})
    assert cause == "link_layer" and "mlx5_0/1 (ens11f0 15b3:1013 ether) is ether" in text
    cause, text = dp.explain(devs, {"deviceIDs": ["1021"]})
    assert cause == "no_match" and "15b3:1013" in text
    assert dp.explain(devs, {"drivers": ["mlx5_core"]})[0] == "unknown"
    assert dp.explain([], {"vendors": ["15b3"]})[0] == "no_facts"


@pytest.mark.parametrize("entry,message", [
    ({"resourceName": "hca-a", "rdmaHcaMax": 1, "selectors": {"vendors": ["15b3"]}}, "letters, digits and '_'"),
    ({"resourceName": "a", "rdmaHcaMax": 0, "selectors": {"vendors": ["15b3"]}}, "rdmaHcaMax must be a positive"),
    ({"resourceName": "a", "rdmaHcaMax": 1, "selectors": {}}, "has no selector"),
    ({"resourceName": "a", "rdmaHcaMax": 1, "selectors": {"vendor": ["15b3"]}}, "unknown selector"),
    ({"resourceName": "a", "rdmaHcaMax": 1, "selectors": {"vendors": "15b3"}}, "must be a list of strings"),
    ({"resourceName": "a", "rdmaHcaMax": 1, "selectors": {"linkTypes": ["IB"]}}, "infiniband"),
])
def test_config_checks_of_the_plugin_fail_early(entry, message):
    with pytest.raises(dp.PluginError, match=message):
        dp.check_config_list([entry])


def test_duplicate_resource_names_are_refused():
    entry = {"resourceName": "a", "rdmaHcaMax": 1, "selectors": {"vendors": ["15b3"]}}
    with pytest.raises(dp.PluginError, match="given twice"):
        dp.check_config_list([entry, dict(entry)])


def _objects(**kwargs):
    cfg = dp.config([{"resourceName": "hca_shared_devices_a", "resourcePrefix": "rdma", "rdmaHcaMax": 63,
                      "selectors": {"vendors": ["15b3"], "deviceIDs": ["1021"], "linkTypes": ["ether"]}}], 300)
    return cfg, dp.manifests(cfg, **kwargs)


@pytest.mark.parametrize("version", cases.K8S_VERSIONS)
@pytest.mark.parametrize("kwargs", [
    {}, {"node_selector": {dp.NFD_LABEL: "true"}, "use_cdi": True, "image_pull_secrets": ["reg"],
         "tolerations": [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]},
    {"priority_class": "", "tag": ""}], ids=["default", "all-knobs", "bare"])
def test_manifests_validate_strict(version, kwargs):
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    _cfg, objects = _objects(**kwargs)
    for obj in objects:
        kubernetes_validate.validate(copy.deepcopy(obj), version, strict=True)


def test_manifests_match_upstream_and_carry_the_config_hash():
    cfg, (cm, ds) = _objects(node_selector={dp.NFD_LABEL: "true"})
    assert json.loads(cm["data"]["config.json"]) == cfg
    assert cfg["periodicUpdateInterval"] == 300
    spec = ds["spec"]["template"]["spec"]
    assert spec["hostNetwork"] is True and spec["priorityClassName"] == "system-node-critical"
    assert spec["containers"][0]["securityContext"] == {"privileged": True}
    assert [m["mountPath"] for m in spec["containers"][0]["volumeMounts"]] == [
        "/var/lib/kubelet/device-plugins", "/var/lib/kubelet/plugins_registry", dp.CONFIG_DIR, "/dev/"]
    assert spec["nodeSelector"] == {dp.NFD_LABEL: "true"}
    assert ds["spec"]["selector"]["matchLabels"] == {"name": dp.NAME}
    assert ds["spec"]["template"]["metadata"]["labels"]["name"] == dp.NAME
    # another config -> another pod template (the plugin reads its config only at start: pods must roll)
    other = dp.manifests(dp.config(cfg["configList"], 60))[1]
    assert other["spec"]["template"]["metadata"]["annotations"] != ds["spec"]["template"]["metadata"]["annotations"]
    assert dp.resource_names(cfg) == ["rdma/hca_shared_devices_a"]


def test_holds_ignores_server_defaults_but_not_changes():
    _cfg, (_cm, ds) = _objects()
    live = copy.deepcopy(ds)
    live["metadata"].update(uid="u", resourceVersion="7", generation=3)
    live["spec"]["template"]["spec"]["containers"][0]["terminationMessagePath"] = "/dev/termination-log"
    live["spec"]["revisionHistoryLimit"] = 10
    assert dp.holds(live, ds)
    live["spec"]["template"]["spec"]["containers"][0]["image"] = "other:1"
    assert not dp.holds(live, ds)


def test_node_selected_reasons():
    _cfg, (_cm, ds) = _objects(node_selector={dp.NFD_LABEL: "true"},
                               tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}])
    node = {"metadata": {"name": "n", "labels": {dp.NFD_LABEL: "true"}}, "spec": {}}
    assert dp.node_selected(node, ds) is None
    assert "lacks label" in dp.node_selected({"metadata": {"name": "n", "labels": {}}}, ds)
    node["spec"]["taints"] = [{"key": "nvidia.com/gpu", "effect": "NoSchedule"}]
    assert dp.node_selected(node, ds) is None
    node["spec"]["taints"].append({"key": "maintenance", "value": "yes", "effect": "NoExecute"})
    assert "taint maintenance=yes:NoExecute" in dp.node_selected(node, ds)


@pytest.mark.parametrize("labels, selected", [
    ({"feature.node.kubernetes.io/rdma.available": "true"}, True),            # NFD >= v0.14
    ({"feature.node.kubernetes.io/custom-rdma.available": "true"}, True),     # NFD < v0.14
    ({"feature.node.kubernetes.io/pci-15b3.present": "true"}, True),          # network-operator's NFD config
    ({"feature.node.kubernetes.io/rdma.capable": "true"}, False),             # an HCA, modules not loaded
    ({"feature.node.kubernetes.io/rdma.available": "false"}, False),
    ({}, False)])
def test_default_placement_is_a_node_affinity_accepting_each_nfd_label(labels, selected):
    _cfg, (_cm, ds) = _objects()
    spec = ds["spec"]["template"]["spec"]
    assert "nodeSelector" not in spec
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert [t["matchExpressions"][0]["key"] for t in terms] == list(dp.RDMA_NODE_LABELS)
    why = dp.node_selected({"metadata": {"name": "n", "labels": labels}, "spec": {}}, ds)
    assert (why is None) == selected, why
    if not selected:
        assert "required node affinity" in why and "feature.node.kubernetes.io/rdma.available In true" in why
    # an explicit node selector replaces the affinity; {} and node_label_keys=[] select every node
    assert "affinity" not in _objects(node_selector={"a": "b"})[1][1]["spec"]["template"]["spec"]
    for kwargs in ({"node_selector": {}}, {"node_label_keys": []}):
        every = _objects(**kwargs)[1][1]["spec"]["template"]["spec"]
        assert "affinity" not in every and "nodeSelector" not in every


def test_use_cdi_mounts_the_cdi_directory_as_upstreams_overlay():
    _cfg, (_cm, ds) = _objects(use_cdi=True)
    spec = ds["spec"]["template"]["spec"]
    assert spec["containers"][0]["args"] == ["--use-cdi"]
    assert {"name": "dynamic-cdi", "mountPath": "/var/run/cdi"} in spec["containers"][0]["volumeMounts"]
    assert {"name": "dynamic-cdi", "hostPath": {"path": "/var/run/cdi", "type": "DirectoryOrCreate"}} in spec["volumes"]
    plain = _objects()[1][1]["spec"]["template"]["spec"]
    assert "args" not in plain["containers"][0] and "dynamic-cdi" not in [v["name"] for v in plain["volumes"]]


def test_a_patch_clears_the_placement_fields_no_longer_wanted():
    """An old DaemonSet with the custom-rdma nodeSelector: the patch sends nodeSelector null (a merge patch keeps
    what it does not name) next to the affinity, and the live object is then not held."""
    _cfg, (_cm, old) = _objects(node_selector={dp.NFD_LEGACY_LABEL: "true"},
                                tolerations=[{"key": "nvidia.com/gpu", "operator": "Exists"}])
    _cfg, (_cm, new) = _objects()
    body = dp._with_nulls(old, new)
    spec = body["spec"]["template"]["spec"]
    assert spec["nodeSelector"] is None and spec["tolerations"] is None and spec["affinity"]
    assert "nodeSelector" not in new["spec"]["template"]["spec"]          # the desired object itself is untouched
    assert not dp.holds(old, body)
    assert dp._with_nulls(new, new) is new and dp._with_nulls(None, new) is new


def test_expected_counts_are_the_configs_rdma_hca_max():
    cfg, _objs = _objects()
    assert dp.expected_counts(cfg) == {"rdma/hca_shared_devices_a": 63}


_json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                            lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner,
                                                                                        max_size=3), max_leaves=12)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.fixed_dictionaries({"check": st.sampled_from(["rdma.port", "rdma.inventory", None]),
                                       "host": _json_values, "target": _json_values,
                                       "facts": _json_values | st.fixed_dictionaries({
                                           "link_layer": _json_values, "netdevs": _json_values,
                                           "netdev": _json_values, "vendor_id": _json_values,
                                           "device_id": _json_values, "driver": _json_values})}), max_size=4))
def test_devices_from_records_never_raises(records):
    devices = dp.devices_from_records(records)
    for devs in devices.values():
        for dev in devs:
            dp.explain([dev], {"vendors": ["15b3"], "linkTypes": ["ether"]})
