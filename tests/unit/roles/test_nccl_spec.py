# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The nccl role's variables (issue 23): its argument spec's ``default:`` is the value of defaults/main.yml; the
option groups default to {} (the modules' own defaults apply: one place, the tool adapters); each group's
suboptions are the module's options (same type, elements, choices), less those the role sets itself - and the role
sets exactly those, so that together they are every option of the module's run (import mode's aside)."""

from __future__ import annotations

import os

import pytest
import yaml

from ansible_collections.aifabric.acceptance.tests.unit.plugins.module_utils.test_tool_option_specs import documented_options
from ansible_collections.aifabric.acceptance.plugins.modules import allreduce_probe, nccl_test
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import inventory_vars

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ROLE = os.path.join(ROOT, "roles", "nccl")
# option group -> (module, the role's vars/main.yml mapping of what it sets itself, options the stage never passes)
GROUPS = {
    "nccl_options": (nccl_test, "__nccl_test_added", {"from_output", "collective", "node_count", "from_format"}),
    "nccl_allreduce_probe": (allreduce_probe, "__nccl_probe_added", {"stage_only"}),
}


def _load(*parts):
    with open(os.path.join(ROLE, *parts), encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def role_spec(entry="main"):
    return _load("meta", "argument_specs.yml")["argument_specs"][entry]["options"]


# the probe role's topology options, which the screen passes to it (its include of the probe role makes no argument
# check of its own: the screen's spec holds them); their defaults are the probe role's
PROBE_TOPOLOGY = ("probe_ibnetdiscover_file", "probe_lldp", "probe_topology", "probe_topology_file")


def test_the_argument_spec_defaults_are_defaults_main_yml():
    """Every variable of every entry point (main, screen) is in defaults/main.yml with its spec's default (the probe
    role's topology options aside: the probe role's defaults)."""
    entries = _load("meta", "argument_specs.yml")["argument_specs"]
    assert sorted(entries) == ["main", "screen"]
    spec = {}
    for entry in entries:
        spec.update((name, option) for name, option in role_spec(entry).items() if name not in PROBE_TOPOLOGY)
    defaults = _load("defaults", "main.yml")
    assert sorted(spec) == sorted(defaults), "variables in only one of the two: %s" % sorted(set(spec) ^ set(defaults))
    for entry in entries:
        differ = dict((name, (option.get("default"), defaults[name])) for name, option in role_spec(entry).items()
                      if name not in PROBE_TOPOLOGY and option.get("default") != defaults[name])
        assert not differ, "argument_specs.yml (%s) default != defaults/main.yml: %s" % (entry, differ)


def test_the_screen_shares_the_main_entry_points_variables():
    """The screen entry point reads nccl_options, nccl_env, ... as the main one does (one definition, a YAML alias);
    its own are nccl_screen_*."""
    main, screen = role_spec(), role_spec("screen")
    shared = set(main) & set(screen)
    assert shared == {"nccl_options", "nccl_install", "nccl_env", "nccl_profile", "nccl_profiles_file", "nccl_expect",
                      "nccl_run_id"}
    assert all(main[name] == screen[name] for name in shared)
    assert sorted(set(screen) - shared - set(PROBE_TOPOLOGY)) == [
        "nccl_screen_collective", "nccl_screen_evidence", "nccl_screen_group_size", "nccl_screen_learn_topology",
        "nccl_screen_margin_pct", "nccl_screen_max_rounds", "nccl_screen_topology_var"]


def test_the_screen_checks_the_probe_role_s_topology_options_as_the_probe_role_does():
    """The screen runs the probe role's entry point topology without its argument check on every host
    (rolespec_validate: false): the screen's spec holds those options, typed as the probe role's spec types them, and
    no default of its own (the probe role's apply)."""
    with open(os.path.join(ROOT, "roles", "probe", "meta", "argument_specs.yml"), encoding="utf-8") as fh:
        probe = yaml.safe_load(fh)["argument_specs"]["topology"]["options"]
    screen = role_spec("screen")
    assert sorted(probe) == sorted(PROBE_TOPOLOGY)
    for name in PROBE_TOPOLOGY:
        ours = dict((k, v) for k, v in screen[name].items() if k != "description")
        theirs = dict((k, v) for k, v in probe[name].items() if k not in ("description", "default"))
        assert ours == theirs, name
    with open(os.path.join(ROLE, "tasks", "screen.yml"), encoding="utf-8") as fh:
        tasks = yaml.safe_load(fh)
    (include,) = [t for t in tasks if (t.get("ansible.builtin.include_role") or {}).get("name") == "aifabric.acceptance.probe"]
    assert include["ansible.builtin.include_role"]["rolespec_validate"] is False


def test_every_variable_is_typed_and_described():
    for name, option in role_spec().items():
        assert option.get("type") and option.get("description"), name
        for sub, suboption in (option.get("options") or {}).items():
            assert suboption.get("type") and suboption.get("description"), (name, sub)


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_an_option_group_defaults_to_the_modules_own_defaults(group):
    assert role_spec()[group]["default"] == {} and _load("defaults", "main.yml")[group] == {}


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_the_groups_options_are_the_modules(group):
    module, _added, _never = GROUPS[group]
    documented = documented_options(module)
    suboptions = role_spec()[group]["options"]
    assert set(suboptions) <= set(documented), set(suboptions) - set(documented)
    for name, option in suboptions.items():
        mine = dict((k, option.get(k)) for k in ("type", "elements", "choices"))
        theirs = dict((k, documented[name].get(k)) for k in ("type", "elements", "choices"))
        theirs["type"] = theirs["type"] or "str"
        assert mine == theirs, (group, name)
        assert "default" not in option, "%s.%s: a default in the role would be a second one" % (group, name)


@pytest.mark.parametrize("group", sorted(GROUPS))
def test_the_role_sets_exactly_the_options_the_group_leaves_out(group):
    module, added, never = GROUPS[group]
    role_sets = set(_load("vars", "main.yml")[added])
    suboptions = set(role_spec()[group]["options"])
    assert not role_sets & suboptions, "set by the role and offered in %s: %s" % (group, role_sets & suboptions)
    assert role_sets | suboptions | never == set(documented_options(module))


def test_the_checks_are_the_tasks():
    checks = role_spec()["nccl_checks"]
    assert checks["choices"] == checks["default"] == ["nccl", "allreduce_probe"]
    text = open(os.path.join(ROLE, "tasks", "main.yml"), encoding="utf-8").read()
    for check in checks["choices"]:
        assert "'%s' in nccl_checks" % check in text


def test_check_vars_knows_the_roles_variables_and_names_the_old_ones():
    """acceptance_strict_vars keeps working through the move: every variable of the role is read; the playbook's
    old variables (now keys of an option group) are named at the start of a run."""
    vocabulary = inventory_vars.Vocabulary(ROOT)
    assert set(role_spec()) | set(role_spec("screen")) <= vocabulary.names
    old = ["nccl_bin_dir", "nccl_ranks_per_node", "nccl_collectives", "nccl_timeout_s", "nccl_probe", "nccl_run_tag"]
    found = dict(vocabulary.unread({"n1": old + ["nccl_options"]})["n1"])
    assert sorted(found) == sorted(old)
