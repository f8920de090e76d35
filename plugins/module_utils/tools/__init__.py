# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""An adapter per module that runs a tool, one contract (the host probes, env and topology, take a host instead of a
text): the bottom floor the SSH modules and the Kubernetes planner and pods stand on.

Adding a tool (tests/unit/plugins/module_utils/test_tool_contract.py enumerates tools/ and says what is missing):

1. ``parsers/<tool>.py`` - the parser, tested on real captures (source in PROVENANCE) and fuzzed with hypothesis;
2. ``tools/<module>.py`` - the adapter, named after the module that runs it (one name per tool: the module, the
   adapter, the Kubernetes kind; docs/architecture.md "One name per tool"); it imports only the floor (parsers, results, thresholds, errors, expectations,
   imports, argspec; tools/_mpirun.py is the collective runner: mpirun over hosts) and declares:

   - ``OPTIONS`` - the option spec of a run (AnsibleModule argument_spec shape): the single source of the options'
     types and defaults (the module's argument_spec is ``OPTIONS`` plus its plumbing; the planner's defaults are
     ``defaults(OPTIONS)``; test_tool_option_specs.py checks the module's DOCUMENTATION against it);
   - ``ARGV = ("<function>", ...)`` - the functions that build a run's argv (an option -> flag table such as
     nccl_tests.FLAGS feeds them), the same for every substrate;
   - ``PARSERS = ("<parsers module>", ...)`` - the parsers its records come from;
   - ``records(text, ctx) -> [records]`` (``ctx`` a ``Context``; never raises on tool output) and
     ``from_output(path, params[, host])`` - import mode (or ``NO_IMPORT = "why"``);
   - ``TOOL`` (records' ``tool.name``: the external program run, or ``MODULE`` for the collection's own worker; or
     ``NO_TOOL_NAME = "why"``), ``CHECKS`` (the check family: every record's
     check is ``<CHECKS>.<...>``), ``MODULE`` (plugins/modules/<MODULE>.py runs it over SSH);
   - ``KUBERNETES = ("<k8s_plan kind>", ...)`` - the planner's kinds that run it, or ``SSH_ONLY = "why"``;
   - ``GOLDEN = ("<case kind>", ...)`` - its cases in test_records_golden.py (fixtures/records_golden/), or
     ``NO_GOLDEN = "why"``;
3. ``plugins/modules/<MODULE>.py`` - a thin module (modmain.run, argspec, check mode, full documentation);
4. a row in docs/architecture.md's table of tools, and the module on a user docs page;
5. the glossary (tests/unit/test_vocabulary*.py) for every new option.

The probes that read a host rather than one tool's output (``env_probe``, ``fabric_topology``) take the host instead of a text:
``records(host, params)`` with a probe_host.Host (its commands run with a timeout, its root reads sysfs).

The records of a tool's output come only from these (the SSH modules, the Kubernetes planner, import mode and the
golden tests call them); a run that left no output to read (the tool missing, a launch that failed, a pod never up)
gets its skip/error record where it failed. This package file imports no adapter: a pod ships only what it uses (k8s_plan.CODE_MODULES).
Modules named ``_*.py`` are the adapters' private helpers (``_collective``: the collective runs' options and record;
``_mpirun``: the collective runner; ``_perftest_options``: perftest's option spec, which module perftest_sweep's
status poll loads without the adapter). Runs on the targets: Python 3.8+, no Ansible imports.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field, replace
from typing import Any, Dict, List, Optional

__all__ = ["Context", "defaults", "replace"]


@dataclass(frozen=True)
class Context:
    """What a record says about the run besides the tool's output.

    ``params``: the module's options (profile, profiles, expect, test, ...: defaults apply to missing keys);
    ``target``: the component measured (HCA of a perftest run); ``hosts``: the nodes of a multi-node collective;
    ``document``: a second output the run wrote (nccl-tests' -J JSON, the probe's JSON result); ``output``: stdout
    and stderr together where ``text`` is stdout only (GEMM); ``source``: the saved file import mode read.
    """

    params: Dict[str, Any] = field(default_factory=dict)
    host: Optional[str] = None
    peer: Optional[str] = None
    target: Optional[str] = None
    argv: Optional[List[str]] = None
    env: Optional[Dict[str, str]] = None
    started: Optional[str] = None
    duration_s: Optional[float] = None
    rc: Optional[int] = None
    timed_out: bool = False
    attempts: int = 1
    # collectives (nccl-tests, HCCL Test, the torch all-reduce probe)
    hosts: Optional[List[str]] = None
    collective: Optional[str] = None
    launch: Optional[str] = None
    document: Optional[str] = None
    nodes: int = 1
    launcher: str = "spawn"
    ranks_per_node: Optional[int] = None
    gpu_name: Optional[str] = None
    gpus: Optional[int] = None
    # perftest
    side: str = "client"
    index: int = 0
    tool_version: Optional[str] = None
    facts: Optional[Dict[str, Any]] = None
    reading: Any = None     # the output already read once (tools.perftest_sweep.read_output), else records reads it
    # GPU worker
    output: Optional[str] = None
    python: str = "python3"
    # import mode
    source: Optional[str] = None


def defaults(options, omit=()):
    """``{name: default}`` of an option spec (an adapter's ``OPTIONS``) less the names in ``omit``: None where an
    option has no default, as AnsibleModule gives; deep copies, so a caller may change them."""
    return copy.deepcopy(dict((name, spec.get("default")) for name, spec in options.items() if name not in omit))
