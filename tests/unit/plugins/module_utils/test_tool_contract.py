# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Adding a tool is enforced: every adapter in plugins/module_utils/tools/ (a public ``<tool>.py``) meets the contract
written at the top of tools/__init__.py, and the failure message says exactly what is missing.

Per adapter: ``OPTIONS``; ``ARGV`` (its argv functions, or ``NO_ARGV``); ``PARSERS`` (parsers it reaches);
``records``; ``from_output`` (or ``NO_IMPORT``); ``TOOL`` (or ``NO_TOOL_NAME``), ``CHECKS``, ``MODULE`` (a module
file); ``KUBERNETES`` (k8s_plan kinds, or ``SSH_ONLY``); ``GOLDEN`` (golden case kinds whose records carry that
``tool.name`` and check family, or ``NO_GOLDEN``); its row in docs/architecture.md's table of tools (the same names),
and its module on a user docs page. A waiver is a reason (a non-empty string), never beside what it waives.

The naming rule (docs/architecture.md, "One name per tool"): the adapter is ``tools/<MODULE>.py``; a record's
``tool.name`` is the external program it ran (``PROGRAMS``) or, for the collection's own worker, the module's name;
the check family names the subsystem under test, not the tool.
"""

from __future__ import annotations

import glob
import importlib
import json
import os
import re
import types

from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_plan
from ansible_collections.aifabric.acceptance.tests.unit.plugins.module_utils import test_module_utils_imports as imports_test

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", "..", ".."))
TOOLS = os.path.join(ROOT, "plugins", "module_utils", "tools")
GOLDEN = os.path.join(HERE, "fixtures", "records_golden")
PACKAGE = "ansible_collections.aifabric.acceptance.plugins.module_utils.tools."
# the external programs a record may name as its tool.name (what actually ran); anything else is the collection's own
# worker and carries its module's name
PROGRAMS = {"nccl-tests": "NVIDIA nccl-tests binaries (all_reduce_perf, ...)",
            "perftest": "linux-rdma perftest (ib_*_bw, ib_*_lat)", "dcgmi": "NVIDIA DCGM's CLI",
            "nvbandwidth": "NVIDIA nvbandwidth", "hccl_test": "Ascend CANN HCCL Test binaries",
            "nvidia-smi": "NVIDIA driver CLI", "npu-smi": "Ascend driver CLI", "hccn_tool": "Ascend NIC CLI",
            "nccl": "the NCCL library's version banner", "lldpctl": "lldpd's CLI", "lldptool": "open-lldp's CLI"}
# a Kubernetes kind is the module's name, or the module's name and this suffix for the gang form of a tool that has a
# per-node kind too (docs/architecture.md, "One name per tool")
GANG_SUFFIX = k8s_plan.MULTINODE
WAIVERS = {"ARGV": "NO_ARGV", "from_output": "NO_IMPORT", "TOOL": "NO_TOOL_NAME", "KUBERNETES": "SSH_ONLY",
           "GOLDEN": "NO_GOLDEN"}


def adapter_names():
    return sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(TOOLS, "*.py"))
                  if not os.path.basename(p).startswith("_"))


def _families(value):
    return (value,) if isinstance(value, str) else tuple(value or ())


def _waived(name, adapter, attribute, out):
    """True when the adapter waives ``attribute`` with a reason; a problem when it has both or an empty reason."""
    waiver = WAIVERS[attribute]
    if not hasattr(adapter, waiver):
        return False
    reason = getattr(adapter, waiver)
    if not isinstance(reason, str) or not reason.strip():
        out.append("%s = %r: a waiver is the reason, a non-empty string" % (waiver, reason))
    if hasattr(adapter, attribute):
        out.append("both %s and %s: drop the waiver" % (attribute, waiver))
    return True


def _declared(name, adapter, attribute, what, out):
    """The attribute, or a problem saying what to declare (and the waiver that may replace it)."""
    if attribute in WAIVERS and _waived(name, adapter, attribute, out):
        return None
    if not hasattr(adapter, attribute):
        out.append("no %s (%s)%s" % (attribute, what, " or %s = \"why\"" % WAIVERS[attribute]
                                     if attribute in WAIVERS else ""))
        return None
    return getattr(adapter, attribute)


def _code_problems(name, adapter, out):
    options = _declared(name, adapter, "OPTIONS", "the option spec of a run, argument_spec shape", out)
    if options is not None and not (isinstance(options, dict)
                                    and all(isinstance(s, dict) and "type" in s for s in options.values())):
        out.append("OPTIONS is not an option spec ({name: {type, default, ...}})")
    for function in _declared(name, adapter, "ARGV", "the names of the functions that build a run's argv", out) or ():
        if not callable(getattr(adapter, function, None)):
            out.append("ARGV names %s, which is not a function of the adapter" % function)
    if not callable(getattr(adapter, "records", None)):
        out.append("no records(text, ctx) (the records of one run)")
    if _declared(name, adapter, "from_output", "import mode: the records of a saved output", out) is not None \
            and not callable(adapter.from_output):
        out.append("from_output is not a function")
    _declared(name, adapter, "TOOL", "the records' tool.name", out)
    if not _families(_declared(name, adapter, "CHECKS", "the check family: records' check is <CHECKS>.<...>", out)):
        out.append("CHECKS names no check family")


def _parser_problems(name, adapter, edges, out):
    parsers = _declared(name, adapter, "PARSERS", "the parsers/ modules its records come from", out) or ()
    reach = imports_test.reachable(edges, "tools." + name) if "tools." + name in edges else set()
    for parser in parsers:
        if not os.path.exists(os.path.join(ROOT, "plugins", "module_utils", "parsers", parser + ".py")):
            out.append("PARSERS names %s: no plugins/module_utils/parsers/%s.py" % (parser, parser))
        elif "parsers." + parser not in reach:
            out.append("PARSERS names %s, which the adapter does not import" % parser)


def _substrate_problems(name, adapter, out):
    module = _declared(name, adapter, "MODULE", "the module that runs it over SSH", out)
    if module and not os.path.exists(os.path.join(ROOT, "plugins", "modules", module + ".py")):
        out.append("MODULE %s: no plugins/modules/%s.py" % (module, module))
    kinds = _declared(name, adapter, "KUBERNETES", "the k8s_plan kinds that run it", out)
    if kinds is not None:
        unknown = sorted(set(kinds) - set(k8s_plan.KINDS)) if kinds else ["(none)"]
        if unknown:
            out.append("KUBERNETES names %s, not a k8s_plan.KINDS kind (%s)" % (unknown, ", ".join(k8s_plan.KINDS)))


def _golden_records(kind):
    out = []
    for path in sorted(glob.glob(os.path.join(GOLDEN, "%s--*.json" % kind))):
        with open(path, encoding="utf-8") as handle:
            out += json.load(handle)
    return out


def _golden_problems(name, adapter, out):
    kinds = _declared(name, adapter, "GOLDEN", "its case kinds in test_records_golden.py", out)
    for kind in kinds or ():
        records = _golden_records(kind)
        if not records:
            out.append("GOLDEN names %s: no fixtures/records_golden/%s--*.json (write the cases in "
                       "test_records_golden.py, then AIFABRIC_REGEN_GOLDEN=1)" % (kind, kind))
        tool_names = sorted(set(str((r.get("tool") or {}).get("name")) for r in records))
        if getattr(adapter, "TOOL", None) is not None and records and tool_names != [adapter.TOOL]:
            out.append("TOOL %r but the %s golden records name %s" % (adapter.TOOL, kind, tool_names))
        families = _families(getattr(adapter, "CHECKS", ()))
        strays = sorted(set(r["check"] for r in records if r.get("check", "").split(".")[0] not in families))
        if strays:
            out.append("CHECKS %s but the %s golden records hold %s" % (families, kind, strays[:3]))


def architecture_rows():
    """{adapter: (module, kinds, families, tool name)} of docs/architecture.md's table of tools."""
    with open(os.path.join(ROOT, "docs", "architecture.md"), encoding="utf-8") as handle:
        text = handle.read()
    rows = {}
    for line in text.splitlines():
        match = re.match(r"^\| `tools/(\w+)\.py` \|(.*)\|\s*$", line)
        if match:
            cells = [c.strip().strip("`") for c in match.group(2).split("|")]
            rows[match.group(1)] = tuple(cells[:4])
    return rows


