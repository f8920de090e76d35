# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one path rule (statedir.trusted_dir / trusted_file / write_file) on directories this test creates."""

from __future__ import annotations

import os
import stat

import pytest

from ansible_collections.aifabric.acceptance.plugins.module_utils import statedir

ROOT = os.geteuid() == 0
FOREIGN = 65534     # nobody
needs_root = pytest.mark.skipif(not ROOT, reason="chown to another uid needs root")


def test_creates_missing_components_private_and_public(tmp_path):
    private = statedir.trusted_dir(str(tmp_path / "a" / "b"))
    assert private == str(tmp_path / "a" / "b")
    assert stat.S_IMODE(os.stat(private).st_mode) == 0o700
    assert stat.S_IMODE(os.stat(tmp_path / "a").st_mode) == 0o700
    public = statedir.trusted_dir(str(tmp_path / "r"), private=False)
    assert stat.S_IMODE(os.stat(public).st_mode) & 0o755 == 0o755 & ~_umask()


def _umask():
    mask = os.umask(0)
    os.umask(mask)
    return mask


def test_check_mode_creates_nothing(tmp_path):
    path = statedir.trusted_dir(str(tmp_path / "x" / "y"), create=False)
    assert path == str(tmp_path / "x" / "y")
    assert not (tmp_path / "x").exists()


@pytest.mark.parametrize("mode", [0o770, 0o707, 0o777, 0o1777])
def test_existing_writable_by_others_refused(tmp_path, mode):
    target = tmp_path / "shared"
    target.mkdir()
    os.chmod(target, mode)
    with pytest.raises(statedir.StateError, match="writable by group or others"):
        statedir.trusted_dir(str(target))


def test_existing_own_0755_reused(tmp_path):
    target = tmp_path / "mine"
    target.mkdir()
    os.chmod(target, 0o755)
    assert statedir.trusted_dir(str(target)) == str(target)


@needs_root
def test_existing_foreign_owned_refused(tmp_path):
    target = tmp_path / "squat"
    target.mkdir()
    os.chown(target, FOREIGN, FOREIGN)
    os.chmod(target, 0o700)
    with pytest.raises(statedir.StateError, match="owned by uid 65534"):
        statedir.trusted_dir(str(target))


@needs_root
def test_inside_foreign_owned_ancestor_refused(tmp_path):
    """/var/tmp/squat/mine: the owner of squat can swap mine, even if mine is ours."""
    squat = tmp_path / "squat"
    (squat / "mine").mkdir(parents=True)
    os.chown(squat, FOREIGN, FOREIGN)
    with pytest.raises(statedir.StateError, match="only root or uid"):
        statedir.trusted_dir(str(squat / "mine"))
    with pytest.raises(statedir.StateError, match="only root or uid"):
        statedir.trusted_dir(str(squat / "new"))
    assert not (squat / "new").exists()


def test_non_sticky_world_writable_ancestor_refused(tmp_path):
    open_dir = tmp_path / "open"
    (open_dir / "mine").mkdir(parents=True)
    os.chmod(open_dir, 0o777)
    with pytest.raises(statedir.StateError, match="without the sticky bit"):
        statedir.trusted_dir(str(open_dir / "mine"))
    os.chmod(open_dir, 0o1777)      # like /tmp: sticky, our own entry inside is safe
    assert statedir.trusted_dir(str(open_dir / "mine")) == str(open_dir / "mine")


def test_final_symlink_refused_even_to_own_dir(tmp_path):
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    link.symlink_to(real)
    with pytest.raises(statedir.StateError, match="symbolic link"):
        statedir.trusted_dir(str(link))


def test_trusted_link_on_the_way_followed(tmp_path):
    (tmp_path / "real" / "sub").mkdir(parents=True)
    (tmp_path / "via").symlink_to(tmp_path / "real")
    assert statedir.trusted_dir(str(tmp_path / "via" / "sub")) == str(tmp_path / "real" / "sub")


@needs_root
def test_foreign_link_on_the_way_refused(tmp_path):
    (tmp_path / "real" / "sub").mkdir(parents=True)
    link = tmp_path / "via"
    link.symlink_to(tmp_path / "real")
    os.lchown(link, FOREIGN, FOREIGN)
    with pytest.raises(statedir.StateError, match="symbolic link owned by uid 65534"):
        statedir.trusted_dir(str(link / "sub"))


def test_not_absolute_or_file_refused(tmp_path):
    with pytest.raises(statedir.StateError, match="absolute"):
        statedir.trusted_dir("relative/dir")
    (tmp_path / "f").write_text("x")
    with pytest.raises(statedir.StateError, match="not a directory"):
        statedir.trusted_dir(str(tmp_path / "f" / "sub"))


def test_write_file_never_follows_a_planted_link(tmp_path):
    directory = statedir.trusted_dir(str(tmp_path / "out"))
    victim = tmp_path / "victim"
    victim.write_text("precious")
    os.symlink(victim, os.path.join(directory, "report.html"))
    path = statedir.write_file(directory, "report.html", "new", mode=0o644)
    assert victim.read_text() == "precious"
    assert not os.path.islink(path)
    assert open(path).read() == "new"
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o644
    assert sorted(os.listdir(directory)) == ["report.html"]     # no temporary file left


def test_write_file_secret_mode(tmp_path):
    directory = statedir.trusted_dir(str(tmp_path / "out"))
    path = statedir.write_file(directory, "key", b"secret")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_trusted_file(tmp_path):
    bindir = statedir.trusted_dir(str(tmp_path / "bin"))
    tool = os.path.join(bindir, "tool")
    with open(tool, "w") as handle:
        handle.write("#!/bin/sh\n")
    os.chmod(tool, 0o755)
    assert statedir.trusted_file(tool) == tool
    os.symlink("tool", os.path.join(bindir, "alias"))
    assert statedir.trusted_file(os.path.join(bindir, "alias")) == tool
    os.chmod(tool, 0o775)
    with pytest.raises(statedir.StateError, match="writable by group or others"):
        statedir.trusted_file(tool)
    with pytest.raises(statedir.StateError, match="does not exist"):
        statedir.trusted_file(str(tmp_path / "nowhere" / "tool"))


def test_system_interpreter_is_trusted():
    """A real system path (read only): /bin/sh through whatever links the distribution has."""
    assert os.path.isfile(statedir.trusted_file("/bin/sh"))
