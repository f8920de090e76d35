# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One adapter per tool, all the same shape (issue 20 item 1).

Each adapter module (``nccl_tests``, ``hccl``, ``perftest``, ``gemm``, ``torch_allreduce``, ``env``, ``topology``)
exposes

- ``OPTIONS`` - the option spec of a run of the tool, plain data in the AnsibleModule argument_spec shape
  (``{name: {"type", "default", "choices", "elements"}}``): the single source of those options' types and defaults.
  The module's argument_spec is ``OPTIONS`` plus its own plumbing (SSH launch, import mode, staging), the Kubernetes
  planner's defaults are ``defaults(OPTIONS)`` of the options it accepts (k8s_plan.DEFAULTS), and the module's
  DOCUMENTATION documents the same defaults (tests/unit/plugins/module_utils/test_tool_option_specs.py);
- ``records(text, ctx) -> [records]`` - the records of one run from the tool's output text (a process's output, a
  pod's log, a saved file: the same text), never raising on tool output; ``ctx`` is a ``Context``;
- ``from_output(path, params[, host]) -> [records]`` (not ``env``) - import mode: ``records`` of a saved output read with
  imports.read_output (raises imports.ImportRefused when the file is not readable).
- the argv of a run, the same for the SSH module and the Kubernetes planner and pods (``nccl_argv``, ``launch_argv``,
  ``run_env``; ``worker_args``; perftest's ``device_plan`` and ``argvs_for``).

The probes that read a host rather than one tool's output (``env``, ``topology``) take the host instead of a text:
``records(host, params)`` with an env_probe.Host (its commands run with a timeout, its root reads sysfs).

Every caller (the SSH modules, the Kubernetes planner, import mode and the tests) calls these, and nothing else
builds a tool's records. This package file imports no adapter: a pod ships only what it uses (k8s_plan.CODE_MODULES).
Runs on the targets: Python 3.8+, no Ansible imports.
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
    # GPU worker
    output: Optional[str] = None
    python: str = "python3"
    # import mode
    source: Optional[str] = None


def defaults(options, omit=()):
    """``{name: default}`` of an option spec (an adapter's ``OPTIONS``) less the names in ``omit``: None where an
    option has no default, as AnsibleModule gives; deep copies, so a caller may change them."""
    return copy.deepcopy(dict((name, spec.get("default")) for name, spec in options.items() if name not in omit))