def expected_row(adapter):
    kinds = ", ".join(getattr(adapter, "KUBERNETES", ())) or "SSH only"
    return (getattr(adapter, "MODULE", ""), kinds, ", ".join(_families(getattr(adapter, "CHECKS", ()))),
            getattr(adapter, "TOOL", "-"))


def _docs_problems(name, adapter, rows, out):
    if name not in rows:
        out.append("no row in docs/architecture.md's table of tools: | `tools/%s.py` | `%s` | `%s` | `%s` | `%s` |"
                   % ((name,) + expected_row(adapter)))
    elif rows[name] != expected_row(adapter):
        out.append("docs/architecture.md's row says %s, the adapter %s" % (rows[name], expected_row(adapter)))
    module = getattr(adapter, "MODULE", None)
    pages = [p for p in glob.glob(os.path.join(ROOT, "docs", "*.md")) if not p.endswith("architecture.md")]
    if module and not any("aifabric.acceptance.%s" % module in open(p, encoding="utf-8").read() for p in pages):
        out.append("no user docs page (docs/*.md) names aifabric.acceptance.%s" % module)


def _naming_problems(name, adapter, out):
    """The naming rule: adapter file, module and kinds carry the module's name; tool.name is a program or the module."""
    module = getattr(adapter, "MODULE", None)
    if module and name != module:
        out.append("the adapter is named %s, its module %s: the adapter file is tools/<MODULE>.py" % (name, module))
    kinds = tuple(getattr(adapter, "KUBERNETES", ()))
    for kind in kinds:
        if kind != module and not (kind == str(module) + GANG_SUFFIX and module in kinds):
            out.append("Kubernetes kind %s: a kind is the module's name (%s), its gang form %s%s beside it"
                       % (kind, module, module, GANG_SUFFIX))
    allowed = set(PROGRAMS) | {module}
    named = set([adapter.TOOL] if hasattr(adapter, "TOOL") else [])
    for kind in getattr(adapter, "GOLDEN", ()):
        named |= set(str((r.get("tool") or {}).get("name")) for r in _golden_records(kind) if r.get("tool"))
    for tool in sorted(named - allowed - {"None"}):
        out.append("tool.name %s: neither an external program (PROGRAMS) nor the module's name %s" % (tool, module))


