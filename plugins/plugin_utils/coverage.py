# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Coverage of judgement: what judged each headline figure, and which ones nothing judged (issue 19).

A headline figure (:data:`HEADLINE`, fleet_relative.DEFAULT_RULES: a collective's busbw, a GPU's GEMM TFLOP/s, an
RDMA link's bandwidth or latency) that no rule judged would otherwise read as ``pass``. :func:`coverage` lists, for every measured record
with a headline metric that ran (pass, warn or fail), the judges behind its status:

- ``profile`` / ``user`` / ``hardware`` / ``threshold``: a rule in the record's own ``expect`` for the headline
  metric, by its ``source`` (a hardware profile, a user threshold, the port rate the probe read, a built-in floor);
- ``hardware``, ``peers``, ``fleet``, ``baseline``, ``attribution``: an analysis record that judged it (``pass``,
  ``warn`` or ``fail``); where the hardware analysis cannot judge a figure, its reason (hardware.not_judged) says
  why it is unjudged.

Those with no judge are *unjudged*: the summary counts and lists them and the report shows them, never a silent
``pass``. Pure; controller-only (plugin_utils), no Ansible imports.
"""

from __future__ import annotations

import fnmatch
import functools

from ansible_collections.aifabric.acceptance.plugins.module_utils import expectations
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import analysis_records, fleet_relative, hardware, verdict

# the headline figures: the one table of them, fleet_relative.DEFAULT_RULES (also the history's trends, the progress
# lines and the Prometheus export)
HEADLINE = tuple((rule["check"], rule["metric"]) for rule in fleet_relative.DEFAULT_RULES)
ANALYSIS_JUDGES = {"hardware": "hardware", "peers": "peers", "fleet_relative": "fleet", "baseline": "baseline",
                   "attribution": "attribution"}
RAN = ("pass", "warn", "fail")
MAX_LISTED = 2000


def headline_metric(check):
    """The headline metric of a check, or None (a check with no headline figure: probes, analyses)."""
    return _headline_metric(check or "")


@functools.lru_cache(maxsize=4096)      # a fleet has few distinct checks; every record of it asks, several times
def _headline_metric(check):
    for pattern, metric in HEADLINE:
        if fnmatch.fnmatchcase(check, pattern):
            return metric
    return None


def rule_judge(source):
    """Which kind of judge a rule's ``source`` names."""
    text = (source or "").lower()
    if text.startswith("profile"):
        return "profile"
    if "port rate" in text or "line rate" in text or "derived from the probed" in text:
        return "hardware"
    if text.startswith("user"):
        return "user"
    return "threshold"


def _measured_check(rec):
    facts = rec.get("facts") or {}
    if facts.get("measured_check"):
        return facts["measured_check"]
    check = rec.get("check") or ""
    return check.rsplit(".", 1)[0] if "." in check else check


def analysis_judges(records, compared):
    """{(host, measured check, target or None): {judge: reason of a skip or None}} from the analysis records;
    ``compared``: verdict.compared_matrices(records), which the caller needs too (one walk of every record)."""
    out = {}
    for rec in analysis_records.added(records):
        judge = ANALYSIS_JUDGES.get((rec.get("tool") or {}).get("version"))
        if judge is None:
            continue
        if judge == "attribution":
            # a lone pair's verdict is its own status: attribution compared no figure there
            if (_measured_check(rec), rec.get("target")) not in compared:
                continue
        # an RDMA pair's judgement may sit on the end it blames: facts.measured_host names the measured record's host
        key = ((rec.get("facts") or {}).get("measured_host") or rec.get("host"), _measured_check(rec), rec.get("target"))
        skipped = rec.get("reason") if rec.get("status") == "skip" else None
        entry = out.setdefault(key, {})
        if judge not in entry or entry[judge] is not None:
            entry[judge] = skipped
    return out


def judges_of(rec, by_analysis, judged_matrices, hardware_why=None):
    """([judges], why not judged) of one measured record."""
    metric = headline_metric(rec.get("check"))
    rule = (rec.get("expect") or {}).get(metric)
    found = [rule_judge(rule.get("source"))] if expectations.is_judging(rule) else []
    why = (hardware_why or {}).get((rec.get("host"), rec.get("check"), rec.get("target")))
    if why is None and isinstance(rule, dict) and not found and rule.get("source"):
        why = rule["source"]        # the record's own word on why nothing judged it (no floor at this size)
    for key in ((rec.get("host"), rec.get("check"), rec.get("target")), (rec.get("host"), rec.get("check"), None)):
        for judge, skipped in sorted((by_analysis.get(key) or {}).items()):
            if skipped is None:
                found.append(judge)
            else:
                why = skipped
    if verdict.is_pairwise(rec) and verdict.matrix_key(rec) in judged_matrices:
        found.append("attribution")
    return sorted(set(found)), why


def _is_headline(rec):
    metric = headline_metric(rec.get("check"))
    metrics = rec.get("metrics") or {}
    if (metric is None or metric not in metrics or analysis_records.is_analysis_record(rec)
            or rec.get("status") not in RAN):
        return False
    ranks = metrics.get("ranks")
    # one rank moves no data between GPUs: its busbw is 0 by definition, not a figure to judge
    return not (metric == "busbw_max_gbyte_s" and isinstance(ranks, int) and ranks < 2)


def record_judges(records):
    """{id(record): "profile, hardware" | "unjudged" | "hardware (analysis)" | ...}: what judged each record, the
    word the report shows beside it (report_html). A headline figure: its judges (:func:`judges_of`), or
    ``unjudged``; an analysis record: the analysis; any other record: the kinds of the rules in its ``expect``
    that bound something (none: no entry)."""
    matrices = verdict.compared_matrices(records)
    by_analysis = analysis_judges(records, matrices)
    out = {}
    for rec in analysis_records.added(records):
        name = (rec.get("tool") or {}).get("version")
        out[id(rec)] = "%s (analysis)" % ANALYSIS_JUDGES.get(name, name or "analysis")
    for rec in analysis_records.measured(records):
        if _is_headline(rec):
            judges, _why = judges_of(rec, by_analysis, matrices)
            out[id(rec)] = ", ".join(judges) if judges else "unjudged"
        elif rec.get("expect"):     # (a record with no rule has no judge)
            kinds = sorted(set(rule_judge(rule.get("source")) for rule in rec["expect"].values()
                               if expectations.is_judging(rule)))
            if kinds:
                out[id(rec)] = ", ".join(kinds)
    return out


def coverage(records):
    """{headline_total, judged, unjudged_total, by_judge: {judge: n}, unjudged: [{host, check, target, why}],
    judged_by: [{host, check, target, judges}]} (the lists capped at MAX_LISTED entries each)."""
    matrices = verdict.compared_matrices(records)
    by_analysis = analysis_judges(records, matrices)
    hardware_why = hardware.not_judged(records)
    total, by_judge, unjudged, judged_by = 0, {}, [], []
    for rec in analysis_records.measured(records):
        if not _is_headline(rec):
            continue
        total += 1
        judges, why = judges_of(rec, by_analysis, matrices, hardware_why)
        for judge in judges:
            by_judge[judge] = by_judge.get(judge, 0) + 1
        if judges and len(judged_by) < MAX_LISTED:
            judged_by.append({"host": rec.get("host"), "check": rec.get("check"), "target": rec.get("target"),
                              "judges": judges})
        if not judges:
            unjudged.append({"host": rec.get("host"), "check": rec.get("check"), "target": rec.get("target"),
                             "why": why or "no profile, user, hardware or fleet rule covers it"})
    return {"headline_total": total, "judged": total - len(unjudged), "unjudged_total": len(unjudged),
            "by_judge": dict(sorted(by_judge.items())), "unjudged": unjudged[:MAX_LISTED], "judged_by": judged_by}


# ---------------------------------------------------------------- which stages ran

# The stages of a run (playbooks/acceptance_ssh.yml), for the report's header: the probe records that say whether a
# host has the stage's hardware, and the checks the stage measures. A stage ran on a host with one of its measurements
# that is not a skip. ``always``: listed even when no host has a record of it (else only when one has).
STAGES = (
    {"title": "Probe", "probe": (), "measure": ("env.*",), "always": True},
    # gpu.gemm: the GEMM's one record when it skipped or failed as a whole (no PyTorch, no GPU)
    {"title": "GPU", "probe": ("gpu.inventory",), "measure": ("gpu.gemm", "gpu.gemm_*", "nccl.*"), "always": True},
    {"title": "HCCL", "probe": ("gpu.npu_inventory",), "measure": ("hccl.*",), "always": False},
    {"title": "RDMA", "probe": ("rdma.inventory",), "measure": ("rdma.ib_*", "rdma.sweep*"), "always": True},
    {"title": "Kubernetes", "probe": (), "measure": ("k8s.*",), "always": False},
)
# the run's bookkeeping (normalize, verdict): about a host or a task, not a measurement of any stage
BOOKKEEPING = ("env.reachable", "env.task", "env.coverage", "env.required")
STAGE_REASONS_SHOWN = 3
STAGE_CHECKS_SHOWN = 6
STAGE_REASON_CHARS = 160


def _matches(check, patterns):
    return any(fnmatch.fnmatchcase(check, p) for p in patterns)


def _by_reason(recs):
    return dict((str(r.get("reason") or "no reason given"), [r.get("check")]) for r in recs)


def _stage_host(measured, probed):
    """What one host's records of a stage say of it (``measured``: its records whose check the stage measures,
    ``probed``: its probe records of the stage's hardware): ("ran", {reason: [checks skipped]}) | ("skipped",
    reasons) | ("notfound", reasons) (no measurement, and a probe record failed: the hardware the inventory expects
    is not there, or its tool could not read it) | ("found", ()) (the probe found its hardware, the stage left no
    record) | ("none", ()) (no record)."""
    skipped = {}
    for rec in measured:
        if rec.get("status") == "skip":
            skipped.setdefault(str(rec.get("reason") or "no reason given"), []).append(rec.get("check"))
    if any(r.get("status") != "skip" for r in measured):
        return "ran", skipped
    if measured:
        return "skipped", skipped
    failed = [r for r in probed if r.get("status") in ("fail", "error")]
    if failed:
        return "notfound", _by_reason(failed)
    if probed and all(r.get("status") == "skip" for r in probed):
        return "skipped", _by_reason(probed)
    return ("found", {}) if probed else ("none", {})


def _stage_roles(check):
    """[(stage index, "measure" | "probe")] of a check: the stages whose measurements or probe it is."""
    roles = []
    for index, stage in enumerate(STAGES):
        if _matches(check or "", stage["measure"]):
            roles.append((index, 0))
        if check in stage["probe"]:
            roles.append((index, 1))
    return roles


def _reason_groups(per_host):
    """[(reason, [hosts])] most hosts first, from {host: {reason: checks}}."""
    groups = {}
    for host, reasons in per_host.items():
        for reason in reasons:
            groups.setdefault(reason, []).append(host)
    return sorted(groups.items(), key=lambda item: (-len(item[1]), item[0]))


def hosts_named(hosts, total):
    """" (a, b)" when some of the fleet's hosts (at most 3 named), "" when all of them."""
    if len(hosts) == total:
        return ""
    return " (%s%s)" % (", ".join(hosts[:3]), ", ..." if len(hosts) > 3 else "")


def _skips_text(per_host, total, plural):
    """'skipped on 2 hosts: no GPU; on 1 host (c): ...' from {host: {reason: checks}}."""
    parts = []
    groups = _reason_groups(per_host)
    for reason, hosts in groups[:STAGE_REASONS_SHOWN]:
        if len(reason) > STAGE_REASON_CHARS:
            reason = reason[:STAGE_REASON_CHARS - 3] + "..."
        parts.append("%s%s: %s" % (plural(len(hosts), "host"), hosts_named(hosts, total), reason))
    if len(groups) > STAGE_REASONS_SHOWN:
        parts.append("%s more" % plural(len(groups) - STAGE_REASONS_SHOWN, "reason"))
    return "; ".join(parts)


def _stage_text(by_state, total, plural):
    """(state, sentence) of one stage from {state: {host: {reason: [checks]}}}."""
    ran, skipped, found = by_state.get("ran", {}), by_state.get("skipped", {}), by_state.get("found", {})
    parts = []
    if ran:
        parts.append("ran on %s" % (plural(len(ran), "host") if len(ran) == total else "%d of %s" % (
            len(ran), plural(total, "host"))))
        checks = sorted(set(c for reasons in ran.values() for checks in reasons.values() for c in checks))
        if checks:      # their reasons are in the hosts' records (the drill-down)
            more = ", ..." if len(checks) > STAGE_CHECKS_SHOWN else ""
            parts.append("%s skipped (%s%s)" % (plural(len(checks), "check"), ", ".join(checks[:STAGE_CHECKS_SHOWN]), more))
    if skipped:
        parts.append("skipped on %s" % _skips_text(skipped, total, plural))
    if by_state.get("notfound"):
        parts.append("not found by the probe on %s" % _skips_text(by_state["notfound"], total, plural))
    if found:
        parts.append("not run on %s%s although the probe found its hardware" % (
            plural(len(found), "host"), hosts_named(sorted(found), total)))
    none = by_state.get("none", {})
    if none and (ran or skipped or found or by_state.get("notfound")):
        parts.append("no record of it on %s%s" % (plural(len(none), "host"), hosts_named(sorted(none), total)))
    if not ran:
        return "not run", "; ".join(parts) or "no record of this stage on any host"
    return ("ran" if len(ran) == total else "partly"), "; ".join(parts)


def stages(records, hosts, plural):
    """Which stages of the run ran, and where and why the others did not, from the records alone:
    [{title, state: "ran" | "partly" | "not run", ran_hosts, text}] in STAGES order, for ``hosts`` (the hosts with
    a verdict); ``text``: "ran on 2 hosts; ...", or for a stage that did not run, why ("skipped on 2 hosts: no
    NVIDIA GPU/driver: nvidia-smi not found", "not found by the probe on 1 host (a): no NVIDIA GPU/driver:
    nvidia-smi not found, but expect.gpu_count is 8", "no record of this stage on any host"). ``plural(count, noun)``
    writes the counts. An analysis' records and the run's bookkeeping (BOOKKEEPING) are no stage's."""
    by_host = dict((h, [([], []) for _stage in STAGES]) for h in hosts)    # per stage: (measured, probed)
    roles = {}      # check -> its stages (a fleet has few distinct checks: each is matched once)
    for rec in analysis_records.measured(records):
        per_stage = by_host.get(rec.get("host"))
        if per_stage is None:
            continue
        check = rec.get("check")
        if check in BOOKKEEPING:
            continue
        key = check if isinstance(check, str) else None
        if key not in roles:
            roles[key] = _stage_roles(key)
        for index, role in roles[key]:
            per_stage[index][role].append(rec)
    out = []
    for index, stage in enumerate(STAGES):
        by_state = {}
        for host in hosts:
            state, reasons = _stage_host(*by_host[host][index])
            by_state.setdefault(state, {})[host] = reasons
        if not stage["always"] and set(by_state) <= {"none"}:
            continue
        state, text = _stage_text(by_state, len(hosts), plural)
        out.append({"title": stage["title"], "state": state, "ran_hosts": len(by_state.get("ran", {})), "text": text})
    return out
