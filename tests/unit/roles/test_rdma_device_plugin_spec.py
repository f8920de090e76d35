# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One default per variable of the rdma_device_plugin role (issue 23): its argument spec's ``default:`` is the value
of defaults/main.yml, and every role variable the role passes to aifabric.acceptance.k8s_device_plugin has that
module's default (the module's argument spec is the one place a default is defined; the role repeats it so that
``ansible-doc -t role`` shows it)."""

from __future__ import annotations

import os
import re

import pytest
import yaml

from ansible_collections.aifabric.acceptance.plugins.modules import k8s_device_plugin

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ROLE = os.path.join(ROOT, "roles", "rdma_device_plugin")
PREFIX = "rdma_device_plugin_"
MODULE = "aifabric.acceptance.k8s_device_plugin"
# "{{ rdma_device_plugin_x }}" or an expression whose first variable is rdma_device_plugin_x
_FIRST_VAR = re.compile(r"^\{\{\s*(%s\w+)" % PREFIX)
# role variables whose default the module cannot have, each with the reason
ROLE_ONLY_DEFAULTS = {
    # the module cannot know the play; its own default [] verifies no node
    "hosts": "{{ ansible_play_hosts_all }}",
}


def _load(*parts):
    with open(os.path.join(ROLE, *parts), encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def role_spec():
    return _load("meta", "argument_specs.yml")["argument_specs"]["main"]["options"]


def role_defaults():
    return _load("defaults", "main.yml")


def _tasks(tasks):
    for task in tasks or []:
        yield task
        yield from _tasks(task.get("block"))


def module_args():
    """{module option: the role variable it gets} of the role's k8s_device_plugin task."""
    found = [t[MODULE] for t in _tasks(_load("tasks", "main.yml")) if MODULE in t]
    assert len(found) == 1, "expected one %s task, found %d" % (MODULE, len(found))
    passed = {}
    for option, value in found[0].items():
        match = _FIRST_VAR.match(str(value))
        if match:
            passed[option] = match.group(1)
    return passed


def test_the_argument_spec_defaults_are_defaults_main_yml():
    spec, defaults = role_spec(), role_defaults()
    assert sorted(spec) == sorted(defaults), "variables in only one of the two: %s" % sorted(set(spec) ^ set(defaults))
    differ = dict((name, (spec[name].get("default"), defaults[name])) for name in spec
                  if spec[name].get("default") != defaults[name])
    assert not differ, "argument_specs.yml default != defaults/main.yml: %s" % differ


def test_the_role_passes_its_variables_to_the_module_by_their_option_names():
    """Not vacuous: the task passes the role's variables, each to the option of the same name."""
    passed = module_args()
    assert len(passed) >= 20, passed
    wrong = dict((option, var) for option, var in passed.items() if var != PREFIX + option)
    assert not wrong, "options given another role variable than rdma_device_plugin_<option>: %s" % wrong
    assert set(passed.values()) <= set(role_spec())


@pytest.mark.parametrize("option", sorted(module_args()))
def test_every_variable_passed_to_the_module_has_the_modules_default(option):
    module_spec = k8s_device_plugin.argument_spec()[option]
    name = module_args()[option]
    role = role_spec()[name]
    assert role.get("type", "str") == module_spec.get("type", "str")
    assert role.get("elements") == module_spec.get("elements")
    if option in ROLE_ONLY_DEFAULTS:
        assert role.get("default") == ROLE_ONLY_DEFAULTS[option]
        assert module_spec.get("default") in ([], None)
        return
    assert role.get("default") == module_spec.get("default"), (
        "%s defaults to %r, the module's %s to %r: one default, the module's" % (
            name, role.get("default"), option, module_spec.get("default")))