def problems(name, adapter, edges=None, rows=None):
    """What adapter ``name`` lacks, one line each."""
    out = []
    _code_problems(name, adapter, out)
    _parser_problems(name, adapter, imports_test.graph() if edges is None else edges, out)
    _substrate_problems(name, adapter, out)
    _naming_problems(name, adapter, out)
    _golden_problems(name, adapter, out)
    _docs_problems(name, adapter, architecture_rows() if rows is None else rows, out)
    return ["tools/%s.py: %s" % (name, line) for line in out]


def test_the_tools_are_the_expected_ones():
    assert len(adapter_names()) >= 7 and "nccl_test" in adapter_names()


def test_every_tool_meets_the_contract():
    edges, rows = imports_test.graph(), architecture_rows()
    found = []
    for name in adapter_names():
        found += problems(name, importlib.import_module(PACKAGE + name), edges, rows)
    assert found == [], "adding a tool (tools/__init__.py):\n" + "\n".join(found)


def test_every_kubernetes_kind_runs_one_tool():
    owners = {}
    for name in adapter_names():
        for kind in getattr(importlib.import_module(PACKAGE + name), "KUBERNETES", ()):
            owners.setdefault(kind, []).append(name)
    assert dict((kind, len(owners.get(kind, []))) for kind in k8s_plan.KINDS) == dict.fromkeys(k8s_plan.KINDS, 1), owners


