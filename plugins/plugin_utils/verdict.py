# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The verdict rules: which records count toward which host, and required checks.

Host verdict (``fleet.summarize``) = the worst status, error > fail > warn > pass > skip,
of the records that COUNT toward the host (docs/results.md, "Verdicts"):

- a record without a ``peer`` counts toward its ``host``;
- a pairwise record (perftest between two hosts: ``peer`` set; the client record
  ``rdma.<test>`` and the server record ``rdma.<test>.server``) measures a LINK. When the
  attribution analysis judged its matrix (the same check, ``.server`` stripped, and rail
  ``target``: at least two measured pairs), the record counts toward no host: the
  attribution records ``<check>.node`` (one per host of the matrix) and ``<check>.link``
  (both ends of a suspect link) carry the host verdicts instead. The measured record
  stays in the report, untouched;
- attribution judges every matrix that has a pair, a single pair included (low only when its
  record failed or measured nothing: both ends then get ``warn`` "needs confirmation"), so a
  node's verdict for a pairwise check comes from attribution alone. A pairwise record of no
  judged matrix (no measurement attribution can use: a ``skip``, a check it does not know)
  counts toward its ``host`` only, never toward its ``peer``: one end's word never judges
  the other end.
- a ``rdma.port_counters`` record (one port's counters over a window) whose link error counters grew and whose
  growth a LINK explains (its slow pair on that rail, the other end of its cable, the switch port the topology
  knows: plugin_utils/port_counter_links.py) counts toward no host, as a judged pair record does: the
  ``rdma.port_counters.link`` records (``warn`` on the ends of the link, ``facts.ports`` naming the port records
  they explain) carry the verdicts. A port whose growth is its host's own (several of its ports, a suspect node,
  nothing naming a link) keeps counting toward its host;
- a record of the group-testing screen (a multi-node collective over a group, its test named in
  ``params.env.AIFABRIC_SCREEN``: group_screen.screen_of) measures a GROUP, not its launcher: when the screen
  analysis judged its check, it counts toward no host (the ``<check>.screen`` records carry the host
  verdicts: a confirmed bad node fails, known-good hosts pass, unresolved ones warn); otherwise it counts
  toward its launcher, like any record.

Required checks (:func:`analyze_required`, an analysis of ``analysis_pipeline.ANALYSES``): config
``required_checks`` maps a host name, or ``"*"`` for every host, to check name patterns
(``fnmatch``: ``gpu.*``, ``rdma.ib_write_bw``). On a host, every check that a required
pattern matches must have run: a matched check with only ``skip`` records, or a pattern
that matched no measured record at all, adds an ``env.required`` ``fail`` record to that
host naming the pattern, the skipped checks and their skip reasons. A pairwise record counts as run on both
of its ends, a screen record as run on every host of its group. Only hosts that have a record are judged (the report accounts for every targeted
host: one that returned nothing already has an ``env.coverage`` record). A malformed
``required_checks`` gives every host an ``env.required`` ``error`` (never a silent pass). The playbooks fill ``required_checks`` from the host variable
``aifabric_required_checks``.

