# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the collection created, and where each host keeps it (issue 17 items 6 and 7): statedir.own_dir /
check_own / remove_own / host_id / host_root, and every user of a state root going through host_root.
Every directory here is the test's own (tmp_path)."""

from __future__ import annotations

import json
import os
import stat
import types

import pytest

from ansible_collections.aifabric.acceptance.plugins.module_utils import statedir
from ansible_collections.aifabric.acceptance.plugins.module_utils.perftest_sweep import Sweep

FOREIGN = 65534
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another uid needs root")


def test_own_dir_makes_private_marked_directories(tmp_path):
    path = statedir.own_dir(str(tmp_path), str(tmp_path / "run" / "server-mlx5_0"))
    for directory in (tmp_path / "run", tmp_path / "run" / "server-mlx5_0"):
        assert stat.S_IMODE(os.stat(str(directory)).st_mode) == 0o700
        marker = directory / statedir.MARKER
        assert stat.S_IMODE(os.lstat(str(marker)).st_mode) == 0o600
        assert json.loads(marker.read_text())["created_by"] == statedir.CREATOR
    assert statedir.check_own(path) == path
    assert statedir.own_dir(str(tmp_path), path) == path         # an existing one of ours is reused
    assert statedir.check_own(str(tmp_path / "absent")) is None


def test_own_dir_check_mode_makes_nothing(tmp_path):
    assert statedir.own_dir(str(tmp_path), str(tmp_path / "a" / "b"), create=False) == str(tmp_path / "a" / "b")
    assert os.listdir(str(tmp_path)) == []


@pytest.mark.parametrize("how", ["unmarked", "link", "marker_link", "marker_group_writable", "marker_forged",
                                 "dir_world_writable", pytest.param("marker_foreign", marks=needs_root),
                                 pytest.param("dir_foreign", marks=needs_root)])
def test_what_the_collection_did_not_make_is_refused_and_left(tmp_path, how):
    target = tmp_path / "run"
    if how == "link":
        (tmp_path / "elsewhere").mkdir()
        target.symlink_to(tmp_path / "elsewhere")
    else:
        statedir.own_dir(str(tmp_path), str(target))
        marker = target / statedir.MARKER
        if how == "unmarked":
            marker.unlink()
        elif how == "marker_link":
            marker.unlink()
            (tmp_path / "real-marker").write_text(json.dumps({"created_by": statedir.CREATOR}))
            marker.symlink_to(tmp_path / "real-marker")
        elif how == "marker_group_writable":
            os.chmod(str(marker), 0o620)
        elif how == "marker_forged":
            marker.write_text(json.dumps({"created_by": "someone else"}))
        elif how == "dir_world_writable":
            os.chmod(str(target), 0o1777)
        elif how == "marker_foreign":
            os.chown(str(marker), FOREIGN, FOREIGN)
        elif how == "dir_foreign":
            os.chown(str(target), FOREIGN, FOREIGN)
        (target / "keep").write_text("not ours\n")
        old = os.stat(str(target)).st_mtime - 60      # not one a concurrent task is making right now
        os.utime(str(target), (old, old))
    with pytest.raises(statedir.StateError):
        statedir.check_own(str(target))
    with pytest.raises(statedir.StateError):
        statedir.own_dir(str(tmp_path), str(target / "server-mlx5_0"))
    with pytest.raises(statedir.StateError):
        statedir.remove_own(str(target))
    assert os.path.lexists(str(target))
    assert how == "link" or (target / "keep").exists()


def test_a_marker_being_written_by_a_concurrent_task_is_waited_for(tmp_path, monkeypatch):
    target = tmp_path / "run"
    target.mkdir(mode=0o700)         # a concurrent task's mkdir; its marker comes a moment later
    real_sleep = statedir.time.sleep

    def sleep(seconds):
        if not (target / statedir.MARKER).exists():
            fd = os.open(str(target), os.O_RDONLY)
            statedir._write_marker(fd, "run directory")
            os.close(fd)
        real_sleep(seconds)
    monkeypatch.setattr(statedir.time, "sleep", sleep)
    assert statedir.check_own(str(target)) == str(target)


def test_remove_own_if_empty_keeps_a_directory_with_content(tmp_path):
    run = statedir.own_dir(str(tmp_path), str(tmp_path / "run"))
    statedir.own_dir(str(tmp_path), os.path.join(run, "server-mlx5_0"))
    assert statedir.remove_own_if_empty(run) is False and statedir.check_own(run) == run
    assert statedir.remove_own(os.path.join(run, "server-mlx5_0")) is True
    assert statedir.remove_own_if_empty(run) is True and not os.path.exists(run)


def test_host_id_from_nodename_and_machine_id(tmp_path):
    machine = tmp_path / "machine-id"
    machine.write_text("3F9A0C1D2E4B5a6b7c8d9e0f1a2b3c4d\n")
    assert statedir.host_id("gpu-node-07.example", str(machine)) == "gpu-node-07.example-3f9a0c1d2e4b"
    assert statedir.host_id("gpu-node-07", str(tmp_path / "none")) == "gpu-node-07"
    assert statedir.host_id("../a b/c", str(tmp_path / "none")) == "a_b_c"
    assert statedir.host_id("", str(tmp_path / "none")) == "host"
    machine.write_text("not-a-machine-id\n")
    assert statedir.host_id("n1", str(machine)) == "n1"
    assert statedir.check_name(statedir.host_id(), "host id")          # this host's


def _run(params, check_mode=False):
    module = types.SimpleNamespace(params=params, check_mode=check_mode, warn=lambda msg: None)
    run = Sweep(module)
    run.open_state()
    return run


def test_every_user_of_a_shared_state_root_is_kept_per_host(tmp_path, monkeypatch):
    """perftest's runs, the sweep runner's directories and the governor's state file of two hosts sharing one
    state root (an NFS home) never meet."""
    params = {"state_root": str(tmp_path / "shared"), "run_id": "r1", "cpu_sysfs": str(tmp_path / "cpu"),
              "inventory_hostname": "n1", "sweep_name": "main"}
    seen = {}
    for name in ("hostA", "hostB"):
        monkeypatch.setattr(statedir, "host_id", lambda *a, **k: name)
        run = _run(params)
        mine = os.path.join(str(tmp_path / "shared"), name)
        assert run.root == mine and statedir.check_own(mine) == mine
        paths = [run.run_dir, run.sweep_dir(), run.governor.state_path, run.governor.lock_path]
        assert all(path.startswith(mine + os.sep) for path in paths), paths
        seen[name] = paths
    assert not set(seen["hostA"]) & set(seen["hostB"])
    assert sorted(os.listdir(str(tmp_path / "shared"))) == ["hostA", "hostB"]


def test_check_mode_makes_no_host_directory(tmp_path):
    run = _run({"state_root": str(tmp_path / "s"), "run_id": "r1", "cpu_sysfs": "/nonexistent", "inventory_hostname": "n",
                "sweep_name": "main"}, check_mode=True)
    assert run.root == os.path.join(str(tmp_path / "s"), statedir.host_id())
    assert not (tmp_path / "s").exists()
