# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""perftest's SSH path on a host: its state, binary, sysfs, governor and leftovers (private). Its plans, argv and
records come from its adapter, tools.perftest_sweep (``device_plan``, ``argvs_for``, ``records``: what the Kubernetes
planner and pods use too).

``PerftestRun(module)`` is what the SSH path's perftest code shares on the host itself: the state root, the
perftest binary and its version, sysfs (HCAs), the CPU governor, and the removal of a run's leftovers. The sweep
runner (perftest_sweep.Sweep, the one RDMA protocol: a single pair is a schedule of one step) builds on it; module
perftest uses it for import mode (``from_output``) and ``state: absent``. Its state lives in
``<state_root>/<host id>/`` (statedir.host_root: hosts sharing a state root never see each other's runs):
``governor.json`` and one directory per run, each directory made by statedir.own_dir (marked as the collection's).
absent and the sweep's cleanup use, kill and remove only what carries that mark (issue 17); the
rest is left alone and listed in ``left``. Runs on the targets: Python 3.8+, no Ansible imports (``module``
is duck-typed: params, check_mode, warn, get_bin_path, no_log_values).
"""

from __future__ import annotations

import os
import socket

from ansible_collections.aifabric.acceptance.plugins.module_utils import state_child, statedir
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import ParseError, ToolMissing, ToolTimeout
from ansible_collections.aifabric.acceptance.plugins.module_utils.governor import Governor

# The state's code is loaded with this file; what runs perftest (the adapter, the clients' helpers, the runner of
# commands, sysfs) only by the methods that use it: the sweep runner's status poll (perftest_status.py), run on every
# host again and again, and the cleanup module build on this class without running perftest.


def host_name(p):
    """This host's name in the state root: the inventory's, else the host's own short name."""
    return p["inventory_hostname"] or socket.gethostname().split(".")[0]


def state_paths(p, create):
    """(this host's state root, the run's directory in it): run_id and the state root validated before any path is
    derived from them (issue 9 item 1); the root made when ``create`` (statedir.host_root: hosts sharing a state root
    never see each other's runs)."""
    statedir.check_name(p["run_id"], "run_id")
    root = statedir.host_root(p["state_root"] or statedir.default_root("perftest"), create=create)
    return root, os.path.join(root, p["run_id"])


# --------------------------------------------------------------------------- a host's perftest state (SSH path)

class PerftestRun(object):
    """What the SSH path's perftest code shares on a host: state root and run directory, binary, version, sysfs,
    governor, and the removal of what the collection started (stop_and_remove, absent)."""

    def __init__(self, module):
        self.module = module
        self.p = module.params
        self.host = host_name(self.p)
        self.root = None
        self.run_dir = None
        self.governor = None

    def open_state(self):
        """Validate run_id and the state root before any path is derived from them (issue 9 item 1); every user of
        the state root (module perftest, the sweep runner, the governor's state file) comes through here, into
        this host's own directory (issue 17 item 7)."""
        self.root, self.run_dir = state_paths(self.p, create=not self.module.check_mode)
        self.governor = Governor(os.path.join(self.root, "governor.json"), root=self.p["cpu_sysfs"])

    def inside(self, *parts):
        """A path inside this run's directory (refused when a part would leave it)."""
        return statedir.contained(self.run_dir, os.path.join(self.run_dir, *parts))

    def make_dir(self, path):
        """A state directory of this host (the run's, a process's), made and marked when absent (statedir.own_dir)."""
        return statedir.own_dir(self.root, path)

    def start(self, *args, **kwargs):
        """state_child.start (a child of this process) into a state directory made under this host's (run directory
        included)."""
        return state_child.start(*args, base=self.root, **kwargs)

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
            handle, problem = state_child.load_checked(where)
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
            if state_child.kill(item):
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
        from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import perftest_sweep as adapter

        return self.p.get("test") or adapter.DEFAULT_TEST

    def binary(self, test=None):
        """The perftest program ``test`` (default the ``test`` option); ToolMissing when it is not installed."""
        from ansible_collections.aifabric.acceptance.plugins.module_utils import perftest_clients, runner

        return runner.find_tool(self.module, test or self.test(), path=self.p["tool_dir"],
                                hint=perftest_clients.INSTALL_HINT)

    def version(self, binary):
        from ansible_collections.aifabric.acceptance.plugins.module_utils import perftest_clients, runner

        try:
            run = runner.run(self.module, [binary, "--version"], 15)
        except (ToolMissing, ToolTimeout):      # never Interrupted: a signal must end the run
            return None
        return perftest_clients.parse_version(run.output)

    def hcas(self):
        from ansible_collections.aifabric.acceptance.plugins.module_utils import probe_host
        from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import rdma

        try:
            files = probe_host.read_infiniband(probe_host.Host(root=self.p["sysfs_root"]))
            return rdma.build_hcas(files) if files else []
        except ParseError as exc:
            self.module.warn("could not read /sys/class/infiniband: %s" % exc)
            return []

    # ---------------------------------------------------------------- module perftest: import, absent
    def run(self):
        """Module perftest: import a saved output (``from_output``), or remove what a run left (``state: absent``).
        Running pairs is the sweep runner's job (perftest_sweep.Sweep; a single pair is a schedule of one step)."""
        if self.p["from_output"]:
            return self.import_output()
        self.open_state()
        return self.absent()

    def absent(self):
        """state=absent: kill and remove what the run left, as far as the collection made it (stop_and_remove)."""
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
        from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import perftest_sweep as adapter

        return dict(changed=False, results=adapter.from_output(self.p["from_output"], self.p, self.host))
