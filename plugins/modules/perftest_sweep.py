#!/usr/bin/python
# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: perftest_sweep
short_description: Run perftest pairs - a host's whole perftest schedule, on the host itself (RDMA sweeps)
version_added: 1.0.0
author: aifabric.acceptance contributors (@aifabric)
description:
  - The collection's one RDMA protocol. One runner per host walks that host's part of the schedule (from the
    P(aifabric.acceptance.sweep_schedule#filter) filter) in order - per step its role (server or client), the peer
    and the perftest program (C(ib_write_bw), C(ib_read_bw), C(ib_send_bw), C(ib_write_lat), C(ib_read_lat),
    C(ib_send_lat), C(ib_atomic_bw), C(ib_atomic_lat)) on every device of the host at once. The controller pays a constant number of tasks per sweep
    whatever the number of rounds (C(playbooks/rdma.yml)). A single pair is a schedule of one step (one host
    C(server), the other C(client); see the examples of M(aifabric.acceptance.perftest)).
  - Records come from the one perftest record builder (the one M(aifabric.acceptance.perftest)'s import mode uses) -
    client check C(rdma.<test>) (the pair's edge, judged against the lower port rate of both ends), server check
    C(rdma.<test>.server). A missing perftest program, a peer that never answered and a process past its
    O(timeout_s) are C(error) records, not failed tasks.
  - Pairs synchronise through their own connection (a client retries until its server listens, within
    O(connect_timeout_s)); each step uses its own TCP ports (O(port) + (step mod O(port_span)) x O(rails) + i), so a
    client that runs ahead never reaches the server of an earlier step.
  - A peer that did not answer once (or that the controller declared unreachable) is not waited for
    again; its remaining pairs become C(error) records at once, on the client of each pair.
  - The GID index (C(-x)) is chosen from sysfs when O(gid_index) is not given - the RoCE v2 GID that maps an IPv4
    address of the port's netdev; InfiniBand ports need none.
  - O(phase=plan) returns the active port rate of every device (the bandwidth floor of the peer's clients);
    O(phase=run) is the runner (start it with C(async) and C(poll=0)); O(phase=status) renews the runner's lease,
    hands it the unreachable hosts and returns its progress, and its records once it ended (then removes its
    files); O(phase=wait) (action plugin, controller) polls O(phase=status) until the runner ended and prints one
    progress line per round for the whole fleet. Where the connection pipelines modules, each poll is a light poll -
    the module's own status code sent as a short program to the host's module interpreter instead of the module's
    payload (its parameters checked on the controller with the module's argument spec; those the module would
    refuse are polled by the module), the same answer but for C(invocation).
  - The runner sets the CPU governor (O(cpu_governor)) once for the sweep and restores it on every path; it stops by
    itself (killing what it started) when its lease is not renewed for O(lease_s) seconds.
extends_documentation_fragment:
  - aifabric.acceptance._attributes
  - aifabric.acceptance._attributes.results
  - aifabric.acceptance._attributes.benchmark
  - aifabric.acceptance._perftest_test
attributes:
  check_mode:
    details: O(phase=run) starts nothing and returns the number of steps; O(phase=plan) reads sysfs only.
  idempotent:
    details: Each run is a new measurement.
options:
  phase:
    description: Which phase of the sweep this task runs (see the description).
    type: str
    choices: [plan, run, status, wait]
    default: run
  sweep_name:
    description: Name of this sweep inside the run (V(main), V(confirm)); letters, digits, C(_.:-).
    type: str
    default: main
  schedule:
    description:
      - This host's steps, in order, each C([step, test, round, role, peer]) (C(role) V(server) or V(client)).
    type: list
    elements: raw
  peers:
    description:
      - Address of every peer (inventory name to the address clients connect to).
      - Each an IP address or a host name (never a word starting with C(-), which perftest would take for an option);
        another value fails the task before anything reaches the host.
    type: dict
    default: {}
  rates_by_peer:
    description:
      - Active port rate of every peer's devices, in Gbit/s (inventory name to a list, one per device, from
        O(phase=plan)).
      - Before 2.0.0 named O(peer_rates), still accepted with a deprecation warning until 3.0.0.
    type: dict
    default: {}
    aliases: [peer_rates]
  start_at:
    description:
      - The moment (seconds since the epoch) every runner begins its schedule. With O(phase=run) it is fixed at the
        start (used when O(lease_s=0)); otherwise the runner waits for the first O(phase=status), which hands it the
        O(start_at) that O(phase=wait) got, chosen once by the controller after every runner was started. A runner
        that gets it late begins at once; clocks need not agree (a host that begins early only waits for its
        partner).
    type: float
  lease_s:
    description:
      - The runner stops (and stops what it started) when no O(phase=status) renewed its lease for this long.
        V(0) turns the lease off (the runner then ends at the latest with its schedule).
      - Must be 0 or more.
    type: int
    default: 90
  _poll:
    description:
      - Internal - set by the action plugin alone, on each O(phase=status) call that O(phase=wait) makes; never set it
        in a task (its keys may change in any release).
      - C(wait_s) - answer as soon as the runner ended, or after this many seconds (a long poll, so the controller
        learns at once that a runner ended, without polling fast; not at every step, so that the polls of the hosts
        do not all come at the round boundaries, where the next pairs start).
      - C(dead_hosts) - hosts the controller found unreachable (name to reason); the runner skips them.
      - C(positions) - the step every host of the sweep was at when last polled (name to step). A client whose
        server's host is still at an earlier step keeps waiting past O(connect_timeout_s), and so does a server
        whose client's host is (a partner delayed by a dead host is not taken for dead).
      - C(job) - C(jid) and C(async_dir) of the runner's async job (O(job_id)); the poll that finds the runner ended
        removes its job file, once C(async_wrapper) wrote it (waiting for it at most C(wait_s), 10 s at most, so that
        the poll stays within O(poll_timeout_s)).
      - C(seen) - this wait has seen the runner. The poll that finds the runner ended keeps its records and progress
        in the run's state (until module M(aifabric.acceptance.cleanup) with O(aifabric.acceptance.cleanup#module:perftest_state)
        removes it, or the next runner of the sweep starts), and a poll that finds no runner gives them again (the
        answer of the poll before it was lost on the way) where it names the same C(job), or, where the wait or the
        kept answer names none, where it is handed C(seen).
    type: dict
    default: {}
  wait_timeout_s:
    description: O(phase=wait) - the longest wait for the runner, in seconds.
    type: int
    default: 86400
  poll_s:
    description:
      - O(phase=wait) - the longest time one poll waits on the host for the runner to end or move on (the long poll
        of each O(phase=status) call; the polls follow each other without pause). Keep it well below O(lease_s).
    type: float
    default: 5.0
  poll_timeout_s:
    description:
      - O(phase=wait) - the longest one poll may take, its long poll O(poll_s) included (default O(poll_s) + 20). The
        bound is the action's own, whatever the connection settings (SSH keep-alives or not) - a poll that gets no
        answer within it fails, and what holds the other end of its pipes on the controller (its SSH client and
        ControlMaster) is killed.
        O(unreachable_after_polls) failed polls in a row make the host unreachable.
      - A plan, or the C(async) start of a runner, is bounded the same way at 120 seconds; a host that does not answer
        within it is unreachable.
      - Must be longer than O(poll_s).
    type: float
  rounds:
    description: O(phase=wait) - C([test, round, pairs]) of every step, for the progress lines.
    type: list
    elements: raw
    default: []
  sweep_hosts:
    description: O(phase=wait) - every host of the sweep (the progress line waits for all that are not unreachable).
    type: list
    elements: str
    default: []
  first_step:
    description: O(phase=wait) - number of the first step of O(rounds).
    type: int
    default: 0
  unreachable_after_polls:
    description: O(phase=wait) - consecutive failed polls after which the host is declared unreachable.
    type: int
    default: 2
  job_id:
    description:
      - O(phase=wait) - the C(ansible_job_id) of the task that started the runner (C(async), C(poll=0)). The poll
        that finds the runner ended also removes the job's file from the host's async directory (the shell's
        C(async_dir), C(ANSIBLE_ASYNC_DIR)), in the same call - no M(ansible.builtin.async_status) task with
        C(mode=cleanup) is needed after the wait. A file that cannot be removed is a warning.
      - A runner the wait gives up on (unreachable, past O(wait_timeout_s)) keeps its file until it ends, as any
        async job's.
      - One name of letters, digits, C(_), C(.), C(:) or C(-) (as C(async_wrapper) makes them); empty - no removal.
    type: str
    default: ""
  port_span:
    description:
      - Distinct TCP port sets used in turn by consecutive steps.
      - Must be between 1 and 1000.
    type: int
    default: 32
  position_port:
    description:
      - TCP port on which the runner answers the other runners where it is in its schedule (its step). It listens on
        the wildcard address, as perftest's own servers do - unless this host's address in O(peers) is a loopback
        address (V(127.0.0.0/8), V(::1), V(localhost)) - then it listens on that address where every host of O(peers)
        is loopback too (a sweep on one machine), and answers nothing otherwise (hosts elsewhere cannot reach it; the
        runner says so once in its progress, which O(phase=wait) prints). Default - the number of the control port,
        O(port) + O(port_span) x O(rails) (the ready notices use it over UDP). V(0) turns the answers off. Every host
        of a sweep must use the same.
      - A runner whose partner does not come (a client refused for O(connect_timeout_s), a server no client connected
        to) asks the partner's runner; a partner still at an earlier step is waited for, at most the worst-case
        duration of that step (O(timeout_s) + O(connect_timeout_s) + O(collect_timeout_s)) from when it was seen there.
        No answer (a dead host, the port filtered), a runner that ended, or a partner at this step or a later one ends
        the wait as before. The controller's positions (O(phase=wait)) remain a second source.
      - Must be 0 to 65535, and not one of the steps' TCP ports.
    type: int
  rails:
    description:
      - The number of devices the sweep's ports are laid out for - the most devices of any host of the sweep, the
        same for every runner (the playbook passes it), so that hosts with different numbers of rails compute the
        same step ports (O(port) + (step mod O(port_span)) x O(rails) + i), control port and position port.
      - Default - the longest device list of O(rates_by_peer) (every host's, handed alike to every runner), at least the
        number of O(hcas).
      - Must be 1 to 1000, and not fewer than O(hcas).
    type: int
  hcas:
    description:
      - RDMA devices (HCAs) of this host (C(-d)), tested at once, in rail order - rails are aligned by position, so list
        both ends' devices in the same order. The i-th device of a step listens on / connects to the step's TCP port
        + i.
    type: list
    elements: str
  port:
    description: Base TCP port, 1 to 65535.
    type: int
    default: 18515
  use_cuda:
    description:
      - GPUDirect RDMA. A GPU index passes C(--use_cuda=<index>) for every device.
      - V(auto) gives each device (HCA) the GPU closest to it on PCIe (PIX, then PXB, PHB, NODE, SYS in
        C(nvidia-smi topo -m)), one GPU per HCA where there are enough, from O(gpu_probe); CUDA then numbers the GPUs
        as nvidia-smi does (C(CUDA_DEVICE_ORDER=PCI_BUS_ID)). A host without that topology or without GPUs, or an
        HCA the topology does not name, runs from host memory.
      - Every record says where its buffers were - C(facts.memory) (V(gpu) or V(host)), C(facts.cuda_device),
        C(facts.cuda_link) and C(facts.cuda_choice) (why; the reason of a fall-back to host memory).
    type: str
  gpu_probe:
    description:
      - The C(gpu.*) records of M(aifabric.acceptance.env_probe) (O(aifabric.acceptance.env_probe#module:groups=[gpu]))
        on this host, for O(use_cuda=auto); its C(gpu.topology) record's C(matrix) and C(nic_names) facts are the
        PCIe distances between GPUs and HCAs.
    type: list
    elements: dict
    default: []
  out_json:
    description: Not used by the sweep (kept for option parity); records come from the text output.
    type: bool
    default: false
  connect_timeout_s:
    description: How long a client retries while its server does not listen, and a server waits for its client.
    type: int
    default: 60
  connect_retry_delay_s:
    description:
      - Pause between two client attempts. The server's runner tells the client's runner (one UDP datagram to the
        control port O(port) + O(port_span) x O(rails)) as soon as its servers listen, which ends the pause at once;
        the pause is only waited out in full where that datagram does not arrive.
      - Must be 0 or more.
    type: float
    default: 1.0
  collect_timeout_s:
    description: How long a server is waited for after its client ended.
    type: int
    default: 60
"""

EXAMPLES = r"""
- name: Port rates of my devices
  aifabric.acceptance.perftest_sweep:
    phase: plan
    hcas: [mlx5_0, mlx5_1]
  register: plan

- name: Start my runner
  aifabric.acceptance.perftest_sweep:
    phase: run
    schedule: "{{ rdma_schedules[inventory_hostname] }}"
    peers: "{{ rdma_addresses }}"
    hcas: [mlx5_0, mlx5_1]
    inventory_hostname: "{{ inventory_hostname }}"
    run_id: "{{ rdma_run_id }}"
  async: 7200
  poll: 0

- name: Wait for it (one progress line per round)
  aifabric.acceptance.perftest_sweep:
    phase: wait
    inventory_hostname: "{{ inventory_hostname }}"
    run_id: "{{ rdma_run_id }}"
"""

RETURN = r"""
results:
  description: Result records (see the description; returned by O(phase=status) and O(phase=wait) once the runner
    ended, and by O(phase=run) when it stopped because nobody polled it).
  returned: always
  type: list
  elements: dict
rates:
  description: O(phase=plan) - active port rate (Gbit/s) of every device, None where sysfs does not tell.
  returned: when phase is plan
  type: list
  elements: float
buffers:
  description: O(phase=plan) - per device, where its perftest buffers will live (C(memory) V(gpu) or V(host),
    C(cuda_device), C(cuda_link), C(cuda_choice)); see O(use_cuda).
  returned: when phase is plan
  type: dict
  sample: {mlx5_0: {memory: gpu, cuda_device: 0, cuda_link: PXB, cuda_choice: "use_cuda auto: GPU0 is the closest free GPU (PXB) to mlx5_0"}}
progress:
  description: O(phase=status) - the runner's progress (C(next_step), C(pairs_done), C(failing), C(dead)).
  returned: when phase is status or wait
  type: dict
finished:
  description: O(phase=status) - whether the runner ended.
  returned: when phase is status
  type: bool
outcome:
  description: O(phase=run) - C(finished) or why the runner stopped early.
  returned: when phase is run
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aifabric.acceptance.plugins.module_utils import argspec, modmain, perftest_state, perftest_status
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import _perftest_options as perftest
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import AcceptanceError


RANGES = dict(perftest.TEST_RANGES, **{
    "port": argspec.PORT, "connect_timeout_s": argspec.NON_NEGATIVE,
    "connect_retry_delay_s": argspec.NON_NEGATIVE, "collect_timeout_s": argspec.NON_NEGATIVE,
    "lease_s": argspec.NON_NEGATIVE, "port_span": (1, 1000), "position_port": (0, 65535), "rails": (1, 1000),
})


def argument_spec():
    return dict(
        **perftest.TEST_SPEC,
        **perftest_state.STATE_SPEC,
        # the run's options this module takes besides TEST_SPEC's (tools/_perftest_options.py: the single source)
        **perftest.RUN_OPTIONS,
        phase=dict(type="str", default="run", choices=["plan", "run", "status", "wait"]),
        sweep_name=dict(type="str", default="main"),
        schedule=dict(type="list", elements="raw"),
        peers=dict(type="dict", default={}),
        rates_by_peer=dict(type="dict", default={}, **argspec.renamed("peer_rates")),
        start_at=dict(type="float"),
        lease_s=dict(type="int", default=90),
        _poll=dict(type="dict", default={}),
        wait_timeout_s=dict(type="int", default=86400),
        poll_s=dict(type="float", default=5.0),
        poll_timeout_s=dict(type="float"),
        rounds=dict(type="list", elements="raw", default=[]),
        unreachable_after_polls=dict(type="int", default=2),
        sweep_hosts=dict(type="list", elements="str", default=[]),
        job_id=dict(type="str", default=""),
        first_step=dict(type="int", default=0),
        port_span=dict(type="int", default=32),
        position_port=dict(type="int"),
        rails=dict(type="int"),
        gpu_probe=dict(type="list", elements="dict", default=[]),
        out_json=dict(type="bool", default=False),
        connect_retry_delay_s=dict(type="float", default=1.0),
        collect_timeout_s=dict(type="int", default=60),
    )


MUTUALLY_EXCLUSIVE = [("size", "all_sizes"), ("iterations", "duration_s")]


def main():
    module = argspec.module(
        AnsibleModule, RANGES,
        argument_spec=argument_spec(),
        supports_check_mode=True,
        mutually_exclusive=MUTUALLY_EXCLUSIVE,
    )
    modmain.run(module, "perftest_sweep", _phase)


def _phase(module):
    phase = module.params["phase"]
    if phase == "status":
        # every poll of every host: the runner's directory and state alone (perftest_status), not the runner
        return perftest_status.poll(module)
    if phase == "wait":
        raise AcceptanceError("phase=wait runs on the controller (action plugin aifabric.acceptance.perftest_sweep)")
    from ansible_collections.aifabric.acceptance.plugins.module_utils.perftest_sweep import Sweep

    sweep = Sweep(module)
    return sweep.plan() if phase == "plan" else sweep.run_sweep()


if __name__ == "__main__":
    main()
