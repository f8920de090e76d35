#!/usr/bin/python
# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: perftest
short_description: Run perftest (ib_*_bw, ib_*_lat) server/client pairs and return result records
version_added: 1.0.0
author: aifabric.acceptance contributors (@aifabric)
description:
  - Runs one side of a perftest pair (C(ib_write_bw), C(ib_read_bw), C(ib_send_bw), C(ib_write_lat),
    C(ib_read_lat), C(ib_send_lat)) on one or several RDMA devices of the host at once, each device on
    its own TCP port (O(port) + device index), and returns result records.
  - A round runs in three steps so that no pair can deadlock whatever Ansible's C(forks) is.
    O(state=server) starts every server detached (own session, hard C(timeout), output in a per-run
    state directory) and returns C(handles). O(state=client) runs every client at once against O(peer),
    re-starting a client while its server does not answer yet (bounded by O(connect_timeout_s)).
    O(state=collect) waits for the servers (bounded by O(collect_timeout_s)), parses their side and kills
    anything left. O(state=absent) kills and removes everything a run left behind.
  - State lives in O(state_root)/<host id>/O(run_id) (host id - the node name and the first 12 hex digits of
    C(/etc/machine-id)), so hosts sharing a state root (an NFS home) never see each other's runs.
    O(state=collect) and O(state=absent) remove only directories the module created (each carries a private
    C(.aifabric-acceptance) marker file), trust only C(handle.json) files it wrote there (a regular file of the
    user running it, writable by nobody else) and kill a process only while its start time is still the one
    recorded; anything else is left as it is and listed in C(left).
  - The GID index (C(-x)) is chosen from sysfs when O(gid_index) is not given - the RoCE v2 GID that maps
    an IPv4 address of the port's netdev; InfiniBand ports need none.
  - Bandwidth is reported in Gbit/s (C(--report_gbits) is on by default). Outputs in C(MB/sec) or
    C(MiB/sec) (imported, or O(report_gbits=false)) are converted with perftest's own definition
    (2^20 bytes/s); the tool's own figures stay in each record's C(series).
  - O(from_output) imports a saved perftest output instead of running anything (import mode).
  - Optionally sets the CPU frequency governor (O(cpu_governor)) for the test and always restores the
    previous governors, on success, failure, timeout and interrupt; concurrent tests of one host share
    the setting (reference-counted), and a server's governor hold is released by its supervisor when the
    server ends.
extends_documentation_fragment:
  - aifabric.acceptance._attributes
  - aifabric.acceptance._attributes.results
  - aifabric.acceptance._attributes.benchmark
  - aifabric.acceptance._perftest_test
attributes:
  check_mode:
    details:
      - Returns the command lines that would run; starts no process, generates no traffic, changes no governor.
      - O(state=absent) reports what it would remove.
  idempotent:
    details: Each run is a new measurement. O(state=absent) is idempotent.
options:
  state:
    description:
      - V(server) starts the servers detached and returns their handles; V(client) runs the clients;
        V(collect) waits for the servers, parses them and removes them; V(absent) kills and removes
        everything left by the run O(run_id) that the module created itself (see the description).
    type: str
    choices: [server, client, collect, absent]
    default: client
  test:
    description:
      - The perftest program. Defaults to V(ib_write_bw); in import mode the program named by the output
        itself wins, and O(test) is only used when the text does not tell.
    type: str
    choices: [ib_write_bw, ib_read_bw, ib_send_bw, ib_write_lat, ib_read_lat, ib_send_lat]
    aliases: [tool]
  devices:
    description:
      - RDMA devices of this host (C(-d)), tested at once; the i-th device listens on / connects to TCP port
        O(port) + i. Rails are aligned by position - list the server's and the client's devices in the same
        order (V(mlx5_0) with V(mlx5_0), or an explicit map by giving each side its own order).
      - Required for V(server) and V(client).
    type: list
    elements: str
  peer:
    description: Address (IP or name) of the server host; required for O(state=client).
    type: str
  peer_name:
    description: Inventory name of the other end, stored as each record's C(peer) (default O(peer)).
    type: str
  port:
    description:
      - Base TCP port (C(-p)); device i uses O(port) + i.
      - Must be between 1 and 65535.
    type: int
    default: 18515
  use_cuda:
    description: GPUDirect RDMA - pass C(--use_cuda=<value>) (a GPU index) so the buffers live in GPU memory.
    type: str
  out_json:
    description:
      - Also ask perftest for its JSON report (C(--out_json --out_json_file=...)) when the installed perftest
        supports it. The file is kept in the state directory and named in each record's C(params); records
        are built from the text output in every case.
    type: bool
    default: false
  connect_timeout_s:
    description:
      - How long a client keeps re-starting while its server does not answer yet.
      - Must be 0 or more.
    type: int
    default: 60
  connect_retry_delay_s:
    description:
      - Pause between two client attempts.
      - Must be 0 or more.
    type: float
    default: 1.0
  collect_timeout_s:
    description:
      - How long O(state=collect) waits for a server before killing it.
      - Must be 0 or more.
    type: int
    default: 60
  handles:
    description:
      - For O(state=collect), the C(handles) returned by O(state=server) on this host. When omitted, every
        server handle of the run O(run_id) found in O(state_root) is collected.
      - A handle only points at a server directory of the run (its C(state_dir)); the process ids and paths used
        are the ones O(state=server) stored there. A handle pointing elsewhere gives an C(error) record and
        touches nothing.
      - For O(state=server), the handles of the previous round's servers on this host - they are collected
        first (as O(state=collect) would) and their records returned with the new servers' handles. This saves
        one task per round (C(playbooks/rdma.yml) uses it).
    type: list
    elements: dict
  peer_rate_gbit_s:
    description:
      - Active port rate of the server's devices, one per device (the C(port_rate_gbit_s) of the server's
        handles); the bandwidth floor uses the lower of both ends.
      - Must be 0 or more.
    type: list
    elements: float
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
"""

EXAMPLES = r"""
- name: Start ib_write_bw servers on two rails
  aifabric.acceptance.perftest:
    state: server
    test: ib_write_bw
    devices: [mlx5_0, mlx5_1]
    run_id: "{{ rdma_run_id }}"
    cpu_governor: performance
  register: server

