# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The run store: where a running ansible-playbook keeps its record stream, found by that process.

The ``fleet_report`` callback, in the ansible-playbook process, owns the store of its run:

- ``store = RunStore(run_id)``; ``store.open()`` makes a private directory (``mkdtemp``, 0700) for the record
  stream, ``store.stream_path``, and registers it; ``store.fail(message)`` registers why this run has no summary
  (a bad configuration, a stream that could not be written); ``store.close(keep_stream)`` unregisters it and
  removes the directory unless the stream is kept (a report that could not be written).

The steps of the run (the ``run_summary`` and ``history state=expect`` actions, in the worker processes that
ansible-playbook forks) find it by the process that runs the playbook, their parent:

- ``find(os.getppid()) -> stream path``, or :class:`RunSummaryError` saying why there is none (the callback is
  not enabled in this ansible-playbook, or it registered an error).

The registry is ``statedir.default_root("runs")``: ``/run/aifabric-acceptance/runs`` as root (``/run`` is
writable by root alone), else ``$XDG_RUNTIME_DIR/aifabric-acceptance/runs`` or ``~/.cache/aifabric-acceptance/runs``
- a directory of the user's own, never a fixed name in a shared directory such as ``/tmp`` that another user could
create first (``statedir.trusted_dir``: owned by the user, 0700; one that breaks the rule is refused and the
callback says so, its report is still written). One JSON file per running ansible-playbook named by its process
id: ``{pid, start, run_id, stream, error}``. ``start`` is the
process's start time (``/proc/<pid>/stat``), so an entry that a killed run left behind is never taken for a
later process with the same id. A nested ansible-playbook has its own process id: it never sees the outer run's
stream. Controller-only (plugin_utils), no Ansible imports.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile

from ansible_collections.aifabric.acceptance.plugins.module_utils import statedir
from ansible_collections.aifabric.acceptance.plugins.module_utils.proc import process_start_time

ENABLE_LINE = "ANSIBLE_CALLBACKS_ENABLED=aifabric.acceptance.fleet_report"
NOT_ENABLED = (
    "the aifabric.acceptance.fleet_report callback is not enabled, so this run has no report and no "
    "verdict (ansible.cfg is only read from the current directory or ANSIBLE_CONFIG). Enable it and "
    "run again: %s ansible-playbook ..." % ENABLE_LINE)


ENTRY_BYTES = 4096      # a registry entry's size: room for an error written later without new space


class RunSummaryError(Exception):
    """The run summary cannot be made (no callback, no host targeted); the message says how to fix it."""


def registry(create=True, path=None):
    """The registry directory of this user's running playbooks (``path``, default ``statedir.default_root("runs")``,
    private to the user), checked (statedir.trusted_dir); not created with ``create=False``."""
    path = path or statedir.default_root("runs")
    return statedir.trusted_dir(path, create=create, private=True, what="run registry")


class RunStore:
    """The store of one run, owned by the callback (see the module docstring)."""

    def __init__(self, run_id, pid=None, directory=None):
        self.run_id = run_id
        self.pid = os.getpid() if pid is None else pid
        self.registry = directory       # the registry directory (default: registry())
        self.directory = None           # the private directory of the stream, once open
        self.stream_path = None
        self.registered = False

    def open(self):
        """Make the stream's private directory and register it; returns the stream's path. A registry that cannot
        be used raises (StateError, OSError) with the stream already made (``stream_path``)."""
        self.directory = tempfile.mkdtemp(prefix="aifabric-run-%s-" % self.run_id[:8])
        self.stream_path = os.path.join(self.directory, "records.jsonl")
        self._register(None)
        return self.stream_path

    def fail(self, message):
        """This run's steps get ``message`` instead of a stream (its summary would be wrong or missing). A
        registered entry is rewritten in place, in the space it already holds: it works on a full disk too."""
        if not self.registered:
            self._register(message)
            return
        fd = os.open(os.path.join(self.registry, str(self.pid)), os.O_WRONLY | getattr(os, "O_NOFOLLOW", 0))
        try:
            os.pwrite(fd, self._entry(message), 0)
        finally:
            os.close(fd)

    def _entry(self, error):
        """The registry entry, padded to ENTRY_BYTES (JSON ignores the trailing spaces)."""
        entry = {"pid": self.pid, "start": process_start_time(self.pid), "run_id": self.run_id,
                 "stream": self.stream_path, "error": error}
        text = json.dumps(entry, sort_keys=True).encode("utf-8")
        if len(text) > ENTRY_BYTES and error:
            entry["error"] = error[:ENTRY_BYTES // 2] + "..."
            text = json.dumps(entry, sort_keys=True).encode("utf-8")
        return text + b" " * max(0, ENTRY_BYTES - len(text))

    def _register(self, error):
        self.registry = registry(path=self.registry)
        statedir.write_file(self.registry, str(self.pid), self._entry(error))
        self.registered = True

    def close(self, keep_stream=False):
        """Unregister the run; remove the stream's directory unless ``keep_stream``."""
        if self.registered:
            try:
                os.unlink(os.path.join(self.registry, str(self.pid)))
            except FileNotFoundError:
                pass
            self.registered = False
        if self.directory and not keep_stream:
            shutil.rmtree(self.directory, ignore_errors=True)
            self.directory = None


def find(controller_pid, directory=None):
    """The record stream of the ansible-playbook process ``controller_pid``; RunSummaryError when it has none."""
    try:
        path = os.path.join(registry(create=False, path=directory), str(int(controller_pid)))
        with open(path, encoding="utf-8") as handle:
            entry = json.load(handle)
    except FileNotFoundError:
        raise RunSummaryError(NOT_ENABLED) from None
    except (OSError, ValueError, statedir.StateError) as exc:
        raise RunSummaryError("cannot read the run registry: %s" % exc) from exc
    if not isinstance(entry, dict) or entry.get("start") != process_start_time(int(controller_pid)):
        raise RunSummaryError(NOT_ENABLED)      # left by a run that was killed, for a process id used again
    if entry.get("error"):
        raise RunSummaryError(str(entry["error"]))
    stream = entry.get("stream")
    if not isinstance(stream, str) or not os.path.isfile(stream):
        raise RunSummaryError(NOT_ENABLED)
    return stream
