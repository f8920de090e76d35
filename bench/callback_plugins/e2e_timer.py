# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Bench-only callback (bench/e2e_model.py): the wall-clock time at which each play and task starts, and the end of
the run, one JSON line each, appended to $AIFABRIC_E2E_TIMER_LOG. Not part of the collection."""

from __future__ import annotations

DOCUMENTATION = """
name: e2e_timer
type: aggregate
short_description: Play and task start times for bench/e2e_model.py
description: Appends one JSON line per play start, task start and the end of the run to $AIFABRIC_E2E_TIMER_LOG.
requirements: [enabled in ANSIBLE_CALLBACKS_ENABLED]
"""

import json
import os
import time

from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "e2e_timer"
    CALLBACK_NEEDS_ENABLED = True

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._path = os.environ.get("AIFABRIC_E2E_TIMER_LOG")
        self._play = None

    def _write(self, **event):
        if not self._path:
            return
        event["time"] = time.time()
        with open(self._path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(event) + "\n")

    def v2_playbook_on_play_start(self, play):
        self._play = play.get_name()
        self._write(kind="play", play=self._play)

    def v2_playbook_on_task_start(self, task, is_conditional):
        self._write(kind="task", play=self._play, task=task.get_name())

    def v2_playbook_on_handler_task_start(self, task):
        self._write(kind="task", play=self._play, task=task.get_name())

    def v2_playbook_on_stats(self, stats):
        self._write(kind="end", play=self._play)
