# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubernetes preflight: the quick diagnosis of a cluster before (or while) a training job hangs (private).

Pure judges over plain API dicts (no I/O), each returning result records whose reason says
what to do next:

- ``node_records(node, expect_gpus=None)`` - ``k8s.node`` (Ready, memory/disk/PID pressure,
  cordoned), ``k8s.gpu`` (``nvidia.com/gpu`` capacity vs allocatable; skip on nodes without
  GPUs), ``k8s.rdma`` (``rdma/*`` allocatable and the NFD RDMA/SR-IOV labels; a GPU node without
  any RDMA resource fails). ``host`` = node name.
- ``nvidia_plugin_records(node, pod, log_text)`` - ``k8s.nvidia_device_plugin`` per GPU node: its
  NVIDIA device plugin pod (found by the labels of the static manifest, the Helm chart and the
  GPU operator) is there and ready, and the errors/warnings among its recent log lines
  (``Failed to initialize NVML``, klog ``E``/``W`` lines) are named.
- ``pending_records(namespace, pods)`` - ``k8s.pending_pod`` per Pending pod with the
  scheduler's message (``PodScheduled=False``).
- ``env_drift_records(namespace, selector, pods)`` - ``k8s.nccl_env``: the ``NCCL_*``/``UCX_*``
  environment of the training pods, ``warn`` naming every variable that differs across pods.
- ``network_policy_records(namespace, selector, pods, policies)`` - ``k8s.network_policy`` per
  NetworkPolicy that selects training pods: ``fail`` when it restricts Ingress or Egress without
  allowing all ports between the training pods (NCCL opens TCP and RDMA-CM connections on
  ephemeral ports), else ``pass``.

Namespace-level records have ``host`` = ``namespace/<name>`` (they belong to no node).
``collect(api, ...)`` reads the objects and runs every judge. Python 3.8 syntax.
"""

from __future__ import annotations

import re

from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_api, results

GPU = "nvidia.com/gpu"
# NFD's RDMA labels: rdma.available/rdma.capable from v0.14 on (source/custom/static_features.go), custom-rdma.*
# before; the SR-IOV label; the Mellanox PCI label with network-operator's deviceLabelFields [vendor]
NFD_RDMA_AVAILABLE = ("feature.node.kubernetes.io/rdma.available", "feature.node.kubernetes.io/custom-rdma.available")
NFD_LABELS = NFD_RDMA_AVAILABLE + ("feature.node.kubernetes.io/rdma.capable",
                                   "feature.node.kubernetes.io/custom-rdma.capable",
                                   "feature.node.kubernetes.io/network-sriov.capable",
                                   "feature.node.kubernetes.io/pci-15b3.present")
# what places the RDMA shared device plugin by default (k8s_device_plugin.RDMA_NODE_LABELS)
RDMA_PLACEMENT_LABELS = NFD_RDMA_AVAILABLE + ("feature.node.kubernetes.io/pci-15b3.present",)
PRESSURE = ("MemoryPressure", "DiskPressure", "PIDPressure", "NetworkUnavailable")
ENV_PREFIXES = ("NCCL_", "UCX_")
TOOL = {"name": "k8s-preflight"}


def _d(value):
    return value if isinstance(value, dict) else {}


def _dl(value):
    """The dict items of ``value`` if it is a list, else []."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _int(value):
    try:
        return int(str(value))
    except (TypeError, ValueError):
        return None


def _rec(check, status, reason, host, **kwargs):
    """A preflight record: one read of the API's state, so ``params.runs`` 1 (docs/results.md, "Runs")."""
    kwargs.setdefault("tool", TOOL)
    return results.rests_on([results.make(check, status, reason=reason, host=host, **kwargs)])[0]


def _ns_host(namespace):
    return "namespace/%s" % namespace


# ---------------------------------------------------------------- nodes

def _node_record(name, conds, spec, facts):
    """k8s.node: Ready (pass), under pressure or cordoned (warn), NotReady (fail), no Ready condition (error)."""
    ready = conds.get("Ready")
    if ready is None:
        return _rec("k8s.node", "error", "the node reports no Ready condition (is its kubelet registered?)", name,
                    facts=facts)
    if ready.get("status") != "True":
        return _rec("k8s.node", "fail", "node is NotReady (%s: %s): check the kubelet on the node "
                    "(journalctl -u kubelet) and the container runtime" % (
                        ready.get("reason"), ready.get("message")), name, facts=facts)
    bad = ["%s (%s)" % (t, conds[t].get("message") or conds[t].get("reason")) for t in PRESSURE
           if _d(conds.get(t)).get("status") == "True"]
    if bad:
        return _rec("k8s.node", "warn", "node is Ready but under %s: pods may be evicted; free memory/disk "
                    "or lower the pods' requests" % ", ".join(bad), name, facts=facts)
    if spec.get("unschedulable"):
        return _rec("k8s.node", "warn", "node is cordoned (spec.unschedulable): new training pods cannot land "
                    "here; kubectl uncordon %s when it is fit" % name, name, facts=facts)
    return _rec("k8s.node", "pass", "node is Ready, no pressure", name, facts=facts)


def _gpu_record(name, cap, alloc, gpu_node, expect_gpus):
    """k8s.gpu from the GPU capacity and allocatable count of a node."""
    gmetrics = dict((k, v) for k, v in (("gpu_capacity", cap), ("gpu_allocatable", alloc)) if v is not None)
    gexpect = {"gpu_allocatable": {"equals": expect_gpus}} if expect_gpus is not None else {}
    if not gpu_node:
        return _rec("k8s.gpu", "skip", "no %s capacity and no nvidia.com/gpu.present label: not a GPU node" % GPU,
                    name, metrics=gmetrics)
    if not cap:
        return _rec("k8s.gpu", "fail", "labelled as a GPU node but %s capacity is 0: the NVIDIA device plugin is "
                    "not running or not registered on it (check its pod on this node and its log)" % GPU, name,
                    metrics=gmetrics, expect=gexpect)
    if (alloc or 0) < cap:
        return _rec("k8s.gpu", "fail", "%s allocatable %d < capacity %d: %d GPU(s) marked unhealthy by the device "
                    "plugin (XID errors? nvidia-smi -q on the node, the plugin's log)" % (
                        GPU, alloc or 0, cap, cap - (alloc or 0)), name, metrics=gmetrics, expect=gexpect)
    if expect_gpus is not None and alloc != expect_gpus:
        return _rec("k8s.gpu", "fail", "%s allocatable %d, expected %d: a GPU is missing from the node (lspci, "
                    "nvidia-smi on the node)" % (GPU, alloc, expect_gpus), name, metrics=gmetrics, expect=gexpect)
    return _rec("k8s.gpu", "pass", "%s allocatable %d = capacity" % (GPU, alloc), name, metrics=gmetrics,
                expect=gexpect)


def _rdma_record(name, allocatable, labels, gpu_node):
    """k8s.rdma: an rdma/* resource allocatable (pass), a GPU node without one (fail), else skip."""
    rdma = dict((k, _int(v)) for k, v in allocatable.items() if str(k).startswith("rdma/"))
    nfd = dict((k, labels[k]) for k in NFD_LABELS if k in labels)
    rfacts = {"rdma_allocatable": rdma, "nfd_labels": nfd}
    usable = sorted(k for k, v in rdma.items() if v)
    if usable:
        return _rec("k8s.rdma", "pass", "RDMA resource(s) %s allocatable" % ", ".join(
            "%s=%d" % (k, rdma[k]) for k in usable), name, facts=rfacts, metrics={"rdma_resources": len(usable)})
    if gpu_node:
        why = ("%s at 0" % ", ".join(sorted(rdma)) if rdma else "no rdma/* resource")
        hint = ("no NFD RDMA label (%s), so the device plugin is not scheduled here: deploy node-feature-discovery "
                "(rdma.available needs the ib_uverbs and rdma_ucm modules loaded)" % " or ".join(RDMA_PLACEMENT_LABELS)
                if not any(nfd.get(k) == "true" for k in RDMA_PLACEMENT_LABELS) and not rdma else
                "deploy or fix the RDMA shared device plugin (aifabric.acceptance.rdma_device_plugin verifies it "
                "and names the cause per node)")
        return _rec("k8s.rdma", "fail", "GPU node without an RDMA resource (%s): multi-node NCCL falls back to "
                    "TCP sockets; %s" % (why, hint), name, facts=rfacts, metrics={"rdma_resources": 0})
    return _rec("k8s.rdma", "skip", "no RDMA resource on a node without GPUs", name, facts=rfacts)


def node_records(node, expect_gpus=None):
    """[k8s.node, k8s.gpu, k8s.rdma] records of one node dict."""
    md, spec, status = _d(node.get("metadata")), _d(node.get("spec")), _d(node.get("status"))
    name = md.get("name") if isinstance(md.get("name"), str) and md.get("name") else "?"
    labels = _d(md.get("labels"))
    conds = dict((str(c.get("type")), c) for c in _dl(status.get("conditions")))
    facts = {"conditions": dict((t, c.get("status")) for t, c in conds.items()),
             "unschedulable": bool(spec.get("unschedulable")),
             "kubelet_version": _d(status.get("nodeInfo")).get("kubeletVersion")}
    cap = _int(_d(status.get("capacity")).get(GPU))
    alloc = _int(_d(status.get("allocatable")).get(GPU))
    gpu_node = bool(cap) or labels.get("nvidia.com/gpu.present") == "true"
    return [_node_record(name, conds, spec, facts),
            _gpu_record(name, cap, alloc, gpu_node, expect_gpus),
            _rdma_record(name, _d(status.get("allocatable")), labels, gpu_node)]


# ---------------------------------------------------------------- the NVIDIA device plugin

# label pairs of the plugin's pods: static manifest, Helm chart, GPU operator
NVIDIA_PLUGIN_LABELS = (("name", "nvidia-device-plugin-ds"), ("app.kubernetes.io/name", "nvidia-device-plugin"),
                        ("app", "nvidia-device-plugin-daemonset"))
_LOG_PROBLEM = re.compile(r"(^[EW]\d{4} )|fail|error|could not|cannot|unable|no devices found|not detected",
                          re.IGNORECASE)
# a klog Info line (I<mmdd> ...) is a problem only by what it says happened, never by the word "error": the health
# checker logs every NVML event it does not act on at Info level, the event type's name and its struct included -
# "Skipping non-nvmlEventTypeXidCriticalError event: {...EventType:1...}" for an ECC single-bit event, "Skipping event
# {...}" for an ignored Xid (internal/rm/health.go) - while what it does act on says "marking ... unhealthy"
_KLOG_INFO = re.compile(r"^I\d{4} ")
_INFO_PROBLEM = re.compile(r"unhealthy|fail|could not|cannot|unable|no devices found|not detected", re.IGNORECASE)
# the plugin prints its configuration at start-up ("Running with config:" and indented JSON, main.go): its keys
# (failOnInitError, ...) are settings, not problems
_CONFIG_START = re.compile(r"Running with config:\s*$")
_JSON_MEMBER = re.compile(r'^\s*"[A-Za-z0-9_.-]+"\s*:')
# the plugin's container: static manifest and Helm chart, GPU operator (the Helm chart's config-manager
# sidecar and init container, Istio/Linkerd proxies are other containers of the same pod)
NVIDIA_PLUGIN_CONTAINERS = ("nvidia-device-plugin-ctr", "nvidia-device-plugin")
_SIDECAR = re.compile(r"sidecar|config-manager|-init$|istio|linkerd|proxy", re.IGNORECASE)


def is_nvidia_plugin_pod(pod):
    labels = _d(_d(pod.get("metadata")).get("labels"))
    return any(labels.get(k) == v for k, v in NVIDIA_PLUGIN_LABELS)


def is_gpu_node(node):
    status, labels = _d(node.get("status")), _d(_d(node.get("metadata")).get("labels"))
    return bool(_int(_d(status.get("capacity")).get(GPU))) or labels.get("nvidia.com/gpu.present") == "true"


def _ready(pod):
    st = _d(pod.get("status"))
    statuses = _dl(st.get("containerStatuses"))
    return st.get("phase") == "Running" and bool(statuses) and all(c.get("ready") for c in statuses)


def _without_config(lines):
    """The log lines without the configuration the plugin prints at start-up (``Running with config:`` and its
    JSON up to the closing brace at the start of a line; JSON member lines of a block cut by tailLines too)."""
    out, in_config = [], False
    for line in lines:
        if in_config:
            if line.rstrip() == "}":
                in_config = False
            continue
        if _CONFIG_START.search(line):
            in_config = True
            continue
        if _JSON_MEMBER.match(line):
            continue
        out.append(line)
    return out


def log_problems(text, limit=5):
    """The last ``limit`` log lines that report a problem (errors, warnings, NVML failures); the plugin's printed
    configuration is not read as problems."""
    lines = [ln.strip() for ln in _without_config((text or "").splitlines()) if ln.strip()]
    lines = [ln for ln in lines if (_INFO_PROBLEM if _KLOG_INFO.match(ln) else _LOG_PROBLEM).search(ln)]
    return lines[-limit:]


def plugin_container(pod):
    """The NVIDIA device plugin's container of ``pod``: by its known names, else the first container that runs
    ``nvidia-device-plugin``, else the first that is no sidecar, else the first. Always named when reading the log:
    the API answers 400 without a container name on a pod of several containers."""
    containers = [c for c in _dl(_d(pod.get("spec")).get("containers")) if isinstance(c.get("name"), str)]
    for name in NVIDIA_PLUGIN_CONTAINERS:
        if any(c["name"] == name for c in containers):
            return name
    for c in containers:
        words = [str(w) for w in (c.get("command") or []) + (c.get("args") or [])] if isinstance(
            c.get("command") or [], list) and isinstance(c.get("args") or [], list) else []
        if any(w.rsplit("/", 1)[-1] == "nvidia-device-plugin" for w in words):
            return c["name"]
    plain = [c["name"] for c in containers if not _SIDECAR.search(c["name"])]
    return (plain or [c["name"] for c in containers] or [None])[0]


def nvidia_plugin_records(node, pod, log_text=None):
    """``k8s.nvidia_device_plugin`` for a GPU ``node``, its plugin ``pod`` (None: none there) and its recent log."""
    name = _d(node.get("metadata")).get("name")
    name = name if isinstance(name, str) and name else "?"
    if pod is None:
        return [_rec("k8s.nvidia_device_plugin", "fail", "no NVIDIA device plugin pod on this GPU node: nvidia.com/gpu "
                     "cannot be registered; check the plugin's DaemonSet (node selector, tolerations) or the GPU "
                     "operator", name)]
    pname = _pod_name(pod)
    facts = {"pod": pname, "namespace": _d(pod.get("metadata")).get("namespace")}
    problems = log_problems(log_text)
    if problems:
        facts["log_problems"] = problems
    if not _ready(pod):
        waiting = [_d(_d(cs.get("state")).get("waiting")).get("reason") for cs in
                   _dl(_d(pod.get("status")).get("containerStatuses"))]
        why = ", ".join(w for w in waiting if isinstance(w, str)) or _d(pod.get("status")).get("phase") or "Pending"
        return [_rec("k8s.nvidia_device_plugin", "fail", "NVIDIA device plugin pod %s is not ready (%s)%s" % (
            pname, why, "; its log: " + " | ".join(problems) if problems else ""), name, facts=facts)]
    if problems:
        return [_rec("k8s.nvidia_device_plugin", "warn", "NVIDIA device plugin pod %s runs but its log reports: %s "
                     "(NVML not loaded: the container runtime is not the nvidia one or the driver is missing; "
                     "see the plugin's prerequisites)" % (pname, " | ".join(problems)), name, facts=facts)]
    return [_rec("k8s.nvidia_device_plugin", "pass", "NVIDIA device plugin pod %s is ready, no error in its recent log"
                 % pname, name, facts=facts)]


# ---------------------------------------------------------------- pods

def _pod_name(pod):
    name = _d(pod.get("metadata")).get("name")
    return name if isinstance(name, str) and name else "?"


def pending_records(namespace, pods):
    out = []
    for pod in pods:
        status = _d(pod.get("status"))
        if status.get("phase") != "Pending":
            continue
        sched = [c for c in _dl(status.get("conditions")) if c.get("type") == "PodScheduled"]
        cond = _d(sched[0]) if sched else {}
        if cond.get("status") == "False":
            msg = cond.get("message") or cond.get("reason") or "no message"
            hint = ""
            if "Insufficient" in msg:
                hint = "; lower the request or free/add nodes with that resource (k8s.gpu/k8s.rdma records say " \
                       "which nodes lack it)"
            elif "taint" in msg:
                hint = "; add the toleration or untaint the nodes"
            elif "affinity" in msg or "selector" in msg:
                hint = "; no node has the labels the pod asks for"
            out.append(_rec("k8s.pending_pod", "fail", "pod %s is unschedulable: %s%s" % (_pod_name(pod), msg, hint),
                            _ns_host(namespace), target=_pod_name(pod)))
        else:
            waiting = [_d(_d(cs.get("state")).get("waiting")) for cs in _dl(status.get("containerStatuses"))]
            why = ", ".join("%s: %s" % (w.get("reason"), w.get("message") or "") for w in waiting if w.get("reason"))
            out.append(_rec("k8s.pending_pod", "warn", "pod %s is Pending%s" % (
                _pod_name(pod), " (%s)" % why if why else " (scheduled, containers not started yet)"),
                _ns_host(namespace), target=_pod_name(pod)))
    return out


def pod_env(pod, prefixes=ENV_PREFIXES):
    """{name: value} of the literal ``NCCL_*``/``UCX_*`` env of every container (valueFrom shown as a reference)."""
    env = {}
    for c in _dl(_d(pod.get("spec")).get("containers")):
        for e in _dl(c.get("env")):
            name = e.get("name") if isinstance(e.get("name"), str) else ""
            if name.startswith(prefixes):
                env[name] = e["value"] if "value" in e else "<from %s>" % ",".join(sorted(_d(e.get("valueFrom"))))
    return env


def env_drift_records(namespace, selector, pods):
    if not pods:
        return [_rec("k8s.nccl_env", "skip", "no pod matches %r in namespace %s" % (selector, namespace),
                     _ns_host(namespace), target=selector)]
    envs = dict((_pod_name(p), pod_env(p)) for p in pods)
    keys = sorted(set(k for e in envs.values() for k in e))
    drift = [k for k in keys if len(set(e.get(k) for e in envs.values())) > 1]
    first = envs[sorted(envs)[0]]
    facts = {"env": first, "pods": sorted(envs)}
    if drift:
        detail = "; ".join("%s: %s" % (k, ", ".join("%s=%s" % (p, envs[p].get(k, "<unset>")) for p in sorted(envs)))
                           for k in drift)
        facts["drift"] = dict((k, dict((p, envs[p].get(k)) for p in sorted(envs))) for k in drift)
        return [_rec("k8s.nccl_env", "warn", "NCCL/UCX environment differs across the %d training pods (%s): every "
                     "rank must use the same settings, or NCCL may hang or pick other transports" % (len(pods), detail),
                     _ns_host(namespace), target=selector, facts=facts)]
    return [_rec("k8s.nccl_env", "pass", "the %d training pods share the same %d NCCL_*/UCX_* variables" % (
        len(pods), len(first)), _ns_host(namespace), target=selector, facts=facts)]


