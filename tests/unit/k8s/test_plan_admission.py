# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every plan's pods as a cluster's admission leaves them (tests/k8s/fake_apiserver.py): a namespace LimitRange
with the usual small defaults (1 CPU, 1Gi) changes none of them - each states its cpu and memory requests and
limits, and its memory limit is above its memory-backed /dev/shm (the kubelet caps the tmpfs at the pod's
memory limit and charges what NCCL writes there to it)."""

from __future__ import annotations

import pytest

pytest.importorskip("kubernetes")
pytest.importorskip("kmock")

from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_api, k8s_manifests as km  # noqa: E402
from ansible_collections.aifabric.acceptance.tests.k8s.fake_apiserver import fake_cluster  # noqa: E402
from ansible_collections.aifabric.acceptance.tests.unit.k8s.test_fake_semantics import wait  # noqa: E402
from ansible_collections.aifabric.acceptance.tests.unit.plugins.module_utils import k8s_cases as cases  # noqa: E402

SMALL_DEFAULTS = [{"type": "Container", "default": {"cpu": "1", "memory": "1Gi"},
                   "defaultRequest": {"cpu": "500m", "memory": "512Mi"}}]


@pytest.mark.parametrize("case", [name for name, _plan in cases.plans()])
def test_limit_range_defaults_change_no_pod_of_a_plan(tmp_path, case):
    pod = dict(cases.FULL_POD)
    del pod["active_deadline_s"]
    plan = dict(cases.plans(pod))[case]
    with fake_cluster(tmp_path, operators=("mpi", "volcano")) as fake:
        fake.server.limit_range(plan["namespace"], SMALL_DEFAULTS)
        k8s_api.create(fake.api, k8s_plan_objects(plan), plan["run_id"])
        pods = wait(lambda: fake.server.pods(k8s_api.run_selector(plan["run_id"])), what="the plan's pods")
        for raw in pods:
            md, spec = raw["metadata"], raw["spec"]
            assert "kubernetes.io/limit-ranger" not in (md.get("annotations") or {}), (md["name"], md["annotations"])
            for c in spec["containers"]:
                requests, limits = c["resources"]["requests"], c["resources"]["limits"]
                assert set(requests) >= {"cpu", "memory"} and set(limits) >= {"cpu", "memory"}, c["resources"]
                assert km.quantity(limits["cpu"]) >= km.quantity(requests["cpu"]) >= 1
                shm = [v["emptyDir"]["sizeLimit"] for v in spec["volumes"] if v["name"] == "dshm"]
                if c["name"] != "launcher":
                    assert shm and km.quantity(limits["memory"]) > km.quantity(shm[0]), (limits, shm)


def k8s_plan_objects(plan):
    from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_plan
    return k8s_plan.objects_of(plan)
