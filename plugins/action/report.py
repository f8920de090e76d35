# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action behind the aifabric.acceptance.report module: re-analyse a results.json on the controller."""

from __future__ import annotations

import os

from ansible.errors import AnsibleActionFail

from ansible_collections.aifabric.acceptance.plugins.module_utils import argspec, statedir
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import baseline, compare, exports, fleet, history, render
from ansible_collections.aifabric.acceptance.plugins.plugin_utils.controller_action import ControllerAction

ARGUMENT_SPEC = {
    "src": {"type": "path", "required": True},
    "dest": dict({"type": "path", "required": True}, **argspec.renamed("report_dir")),
    "formats": {"type": "list", "elements": "str", "choices": sorted(render.FORMATS),
                "default": ["json", "md", "html", "junit", "ctrf"]},
    "history_db": {"type": "str"},
    "drift_pins": {"type": "dict", "default": {}},
    "compare_with": {"type": "str"},
    "compare_margin_pct": {"type": "float", "default": compare.DEFAULT_MARGIN_PCT},
    "baseline": {"type": "dict", "options": {
        "name": {"type": "str", "required": True},
        "min_pct": {"type": "float", "default": baseline.DEFAULT_MIN_PCT},
        "status": {"type": "str", "choices": ["fail", "warn"], "default": "fail"},
    }},
    "prometheus_dir": {"type": "path"},
    "prometheus_per_host": {"type": "bool", "default": False},
}
# the findings the task result carries (all of them are in results.json, summary.md and report.html): a 1000-host
# report has thousands, and Ansible copies a task result through its worker queue, callbacks and registered
# variable (8,000 findings cost the report playbook 0.7 s at 1000 hosts)
FINDINGS_RETURNED = 100


class ActionModule(ControllerAction):
    ARGUMENT_SPEC = ARGUMENT_SPEC

    def act(self, args, task_vars, result):
        with fleet.no_cyclic_gc():      # read, analyse and write without the collector's walks (fleet.no_cyclic_gc)
            return self._report(args, result)

    def _report(self, args, result):
        src = os.path.abspath(args["src"])
        try:
            data, plain_json = fleet.read_results(src)
        except (OSError, ValueError) as exc:
            raise AnsibleActionFail("cannot read %s: %s" % (src, exc)) from exc
        history_db = args["history_db"] or None
        config = {"drift_pins": dict(args["drift_pins"] or {})}
        if args["baseline"]:
            config["baseline"] = dict(args["baseline"])
        try:
            compare.check_margin(args["compare_margin_pct"])
            config = baseline.resolve_config(config, history_db)
        except ValueError as exc:
            raise AnsibleActionFail(str(exc)) from exc
        report = fleet.reanalyze(data, config, plain_json=plain_json)
        del data        # the input's records are the report's (plain_json); its earlier analysis is freed here
        if args["compare_with"]:
            try:
                report["comparison"] = compare.compare_with(
                    report["records"], args["compare_with"], history_db, args["compare_margin_pct"],
                    load_results=fleet.load_results)
            except (OSError, ValueError, history.HistoryError) as exc:
                raise AnsibleActionFail("compare_with: %s" % exc) from exc
        else:   # fleet.publish compares with the previous run of each host, with this margin
            report[compare.MARGIN_KEY] = args["compare_margin_pct"]
        try:
            out = fleet.publish(report, dest=os.path.abspath(args["dest"]), formats=args["formats"],
                                history_db=history_db, check_mode=self._task.check_mode)
        except statedir.StateError as exc:
            raise AnsibleActionFail("cannot write the report into %s: %s" % (args["dest"], exc)) from exc
        prometheus = []
        if args["prometheus_dir"] and not self._task.check_mode:
            try:
                prometheus = exports.write_prometheus(report, os.path.abspath(args["prometheus_dir"]),
                                                      per_host=args["prometheus_per_host"])
            except (OSError, statedir.StateError) as exc:
                raise AnsibleActionFail("cannot write the Prometheus textfile(s): %s" % exc) from exc
        for warning in out["warnings"] + report["problems"]:
            self._display.warning("aifabric.acceptance.report: %s" % warning)
        comparison = report.get("comparison")
        result.update(
            changed=bool(out["changed"]) or bool(prometheus),
            dest=out["dir"],
            files=out["files"],
            changed_files=out["changed"],
            summary=fleet.compact_summary(report["summary"], run_dir=out["dir"]),
            verdict=report["summary"]["verdict"],
            report=out["files"].get("html") or out["files"].get("md") or out["dir"],
            comparison=None if comparison is None else {
                "against": comparison["against"], "text": compare.against_text(comparison),
                "margin_pct": comparison["margin_pct"],
                "totals": comparison["totals"], "hosts": dict(list(comparison["hosts"].items())[:50])},
            prometheus_files=prometheus,
            findings=report["findings"][:FINDINGS_RETURNED],
            findings_total=len(report["findings"]),
            run_id=report["run"].get("run_id"),
            results=[],
        )
        return result