def _selector_matches(selector, labels):
    """A LabelSelector dict (matchLabels + matchExpressions) against ``labels``; {} selects everything."""
    selector = _d(selector)
    for k, v in _d(selector.get("matchLabels")).items():
        if labels.get(k) != v:
            return False
    for expr in _dl(selector.get("matchExpressions")):
        key, op = expr.get("key"), expr.get("operator")
        values = expr.get("values") if isinstance(expr.get("values"), list) else []
        have = labels.get(key) if isinstance(key, str) else None
        ok = {"In": have in values, "NotIn": have not in values, "Exists": key in labels,
              "DoesNotExist": key not in labels}.get(op, False) if isinstance(key, str) else False
        if not ok:
            return False
    return True


def _peer_allows(rules, pod_labels, direction, namespace):
    """True when some rule of ``rules`` (ingress or egress) allows every port from/to all the training pods."""
    key = "from" if direction == "Ingress" else "to"
    own_ns = {"kubernetes.io/metadata.name": namespace}     # the label every namespace carries (1.22+)
    for rule in _dl(rules):
        if rule.get("ports"):
            continue            # port-limited: NCCL's ephemeral ports are not all allowed
        peers = rule.get(key)
        if not peers:
            return True         # no peer list: every source/destination
        for peer in _dl(peers):
            if "ipBlock" in peer:
                continue        # pod IPs are not known here; an ipBlock is not counted as allowing them
            ns_ok = "namespaceSelector" not in peer or _selector_matches(peer["namespaceSelector"], own_ns)
            pods_ok = "podSelector" not in peer or all(_selector_matches(peer["podSelector"], lab) for lab in pod_labels)
            if ns_ok and pods_ok:
                return True
    return False


