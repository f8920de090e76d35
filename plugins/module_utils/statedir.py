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
- ``open_root(path) -> realpath`` - the state root: ``trusted_dir`` (below), created ``0700``;
- ``contained(root, path) -> realpath`` - the resolved path, refused unless it
  lies strictly inside ``root`` (symbolic links resolved: no escape through a
  planted link); call it before any write, kill or ``rmtree`` on a derived path;
- ``open_new(path, mode=0o600) -> fd`` - create a file for writing with
  ``O_CREAT | O_EXCL | O_NOFOLLOW`` (a pre-existing file or link makes it fail,
  never truncates what a link points to); ``replace_file(path)`` unlinks what is
  there first (``unlink`` never follows a link);
- ``write_json(path, data)`` - JSON written to a new file beside ``path`` (``replace_file``) and renamed onto it
  (a reader sees the old content or the new, never a part); ``read_json(path, private=False)`` - the content, or
  None (absent, a link, unreadable, not JSON); ``private``: only from a regular file of the effective user that
  nobody else can write (a handle, a sweep's state files);
- ``new_run_id(prefix) -> str`` - an unguessable run id (``secrets``: 128 bits);
- ``trusted_dir(path, create=True, private=True, what=...) -> realpath`` - THE rule for every directory
  the collection writes into or executes from (state, worker, report, render, history directories):
  walked from ``/`` one component at a time on open descriptors (``O_NOFOLLOW``, ``fstat``), every
  ancestor must be owned by root or the effective user and not writable by group or others unless
  sticky (``/tmp``); a symbolic link on the way is followed only when root or the user owns it and
  it sits in such a trusted directory; the directory itself must be a real directory (never a
  link), owned by the effective user, not writable by group or others. Missing components are
  created ``0700`` (``private``) or ``0755`` (report directories, readable by design); raises
  StateError saying which component breaks which rule;
- ``trusted_file(path, what, keep_name) -> realpath`` - the same walk for EVERY file the collection executes
  or sources (a tool in ``tool_dir``, ``python``, ``mpirun``, ``cann_env_script``, ``hccn_tool``'s fallback
  path, the roles' tool binaries): its directories are trusted as above and the file is a regular file owned by
  root or the user and not writable by group or others. It returns the path to run (links and ``..``
  resolved as the kernel does: ``a/../b`` is the parent of where the link ``a`` points); callers execute that
  path, never the one they were given. Both walks resolve ``..`` on descriptors, never lexically;
- ``check_file(path, what) -> exists`` - a file written in place (a database): absent, or a real file
  owned by the user (or root) and not writable by group or others;
- ``write_file(directory, name, data, mode) -> path`` - atomic write (str, bytes or an iterable of chunks)
  into a trusted directory: a fresh ``O_CREAT | O_EXCL | O_NOFOLLOW`` temporary file, ``fsync``, ``fchmod`` and a rename
  relative to the directory's descriptor (a planted file or link at the name is replaced, never
  followed);
- ``default_root(name) -> path`` - where state lives when the user gives no root: as root
  ``/run/aifabric-acceptance/<name>`` (``/run`` is writable by root alone, so nobody can squat the
  path; tmpfs, gone at reboot like the processes it describes), else
  ``$XDG_RUNTIME_DIR/aifabric-acceptance/<name>`` or ``~/.cache/aifabric-acceptance/<name>``;
- ``host_id() -> name`` / ``host_root(state_root, create) -> realpath`` - ``<state_root>/<host id>``
  (nodename, plus the first 12 hex digits of /etc/machine-id): the one place that splits a state root
  shared between hosts (an NFS home), made and marked like own_dir's;
- ``own_dir(base, path, create, what) -> realpath`` - a directory strictly inside ``base`` that the
  collection made: every directory below ``base`` is made here (``0700``, with a marker file
  ``.aifabric-acceptance`` created ``O_EXCL | O_NOFOLLOW`` 0600 naming what made it) or an existing one
  that carries the marker and passes trusted_dir's final rule; ``check_own(path, what)`` - the same
  check on an existing directory (None when absent); ``remove_own(path)`` /
  ``remove_own_if_empty(path)`` - rmtree / rmdir of such a directory only. What the collection deletes
  or kills is found only in these (a directory it did not make is left alone and reported).

Runs on the targets: Python 3.8+, Linux, no Ansible imports.
"""

from __future__ import annotations

import errno
import json
import os
import re
import secrets
import shutil
import stat
import time

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


_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
_MAX_LINKS = 40


def _owner_ok(info, allow_root=True):
    return info.st_uid == os.geteuid() or (allow_root and info.st_uid == 0)


def _writable_by_others(info):
    return bool(info.st_mode & (stat.S_IWGRP | stat.S_IWOTH))


def _check_ancestor(path, info, what):
    """A directory on the way to ``what``: nobody but root and us may replace what is inside it."""
    if not _owner_ok(info):
        raise StateError("cannot use %s: %s is owned by uid %d (only root or uid %d may own a directory on the way, "
                         "another user could replace what is inside it)" % (what, path, info.st_uid, os.geteuid()))
    if _writable_by_others(info) and not info.st_mode & stat.S_ISVTX:
        raise StateError("cannot use %s: %s is writable by group or others without the sticky bit (mode %04o); "
                         "another user could replace what is inside it" % (what, path, stat.S_IMODE(info.st_mode)))


def _check_final(path, info, what, allow_root=False):
    """The directory or file itself: ours (root's too for what we only execute), not writable by others."""
    if stat.S_ISLNK(info.st_mode):
        raise StateError("%s %s is a symbolic link; give the real path (a link could be re-pointed by another user)"
                         % (what, path))
    if not _owner_ok(info, allow_root=allow_root or not stat.S_ISDIR(info.st_mode)):
        raise StateError("%s %s is owned by uid %d, not by the user running this (uid %d); refusing to use a path "
                         "another user controls" % (what, path, info.st_uid, os.geteuid()))
    if _writable_by_others(info):
        raise StateError("%s %s is writable by group or others (mode %04o); make it 0700 (or 0755) or choose another "
                         "path" % (what, path, stat.S_IMODE(info.st_mode)))


def _follow_link(parent_fd, parent, name, rest, what):
    """The path a trusted symbolic link on the way points at (joined with what is left of the walk)."""
    info = os.stat(name, dir_fd=parent_fd, follow_symlinks=False)
    if not _owner_ok(info):
        raise StateError("cannot use %s: %s is a symbolic link owned by uid %d (another user could re-point it)"
                         % (what, os.path.join(parent, name), info.st_uid))
    target = os.readlink(name, dir_fd=parent_fd)
    # never normalised here: a ``..`` after a link is the link target's parent, as the kernel resolves it (_walk)
    return os.path.join(parent, target, *rest)


class _Link(Exception):
    """The component is a symbolic link (internal to _walk)."""


def _open_child(fd, real, name, create, mode, what):
    """Descriptor of directory ``name`` under ``fd`` (created when ``create``), None when absent, _Link on a link."""
    try:
        return os.open(name, _DIR_FLAGS, dir_fd=fd)
    except OSError as exc:
        where = os.path.join(real, name)
        if exc.errno == errno.ENOENT and not create:
            return None
        if exc.errno == errno.ENOENT:
            try:
                os.mkdir(name, mode, dir_fd=fd)
            except OSError as again:
                if again.errno != errno.EEXIST:
                    raise StateError("cannot create %s %s: %s" % (what, where, again.strerror))
            return os.open(name, _DIR_FLAGS, dir_fd=fd)
        if exc.errno in (errno.ELOOP, errno.ENOTDIR) and \
                stat.S_ISLNK(os.stat(name, dir_fd=fd, follow_symlinks=False).st_mode):
            raise _Link(where)
        if exc.errno == errno.ENOTDIR:
            raise StateError("%s: %s exists and is not a directory" % (what, where))
        raise StateError("cannot use %s %s: %s" % (what, where, exc.strerror))


def _walk(path, create, mode, what, follow_last=False):
    """(descriptor of the directory, its real path, []) or (None, would-be real path, missing components) when
    absent and not created - see trusted_dir. Trusted links on the way restart the walk at their target.

    ``..`` is resolved as the kernel resolves it, never lexically: the parent of the directory reached so far
    (after the links before it were followed), opened relative to its descriptor; ``.`` stays where it is."""
    if not isinstance(path, str) or not path or not os.path.isabs(path) or "\0" in path:
        raise StateError("%s must be an absolute path, got %r" % (what, path))
    for _hop in range(_MAX_LINKS):
        parts = [p for p in path.split(os.sep) if p and p != os.curdir]
        fd, real, target = os.open(os.sep, _DIR_FLAGS), os.sep, None
        try:
            for i, name in enumerate(parts):
                _check_ancestor(real, os.fstat(fd), what)
                if name == os.pardir:
                    child, real = os.open(os.pardir, _DIR_FLAGS, dir_fd=fd), os.path.dirname(real)
                    os.close(fd)
                    fd = child
                    continue
                try:
                    child = _open_child(fd, real, name, create, mode, what)
                except _Link:
                    if i == len(parts) - 1 and not follow_last:
                        raise StateError("%s %s is a symbolic link; give the real directory (a link could be "
                                         "re-pointed by another user)" % (what, os.path.join(real, name)))
                    target = _follow_link(fd, real, name, parts[i + 1:], what)
                    break
                if child is None:
                    os.close(fd)
                    return None, os.path.normpath(os.path.join(real, *parts[i:])), parts[i:]
                os.close(fd)
                fd, real = child, os.path.join(real, name)
        except BaseException:
            os.close(fd)
            raise
        if target is None:
            return fd, real, []
        os.close(fd)
        path = target
    raise StateError("cannot use %s %s: too many symbolic links" % (what, path))


def trusted_dir(path, create=True, private=True, what="directory", exec_only=False):
    """The real path of a directory that is safe to write into (see the module docstring).

    With ``create=False`` (check mode) an absent directory is not created: its would-be path is returned
    once what exists of it has passed the checks. ``exec_only``: a directory only executed from (a tool's
    ``bin``), which root may own too.
    """
    fd, real, _missing = _walk(path, create, 0o700 if private else 0o755, what)
    if fd is None:
        return real
    try:
        _check_final(real, os.fstat(fd), what, allow_root=exec_only)
    finally:
        os.close(fd)
    return real


def trusted_file(path, what="file", keep_name=False):
    """The real path of a regular file that is safe to execute or source (see the module docstring): the path
    to run, so that what runs is what was checked (``..`` and links resolved as the kernel resolves them).

    ``keep_name``: the real path of its directory joined with the name as given, for an interpreter whose
    identity is the name it is started by (a virtualenv's ``bin/python``, a link to the system interpreter:
    started by the resolved path, it loses the virtualenv); every link from that name on was checked as above.
    """
    if not isinstance(path, str) or not os.path.isabs(path or ""):
        raise StateError("%s must be an absolute path, got %r" % (what, path))
    named = None
    for _hop in range(_MAX_LINKS):
        directory, name = os.path.split(path)
        if name in ("", os.curdir, os.pardir):
            raise StateError("%s %s is a directory, not a file" % (what, path))
        fd, real, _missing = _walk(directory, False, 0o700, what, follow_last=True)
        if fd is None:
            raise StateError("%s %s does not exist" % (what, path))
        named = named or os.path.join(real, name)
        try:
            _check_ancestor(real, os.fstat(fd), what)
            info = os.stat(name, dir_fd=fd, follow_symlinks=False)
            if stat.S_ISLNK(info.st_mode):
                # a link such as /usr/bin/python3 -> python3.11: followed when root or we own it (in a trusted dir)
                path = _follow_link(fd, real, name, [], what)
                continue
        except OSError as exc:
            raise StateError("cannot use %s %s: %s" % (what, os.path.join(real, name), exc.strerror))
        finally:
            os.close(fd)
        _check_final(os.path.join(real, name), info, what)
        if not stat.S_ISREG(info.st_mode):
            raise StateError("%s %s is not a regular file" % (what, os.path.join(real, name)))
        return named if keep_name else os.path.join(real, name)
    raise StateError("cannot use %s %s: too many symbolic links" % (what, path))


def check_file(path, what="file"):
    """True when ``path`` exists and is safe to write in place (a real file, ours or root's, writable by nobody
    else: e.g. a database opened by name), False when absent; StateError otherwise. Check its directory first."""
    try:
        info = os.lstat(path)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return False
        raise StateError("cannot use %s %s: %s" % (what, path, exc.strerror))
    if not stat.S_ISREG(info.st_mode) and not stat.S_ISLNK(info.st_mode):
        raise StateError("%s %s exists and is not a regular file" % (what, path))
    _check_final(path, info, what)
    return True


def write_file(directory, name, data, mode=0o600):
    """Write ``data`` to ``directory/name`` atomically; returns the path (see the module docstring).

    ``data``: str or bytes, or an iterable of str (or bytes) chunks, written as they come (a large file is never
    held as one string). ``directory`` must have passed trusted_dir; it is opened without following a link.
    """
    if isinstance(data, (str, bytes)):
        data = (data,)
    dir_fd = os.open(directory, _DIR_FLAGS)
    try:
        tmp = ".%s.tmp-%s" % (name, secrets.token_hex(8))
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) |
                     getattr(os, "O_CLOEXEC", 0), mode, dir_fd=dir_fd)
        try:
            with os.fdopen(fd, "wb") as handle:
                for chunk in data:
                    handle.write(chunk.encode("utf-8") if isinstance(chunk, str) else chunk)
                handle.flush()
                os.fchmod(handle.fileno(), mode)
                os.fsync(handle.fileno())
            os.replace(tmp, name, src_dir_fd=dir_fd, dst_dir_fd=dir_fd)
        except BaseException:
            try:
                os.unlink(tmp, dir_fd=dir_fd)
            except OSError:
                pass
            raise
    finally:
        os.close(dir_fd)
    return os.path.join(directory, name)


