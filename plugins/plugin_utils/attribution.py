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
  its pairs are bad, whoever the peer is. It is ``fail`` only when WITNESSES (2) of
  its low pairs are with known-good hosts (:func:`witnesses`: independent evidence,
  the group screen's rule) - of its confirmation-pass pairs where it has some, none of
  which may be good (:func:`_condemned`); otherwise it is ``warn`` "needs confirmation"
  or "inconclusive" (its finding's ``evidence.needs_confirmation``) and a suspect of the
  confirmation pass;
- **link**: a low edge neither of whose ends is a suspect node, and whose both
  ends are healthy elsewhere (each has at least one good edge to another host);
- a low edge that neither rule explains (an end has no other measured pair, as
  after a single random matching) gives a ``link`` finding with
  ``evidence.needs_confirmation: true`` naming both ends as suspects. The
  confirmation pass (``playbooks/rdma.yml`` ``rdma_confirm: true``) pairs every
  suspect with known-good hosts and re-runs the analysis on all records.

- **group**: suspect nodes that are fine with each other and low with everyone else (a component of suspects
  joined by good pairs, each good with most of the others it was measured with): they share a bad path - a
  switch, its uplink, a rack - and are one ``group`` finding, their hosts ``warn``, never N bad nodes. Two bad
  nodes are low with each other too, so they never form a group; a bad node behind a bad switch is low with its
  switch-mates and stays a node. Needs at least one measured pair inside the group per member. Where the
  hosts' ``net.topology`` records (cabling.py) know the members' switches on the matrix's rail, the finding's
  ``evidence`` carries ``switches`` ({switch: [hosts]}) and ``ports`` ({host: "<switch> <switch port>"}), and its
  sentence names the switch (all of its hosts in the matrix, or only a part: a port group, a line card), or which
  hosts are behind which switch when they are several; the members' records carry ``facts.switch``.

Findings: ``{"kind": "node"|"group"|"link", "hosts": [...], "target": <rail>, "check": ...,
"evidence": {...}}``.

Records added (never rewriting measured ones), tool ``{name: fleet-analysis,
version: attribution}``, for every matrix (a check and rail with at least one
pair: a single pair is low only when its record failed or measured nothing, and
then both its ends need confirmation - the client's word never fails the
server); they are the HOST verdicts of the pairwise check (docs/results.md, "Verdicts"):

- ``<check>.node``, one per host of the matrix: ``fail`` for a suspect node (``error``
  when none of its pairs measured anything: the check could not run there; ``warn`` "needs confirmation", facts
  ``attribution: suspect``, when too few known-good hosts are low with it), ``warn`` for a member of a group,
  ``warn`` "needs confirmation" for an end of a low pair that cannot be
  attributed yet, ``warn`` "none of its pairs measured anything" for a host whose every pair errored and is
  explained by a suspect elsewhere (issue 34: its peer's blame does not make it healthy), ``pass`` otherwise (its
  pairs are good, or their fault is a suspect node or a suspect link elsewhere);
- ``<check>.link``, ``warn``, one on EACH end of a suspect link (``peer`` = the
  other end), naming the link: the node is fine, the cable/port/switch path is not.

Every one of them carries ``facts.measured_check`` (the pairwise check) and the
rail as ``target``: ``fleet.summarize`` uses them instead of the measured pair
records, which measure a link, not a host.

Controller-only (plugin_utils), no Ansible types.
"""

from __future__ import annotations

import collections
import ipaddress
import statistics

from ansible_collections.aifabric.acceptance.plugins.module_utils import thresholds
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import analysis_records, group_screen, rounds, cabling

NAME = "attribution"
# known-good hosts a node must be low with before it is ``fail``: the group screen's runs per verdict
# (plugin_utils/group_screen.EVIDENCE), one rule for both (docs/results.md, "Runs")
WITNESSES = group_screen.EVIDENCE
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
    if not isinstance(record, dict):
        return False
    check = record.get("check") or ""
    if not check.startswith("rdma.") or check.endswith(".server") or analysis_records.is_analysis_record(record):
        return False
    if not record.get("host") or not record.get("peer") or record.get("host") == record.get("peer"):
        return False
    return record.get("status") != "skip"


# the sweep name of the confirmation pass (role aifabric.acceptance.rdma runs it as perftest_sweep sweep_name
# "confirm"; its records carry it in params.sweep_name): its pairs are chosen to be low (suspects), so they are judged
# against the fleet's bound but never set it
CONFIRM_SWEEP = "confirm"


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
             "reason": record.get("reason"),
             "confirm": (record.get("params") or {}).get("sweep_name") == CONFIRM_SWEEP})
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
    # the fleet's own pairs set the median and the spread: not the confirmation pass's (chosen among suspects, most
    # of them low: with many suspects they would pull the median down to them), unless there is nothing else
    measured = [v for pair, v in edges.items()
                if v is not None and not all(e.get("confirm") for e in group["edges"][pair])]
    measured = measured or [v for v in edges.values() if v is not None]
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


def _components(hosts, incident, low):
    """Connected components of ``hosts`` through their good (not low) pairs with each other."""
    left, out = set(hosts), []
    while left:
        start = min(left)
        seen, todo = {start}, [start]
        while todo:
            host = todo.pop()
            for pair in incident[host]:
                other = next(iter(pair - {host}))
                if not low[pair] and other in left and other not in seen:
                    seen.add(other)
                    todo.append(other)
        left -= seen
        out.append(seen)
    return out


def _shared_path(members, incident, low, node_fraction):
    """Evidence that ``members`` (2 hosts or more) share a bad path: each is good with most of the others it was
    measured with, and low with more than ``node_fraction`` of the hosts outside; None when they do not."""
    inside_good = inside = outside_low = outside = 0
    for host in members:
        mine = [p for p in incident[host] if next(iter(p - {host})) in members]
        theirs = [p for p in incident[host] if next(iter(p - {host})) not in members]
        good = sum(1 for p in mine if not low[p])
        bad = sum(1 for p in theirs if low[p])
        if not mine or good * 2 <= len(mine) or not theirs or bad <= node_fraction * len(theirs):
            return None
        inside_good, inside = inside_good + good, inside + len(mine)
        outside_low, outside = outside_low + bad, outside + len(theirs)
    return {"inside_good": inside_good // 2, "inside": inside // 2, "outside_low": outside_low, "outside": outside}


def groups_of(nodes, incident, low, node_fraction):
    """Suspect nodes that are one suspect: hosts fine with each other and low to everyone else share a path (a
    switch, its uplink, a rack), which N bad nodes would not (two bad nodes are low with each other too).
    [(sorted members, evidence)] for every component of 2 or more suspects joined by good pairs that passes
    :func:`_shared_path`."""
    found = []
    for members in _components(nodes, incident, low):
        if len(members) < 2:
            continue
        evidence = _shared_path(members, incident, low, node_fraction)
        if evidence is not None:
            found.append((sorted(members), evidence))
    return sorted(found)


def _explained_away(nodes, incident, low, min_edges, node_fraction):
    """The suspect nodes that stay suspects once their pairs with the other suspects are set aside: a host whose
    low pairs were with bad nodes (a random round drew two of them; the confirmation pass paired it with other
    suspects) is judged again on its pairs with hosts that are not suspects, where it has ``min_edges`` of them, and
    is no suspect when those are mostly good. A bad node is low with the healthy hosts too; a host that has too few
    pairs outside the suspects is kept as it was judged."""
    out = {}
    for host, counts in nodes.items():
        rest = [p for p in incident[host] if next(iter(p - {host})) not in nodes]
        if len(rest) >= min_edges and sum(1 for p in rest if low[p]) <= node_fraction * len(rest):
            continue
        out[host] = counts
    return out


def witnesses(host, incident, low, explained, confirm_pairs=frozenset(), min_edges=2):
    """The known-good hosts ``host`` measured low with: the independent evidence against it. A peer is known good
    when it is no suspect (not in ``explained``), it has more good pairs than low ones no suspect explains (besides
    this one), and it is good with ``min_edges`` other hosts - or with one, where the low pair was measured in the
    confirmation pass (``confirm_pairs``: the peer was chosen there as a known-good host). A neighbour that is itself
    a suspect, or a transient low pair with a host nothing else vouches for, is no witness."""
    out = []
    for pair in incident[host]:
        peer = next(iter(pair - {host}))
        if not low[pair] or peer in explained:
            continue
        others = [p for p in incident[peer] if p != pair]
        good = sum(1 for p in others if not low[p])
        if sum(1 for p in others if low[p] and not (p - {peer}) & explained) >= good:
            continue            # as many low pairs of its own as good ones: in question itself
        if good >= (1 if pair in confirm_pairs else min_edges):
            out.append(peer)
    return sorted(set(out))


def attribute(edges, low, min_edges, node_fraction, confirm_pairs=frozenset()):
    """Pure graph step: (suspect nodes {host: (bad, total)}, links [(pair, confirmed)], groups [(hosts, evidence)],
    unconfirmed nodes {host}: suspect nodes low with fewer than WITNESSES known-good hosts (:func:`witnesses`;
    ``confirm_pairs``: the pairs the confirmation pass measured) - ``warn``, needs confirmation).

    A group (:func:`groups_of`) replaces its members as suspect nodes, and its pairs to the rest of the fleet are
    explained by it, as a suspect node's are. A link is confirmed when both ends are healthy elsewhere and the pair
    was measured (an edge that only ever errored is never a confirmed link verdict: re-testing the pair itself tells
    a transient failure from a broken path).
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
    nodes = _explained_away(nodes, incident, low, min_edges, node_fraction)
    groups = groups_of(nodes, incident, low, node_fraction)
    explained = set(nodes)
    for members, _evidence in groups:
        for host in members:
            nodes.pop(host, None)
    links = []
    for pair in sorted((p for p in edges if low[p] and not any(h in explained for h in p)), key=sorted):
        healthy_elsewhere = all(
            any(not low[p] for p in incident[h] if p != pair and not any(x in explained for x in p - {h}))
            for h in pair)
        links.append((pair, healthy_elsewhere and edges[pair] is not None))
    # where every host is a suspect (a fleet uniformly below its floor) nobody can be a witness: the nodes are
    # judged on their pairs alone, as before the rule
    unconfirmed = set(h for h in nodes if not _condemned(h, incident, low, explained, confirm_pairs, min_edges)) \
        if set(incident) - explained else set()
    return nodes, links, groups, unconfirmed


def confirmation_of(host, incident, low, explained, confirm_pairs):
    """(low, good): the peers of ``host``'s confirmation-pass pairs with hosts that are no suspects, low and good."""
    pairs = [p for p in incident[host] if p in confirm_pairs and not (p - {host}) & explained]
    return (sorted(next(iter(p - {host})) for p in pairs if low[p]),
            sorted(next(iter(p - {host})) for p in pairs if not low[p]))


def _condemned(host, incident, low, explained, confirm_pairs, min_edges):
    """True when the evidence against a suspect node is repeated and independent: where the confirmation pass
    measured it with hosts that are no suspects, those pairs are the evidence (the first pass chose it for being low:
    its own pairs are not independent of that choice) and must agree - low, none good (a good one: its
    confirmations disagree, the screen's rule) - besides WITNESSES known-good hosts it is low with in all; where no
    confirmation pass ran in the matrix, WITNESSES known-good hosts it is low with; where one ran but not for it,
    nothing yet."""
    found = set(witnesses(host, incident, low, explained, confirm_pairs, min_edges))
    confirm_low, confirm_good = confirmation_of(host, incident, low, explained, confirm_pairs)
    if confirm_low or confirm_good:        # the pass agrees: low with it there, never good
        return not confirm_good and len(found) >= WITNESSES
    # a confirmation pass ran, but not for it (it became a suspect once the pass cleared the suspects it was low
    # with): it needs one of its own
    return not confirm_pairs and len(found) >= WITNESSES


class Matrix:
    """The decision over one matrix (one pairwise check on one rail), data only, no sentence: which nodes and
    links are bad, and from which pair results. Built by :func:`judge`; the reasons (``_*_reason``) and the
    records and findings (:func:`_matrix_output`) are made from it."""

    def __init__(self, check, target, group, scored, attributed, low_pct, min_edges=None):
        self.check, self.target, self.low_pct = check, target, low_pct
        self.min_edges = thresholds.ATTRIBUTION["attribution_min_edges"] if min_edges is None else min_edges
        self.confirm_pairs = confirm_pairs(group)
        self.metric, self.direction = group["metric"], group["direction"]
        self.entries = group["edges"]               # pair -> the measurements of the pair (collect_edges)
        self.edges, self.median, self.limit, self.low = scored      # see score()
        self.nodes, self.links, self.groups, self.unconfirmed = attributed        # see attribute()
        self.group_of = dict((host, members) for members, _evidence in self.groups for host in members)
        self.group_evidence = dict((tuple(members), evidence) for members, evidence in self.groups)
        self.failed = dict((pair, _failed(self.entries[pair], value)) for pair, value in self.edges.items())
        self.incident = {}                          # host -> its pairs
        for pair in self.edges:
            for host in pair:
                self.incident.setdefault(host, []).append(pair)
        self.pending = {}       # host -> [(other end, pair)] of its low pairs that need confirmation, in link order
        for pair, confirmed in self.links:
            if not confirmed:
                a, b = sorted(pair)
                self.pending.setdefault(a, []).append((b, pair))
                self.pending.setdefault(b, []).append((a, pair))

    def peers(self, host, low=None):
        """The other ends of the host's pairs, sorted: all of them, or only the low (``low=True``) or good ones."""
        return sorted(next(iter(p - {host})) for p in self.incident[host] if low is None or bool(self.low[p]) == low)

    def witnesses(self, host):
        """The known-good hosts the host is low with (:func:`witnesses`)."""
        return witnesses(host, self.incident, self.low, set(self.nodes) | set(self.group_of), self.confirm_pairs,
                         self.min_edges)

    def low_count(self, host):
        return sum(1 for p in self.incident[host] if self.low[p])

    def failed_count(self, host):
        """Low pairs of the host whose (worse) measurement failed its own expectation or measured nothing."""
        return sum(1 for p in self.incident[host] if self.low[p] and self.failed[p])

    def verdict(self, host):
        """``node`` (a suspect node), ``error`` (a suspect node none of whose pairs measured anything: the check
        could not run there), ``suspect`` (a suspect node fewer than WITNESSES known-good hosts are low with: it
        needs confirmation), ``group`` (a member of a group of hosts sharing a bad path), ``node_or_link`` (an end
        of a low pair not attributed yet), ``unmeasured`` (none of its pairs measured anything, and a verdict
        elsewhere explains them: its own health is not known) or ``healthy``."""
        if host in self.group_of:
            return "group"
        unmeasured = all(self.edges[p] is None for p in self.incident[host])
        if host in self.nodes:
            return "error" if unmeasured else "suspect" if host in self.unconfirmed else "node"
        if host in self.pending:
            return "node_or_link"
        return "unmeasured" if unmeasured else "healthy"


Settings = collections.namedtuple("Settings", "low_pct min_edges node_fraction mad_k")


def settings(config):
    """The attribution numbers of an analysis config (defaults: thresholds.ATTRIBUTION)."""
    return Settings(float(_conf(config, "attribution_low_pct")), int(_conf(config, "attribution_min_edges")),
                    float(_conf(config, "attribution_node_fraction")), float(_conf(config, "attribution_mad_k")))


def confirm_pairs(group):
    """The pairs of a matrix (:func:`collect_edges`) the confirmation pass measured."""
    return frozenset(pair for pair, entries in group["edges"].items() if any(e.get("confirm") for e in entries))


def judge(check, target, group, opts):
    """The decision over one matrix of :func:`collect_edges` (pure): a :class:`Matrix`."""
    scored = score(group, opts.low_pct, opts.mad_k)
    edges, _median, _limit, low = scored
    attributed = attribute(edges, low, opts.min_edges, opts.node_fraction, confirm_pairs(group))
    return Matrix(check, target, group, scored, attributed, opts.low_pct, opts.min_edges)


# --- the sentences: reasons made from a Matrix ---

def _fmt(value):
    return "error" if value is None else ("%.2f" % value).rstrip("0").rstrip(".")


def _unit(metric):
    return "Gbit/s" if metric.endswith("_gbit_s") else ("us" if metric.endswith("_us") else "")


def _rail(target):
    return " on %s" % target if target else ""


def _bound(m):
    """``below 350 Gbit/s (90 % of the fleet median 390 Gbit/s of rdma.ib_write_bw on mlx5_0)``."""
    unit = _unit(m.metric)
    return "%s %s %s (%s %% of the fleet median %s %s of %s%s)" % (
        "below" if m.direction == "higher" else "above", _fmt(m.limit), unit,
        _fmt(100.0 * m.limit / m.median) if m.median else "?", _fmt(m.median), unit, m.check, _rail(m.target))


def _link_reason(m, pair, confirmed):
    a, b = sorted(pair)
    value, entries, unit, rail = m.edges[pair], m.entries[pair], _unit(m.metric), _rail(m.target)
    what = "%s %s %s is %s" % (m.metric, _fmt(value), unit, _bound(m))
    if m.failed[pair] and value is not None:
        what = "%s %s %s failed its expectation (%s)" % (
            m.metric, _fmt(value), unit, next((e["reason"] for e in entries if e["value"] == value and e["reason"]),
                                              "no reason given"))
    if confirmed:
        return ("suspect link %s <-> %s%s: %s while both ends are healthy with other peers: "
                "the link (cable, port, switch path) is the suspect, not the nodes" % (a, b, rail, what))
    if value is None:
        return ("%s <-> %s%s: the pair failed (no measurement) and no other pair explains it; "
                "re-test the pair and both ends with known-good peers (confirmation pass)" % (a, b, rail))
    return ("%s <-> %s%s: %s; an end has no other good pair to compare with, so node "
            "or link cannot be told apart yet (run the confirmation pass)" % (a, b, rail, what))


def _node_reason(host, bad, total, failed_count, rail, bound):
    return ("%d of %d pairs of %s%s are low or failed (%d below their own expectation or not measured; low = %s): "
            "the node is the common factor" % (bad, total, host, rail, failed_count, bound))


def _suspect_reason(m, host, bad, total):
    known = m.witnesses(host)
    confirm_low, confirm_good = confirmation_of(host, m.incident, m.low, set(m.nodes) | set(m.group_of),
                                                m.confirm_pairs)
    if confirm_good:
        return ("inconclusive: %s; its confirmation pass disagrees (low with %s, good with %s): re-test %s with "
                "known-good peers (playbooks/rdma.yml rdma_confirm: true)" % (
                    _node_reason(host, bad, total, m.failed_count(host), _rail(m.target), _bound(m)),
                    ", ".join(confirm_low) or "none", ", ".join(confirm_good), host))
    return ("needs confirmation: %s; but only %d of them (%s) with a known-good host (no suspect, good with %d other "
            "hosts or more, or with one and chosen by the confirmation pass), and %d are needed before the node is "
            "failed: re-test %s with known-good peers (playbooks/rdma.yml rdma_confirm: true)" % (
                _node_reason(host, bad, total, m.failed_count(host), _rail(m.target), _bound(m)), len(known),
                ", ".join(known) or "none", m.min_edges, WITNESSES, host))


def _error_reason(m, host):
    errors = [e["reason"] for p in m.incident[host] for e in m.entries[p] if e["reason"]]
    return "none of the %d pairs of %s%s measured anything: %s" % (
        m.nodes[host][1], host, _rail(m.target), errors[0] if errors else "every pair failed without a reason")


def _pending_reason(m, host, link_reasons):
    others = sorted(set(other for other, _pair in m.pending[host]))
    return "needs confirmation: %s; %s" % (
        "; ".join(link_reasons[pair] for _other, pair in m.pending[host][:3]),
        "re-test %s and %s with known-good peers (playbooks/rdma.yml rdma_confirm: true)"
        % (host, ", ".join(others[:MAX_EVIDENCE_PEERS])))


def _unmeasured_reason(m, host):
    return ("none of the %d pairs of %s%s measured anything (with %s): they are explained by a suspect elsewhere, but "
            "nothing shows this host is healthy; re-test it with known-good peers (playbooks/rdma.yml rdma_confirm: "
            "true)" % (len(m.incident[host]), host, _rail(m.target), ", ".join(m.peers(host)[:MAX_EVIDENCE_PEERS])))


def _healthy_reason(m, host):
    explained = m.peers(host, low=True)
    if not explained:
        return None
    return ("%d of %d pairs of %s%s are low; each is explained by a suspect node%s or a suspect "
            "link (%s)" % (m.low_count(host), len(m.incident[host]), host, _rail(m.target),
                           ", a suspect group" if m.groups else "", ", ".join(explained[:5])))


def _names(hosts, limit=8):
    return ", ".join(hosts[:limit]) + (" and %d more" % (len(hosts) - limit) if len(hosts) > limit else "")


def _pairs_part(m, evidence):
    return ("are fine with each other (%d of %d pairs good) and low with the rest of the fleet (%d of %d pairs %s)"
            % (evidence["inside_good"], evidence["inside"], evidence["outside_low"], evidence["outside"],
               "below" if m.direction == "higher" else "above"))


def _low_part(m):
    return " (low = %s)" % _bound(m) if m.limit is not None else ""


def switch_info(members, where):
    """What the topology says of a group's ``members`` (``where``: {host: cabling.Placement} of the matrix's
    hosts): {"switches": {switch: [hosts]}, "ports": {host: "<switch> <switch port>"}, "no_topology": [hosts]},
    or None when no member's switch is known."""
    known = [h for h in members if h in (where or {})]
    if not known:
        return None
    switches, ports = {}, {}
    for host in known:
        place = where[host]
        switches.setdefault(place.switch, []).append(host)
        ports[host] = "%s %s" % (place.switch, place.switch_port) if place.switch_port else place.switch
    return {"switches": switches, "ports": ports, "no_topology": [h for h in members if h not in where]}


def _scope(m, switch, hosts, where):
    """(which part of ``switch``'s hosts in the matrix the group's ``hosts`` behind it are, True when all of them
    or all but suspect nodes): ``all 8 hosts of leaf-07``, ``6 of the 8 hosts of leaf-07 (not a, b: ...)``."""
    fleet = sorted(h for h, place in where.items() if place.switch == switch)
    rest = [h for h in fleet if h not in hosts]
    if not rest:
        return "all %d hosts of %s" % (len(fleet), switch), True
    head = "%d of the %d hosts of %s" % (len(hosts), len(fleet), switch)
    if all(h in m.nodes for h in rest):
        return "%s (the other%s, %s, %s a suspect node)" % (
            head, "s" if len(rest) > 1 else "", _names(rest), "are each" if len(rest) > 1 else "is"), True
    return ("%s (not %s: a port group or line card of %s rather than the whole switch)"
            % (head, _names(rest), switch), False)


def _switch_ports(switch, hosts, where):
    ports = cabling.port_ranges([where[h].switch_port for h in hosts])
    return " (port%s %s)" % ("s" if len(hosts) > 1 else "", ports) if ports else ""


def _one_switch_reason(m, members, evidence, where, switch):
    scope, whole = _scope(m, switch, members, where)
    return ("%d hosts of %s%s behind switch %s%s share a bad path: %s (%s) %s - suspect %s, its uplink or the "
            "rack, not %d bad nodes%s" % (
                len(members), m.check, _rail(m.target), switch, _switch_ports(switch, members, where), scope,
                _names(members), _pairs_part(m, evidence),
                "the switch %s" % switch if whole else "that part of switch %s (a port group, a line card)" % switch,
                len(members), _low_part(m)))


def _switches_reason(m, members, evidence, where, info):
    switches = sorted(info["switches"])
    parts = []
    for switch in switches:
        hosts = info["switches"][switch]
        parts.append("%s: %s (%s)%s" % (switch, _scope(m, switch, hosts, where)[0], _names(hosts),
                                        _switch_ports(switch, hosts, where)))
    behind = "; ".join(parts)
    unknown = "; switch not known for %s" % _names(info["no_topology"]) if info["no_topology"] else ""
    if len(switches) > 1:
        suspect = "the uplinks of %s, a switch between them and the rest of the fleet" % " and ".join(switches)
    else:
        suspect = "the switch %s, its uplink" % switches[0]
    return ("%d hosts of %s%s share a bad path: %s %s - behind %d switch%s: %s%s - suspect what they share (%s, the "
            "rack), not %d bad nodes%s" % (
                len(members), m.check, _rail(m.target), _names(members), _pairs_part(m, evidence),
                len(switches), "es" if len(switches) > 1 else "", behind, unknown, suspect, len(members),
                _low_part(m)))


def group_reason(m, members, evidence, where=None):
    """The sentence of a group finding (and of its members' ``.node`` records); ``where`` ({host:
    cabling.Placement} of the matrix's hosts) names the switch(es) behind which the members are, when known."""
    info = switch_info(members, where)
    if info is None:
        return ("%d hosts of %s%s share a bad path: %s %s - suspect what they share (a switch, its uplink, the "
                "rack), not %d bad nodes%s" % (
                    len(members), m.check, _rail(m.target), _names(members), _pairs_part(m, evidence), len(members),
                    _low_part(m)))
    if len(info["switches"]) == 1 and not info["no_topology"]:
        return _one_switch_reason(m, members, evidence, where, next(iter(info["switches"])))
    return _switches_reason(m, members, evidence, where, info)


# --- the records and findings of a Matrix ---

def _node_finding(m, host):
    bad, total = m.nodes[host]
    low_peers = [(peer, m.edges[frozenset((host, peer))]) for peer in m.peers(host, low=True)]
    evidence = {
        "metric": m.metric, "fleet_median": m.median, "limit": m.limit, "low_pct": m.low_pct,
        "low_pairs": bad, "pairs": total, "failed_pairs": m.failed_count(host),
        "low_peers": dict(low_peers[:MAX_EVIDENCE_PEERS]),
        "good_peers": m.peers(host, low=False)[:MAX_EVIDENCE_PEERS],
        "witnesses": m.witnesses(host)[:MAX_EVIDENCE_PEERS], "needs_confirmation": host in m.unconfirmed,
    }
    return analysis_records.finding("node", m.check, [host], target=m.target, evidence=evidence)


def _group_finding(m, members, evidence, reason, where=None):
    evidence = dict(evidence, metric=m.metric, fleet_median=m.median, limit=m.limit, low_pct=m.low_pct, text=reason)
    info = switch_info(members, where)
    if info is not None:
        evidence.update(switches=info["switches"], ports=info["ports"])
        if info["no_topology"]:
            evidence["no_topology"] = info["no_topology"]
    return analysis_records.finding("group", m.check, list(members), target=m.target, evidence=evidence)


def _link_finding(m, pair, confirmed):
    evidence = {"metric": m.metric, "value": m.edges[pair], "fleet_median": m.median, "limit": m.limit,
                "low_pct": m.low_pct, "failed": m.failed[pair],
                "needs_confirmation": not confirmed,
                "errors": [e["reason"] for e in m.entries[pair] if e["status"] == "error"][:3]}
    return analysis_records.finding("link", m.check, sorted(pair), target=m.target, evidence=evidence)


def _link_records(m, pair, reason):
    """The ``<check>.link`` warn on each end of a confirmed suspect link."""
    a, b = sorted(pair)
    metrics = {"fleet_median_" + m.metric: m.median}
    if m.edges[pair] is not None:
        metrics[m.metric] = m.edges[pair]
    return [analysis_records.record(NAME, m.check + ".link", "warn", end, peer=other, reason=reason, target=m.target,
                                    metrics=metrics, facts={"attribution": "link", "measured_check": m.check, "link": [a, b]})
            for end, other in ((a, b), (b, a))]


def _host_record(m, host, link_reasons, where=None):
    """The ``<check>.node`` record of one host of the matrix: its verdict for the check and rail (``where``: the
    switches of the matrix's hosts, {host: cabling.Placement}, named in a group member's record)."""
    metrics = {"low_pairs_count": m.low_count(host), "pairs_count": len(m.incident[host]),
               "fleet_median_" + m.metric: m.median}
    facts = {"measured_check": m.check}
    verdict = m.verdict(host)
    if verdict in ("node", "error", "suspect"):
        bad, total = m.nodes[host]
        facts.update({"attribution": "node", "low_peers": m.peers(host, low=True)[:MAX_EVIDENCE_PEERS],
                      "witnesses": m.witnesses(host)[:MAX_EVIDENCE_PEERS]})
        if verdict == "suspect":
            facts["attribution"] = "suspect"
            status, reason = "warn", _suspect_reason(m, host, bad, total)
        elif verdict == "error":
            # nothing was measured at all (the tool is missing, the device cannot be opened):
            # the check could not run on this node, which is an error, not a measured fail
            status, reason = "error", _error_reason(m, host)
        else:
            status, reason = "fail", _node_reason(host, bad, total, m.failed_count(host), _rail(m.target), _bound(m))
    elif verdict == "group":
        members = m.group_of[host]
        status, reason = "warn", group_reason(m, members, m.group_evidence[tuple(members)], where)
        facts.update({"attribution": "group", "group": members[:MAX_EVIDENCE_PEERS]})
        if host in (where or {}):
            facts.update({"switch": where[host].switch, "switch_port": where[host].switch_port})
    elif verdict == "unmeasured":
        status, reason = "warn", _unmeasured_reason(m, host)
        facts.update({"attribution": "unmeasured", "suspect_pairs": m.peers(host)[:MAX_EVIDENCE_PEERS]})
    elif verdict == "node_or_link":
        status, reason = "warn", _pending_reason(m, host, link_reasons)
        others = sorted(set(other for other, _pair in m.pending[host]))
        facts.update({"attribution": "node_or_link", "suspect_pairs": others[:MAX_EVIDENCE_PEERS]})
    else:
        status, reason = "pass", _healthy_reason(m, host)
        facts["attribution"] = "healthy"
    return analysis_records.record(NAME, m.check + ".node", status, host, reason=reason, target=m.target,
                                   metrics=metrics, facts=facts)


def _is_address(end):
    """True for an IP address: a peer given as an address, not a host of the run (it gets no verdict record)."""
    try:
        ipaddress.ip_address(end)
    except ValueError:
        return False
    return True


def _matrix_output(m, where=None):
    """(records, findings) of one judged matrix: a node finding per suspect node, a group finding per group (naming
    its switches where ``where``, {host: cabling.Placement}, knows them), a link finding per low pair left, a
    ``.node`` record per host, then the ``.link`` records of the confirmed links; an end given as an IP address (a
    peer that is no host of the run) gets none."""
    findings = [_node_finding(m, host) for host in sorted(m.nodes)]
    findings.extend(_group_finding(m, members, evidence, group_reason(m, members, evidence, where), where)
                    for members, evidence in m.groups)
    link_reasons, link_records = {}, []
    for pair, confirmed in m.links:
        link_reasons[pair] = _link_reason(m, pair, confirmed)
        findings.append(_link_finding(m, pair, confirmed))
        if confirmed:
            link_records.extend(_link_records(m, pair, link_reasons[pair]))
    new_records = [_host_record(m, host, link_reasons, where) for host in sorted(m.incident)]
    return [r for r in new_records + link_records if not _is_address(r["host"])], findings


def analyze(records, config):
    """Node/link attribution over every pairwise rdma check and rail. Returns (new_records, findings).

    Every matrix with a pair is judged (a single pair too: it is low only when its record failed or measured
    nothing, and then both ends need confirmation): every host of the matrix gets one ``<check>.node`` record (its
    verdict for that check and rail) and both ends of every suspect link a ``<check>.link`` warn.
    """
    opts = settings(config)
    switches = cabling.read(records)
    new_records, findings = [], []
    for (check, target), group in sorted(collect_edges(records, config).items(),
                                         key=lambda kv: (kv[0][0], kv[0][1] or "")):
        m = judge(check, target, group, opts)
        matrix_records, matrix_findings = _matrix_output(m, cabling.placements(switches, m.incident, target))
        new_records.extend(matrix_records)
        findings.extend(matrix_findings)
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


def plan_confirmation(findings, hosts, per_suspect=2, check=None, records=None):
    """The confirmation pass of a first pass's attribution ``findings`` (a report's findings: those of other
    analyses are ignored): rounds of [server, client] pairs among ``hosts`` (see :func:`confirmation_rounds`).
    ``records``: the report's records, for the ``net.topology`` ones (the suspect nodes are paired with each other
    switch by switch where it is known) and this analysis's ``.node`` records (a host none of whose pairs measured
    anything is re-tested like a suspect, :func:`unmeasured_hosts`). The one rule behind the ``confirmation_rounds`` filter and
    ``run_summary``'s ``confirm_hosts``."""
    findings = [f for f in findings or [] if f.get("analysis", NAME) == NAME]
    hosts = [str(h) for h in hosts]
    suspect_hosts = [h for h in sorted(set(suspects(findings, check=check)) | unmeasured_hosts(records, check))
                     if h in hosts]
    retest = [p for p in retest_pairs(findings, check=check) if p[0] in hosts and p[1] in hosts]
    return confirmation_rounds(hosts, suspect_hosts, per_suspect=per_suspect, retest=retest,
                               node_suspects=_node_suspects_by_switch(findings, hosts, check, records),
                               partners=_clean_hosts(records, check))


def _node_verdicts(records, check):
    """This analysis's ``<check>.node`` records among ``records`` (of ``check`` when given)."""
    for rec in records or ():
        if not (isinstance(rec, dict) and analysis_records.is_analysis_record(rec)
                and (rec.get("tool") or {}).get("version") == NAME and str(rec.get("check", "")).endswith(".node")):
            continue
        if check and rec.get("check") != check + ".node":
            continue
        yield rec


def unmeasured_hosts(records, check=None):
    """The hosts none of whose pairs measured anything (a ``.node`` verdict ``unmeasured``): nothing shows them
    healthy, so the confirmation pass re-tests them with known-good peers, as suspects."""
    return set(rec.get("host") for rec in _node_verdicts(records, check)
               if (rec.get("facts") or {}).get("attribution") == "unmeasured")


def _clean_hosts(records, check):
    """The hosts whose every ``<check>.node`` verdict (of this analysis, in ``records``) is a pass with at least
    two pairs and no low pair: the known-good partners that say something (a host with one low pair of two, next to
    a bad node, would be one more suspect). None when ``records`` hold no verdict at all."""
    verdicts = {}
    for rec in _node_verdicts(records, check):
        metrics = rec.get("metrics") or {}
        clean = (rec.get("status") == "pass" and metrics.get("low_pairs_count") == 0
                 and (metrics.get("pairs_count") or 0) >= 2)
        verdicts[rec.get("host")] = verdicts.get(rec.get("host"), True) and clean
    return set(host for host, clean in verdicts.items() if clean) if verdicts else None


def _node_suspects_by_switch(findings, hosts, check, records):
    """The hosts of the node findings among ``hosts``, ordered by their switch on the finding's rail (where the
    ``net.topology`` records say it; hosts without one after them), then by name."""
    known = cabling.read(records) if records else {}
    order = {}
    for item in findings:
        if item.get("kind") != "node" or (check and item.get("check") != check):
            continue
        for host in item.get("hosts") or []:
            if host in hosts and host not in order:
                where = cabling.placement(known.get(host), item.get("target"))
                order[host] = (where is None, where.switch if where else "", host)
    return sorted(order, key=order.get)


def confirmation_rounds(hosts, suspect_hosts, per_suspect=2, retest=None, node_suspects=None, partners=None):
    """Rounds pairing every suspect with ``per_suspect`` known-good hosts, plus the ``retest`` pairs themselves
    (the unconfirmed links, measured again), plus a ring over the suspect nodes ``node_suspects`` in the order
    given (each with the next two; never an end of an unconfirmed link: their own pairs say more).

    The ring is what tells a bad switch from bad nodes: random matchings almost never pair two hosts behind one
    leaf, so after them every host behind a slow leaf uplink is low with all its peers, like a bad node. Hosts
    behind one bad path are fine with each other; two bad nodes are low with each other too.

    ``partners``: the hosts clean enough to be known-good (:func:`_clean_hosts`); with fewer than ``per_suspect`` of
    them, every host that is no suspect. Each round is a list of [server, client] pairs, disjoint. Good hosts are
    used round-robin so the load spreads over the fleet.
    """
    suspect_set = set(suspect_hosts)
    good = [h for h in hosts if h not in suspect_set]
    if partners is not None:    # the clean ones when there are enough of them, else every host that is no suspect
        good = [h for h in good if h in partners] if len(partners & set(good)) >= per_suspect else good
    wanted = [list(pair) for pair in (retest or [])]
    ring = [h for h in dict.fromkeys(node_suspects or ()) if h in suspect_set]
    if not good and not wanted and len(ring) < 2:
        return []
    cursor = 0
    for suspect in sorted(suspect_set) if good else []:
        for unused_index in range(min(per_suspect, len(good))):
            wanted.append([good[cursor % len(good)], suspect])
            cursor += 1
    seen = set(frozenset(pair) for pair in wanted)
    # each with the next and the one after it: a bad node between two switch-mates does not cut them apart
    for step in (1, 2):
        for index in range(len(ring)):
            pair = [ring[index], ring[(index + step) % len(ring)]]
            if pair[0] != pair[1] and frozenset(pair) not in seen:
                seen.add(frozenset(pair))
                wanted.append(pair)
    return rounds.pack_rounds(wanted)
