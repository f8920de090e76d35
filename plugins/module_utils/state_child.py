# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A process with a state directory: its outputs in files and a handle the cleanup can find (private).

The sweep runner (perftest_sweep) starts every perftest server and client as its own child through ``start()``:
proc.spawn (own session and process group, C locale, stdin /dev/null, the hard time limit, dying with the
runner: PR_SET_PDEATHSIG) with stdout and stderr going to files of a state directory the collection made
(statedir.own_dir), and a ``handle.json`` there (argv, pid, process start time, paths, the caller's ``extra``).
The handle returned is that dict plus the live proc.Child under ``"child"``:

- ``outcome(handle)`` - ``{"rc", "ended"}`` once the process ended (rc 124/137: its time limit ended it), else None;
- ``alive(handle)``, ``wait(handle, timeout_s)``, ``kill(handle, grace_s)`` (TERM, then KILL its group);
- ``read(handle)`` - the captured (stdout, stderr).

A handle the cleanup loads back (``load_checked``: module perftest ``state: absent``, a sweep's cleanup) has no
child: ``kill`` then signals the recorded process group only while the pid is still the process that started at
the recorded start time (proc.kill_group). ``load()`` trusts a ``handle.json`` only inside a directory the
collection made, owned by the effective user and writable by nobody else: a handle planted anywhere else is never
loaded, so its pids are never killed. Runs on Python 3.8+, Linux, no Ansible imports.
"""

from __future__ import annotations

import os

from ansible_collections.aifabric.acceptance.plugins.module_utils import statedir
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import AcceptanceError
from ansible_collections.aifabric.acceptance.plugins.module_utils.proc import KILL_AFTER_S, kill_group, process_start_time, spawn

HANDLE = "handle.json"


class StartError(AcceptanceError):
    """The process could not be started."""


def start(argv, timeout_s, state_dir, env=None, kill_after_s=KILL_AFTER_S, extra=None, base=None):
    """Start argv as this process's child (proc.spawn) with its outputs in ``state_dir``; return the handle (also
    written to state_dir/handle.json, without the child).

    ``state_dir`` is made by statedir.own_dir under ``base`` (default: its parent, which must exist and be
    trusted), or an existing directory the collection made; ``extra`` is merged into the handle. StartError
    when the program cannot be started.
    """
    state_dir = os.path.abspath(state_dir)
    state_dir = statedir.own_dir(base or os.path.dirname(state_dir), state_dir, what="process state directory")
    paths = {"stdout": os.path.join(state_dir, "stdout"), "stderr": os.path.join(state_dir, "stderr"),
             "handle_file": os.path.join(state_dir, HANDLE)}
    out, err = statedir.replace_file(paths["stdout"]), statedir.replace_file(paths["stderr"])
    try:
        child = spawn(argv, timeout_s, env=env, stdout=out, stderr=err, kill_after_s=kill_after_s)
    except OSError as exc:
        raise StartError("could not start %s: %s" % (argv[0], exc), cmd=argv, state_dir=state_dir)
    finally:
        os.close(out)
        os.close(err)
    handle = {"argv": list(argv), "state_dir": state_dir, "started": child.started, "timeout_s": int(timeout_s),
              "deadline": child.started + int(timeout_s) + int(kill_after_s), "pid": child.pid, "pgid": child.pid,
              "proc_start_time": child.start_time}
    handle.update(paths)
    handle.update(extra or {})
    statedir.write_json(paths["handle_file"], handle)
    handle["child"] = child
    return handle


def outcome(handle):
    """``{"rc", "ended"}`` once the process has ended, else None."""
    child = handle["child"]
    if child.poll() is None:
        return None
    return {"rc": child.rc, "ended": child.ended}


def alive(handle):
    """True while the process runs: our child not yet ended, or (a loaded handle) the pid still the process that
    started at the recorded start time (without one, a pid may name any process by now: never taken as ours)."""
    child = handle.get("child")
    if child is not None:
        return child.poll() is None
    pid, expected = handle.get("pid"), handle.get("proc_start_time")
    return bool(pid) and expected is not None and process_start_time(pid) == expected


def wait(handle, timeout_s):
    """Wait until the process has ended or timeout_s passed; return outcome() or None."""
    handle["child"].wait(timeout_s)
    return outcome(handle)


def kill(handle, grace_s=3.0):
    """Stop the process's whole group (TERM, then KILL after grace_s). Returns True if it was running."""
    child = handle.get("child")
    if child is not None:
        return child.kill(grace_s)
    return kill_group(handle.get("pid"), handle.get("proc_start_time"), grace_s)


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
    handle = statedir.read_json(os.path.join(real, HANDLE), private=True)
    if not isinstance(handle, dict):
        return None, "%s is not a readable handle of uid %d writable by nobody else; left alone" % (
            os.path.join(real, HANDLE), os.geteuid())
    return handle, None


def load(state_dir):
    """The trusted handle stored in a state directory (load_checked), or None."""
    return load_checked(state_dir)[0]