def open_root(path, create=True):
    """The real path of a safe state root, created 0700 when absent (trusted_dir with ``what="state root"``).

    With ``create=False`` (check mode) an absent root is not created: its would-be path is returned.
    """
    return trusted_dir(path, create=create, private=True, what="state root")


def contained(root, path):
    """realpath(path), refused (StateError) unless strictly inside root (itself a realpath)."""
    real = os.path.realpath(path)
    if not real.startswith(root.rstrip(os.sep) + os.sep):
        raise StateError("path %s is outside the state root %s" % (path, root))
    return real


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


def write_json(path, data):
    """``data`` as JSON in ``path``: written to a new file beside it (replace_file, named with our pid: two writers
    never share one) and renamed onto it."""
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with os.fdopen(replace_file(tmp), "w") as handle:
        json.dump(data, handle)
    os.rename(tmp, path)


def read_json(path, private=False):
    """The JSON content of ``path`` (never through a link), or None; ``private``: only from a regular file owned
    by the effective user and writable by nobody else."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0))
    except OSError:
        return None
    try:
        with os.fdopen(fd) as handle:
            info = os.fstat(handle.fileno())
            if private and (not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid() or
                            info.st_mode & (stat.S_IWGRP | stat.S_IWOTH)):
                return None
            return json.load(handle)
    except (IOError, OSError, ValueError):
        return None


# --------------------------------------------------------------------------- what the collection created (issue 17)

MARKER = ".aifabric-acceptance"
CREATOR = "aifabric.acceptance"
MACHINE_ID = "/etc/machine-id"
MARKER_WAIT_S = 2.0     # a directory made a moment ago by a concurrent process gets its marker within this


def host_id(nodename=None, machine_id=MACHINE_ID):
    """This host's component of state paths: the kernel's nodename (characters check_name refuses become ``_``)
    and, when readable, the first 12 hex digits of /etc/machine-id (``gpu-node-07-3f9a0c1d2e4b``)."""
    node = os.uname().nodename if nodename is None else nodename
    node = re.sub(r"[^A-Za-z0-9_.:\-]", "_", node or "")[:100].lstrip("_.:-") or "host"
    try:
        with open(machine_id, "rb") as handle:
            ident = handle.read(64).decode("ascii", "replace").strip().lower()
    except (IOError, OSError):
        ident = ""
    if re.match(r"^[0-9a-f]{32}$", ident):
        node = "%s-%s" % (node, ident[:12])
    return check_name(node, "host id")


def _write_marker(dir_fd, what):
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)
    fd = os.open(MARKER, flags, 0o600, dir_fd=dir_fd)
    with os.fdopen(fd, "w") as handle:
        json.dump({"created_by": CREATOR, "what": what, "uid": os.geteuid(), "pid": os.getpid(),
                   "created": time.time()}, handle)


def _marker_problem(dir_fd):
    """None when the directory open at ``dir_fd`` carries the collection's marker, else why not."""
    try:
        fd = os.open(MARKER, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) |
                     getattr(os, "O_CLOEXEC", 0), dir_fd=dir_fd)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return "it has no %s marker" % MARKER
        return "its %s marker cannot be read (%s)" % (MARKER, exc.strerror)
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid() or _writable_by_others(info):
            return "its %s marker is not a private file of uid %d" % (MARKER, os.geteuid())
        data = handle.read(4096)
    try:
        content = json.loads(data.decode("utf-8"))
    except ValueError:
        content = None
    if not isinstance(content, dict) or content.get("created_by") != CREATOR:
        return "its %s marker was not written by %s" % (MARKER, CREATOR)
    return None


