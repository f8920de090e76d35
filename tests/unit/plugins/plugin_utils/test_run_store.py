# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The run store (issue 20): a run's steps find its record stream by the ansible-playbook process that runs them,
not through an inherited environment variable."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile

import pytest

from ansible_collections.aifabric.acceptance.plugins.module_utils import statedir
from ansible_collections.aifabric.acceptance.plugins.module_utils.proc import process_start_time
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import fleet, run_store

FIND = ("import os, sys; from ansible_collections.aifabric.acceptance.plugins.plugin_utils import run_store\n"
        "try:\n    print(run_store.find(os.getppid(), sys.argv[1]))\n"
        "except run_store.RunSummaryError as exc:\n    print('ERROR', exc)\n")


@pytest.fixture
def registry(tmp_path):
    path = str(tmp_path / "registry")
    os.makedirs(path, mode=0o700)
    return path


def child_finds(registry):
    """What a process this one started (as ansible-playbook forks its workers), with an EMPTY environment but
    the import path, finds."""
    env = {"PYTHONPATH": os.environ.get("PYTHONPATH", "")}
    return subprocess.run([sys.executable, "-c", FIND, registry], env=env, capture_output=True, text=True,
                          timeout=60, check=True).stdout.strip()


def test_a_child_process_finds_the_stream_by_its_parent_without_the_environment(registry):
    store = run_store.RunStore("0123456789abcdef", directory=registry)
    path = store.open()
    try:
        with open(path, "w", encoding="utf-8") as handle:     # the callback's collector creates it (open_stream)
            handle.write("{}\n")
        assert child_finds(registry) == path and os.path.dirname(path) == store.directory
        assert os.stat(store.directory).st_mode & 0o777 == 0o700
        assert not any(v == path for v in os.environ.values())
    finally:
        store.close()
    assert not os.path.exists(store.directory or path) and os.listdir(registry) == []
    assert child_finds(registry).startswith("ERROR the aifabric.acceptance.fleet_report callback is not enabled")


def test_a_stream_kept_for_a_lost_report_stays_but_leaves_the_registry(registry):
    store = run_store.RunStore("r2", directory=registry)
    path = store.open()
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("{}\n")
    store.close(keep_stream=True)
    assert os.path.isfile(path) and os.listdir(registry) == []
    with pytest.raises(run_store.RunSummaryError, match="not enabled"):
        run_store.find(os.getpid(), registry)


def test_an_entry_of_a_killed_run_is_not_taken_for_a_later_process_with_its_id(registry):
    store = run_store.RunStore("r3", directory=registry)
    store.open()
    entry_path = os.path.join(registry, str(os.getpid()))
    with open(entry_path, encoding="utf-8") as handle:
        entry = json.load(handle)
    assert entry["start"] is not None
    assert entry["start"] == process_start_time(os.getpid())
    entry["start"] += 1         # the same process id, another process
    with open(entry_path, "w", encoding="utf-8") as handle:
        json.dump(entry, handle)
    with pytest.raises(run_store.RunSummaryError, match="not enabled"):
        run_store.find(os.getpid(), registry)
    store.close()


def test_an_error_registered_by_the_callback_is_what_the_step_says(registry):
    store = run_store.RunStore("r4", directory=registry)
    store.open()
    store.fail("aifabric.acceptance.fleet_report: cannot write the record stream: disk full")
    assert child_finds(registry) == "ERROR aifabric.acceptance.fleet_report: cannot write the record stream: disk full"
    store.close()


def test_a_registry_others_can_write_is_refused(registry):
    os.chmod(registry, 0o777)
    with pytest.raises(run_store.RunSummaryError, match="cannot read the run registry: .*writable by group or others"):
        run_store.find(os.getpid(), registry)


def test_fleet_stream_path_is_the_stores_lookup(monkeypatch):
    seen = []
    monkeypatch.setattr(run_store, "find", lambda pid: seen.append(pid) or "/x")
    assert fleet.stream_path() == "/x" and seen == [os.getppid()]


def test_an_error_is_registered_in_the_space_the_entry_already_holds(registry, monkeypatch):
    """The stream's disk is full (TMPDIR): the error must still reach the step, so no new file is written."""
    store = run_store.RunStore("r5", directory=registry)
    path = store.open()
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("{}\n")

    def no_space(*_args, **_kwargs):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(run_store.statedir, "write_file", no_space)
    store.fail("cannot write the record stream: [Errno 28] No space left on device " + "x" * 5000)
    with pytest.raises(run_store.RunSummaryError, match=r"^cannot write the record stream: \[Errno 28\].*\.\.\.$"):
        run_store.find(os.getpid(), registry)
    assert os.path.getsize(os.path.join(registry, str(os.getpid()))) == run_store.ENTRY_BYTES
    store.close()


def test_the_default_registry_is_a_private_directory_of_the_user_never_a_name_in_the_shared_tmp():
    """Issue 34: <tmp>/aifabric-runs-<uid>, made first by another user, switched the callback off for every later
    run of that uid. The registry is now the user's own state root (statedir.default_root): /run/... as root,
    $XDG_RUNTIME_DIR or ~/.cache otherwise. Looked at only (create=False): nothing is made here."""
    path = run_store.registry(create=False)
    assert path == os.path.realpath(statedir.default_root("runs"))
    assert not path.startswith(os.path.realpath(tempfile.gettempdir()) + os.sep)


@pytest.mark.skipif(os.geteuid() != 0, reason="chown to another uid needs root")
def test_a_registry_another_user_made_is_refused_and_said_and_the_report_is_still_written(tmp_path, monkeypatch):
    """The callback keeps its record stream (its report is written at the end) and says loudly why its steps cannot
    find it; it is never silently disabled."""
    from ansible_collections.aifabric.acceptance.plugins.callback import fleet_report
    squatted = tmp_path / "registry"
    squatted.mkdir(mode=0o700)
    os.chown(str(squatted), 65534, 65534)
    callback = fleet_report.CallbackModule()
    said = []
    monkeypatch.setattr(callback._display, "error", lambda msg, **kw: said.append(msg))
    callback.store.registry = str(squatted)
    callback.config = {"reports_root": str(tmp_path / "reports"), "formats": ["json"], "history_db": None,
                       "drift_pins": {}}
    monkeypatch.setattr(fleet_report.atexit, "register", lambda *a, **k: None)
    monkeypatch.setattr(fleet_report.proc, "chain_handler", lambda *a, **k: None)
    try:
        callback._open_stream()
        assert not callback.disabled and os.path.isfile(callback.collector.stream_path)
        assert len(said) == 1 and "run registry is refused" in said[0] and "owned by uid 65534" in said[0]
        assert os.listdir(str(squatted)) == []
    finally:
        callback.collector.close_stream()
        callback.store.close()
