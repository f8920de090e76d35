# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One vocabulary (docs/glossary.md): every module option (with its suboptions) and every role variable of the
collection is a name of the glossary, with the glossary's type; no two modules use one name for two types, and the
names the glossary retires (``timeout``, ``iters``, ``run_tag``, ``binary_dir``, ``expect_*``, ...) appear nowhere.

Module options are read from each module's DOCUMENTATION with its doc fragments (what ansible-doc shows, the same
reading as test_tool_option_specs); role variables from every role's meta/argument_specs.yml, each without its
``<role>_`` prefix."""

from __future__ import annotations

import importlib
import os
import re

import pytest
import yaml

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir)
GLOSSARY = os.path.join(ROOT, "docs", "glossary.md")
MODULES = os.path.join(ROOT, "plugins", "modules")
ROLES = os.path.join(ROOT, "roles")
_ROW = re.compile(r"^\|\s*`([a-z_][a-z0-9_]*)`\s*\|\s*([a-z]+)\s*\|")
# names the glossary retired, with what replaced them
RETIRED = {"timeout": "timeout_s", "iters": "iterations", "warmup_iters": "warmup_iterations",
           "agg_iters": "agg_iterations", "run_tag": "run_id", "label": "run_id or sweep_name",
           "binary_dir": "tool_dir", "bin_dir": "tool_dir", "perftest_path": "tool_dir", "check": "verify_data",
           "devices": "gpu_indices or hcas", "selector": "label_selector", "nodes": "hosts or node_count",
           "cleanup_timeout": "cleanup_timeout_s", "unschedulable_grace": "unschedulable_grace_s",
           "image_pull_grace": "image_pull_grace_s", "delete_timeout": "delete_timeout_s",
           "verify_timeout": "verify_timeout_s", "tool_timeout": "tool_timeout_s",
           "periodic_update_interval": "periodic_update_interval_s"}
# names renamed in 2.0.0 (docs/glossary.md), former -> new: a former name is only an alias of its new one (accepted
# with a deprecation warning until 3.0.0), never an option of its own, never in the glossary
RENAMED = {"host_name": "inventory_hostname", "peer_rate_gbit_s": "peer_rates_gbit_s", "peer_rates": "rates_by_peer",
           "reports_dir": "reports_root", "report_dir": "dest",
           # k8s_workload's option groups, renamed with their kinds (k8s_plan.KINDS_RENAMED)
           "gemm": "gemm_bench", "dcgm": "dcgm_diag", "nccl": "nccl_test", "perftest": "perftest_sweep",
           "soak": "gpu_soak"}
# the type names of module specs and role specs that mean the same thing
_TYPE = {"path": "path", "str": "str", "raw": "raw", "int": "int", "float": "float", "bool": "bool",
         "list": "list", "dict": "dict"}


def glossary():
    """name -> set of types the glossary gives it (a name in two tables with two types is reported by a test)."""
    names = {}
    with open(GLOSSARY, encoding="utf-8") as fh:
        for line in fh:
            match = _ROW.match(line)
            if match:
                names.setdefault(match.group(1), set()).add(match.group(2))
    return names


def _fragment_options(name):
    parts = name.split(".")[2:]
    fragment = importlib.import_module("ansible_collections.aifabric.acceptance.plugins.doc_fragments." + parts[0])
    text = getattr(fragment.ModuleDocFragment, parts[1].upper() if len(parts) > 1 else "DOCUMENTATION")
    return (yaml.safe_load(text) or {}).get("options") or {}


def module_options(name):
    """The documented options of a module, its doc fragments' included."""
    module = importlib.import_module("ansible_collections.aifabric.acceptance.plugins.modules." + name)
    doc = yaml.safe_load(module.DOCUMENTATION)
    options = {}
    for fragment in doc.get("extends_documentation_fragment") or []:
        options.update(_fragment_options(fragment))
    options.update(doc.get("options") or {})
    return options


def _walk(options, where):
    for name, spec in sorted((options or {}).items()):
        spec = spec or {}
        yield name, spec.get("type", "str"), where
        yield from _walk(spec.get("suboptions"), "%s.%s" % (where, name))


def module_names():
    return sorted(f[:-3] for f in os.listdir(MODULES) if f.endswith(".py") and not f.startswith("_"))


def all_module_options():
    for module in module_names():
        yield from _walk(module_options(module), module)


