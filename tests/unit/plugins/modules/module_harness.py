# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What module unit tests share: exit_json/fail_json turned into an exception that keeps the result."""

from __future__ import annotations

from ansible.module_utils import basic


class Exit(SystemExit):
    """Raised by the patched exit_json (failed=False) and fail_json (failed=True)."""

    def __init__(self, kwargs, failed=False):
        super().__init__(kwargs)
        self.kwargs = kwargs
        self.failed = failed


def _exit(self, **kwargs):
    raise Exit(kwargs)


def _fail(self, **kwargs):
    raise Exit(kwargs, failed=True)


def patch_exits(monkeypatch):
    """Make AnsibleModule.exit_json/fail_json raise Exit instead of printing and exiting."""
    monkeypatch.setattr(basic.AnsibleModule, "exit_json", _exit)
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", _fail)


def run_main(main, args):
    """Run a module's main() with ``args``; the Exit it raised (``.kwargs``, ``.failed``)."""
    import pytest
    from ansible.module_utils.testing import patch_module_args
    with patch_module_args(args):
        with pytest.raises(Exit) as exc:
            main()
    return exc.value
