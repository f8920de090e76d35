# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""perftest deletes and kills only what it recorded creating; hosts sharing a state root stay apart (issue 17
items 6 and 7).

Before: ``state: absent`` took any directory owned by the user (root: ``state_root: /`` with ``run_id: etc``)
as its run and emptied it, took a world-writable one (``run_id: tmp``) as its run, and killed the process named
by any ``handle.json`` it found there (another user's, group-writable, or without the process start time that
identifies the process). Two hosts sharing a state root (an NFS home) collected each other's servers.

The servers here are the sweep runner's (the one RDMA protocol, issue 20): started the way the runner starts them
(PerftestRun.start into a step directory of the run), and left behind as a runner that stopped without its cleanup
leaves them. What removes them: module perftest ``state: absent``, and the sweep's own cleanup (``phase: status``
once its runner ended).

Every path here lies in the test's own tmp_path (asserted before the module runs): a root-owned directory made
by the test stands in for ``/``. Processes that must survive are ``sleep`` processes the test started.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap

import pytest
import types

from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args
from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules.module_harness import Exit, patch_exits

from ansible_collections.aifabric.acceptance.plugins.module_utils import state_child, statedir
from ansible_collections.aifabric.acceptance.plugins.module_utils.perftest_run import PerftestRun
from ansible_collections.aifabric.acceptance.plugins.module_utils.proc import process_start_time
from ansible_collections.aifabric.acceptance.plugins.modules import perftest, perftest_sweep

HERE = os.path.dirname(os.path.abspath(__file__))
FAKE_DIR = os.path.join(HERE, "..", "..", "..", "integration", "fake_perftest")
FOREIGN = 65534
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another uid needs root")


@pytest.fixture(autouse=True)
def exits(monkeypatch):
    patch_exits(monkeypatch)


@pytest.fixture
def host(monkeypatch):
    """This process's host identity in state paths (``statedir.host_id``), switchable by the test."""
    current = {"id": "hostA"}
    monkeypatch.setattr(statedir, "host_id", lambda *a, **k: current["id"], raising=False)
    return current


@pytest.fixture
def sleeper():
    """An unrelated process the test owns, leading its own process group as daemons do: nothing here may kill it."""
    proc = subprocess.Popen([shutil.which("sleep"), "120"], start_new_session=True)
    try:
        yield proc
    finally:
        proc.kill()
        proc.wait()


@pytest.fixture
def fake(tmp_path, monkeypatch):
    conf = tmp_path / "fake.json"
    conf.write_text(json.dumps({"default": {"duration_s": 0.3, "log": str(tmp_path / "fake.log")}}))
    monkeypatch.setenv("FAKE_PERFTEST_CONFIG", str(conf))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return {"tool_dir": FAKE_DIR, "port": port, "inventory_hostname": "me", "peer_name": "other",
            "sysfs_root": "/nonexistent", "timeout_s": 30}


def call(module, args):
    with patch_module_args(args):
        with pytest.raises(Exit) as info:
            module.main()
    return info.value


def inside(tmp_path, *paths):
    base = os.path.realpath(str(tmp_path))
    for path in paths:
        real = os.path.realpath(str(path))
        assert real.startswith(base + os.sep), "unsafe test input: %s is outside the test's directory" % path


def plant(directory, pid, **over):
    """A handle.json naming ``pid`` (with its real start time unless overridden), as another user would plant it."""
    directory.mkdir(parents=True, exist_ok=True)
    handle = {"pid": pid, "pgid": pid, "proc_start_time": process_start_time(pid), "argv": ["sleep", "120"],
              "state_dir": str(directory), "rc_file": str(directory / "rc.json"), "stdout": str(directory / "stdout"),
              "stderr": str(directory / "stderr"), "started": 0, "supervisor_pid": pid}
    handle.update(over)
    path = directory / "handle.json"
    if path.exists():
        path.unlink()
    path.write_text(json.dumps(handle))
    os.chmod(str(path), 0o600)
    return path


