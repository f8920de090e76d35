# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action behind the aifabric.acceptance.run_summary module: the verdict of the running playbook."""

from __future__ import annotations

import datetime
import os

from ansible import __version__ as ANSIBLE_VERSION
from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.aifabric.acceptance.plugins.plugin_utils import attribution, fleet, render

REQUIRED_VAR = "aifabric_required_checks"

ARGUMENT_SPEC = {
    "required_checks": {"type": "dict", "default": {}},
    "max_hosts": {"type": "int", "default": 20},
    "confirm_hosts": {"type": "list", "elements": "str"},
    "confirm_per_suspect": {"type": "int", "default": 2},
    "confirm_check": {"type": "str"},
    "fail_on": {"type": "str", "default": "never", "choices": ["fail", "warn", "never"]},
}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True

    def _host_required(self, task_vars, hosts):
        """The aifabric_required_checks host variable of every targeted host that sets it."""
        hostvars = task_vars.get("hostvars") or {}
        out = {}
        for host in hosts:
            try:
                value = hostvars[host].get(REQUIRED_VAR) if host in hostvars else None
            except Exception as exc:  # pylint: disable=broad-except  # an undefined template names the host
                raise AnsibleActionFail("cannot read %s of %s: %s" % (REQUIRED_VAR, host, exc)) from exc
            if value:
                out[host] = value
        return out

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        task_vars = task_vars or {}
        _validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        if args["max_hosts"] < 1 or args["confirm_per_suspect"] < 1:
            raise AnsibleActionFail("max_hosts and confirm_per_suspect must be at least 1")
        try:
            path = fleet.stream_path()
            # the step runs in a worker process forked by ansible-playbook, which wrote the stream
            report, collected = fleet.run_summary(
                path, required_checks=args["required_checks"], controller_pid=os.getppid(),
                host_required=lambda hosts: self._host_required(task_vars, hosts))
        except fleet.RunSummaryError as exc:
            raise AnsibleActionFail(str(exc)) from exc
        except ValueError as exc:
            raise AnsibleActionFail("run_summary: %s" % exc) from exc
        except OSError as exc:
            raise AnsibleActionFail("run_summary: cannot read the run's record stream: %s" % exc) from exc
        run = collected.run
        run_dir = None
        if not run.get("check_mode") and run.get("reports_root"):
            run_dir = os.path.join(run["reports_root"], render.run_dir_name(run))
        for problem in report["problems"]:
            self._display.warning("aifabric.acceptance.run_summary: %s" % problem)
        result.update(
            changed=False,
            run_id=run.get("run_id"),
            run_dir=run_dir,
            report_dir=run_dir,     # its name before 2.0.0, deprecated (removed in 3.0.0)
            required_checks=collected.config.get("required_checks") or {},
            summary=fleet.compact_summary(report["summary"], max_hosts=args["max_hosts"], run_dir=run_dir),
            hosts={h["host"]: h["status"] for h in report["summary"]["hosts"]},
            results=[],
        )
        if args["confirm_hosts"] is not None:     # from the report's own attribution: the analyses ran once
            result["confirmation_rounds"] = attribution.plan_confirmation(
                report["findings"], args["confirm_hosts"], per_suspect=args["confirm_per_suspect"],
                check=args["confirm_check"], records=report["records"])
        self._fail_on_verdict(result, path, collected, report, args["fail_on"])
        return result

    @staticmethod
    def _fail_on_verdict(result, path, collected, report, fail_on):
        """Publish the report (history + files, as the callback would), then fail the step when a host's verdict
        is at or beyond ``fail_on``: ansible-playbook exits non-zero and AWX shows the failed task."""
        failing = fleet.failing_hosts(report["summary"], fail_on)
        if not failing or collected.run.get("check_mode"):
            return
        ended = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        try:
            out = fleet.publish_verdict(path, collected, report, ended, ansible_version=ANSIBLE_VERSION)
        except Exception as exc:  # pylint: disable=broad-except  # the run still fails, saying why no report
            raise AnsibleActionFail("run_summary: the verdict fails the run (acceptance_fail_on=%s: %s), and its "
                                    "report could not be written: %s" % (fail_on, ", ".join(failing), exc)) from exc
        checks = dict((h["host"], h["checks"]) for h in report["summary"]["hosts"])
        listed = "; ".join("%s (%s)" % (h, ", ".join(checks.get(h) or [])) for h in failing[:10])
        result.update(
            failed=True, run_dir=out["dir"], report_dir=out["dir"], failing_hosts=failing,
            msg="acceptance verdict %s: %d of %d hosts at or beyond '%s' (acceptance_fail_on=%s): %s%s. Report: %s" % (
                report["summary"]["worst_status"].upper(), len(failing), report["summary"]["hosts_total"],
                fail_on, fail_on, listed, " and %d more" % (len(failing) - 10) if len(failing) > 10 else "",
                out["dir"]))
        result[fleet.VERDICT_FAILED] = True
