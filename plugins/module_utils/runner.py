# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run external tools from modules: argv lists, a hard timeout, C locale (private).

A runner never interprets output: it returns (rc, stdout, stderr, elapsed)
and raises ToolMissing / ToolTimeout; parsers read the text.

Outputs are decoded once (proc.decode): UTF-8, every byte that is not UTF-8 replaced with
U+FFFD and counted (``Run.undecodable``), so one stray byte never reaches a record as a lone
surrogate (the controller refuses a module result that is not valid UTF-8: the task and all its
records would be lost). The values the module holds as ``no_log`` (a password given as an option)
are masked in them as Ansible masks them in a result (``mask``).

Every process is started by proc.spawn (the one place a target process is started): its own
session and process group, stdin /dev/null, the group killed at the time limit.
"""

from __future__ import annotations

import errno
import os
import time

from ansible_collections.aifabric.acceptance.plugins.module_utils import statedir
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import ToolMissing, ToolTimeout
from ansible_collections.aifabric.acceptance.plugins.module_utils.proc import KILL_AFTER_S, decode, spawn

MASK = "********"       # what Ansible writes for a no_log value (module_utils.common.parameters.remove_values)


def mask(text, secrets):
    """``text`` with every non-empty string of ``secrets`` (a module's no_log_values) replaced by MASK."""
    for secret in sorted((s for s in secrets or () if isinstance(s, str) and s), key=len, reverse=True):
        text = text.replace(secret, MASK)
    return text


class Run(object):
    """The outcome of one process: argv as run (without the timeout wrapper), rc, texts, seconds, how many
    bytes of stdout and stderr were not UTF-8 (replaced with U+FFFD), and whether its time limit ended it (the
    pod entry program's runs, k8s_entry.run_argv; ``run`` raises ToolTimeout instead).

    Standard library only, like this whole file's imports: the pod entry program uses it too."""

    __slots__ = ("argv", "rc", "stdout", "stderr", "elapsed_s", "undecodable", "timed_out")

    def __init__(self, argv, rc, stdout, stderr, elapsed_s, undecodable=0, timed_out=False):
        self.argv = argv
        self.rc = rc
        self.stdout = stdout
        self.stderr = stderr
        self.elapsed_s = elapsed_s
        self.undecodable = undecodable
        self.timed_out = timed_out

    @property
    def output(self):
        """stdout then stderr, as a user would have seen them on a terminal (roughly)."""
        if self.stderr:
            return (self.stdout or "") + ("\n" if self.stdout and not self.stdout.endswith("\n") else "") + self.stderr
        return self.stdout or ""


def absolute(path):
    """``path`` made absolute against the working directory WITHOUT lexical normalisation: a ``..`` in it is left
    for statedir's walk to resolve as the kernel does (``os.path.abspath`` would drop ``link/..`` unresolved)."""
    return path if os.path.isabs(path) else os.path.join(os.getcwd(), path)


def checked_file(path, keep_name=False):
    """The path to run for a file the user names (statedir.trusted_file: StateError says which rule it breaks); one
    that does not exist is left as given (its run says it is missing)."""
    if not path or not os.path.lexists(path):
        return path
    return statedir.trusted_file(absolute(path), what=path, keep_name=keep_name)


def python_argv(python, args):
    """The argv of a child Python: isolated (``-I``: neither the working directory nor the script's directory on
    ``sys.path``, no ``PYTHON*`` variables, no user site directory), so it imports only from the interpreter's
    own installation, never from a directory it did not choose (a ``platform.py`` planted in the cwd)."""
    return [python, "-I"] + list(args)


def find_tool(module, name, path=None, hint=None, required=True, keep_name=False):
    """Absolute path of a tool to run: an explicit path (file or directory) wins, else PATH.

    An explicit path must pass statedir.trusted_file (StateError otherwise), and what it returns is what runs:
    the resolved path (``..`` and links resolved as the kernel does). ``keep_name`` (interpreters): the name as
    given in its resolved directory - a virtualenv's python is a link to the system interpreter, and started by
    the resolved path it loses the virtualenv (its site-packages); the links from that name were checked.

    Returns None when absent and not required; raises ToolMissing (with the hint) otherwise.
    """
    if path:
        candidate = os.path.join(path, name) if os.path.isdir(path) else path
        if os.path.isfile(candidate) and os.access(candidate, os.X_OK):
            # a path the user names is executed (often as root): it and every directory on its way must be
            # writable by nobody but root and the user (statedir.trusted_file; StateError says which rule)
            return statedir.trusted_file(absolute(candidate), what=name, keep_name=keep_name)
        if required:
            raise ToolMissing("%s not found or not executable at %s%s" % (name, candidate, _hint(hint)))
        return None
    found = module.get_bin_path(name, required=False)
    if not found and required:
        raise ToolMissing("%s not found on PATH of %s%s" % (name, _node(), _hint(hint)))
    return found


def _hint(hint):
    return " (%s)" % hint if hint else ""


def _node():
    try:
        return os.uname()[1]
    except (AttributeError, OSError):
        return "the target"


def run(module, argv, timeout_s, env=None, data=None, cwd=None, foreground=False, kill_after_s=KILL_AFTER_S):
    """Run argv (a list of str) under a hard timeout (proc.spawn); never through a shell.

    ``foreground=True`` (launchers such as mpirun): on timeout only the launcher gets SIGTERM (its own
    ``ssh`` sessions stay up so that it can tear down its remote daemons and ranks), SIGKILL after
    ``kill_after_s``; the caller then stops what is left by run tag (launch.terminate).

    Raises ToolTimeout when the limit is hit (with the output so far in details). Returns a Run otherwise,
    whatever the exit code (callers decide what a non-zero rc means): an argv[0] that cannot be executed gives
    rc 127 (not found) or 126 (not executable) and why on stderr, as a shell would. Outputs are decoded and
    their no_log values masked (``mask``).
    """
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        raise TypeError("argv must be a list of str, got %r" % (argv,))
    try:
        child = spawn(argv, timeout_s, env=env, cwd=cwd, data=data, kill_after_s=kill_after_s, foreground=foreground)
    except OSError as exc:
        return Run(argv, 127 if exc.errno == errno.ENOENT else 126, "", "%s: %s\n" % (argv[0], exc.strerror or exc), 0.0)
    try:
        out, err = child.communicate()
    except BaseException:
        if not foreground:      # an interrupted run leaves no tool behind (a launcher: the caller's run tag cleanup)
            child.kill()
        raise
    elapsed = time.monotonic() - child.started_mono
    secrets = getattr(module, "no_log_values", None)
    (out, bad_out), (err, bad_err) = decode(out), decode(err)
    out, err = mask(out, secrets), mask(err, secrets)
    if child.timed_out:
        raise ToolTimeout(
            "%s timed out after %ss on %s and was killed" % (os.path.basename(argv[0]), int(timeout_s), _node()),
            cmd=argv, rc=child.rc, stdout_tail=out[-4000:], stderr_tail=err[-4000:], elapsed_s=round(elapsed, 3))
    return Run(argv, child.rc, out, err, elapsed, undecodable=bad_out + bad_err)


def retest_limit(timeout_s, spent_s, first_s):
    """(limit, None): the time limit of a failing run's retest inside the run's own ``timeout_s`` (so the task's
    limit, which counts one run, holds): what ``spent_s`` (the first run and its cleanup) left of it, when at least
    ``first_s`` (the first run's own time: the retest measures no more) is left; else (None, why not)."""
    left_s = int(timeout_s - spent_s)
    if left_s >= max(first_s, 1):
        return left_s, None
    return None, "not run: %d s of timeout_s %s left, the first run took %.0f s" % (max(left_s, 0), timeout_s,
                                                                                    first_s)
