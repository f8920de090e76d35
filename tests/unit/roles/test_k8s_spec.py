# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The k8s role's variables (issue 23): one default each, one name per setting on both substrates.

- meta/argument_specs.yml's ``default:`` is defaults/main.yml's value, for every variable;
- every option mapping defaults to ``{}`` (the module's or the tool adapter's defaults apply);
- k8s_pod / k8s_rdma_pod declare exactly k8s_workload's pod options (less image and namespace, the role's own
  variables) and k8s_connection exactly the connection options, with the module's types, and no default;
- the stage variables it shares with the SSH roles (probe_options, gpu_*, nccl_*, rdma_*) are declared as the
  owning role declares them - type, elements, choices, default, suboptions - plus only the pods' own options the
  planner adds (k8s_plan.KUBERNETES_OPTIONS), so a setting validates the same on both substrates;
- every workload task passes its stage's mapping whole and carries its stage's tag.
"""

from __future__ import annotations

import os
import sys

import pytest
import yaml

from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_plan
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import (
    nccl_test as nccl_tests, perftest_sweep as perftest, allreduce_probe as torch_allreduce)
from ansible_collections.aifabric.acceptance.plugins.modules import k8s_workload

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ROLES = os.path.join(ROOT, "roles")
sys.path.insert(0, os.path.join(ROOT, "tests", "unit"))
import test_vocabulary  # noqa: E402  pylint: disable=wrong-import-position

# the stage variables the k8s role reads -> the SSH role that owns them
SHARED = {"probe_options": "probe", "gpu_checks": "gpu", "gpu_gemm": "gpu", "gpu_nccl": "gpu", "gpu_expect": "gpu",
          "gpu_soak": "gpu", "gpu_soak_s": "gpu", "gpu_copy_bandwidth": "gpu",
          "nccl_checks": "nccl", "nccl_options": "nccl", "nccl_allreduce_probe": "nccl", "nccl_expect": "nccl",
          "rdma_tests": "rdma", "rdma_perftest": "rdma", "rdma_pairings": "rdma", "rdma_expect": "rdma",
          "gpu_dcgm": "gpu", "rdma_counter_window": "rdma", "rdma_port_counters": "rdma",
          "probe_lldp": "probe", "probe_topology": "probe"}
# the pods' own options (not the tool's) a shared mapping takes on Kubernetes
POD_OWN = {"nccl_options": ("nccl_test", nccl_tests), "nccl_allreduce_probe": ("allreduce_probe", torch_allreduce),
           "rdma_perftest": ("perftest_sweep", perftest)}
MAPPINGS = ("k8s_pod", "k8s_connection", "k8s_rdma_pod")
# workload kind -> (its stage's tag, the option holding the stage's mapping, the variable in it)
KINDS = {"env_probe": ("probe", "env_probe", "probe_options"), "gemm_bench": ("gpu", "gemm_bench", "gpu_gemm"),
         "nccl_test": ("gpu", "nccl_test", "gpu_nccl"), "perftest_sweep": ("rdma", "perftest_sweep", "rdma_perftest"),
         "nccl_test_multinode": ("nccl", "nccl_test", "nccl_options"),
         "allreduce_probe": ("nccl", "allreduce_probe", "nccl_allreduce_probe"),
         "dcgm_diag": ("gpu", "dcgm_diag", "gpu_dcgm"), "port_counters": ("rdma", "port_counters", "rdma_port_counters"),
         "gpu_soak": ("gpu", "gpu_soak", "gpu_soak"), "copy_bandwidth": ("gpu", "copy_bandwidth", "gpu_copy_bandwidth"),
         "fabric_topology": ("probe", "fabric_topology", "probe_topology")}


def _load(*parts):
    with open(os.path.join(ROLES, *parts), encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def role_spec(role="k8s"):
    return _load(role, "meta", "argument_specs.yml")["argument_specs"]["main"]["options"]


def _shape(option):
    return dict((key, option.get(key)) for key in ("type", "elements", "choices"))


def test_the_argument_spec_defaults_are_defaults_main_yml():
    spec, defaults = role_spec(), _load("k8s", "defaults", "main.yml")
    assert sorted(spec) == sorted(defaults), "variables in only one of the two: %s" % sorted(set(spec) ^ set(defaults))
    differ = dict((name, (spec[name].get("default"), defaults[name])) for name in spec
                  if spec[name].get("default") != defaults[name])
    assert not differ, "argument_specs.yml default != defaults/main.yml: %s" % differ


def test_every_option_mapping_defaults_to_the_modules_defaults():
    spec = role_spec()
    mappings = sorted(name for name, option in spec.items() if option["type"] == "dict")
    assert set(MAPPINGS) | {"probe_options", "gpu_gemm", "gpu_nccl", "nccl_options", "rdma_perftest"} <= set(mappings)
    assert dict((name, spec[name]["default"]) for name in mappings) == dict((name, {}) for name in mappings)
    for name in mappings:
        with_default = sorted(k for k, v in (spec[name].get("options") or {}).items() if "default" in v)
        assert not with_default, "%s: suboptions with a default of the role's own: %s" % (name, with_default)


@pytest.mark.parametrize("name", ["k8s_pod", "k8s_rdma_pod"])
def test_the_pod_mappings_are_the_modules_pod_options(name):
    documented = test_vocabulary.module_options("k8s_workload")
    suboptions = role_spec()[name]["options"]
    assert set(suboptions) == set(k8s_workload.POD_OPTIONS) - {"image", "namespace"}
    for option, spec in suboptions.items():
        assert _shape(spec) == _shape(dict({"type": "str"}, **documented[option])), (name, option)


def test_the_connection_mapping_is_the_modules_connection_options():
    spec = k8s_workload.argument_spec()
    fragment = test_vocabulary._fragment_options("aifabric.acceptance._k8s_auth")  # pylint: disable=protected-access
    suboptions = role_spec()["k8s_connection"]["options"]
    assert set(suboptions) == set(fragment) and set(fragment) <= set(spec)
    for option, value in suboptions.items():
        assert value["type"] == spec[option]["type"], option


@pytest.mark.parametrize("name", sorted(SHARED))
def test_a_shared_variable_is_declared_as_its_stage_role_declares_it(name):
    owner = role_spec(SHARED[name])[name]
    mine = role_spec()[name]
    assert _shape(mine) == _shape(owner) and mine.get("default") == owner.get("default"), name
    extra = set(mine.get("options") or {}) - set(owner.get("options") or {})
    assert set(owner.get("options") or {}) <= set(mine.get("options") or {}), name
    for option in set(owner.get("options") or {}):
        assert _shape(mine["options"][option]) == _shape(owner["options"][option]), (name, option)
    if name in POD_OWN:
        kind, adapter = POD_OWN[name]
        assert extra == set(k8s_plan.KUBERNETES_OPTIONS[kind]) - set(adapter.OPTIONS) - set(owner["options"])
    else:
        assert not extra, (name, extra)


def test_every_workload_task_passes_its_stage_mapping_whole_under_its_stage_tag():
    block = [task for task in _load("k8s", "tasks", "main.yml") if "block" in task]
    assert len(block) == 1
    assert block[0]["module_defaults"] == {"aifabric.acceptance.k8s_workload": "{{ __k8s_common }}"}
    seen = {}
    for task in block[0]["block"]:
        args = task["aifabric.acceptance.k8s_workload"]
        tag, option, variable = KINDS[args["kind"]]
        assert task["tags"] == [tag], task["name"]
        assert task["run_once"] is True and task["delegate_to"] == "localhost"
        assert variable in args[option], (task["name"], args[option])
        seen[args["kind"]] = tag
    assert sorted(seen) == sorted(KINDS)


def test_the_pod_settings_reach_the_module_whole():
    block = [task for task in _load("k8s", "tasks", "main.yml") if "block" in task][0]
    common = block["vars"]["__k8s_common"].replace(" ", "").replace("\n", "")
    assert common.startswith("{{k8s_connection|combine(k8s_pod,")
    (perftest,) = [t for t in block["block"] if t["aifabric.acceptance.k8s_workload"]["kind"] == "perftest_sweep"]
    assert perftest["module_defaults"]["aifabric.acceptance.k8s_workload"].replace(" ", "") == \
        "{{__k8s_common|combine({'gpus_per_pod':0},k8s_rdma_pod)}}"
