# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action behind the aifabric.acceptance.report module: re-analyse a results.json on the controller."""

from __future__ import annotations

import os

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.aifabric.acceptance.plugins.plugin_utils import fleet, render

ARGUMENT_SPEC = {
    "src": {"type": "path", "required": True},
    "dest": {"type": "path", "required": True},
    "formats": {"type": "list", "elements": "str", "choices": sorted(render.FORMATS),
                "default": ["json", "md", "html", "junit"]},
    "history_db": {"type": "path"},
    "drift_pins": {"type": "dict", "default": {}},
}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        src = os.path.abspath(args["src"])
        try:
            data = fleet.load_results(src)
        except (OSError, ValueError) as exc:
            raise AnsibleActionFail("cannot read %s: %s" % (src, exc)) from exc
        config = {"drift_pins": dict(args["drift_pins"] or {})}
        report = fleet.reanalyze(data, config)
        out = fleet.publish(report, dest=os.path.abspath(args["dest"]), formats=args["formats"],
                            history_db=args["history_db"], check_mode=self._task.check_mode)
        for warning in out["warnings"] + report["problems"]:
            self._display.warning("aifabric.acceptance.report: %s" % warning)
        result.update(
            changed=bool(out["changed"]),
            dest=out["dir"],
            files=out["files"],
            changed_files=out["changed"],
            summary=fleet.compact_summary(report["summary"], report_dir=out["dir"]),
            findings=report["findings"],
            run_id=report["run"].get("run_id"),
            results=[],
        )
        return result