def system_like_root(tmp_path):
    """A directory standing in for ``/``: owned by the user running the test (root here), mode 0755."""
    slash = tmp_path / "slash"
    slash.mkdir()
    os.chmod(str(slash), 0o755)
    return slash


def test_absent_on_a_system_like_root_removes_nothing_it_did_not_create(tmp_path, host):
    slash = system_like_root(tmp_path)
    (slash / "etc" / "ssh").mkdir(parents=True)
    (slash / "etc" / "passwd").write_text("root:x:0:0::/root:/bin/sh\n")
    (slash / "etc" / "ssh" / "sshd_config").write_text("PermitRootLogin no\n")
    inside(tmp_path, slash / "etc")
    absent = {"state": "absent", "state_root": str(slash), "run_id": "etc"}
    out = call(perftest, absent)
    assert not out.failed, out.kwargs
    assert (slash / "etc" / "passwd").read_text().startswith("root:")
    assert (slash / "etc" / "ssh" / "sshd_config").exists()
    assert out.kwargs["removed"] == [] and not out.kwargs["changed"]
    # the same name in this host's own state directory, made by someone else (no marker of the collection)
    foreign_run = slash / "hostA" / "etc"
    foreign_run.mkdir()
    (foreign_run / "keep").write_text("not ours\n")
    out = call(perftest, absent)
    assert not out.failed, out.kwargs
    assert (foreign_run / "keep").exists() and out.kwargs["removed"] == []
    assert any("not created by" in why for why in out.kwargs["left"]), out.kwargs
    # a host directory somebody else made (on a shared root) is refused before anything is looked at
    host["id"] = "hostB"
    (slash / "hostB" / "etc").mkdir(parents=True)
    (slash / "hostB" / "etc" / "keep").write_text("not ours\n")
    out = call(perftest, absent)
    assert out.failed and "was not created by this collection" in out.kwargs["msg"]
    assert (slash / "hostB" / "etc" / "keep").exists()


# Run inside a private mount namespace, on a tmpfs mounted over a directory of the test: whatever the module did,
# it could only reach that tmpfs, which is gone with the namespace.
IN_NAMESPACE = textwrap.dedent("""
    import json, os, subprocess, sys, types
    slash = sys.argv[1]
    subprocess.run(["mount", "-t", "tmpfs", "-o", "mode=0755,size=16m", "tmpfs", slash], check=True, timeout=30)
    assert os.path.ismount(slash)
    os.makedirs(os.path.join(slash, "etc", "ssh"))
    with open(os.path.join(slash, "etc", "passwd"), "w") as handle:
        handle.write("root:x:0:0::/root:/bin/sh\\n")
    from ansible_collections.aifabric.acceptance.plugins.module_utils import statedir
    from ansible_collections.aifabric.acceptance.plugins.module_utils.perftest_run import PerftestRun
    statedir.host_id = lambda *a, **k: "hostA"
    params = {"state": "absent", "state_root": slash, "run_id": "etc", "from_output": None, "inventory_hostname": "n",
              "cpu_sysfs": "/nonexistent"}
    out = PerftestRun(types.SimpleNamespace(params=params, check_mode=False, warn=lambda msg: None)).run()
    print(json.dumps({"out": out, "etc": sorted(os.listdir(os.path.join(slash, "etc")))}))
""")


@pytest.mark.skipif(os.geteuid() != 0 or not shutil.which("unshare"), reason="needs root and unshare(1)")
def test_absent_on_a_tmpfs_root_in_a_private_mount_namespace(tmp_path):
    slash = tmp_path / "slash"
    slash.mkdir()
    inside(tmp_path, slash / "etc")
    run = subprocess.run([shutil.which("unshare"), "--mount", "--propagation", "private", "--", sys.executable, "-c",
                          IN_NAMESPACE, str(slash)], capture_output=True, text=True, timeout=120, check=False,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p)))
    assert run.returncode == 0, run.stderr[-3000:]
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["etc"] == ["passwd", "ssh"], result
    assert result["out"]["removed"] == [] and not result["out"]["changed"], result
    assert os.listdir(str(slash)) == []             # the tmpfs was private to the namespace


