# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which link a port's growing error counters point at (an analysis, docs/port-counters.md).

A ``rdma.port_counters`` record of the after phase (the port_counters module) whose error counters grew during the
window (``<counter>_growth`` above 0 for a counter thresholds.PORT_COUNTER_RULES judges, or a flap) names a port,
``<device>/<port>`` of its host. This analysis puts it next to what the run knows of that port's links:

- the pair matrix: every pairwise ``rdma.*`` check on the port's rail (``target`` = the device; rails are tested
  ``mlx5_i`` <-> ``mlx5_i``), judged as attribution judges it (attribution.collect_edges / judge: the same low
  pairs). A low pair of the port's host on that rail is the link: the port's errors and the slow pair are one fault
  (cable, transceiver, switch port), not the node;
- the topology (``net.topology`` records, plugin_utils/cabling.py): the switch and switch port the port is cabled to.

Records added (tool ``fleet-analysis``, version ``port_counters``): ``rdma.port_counters.link``, ``warn``, on both
ends of each slow pair of an erroring port (``peer`` the other end), or on the port's host alone when no pair of its
rail is slow but the topology knows its switch port; ``facts``: ``link`` (the two hosts, or the host and its
switch), ``port``, ``grown`` ({counter: growth}), ``flapped``, ``switch``, ``switch_port``, ``measured_check``,
``slow_peers``. Findings: ``{"kind": "link", "check": "rdma.port_counters", "hosts", "target", "evidence"}``.
The port's own record (its host's) is the verdict of the port; these records name the link. Controller-only.
"""

from __future__ import annotations

from ansible_collections.aifabric.acceptance.plugins.module_utils import thresholds
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import analysis_records, attribution, cabling

NAME = "port_counters"
CHECK = "rdma.port_counters"
LINK_CHECK = CHECK + ".link"
GROWTH = "_growth"


def grown(record):
    """{counter: growth} of the judged error counters of an after record that grew, or {}."""
    metrics = record.get("metrics") or {}
    out = {}
    for key, value in metrics.items():
        name = key[:-len(GROWTH)] if key.endswith(GROWTH) else None
        rule = thresholds.PORT_COUNTER_RULES.get(name)
        if rule and isinstance(value, (int, float)) and value > 0 and not (
                rule["warn_above"] is None and rule["fail_above"] is None):
            out[name] = value
    return out


def erroring_ports(records):
    """[(host, device, port key, record, grown)] of the after records whose error counters grew."""
    out = []
    for record in records:
        if not isinstance(record, dict) or record.get("check") != CHECK or analysis_records.is_analysis_record(record):
            continue
        if (record.get("params") or {}).get("phase") != "after" or not record.get("host"):
            continue
        found = grown(record)
        facts = record.get("facts") or {}
        if found and facts.get("device"):
            out.append((record["host"], facts["device"], record.get("target"), record, found))
    return out


def matrices(records, config):
    """{rail: [Matrix]}: every pairwise matrix of the run as attribution judges it (attribution.collect_edges /
    judge), once, by its rail."""
    opts = attribution.settings(config)
    out = {}
    for (check, target), group in sorted(attribution.collect_edges(records, config).items(),
                                         key=lambda kv: (kv[0][0], kv[0][1] or "")):
        out.setdefault(target, []).append(attribution.judge(check, target, group, opts))
    return out


def slow_pairs(judged, host, device):
    """[(check, peer, value, median)] of the host's low pairs on ``device``'s rail (``judged``: :func:`matrices`)."""
    out = []
    for m in judged.get(device, []):
        for pair in m.incident.get(host, []):
            if m.low[pair]:
                out.append((m.check, next(iter(pair - {host})), m.edges[pair], m.median))
    return out


def _counters_text(found):
    return ", ".join("%s +%s" % (name, found[name]) for name in sorted(found))


def _records_of_port(host, device, key, record, found, judged, where):
    """(new records, findings) of one erroring port."""
    place = cabling.placement(where.get(host), device) if where.get(host) else None
    facts = {"port": key, "grown": found, "flapped": bool((record.get("facts") or {}).get("flapped")),
             "switch": place.switch if place else None, "switch_port": place.switch_port if place else None}
    cabled = " (cabled to %s port %s)" % (place.switch, place.switch_port) if place else ""
    new, findings = [], []
    slow = slow_pairs(judged, host, device)
    for check, peer, value, median in slow:
        how = "measured nothing" if value is None else "%s against a fleet median of %s" % (round(value, 2), round(median, 2))
        reason = ("link %s %s <-> %s: %s's port %s%s grew %s during the window and the pair is slow on %s (%s): the "
                  "link (cable, transceiver or switch port), not the node" % (
                      host, device, peer, host, key, cabled, _counters_text(found), check, how))
        link_facts = dict(facts, link=sorted([host, peer]), measured_check=check, slow_peers=[p for _c, p, _v, _m in slow])
        for end, other in ((host, peer), (peer, host)):
            new.append(analysis_records.record(NAME, LINK_CHECK, "warn", end, peer=other, reason=reason, target=device,
                                               facts=link_facts))
        findings.append(analysis_records.finding("link", CHECK, [host, peer], target=device, evidence=link_facts))
    if not slow and place:
        reason = ("%s's port %s grew %s during the window; it is cabled to %s port %s: check that link (no pair of "
                  "the %s rail was slow)" % (host, key, _counters_text(found), place.switch, place.switch_port, device))
        link_facts = dict(facts, link=[host, place.switch], measured_check=None, slow_peers=[])
        new.append(analysis_records.record(NAME, LINK_CHECK, "warn", host, reason=reason, target=device, facts=link_facts))
        findings.append(analysis_records.finding("link", CHECK, [host], target=device, evidence=link_facts))
    return new, findings


def analyze(records, config):
    """The links of every port whose error counters grew (see the module docstring). (new_records, findings)."""
    erroring = erroring_ports(records)
    if not erroring:
        return [], []
    where, judged = cabling.read(records), matrices(records, config)
    new_records, findings = [], []
    for host, device, key, record, found in erroring:
        new, found_here = _records_of_port(host, device, key, record, found, judged, where)
        new_records.extend(new)
        findings.extend(found_here)
    return new_records, findings
