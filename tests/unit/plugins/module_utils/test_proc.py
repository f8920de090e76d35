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


def test_perftest_probe_never_takes_an_interrupt_for_a_missing_answer(monkeypatch):
    """a --version failure means "unknown"; an interrupt during it must end the run (the sweep catches it)."""
    run = PerftestRun.__new__(PerftestRun)
    run.module = _Module()

    def raising(exc):
        def spawn(*_args, **_kwargs):
            raise exc
        return spawn
    monkeypatch.setattr(runner, "spawn", raising(errors.Interrupted("interrupted by signal 15", signal.SIGTERM)))
    with pytest.raises(errors.Interrupted):
        run.version("/bin/true")
    monkeypatch.setattr(runner, "spawn", raising(errors.ToolTimeout("timed out")))
    assert run.version("/bin/true") is None


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
        started = proc.process_start_time(pid)
        assert started is not None
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
    # the child no longer runs: gone, or a zombie (killed; its parent, the entry program, has exited and left it to
    # init, which may reap it a moment later on a loaded machine: asking for its /proc entry to be gone at once failed
    # once so). proc.running: this very process (its start time), never another that took its pid since
    deadline = time.monotonic() + 10.0
    while proc.running(pid, started) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not proc.running(pid, started), "the step's child %d still runs after the pod's entry program ended" % pid


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


# --------------------------------------------------------------------------- the one spawn

# The files of plugins/module_utils and plugins/modules allowed to start a process themselves, each with its reason.
# Every other one goes through proc.spawn (runner.run, state_child.start, the pod entry program, k8s_run's ssh-keygen).
SPAWNERS = {
    os.path.join("module_utils", "proc.py"): "the one spawn",
    # staged alone as a script and run by another interpreter (the GPU python, with torch): it imports nothing from
    # the collection, so it cannot import proc; its nvidia-smi/dmesg children have their own time limits
    os.path.join("module_utils", "burnin_worker.py"): "standalone worker script",
}
OS_STARTERS = ("fork", "forkpty", "system", "popen", "posix_spawn", "posix_spawnp")


def _starts_processes(tree):
    """What in ``tree`` starts a process: an import of subprocess, os.fork/exec*/spawn*/system/popen, run_command."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import) and any(a.name == "subprocess" for a in node.names):
            found.append("import subprocess")
        elif isinstance(node, ast.ImportFrom) and node.module == "subprocess":
            found.append("from subprocess import")
        elif isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "os" and (
                node.attr in OS_STARTERS or node.attr.startswith(("exec", "spawn"))):
            found.append("os." + node.attr)
        elif isinstance(node, ast.Attribute) and node.attr == "run_command":
            found.append(".run_command")
    return found


def test_only_the_spawn_file_starts_processes_on_a_target():
    starters = dict((path, found) for path, tree in _sources() for found in [_starts_processes(tree)] if found)
    assert set(starters) == set(SPAWNERS), starters
    # the checker sees what it looks for (proc.py uses subprocess; the worker its own)
    assert "import subprocess" in starters[os.path.join("module_utils", "proc.py")]


def _py(code):
    return [sys.executable, "-c", code]


def test_spawn_gives_an_own_session_c_locale_and_no_stdin():
    child = proc.spawn(_py("import os, sys; print(os.getsid(0) == os.getpid() == os.getpgid(0), os.environ['LC_ALL'],"
                           " os.environ['LANG'], repr(sys.stdin.read()), os.environ.get('AIF_X'))"), 30,
                       env={"AIF_X": "y"})
    out, err = child.communicate()
    assert (child.rc, out, err, child.timed_out) == (0, b"True C C '' y\n", b"", False)
    assert child.start_time is not None and child.ended >= child.started


def test_spawn_time_limit_kills_the_whole_group():
    """Past its limit the group gets SIGTERM; a tool that ignores it (and its forked child) goes by SIGKILL
    kill_after_s later: rc 137 (124 when SIGTERM sufficed), the output so far kept."""
    stubborn = ("import os, signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); pid = os.fork(); "
                "print(pid or os.getpid(), flush=True); time.sleep(60)")
    child = proc.spawn(_py(stubborn), 1, kill_after_s=1)
    t0 = time.monotonic()
    out, _err = child.communicate()
    assert child.timed_out and child.rc == 137 and time.monotonic() - t0 < 20
    grandchild = [int(x) for x in out.split() if int(x) != child.pid][0]
    deadline = time.monotonic() + 10
    while proc.process_stat(grandchild) not in (None,) and proc.process_stat(grandchild)[0] != "Z" \
            and time.monotonic() < deadline:
        time.sleep(0.05)
    assert proc.process_stat(grandchild) is None or proc.process_stat(grandchild)[0] == "Z"
    polite = proc.spawn(_py("import time; time.sleep(60)"), 1, kill_after_s=5, stdout=subprocess.DEVNULL)
    assert polite.wait(20) == 124 and polite.timed_out


def test_a_spawned_process_dies_with_its_parent(tmp_path):
    """The parent is SIGKILLed (no cleanup of its own runs): its child goes too (PR_SET_PDEATHSIG), as a sweep
    runner's perftest processes go with the runner."""
    code = ("import sys, time; sys.path[:0] = %r; from ansible_collections.aifabric.acceptance.plugins.module_utils "
            "import proc; child = proc.spawn([sys.executable, '-c', 'import time; time.sleep(60)'], 60, "
            "stdout=None, stderr=None); print(child.pid, flush=True); time.sleep(60)") % (sys.path,)
    parent = subprocess.Popen(_py(code), stdout=subprocess.PIPE)
    try:
        pid = int(parent.stdout.readline())
        assert proc.process_stat(pid) is not None
        parent.kill()
        parent.wait(10)
        deadline = time.monotonic() + 10
        while proc.process_stat(pid) is not None and proc.process_stat(pid)[0] != "Z" and time.monotonic() < deadline:
            time.sleep(0.05)
        assert proc.process_stat(pid) is None or proc.process_stat(pid)[0] == "Z"
    finally:
        if parent.poll() is None:
            parent.kill()
        parent.wait(10)
        parent.stdout.close()