def test_the_architecture_table_lists_only_tools():
    assert sorted(architecture_rows()) == adapter_names()


def test_a_tool_name_off_the_rule_is_named():
    """An adapter whose file, kind or tool.name drifts from its module's name is told which name breaks the rule."""
    demo = types.ModuleType("demo")
    demo.MODULE, demo.KUBERNETES, demo.TOOL = "demo_bench", ("demo", "allreduce_multinode"), "torch-demo"
    found = []
    _naming_problems("demo", demo, found)
    assert found == ["the adapter is named demo, its module demo_bench: the adapter file is tools/<MODULE>.py",
                     "Kubernetes kind demo: a kind is the module's name (demo_bench), its gang form "
                     "demo_bench_multinode beside it",
                     "Kubernetes kind allreduce_multinode: a kind is the module's name (demo_bench), its gang form "
                     "demo_bench_multinode beside it",
                     "tool.name torch-demo: neither an external program (PROGRAMS) nor the module's name demo_bench"]
    demo.TOOL = "demo_bench"
    demo.KUBERNETES = ("demo_bench_multinode",)      # a gang form alone: the kind is the module's name
    found = []
    _naming_problems("demo_bench", demo, found)
    assert found == ["Kubernetes kind demo_bench_multinode: a kind is the module's name (demo_bench), its gang form "
                     "demo_bench_multinode beside it"]
    demo.KUBERNETES = ("demo_bench", "demo_bench_multinode")
    found = []
    _naming_problems("demo_bench", demo, found)
    assert found == []


def test_every_former_kind_name_maps_to_a_kind():
    """The one table of the kinds' names before 2.0.0 maps each to a kind of today, and no former name is a kind."""
    assert set(k8s_plan.KINDS_RENAMED.values()) <= set(k8s_plan.KINDS)
    assert not set(k8s_plan.KINDS_RENAMED) & set(k8s_plan.KINDS)


def test_an_incomplete_adapter_is_told_what_is_missing():
    """A planted adapter with only OPTIONS and records: every missing piece is named, and a waiver beside what it
    waives, or an empty one, is refused."""
    demo = types.ModuleType("demo")
    demo.OPTIONS = {"size": {"type": "int"}}
    demo.records = lambda text, ctx: []
    found = problems("demo", demo, edges={}, rows={})
    assert found == [
        "tools/demo.py: no ARGV (the names of the functions that build a run's argv) or NO_ARGV = \"why\"",
        "tools/demo.py: no from_output (import mode: the records of a saved output) or NO_IMPORT = \"why\"",
        "tools/demo.py: no TOOL (the records' tool.name) or NO_TOOL_NAME = \"why\"",
        "tools/demo.py: no CHECKS (the check family: records' check is <CHECKS>.<...>)",
        "tools/demo.py: CHECKS names no check family",
        "tools/demo.py: no PARSERS (the parsers/ modules its records come from)",
        "tools/demo.py: no MODULE (the module that runs it over SSH)",
        "tools/demo.py: no KUBERNETES (the k8s_plan kinds that run it) or SSH_ONLY = \"why\"",
        "tools/demo.py: no GOLDEN (its case kinds in test_records_golden.py) or NO_GOLDEN = \"why\"",
        "tools/demo.py: no row in docs/architecture.md's table of tools: | `tools/demo.py` | `` | `SSH only` | `` | `-` |",
    ]
    demo.ARGV, demo.NO_ARGV, demo.SSH_ONLY = ("argv",), "", "because"
    demo.PARSERS, demo.GOLDEN = ("no_such_parser",), ("no-such-kind",)
    found = problems("demo", demo, edges={}, rows={})
    assert "tools/demo.py: NO_ARGV = '': a waiver is the reason, a non-empty string" in found
    assert "tools/demo.py: both ARGV and NO_ARGV: drop the waiver" in found
    assert "tools/demo.py: PARSERS names no_such_parser: no plugins/module_utils/parsers/no_such_parser.py" in found
    assert any(line.startswith("tools/demo.py: GOLDEN names no-such-kind: no fixtures/records_golden/") for line in found)
