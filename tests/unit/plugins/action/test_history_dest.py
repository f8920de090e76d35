# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""history operation=export/index: ``dest`` passes the path rule BEFORE it is opened (issue 34: a FIFO planted at
``dest`` hung the play on the open). The directory the test created stands in for the report directory."""

from __future__ import annotations

import os
import signal

import pytest

from ansible_collections.aifabric.acceptance.plugins.action import history as history_action
from ansible_collections.aifabric.acceptance.plugins.module_utils import statedir


@pytest.fixture(autouse=True)
def _bounded():
    """A hang fails the test after 10 s instead of blocking the run."""
    def _alarm(_signum, _frame):
        raise TimeoutError("opening dest blocked")
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(10)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, previous)


def test_a_fifo_at_dest_is_refused_without_blocking(tmp_path):
    os.mkfifo(str(tmp_path / "export.jsonl"))
    with pytest.raises(statedir.StateError, match="not a regular file"):
        history_action._changed(str(tmp_path / "export.jsonl"), "{}\n")


def test_a_link_at_dest_is_refused(tmp_path):
    (tmp_path / "elsewhere").write_text("{}\n")
    os.symlink(str(tmp_path / "elsewhere"), str(tmp_path / "export.jsonl"))
    with pytest.raises(statedir.StateError, match="symbolic link"):
        history_action._changed(str(tmp_path / "export.jsonl"), "{}\n")


def test_a_directory_others_can_write_is_refused_before_anything_is_opened(tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(str(shared), 0o777)
    os.mkfifo(str(shared / "export.jsonl"))
    with pytest.raises(statedir.StateError, match="writable by group or others"):
        history_action._changed(str(shared / "export.jsonl"), "{}\n")


def test_a_regular_file_is_compared(tmp_path):
    dest = tmp_path / "export.jsonl"
    assert history_action._changed(str(dest), "{}\n") is True
    dest.write_text("{}\n")
    assert history_action._changed(str(dest), "{}\n") is False
    assert history_action._changed(str(dest), "[]\n") is True
