# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""perftest on one substrate or another: plans and the SSH-path run (private). Its records come from
tools.perftest.records (the one builder every caller uses).

Functions another substrate (Kubernetes: server and client pods whose logs are
perftest's text) calls:

- ``device_plan(devices, params, hcas=None) -> [(index, device, tcp_port, gid_index, facts)]`` - TCP port and
  GID choice per device (``hcas`` from parsers.rdma.build_hcas, or None where sysfs cannot be read);
- ``argvs_for(binary, params, plan, side, peer_address=None, json_dir=None) -> [argv]`` - one argv per device
  (perftest_pairs.build_argv);

``PerftestRun(module)`` is the SSH path's orchestration (server / client / collect /
absent on the host itself: detached processes, retries, CPU governor); the module
is glue around it. Its state lives in ``<state_root>/<host id>/`` (statedir.host_root: hosts
sharing a state root never see each other's runs): ``governor.json`` and one directory per
run, each directory made by statedir.own_dir (marked as the collection's). collect, absent
and the sweep's cleanup use, kill and remove only what carries that mark (issue 17); the
rest is left alone and listed in ``left``. Runs on the targets: Python 3.8+, no Ansible imports (``module``
is duck-typed: params, check_mode, warn, get_bin_path, run_command).
"""

from __future__ import annotations

import os
import socket

from ansible_collections.aifabric.acceptance.plugins.module_utils import detached, env_probe, perftest_pairs
from ansible_collections.aifabric.acceptance.plugins.module_utils import results, runner, statedir
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import (
    AcceptanceError, ParseError, ToolMissing, ToolTimeout)
from ansible_collections.aifabric.acceptance.plugins.module_utils.governor import Governor, describe
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import rdma
from ansible_collections.aifabric.acceptance.plugins.module_utils.proc import interrupt_guard
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import Context
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import perftest as adapter

DEFAULT_TEST = adapter.DEFAULT_TEST


# --------------------------------------------------------------------------- pure: plans, argv

def device_plan(devices, params, hcas=None):
    """[(index, device, tcp_port, gid_index, facts)] - raises AcceptanceError on a bad device name or GID."""
    plan = []
    for device in devices or []:
        perftest_pairs.check_name(device, "device")
    cuda = perftest_pairs.cuda_facts(devices, params)
    for index, device in enumerate(devices or []):
        tcp_port = params["port"] + index
        if tcp_port > 65535:
            raise AcceptanceError("port %d + device index %d is above 65535; lower port" % (params["port"], index))
        facts = {"tcp_port": tcp_port, "ib_port": params["ib_port"]}
        gid_index = params.get("gid_index")
        port = perftest_pairs.find_port(hcas, device, params["ib_port"])
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
                "not chosen: %s has no port %d in sysfs (perftest decides)" % (device, params["ib_port"])
        facts["gid_index"] = gid_index
        facts.update(cuda[device])
        plan.append((index, device, tcp_port, gid_index, facts))
    return plan


def argvs_for(binary, params, plan, side, peer_address=None, json_dir=None):
    """One perftest argv per planned device (``json_dir``: ask for --out_json files there)."""
    test = params.get("test") or DEFAULT_TEST
    out = []
    for index, device, tcp_port, gid_index, facts in plan:
        json_file = os.path.join(json_dir, "%s-%s.json" % (side, device)) if json_dir else None
        # the GPU of this device (use_cuda auto is chosen per device by device_plan; None: host memory)
        cuda = facts.get("cuda_device") if "memory" in facts else params.get("use_cuda")
        out.append(perftest_pairs.build_argv(binary, dict(params, test=test, use_cuda=cuda), device, tcp_port,
                                             gid_index, side, peer_address=peer_address, json_file=json_file))
    return out


# --------------------------------------------------------------------------- the SSH path

class PerftestRun(object):
    """The SSH path: options -> jobs -> detached processes -> records."""

    def __init__(self, module):
        self.module = module
        self.p = module.params
        self.host = self.p["host_name"] or socket.gethostname().split(".")[0]
        self.root = None
        self.run_dir = None
        self.governor = None

    def open_state(self):
        """Validate run_id and the state root before any path is derived from them (issue 9 item 1); every user of
        the state root (module perftest, the sweep runner, the governor's state file) comes through here, into
        this host's own directory (issue 17 item 7)."""
        statedir.check_name(self.p["run_id"], "run_id")
        self.root = statedir.host_root(self.p["state_root"] or statedir.default_root("perftest"),
                                       create=not self.module.check_mode)
        self.run_dir = os.path.join(self.root, self.p["run_id"])
        self.governor = Governor(os.path.join(self.root, "governor.json"), root=self.p["cpu_sysfs"])

    def inside(self, *parts):
        """A path inside this run's directory (refused when a part would leave it)."""
        return statedir.contained(self.run_dir, os.path.join(self.run_dir, *parts))

    def make_dir(self, path):
        """A state directory of this host (the run's, a process's), made and marked when absent (statedir.own_dir)."""
        return statedir.own_dir(self.root, path)

    def start(self, *args, **kwargs):
        """detached.start into a state directory made under this host's (run directory included)."""
        return detached.start(*args, base=self.root, **kwargs)

    def remove(self, path):
        """Remove a state directory the collection made (statedir.remove_own); one it did not make is left."""
        try:
            return statedir.remove_own(path)
        except statedir.StateError as exc:
            self.module.warn(str(exc))
            return False

    def handles_in(self, path, left):
        """The trusted handles of a state directory and of its sub-directories (a client's attempts); the untrusted
        ones are named in ``left``. None when one is untrusted: the directory is then left as it is."""
        found = []
        subs = [os.path.join(path, name) for name in sorted(os.listdir(path)) if name != statedir.MARKER]
        for where in [path] + [sub for sub in subs if os.path.isdir(sub) and not os.path.islink(sub)]:
            handle, problem = detached.load_checked(where)
            if problem:
                left.append(problem)
                return None
            if handle:
                found.append(handle)
        return found

    def stop_and_remove(self, path, removed, left, remove=True):
        """Kill what the collection recorded starting in state directory ``path`` and remove it (``remove``); a
        directory it did not make, or holding a handle it did not write, is left alone (named in ``left``)."""
        try:
            if statedir.check_own(path) is None:
                return
        except statedir.StateError as exc:
            left.append(str(exc))
            return
        handles = self.handles_in(path, left)
        if handles is None:
            return
        if self.module.check_mode:
            removed.append(path)
            return
        for item in handles:
            if detached.kill(item):
                removed.append("killed pid %s (%s)" % (item.get("pid"), " ".join(item.get("argv") or [])[:200]))
            if item.get("governor_holder"):
                self.governor.release(item["governor_holder"])
        if remove and self.remove(path):
            removed.append(path)

    def own_run_dir(self, left):
        """The run directory when the collection made it, else None (why, when it exists, in ``left``)."""
        try:
            return statedir.check_own(self.run_dir, "run directory")
        except statedir.StateError as exc:
            left.append(str(exc))
            return None

    # ---------------------------------------------------------------- helpers
    def test(self):
        return self.p["test"] or DEFAULT_TEST

    def binary(self):
        return runner.find_tool(self.module, self.test(), path=self.p["perftest_path"], hint=perftest_pairs.INSTALL_HINT)

    def version(self, binary):
        try:
            run = runner.run(self.module, [binary, "--version"], 15)
        except (ToolMissing, ToolTimeout):      # never Interrupted: a signal must end the run
            return None
        return perftest_pairs.parse_version(run.output)

    def supports(self, binary, flag):
        """True when ``binary --help`` lists ``flag`` (older perftest builds lack --out_json)."""
        try:
            run = runner.run(self.module, [binary, "--help"], 15)
        except (ToolMissing, ToolTimeout):
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
        if not self.p["devices"]:
            raise AcceptanceError("devices is required for state=%s" % side)
        return device_plan(self.p["devices"], self.p, self.hcas())

    def governor_acquire(self, holder, pid):
        if not self.p["cpu_governor"]:
            return None
        return self.governor.acquire(holder, pid, target=self.p["cpu_governor"])

    # ---------------------------------------------------------------- states
    def run(self):
        p = self.p
        if p["from_output"]:
            return self.import_output()
        self.open_state()
        if p["state"] == "absent":
            return self.absent()
        if p["state"] == "collect":
            return self.collect()
        if p["state"] == "client" and not p["peer"]:
            raise AcceptanceError("peer (the server's address) is required for state=client")
        perftest_pairs.check_name(p["peer"], "peer")
        plan = self.device_plan(p["state"])
        try:
            binary = self.binary()
        except ToolMissing as exc:
            return self.missing_binary(plan, exc)
        want_json = p["out_json"] and self.supports(binary, "--out_json")
        json_dir = self.inside("json") if want_json else None
        argvs = argvs_for(binary, dict(p, test=self.test()), plan, p["state"], peer_address=p["peer"],
                          json_dir=json_dir)
        if self.module.check_mode:
            return dict(changed=p["state"] == "server", results=[], cmd=argvs[0],
                        runs=[{"device": step[1], "cmd": a} for step, a in zip(plan, argvs)])
        timeout_bin = self.module.get_bin_path("timeout", required=False)
        if not timeout_bin:
            raise AcceptanceError("coreutils 'timeout' not found on this host (install coreutils)")
        version = self.version(binary)
        if want_json:
            self.make_dir(json_dir)
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

    def missing_binary(self, plan, exc):
        """The documented error record per device (the task does not fail); a server step still collects the
        previous round's servers it was given."""
        p = self.p
        side = p["state"]
        check = "rdma.%s%s" % (self.test(), ".server" if side == "server" else "")
        records = [results.error(check, str(exc), host=self.host, peer=p["peer_name"] or p["peer"], target=device,
                                 params={"perftest_path": p["perftest_path"]}, tool={"name": "perftest"},
                                 facts={"side": side}, started=results.utc_now())
                   for _index, device, _port, _gid, _facts in plan]
        out = dict(changed=False, results=records, runs=[])
        if side == "server":
            out["handles"] = []
            if p["handles"]:
                collected = self.collect()
                out.update(results=collected["results"] + records, collected=collected["runs"],
                           removed=collected["removed"], changed=collected["changed"])
        return out

    def start_servers(self, plan, argvs, timeout_bin, version):
        p = self.p
        handles, records, runs = [], [], []
        governor_result = None
        for (index, device, tcp_port, gid_index, facts), argv in zip(plan, argvs):
            state_dir = self.inside("server-%s" % device)
            old = detached.load(state_dir)
            if old:
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
                handle = self.start(
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
        with interrupt_guard():
            try:
                governor_result = self.governor_acquire(holder, os.getpid())
                for (index, device, tcp_port, gid_index, facts), argv in zip(plan, argvs):
                    facts["cpu_governor"] = describe(governor_result) if p["cpu_governor"] else "not requested"
                    state_dir = self.inside("client-%s-%d" % (device, os.getpid()))
                    jobs.append(perftest_pairs.Job(index, device, tcp_port, argv, state_dir, facts))
                perftest_pairs.run_clients(jobs, timeout_bin, p["timeout_s"], p["connect_timeout_s"],
                                           p["connect_retry_delay_s"], start=self.start)
            finally:
                for job in jobs:
                    if job.handle is not None and detached.alive(job.handle):
                        detached.kill(job.handle)
                if p["cpu_governor"]:
                    released = self.governor.release(holder)
                    if governor_result is not None and released.get("action") == "restored":
                        governor_result["restored"] = released.get("restored")
        records, runs = [], []
        for job in jobs:
            text, rc, timed_out = job.result
            duration_s = None
            if job.started_mono is not None and job.handle is not None:
                ended = detached.outcome(job.handle) or {}
                if ended.get("ended"):
                    duration_s = max(0.0, ended["ended"] - job.handle["started"])
            records.extend(adapter.records(text, Context(
                params=dict(p, test=self.test()), rc=rc, side="client", host=self.host, target=job.device,
                index=job.index, argv=job.argv, tool_version=version, facts=job.facts, timed_out=timed_out,
                started=job.started, duration_s=duration_s, attempts=job.attempts)))
            runs.append({"device": job.device, "cmd": job.argv, "rc": rc, "attempts": job.attempts,
                         "stdout": results.trim(text)})
            if not p["keep_state"]:
                self.remove(job.state_dir)
        out = dict(changed=False, results=records, runs=runs, cmd=argvs[0])
        if p["cpu_governor"]:
            out["governor"] = governor_result
        return out

    def server_handles(self):
        """[(state_dir, handle or None, problem)] of the servers to collect.

        A given handle is only a pointer: its ``state_dir`` must be a server directory of this run, and what is
        used (pids, output paths) is the handle that state=server stored there, never the given content.
        """
        if not self.p["handles"]:
            found, left = [], []
            run_dir = self.own_run_dir(left)
            for name in sorted(os.listdir(run_dir)) if run_dir else []:
                if name.startswith("server-"):
                    path = self.inside(name)
                    handle, problem = detached.load_checked(path)
                    if handle or problem:
                        found.append((path, handle, problem))
            return found + [(self.run_dir, None, why) for why in left]
        out = []
        for given in self.p["handles"]:
            where = str(given.get("state_dir") or "")
            try:
                path = statedir.contained(self.run_dir, where)
            except statedir.StateError:
                path = None
            if path is None or os.path.dirname(path) != self.run_dir or \
                    not os.path.basename(path).startswith("server-"):
                out.append((where, None, "handle %s is not a server of run %s (its state_dir is not a server "
                                         "directory under %s); ignored" % (where, self.p["run_id"], self.run_dir)))
            elif not os.path.isdir(path):
                out.append((path, None, "server state %s is gone (collected twice, or removed by state=absent)"
                            % path))
            else:
                handle, problem = detached.load_checked(path)
                out.append((path, handle, problem or (None if handle else "no server handle stored in %s" % path)))
        return out

    def collect(self):
        p = self.p
        found = self.server_handles()
        if self.module.check_mode:
            return dict(changed=any(h for _d, h, _p in found), results=[],
                        removed=[d for d, h, _p in found if h])
        records, runs, removed, left = [], [], [], []
        given = dict((str(g.get("state_dir")), g) for g in p["handles"] or [])
        for state_dir, handle, problem in found:
            if problem:
                left.append(problem)
                hint = given.get(state_dir) or {}
                records.append(results.error(
                    "rdma.%s.server" % self.test(), problem, host=self.host, peer=p["peer_name"] or p["peer"],
                    target=hint.get("device") if isinstance(hint.get("device"), str) else None))
                continue
            handle["state_dir"] = state_dir
            job = perftest_pairs.Job(handle.get("index", 0), handle.get("device"), handle.get("tcp_port"),
                                     handle.get("argv"), state_dir, handle.get("facts") or {})
            job.handle = handle
            text, rc, timed_out, killed = perftest_pairs.collect(job, p["collect_timeout_s"])
            ended = detached.outcome(handle) or {}
            ctx = Context(
                params={"test": handle.get("test", self.test()),
                        "timeout_s": (handle.get("params") or {}).get("timeout_s")},
                rc=rc, side="server", host=handle.get("host_name") or self.host, peer=handle.get("peer_name"),
                target=handle.get("device"), argv=handle.get("argv"), tool_version=handle.get("tool_version"),
                started=handle.get("started_utc"),
                duration_s=max(0.0, ended["ended"] - handle["started"]) if ended.get("ended") else None,
                facts=handle.get("facts"), timed_out=timed_out)
            if killed:
                records.append(results.error(
                    "rdma.%s.server" % ctx.params["test"],
                    "server on %s still running after collect_timeout_s=%ss; killed" % (
                        ctx.target, p["collect_timeout_s"]),
                    host=ctx.host, peer=ctx.peer, target=ctx.target, raw=text,
                    tool={"name": "perftest", "version": ctx.tool_version}, params={"argv": ctx.argv},
                    facts=dict(ctx.facts or {}, side="server")))
            else:
                records.extend(adapter.records(text, ctx))
            if handle.get("governor_holder") and not ended.get("on_exit"):
                # the supervisor could not release its hold (killed): release it here
                self.governor.release(handle["governor_holder"])
            runs.append({"device": ctx.target, "cmd": ctx.argv, "rc": rc, "stdout": results.trim(text),
                         "killed": killed})
            if not p["keep_state"]:
                self.remove(state_dir)
                removed.append(state_dir)
        self.governor.reconcile()
        self._remove_empty_run_dir()
        return dict(changed=bool(removed), results=records, runs=runs, removed=removed, left=left)

    def absent(self):
        """Kill and remove what the run left, as far as the collection made it (stop_and_remove)."""
        removed, left = [], []
        run_dir = self.own_run_dir(left)
        for name in sorted(os.listdir(run_dir)) if run_dir else []:
            if name != statedir.MARKER:
                self.stop_and_remove(self.inside(name), removed, left)
        result = {"action": "none"}
        if not self.module.check_mode:
            result = self.governor.reconcile()
            self._remove_empty_run_dir()
        return dict(changed=bool(removed) or result.get("action") == "restored", results=[], removed=removed,
                    left=left, governor=result)

    def _remove_empty_run_dir(self):
        try:
            statedir.remove_own_if_empty(self.run_dir, "run directory")
        except (OSError, statedir.StateError):
            pass

    def import_output(self):
        return dict(changed=False, results=adapter.from_output(self.p["from_output"], self.p, self.host))
