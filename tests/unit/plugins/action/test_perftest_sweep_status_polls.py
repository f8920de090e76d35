# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The perftest_sweep action's wait on a runner whose status poll gives no status (its module killed, for example for
memory: ansible-core marks the output ``_ansible_parsed: False``; or an error other than a connection failure): it
polls again, as ansible-core's own async loop and job_wait do, and only that many such polls in a row fail the task -
one odd poll used to end the wait with no records while the runner went on."""

from __future__ import annotations

import copy

import pytest
from ansible.errors import AnsibleError

from ansible_collections.aifabric.acceptance.plugins.action import perftest_sweep

KILLED = {"failed": True, "_ansible_parsed": False, "msg": "MODULE FAILURE\nSee stdout/stderr for the exact error",
          "rc": 137, "module_stderr": "Killed"}
DONE = {"finished": True, "results": [{"check": "rdma.ib_write_bw", "status": "pass", "host": "n1"}]}
RUNNING = {"progress": {}}


def action(answers, monkeypatch):
    """A perftest_sweep action whose polls answer ``answers`` in turn (an exception is raised by the call)."""
    act = object.__new__(perftest_sweep.ActionModule)
    act._silent = False
    act._light = False          # the module's polls (the light poll: test_perftest_sweep_light_status.py)
    calls = []

    def call(**kwargs):
        calls.append(copy.deepcopy(kwargs))     # the wait changes its _poll in place between polls
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return dict(answer)

    act._execute_module = call
    for name, value in (("_shared", lambda args: None), ("_dead", lambda shared: {}),
                        ("_positions", lambda shared, args: {}), ("_report", lambda *a: None),
                        ("_declare_dead", lambda *a: None), ("_forget_tmp", lambda: None)):
        monkeypatch.setattr(act, name, value, raising=False)
    monkeypatch.setattr(perftest_sweep.time, "sleep", lambda s: None)
    return act, calls


ARGS = {"inventory_hostname": "n1", "poll_s": 1, "poll_timeout_s": 30, "wait_timeout_s": 60}


@pytest.mark.parametrize("odd", [KILLED, AnsibleError("the module could not be transferred")])
def test_a_poll_without_a_status_is_made_again(odd, monkeypatch):
    act, calls = action([odd, RUNNING, odd, DONE], monkeypatch)
    out = act._wait(dict(ARGS), {}, {})
    assert not out.get("failed") and out["results"] == DONE["results"] and len(calls) == 4


def test_status_polls_failing_in_a_row_fail_the_task_not_the_host(monkeypatch):
    act, calls = action([KILLED, KILLED, KILLED, DONE], monkeypatch)
    out = act._wait(dict(ARGS), {}, {})
    assert out["failed"] and not out.get("unreachable") and len(calls) == 3
    assert out["msg"].startswith("the status of the runner of n1 could not be read: 3 failed polls in a row (last: "
                                 "MODULE FAILURE")
    assert out["msg"].endswith("the runner may still be running") and out["results"] == []


def test_the_last_poll_is_told_the_runners_job_and_a_file_it_could_not_remove_is_a_warning(monkeypatch):
    """job_id: every poll hands the runner's job (its id, the shell's async_dir as async_wrapper had it) to the
    status module, whose poll that finds the runner ended removes the job file; an error of that removal is a
    warning of the task, the records stand."""
    act, calls = action([RUNNING, dict(DONE, job_file={"error": "/h/.ansible_async/j1.2: had not finished"})],
                        monkeypatch)
    monkeypatch.setattr(act, "get_shell_option", lambda name, default=None: "~/.ansible_async", raising=False)
    out = act._wait(dict(ARGS, job_id="j1.2"), {}, {})
    # the job file's wait: half of what the poll's bound (30 s) leaves past its long poll (1 s), 10 s at most
    assert [c["module_args"]["_poll"]["job"] for c in calls] == [
        {"jid": "j1.2", "async_dir": "~/.ansible_async", "wait_s": 10.0}] * 2
    act, calls = action([DONE], monkeypatch)
    monkeypatch.setattr(act, "get_shell_option", lambda name, default=None: "~/.ansible_async", raising=False)
    act._wait(dict(ARGS, job_id="j1.2", poll_timeout_s=10), {}, {})
    assert calls[0]["module_args"]["_poll"]["job"]["wait_s"] == 4.5      # (10 - 1) / 2: the poll stays in its bound
    assert not out.get("failed") and out["results"] == DONE["results"] and "job_file" not in out
    assert out["warnings"] == ["rdma sweep: the job file of runner j1.2 was not removed: /h/.ansible_async/j1.2: had "
                               "not finished"]
    act, calls = action([dict(DONE, job_file={"erased": "/h/.ansible_async/j1.2"})], monkeypatch)
    monkeypatch.setattr(act, "get_shell_option", lambda name, default=None: "~/.ansible_async", raising=False)
    out = act._wait(dict(ARGS, job_id="j1.2"), {}, {})
    assert not out.get("warnings") and "job_file" not in out


@pytest.mark.parametrize("job_id", ["../x", "/etc/passwd", "a/b"])
def test_a_job_id_that_is_not_one_fails_before_any_call(job_id, monkeypatch):
    act, calls = action([DONE], monkeypatch)
    out = act._wait(dict(ARGS, job_id=job_id), {}, {})
    assert out["failed"] and "is not a job id" in out["msg"] and calls == []


def test_a_lost_last_answer_is_asked_again_by_a_wait_that_saw_its_runner(monkeypatch):
    """A last poll whose answer is lost (past its bound) is not the end: once the wait saw its runner, every poll
    hands ``seen``, and the next one gets the answer the host kept (``given_again``); the polls before the first
    answer hand no ``seen`` (a runner not started yet must not be given an earlier runner's answer)."""
    lost = {"unreachable": True, "msg": "no answer from the host: no answer within 30 s"}
    missing = {"missing": True, "finished": False, "progress": {}}
    again = dict(DONE, given_again=True, removed=[])
    act, calls = action([missing, RUNNING, lost, again], monkeypatch)
    out = act._wait(dict(ARGS), {}, {})
    assert not out.get("failed") and not out.get("unreachable") and out["results"] == DONE["results"]
    assert [c["module_args"]["_poll"].get("seen", False) for c in calls] == [False, False, True, True]
