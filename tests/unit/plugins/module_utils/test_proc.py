# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The process layer (proc.py): one Interrupted, one interrupt guard, one set of exit-code constants; the runners
that use it (launch.run_tagged, perftest_run's probes, the pod entry program), on real processes and signals."""

from __future__ import annotations

import ast
import json
import os
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest

from ansible_collections.aifabric.acceptance.plugins.module_utils import errors, k8s_entry, launch, proc, runner
from ansible_collections.aifabric.acceptance.plugins.module_utils.perftest_run import PerftestRun

PLUGINS = os.path.abspath(os.path.join(os.path.dirname(proc.__file__), os.pardir))
# where a target process runs (modules and what they import); the controller side (callback, plugin_utils, action)
# holds Ansible's own handlers and is outside this rule
TARGET_SIDE = ("module_utils", "modules")


def _sources():
    for part in TARGET_SIDE:
        for root, _dirs, files in os.walk(os.path.join(PLUGINS, part)):
            for name in sorted(files):
                if name.endswith(".py"):
                    path = os.path.join(root, name)
                    with open(path) as handle:
                        yield os.path.relpath(path, PLUGINS), ast.parse(handle.read())


def test_signal_handlers_are_installed_by_proc_only():
    installers = set()
    for path, tree in _sources():
        for node in ast.walk(tree):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "signal" \
                    and isinstance(node.func.value, ast.Name) and node.func.value.id == "signal":
                installers.add(path)
    assert installers == {os.path.join("module_utils", "proc.py")}


def test_one_interrupted_and_one_set_of_timeout_codes():
    classes, code_sets = set(), set()
    for path, tree in _sources():
        for node in ast.walk(tree):
            if isinstance(node, ast.ClassDef) and node.name == "Interrupted":
                classes.add(path)
            if isinstance(node, ast.Tuple) and {124, 137} <= set(
                    e.value for e in node.elts if isinstance(e, ast.Constant)):
                code_sets.add(path)
    assert classes == {os.path.join("module_utils", "errors.py")}
    assert issubclass(errors.Interrupted, errors.AcceptanceError)
    assert code_sets == {os.path.join("module_utils", "proc.py")}
    assert proc.DETACHED_TIMEOUT_RCS == proc.TIMEOUT_RCS + (-signal.SIGKILL,)


def test_guard_raises_interrupted_and_restores_the_previous_handler():
    seen = []
    previous = signal.signal(signal.SIGHUP, lambda signum, frame: seen.append(signum))
    try:
        with pytest.raises(errors.Interrupted) as info:
            with proc.interrupt_guard():
                signal.raise_signal(signal.SIGHUP)
                time.sleep(5)
        assert str(info.value) == "interrupted by signal %d" % signal.SIGHUP and info.value.signum == signal.SIGHUP
        signal.raise_signal(signal.SIGHUP)
        assert seen == [signal.SIGHUP]
    finally:
        signal.signal(signal.SIGHUP, previous)


def test_guard_ignore_lets_cleanup_finish():
    def mine(signum, frame):
        raise AssertionError("the previous handler ran inside the guard")

    previous = signal.signal(signal.SIGTERM, mine)
    try:
        with proc.interrupt_guard() as guard:
            guard.ignore()
            signal.raise_signal(signal.SIGTERM)       # ignored: no Interrupted, the cleanup after it still runs
            time.sleep(0.05)
            finished = True
        assert finished and signal.getsignal(signal.SIGTERM) is mine
    finally:
        signal.signal(signal.SIGTERM, previous)


def test_guard_installs_nothing_outside_the_main_thread():
    before = dict((sig, signal.getsignal(sig)) for sig in proc.SIGNALS)
    errors_seen = []

    def body():
        try:
            with proc.interrupt_guard():
                pass
        except Exception as exc:  # pylint: disable=broad-except
            errors_seen.append(exc)

    thread = threading.Thread(target=body)
    thread.start()
    thread.join(10)
    assert errors_seen == [] and dict((sig, signal.getsignal(sig)) for sig in proc.SIGNALS) == before


class _Module(object):
    """What runner.run needs of an AnsibleModule (its processes are proc.spawn's, real ones)."""

    no_log_values = ()

    def get_bin_path(self, name, required=False):
        return shutil.which(name)


def test_run_tagged_interrupted_stops_the_run_and_raises_the_one_interrupted():
    tag = launch.new_tag()
    timer = threading.Timer(1.0, lambda: os.kill(os.getpid(), signal.SIGTERM))
    timer.start()
    try:
        with pytest.raises(errors.Interrupted) as info:
            launch.run_tagged(_Module(), [sys.executable, "-c", "import time; time.sleep(60)"], 60, {}, tag, grace_s=2)
    finally:
        timer.cancel()
    assert info.value.signum == signal.SIGTERM
    assert launch.tagged(tag) == []                          # the timeout wrapper and the tool were stopped
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


@pytest.mark.parametrize("method", ["version", "supports"])
def test_perftest_probe_never_takes_an_interrupt_for_a_missing_answer(method, monkeypatch):
    """--version/--help failures mean "unknown"; an interrupt during them must end the run (the sweep catches it)."""
    run = PerftestRun.__new__(PerftestRun)
    run.module = _Module()
    args = ("/bin/true",) if method == "version" else ("/bin/true", "--out_json")

    def raising(exc):
        def spawn(*_args, **_kwargs):
            raise exc
        return spawn
    monkeypatch.setattr(runner, "spawn", raising(errors.Interrupted("interrupted by signal 15", signal.SIGTERM)))
    with pytest.raises(errors.Interrupted):
        getattr(run, method)(*args)
    monkeypatch.setattr(runner, "spawn", raising(errors.ToolTimeout("timed out")))
    assert getattr(run, method)(*args) in (None, False)


def test_pod_entry_program_stops_its_children_on_sigterm(tmp_path):
    """What a pod does when Kubernetes stops it: every child killed, a NOTE line, exit status 128 + 15."""
    pid_file = tmp_path / "child.pid"
    child = "import os, time; open(%r, 'w').write(str(os.getpid())); time.sleep(60)" % str(pid_file)
    spec = {"steps": [{"label": "sleep", "argv": [sys.executable, "-c", child], "timeout_s": 60}]}
    entry = subprocess.Popen([sys.executable, k8s_entry.__file__, "run", "--spec", json.dumps(spec)],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 30
        while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        pid = int(pid_file.read_text())
        entry.send_signal(signal.SIGTERM)
        out, err = entry.communicate(timeout=30)
    finally:
        if entry.poll() is None:
            entry.kill()
            entry.communicate()
    assert entry.returncode == 128 + signal.SIGTERM, err
    lines = out.decode().splitlines()
    # the running step's BEGIN line (printed when it started), why it stops there (never an END line), the note
    assert len(lines) == 3 and lines[0] == k8s_entry.BEGIN + "sleep", lines
    assert lines[1].startswith("interrupted by signal %d after " % signal.SIGTERM), lines
    assert lines[2] == k8s_entry.NOTE + json.dumps({"interrupted_by_signal": signal.SIGTERM})
    assert not os.path.exists("/proc/%d" % pid)


def test_process_stat_reads_past_a_command_name_with_spaces_and_parentheses(tmp_path):
    """The one /proc/<pid>/stat reader (proc.process_stat): a real process whose command name holds ") (" still gives
    its state and start time; a process that is gone gives None."""
    from ansible_collections.aifabric.acceptance.plugins.module_utils.proc import process_start_time, process_stat

    link = tmp_path / "a) b (c"
    link.symlink_to(shutil.which("sleep"))
    child = subprocess.Popen([str(link), "30"])
    try:
        stat_path = "/proc/%d/stat" % child.pid
        deadline = time.monotonic() + 10
        while b"(a) b (c)" not in _read_bytes(stat_path) and time.monotonic() < deadline:
            time.sleep(0.05)
        data = _read_bytes(stat_path)
        assert b"(a) b (c)" in data
        state, start = process_stat(child.pid)
        assert state in ("R", "S", "D") and start == int(data.rsplit(b")", 1)[1].split()[19]) > 0
        assert process_start_time(child.pid) == start
    finally:
        child.kill()
        child.wait(timeout=10)
    assert process_stat(child.pid, root=str(tmp_path)) is None


def _read_bytes(path):
    with open(path, "rb") as handle:
        return handle.read()