def test_kill_group_acts_only_on_the_process_of_the_recorded_start_time():
    child = proc.spawn(_py("import time; time.sleep(60)"), 60)
    assert proc.kill_group(child.pid, child.start_time + 1) is False and proc.kill_group(child.pid, None) is False
    assert child.poll() is None
    assert proc.kill_group(child.pid, child.start_time, grace_s=1) is True
    assert child.wait(10) == -signal.SIGTERM and not child.timed_out


def test_runner_run_decodes_and_masks_no_log_values():
    """runner.run (proc.spawn): bytes that are not UTF-8 are replaced and counted, and the module's no_log values
    never come back in an output (Ansible masks them so in a result: ********)."""

    class Secretive(_Module):
        no_log_values = {"hunter2"}
    code = "import sys; print('token=hunter2 ok'); sys.stderr.buffer.write(b'bad \\xff hunter2'); sys.exit(4)"
    run = runner.run(Secretive(), _py(code), 30)
    assert (run.rc, run.stdout, run.stderr, run.undecodable) == (4, "token=******** ok\n", "bad \ufffd ********", 1)
    with pytest.raises(errors.ToolTimeout) as info:
        runner.run(Secretive(), _py("print('hunter2', flush=True); import time; time.sleep(60)"), 1, kill_after_s=1)
    assert info.value.details["rc"] == 124 and info.value.details["stdout_tail"] == "********\n"
    missing = runner.run(Secretive(), ["/nonexistent/tool"], 5)
    assert missing.rc == 127 and "No such file" in missing.stderr


def test_the_controller_makes_its_ssh_key_pair_through_spawn():
    if not shutil.which("ssh-keygen"):
        pytest.skip("no ssh-keygen")
    from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_run
    keys = k8s_run._ssh_keygen()  # pylint: disable=protected-access
    assert keys["id_ed25519"].startswith("-----BEGIN OPENSSH PRIVATE KEY-----")
    assert keys["id_ed25519.pub"].startswith("ssh-ed25519 ")


def test_an_interrupted_run_leaves_no_tool_behind(tmp_path):
    """A signal while runner.run waits (the interrupt guard raises Interrupted): the tool's group is stopped before
    the error goes on."""
    pid_file = tmp_path / "pid"
    code = "import os, time; open(%r, 'w').write(str(os.getpid())); time.sleep(60)" % str(pid_file)

    def interrupt():
        deadline = time.monotonic() + 20
        while not (pid_file.exists() and pid_file.read_text()) and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(os.getpid(), signal.SIGTERM)
    timer = threading.Thread(target=interrupt)
    timer.start()
    try:
        with pytest.raises(errors.Interrupted):
            with proc.interrupt_guard():
                runner.run(_Module(), _py(code), 60)
    finally:
        timer.join(30)
    assert proc.process_stat(int(pid_file.read_text())) is None
