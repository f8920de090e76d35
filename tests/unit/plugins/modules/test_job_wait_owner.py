# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""job_wait's poll (its module's and its light one: both module_utils/async_job.py) reads and removes a job file
only where this user's async_wrapper wrote it: a file of another user, or a link, in the job directory is neither
believed nor deleted. Every path is under the test's tmp_path."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.aifabric.acceptance.plugins.module_utils import async_job

JID = "j123456789.4242"
FOREIGN = 65534


def _job_file(tmp_path, finished=1):
    path = tmp_path / JID
    path.write_text(json.dumps({"started": 1, "finished": finished, "ansible_job_id": JID, "changed": False}))
    return path


def test_this_users_finished_job_is_read_and_removed(tmp_path):
    path = _job_file(tmp_path)
    data, done = async_job.status(JID, str(path))
    assert done and data["finished"] == 1
    assert async_job.remove(str(path)) == {"erased": str(path)} and not path.exists()


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")
def test_another_users_job_file_is_neither_believed_nor_removed(tmp_path):
    path = _job_file(tmp_path)
    os.chown(str(path), FOREIGN, FOREIGN)
    data, done = async_job.status(JID, str(path))
    assert not done and data["failed"] and "belongs to uid %d" % FOREIGN in data["msg"], data
    assert "belongs to uid" in async_job.remove(str(path))["error"] and path.exists()


def test_a_link_in_place_of_the_job_file_is_neither_followed_nor_removed(tmp_path):
    target = tmp_path / "elsewhere.json"
    target.write_text(json.dumps({"started": 1, "finished": 1, "ansible_job_id": JID}))
    (tmp_path / JID).symlink_to(target)
    data, done = async_job.status(JID, str(tmp_path / JID))
    assert not done and "not a regular file" in data["msg"]
    assert "not a regular file" in async_job.remove(str(tmp_path / JID))["error"]
    assert target.exists() and os.path.islink(str(tmp_path / JID))
