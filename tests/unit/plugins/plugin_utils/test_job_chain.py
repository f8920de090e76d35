# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Jobs that run one after the other on a host, started in one call (plugin_utils/job_chain.py): the program a host's
interpreter reads on its standard input, run for real here with the installed ansible-core's own async_wrapper and
modules that answer as modules do (stand-ins that note when they ran): every job gets a "running" file under the id
the controller gave it at once, then its module's result there, in order, one job at a time; a job whose result failed
ends the chain (the later ones skipped, "not run"); a job past its limit is async_wrapper's "Timeout exceeded"; what
the chain staged is gone after. Every path is under the test's tmp_path."""

from __future__ import annotations

import inspect
import json
import os
import subprocess
import sys
import time

import pytest
from ansible.modules import async_wrapper

from ansible_collections.aifabric.acceptance.plugins.module_utils import async_job
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import job_chain
from ansible_collections.aifabric.acceptance.plugins.plugin_utils.one_call_start import wrapper_argv

MODULE = """#!{python}
import json, os, sys, time
with open({path!r}, "a") as out:
    out.write(repr(time.time()) + "\\n")
time.sleep({sleep_s!r})
with open({path!r}, "a") as out:
    out.write(repr(time.time()) + "\\n")
print(json.dumps({result!r}))
"""


def _wrapper():
    with open(async_wrapper.__file__, "rb") as handle:
        return handle.read()


def _module(spans, name, sleep_s, result):
    return MODULE.format(python=sys.executable, path=str(spans / name), sleep_s=sleep_s, result=result).encode()


def _run_chain(tmp_path, jobs):
    """Start the chain of ``jobs`` ([(name, sleep_s, result, limit_s)]): (its answer, the job directory, the spans
    directory, the remote temporary directory)."""
    spans, remote_tmp, async_dir = tmp_path / "spans", tmp_path / "remote-tmp", tmp_path / "jobs"
    spans.mkdir()
    wrapper = _wrapper()
    program = job_chain.program(
        inspect.getsource(async_job), str(remote_tmp), "async_wrapper.py", wrapper,
        [("j7.%d" % (i + 1), limit, "AnsiballZ_%s.py" % name, _module(spans, name, sleep_s, result),
          wrapper_argv(wrapper, "j7.%d-w" % (i + 1), limit)) for i, (name, sleep_s, result, limit) in enumerate(jobs)])
    env = dict(os.environ, ANSIBLE_ASYNC_DIR=str(async_dir), PYTHONPATH=os.pathsep.join(sys.path))
    started = subprocess.run([sys.executable], input=program.encode(), env=env, capture_output=True, timeout=60,
                             check=False)
    assert started.returncode == 0, started.stderr
    return json.loads(started.stdout.decode().strip().splitlines()[-1]), async_dir, spans, remote_tmp


def _results(async_dir, ids, limit_s=60):
    """Each job's file as job_wait reads it (async_job.status) once every one is finished: {id: data}."""
    deadline = time.monotonic() + limit_s
    while True:
        got = dict((jid, async_job.status(jid, str(async_dir / jid))) for jid in ids)
        if all(done for _data, done in got.values()) or time.monotonic() > deadline:
            return dict((jid, data) for jid, (data, _done) in got.items())
        time.sleep(0.1)


def _span(spans, name):
    with open(spans / name) as handle:
        return [float(x) for x in handle.read().split()]


def _nothing_staged_left(remote_tmp, limit_s=30):
    """async_wrapper removes each job's directory once its job ended (its watcher, within a few seconds)."""
    deadline = time.monotonic() + limit_s
    while os.listdir(remote_tmp) and time.monotonic() < deadline:
        time.sleep(0.2)
    return os.listdir(remote_tmp) == []


def test_the_jobs_run_one_after_the_other_each_with_its_modules_result(tmp_path):
    first = {"changed": False, "results": [{"check": "gpu.gemm", "status": "pass"}]}
    second = {"changed": False, "results": [{"check": "nccl.all_reduce", "status": "fail"}], "msg": "slow"}
    answer, async_dir, spans, remote_tmp = _run_chain(tmp_path, [("gemm", 1.0, first, 60), ("nccl", 0.2, second, 60)])
    assert answer["jobs"] == ["j7.1", "j7.2"] and answer["ansible_job_id"] == "j7.1", answer
    # at the answer every job already reads as running (its wait may poll at once)
    early = dict((jid, async_job.status(jid, str(async_dir / jid))) for jid in answer["jobs"])
    assert all(not done and data.get("started") for data, done in early.values()), early
    results = _results(async_dir, answer["jobs"])
    assert results["j7.1"]["results"] == first["results"] and results["j7.2"]["results"] == second["results"], results
    assert results["j7.2"]["msg"] == "slow" and results["j7.1"]["ansible_job_id"] == "j7.1"
    gemm, nccl = _span(spans, "gemm"), _span(spans, "nccl")
    assert gemm[1] <= nccl[0], (gemm, nccl)            # the second began once the first had ended
    # only the jobs' files are left (job_wait removes them); async_wrapper's own files went with their directories
    assert sorted(os.listdir(async_dir)) == ["j7.1", "j7.2"]
    assert _nothing_staged_left(remote_tmp)


