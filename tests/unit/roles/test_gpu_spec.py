# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gpu role's variables (issue 23): one default each, and its option groups are the modules' options.

- meta/argument_specs.yml's ``default:`` is defaults/main.yml's value, for every variable;
- each option group (gpu_gemm, gpu_allreduce_probe, gpu_nccl) defaults to ``{}`` - the module's own defaults, the
  tool adapter's OPTIONS, apply - and declares as suboptions exactly the module's documented options less those the
  role sets itself (python, env, profile, profiles, expect: from gpu_python, gpu_env, ...) and those that are not a
  single-node stage's (import mode, the multi-node hosts, staging), with the module's type, elements and choices and
  no default of its own;
- each check's job (vars/main.yml __gpu_jobs: the chain's with gpu_async, the check's own task's without) gets its
  group whole, combined with the keys the role adds, which are module options the group does not accept (so one
  value has one place);
- the tool_options filter the tasks' time limits use gives the adapter's defaults under what is given.
"""

from __future__ import annotations

import os
import sys

import jinja2
import pytest
import yaml

from ansible.errors import AnsibleFilterError

from ansible_collections.aifabric.acceptance.plugins.filter.tool_options import tool_options
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import (
    copy_bandwidth, gemm_bench as gemm, nccl_test as nccl_tests, allreduce_probe as torch_allreduce)

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ROLE = os.path.join(ROOT, "roles", "gpu")
sys.path.insert(0, os.path.join(ROOT, "tests", "unit"))
import test_vocabulary  # noqa: E402  pylint: disable=wrong-import-position

# option group -> (module, its task's FQCN, the options the role sets itself, the options that are not this stage's)
GROUPS = {
    "gpu_gemm": ("gemm_bench", {"python", "profile", "profiles", "expect"}, set()),
    "gpu_allreduce_probe": ("allreduce_probe", {"python", "env", "profile", "profiles", "expect"},
                            {"hosts", "stage_only"}),
    "gpu_nccl": ("nccl_test", {"if_missing", "env", "profile", "profiles", "expect"},
                 {"hosts", "node_count", "from_output", "from_format", "collective"}),
    "gpu_dcgm": ("dcgm_diag", set(), {"from_output"}),
    "gpu_copy_bandwidth": ("copy_bandwidth", {"python", "expect"}, {"from_output"}),
    # the soak's duration is gpu_soak_s (one variable turns the soak on)
    "gpu_soak": ("gpu_soak", {"python", "profile", "profiles", "expect", "duration_s"}, {"from_output"}),
}
# if_missing is both added by the role (skip) and accepted in gpu_nccl (the user's wins): the one exception
ADDED_AND_ACCEPTED = {"gpu_nccl": {"if_missing"}}


def _load(*parts):
    with open(os.path.join(ROLE, *parts), encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def role_spec():
    return _load("meta", "argument_specs.yml")["argument_specs"]["main"]["options"]


def _walk(tasks):
    for task in tasks:
        yield task
        for part in ("block", "rescue", "always"):
            yield from _walk(task.get(part) or [])


# the checks' files (tasks/check_<check>.yml), in the stage's order
CHECKS = ["probe", "gemm", "allreduce_probe", "nccl", "dcgm", "copy_bandwidth", "soak"]


def role_tasks():
    """Every check's task (tasks/check_<check>.yml, run without gpu_async) by name."""
    return dict((task["name"], task) for task in check_tasks())


def check_tasks():
    """The checks' tasks without gpu_async, in order: tasks/main.yml includes tasks/checks.yml (without gpu_async or
    in check mode) or tasks/chain.yml; checks.yml includes tasks/check_<check>.yml for each check a host runs (the
    loop over vars/main.yml's __gpu_checks_run), each file one task."""
    stage = _load("tasks", "main.yml")
    assert len(stage) == 1 and stage[0]["ansible.builtin.include_tasks"].replace(" ", "") == (
        "{{'chain.yml'if__gpu_async_on|boolelse'checks.yml'}}"), stage
    assert stage[0]["when"] == "__gpu_checks_run | length > 0", stage     # no check selected: no start, no wait
    checks = _load("tasks", "checks.yml")
    assert len(checks) == 1 and checks[0]["ansible.builtin.include_tasks"] == "check_{{ __gpu_check }}.yml", checks
    assert checks[0]["loop"] == "{{ __gpu_checks_run }}" and checks[0]["loop_control"] == {"loop_var": "__gpu_check"}
    out = []
    for check in CHECKS:
        tasks = _load("tasks", "check_%s.yml" % check)
        assert len(tasks) == 1 and "block" not in tasks[0], "tasks/check_%s.yml: one task, the check's run" % check
        assert "when" not in tasks[0], "tasks/check_%s.yml: the include's loop selects it" % check
        out.append(tasks[0])
    return out


