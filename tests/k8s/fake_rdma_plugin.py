# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A DaemonSet controller and the RDMA shared device plugin, as hooks of the fake cluster's controller.

``install(server)`` adds one reconcile step to a started ``FakeApiServer`` (tests/k8s/fake_apiserver.py):

- **DaemonSet controller** (``apps/v1``): one pod per node the template fits (``nodeSelector``,
  required node affinity, taints vs tolerations - the fake scheduler's own ``fit``), named
  ``<ds>-<rand5>``, owned by the DaemonSet (garbage-collected with it), pinned with node affinity
  ``matchFields metadata.name`` as the real controller does; a pod whose template is out of date
  (the template changed) is deleted and re-created (RollingUpdate, at most ``maxUnavailable`` - default 1,
  a node at a time - unavailable at once); the status counts
  (``desiredNumberScheduled``, ``currentNumberScheduled``, ``numberReady``, ``updatedNumberScheduled``,
  ``numberAvailable``, ``numberUnavailable``, ``observedGeneration``) are kept up to date. Its pods
  run until deleted (unless a ``script`` rule, e.g. ``crash_loop`` with a real plugin log, matches).
- **the plugin** (a running pod whose image is ``*k8s-rdma-shared-dev-plugin*``): reads ``config.json``
  from the ConfigMap its ``config`` volume names, selects the node's devices (node dict key
  ``rdma_devices``: ``[{"ifName", "vendor", "deviceID", "driver", "linkType"}]``) with the plugin's rule
  (pkg/resources/device_selectors.go: elements ORed, selectors ANDed, ``devices`` = ``ifNames``) and
  publishes ``<resourcePrefix>/<resourceName>`` = ``rdmaHcaMax`` in the Node's allocatable and
  capacity when a device matched, else ``0`` (its "empty resource server"); a resource of a node
  without a running plugin pod falls to 0, as the kubelet's does; a pod scripted to crash (``crash_loop``,
  ``fail``, ``oom``) never registers, as a plugin that exits at start-up does not. Its log follows the plugin's
  own format strings (pkg/resources/resources_manager.go, server.go of v1.5.3).