- name: Run the clients against that server (retrying until it answers)
  aifabric.acceptance.perftest:
    state: client
    test: ib_write_bw
    devices: [mlx5_0, mlx5_1]
    peer: 10.0.0.12
    peer_name: gpu-node-12
    host_name: "{{ inventory_hostname }}"
    peer_rate_gbit_s: "{{ server.handles | map(attribute='port_rate_gbit_s') | list }}"
    run_id: "{{ rdma_run_id }}"

- name: Collect the servers (waits, parses, kills leftovers)
  aifabric.acceptance.perftest:
    state: collect
    handles: "{{ server.handles }}"
    run_id: "{{ rdma_run_id }}"

- name: Import a saved output
  aifabric.acceptance.perftest:
    from_output: /var/tmp/ib_write_bw-node7.txt
    side: client
    devices: [mlx5_3]
    peer_name: gpu-node-12

- name: Remove whatever a broken run left behind
  aifabric.acceptance.perftest:
    state: absent
    run_id: "{{ rdma_run_id }}"
"""

RETURN = r"""
results:
  description: Result records (see the collection's docs/results.md). Client side C(rdma.<test>), server side
    C(rdma.<test>.server); bandwidth metrics C(bw_avg_gbit_s), C(bw_peak_gbit_s), C(msg_rate_mpps),
    C(msg_size_bytes); latency metrics C(lat_min_us) ... C(lat_p999_us); per-size C(series).
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
handles:
  description: O(state=server) - one handle per device (pids, process group, paths, TCP port, port rate).
  returned: when state is server
  type: list
  elements: dict
runs:
  description: What ran, per device - C(device), C(cmd) (argv), C(rc), C(stdout) (trimmed tail), C(attempts).
  returned: when a process ran
  type: list
  elements: dict
cmd:
  description: The argv of the first device (all of them are in C(runs)).
  returned: when a process ran or would run
  type: list
  elements: str
collected:
  description: O(state=server) with O(handles) - what the collection of the previous servers found (as C(runs)).
  returned: when state is server and handles were given
  type: list
  elements: dict
governor:
  description: What happened to the CPU governor (C(action) set/shared/skip/restored, C(reason)).
  returned: when cpu_governor is set
  type: dict
removed:
  description: O(state=absent) and O(state=collect) - state directories removed and processes killed.
  returned: when state is absent or collect, or server with handles
  type: list
  elements: str
left:
  description:
    - O(state=absent) and O(state=collect) - what was found in the run's state but left alone, and why (a
      directory the module did not create, one writable by others, a C(handle.json) it did not write).
  returned: when state is absent or collect
  type: list
  elements: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aifabric.acceptance.plugins.module_utils import argspec, modmain, perftest_pairs
from ansible_collections.aifabric.acceptance.plugins.module_utils.perftest_run import PerftestRun


RANGES = dict(perftest_pairs.TEST_RANGES, **{
    "port": argspec.PORT, "connect_timeout_s": argspec.NON_NEGATIVE,
    "connect_retry_delay_s": argspec.NON_NEGATIVE, "collect_timeout_s": argspec.NON_NEGATIVE,
    "peer_rate_gbit_s": argspec.NON_NEGATIVE,
})


def argument_spec():
    return dict(
        **perftest_pairs.TEST_SPEC,
        state=dict(type="str", default="client", choices=["server", "client", "collect", "absent"]),
        test=dict(type="str", choices=list(perftest_pairs.TESTS), aliases=["tool"]),
        devices=dict(type="list", elements="str"),
        peer=dict(type="str"),
        peer_name=dict(type="str"),
        port=dict(type="int", default=perftest_pairs.DEFAULT_PORT),
        use_cuda=dict(type="str"),
        out_json=dict(type="bool", default=False),
        connect_timeout_s=dict(type="int", default=60),
        connect_retry_delay_s=dict(type="float", default=1.0),
        collect_timeout_s=dict(type="int", default=60),
        handles=dict(type="list", elements="dict"),
        peer_rate_gbit_s=dict(type="list", elements="float"),
        from_output=dict(type="path"),
        side=dict(type="str", choices=["client", "server"]),
    )


def main():
    module = argspec.module(
        AnsibleModule, RANGES,
        argument_spec=argument_spec(),
        supports_check_mode=True,
        mutually_exclusive=[("size", "all_sizes"), ("iterations", "duration_s")],
    )
    modmain.run(module, "perftest module", lambda module: PerftestRun(module).run(),
                interrupt_note=" (every started process was stopped, governors restored)")


if __name__ == "__main__":
    main()
