# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The hccl role's variables (issue 23): one default each - its argument spec's ``default:`` is defaults/main.yml,
``hccl_options`` is {} (the hccl_test module's own defaults, tools/hccl_test.py's OPTIONS, apply) and every variable that
stands for one module option has that option's default; ``hccl_options`` accepts exactly the module's options that
the role does not set itself, with their types, so a misspelt key fails at the role's start (Ansible's own
argument-spec validator, as validate_argument_spec runs it)."""

from __future__ import annotations

import os

import pytest
import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.aifabric.acceptance.tests.unit.test_vocabulary import module_options

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ROLE = os.path.join(ROOT, "roles", "hccl")
# hccl_test options the role sets itself, each from the role variable named (None: the role computes it)
ROLE_SET = {"env": "hccl_env", "expect": "hccl_expect", "profile": "hccl_profile", "profiles": "hccl_profiles_file",
            "hosts": None, "run_id": None}
IMPORT_MODE = ("from_output", "collective", "node_count")


def _load(*parts):
    with open(os.path.join(ROLE, *parts), encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def role_spec():
    return _load("meta", "argument_specs.yml")["argument_specs"]["main"]["options"]


def test_the_argument_spec_defaults_are_defaults_main_yml():
    spec, defaults = role_spec(), _load("defaults", "main.yml")
    assert sorted(spec) == sorted(defaults), "variables in only one of the two: %s" % sorted(set(spec) ^ set(defaults))
    differ = dict((name, (spec[name].get("default"), defaults[name])) for name in spec
                  if spec[name].get("default") != defaults[name])
    assert not differ, "argument_specs.yml default != defaults/main.yml: %s" % differ


def test_hccl_options_is_the_modules_options_less_what_the_role_sets():
    options = role_spec()["hccl_options"]
    assert options["type"] == "dict" and options["default"] == {}
    module = module_options("hccl_test")
    expected = sorted(set(module) - set(ROLE_SET) - set(IMPORT_MODE))
    assert sorted(options["options"]) == expected
    assert len(expected) >= 20     # not vacuous: the module's run options are there
    for name, sub in options["options"].items():
        want = module[name]
        assert (sub.get("type"), sub.get("elements"), sub.get("choices")) == (
            want.get("type"), want.get("elements"), want.get("choices")), name
        assert "default" not in sub, "%s: a default in the role would be a second one (the module's applies)" % name


@pytest.mark.parametrize("option", sorted(name for name, var in ROLE_SET.items() if var))
def test_a_variable_for_one_module_option_has_its_default(option):
    module, spec = module_options("hccl_test")[option], role_spec()[ROLE_SET[option]]
    if option == "profiles":   # the role reads the file into the module's profiles mapping; '' is none ({})
        assert spec["default"] == "" and module["default"] == {}
        return
    assert spec["type"] == module["type"] and spec["default"] == module["default"]


def _validate(value):
    """Errors of Ansible's argument-spec validator (what validate_argument_spec runs at the role's start)."""
    spec = role_spec()
    result = ArgumentSpecValidator(spec).validate(dict(_load("defaults", "main.yml"), **value))
    return [str(e) for e in result.errors]


def test_a_misspelt_or_role_set_key_fails_at_the_start():
    assert _validate({"hccl_options": {"collectives": ["all_reduce"], "npus_per_node": 4, "verify_data": True}}) == []
    (error,) = _validate({"hccl_options": {"npus": 8}})          # the old name
    assert "npus" in error and "hccl_options" in error
    (error,) = _validate({"hccl_options": {"env": {"HCCL_BUFFSIZE": "200"}}})   # hccl_env's
    assert "env" in error
    errors = _validate({"hccl_options": {"timeout_s": "soon"}})
    assert errors and "timeout_s" in errors[0]
