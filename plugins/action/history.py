# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action behind the aifabric.acceptance.history module: the history store's index, export, retention, baselines."""

from __future__ import annotations

import io
import os
import stat

from ansible.errors import AnsibleActionFail

from ansible_collections.aifabric.acceptance.plugins.module_utils import argspec, statedir
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import baseline, fleet, history, history_index, render
from ansible_collections.aifabric.acceptance.plugins.plugin_utils.controller_action import ControllerAction

ARGUMENT_SPEC = {
    "history_db": {"type": "str", "required": True},
    "operation": {"type": "str", "required": True, "choices": ["index", "export", "prune", "freeze", "expect"]},
    "dest": {"type": "path"},
    "reports_root": dict({"type": "path"}, **argspec.renamed("reports_dir")),
    "keep_runs": {"type": "int"},
    "keep_days": {"type": "int"},
    "name": {"type": "str"},
    "run": {"type": "str", "default": "latest"},
    "kind": {"type": "str", "choices": list(history.BASELINE_KINDS), "default": "medians"},
    "min_pct": {"type": "float", "default": baseline.DEFAULT_MIN_PCT},
    "status": {"type": "str", "choices": ["fail", "warn"], "default": "fail"},
}
REQUIRED = {"index": ("dest",), "export": ("dest",), "prune": (), "freeze": ("name",), "expect": ("name",)}


def _changed(path, text):
    """Whether the file the action writes at ``path`` would change. The path rule comes BEFORE anything is opened:
    its directory passes statedir.trusted_dir and what is at the name is absent or a regular file of ours or root's
    writable by nobody else (statedir.check_file: a FIFO, a device or a link is refused); it is then opened
    non-blocking, never through a link, and checked again on the descriptor (a FIFO put there meanwhile never
    hangs the play)."""
    directory = statedir.trusted_dir(os.path.dirname(path), create=False, private=False, what="dest directory")
    name = os.path.join(directory, os.path.basename(path))
    if not statedir.check_file(name, "dest"):
        return True
    fd = os.open(name, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC)
    with os.fdopen(fd, "rb") as handle:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise statedir.StateError("dest %s is not a regular file" % name)
        return handle.read().decode("utf-8", "surrogateescape") != text


class ActionModule(ControllerAction):
    ARGUMENT_SPEC = ARGUMENT_SPEC

    def act(self, args, task_vars, result):
        op, db, check = args["operation"], args["history_db"], self._task.check_mode
        missing = [k for k in REQUIRED[op] if not args[k]]
        if missing:
            raise AnsibleActionFail("operation %s needs %s" % (op, ", ".join(missing)))
        try:
            result.update(getattr(self, "_" + op)(db, args, check))
        except fleet.RunSummaryError as exc:
            raise AnsibleActionFail(str(exc)) from exc
        except (OSError, ValueError, history.HistoryError, statedir.StateError) as exc:
            raise AnsibleActionFail("history %s: %s" % (op, exc)) from exc
        result["history_db"] = history.display_name(db)
        result["results"] = []
        return result

    @staticmethod
    def _index(db, args, check):
        dest = os.path.abspath(args["dest"])
        entries = history.run_index(db)
        text = history_index.render_index(entries, args["reports_root"] or os.path.dirname(dest),
                                          history.display_name(db))
        changed = _changed(dest, text)
        if changed and not check:
            render.write_atomic(dest, text)
        return {"changed": changed, "dest": dest, "runs": len(entries)}

    @staticmethod
    def _export(db, args, check):
        dest = os.path.abspath(args["dest"])
        buffer = io.StringIO()
        n_runs, n_records = history.export_jsonl(db, buffer)
        changed = _changed(dest, buffer.getvalue())
        if changed and not check:
            render.write_atomic(dest, buffer.getvalue())
        return {"changed": changed, "dest": dest, "runs": n_runs, "records": n_records}

    @staticmethod
    def _prune(db, args, check):
        gone = history.prune(db, keep_runs=args["keep_runs"], keep_days=args["keep_days"], dry_run=check)
        return {"changed": bool(gone), "removed_runs": gone}

    @staticmethod
    def _freeze(db, args, check):
        run = args["run"]
        stored = None
        if os.path.isfile(run):     # a results.json: its run goes into the store first (replacing a copy of it)
            data = fleet.load_results(run)
            stored = data["run"]["run_id"]
            if not check:
                history.record_run(db, data["run"], data["records"])
            run = stored
        elif run == "latest":
            entries = history.run_index(db)
            if not entries:
                raise ValueError("the history store %s has no run to freeze" % history.display_name(db))
            run = entries[-1]["run_id"]
        before = history.load_baseline(db, args["name"])
        if check:
            if stored is None:
                history.run_records(db, run)      # the run must exist
            return {"changed": True, "baseline": {"name": args["name"], "source_run": run, "kind": args["kind"]}}
        base = history.save_baseline(db, args["name"], run, kind=args["kind"])
        changed = before is None or (before["source_run"], before["kind"], before["data"]) != (
            base["source_run"], base["kind"], base["data"])
        return {"changed": changed, "baseline": {"name": base["name"], "source_run": base["source_run"],
                                                 "kind": base["kind"], "values": len(base["data"])}}

    @staticmethod
    def _expect(db, args, check):
        """Hold this playbook run against a baseline: the resolved ``baseline`` config goes into the run's
        record stream, so the run_summary step and the callback's report both apply it (one verdict)."""
        del check   # the stream is the run's own temporary file: check mode reports with it too
        path = fleet.stream_path()
        config = baseline.resolve_config({"baseline": {"name": args["name"], "min_pct": args["min_pct"],
                                                       "status": args["status"]}}, db)
        fleet.append_config(path, baseline=config["baseline"])
        found = config["baseline"]["data"]
        return {"changed": False, "baseline": {"name": found["name"], "source_run": found["source_run"],
                                               "kind": found["kind"], "values": len(found["data"]),
                                               "min_pct": args["min_pct"]}}
