# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
name: tool_options
short_description: The options a tool's module runs with - the given mapping over the module's own defaults
version_added: 1.0.0
author: aifabric.acceptance contributors (@aifabric)
description:
  - Takes a mapping of a module's options (a stage role's option group, for example C(gpu_gemm)) and gives it back
    completed with the defaults of every option of the tool's run that it does not set - the defaults of the tool
    adapter's option spec (C(plugins/module_utils/tools/<module>.py) C(OPTIONS)), the one place they are defined.
  - The stage roles use it to compute a task's time limit from the limit the module will really apply (its
    C(timeout_s)), whether the user set it or not, without repeating the module's default.
  - Keys the adapter does not know (a module's own plumbing, such as C(python) or C(launcher)) are kept as given.
options:
  _input:
    description: The options given (a mapping of option names; empty or null means none).
    type: dict
    required: true
  tool:
    description:
      - The tool whose defaults complete the mapping, by the name of the module that runs it.
      - The adapters' former names (V(env), V(gemm), V(hccl), V(nccl_tests), V(perftest), V(torch_allreduce),
        V(dcgm), V(soak)) are deprecated and still accepted, with a deprecation warning, until 3.0.0.
    type: str
    required: true
    choices: [env_probe, gemm_bench, hccl_test, nccl_test, perftest_sweep, allreduce_probe, dcgm_diag, port_counters,
              gpu_soak, copy_bandwidth]
"""

EXAMPLES = r"""
- name: The GEMM task's limit, from the options it runs with
  ansible.builtin.debug:
    msg: "{{ ({'iterations': 50} | aifabric.acceptance.tool_options('gemm_bench')).timeout_s }}"
  # 600 - gemm_bench's default timeout_s
"""

RETURN = r"""
_value:
  description: The mapping given, with every option of the tool's adapter it does not set at its default.
  type: dict
"""

import importlib

from ansible.errors import AnsibleFilterError
from ansible.utils.display import Display

TOOLS = ("env_probe", "gemm_bench", "hccl_test", "nccl_test", "perftest_sweep", "allreduce_probe", "dcgm_diag",
         "port_counters", "gpu_soak", "copy_bandwidth")
# the adapters' names before 2.0.0 (a tool is named after its module since): accepted with a deprecation warning
RENAMED = {"env": "env_probe", "gemm": "gemm_bench", "hccl": "hccl_test", "nccl_tests": "nccl_test",
           "perftest": "perftest_sweep", "torch_allreduce": "allreduce_probe", "dcgm": "dcgm_diag", "soak": "gpu_soak"}


def tool_options(given, tool):
    """``given`` over the defaults of ``tool``'s adapter OPTIONS (deep copies: the caller may change them)."""
    if tool in RENAMED:
        Display().deprecated("tool_options(%r): the tool is named after its module now, use %r" % (tool, RENAMED[tool]),
                             version="3.0.0", collection_name="aifabric.acceptance")
        tool = RENAMED[tool]
    if tool not in TOOLS:
        raise AnsibleFilterError("tool_options: unknown tool %r (one of %s)" % (tool, ", ".join(TOOLS)))
    if given is None:
        given = {}
    if not isinstance(given, dict):
        raise AnsibleFilterError("tool_options: the options of %s must be a mapping, got %s: %r"
                                 % (tool, type(given).__name__, given))
    tools = importlib.import_module("ansible_collections.aifabric.acceptance.plugins.module_utils.tools")
    adapter = importlib.import_module("ansible_collections.aifabric.acceptance.plugins.module_utils.tools." + tool)
    out = tools.defaults(adapter.OPTIONS)
    out.update(given)
    return out


class FilterModule(object):
    def filters(self):
        return {"tool_options": tool_options}