def _check_own(fd, path, what):
    """The directory open at ``fd``: trusted (_check_final) and marked; waits a moment for the marker of a
    directory made a moment ago (by a concurrent task of ours, between its mkdir and its marker)."""
    info = os.fstat(fd)
    _check_final(path, info, what)
    deadline = time.monotonic() + MARKER_WAIT_S
    while True:
        problem = _marker_problem(fd)
        if problem is None:
            return
        if time.time() - info.st_mtime > MARKER_WAIT_S or time.monotonic() >= deadline:
            raise StateError("%s %s was not created by this collection (%s); left alone: nothing in it is used, "
                             "removed or killed" % (what, path, problem))
        time.sleep(0.02)


def _make_own(parent_fd, parent, name, what):
    """mkdir ``name`` 0700 in the directory open at ``parent_fd`` and mark it; a descriptor of the directory."""
    try:
        os.mkdir(name, 0o700, dir_fd=parent_fd)
        made = True
    except OSError as exc:
        if exc.errno != errno.EEXIST:
            raise StateError("cannot create %s %s: %s" % (what, os.path.join(parent, name), exc.strerror))
        made = False
    try:
        fd = os.open(name, _DIR_FLAGS, dir_fd=parent_fd)
    except OSError as exc:
        raise StateError("cannot use %s %s: %s" % (what, os.path.join(parent, name), exc.strerror))
    if made:
        try:
            _write_marker(fd, what)
        except BaseException:
            os.close(fd)
            raise
    return fd


