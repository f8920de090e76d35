# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""k8s_node_verdicts against the fake API server over real HTTP: labels, annotations and the NoSchedule taint of a
run's verdicts; idempotent, check mode shows and changes nothing, other taints and nodes outside the run are never
touched, state=absent removes everything of ours; every API call is allowed by extras/k8s/rbac-node-verdicts.yml."""

from __future__ import annotations

import copy
import os

import pytest

pytest.importorskip("kubernetes")
pytest.importorskip("kmock")

from ansible.module_utils.testing import patch_module_args  # noqa: E402
from ansible_collections.aifabric.acceptance.tests.k8s.fake_apiserver import fake_cluster, gpu_nodes  # noqa: E402
from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules.module_harness import (  # noqa: E402
    Exit, patch_exits)

from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_api  # noqa: E402
from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_node_verdicts as nv  # noqa: E402
from ansible_collections.aifabric.acceptance.plugins.modules import k8s_node_verdicts  # noqa: E402
from ansible_collections.aifabric.acceptance.tests.integration.test_k8s_device_plugin_lifecycle import (  # noqa: E402
    ROOT, _rules)
from ansible_collections.aifabric.acceptance.tests.integration.test_k8s_workload_lifecycle import (  # noqa: E402
    _request_permission)

GPU_TAINT = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}


def state(api):
    out = {}
    for n in k8s_api.list_nodes(api):
        md = n["metadata"]
        out[md["name"]] = (dict((k, v) for k, v in (md.get("labels") or {}).items() if k.startswith("aifabric.io/")),
                           dict((k, v) for k, v in (md.get("annotations") or {}).items()
                                if k.startswith("aifabric.io/")),
                           n.get("spec", {}).get("taints") or [])
    return out


def test_verdict_labels_and_taints_whole_fleet(tmp_path, monkeypatch):
    patch_exits(monkeypatch)
    nodes = gpu_nodes(4)
    nodes[2]["taints"] = [dict(GPU_TAINT)]
    with fake_cluster(tmp_path, nodes=nodes) as fake:
        def run(args, check_mode=False):
            args = dict({"kubeconfig": fake.kubeconfig}, **args)
            if check_mode:
                args["_ansible_check_mode"] = True
            with patch_module_args(args):
                with pytest.raises(Exit) as exc:
                    k8s_node_verdicts.main()
            return exc.value

        first = len(fake.server.requests)
        before = state(fake.api)
        # gpu-node-04 is not part of this run: never touched
        verdicts = {"gpu-node-01": "pass", "gpu-node-02": "warn", "gpu-node-03": "fail"}
        args = {"verdicts": verdicts, "run_id": "r20261123", "report": "/srv/reports/r20261123", "taint": True}
        dry = run(args, check_mode=True)
        assert dry.kwargs["changed"] is True and [c["node"] for c in dry.kwargs["changes"]] == sorted(verdicts)
        assert state(fake.api) == before
        res = run(args)
        assert res.kwargs["changed"] is True
        after = state(fake.api)
        assert after["gpu-node-01"] == ({nv.LABEL: "pass"}, {nv.RUN_ANNOTATION: "r20261123",
                                                             nv.REPORT_ANNOTATION: "/srv/reports/r20261123"}, [])
        assert after["gpu-node-02"][0] == {nv.LABEL: "warn"} and after["gpu-node-02"][2] == []
        # the failed node: our taint next to the one it had
        assert after["gpu-node-03"][2] == [GPU_TAINT, {"key": nv.TAINT_KEY, "value": "fail", "effect": "NoSchedule"}]
        assert after["gpu-node-04"] == before["gpu-node-04"]
        again = run(args)
        assert again.kwargs["changed"] is False and again.kwargs["changes"] == []
        # the node was repaired: a new run passes it, the taint goes, the other taint stays
        fixed = run(dict(args, verdicts={"gpu-node-03": "pass"}, run_id="r20261124"))
        assert [c["node"] for c in fixed.kwargs["changes"]] == ["gpu-node-03"]
        assert state(fake.api)["gpu-node-03"] == ({nv.LABEL: "pass"}, {nv.RUN_ANNOTATION: "r20261124",
                                                                       nv.REPORT_ANNOTATION: "/srv/reports/r20261123"},
                                                  [GPU_TAINT])
        gone = run({"state": "absent"})
        assert sorted(c["node"] for c in gone.kwargs["changes"]) == sorted(verdicts)
        cleared = state(fake.api)
        assert all(cleared[n][:2] == ({}, {}) for n in cleared)
        assert cleared["gpu-node-03"][2] == [GPU_TAINT]
        assert run({"state": "absent"}).kwargs["changed"] is False
        bad = run({"verdicts": {"gpu-node-01": "ok"}, "run_id": "x"})
        assert bad.failed and "unknown verdicts" in bad.kwargs["msg"]
        missing = run({"verdicts": {"gpu-node-99": "fail"}, "run_id": "x"})
        assert missing.failed and "gpu-node-99" in missing.kwargs["msg"]
        used = set(filter(None, (_request_permission(m, p, q) for m, p, q in fake.server.requests[first:])))
    allowed = _rules(os.path.join(ROOT, "extras", "k8s", "rbac-node-verdicts.yml"))
    assert used - allowed == set() and allowed - used == set(), (used, allowed)


def test_patches_are_pure_and_idempotent():
    node = {"metadata": {"name": "n", "labels": {"a": "b"}}, "spec": {"taints": [dict(GPU_TAINT)]}}
    patch = nv.node_patch(node, "fail", "r1", None, taint=True)
    assert patch == {"metadata": {"labels": {nv.LABEL: "fail"}, "annotations": {nv.RUN_ANNOTATION: "r1"}},
                     "spec": {"taints": [GPU_TAINT, {"key": nv.TAINT_KEY, "value": "fail", "effect": "NoSchedule"}]}}
    applied = copy.deepcopy(node)
    applied["metadata"]["labels"][nv.LABEL] = "fail"
    applied["metadata"]["annotations"] = {nv.RUN_ANNOTATION: "r1"}
    applied["spec"] = patch["spec"]
    assert nv.node_patch(applied, "fail", "r1", None, taint=True) is None
    assert nv.removal_patch(node) is None
    with pytest.raises(nv.VerdictError):
        nv.node_patch(node, "broken", "r1")


def test_shipped_node_verdicts_rbac_validates():
    kubernetes_validate = pytest.importorskip("kubernetes_validate")
    import yaml
    with open(os.path.join(ROOT, "extras", "k8s", "rbac-node-verdicts.yml")) as handle:
        items = yaml.safe_load(handle)["items"]
    for obj in items:
        for version in ("1.28", "1.37"):
            kubernetes_validate.validate(copy.deepcopy(obj), version, strict=True)
