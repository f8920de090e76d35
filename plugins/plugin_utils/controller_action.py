# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The base of the action plugins that run wholly on the controller (history, report) (private).

``ControllerAction`` - needs no connection, transfers no file, supports check mode. Its ``run`` validates the
task's arguments against the subclass's ``ARGUMENT_SPEC`` (an invalid one fails the task, as
``validate_argument_spec`` does; an option given by a deprecated alias is mapped to its name, with Ansible's
deprecation warning) and returns ``act(args, task_vars, result)``: ``result`` is the base result (ActionBase.run)
for ``act`` to fill, ``task_vars`` a dict (empty when none came).
"""

from __future__ import annotations

from ansible.plugins.action import ActionBase


class ControllerAction(ActionBase):
    """An action plugin of the controller: its arguments validated, then ``act`` (see the module docstring)."""

    TRANSFERS_FILES = False
    _requires_connection = False
    _supports_check_mode = True
    ARGUMENT_SPEC = {}

    def run(self, tmp=None, task_vars=None):
        result = super().run(tmp, task_vars)
        del tmp
        validation, args = self.validate_argument_spec(argument_spec=self.ARGUMENT_SPEC)
        for deprecation in getattr(validation, "_deprecations", None) or ():
            self._display.deprecated(deprecation["msg"], version=deprecation.get("version"),
                                     collection_name=deprecation.get("collection_name"))
        return self.act(args, task_vars or {}, result)

    def act(self, args, task_vars, result):
        """The action's work on the validated ``args``: returns ``result``, filled."""
        raise NotImplementedError
