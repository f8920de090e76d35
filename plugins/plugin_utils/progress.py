# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Progress of a running playbook: one short line per stage of each task, from the streamed entries.

The ``aifabric.acceptance.fleet_report`` callback gives :class:`Tally` every task entry its
:class:`~.fleet.Collector` streams (``Collector.observer``; the stream is the one record path) and
prints a task's lines once it has finished on every host (the last host still in the play returned
its result; else when the next task of a linear play starts, or the play or the run ends)::

    aifabric env: 8/8 hosts, 7 pass, 1 error (node3: host unreachable at task 'Probe': ...)
    aifabric nccl all_reduce: 2/2 hosts, 2 pass, busbw_max_gbyte_s min 352.1 (node2) max 355.2

A **stage** is what one task measured, named from the records' checks: a check with a headline metric
(the fleet-relative rules, :data:`.fleet_relative.DEFAULT_RULES`: every nccl/hccl collective, each GEMM
dtype, each perftest bandwidth or latency test) is a stage of its own, ``family name``; any other check
counts in its family's stage (``env``, ``gpu``, ``rdma``, ``k8s``). A task prints at most one line per
stage. ``N/M hosts``: N hosts have a record of the stage (a multi-node run's record counts for every
host of the play in its ``params.hosts``), M hosts reported on the task (skipped hosts without records
do not).
Hosts are counted by their worst status in the stage (error > fail > warn > pass > skip). A host whose
task failed without records, or that was unreachable, counts as ``error`` in every stage of the task.
The first host (by name) of the worst status is named with its reason; the headline metric shows its
worst value (with the host) and best value over the stage's judged records.

