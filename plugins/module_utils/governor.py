# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""CPU frequency governor: set it for a test, always put the previous one back (private).

Several tests of one host may run at once (one per HCA) and each wants the
governor ``performance`` while it runs. The host-wide state is therefore
reference-counted in a small JSON file guarded by an ``flock``:

- ``acquire(holder, pid)`` - the first holder saves every CPU's current governor
  and writes the target; later holders only register;
- ``release(holder)`` - the last holder to leave writes the saved governors back
  and removes the state file;
- holders whose process is gone (killed, host crash) are pruned on every call,
  and ``reconcile()`` (used by ``state: absent``) restores when none is left.

The sysfs root is a parameter (``/sys/devices/system/cpu`` by default) so tests
can use a fake tree. Where the tree has no ``cpufreq/scaling_governor`` (VMs,
containers, cpufreq driver absent) or the target is not offered, nothing is
changed and the result says why (``action: skip``).
"""

from __future__ import annotations

import fcntl
import glob
import json
import os
import re

from ansible_collections.aifabric.acceptance.plugins.module_utils.proc import process_start_time
from ansible_collections.aifabric.acceptance.plugins.module_utils import statedir

DEFAULT_ROOT = "/sys/devices/system/cpu"
_CPU_RE = re.compile(r"/(cpu\d+)/cpufreq/scaling_governor$")


class Governor(object):
    """The governors of one host, set and restored through a lock-guarded state file."""

    def __init__(self, state_path, root=DEFAULT_ROOT):
        self.root = root
        self.state_path = state_path
        self.lock_path = state_path + ".lock"

    # ------------------------------------------------------------------ sysfs
    def files(self):
        found = glob.glob(os.path.join(self.root, "cpu[0-9]*", "cpufreq", "scaling_governor"))
        return dict((_CPU_RE.search(path).group(1), path) for path in sorted(found) if _CPU_RE.search(path))

    def current(self):
        out = {}
        for cpu, path in self.files().items():
            try:
                with open(path) as handle:
                    out[cpu] = handle.read().strip()
            except (IOError, OSError):
                continue
        return out

    def offered(self, cpu_path):
        path = os.path.join(os.path.dirname(cpu_path), "scaling_available_governors")
        try:
            with open(path) as handle:
                return handle.read().split()
        except (IOError, OSError):
            return None

    def _write(self, values):
        # cpu_sysfs is written as root: refused when another user owns or can write it (or a link on its way)
        statedir.trusted_dir(self.root, create=False, what="cpu_sysfs", exec_only=True)
        errors = []
        files = self.files()
        for cpu, governor in sorted(values.items()):
            path = files.get(cpu)
            if path is None:
                continue
            try:
                with open(path, "w") as handle:
                    handle.write(governor)
            except (IOError, OSError) as exc:
                errors.append("%s: %s" % (cpu, exc))
        return errors

    # ------------------------------------------------------------------ state
    def _locked(self):
        directory = os.path.dirname(self.state_path)
        if directory:
            os.makedirs(directory, mode=0o700, exist_ok=True)
        # never through a symbolic link (the state root is checked by the caller; this is the second line)
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
        handle = os.fdopen(fd, "a+")
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        return handle

    def _load(self):
        try:
            with open(self.state_path) as handle:
                data = json.load(handle)
        except (IOError, OSError, ValueError):
            return {"saved": {}, "holders": {}, "target": None}
        data.setdefault("saved", {})
        data.setdefault("holders", {})
        return data

    def _save(self, data):
        if not data["holders"]:
            if os.path.lexists(self.state_path):
                os.remove(self.state_path)
            return
        tmp = self.state_path + ".tmp"
        if os.path.lexists(tmp):
            os.remove(tmp)      # a stale file or a planted link: unlink never follows it
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
        with os.fdopen(fd, "w") as handle:
            json.dump(data, handle)
        os.rename(tmp, self.state_path)

    @staticmethod
    def _prune(data):
        gone = []
        for name, holder in list(data["holders"].items()):
            start = process_start_time(holder.get("pid"))
            if start is None or (holder.get("start_time") is not None and start != holder["start_time"]):
                gone.append(name)
                del data["holders"][name]
        return gone

    def _restore_if_idle(self, data, result):
        if data["holders"] or not data.get("saved"):
            return
        errors = self._write(data["saved"])
        result.update({"action": "restored", "restored": _summary(data["saved"])})
        if errors:
            result["errors"] = errors
        data["saved"] = {}

    # ------------------------------------------------------------------ API
    def acquire(self, holder, pid, target="performance"):
        """Register ``holder`` (a process ``pid``) and make sure every CPU runs ``target``."""
        files = self.files()
        if not files:
            return {"action": "skip", "reason": "no cpufreq scaling_governor under %s (no cpufreq driver: "
                                                "VM, container or BIOS-controlled); governor left as is" % self.root}
        offered = self.offered(next(iter(files.values())))
        if offered is not None and target not in offered:
            return {"action": "skip", "reason": "governor %r not offered by the cpufreq driver (available: %s)"
                                                % (target, " ".join(offered))}
        lock = self._locked()
        try:
            data = self._load()
            result = {"pruned": self._prune(data)}
            self._restore_if_idle(data, result)
            if not data["holders"]:
                data["saved"] = self.current()
                data["target"] = target
                errors = self._write(dict((cpu, target) for cpu in data["saved"]))
                if errors:
                    # could not set (not root?): put back what was changed, report, hold nothing
                    self._write(data["saved"])
                    data["saved"] = {}
                    self._save(data)
                    return {"action": "skip", "reason": "could not set governor %s: %s" % (target, errors[0])}
                result.update({"action": "set", "previous": _summary(data["saved"]), "target": target})
            else:
                result.update({"action": "shared", "target": data.get("target"),
                               "previous": _summary(data["saved"])})
            data["holders"][holder] = {"pid": pid, "start_time": process_start_time(pid)}
            self._save(data)
            return result
        finally:
            lock.close()

    def release(self, holder):
        """Drop ``holder``; the last one out restores the saved governors."""
        return self._settle("released", (holder,))

    def reconcile(self):
        """Prune dead holders and restore when none is left (cleanup after crashes)."""
        return self._settle("checked", ())

    def _settle(self, action, leaving):
        """Under the lock: drop the ``leaving`` holders, prune dead ones, restore the saved governors when none is
        left; {"action": ``action`` (or "restored"), "pruned": [...]}, or {"action": "none"} without a state file."""
        if not os.path.exists(self.state_path):
            return {"action": "none"}
        lock = self._locked()
        try:
            data = self._load()
            for holder in leaving:
                data["holders"].pop(holder, None)
            result = {"action": action, "pruned": self._prune(data)}
            self._restore_if_idle(data, result)
            self._save(data)
            return result
        finally:
            lock.close()


def _summary(values):
    """{'powersave': 'cpu0-cpu3'}-like compact view of per-CPU governors."""
    groups = {}
    for cpu, governor in values.items():
        groups.setdefault(governor, []).append(cpu)
    return dict((gov, ",".join(sorted(cpus, key=lambda c: int(c[3:])))) for gov, cpus in sorted(groups.items()))


def describe(result):
    """One line for records' facts."""
    action = (result or {}).get("action")
    if action == "skip":
        return "not changed: %s" % result.get("reason")
    if action == "set":
        return "set to %s (was %s)" % (result.get("target"), ", ".join(sorted(result.get("previous", {}))))
    if action == "shared":
        return "%s (already set by a concurrent test)" % result.get("target")
    return action or "not requested"
