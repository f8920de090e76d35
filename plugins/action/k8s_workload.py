# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action behind aifabric.acceptance.k8s_workload: hand the module its task's time limit.

Ansible abandons a task at its ``timeout:`` (the task's, its block's, role's or play's, else ansible.cfg's
``task_timeout``) but does not stop the module it started: a Kubernetes module abandoned mid-wait would run on,
orphaned, holding every node's GPUs while the next stage's pods wait. So the module learns the limit Ansible will
apply - ``self._task.timeout``, whatever set it - in its internal option ``_task_timeout_s``, and cuts its waits to
end, its objects removed, before it (k8s_run.reserve_s). The k8s role's tasks set their ``timeout:`` from the plan
(filter aifabric.acceptance.k8s_task_timeout), so there nothing is cut.
"""

from __future__ import annotations

from ansible.plugins.action import ActionBase


class ActionModule(ActionBase):

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        args = dict(self._task.args)
        args.pop("_task_timeout_s", None)       # set here alone
        limit = int(self._task.timeout or 0)
        if limit > 0:
            args["_task_timeout_s"] = limit
        result.update(self._execute_module(module_name="aifabric.acceptance.k8s_workload", module_args=args,
                                           task_vars=task_vars))
        return result
