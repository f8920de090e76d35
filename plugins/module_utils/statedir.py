# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Per-run state on a target that a local user cannot turn against it (private).

Modules keep state between tasks (perftest servers and their outputs, the CPU
governor's reference count) under a *state root*. As these run as root on
shared nodes, every step here assumes a hostile local user:

- ``check_name(name, what) -> name`` - the strict rule for every name that
  becomes a path component (run ids, device names): 1-128 characters of
  ``A-Z a-z 0-9 _ . : -``, starting with a letter or digit (so never ``.``,
  ``..``, a hidden name or an option), no ``/``; raises StateError otherwise;
- ``open_root(path) -> realpath`` - create the state root ``0700`` (parents
  ``0700`` too when we create them), or accept an existing one only when it is
  a real directory (not a symbolic link), owned by the effective user, and not
  writable by group or others; raises StateError saying why otherwise;
- ``contained(root, path) -> realpath`` - the resolved path, refused unless it
  lies strictly inside ``root`` (symbolic links resolved: no escape through a
  planted link); call it before any write, kill or ``rmtree`` on a derived path;
- ``remove_tree(root, path)`` - ``rmtree`` after ``contained`` and an ``lstat``
  that refuses symbolic links (Python's rmtree on Linux works on descriptors and
  does not follow links inside the tree);
- ``open_new(path, mode=0o600) -> fd`` - create a file for writing with
  ``O_CREAT | O_EXCL | O_NOFOLLOW`` (a pre-existing file or link makes it fail,
  never truncates what a link points to); ``replace_file(path)`` unlinks what is
  there first (``unlink`` never follows a link);
- ``new_run_id(prefix) -> str`` - an unguessable run id (``secrets``: 128 bits);
- ``default_root(name) -> path`` - where state lives when the user gives no root: as root
  ``/run/aifabric-acceptance/<name>`` (``/run`` is writable by root alone, so nobody can squat the
  path; tmpfs, gone at reboot like the processes it describes), else
  ``$XDG_RUNTIME_DIR/aifabric-acceptance/<name>`` or ``~/.cache/aifabric-acceptance/<name>``.

Runs on the targets: Python 3.8+, Linux, no Ansible imports.
"""

from __future__ import annotations

import errno
import os
import re
import secrets
import shutil
import stat

from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import AcceptanceError

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:\-]{0,127}$")


class StateError(AcceptanceError):
    """A state path or name that is not safe to use (the message says which rule it breaks)."""


def check_name(name, what):
    """``name`` when it is a safe single path component, else StateError."""
    if not isinstance(name, str) or not NAME_RE.match(name) or name != name.strip():
        raise StateError("%s %r is not a valid name: 1-128 letters, digits, '_', '.', ':' or '-', starting with a "
                         "letter or digit (no '/', no '..')" % (what, name))
    return name


def new_run_id(prefix="run"):
    """An unguessable run id: ``<prefix>-<32 hex digits>``."""
    return "%s-%s" % (check_name(prefix, "prefix"), secrets.token_hex(16))


def default_root(name):
    """The default state root for ``name`` (see the module docstring)."""
    check_name(name, "state name")
    if os.geteuid() == 0:
        base = "/run" if os.path.isdir("/run") else "/var/lib"
    else:
        runtime = os.environ.get("XDG_RUNTIME_DIR")
        base = runtime if runtime and os.path.isabs(runtime) and os.path.isdir(runtime) else \
            os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "aifabric-acceptance", name)


def _check_dir(path, info):
    if stat.S_ISLNK(info.st_mode):
        raise StateError("state root %s is a symbolic link; give the real directory (a link could be re-pointed "
                         "by another user)" % path)
    if not stat.S_ISDIR(info.st_mode):
        raise StateError("state root %s exists and is not a directory" % path)
    if info.st_uid != os.geteuid():
        raise StateError("state root %s is owned by uid %d, not by the user running the module (uid %d); "
                         "refusing to keep state where another user can change it" % (path, info.st_uid, os.geteuid()))
    if info.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        raise StateError("state root %s is writable by group or others (mode %04o); make it 0700 or choose "
                         "another state_root" % (path, stat.S_IMODE(info.st_mode)))


def open_root(path, create=True):
    """The real path of a safe state root, created 0700 when absent (see the module docstring).

    With ``create=False`` (check mode) an absent root is not created: its would-be path is returned.
    """
    if not path or not os.path.isabs(path):
        raise StateError("state root must be an absolute path, got %r" % (path,))
    path = os.path.normpath(path)
    missing = []
    probe = path
    while True:
        try:
            os.lstat(probe)
            break
        except OSError as exc:
            if exc.errno != errno.ENOENT:
                raise StateError("cannot use state root %s: %s" % (path, exc.strerror))
            missing.append(probe)
            parent = os.path.dirname(probe)
            if parent == probe:
                break
            probe = parent
    if missing and not create:
        return os.path.realpath(path)
    for directory in reversed(missing):
        try:
            os.mkdir(directory, 0o700)
        except OSError as exc:
            if exc.errno != errno.EEXIST:
                raise StateError("cannot create state root %s: %s" % (directory, exc.strerror))
    _check_dir(path, os.lstat(path))
    return os.path.realpath(path)


def contained(root, path):
    """realpath(path), refused (StateError) unless strictly inside root (itself a realpath)."""
    real = os.path.realpath(path)
    if not real.startswith(root.rstrip(os.sep) + os.sep):
        raise StateError("path %s is outside the state root %s" % (path, root))
    return real


def remove_tree(root, path):
    """Remove a directory inside root (never root itself, never through a link). Returns True if removed."""
    real = contained(root, path)
    try:
        info = os.lstat(path)
    except OSError:
        return False
    if stat.S_ISLNK(info.st_mode):
        os.unlink(path)     # the link itself, never its target
        return True
    if not stat.S_ISDIR(info.st_mode):
        os.unlink(real)
        return True
    shutil.rmtree(real, ignore_errors=True)
    return not os.path.lexists(real)


def make_dir(root, path):
    """mkdir -p 0700 of a directory inside root; an existing one must be a real directory of ours."""
    real = contained(root, path)
    relative = os.path.relpath(real, root)
    current = root
    for part in relative.split(os.sep):
        current = os.path.join(current, part)
        try:
            os.mkdir(current, 0o700)
        except OSError as exc:
            if exc.errno != errno.EEXIST:
                raise StateError("cannot create %s: %s" % (current, exc.strerror))
            info = os.lstat(current)
            if stat.S_ISLNK(info.st_mode) or not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid():
                raise StateError("%s exists and is not a directory of ours; refusing to use it" % current)
    return real


def open_new(path, mode=0o600):
    """A descriptor of a new file opened for writing; never follows links, never truncates an existing file."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    return os.open(path, flags, mode)


def replace_file(path, mode=0o600):
    """open_new after removing what is at ``path`` (a stale file or a planted link: unlink never follows it)."""
    try:
        os.unlink(path)
    except OSError as exc:
        if exc.errno != errno.ENOENT:
            raise
    return open_new(path, mode)