def render(template, **variables):
    """A template of vars/main.yml rendered with ``variables`` (jinja2 with the filters it uses, as Ansible's)."""
    env = jinja2.Environment()
    env.filters["bool"] = lambda v: v if isinstance(v, bool) else str(v).lower() in ("1", "true", "yes", "on")
    env.filters["combine"] = lambda a, b: dict(a, **b)
    env.filters["int"] = int
    return yaml.safe_load(env.from_string(template.strip()).render(**variables))


def checks_run(**variables):
    """vars/main.yml's __gpu_checks_run, rendered with ``variables``."""
    return render(_load("vars", "main.yml")["__gpu_checks_run"], **variables)


def _module_task(module):
    found = [t for t in role_tasks().values() if "aifabric.acceptance." + module in t]
    assert len(found) == 1, "expected one %s task in roles/gpu/tasks/check_*.yml, found %d" % (module, len(found))
    return found[0]


def test_the_argument_spec_defaults_are_defaults_main_yml():
    spec, defaults = role_spec(), _load("defaults", "main.yml")
    assert sorted(spec) == sorted(defaults), "variables in only one of the two: %s" % sorted(set(spec) ^ set(defaults))
    differ = dict((name, (spec[name].get("default"), defaults[name])) for name in spec
                  if spec[name].get("default") != defaults[name])
    assert not differ, "argument_specs.yml default != defaults/main.yml: %s" % differ


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_an_option_group_defaults_to_the_modules_defaults(group):
    spec = role_spec()[group]
    assert spec["type"] == "dict" and spec["default"] == {} and _load("defaults", "main.yml")[group] == {}
    with_default = sorted(name for name, option in spec["options"].items() if "default" in option)
    assert not with_default, "%s: suboptions with a default of the role's own: %s" % (group, with_default)


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_an_option_group_is_the_modules_options_less_what_the_role_sets(group):
    module, role_sets, not_stage = GROUPS[group]
    documented = test_vocabulary.module_options(module)
    suboptions = role_spec()[group]["options"]
    want = set(documented) - (role_sets - ADDED_AND_ACCEPTED.get(group, set())) - not_stage
    assert set(suboptions) == want, "%s: only in the role %s, only in the module %s" % (
        group, sorted(set(suboptions) - want), sorted(want - set(suboptions)))
    for name, option in suboptions.items():
        theirs = documented[name]
        for key in ("elements", "choices"):
            assert option.get(key) == theirs.get(key), (group, name, key)
        assert option.get("type", "str") == theirs.get("type", "str"), (group, name)


# option group -> the check (tasks/check_<check>.yml, vars/main.yml __gpu_jobs.<check>)
CHECK_OF = {"gpu_gemm": "gemm", "gpu_allreduce_probe": "allreduce_probe", "gpu_nccl": "nccl", "gpu_dcgm": "dcgm",
            "gpu_copy_bandwidth": "copy_bandwidth", "gpu_soak": "soak"}


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_the_job_passes_the_group_whole_with_what_the_role_adds(group):
    module, role_sets, _not_stage = GROUPS[group]
    check = CHECK_OF[group]
    job = _load("vars", "main.yml")["__gpu_jobs"][check]
    assert job["module"] == "aifabric.acceptance." + module and job["name"] == check, job
    # the group whole, combined last: what the user gives wins; rendered with the role's keys as stand-ins
    stand_ins = dict((name, "role-" + name)
                     for name in ("gpu_python", "gpu_env", "gpu_profile", "__gpu_profiles", "gpu_expect"))
    mine = {"from_the_group": 1}
    args = render(job["args"], **dict(stand_ins, gpu_soak_s="30", **{group: mine}))
    added = set(args) - set(mine)
    assert added == role_sets, (group, sorted(added))
    assert added <= set(test_vocabulary.module_options(module))
    assert args["from_the_group"] == 1
    for key in added & set(role_spec()[group]["options"]):      # a key both add and accept: the group's wins
        assert render(job["args"], **dict(stand_ins, gpu_soak_s="30", **{group: {key: "users"}}))[key] == "users"
    # the role's keys are not accepted in the group, but for if_missing
    assert not (added - ADDED_AND_ACCEPTED.get(group, set())) & set(role_spec()[group]["options"])
    # without gpu_async the check's own task runs the module with the same arguments
    task = _module_task(module)
    assert task["aifabric.acceptance." + module] is None       # no option given key by key
    # as the module's defaults of this task (a templated args: warns on every run in ansible-core 2.19)
    assert task["module_defaults"] == {"aifabric.acceptance." + module: "{{ __gpu_jobs.%s.args }}" % check}, task
    assert task["timeout"] == "{{ __gpu_jobs.%s.timeout_s }}" % check, task


