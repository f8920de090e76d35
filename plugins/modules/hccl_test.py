#!/usr/bin/python
# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: hccl_test
short_description: Run Huawei CANN HCCL Test collectives on Ascend NPUs, or import their saved output, as result records
version_added: 1.0.0
author:
  - aifabric.acceptance contributors (@aifabric)
description:
  - Runs one HCCL Test binary per collective (C(all_reduce_test), C(all_gather_test), C(reduce_scatter_test),
    C(broadcast_test), C(alltoall_test), C(reduce_test), ...) through C(mpirun), one rank per NPU, and returns one
    result record C(hccl.<collective>) per run with the per-size table in the record's C(series).
  - B(Single node) (O(hosts) empty) runs C(mpirun -n <npus_per_node>) on this host. B(Multi-node) (O(hosts) set) runs
    C(mpirun) on this host over a hostfile built from O(hosts), with MPICH (C(-f hostfile -n N), hostfile lines
    C(host:N)) or Open MPI (C(--hostfile hostfile -np N), lines C(host slots=N)) syntax (O(mpi_flavour)).
  - HCCL Test prints only the algorithm bandwidth; the record's C(busbw_gbyte_s) is computed with the nccl-tests
    factor of the collective at n ranks (all_reduce 2(n-1)/n, all_gather, reduce_scatter and alltoall (n-1)/n,
    broadcast and reduce 1), so NCCL and HCCL records compare side by side (see C(docs/hccl.md)).
  - C(check_result) C(failed) at any size gives a C(fail) record that keeps the measured bandwidths; C(NULL)
    (C(-c 0), or a check the tool turned off) is counted, not judged. Launcher and C(init_hcclComm) failures give
    C(error) records that quote the tool's message and keep the output's tail.
  - B(Import mode) (O(from_output)) reads a saved output instead of running anything.
extends_documentation_fragment: [aifabric.acceptance._attributes, aifabric.acceptance._attributes.results,
                                 aifabric.acceptance._attributes.benchmark, aifabric.acceptance._profiles, aifabric.acceptance._collective_launch]
attributes:
  check_mode:
    details:
      - In run mode, returns the commands that would run and empty results; generates no traffic. The O(cann_env_script)
        is still sourced (it only prints the environment) so the commands shown are the real ones.
      - Import mode reads the file and returns records in check mode too.
