#!/usr/bin/python
# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: cleanup
short_description: Stop every process a run left on this host, found by its run id
version_added: 1.0.0
author: aifabric.acceptance contributors (@aifabric)
description:
  - Every process started by a multi-host launch of the collection (M(aifabric.acceptance.nccl_test),
    M(aifabric.acceptance.allreduce_probe)) carries C(AIFABRIC_RUN_TAG=<run id>) in its environment (the
    launcher gets it from the module and C(mpirun) exports it to every rank with C(-x)).
  - This module finds the live processes of this host whose environment (C(/proc/<pid>/environ)) carries the
    run id, and stops them - C(SIGTERM) to the launchers (C(mpirun), C(mpiexec), C(orterun), C(prterun),
    C(torchrun)) first so that they tear down their own daemons and ranks, then C(SIGTERM) to whatever is left
    and C(SIGKILL) after O(grace_s). A process is only signalled while its start time is still the one seen.
  - Run it on every host of the run after the launch task (C(always:) of a C(block:)), so that a launcher
    killed outright or a lost controller leaves nothing behind. Reading other users' C(environ) needs root.
extends_documentation_fragment:
  - aifabric.acceptance._attributes
attributes:
  check_mode:
    support: full
    details: Lists the processes it would stop and signals none.
  diff_mode:
    support: none
  idempotent:
    support: full
    details: A second run finds nothing left to stop.
options:
  run_id:
    description: The run id (the C(run_id) returned by, or given to, the launching module).
    type: str
    required: true
  grace_s:
    description:
      - Seconds between C(SIGTERM) and C(SIGKILL).
      - Must be 0 or more.
    type: float
    default: 10
"""

EXAMPLES = r"""
- name: Multi-node collectives, and whatever happens, nothing of the run stays on any host
  block:
    - name: Run all_reduce across the group
      aifabric.acceptance.nccl_test:
        hosts: "{{ groups['gpu_nodes'] }}"
        ranks_per_node: 8
        run_id: "{{ nccl_run_id }}"
      run_once: true
  always:
    - name: Stop leftovers of the run on every host
      aifabric.acceptance.cleanup:
        run_id: "{{ nccl_run_id }}"
"""

RETURN = r"""
killed:
  description: One entry per signal sent - C(pid), C(argv) (first words), C(signal) (C(SIGTERM) or C(SIGKILL)).
  returned: always
  type: list
  elements: dict
found:
  description: The processes of the run found on this host before anything was signalled (C(pid), C(argv)).
  returned: always
  type: list
  elements: dict
results:
  description: Always empty - this module measures nothing (kept for the C(results) contract of the collection).
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aifabric.acceptance.plugins.module_utils import argspec, launch, modmain


RANGES = {"grace_s": argspec.NON_NEGATIVE}


def main():
    module = argspec.module(
        AnsibleModule, RANGES,
        argument_spec=dict(
            run_id=dict(type="str", required=True),
            grace_s=dict(type="float", default=10),
        ),
        supports_check_mode=True,
    )
    modmain.run(module, "cleanup", _cleanup)


def _cleanup(module):
    p = module.params
    found = [{"pid": pid, "argv": argv[:8]} for pid, _start, argv in launch.tagged(p["run_id"])]
    killed = [] if module.check_mode else launch.terminate(p["run_id"], grace_s=p["grace_s"])
    return dict(changed=bool(found), found=found, killed=killed, results=[])


if __name__ == "__main__":
    main()
