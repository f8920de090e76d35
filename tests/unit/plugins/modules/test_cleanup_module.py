# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run tags on this host: launch.tagged/terminate and the cleanup module, on real processes."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules.module_harness import Exit, patch_exits

from ansible_collections.aifabric.acceptance.plugins.module_utils import launch
from ansible_collections.aifabric.acceptance.plugins.modules import cleanup

SLEEP = [sys.executable, "-c", "import time; time.sleep(120)"]
STUBBORN = [sys.executable, "-c",
            "import signal, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); print('ready', flush=True); "
            "time.sleep(120)"]


def _start(argv, tag):
    env = dict(os.environ)
    env[launch.TAG_ENV] = tag
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE)
    if argv is STUBBORN:
        assert proc.stdout.readline() == b"ready\n"      # its SIGTERM handler is in place
    return proc


def _call(args):
    with patch_module_args(args):
        with pytest.raises(Exit) as info:
            cleanup.main()
    return info.value


@pytest.fixture(autouse=True)
def exits(monkeypatch):
    patch_exits(monkeypatch)


def test_terminate_stops_only_the_processes_of_its_run():
    tag, other = launch.new_tag(), launch.new_tag()
    mine = [_start(SLEEP, tag), _start(STUBBORN, tag)]
    theirs = _start(SLEEP, other)
    try:
        assert sorted(pid for pid, _s, _a in launch.tagged(tag)) == sorted(p.pid for p in mine)
        done = launch.terminate(tag, grace_s=1)
        for proc in mine:
            assert proc.wait(5) is not None
        assert mine[1].returncode == -9                         # ignored SIGTERM: SIGKILL after the grace
        assert {"SIGTERM", "SIGKILL"} == set(d["signal"] for d in done)
        assert theirs.poll() is None and launch.tagged(tag) == []
    finally:
        for proc in mine + [theirs]:
            if proc.poll() is None:
                proc.kill()
            proc.wait()
            proc.stdout.close()


def test_cleanup_module_check_mode_lists_and_signals_nothing():
    tag = launch.new_tag()
    proc = _start(SLEEP, tag)
    try:
        out = _call({"run_id": tag, "_ansible_check_mode": True})
        assert not out.failed and out.kwargs["changed"]
        assert [f["pid"] for f in out.kwargs["found"]] == [proc.pid] and out.kwargs["killed"] == []
        assert proc.poll() is None
        out = _call({"run_id": tag, "grace_s": 2})
        assert [k["pid"] for k in out.kwargs["killed"]] == [proc.pid]
        assert proc.wait(5) == -15
        again = _call({"run_id": tag})
        assert not again.kwargs["changed"] and again.kwargs["killed"] == []
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        proc.stdout.close()


@pytest.mark.parametrize("tag", ["", "..", "a b", "-x", "x" * 200])
def test_cleanup_module_refuses_bad_tags(tag):
    out = _call({"run_id": tag})
    assert out.failed and "run_id" in out.kwargs["msg"]
