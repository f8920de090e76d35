# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The removal of an async job's file by the poll that finds its job ended (module_utils/async_job.forget): the RDMA
sweep's last status poll calls it for its runner. async_wrapper writes the finished file when the job's process
exits, which may be just after the runner said it ended: forget waits for it, removes only this job's finished file,
and says why when it does not."""

from __future__ import annotations

import json
import threading
import time

from ansible_collections.aifabric.acceptance.plugins.module_utils import async_job
from ansible_collections.aifabric.acceptance.plugins.module_utils.perftest_sweep import Sweep

JID = "j512186146478.4137"


def _write(path, data):
    # as async_wrapper does: the whole file at once (a temporary file renamed over it)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data))
    tmp.replace(path)


def test_the_finished_file_written_after_the_poll_began_is_waited_for_and_removed(tmp_path):
    job = tmp_path / JID
    _write(job, {"started": 1, "finished": 0, "ansible_job_id": JID})
    later = threading.Timer(0.3, _write, (job, {"changed": True, "results": [], "ansible_job_id": JID,
                                                "finished": 1}))
    later.start()
    began = time.monotonic()
    try:
        assert async_job.forget(JID, str(tmp_path), wait_s=10.0) == {"erased": str(job)}
    finally:
        later.join()
    assert not job.exists() and time.monotonic() - began < 10.0


def test_no_file_or_an_unfinished_one_is_an_error_and_an_unfinished_file_stays(tmp_path):
    out = async_job.forget(JID, str(tmp_path), wait_s=0.2)
    assert set(out) == {"error"} and async_job.NOT_FOUND in out["error"], out
    job = tmp_path / JID
    _write(job, {"started": 1, "finished": 0, "ansible_job_id": JID})
    out = async_job.forget(JID, str(tmp_path), wait_s=0.2)
    assert set(out) == {"error"} and "had not finished" in out["error"] and job.exists(), out


def test_a_file_that_names_another_job_is_not_removed(tmp_path):
    job = tmp_path / JID
    _write(job, {"changed": True, "started": 1, "finished": 1, "ansible_job_id": "j1.2"})
    assert "error" in async_job.forget(JID, str(tmp_path), wait_s=0.2)
    assert job.exists()


def test_the_directory_is_expanded_on_the_host_as_async_wrapper_did(tmp_path, monkeypatch):
    monkeypatch.setenv("HOME", str(tmp_path))
    (tmp_path / "jobs").mkdir()
    job = tmp_path / "jobs" / JID
    _write(job, {"changed": False, "finished": 1, "ansible_job_id": JID})
    assert async_job.forget(JID, "~/jobs", wait_s=1.0) == {"erased": str(job)}


def test_the_sweeps_last_poll_refuses_a_jid_that_is_not_a_job_id(tmp_path):
    victim = tmp_path / "victim"
    victim.write_text("x")
    for jid in ("../victim", "/etc/passwd", "a/b", ""):
        assert "error" in Sweep.forget_job(jid, str(tmp_path / "jobs")), jid
    assert victim.read_text() == "x"
