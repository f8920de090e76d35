# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Mellanox/NVIDIA ``k8s-rdma-shared-dev-plugin`` on Kubernetes (private; controller side).

Pure parts (no I/O):

- ``devices_from_records(records) -> {node: [device]}`` - the RDMA ports of each node from
  ``rdma.port`` records of the env probe (``host`` = node), as the plugin sees them: one device
  per netdev of a port, ``{"hca", "port", "vendor", "deviceID", "ifName", "linkType", "driver"}``
  (``linkType`` in the plugin's netlink words ``infiniband``/``ether``; ``driver`` None: the
  probe does not read it).
- ``generate_config_list(devices, resource_name, prefix, hca_max, per_rail)`` - ``configList``
  entries whose selectors match exactly those devices (vendors, deviceIDs, linkTypes; per rail
  also the rail's ifNames, one resource per HCA name).
- ``selector_match(device, selectors)`` / ``explain(devices, selectors)`` - the plugin's own
  selection rule (elements of one selector ORed, selectors ANDed; ``devices`` = ifNames).
- ``config(...)``, ``config_json(config)``, ``manifests(...)`` - the ConfigMap ``config.json``
  and the DaemonSet (upstream ``deployment/k8s/base``, with image/tag, priority class,
  tolerations, placement and a pod annotation carrying the config's SHA-256 so a changed
  config rolls the plugin pods: the plugin reads its config only at start). Placement: a required
  node affinity accepting any of ``RDMA_NODE_LABELS`` (NFD >= v0.14 ``rdma.available``, NFD < v0.14
  ``custom-rdma.available``, ``pci-15b3.present``) unless a node selector is given; ``use_cdi`` adds
  ``--use-cdi`` and the ``/var/run/cdi`` hostPath (upstream ``deployment/k8s/overlay``).
- ``node_selected(node, daemonset)`` - why the DaemonSet does or does not place a pod on a node.
- ``expected_counts(config)`` - the allocatable count each resource shows where it works (rdmaHcaMax).

API parts (the official client through ``k8s_api``; plain dicts):

- ``apply(api, objects, check_mode, adopt)`` - create or merge-patch each object so that it holds
  the desired fields (idempotent: nothing is sent when the live object already holds them);
  ``remove(api, namespace, names, check_mode)`` - delete them (only objects this collection manages).
- ``verify(api, namespace, name, nodes, resources, devices, timeout_s, expected=...)`` - waits until the
  DaemonSet is ready on every node and every node's allocatable shows every resource at the count
  the config publishes (> 0 where unknown; right after a config roll the Node still shows the old
  count until the kubelet's next node-status update), then
  returns one ``k8s.rdma_device_plugin`` record per node and resource (``host`` = node,
  ``target`` = the resource); a failing node's record names the likely cause: node missing,
  not selected (label/taint), no plugin pod, plugin pod not running (crash loop, with its last
  log lines), selector matching no device, port in the wrong link layer, or devices matched but
  nothing exposed (missing RDMA char devices, kubelet registration), or another count than the config's.
- ``render(objects, directory)`` - render mode: the manifests as YAML files, no API server.

Python 3.8 syntax; imports nothing from Ansible.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import time

from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_api, k8s_run, results, statedir
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import AcceptanceError

CHECK = "k8s.rdma_device_plugin"
NAME = "rdma-shared-dp-ds"
CONFIG_MAP = "rdma-devices"
NAMESPACE = "kube-system"
IMAGE = "ghcr.io/mellanox/k8s-rdma-shared-dev-plugin"
TAG = "v1.5.3"
# node labels of RDMA-capable nodes, any one of them = "true" places the plugin (a required node affinity, one term
# each): node-feature-discovery >= v0.14 (source/custom/static_features.go: kernel modules ib_uverbs and rdma_ucm
# loaded), NFD < v0.14 (the same rule, "custom-" prefixed), and NFD's pci source with network-operator's
# deviceLabelFields [vendor] (a Mellanox/NVIDIA networking PCI device, vendor 15b3)
NFD_LABEL = "feature.node.kubernetes.io/rdma.available"
NFD_LEGACY_LABEL = "feature.node.kubernetes.io/custom-rdma.available"
PCI_MELLANOX_LABEL = "feature.node.kubernetes.io/pci-15b3.present"
RDMA_NODE_LABELS = (NFD_LABEL, NFD_LEGACY_LABEL, PCI_MELLANOX_LABEL)
# the default tolerations of the plugin pods: the GPU operator taints GPU nodes nvidia.com/gpu:NoSchedule, and the
# plugin must run on exactly those nodes (the module's default, which the rdma_device_plugin role repeats)
GPU_TOLERATIONS = ({"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"},)
CONTAINER = "k8s-rdma-shared-dp-ds"
CDI_DIR = "/var/run/cdi"
# pod-spec fields manifests() sets only when asked: a patch must clear them when they are no longer wanted
OPTIONAL_POD_FIELDS = ("nodeSelector", "affinity", "tolerations", "imagePullSecrets", "priorityClassName")
CONFIG_DIR = "/k8s-rdma-shared-dev-plugin"
RESOURCE_NAME = "hca_shared_devices_a"
RESOURCE_PREFIX = "rdma"
HCA_MAX = 1000
SELECTOR_KEYS = ("vendors", "deviceIDs", "drivers", "ifNames", "linkTypes")
# env_probe's link_layer (sysfs) -> the plugin's linkTypes value (netlink EncapType)
LINK_TYPES = {"infiniband": "infiniband", "ethernet": "ether"}
HASH_ANNOTATION = "aifabric.acceptance/config-sha256"
COMPONENT_LABEL = "app.kubernetes.io/component"
COMPONENT = "rdma-shared-device-plugin"
_RESOURCE_NAME = re.compile(r"^[A-Za-z0-9_]+$")     # the plugin's validResourceName
TOOL = {"name": "k8s-rdma-shared-dev-plugin"}


class PluginError(AcceptanceError):
    """Bad input for the device plugin (selectors, names): the message says what to change."""


# ---------------------------------------------------------------- facts -> devices -> selectors

def devices_from_records(records):
    """{node: [device]} from env_probe ``rdma.port`` records (other records are ignored)."""
    out = {}
    for rec in records or []:
        if not isinstance(rec, dict) or rec.get("check") != "rdma.port" or not isinstance(rec.get("host"), str) \
                or not rec["host"]:
            continue
        facts = rec.get("facts") if isinstance(rec.get("facts"), dict) else {}
        target = str(rec.get("target") or "")
        hca, _sep, port = target.partition("/")
        link = LINK_TYPES.get(str(facts.get("link_layer") or "").lower())
        raw = facts.get("netdevs") if isinstance(facts.get("netdevs"), list) else []
        netdevs = [str(n["name"]) for n in raw if isinstance(n, dict) and n.get("name")]
        if not netdevs and facts.get("netdev"):
            netdevs = [str(facts["netdev"])]
        for ifname in netdevs or [None]:
            out.setdefault(rec["host"], []).append({
                "hca": hca or None, "port": int(port) if port.isdigit() and port.isascii() else None,
                "vendor": _hex(facts.get("vendor_id")), "deviceID": _hex(facts.get("device_id")),
                "ifName": ifname, "linkType": link,
                "driver": facts["driver"] if isinstance(facts.get("driver"), str) else None})
    return out


def _hex(value):
    if not isinstance(value, str):
        return None
    value = value.strip().lower()
    return value[2:] if value.startswith("0x") else (value or None)


def _sorted_set(values):
    return sorted(set(v for v in values if v))


def resource_name_for(base, rail):
    """``<base>_<rail>`` with every character the plugin rejects replaced by ``_``."""
    return re.sub(r"[^A-Za-z0-9_]", "_", "%s_%s" % (base, rail))


def generate_config_list(devices, resource_name=RESOURCE_NAME, prefix=RESOURCE_PREFIX, hca_max=HCA_MAX,
                         per_rail=False):
    """``configList`` entries whose selectors select the devices seen on the nodes.

    One resource (vendors, deviceIDs and linkTypes of every device), or with ``per_rail`` one
    resource per HCA name (rail), adding that rail's netdev names (``ifNames``). Devices without
    a netdev are invisible to the plugin (it walks PCI network functions) and are left out.
    Raises PluginError when no device with a netdev is known.
    """
    seen = [d for devs in (devices or {}).values() for d in devs if d.get("ifName")]
    if not seen:
        raise PluginError("no RDMA port with a network device in probe_records (the env probe's rdma.port records of "
                          "the nodes): run the env probe on them first, or give resource_list (each resource with its "
                          "selectors)")

    def selectors(devs, names):
        sel = {"vendors": _sorted_set(d["vendor"] for d in devs),
               "deviceIDs": _sorted_set(d["deviceID"] for d in devs),
               "linkTypes": _sorted_set(d["linkType"] for d in devs)}
        if names:
            sel["ifNames"] = _sorted_set(d["ifName"] for d in devs)
        return dict((k, v) for k, v in sel.items() if v)

    if not per_rail:
        return [{"resourceName": resource_name, "resourcePrefix": prefix, "rdmaHcaMax": hca_max,
                 "selectors": selectors(seen, False)}]
    rails = {}
    for dev in seen:
        rails.setdefault(dev["hca"] or dev["ifName"], []).append(dev)
    return [{"resourceName": resource_name_for(resource_name, rail), "resourcePrefix": prefix, "rdmaHcaMax": hca_max,
             "selectors": selectors(rails[rail], True)} for rail in sorted(rails)]


def selector_match(device, selectors, ignore=()):
    """True/False: does the plugin select ``device``; None when a selector needs a fact we lack (driver)."""
    unknown = False
    for key in SELECTOR_KEYS:
        wanted = (selectors or {}).get(key)
        if not wanted or key in ignore:
            continue
        have = device.get({"vendors": "vendor", "deviceIDs": "deviceID", "drivers": "driver", "ifNames": "ifName",
                           "linkTypes": "linkType"}[key])
        if have is None:
            unknown = True
        elif have not in wanted:
            return False
    return None if unknown else True


def explain(devices, selectors):
    """Why the selectors give this node's ``devices`` zero or more devices: (cause, text).

    cause: ``matched`` (some device is selected), ``link_layer`` (selected but for linkTypes),
    ``no_match``, ``unknown`` (a selector needs a fact the probe does not read), ``no_facts``.
    """
    if not devices:
        return "no_facts", "no env_probe facts (rdma.port records) for this node"
    hit = [d for d in devices if selector_match(d, selectors)]
    if hit:
        return "matched", "the selectors match %s" % ", ".join(_dev(d) for d in hit)
    if selectors.get("linkTypes"):
        almost = [d for d in devices if selector_match(d, selectors, ignore=("linkTypes",))]
        if almost:
            return "link_layer", "port in the wrong link layer: %s, but the selector wants linkTypes %s" % (
                ", ".join("%s is %s" % (_dev(d), d["linkType"] or "of unknown link layer") for d in almost),
                selectors["linkTypes"])
    if any(selector_match(d, selectors) is None for d in devices):
        return "unknown", "the selectors need a fact the env probe does not read (drivers); devices: %s" % (
            ", ".join(_dev(d) for d in devices))
    return "no_match", "selector matches no device of this node: it has %s; selectors %s" % (
        ", ".join(_dev(d) for d in devices), json.dumps(selectors, sort_keys=True))


def _dev(d):
    return "%s/%s (%s %s:%s %s)" % (
        d.get("hca"), d.get("port"), d.get("ifName"), d.get("vendor"), d.get("deviceID"), d.get("linkType"))


# ---------------------------------------------------------------- config and manifests

def check_config_list(config_list):
    """The plugin's own start-up checks (ValidateConfigs), so a bad config fails here, not in a crash loop."""
    if not config_list:
        raise PluginError("no resources: give at least one in resource_list (or probe_records to generate them from)")
    names = set()
    for entry in config_list:
        name = entry.get("resourceName")
        if not isinstance(name, str) or not _RESOURCE_NAME.match(name):
            raise PluginError("resource name %r is invalid: the plugin accepts letters, digits and '_' only" % (name,))
        if name in names:
            raise PluginError("resource name %r is given twice" % name)
        names.add(name)
        if not isinstance(entry.get("rdmaHcaMax"), int) or entry["rdmaHcaMax"] < 1:
            raise PluginError("resource %s: rdmaHcaMax must be a positive integer (the number of pods that may share "
                              "the devices), got %r" % (name, entry.get("rdmaHcaMax")))
        sel = entry.get("selectors") or {}
        unknown = set(sel) - set(SELECTOR_KEYS)
        if unknown:
            raise PluginError("resource %s: unknown selector(s) %s (known: %s)" % (
                name, ", ".join(sorted(unknown)), ", ".join(SELECTOR_KEYS)))
        for key, value in sel.items():
            if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
                raise PluginError("resource %s: selector %s must be a list of strings, got %r" % (name, key, value))
        if not any(sel.values()):
            raise PluginError("resource %s has no selector: it would match nothing (the plugin refuses to start)" % name)
        bad = [v for v in sel.get("linkTypes") or [] if v not in LINK_TYPES.values()]
        if bad:
            raise PluginError("resource %s: linkTypes %s: the plugin compares the netlink link type, %s" % (
                name, bad, " or ".join(sorted(LINK_TYPES.values()))))
    return config_list


def normalize_resources(resources, prefix=RESOURCE_PREFIX, hca_max=HCA_MAX):
    """Module-style resource dicts (name, prefix, rdma_hca_max, selectors) -> configList entries."""
    out = []
    for res in resources or []:
        sel = dict((k, list(v)) for k, v in (res.get("selectors") or {}).items() if v)
        out.append({"resourceName": res.get("name"), "resourcePrefix": res.get("prefix") or prefix,
                    "rdmaHcaMax": res.get("rdma_hca_max") or hca_max, "selectors": sel})
    return out


def config(config_list, periodic_update_interval=60):
    return {"periodicUpdateInterval": periodic_update_interval, "configList": check_config_list(config_list)}


def config_json(cfg):
    """The ``config.json`` text: stable (sorted keys) so the same config always gives the same ConfigMap."""
    return json.dumps(cfg, indent=2, sort_keys=True) + "\n"


def resource_names(cfg):
    """Extended-resource names (``prefix/name``) the config publishes."""
    return ["%s/%s" % (e.get("resourcePrefix") or RESOURCE_PREFIX, e["resourceName"]) for e in cfg["configList"]]


def node_affinity(labels):
    """A required node affinity that accepts a node carrying any of ``labels`` with the value "true" (one
    nodeSelectorTerm each: terms are ORed), or None for no labels."""
    labels = [str(k) for k in labels or [] if k]
    if not labels:
        return None
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": k, "operator": "In", "values": ["true"]}]} for k in labels]}}}


# the plugin pods replaced at once when the config changes: the DaemonSet's default (1) rolls a fleet one node at a
# time - a thousand nodes outlast any verify -, a quarter rolls it in four waves whatever its size; a plugin
# restart does not touch what running pods hold
MAX_UNAVAILABLE = "25%"
_INT_OR_PERCENT = re.compile(r"^([1-9][0-9]*)(%?)$")


def _int_or_percent(value):
    """maxUnavailable as the API takes it: a count (int) or a percentage ("25%"); PluginError otherwise."""
    match = _INT_OR_PERCENT.match(str(value).strip())
    if not match or (match.group(2) and int(match.group(1)) > 100):
        raise PluginError("max_unavailable must be a count >= 1 or a percentage 1%%-100%%, got %r" % (value,))
    return str(value).strip() if match.group(2) else int(match.group(1))


def manifests(cfg, namespace=NAMESPACE, name=NAME, config_map=CONFIG_MAP, image=IMAGE, tag=TAG,
              image_pull_policy="IfNotPresent", node_selector=None, tolerations=None,
              priority_class="system-node-critical", use_cdi=False, image_pull_secrets=None,
              node_label_keys=RDMA_NODE_LABELS, max_unavailable=MAX_UNAVAILABLE):
    """[ConfigMap, DaemonSet] of the plugin (plain dicts, upstream deployment/k8s/base plus the knobs).

    Placement: ``node_selector`` (a dict, ``{}`` = every node) when given, else a required node affinity that
    accepts any of ``node_label_keys`` = "true" (default: the NFD labels of RDMA nodes, current and legacy).
    ``use_cdi`` adds ``--use-cdi`` and the ``/var/run/cdi`` hostPath the plugin writes its CDI spec to
    (upstream deployment/k8s/overlay/cdi.yaml).
    """
    text = config_json(cfg)
    labels = {k8s_api.MANAGED_BY_KEY: k8s_api.MANAGED_BY_VALUE, COMPONENT_LABEL: COMPONENT}
    cm = {"apiVersion": "v1", "kind": "ConfigMap",
          "metadata": {"name": config_map, "namespace": namespace, "labels": dict(labels)},
          "data": {"config.json": text}}
    container = {
        "name": CONTAINER, "image": "%s:%s" % (image, tag) if tag else image,
        "imagePullPolicy": image_pull_policy, "securityContext": {"privileged": True},
        "volumeMounts": [
            {"name": "device-plugin", "mountPath": "/var/lib/kubelet/device-plugins"},
            {"name": "plugins-registry", "mountPath": "/var/lib/kubelet/plugins_registry"},
            {"name": "config", "mountPath": CONFIG_DIR},
            {"name": "devs", "mountPath": "/dev/"}]}
    pod_spec = {
        "hostNetwork": True, "containers": [container],
        "volumes": [
            {"name": "device-plugin", "hostPath": {"path": "/var/lib/kubelet/device-plugins"}},
            {"name": "plugins-registry", "hostPath": {"path": "/var/lib/kubelet/plugins_registry"}},
            {"name": "config", "configMap": {"name": config_map,
                                             "items": [{"key": "config.json", "path": "config.json"}]}},
            {"name": "devs", "hostPath": {"path": "/dev/"}}]}
    if use_cdi:
        container["args"] = ["--use-cdi"]
        container["volumeMounts"].append({"name": "dynamic-cdi", "mountPath": CDI_DIR})
        pod_spec["volumes"].append({"name": "dynamic-cdi", "hostPath": {"path": CDI_DIR,
                                                                        "type": "DirectoryOrCreate"}})
    if priority_class:
        pod_spec["priorityClassName"] = priority_class
    if node_selector is not None:
        if node_selector:
            pod_spec["nodeSelector"] = dict((str(k), str(v)) for k, v in node_selector.items())
    elif node_affinity(node_label_keys):
        pod_spec["affinity"] = node_affinity(node_label_keys)
    if tolerations:
        pod_spec["tolerations"] = [dict(t) for t in tolerations]
    if image_pull_secrets:
        pod_spec["imagePullSecrets"] = [{"name": s} for s in image_pull_secrets]
    ds = {"apiVersion": "apps/v1", "kind": "DaemonSet",
          "metadata": {"name": name, "namespace": namespace, "labels": dict(labels)},
          "spec": {"selector": {"matchLabels": {"name": name}},
                   "updateStrategy": {"type": "RollingUpdate",
                                      "rollingUpdate": {"maxUnavailable": _int_or_percent(max_unavailable)}},
                   "template": {"metadata": {"labels": dict(labels, name=name),
                                             "annotations": {HASH_ANNOTATION: hashlib.sha256(
                                                 text.encode("utf-8")).hexdigest()}},
                                "spec": pod_spec}}}
    return [cm, ds]


# ---------------------------------------------------------------- apply / remove

def holds(live, desired):
    """True when ``live`` already holds every field of ``desired`` (server defaults may add more)."""
    if isinstance(desired, dict):
        return isinstance(live, dict) and all(holds(live.get(k), v) for k, v in desired.items())
    if isinstance(desired, list):
        return isinstance(live, list) and len(live) == len(desired) and all(
            holds(a, b) for a, b in zip(live, desired))
    return live == desired or (live is not None and str(live) == str(desired) and not isinstance(desired, bool))


def _read(api, obj):
    md = obj["metadata"]
    try:
        return k8s_api._call(api, obj["apiVersion"], obj["kind"], "read", md["namespace"], name=md["name"])
    except k8s_api._api_errors() as exc:
        status, _msg = k8s_api._status_of(exc)
        if status == 404:
            return None
        raise k8s_api._fail("cannot read %s %s/%s" % (obj["kind"], md["namespace"], md["name"]), exc, verb="get",
                            plural=k8s_api._plural(obj["kind"]), group=k8s_api._split_gv(obj["apiVersion"])[0],
                            namespace=md["namespace"])


def _with_nulls(live, obj):
    """``obj`` with ``null`` for each optional pod-spec field the live DaemonSet has and ``obj`` does not want, so
    a merge patch removes it (a nodeSelector replaced by the node affinity, tolerations dropped); other kinds as
    they are."""
    if obj["kind"] != "DaemonSet" or live is None:
        return obj
    have = ((live.get("spec") or {}).get("template") or {}).get("spec") or {}
    want = obj["spec"]["template"]["spec"]
    gone = [k for k in OPTIONAL_POD_FIELDS if k not in want and have.get(k) not in (None, {}, [], "")]
    if not gone:
        return obj
    out = json.loads(json.dumps(obj))
    out["spec"]["template"]["spec"].update((k, None) for k in gone)
    return out


def _managed(live):
    return ((live.get("metadata") or {}).get("labels") or {}).get(k8s_api.MANAGED_BY_KEY) == k8s_api.MANAGED_BY_VALUE


def apply(api, objects, check_mode=False, adopt=False):
    """Create each object, or merge-patch it when the live one lacks a desired field; returns actions.

    Actions are ``{"object": "Kind/ns/name", "action": "created"|"updated"|"unchanged"}`` (what
    would happen, in check mode). An existing object that this collection does not manage (no
    ``app.kubernetes.io/managed-by: aifabric.acceptance``, e.g. the network operator's) is left
    alone with a PluginError unless ``adopt``.
    """
    k8s_api._require_client()
    actions = []
    for obj in objects:
        md = obj["metadata"]
        ref = "%s/%s/%s" % (obj["kind"], md["namespace"], md["name"])
        group = k8s_api._split_gv(obj["apiVersion"])[0]
        plural = k8s_api._plural(obj["kind"])
        live = _read(api, obj)
        obj = _with_nulls(live, obj)
        if live is not None and not _managed(live) and not adopt:
            raise PluginError("%s exists and is not managed by aifabric.acceptance (deployed by the network operator "
                              "or by hand?): remove it, or set adopt=true to take it over" % ref)
        if live is not None and holds(live, obj):
            actions.append({"object": ref, "action": "unchanged"})
            continue
        action = "created" if live is None else "updated"
        actions.append({"object": ref, "action": action})
        if check_mode:
            continue
        try:
            if live is None:
                k8s_api._call(api, obj["apiVersion"], obj["kind"], "create", md["namespace"], body=obj)
            else:
                k8s_api._call(api, obj["apiVersion"], obj["kind"], "patch", md["namespace"], name=md["name"],
                              body=obj, _content_type="application/merge-patch+json")
        except k8s_api._api_errors() as exc:
            verb = "create" if live is None else "patch"
            raise k8s_api._fail("cannot %s %s" % (verb, ref), exc, verb=verb, plural=plural, group=group,
                                namespace=md["namespace"])
    return actions


def remove(api, objects, check_mode=False, timeout_s=60, poll_s=0.5):
    """Delete ``objects`` (DaemonSet first: its pods go with it) that this collection manages; returns actions.

    An object another tool manages is never deleted (action ``kept (not managed by aifabric.acceptance)``).
    Waits up to ``timeout_s`` for them to be gone; what is still there is reported as ``still present``.
    """
    k8s_api._require_client()
    actions = []
    order = sorted(objects, key=lambda o: 0 if o["kind"] == "DaemonSet" else 1)
    for obj in order:
        md = obj["metadata"]
        ref = "%s/%s/%s" % (obj["kind"], md["namespace"], md["name"])
        live = _read(api, obj)
        if live is None:
            actions.append({"object": ref, "action": "absent"})
            continue
        if not _managed(live):
            actions.append({"object": ref, "action": "kept (not managed by aifabric.acceptance)"})
            continue
        actions.append({"object": ref, "action": "deleted"})
        if check_mode:
            continue
        try:
            k8s_api._call(api, obj["apiVersion"], obj["kind"], "delete", md["namespace"], name=md["name"],
                          propagation_policy="Background")
        except k8s_api._api_errors() as exc:
            status, _msg = k8s_api._status_of(exc)
            if status != 404:
                raise k8s_api._fail("cannot delete %s" % ref, exc, verb="delete", plural=k8s_api._plural(obj["kind"]),
                                    group=k8s_api._split_gv(obj["apiVersion"])[0], namespace=md["namespace"])
    deadline = time.monotonic() + timeout_s
    pending = [o for o, a in zip(order, actions) if a["action"] == "deleted"] if not check_mode else []
    while pending and time.monotonic() < deadline:
        pending = [o for o in pending if _read(api, o) is not None]
        if pending:
            time.sleep(poll_s)
    for obj in pending:
        md = obj["metadata"]
        ref = "%s/%s/%s" % (obj["kind"], md["namespace"], md["name"])
        for a in actions:
            if a["object"] == ref:
                a["action"] = "still present after %d s" % timeout_s
    return actions


# ---------------------------------------------------------------- verification

def node_selected(node, daemonset):
    """None when ``daemonset`` places a pod on ``node`` (nodeSelector, required node affinity on labels,
    NoSchedule/NoExecute taints vs tolerations), else the reason it does not."""
    spec = ((daemonset.get("spec") or {}).get("template") or {}).get("spec") or {}
    labels = (node.get("metadata") or {}).get("labels") or {}
    missing = ["%s=%s" % (k, v) for k, v in sorted((spec.get("nodeSelector") or {}).items()) if labels.get(k) != v]
    if missing:
        return "the node lacks label %s of the DaemonSet's nodeSelector (label the node, or let NFD do it)" % (
            ", ".join(missing))
    terms = ((((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
        "requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms")) or []
    if terms and not any(_term_matches(t, node) for t in terms):
        return "the node matches no term of the DaemonSet's required node affinity (%s): none of its labels says " \
               "RDMA (deploy node-feature-discovery >= v0.14, whose rdma.available needs ib_uverbs and rdma_ucm " \
               "loaded, or label the node)" % " or ".join(_term_text(t) for t in terms)
    for taint in (node.get("spec") or {}).get("taints") or []:
        if taint.get("effect") not in ("NoSchedule", "NoExecute"):
            continue
        if not any(_tolerates(t, taint) for t in spec.get("tolerations") or []):
            return "the node has taint %s=%s:%s that the DaemonSet does not tolerate (add a toleration)" % (
                taint.get("key"), taint.get("value", ""), taint.get("effect"))
    return None


def _expr_matches(expr, have, present):
    op, values = expr.get("operator"), [str(v) for v in expr.get("values") or []]
    if op == "In":
        return present and have in values
    if op == "NotIn":
        return not present or have not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt") and present and len(values) == 1:
        try:
            return int(have) > int(values[0]) if op == "Gt" else int(have) < int(values[0])
        except ValueError:
            return False
    return False


def _term_matches(term, node):
    """One nodeSelectorTerm (its matchExpressions on labels and matchFields on metadata.name, all ANDed)."""
    md = node.get("metadata") or {}
    labels = md.get("labels") or {}
    exprs = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not exprs and not fields:
        return False                    # an empty term matches no node
    for expr in exprs:
        key = expr.get("key")
        if not _expr_matches(expr, str(labels.get(key)), key in labels):
            return False
    for expr in fields:
        if expr.get("key") != "metadata.name" or not _expr_matches(expr, str(md.get("name")), True):
            return False
    return True


def _term_text(term):
    return " and ".join(" ".join([str(e.get("key")), str(e.get("operator"))] + (
        [",".join(str(v) for v in e["values"])] if e.get("values") else []))
        for e in (term.get("matchExpressions") or []) + (term.get("matchFields") or []))


def _tolerates(tol, taint):
    if tol.get("effect") and tol["effect"] != taint.get("effect"):
        return False
    if tol.get("operator") == "Exists":
        return not tol.get("key") or tol["key"] == taint.get("key")
    return tol.get("key") == taint.get("key") and (tol.get("value") or "") == (taint.get("value") or "")


def _allocatable(node, resource):
    value = ((node.get("status") or {}).get("allocatable") or {}).get(resource)
    try:
        return int(str(value)) if value is not None else None
    except ValueError:
        return None


def _pod_ready(pod):
    """Running and ready: every container status ready (they are current; a Ready condition may lag a container
    that just went into CrashLoopBackOff), or without container statuses the Ready condition."""
    st = pod.get("status") or {}
    if st.get("phase") != "Running":
        return False
    if st.get("containerStatuses"):
        return all(c.get("ready") for c in st["containerStatuses"])
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in st.get("conditions") or [])


def _snapshot(api, namespace, name, nodes):
    ds = k8s_api._call(api, "apps/v1", "DaemonSet", "read", namespace, name=name)
    match = ((ds.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
    selector = ",".join("%s=%s" % kv for kv in sorted(match.items()))
    pods = k8s_api._call(api, "v1", "Pod", "list", namespace, label_selector=selector).get("items") or []
    known = dict((n["metadata"]["name"], n) for n in k8s_api.list_nodes(api))
    hash_ = (((ds.get("spec") or {}).get("template") or {}).get("metadata") or {}).get("annotations", {}).get(
        HASH_ANNOTATION)
    by_node = {}
    for pod in pods:
        md = pod.get("metadata") or {}
        if md.get("deletionTimestamp"):
            continue
        if hash_ and (md.get("annotations") or {}).get(HASH_ANNOTATION) not in (None, hash_):
            continue            # a pod of the previous config, being replaced
        node = (pod.get("spec") or {}).get("nodeName")
        if node:
            by_node.setdefault(node, pod)
    return ds, by_node, dict((n, known.get(n)) for n in nodes)


def _healthy(ds, by_node, nodes, resources, expected):
    """Every node selected, its plugin pod (of the current config) ready, and every resource's allocatable the
    count the config publishes (``expected``: {resource: rdmaHcaMax}; > 0 where unknown): right after a config roll
    the Node still shows the old count until the kubelet's next node-status update."""
    for node_name, node in nodes.items():
        if node is None or node_selected(node, ds) is not None:
            return False
        pod = by_node.get(node_name)
        if pod is None or not _pod_ready(pod):
            return False
        for res in resources:
            value = _allocatable(node, res) or 0
            if value <= 0 or (expected.get(res) and value != expected[res]):
                return False
    return True


def expected_counts(cfg):
    """{resource: allocatable the plugin publishes on a node where its selectors match}: the plugin registers
    rdmaHcaMax devices per resource (pkg/resources/server.go)."""
    return dict(("%s/%s" % (e.get("resourcePrefix") or RESOURCE_PREFIX, e["resourceName"]), e.get("rdmaHcaMax"))
                for e in cfg["configList"] if isinstance(e.get("rdmaHcaMax"), int) and e["rdmaHcaMax"] > 0)


def verify(api, namespace, name, nodes, resources, devices=None, timeout_s=300, poll_s=1.0, selectors=None,
           expected=None):
    """Records ``k8s.rdma_device_plugin`` per node and resource once all are healthy or ``timeout_s`` passed.

    ``resources``: extended-resource names (``rdma/hca_shared_devices_a``); ``devices``:
    ``devices_from_records`` of the env probe (for the cause of a zero allocatable);
    ``selectors``: {resource: selectors dict} of the applied config; ``expected``: {resource: count} the config
    publishes (``expected_counts``) - a node still showing another count (the previous config's) is waited for
    and, at the end, fails. Never raises for a node's state; an unreadable DaemonSet gives an ``error`` record per
    node.
    """
    k8s_api._require_client()
    devices = devices or {}
    selectors = selectors or {}
    expected = expected or {}
    started = results.utc_now()
    t0 = time.monotonic()
    deadline = t0 + timeout_s
    while True:
        try:
            ds, by_node, known = _snapshot(api, namespace, name, nodes)
        except (k8s_api.K8sError,) + k8s_api._api_errors() as exc:
            why = str(exc) if isinstance(exc, k8s_api.K8sError) else k8s_api._status_of(exc)[1]
            return [results.error(CHECK, "cannot read the device plugin DaemonSet %s/%s: %s" % (namespace, name, why),
                                  host=n, target=r, tool=TOOL, started=started,
                                  duration_s=time.monotonic() - t0) for n in nodes for r in resources]
        if _healthy(ds, by_node, known, resources, expected) or time.monotonic() >= deadline:
            break
        time.sleep(min(poll_s, max(0.0, deadline - time.monotonic())))
    duration = time.monotonic() - t0
    status = ds.get("status") or {}
    ds_facts = dict((k, status.get(k)) for k in ("desiredNumberScheduled", "currentNumberScheduled", "numberReady",
                                                 "updatedNumberScheduled", "numberMisscheduled"))
    out = []
    rolling = _rollout_note(ds_facts)
    for node_name in nodes:
        node = known.get(node_name)
        pod = by_node.get(node_name)
        for res in resources:
            st, reason, facts, metrics = _judge(api, namespace, ds, node_name, node, pod, res,
                                                devices.get(node_name), selectors.get(res), timeout_s,
                                                expected.get(res))
            if st == "fail" and rolling:
                reason += rolling
            facts.update(daemonset="%s/%s" % (namespace, name), daemonset_status=ds_facts)
            want = {"equals": expected[res]} if expected.get(res) else {"min": 1}
            out.append(results.make(CHECK, st, reason=reason, host=node_name, target=res, facts=facts,
                                    metrics=metrics, expect={"allocatable": want}, tool=TOOL,
                                    params={"substrate": "kubernetes", "namespace": namespace, "waited_s": timeout_s},
                                    started=started, duration_s=duration))
    return out


def _rollout_note(ds_facts):
    """What to add to a failing node's reason while the DaemonSet's rolling update had not reached every node."""
    desired, updated = ds_facts.get("desiredNumberScheduled"), ds_facts.get("updatedNumberScheduled")
    if isinstance(desired, int) and isinstance(updated, int) and updated < desired:
        return ("; the DaemonSet's rolling update was not finished (%d of %d pods of the new config): raise "
                "max_unavailable or verify_timeout_s" % (updated, desired))
    return ""


def _judge(api, namespace, ds, node_name, node, pod, res, devs, sel, timeout_s, want=None):
    facts, metrics = {}, {}
    if node is None:
        return "error", "node %s is not in the cluster (kubectl get nodes)" % node_name, facts, metrics
    value = _allocatable(node, res)
    if value is not None:
        metrics["allocatable"] = value
    why = node_selected(node, ds)
    if why:
        return "fail", "node not selected by the device plugin DaemonSet: %s" % why, facts, metrics
    if pod is None:
        return "fail", "no device plugin pod on this node after %d s (the DaemonSet selects it: is the DaemonSet " \
                       "controller or the node's kubelet stuck? kubectl -n %s describe ds %s)" % (
                           timeout_s, namespace, ds["metadata"]["name"]), facts, metrics
    facts["pod"] = pod["metadata"]["name"]
    facts["image"] = ((pod.get("spec") or {}).get("containers") or [{}])[0].get("image")
    if not _pod_ready(pod):
        cause = _pod_cause(pod)
        facts["cause"] = "crash_loop" if cause == "is crash-looping" else "pod_not_ready"
        if cause == "is crash-looping":
            tail = _log_tail(api, namespace, pod, previous=True)
            return "fail", "device plugin pod %s is crash-looping (CrashLoopBackOff, %s)%s" % (
                pod["metadata"]["name"], _last_exit(pod), "; its last log lines: " + tail if tail else
                "; its log is empty"), facts, metrics
        return "fail", "device plugin pod %s %s: %s" % (
            pod["metadata"]["name"], cause, k8s_api.diagnose(api, namespace, pod["metadata"]["name"])), facts, metrics
    if value is not None and value > 0 and want and value != want:
        facts["cause"] = "stale_allocatable"
        return "fail", "%s allocatable is %d, but the applied config publishes %d (rdmaHcaMax) and the plugin pod %s " \
                       "of that config is ready: after %d s the node still shows another count (the kubelet has not " \
                       "updated the node status, or a second plugin publishes the same resource)" % (
                           res, value, want, pod["metadata"]["name"], timeout_s), facts, metrics
    if value is not None and value > 0:
        return "pass", "%s allocatable %d (plugin pod %s ready)" % (res, value, pod["metadata"]["name"]), facts, metrics
    shown = "absent" if value is None else "0"
    cause, text = explain(devs or [], sel or {})
    facts["cause"] = cause
    tail = _log_tail(api, namespace, pod)
    if cause == "matched":
        text = ("%s, yet the plugin exposes none: RDMA char devices missing (rdma-core/issm not on the node, "
                "Mellanox/k8s-rdma-shared-dev-plugin#44, #108) or the kubelet lost the registration (#109; "
                "restart the plugin pod)" % text)
    elif cause == "no_facts":
        text = "the selectors select no device the plugin accepts (%s to say which)" % text
    return "fail", "%s allocatable is %s: %s%s" % (res, shown, text, "; plugin log: " + tail if tail else ""), \
        facts, metrics


def _pod_cause(pod):
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        waiting = (cs.get("state") or {}).get("waiting") or {}
        if waiting.get("reason") == "CrashLoopBackOff":
            return "is crash-looping"
        if waiting.get("reason"):
            return "is waiting (%s)" % waiting["reason"]
    return "is not ready (%s)" % ((pod.get("status") or {}).get("phase") or "Pending")


def _last_exit(pod):
    for cs in (pod.get("status") or {}).get("containerStatuses") or []:
        last = (cs.get("lastState") or {}).get("terminated") or {}
        return "%d restarts, last exit code %s" % (cs.get("restartCount") or 0, last.get("exitCode", "unknown"))
    return "no container status"


def plugin_container(pod):
    """The name of the plugin's container in ``pod``: ours (CONTAINER), else the one running the plugin's image,
    else the first. Always named in a log request: the API answers 400 without it when a sidecar was injected."""
    containers = [c for c in (pod.get("spec") or {}).get("containers") or [] if isinstance(c, dict) and c.get("name")]
    for test in (lambda c: c["name"] == CONTAINER, lambda c: "k8s-rdma-shared-dev-plugin" in str(c.get("image"))):
        for c in containers:
            if test(c):
                return c["name"]
    return containers[0]["name"] if containers else None


def _log_tail(api, namespace, pod, lines=20, previous=False):
    """The plugin's warnings and errors among its last lines (one line), or ''."""
    try:
        text = k8s_api.logs(api, namespace, pod["metadata"]["name"], container=plugin_container(pod),
                            limit_bytes=256 << 10, tail_lines=lines, previous=previous)
    except k8s_api.K8sError:
        return ""
    keep = [ln.strip() for ln in text.splitlines()
            if re.search(r"warning|error|exiting|fatal", ln, re.IGNORECASE)]
    return k8s_api._one_line("\n".join(keep[-5:]), 500)


def render(objects, directory, write=True):
    """Render mode: write ``objects`` to ``directory/NN-kind-name.yaml`` (YAML as k8s_workload's render mode writes
    it; 0600 files, atomically, in a directory of this user nobody else can write - statedir.trusted_dir); returns
    the paths. Nothing is sent to a cluster."""
    directory = statedir.trusted_dir(directory, create=write, private=True, what="render_dir")
    paths = []
    for i, obj in enumerate(objects):
        name = "%02d-%s-%s.yaml" % (i, obj["kind"].lower(), obj["metadata"]["name"])
        statedir.check_name(name, "manifest file name")
        paths.append(os.path.join(directory, name))
        if write:
            statedir.write_file(directory, name, k8s_run._dump(obj), mode=0o600)
    return paths


def objects_ref(objects):
    return ["%s/%s/%s" % (o["kind"], o["metadata"]["namespace"], o["metadata"]["name"]) for o in objects]


def desired_for_removal(namespace=NAMESPACE, name=NAME, config_map=CONFIG_MAP):
    """Minimal stand-ins of the two objects, enough for ``remove``."""
    return [{"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": name, "namespace": namespace}},
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": config_map, "namespace": namespace}}]