options:
  collectives:
    description: Collectives to run, one binary each (C(<name>_test)), in this order.
    type: list
    elements: str
    default: [all_reduce, all_gather, reduce_scatter, alltoall]
  tool_dir:
    description:
      - Directory of the HCCL Test binaries (built in C(<toolkit>/tools/hccl_test), into its C(bin)); the default is
        where a CANN toolkit installed in the standard place has them. V('') looks them up on PATH.
    type: path
    default: /usr/local/Ascend/ascend-toolkit/latest/tools/hccl_test/bin
  if_missing:
    description: Record when a binary is missing, V(error) (default) or V(skip).
    type: str
    choices: [error, skip]
    default: error
  cann_env_script:
    description:
      - The CANN environment script (for example C(/usr/local/Ascend/ascend-toolkit/set_env.sh)) to apply before the run.
      - It is sourced by C(bash -c '. "$1" >/dev/null 2>&1 && env -0' aifabric-set-env <path>) under a 60 s timeout;
        the path travels as an argument, never inside the command text. The variables it sets or changes among
        C(PATH), C(LD_LIBRARY_PATH), C(PYTHONPATH), C(ASCEND_*) and a few toolchain paths become the launcher's
        environment and are forwarded to every rank by name (MPICH C(-genvlist), Open MPI C(-x NAME)).
      - A path that is not a file, a script that fails, or one that sets none of those variables fails the task.
        V('') applies none (the launcher's environment as it is).
    type: path
    default: /usr/local/Ascend/ascend-toolkit/set_env.sh
  npus_per_node:
    description:
      - C(-p), NPUs per node taking part (also the rank count of a single-node run).
      - Must be 1 or more.
    type: int
    default: 8
  min_bytes:
    description: C(-b), smallest message size (bytes, or with a K, M or G suffix).
    type: str
    default: 8K
  max_bytes:
    description: C(-e), largest message size.
    type: str
    default: 1G
  step_factor:
    description:
      - C(-f), multiply the size by this factor between steps.
      - Must be 1 or more.
    type: int
    default: 2
  step_bytes:
    description:
      - C(-i), add this many bytes between steps (the tool prefers O(step_factor) when both are set).
      - Must be 0 or more.
    type: int
  verify_data:
    description:
      - C(-c 1) (V(true)) or C(-c 0) (V(false), giving C(NULL)), the tool's result check on or off; unset leaves the
        tool's default (on). A failed check fails the record.
    type: bool
  datatype:
    description: C(-d), data type (V(fp32), V(fp16), V(int8), V(bfp16), ...).
    type: str
  op:
    description: C(-o), reduction (V(sum), V(prod), V(max), V(min)).
    type: str
  root:
    description:
      - C(-r), root rank of broadcast, reduce and scatter.
      - Must be 0 or more.
    type: int
  env:
    description: C(HCCL_*), C(ASCEND_*) and C(HCCN_*) variables for every rank (others are refused).
    type: dict
    default: {}
  ranks_per_node:
    description:
      - Ranks per host of a multi-node run (default O(npus_per_node)).
      - Must be 0 or more.
    type: int
    default: 0
  mpi_flavour:
    description: Which C(mpirun) syntax to use, V(mpich) (what the CANN documentation builds against) or V(openmpi).
    type: str
    choices: [mpich, openmpi]
    default: mpich
  ranks:
    description:
      - Import mode (or an override), the total rank count the busbw factor uses; the output does not print it.
      - Must be 1 or more.
    type: int
  expect:
    description:
      - "User thresholds per metric (for example C({busbw_max_gbyte_s: {min: 150}})) or per check
        (C({hccl.all_reduce: {busbw_max_gbyte_s: {min: 150}}})); they override the profile's."
    type: dict
    default: {}
notes:
  - O(profile=auto) picks no profile (HCCL Test output does not name the NPU); the C(hccl.yml) playbook passes the
    profile matching the NPU model the C(npu) probe found.
seealso:
  - module: aifabric.acceptance.nccl_test
  - name: HCCL Test documentation
    description: CANN oam-tools, HCCL Test execution and options.
    link: https://gitcode.com/cann/oam-tools/blob/master/docs/zh/hccl_test/execution.md
"""

EXAMPLES = r"""
- name: All-reduce and all-gather on the 8 NPUs of this host
  aifabric.acceptance.hccl_test:
    tool_dir: /usr/local/Ascend/ascend-toolkit/latest/tools/hccl_test/bin
    cann_env_script: /usr/local/Ascend/ascend-toolkit/set_env.sh
    collectives: [all_reduce, all_gather]
    npus_per_node: 8
    max_bytes: 1G

- name: 4 nodes x 16 NPUs through Open MPI
  aifabric.acceptance.hccl_test:
    tool_dir: /usr/local/Ascend/ascend-toolkit/latest/tools/hccl_test/bin
    cann_env_script: /usr/local/Ascend/ascend-toolkit/set_env.sh
    hosts: "{{ groups['npu_nodes'] }}"
    npus_per_node: 16
    mpi_flavour: openmpi
    env:
      HCCL_SOCKET_IFNAME: eth0
      HCCL_CONNECT_TIMEOUT: "600"
  run_once: true

- name: Import a run made elsewhere (8 ranks)
  aifabric.acceptance.hccl_test:
    from_output: /srv/aifabric/captures/all_reduce_test.log
    ranks: 8
"""

RETURN = r"""
results:
  description: One C(hccl.<collective>) result record per collective (see C(docs/results.md) and C(docs/hccl.md)).
  returned: always
  type: list
  elements: dict
  sample:
    - check: hccl.all_reduce
      status: pass
      metrics: {algbw_max_gbyte_s: 23.76245, busbw_max_gbyte_s: 41.584288, check_failed_total: 0, ranks: 8}
cmd:
  description: The argv of each run (a list of argv lists), or what would run in check mode.
  returned: always
  type: list
  elements: list
run_id:
  description: The run id every process of the run carried (see O(run_id)).
  returned: always
  type: str
runs:
  description: Per collective, its exit code, the trimmed tail of its output and the leftover processes stopped.
  returned: when a process ran
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aifabric.acceptance.plugins.module_utils import argspec, collective_module, hccl_run
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import hccl_test as hccl

# the run's options (tools/hccl_test.py: the single source; collective_module.SPEC holds the hosts, run tag and import
# mode's options) and the ranges
SPEC = hccl.OPTIONS
RANGES = {"npus_per_node": argspec.POSITIVE, "step_bytes": argspec.NON_NEGATIVE, "ranks": argspec.POSITIVE}


def main():
    collective_module.main(AnsibleModule, "hccl_test", SPEC, RANGES, hccl.from_output, hccl_run.run_hccl)


if __name__ == "__main__":
    main()
