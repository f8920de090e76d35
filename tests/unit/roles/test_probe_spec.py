# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The probe role's variables (issue 23): one default each, and probe_options is env_probe's options.

- meta/argument_specs.yml's ``default:`` is defaults/main.yml's value, for every variable;
- probe_options defaults to ``{}`` (the tool adapter's OPTIONS apply) and declares as suboptions exactly env_probe's
  options less ``expect`` (the role sets it from acceptance_expect), with the adapter's type, elements and choices
  and no default of its own;
- the probe task gets its options whole (the task's ``module_defaults`` for env_probe), and the role sets the facts and groups later stages read.
"""

from __future__ import annotations

import os
import sys

import yaml

from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import env_probe as env

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ROLE = os.path.join(ROOT, "roles", "probe")
sys.path.insert(0, os.path.join(ROOT, "tests", "unit"))
import test_vocabulary  # noqa: E402  pylint: disable=wrong-import-position


def _load(*parts):
    with open(os.path.join(ROLE, *parts), encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def role_spec():
    return _load("meta", "argument_specs.yml")["argument_specs"]["main"]["options"]


def test_the_spec_defaults_are_the_role_defaults():
    defaults = _load("defaults", "main.yml")
    spec = role_spec()
    assert set(spec) == set(defaults)
    for name, option in spec.items():
        assert option.get("default") == defaults[name], name
        assert option.get("description"), name


def test_probe_options_are_env_probes_options_less_expect():
    spec = role_spec()["probe_options"]
    assert spec["type"] == "dict" and spec["default"] == {}
    assert set(spec["options"]) == set(env.OPTIONS) - {"expect"}
    for name, option in spec["options"].items():
        adapter = env.OPTIONS[name]
        assert "default" not in option, name
        assert option["type"] == adapter["type"], name
        assert option.get("elements") == adapter.get("elements"), name
        assert option.get("choices") == adapter.get("choices"), name
        assert option.get("description"), name


def test_the_probe_task_gets_its_options_whole_and_the_role_sets_the_facts_and_groups():
    block = _load("tasks", "main.yml")[0]
    probe = [t for t in block["block"] if "aifabric.acceptance.env_probe" in t]
    assert len(probe) == 1 and probe[0]["aifabric.acceptance.env_probe"] is None
    assert probe[0]["module_defaults"] == {"aifabric.acceptance.env_probe": "{{ __probe_options }}"}
    assert "probe_options" in block["vars"]["__probe_options"] and "acceptance_expect" in block["vars"]["__probe_options"]
    facts = set()
    groups = []
    for task in block["block"]:
        facts.update((task.get("ansible.builtin.set_fact") or {}))
        if "ansible.builtin.add_host" in task:     # one task for every host of the play, not one per host
            assert task["ansible.builtin.add_host"]["name"] == "{{ item }}"
            assert task["loop"] == "{{ ansible_play_hosts }}" and task["run_once"] is True
            groups.extend(task["ansible.builtin.add_host"]["groups"])
    assert {"probe_gpu_count", "probe_npu_count", "probe_hca_count", "aifabric_required_checks"} <= facts
    assert [g.split("{{")[0] for g in groups] == ["aifabric_gpu_", "aifabric_npu_", "aifabric_rdma_"]


def test_the_role_variables_are_in_the_vocabulary():
    known = test_vocabulary.glossary()
    assert not test_vocabulary._problems(test_vocabulary.role_options("probe"), known)  # pylint: disable=protected-access
