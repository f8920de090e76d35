# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Processes that outlive the module that started them (private).

The server side of a pairwise test must keep running after its Ansible task
returns (the client task runs next), yet must never outlive a hard deadline or
leak. ``start()`` therefore:

1. forks, ``setsid()``s and forks again (the classic daemon double fork), so the
   process belongs to no Ansible session and holds none of its pipes open
   (all inherited descriptors are closed; stdin is /dev/null, stdout/stderr go to
   files in the per-run state directory);
2. the detached *supervisor* forks the tool under coreutils
   ``timeout --kill-after=K N`` in its own process group, writes a JSON handle
   (pids, process group, process start time, paths) and waits for it; when the
   tool ends it writes the exit code to ``rc`` and runs the ``on_exit``
   callback (the CPU governor release), whatever the outcome;
3. the module reads the handle back through a pipe and returns it.

``wait()`` polls for the ``rc`` file until a deadline, ``kill()`` signals the
tool's process group (TERM, then KILL) after checking by process start time
that the pid still is ours (a handle without a start time is never acted on),
``read()`` returns the captured texts.

The state directory is one the collection creates (statedir.own_dir: 0700, marked
as created by it); ``load()`` trusts a ``handle.json`` only inside such a directory,
owned by the effective user and writable by nobody else (issue 17): a handle
planted anywhere else is never loaded, so its pids are never killed.

This is additive to runner.py (which runs attached, blocking processes through
``module.run_command``); no subprocess.Popen is used and no shell is involved:
argv lists are exec'd directly. Runs on Python 3.8+, Linux.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import signal
import stat
import time

from ansible_collections.aifabric.acceptance.plugins.module_utils import statedir
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import AcceptanceError
from ansible_collections.aifabric.acceptance.plugins.module_utils.proc import process_start_time
from ansible_collections.aifabric.acceptance.plugins.module_utils.proc import C_LOCALE

KILL_AFTER_S = 10
OWNER_POLL_S = 0.2          # how often a supervisor with an owner looks whether the owner still lives
OWNER_GRACE_S = 3.0         # SIGTERM, then SIGKILL after this, once the owner is gone
HANDLE = "handle.json"
RC_FILE = "rc.json"


class DetachError(AcceptanceError):
    """The detached process could not be started."""


def _exit_code(status):
    if os.WIFSIGNALED(status):
        return -os.WTERMSIG(status)
    if os.WIFEXITED(status):
        return os.WEXITSTATUS(status)
    return None


def _new_file(path):
    """A new file for writing: whatever is at ``path`` is unlinked first (never followed), then created with
    O_EXCL | O_NOFOLLOW, so a planted symbolic link can never make us write (or truncate) its target."""
    try:
        os.unlink(path)
    except OSError as exc:
        if exc.errno != errno.ENOENT:
            raise
    return os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)


def _write_json(path, data):
    tmp = "%s.tmp.%d" % (path, os.getpid())
    with os.fdopen(_new_file(tmp), "w") as handle:
        json.dump(data, handle)
    os.rename(tmp, path)


def _read_json(path, private=False):
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


def _close_inherited(keep):
    devnull = os.open(os.devnull, os.O_RDWR)
    for fd in (0, 1, 2):
        os.dup2(devnull, fd)
    if devnull > 2:
        os.close(devnull)
    try:
        max_fd = os.sysconf("SC_OPEN_MAX")
    except (ValueError, OSError):
        max_fd = 4096
    max_fd = min(max_fd, 65536)
    keep = sorted(k for k in keep if k > 2)
    low = 3
    for fd in keep:
        os.closerange(low, fd)
        low = fd + 1
    os.closerange(low, max_fd)


