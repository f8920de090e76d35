# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Kubernetes planner's env kind takes env_probe's expect mapping with the module's keys only (issue 23): over
SSH the module's argument spec refuses an unknown key; the env pods get their options from the planner, which
refuses it the same way (before: ``expect: {expect_gpu_count: 8}``, the old name, was carried to the pods and never
judged)."""

from __future__ import annotations

import pytest

from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_plan
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import AcceptanceError


def test_the_environment_expectations_pass():
    opts = k8s_plan.options_of("env_probe", {"expect": {"gpu_count": 8, "npu_count": 0, "package_versions": {"torch": ""}}})
    assert opts["expect"] == {"gpu_count": 8, "npu_count": 0, "package_versions": {"torch": ""}}
    assert k8s_plan.options_of("env_probe", {})["expect"] == {}


@pytest.mark.parametrize("expect, words", [
    ({"expect_gpu_count": 8}, "unknown expect key 'expect_gpu_count'"),
    ({"gpu_count": 8, "gpu_modle": "H100"}, "unknown expect key 'gpu_modle'"),
    ([8], "expect must be a mapping"),
])
def test_an_unknown_expect_key_is_refused_naming_it(expect, words):
    with pytest.raises(AcceptanceError, match=words):
        k8s_plan.options_of("env_probe", {"expect": expect})
