# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Kubernetes part 2 against a real cluster (opt-in: ``pytest -m cluster`` with KUBECONFIG set), read-only.

- preflight over every node of the cluster: every node gets records, every record keeps the contract and
  names a node of the cluster;
- the RDMA shared device plugin in check mode: the plan names the ConfigMap and the DaemonSet and writes
  nothing (the objects are still absent, or unchanged, afterwards).

Nothing here changes the cluster; the account needs get/list on nodes, pods, pods/log, configmaps and
daemonsets (extras/k8s/rbac-preflight.yml plus read access to kube-system's configmaps and daemonsets).
"""

from __future__ import annotations

import os

import pytest

pytest.importorskip("kubernetes")

from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_api, results  # noqa: E402
from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_device_plugin as dp  # noqa: E402
from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_preflight  # noqa: E402


def _connect(request):
    if "cluster" not in (request.config.getoption("markexpr") or ""):
        pytest.skip("real-cluster test: select it with -m cluster (and set KUBECONFIG)")
    if not os.environ.get("KUBECONFIG"):
        pytest.skip("real-cluster test: KUBECONFIG is not set")
    return k8s_api.connect({"kubeconfig": os.environ["KUBECONFIG"], "context": os.environ.get("K8S_AUTH_CONTEXT")})


@pytest.mark.cluster
def test_real_cluster_preflight_reads_every_node(request):
    api = _connect(request)
    try:
        nodes = sorted(n["metadata"]["name"] for n in k8s_api.list_nodes(api))
        recs = k8s_preflight.collect(api)
    finally:
        api.close()
    assert nodes, "the cluster lists no node"
    assert sorted(set(r["host"] for r in recs) & set(nodes)) == nodes      # every node judged
    for rec in recs:
        assert results.validate(rec) == [], rec
        assert rec["check"].startswith("k8s.")


@pytest.mark.cluster
def test_real_cluster_device_plugin_check_mode_writes_nothing(request):
    api = _connect(request)
    cfg = dp.config([{"resourceName": "hca_shared_devices_a", "resourcePrefix": "rdma", "rdmaHcaMax": 63,
                      "selectors": {"vendors": ["15b3"]}}])
    objects = dp.manifests(cfg)
    try:
        before = [dp._read(api, obj) for obj in objects]
        try:
            actions = dp.apply(api, objects, check_mode=True)
        except dp.PluginError as exc:            # a plugin deployed by someone else: left alone, says so
            pytest.skip("the cluster runs a device plugin this collection does not manage: %s" % exc)
        after = [dp._read(api, obj) for obj in objects]
    finally:
        api.close()
    assert [a["object"].split("/")[0] for a in actions] == ["ConfigMap", "DaemonSet"]
    assert all(a["action"] in ("created", "updated", "unchanged") for a in actions)
    assert [None if o is None else o["metadata"].get("resourceVersion") for o in after] == \
        [None if o is None else o["metadata"].get("resourceVersion") for o in before]
