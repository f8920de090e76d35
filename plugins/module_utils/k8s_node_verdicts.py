# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Acceptance verdicts on the Kubernetes nodes: a label, annotations and optionally a NoSchedule taint (private).

- ``node_patch(node, verdict, run_id, report, taint)`` - the merge patch that makes ``node`` carry
  ``aifabric.io/acceptance=<verdict>`` (pass, warn, fail, error, skip), the annotations
  ``aifabric.io/acceptance-run`` and ``aifabric.io/acceptance-report``, and - when ``taint`` - the
  taint ``aifabric.io/acceptance=<verdict>:NoSchedule`` (any other taint is kept); None when the
  node already carries exactly that (idempotent).
- ``removal_patch(node)`` - removes all of it (None when nothing of ours is there).
- ``apply(api, verdicts, ...)`` / ``remove(api, nodes)`` - read every node, patch only those of the
  run (the keys of ``verdicts``, or ``nodes``) that differ; never any other node. Check mode
  returns the same changes and patches nothing. A merge patch replaces ``spec.taints`` as a whole, so a
  patch that writes it carries the read node's ``metadata.resourceVersion`` as a precondition: when another
  controller changed the node meanwhile (a NoExecute taint of the node lifecycle controller, say) the API
  answers 409 Conflict, and the node is read again and its patch computed anew (``CONFLICT_RETRIES`` times).