def network_policy_records(namespace, selector, pods, policies):
    labels = [_d(_d(p.get("metadata")).get("labels")) for p in pods]
    if not labels:
        return []
    out = []
    for pol in policies:
        md, spec = _d(pol.get("metadata")), _d(pol.get("spec"))
        if not any(_selector_matches(spec.get("podSelector"), lab) for lab in labels):
            continue
        types = spec.get("policyTypes") if isinstance(spec.get("policyTypes"), list) else []
        types = [t for t in types if isinstance(t, str)] or (["Ingress"] + (["Egress"] if "egress" in spec else []))
        blocked = []
        for direction, field in (("Ingress", "ingress"), ("Egress", "egress")):
            if direction in types and not _peer_allows(spec.get(field), labels, direction, namespace):
                blocked.append(direction)
        name = md.get("name") if isinstance(md.get("name"), str) and md.get("name") else "?"
        if blocked:
            out.append(_rec("k8s.network_policy", "fail", "NetworkPolicy %s selects the training pods and restricts %s "
                            "without allowing all ports between them: NCCL's bootstrap and its TCP/RDMA-CM "
                            "connections use ephemeral ports, so ranks hang at init; add a rule allowing "
                            "%s the pods of %r on every port" % (
                                name, " and ".join(blocked), "from/to", selector), _ns_host(namespace), target=name,
                            facts={"policy_types": types}))
        else:
            out.append(_rec("k8s.network_policy", "pass", "NetworkPolicy %s selects the training pods and allows "
                            "pod-to-pod traffic between them on every port" % name, _ns_host(namespace), target=name,
                            facts={"policy_types": types}))
    return out


