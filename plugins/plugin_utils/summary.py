# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The summary (stage 4 of the controller pipeline, docs/report.md): per-host verdicts, the run verdict and its
counts (:func:`summarize`), the compact form for set_stats (:func:`compact_summary`) and the console lines.
Controller-only (plugin_utils), no Ansible imports.
"""

from __future__ import annotations

from ansible_collections.aifabric.acceptance.plugins.module_utils import results
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import coverage, verdict
from ansible_collections.aifabric.acceptance.plugins.plugin_utils.normalize import NO_HOST


def _rank(entry):
    c = entry["counts"]
    return (-results.SEVERITY.get(entry["status"], 0), -c["error"], -c["fail"], -c["warn"], entry["host"])


def plural(count, word):
    """``1 host``, ``2 hosts``, ``3 status changes``, ``2 matches``: a count and its noun (the last word takes the
    ending: +es after s, x, ch or sh, else +s). Every count the report prints goes through here."""
    if count == 1:
        return "%s %s" % (count, word)
    return "%s %s%s" % (count, word, "es" if word.endswith(("s", "x", "ch", "sh")) else "s")


def verdict_line(summary):
    """The run verdict with the host counts behind it, e.g. ``FAIL: 24 hosts: 1 fail, 2 warn, 21 pass``."""
    counts = summary["hosts_by_status"]
    order = sorted(results.STATUSES, key=results.SEVERITY.get, reverse=True)
    by_status = ", ".join("%d %s" % (counts[s], s) for s in order if counts.get(s)) or "none"
    return "%s: %s: %s" % (summary["worst_status"].upper(), plural(summary["hosts_total"], "host"), by_status)


def summarize(records, max_hosts=10):
    """Counts per status, per-host verdict, worst hosts first (records must be complete and analysed).

    A host's verdict is the worst status (error > fail > warn > pass > skip) of the records that
    count toward it (``verdict.host_records``: pairwise records of a matrix that attribution judged
    count toward no host, attribution's ``.node``/``.link`` records do; pairwise records of an
    unjudged matrix count toward both ends). Its ``counts`` are those records' statuses. The run's
    ``worst_status`` is the worst host verdict (``skip`` only when nothing ran anywhere).
    """
    hosts = []
    for host, recs in verdict.host_records(records).items():
        status = verdict.host_status(recs)
        bad = sorted(set(r["check"] for r in recs if r.get("status") == status and status not in ("pass", "skip")))
        hosts.append({"host": host or NO_HOST, "status": status, "counts": results.count(recs), "checks": bad})
    hosts.sort(key=_rank)
    by_status = dict((s, 0) for s in results.STATUSES)
    for h in hosts:
        by_status[h["status"]] += 1
    worst_hosts = [dict(h, checks=h["checks"][:5]) for h in hosts if h["status"] in ("warn", "fail", "error")]
    summary = {
        "counts": results.count(records),
        "records_total": len(records),
        "hosts_total": len(hosts),
        "hosts_by_status": by_status,
        "worst_status": results.worst((h["status"] for h in hosts), default="skip"),
        "failed_hosts": [h["host"] for h in hosts if h["status"] in ("fail", "error")],
        "worst_hosts": worst_hosts[:max_hosts],
        "hosts": hosts,     # every host, worst first: {host, status, counts, checks}
        # what judged each headline figure; those nothing judged are listed, never a silent pass (coverage.py)
        "judgement": coverage.coverage(records),
    }
    summary["verdict"] = verdict_line(summary)
    return summary


def compact_summary(summary, max_hosts=20, run_dir=None):
    """The small dict for set_stats/AWX artifacts and the console (capped host lists)."""
    failed = summary["failed_hosts"]
    return {
        "worst_status": summary["worst_status"],
        "counts": dict(summary["counts"]),
        "records_total": summary["records_total"],
        "hosts_total": summary["hosts_total"],
        "hosts_by_status": dict(summary["hosts_by_status"]),
        "failed_hosts": failed[:max_hosts],
        "failed_hosts_total": len(failed),
        "worst_hosts": [{"host": h["host"], "status": h["status"], "checks": h["checks"]}
                        for h in summary["worst_hosts"][:max_hosts]],
        "run_dir": run_dir,
        "report_dir": run_dir,      # its name before 2.0.0, deprecated (removed in 3.0.0)
        "unjudged_total": (summary.get("judgement") or {}).get("unjudged_total", 0),
    }


def console_lines(summary, report_path=None, max_hosts=5):
    """The few lines the callback prints at the end of the play."""
    counts = ", ".join("%s %d" % (s, summary["counts"][s]) for s in results.STATUSES)
    lines = ["FLEET REPORT: %s; %d records: %s" % (verdict_line(summary), summary["records_total"], counts)]
    worst = summary["worst_hosts"][:max_hosts]
    if worst:
        lines.append("  worst hosts: " + "; ".join(
            "%s %s (%s)" % (h["host"], h["status"], ", ".join(h["checks"][:3])) for h in worst))
    unjudged = (summary.get("judgement") or {}).get("unjudged_total")
    if unjudged:
        lines.append("  unjudged: %d headline figure(s) that nothing held to an expectation (listed in the report)"
                     % unjudged)
    if report_path:
        lines.append("  report: %s" % report_path)
    return lines