def test_absent_never_takes_a_world_writable_directory_as_its_run(tmp_path, host, sleeper):
    slash = system_like_root(tmp_path)
    absent = {"state": "absent", "state_root": str(slash), "run_id": "tmp"}
    assert not call(perftest, absent).failed      # (the host's own directory is made now)
    planted = []
    for tmp in (slash / "tmp", slash / "hostA" / "tmp"):     # where the run dir of run_id "tmp" was / is
        tmp.mkdir(parents=True, exist_ok=True)
        os.chmod(str(tmp), 0o1777)
        planted.append(plant(tmp / "server-mlx5_0", sleeper.pid))
    inside(tmp_path, *planted)
    out = call(perftest, absent)
    assert not out.failed, out.kwargs
    assert sleeper.poll() is None, "a handle planted in a world-writable directory killed an unrelated process"
    assert all(path.exists() for path in planted)
    assert out.kwargs["removed"] == []
    assert any("writable by group or others" in why for why in out.kwargs["left"]), out.kwargs


UNTRUSTED = ("unmarked_dir", "group_writable", "foreign_owner")     # the others: a handle of ours, a stale pid
STEP_DIR = "sweep-main-me-s0-mlx5_0"       # the runner's server of step 0 on mlx5_0 (sweep_name main, host me)


def leftover_server(fake, root):
    """A server the sweep runner of host ``me`` started (its step directory, marked; its handle; its process)."""
    params = {"state_root": str(root), "run_id": "r1", "inventory_hostname": "me", "cpu_sysfs": "/nonexistent"}
    run = PerftestRun(types.SimpleNamespace(params=params, check_mode=False, warn=lambda msg: None))
    run.open_state()
    argv = [os.path.join(FAKE_DIR, "ib_write_bw"), "-d", "mlx5_0", "-p", str(fake["port"])]
    return run.start(argv, fake["timeout_s"], run.inside(STEP_DIR),
                     extra={"device": "mlx5_0", "host_name": "me", "run_id": "r1"})


def _tamper(kind, run_dir, server_dir, pid):
    """Plant a handle naming ``pid`` the way ``kind`` says; returns the directory it is in."""
    if kind == "unmarked_dir":       # a directory of the run (a step of the runner's) the collection did not create
        where = run_dir / "sweep-main-me-s1-mlx5_9"
        where.mkdir(mode=0o700)
        plant(where, pid)
        return where
    if kind == "no_start_time":      # a handle that cannot tell whether the pid is still the process it started
        plant(server_dir, pid, proc_start_time=None)
    elif kind == "wrong_start_time":
        plant(server_dir, pid, proc_start_time=1)
    elif kind == "group_writable":
        os.chmod(str(plant(server_dir, pid)), 0o620)
    elif kind == "foreign_owner":
        os.chown(str(plant(server_dir, pid)), FOREIGN, FOREIGN)
    return server_dir


def _clean(how, fake, root, monkeypatch):
    """Remove the run's leftovers: module perftest state=absent, or the sweep's cleanup (phase=status once the
    runner of host ``me`` ended); (result, what was left alone and why)."""
    if how == "absent":
        out = call(perftest, {"state": "absent", "state_root": str(root), "run_id": "r1"})
        return out, out.kwargs.get("left", [])
    warned = []
    monkeypatch.setattr(basic.AnsibleModule, "warn", lambda self, message: warned.append(message))
    args = dict(fake, state_root=str(root), run_id="r1", sweep_name="main", hcas=["mlx5_0"], lease_s=0)
    del args["peer_name"]
    assert not call(perftest_sweep, dict(args, phase="run", schedule=[])).failed
    out = call(perftest_sweep, dict(args, phase="status"))
    return out, warned


@pytest.mark.parametrize("kind", ["unmarked_dir", "no_start_time", "wrong_start_time", "group_writable",
                                  pytest.param("foreign_owner", marks=needs_root)])
