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
  - With O(perftest_state=true) it also stops and removes what an RDMA run
    (M(aifabric.acceptance.perftest_sweep)) left in its state directory O(state_root)/<host id>/O(run_id) - its
    sweep runner, servers and clients and their files, only what the collection created and marked - and
    restores a CPU governor the run changed (what M(aifabric.acceptance.perftest) C(state=absent) did).
extends_documentation_fragment:
  - aifabric.acceptance._attributes
attributes:
  check_mode:
    support: full
    details: Lists the processes it would stop and signals none; with O(perftest_state) it removes nothing and
      changes no governor.
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
  perftest_state:
    description:
      - Also stop and remove what the RDMA run O(run_id) left in its perftest state directory, and restore a CPU
        governor it changed (see the description).
    type: bool
    default: false
  state_root:
    description:
      - With O(perftest_state) - the directory of per-run state the run used (its O(state_root)); default the
        collection's own state directory for perftest.
    type: path
  inventory_hostname:
    description:
      - With O(perftest_state) - inventory name of this host, as the run was given it (default the node's hostname).
      - Before 2.0.0 named O(host_name), still accepted with a deprecation warning until 3.0.0.
    type: str
    aliases: [host_name]
  cpu_sysfs:
    description: With O(perftest_state) - the cpufreq sysfs tree (for tests).
    type: path
    default: /sys/devices/system/cpu
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

- name: Remove whatever an RDMA run left on this host (its perftest processes, files and CPU governor)
  aifabric.acceptance.cleanup:
    run_id: "{{ rdma_run_id }}"
    perftest_state: true
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
governor:
  description: O(perftest_state) - what happened to the CPU governor (C(action) none/restored, C(reason)).
  returned: when perftest_state is true
  type: dict
removed:
  description: O(perftest_state) - state directories removed and processes killed.
  returned: when perftest_state is true
  type: list
  elements: str
left:
  description:
    - O(perftest_state) - what was found in the run's state but left alone, and why (a directory the module did
      not create, one writable by others, a C(handle.json) it did not write).
  returned: when perftest_state is true
  type: list
  elements: str
results:
  description: Always empty - this module measures nothing (kept for the C(results) contract of the collection).
  returned: always
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aifabric.acceptance.plugins.module_utils import argspec, launch, modmain, perftest_state


RANGES = {"grace_s": argspec.NON_NEGATIVE}


def main():
    module = argspec.module(
        AnsibleModule, RANGES,
        argument_spec=dict(
            run_id=dict(type="str", required=True),
            grace_s=dict(type="float", default=10),
            perftest_state=dict(type="bool", default=False),
            # what the removal of a run's perftest state reads (the perftest modules' own options: one spec)
            **perftest_state.STATE_SPEC
        ),
        supports_check_mode=True,
    )
    modmain.run(module, "cleanup", _cleanup)


def _cleanup(module):
    p = module.params
    found = [{"pid": pid, "argv": argv[:8]} for pid, _start, argv in launch.tagged(p["run_id"])]
    killed = [] if module.check_mode else launch.terminate(p["run_id"], grace_s=p["grace_s"])
    out = dict(changed=bool(found), found=found, killed=killed, results=[])
    if p["perftest_state"]:
        out.update(remove_perftest_state(module))
        out["changed"] = bool(found) or out["changed"]
    return out


def remove_perftest_state(module):
    """The run's perftest state removed (PerftestRun.absent): {changed, removed, left, governor}."""
    # the perftest run (its state, governor, clients) is loaded only when there is perftest state to remove
    from ansible_collections.aifabric.acceptance.plugins.module_utils.perftest_run import PerftestRun  # pylint: disable=import-outside-toplevel
    run = PerftestRun(module)
    run.open_state()
    return run.absent()


if __name__ == "__main__":
    main()
