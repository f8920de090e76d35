# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The job_wait action: it polls a host's async job on the controller, each poll bounded, and returns the finished
job's result as its own.

The host side is real where it can be: each poll runs the action's own module (plugins/modules/job_wait.py: the job
file read as ansible-core's async_status module reads it, and removed by the poll that finds the job finished) or,
where the connection pipelines (``light``), the light poll's program on a real interpreter's standard input, read
back by ansible-core's own parse of a module's answer, against a job directory of the test's, in which the "job" writes what async_wrapper
writes (the running status, then the module's result, or "Timeout exceeded"). A host that goes silent is a call
blocked reading from a process that never answers (the SSH client of a silent host), as in the bound's own tests
(test_perftest_sweep_bound.py). The records go through the fleet_report callback's collector, as in a run.
"""

from __future__ import annotations

import json
import os
import posixpath
import re
import subprocess
import sys
import threading
import time
import types

import pytest
from ansible.errors import AnsibleConnectionFailure, AnsibleError

from ansible_collections.aifabric.acceptance.plugins.action import job_wait
from ansible_collections.aifabric.acceptance.plugins.module_utils import async_job, results
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import stream
from ansible_collections.aifabric.acceptance.tests.unit.helpers import alive

JID = "j123456789.4242"
TASK = "Measure GEMM throughput on every GPU"
RUNNING = {"started": 1, "finished": 0, "ansible_job_id": JID}         # what async_wrapper writes first


def gemm_result():
    """What a module of the collection returns: its records (one per GPU) and the rest of its result."""
    recs = [results.make("gpu.gemm_bf16", "pass", host="node1", target="GPU%d" % i, metrics={"tflops": 700.0 + i})
            for i in range(2)]
    return {"changed": False, "results": recs, "invocation": {"module_args": {"dtypes": ["bf16"]}}}


class Host:
    """A host's job directory, polled with the real job_wait module. ``job``: what the job file holds at each
    status poll (a list: one entry per poll, the last one stays; "": an empty file, None: no file)."""

    def __init__(self, tmp_path, job, light=False):
        # the host's HOME (the module runs under it, as async_wrapper did) and its ~/.ansible_async
        self.home = tmp_path / "home"
        self.dir = self.home / ".ansible_async"
        self.dir.mkdir(parents=True)
        self.args_dir = tmp_path / "args"
        self.args_dir.mkdir()
        self.job = list(job)
        self.calls = []
        self.dirs = []           # the job directory each call gave the module (its async_dir, ~ unexpanded)
        self.action = None
        self.ended = []          # time.monotonic() at the end of each call
        self.light = light       # the connection pipelines: the action's light poll, not the module

    @property
    def job_file(self):
        return self.dir / JID

    def statuses(self):
        return list(self.calls)     # every call is a poll (the one that finds the job finished removes its file)

    def execute(self, module_name=None, module_args=None, task_vars=None, **_kw):
        assert module_name == "aifabric.acceptance.job_wait", module_name
        self.calls.append(dict(module_args))
        self.dirs.append(module_args["async_dir"])
        content = self.job[0] if len(self.job) == 1 else self.job.pop(0)
        if content is not None:
            self.job_file.write_text(json.dumps(content) if content != "" else "")
        try:
            return self.run_module(module_args)
        finally:
            self.ended.append(time.monotonic())

    def low_level(self, cmd, sudoable=True, in_data=None, **_kw):
        """The light poll's call: its program (job_wait.poll_program) run by a real interpreter, under the host's
        HOME; the poll's arguments as the program's last line gives them."""
        assert cmd == sys.executable and sudoable, cmd
        program = in_data.decode("utf-8")
        jid, async_dir, cleanup = re.search(
            r"poll\(('[^']*'), os\.path\.expanduser\(os\.path\.expandvars\(('[^']*')\)\), (True|False)\)",
            program.splitlines()[-1]).groups()
        args = {"jid": jid.strip("'"), "async_dir": async_dir.strip("'"), "cleanup": cleanup == "True"}
        self.calls.append(args)
        self.dirs.append(args["async_dir"])
        content = self.job[0] if len(self.job) == 1 else self.job.pop(0)
        if content is not None:
            self.job_file.write_text(json.dumps(content) if content != "" else "")
        try:
            proc = subprocess.run([sys.executable, "-"], input=program, env=dict(os.environ, HOME=str(self.home)),
                                  capture_output=True, text=True, timeout=60, check=False)
            return {"rc": proc.returncode, "stdout": proc.stdout, "stderr": proc.stderr}
        finally:
            self.ended.append(time.monotonic())

    def configure(self, module_name=None, module_args=None, task_vars=None):
        assert module_name == "aifabric.acceptance.job_wait" and set(module_args) == {"jid", "cleanup", "async_dir"}
        return types.SimpleNamespace(module_style="new", shebang="#!" + sys.executable,
                                     serialization_profile="legacy", b_module_data=b""), "job_wait.py"

    def run_module(self, module_args):
        path = self.args_dir / ("%d.json" % len(self.calls))
        path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": module_args}))
        proc = subprocess.run([sys.executable, "-m", "ansible_collections.aifabric.acceptance.plugins.modules.job_wait",
                               str(path)],
                              env=dict(os.environ, HOME=str(self.home), PYTHONPATH=os.pathsep.join(sys.path)),
                              capture_output=True, text=True, timeout=60, check=False)
        return json.loads(proc.stdout.strip().splitlines()[-1])


class Shown:
    """The action's display: what it prints (nothing per poll at normal verbosity)."""

    def __init__(self):
        self.lines = []

    def display(self, msg, *_a, **_kw):
        self.lines.append(("display", msg))

    def warning(self, msg, *_a, **_kw):
        self.lines.append(("warning", msg))

    def vvv(self, msg, *_a, **_kw):
        pass        # -vvv only


def pytest_generate_tests(metafunc):
    """A test that takes ``light`` runs with the module's poll and with the light poll (a pipelining connection)."""
    if "light" in metafunc.fixturenames:
        metafunc.parametrize("light", [False, True], ids=["module-poll", "light-poll"])


def action_for(host, check_mode=False, tmpdir=None, **args):
    task = types.SimpleNamespace(args=dict({"jid": JID, "poll_s": 0.05, "poll_timeout_s": 10}, **args),
                                 async_val=0, check_mode=check_mode, action="aifabric.acceptance.job_wait",
                                 environment=[])
    shell = types.SimpleNamespace(tmpdir=tmpdir, join_path=posixpath.join,
                                  build_module_command=lambda env, shebang, arg: shebang[2:])
    connection = types.SimpleNamespace(_shell=shell, always_pipeline_modules=False,
                                       is_pipelining_enabled=lambda *_a: host.light)
    action = job_wait.ActionModule(task, connection, None, None, None, None)
    action._execute_module = host.execute
    action._low_level_execute_command = host.low_level
    action._configure_module = host.configure
    action._compute_environment_string = lambda *_a: ""
    host.action = action
    action.get_shell_option = lambda option, default=None: default if option == "async_dir" else None
    action._display = Shown()
    return action


def collected(result, failed=False):
    """The records the fleet_report callback's collector makes of this task result on node1."""
    collector = stream.Collector()
    collector.target(["node1"])
    if failed:
        collector.task_failed("node1", "uuid-1", TASK, result)
    else:
        collector.task_ok("node1", "uuid-1", TASK, result)
    return [r for r in collector.records() if r["host"] == "node1"]


def test_a_finished_job_is_returned_as_async_status_returns_it_and_its_file_removed(tmp_path, light):
    job = gemm_result()
    host = Host(tmp_path, [job], light=light)
    action = action_for(host)
    out = action.run(task_vars={"inventory_hostname": "node1"})
    assert out["results"] == job["results"] and out["changed"] is False and not out.get("failed"), out
    assert (out["started"], out["finished"], out["ansible_job_id"]) == (True, True, JID), out
    assert out["results_file"] == str(host.job_file)
    assert host.dirs == ["~/.ansible_async"]                # expanded on the host, as async_wrapper does
    assert action._task.environment == []                  # given for the call only
    assert [c["cleanup"] for c in host.calls] == [True]   # one call: the poll that found it finished removed it
    assert not host.job_file.exists()                      # cleanup: the job's file is gone
    assert action._display.lines == []
    # the callback collects the job's records as the module returned them
    assert [(r["check"], r["target"], r["status"]) for r in collected(out)] == [
        ("gpu.gemm_bf16", "GPU0", "pass"), ("gpu.gemm_bf16", "GPU1", "pass")]


def test_a_job_that_finishes_after_some_polls_is_waited_for_quietly(tmp_path, light):
    host = Host(tmp_path, ["", RUNNING, RUNNING, RUNNING, gemm_result()], light=light)     # "": not written yet
    action = action_for(host, poll_s=0.1)
    t0 = time.monotonic()
    out = action.run(task_vars={"inventory_hostname": "node1"})
    assert len(host.statuses()) == 5 and out["finished"] is True and len(out["results"]) == 2, (host.calls, out)
    assert time.monotonic() - t0 >= 4 * 0.1                 # poll_s between two polls
    assert action._display.lines == []                     # no line per poll ("FAILED - RETRYING")
    assert not host.job_file.exists()


def test_a_job_that_never_finishes_fails_by_wait_timeout_and_says_why(tmp_path, light):
    host = Host(tmp_path, [RUNNING], light=light)
    action = action_for(host, wait_timeout_s=1, poll_s=0.2)
    t0 = time.monotonic()
    out = action.run(task_vars={"inventory_hostname": "node1"})
    took = time.monotonic() - t0
    assert out["failed"] is True and out["finished"] is False and "results" not in out, out
    assert "job %s did not finish within wait_timeout_s=1" % JID in out["msg"], out["msg"]
    assert 1.0 <= took < 1.0 + 10, took                     # the last poll at the deadline, then no more
    assert len(host.statuses()) <= 1.0 / 0.2 + 2, host.calls
    # a second poll, the last one at the deadline, unless the first one (a Python process) only ended past it, as on a
    # machine loaded well beyond its CPUs
    assert len(host.statuses()) >= 2 or host.ended[0] - t0 >= 1.0, (host.calls, host.ended[0] - t0)
    assert host.job_file.exists()                          # still running: not removed
    # the callback's record of it: an env.task error that says why (async_status in until: "Action failed: Unknown error.")
    recs = collected(out, failed=True)
    assert [(r["check"], r["status"]) for r in recs] == [(stream.TASK_CHECK, "error")], recs
    assert "did not finish within wait_timeout_s=1" in recs[0]["reason"], recs[0]["reason"]


def test_a_job_killed_at_its_async_limit_fails_with_its_message(tmp_path, light):
    """async_wrapper's kill at the job's async: limit leaves "Timeout exceeded": the task fails with it."""
    host = Host(tmp_path, [RUNNING, {"msg": "Timeout exceeded", "failed": True, "child_pid": 4242}], light=light)
    out = action_for(host).run(task_vars={})
    assert out["failed"] is True and out["msg"] == "Timeout exceeded" and out["finished"] is True, out
    assert not host.job_file.exists()
    assert "Timeout exceeded" in collected(out, failed=True)[0]["reason"]


def test_a_failed_module_keeps_its_records(tmp_path, light):
    job = dict(gemm_result(), failed=True, msg="one GPU below its expectation")
    host = Host(tmp_path, [job], light=light)
    out = action_for(host).run(task_vars={})
    assert out["failed"] is True and out["results"] == job["results"], out
    assert len(collected(out, failed=True)) == 2            # the records, not an env.task error


def test_a_job_that_is_not_there_fails_once_its_start_window_passed(tmp_path, monkeypatch, light):
    monkeypatch.setattr(job_wait, "NOT_STARTED_S", 0.3)
    host = Host(tmp_path, [None], light=light)
    t0 = time.monotonic()
    out = action_for(host, poll_s=0.1).run(task_vars={})
    assert out["failed"] is True and out["msg"] == "could not find job", out
    assert time.monotonic() - t0 >= 0.3 and len(host.statuses()) >= 2, host.calls
    assert len(host.calls) == len(host.statuses())         # no cleanup of a job that is not there


def test_a_job_file_not_written_yet_is_a_job_not_started_yet(tmp_path, light):
    """async_wrapper's parent returns once its child wrote the job file, or after 2.5 s without it (a loaded host):
    the first polls may find no file. Within NOT_STARTED_S of the wait's start that is a job not started yet."""
    host = Host(tmp_path, [None, None, RUNNING, gemm_result()], light=light)
    out = action_for(host, poll_s=0.1).run(task_vars={})
    assert out["finished"] is True and not out.get("failed") and len(out["results"]) == 2, out
    assert len(host.statuses()) == 4 and not host.job_file.exists(), host.calls


def test_a_job_not_there_by_wait_timeout_says_so(tmp_path, light):
    host = Host(tmp_path, [None], light=light)
    out = action_for(host, wait_timeout_s=0, poll_s=0.1).run(task_vars={})
    assert out["failed"] is True and out["finished"] is False, out
    assert "did not finish within wait_timeout_s=0" in out["msg"] and "could not find job" in out["msg"], out


def killed_poll(action):
    """What ansible-core's _execute_module returns for a module whose process was killed (OOM: no output, rc 137):
    its own parse of that output (failed, unparsed)."""
    proc = subprocess.run([sys.executable, "-c", "import os, signal; os.kill(os.getpid(), signal.SIGKILL)"],
                          capture_output=True, text=True, timeout=60, check=False)
    return action._parse_returned_data({"rc": 128 - proc.returncode, "stdout": proc.stdout, "stderr": "Killed"},
                                       "legacy")


def failing_polls(host, action, which, failure):
    """The host's execute, with the status polls numbered in ``which`` answered by ``failure(action)`` instead."""
    real = host.execute
    calls = {"n": 0}

    def execute(module_name=None, module_args=None, task_vars=None, **kw):
        if module_args.get("mode", "status") == "status":
            calls["n"] += 1
            if which is None or calls["n"] in which:
                host.calls.append(dict(module_args))
                return failure(action)
        return real(module_name=module_name, module_args=module_args, task_vars=task_vars, **kw)
    return execute


def raise_transfer_error(_action):
    raise AnsibleError("failed to transfer file to /root/.ansible/tmp/async_status.py: No space left on device")


@pytest.mark.parametrize("failure", [killed_poll, raise_transfer_error], ids=["unparsed", "ansible-error"])
def test_a_poll_whose_status_module_fails_is_polled_again(tmp_path, failure):
    """ansible-core's own async poll (task_executor _poll_async_result) retries an unparsed answer and an error."""
    host = Host(tmp_path, [RUNNING, RUNNING, gemm_result()])
    action = action_for(host)
    action._execute_module = failing_polls(host, action, {1, 3}, failure)
    out = action.run(task_vars={})
    assert out["finished"] is True and not out.get("failed") and len(out["results"]) == 2, out
    assert not host.job_file.exists()


@pytest.mark.parametrize("failure", [killed_poll, raise_transfer_error], ids=["unparsed", "ansible-error"])
def test_status_polls_failing_in_a_row_fail_the_task_not_the_host(tmp_path, failure):
    """A host that answers but whose status module keeps failing: the task fails, the host stays reachable, the job
    and its file are left."""
    host = Host(tmp_path, [RUNNING])
    host.job_file.write_text(json.dumps(RUNNING))
    action = action_for(host, status_errors_after_polls=3, unreachable_after_polls=1)
    action._execute_module = failing_polls(host, action, None, failure)
    out = action.run(task_vars={})
    assert out["failed"] is True and not out.get("unreachable") and out["finished"] is False, out
    assert "job %s: its status could not be read: 3 failed polls in a row" % JID in out["msg"], out["msg"]
    assert ("No start of json char found" if failure is killed_poll else "No space left") in out["msg"], out
    assert len(host.statuses()) == 3 and len(host.calls) == 3 and host.job_file.exists(), host.calls
    assert not action._silent
    recs = collected(out, failed=True)
    assert [(r["check"], r["status"]) for r in recs] == [(stream.TASK_CHECK, "error")], recs


def test_connection_failures_and_status_errors_are_counted_apart(tmp_path):
    """Neither kind twice in a row: the wait goes on."""
    host = Host(tmp_path, [RUNNING, RUNNING, RUNNING, RUNNING, gemm_result()])
    action = action_for(host, status_errors_after_polls=2, unreachable_after_polls=2)

    def failure(act):
        if len(host.calls) % 2:
            raise AnsibleConnectionFailure("ssh: connection reset")
        return killed_poll(act)

    action._execute_module = failing_polls(host, action, {1, 2, 3, 4}, failure)
    out = action.run(task_vars={})
    assert out["finished"] is True and len(out["results"]) == 2, out


def test_without_cleanup_or_in_check_mode_the_file_stays(tmp_path, light):
    host = Host(tmp_path, [gemm_result()], light=light)
    assert action_for(host, cleanup=False).run(task_vars={})["finished"] is True
    assert host.job_file.exists() and len(host.calls) == 1
    assert action_for(host, check_mode=True).run(task_vars={})["finished"] is True
    assert host.job_file.exists() and len(host.calls) == 2


def test_a_cleanup_that_fails_is_a_warning(tmp_path):
    """The poll found the job finished but its file could not be removed (gone already, a read-only directory):
    the job's result, with a warning."""
    host = Host(tmp_path, [gemm_result()])
    action = action_for(host)
    real = host.execute

    def execute(module_name=None, module_args=None, task_vars=None, **kw):
        out = real(module_name=module_name, module_args=module_args, task_vars=task_vars, **kw)
        assert out.pop(job_wait.REMOVED) == {"erased": str(host.job_file)}
        # what the module's removal answers where the unlink fails
        return dict(out, **{job_wait.REMOVED: async_job.remove(str(host.job_file))})

    action._execute_module = execute
    out = action.run(task_vars={})
    assert not out.get("failed") and len(out["results"]) == 2 and job_wait.REMOVED not in out, out
    assert out["warnings"] == ["job %s: its file was not removed: %s: [Errno 2] No such file or directory: %r" % (
        JID, host.job_file, str(host.job_file))], out


def hanging(started):
    """A call blocked reading from a client that never answers (the SSH client of a silent host)."""
    def call(module_name=None, module_args=None, task_vars=None, **_kw):
        proc = subprocess.Popen(["sleep", "600"], stdout=subprocess.PIPE)
        started.append(proc.pid)
        try:
            return proc.stdout.read()
        finally:
            proc.stdout.close()
            proc.wait()
    return call


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs Linux /proc")
def test_polls_that_hang_are_bounded_and_the_host_unreachable_after_k(tmp_path):
    host = Host(tmp_path, [RUNNING])
    started = []
    action = action_for(host, poll_timeout_s=0.5, poll_s=0.05, unreachable_after_polls=3, wait_timeout_s=600)
    action._execute_module = hanging(started)
    t0 = time.monotonic()
    out = action.run(task_vars={})
    took = time.monotonic() - t0
    assert out.get("unreachable") is True and not out.get("failed"), out
    assert "3 failed polls in a row (no answer from the host: no answer within" in out["msg"], out["msg"]
    assert len(started) == 3 and 3 * 0.5 <= took < 3 * (0.5 + 5) + 2, (started, took)
    deadline = time.monotonic() + 5
    while any(alive(pid) for pid in started) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(alive(pid) for pid in started)          # each blocked call was stopped
    action._remove_tmp_path = lambda *_a, **_kw: pytest.fail("a call to a silent host")
    action._connection._shell.tmpdir = "/tmp/ansible-tmp-1-2"
    action.cleanup()                                        # nothing more goes to it
    assert len(started) == 3
    # the callback: an unreachable host at this task
    collector = stream.Collector()
    collector.target(["node1"])
    collector.task_unreachable("node1", "uuid-1", TASK, out)
    recs = [r for r in collector.records() if r["host"] == "node1"]
    assert [r["check"] for r in recs] == [stream.UNREACHABLE_CHECK] and "3 failed polls" in recs[0]["reason"], recs


def test_a_failed_poll_then_an_answer_starts_the_count_again(tmp_path):
    host = Host(tmp_path, [RUNNING, RUNNING, RUNNING, gemm_result()])
    real = host.execute
    calls = {"n": 0}

    def flaky(module_name=None, module_args=None, task_vars=None, **kw):
        calls["n"] += 1
        if calls["n"] in (1, 3):         # every other poll fails: never 2 in a row
            raise AnsibleConnectionFailure("Failed to connect to the host via ssh")
        return real(module_name=module_name, module_args=module_args, task_vars=task_vars, **kw)

    action = action_for(host, unreachable_after_polls=2)
    action._execute_module = flaky
    out = action.run(task_vars={})
    assert out["finished"] is True and not out.get("unreachable"), out


def test_a_call_that_cannot_be_stopped_makes_the_host_unreachable_at_once(tmp_path):
    """No process to kill (blocked on nothing a process holds): the connection is still in use, no further call."""
    host = Host(tmp_path, [RUNNING])
    never = threading.Event()
    action = action_for(host, poll_timeout_s=0.3, unreachable_after_polls=5)
    calls = []

    def stuck(**_kw):
        calls.append(1)
        never.wait()

    action._execute_module = stuck
    out = action.run(task_vars={})
    never.set()
    assert out.get("unreachable") is True and len(calls) == 1 and "could not be stopped" in out["msg"], out


@pytest.mark.parametrize("args, message", [
    ({"poll_s": 0}, "poll_s must be more than 0"),
    ({"poll_timeout_s": -1}, "poll_timeout_s must be more than 0"),
    ({"wait_timeout_s": -5}, "wait_timeout_s must be 0 or more"),
    ({"unreachable_after_polls": 0}, "unreachable_after_polls must be 1 or more"),
    ({"status_errors_after_polls": 0}, "status_errors_after_polls must be 1 or more"),
    ({"jid": " "}, "jid is empty"),
])
def test_bad_arguments_fail_clearly_without_a_call(tmp_path, args, message):
    host = Host(tmp_path, [RUNNING])
    out = action_for(host, **args).run(task_vars={})
    assert out["failed"] is True and message in out["msg"], out
    assert host.calls == []


def test_worst_case_covers_the_last_poll_and_the_removal():
    assert job_wait.worst_case_s(100, 30) == 100 + 2 * (30 + job_wait.KILL_GRACE_S + 1)


# ------------------------------------------------------------------ an attacker's pass (issue 34, rule 7)

@pytest.mark.parametrize("jid", ["../victim", "j1/../../victim", "/VICTIM", ".", "..", "-rf", "j1\n2", "", " j1"])
def test_a_jid_that_is_not_one_name_is_refused_before_any_call(tmp_path, jid):
    """async_status joins the jid to the job directory: ``../victim`` read a file outside it as the job's result
    and, with cleanup, deleted it (as the remote user, root for become)."""
    victim = tmp_path / "victim"
    victim.write_text(json.dumps(dict(gemm_result(), finished=1)))
    host = Host(tmp_path, [None])
    out = action_for(host, jid=jid.replace("VICTIM", str(victim).lstrip("/")), wait_timeout_s=1).run(task_vars={})
    assert out["failed"] is True and "jid" in out["msg"] and "results" not in out, out
    assert host.calls == [] and victim.exists()


def test_the_real_job_ids_are_accepted(tmp_path, light):
    for jid in ("j512186146478.4137", "512186146478.4137"):        # ansible-core 2.19+, and before
        (tmp_path / jid).mkdir()
        host = Host(tmp_path / jid, [None], light=light)
        out = action_for(host, jid=jid, wait_timeout_s=0).run(task_vars={})
        assert host.calls and "did not finish" in out["msg"], out


def test_a_job_result_that_claims_the_host_is_unreachable_is_its_result_not_a_connection_failure(tmp_path, light):
    """Only the connection makes a poll unreachable: a job's own output with ``unreachable: true`` (the node's word)
    made the action declare the host unreachable and make no further call."""
    job = dict(gemm_result(), unreachable=True)
    host = Host(tmp_path, [job], light=light)
    out = action_for(host, wait_timeout_s=2).run(task_vars={})
    assert not out.get("unreachable") and out["finished"] is True and out["results"] == job["results"], out
    assert len(host.calls) == 1 and not host.job_file.exists()


@pytest.mark.parametrize("finished", ["false", "0", "no", [], {"x": 1}, 2])
def test_a_status_whose_finished_is_not_one_is_still_running(tmp_path, finished, light):
    """ansible-core's own poll takes a job as finished when ``int(finished) == 1``; ``bool("false")`` is True."""
    host = Host(tmp_path, [{"started": 1, "finished": finished, "ansible_job_id": JID}], light=light)
    out = action_for(host, wait_timeout_s=0).run(task_vars={})
    assert out["failed"] is True and "did not finish" in out["msg"] and out["finished"] is False, out
    assert host.job_file.exists()


def test_a_status_of_another_job_is_not_this_jobs_result(tmp_path, light):
    """A job file naming another job (a finished run's file copied in place) is refused, not returned."""
    host = Host(tmp_path, [dict(gemm_result(), started=1, finished=1, ansible_job_id="j999.1")], light=light)
    out = action_for(host, status_errors_after_polls=1, wait_timeout_s=2).run(task_vars={})
    assert out["failed"] is True and "j999.1" in out["msg"] and "results" not in out, out
    assert host.job_file.exists()
