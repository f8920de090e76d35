# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one ``main()`` shape of the collection's modules: one error handler (private).

``run(module, name, body, fields=None, user_errors=(), interrupt_note="", interrupt_fields=None)`` calls
``body(module)``; a dict it returns is the module's result (``exit_json``); it may also exit the module itself.
Every failure leaves through ``fail_json`` with ``fields`` (e.g. ``results=[]``, ``run_id``) added:

- ``errors.Interrupted`` (proc.interrupt_guard: SIGTERM/SIGINT/SIGHUP): ``"<name> interrupted by signal N"``
  followed by ``interrupt_note`` (what was stopped, what is left to do), plus ``interrupt_fields``;
- ``errors.AcceptanceError``: its message, and its ``details`` (cmd, rc, stdout_tail, ...) as fields;
- ``user_errors`` (exception types that are bad parameters): the message is the whole answer;
- anything else is a bug: ``"<name> failed: <exception>"`` with the traceback in ``exception``.
"""

from __future__ import annotations

import traceback

from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import AcceptanceError, Interrupted


def run(module, name, body, fields=None, user_errors=(), interrupt_note="", interrupt_fields=None):
    """Run a module's body and exit the module (see the module docstring)."""
    fields = dict(fields or {})
    try:
        out = body(module)
    except Interrupted as exc:
        module.fail_json(msg="%s %s%s" % (name, exc, interrupt_note), **dict(fields, **(interrupt_fields or {})))
    except AcceptanceError as exc:
        module.fail_json(msg=str(exc), **dict(fields, **exc.details))
    except tuple(user_errors) as exc:
        module.fail_json(msg=str(exc), **fields)
    except Exception as exc:  # pylint: disable=broad-except  # a bug must still come back as a module failure
        module.fail_json(msg="%s failed: %s" % (name, exc), exception=traceback.format_exc(), **fields)
    if out is not None:
        module.exit_json(**out)