def test_a_failed_job_ends_the_chain_and_the_later_jobs_say_they_did_not_run(tmp_path):
    failed = {"failed": True, "msg": "nvidia-smi not found", "results": []}
    answer, async_dir, spans, remote_tmp = _run_chain(
        tmp_path, [("probe", 0.1, failed, 60), ("gemm", 0.1, {"changed": False}, 60), ("nccl", 0.1, {}, 60)])
    results = _results(async_dir, answer["jobs"])
    assert results["j7.1"]["failed"] is True and results["j7.1"]["msg"] == "nvidia-smi not found", results
    for jid in ("j7.2", "j7.3"):
        assert results[jid]["skipped"] is True and results[jid]["finished"] is True, results[jid]
        assert results[jid]["msg"] == ("not run: job j7.1 of this host's chain failed before it: nvidia-smi not found")
    assert os.listdir(spans) == ["probe"]               # neither later module ran
    assert _nothing_staged_left(remote_tmp)


def test_a_job_past_its_limit_is_async_wrappers_timeout_and_ends_the_chain(tmp_path):
    answer, async_dir, spans, remote_tmp = _run_chain(
        tmp_path, [("gemm", 30, {"changed": False}, 1), ("nccl", 0.1, {"changed": False}, 60)])
    results = _results(async_dir, answer["jobs"], limit_s=60)
    assert results["j7.1"]["failed"] is True and results["j7.1"]["msg"] == "Timeout exceeded", results
    assert results["j7.2"]["skipped"] is True and "Timeout exceeded" in results["j7.2"]["msg"], results
    assert len(_span(spans, "gemm")) == 1               # killed in its sleep (async_wrapper's kill of its group)
    assert _nothing_staged_left(remote_tmp)


def test_a_chain_that_cannot_stage_leaves_nothing(tmp_path):
    """The job directory cannot be made (a file in its place): the program fails before it answers, and removes what
    it staged (no job file, no directory of the chain's)."""
    (tmp_path / "jobs").write_text("not a directory")
    wrapper = _wrapper()
    program = job_chain.program(inspect.getsource(async_job), str(tmp_path / "remote-tmp"), "async_wrapper.py",
                                wrapper, [("j7.1", 60, "AnsiballZ_x.py", b"print(1)", wrapper_argv(wrapper, "j7.1-w", 60))])
    env = dict(os.environ, ANSIBLE_ASYNC_DIR=str(tmp_path / "jobs"))
    done = subprocess.run([sys.executable], input=program.encode(), env=env, capture_output=True, timeout=60, check=False)
    assert done.returncode != 0 and b"jobs" in done.stderr and not done.stdout.strip(), done
    assert os.listdir(tmp_path / "remote-tmp") == []


@pytest.mark.parametrize("jobs, message", [
    ([], "jobs is empty"), ([{"module": "x", "timeout_s": 5}], "fully qualified"),
    ([{"module": "a.b.c", "timeout_s": 0}], "timeout_s must be 1 or more")])
def test_bad_jobs_are_refused_before_any_call(jobs, message):
    from ansible_collections.aifabric.acceptance.plugins.action import job_chain as action  # pylint: disable=import-outside-toplevel
    problem = action._problem([dict({"args": {}, "name": None}, **job) for job in jobs])    # pylint: disable=protected-access
    assert message in problem, problem


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="needs Linux /proc")
def test_a_start_that_gets_no_answer_is_bounded_and_the_host_unreachable(monkeypatch):
    """The chain's start is one call to the host: one that never answers (a silent host, no SSH keep-alives) is
    stopped at the action's own bound (its SSH client killed), whatever the task's timeout, and the host is
    unreachable."""
    import types  # pylint: disable=import-outside-toplevel
    from ansible_collections.aifabric.acceptance.plugins.action import job_chain as action  # pylint: disable=import-outside-toplevel
    monkeypatch.setattr(action, "CALL_LIMIT_S", 1.0)
    started = []

    def silent_start(*_args):
        proc = subprocess.Popen(["sleep", "600"], stdout=subprocess.PIPE)
        started.append(proc)
        try:
            return proc.stdout.read()
        finally:
            proc.stdout.close()
            proc.wait()

    task = types.SimpleNamespace(args={"jobs": [{"module": "aifabric.acceptance.gemm_bench", "timeout_s": 60}]},
                                 async_val=0, check_mode=False, action="aifabric.acceptance.job_chain", environment=[])
    chain = action.ActionModule(task, types.SimpleNamespace(_shell=types.SimpleNamespace(tmpdir=None)),
                                None, None, None, None)
    chain._start = silent_start     # pylint: disable=protected-access
    t0 = time.monotonic()
    out = chain.run(task_vars={})
    assert out["unreachable"] is True and "no answer within 1 s" in out["msg"], out
    assert time.monotonic() - t0 < 30
    deadline = time.monotonic() + 10
    while started[0].poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert started[0].poll() is not None        # the process holding the call was stopped
