# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The record stream (stage 1 of the controller pipeline, docs/report.md): :class:`Collector` takes task results
as they arrive, accounts for every targeted host, and writes every change as one JSON line to the run's stream
(found by the run's steps in the run store, run_store.py); :func:`append_entry` / :func:`append_config` let a
step add to it (configuration, the analysis of a run_summary step). Controller-only (plugin_utils), no Ansible
imports.
"""

from __future__ import annotations

import json
import os
import re

from ansible_collections.aifabric.acceptance.plugins.module_utils import results
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import admission, group_screen
from ansible_collections.aifabric.acceptance.plugins.plugin_utils.normalize import (
    MISSING_CHECK, TASK_CHECK, UNREACHABLE_CHECK, raw_text, shorten, extract_records, failed_items_message,
    failure_message, loads_finite, normalize, plain, without_cyclic_gc)

# what k8s_preflight names the host of a namespace's records: "namespace/" + a Kubernetes namespace (DNS-1123 label)
NAMESPACE_HOST_RE = re.compile(r"namespace/[a-z0-9](?:[-a-z0-9]{0,61}[a-z0-9])?\Z")


# the stream's encoder: compact, anything JSON has no type for as its str(); no cycle check (task results come
# from JSON; a cycle would still end in RecursionError, as plain() does), which saves a tenth of the encoding
_STREAM_ENCODE = json.JSONEncoder(separators=(",", ":"), default=str, check_circular=False).encode


# the key of a run_summary result that fails the run on its verdict (after publishing its report)
VERDICT_FAILED = "aifabric_verdict_failed"


class Collector:
    """Records by (host, task uuid) as task results arrive, in any order.

    Feed it plain values (host name, task uuid/name, result dict); ask it for
    :meth:`records`: every collected record, plus an ``error`` record for each failed
    or unreachable host, plus a record for each targeted host that produced nothing,
    so the report's host count always equals the number of hosts targeted.

    Every change is one entry, encoded once as a JSON line (the task's records as the task
    returned them; :func:`normalize` checks them when the line is read back). With
    :meth:`open_stream`, each line is appended to a run-scoped JSON-lines file as it happens
    (one ``write`` per task result), and :meth:`load` rebuilds the same collector from that
    file: the one record path that both the ``run_summary`` step (set_stats) and the report
    read. The collector also keeps its lines in memory (compact bytes), so a stream that
    could not be written loses nothing: :meth:`records` of a live collector reads its own
    lines back the same way. ``observer``: a callable given each task entry as it is
    streamed (the callback's progress lines).
    """

    def __init__(self, missing_status="error"):
        self.missing_status = missing_status
        self.hosts_targeted = []
        self.run = {}                # what the stream's first line says about the run
        self.config = {}             # analysis config from the stream (required_checks, ...)
        self.problems = []           # lines of a stream that could not be read
        self.observer = None         # called with each task entry as it is streamed
        self._targeted = set()
        self._lines = []             # a live collector: every entry as its stream line (bytes); None once read back
        self._by_key = {}            # read back: (host, task uuid) -> [records]
        self._unreachable = {}       # host -> error record (first unreachable task)
        self._events = {}            # host -> {"ok": n, "failed": n, ...}
        self._stream = None          # file descriptor of the stream, when open
        self.stream_path = None
        self.stream_error = None     # why the stream stopped being written (it is then incomplete)
        self.entries = 0             # entries applied (read back: the stream's readable lines so far)
        self.published = None        # read back: where a run_summary step published the report, while no later
        #                              entry changed the records (the callback then publishes nothing else)
        self.analysis = None         # read back: a run_summary step's analysis entry, while no later entry changed
        self._reported = set()       # read back: hosts that have a record (or an unreachable one)
        self.plans = admission.Plans()   # what the controller planned (live only: records are admitted as they come)

    # stream
    def open_stream(self, path, run=None, config=None):
        """Create the stream file (new, mode 0600, never through a symlink) and write the run line."""
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
        self._stream = os.open(path, flags, 0o600)
        self.stream_path = path
        self._apply({"e": "run", "run": plain(run or {}), "config": plain(config or {}),
                     "missing_status": self.missing_status})

    def close_stream(self):
        if self._stream is not None:
            os.close(self._stream)
            self._stream = None

    @classmethod
    @without_cyclic_gc
    def load(cls, path):
        """A collector rebuilt from a stream file. A line that cannot be read (the last line of a
        run killed mid-write) is skipped and named in :attr:`problems`. Raises OSError."""
        with open(path, encoding="utf-8", errors="replace") as handle:
            return cls._read(handle, path)

    @classmethod
    def _read(cls, lines, name):
        out = cls()
        out._lines = None
        for number, line in enumerate(lines, 1):
            if not line.strip():
                continue
            try:
                entry, finite = loads_finite(line)
                out._apply(entry, log=False, parsed_json=finite)
            except (ValueError, TypeError, KeyError, AttributeError) as exc:
                out.problems.append("%s line %d unreadable (%s): skipped" % (name, number, exc))
        return out

    def read_back(self):
        """A live collector's own lines read back (what :meth:`load` makes of its stream file)."""
        if self._lines is None:
            return self
        out = self._read((line.decode("utf-8", "replace") for line in self._lines), "(memory)")
        out.missing_status = self.missing_status
        return out

    def _apply(self, entry, log=True, parsed_json=False):
        kind = entry["e"]
        if kind == "run":
            self.run.update(entry.get("run") or {})
            self.config.update(entry.get("config") or {})
            self.missing_status = entry.get("missing_status") or self.missing_status
        elif kind == "config":
            self._apply_config(entry.get("config") or {})
        elif kind == "target":
            self._apply_target(entry["hosts"])
        elif kind == "task":
            self._apply_task(entry, log, parsed_json)
        elif kind == "analysis" and not log:
            # the analysis a run_summary step made of every entry before it (else of fewer: a line came between)
            self.analysis = entry if entry.get("after") == self.entries else None
        elif kind == "published" and not log:
            # the report a run_summary step published (acceptance_fail_on) from every entry before it
            self.published = entry if entry.get("after") == self.entries and self.analysis is not None else None
        else:
            raise ValueError("unknown stream entry %r" % (kind,))
        self.entries += 1
        if log:
            self._log(entry)

    def _apply_config(self, config):
        self.analysis = self.published = None
        for key, value in config.items():
            if isinstance(value, dict) and isinstance(self.config.get(key), dict):
                self.config[key] = dict(self.config[key], **value)
            else:
                self.config[key] = value

    def _apply_target(self, hosts):
        for host in hosts:
            host = str(host)
            if host not in self._targeted:
                self._targeted.add(host)
                self.hosts_targeted.append(host)
                self.analysis = self.published = None

    def _apply_task(self, entry, log, parsed_json):
        host = str(entry["host"])
        counts = self._events.setdefault(host, {})
        counts[entry["kind"]] = counts.get(entry["kind"], 0) + 1
        records = entry.get("records") or []
        if records or entry.get("unreachable") or (host in self._targeted and host not in self._reported):
            self.analysis = self.published = None    # new records, or a host without records whose missing-host record changes
        if records and not log:     # read back: every record checked and completed here, once
            started, name = entry.get("started"), entry.get("name")
            got = [normalize(r, host, started, name, parsed_json=parsed_json) for r in records]
            self._by_key.setdefault((host, str(entry["task"])), []).extend(got)
            self._reported.update(r["host"] for r in got)
        if entry.get("unreachable") and host not in self._unreachable:
            self._unreachable[host] = entry["unreachable"] if log else normalize(entry["unreachable"], host)
            self._reported.add(host)

    def _log(self, entry):
        try:
            text = _STREAM_ENCODE(entry)
        except (TypeError, ValueError):     # a mapping key JSON cannot hold, a cycle: plain values first
            text = _STREAM_ENCODE(plain(entry))
        line = (text + "\n").encode("utf-8")
        if self._lines is not None:
            self._lines.append(line)
        if self._stream is not None:
            try:
                written = os.write(self._stream, line)     # one write of an O_APPEND fd: lines never interleave
                if written != len(line):
                    raise OSError("short write (%d of %d bytes)" % (written, len(line)))
            except OSError as exc:
                # the stream no longer holds every record: stop using it (the records stay in memory)
                self.stream_error = "cannot write the record stream %s: %s" % (self.stream_path, exc)
                self.close_stream()
        if self.observer is not None and entry["e"] == "task":
            self.observer(entry)

    def release_records(self):
        """Drop the in-memory copy of the records (once the stream has been read back whole, at the end
        of the run: the report is built from that copy, and a fleet's records are hundreds of MB)."""
        self._by_key = {}
        if self._lines is not None:
            self._lines = []

    def update_run(self, **fields):
        """Add run metadata learnt as the run goes (its playbooks, the inventory's size), through the stream when open:
        a report published by the run_summary step (acceptance_fail_on) has the metadata the callback's would."""
        self._apply({"e": "run", "run": plain(fields)})

    # hosts
    def target(self, hosts):
        """Add hosts a play targets (the union over plays and serial batches)."""
        new = [str(h) for h in hosts if str(h) not in self._targeted]
        if new:
            self._apply({"e": "target", "hosts": list(dict.fromkeys(new))})

    def _task(self, host, task_uuid, task_name, kind, records=None, unreachable=None, started=None):
        entry = {"e": "task", "host": host, "task": str(task_uuid), "kind": kind}
        if task_name:
            entry["name"] = task_name
        if records:
            entry["records"] = records
            entry["started"] = started or results.utc_now()     # of the records that do not say
        if unreachable:
            entry["unreachable"] = unreachable
        self._apply(entry)

    def _admitted(self, host, task_name, records, participants, started, args=None):
        """The records a task result of ``host`` may add: each names ``host`` (or no host: then it is
        ``host``'s), or, for a run_once task (``participants``: the hosts of its play), one of those hosts or a
        Kubernetes namespace (``namespace/<name>``: k8s_preflight's records of what belongs to a namespace).

        A pairwise record whose ``peer`` is ``host`` may name the other end of that link, a host of this run.
        Every record then passes admission.Plans.refusal against what the controller planned (``args``: the task's
        own arguments as the controller templated them): a screen, pair or edge record only for a test the
        controller gave this task and host, a ``peer`` only a host of this run.

        A run_once task acts for every host of its play (as Ansible applies a run_once result to all of
        them): a multi-node run's record names them in ``params.hosts``. A record that names any other host
        (an outsider, or a fellow host of the run from a task that does not act for it), or that admission refuses,
        becomes an ``error`` record of ``host`` saying which host it named and why it was refused: one node, or a
        module, never adds records, or hosts, for others.
        """
        allowed = set(participants or ())
        on_behalf = [str(h) for h in participants] if len(allowed) > 1 else None
        out = []
        for rec in records:
            named = rec.get("host")
            why = None
            if isinstance(named, str) and named and named != host and named not in allowed \
                    and not (allowed and NAMESPACE_HOST_RE.match(named)) and not self._edge_of(host, named, rec):
                why = self._why_not_host(named)
            elif isinstance(rec, dict):
                why = self.plans.refusal(host, rec, args, self._targeted, participants)
                if why is None and on_behalf:
                    params = rec.get("params")
                    if params is None or (isinstance(params, dict) and not params.get("hosts")):
                        rec = dict(rec, params=dict(params or {}, hosts=on_behalf))
            if why is not None:
                rec = self._refused(host, task_name, rec, named if isinstance(named, str) and named else host,
                                    started, why)
            out.append(rec)
        return out

    def _edge_of(self, host, named, rec):
        """A pairwise record of a link ``host`` is one end of (its ``peer``), named for the other end, a host of this
        run: the sweep's record of the pair a dead or silent client never measured (admission then holds it to the
        sender's schedule). A link's records count toward no host by themselves: attribution judges them over the
        whole matrix."""
        return rec.get("peer") == host and named in self._targeted

    def _why_not_host(self, named):
        if named in self._targeted:
            return "it is another host of this run, and only a run_once task returns records for the hosts of its play"
        return "it is not a host this run targets"

    def _refused(self, host, task_name, rec, named, started, why):
        check = rec.get("check") if isinstance(rec, dict) and isinstance(rec.get("check"), str) else None
        return results.error(
            TASK_CHECK, shorten("task %r on %s returned a %s record for host %r, refused: %s" % (
                task_name or "?", host, check or "(no check)", named[:200], why)),
            host=host, target=task_name or None, raw=json.dumps(rec, sort_keys=True, default=str),
            params={"task": task_name, "refused_host": named[:200], "refused_check": check}, started=started)

    # events
    def task_ok(self, host, task_uuid, task_name, result, started=None, participants=None, args=None, action=None):
        """``args``/``action``: the task's own arguments and action as the controller templated them (what it
        planned: admission.Plans), never what the host returned."""
        self.plans.learn(host, action, args)
        records, _failed = extract_records(result, host, started, task_name, normalized=False)
        self._task(host, task_uuid, task_name, "ok",
                   self._admitted(host, task_name, records, participants, started, args), started=started)

    def task_failed(self, host, task_uuid, task_name, result, ignore_errors=False, started=None, participants=None,
                    args=None, action=None):
        """A failed task keeps its records; without records it is an ``env.task`` error
        (unless ignore_errors: then it is not a host error). The run_summary step that fails the run on its verdict
        (its result carries VERDICT_FAILED, acceptance_fail_on) is no host's error: it adds nothing."""
        if isinstance(result, dict) and result.get(VERDICT_FAILED):
            self._task(host, task_uuid, task_name, "ok", [], started=started)
            return
        self.plans.learn(host, action, args)
        records, failed_items = extract_records(result, host, started, task_name, normalized=False)
        records = self._admitted(host, task_name, records, participants, started, args)
        if ignore_errors:
            self._task(host, task_uuid, task_name, "ignored", records, started=started)
            return
        if not records:
            msg = failure_message(result)
            if failed_items:
                msg = failed_items_message(failed_items)
            records = [results.error(
                TASK_CHECK, shorten("task %r failed: %s" % (task_name, msg)), host=host,
                target=task_name or None, raw=raw_text(result), params={"task": task_name}, started=started)]
        elif failed_items:
            records = records + [results.error(
                TASK_CHECK, shorten("task %r: %s (without results)" % (task_name, failed_items_message(failed_items))),
                host=host, target=task_name or None, raw=raw_text(failed_items[0]),
                params={"task": task_name}, started=started)]
        self._task(host, task_uuid, task_name, "failed", records, started=started)

    def task_unreachable(self, host, task_uuid, task_name, result, started=None):
        record = None
        if host not in self._unreachable:
            record = results.error(
                UNREACHABLE_CHECK, shorten("host unreachable at task %r: %s" % (task_name, failure_message(result))),
                host=host, raw=raw_text(result), params={"task": task_name}, started=started)
        self._task(host, task_uuid, task_name, "unreachable", unreachable=record)

    def task_skipped(self, host, task_uuid, task_name, result=None, participants=None, args=None):
        records = []
        if isinstance(result, dict):     # a loop with every item skipped may still carry records
            records, _failed = extract_records(result, host, None, task_name, normalized=False)
            records = self._admitted(host, task_name, records, participants, None, args)
        self._task(host, task_uuid, task_name, "skipped", records)

    # out
    def records(self, interrupted=None):
        """Every record, in a stable order, plus the records that account for every host (``interrupted``: where an
        interrupted run stopped, {reason, task, play}: what a host without records was doing)."""
        if self._lines is not None:
            return self.read_back().records(interrupted)
        out = []
        for (_host, _uuid), recs in self._by_key.items():
            out.extend(recs)
        out.extend(self._unreachable.values())
        out.extend(missing_host_records(out, self.hosts_targeted, self.missing_status, self._events, interrupted))
        return out


def _participants(records):
    """host -> the records of multi-node runs it took part in without owning them (``params.hosts``)."""
    out = {}
    for rec in records:
        hosts = (rec.get("params") or {}).get("hosts") if isinstance(rec.get("params"), dict) else None
        if isinstance(hosts, list):
            for host in hosts:
                if isinstance(host, str) and host != rec.get("host"):
                    out.setdefault(host, []).append(rec)
    return out


def _screened(records):
    """host -> the group screen's records of the tests it was in without launching them."""
    out = {}
    for rec in records:
        test = group_screen.screen_of(rec) if group_screen.is_screen_record(rec) else None
        for host in (test or {}).get("hosts") or []:
            if host != rec.get("host"):
                out.setdefault(host, []).append(rec)
    return out


def _screened_record(host, runs):
    """The env.coverage record of a host that only took part in screen tests others launched."""
    checks = sorted(set(str(r.get("check")) for r in runs))
    launchers = sorted(set(str(r.get("host")) for r in runs))
    judged = ", ".join(c + ".screen" for c in checks)
    reason = shorten("no record of its own: took part in %d test(s) of the group screen launched from %s (%s); its "
                     "verdict is the screen analysis's (%s)" % (len(runs), ", ".join(launchers), ", ".join(checks), judged))
    return results.make(MISSING_CHECK, "skip", reason=reason, host=host, facts={"launchers": launchers})


def missing_host_records(records, hosts, status="error", events=None, interrupted=None):
    """A record for each host of ``hosts`` that has no record at all.

    A host named in the ``params.hosts`` of another host's record (a multi-node run launched
    elsewhere) is accounted for by an ``env.coverage`` record that says so: ``pass`` when every
    such run passed, ``skip`` when they all skipped, else ``warn`` (a failing collective does not
    say which of its hosts is bad). A host of the group screen's tests (group_screen.screen_of) that
    has no record of its own gets a ``skip`` one that says so: its verdict is the screen analysis's
    ``<check>.screen`` record. Any other host's record says which tasks ran on it (``events``: {host: {"ok": n, ...}})
    and, in an interrupted run (``interrupted``: {reason, task, play}), where the run stopped.
    """
    seen = set(r.get("host") for r in records)
    took_part = _participants(records)
    tested = _screened(records)
    out = []
    for host in hosts or []:
        if host in seen:
            continue
        screened = tested.get(host)
        if screened and not took_part.get(host):
            out.append(_screened_record(host, screened))
            seen.add(host)
            continue
        runs = took_part.get(host)
        if runs:
            statuses = set(r.get("status") for r in runs)
            derived = "pass" if statuses == {"pass"} else ("skip" if statuses == {"skip"} else "warn")
            names = ", ".join(sorted(set("%s (%s)" % (r.get("check"), r.get("status")) for r in runs)))
            launchers = ", ".join(sorted(set(str(r.get("host")) for r in runs)))
            reason = shorten("no record of its own: took part in the multi-node run(s) launched from %s: %s; "
                             "their records belong to the launcher" % (launchers, names))
            out.append(results.make(MISSING_CHECK, derived, reason=reason, host=host,
                                    facts={"launchers": sorted(set(str(r.get("host")) for r in runs))}))
            seen.add(host)
            continue
        out.append(_no_record(host, status, (events or {}).get(host) or {}, interrupted))
        seen.add(host)
    return out


def _no_record(host, status, counts, interrupted):
    """The env.coverage record of a host that returned no record (``counts``: its tasks by outcome)."""
    what = ", ".join("%d %s" % (n, k) for k, n in sorted(counts.items()))
    if not interrupted:
        reason = "host was targeted but no task returned a result record for it (tasks: %s)" % (what or "no task ran on it")
        return results.make(MISSING_CHECK, status, reason=reason, host=host)
    reason = shorten("interrupted (%s) during task %r of play %r, before this host returned a result record (%s)" % (
        interrupted.get("reason") or "interrupted", str(interrupted.get("task") or "(none started)"),
        str(interrupted.get("play") or "(none started)"), "tasks done on it: " + what if what else "no task done on it"))
    facts = {"interrupted": interrupted.get("reason") or "interrupted", "task": interrupted.get("task"),
             "play": interrupted.get("play")}
    return results.make(MISSING_CHECK, status, reason=reason, host=host, facts=facts)


def append_config(path, **config):
    """Add analysis config (required_checks, ...) to a run's stream from another process."""
    append_entry(path, {"e": "config", "config": plain(config)})


def append_entry(path, entry):
    """Append one entry (one line, one ``write`` of an O_APPEND descriptor) to a run's stream from another process."""
    line = json.dumps(entry, sort_keys=True, separators=(",", ":"), allow_nan=False) + "\n"
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | getattr(os, "O_NOFOLLOW", 0))
    try:
        os.write(fd, line.encode("utf-8"))
    finally:
        os.close(fd)
