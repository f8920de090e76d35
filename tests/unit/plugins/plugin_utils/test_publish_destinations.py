# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The callback's early check of the report directory (publish.check_destinations): refused before the run, not at
its end - also for root, whom os.access lets write everywhere."""

from __future__ import annotations

import os

import pytest

from ansible_collections.aifabric.acceptance.plugins.module_utils import statedir
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import publish


def test_a_report_directory_under_proc_is_refused_before_the_run_also_for_root():
    # /proc takes no new directory whoever asks (root included: os.access says yes to root); nothing is written there
    with pytest.raises(statedir.StateError) as caught:
        publish.check_destinations("/proc/aifabric-acceptance-reports")
    message = str(caught.value)
    assert "/proc/aifabric-acceptance-reports" in message
    assert "cannot be made in /proc" in message or "not writable" in message, message


def test_a_writable_report_directory_passes_and_the_probe_leaves_nothing(tmp_path):
    publish.check_destinations(str(tmp_path / "reports" / "nested"))
    assert os.listdir(str(tmp_path)) == []


def test_a_full_or_read_only_file_system_is_named(tmp_path, monkeypatch):
    # what mkdir says on a read-only mount (EROFS) reaches the message; os.access is what root sees
    def refuse(prefix=None, dir=None):    # pylint: disable=redefined-builtin
        raise OSError(30, "Read-only file system")
    monkeypatch.setattr(publish.tempfile, "mkdtemp", refuse)
    with pytest.raises(statedir.StateError) as caught:
        publish.check_destinations(str(tmp_path / "reports"))
    assert "Read-only file system" in str(caught.value) and str(tmp_path) in str(caught.value)
