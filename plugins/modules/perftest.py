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
        everything left by the run O(run_id).
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
  ib_port:
    description: IB port of the devices (C(-i)).
    type: int
    default: 1
  gid_index:
    description: GID index (C(-x)) for every device. When unset it is chosen from sysfs per device.
    type: int
  peer:
    description: Address (IP or name) of the server host; required for O(state=client).
    type: str
  peer_name:
    description: Inventory name of the other end, stored as each record's C(peer) (default O(peer)).
    type: str
  host_name:
    description: Inventory name of this host, stored as each record's C(host) (default the node's hostname).
    type: str
  port:
    description: Base TCP port (C(-p)); device i uses O(port) + i.
    type: int
    default: 18515
  size:
    description: Message size in bytes (C(-s)). Ignored with O(all_sizes).
    type: int
  all_sizes:
    description: Run every message size from 2 bytes to 8 MiB (C(-a)); records keep every size in C(series).
    type: bool
    default: false
  iterations:
    description: Iterations per size (C(-n)).
    type: int
  duration_s:
    description: Run for this many seconds (C(-D)) instead of a number of iterations.
    type: int
  qps:
    description: Number of queue pairs (C(-q)), bandwidth tests only.
    type: int
  bidirectional:
    description: Traffic in both directions (C(-b)), bandwidth tests only; judged against twice the rate.
    type: bool
    default: false
  rdma_cm:
    description: Connect the QPs with rdma_cm (C(-R)).
    type: bool
    default: false
  report_gbits:
    description: Ask perftest for Gbit/s (C(--report_gbits)), bandwidth tests only.
    type: bool
    default: true
  ignore_cpu_freq:
    description: Pass C(-F) (do not fail/warn when the CPU frequency is not at its maximum).
    type: bool
    default: false
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
  extra_args:
    description: More perftest arguments, one argv word per element.
    type: list
    elements: str
    default: []
  timeout_s:
    description: Hard limit for one perftest process (client attempt, or a server's whole life).
    type: int
    default: 120
  connect_timeout_s:
    description: How long a client keeps re-starting while its server does not answer yet.
    type: int
    default: 60
  connect_retry_delay_s:
    description: Pause between two client attempts.
    type: float
    default: 1.0
  collect_timeout_s:
    description: How long O(state=collect) waits for a server before killing it.
    type: int
    default: 60
  handles:
    description:
      - For O(state=collect), the C(handles) returned by O(state=server) on this host. When omitted, every
        server handle of the run O(run_id) found in O(state_root) is collected.
      - For O(state=server), the handles of the previous round's servers on this host - they are collected
        first (as O(state=collect) would) and their records returned with the new servers' handles. This saves
        one task per round (C(playbooks/rdma.yml) uses it).
    type: list
    elements: dict
  run_id:
    description: Name of the run; servers, clients and their files live in O(state_root)/O(run_id).
    type: str
    default: default
  state_root:
    description: Directory for per-run state (handles, outputs, governor state). Must survive between tasks.
    type: path
    default: /tmp/aifabric-perftest
  keep_state:
    description: Keep the per-run output files after collecting (for debugging).
    type: bool
    default: false
  cpu_governor:
    description:
      - Set this CPU frequency governor (usually V(performance)) while the test runs, and restore the previous
        ones afterwards. Unset leaves the governor alone. Where cpufreq is absent the setting is skipped and
        the records say why.
    type: str
  cpu_sysfs:
    description: The cpufreq sysfs tree (for tests).
    type: path
    default: /sys/devices/system/cpu
  sysfs_root:
    description: Prefix for C(/sys/class/infiniband) (for tests; empty means the real tree).
    type: str
    default: ''
  perftest_path:
    description: Directory holding the perftest binaries (default from PATH).
    type: path
  expect:
    description:
      - "Expectations per metric, overriding the defaults, for example C({bw_avg_gbit_s: {min: 360}}) or
        C({lat_typical_us: {max: 3}}). A metric mapped to C(null) drops its default rule. Rule keys are
        C(min), C(max), C(equals), C(warn_below_pct), C(source)."
    type: dict
    default: {}
  expect_line_rate_pct:
    description:
      - Default bandwidth floor, in percent of the lower active port rate of the two ends (read from sysfs,
        for example C(400 Gb/sec (4X NDR))); doubled for bidirectional runs. V(0) turns it off.
    type: float
    default: 90
  peer_rate_gbit_s:
    description:
      - Active port rate of the server's devices, one per device (the C(port_rate_gbit_s) of the server's
        handles); the bandwidth floor uses the lower of both ends.
    type: list
    elements: float
  from_output:
    description: Import mode - parse this saved perftest output file (on the target) instead of running.
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
"""

import os
import shutil
import signal
import socket

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aifabric.acceptance.plugins.module_utils import detached, env_probe, perftest_pairs, results
from ansible_collections.aifabric.acceptance.plugins.module_utils import runner
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import AcceptanceError, ParseError
from ansible_collections.aifabric.acceptance.plugins.module_utils.governor import Governor, describe
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import perftest as parser
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import rdma


class Interrupted(Exception):
    """SIGTERM/SIGINT/SIGHUP while the module runs: unwind so that finally blocks restore state."""


def _on_signal(signum, frame):
    raise Interrupted("interrupted by signal %d" % signum)


def argument_spec():
    return dict(
        state=dict(type="str", default="client", choices=["server", "client", "collect", "absent"]),
        test=dict(type="str", choices=list(perftest_pairs.TESTS), aliases=["tool"]),
        devices=dict(type="list", elements="str"),
        ib_port=dict(type="int", default=1),
        gid_index=dict(type="int"),
        peer=dict(type="str"),
        peer_name=dict(type="str"),
        host_name=dict(type="str"),
        port=dict(type="int", default=perftest_pairs.DEFAULT_PORT),
        size=dict(type="int"),
        all_sizes=dict(type="bool", default=False),
        iterations=dict(type="int"),
        duration_s=dict(type="int"),
        qps=dict(type="int"),
        bidirectional=dict(type="bool", default=False),
        rdma_cm=dict(type="bool", default=False),
        report_gbits=dict(type="bool", default=True),
        ignore_cpu_freq=dict(type="bool", default=False),
        use_cuda=dict(type="str"),
        out_json=dict(type="bool", default=False),
        extra_args=dict(type="list", elements="str", default=[]),
        timeout_s=dict(type="int", default=120),
        connect_timeout_s=dict(type="int", default=60),
        connect_retry_delay_s=dict(type="float", default=1.0),
        collect_timeout_s=dict(type="int", default=60),
        handles=dict(type="list", elements="dict"),
        run_id=dict(type="str", default="default"),
        state_root=dict(type="path", default="/tmp/aifabric-perftest"),
        keep_state=dict(type="bool", default=False),
        cpu_governor=dict(type="str"),
        cpu_sysfs=dict(type="path", default="/sys/devices/system/cpu"),
        sysfs_root=dict(type="str", default=""),
        perftest_path=dict(type="path"),
        expect=dict(type="dict", default={}),
        expect_line_rate_pct=dict(type="float", default=90),
        peer_rate_gbit_s=dict(type="list", elements="float"),
        from_output=dict(type="path"),
        side=dict(type="str", choices=["client", "server"]),
    )


class PerftestModule(object):
    """The glue: options -> jobs -> module_utils -> records."""

    def __init__(self, module):
        self.module = module
        self.p = module.params
        self.host = self.p["host_name"] or socket.gethostname().split(".")[0]
        self.run_dir = os.path.join(self.p["state_root"], self.p["run_id"])
        self.governor = Governor(os.path.join(self.p["state_root"], "governor.json"), root=self.p["cpu_sysfs"])

    # ---------------------------------------------------------------- helpers
    def test(self):
        return self.p["test"] or "ib_write_bw"

    def binary(self):
        return runner.find_tool(self.module, self.test(), path=self.p["perftest_path"], hint=perftest_pairs.INSTALL_HINT)

    def version(self, binary):
        try:
            run = runner.run(self.module, [binary, "--version"], 15)
        except AcceptanceError:
            return None
        return perftest_pairs.parse_version(run.output)

    def supports(self, binary, flag):
        """True when ``binary --help`` lists ``flag`` (older perftest builds lack --out_json)."""
        try:
            run = runner.run(self.module, [binary, "--help"], 15)
        except AcceptanceError:
            return False
        if flag in run.output:
            return True
        self.module.warn("%s does not support %s (older perftest): records come from its text output alone"
                         % (os.path.basename(binary), flag))
        return False

    def hcas(self):
        try:
            files = env_probe.read_infiniband(env_probe.Host(root=self.p["sysfs_root"]))
            return rdma.build_hcas(files) if files else []
        except ParseError as exc:
            self.module.warn("could not read /sys/class/infiniband: %s" % exc)
            return []

    def device_plan(self, side):
        """[(index, device, tcp_port, gid_index, facts)] - raises AcceptanceError on a bad device."""
        devices = self.p["devices"] or []
        if not devices:
            raise AcceptanceError("devices is required for state=%s" % side)
        hcas = self.hcas()
        plan = []
        for index, device in enumerate(devices):
            perftest_pairs.check_name(device, "device")
            facts = {"tcp_port": self.p["port"] + index, "ib_port": self.p["ib_port"]}
            gid_index = self.p["gid_index"]
            port = perftest_pairs.find_port(hcas, device, self.p["ib_port"])
            if port is not None:
                facts.update({"port_state": port.get("state"), "port_rate_gbit_s": port.get("rate_gbit_s"),
                              "port_rate": port.get("rate"), "link_layer": port.get("link_layer")})
                if gid_index is None:
                    gid_index, how = perftest_pairs.select_gid(port)
                    facts["gid_choice"] = how
                else:
                    facts["gid_choice"] = "given (gid_index %d)" % gid_index
            else:
                facts["gid_choice"] = ("given (gid_index %d)" % gid_index) if gid_index is not None else \
                    "not chosen: %s has no port %d in sysfs (perftest decides)" % (device, self.p["ib_port"])
            facts["gid_index"] = gid_index
            plan.append((index, device, self.p["port"] + index, gid_index, facts))
        return plan

    def params_for_rules(self, index):
        rules = dict(self.p)
        rates = self.p["peer_rate_gbit_s"] or []
        rules["peer_rate_gbit_s"] = rates[index] if index < len(rates) else (rates[0] if len(rates) == 1 else None)
        rules["test"] = self.test()
        return rules

    def governor_acquire(self, holder, pid):
        if not self.p["cpu_governor"]:
            return None
        return self.governor.acquire(holder, pid, target=self.p["cpu_governor"])

    # ---------------------------------------------------------------- states
    def run(self):
        p = self.p
        if p["from_output"]:
            return self.import_output()
        if p["state"] == "absent":
            return self.absent()
        if p["state"] == "collect":
            return self.collect()
        if p["state"] == "client" and not p["peer"]:
            raise AcceptanceError("peer (the server's address) is required for state=client")
        perftest_pairs.check_name(p["peer"], "peer")
        perftest_pairs.check_name(p["run_id"], "run_id")
        binary = self.binary()
        plan = self.device_plan(p["state"])
        want_json = p["out_json"] and self.supports(binary, "--out_json")
        argvs = []
        for index, device, tcp_port, gid_index, facts in plan:
            json_file = os.path.join(self.run_dir, "json", "%s-%s.json" % (p["state"], device)) \
                if want_json else None
            argvs.append(perftest_pairs.build_argv(binary, dict(p, test=self.test()), device, tcp_port, gid_index,
                                                   p["state"], peer_address=p["peer"], json_file=json_file))
        if self.module.check_mode:
            return dict(changed=p["state"] == "server", results=[], cmd=argvs[0],
                        runs=[{"device": step[1], "cmd": a} for step, a in zip(plan, argvs)])
        timeout_bin = self.module.get_bin_path("timeout", required=False)
        if not timeout_bin:
            raise AcceptanceError("coreutils 'timeout' not found on this host (install coreutils)")
        version = self.version(binary)
        if want_json:
            os.makedirs(os.path.join(self.run_dir, "json"), mode=0o700, exist_ok=True)
        if p["state"] == "server":
            collected = self.collect() if p["handles"] else None
            out = self.start_servers(plan, argvs, timeout_bin, version)
            if collected:
                # the previous round's servers, collected first (their ports are about to be reused)
                out["results"] = collected["results"] + out["results"]
                out["collected"] = collected["runs"]
                out["removed"] = collected["removed"]
                out["changed"] = out["changed"] or collected["changed"]
            return out
        return self.run_clients(plan, argvs, timeout_bin, version)

    def start_servers(self, plan, argvs, timeout_bin, version):
        p = self.p
        handles, records, runs = [], [], []
        governor_result = None
        for (index, device, tcp_port, gid_index, facts), argv in zip(plan, argvs):
            state_dir = os.path.join(self.run_dir, "server-%s" % device)
            old = detached.load(state_dir)
            if old and detached.alive(old):
                detached.kill(old)
            holder = "server:%s:%s" % (p["run_id"], device)
            governor_result = self.governor_acquire(holder, os.getpid()) or governor_result
            governor = self.governor if p["cpu_governor"] else None
            facts["cpu_governor"] = describe(governor_result) if p["cpu_governor"] else "not requested"
            extra = {
                "device": device, "tcp_port": tcp_port, "index": index, "test": self.test(),
                "host_name": self.host, "peer_name": p["peer_name"] or p["peer"], "tool_version": version,
                "facts": facts, "port_rate_gbit_s": facts.get("port_rate_gbit_s"), "run_id": p["run_id"],
                "governor_holder": holder if governor else None, "started_utc": results.utc_now(),
                "params": {"timeout_s": p["timeout_s"]},
            }
            try:
                handle = detached.start(
                    argv, p["timeout_s"], state_dir, timeout_bin, extra=extra,
                    on_exit=(lambda g=governor, h=holder: g.release(h)) if governor else None)
            except AcceptanceError as exc:
                if governor:
                    self.governor.release(holder)
                records.extend(results.with_host([results.error(
                    "rdma.%s.server" % self.test(), "could not start the server: %s" % exc, target=device,
                    peer=extra["peer_name"], params={"argv": argv}, facts=facts)], self.host))
                continue
            if governor:
                self.governor.transfer(holder, handle["supervisor_pid"])
            handles.append(handle)
            runs.append({"device": device, "cmd": argv, "pid": handle["pid"], "tcp_port": tcp_port})
        out = dict(changed=bool(handles), handles=handles, results=records, runs=runs, cmd=argvs[0])
        if p["cpu_governor"]:
            out["governor"] = governor_result
        return out

    def run_clients(self, plan, argvs, timeout_bin, version):
        p = self.p
        jobs = []
        holder = "client:%s:%d" % (p["run_id"], os.getpid())
        governor_result = None
        old_handlers = {}
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            old_handlers[sig] = signal.signal(sig, _on_signal)
        try:
            governor_result = self.governor_acquire(holder, os.getpid())
            for (index, device, tcp_port, gid_index, facts), argv in zip(plan, argvs):
                facts["cpu_governor"] = describe(governor_result) if p["cpu_governor"] else "not requested"
                state_dir = os.path.join(self.run_dir, "client-%s-%d" % (device, os.getpid()))
                jobs.append(perftest_pairs.Job(index, device, tcp_port, argv, state_dir, facts))
            perftest_pairs.run_clients(jobs, timeout_bin, p["timeout_s"], p["connect_timeout_s"],
                                       p["connect_retry_delay_s"])
        finally:
            for job in jobs:
                if job.handle is not None and detached.alive(job.handle):
                    detached.kill(job.handle)
            if p["cpu_governor"]:
                released = self.governor.release(holder)
                if governor_result is not None and released.get("action") == "restored":
                    governor_result["restored"] = released.get("restored")
            for sig, handler in old_handlers.items():
                signal.signal(sig, handler)
        records, runs = [], []
        for job in jobs:
            text, rc, timed_out = job.result
            ctx = {
                "test": self.test(), "side": "client", "host": self.host, "peer": p["peer_name"] or p["peer"],
                "device": job.device, "params": self.params_for_rules(job.index), "argv": job.argv,
                "tool_version": version, "started": job.started, "attempts": job.attempts,
                "duration_s": None, "facts": job.facts, "timed_out": timed_out, "timeout_s": p["timeout_s"],
            }
            if job.started_mono is not None and job.handle is not None:
                ended = detached.outcome(job.handle) or {}
                if ended.get("ended"):
                    ctx["duration_s"] = max(0.0, ended["ended"] - job.handle["started"])
            records.extend(perftest_pairs.build_records(text, rc, ctx))
            runs.append({"device": job.device, "cmd": job.argv, "rc": rc, "attempts": job.attempts,
                         "stdout": results.trim(text)})
            if not p["keep_state"]:
                shutil.rmtree(job.state_dir, ignore_errors=True)
        out = dict(changed=False, results=records, runs=runs, cmd=argvs[0])
        if p["cpu_governor"]:
            out["governor"] = governor_result
        return out

    def server_handles(self):
        if self.p["handles"]:
            return self.p["handles"]
        found = []
        if os.path.isdir(self.run_dir):
            for name in sorted(os.listdir(self.run_dir)):
                handle = detached.load(os.path.join(self.run_dir, name))
                if name.startswith("server-") and handle:
                    found.append(handle)
        return found

    def collect(self):
        p = self.p
        handles = self.server_handles()
        if self.module.check_mode:
            return dict(changed=bool(handles), results=[], removed=[h.get("state_dir") for h in handles])
        records, runs, removed = [], [], []
        for handle in handles:
            job = perftest_pairs.Job(handle.get("index", 0), handle.get("device"), handle.get("tcp_port"),
                                     handle.get("argv"), handle.get("state_dir"), handle.get("facts") or {})
            job.handle = handle
            if not os.path.isdir(handle.get("state_dir") or ""):
                records.append(results.error(
                    "rdma.%s.server" % handle.get("test", self.test()),
                    "server state %s is gone (collected twice, or removed by state=absent)" % handle.get("state_dir"),
                    host=handle.get("host_name") or self.host, peer=handle.get("peer_name"),
                    target=handle.get("device")))
                continue
            text, rc, timed_out, killed = perftest_pairs.collect(job, p["collect_timeout_s"])
            ended = detached.outcome(handle) or {}
            ctx = {
                "test": handle.get("test", self.test()), "side": "server",
                "host": handle.get("host_name") or self.host, "peer": handle.get("peer_name"),
                "device": handle.get("device"), "argv": handle.get("argv"),
                "tool_version": handle.get("tool_version"), "started": handle.get("started_utc"),
                "duration_s": max(0.0, ended["ended"] - handle["started"]) if ended.get("ended") else None,
                "facts": handle.get("facts"), "timed_out": timed_out,
                "timeout_s": (handle.get("params") or {}).get("timeout_s"),
            }
            if killed:
                ctx["timed_out"] = False
                records.append(results.error(
                    "rdma.%s.server" % ctx["test"],
                    "server on %s still running after collect_timeout_s=%ss; killed" % (
                        ctx["device"], p["collect_timeout_s"]),
                    host=ctx["host"], peer=ctx["peer"], target=ctx["device"], raw=text,
                    tool={"name": "perftest", "version": ctx["tool_version"]}, params={"argv": ctx["argv"]},
                    facts=dict(ctx["facts"] or {}, side="server")))
            else:
                records.extend(perftest_pairs.build_records(text, rc, ctx))
            if handle.get("governor_holder") and not ended.get("on_exit"):
                # the supervisor could not release its hold (killed): release it here
                self.governor.release(handle["governor_holder"])
            runs.append({"device": ctx["device"], "cmd": ctx["argv"], "rc": rc, "stdout": results.trim(text),
                         "killed": killed})
            if not p["keep_state"]:
                shutil.rmtree(handle["state_dir"], ignore_errors=True)
                removed.append(handle["state_dir"])
        self.governor.reconcile()
        self._remove_empty_run_dir()
        return dict(changed=bool(removed), results=records, runs=runs, removed=removed)

    def absent(self):
        removed = []
        if not os.path.isdir(self.run_dir):
            result = self.governor.reconcile() if not self.module.check_mode else {"action": "none"}
            return dict(changed=result.get("action") == "restored", results=[], removed=[], governor=result)
        for name in sorted(os.listdir(self.run_dir)):
            path = os.path.join(self.run_dir, name)
            handles = []
            handle = detached.load(path)
            if handle:
                handles.append(handle)
            if os.path.isdir(path):
                for sub in sorted(os.listdir(path)):
                    nested = detached.load(os.path.join(path, sub))
                    if nested:
                        handles.append(nested)
            if self.module.check_mode:
                removed.append(path)
                continue
            for item in handles:
                if detached.alive(item):
                    detached.kill(item)
                    removed.append("killed pid %s (%s)" % (item.get("pid"), " ".join(item.get("argv") or [])[:200]))
                if item.get("governor_holder"):
                    self.governor.release(item["governor_holder"])
            shutil.rmtree(path, ignore_errors=True)
            removed.append(path)
        result = {"action": "none"}
        if not self.module.check_mode:
            result = self.governor.reconcile()
            self._remove_empty_run_dir()
        return dict(changed=bool(removed), results=[], removed=removed, governor=result)

    def _remove_empty_run_dir(self):
        try:
            if os.path.isdir(self.run_dir) and not os.listdir(self.run_dir):
                os.rmdir(self.run_dir)
        except OSError:
            pass

    def import_output(self):
        p = self.p
        path = p["from_output"]
        try:
            with open(path, "rb") as handle:
                text = handle.read(16 << 20).decode("utf-8", "replace")
        except (IOError, OSError) as exc:
            raise AcceptanceError("cannot read from_output %s: %s" % (path, exc))
        test = p["test"]
        side = p["side"]
        try:
            parsed = parser.parse(text)
            test = parsed.get("tool") or test
            side = side or parsed.get("side")
        except ParseError:
            pass
        test = test or "ib_write_bw"
        devices = p["devices"] or [None]
        ctx = {
            "test": test, "side": side or "client", "host": self.host, "peer": p["peer_name"] or p["peer"],
            "device": devices[0], "params": dict(self.params_for_rules(0), test=test),
            "argv": None, "tool_version": None, "facts": {"imported_from": path},
        }
        return dict(changed=False, results=perftest_pairs.build_records(text, None, ctx))


def main():
    module = AnsibleModule(
        argument_spec=argument_spec(),
        supports_check_mode=True,
        mutually_exclusive=[("size", "all_sizes"), ("iterations", "duration_s")],
    )
    try:
        out = PerftestModule(module).run()
    except Interrupted as exc:
        module.fail_json(msg="perftest module %s (every started process was stopped, governors restored)" % exc)
    except AcceptanceError as exc:
        module.fail_json(msg=str(exc), **exc.details)
    module.exit_json(**out)


if __name__ == "__main__":
    main()
