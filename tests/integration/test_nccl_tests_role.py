# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Role aifabric.acceptance.nccl_tests on localhost: tarball install (checksum checked), idempotence,
verification of the binaries (-h, version line, MPI linkage), refusals. The binaries are the
stand-in (fixtures/fake_nccl_tests), which prints the real nccl-tests 2.19.6 output."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tarfile

import pytest

from ansible_collections.aifabric.acceptance.tests.integration.conftest import collections_path
from ansible_collections.aifabric.acceptance.tests.integration.fixtures.fake_nccl_tests import fake_perf

BINARIES = ["all_reduce_perf", "all_gather_perf", "reduce_scatter_perf", "alltoall_perf", "broadcast_perf",
            "reduce_perf", "sendrecv_perf"]


def _playbook(tmp_path, role_vars, check=False):
    play = [{"hosts": "localhost", "gather_facts": False, "tasks": [
        {"ansible.builtin.include_role": {"name": "aifabric.acceptance.nccl_tests"}, "vars": role_vars},
        {"ansible.builtin.copy": {"content": "{{ nccl_tests_info | to_json }}", "dest": str(tmp_path / "info.json"),
                                  "mode": "0644"}, "check_mode": False}]}]
    path = tmp_path / "play.yml"
    path.write_text(json.dumps(play))
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_path() or "", ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-local"))
    env.pop("ANSIBLE_CONFIG", None)
    argv = [os.path.join(os.path.dirname(sys.executable), "ansible-playbook"), "-i", "localhost,", "-c", "local",
            "-e", "ansible_python_interpreter=%s" % sys.executable, str(path)] + (["--check"] if check else [])
    proc = subprocess.run(argv, env=env, cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          timeout=300, check=False)
    return proc.returncode, proc.stdout.decode("utf-8", "replace")


def _recap(out):
    line = [ln for ln in out.splitlines() if ln.startswith("localhost") and "ok=" in ln][-1]
    return dict(kv.split("=") for kv in line.split(":", 1)[1].split())


@pytest.fixture
def tarball(tmp_path):
    build = tmp_path / "pkg" / "nccl-tests" / "build"
    build.mkdir(parents=True)
    fake_perf.install(str(build), BINARIES)
    path = tmp_path / "nccl-tests-prebuilt.tgz"
    with tarfile.open(str(path), "w:gz") as tar:
        tar.add(str(tmp_path / "pkg" / "nccl-tests"), arcname="nccl-tests")
    return str(path), "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


def test_tarball_install_is_verified_and_idempotent(tmp_path, tarball):
    path, checksum = tarball
    role_vars = {"nccl_tests_source": "tarball", "nccl_tests_tarball": path, "nccl_tests_tarball_checksum": checksum,
                 "nccl_tests_install_dir": str(tmp_path / "opt"),
                 "nccl_tests_tool_dir": str(tmp_path / "opt" / "nccl-tests" / "build")}
    rc, out = _playbook(tmp_path, role_vars)
    assert rc == 0, out
    assert _recap(out)["failed"] == "0"
    info = json.loads((tmp_path / "info.json").read_text())
    assert info["available"] is True and info["missing"] == [] and info["version"] == "2.19.6"
    assert info["mpi"] is False and sorted(info["binaries"]) == sorted(BINARIES)
    rc, out = _playbook(tmp_path, role_vars)
    assert rc == 0 and _recap(out)["changed"] == "0", out     # second run: nothing to do


def test_checksum_mismatch_is_refused(tmp_path, tarball):
    path, _checksum = tarball
    rc, out = _playbook(tmp_path, {"nccl_tests_source": "tarball", "nccl_tests_tarball": path,
                                   "nccl_tests_tarball_checksum": "sha256:" + "0" * 64,
                                   "nccl_tests_install_dir": str(tmp_path / "opt")})
    assert rc != 0 and "does not match" in out


def test_missing_binaries_fail_or_are_recorded(tmp_path):
    rc, out = _playbook(tmp_path, {"nccl_tests_tool_dir": str(tmp_path / "nowhere")})
    assert rc != 0 and "nccl-tests binaries missing" in out
    rc, out = _playbook(tmp_path, {"nccl_tests_tool_dir": str(tmp_path / "nowhere"), "nccl_tests_required": False})
    assert rc == 0, out
    info = json.loads((tmp_path / "info.json").read_text())
    assert info["available"] is False and sorted(info["missing"]) == sorted(BINARIES) and info["version"] is None


@pytest.fixture
def foreign_tarball(tmp_path):
    """The prebuilt archive with its members owned by uid 1001 and writable by everyone (as a co-tenant's build
    would pack them)."""
    build = tmp_path / "pkg" / "nccl-tests" / "build"
    build.mkdir(parents=True)
    fake_perf.install(str(build), BINARIES)
    path = tmp_path / "nccl-tests-prebuilt.tgz"

    def foreign(info):
        info.uid, info.gid, info.uname, info.gname = 1001, 1001, "", ""
        info.mode |= 0o022
        return info
    with tarfile.open(str(path), "w:gz") as tar:
        tar.add(str(tmp_path / "pkg" / "nccl-tests"), arcname="nccl-tests", filter=foreign)
    return str(path), "sha256:" + hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.mark.skipif(os.geteuid() != 0, reason="the install runs as root (become)")
def test_the_archive_is_extracted_without_its_owners_and_modes(tmp_path, foreign_tarball):
    """Issue 34: root kept the archive's owners (uid 1001 became a local user's file that root then ran). Now every
    file is root's and writable by nobody else, and the binaries pass the path rule and run."""
    path, checksum = foreign_tarball
    tool_dir = tmp_path / "opt" / "nccl-tests" / "build"
    role_vars = {"nccl_tests_source": "tarball", "nccl_tests_tarball": path, "nccl_tests_tarball_checksum": checksum,
                 "nccl_tests_install_dir": str(tmp_path / "opt"), "nccl_tests_tool_dir": str(tool_dir)}
    rc, out = _playbook(tmp_path, role_vars)
    assert rc == 0, out
    for root, dirs, files in os.walk(str(tmp_path / "opt")):
        for name in dirs + files:
            info = os.lstat(os.path.join(root, name))
            assert info.st_uid == 0 and not info.st_mode & 0o022, (name, info.st_uid, oct(info.st_mode))
    assert json.loads((tmp_path / "info.json").read_text())["available"] is True


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another uid needs root")
def test_a_binary_another_user_owns_in_a_root_owned_tool_dir_is_refused_before_it_runs(tmp_path):
    """Issue 34: the role checked only the directory and then ran every binary in it as root."""
    build = tmp_path / "build"
    build.mkdir()
    fake_perf.install(str(build), BINARIES)
    marker = tmp_path / "ran"
    planted = build / "all_gather_perf"
    planted.unlink()
    planted.write_text("#!/bin/sh\necho ran > %s\n" % marker)
    os.chmod(str(planted), 0o755)
    os.chown(str(planted), 65534, 65534)
    rc, out = _playbook(tmp_path, {"nccl_tests_tool_dir": str(build)})
    assert rc != 0 and "owned by uid 65534" in out, out
    assert not marker.exists()
