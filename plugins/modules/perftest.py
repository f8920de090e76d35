#!/usr/bin/python
# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: perftest
short_description: Import perftest (ib_*_bw, ib_*_lat) outputs as result records, and remove what an RDMA run left
version_added: 1.0.0
author: aifabric.acceptance contributors (@aifabric)
description:
  - O(from_output) imports a saved output of C(ib_write_bw), C(ib_read_bw), C(ib_send_bw), C(ib_write_lat),
    C(ib_read_lat), C(ib_send_lat), C(ib_atomic_bw) or C(ib_atomic_lat) (either side of a pair) and returns its
    result record, judged as a live run's would be (import mode; nothing runs). An atomic test's record names its
    operation (C(facts.atomic_operation), V(FETCH_AND_ADD) or V(CMP_AND_SWAP), from the output's title).
  - O(state=absent) kills and removes everything the run O(run_id) left on this host (servers, clients, a sweep
    runner's step directories), as far as the collection created it.
  - Running perftest pairs is the job of M(aifabric.acceptance.perftest_sweep), the collection's one RDMA protocol - a
    per-host runner that walks its part of a schedule. A single pair is a schedule of one step (see the examples);
    C(playbooks/rdma.yml) runs whole fleets that way. The same records come out (the client check C(rdma.<test>),
    the server check C(rdma.<test>.server)).
  - State lives in O(state_root)/<host id>/O(run_id) (host id - the node name and the first 12 hex digits of
    C(/etc/machine-id)), so hosts sharing a state root (an NFS home) never see each other's runs.
    O(state=absent) removes only directories the collection created (each carries a private
    C(.aifabric-acceptance) marker file), trusts only C(handle.json) files it wrote there (a regular file of the
    user running it, writable by nobody else) and kills a process only while its start time is still the one
    recorded; anything else is left as it is and listed in C(left). It also restores a CPU governor (O(cpu_governor))
    a killed run could not restore.
  - Bandwidth is reported in Gbit/s. Outputs in C(MB/sec) or C(MiB/sec) are converted with perftest's own definition
    (2^20 bytes/s); the tool's own figures stay in each record's C(series).
  - Options of the shared perftest documentation that only a live run uses (O(tool_dir), O(timeout_s),
    O(gid_index), O(extra_args), ...) are accepted and ignored here.
attributes:
  check_mode:
    details:
      - Import mode reads and parses as usual (it changes nothing).
      - O(state=absent) reports what it would remove; it kills nothing, removes nothing, changes no governor.
  idempotent:
    details: O(state=absent) is idempotent; import mode changes nothing.
extends_documentation_fragment:
  - aifabric.acceptance._perftest_test
  - aifabric.acceptance._attributes
  - aifabric.acceptance._attributes.results
  - aifabric.acceptance._attributes.benchmark
options:
  state:
    description:
      - V(absent) kills and removes everything left by the run O(run_id) that the collection created itself (see
        the description). Required unless O(from_output) is given.
      - Deprecated - use M(aifabric.acceptance.cleanup) with O(aifabric.acceptance.cleanup#module:perftest_state=true)
        (the same removal, beside the run-tag cleanup of the other launches); O(state=absent) goes in 2.0.0.
    type: str
    choices: [absent]
  test:
    description:
      - Import mode - the perftest program, used only when the text does not tell (the program named by the output
        itself wins). Defaults to V(ib_write_bw).
    type: str
    choices: [ib_write_bw, ib_read_bw, ib_send_bw, ib_write_lat, ib_read_lat, ib_send_lat, ib_atomic_bw, ib_atomic_lat]
    aliases: [tool]
  hcas:
    description: Import mode - the RDMA device (HCA) the output was measured on (the first one is the record's C(target)).
    type: list
    elements: str
  peer_name:
    description: Import mode - inventory name of the other end, stored as the record's C(peer).
    type: str
  peer_rates_gbit_s:
    description:
      - Import mode - active port rate of the other end's devices, in Gbit/s (one per device); the bandwidth floor
        uses the lower of both ends.
      - Must be 0 or more.
      - Before 2.0.0 named O(peer_rate_gbit_s), still accepted with a deprecation warning until 3.0.0.
    type: list
    elements: float
    aliases: [peer_rate_gbit_s]
  from_output:
    description:
      - Import mode - parse this saved perftest output file (on the target) instead of running.
      - Only a regular file of at most 64 MiB is read (symbolic links to one are followed); a missing or unreadable
        file, a directory, a device such as C(/dev/zero), a FIFO, a socket or a larger file fails the task with
        the reason, before anything is read.
    type: path
  side:
    description: Import mode - which side the saved output comes from, when the text does not say.
    type: str
    choices: [client, server]
seealso:
  - module: aifabric.acceptance.perftest_sweep
    description: Runs perftest pairs (a host's whole schedule, or a single pair as a schedule of one step).
"""

EXAMPLES = r"""
- name: Import a saved output
  aifabric.acceptance.perftest:
    from_output: /srv/aifabric/captures/ib_write_bw-node7.txt
    side: client
    hcas: [mlx5_3]
    peer_name: gpu-node-12

- name: Remove whatever a broken run left behind
  aifabric.acceptance.perftest:
    state: absent
    run_id: "{{ rdma_run_id }}"

# A single pair (gpu-node-12 serves, gpu-node-07 connects) is a schedule of one step of the sweep runner:
# [step, test, round, role, peer] per host. Run it on both hosts, then collect each runner's records.
- name: One pair, two rails - start the runner of each end
  aifabric.acceptance.perftest_sweep:
    phase: run
    schedule: "{{ {'gpu-node-12': [[0, 'ib_write_bw', 0, 'server', 'gpu-node-07']],
                   'gpu-node-07': [[0, 'ib_write_bw', 0, 'client', 'gpu-node-12']]}[inventory_hostname] }}"
    peers: {gpu-node-12: 10.0.0.12, gpu-node-07: 10.0.0.7}
    hcas: [mlx5_0, mlx5_1]
    inventory_hostname: "{{ inventory_hostname }}"
    run_id: "{{ rdma_run_id }}"
    lease_s: 0
  async: 600
  poll: 0
  when: inventory_hostname in ['gpu-node-12', 'gpu-node-07']

- name: One pair - collect the records of each end
  aifabric.acceptance.perftest_sweep:
    phase: wait
    rounds: [[ib_write_bw, 0, 1]]
    sweep_hosts: [gpu-node-12, gpu-node-07]
    inventory_hostname: "{{ inventory_hostname }}"
    run_id: "{{ rdma_run_id }}"
  register: pair
  when: inventory_hostname in ['gpu-node-12', 'gpu-node-07']
"""

RETURN = r"""
results:
  description: Result records (see the collection's docs/results.md). Client side C(rdma.<test>), server side
    C(rdma.<test>.server); bandwidth metrics C(bw_avg_gbit_s), C(bw_peak_gbit_s), C(msg_rate_mpps),
    C(msg_size_bytes); latency metrics C(lat_min_us) ... C(lat_p999_us); per-size C(series). Empty for
    O(state=absent).
  returned: always
  type: list
  elements: dict
  sample:
    - check: rdma.ib_write_bw
      status: pass
      host: gpu-node-07
      peer: gpu-node-12
      target: mlx5_0
      metrics: {bw_avg_gbit_s: 390.55, bw_peak_gbit_s: 390.6, msg_rate_mpps: 0.744912, msg_size_bytes: 65536}
governor:
  description: O(state=absent) - what happened to the CPU governor (C(action) none/restored, C(reason)).
  returned: when state is absent
  type: dict
removed:
  description: O(state=absent) - state directories removed and processes killed.
  returned: when state is absent
  type: list
  elements: str
left:
  description:
    - O(state=absent) - what was found in the run's state but left alone, and why (a directory the module did not
      create, one writable by others, a C(handle.json) it did not write).
  returned: when state is absent
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aifabric.acceptance.plugins.module_utils import argspec, modmain, perftest_state
from ansible_collections.aifabric.acceptance.plugins.module_utils.perftest_run import PerftestRun
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import perftest_sweep as perftest_tool


RANGES = dict(perftest_tool.TEST_RANGES, **{"peer_rates_gbit_s": argspec.NON_NEGATIVE})


def argument_spec():
    return dict(
        **perftest_tool.TEST_SPEC,
        **perftest_state.STATE_SPEC,
        state=dict(type="str", choices=["absent"]),
        test=dict(type="str", choices=list(perftest_tool.TESTS), aliases=["tool"]),
        hcas=dict(type="list", elements="str"),
        peer_name=dict(type="str"),
        peer_rates_gbit_s=perftest_tool.OPTIONS["peer_rates_gbit_s"],
        from_output=dict(type="path"),
        side=dict(type="str", choices=["client", "server"]),
    )


def main():
    module = argspec.module(
        AnsibleModule, RANGES,
        argument_spec=argument_spec(),
        supports_check_mode=True,
        mutually_exclusive=[("size", "all_sizes"), ("iterations", "duration_s"), ("from_output", "state")],
        required_one_of=[("from_output", "state")],
    )
    if module.params["state"] == "absent":
        module.deprecate("perftest state=absent: use aifabric.acceptance.cleanup with perftest_state=true (the same "
                         "removal)", version="2.0.0", collection_name="aifabric.acceptance")
    modmain.run(module, "perftest module", lambda module: PerftestRun(module).run(),
                interrupt_note=" (every started process was stopped, governors restored)")


if __name__ == "__main__":
    main()
