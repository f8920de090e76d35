# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One option spec per tool (issue 20 item 1): each tool adapter's ``OPTIONS`` (plugins/module_utils/tools/) is the
single source of its run's options. For every tool, the module's argument_spec (what ``main()`` really hands
AnsibleModule), the Kubernetes planner's defaults (k8s_plan.DEFAULTS) and the module's documented defaults (its
DOCUMENTATION with its doc fragments) agree with the adapter's spec for every option they share; the planner sets
a different default only where k8s_plan.KUBERNETES_OPTIONS says so (and k8s_workload documents it)."""

from __future__ import annotations

import ast
import importlib
import os

import pytest
import yaml

from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_plan
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import (
    env_probe as env, gemm_bench as gemm, hccl_test as hccl, nccl_test as nccl_tests, perftest_sweep as perftest,
    allreduce_probe as torch_allreduce)
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import (
    copy_bandwidth, dcgm_diag as dcgm, port_counters, gpu_soak as soak)
from ansible_collections.aifabric.acceptance.plugins.modules import (
    allreduce_probe, env_probe, gemm_bench, hccl_test, nccl_test, perftest as perftest_module, perftest_sweep)
from ansible_collections.aifabric.acceptance.plugins.modules import dcgm_diag, port_counters as port_counters_module
from ansible_collections.aifabric.acceptance.plugins.modules import copy_bandwidth as copy_module, gpu_soak

PLUGINS = os.path.join(os.path.dirname(k8s_plan.__file__), os.pardir)
ADAPTERS = {"env_probe": env, "gemm_bench": gemm, "nccl_test": nccl_tests, "hccl_test": hccl, "perftest_sweep": perftest,
            "allreduce_probe": torch_allreduce, "dcgm_diag": dcgm, "port_counters": port_counters, "gpu_soak": soak,
            "copy_bandwidth": copy_bandwidth}
# adapter -> the modules that run the tool; True: the module takes every option of the adapter
MODULES = {
    "env_probe": [(env_probe, True)],
    "gemm_bench": [(gemm_bench, True)],
    "nccl_test": [(nccl_test, True)],
    "hccl_test": [(hccl_test, True)],
    "allreduce_probe": [(allreduce_probe, True)],
    "gpu_soak": [(gpu_soak, True)],
    "copy_bandwidth": [(copy_module, True)],
    # the perftest module runs one side of a test, perftest_sweep every pair of a schedule: together, every option
    "perftest_sweep": [(perftest_module, False), (perftest_sweep, False)],
    "dcgm_diag": [(dcgm_diag, True)],
    "port_counters": [(port_counters_module, True)],
}
# planner kind -> adapter
KINDS = {"env_probe": "env_probe", "gemm_bench": "gemm_bench", "nccl_test": "nccl_test", "nccl_test_multinode": "nccl_test",
         "perftest_sweep": "perftest_sweep", "allreduce_probe": "allreduce_probe", "dcgm_diag": "dcgm_diag",
         "port_counters": "port_counters", "gpu_soak": "gpu_soak", "copy_bandwidth": "copy_bandwidth"}
# the adapters' options whose default the planner sets differently (k8s_plan.KUBERNETES_OPTIONS says why)
KUBERNETES_DIFFERENT = {"env_probe": set(), "gemm_bench": set(), "nccl_test": set(), "nccl_test_multinode": set(),
                        "perftest_sweep": {"test", "hcas", "peer_rates_gbit_s"}, "allreduce_probe": set(),
                        "dcgm_diag": set(), "port_counters": set(), "gpu_soak": set(), "copy_bandwidth": set()}
SPEC_KEYS = ("type", "default", "choices", "elements", "options")


class _Built(Exception):
    """Raised by the stand-in AnsibleModule: the module's main() built its argument_spec."""


def argument_spec(module, monkeypatch):
    """The argument_spec the module's main() hands AnsibleModule."""
    seen = {}

    def capture(**kwargs):
        seen.update(kwargs)
        raise _Built()

    monkeypatch.setattr(module, "AnsibleModule", capture)
    with pytest.raises(_Built):
        module.main()
    return seen["argument_spec"]


def _fragment_options(name):
    """The options of a doc fragment, ``aifabric.acceptance._x`` or ``aifabric.acceptance._x.section``."""
    parts = name.split(".")[2:]
    fragment = importlib.import_module("ansible_collections.aifabric.acceptance.plugins.doc_fragments." + parts[0])
    text = getattr(fragment.ModuleDocFragment, parts[1].upper() if len(parts) > 1 else "DOCUMENTATION")
    return (yaml.safe_load(text) or {}).get("options") or {}


def documented_options(module):
    """The module's documented options: its DOCUMENTATION's and its doc fragments' (the module's own win)."""
    doc = yaml.safe_load(module.DOCUMENTATION)
    options = {}
    for name in doc.get("extends_documentation_fragment") or []:
        options.update(_fragment_options(name))
    options.update(doc.get("options") or {})
    return options