# ---------------------------------------------------------------- collect

def collect(api, nodes=None, namespace=None, selector=None, expect_gpus=None):
    """Every preflight record: per node (``nodes`` names, or every node), and with ``namespace`` per
    namespace (pending pods; with ``selector`` the training pods' env drift and NetworkPolicies)."""
    from kubernetes import client
    out = []
    known = dict((_d(n.get("metadata")).get("name"), n) for n in k8s_api.list_nodes(api))
    plugin_pods = None
    for name in nodes or sorted(known):
        if name not in known:
            out.append(_rec("k8s.node", "error", "node %s is not in the cluster (kubectl get nodes)" % name, name,
                            tool=TOOL))
            continue
        out.extend(node_records(known[name], expect_gpus))
        if not is_gpu_node(known[name]):
            continue
        if plugin_pods is None:
            everything = k8s_api._json(client.CoreV1Api(api).list_pod_for_all_namespaces(
                _preload_content=False, _request_timeout=k8s_api.REQUEST_TIMEOUT)).get("items") or []
            plugin_pods = dict((_d(p.get("spec")).get("nodeName"), p) for p in everything if is_nvidia_plugin_pod(p)
                               and not _d(p.get("metadata")).get("deletionTimestamp"))
        pod = plugin_pods.get(name)
        text = None
        if pod is not None:
            try:
                text = k8s_api.logs(api, _d(pod.get("metadata")).get("namespace"), _pod_name(pod),
                                    container=plugin_container(pod), limit_bytes=256 << 10, tail_lines=200)
            except k8s_api.K8sError as exc:
                text = "error: cannot read the plugin's log: %s" % exc
        out.extend(nvidia_plugin_records(known[name], pod, text))
    if namespace:
        pods = k8s_api._call(api, "v1", "Pod", "list", namespace).get("items") or []
        out.extend(pending_records(namespace, pods))
        if selector:
            training = [p for p in pods if k8s_api._match(_d(_d(p.get("metadata")).get("labels")), selector)]
            out.extend(env_drift_records(namespace, selector, training))
            from kubernetes import client
            policies = k8s_api._json(client.NetworkingV1Api(api).list_namespaced_network_policy(
                namespace, _preload_content=False, _request_timeout=k8s_api.REQUEST_TIMEOUT)).get("items") or []
            out.extend(network_policy_records(namespace, selector, training, policies))
    return out


def split_selector(selector):
    """Validate an equality label selector (``a=b,c``); returns it, or raises ValueError."""
    for term in filter(None, (t.strip() for t in (selector or "").split(","))):
        if not re.match(r"^!?[A-Za-z0-9_./-]+((==?|!=)[A-Za-z0-9_.-]*)?$", term):
            raise ValueError("label selector term %r is not of the form key=value, key!=value, key or !key" % term)
    return selector