def start(argv, timeout_s, state_dir, timeout_bin, env=None, kill_after_s=KILL_AFTER_S, on_exit=None,
          extra=None, owner=None, base=None):
    """Start argv detached under ``timeout``; return the handle (also written to state_dir/handle.json).

    ``state_dir`` is made by statedir.own_dir under ``base`` (default: its parent, which must exist and be
    trusted), or an existing directory the collection made;

    ``argv`` is a list of str (exec'd directly, never through a shell);
    ``timeout_bin`` the absolute path of coreutils ``timeout``; ``on_exit`` a
    callable run by the supervisor after the tool ended (errors in it are
    recorded in rc.json, never raised); ``extra`` is merged into the handle.
    ``owner``, a PID: the tool lives no longer than that process (the supervisor
    stops the tool's process group once the owner is gone, however it ended,
    SIGKILL included; rc.json then says ``owner_gone``).
    """
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv) or not argv:
        raise TypeError("argv must be a non-empty list of str, got %r" % (argv,))
    state_dir = os.path.abspath(state_dir)
    state_dir = statedir.own_dir(base or os.path.dirname(state_dir), state_dir, what="process state directory")
    paths = {
        "stdout": os.path.join(state_dir, "stdout"),
        "stderr": os.path.join(state_dir, "stderr"),
        "rc_file": os.path.join(state_dir, RC_FILE),
        "handle_file": os.path.join(state_dir, HANDLE),
    }
    for stale in (paths["rc_file"],):
        if os.path.lexists(stale):
            os.remove(stale)
    environ = dict(os.environ)
    environ.update(C_LOCALE)
    environ.update(env or {})
    full = [timeout_bin, "--kill-after=%ds" % int(kill_after_s), "%ds" % max(1, int(timeout_s))] + list(argv)
    watch = None
    if owner is not None:
        watch = (int(owner), process_start_time(int(owner)))
        if watch[1] is None:
            raise DetachError("owner process %s is not running" % owner, cmd=argv, state_dir=state_dir)
    read_end, write_end = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the forked children (covered by the integration tests)
        try:
            os.close(read_end)
            os.setsid()
            if os.fork() != 0:
                os._exit(0)
            os.chdir("/")   # do not keep Ansible's temporary directory (or a mount) busy
            _close_inherited(keep=[write_end])
            _supervise(full, environ, paths, write_end, on_exit, watch)
        finally:
            os._exit(0)
    os.close(write_end)
    chunks = []
    while True:
        try:
            chunk = os.read(read_end, 65536)
        except OSError as exc:
            if exc.errno == errno.EINTR:
                continue
            raise
        if not chunk:
            break
        chunks.append(chunk)
    os.close(read_end)
    try:
        os.waitpid(child, 0)
    except OSError:
        pass
    try:
        info = json.loads(b"".join(chunks).decode("utf-8"))
    except ValueError:
        raise DetachError("could not start %s detached (no handle from the supervisor)" % os.path.basename(argv[0]),
                          cmd=argv, state_dir=state_dir)
    if info.get("exec_error"):
        raise DetachError("could not start %s: %s" % (argv[0], info["exec_error"]), cmd=argv, state_dir=state_dir)
    handle = {
        "argv": list(argv),
        "state_dir": state_dir,
        "started": time.time(),
        "timeout_s": int(timeout_s),
        "deadline": time.time() + int(timeout_s) + int(kill_after_s),
    }
    handle.update(paths)
    handle.update(info)
    handle.update(extra or {})
    _write_json(paths["handle_file"], handle)
    return handle


def _stop_group(tool):  # pragma: no cover - forked child
    """SIGTERM the tool's group, SIGKILL it after OWNER_GRACE_S; the wait status if the tool was reaped, else None."""
    try:
        os.killpg(tool, signal.SIGTERM)
    except OSError:
        return None
    deadline = time.monotonic() + OWNER_GRACE_S
    status = None
    while time.monotonic() < deadline:
        pid, status = os.waitpid(tool, os.WNOHANG)
        if pid == tool:
            break
        status = None
        time.sleep(0.05)
    try:
        os.killpg(tool, signal.SIGKILL)     # what is left of the group (or the tool itself, past its grace)
    except OSError:
        pass
    return status


def _wait_tool(tool, watch):  # pragma: no cover - forked child
    """Wait for the tool; with ``watch`` (owner pid, its start time) stop the tool's group once the owner is gone.
    Returns (wait status or None, owner_gone)."""
    owner_gone = False
    if watch is not None:
        # wake up at once when the tool ends (SIGCHLD), else every OWNER_POLL_S to look at the owner: the end of a
        # tool is seen without delay (it is on the critical path of a sweep's rounds). Blocked only here, after
        # the tool was forked with the mask it had; a SIGCHLD that came before is found by waitpid below.
        signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGCHLD})
    while True:
        try:
            pid, status = os.waitpid(tool, 0 if watch is None or owner_gone else os.WNOHANG)
        except OSError as exc:
            if exc.errno == errno.EINTR:
                continue
            return None, owner_gone
        if pid == tool:
            return status, owner_gone
        if process_start_time(watch[0]) != watch[1]:
            owner_gone = True
            status = _stop_group(tool)
            if status is not None:
                return status, owner_gone
            continue
        signal.sigtimedwait({signal.SIGCHLD}, OWNER_POLL_S)