"""

from __future__ import annotations

import hashlib
import json

import kmock

from ansible_collections.aifabric.acceptance.tests.k8s.fake_apiserver import NFD_CURRENT, NODES, PODS, _suffix

DAEMONSETS = kmock.resource("apps", "v1", "daemonsets")
CONFIGMAPS = kmock.resource("", "v1", "configmaps")
HASH = "fake.aifabric.acceptance/template-hash"
NODE = "fake.aifabric.acceptance/node"


def _template_hash(template):
    return hashlib.sha256(json.dumps(template, sort_keys=True).encode()).hexdigest()[:10]


def select(devices, selectors):
    """The plugin's filter chain over ``devices`` (dicts with the PciNetDevice getters' values)."""
    out = list(devices)
    for key, attr in (("vendors", "vendor"), ("deviceIDs", "deviceID"), ("drivers", "driver"),
                      ("ifNames", "ifName"), ("linkTypes", "linkType")):
        wanted = (selectors or {}).get(key) or []
        if wanted:
            out = [d for d in out if d.get(attr) in wanted]
    return out


class RdmaPlugin(object):
    """The hook (see the module docstring); ``published`` = {(node, resource): count}."""

    def __init__(self):
        self.published = {}

    async def __call__(self, ctl):
        running = {}            # node -> the plugin pod running there
        for key, obj in ctl._all(DAEMONSETS):
            await self._daemonset(ctl, key, obj.raw)
        for _key, obj in ctl._all(PODS):
            pod = obj.raw
            spec, status = pod.get("spec") or {}, pod.get("status") or {}
            image = ((spec.get("containers") or [{}])[0]).get("image") or ""
            if "k8s-rdma-shared-dev-plugin" in image and status.get("phase") == "Running" and all(
                    c.get("ready") for c in status.get("containerStatuses") or [{}]) and spec.get("nodeName") \
                    and not pod["metadata"].get("deletionTimestamp"):
                st = ctl.state.get(pod["metadata"]["uid"]) or {}
                if getattr(st.get("behaviour"), "kind", None) in ("crash_loop", "fail", "oom"):
                    continue        # a plugin that exits at start-up never registers with the kubelet
                running[spec["nodeName"]] = pod
        for node in ctl.nodes:
            want = {}
            pod = running.get(node["name"])
            if pod is not None:
                want = self._plugin(ctl, node, pod)
            for (name, res), _count in list(self.published.items()):
                if name == node["name"] and res not in want:
                    want[res] = 0
            changed = {res: str(n) for res, n in want.items()
                       if str((node.get("allocatable") or {}).get(res)) != str(n)}
            for res, n in want.items():
                self.published[(node["name"], res)] = n
            if changed:
                node.setdefault("allocatable", {}).update(changed)
                await ctl._patch((NODES, None, node["name"]), {"status": {"allocatable": changed, "capacity": changed}})

    def _plugin(self, ctl, node, pod):
        ns = pod["metadata"]["namespace"]
        volumes = (pod.get("spec") or {}).get("volumes") or []
        cm_name = next((v["configMap"]["name"] for v in volumes if v.get("configMap")), None)
        cm = ctl.emu._objects[(CONFIGMAPS, ns, cm_name)] if cm_name and (CONFIGMAPS, ns, cm_name) in ctl.emu._objects \
            else None
        container = ((pod.get("spec") or {}).get("containers") or [{}])[0].get("name")
        lines = ["Starting K8s RDMA Shared Device Plugin version= v1.5.3", "resource manager reading configs",
                 "Reading /k8s-rdma-shared-dev-plugin/config.json"]
        want = {}
        try:
            cfg = json.loads(cm.raw["data"]["config.json"]) if cm is not None and not cm.deleted else None
        except (KeyError, ValueError):
            cfg = None
        if cfg is None:
            lines.append("open /k8s-rdma-shared-dev-plugin/config.json: no such file or directory")
        else:
            devices = node.get("rdma_devices") or []
            lines.append("Discovering host devices")
            for entry in cfg.get("configList") or []:
                sel = dict(entry.get("selectors") or {})
                if not any(sel.values()) and entry.get("devices"):
                    sel = {"ifNames": entry["devices"]}
                hit = select(devices, sel)
                res = "%s/%s" % (entry.get("resourcePrefix") or "rdma", entry["resourceName"])
                if not hit:
                    lines.append("Warning: no devices in device pool, creating empty resource server for %s"
                                 % entry["resourceName"])
                    lines.append("Warning: no Rdma Devices were found for resource %s" % entry["resourceName"])
                want[res] = int(entry.get("rdmaHcaMax") or 0) if hit else 0
            lines.append("All servers started.")
        key = (ns, pod["metadata"]["name"], container)
        if not ctl.logs.get(key):
            ctl.logs[key] = ("".join("2026/11/23 12:00:00 %s\n" % ln for ln in lines)).encode()
        return want

    @staticmethod
    async def _roll(ctl, spec, owned, thash, desired):
        """RollingUpdate (pkg/controller/daemon/update.go ``rollingUpdate``): old pods that are not available go at
        once; old available ones only while fewer than ``maxUnavailable`` (default 1; a percentage of the desired
        count, rounded up) pods are unavailable - a node at a time by default. Returns the pods kept."""
        strategy = spec.get("updateStrategy") or {}
        most = ((strategy.get("rollingUpdate") or {}).get("maxUnavailable", 1)
                if strategy.get("type", "RollingUpdate") == "RollingUpdate" else 0)
        if isinstance(most, str) and most.endswith("%"):
            most = -(-int(most[:-1]) * desired // 100)
        unavailable = max(0, desired - sum(1 for _k, p in owned if _ready(p)))
        kept = []
        for pkey, pod in owned:
            old = (pod["metadata"].get("annotations") or {}).get(HASH) != thash
            if old and not _ready(pod):
                await ctl._remove(pkey)
            elif old and unavailable < int(most):
                await ctl._remove(pkey)           # the old pod goes, a new one follows
                unavailable += 1
            else:
                kept.append((pkey, pod))
        return kept

    async def _daemonset(self, ctl, key, ds):
        md, spec = ds["metadata"], ds.get("spec") or {}
        template = spec.get("template") or {}
        thash = _template_hash(template)
        owned = [(k, p) for k, p in ctl._owned_pods(md["uid"]) if not p["metadata"].get("deletionTimestamp")]
        eligible = [n for n in ctl.nodes if ctl.fit({"spec": dict(template.get("spec") or {})},
                                                    dict(n, allocatable={}), {}) == []]
        by_node = {}
        for pkey, pod in await self._roll(ctl, spec, owned, thash, len(eligible)):
            by_node[(pod["metadata"].get("annotations") or {}).get(NODE)] = (pkey, pod)
        names = set(n["name"] for n in eligible)
        for node, (pkey, _pod) in list(by_node.items()):
            if node not in names:
                await ctl._remove(pkey)
                del by_node[node]
        owner = [{"apiVersion": "apps/v1", "kind": "DaemonSet", "name": md["name"], "uid": md["uid"],
                  "controller": True, "blockOwnerDeletion": True}]
        for node in eligible:
            if node["name"] in by_node:
                continue
            tmpl = json.loads(json.dumps(template))
            tmpl.setdefault("spec", {})["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                                        "values": [node["name"]]}]}]}}}
            name = "%s-%s" % (md["name"], _suffix())
            await ctl._add_template_pod(md["namespace"], name, tmpl, owner, {}, default="hang",
                                        annotations={HASH: thash, NODE: node["name"]})
        pods = [p for _k, p in ctl._owned_pods(md["uid"]) if not p["metadata"].get("deletionTimestamp")]
        ready = [p for p in pods if _ready(p)]
        status = {"desiredNumberScheduled": len(eligible), "currentNumberScheduled": len(pods),
                  "numberReady": len(ready), "numberAvailable": len(ready),
                  "numberUnavailable": len(eligible) - len(ready),
                  "updatedNumberScheduled": sum(1 for p in pods if (p["metadata"].get("annotations") or {}).get(HASH)
                                                == thash),
                  "numberMisscheduled": 0, "observedGeneration": md.get("generation", 1)}
        if any((ds.get("status") or {}).get(k) != v for k, v in status.items()):
            await ctl._patch(key, {"status": status})


def _ready(pod):
    return (pod.get("status") or {}).get("phase") == "Running" and all(
        c.get("ready") for c in (pod.get("status") or {}).get("containerStatuses") or [{}])


def install(server):
    """Add the DaemonSet controller and the plugin to a started FakeApiServer; returns the hook."""
    hook = RdmaPlugin()
    server.controller.hooks.append(hook)
    return hook


def rdma_node(name, devices, labels=None, taints=None, gpus=8):
    """A node dict for FakeApiServer(nodes=...) with ``rdma_devices`` and the RDMA labels current NFD publishes
    (``NFD_CURRENT``: rdma.capable, rdma.available, pci-15b3.present) unless ``labels`` replaces them."""
    base = {"kubernetes.io/hostname": name, "nvidia.com/gpu.present": "true"}
    base.update(dict(NFD_CURRENT) if labels is None else labels)
    return {"name": name, "labels": base, "taints": list(taints or []),
            "allocatable": {"nvidia.com/gpu": str(gpus), "cpu": "96", "memory": "1Ti"},
            "rdma_devices": [dict(d) for d in devices]}
