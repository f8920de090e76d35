#!/usr/bin/python
# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: nccl_test
short_description: Run NVIDIA nccl-tests (or rccl-tests) collectives, or import their saved output, as result records
version_added: 1.0.0
author:
  - aifabric.acceptance contributors (@aifabric)
description:
  - Runs one nccl-tests binary per collective (C(all_reduce_perf), C(all_gather_perf), ...) and returns one result record
    C(nccl.<collective>) per run, with the full per-size table in the record's C(series).
  - B(Single node) (O(hosts) empty) runs the binary on this host with C(-g) GPUs in one process.
    B(Multi-node) (O(hosts) set) runs C(mpirun) on this host (the launcher) over a hostfile built from O(hosts),
    one rank per GPU (C(-g 1)); the binaries must be built with C(MPI=1) and exist at O(tool_dir) on every host.
  - Prefers the JSON file output (C(-J), nccl-tests 2.18 and later) when the binary's help offers it, and reads the
    text table otherwise (every layout since 2018, Open MPI C([1,0]<stdout>:) prefixes, interleaved NCCL INFO/WARN lines).
  - B(Import mode) (O(from_output)) reads a saved output (text or C(-J) JSON) instead of running anything, so runs made
    elsewhere can join a report.
  - A crashed or truncated run gives an C(error) record that keeps the last lines of output; wrong elements (C(#wrong))
    or C(Out of bounds values ... FAILED) give C(fail); thresholds come from hardware profiles and O(expect).
  - A B(single node) collective whose record fails on its figures (not on wrong data, which a second run does not
    clear) runs once more, within what is left of O(timeout_s) (only when at least the first run's time is left), and
    is judged on both runs - C(fail) only when both fail, C(warn) "inconclusive" when they disagree; the record keeps
    both figures (metrics C(run1_busbw_max_gbyte_s), C(run2_busbw_max_gbyte_s)) and C(params.runs) says how many runs
    its status rests on. A multi-node run is not retested (C(params.runs) 1); the group screen repeats its own tests.
extends_documentation_fragment: [aifabric.acceptance._attributes, aifabric.acceptance._attributes.results,
                                 aifabric.acceptance._attributes.benchmark, aifabric.acceptance._profiles, aifabric.acceptance._collective_launch]
attributes:
  check_mode:
    details:
      - In run mode, returns the commands that would run and empty results; generates no traffic.
      - Import mode reads the file and returns records in check mode too.
options:
  collectives:
    description:
      Collectives to run, one binary each (C(<name>_perf)), in this order.
    type: list
    elements: str
    default: [all_reduce, all_gather, reduce_scatter, alltoall, broadcast, reduce, sendrecv]
  tool_dir:
    description: Directory holding the nccl-tests binaries (for example C(/opt/nccl-tests/build)). Default is PATH.
    type: path
  if_missing:
    description: What a missing binary gives, V(error) (the default; the record carries the install hint) or V(skip).
    type: str
    choices: [error, skip]
    default: error
  gpus_per_process:
    description:
      - nccl-tests C(-g). V(0) means every GPU of the host on one node (C(nvidia-smi -L)), 1 with O(hosts).
      - Must be 0 or more.
    type: int
    default: 0
  min_bytes:
    description: C(-b), smallest size (nccl-tests syntax, for example V(8), V(1M)).
    type: str
    default: "8"
  max_bytes:
    description: C(-e), largest size (for example V(8G)).
    type: str
    default: 8G
  step_factor:
    description:
      - C(-f), multiplication factor between sizes.
      - Must be 1 or more.
    type: int
    default: 2
  step_bytes:
    description:
      - C(-i), fixed increment between sizes (instead of O(step_factor)).
      - Must be 1 or more.
    type: int
  verify_data:
    description:
      - C(-c 1) (V(true)) or C(-c 0) (V(false)), check every result's data or not; unset leaves the tool's default
        (nccl-tests checks). Wrong elements (C(#wrong)) fail the check.
    type: bool
  datatype:
    description: C(-d), data type (V(float), V(half), V(bfloat16), V(all), ...).
    type: str
  op:
    description: C(-o), reduction (V(sum), V(prod), V(min), V(max), V(avg), V(all)).
    type: str
  root:
    description:
      - C(-r), root rank for rooted collectives.
      - Must be 0 or more.
    type: int
  threads:
    description:
      - C(-t), threads per process.
      - Must be 1 or more.
    type: int
  agg_iterations:
    description:
      - C(-m), operations aggregated per iteration.
      - Must be 1 or more.
    type: int
  average:
    description:
      - C(-a), how per-rank times are combined (0 rank 0, 1 average, 2 min, 3 max).
      - Must be between 0 and 3.
    type: int
  blocking:
    description:
      - C(-z), blocking collectives.
      - Must be between 0 and 1.
    type: int
  cudagraph:
    description:
      - C(-G), CUDA graph launches.
      - Must be 0 or more.
    type: int
  tool_timeout_s:
    description:
      - C(-T), the binary's own timeout in seconds (nccl-tests 2.14 and later).
      - Must be 0 or more.
    type: int
  json_output:
    description: Use C(-J FILE) (V(auto) when the binary's C(-h) lists it, V(always), V(never)).
    type: str
    choices: [auto, always, never]
    default: auto
  env:
    description:
      - Environment for the run (C(NCCL_*), C(CUDA_VISIBLE_DEVICES), ...), exported to every rank with C(-x) under C(mpirun).
      - A forced C(NCCL_ALGO) is recorded in the facts and in the shape the results are judged and compared by.
    type: dict
    default: {}
  split:
    description: C(NCCL_TESTS_SPLIT) for per-rail runs (for example V(AND 0x7) or V(MOD 8)).
    type: str
  socket_ifname:
    description: C(NCCL_SOCKET_IFNAME) (NCCL's bootstrap and socket transport interface).
    type: str
  ranks_per_node:
    description:
      - MPI ranks per host of a run over O(hosts), one per GPU. V(0) means as many as this host (the launcher) has
        GPUs (C(nvidia-smi -L)), every host of the run taken to have as many; without C(nvidia-smi) the task fails
        and asks for a number. That query is read-only and runs in check mode too.
      - Must be 0 or more.
    type: int
    default: 0
  mpirun_mca:
    description: "MCA parameters (C(--mca NAME VALUE)), for example C({pml: ob1, btl: ^openib})."
    type: dict
    default: {}
  from_format:
    description: Format of O(from_output).
    type: str
    choices: [auto, text, json]
    default: auto
  expect:
    description:
      - "User thresholds per metric (for example C({busbw_max_gbyte_s: {min: 350}})), applied to every collective, or per
        check (C({nccl.all_reduce: {busbw_max_gbyte_s: {min: 350}}})); they override the profile's."
    type: dict
    default: {}
seealso:
  - module: aifabric.acceptance.allreduce_probe
  - name: Role aifabric.acceptance.nccl_tests
    description: Makes nccl-tests available (package, prebuilt tarball or existing directory) and verifies it.
    link: https://github.com/aifabric/acceptance/tree/main/roles/nccl_tests
"""

EXAMPLES = r"""
- name: The default collectives on every GPU of this host
  aifabric.acceptance.nccl_test:
    tool_dir: /opt/nccl-tests/build
    max_bytes: 8G

- name: 16 nodes x 8 GPUs, all_reduce through mpirun, one rail at a time
  aifabric.acceptance.nccl_test:
    tool_dir: /opt/nccl-tests/build
    collectives: [all_reduce]
    hosts: "{{ groups['gpu_nodes'] }}"
    ranks_per_node: 8
    tcp_if_include: 10.0.0.0/16
    socket_ifname: bond0
    split: AND 0x7
    env:
      NCCL_IB_HCA: "=mlx5_0,mlx5_1,mlx5_2,mlx5_3"
  run_once: true

- name: Import a run made elsewhere
  aifabric.acceptance.nccl_test:
    from_output: /srv/aifabric/captures/all_reduce.json
"""

RETURN = r"""
results:
  description: One C(nccl.<collective>) result record per collective (see C(docs/results.md)).
  returned: always
  type: list
  elements: dict
  sample:
    - check: nccl.all_reduce
      status: pass
      metrics: {busbw_max_gbyte_s: 345.69, algbw_max_gbyte_s: 345.69, busbw_avg_gbyte_s: 111.153, wrong_total: 0, ranks: 2}
cmd:
  description:
    The argv of each run (a list of argv lists), or what would run in check mode.
  returned: always
  type: list
  elements: list
run_id:
  description: The run id every process of the run carried (see O(run_id)).
  returned: always
  type: str
runs:
  description:
    - Per collective, its exit code, the trimmed tail of its output and C(swept), the leftover processes of the
      run that were stopped on this host afterwards; a retest's entry has C(retest=true).
  returned: when a process ran
  type: list
  elements: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aifabric.acceptance.plugins.module_utils import argspec, collective_module, nccl_run
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import nccl_test as nccl_tests

# the run's options (tools/nccl_test.py: the single source, the Kubernetes planner's too), import mode's format
# (collective_module.SPEC holds the hosts, run id and import mode's other options) and the ranges
SPEC = dict(nccl_tests.OPTIONS, from_format=dict(type="str", choices=["auto", "text", "json"], default="auto"))
RANGES = {
    "gpus_per_process": argspec.NON_NEGATIVE, "step_bytes": argspec.POSITIVE,
    "threads": argspec.POSITIVE, "agg_iterations": argspec.POSITIVE, "average": (0, 3), "blocking": (0, 1),
    "cudagraph": argspec.NON_NEGATIVE, "tool_timeout_s": argspec.NON_NEGATIVE,
}


def main():
    collective_module.main(AnsibleModule, "nccl_test", SPEC, RANGES, nccl_tests.from_output, nccl_run.run_collectives)


if __name__ == "__main__":
    main()