def test_the_checks_are_the_tasks():
    spec = role_spec()["gpu_checks"]
    assert spec["choices"] == spec["default"] + ["dcgm", "copy_bandwidth"]
    assert spec["default"] == ["gemm", "allreduce_probe", "nccl"]     # dcgm and copy_bandwidth: opt-in
    assert CHECKS == ["probe"] + spec["choices"] + ["soak"]
    check_tasks()
    # the stage's order whatever gpu_checks' order; the probe with gpu_run_probe, the soak with gpu_soak_s above 0
    assert checks_run(gpu_run_probe=True, gpu_checks=spec["default"], gpu_soak_s=0) == ["probe"] + spec["default"]
    assert checks_run(gpu_run_probe=False, gpu_checks=list(reversed(spec["choices"])), gpu_soak_s=30) == (
        spec["choices"] + ["soak"])
    assert checks_run(gpu_run_probe="false", gpu_checks=["nccl"], gpu_soak_s="0") == ["nccl"]
    assert checks_run(gpu_run_probe=False, gpu_checks=[], gpu_soak_s=0) == []


@pytest.mark.parametrize("tool, adapter", [("gemm_bench", gemm), ("allreduce_probe", torch_allreduce),
                                           ("copy_bandwidth", copy_bandwidth),
                                           ("nccl_test", nccl_tests)])
def test_tool_options_fills_in_the_adapters_defaults(tool, adapter):
    assert tool_options({}, tool)["timeout_s"] == adapter.OPTIONS["timeout_s"]["default"]
    assert tool_options(None, tool) == tool_options({}, tool)
    got = tool_options({"timeout_s": 5, "python": "/opt/py"}, tool)
    assert got["timeout_s"] == 5 and got["python"] == "/opt/py"
    assert set(got) == set(adapter.OPTIONS) | {"python"}


def test_tool_options_refuses_what_it_cannot_complete():
    with pytest.raises(AnsibleFilterError, match="unknown tool 'gemm_benchmark'"):
        tool_options({}, "gemm_benchmark")
    with pytest.raises(AnsibleFilterError, match="options of gemm_bench must be a mapping, got list"):
        tool_options(["timeout_s"], "gemm_bench")


def test_tool_options_takes_a_former_tool_name_with_a_deprecation_warning(monkeypatch):
    """The adapters' names before the rule (gemm, torch_allreduce, nccl_tests, ...) still work until 3.0.0, warned."""
    from ansible.utils.display import Display
    warned = []
    monkeypatch.setattr(Display, "deprecated", lambda self, msg, **kw: warned.append((msg, kw.get("version"))))
    assert tool_options({}, "torch_allreduce") == tool_options({}, "allreduce_probe")
    assert tool_options({"timeout_s": 5}, "nccl_tests")["timeout_s"] == 5
    assert warned == [("tool_options('torch_allreduce'): the tool is named after its module now, use 'allreduce_probe'",
                       "3.0.0"),
                      ("tool_options('nccl_tests'): the tool is named after its module now, use 'nccl_test'", "3.0.0")]


def test_the_checks_are_started_as_one_chain_and_waited_for_in_one_task():
    """gpu_async: one task starts every check the host runs as a job (job_chain: the jobs one after the other on the
    host, each with its check's worst case as its limit), one task waits for them in order (job_wait, a loop over the
    jobs: one line per check and host, no line per poll), each wait bounded by its job's limit and removing the job's
    file (cleanup)."""
    start, wait = _load("tasks", "chain.yml")
    assert start["aifabric.acceptance.job_chain"] == {"jobs": "{{ __gpu_checks_run | map('extract', __gpu_jobs) | list }}"}
    assert (start["timeout"], start["register"], start["changed_when"]) == (
        "{{ __gpu_start_timeout_s }}", "__gpu_chain", False), start
    assert wait["aifabric.acceptance.job_wait"] == {
        "jid": "{{ __gpu_job.ansible_job_id }}", "wait_timeout_s": "{{ (__gpu_job.timeout_s | int) + 30 }}",
        "poll_s": "{{ __gpu_poll_s }}", "poll_timeout_s": "{{ __gpu_poll_timeout_s }}",
        "unreachable_after_polls": "{{ __gpu_unreachable_after_polls }}", "cleanup": True}, wait
    assert wait["loop"] == "{{ __gpu_chain.jobs | default([]) }}"
    assert {k: v for k, v in wait["loop_control"].items() if k != "break_when"} == {
        "loop_var": "__gpu_job", "label": "{{ __gpu_job.name }}"}
    # no further wait on a host found unreachable or whose wait ended without its job's result
    assert "__gpu_wait.unreachable" in wait["loop_control"]["break_when"] and wait["register"] == "__gpu_wait"
    assert not [key for key in wait if key in ("until", "retries", "delay", "async_status", "when")], wait
    # every check has a job: its module is its task's, its name the check's
    jobs = _load("vars", "main.yml")["__gpu_jobs"]
    assert list(jobs) == CHECKS
    for check, task in zip(CHECKS, check_tasks()):
        module = [key for key in task if key.startswith("aifabric.acceptance.")]
        assert module == [jobs[check]["module"]] and jobs[check]["name"] == check, (check, module)
