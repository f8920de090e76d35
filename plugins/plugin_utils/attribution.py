# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fault attribution for pairwise tests: is it the node or the link?

From the pairwise records of one check and one rail (``target``, the local
device: rails are tested ``mlx5_i`` <-> ``mlx5_i``) the analysis builds a graph:
hosts are vertices, measured pairs are edges. Each edge is scored against the
fleet median of that check and rail:

- bandwidth checks (metric ``bw_avg_gbit_s``): an edge is *low* below
  ``(100 - attribution_low_pct) %`` of the median (default 10: below 90 %);
- latency checks (metric ``lat_typical_us``, or ``lat_avg_us`` in duration mode, which prints no typical
  latency): *low* above ``(100 + pct) %`` of it;
- a pair whose record is ``error`` (the client could not connect, the run broke)
  or ``fail`` (below its own expectation, such as the floor of the port rate) is a
  low edge too, whatever the fleet median says (a fleet that is uniformly below
  its floor is not healthy); ``skip`` records (no device) are not edges.

When one pair was measured several times (``directed`` runs, repeated rounds, the
confirmation pass) the worse value counts, with the status of the record that
measured it (an error followed by a good re-test is a good edge).

Verdicts:

- **node**: a host with at least ``attribution_min_edges`` (default 2) edges of
  which more than ``attribution_node_fraction`` (default 0.5) are low: most of
  its pairs are bad, whoever the peer is;
- **link**: a low edge neither of whose ends is a suspect node, and whose both
  ends are healthy elsewhere (each has at least one good edge to another host);
- a low edge that neither rule explains (an end has no other measured pair, as
  after a single random matching) gives a ``link`` finding with
  ``evidence.needs_confirmation: true`` naming both ends as suspects. The
  confirmation pass (``playbooks/rdma.yml`` ``rdma_confirm: true``) pairs every
  suspect with known-good hosts and re-runs the analysis on all records.

Findings: ``{"kind": "node"|"link", "hosts": [...], "target": <rail>, "check": ...,
"evidence": {...}}``.

Records added (never rewriting measured ones), tool ``{name: fleet-analysis,
version: attribution}``, for every matrix it judged (a check and rail with at
least two measured pairs); they are the HOST verdicts of the pairwise check
(docs/results.md, "Verdicts"):

- ``<check>.node``, one per host of the matrix: ``fail`` for a suspect node (``error``
  when none of its pairs measured anything: the check could not run there),
  ``warn`` "needs confirmation" for an end of a low pair that cannot be
  attributed yet, ``pass`` otherwise (its pairs are good, or their fault is a
  suspect node or a suspect link elsewhere);
- ``<check>.link``, ``warn``, one on EACH end of a suspect link (``peer`` = the
  other end), naming the link: the node is fine, the cable/port/switch path is not.

Every one of them carries ``facts.measured_check`` (the pairwise check) and the
rail as ``target``: ``fleet.summarize`` uses them instead of the measured pair
records, which measure a link, not a host.