Pure bookkeeping: entries are the stream's task entries, records as the task returned them (not yet
normalized), so anything malformed is tolerated here and left to :func:`.fleet.normalize`.
"""

from __future__ import annotations

import fnmatch
import functools
import math

from ansible_collections.aifabric.acceptance.plugins.module_utils import results
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import fleet, fleet_relative, render

RANK = {"skip": 0, "pass": 1, "warn": 2, "fail": 3, "error": 4}
SHOWN = ("pass", "warn", "fail", "error", "skip")
TASK_ERRORS = (fleet.TASK_CHECK, fleet.UNREACHABLE_CHECK)   # made by the collector for a task, not measured
REASON_MAX = 80
PREFIX = "aifabric"


@functools.lru_cache(maxsize=1024)
def headline(name):
    """(metric, better) of the first fleet-relative rule whose check glob matches ``family.name``, else None."""
    for rule in fleet_relative.DEFAULT_RULES:
        if fnmatch.fnmatchcase(name, rule["check"]):
            return rule["metric"], rule.get("better", "higher")
    return None


@functools.lru_cache(maxsize=1024)
def stage_of(check):
    """The stage of a check: ``family name`` for a check with a headline metric, else its family."""
    parts = check.split(".")
    if len(parts) >= 2 and headline(parts[0] + "." + parts[1]):
        return parts[0] + " " + parts[1]
    return parts[0]


def _short(text, limit=REASON_MAX):
    """One terminal-safe line (a tool's escape sequences are not replayed on the console), shortened."""
    text = "".join(c if c.isprintable() else " " for c in " ".join(str(text).split()))
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _untasked(reason, task_name):
    """A collector-made reason without the task's name (the line is printed under the task)."""
    if isinstance(reason, str) and isinstance(task_name, str) and task_name:
        return reason.replace(" at task %r" % task_name, "").replace("task %r " % task_name, "task ")
    return reason


def _number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


class _Stage:
    __slots__ = ("hosts", "metric", "better", "worst", "best")

    def __init__(self, name):
        self.hosts = {}             # host -> [rank, reason]
        rule = headline(name.replace(" ", ".", 1)) if " " in name else None
        self.metric, self.better = rule if rule else (None, None)
        self.worst = None           # (value, host)
        self.best = None

    def status(self, host, rank, reason):
        have = self.hosts.get(host)
        if have is None or rank > have[0]:
            self.hosts[host] = [rank, reason]

    def value(self, value, host):
        lower = self.better == "lower"
        if self.worst is None or (value > self.worst[0] if lower else value < self.worst[0]):
            self.worst = (value, host)
        if self.best is None or (value < self.best if lower else value > self.best):
            self.best = value


class _Task:
    __slots__ = ("seen", "reported", "errors", "stages")

    def __init__(self):
        self.seen = set()           # hosts that returned a result for the task (skipped included)
        self.reported = set()       # hosts that ran the task (ok, failed, ignored, unreachable)
        self.errors = {}            # host -> reason: failed without records, or unreachable
        self.stages = {}            # stage name -> _Stage, in the order first seen


def _record_error(rec, task_name):
    """Why a streamed record counts as its host's task error (not a mapping, an invalid check, a record that says
    the task failed), or None for a record of a stage."""
    if not isinstance(rec, dict):
        return "a result record that is not a mapping"
    check = rec.get("check")
    if not isinstance(check, str) or not results.CHECK_RE.match(check):
        return "an invalid result record (check %r)" % (check,)
    if check in TASK_ERRORS:
        return _untasked(rec.get("reason"), task_name) or check
    return None


class Tally:
    """Stage counts of the tasks not printed yet (small: counts, no records).

    :meth:`play` names the hosts of the play (its serial batch), :meth:`start` a task and whether it
    runs once; :meth:`add` folds a streamed task entry in, and once every host still in the play has
    returned a result for the task (hosts that failed or were unreachable have left it; a ``run_once``
    task needs one result), the task's lines wait in :meth:`take`. :meth:`flush` gives the lines of every
    task still open (the next task of a linear play has started, the play or the run ended).
    """

    def __init__(self):
        self.tasks = {}             # task uuid -> _Task, not printed yet
        self.batch = None           # hosts the play (serial batch) started on, when known
        self.active = None          # hosts still running it
        self.expected = {}          # task uuid -> hosts that will return a result for it
        self.done = []              # lines of the tasks that finished on every host

    def play(self, hosts):
        """A play (or serial batch) starts on these hosts (None: not known; tasks print when flushed)."""
        self.batch = None if hosts is None else set(str(h) for h in hosts)
        self.active = None if hosts is None else set(self.batch)
        self.expected = {}

    def start(self, task, run_once=False):
        """A task starts: it is done once every host still in the play (one host if run_once) has reported."""
        task = str(task)
        if run_once:
            self.expected[task] = set()
        elif self.active is not None:
            self.expected[task] = set(self.active)

    def add(self, entry):
        """Fold one task entry of the record stream in (a dict: host, task, kind, records, unreachable)."""
        if not isinstance(entry, dict):
            return
        host = str(entry.get("host"))
        uuid = str(entry.get("task"))
        task = self.tasks.get(uuid)
        if task is None:
            task = self.tasks[uuid] = _Task()
        records = entry.get("records")
        records = records if isinstance(records, list) else []
        kind = entry.get("kind")
        task.seen.add(host)
        if kind != "skipped" or records:
            task.reported.add(host)
        name = entry.get("name")
        if kind == "unreachable":
            unreachable = entry.get("unreachable")
            reason = unreachable.get("reason") if isinstance(unreachable, dict) else None
            task.errors.setdefault(host, _untasked(reason, name) or "host unreachable")
        for rec in records:
            self._record(task, host, rec, name)
        if self.active is not None:
            if kind in ("failed", "unreachable"):
                self.active.discard(host)       # Ansible leaves it out of the play's next tasks
            else:
                self.active.add(host)           # still running (a rescue, ignore_unreachable)
        expected = self.expected.get(uuid)
        if expected is not None and expected <= task.seen:
            del self.expected[uuid]
            self.done.extend(task_lines(self.tasks.pop(uuid)))

    def _record(self, task, host, rec, task_name=None):
        error = _record_error(rec, task_name)
        if error is not None:
            task.errors.setdefault(host, error)
            return
        name = stage_of(rec["check"])
        stage = task.stages.get(name)
        if stage is None:
            stage = task.stages[name] = _Stage(name)
        status = rec.get("status")
        rank = RANK.get(status) if isinstance(status, str) else None
        reason = None
        if rank is None:
            rank, reason = RANK["error"], "status %r is not a status" % (status,)
        owner = rec.get("host")
        if not isinstance(owner, str) or not owner:
            owner = host
        have = stage.hosts.get(owner)
        if have is None or rank > have[0]:          # the first reason of the host's worst status
            stage.hosts[owner] = [rank, reason or rec.get("reason")]
        self._members(stage, rec, owner, rank, reason or rec.get("reason"))
        if stage.metric and RANK["pass"] <= rank <= RANK["fail"]:
            metrics = rec.get("metrics")
            value = metrics.get(stage.metric) if isinstance(metrics, dict) else None
            if _number(value):
                stage.value(value, owner)

    def _members(self, stage, rec, owner, rank, reason):
        """A multi-node run (``params.hosts``) acts for the play's hosts it names: they get its status too."""
        params = rec.get("params")
        members = params.get("hosts") if params and isinstance(params, dict) else None
        if isinstance(members, list) and self.batch:
            for one in members:
                if str(one) in self.batch and str(one) != owner:
                    stage.status(str(one), rank, reason)

    def take(self):
        """The lines of the tasks that finished on every host since the last call."""
        out, self.done = self.done, []
        return out

    def flush(self):
        """:meth:`take`, then the lines of every task still open (in task order); all forgotten."""
        out = self.take()
        for task in self.tasks.values():
            out.extend(task_lines(task))
        self.tasks = {}
        self.expected = {}
        return out


def task_lines(task):
    """One line per stage of a task."""
    return [stage_line(name, stage, task) for name, stage in task.stages.items()]


def stage_line(name, stage, task):
    """``aifabric <stage>: N/M hosts, <count> <status>..., <metric> min X (host) max Y (host: reason)``."""
    hosts = dict(stage.hosts)
    for host, reason in task.errors.items():
        if host not in hosts or hosts[host][0] < RANK["error"]:
            hosts[host] = [RANK["error"], reason]
    counts = {}
    for rank, _reason in hosts.values():
        counts[rank] = counts.get(rank, 0) + 1
    total = len(task.reported | set(hosts))
    parts = ["%d/%d hosts" % (len(hosts), total)]
    parts.extend("%d %s" % (counts[RANK[s]], s) for s in SHOWN if counts.get(RANK[s]))
    if stage.worst is not None:
        worst, where = stage.worst
        if worst == stage.best:
            parts.append("%s %s" % (stage.metric, render.fmt_value(worst)))
        else:
            low, high = ("max", "min") if stage.better == "lower" else ("min", "max")
            parts.append("%s %s %s (%s) %s %s" % (
                stage.metric, low, render.fmt_value(worst), _short(where, 40), high, render.fmt_value(stage.best)))
    line = "%s %s: %s" % (PREFIX, name, ", ".join(parts))
    top = max(counts) if counts else RANK["pass"]
    if top != RANK["pass"]:
        named = sorted(host for host, (rank, _reason) in hosts.items() if rank == top)
        reason = hosts[named[0]][1]
        more = "; +%d more" % (len(named) - 1) if len(named) > 1 else ""
        line += " (%s: %s%s)" % (_short(named[0], 40), _short(reason) if reason else "no reason given", more)
    return line


def stage_lines(entries):
    """The progress lines of a list of stream task entries (pure: a fresh :class:`Tally`)."""
    tally = Tally()
    for entry in entries:
        tally.add(entry)
    return tally.flush()