def _relative_parts(base, path, what):
    rel = os.path.relpath(os.path.normpath(path), os.path.normpath(base))
    if rel == os.curdir or rel.split(os.sep)[0] == os.pardir or os.path.isabs(rel):
        raise StateError("%s %s is not inside %s" % (what, path, base))
    return [check_name(part, "%s component" % what) for part in rel.split(os.sep)]


def own_dir(base, path, create=True, what="state directory"):
    """The real path of ``path``, a directory strictly inside ``base`` (a trusted directory, see trusted_dir)
    that this collection created: every directory from ``base`` (exclusive) down to ``path`` is either made here
    (``0700``, with a marker file ``.aifabric-acceptance`` created ``O_EXCL | O_NOFOLLOW`` 0600) or an existing
    one that carries the marker, is owned by the effective user and is writable by nobody else. Walked on open
    descriptors, never through a symbolic link; StateError names the directory and the rule it breaks.
    With ``create=False`` (check mode) nothing is made: the would-be path is returned once what exists passed.
    """
    parts = _relative_parts(base, path, what)
    real = trusted_dir(base, create=False, what=what)
    try:
        fd = os.open(real, _DIR_FLAGS)
    except OSError as exc:
        if exc.errno == errno.ENOENT and not create:
            return os.path.join(real, *parts)
        raise StateError("cannot use %s %s: %s" % (what, real, exc.strerror))
    try:
        _check_final(real, os.fstat(fd), what)
        for i, name in enumerate(parts):
            try:
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                if exc.errno != errno.ENOENT:
                    raise StateError("%s %s is a symbolic link or not a directory (%s); refusing to use it"
                                     % (what, os.path.join(real, name), exc.strerror))
                if not create:
                    return os.path.join(real, *parts[i:])
                child = _make_own(fd, real, name, what)
            os.close(fd)
            fd = child
            real = os.path.join(real, name)
            _check_own(fd, real, what)
    finally:
        os.close(fd)
    return real


