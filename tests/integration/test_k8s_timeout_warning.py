# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""An explicit module ``timeout`` alone, shorter than the pods' deadline plus start-up (issue 22, review item 4): kept
(it is the user's bound on the wait) and warned about in the module result with both figures; no warning when the
wait covers the pods' time or is left to the plan."""

from __future__ import annotations

import pytest

pytest.importorskip("kubernetes")
pytest.importorskip("kmock")

from ansible.module_utils import _internal as ansible_internal  # noqa: E402
from ansible.module_utils.common import warnings as ansible_warnings  # noqa: E402
from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_plan  # noqa: E402
from ansible_collections.aifabric.acceptance.plugins.modules import k8s_workload  # noqa: E402
from ansible_collections.aifabric.acceptance.tests.integration.test_k8s_cluster_semantics import call  # noqa: E402
from ansible_collections.aifabric.acceptance.tests.integration.test_k8s_workload_lifecycle import IMAGE  # noqa: E402
from ansible_collections.aifabric.acceptance.tests.k8s.fake_apiserver import fake_cluster  # noqa: E402
from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules.module_harness import patch_exits  # noqa: E402

NODES = ["gpu-node-01", "gpu-node-02"]


def _check_mode(fake, **args):
    ansible_warnings._global_warnings.clear()  # pylint: disable=protected-access
    res = call(k8s_workload, dict({"image": IMAGE, "kubeconfig": fake.kubeconfig, "kind": "gemm_bench", "hosts": NODES,
                                   "run_id": "tw4", "_ansible_check_mode": True}, **args))
    assert not res.kwargs.get("failed"), res.kwargs
    return [str(w) for w in ansible_warnings.get_warning_messages()]


def test_a_short_timeout_alone_is_kept_with_a_warning_naming_both_figures(tmp_path, monkeypatch):
    patch_exits(monkeypatch)
    # the module's side, as on a managed host: once anything in this process imported Ansible's controller code
    # (another test file before this one, as under pytest -n), warn() goes to the controller's display instead of
    # the module result
    monkeypatch.setattr(ansible_internal, "is_controller", False)
    plan = k8s_plan.build("gemm_bench", NODES, {"image": IMAGE}, "tw4", {})
    with fake_cluster(tmp_path) as fake:
        warnings = _check_mode(fake, timeout_s=60)
        assert any(w.startswith("timeout_s 60 is shorter than the pods' deadline %s s plus 600 s of start-up (%s s): "
                                "pods still inside their deadline will be stopped at 60 s"
                                % (plan["deadline_s"], plan["timeout_s"])) for w in warnings), warnings
        assert _check_mode(fake) == []
        assert _check_mode(fake, timeout_s=plan["timeout_s"]) == []
