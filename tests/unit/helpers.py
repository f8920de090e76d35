# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What unit tests share: reading fixture files, where the fixture trees are, AnsibleModule stand-ins.

Import as ``from ansible_collections.aifabric.acceptance.tests.unit.helpers import read, parser_fixture``
(the way `make unit` and a plain ``PYTHONPATH=<dir above ansible_collections> pytest tests/unit`` both see it).
"""

from __future__ import annotations

import os
import time

from ansible_collections.aifabric.acceptance.plugins.module_utils.proc import TIMEOUT_RCS

UNIT = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(UNIT, os.pardir, os.pardir))
PARSER_FIXTURES = os.path.join(UNIT, "plugins", "module_utils", "parsers", "fixtures")
MODULE_FIXTURES = os.path.join(UNIT, "plugins", "modules", "fixtures")


def read(*parts):
    """The text (UTF-8) of the file at ``os.path.join(*parts)``."""
    with open(os.path.join(*parts), encoding="utf-8") as handle:
        return handle.read()


def parser_fixture(*parts):
    """A path under tests/unit/plugins/module_utils/parsers/fixtures (captured tool output)."""
    return os.path.join(PARSER_FIXTURES, *parts)


def module_fixture(*parts):
    """A path under tests/unit/plugins/modules/fixtures."""
    return os.path.join(MODULE_FIXTURES, *parts)


def listing(directory, suffix=""):
    """The sorted names in ``directory`` ending in ``suffix``; fails when there is none, so that a test looping
    over a fixture directory cannot pass vacuously on an empty or missing one."""
    names = sorted(name for name in os.listdir(directory) if name.endswith(suffix))
    assert names, f"no *{suffix} file in {directory}"
    return names


class Exit(Exception):
    """AnsibleModule.exit_json called; ``args[0]`` is its result."""


class Fail(Exception):
    """AnsibleModule.fail_json called; ``args[0]`` is its result."""


def raise_on_exit(monkeypatch):
    """Patch AnsibleModule: exit_json raises Exit, fail_json raises Fail (each with the kwargs)."""
    from ansible.module_utils import basic

    def exit_json(self, **kwargs):
        raise Exit(kwargs)

    def fail_json(self, **kwargs):
        raise Fail(kwargs)
    monkeypatch.setattr(basic.AnsibleModule, "exit_json", exit_json)
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", fail_json)


def alive(pid):
    """True while process ``pid`` exists and is not a zombie (Linux /proc)."""
    try:
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().split(") ", 1)[1].split()[0] != "Z"
    except OSError:
        return False


class ReplayedChild(object):
    """What proc.spawn gives runner.run, for a run replayed from a capture: it has ended with ``rc`` after printing
    ``out`` and ``err``; an rc of TIMEOUT_RCS replays a run its time limit ended (runner.run raises ToolTimeout)."""

    def __init__(self, rc, out, err):
        self.rc = rc
        self.timed_out = rc in TIMEOUT_RCS
        self.started_mono = time.monotonic()
        self.out, self.err = (t.encode("utf-8", "surrogateescape") if isinstance(t, str) else (t or b"")
                              for t in (out, err))

    def communicate(self):
        return self.out, self.err


def replayed_runs(calls, handler):
    """A stand-in for runner.spawn (monkeypatch.setattr(runner, "spawn", ...)): each argv runner.run would start is
    appended to ``calls`` ({"argv", "env", "kwargs"}) and ``handler(argv)`` gives its (rc, stdout, stderr)."""
    def spawn(argv, timeout_s, **kwargs):
        calls.append({"argv": list(argv), "env": kwargs.get("env"), "timeout_s": timeout_s, "kwargs": kwargs})
        return ReplayedChild(*handler(list(argv)))
    return spawn