def check_own(path, what="state directory"):
    """The real path of ``path`` when it is a directory this collection created (trusted_dir's rule for it and
    every directory on the way, plus the marker), None when it does not exist; StateError otherwise."""
    real = trusted_dir(path, create=False, what=what)
    try:
        fd = os.open(real, _DIR_FLAGS)
    except OSError as exc:
        if exc.errno == errno.ENOENT:
            return None
        raise StateError("cannot use %s %s: %s" % (what, real, exc.strerror))
    try:
        _check_own(fd, real, what)
    finally:
        os.close(fd)
    return real


def remove_own(path, what="state directory"):
    """Remove a directory this collection created (check_own), with all it holds; True when removed. StateError
    when ``path`` is not one (left alone)."""
    real = check_own(path, what)
    if real is None:
        return False
    shutil.rmtree(real, ignore_errors=True)
    return not os.path.lexists(real)


def remove_own_if_empty(path, what="state directory"):
    """Remove a directory this collection created when nothing but its marker is left in it; True when removed.
    A concurrent task that put something in it meanwhile keeps it (marked again)."""
    real = check_own(path, what)
    if real is None or os.listdir(real) != [MARKER]:
        return False
    os.unlink(os.path.join(real, MARKER))
    try:
        os.rmdir(real)
        return True
    except OSError:
        fd = os.open(real, _DIR_FLAGS)
        try:
            _write_marker(fd, what)
        finally:
            os.close(fd)
        return False


def host_root(state_root, create=True):
    """``<state_root>/<host_id()>``: the state directory of this host (own_dir), the one place where a state root
    shared between hosts (an NFS home) is split per host. With ``create=False`` nothing is made."""
    root = open_root(state_root, create=create)
    return own_dir(root, os.path.join(root, host_id()), create=create, what="host state directory")
