# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action behind aifabric.acceptance.perftest_sweep: state=wait polls the host's runner from the controller.

Every other state goes to the module as the normal action would (async included). ``state: wait`` calls the
module with ``state: status`` again and again, each call a long poll of at most ``poll_s`` on the host (renewing the runner's lease, handing it the hosts found
unreachable) until the runner ended, and returns its records. Hosts share what they saw through a directory of
the controller's local temporary directory (the workers are forks of one ansible-playbook): each poll writes
the host's progress there, a host whose polls fail ``unreachable_after`` times in a row is written there as
dead (and every other runner is told at its next poll), and the first worker that sees every host past a round
prints that round's line (one line per round, created with O_EXCL).
"""

from __future__ import annotations

import json
import os
import time

from ansible import constants as C
from ansible.errors import AnsibleConnectionFailure
from ansible.plugins.action import ActionBase
from ansible.utils.vars import merge_hash

MODULE = "aifabric.acceptance.perftest_sweep"
MISSING_S = 120
WAIT_ONLY = ("wait_timeout_s", "poll_s", "rounds", "unreachable_after", "sweep_hosts")


def _safe(name):
    return "".join(c if c.isalnum() or c in "._-" else "_" for c in str(name))[:200]


class ActionModule(ActionBase):
    _supports_check_mode = True
    _supports_async = True

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        args = dict(self._task.args)
        if args.get("state") != "wait":
            wrap_async = self._task.async_val and not self._connection.has_native_async
            result = merge_hash(result, self._execute_module(task_vars=task_vars, wrap_async=wrap_async))
            if not wrap_async:
                self._remove_tmp_path(self._connection._shell.tmpdir)
            return result
        if self._task.check_mode:
            return dict(result, changed=False, skipped=True, msg="check mode: no runner to wait for", results=[])
        return self._wait(args, task_vars, result)

    # ------------------------------------------------------------------ shared controller-side state
    def _shared(self, args):
        name = "rdma-sweep-%s-%s" % (_safe(args.get("run_id", "default")), _safe(args.get("label", "main")))
        path = os.path.join(C.DEFAULT_LOCAL_TMP, name)
        os.makedirs(path, mode=0o700, exist_ok=True)
        return path

    @staticmethod
    def _write(path, data):
        tmp = "%s.tmp.%d" % (path, os.getpid())
        with open(tmp, "w") as handle:
            json.dump(data, handle)
        os.replace(tmp, path)

    @staticmethod
    def _read(path):
        try:
            with open(path) as handle:
                return json.load(handle)
        except (OSError, ValueError):
            return None

    def _dead(self, shared):
        out = {}
        for name in os.listdir(shared):
            if name.startswith("dead-"):
                out[name[5:]] = self._read(os.path.join(shared, name)) or "unreachable"
        return out

    def _positions(self, shared, args):
        """The next step of every host of the sweep as last polled (a client keeps waiting for a server whose
        host is alive and still busy with an earlier step)."""
        first = int(args.get("first_step") or 0)
        out = {}
        for name in args.get("sweep_hosts") or []:
            item = self._read(os.path.join(shared, "host-%s" % _safe(name)))
            if item is not None:
                out[name] = first + int(item.get("position", 0))
        return out

    def _report(self, shared, args, host, progress, dead):
        """Write this host's progress; print the line of every round that every live host has passed."""
        steps = args.get("rounds") or []
        first = int(args.get("first_step") or 0)
        total_steps = len(steps)
        nxt = progress.get("next_step")
        position = total_steps if nxt is None else int(nxt) - first
        self._write(os.path.join(shared, "host-%s" % _safe(host)), {
            "position": position, "pairs_done": progress.get("pairs_done", 0), "failing": progress.get("failing", 0)})
        hosts = [h for h in (args.get("sweep_hosts") or [host]) if h not in dead]
        positions, done, failing = [], 0, 0
        for name in hosts:
            item = self._read(os.path.join(shared, "host-%s" % _safe(name))) or {}
            positions.append(item.get("position", 0))
            done += item.get("pairs_done", 0)
            failing += item.get("failing", 0)
        reached = min(positions) if positions else 0
        total_pairs = sum(int(s[2]) for s in steps)
        per_test = {}
        for test, _round, _pairs in steps:
            per_test[test] = per_test.get(test, 0) + 1
        label = "" if args.get("label", "main") == "main" else " (%s)" % args.get("label")
        for index in range(min(reached, total_steps)):
            marker = os.path.join(shared, "printed-%d" % index)
            try:
                os.close(os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600))
            except FileExistsError:
                continue
            test, rnd, _pairs = steps[index]
            self._display.display("rdma %s%s round %d/%d: %d/%d pairs done, %d failing%s" % (
                test, label, int(rnd) + 1, per_test[test], done, total_pairs, failing,
                (", unreachable: %s" % ", ".join(sorted(dead))) if dead else ""))

    # ------------------------------------------------------------------ the wait loop
    def _wait(self, args, task_vars, result):
        host = args.get("host_name") or task_vars.get("inventory_hostname")
        shared = self._shared(args)
        status_args = dict((k, v) for k, v in args.items() if k not in WAIT_ONLY)
        status_args["state"] = "status"
        deadline = time.monotonic() + float(args.get("wait_timeout_s") or 86400)
        status_args["wait_s"] = float(args.get("poll_s") or 5.0)
        limit = int(args.get("unreachable_after") or 2)
        failures = 0
        last_error = None
        missing_since = None
        try:
            while True:
                dead = self._dead(shared)
                status_args["dead_hosts"] = dict((h, "was declared unreachable by the controller (%s)" % why)
                                                 for h, why in dead.items() if h != host)
                status_args["positions"] = self._positions(shared, args)
                try:
                    out = self._execute_module(module_name=MODULE, module_args=status_args, task_vars=task_vars)
                except AnsibleConnectionFailure as exc:
                    out = {"unreachable": True, "msg": str(exc)}
                if out.get("unreachable"):
                    failures += 1
                    last_error = out.get("msg")
                    if failures >= limit:
                        why = "%d polls failed in a row: %s" % (failures, (last_error or "")[:200])
                        self._write(os.path.join(shared, "dead-%s" % _safe(host)), why)
                        self._display.warning("rdma sweep: %s is unreachable (%s); the others skip their pairs with it"
                                              % (host, why))
                        return dict(result, unreachable=True, changed=False, msg="runner unreachable: %s" % why)
                else:
                    failures = 0
                    if out.get("failed"):
                        return merge_hash(result, out)
                    if out.get("missing"):
                        missing_since = missing_since or time.monotonic()
                        if time.monotonic() - missing_since > MISSING_S:
                            return dict(result, failed=True, changed=False, results=[], msg=(
                                "the runner of %s never showed up (no state directory for %ds): it did not start, or "
                                "its files were removed" % (host, MISSING_S)))
                        time.sleep(0.25)
                        continue
                    self._report(shared, args, host, out.get("progress") or {}, self._dead(shared))
                    if out.get("finished"):
                        out.pop("finished", None)
                        return merge_hash(result, dict(out, changed=True))
                if time.monotonic() >= deadline:
                    return dict(result, failed=True, results=[],
                                msg="the runner of %s did not end within wait_timeout_s=%s" % (
                                    host, args.get("wait_timeout_s")))
                if out.get("unreachable"):
                    time.sleep(1.0)
        finally:
            self._remove_tmp_path(self._connection._shell.tmpdir)
