# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The sweep action's controller-side state directory follows the path rule (statedir.trusted_dir): created 0700,
refused when it pre-exists writable by others; its files never follow a planted link. Paths are the test's own."""

from __future__ import annotations

import json
import os

import pytest
from ansible import constants as C

from ansible_collections.aifabric.acceptance.plugins.action.perftest_sweep import ActionModule
from ansible_collections.aifabric.acceptance.plugins.module_utils import statedir

ARGS = {"run_id": "rdma-1", "sweep_name": "main"}


def test_state_directory_created_private_and_refused_when_others_can_write(tmp_path, monkeypatch):
    monkeypatch.setattr(C, "DEFAULT_LOCAL_TMP", str(tmp_path))
    shared = ActionModule._shared(None, ARGS)
    assert shared.startswith(str(tmp_path)) and os.stat(shared).st_mode & 0o777 == 0o700
    os.chmod(shared, 0o777)
    with pytest.raises(statedir.StateError, match="writable by group or others"):
        ActionModule._shared(None, ARGS)


def test_state_file_replaces_a_planted_link(tmp_path, monkeypatch):
    monkeypatch.setattr(C, "DEFAULT_LOCAL_TMP", str(tmp_path))
    shared = ActionModule._shared(None, ARGS)
    victim = tmp_path / "victim"
    victim.write_text("precious")
    os.symlink(str(victim), os.path.join(shared, "dead-node1.json"))
    os.symlink(str(victim), os.path.join(shared, "dead-node1.json.tmp.%d" % os.getpid()))   # the old temp name
    ActionModule._write(os.path.join(shared, "dead-node1.json"), {"why": "silent"})
    assert victim.read_text() == "precious"
    assert json.loads(open(os.path.join(shared, "dead-node1.json")).read()) == {"why": "silent"}
