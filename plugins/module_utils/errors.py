# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One exception hierarchy for the collection (private).

Each exception carries the one-line message the user reads plus ``details``
(cmd, rc, stdout_tail, stderr_tail) that modules attach as separate fields.
"""

from __future__ import annotations


class AcceptanceError(Exception):
    """Base class: ``str(exc)`` is the user-facing message, ``details`` the evidence."""

    def __init__(self, message, **details):
        super().__init__(message)
        self.message = message
        self.details = details


class ParseError(AcceptanceError):
    """A tool's output could not be read; the message quotes the offending line."""


class ToolMissing(AcceptanceError):
    """A required binary is not installed; the message carries the install hint."""


class ToolTimeout(AcceptanceError):
    """A process ran past its time limit and was killed."""


class Interrupted(AcceptanceError):
    """SIGTERM/SIGINT/SIGHUP while a module runs: raised (by proc.interrupt_guard, the only place) so that cleanup
    (finally blocks) runs. ``signum``: the signal's number."""

    def __init__(self, message, signum=None, **details):
        super().__init__(message, **details)
        self.signum = signum