def _supervise(full, environ, paths, write_end, on_exit, watch=None):  # pragma: no cover - forked child
    err_r, err_w = os.pipe()
    tool = os.fork()
    if tool == 0:
        try:
            os.close(err_r)
            os.close(write_end)
            os.setpgid(0, 0)
            out = _new_file(paths["stdout"])
            err = _new_file(paths["stderr"])
            os.dup2(out, 1)
            os.dup2(err, 2)
            os.close(out)
            os.close(err)
            # close-on-exec on the error pipe: a successful exec closes it silently
            fcntl.fcntl(err_w, fcntl.F_SETFD, fcntl.FD_CLOEXEC)
            os.execve(full[0], full, environ)
        except OSError as exc:
            os.write(err_w, str(exc).encode("utf-8", "replace"))
        os._exit(127)
    os.close(err_w)
    exec_error = os.read(err_r, 4096).decode("utf-8", "replace")
    os.close(err_r)
    info = {"pid": tool, "pgid": tool, "supervisor_pid": os.getpid(),
            "proc_start_time": process_start_time(tool)}
    if exec_error:
        info["exec_error"] = exec_error
    os.write(write_end, json.dumps(info).encode("utf-8"))
    os.close(write_end)
    status, owner_gone = _wait_tool(tool, watch)
    outcome = {"rc": _exit_code(status) if status is not None else None, "ended": time.time()}
    if owner_gone:
        outcome["owner_gone"] = True
    if on_exit is not None:
        try:
            outcome["on_exit"] = on_exit()
        except Exception as exc:  # noqa: BLE001 - a cleanup error must not lose the rc
            outcome["on_exit_error"] = str(exc)
    _write_json(paths["rc_file"], outcome)


def outcome(handle):
    """The rc.json content ({rc, ended, ...}) once the tool has ended, else None."""
    return _read_json(handle["rc_file"])


def alive(handle):
    """True while the tool's process still exists and is the one we started."""
    pid = handle.get("pid")
    if not pid:
        return False
    expected = handle.get("proc_start_time")
    # without the start time it recorded, a pid may name any process by now: never taken as ours
    return expected is not None and process_start_time(pid) == expected


def wait(handle, timeout_s, poll_s=0.1):
    """Wait until the tool has ended (rc.json written) or timeout_s passed; return outcome() or None."""
    deadline = time.monotonic() + max(0.0, timeout_s)
    while True:
        result = outcome(handle)
        if result is not None:
            return result
        if not alive(handle) and not supervisor_alive(handle):
            # both gone without an rc file (killed with SIGKILL, host reboot): nothing to wait for
            return None
        if time.monotonic() >= deadline:
            return None
        time.sleep(poll_s)


def supervisor_alive(handle):
    """True while the detached supervisor of ``handle`` (which writes rc.json) still exists."""
    pid = handle.get("supervisor_pid")
    if not pid:
        return False
    try:
        os.kill(pid, 0)
    except OSError as exc:
        return exc.errno == errno.EPERM
    return process_start_time(pid) is not None


def kill(handle, grace_s=3.0):
    """Stop the tool's whole process group (TERM, then KILL after grace_s). Returns True if it was running."""
    if not alive(handle):
        return False
    pgid = handle["pid"]        # the tool leads its own process group (start): the group of the pid just checked
    for sig, pause in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 2.0)):
        try:
            os.killpg(pgid, sig)
        except OSError as exc:
            if exc.errno == errno.ESRCH:
                break
            raise
        deadline = time.monotonic() + pause
        while time.monotonic() < deadline and alive(handle):
            time.sleep(0.05)
        if not alive(handle):
            break
    # let the supervisor write rc.json and run its on_exit callback
    deadline = time.monotonic() + 5.0
    while time.monotonic() < deadline and outcome(handle) is None and supervisor_alive(handle):
        time.sleep(0.05)
    return True


def read(handle, limit=1 << 20):
    """(stdout, stderr) captured so far (the last ``limit`` bytes of each)."""
    texts = []
    for key in ("stdout", "stderr"):
        try:
            with open(handle[key], "rb") as stream:
                stream.seek(0, os.SEEK_END)
                size = stream.tell()
                stream.seek(max(0, size - limit))
                texts.append(stream.read().decode("utf-8", "replace"))
        except (IOError, OSError):
            texts.append("")
    return texts[0], texts[1]


def load_checked(state_dir):
    """(handle, None) when ``state_dir`` holds a handle start() wrote: the directory is one the collection made
    (statedir.check_own) and handle.json a regular file of the effective user writable by nobody else;
    (None, None) when there is no handle; (None, why) when there is one that is not trusted (left alone)."""
    try:
        real = statedir.check_own(state_dir, what="process state directory")
    except statedir.StateError as exc:
        return None, str(exc)
    if real is None or not os.path.lexists(os.path.join(real, HANDLE)):
        return None, None
    handle = _read_json(os.path.join(real, HANDLE), private=True)
    if not isinstance(handle, dict):
        return None, "%s is not a readable handle of uid %d writable by nobody else; left alone" % (
            os.path.join(real, HANDLE), os.geteuid())
    return handle, None


def load(state_dir):
    """The trusted handle stored in a state directory (load_checked), or None."""
    return load_checked(state_dir)[0]