def _module_cases():
    return [(adapter, module, every) for adapter, modules in MODULES.items() for module, every in modules]


@pytest.mark.parametrize("adapter, module, every", _module_cases(), ids=lambda v: getattr(v, "__name__", str(v)).split(".")[-1])
def test_the_modules_take_the_adapters_options(monkeypatch, adapter, module, every):
    options = ADAPTERS[adapter].OPTIONS
    spec = argument_spec(module, monkeypatch)
    shared = [name for name in options if name in spec]
    if every:
        assert shared == list(options)
    assert shared, "%s takes none of %s's options" % (module.__name__, adapter)
    for name in shared:
        mine = dict((k, v) for k, v in spec[name].items() if k in SPEC_KEYS)
        theirs = dict((k, v) for k, v in options[name].items() if k in SPEC_KEYS)
        assert mine == theirs, "%s: option %s differs from tools/%s.py" % (module.__name__, name, adapter)
        for key in ("aliases", "deprecated_aliases"):     # a renamed option's former name: on every module
            assert all(a in spec[name].get(key, []) for a in options[name].get(key, [])), (module.__name__, name, key)


def test_the_perftest_modules_together_take_every_option_of_the_adapter(monkeypatch):
    taken = set()
    for module, _every in MODULES["perftest_sweep"]:
        taken.update(argument_spec(module, monkeypatch))
    assert set(perftest.OPTIONS) <= taken


@pytest.mark.parametrize("adapter, module, every", _module_cases(), ids=lambda v: getattr(v, "__name__", str(v)).split(".")[-1])
def test_the_modules_document_the_adapters_defaults(monkeypatch, adapter, module, every):
    documented = documented_options(module)
    spec = argument_spec(module, monkeypatch)
    _same_documented(module.__name__, documented, dict((k, v) for k, v in ADAPTERS[adapter].OPTIONS.items() if k in spec))


def _same_documented(where, documented, options):
    """Each option (and suboption) documented with the adapter's default, type and choices."""
    for name, option in options.items():
        assert name in documented, "%s does not document %s" % (where, name)
        assert documented[name].get("default") == option.get("default"), (where, name)
        assert documented[name].get("type", "str") == option["type"], (where, name)
        assert documented[name].get("choices") == option.get("choices"), (where, name)
        if option.get("options"):
            _same_documented("%s.%s" % (where, name), documented[name].get("suboptions") or {}, option["options"])


@pytest.mark.parametrize("kind", sorted(KINDS))
def test_the_planner_defaults_are_the_adapters(kind):
    options = ADAPTERS[KINDS[kind]].OPTIONS
    planner = k8s_plan.DEFAULTS[kind]
    own = k8s_plan.KUBERNETES_OPTIONS["nccl_test" if kind == "nccl_test_multinode" else kind]
    # every planner option is the adapter's or the pods' own: none is written by hand twice
    assert set(planner) <= set(options) | set(own)
    assert set(own) <= set(planner)
    shared = [name for name in planner if name in options]
    assert shared
    different = set(name for name in shared if name in own)
    assert different == KUBERNETES_DIFFERENT[kind]
    for name in shared:
        if name in different:
            assert planner[name] != options[name].get("default"), "%s: %s is the same now, drop it" % (kind, name)
        else:
            assert planner[name] == options[name].get("default"), (kind, name)


def test_the_planner_documents_its_own_defaults():
    """k8s_workload documents the options the pods add (ssh_port V(2222), torchrun, master_port V(29500), ...)."""
    doc = documented_options(importlib.import_module("ansible_collections.aifabric.acceptance.plugins.modules.k8s_workload"))
    for kind, option in (("nccl_test", "nccl_test"), ("perftest_sweep", "perftest_sweep"), ("allreduce_probe", "allreduce_probe")):
        text = " ".join(doc[option]["description"])
        for name, value in k8s_plan.KUBERNETES_OPTIONS[kind].items():
            if name not in ADAPTERS[KINDS[kind]].OPTIONS:
                assert "C(%s)" % name in text, (option, name)
                if value not in (None, [], {}):
                    assert "(V(%s))" % value in text, (option, name, value)


@pytest.mark.parametrize("name", sorted(ADAPTERS) + ["_collective", "__init__"])
def test_the_adapters_import_nothing_from_ansible(name):
    path = os.path.join(PLUGINS, "module_utils", "tools", name + ".py")
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    for node in ast.walk(tree):
        modules = [alias.name for alias in node.names] if isinstance(node, ast.Import) else (
            [node.module or ""] if isinstance(node, ast.ImportFrom) else [])
        for module in modules:
            assert not (module == "ansible" or module.startswith("ansible.")), (name, module)
