# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""An async job's file on the host, as ansible.builtin.async_status's module reads it: its status, and its removal
once the job finished (only a regular file of this user: async_wrapper wrote it as the job's user). Used by
job_wait's poll and by the RDMA sweep's last status poll (module_utils/perftest_sweep.py), which removes its
runner's job file in the same call instead of a task of its own."""

from __future__ import annotations

import json
import os
import stat
import time

NOT_FOUND = "could not find job"        # ansible.builtin.async_status's answer where the job has no file
REMOVED = "aifabric_job_file"           # a poll's key for the removal's outcome (job_wait's action takes it out)


def finished_value(value):
    """A job file's ``finished`` as ansible-core's own poll reads it (``int(finished) == 1``): True, 1 or "1" only."""
    return value is True or (not isinstance(value, bool) and isinstance(value, (int, str)) and str(value).strip() == "1")


def status(jid, path):
    """(answer, done): the job file as ansible.builtin.async_status's module reads it (its status mode), and whether
    it is this job's finished result (then it may be removed)."""
    if not os.path.exists(path):
        return {"failed": True, "msg": NOT_FOUND, "ansible_job_id": jid, "started": True, "finished": True}, False
    foreign = not_ours(path)
    if foreign:     # async_wrapper wrote it as this user: another user's file (or a link) is neither read nor removed
        return {"failed": True, "msg": foreign, "ansible_job_id": jid, "started": True, "finished": True}, False
    data = None
    try:
        with open(path) as handle:
            data = json.loads(handle.read())
    except Exception:       # pylint: disable=broad-except  # what async_status catches: a file being written
        if not data:
            return {"results_file": path, "ansible_job_id": jid, "started": True, "finished": False}, False
    if not isinstance(data, dict):
        return {"failed": True, "ansible_job_id": jid, "results_file": path, "started": True, "finished": True,
                "msg": "Could not parse job output: %.300s" % (data,)}, False
    if "started" not in data:
        data["finished"] = True
        data["ansible_job_id"] = jid
    elif "finished" not in data:
        data["finished"] = False
    return data, finished_value(data.get("finished")) and data.get("ansible_job_id") == jid


def poll(jid, async_dir, cleanup):
    """One poll of job_wait: the job file of ``jid`` in ``async_dir`` (``~`` and variables already expanded, as
    the module's option of type path expands them) as :func:`status` reads it; with ``cleanup`` the file of a job
    found finished is removed, its outcome under ``REMOVED``. The job_wait module runs it, and the action's light
    poll sends this file with a call of it to the host's interpreter (plugin_utils/host_program.py)."""
    path = os.path.join(async_dir, jid)
    data, done = status(jid, path)
    if done and cleanup:
        data[REMOVED] = remove(path)
    return data


def not_ours(path):
    """Why the job file at ``path`` is not the one this user's async_wrapper wrote (not a regular file, another
    owner), or None."""
    try:
        info = os.lstat(path)
    except OSError as exc:
        return "%s: %s" % (path, exc)
    if not stat.S_ISREG(info.st_mode):
        return "%s is not a regular file: neither read nor removed" % path
    if info.st_uid != os.geteuid():
        return "%s belongs to uid %d, not to this user (uid %d): neither read nor removed" % (
            path, info.st_uid, os.geteuid())
    return None


def remove(path):
    """Remove the finished job's file: ``{"erased": path}``, or ``{"error": why}`` (also for a file that is not this
    user's: not_ours)."""
    foreign = not_ours(path)
    if foreign:
        return {"error": foreign}
    try:
        os.unlink(path)
    except OSError as exc:
        return {"error": "%s: %s" % (path, exc)}
    return {"erased": path}


# the longest a poll waits for async_wrapper to write a finished job's file before it removes it (it does once the
# job's module exits, which may be just after the module said it ended); the RDMA sweep's action hands its last poll
# less where the poll's own bound leaves less
FILE_WAIT_S = 10.0


def forget(jid, async_dir, wait_s, again=False):
    """Remove the job file of ``jid`` in ``async_dir`` (``~`` expanded here, as async_wrapper did) once it holds the
    job's finished result, waiting up to ``wait_s`` for async_wrapper to write it (it does when the job's module
    exits, which may be just after the module said it ended): ``{"erased": path}`` or ``{"error": why}``. ``again``:
    an earlier call may have removed it - a file that is not there is erased."""
    path = os.path.join(os.path.expandvars(os.path.expanduser(async_dir)), jid)
    if again and not os.path.lexists(path):
        return {"erased": path}
    deadline = time.monotonic() + wait_s
    while True:
        data, done = status(jid, path)
        if done:
            return remove(path)
        if time.monotonic() >= deadline:
            return {"error": "%s: %s" % (path, data.get("msg") or "the job had not finished after %.0f s" % wait_s)}
        time.sleep(0.1)