def role_names():
    return sorted(d for d in os.listdir(ROLES) if os.path.isfile(os.path.join(ROLES, d, "meta", "argument_specs.yml")))


# the stage roles whose variables another role may read under the same names (the k8s role reads probe_options,
# gpu_checks, nccl_options, rdma_perftest, ...: one name per setting on both substrates)
STAGE_PREFIXES = ("probe_", "gpu_", "nccl_", "hccl_", "rdma_")


def role_options(role):
    """(name without the role's prefix - or the stage's whose variable it reads -, type, where) of every option of
    every entry point of a role."""
    with open(os.path.join(ROLES, role, "meta", "argument_specs.yml"), encoding="utf-8") as fh:
        specs = (yaml.safe_load(fh) or {}).get("argument_specs") or {}
    for entry, spec in sorted(specs.items()):
        for name, option in sorted(((spec or {}).get("options") or {}).items()):
            where = "role %s (%s): %s" % (role, entry, name)
            prefix = next((p for p in (role + "_",) + STAGE_PREFIXES if name.startswith(p)), "")
            yield name[len(prefix):], (option or {}).get("type", "str"), where
            yield from _walk((option or {}).get("options"), where)


def _problems(entries, known):
    found = []
    for name, kind, where in entries:
        if name in RETIRED:
            found.append("%s: %r is retired, use %s" % (where, name, RETIRED[name]))
        elif name.startswith("expect_"):
            found.append("%s: %r - expectations go in an expect mapping (docs/glossary.md)" % (where, name))
        elif name not in known:
            found.append("%s: %r is not in docs/glossary.md" % (where, name))
        elif _TYPE.get(kind, kind) not in known[name]:
            found.append("%s: %r is %s here, %s in docs/glossary.md" % (where, name, kind, "/".join(sorted(known[name]))))
    return found


def test_the_glossary_gives_each_name_one_type():
    twice = dict((name, kinds) for name, kinds in glossary().items() if len(kinds) > 1)
    assert not twice, "names with two types in docs/glossary.md: %s" % twice


def test_the_glossary_retires_no_name_it_lists():
    assert not set(RETIRED) & set(glossary())


@pytest.mark.parametrize("module", module_names())
def test_every_module_option_is_in_the_glossary(module):
    problems = _problems(_walk(module_options(module), module), glossary())
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("role", role_names())
def test_every_role_variable_is_in_the_glossary(role):
    problems = _problems(role_options(role), glossary())
    assert not problems, "\n".join(problems)


def test_one_name_has_one_type_across_modules():
    seen = {}
    for name, kind, where in all_module_options():
        seen.setdefault(name, {}).setdefault(kind, []).append(where)
    mixed = dict((name, kinds) for name, kinds in seen.items() if len(kinds) > 1)
    assert not mixed, "one name, several types: %s" % mixed


def test_a_renamed_option_keeps_its_former_name_as_an_alias_only():
    """Every option renamed in 2.0.0 is documented under its new name with the former one as its alias, the former
    name is no option and no glossary row (the argument specs deprecate the aliases: argspec.renamed)."""
    aliased = {}
    for name, _kind, where in all_module_options():
        assert name not in RENAMED, "%s: %r was renamed to %s" % (where, name, RENAMED[name])
    for module in module_names():
        for name, spec in module_options(module).items():
            for alias in (spec or {}).get("aliases") or ():
                if alias in RENAMED:
                    assert RENAMED[alias] == name, (module, name, alias)
                    aliased.setdefault(alias, set()).add(module)
    assert set(aliased) == set(RENAMED), "renamed options no module keeps as an alias: %s" % (set(RENAMED) - set(aliased))
    # a former option group's name stays a glossary row while a stage role's variable has it after its prefix
    # (gpu_gemm, rdma_perftest: the stage variables of both substrates keep their names)
    stems = set(name for role in role_names() for name, _kind, _where in role_options(role))
    assert not (set(RENAMED) & set(glossary())) - stems


def test_the_test_sees_every_module_and_role():
    """Not vacuous: it reads the modules and roles that exist (one of each kind is named)."""
    assert {"nccl_test", "perftest", "env_probe", "k8s_workload"} <= set(module_names())
    assert {"nccl_tests", "perftest", "rdma_device_plugin"} <= set(role_names())
    assert len(list(all_module_options())) > 200
    assert len(glossary()) > 150
