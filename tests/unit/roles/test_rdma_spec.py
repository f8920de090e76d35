# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rdma role's variables (issue 23): one default each, and its option groups are the module's and the filter's.

- meta/argument_specs.yml's ``default:`` is defaults/main.yml's value, for every variable that has one (the others -
  rdma_hcas, rdma_run_id, the per-host paths, ... - are computed or left to the module when unset, and have none in
  either file);
- rdma_perftest defaults to ``{}`` - perftest_sweep's own defaults apply (the adapter's OPTIONS and the module's) -
  and declares as suboptions exactly the module's documented options less those the role sets itself and the
  per-host paths (their own variables), with the module's type, elements and choices and no default of its own;
- rdma_pairings defaults to ``{}`` - the pairings filter's defaults apply (random_rounds 3, the one default of the
  random rounds, shared with the Kubernetes role) - and declares the filter's arguments plus group_var;
- the runner tasks get rdma_perftest whole (never key by key), combined with the keys the role adds, which are module
  options rdma_perftest does not accept (so one value has one place).
"""

from __future__ import annotations

import os
import re
import sys

import yaml

from ansible_collections.aifabric.acceptance.plugins.filter import pairings
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import perftest_sweep as adapter

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ROLE = os.path.join(ROOT, "roles", "rdma")
sys.path.insert(0, os.path.join(ROOT, "tests", "unit"))
import test_vocabulary  # noqa: E402  pylint: disable=wrong-import-position

# perftest_sweep options the role sets itself (from the plan, the schedule and its own variables)
ROLE_SETS = {"phase", "schedule", "peers", "rates_by_peer", "start_at", "rails", "hcas", "inventory_hostname", "run_id",
             "sweep_name", "expect", "gpu_probe", "rounds", "sweep_hosts", "first_step", "wait_timeout_s", "_poll",
             "job_id"}
# per-host paths: variables of their own (a host variable each), added to every call
HOST_PATHS = {"state_root": "rdma_state_root", "cpu_sysfs": "rdma_cpu_sysfs", "sysfs_root": "rdma_sysfs_root"}
NOT_THE_SWEEPS = {"out_json"}     # kept by the module for option parity, unused by the sweep


def _load(*parts):
    with open(os.path.join(ROLE, *parts), encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def _text(*parts):
    with open(os.path.join(ROLE, *parts), encoding="utf-8") as fh:
        return fh.read()


def role_spec():
    return _load("meta", "argument_specs.yml")["argument_specs"]["main"]["options"]


def test_the_argument_spec_defaults_are_defaults_main_yml():
    spec, defaults = role_spec(), _load("defaults", "main.yml")
    with_default = dict((name, option["default"]) for name, option in spec.items() if "default" in option)
    differ = sorted(name for name in set(with_default) | set(defaults) if with_default.get(name) != defaults.get(name))
    assert not differ, "argument_specs.yml default != defaults/main.yml: %s" % differ
    # what has no default is computed (or the module's) when unset - and is read by the tasks as such
    assert set(spec) - set(defaults) == {"rdma_confirm_per_suspect", "rdma_hcas", "rdma_server_address",
                                         "rdma_run_id", "rdma_start_delay_s", "rdma_nvidia_smi_path",
                                         "rdma_state_root", "rdma_cpu_sysfs", "rdma_sysfs_root"}


def test_the_role_variables_are_in_the_vocabulary():
    problems = test_vocabulary._problems(test_vocabulary.role_options("rdma"), test_vocabulary.glossary())  # pylint: disable=protected-access
    assert not problems, "\n".join(problems)


def test_rdma_tests_are_perftest_programs_with_the_adapters_default_first():
    spec = role_spec()["rdma_tests"]
    assert spec["choices"] == list(adapter.TESTS)
    assert spec["default"] == [adapter.DEFAULT_TEST]


def test_rdma_perftest_is_the_sweeps_options_less_what_the_role_sets():
    spec = role_spec()["rdma_perftest"]
    assert spec["type"] == "dict" and spec["default"] == {}
    documented = test_vocabulary.module_options("perftest_sweep")
    want = set(documented) - ROLE_SETS - set(HOST_PATHS) - NOT_THE_SWEEPS
    assert set(spec["options"]) == want, "only in the role %s, only in the module %s" % (
        sorted(set(spec["options"]) - want), sorted(want - set(spec["options"])))
    assert ROLE_SETS <= set(documented) and set(HOST_PATHS) <= set(documented)
    for name, option in spec["options"].items():
        theirs = documented[name]
        assert "default" not in option, "rdma_perftest.%s has a default of the role's own" % name
        for key in ("elements", "choices"):
            assert option.get(key) == theirs.get(key), (name, key)
        assert option.get("type", "str") == theirs.get("type", "str"), name
    for option, variable in HOST_PATHS.items():
        assert role_spec()[variable].get("type", "str") == documented[option].get("type", "str"), variable


def test_rdma_pairings_is_the_filters_arguments_with_group_var():
    spec = role_spec()["rdma_pairings"]
    assert spec["type"] == "dict" and spec["default"] == {}
    doc = yaml.safe_load(pairings.DOCUMENTATION)["options"]
    # _input: the hosts; groups: made from group_var by the role; alternate: always on (the filter's default)
    filter_args = set(doc) - {"_input", "groups", "alternate"}
    assert set(spec["options"]) == filter_args | {"group_var"}
    for name in filter_args:
        assert "default" not in spec["options"][name], name
        assert spec["options"][name].get("type", "str") == doc[name].get("type", "str"), name
        assert spec["options"][name].get("choices") == doc[name].get("choices"), name
    # the one default of the random rounds: the filter's, 3
    assert doc["random_rounds"]["default"] == 3
    assert len(pairings.pairings(["a", "b", "c", "d"], mode="random")) == 3


def _added_keys(expression):
    return set(re.findall(r"'([a-z_]+)':", expression))


def test_the_runner_tasks_get_rdma_perftest_whole_with_what_the_role_adds():
    tasks = _load("tasks", "main.yml")
    plan = [t for t in tasks[0]["block"] if "aifabric.acceptance.perftest_sweep" in t]
    assert len(plan) == 1 and plan[0]["aifabric.acceptance.perftest_sweep"] is None
    plan_defaults = plan[0]["module_defaults"]["aifabric.acceptance.perftest_sweep"]   # the group whole, as defaults
    assert plan_defaults.replace(" ", "").startswith("{{rdma_perftest|combine(__rdma_paths,")
    sweep = [t for t in _load("tasks", "sweep.yml") if "block" in t]
    assert len(sweep) == 1
    assert sweep[0]["module_defaults"]["aifabric.acceptance.perftest_sweep"] == "{{ __rdma_sweep_defaults }}"
    defaults = sweep[0]["vars"]["__rdma_sweep_defaults"]
    assert "| combine(rdma_perftest, __rdma_paths, {" in " ".join(defaults.split())
    runner_tasks = [t for t in sweep[0]["block"] if "aifabric.acceptance.perftest_sweep" in t]
    assert len(runner_tasks) == 2
    added = _added_keys(plan_defaults) | _added_keys(defaults) | set(runner_tasks[1]["aifabric.acceptance.perftest_sweep"])
    runner = runner_tasks[0]["module_defaults"]["aifabric.acceptance.perftest_sweep"]
    assert " ".join(runner.split()).startswith("{{ __rdma_sweep_defaults | combine(")   # the block's, then its own
    added |= _added_keys(runner)
    added -= {"lease_s"}      # the role's lease (0 with fewer forks than hosts), under rdma_perftest's own
    assert added <= ROLE_SETS, sorted(added - ROLE_SETS)
    assert not added & set(role_spec()["rdma_perftest"]["options"])
    # no option of the group is read key by key, but use_cuda (does the probe read the GPU topology) and lease_s
    # (does the runner get a fixed start moment)
    read = set(re.findall(r"rdma_perftest\.([a-z_]+)", _text("tasks", "main.yml") + _text("tasks", "sweep.yml")))
    assert read == {"use_cuda", "lease_s"}, read


def test_the_per_host_paths_reach_every_call_that_takes_them():
    paths = _load("vars", "main.yml")["__rdma_paths"]
    assert set(re.findall(r"'([a-z_]+)': (rdma_[a-z_]+)", paths)) == set(HOST_PATHS.items())
    text = _text("tasks", "main.yml") + _text("tasks", "sweep.yml")
    assert text.count("__rdma_paths") == 3     # the plan, the runners' defaults, the cleanup
