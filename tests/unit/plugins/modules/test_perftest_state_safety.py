# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""perftest's per-run state cannot be turned against the host (issue 9 item 1).

Each test here failed before state roots were checked and paths contained: ``run_id: ".."`` removed the
siblings of the state root, forged ``handles`` removed any directory and killed any process, a state root
owned by another user (or world-writable, or a symlink) was used as is, and a planted symlink made the
module truncate the file it points to.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules.module_harness import Exit, patch_exits

from ansible_collections.aifabric.acceptance.plugins.module_utils import state_child, statedir
from ansible_collections.aifabric.acceptance.plugins.module_utils.proc import process_start_time
from ansible_collections.aifabric.acceptance.plugins.modules import perftest


@pytest.fixture(autouse=True)
def exits(monkeypatch):
    patch_exits(monkeypatch)


def call(args):
    with patch_module_args(args):
        with pytest.raises(Exit) as info:
            perftest.main()
    return info.value


def _victim(tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious").write_text("keep me")
    return victim


def _inside(base, path):
    real = os.path.realpath(path)
    return real == base or real.startswith(base + os.sep)


# Every run id here resolves inside the test's own tmp_path, so that even a module without the fix can only
# damage the test's files ("ABS" stands for an absolute path of the test's victim directory, never a system path).
@pytest.mark.parametrize("run_id", ["..", ".", "../victim", "a/b", "ABS", "", ".hidden", "x" * 200, "a\nb"])
def test_absent_refuses_run_ids_that_leave_the_state_root(tmp_path, run_id):
    victim = _victim(tmp_path)
    root = tmp_path / "state"
    root.mkdir(mode=0o700)
    if run_id == "ABS":
        run_id = str(victim)
    base = os.path.realpath(str(tmp_path))
    assert _inside(base, os.path.join(str(root), run_id)), "unsafe test input: it could reach outside tmp_path"
    out = call({"state": "absent", "run_id": run_id, "state_root": str(root)})
    assert out.failed and "run_id" in out.kwargs["msg"]
    assert (victim / "precious").read_text() == "keep me"
    assert sorted(os.listdir(str(tmp_path))) == ["state", "victim"]


def test_forged_handles_cannot_even_be_given(tmp_path):
    """The handles ``state: collect`` took from the controller are gone with that protocol (issue 20: one RDMA
    protocol, the sweep runner, which reads only the handles it wrote in its own marked directories - see
    test_perftest_state_ownership). A forged handle is refused as an unknown option, before anything is read,
    removed or killed."""
    victim = _victim(tmp_path)
    root = tmp_path / "state"
    secret = tmp_path / "secret"
    secret.write_text("root:not-for-the-output")
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        forged = {"state_dir": str(victim), "pid": sleeper.pid, "pgid": sleeper.pid,
                  "proc_start_time": process_start_time(sleeper.pid), "stdout": str(secret),
                  "stderr": str(secret), "rc_file": str(victim / "rc.json"), "device": "mlx5_0", "index": 0,
                  "test": "ib_write_bw"}
        for state in ("collect", "absent"):
            out = call({"state": state, "run_id": "r1", "state_root": str(root), "handles": [forged]})
            assert out.failed and ("handles" in out.kwargs["msg"] or "state" in out.kwargs["msg"]), out.kwargs
            assert sleeper.poll() is None, "a forged handle killed an unrelated process"
            assert (victim / "precious").read_text() == "keep me"
            assert "not-for-the-output" not in json.dumps(out.kwargs)   # nothing of the forged paths was read back
        assert not root.exists()
    finally:
        sleeper.kill()
        sleeper.wait()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give the directory to another user")
def test_state_root_owned_by_another_user_is_refused(tmp_path):
    root = tmp_path / "state"
    root.mkdir(mode=0o700)
    os.chown(str(root), 65534, 65534)
    out = call({"state": "absent", "run_id": "r1", "state_root": str(root)})
    assert out.failed and "owned by uid 65534" in out.kwargs["msg"]


def test_group_or_world_writable_or_symlinked_state_root_is_refused(tmp_path):
    root = tmp_path / "state"
    root.mkdir()
    os.chmod(str(root), 0o777)
    out = call({"state": "absent", "run_id": "r1", "state_root": str(root)})
    assert out.failed and "writable by group or others" in out.kwargs["msg"]
    real = tmp_path / "real"
    real.mkdir(mode=0o700)
    link = tmp_path / "link"
    link.symlink_to(real)
    out = call({"state": "absent", "run_id": "r1", "state_root": str(link)})
    assert out.failed and "symbolic link" in out.kwargs["msg"]


def test_new_state_root_is_private(tmp_path):
    root = tmp_path / "fresh" / "state"
    out = call({"state": "absent", "run_id": "r1", "state_root": str(root)})
    assert not out.failed
    assert (os.stat(str(root)).st_mode & 0o777) == 0o700


def test_planted_symlink_is_not_followed(tmp_path):
    victim = _victim(tmp_path)
    state_dir = tmp_path / "job"
    statedir.own_dir(str(tmp_path), str(state_dir))      # a directory of the collection (issue 17)
    (state_dir / "stdout").symlink_to(victim / "precious")
    handle = state_child.start([sys.executable, "-c", "print('hello')"], 10, str(state_dir))
    state_child.wait(handle, 10)
    assert (victim / "precious").read_text() == "keep me"
    assert state_child.read(handle)[0] == "hello\n"


def test_strict_names():
    for good in ("r1", "rdma-20261123T101010-3f9a", "mlx5_0", "a.b:c"):
        assert statedir.check_name(good, "run_id") == good
    for bad in ("..", ".", "", "a/b", ".x", "-x", "x" * 129, None, 5):
        with pytest.raises(statedir.StateError):
            statedir.check_name(bad, "run_id")


def test_contained_paths(tmp_path):
    root = statedir.open_root(str(tmp_path / "root"))
    assert statedir.contained(root, os.path.join(root, "r1", "server-mlx5_0")).startswith(root + os.sep)
    for outside in (root, os.path.dirname(root), os.path.join(root, "..", "x"), str(tmp_path / "elsewhere")):
        with pytest.raises(statedir.StateError):
            statedir.contained(root, outside)
    (tmp_path / "elsewhere").mkdir()
    os.symlink(str(tmp_path / "elsewhere"), os.path.join(root, "escape"))
    with pytest.raises(statedir.StateError):
        statedir.contained(root, os.path.join(root, "escape", "file"))


def test_random_run_id_is_unguessable():
    first, second = statedir.new_run_id("rdma"), statedir.new_run_id("rdma")
    assert first != second and first.startswith("rdma-") and len(first) >= len("rdma-") + 32
    assert statedir.check_name(first, "run_id") == first


def test_governor_state_files_do_not_follow_planted_links(tmp_path):
    from ansible_collections.aifabric.acceptance.plugins.module_utils.governor import Governor
    victim = _victim(tmp_path)
    cpu = tmp_path / "cpu" / "cpu0" / "cpufreq"
    cpu.mkdir(parents=True)
    (cpu / "scaling_governor").write_text("schedutil\n")
    (cpu / "scaling_available_governors").write_text("performance schedutil\n")
    root = tmp_path / "state"
    root.mkdir(mode=0o700)
    (root / "governor.json.tmp").symlink_to(victim / "precious")
    governor = Governor(str(root / "governor.json"), root=str(tmp_path / "cpu"))
    governor.acquire("h1", os.getpid(), target="performance")
    assert (cpu / "scaling_governor").read_text().strip() == "performance"
    governor.release("h1")
    assert (cpu / "scaling_governor").read_text().strip() == "schedutil"
    assert (victim / "precious").read_text() == "keep me"
    (root / "governor.json.lock").unlink()
    (root / "governor.json.lock").symlink_to(victim / "precious")
    with pytest.raises(OSError):
        governor.acquire("h2", os.getpid(), target="performance")
    assert (victim / "precious").read_text() == "keep me"
