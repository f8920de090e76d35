# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Kubernetes kinds carry their module's name since 2.0.0 (docs/architecture.md, "One name per tool"); a
playbook of 1.x keeps working until 3.0.0: its kind and its option group plan exactly what the new names plan, with
a deprecation warning for each former name, and the pods a 1.x run left behind (labelled with the former kind) are
still found and removed by ``state: absent``."""

from __future__ import annotations

import os

import pytest
import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.testing import patch_module_args

from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_api, k8s_manifests as km, k8s_plan
from ansible_collections.aifabric.acceptance.plugins.modules import k8s_workload
from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules.module_harness import Exit, patch_exits

NODES = ["gpu-node-01", "gpu-node-02", "gpu-node-03"]
IMAGE = "registry.example.com/acceptance/nccl-tests:2.17-mpi"
# what a task of 1.x said: its kind -> (the option group it filled then, the options in it, more module options)
FORMER = {
    "env": ("env_probe", {"timeout_s": 30}, {}),
    "gemm": ("gemm", {"dtypes": ["bf16"]}, {}),
    "nccl": ("nccl", {"collectives": ["all_reduce"], "tool_dir": "/opt/nccl-tests/build"}, {}),
    "nccl_multinode": ("nccl", {"collectives": ["all_reduce"]}, {"launcher": "volcano"}),
    "perftest": ("perftest", {"hcas": ["mlx5_0"]}, {"rounds": [[["gpu-node-01", "gpu-node-02"]]], "gpus_per_pod": 0}),
    "allreduce_multinode": ("allreduce_probe", {"max_bytes": "1G"}, {}),
    "dcgm": ("dcgm", {"level": 2}, {}),
    "soak": ("soak", {"duration_s": 60}, {}),
}


def test_every_former_kind_is_a_case_here():
    assert sorted(FORMER) == sorted(k8s_plan.KINDS_RENAMED)


def _render(monkeypatch, tmp_path, args):
    """(the manifests a render-mode run writes, {name: object}; the deprecation warnings the module gave)."""
    said = []
    monkeypatch.setattr(k8s_workload.AnsibleModule, "deprecate", lambda self, msg, **kw: said.append((msg, kw)))
    with patch_module_args(dict(args, image=IMAGE, hosts=NODES, run_id="fk1", render_dir=str(tmp_path))):
        with pytest.raises(Exit) as exc:
            k8s_workload.main()
    assert not exc.value.failed, exc.value.kwargs
    manifests = {}
    for path in exc.value.kwargs["files"]:
        with open(path, encoding="utf-8") as handle:
            manifests[os.path.basename(path)] = yaml.safe_load(handle)
    return manifests, said


@pytest.mark.parametrize("former", sorted(FORMER))
def test_a_former_kind_plans_what_its_new_name_plans_and_warns(monkeypatch, tmp_path, former):
    patch_exits(monkeypatch)
    group, options, more = FORMER[former]
    kind = k8s_plan.KINDS_RENAMED[former]
    new, new_said = _render(monkeypatch, tmp_path / "new",
                            dict(more, kind=kind, **{k8s_workload.KIND_OPTIONS[kind]: options}))
    old, old_said = _render(monkeypatch, tmp_path / "old", dict(more, kind=former, **{group: options}))
    assert old == new and len(new) >= 2       # the same objects, field by field
    assert new_said == []
    assert old_said == [("kind %s is deprecated: kinds carry their module's name since 2.0.0, use kind %s (%s is "
                         "accepted until 3.0.0)" % (former, kind, former),
                         {"version": "3.0.0", "collection_name": "aifabric.acceptance"})]
    if group != k8s_workload.KIND_OPTIONS[kind]:      # the option group was renamed with its kind: Ansible's alias warning
        validation = ArgumentSpecValidator(k8s_workload.argument_spec()).validate({"kind": former, group: options})
        assert validation.validated_parameters[k8s_workload.KIND_OPTIONS[kind]] == options
        assert [(d["msg"], d["version"], d["collection_name"]) for d in validation._deprecations] == [
            ("Alias '%s' is deprecated. See the module docs for more information" % group, "3.0.0",
             "aifabric.acceptance")]
    kinds = set(o["metadata"]["labels"][km.KIND_LABEL] for o in new.values() if o["kind"] != "ConfigMap")
    assert kinds == {kind}                    # the objects carry the kind's new name


@pytest.mark.parametrize("former", ["gemm", "nccl_multinode", "perftest"])
def test_the_task_timeout_of_a_former_kind_is_its_new_names(former):
    group, options, more = FORMER[former]
    kind = k8s_plan.KINDS_RENAMED[former]
    common = {"image": IMAGE, "hosts": NODES}
    new = k8s_workload.task_timeout_s(dict(common, kind=kind, **dict(more, **{k8s_workload.KIND_OPTIONS[kind]: options})),
                                      60)
    old = k8s_workload.task_timeout_s(dict(common, kind=former, **dict(more, **{group: options})), 60)
    assert old == new > 60


def _as_1x(obj, former):
    """An object of a 1.x plan: labelled with the former kind, named after it (what k8s_plan built before 2.0.0)."""
    new = k8s_plan.KINDS_RENAMED[former]
    obj["metadata"]["name"] = obj["metadata"]["name"].replace(new.replace("_", "-"), former.replace("_", "-"))
    template = (obj.get("spec") or {}).get("template") or {}
    for labels in (obj["metadata"].get("labels"), (template.get("metadata") or {}).get("labels")):
        if labels and labels.get(km.KIND_LABEL) == new:
            labels[km.KIND_LABEL] = former
    return obj


def test_leftover_pods_of_a_former_kind_are_removed_by_state_absent(monkeypatch, tmp_path):
    """Pods a 1.x run left running (Jobs labelled kind=gemm and kind=nccl) next to a 2.x run's: state=absent of the
    old run id removes every one of its objects, whatever kind label they carry, and nothing of the other run."""
    pytest.importorskip("kubernetes")
    pytest.importorskip("kmock")
    from ansible_collections.aifabric.acceptance.tests.k8s.fake_apiserver import fake_cluster
    from ansible_collections.aifabric.acceptance.tests.unit.k8s.test_fake_semantics import wait
    patch_exits(monkeypatch)
    with fake_cluster(tmp_path) as fake:
        fake.server.script("hang")
        old = []
        for former in ("gemm", "nccl"):
            plan = k8s_plan.build(k8s_plan.KINDS_RENAMED[former], NODES[:2], {"image": IMAGE}, "old1")
            old += [_as_1x(o, former) for o in plan["steps"][0]["objects"]]
        k8s_api.create(fake.api, old, "old1", namespace="default")
        keep = k8s_plan.build("gemm_bench", NODES[2:], {"image": IMAGE}, "new1")
        k8s_api.create(fake.api, keep["steps"][0]["objects"], "new1", namespace="default")
        selector = "%s=old1" % k8s_api.RUN_LABEL
        pods = wait(lambda: len(fake.server.pods(selector)) == 4 and fake.server.pods(selector), what="the 1.x pods")
        assert sorted(p["metadata"]["labels"][km.KIND_LABEL] for p in pods) == ["gemm", "gemm", "nccl", "nccl"]
        assert fake.leftovers("old1") == ["Job/default/aif-old1-gemm-0", "Job/default/aif-old1-gemm-1",
                                          "Job/default/aif-old1-nccl-0", "Job/default/aif-old1-nccl-1"] + sorted(
            "Pod/default/%s" % p["metadata"]["name"] for p in pods)
        with patch_module_args({"state": "absent", "run_id": "old1", "kubeconfig": fake.kubeconfig,
                                "cleanup_timeout_s": 30}):
            with pytest.raises(Exit) as exc:
                k8s_workload.main()
        assert not exc.value.failed and exc.value.kwargs["leftover"] == []
        assert fake.leftovers("old1") == []
        assert fake.leftovers("new1")[0] == "Job/default/aif-new1-gemm-bench-0"
        k8s_api.cleanup(fake.api, "default", "new1", timeout_s=30)


def test_the_modules_deprecation_names_the_tables_version():
    """k8s_workload gives the version as a literal (ansible-test's pylint reads it from the call): it is the table's."""
    with open(k8s_workload.__file__, encoding="utf-8") as handle:
        source = handle.read()
    assert 'module.deprecate(deprecation, version="%s"' % k8s_plan.KINDS_RENAMED_UNTIL in source