Controller-only (plugin_utils), no Ansible types.
"""

from __future__ import annotations

import statistics

from ansible_collections.aifabric.acceptance.plugins.module_utils import thresholds
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import analysis, rounds

NAME = "attribution"
# the first that a record measured (not null) is its metric: lat_avg_us for latency in duration mode (-D), which
# prints no typical latency
DEFAULT_METRICS = (("bw_avg_gbit_s", "higher"), ("lat_typical_us", "lower"), ("lat_avg_us", "lower"))
DEFAULTS = thresholds.ATTRIBUTION     # the numbers and their sources live in module_utils/thresholds.py
MAX_EVIDENCE_PEERS = 20


def _conf(config, key):
    value = (config or {}).get(key)
    return DEFAULTS[key] if value is None else value


def _metric_of(record, overrides):
    """(metric name, direction, value) for a pairwise record, or None when it is not one."""
    metrics = record.get("metrics") or {}
    wanted = overrides.get(record.get("check")) if overrides else None
    candidates = [(wanted, "higher" if not str(wanted).endswith("_us") else "lower")] if wanted else DEFAULT_METRICS
    for name, direction in candidates:
        if metrics.get(name) is not None:
            return name, direction, metrics[name]
    if record.get("status") == "error":
        # no measurement at all: still an edge (a bad one); direction from the check name
        check = record.get("check") or ""
        return (DEFAULT_METRICS[1] if check.endswith("_lat") else DEFAULT_METRICS[0]) + (None,)
    return None


def _usable(record):
    if not isinstance(record, dict) or analysis.is_analysis_record(record):
        return False
    check = record.get("check") or ""
    if not check.startswith("rdma.") or check.endswith(".server"):
        return False
    if not record.get("host") or not record.get("peer") or record.get("host") == record.get("peer"):
        return False
    return record.get("status") != "skip"


def collect_edges(records, config=None):
    """{(check, target): {"metric":, "direction":, "edges": {frozenset(a, b): [entries]}}}."""
    overrides = (config or {}).get("attribution_metrics") or {}
    groups = {}
    for record in records:
        if not _usable(record):
            continue
        found = _metric_of(record, overrides)
        if found is None:
            continue
        name, direction, value = found
        if value is None and record.get("status") != "error":
            continue
        key = (record["check"], record.get("target"))
        group = groups.setdefault(key, {"metric": name, "direction": direction, "edges": {}})
        if group["metric"] != name and value is not None:
            continue
        group["edges"].setdefault(frozenset((record["host"], record["peer"])), []).append(
            {"value": value, "status": record.get("status"), "host": record["host"], "peer": record["peer"],
             "reason": record.get("reason")})
    return groups


def _worse(values, direction):
    """The worse measured value of repeats; None only when no repeat measured anything (all errors)."""
    measured = [v for v in values if v is not None]
    if not measured:
        return None
    return min(measured) if direction == "higher" else max(measured)


FAILED = ("fail", "error")


def _failed(entries, value):
    """True when the measurement that gave the edge its (worse) value failed its own expectation."""
    if value is None:
        return True
    return any(e["value"] == value and e["status"] in FAILED for e in entries)


def score(group, low_pct, mad_k=4.0):
    """Edge value (worse of repeats), the fleet median, the bound and the low flag of every edge.

    An edge is low when it is beyond ``low_pct`` % of the median AND beyond ``mad_k``
    robust standard deviations (1.4826 x median absolute deviation) of the fleet's
    edges: on a noisy fabric the bound widens by itself instead of naming every
    unlucky pair. An edge whose worse measurement is a ``fail`` or ``error`` record is
    low as well (its own expectation already judged it).
    """
    direction = group["direction"]
    edges, failed = {}, {}
    for pair, entries in group["edges"].items():
        edges[pair] = _worse([e["value"] for e in entries], direction)
        failed[pair] = _failed(entries, edges[pair])
    measured = [v for v in edges.values() if v is not None]
    median = statistics.median(measured) if measured else None
    bound = None
    if median is not None:
        spread = 1.4826 * statistics.median([abs(v - median) for v in measured]) * mad_k
        if direction == "higher":
            bound = min(median * (100.0 - low_pct) / 100.0, median - spread)
        else:
            bound = max(median * (100.0 + low_pct) / 100.0, median + spread)
    low = {}
    for pair, value in edges.items():
        if value is None or failed[pair]:
            low[pair] = True
        elif bound is None:
            low[pair] = False
        elif direction == "higher":
            low[pair] = value < bound
        else:
            low[pair] = value > bound
    return edges, median, bound, low


def attribute(edges, low, min_edges, node_fraction):
    """Pure graph step: (suspect nodes {host: (bad, total)}, links [(pair, confirmed)]).

    A link is confirmed when both ends are healthy elsewhere and the pair was
    measured (an edge that only ever errored is never a confirmed link verdict:
    re-testing the pair itself tells a transient failure from a broken path).
    """
    incident = {}
    for pair in edges:
        for host in pair:
            incident.setdefault(host, []).append(pair)
    nodes = {}
    for host, pairs in incident.items():
        bad = sum(1 for p in pairs if low[p])
        if len(pairs) >= min_edges and bad > node_fraction * len(pairs):
            nodes[host] = (bad, len(pairs))
    links = []
    for pair in sorted((p for p in edges if low[p] and not any(h in nodes for h in p)), key=sorted):
        healthy_elsewhere = all(
            any(not low[p] for p in incident[h] if p != pair and not any(x in nodes for x in p - {h}))
            for h in pair)
        links.append((pair, healthy_elsewhere and edges[pair] is not None))
    return nodes, links


def _fmt(value):
    return "error" if value is None else ("%.2f" % value).rstrip("0").rstrip(".")


def _node_reason(host, bad, total, failed_count, rail, bound):
    return ("%d of %d pairs of %s%s are low or failed (%d below their own expectation or not measured; low = %s): "
            "the node is the common factor" % (bad, total, host, rail, failed_count, bound))


def analyze(records, config):
    """Node/link attribution over every pairwise rdma check and rail. Returns (new_records, findings).

    For every matrix it judges, every host of the matrix gets one ``<check>.node`` record (its
    verdict for that check and rail) and both ends of every suspect link a ``<check>.link`` warn.
    """
    low_pct = float(_conf(config, "attribution_low_pct"))
    min_edges = int(_conf(config, "attribution_min_edges"))
    node_fraction = float(_conf(config, "attribution_node_fraction"))
    mad_k = float(_conf(config, "attribution_mad_k"))
    new_records, findings = [], []
    for (check, target), group in sorted(collect_edges(records, config).items(),
                                         key=lambda kv: (kv[0][0], kv[0][1] or "")):
        if len(group["edges"]) < 2:
            continue  # one pair cannot be compared with a fleet: its records judge both ends (fleet.summarize)
        edges, median, limit, low = score(group, low_pct, mad_k)
        nodes, links = attribute(edges, low, min_edges, node_fraction)
        metric, direction = group["metric"], group["direction"]
        unit = "Gbit/s" if metric.endswith("_gbit_s") else ("us" if metric.endswith("_us") else "")
        word = "below" if direction == "higher" else "above"
        bound = "%s %s %s (%s %% of the fleet median %s %s of %s%s)" % (
            word, _fmt(limit), unit, _fmt(100.0 * limit / median) if median else "?", _fmt(median), unit,
            check, " on %s" % target if target else "")
        rail = " on %s" % target if target else ""
        median_key = "fleet_median_" + metric
        incident = {}
        for pair in edges:
            for host in pair:
                incident.setdefault(host, []).append(pair)
        pending = {}        # host -> [other ends of its low pairs that need confirmation]
        for host in sorted(nodes):
            bad, total = nodes[host]
            peers = sorted(next(iter(p - {host})) for p in edges if host in p)
            low_peers = [(peer, edges[frozenset((host, peer))]) for peer in peers if low[frozenset((host, peer))]]
            failed_count = sum(1 for peer, _v in low_peers
                               if _failed(group["edges"][frozenset((host, peer))], edges[frozenset((host, peer))]))
            evidence = {
                "metric": metric, "fleet_median": median, "limit": limit, "low_pct": low_pct,
                "low_pairs": bad, "pairs": total, "failed_pairs": failed_count,
                "low_peers": dict((p, v) for p, v in low_peers[:MAX_EVIDENCE_PEERS]),
                "good_peers": [p for p in peers if not low[frozenset((host, p))]][:MAX_EVIDENCE_PEERS],
            }
            findings.append(analysis.finding("node", check, [host], target=target, evidence=evidence))
        link_records = []
        for pair, confirmed in links:
            a, b = sorted(pair)
            value = edges[pair]
            entries = group["edges"][pair]
            failed = _failed(entries, value)
            what = "%s %s %s is %s" % (metric, _fmt(value), unit, bound)
            if failed and value is not None:
                what = "%s %s %s failed its expectation (%s)" % (
                    metric, _fmt(value), unit, next((e["reason"] for e in entries
                                                     if e["value"] == value and e["reason"]), "no reason given"))
            if confirmed:
                reason = ("suspect link %s <-> %s%s: %s while both ends are healthy with other peers: "
                          "the link (cable, port, switch path) is the suspect, not the nodes" % (a, b, rail, what))
            elif value is None:
                reason = ("%s <-> %s%s: the pair failed (no measurement) and no other pair explains it; "
                          "re-test the pair and both ends with known-good peers (confirmation pass)"
                          % (a, b, rail))
            else:
                reason = ("%s <-> %s%s: %s; an end has no other good pair to compare with, so node "
                          "or link cannot be told apart yet (run the confirmation pass)" % (a, b, rail, what))
            evidence = {"metric": metric, "value": value, "fleet_median": median, "limit": limit,
                        "low_pct": low_pct, "failed": failed,
                        "needs_confirmation": not confirmed,
                        "errors": [e["reason"] for e in entries if e["status"] == "error"][:3]}
            findings.append(analysis.finding("link", check, [a, b], target=target, evidence=evidence))
            if not confirmed:
                pending.setdefault(a, []).append((b, reason))
                pending.setdefault(b, []).append((a, reason))
                continue
            metrics = {median_key: median}
            if value is not None:
                metrics[metric] = value
            for end, other in ((a, b), (b, a)):
                link_records.append(analysis.record(
                    NAME, check + ".link", "warn", end, peer=other, reason=reason, target=target,
                    metrics=metrics, facts={"attribution": "link", "measured_check": check, "link": [a, b]}))
        for host in sorted(incident):
            pairs = incident[host]
            low_count = sum(1 for p in pairs if low[p])
            metrics = {"low_pairs_count": low_count, "pairs_count": len(pairs), median_key: median}
            facts = {"measured_check": check}
            if host in nodes:
                bad, total = nodes[host]
                low_peers = sorted(next(iter(p - {host})) for p in pairs if low[p])
                failed_count = sum(1 for p in pairs if low[p] and _failed(group["edges"][p], edges[p]))
                status, reason = "fail", _node_reason(host, bad, total, failed_count, rail, bound)
                facts.update({"attribution": "node", "low_peers": low_peers[:MAX_EVIDENCE_PEERS]})
                if all(edges[p] is None for p in pairs):
                    # nothing was measured at all (the tool is missing, the device cannot be opened):
                    # the check could not run on this node, which is an error, not a measured fail
                    errors = [e["reason"] for p in pairs for e in group["edges"][p] if e["reason"]]
                    status = "error"
                    reason = "none of the %d pairs of %s%s measured anything: %s" % (
                        total, host, rail, errors[0] if errors else "every pair failed without a reason")
            elif host in pending:
                others = sorted(set(other for other, _why in pending[host]))
                status = "warn"
                reason = "needs confirmation: %s; %s" % (
                    "; ".join(why for _other, why in pending[host][:3]),
                    "re-test %s and %s with known-good peers (playbooks/rdma.yml rdma_confirm: true)"
                    % (host, ", ".join(others[:MAX_EVIDENCE_PEERS])))
                facts.update({"attribution": "node_or_link", "suspect_pairs": others[:MAX_EVIDENCE_PEERS]})
            else:
                status, reason = "pass", None
                explained = sorted(next(iter(p - {host})) for p in pairs if low[p])
                facts["attribution"] = "healthy"
                if explained:
                    reason = ("%d of %d pairs of %s%s are low; each is explained by a suspect node or a suspect "
                              "link (%s)" % (low_count, len(pairs), host, rail, ", ".join(explained[:5])))
            new_records.append(analysis.record(
                NAME, check + ".node", status, host, reason=reason, target=target, metrics=metrics, facts=facts))
        new_records.extend(link_records)
    return new_records, findings


def retest_pairs(findings, check=None):
    """Pairs whose link finding needs confirmation: re-test the pair itself in the confirmation pass."""
    out = []
    for item in findings or []:
        if check and item.get("check") != check:
            continue
        if item.get("kind") == "link" and (item.get("evidence") or {}).get("needs_confirmation"):
            pair = sorted(item.get("hosts") or [])
            if len(pair) == 2 and pair not in out:
                out.append(pair)
    return out


def suspects(findings, check=None):
    """Hosts to re-test in the confirmation pass: suspect nodes and both ends of unconfirmed links."""
    out = set()
    for item in findings or []:
        if check and item.get("check") != check:
            continue
        if item.get("kind") == "node" or (item.get("kind") == "link"
                                          and (item.get("evidence") or {}).get("needs_confirmation")):
            out.update(item.get("hosts") or [])
    return sorted(out)


def plan_confirmation(findings, hosts, per_suspect=2, check=None):
    """The confirmation pass of a first pass's attribution ``findings`` (a report's findings: those of other
    analyses are ignored): rounds of [server, client] pairs among ``hosts`` (see :func:`confirmation_rounds`).
    The one rule behind the ``confirmation_rounds`` filter and ``run_summary``'s ``confirm_hosts``."""
    findings = [f for f in findings or [] if f.get("analysis", NAME) == NAME]
    hosts = [str(h) for h in hosts]
    suspect_hosts = [h for h in suspects(findings, check=check) if h in hosts]
    retest = [p for p in retest_pairs(findings, check=check) if p[0] in hosts and p[1] in hosts]
    return confirmation_rounds(hosts, suspect_hosts, per_suspect=per_suspect, retest=retest)


def confirmation_rounds(hosts, suspect_hosts, per_suspect=2, retest=None):
    """Rounds pairing every suspect with ``per_suspect`` known-good hosts (never two suspects together),
    plus the ``retest`` pairs themselves (the unconfirmed links, measured again).

    Each round is a list of [server, client] pairs, disjoint. Good hosts are used
    round-robin so the load spreads over the fleet.
    """
    suspect_set = set(suspect_hosts)
    good = [h for h in hosts if h not in suspect_set]
    wanted = [list(pair) for pair in (retest or [])]
    if not good and not wanted:
        return []
    cursor = 0
    for suspect in sorted(suspect_set) if good else []:
        for unused_index in range(min(per_suspect, len(good))):
            wanted.append([good[cursor % len(good)], suspect])
            cursor += 1
    return rounds.pack_rounds(wanted)