@pytest.mark.parametrize("how", ["absent", "sweep_cleanup"])
def test_only_handles_the_collection_wrote_are_acted_on(tmp_path, monkeypatch, host, sleeper, fake, kind, how):
    root = tmp_path / "state"
    handle = leftover_server(fake, root)
    server_dir = type(tmp_path)(handle["state_dir"])
    run_dir = server_dir.parent
    inside(tmp_path, server_dir)
    where = _tamper(kind, run_dir, server_dir, sleeper.pid)
    try:
        out, left = _clean(how, fake, root, monkeypatch)
        assert not out.failed, out.kwargs
        assert sleeper.poll() is None, "%s killed the process of a handle it did not write (%s)" % (how, kind)
        if kind in UNTRUSTED:
            assert where.is_dir(), "%s removed a directory it could not trust (%s)" % (how, kind)
            assert any(str(where) in why for why in left), (out.kwargs, left)
        if kind == "unmarked_dir":
            # the server the collection started itself is still found, stopped and removed
            # (the server is this test's own child: reaped by alive(), then gone)
            assert not server_dir.exists() and not state_child.alive(handle) and process_start_time(handle["pid"]) is None
    finally:
        if process_start_time(handle["pid"]) == handle["proc_start_time"]:
            os.killpg(handle["pid"], 9)


def test_sweep_cleanup_leaves_what_it_did_not_create(tmp_path, host, sleeper, fake):
    root = tmp_path / "state"
    args = dict(fake, state_root=str(root), run_id="r1", sweep_name="main", hcas=["mlx5_0"], lease_s=0)
    del args["peer_name"]
    run = call(perftest_sweep, dict(args, phase="run", schedule=[]))
    assert not run.failed, run.kwargs
    run_dir = [os.path.join(d, "r1") for d, _s, files in os.walk(str(root)) if "r1" in _s][0]
    planted = type(tmp_path)(run_dir) / "sweep-main-me-s0-mlx5_0"
    inside(tmp_path, planted)
    plant(planted, sleeper.pid)
    out = call(perftest_sweep, dict(args, phase="status"))
    assert not out.failed, out.kwargs
    assert out.kwargs["finished"]
    assert sleeper.poll() is None, "the sweep's cleanup killed the process of a handle it did not write"
    assert planted.is_dir()


def test_two_hosts_sharing_a_state_root_never_see_each_other(tmp_path, host, fake):
    """An NFS home as state root: host B's sweep cleanup and absent must not find host A's servers."""
    root = tmp_path / "shared"
    handle = leftover_server(fake, root)
    try:
        host["id"] = "hostB"
        args = dict(fake, state_root=str(root), run_id="r1", sweep_name="main", hcas=["mlx5_0"], lease_s=0)
        del args["peer_name"]
        assert not call(perftest_sweep, dict(args, phase="run", schedule=[])).failed
        other = call(perftest_sweep, dict(args, phase="status"))      # host B's runner is "me" too (same sweep_name)
        assert not other.failed, other.kwargs
        assert handle["state_dir"] not in other.kwargs["removed"], "host B's sweep cleanup took host A's server"
        gone = call(perftest, {"state": "absent", "state_root": str(root), "run_id": "r1", "inventory_hostname": "b"})
        # host B's own: the answer its sweep's last poll kept (given again after a lost answer); nothing of host A's
        assert gone.kwargs["removed"] == [str(root / "hostB" / "r1" / "answer-main-me")]
        assert process_start_time(handle["pid"]) == handle["proc_start_time"], "host B killed A's server"
        assert os.path.isdir(handle["state_dir"])
        host["id"] = "hostA"
        mine = call(perftest, {"state": "absent", "state_root": str(root), "run_id": "r1"})
        assert handle["state_dir"] in mine.kwargs["removed"]
        assert any(item.startswith("killed pid %s " % handle["pid"]) for item in mine.kwargs["removed"])
    finally:
        if process_start_time(handle["pid"]) == handle["proc_start_time"]:
            os.killpg(handle["pid"], 9)