Controller-only (plugin_utils); imports nothing from Ansible.
"""

from __future__ import annotations

import fnmatch

from ansible_collections.aifabric.acceptance.plugins.module_utils import results
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import analysis_records, group_screen, port_counter_links, screen_analysis

NAME = "required"
ATTRIBUTION = "attribution"
REQUIRED_CHECK = "env.required"
SERVER_SUFFIX = ".server"
ALL_HOSTS = "*"
MAX_REASONS = 3


def is_pairwise(record):
    """A measured record of a test between two hosts (it measures the link between them)."""
    return (isinstance(record, dict) and isinstance(record.get("peer"), str) and bool(record["peer"])
            and record.get("peer") != record.get("host") and not analysis_records.is_analysis_record(record))


def matrix_key(record):
    """(check, target) of the matrix a pairwise record belongs to (the server side joins its client's)."""
    check = record.get("check") or ""
    if check.endswith(SERVER_SUFFIX):
        check = check[:-len(SERVER_SUFFIX)]
    return check, record.get("target")


def judged_matrices(records):
    """The (check, target) matrices the attribution analysis gave host verdicts for."""
    out = set()
    for rec in analysis_records.added(records):
        tool = rec.get("tool") if isinstance(rec, dict) else None
        if isinstance(tool, dict) and tool.get("version") == ATTRIBUTION and analysis_records.is_analysis_record(rec):
            measured = (rec.get("facts") or {}).get("measured_check")
            if measured:
                out.add((measured, rec.get("target")))
    return out


def compared_matrices(records):
    """The judged matrices in which attribution compared pairs with each other (two measured pairs or more): only
    there does it judge a pair's figure (coverage); a single pair it judges by the pair's own status alone."""
    judged = judged_matrices(records)
    pairs, compared = dict((key, set()) for key in judged), set()
    for rec in records:
        if len(compared) == len(judged):
            break                   # every judged matrix has two pairs: the rest of the records change nothing
        if is_pairwise(rec) and rec.get("status") != "skip":
            key = matrix_key(rec)
            if key in pairs and key not in compared:
                pairs[key].add(frozenset((rec["host"], rec["peer"])))
                if len(pairs[key]) >= 2:
                    compared.add(key)
    return compared


def host_records(records):
    """{host: [records that count toward its verdict]}, every host that has a record (in record order).

    A host whose records all count elsewhere (its pairwise records of judged matrices) is
    still listed, with an empty list.
    """
    judged = judged_matrices(records)
    screened = screen_analysis.judged_checks(records)
    explained = port_counter_links.explained_ports(records)
    out = {}
    for rec in records:
        host = rec.get("host") if isinstance(rec.get("host"), str) and rec.get("host") else None
        mine = out.setdefault(host, [])
        if rec.get("check") in screened and group_screen.is_screen_record(rec):
            continue                     # a group's measurement: the screen analysis's records judge its hosts
        if explained and rec.get("check") == port_counter_links.CHECK and (host, rec.get("target")) in explained \
                and not analysis_records.is_analysis_record(rec):
            continue                     # a port whose errors a link explains: the link's records judge its ends
        if not is_pairwise(rec):
            mine.append(rec)
        elif matrix_key(rec) not in judged:
            mine.append(rec)             # its sender's own word about itself; never its peer's verdict
    return out


def host_status(counted):
    """The verdict of a host from the records that count toward it: skip only when nothing ran."""
    return results.worst((r.get("status") for r in counted), default="skip")


# ---------------------------------------------------------------- required checks


def required_patterns(config):
    """{host or "*": [patterns]} from config ``required_checks``. Raises ValueError when malformed."""
    given = (config or {}).get("required_checks")
    if given is None:
        return {}
    if not isinstance(given, dict):
        raise ValueError("required_checks must map a host name (or '*') to a list of check patterns, got %s"
                         % type(given).__name__)
    out = {}
    for host, patterns in given.items():
        if patterns is None:
            continue
        if isinstance(patterns, str):
            patterns = [patterns]
        if not isinstance(host, str) or not isinstance(patterns, (list, tuple)) \
                or not all(isinstance(p, str) and p for p in patterns):
            raise ValueError("required_checks[%r] must be a list of check name patterns (e.g. ['gpu.*']), got %r"
                             % (host, patterns))
        out[host] = list(patterns)
    return out


def _ran_by_host(records):
    """{host: {check: [(status, reason)]}} of the measured records (checks in the order they first ran there), a
    pairwise record on both ends."""
    out = {}
    for rec in analysis_records.measured(records):
        if not isinstance(rec, dict):
            continue
        check, entry = str(rec.get("check")), (rec.get("status"), rec.get("reason"))
        ends = [rec.get("host")] + ([rec["peer"]] if rec.get("peer") and is_pairwise(rec) else [])
        test = group_screen.screen_of(rec)
        if test is not None:
            ends = ends + [h for h in test["hosts"] if h not in ends]
        for host in ends:
            if isinstance(host, str) and host:
                out.setdefault(host, {}).setdefault(check, []).append(entry)
    return out


def _matched(ran_on_host, pattern, matching=None):
    """{check: [(status, reason)]} of the checks that ran on a host (``ran_on_host``: its entry of
    :func:`_ran_by_host`) and match a required pattern. ``matching``: a {(check, pattern): bool} the calls share (a
    fleet's hosts run the same few checks)."""
    matching = {} if matching is None else matching
    matched = {}
    for check, entries in ran_on_host.items():
        hit = matching.get((check, pattern))
        if hit is None:
            hit = matching[(check, pattern)] = fnmatch.fnmatchcase(check, pattern)
        if hit:
            matched[check] = entries
    return matched


def _skipped(matched):
    """The matched checks that have only ``skip`` records."""
    return sorted(check for check, entries in matched.items() if all(status == "skip" for status, _r in entries))


def _why_not_run(host, pattern, matched, skipped):
    """The reason of an ``env.required`` fail: the skipped checks and their skip reasons, or that none ran."""
    if not matched:
        return "required check %s did not run on %s (no record of it)" % (pattern, host)
    reasons = []
    for check in skipped:
        for _status, reason in matched[check]:
            text = "%s: %s" % (check, reason or "skipped")
            if text not in reasons:
                reasons.append(text)
    return "required %s: %d of %d matching check%s only skipped on %s (%s)" % (
        pattern, len(skipped), len(matched), "" if len(matched) == 1 else "s", host,
        "; ".join(reasons[:MAX_REASONS]) + ("; ..." if len(reasons) > MAX_REASONS else ""))


def _host_patterns(wanted, host):
    patterns = list(wanted.get(ALL_HOSTS) or [])
    return patterns + [p for p in wanted.get(host) or [] if p not in patterns]


def analyze_required(records, config):
    """Returns (new_records, findings): an ``env.required`` fail per (host, required pattern) that did not run."""
    hosts = sorted(set(r.get("host") for r in records
                       if isinstance(r, dict) and isinstance(r.get("host"), str) and r.get("host")))
    try:
        wanted = required_patterns(config)
    except ValueError as exc:
        # required checks that cannot be read cannot be judged: every host says so (never a silent pass)
        return [analysis_records.record(NAME, REQUIRED_CHECK, "error", host,
                                        reason="%s: required checks were not judged" % exc) for host in hosts], []
    if not wanted:
        return [], []
    ran = _ran_by_host(records)
    new, missing, matching = [], {}, {}
    for host in hosts:
        for pattern in _host_patterns(wanted, host):
            matched = _matched(ran.get(host, {}), pattern, matching)
            skipped = _skipped(matched)
            if matched and not skipped:
                continue
            new.append(analysis_records.record(
                NAME, REQUIRED_CHECK, "fail", host, reason=_why_not_run(host, pattern, matched, skipped),
                target=pattern, metrics={"skipped_checks_count": len(skipped), "matched_checks_count": len(matched)},
                facts={"required": pattern, "skipped_checks": skipped}))
            missing.setdefault(pattern, []).append(host)
    findings = [analysis_records.finding("required_not_run", pattern, hosts_, evidence={"pattern": pattern})
                for pattern, hosts_ in sorted(missing.items())]
    return new, findings


analyze_required.NAME = NAME
