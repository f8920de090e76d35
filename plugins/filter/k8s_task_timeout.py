# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
name: k8s_task_timeout
short_description: The time limit of a k8s_workload task - the worst case of the plan it will run, plus a margin
version_added: 1.1.0
author: aifabric.acceptance contributors (@aifabric)
description:
  - Takes the options a M(aifabric.acceptance.k8s_workload) task runs with (its module_defaults and its own) and gives
    the seconds its C(timeout:) needs - the plan the module will build (every step, each waiting its O(timeout_s) or,
    unset, the pods' deadline plus start-up; every launcher V(auto) may pick), the setup, the per-step log reads and
    the cleanup, plus O(margin_s) - so that Ansible's limit is never shorter than the module's own waits.
  - The C(k8s) role sets every workload task's C(timeout:) with it (margin C(aifabric_task_margin_s)); ansible.cfg's
    C(task_timeout) then never cuts a stage. The module also ends before whatever limit its task has (it is told it).
options:
  _input:
    description: The module's options (a mapping of k8s_workload option names).
    type: dict
    required: true
  margin_s:
    description: Seconds added to the plan's worst case.
    type: int
    default: 60
"""

EXAMPLES = r"""
- name: One GEMM Job per node, with a time limit that fits its plan
  aifabric.acceptance.k8s_workload:
    kind: gemm_bench
    hosts: "{{ ansible_play_hosts_all }}"
    image: registry.example.com/acceptance/gpu-tools:latest
  timeout: "{{ {'kind': 'gemm_bench', 'hosts': ansible_play_hosts_all, 'image': 'x'} | aifabric.acceptance.k8s_task_timeout(60) }}"
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
_value:
  description: Seconds.
  type: int
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import AcceptanceError


def k8s_task_timeout(args, margin_s=60):
    from ansible_collections.aifabric.acceptance.plugins.modules import k8s_workload
    if not isinstance(args, dict) or not args.get("kind"):
        raise AnsibleFilterError("k8s_task_timeout: needs the k8s_workload options (a mapping with kind), got %r"
                                 % (args,))
    try:
        return k8s_workload.task_timeout_s(args, margin_s)
    except AcceptanceError as exc:
        raise AnsibleFilterError("k8s_task_timeout: %s" % exc)


class FilterModule(object):
    def filters(self):
        return {"k8s_task_timeout": k8s_task_timeout}
