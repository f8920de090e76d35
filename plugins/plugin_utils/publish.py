# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Publish (stage 5 of the controller pipeline, docs/report.md): the run appended to the history store with its
report files, written as a whole, and ``latest`` pointed at them (:func:`publish`). Controller-only
(plugin_utils), no Ansible imports.
"""

from __future__ import annotations

import os
import shutil
import tempfile

from ansible_collections.aifabric.acceptance.plugins.module_utils import proc, statedir
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import compare, history, render


def publish(report, reports_root=None, dest=None, formats=None, history_db=None, check_mode=False):
    """Append the run to the history store (when history_db is set) and write the report files.

    Files go into ``dest`` when given (each file replaced atomically), else into a new
    ``<reports_root>/<UTC stamp>-<run id>/`` (the run's directory) written as a whole (a hidden temporary directory
    renamed into place), then ``<reports_root>/latest`` is pointed at it, last. SIGINT/SIGTERM
    are held while this runs. A run is stored only with its report: the files are made first, outside the
    store's lock (with the change since each host's previous run, read from the store), then the run's rows
    and the files' rename into place are committed in one short transaction. A report that cannot be written
    (a full disk) stores nothing and its error propagates; when another run of these hosts was stored meanwhile
    (the deltas differ), the files are made again. A broken history store (it cannot be opened or written, or
    the commit fails: then a report put in place for it is removed) is a warning, and the report is written
    without history. A ``latest`` that cannot be updated is a warning too. In check mode nothing is stored or
    written (the history is only read), but ``changed`` still says which files would change. Returns
    {"dir", "files": {format: path}, "changed": [formats], "warnings": [...]}.
    """
    warnings = []
    if dest:
        directory = os.path.abspath(dest)
    else:
        directory = os.path.join(os.path.abspath(reports_root), render.run_dir_name(report["run"]))
    report["run"]["run_dir"] = directory
    report["run"]["report_dir"] = directory     # its name before 2.0.0, deprecated (removed in 3.0.0)
    writer = _ReportWriter(report, directory, formats, fresh=not dest, check_mode=check_mode)
    with proc.deferred_signals():   # a report and its history row are written whole, never half way
        if history_db and not check_mode:
            _store_and_write(writer, report, history_db, warnings)
        else:
            deltas, db, error = [], None, None
            if history_db:
                try:
                    deltas = history.record_run(history_db, report["run"], report["records"], dry_run=True)
                    db = history.display_name(history_db)
                except history.HistoryError as exc:
                    error = str(exc)
                    warnings.append(error)
            writer.write(deltas, db, error=error)
        if not dest and not check_mode:
            try:
                render.point_latest(os.path.abspath(reports_root), directory)
            except (OSError, statedir.StateError) as exc:
                warnings.append("the report is written in %s, but %s could not point at it: %s" % (
                    directory, os.path.join(os.path.abspath(reports_root), "latest"), exc))
    return {"dir": directory, "files": writer.files, "changed": writer.changed, "warnings": warnings}


def check_destinations(reports_root, history_db=None):
    """Refuse, before a run starts (the callback's configuration), a report directory or history file that the path
    rule refuses or that cannot be made: what exists of each path is checked as publish would use it, and its nearest
    existing directory must be writable. Raises statedir.StateError naming the path and why, history.HistoryError for
    a history_db that is neither a SQLite file path nor a postgresql:// URL (without its text)."""
    paths = [(reports_root, "reports root")]
    if history_db and not history.is_url(history.check_db(history_db)):
        paths.append((os.path.dirname(os.path.abspath(os.path.expanduser(history_db))), "history database directory"))
    for path, what in paths:
        real = statedir.trusted_dir(os.path.abspath(os.path.expanduser(path)), create=False, private=False, what=what)
        existing = real
        while not os.path.isdir(existing) and os.path.dirname(existing) != existing:
            existing = os.path.dirname(existing)
        if not os.access(existing, os.W_OK | os.X_OK):
            raise statedir.StateError("cannot use %s %s: %s is not writable by this user" % (what, path, existing))
        _probe_write(existing, what, path)


def _probe_write(existing, what, path):
    """Make and remove one empty directory in ``existing``: root passes os.access everywhere, yet /proc, /sys or a
    read-only or full file system refuse the report's directory only when the run ends."""
    try:
        os.rmdir(tempfile.mkdtemp(prefix=".aifabric-probe-", dir=existing))
    except OSError as exc:
        raise statedir.StateError("cannot use %s %s: a directory cannot be made in %s: %s" % (
            what, path, existing, exc.strerror or exc)) from exc


STAGE_ATTEMPTS = 3     # reports made outside the lock before the last one is made inside it (its history kept moving)


def _store_and_write(writer, report, history_db, warnings):
    """The report files made with the run's deltas outside the store's lock, then the run's rows and the files'
    rename committed together (history.record_run with ``expect``); made again when the deltas changed meanwhile.
    A store that cannot be read first, or whose hosts' history keeps changing, gets the files made inside the
    transaction. A store that cannot be written: the report without history, and a warning."""
    run, records, db = report["run"], report["records"], history.display_name(history_db)
    try:
        try:
            deltas = history.record_run(history_db, run, records, dry_run=True)
        except history.HistoryError:
            deltas = None       # the write below says what is wrong with the store, as it always did
        for _attempt in range(STAGE_ATTEMPTS if deltas is not None else 0):
            writer.stage(deltas, db)
            try:
                history.record_run(history_db, run, records, expect=deltas, before_commit=lambda _deltas: writer.commit())
                return
            except history.DeltasChanged as moved:
                writer.undo()
                deltas = moved.deltas
        history.record_run(history_db, run, records, before_commit=lambda deltas: writer.write(deltas, db))
    except history.HistoryError as exc:
        writer.undo()       # put in place for a commit that failed: the run is not in the history
        warnings.append(str(exc))
        writer.write([], error=str(exc))


class _ReportWriter:
    """The report files of :func:`publish`, written with a given history section (again, after a failed commit):
    made in a hidden directory (:meth:`stage`), then put in place (:meth:`commit`), or both at once (:meth:`write`)."""

    def __init__(self, report, directory, formats, fresh, check_mode):
        self.report, self.directory, self.formats = report, directory, formats
        self.fresh, self.check_mode = fresh and not check_mode, check_mode
        self.comparison = report.get("comparison")          # compare_with's, kept; else made from the deltas
        self.margin = report.get(compare.MARGIN_KEY)
        self.files, self.changed, self.written, self.staged = {}, [], False, None

    def _history(self, deltas, db, error):
        self.report["history"] = {"db": db, "deltas": deltas}
        if error:
            self.report["history"]["error"] = error
        self.report["comparison"] = self.comparison
        if self.margin is not None:
            self.report[compare.MARGIN_KEY] = self.margin
        compare.attach(self.report)     # report["comparison"]: with compare_with's reference, else the previous runs

    def stage(self, deltas, db=None, error=None):
        """Make the files with this history section, not yet in place (render.stage_report)."""
        self.undo()     # a retried transaction writes the directory anew
        self._history(deltas, db, error)
        self.staged = render.stage_report(self.report, self.directory, self.formats, fresh=self.fresh)
        self.files, self.changed = self.staged.files, self.staged.changed

    def commit(self):
        """Put the staged files in place (renames)."""
        staged, self.staged = self.staged, None
        staged.commit()
        self.written = True

    def write(self, deltas, db=None, error=None):
        """Make the files and put them in place (in check mode: only say which would change)."""
        if self.check_mode:
            self._history(deltas, db, error)
            self.files, self.changed = render.write_report(self.report, self.directory, self.formats, check_mode=True)
            return
        self.stage(deltas, db, error)
        self.commit()

    def undo(self):
        """Remove the files made and not put in place, and the run directory this writer made (``dest`` files are
        only ever replaced)."""
        if self.staged is not None:
            self.staged.discard()
            self.staged = None
        if self.written and self.fresh:
            shutil.rmtree(self.directory, ignore_errors=True)
        self.written = False
