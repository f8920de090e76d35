# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The controller pipeline's entry points, one owner per stage (docs/report.md):

record stream (``stream.py``: :class:`Collector`, the run's JSON-lines file; ``run_store.py``: where the run's
steps find it) -> normalise (``normalize.py``) -> analyses (``analysis_pipeline.py``, once per new data) -> summary
(``summary.py``) -> publish (``publish.py``: history + files + ``latest``).

This module builds a report from records (:func:`build_report`), re-analyses a results.json or a kept stream
(:func:`load_results`, :func:`reanalyze`), makes the run summary of a running playbook (:func:`run_summary`), and
holds the run metadata. It re-exports the names of the stages that the callback, the actions and the tests use
(``fleet.Collector``, ``fleet.normalize``, ``fleet.summarize``, ``fleet.publish``, ...). Used by the
``aifabric.acceptance.fleet_report`` callback, the ``run_summary``, ``report`` and ``history`` actions.
Controller-only (plugin_utils): may use Python 3.11+ and imports nothing from Ansible.
"""

from __future__ import annotations

import json
import os
import platform
import re
import uuid

from ansible_collections.aifabric.acceptance.plugins.module_utils import results
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import run_store, verdict
from ansible_collections.aifabric.acceptance.plugins.plugin_utils.analysis_pipeline import (  # noqa: F401  pylint: disable=unused-import
    ANALYSES, analysis_entry, analyze, reuse_analysis)
from ansible_collections.aifabric.acceptance.plugins.plugin_utils.normalize import (  # noqa: F401  pylint: disable=unused-import
    MISSING_CHECK, TASK_CHECK, UNREACHABLE_CHECK, no_cyclic_gc, normalize, plain, read_document, without_cyclic_gc)
from ansible_collections.aifabric.acceptance.plugins.plugin_utils.publish import check_destinations, publish  # noqa: F401  pylint: disable=unused-import
from ansible_collections.aifabric.acceptance.plugins.plugin_utils.stream import (  # noqa: F401  pylint: disable=unused-import
    VERDICT_FAILED, Collector, append_config, append_entry, missing_host_records)
from ansible_collections.aifabric.acceptance.plugins.plugin_utils.summary import (  # noqa: F401  pylint: disable=unused-import
    compact_summary, console_lines, summarize)

STREAM_START = '{"e":"run"'     # the first line of a record stream (records.jsonl) starts so


# ---------------------------------------------------------------- run metadata


def new_run_id():
    return uuid.uuid4().hex


def collection_version(start=None):
    """Version of this collection: MANIFEST.json (installed) or galaxy.yml (source tree)."""
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(start or __file__))))
    try:
        with open(os.path.join(root, "MANIFEST.json"), encoding="utf-8") as handle:
            return json.load(handle)["collection_info"]["version"]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    try:
        with open(os.path.join(root, "galaxy.yml"), encoding="utf-8") as handle:
            match = re.search(r"^version:\s*['\"]?([^'\"\s]+)", handle.read(), re.M)
            return match.group(1) if match else None
    except OSError:
        return None


def run_metadata(run_id, started, ended, hosts_targeted, inventory_host_count=None,
                 playbooks=None, ansible_version=None, **extra):
    """Run-level metadata written to results.json and the history store."""
    meta = {
        "run_id": run_id,
        "started": started,
        "ended": ended,
        "ansible_version": ansible_version,
        "collection": "aifabric.acceptance",
        "collection_version": collection_version(),
        "python_version": platform.python_version(),
        "controller": platform.node(),
        "playbooks": list(playbooks or []),
        "inventory_host_count": inventory_host_count,
        "hosts_targeted": list(hosts_targeted),
        "hosts_targeted_count": len(hosts_targeted),
    }
    meta.update(extra)
    return plain(meta)


@without_cyclic_gc
def build_report(records, run, config=None, analyses=None, prior=None):
    """Analyse and summarise: the report structure that results.json holds.

    ``prior``: the analysis a run_summary step stored in the run's stream (:attr:`Collector.analysis`, None once
    a later entry changed the records). When it was made with this ``config`` by the default pipeline, its
    records, findings and problems are this report's (stamped with this run's end): the analyses run once per
    new data, and the report is what :func:`analyze` would give."""
    started = run.get("ended") or run.get("started")
    if analyses is None and prior and prior.get("config") == plain(dict(config or {})):
        records, findings, problems = reuse_analysis(records, prior, started)
    else:
        records, findings, problems = analyze(records, config, analyses, started=started)
    summary = summarize(records)
    return {
        "format_version": 1,
        "schema_version": results.SCHEMA_VERSION,      # the record layout this code wrote (docs/results.md)
        "run": run,
        "summary": summary,
        "findings": findings,
        "problems": problems,
        "history": None,
        "records": records,
    }


def load_results(path):
    """Read a results.json written by the callback (or by a re-analysis), or a run's record stream
    (``records.jsonl``, which the callback keeps when the run's report could not be written: see
    :func:`stream_results`). Raises ValueError (OSError when it cannot be read)."""
    return read_results(path)[0]


@without_cyclic_gc
def read_results(path):
    """:func:`load_results`, and whether its records are plain JSON already (parsed without a NaN/Infinity
    constant: :func:`reanalyze` with ``plain_json=True`` need not copy them again)."""
    with open(path, encoding="utf-8") as handle:
        if handle.read(len(STREAM_START)) == STREAM_START:
            return stream_results(path), False
        handle.seek(0)
        data, finite = read_document(handle)
    if not isinstance(data, dict) or not isinstance(data.get("records"), list) or not isinstance(data.get("run"), dict):
        raise ValueError("%s is not a fleet report results.json (needs 'run' and 'records')" % path)
    if not data["run"].get("run_id"):
        raise ValueError("%s has no run.run_id" % path)
    version = data.get("schema_version", 0)     # none: written before versions (version 0), read as it is
    if type(version) is not int or not 0 <= version <= results.SCHEMA_VERSION:  # pylint: disable=unidiomatic-typecheck
        raise ValueError("%s has schema_version %r: this collection reads versions 0 to %d (a later one is read by the "
                         "aifabric.acceptance release that wrote it, or a later one)" % (path, version, results.SCHEMA_VERSION))
    return data, finite


def stream_results(path):
    """A record stream read as a results.json: ``{run, records, config}`` (the analysis config the run
    stored, e.g. required_checks, which :func:`reanalyze` applies). Raises ValueError (OSError)."""
    collected = Collector.load(path)
    if not collected.run.get("run_id"):
        raise ValueError("%s is not a fleet report record stream (its first line names no run_id)" % path)
    run = dict(collected.run, hosts_targeted=collected.hosts_targeted,
               hosts_targeted_count=len(collected.hosts_targeted), recovered_from=os.path.abspath(path),
               required_checks=collected.config.get("required_checks") or {})
    if collected.problems:
        run["stream_problems"] = collected.problems
    return {"run": run, "records": collected.records(), "config": dict(collected.config)}


@without_cyclic_gc
def reanalyze(data, config=None, analyses=None, plain_json=False):
    """The report of an existing results.json, analysed again from its measured records.

    Analysis records and findings of the earlier analysis are dropped first, so the
    result is the same however often it is re-analysed. ``plain_json``: ``data`` is what
    :func:`read_results` just parsed and said is plain JSON (its records are not copied again).
    """
    records = [normalize(r, r.get("host") if isinstance(r, dict) and isinstance(r.get("host"), str) else None,
                         task_name="results.json", parsed_json=plain_json) for r in data["records"]]
    run = plain(data["run"])
    config = dict(data.get("config") or {}, **(config or {}))     # a record stream's own config, then the caller's
    if "required_checks" not in config and isinstance(run.get("required_checks"), dict) and run["required_checks"]:
        # the run's own required checks (results.json keeps them in run.required_checks): the same records give
        # the same verdict when analysed again
        config["required_checks"] = run["required_checks"]
    return build_report(records, run, config, analyses)


# ---------------------------------------------------------------- the run summary step


RunSummaryError = run_store.RunSummaryError


def stream_path(controller_pid=None):
    """The record stream of the running ansible-playbook (by default the parent of this worker process: the step
    runs in a worker that ansible-playbook forked), found in the run store; RunSummaryError saying why not."""
    return run_store.find(os.getppid() if controller_pid is None else controller_pid)


def check_required(required):
    """required_checks as {host or "*": [check glob, ...]}; raises ValueError naming what is wrong.

    The one rule is verdict.required_patterns (the analysis that applies them); this only sorts."""
    return dict((host, sorted(set(globs)))
                for host, globs in verdict.required_patterns({"required_checks": required}).items())


def run_summary(path, required_checks=None, controller_pid=None, host_required=None):
    """The verdict of the running playbook so far, from its record stream: (report, collector).

    ``controller_pid``: the ansible-playbook process asking (the parent of the worker that runs the
    step); a stream another process wrote is refused. ``host_required(hosts)`` returns the required
    checks the targeted hosts declare (their ``aifabric_required_checks``); ``required_checks`` is
    merged over them. They are stored in the stream first, so the callback's report at the end of
    the run uses the same configuration: both run the same :func:`build_report` on the same
    records. Raises RunSummaryError when no host was targeted.
    """
    collected = Collector.load(path)
    owner = collected.run.get("controller_pid")
    if controller_pid is not None and owner is not None and owner != controller_pid:
        raise RunSummaryError(   # a stream inherited from an enclosing ansible-playbook, not this run's
            "the aifabric.acceptance.fleet_report callback is not enabled in this ansible-playbook (the record "
            "stream %s belongs to process %s, another run). Enable it: %s" % (path, owner, run_store.ENABLE_LINE))
    if not collected.hosts_targeted:
        raise RunSummaryError(
            "no host was targeted, so there is nothing to report: the plays target the host pattern "
            "acceptance_hosts (default: the group gpu_nodes; a stage playbook its <stage>_hosts, e.g. rdma_hosts "
            "default rdma_nodes), and the inventory has no host there - a wrong -i path, an empty group, a --limit "
            "that matches nothing, or hosts given as -i node1,node2, (those are in no group: add "
            "-e acceptance_hosts=all). A run that works from the checkout: "
            "make acceptance INVENTORY=inventories/localhost")
    required = dict(host_required(collected.hosts_targeted) if host_required else {})
    required.update(required_checks or {})
    required = check_required(required)
    if required:
        append_config(path, required_checks=required)
        collected._apply({"e": "config", "config": {"required_checks": required}}, log=False)
    run = dict(collected.run)
    run.setdefault("ended", run.get("started"))
    config = dict(collected.config)
    report = build_report(collected.records(), run, config, prior=collected.analysis)
    if collected.analysis is None:   # the report at the end of the run takes it while no later entry changes the records
        append_entry(path, analysis_entry(report, config, collected.entries))
    report["problems"].extend(collected.problems)
    return report, collected


# ---------------------------------------------------------------- the verdict reaches the caller (acceptance_fail_on)

FAIL_ON = {"fail": ("fail", "error"), "warn": ("warn", "fail", "error"), "never": ()}


def failing_hosts(summary, fail_on):
    """The hosts whose verdict fails the run under ``fail_on`` (fail: fail or error; warn: also warn; never)."""
    if fail_on not in FAIL_ON:
        raise ValueError("fail_on must be one of %s, got %r" % (", ".join(FAIL_ON), fail_on))
    return [h["host"] for h in summary["hosts"] if h["status"] in FAIL_ON[fail_on]]


def publish_verdict(path, collected, report, ended, ansible_version=None):
    """Publish the report from the run_summary step (history + files, fleet.publish, as the callback would), before
    that step fails the run on its verdict; a ``published`` stream entry then tells the callback, at the end of the
    run, that this report is the run's while no later entry changed the records (it publishes nothing else).
    Returns publish's result."""
    run = collected.run
    config = collected.config
    report["run"] = run_metadata(
        run.get("run_id"), run.get("started"), ended, collected.hosts_targeted, ansible_version=ansible_version,
        inventory_host_count=run.get("inventory_host_count"), playbooks=run.get("playbooks"), check_mode=False,
        interrupted=False, required_checks=plain(config.get("required_checks") or {}), published_by="run_summary")
    out = publish(report, reports_root=run["reports_root"], formats=run.get("formats"), history_db=run.get("history_db"))
    append_entry(path, {"e": "published", "dir": out["dir"], "after": Collector.load(path).entries})
    return out
