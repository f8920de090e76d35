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
  - Runs the fleet analyses (fleet drift of driver, CUDA, NCCL, package and firmware versions, and any
    analysis later added to the pipeline), appends the run to a SQLite history store and shows, per check,
    the change since the previous run of the same host.
  - Writes one directory per run, C(<output_dir>/<UTC timestamp>-<run id>/), with C(results.json),
    C(summary.md), C(junit.xml) and a self-contained C(report.html), points C(<output_dir>/latest) at it,
    and prints a short summary at the end of the play.
  - This callback cannot feed AWX artifacts (AWX publishes C(set_stats) data before aggregate callbacks
    run); end playbooks with a C(run_once) M(ansible.builtin.set_stats) task fed by the
    P(aifabric.acceptance.fleet_summary#filter) filter, which uses the same code.
  - A play with the variable C(fleet_report_disabled=true) in its C(vars) turns the report off for the
    whole playbook (the C(aifabric.acceptance.report) playbook does, as it writes a report itself).
  - The hosts of a play with the variable C(fleet_report_targets=false) in its C(vars) do not count as
    targeted hosts (the playbooks' final C(localhost) play that publishes C(set_stats) sets it), so an
    implicit C(localhost) never shows up in the report as a host without records.
  - Errors inside the callback never stop the play; they are shown as warnings and the report is still
    written where possible.
requirements:
  - enable it with O(ansible.builtin.default#callback:callbacks_enabled) (C(ANSIBLE_CALLBACKS_ENABLED=aifabric.acceptance.fleet_report)).
options:
  output_dir:
    description: Directory that receives one sub-directory per run.
    type: path
    default: ./reports
    env:
      - name: AIFABRIC_REPORT_DIR
    ini:
      - section: callback_fleet_report
        key: output_dir
  formats:
    description: Report files to write.
    type: list
    elements: str
    default: [json, md, html, junit]
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
      - Defaults to C(<output_dir>/history.sqlite).
    type: path
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
        C(check[target].fact) (V(env.package[torch].version)). A host with another value gets a C(fail)
        record; without a pin, hosts that differ from the fleet majority get a C(warn) record.
    type: str
    default: "{}"
    env:
      - name: AIFABRIC_DRIFT_PINS
    ini:
      - section: callback_fleet_report
        key: drift_pins
"""

import datetime
import json
import traceback

from ansible import context
from ansible.module_utils.parsing.convert_bool import boolean
from ansible.plugins.callback import CallbackBase
from ansible.release import __version__ as ANSIBLE_VERSION

from ansible_collections.aifabric.acceptance.plugins.plugin_utils import fleet, render


def _now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


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
        self.run_id = fleet.new_run_id()
        self.started = _now()
        self.playbooks = []
        self.inventory_host_count = None
        self.task_started = {}
        self.config = {}
        self.skip_report = False

    # ------------------------------------------------------------ options

    def set_options(self, task_keys=None, var_options=None, direct=None):
        try:
            super().set_options(task_keys=task_keys, var_options=var_options, direct=direct)
            output_dir = self.get_option("output_dir")
            formats = [str(f).strip() for f in self.get_option("formats") or []]
            unknown = [f for f in formats if f not in render.FORMATS]
            if unknown or not formats:
                raise ValueError("formats must be a non-empty list of %s, got %r" % (", ".join(render.FORMATS), formats))
            pins = json.loads(self.get_option("drift_pins") or "{}")
            if not isinstance(pins, dict):
                raise ValueError("drift_pins must be a JSON object, got %r" % (pins,))
            history_db = None
            if self.get_option("history"):
                history_db = self.get_option("history_db") or "%s/history.sqlite" % output_dir.rstrip("/")
            self.config = {
                "output_dir": output_dir,
                "formats": formats,
                "history_db": history_db,
                "drift_pins": pins,
            }
            self.collector.missing_status = "error" if self.get_option("fail_on_missing_host") else "skip"
        except Exception as exc:  # pylint: disable=broad-except  # bad configuration: disable, never break the play
            self._display.warning("aifabric.acceptance.fleet_report is disabled: bad configuration: %s" % exc)
            self.disabled = True

    # ------------------------------------------------------------ helpers

    def _guard(self, what, func, *args):
        """Run one event handler; a bug becomes a warning, never a failed play."""
        if self.disabled:
            return
        try:
            func(*args)
        except Exception as exc:  # pylint: disable=broad-except
            self._display.warning("aifabric.acceptance.fleet_report: error in %s: %s" % (what, exc))
            self._display.vvv(traceback.format_exc())

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
        play_vars = play.get_vars() or {}
        if boolean(play_vars.get("fleet_report_disabled", False), strict=False):
            self.skip_report = True     # e.g. report.yml, which writes a report itself
        if not boolean(play_vars.get("fleet_report_targets", True), strict=False):
            return                      # a bookkeeping play (the final set_stats on localhost)
        hosts = None
        manager = play.get_variable_manager()
        inventory = getattr(manager, "_inventory", None)
        if inventory is not None:
            # all hosts of the play after --limit, ignoring the serial batch restriction
            hosts = [h.name for h in inventory.get_hosts(play.hosts, ignore_restrictions=True)]
            self.inventory_host_count = len(inventory.hosts)
        else:
            magic = manager.get_vars(play=play, include_hostvars=False)
            hosts = list(magic.get("ansible_play_hosts_all") or [])
            self.inventory_host_count = len((magic.get("groups") or {}).get("all") or [])
        self.collector.target(hosts)

    def v2_playbook_on_task_start(self, task, is_conditional):
        self.task_started[str(getattr(task, "_uuid", id(task)))] = _now()

    def v2_playbook_on_handler_task_start(self, task):
        self.task_started[str(getattr(task, "_uuid", id(task)))] = _now()

    def v2_runner_on_ok(self, result):
        self._guard("task ok", self._on_ok, result)

    def _on_ok(self, result):
        host, uuid, name, data = self._parts(result)
        self.collector.task_ok(host, uuid, name, data, started=self.task_started.get(uuid))

    def v2_runner_on_failed(self, result, ignore_errors=False):
        self._guard("task failed", self._on_failed, result, ignore_errors)

    def _on_failed(self, result, ignore_errors):
        host, uuid, name, data = self._parts(result)
        self.collector.task_failed(host, uuid, name, data, ignore_errors=bool(ignore_errors),
                                   started=self.task_started.get(uuid))

    def v2_runner_on_unreachable(self, result):
        self._guard("host unreachable", self._on_unreachable, result)

    def _on_unreachable(self, result):
        host, uuid, name, data = self._parts(result)
        self.collector.task_unreachable(host, uuid, name, data, started=self.task_started.get(uuid))

    def v2_runner_on_skipped(self, result):
        self._guard("task skipped", self._on_skipped, result)

    def _on_skipped(self, result):
        host, uuid, name, data = self._parts(result)
        self.collector.task_skipped(host, uuid, name, data)

    def v2_playbook_on_stats(self, stats):
        if self.disabled or self.skip_report:
            return
        try:
            self._write(stats)
        except Exception as exc:  # pylint: disable=broad-except
            self._display.warning("aifabric.acceptance.fleet_report could not write the report: %s" % exc)
            self._display.vvv(traceback.format_exc())

    def _write(self, stats):
        per_host = {}
        for host in sorted(getattr(stats, "processed", {}) or {}):
            per_host[host] = stats.summarize(host)
        custom = fleet.plain(getattr(stats, "custom", {}) or {})
        run = fleet.run_metadata(
            self.run_id, self.started, _now(), self.collector.hosts_targeted,
            inventory_host_count=self.inventory_host_count, playbooks=self.playbooks,
            ansible_version=ANSIBLE_VERSION, ansible_stats=per_host, set_stats=custom,
            check_mode=bool((context.CLIARGS or {}).get("check")),
        )
        report = fleet.build_report(self.collector.records(), run, self.config)
        out = fleet.publish(report, output_dir=self.config["output_dir"], formats=self.config["formats"],
                            history_db=self.config["history_db"])
        for warning in out["warnings"] + report["problems"]:
            self._display.warning("aifabric.acceptance.fleet_report: %s" % warning)
        shown = out["files"].get("html") or out["files"].get("md") or out["dir"]
        self._display.banner("FLEET REPORT")
        for line in fleet.console_lines(report["summary"], shown):
            self._display.display(line)
