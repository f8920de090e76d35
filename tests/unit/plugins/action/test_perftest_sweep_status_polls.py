# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The perftest_sweep action's wait on a runner whose status poll gives no status (its module killed, for example for
memory: ansible-core marks the output ``_ansible_parsed: False``; or an error other than a connection failure): it
polls again, as ansible-core's own async loop and job_wait do, and only that many such polls in a row fail the task -
one odd poll used to end the wait with no records while the runner went on."""

from __future__ import annotations

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
    calls = []

    def call(**kwargs):
        calls.append(kwargs)
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