Python 3.8 syntax; imports nothing from Ansible.
"""

from __future__ import annotations

from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_api
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import AcceptanceError

LABEL = "aifabric.io/acceptance"
RUN_ANNOTATION = "aifabric.io/acceptance-run"
REPORT_ANNOTATION = "aifabric.io/acceptance-report"
TAINT_KEY = LABEL
VERDICTS = ("pass", "warn", "fail", "error", "skip")
CONFLICT_RETRIES = 5


class VerdictError(AcceptanceError):
    """Bad input (unknown verdict, node not in the cluster)."""


def _d(value):
    return value if isinstance(value, dict) else {}


def _our_taint(t):
    return isinstance(t, dict) and t.get("key") == TAINT_KEY


def node_patch(node, verdict, run_id, report=None, taint=False):
    """The merge patch for ``node`` (a Node dict), or None when nothing would change."""
    if verdict not in VERDICTS:
        raise VerdictError("verdict %r of node %s is not one of %s" % (verdict, _d(node.get("metadata")).get("name"),
                                                                       ", ".join(VERDICTS)))
    md = _d(node.get("metadata"))
    labels, annotations = _d(md.get("labels")), _d(md.get("annotations"))
    patch = {}
    if labels.get(LABEL) != verdict:
        patch.setdefault("metadata", {})["labels"] = {LABEL: verdict}
    want = {RUN_ANNOTATION: run_id}
    want[REPORT_ANNOTATION] = report if report else None
    changed = dict((k, v) for k, v in want.items() if annotations.get(k) != v and not (v is None and k not in annotations))
    if changed:
        patch.setdefault("metadata", {})["annotations"] = changed
    taints = [t for t in _d(node.get("spec")).get("taints") or [] if isinstance(t, dict)]
    others = [t for t in taints if not _our_taint(t)]
    ours = [{"key": TAINT_KEY, "value": verdict, "effect": "NoSchedule"}] if taint else []
    if [t for t in taints if _our_taint(t)] != ours:
        patch["spec"] = {"taints": others + ours}
    return patch or None


def removal_patch(node):
    md = _d(node.get("metadata"))
    patch = {}
    if LABEL in _d(md.get("labels")):
        patch.setdefault("metadata", {})["labels"] = {LABEL: None}
    gone = dict((k, None) for k in (RUN_ANNOTATION, REPORT_ANNOTATION) if k in _d(md.get("annotations")))
    if gone:
        patch.setdefault("metadata", {})["annotations"] = gone
    taints = [t for t in _d(node.get("spec")).get("taints") or [] if isinstance(t, dict)]
    if any(_our_taint(t) for t in taints):
        patch["spec"] = {"taints": [t for t in taints if not _our_taint(t)]}
    return patch or None


def _nodes(api):
    return dict((_d(n.get("metadata")).get("name"), n) for n in k8s_api.list_nodes(api))


def _read_node(api, name):
    """The node ``name`` now (a list with a field selector: the rights of extras/k8s/rbac-node-verdicts.yml), or
    None when it is gone."""
    from kubernetes import client
    try:
        doc = k8s_api._json(client.CoreV1Api(api).list_node(
            field_selector="metadata.name=%s" % name, _preload_content=False,
            _request_timeout=k8s_api.REQUEST_TIMEOUT))
    except k8s_api._api_errors() as exc:
        raise k8s_api._fail("cannot read node %s" % name, exc, verb="list", plural="nodes")
    items = [n for n in doc.get("items") or [] if _d(n.get("metadata")).get("name") == name]
    return items[0] if items else None


def _send(api, name, patch, node):
    """Send ``patch``; one that writes spec.taints applies only to the version of ``node`` it was computed from.
    Returns False on 409 Conflict (the node changed since it was read)."""
    from kubernetes import client
    body = patch
    version = _d(node.get("metadata")).get("resourceVersion")
    if "spec" in patch and version:
        body = dict(patch, metadata=dict(_d(patch.get("metadata")), resourceVersion=version))
    try:
        k8s_api._json(client.CoreV1Api(api).patch_node(
            name, body, _preload_content=False, _request_timeout=k8s_api.REQUEST_TIMEOUT,
            _content_type="application/merge-patch+json"))
    except k8s_api._api_errors() as exc:
        if k8s_api._status_of(exc)[0] == 409:
            return False
        raise k8s_api._fail("cannot patch node %s" % name, exc, verb="patch", plural="nodes")
    return True


def _patch_until_applied(api, name, node, make_patch):
    """Patch ``node`` with ``make_patch(node)``; on 409 Conflict read it again and retry. Returns the patch sent
    last (None when nothing was left to change). Raises VerdictError after CONFLICT_RETRIES conflicts."""
    for _attempt in range(CONFLICT_RETRIES + 1):
        patch = make_patch(node)
        if patch is None or _send(api, name, patch, node):
            return patch
        node = _read_node(api, name)
        if node is None:
            raise VerdictError("node %s was deleted while its verdict was written" % name)
    raise VerdictError("node %s: 409 Conflict %d times - another controller changes it faster than its taints can be "
                       "written without losing its change; try again (nothing of ours was written over it)" % (
                           name, CONFLICT_RETRIES + 1))


def apply(api, verdicts, run_id, report=None, taint=False, taint_on=("fail", "error"), check_mode=False):
    """Label (and taint) the nodes of ``verdicts`` ({node: verdict}); returns [{node, verdict, patch}] of changes."""
    known = _nodes(api)
    missing = sorted(n for n in verdicts if n not in known)
    if missing:
        raise VerdictError("not nodes of this cluster: %s (the run's hosts must be node names)" % ", ".join(missing))
    changes = []
    for name in sorted(verdicts):
        def make(node, name=name):
            return node_patch(node, verdicts[name], run_id, report, taint and verdicts[name] in taint_on)
        patch = make(known[name])
        if patch is not None and not check_mode:
            patch = _patch_until_applied(api, name, known[name], make)
        if patch is not None:
            changes.append({"node": name, "verdict": verdicts[name], "patch": patch})
    return changes


def remove(api, nodes=None, check_mode=False):
    """Remove label, annotations and taint from ``nodes`` (default: every node carrying the label)."""
    known = _nodes(api)
    names = nodes if nodes else sorted(n for n, obj in known.items()
                                       if LABEL in _d(_d(obj.get("metadata")).get("labels")))
    changes = []
    for name in sorted(names):
        if name not in known:
            continue
        patch = removal_patch(known[name])
        if patch is not None and not check_mode:
            patch = _patch_until_applied(api, name, known[name], removal_patch)
        if patch is not None:
            changes.append({"node": name, "patch": patch})
    return changes
