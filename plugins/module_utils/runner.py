# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run external tools from modules: argv lists, a hard timeout, C locale (private).

A runner never interprets output: it returns (rc, stdout, stderr, elapsed)
and raises ToolMissing / ToolTimeout; parsers read the text.

Outputs are decoded here, once (``decode``): UTF-8, every byte that is not UTF-8 replaced with
U+FFFD and counted (``Run.undecodable``), so one stray byte never reaches a record as a lone
surrogate (the controller refuses a module result that is not valid UTF-8: the task and all its
records would be lost).

``AnsibleModule.run_command`` has no timeout, so every argv is wrapped in
coreutils ``timeout --kill-after=K N``; ``timeout`` runs the tool in its own
process group and signals the whole group, so children die with it.
"""

from __future__ import annotations

import os
import re
import time

from ansible_collections.aifabric.acceptance.plugins.module_utils import statedir
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import ToolMissing, ToolTimeout
from ansible_collections.aifabric.acceptance.plugins.module_utils.proc import TIMEOUT_RCS

KILL_AFTER_S = 10
C_LOCALE = {"LC_ALL": "C", "LANG": "C"}
SURROGATES_RE = re.compile("[\ud800-\udfff]")


def decode(data):
    """(text, count of undecodable bytes): bytes as UTF-8, each byte that is not UTF-8 replaced with U+FFFD.

    A str is taken as decoded with ``surrogateescape`` (what run_command and os.environ give): its lone
    surrogates are those bytes. None gives ("", 0).
    """
    if isinstance(data, bytes):
        data = data.decode("utf-8", "surrogateescape")
    return SURROGATES_RE.subn("\ufffd", data or "")


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


def run(module, argv, timeout_s, env=None, data=None, cwd=None, check_rc=False, foreground=False,
        kill_after_s=KILL_AFTER_S):
    """Run argv (a list of str) under a hard timeout; never through a shell.

    ``foreground=True`` (launchers such as mpirun): on timeout only the launcher gets SIGTERM (its own
    ``ssh`` sessions stay up so that it can tear down its remote daemons and ranks), SIGKILL after
    ``kill_after_s``; the caller then stops what is left by run tag (launch.terminate).

    Raises ToolTimeout when the limit is hit (with the output so far in details),
    ToolMissing when coreutils ``timeout`` is absent. Returns a Run otherwise,
    whatever the exit code (callers decide what a non-zero rc means).
    """
    if not isinstance(argv, list) or not all(isinstance(a, str) for a in argv):
        raise TypeError("argv must be a list of str, got %r" % (argv,))
    wrapper = module.get_bin_path("timeout", required=False)
    if not wrapper:
        raise ToolMissing("coreutils 'timeout' not found on %s (install coreutils)" % _node())
    environ = dict(C_LOCALE)
    environ.update(env or {})
    full = [wrapper] + (["--foreground"] if foreground else []) + [
        "--kill-after=%d" % int(kill_after_s), "%ds" % max(1, int(timeout_s))] + argv
    started = time.monotonic()
    rc, out, err = module.run_command(full, environ_update=environ, data=data, cwd=cwd,
                                      expand_user_and_vars=False, check_rc=False,
                                      binary_data=data is not None)
    elapsed = time.monotonic() - started
    (out, bad_out), (err, bad_err) = decode(out), decode(err)
    if rc in TIMEOUT_RCS:
        raise ToolTimeout(
            "%s timed out after %ss on %s and was killed" % (os.path.basename(argv[0]), int(timeout_s), _node()),
            cmd=argv, rc=rc, stdout_tail=out[-4000:], stderr_tail=err[-4000:], elapsed_s=round(elapsed, 3))
    return Run(argv, rc, out, err, elapsed, undecodable=bad_out + bad_err)


def retest_limit(timeout_s, spent_s, first_s):
    """(limit, None): the time limit of a failing run's retest inside the run's own ``timeout_s`` (so the task's
    limit, which counts one run, holds): what ``spent_s`` (the first run and its cleanup) left of it, when at least
    ``first_s`` (the first run's own time: the retest measures no more) is left; else (None, why not)."""
    left_s = int(timeout_s - spent_s)
    if left_s >= max(first_s, 1):
        return left_s, None
    return None, "not run: %d s of timeout_s %s left, the first run took %.0f s" % (max(left_s, 0), timeout_s,
                                                                                    first_s)
