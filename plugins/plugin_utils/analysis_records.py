# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What every fleet analysis shares: how its records and findings look.

An analysis is a plain function ``analyze(records, config) -> (new_records, findings)``
listed in ``analysis_pipeline.ANALYSES``. It never rewrites a measured record: it ADDS records,
each marked ``tool: {name: "fleet-analysis", version: <analysis name>}``, so that a
re-analysis can drop them and start again from the measured records alone.

Controller-only (plugin_utils): may use Python 3.11+, imports nothing from Ansible.
"""

from __future__ import annotations

from ansible_collections.aifabric.acceptance.plugins.module_utils import results

TOOL_NAME = "fleet-analysis"
FINDING_KEYS = ("kind", "hosts", "target", "check", "evidence")


def is_analysis_record(record):
    """True for records an analysis added (they are dropped before a re-analysis)."""
    if type(record) is dict:    # pylint: disable=unidiomatic-typecheck  # the common case first (asked ~25 times a record)
        tool = record.get("tool")
        if type(tool) is dict:  # pylint: disable=unidiomatic-typecheck
            return tool.get("name") == TOOL_NAME
    tool = record.get("tool") if isinstance(record, dict) else None
    return isinstance(tool, dict) and tool.get("name") == TOOL_NAME


class Records(list):
    """Records with the measured ones first, ``measured_count`` of them, then the records the analyses added: what
    the pipeline (analysis_pipeline.analyze) gives each analysis and what a report holds (fleet.build_report).
    :func:`measured` and :func:`added` take the two parts instead of asking every record (each analysis, the summary
    and the files walked all the records for them). The split holds only while the list keeps the length it had when
    it was made (:func:`split`): after an append, an insert or a removal both ask every record again."""

    measured_count = None
    sealed_len = None


def split(records, measured_count):
    """``records`` (the measured ones first, ``measured_count`` of them, then only analysis records) as
    :class:`Records` that know where the two parts meet."""
    out = Records(records)
    out.measured_count, out.sealed_len = measured_count, len(out)
    return out


def _count(records):
    """The measured prefix's length of a :class:`Records` still of the length it was made with, else None."""
    count = getattr(records, "measured_count", None)
    if count is None:
        return None
    sealed = getattr(records, "sealed_len", None)
    return count if sealed is None or sealed == len(records) else None


def measured(records):
    """The measured records of ``records`` (those no analysis added), in their order: the measured prefix of a
    :class:`Records`, else the records :func:`is_analysis_record` says no to."""
    count = _count(records)
    if count is not None:
        return records[:count]
    return [r for r in records if not is_analysis_record(r)]


def added(records):
    """The records an analysis added, in their order: the part of a :class:`Records` after its measured prefix, else
    the records :func:`is_analysis_record` says yes to."""
    count = _count(records)
    if count is not None:
        return records[count:]
    return [r for r in records if is_analysis_record(r)]


def record(analysis, check, status, host, reason=None, target=None, peer=None,
           metrics=None, expect=None, facts=None, params=None, started=None):
    """Build one record added by the analysis called ``analysis`` (e.g. "drift")."""
    return results.make(
        check, status, reason=reason, host=host, peer=peer, target=target,
        metrics=metrics, expect=expect, facts=facts, params=params,
        tool={"name": TOOL_NAME, "version": analysis}, started=started,
    )


def finding(kind, check, hosts, target=None, evidence=None):
    """One finding: what the analysis concluded, about which hosts, and why."""
    return {
        "kind": kind,
        "hosts": sorted(set(hosts)),
        "target": target,
        "check": check,
        "evidence": dict(evidence or {}),
    }


def validate_finding(item):
    """Contract problems of one finding (empty list when it is fine)."""
    if not isinstance(item, dict):
        return ["finding is %s, not a dict" % type(item).__name__]
    problems = []
    for key in FINDING_KEYS:
        if key not in item:
            problems.append("finding lacks %r" % key)
    if not isinstance(item.get("kind"), str) or not item.get("kind"):
        problems.append("finding kind must be a non-empty string")
    if not isinstance(item.get("hosts"), list):
        problems.append("finding hosts must be a list")
    if not isinstance(item.get("evidence", {}), dict):
        problems.append("finding evidence must be a mapping")
    return problems
