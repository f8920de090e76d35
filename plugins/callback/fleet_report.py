# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
name: fleet_report
type: aggregate
short_description: Fold every result record of a playbook run into one fleet report with history
version_added: 1.0.0
author:
  - aifabric.acceptance contributors (@aifabric)
description:
  - Collects the C(results) list (the result records) of every task on every host, turns failed and
    unreachable hosts into C(error) records, and accounts for every targeted host, so the number of hosts
    in the report always equals the number of hosts the plays targeted.
  - A record names the host whose task returned it (a record without C(host) is that host's). Only a C(run_once)
    task may return records for the other hosts of its play (a multi-node launch; the Kubernetes playbooks' steps),
    or, from such a task, for a Kubernetes namespace (C(namespace/<name>), M(aifabric.acceptance.k8s_preflight)).
    A record naming any other host (outside the inventory, or another host of the run) is replaced by an
    C(env.task) C(error) record of the host that returned it, naming the refused host and why.
  - A record speaks only for what the controller planned (the task's own arguments, as the controller templated
    them) - a group-screen record only from the task given that screen test, a pairwise record only for a pair of
    the sender's sweep schedule or import task, with a C(peer) that is a host of this run; any other becomes an
    C(env.task) C(error) record of the host that returned it (see the collection's C(docs/security.md)).
  - Runs the fleet analyses (fleet drift of driver, CUDA, NCCL, package and firmware versions, and any
    analysis later added to the pipeline), appends the run to a SQLite history store and shows, per check,
    the change since the previous run of the same host.
  - Writes one directory per run, C(<reports_root>/<UTC timestamp>-<run id>/), with C(results.json),
    C(summary.md), C(junit.xml), C(ctrf.json) and a self-contained C(report.html), points C(<reports_root>/latest) at it,
    and prints a short summary at the end of the play.
  - Appends every record to the run's record stream as it arrives, as the task returned it (a JSON-lines file in a private
    C(mkdtemp) directory, registered in the run store under the ansible-playbook process id, where the run's steps
    find it; removed at the end of the run; see the collection's C(docs/report.md)).
    The M(aifabric.acceptance.run_summary) step reads the same stream and runs the same analysis, so the
    C(set_stats) summary it returns (AWX publishes C(set_stats) data before aggregate callbacks run) gives
    every host the same verdict as the report; the required checks it stores there apply to the report too.
  - >-
    While the play runs, prints one progress line per stage of each task at normal verbosity (nothing more at
    C(-v)), once the task has finished on every host still in the play, built from the entries it streams, e.g.
    C(aifabric env: 8/8 hosts, 7 pass, 1 error (node3: host unreachable: ...)) or
    C(aifabric nccl all_reduce: 2/2 hosts, 2 pass, busbw_max_gbyte_s 345.688). A stage is a check with a headline
    metric (each collective, GEMM dtype, perftest test), else a check family (see the collection's C(docs/report.md)).
  - A run that targeted no host writes no report and no history row. In check mode nothing is written
    (no report directory, no C(latest), no history row); the summary is printed.
  - An interrupted run (Ctrl-C, C(SIGTERM), or one that stops on an error) is written with the records
    collected so far, marked C(run.interrupted). The run directory is written into a hidden temporary
    directory and renamed into place, the history row is stored with it, C(latest) is updated last, and
    C(SIGINT)/C(SIGTERM) are held meanwhile, so a run directory is complete or absent.
  - A play with the variable C(fleet_report_disabled=true) in its C(vars), or the same given as an extra
    variable (C(-e fleet_report_disabled=true)), turns the report off for the whole playbook (the
    C(aifabric.acceptance.report) playbook does, as it writes a report itself).
  - >-
    A run that measures nothing by design says so with an C(ansible.builtin.set_stats) task whose data has the key
    C(aifabric_report_skip) (the reason, a string): from that task on, the callback writes no report and no history
    row for the run, and prints C(FLEET REPORT: <reason>: no report and no history row written) instead of a report
    in which every node would be an error. The Kubernetes render-only run (C(playbooks/k8s_acceptance.yml)
    C(-e k8s_render_dir=DIR), which writes manifests) does this first. A module in render mode
    (C(aifabric.acceptance.k8s_device_plugin) with C(render_dir)) returns the same key in its result: when no task
    of the run returned a record, failed or found its host unreachable, the run is one that measures nothing.
  - The hosts of a play with the variable C(fleet_report_targets=false) in its C(vars) do not count as
    targeted hosts (the playbooks' final C(localhost) play that publishes C(set_stats) sets it), so an
    implicit C(localhost) never shows up in the report as a host without records.
  - Errors inside the callback never stop the play; they are shown as warnings and the report is still
    written where possible.
  - A report that cannot be written (a full disk) is an error, not a warning. The history row is stored only
    with the report (both or neither), the record stream is kept and its path printed (the
    C(aifabric.acceptance.report) playbook writes the report from it, C(-e report_input=<path>)), and
    C(ansible-playbook) exits 1, or 3/5/7 with its own bits for failed (2) and unreachable (4) hosts (raised after
    the other callbacks' play recap; aggregate callbacks after this one get no C(v2_playbook_on_stats)). A
    history store that cannot be written is a warning; the report is then written without history.
requirements:
  - enable it with O(ansible.builtin.default#callback:callbacks_enabled) (C(ANSIBLE_CALLBACKS_ENABLED=aifabric.acceptance.fleet_report)).
options:
  reports_root:
    description:
      - Directory that receives one sub-directory per run (the run's directory, C(run_dir) in the results).
      - Before 2.0.0 named C(output_dir) (ini key) and C(AIFABRIC_REPORT_DIR) (env); both still work, with a
        deprecation warning, until 3.0.0.
    type: path
    default: ./reports
    env:
      - name: AIFABRIC_REPORTS_ROOT
      - name: AIFABRIC_REPORT_DIR
        deprecated:
          why: the reports root and a run's directory are named apart
          version: 3.0.0
          collection_name: aifabric.acceptance
          alternatives: AIFABRIC_REPORTS_ROOT
    ini:
      - section: callback_fleet_report
        key: reports_root
      - section: callback_fleet_report
        key: output_dir
        deprecated:
          why: the reports root and a run's directory are named apart
          version: 3.0.0
          collection_name: aifabric.acceptance
          alternatives: reports_root
  formats:
    description: Report files to write.
    type: list
    elements: str
    default: [json, md, html, junit, ctrf]
    env:
      - name: AIFABRIC_REPORT_FORMATS
    ini:
      - section: callback_fleet_report
        key: formats
  history:
    description: Append the run to the history store and show changes since the previous run.
    type: bool
    default: true
    env:
      - name: AIFABRIC_HISTORY
    ini:
      - section: callback_fleet_report
        key: history
  history_db:
    description:
      - SQLite file of the history store (WAL mode; two runs may write at once). Keep it on a local
        filesystem, not NFS.
      - Or a PostgreSQL URL, V(postgresql://user@host/dbname) (needs the Python package C(psycopg) 3), the
        shared store for AWX, where a SQLite file vanishes with the execution environment.
      - Defaults to C(<reports_root>/history.sqlite).
      - After each run C(<reports_root>/index.html) lists every run of the store (see the collection's
        C(docs/history.md) for retention and the Prometheus export).
    type: str
    env:
      - name: AIFABRIC_HISTORY_DB
    ini:
      - section: callback_fleet_report
        key: history_db
  fail_on_missing_host:
    description:
      - A targeted host for which no task returned any record gets an C(error) record (C(env.coverage)).
      - Set to V(false) to give it a C(skip) record instead (plays that deliberately skip hosts).
    type: bool
    default: true
    env:
      - name: AIFABRIC_REPORT_FAIL_ON_MISSING_HOST
    ini:
      - section: callback_fleet_report
        key: fail_on_missing_host
  drift_pins:
    description:
      - 'Pinned values for fleet drift, as a JSON object C({"fact_or_subject": "value"}).'
      - A key is a fact name (V(driver_version), applies to every check reporting it) or a subject
        C(check[target].fact) (V(env.package[/usr/bin/python3:torch].version)). A host with another value gets a
        C(fail) record; without a pin, hosts that differ from the fleet majority get a C(warn) record.
    type: str
    default: "{}"
    env:
      - name: AIFABRIC_DRIFT_PINS
    ini:
      - section: callback_fleet_report
        key: drift_pins
"""

import atexit
import datetime
import json
import os
import signal
import traceback
from collections.abc import Mapping

from ansible import context
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.callback import CallbackBase
from ansible.release import __version__ as ANSIBLE_VERSION

from ansible_collections.aifabric.acceptance.plugins.module_utils import proc
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import fleet, history_index, progress, render, run_store

EXIT_REPORT_LOST = 1    # in ansible-playbook's exit status when the run's report could not be written
SKIP_KEY = "aifabric_report_skip"   # set_stats data: why this run has nothing to report (it measures nothing)


def _now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _exit_status(stats):
    """ansible-playbook's exit status of a run whose report is lost: 1, plus its own bits for failed (2) and
    unreachable (4) hosts."""
    status = EXIT_REPORT_LOST
    if getattr(stats, "failures", None):
        status |= 2
    if getattr(stats, "dark", None):
        status |= 4
    return status


def _planned(result):
    """(action, args) of the task as the controller templated them for this host (the worker's copy of the task:
    ``task_fields``), never what the host returned: what the controller planned (plugin_utils/admission.py)."""
    fields = _public(result, "task_fields")
    if not isinstance(fields, Mapping):
        return None, None
    args = fields.get("args")
    return fields.get("action"), (fleet.plain(dict(args)) if isinstance(args, Mapping) else None)


def _public(result, name):
    """result.host/.task/.result (2.19+), falling back to the old private names."""
    value = getattr(result, name, None)
    if value is None:
        value = getattr(result, "_" + name, None)
    return value


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "aifabric.acceptance.fleet_report"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, display=None):
        super().__init__(display=display)
        self.collector = fleet.Collector()
        self.progress = progress.Tally()        # one line per stage of each task, from the streamed entries
        self.collector.observer = self.progress.add
        self.linear = True                      # the play's strategy runs each task on every host before the next
        self.run_id = fleet.new_run_id()
        self.started = _now()
        self.playbooks = []
        self.inventory_host_count = None
        self.task_started = {}
        self.task_run_once = {}
        self.play_hosts = []
        self.config = {}
        self.skip_report = False
        self.nothing_measured = None    # why the run has no report (set_stats SKIP_KEY: it measures nothing)
        self.rendered_only = None       # a task's own SKIP_KEY: it measured nothing by design (render mode)
        self.measured = False           # a task returned records, failed or found its host unreachable
        self.finished = False
        self.published = False      # the report (and its history row) is written
        self.lost = None            # why the report of this run could not be written (the stream is then kept)
        self.interrupted = None
        self.stopped_by = None      # the message of the check before the run that stopped it (check_vars)
        self.in_flight = {"task": None, "play": None}   # the last task and play started: where an interrupt stops
        self.pid = os.getpid()
        self.store = run_store.RunStore(self.run_id, self.pid)     # the run's stream, found by the run's steps

    # ------------------------------------------------------------ options

    def set_options(self, task_keys=None, var_options=None, direct=None):
        try:
            super().set_options(task_keys=task_keys, var_options=var_options, direct=direct)
            reports_root = self.get_option("reports_root")
            formats = [str(f).strip() for f in self.get_option("formats") or []]
            unknown = [f for f in formats if f not in render.FORMATS]
            if unknown or not formats:
                raise ValueError("formats must be a non-empty list of %s, got %r" % (", ".join(render.FORMATS), formats))
            try:
                pins = json.loads(self.get_option("drift_pins") or "{}")
            except ValueError as exc:
                raise ValueError("drift_pins is not JSON: %s" % exc) from exc
            if not isinstance(pins, dict):
                raise ValueError("drift_pins must be a JSON object, got %r" % (pins,))
            history_db = None
            if self.get_option("history"):
                history_db = self.get_option("history_db") or "%s/history.sqlite" % reports_root.rstrip("/")
            self.config = {
                "reports_root": reports_root,
                "formats": formats,
                "history_db": history_db,
                "drift_pins": pins,
            }
            self.collector.missing_status = "error" if self.get_option("fail_on_missing_host") else "skip"
            if not self._check_mode():
                fleet.check_destinations(reports_root, history_db)    # refused now, not after the whole run
            self._open_stream()
        except Exception as exc:  # pylint: disable=broad-except  # bad configuration: disable, never break the play
            message = "aifabric.acceptance.fleet_report is disabled: bad configuration: %s" % exc
            self._display.warning(message)
            self.disabled = True
            self._store_error(message)      # the run_summary step says so and fails

    def _open_stream(self):
        """The run-scoped record stream (a private 0700 directory of the run store) that run_summary reads too."""
        if self.store.directory is not None:
            return
        try:
            path = self.store.open()
        except (OSError, run_store.statedir.StateError) as exc:
            if self.store.stream_path is None:
                raise
            # refused and said, never a silently disabled callback: the report is still written at the end
            path = self.store.stream_path
            self._display.error("aifabric.acceptance.fleet_report: the run registry is refused: %s. This run's report "
                                "is still written at its end, but its run_summary and history steps cannot find its "
                                "records (they fail saying so)." % exc, wrap_text=False)
        run = {"run_id": self.run_id, "started": self.started, "controller_pid": self.pid,
               "reports_root": os.path.abspath(self.config["reports_root"]), "formats": self.config["formats"],
               "history_db": self.config["history_db"], "check_mode": self._check_mode()}
        self.collector.open_stream(path, run=run, config={"drift_pins": self.config["drift_pins"]})
        atexit.register(self._at_exit)
        for signum in (signal.SIGINT, signal.SIGTERM):
            proc.chain_handler(signum, self._on_signal)

    def _on_signal(self, number):
        """Before the signal reaches the handler that was there: note it, and on SIGTERM write the report first
        (Ansible re-raises SIGTERM with the default action)."""
        if os.getpid() == self.pid and not self.interrupted:
            self.interrupted = signal.Signals(number).name
            if number == signal.SIGTERM:
                self._guarded_finish()

    @staticmethod
    def _check_mode():
        return bool((context.CLIARGS or {}).get("check"))

    # ------------------------------------------------------------ helpers

    def _guard(self, what, func, *args):
        """Run one event handler; a bug becomes a warning, never a failed play."""
        if self.disabled:
            return
        broken = self.collector.stream_error
        try:
            func(*args)
        except Exception as exc:  # pylint: disable=broad-except
            self._display.warning("aifabric.acceptance.fleet_report: error in %s: %s" % (what, exc))
            self._display.vvv(traceback.format_exc())
        if self.collector.stream_error and not broken:
            # the summary step of this run will fail and say why
            message = "aifabric.acceptance.fleet_report: %s; the report is written from memory at the end of " \
                "the run, but no summary can be made" % self.collector.stream_error
            self._display.warning(message)
            self._store_error(message)

    def _store_error(self, message):
        """Register why this run has no summary (its steps find it in the run store); a store that cannot be
        written is a warning (the steps then say the callback is not enabled)."""
        try:
            self.store.fail(message)
        except (OSError, run_store.statedir.StateError) as exc:
            self._display.warning("aifabric.acceptance.fleet_report: cannot write the run store: %s" % exc)
        atexit.register(self._unregister)

    def _unregister(self):
        """At exit of ansible-playbook (not of a forked worker): the run leaves the store (its stream, if any, is
        left to _cleanup)."""
        if os.getpid() == self.pid:
            self.store.close(keep_stream=True)

    @staticmethod
    def _parts(result):
        host = _public(result, "host")
        task = _public(result, "task")
        data = _public(result, "result")
        host_name = host.get_name() if host is not None else "(unknown host)"
        task_uuid = getattr(task, "_uuid", None) or id(task)
        task_name = task.get_name() if task is not None else ""
        return host_name, str(task_uuid), task_name, (data if isinstance(data, dict) else {})

    # ------------------------------------------------------------ events

    def v2_playbook_on_start(self, playbook):
        self._guard("playbook start", self._on_playbook_start, playbook)

    def _on_playbook_start(self, playbook):
        name = getattr(playbook, "_file_name", None)
        if name:
            self.playbooks.append(str(name))

    def v2_playbook_on_play_start(self, play):
        self._guard("play start", self._on_play_start, play)

    def _on_play_start(self, play):
        self._show_progress(self.progress.flush())
        self.in_flight = {"task": None, "play": play.get_name()}
        play_vars = play.get_vars() or {}
        self.play_hosts = []
        manager = play.get_variable_manager()
        strategy = str(getattr(play, "strategy", None) or "linear")
        self.linear = not strategy.endswith(("free", "host_pinned"))
        extra_vars = getattr(manager, "extra_vars", None) or {}     # -e: they override the play's vars
        disabled = extra_vars.get("fleet_report_disabled", play_vars.get("fleet_report_disabled", False))
        if boolean(disabled, strict=False):
            self.skip_report = True     # e.g. report.yml, which writes a report itself
        inventory = getattr(manager, "_inventory", None)
        self.progress.play(self._batch(play, inventory))
        if inventory is not None:
            self.inventory_host_count = len(inventory.hosts)
        if not boolean(play_vars.get("fleet_report_targets", True), strict=False):
            return                      # a bookkeeping play (the final set_stats on localhost)
        hosts = None
        if inventory is not None:
            # all hosts of the play after --limit, ignoring the serial batch restriction
            hosts = [h.name for h in inventory.get_hosts(play.hosts, ignore_restrictions=True)]
            self.inventory_host_count = len(inventory.hosts)
        else:
            magic = manager.get_vars(play=play, include_hostvars=False)
            hosts = list(magic.get("ansible_play_hosts_all") or [])
            self.inventory_host_count = len((magic.get("groups") or {}).get("all") or [])
        self.play_hosts = list(hosts)
        known = {"playbooks": list(self.playbooks), "inventory_host_count": self.inventory_host_count}
        if any(self.collector.run.get(k) != v for k, v in known.items()):
            self.collector.update_run(**known)
        self.collector.target(hosts)

    def _batch(self, play, inventory):
        """The hosts this play (serial batch) starts on, for the progress lines; None when not known."""
        try:
            if inventory is not None:
                return [h.name for h in inventory.get_hosts(play.hosts)]
            return None
        except Exception as exc:  # pylint: disable=broad-except  # progress only: never lose the targets
            self._display.vvv("aifabric.acceptance.fleet_report: hosts of the play not known: %s" % exc)
            return None

    def _task_start(self, task):
        if self.linear:     # the previous task has finished on every host
            self._show_progress(self.progress.flush())
        uuid = str(getattr(task, "_uuid", id(task)))
        self.task_started[uuid] = _now()
        self.in_flight["task"] = task.get_name()
        try:
            self.task_run_once[uuid] = boolean(getattr(task, "run_once", False) or False, strict=True)
        except TypeError:
            self.task_run_once[uuid] = False     # a templated run_once: not known here
        self.progress.start(uuid, run_once=self.task_run_once[uuid])

    def _show_progress(self, lines):
        """The progress lines of the stages that finished (normal verbosity; no more at -v)."""
        for line in lines:
            self._display.display(line)

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._guard("task start", self._task_start, task)

    def v2_playbook_on_handler_task_start(self, task):
        self._guard("handler start", self._task_start, task)

    def _participants(self, uuid):
        """A run_once task (a multi-node launch) acts for every host of its play: its records may name them
        (any other task's records name only the host that ran it; see fleet.Collector._admitted)."""
        return self.play_hosts if self.task_run_once.get(uuid) and self.play_hosts else None

    def v2_runner_on_ok(self, result):
        self._guard("task ok", self._on_ok, result)

    def _on_ok(self, result):
        host, uuid, name, data = self._parts(result)
        stats = (data.get("ansible_stats") or {}).get("data") if isinstance(data.get("ansible_stats"), dict) else None
        if isinstance(stats, dict) and stats.get(SKIP_KEY):
            self.nothing_measured = str(stats[SKIP_KEY])
        action, args = _planned(result)
        if isinstance(data.get(SKIP_KEY), str) and data[SKIP_KEY]:
            self.rendered_only = data[SKIP_KEY]     # a task that measures nothing by design (a render mode)
        if data.get("results"):
            self.measured = True
        self.collector.task_ok(host, uuid, name, data, started=self.task_started.get(uuid),
                               participants=self._participants(uuid), args=args, action=action)
        self._show_progress(self.progress.take())

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._guard("task failed", self._on_failed, result, ignore_errors)

    def _on_failed(self, result, ignore_errors):
        host, uuid, name, data = self._parts(result)
        self.measured = True
        action, args = _planned(result)
        if str(action or "").endswith("check_vars") and not ignore_errors:
            self.stopped_by = str(data.get("msg") or "the check of the inventory's variables failed")
        self.collector.task_failed(host, uuid, name, data, ignore_errors=bool(ignore_errors),
                                   started=self.task_started.get(uuid), participants=self._participants(uuid),
                                   args=args, action=action)
        self._show_progress(self.progress.take())

    def v2_runner_on_unreachable(self, result):
        self._guard("host unreachable", self._on_unreachable, result)

    def _on_unreachable(self, result):
        host, uuid, name, data = self._parts(result)
        self.measured = True
        self.collector.task_unreachable(host, uuid, name, data, started=self.task_started.get(uuid))
        self._show_progress(self.progress.take())

    def v2_runner_on_skipped(self, result):
        self._guard("task skipped", self._on_skipped, result)

    def _on_skipped(self, result):
        host, uuid, name, data = self._parts(result)
        self.collector.task_skipped(host, uuid, name, data, participants=self._participants(uuid),
                                    args=_planned(result)[1])
        self._show_progress(self.progress.take())

    def v2_playbook_on_stats(self, stats):
        if self.disabled:
            return
        self._guarded_finish(stats)
        if self.lost:
            # the run's report is lost: ansible-playbook must not exit 0 (CI, AWX). The other callbacks have
            # printed their recap already (the stdout callback comes first); later aggregate ones are skipped.
            raise SystemExit(_exit_status(stats))

    def _at_exit(self):
        """The run ended without v2_playbook_on_stats (Ctrl-C, a fatal error): keep what it measured."""
        if os.getpid() != self.pid or self.disabled or self.finished:
            return
        if not self.interrupted:
            self.interrupted = "aborted"
        try:
            self._guarded_finish()
        except KeyboardInterrupt:       # a second Ctrl-C after the report was written
            pass

    def _guarded_finish(self, stats=None):
        if self.finished:
            return
        self.finished = True
        try:
            self._show_progress(self.progress.flush())
        except Exception as exc:  # pylint: disable=broad-except
            self._display.warning("aifabric.acceptance.fleet_report: error in the progress lines: %s" % exc)
        if self.rendered_only and not self.measured:
            self.nothing_measured = self.nothing_measured or self.rendered_only
        try:
            if self.nothing_measured and not self.skip_report:
                self._display.banner("FLEET REPORT")
                self._display.display("FLEET REPORT: %s: no report and no history row written" % self.nothing_measured)
            elif not self.skip_report:
                self._write(stats)
        except Exception as exc:  # pylint: disable=broad-except
            self._display.vvv(traceback.format_exc())
            if self.published:  # the index, retention, exports: the report and its history row are written
                self._display.warning("aifabric.acceptance.fleet_report: after the report was written: %s" % exc)
            else:
                self._report_lost(exc)
        finally:
            self._cleanup()

    def _report_lost(self, exc):
        """Say loudly that this run has no report, and where its records are kept to write it later."""
        self.lost = str(exc) or type(exc).__name__
        path = self.collector.stream_path
        if path and os.path.isfile(path):
            kept = "The run's records are kept in %s%s; free the space (or fix the cause), then write its report " \
                "with: ansible-playbook aifabric.acceptance.report -e report_input=%s -e run_dir=DIR" % (
                    path, " (incomplete: %s)" % self.collector.stream_error if self.collector.stream_error else "",
                    path)
        else:
            kept = "The run's records are lost (no record stream is left)."
        self._display.error("aifabric.acceptance.fleet_report: THE REPORT OF THIS RUN COULD NOT BE WRITTEN: %s. "
                            "No report directory and no history row were stored. %s" % (self.lost, kept),
                            wrap_text=False)    # the path and the command stay whole, to copy them

    def _cleanup(self):
        self.collector.close_stream()
        self.store.close(keep_stream=bool(self.lost))      # a run without its report keeps its record stream

    def _collected(self):
        """The collector as the stream file has it (the same view run_summary had), else its lines in memory."""
        path = self.collector.stream_path
        if path and os.path.isfile(path) and not self.collector.stream_error:
            try:
                loaded = fleet.Collector.load(path)
                self.collector.release_records()    # the stream holds them all: one copy in memory, not two
                return loaded
            except OSError as exc:
                self._display.warning("aifabric.acceptance.fleet_report: cannot read %s (%s): using memory" % (path, exc))
        return self.collector.read_back()     # the same lines, kept in memory

    def _write(self, stats):
        collected = self._collected()
        if not collected.hosts_targeted:
            if self.stopped_by:
                why = ("the run stopped at its first step, the check of its variables and configuration, before any "
                       "stage (its message above says what to fix)")
            else:
                why = ("no host was targeted (the inventory has no host that --limit and the plays' host patterns "
                       "select: %d hosts in the inventory)" % (self.inventory_host_count or 0))
            self._display.warning("aifabric.acceptance.fleet_report: %s: no report and no history row written" % why)
            return
        per_host = {}
        for host in sorted(getattr(stats, "processed", {}) or {}):
            per_host[host] = stats.summarize(host)
        custom = fleet.plain(getattr(stats, "custom", {}) or {})
        check_mode = self._check_mode()
        extra = {"interrupted": bool(self.interrupted)}
        stopped = None
        if self.interrupted:
            extra["interrupt_reason"] = self.interrupted
            stopped = dict(self.in_flight, reason=self.interrupted)
            extra["interrupted_in"] = dict(self.in_flight)
        run = fleet.run_metadata(
            self.run_id, self.started, _now(), collected.hosts_targeted,
            inventory_host_count=self.inventory_host_count, playbooks=self.playbooks,
            ansible_version=ANSIBLE_VERSION, ansible_stats=per_host, set_stats=custom,
            check_mode=check_mode, **extra)
        config = dict(collected.config)
        config["drift_pins"] = self.config["drift_pins"]
        run["required_checks"] = fleet.plain(config.get("required_checks") or {})
        # a run_summary step's analysis of the same records and config is taken, not made again
        report = fleet.build_report(collected.records(stopped), run, config, prior=collected.analysis)
        report["problems"].extend(collected.problems)
        self._display.banner("FLEET REPORT (INTERRUPTED: the records measured so far)" if self.interrupted
                             else "FLEET REPORT")
        if check_mode:
            for warning in report["problems"]:
                self._display.warning("aifabric.acceptance.fleet_report: %s" % warning)
            for line in fleet.console_lines(report["summary"]):
                self._display.display(line)
            self._display.display("  check mode: no report, no history row written")
            return
        if collected.published:     # the run_summary step published this report before failing the run on it
            self.published = True
            self._display.display("  the report was written by the run_summary step (acceptance_fail_on)")
            shown = collected.published.get("dir")
            for line in fleet.console_lines(report["summary"], shown):
                self._display.display(line)
            history_index.after_run(report, self.config["reports_root"], self.config["history_db"],
                                    show=self._display.display, warn=self._display.warning)
            return
        try:
            out = fleet.publish(report, reports_root=self.config["reports_root"], formats=self.config["formats"],
                                history_db=self.config["history_db"])
        except Exception:
            for line in fleet.console_lines(report["summary"]):    # the verdict, though no file holds it
                self._display.display(line)
            raise
        self.published = True
        for warning in out["warnings"] + report["problems"]:
            self._display.warning("aifabric.acceptance.fleet_report: %s" % warning)
        shown = out["files"].get("html") or out["files"].get("md") or out["dir"]
        for line in fleet.console_lines(report["summary"], shown):
            self._display.display(line)
        history_index.after_run(report, self.config["reports_root"], self.config["history_db"],
                                show=self._display.display, warn=self._display.warning)   # index, retention, exports
