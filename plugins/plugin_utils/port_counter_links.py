# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whose fault a port's growing error counters are: the link's or the host's (an analysis, docs/port-counters.md and
docs/attribution.md, "Port counters").

A ``rdma.port_counters`` record of the after phase (the port_counters module) whose LINK error counters grew during
the window (``<counter>_growth`` above 0 for a counter thresholds.PORT_COUNTER_RULES marks ``fault: link``: symbol,
CRC and integrity errors, link recoveries, a flap) names a port, ``<device>/<port>`` of its host. Attribution's rule
applies (a host fails only with independent evidence): a receive error is counted at one end of one cable, so by
itself it says "this cable, its transceivers, the switch port or this NIC". This analysis puts it next to what the
run knows of the port's link:

- the pair matrix: every pairwise ``rdma.*`` check on the port's rail (``target`` = the device; rails are tested
  ``mlx5_i`` <-> ``mlx5_i``), judged as attribution judges it (attribution.collect_edges / judge). A low pair of
  the port's host on that rail that attribution charges to a LINK (its ``links``: neither end a suspect node nor a
  group) is partner evidence: the port's errors and the slow pair are one fault of the link;
- the other end of the same cable: the topology (``net.topology`` records, plugin_utils/cabling.py) says the port
  is cabled to another host of the run (a back-to-back cable: its ``switch`` is that host) whose port there grew too;
- the topology's switch port: where the topology knows the switch port the port is cabled to, the errors are that
  cable's - for receive errors; a flap needs partner evidence (a host's own NIC reset or driver reload takes its
  link down just as a bad cable does).

The growth is the HOST's own (its NIC, firmware, PCIe or power), and its port record keeps counting toward it, when:
its link counters grew on WITNESSES (2) or more of its ports - several links agreeing implicate their common end, as
attribution's node rule - or attribution judges it a suspect node on the port's rail, or nothing names a link (no
partner evidence, no known switch port; a flap with no partner evidence).

Records added (tool ``fleet-analysis``, version ``port_counters``): ``rdma.port_counters.link``, ``warn``, on both
ends of each slow pair of a port charged to its link (``peer`` the other end), on both ends of a back-to-back cable,
or on the port's host alone naming the switch port. ``facts``: ``attribution: link``, ``measured_check``
(``rdma.port_counters``: the measured check whose records it judges, as attribution's records carry it), ``ports``
({host: port} of the port records this link explains: those count toward no host, verdict.host_records), ``link``
(the two hosts, or the host and its switch), ``port``, ``grown`` ({counter: growth}), ``flapped``, ``switch``,
``switch_port``, ``pair_check`` (the slow pairs' check, else null), ``slow_peers``. Findings: ``{"kind": "link",
"check": "rdma.port_counters", ...}`` for each link, ``{"kind": "node", ...}`` for a host whose growth is its own
(``evidence.text`` says why). Controller-only.
"""

from __future__ import annotations

from ansible_collections.aifabric.acceptance.plugins.module_utils import thresholds
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import analysis_records, attribution, cabling

NAME = "port_counters"
CHECK = "rdma.port_counters"
LINK_CHECK = CHECK + ".link"
GROWTH = "_growth"
# verdicts of attribution under which a host's low pairs are its own (or its group's), not a link's
NOT_A_LINK = ("node", "error", "suspect", "group")


def grown(record):
    """{counter: growth} of the judged LINK error counters (thresholds.PORT_COUNTER_RULES ``fault: link``) of an
    after record that grew, or {}."""
    metrics = record.get("metrics") or {}
    out = {}
    for key, value in metrics.items():
        name = key[:-len(GROWTH)] if key.endswith(GROWTH) else None
        rule = thresholds.PORT_COUNTER_RULES.get(name)
        if rule and rule.get("fault") == "link" and isinstance(value, (int, float)) and value > 0:
            out[name] = value
    return out


def erroring_ports(records):
    """[(host, device, port key, record, grown)] of the after records whose link error counters grew."""
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
    """[(check, peer, value, median)] of the host's low pairs on ``device``'s rail that attribution charges to a link
    (``judged``: :func:`matrices`): neither end is a suspect node nor in a group."""
    out = []
    for m in judged.get(device, []):
        if m.verdict(host) in NOT_A_LINK:
            continue
        for pair, _confirmed in m.links:
            if host in pair:
                peer = next(iter(pair - {host}))
                if m.verdict(peer) not in NOT_A_LINK:
                    out.append((m.check, peer, m.edges[pair], m.median))
    return out


def node_on_rail(judged, host, device):
    """The pairwise check of ``device``'s rail on which attribution judges ``host`` a suspect node, else None."""
    for m in judged.get(device, []):
        if host in m.incident and m.verdict(host) in ("node", "error", "suspect"):
            return m.check
    return None


def _counters_text(found):
    return ", ".join("%s +%s" % (name, found[name]) for name in sorted(found))


def _cable_end(place, erroring_by_host):
    """(host, port key) of the other end of a back-to-back cable that grew too, else None: the topology names another
    host of the run as the port's neighbour, and that host's erroring port is the one the cable ends on."""
    if place is None or place.switch not in erroring_by_host:
        return None
    for _h, device, key, record, _found in erroring_by_host[place.switch]:
        netdev = (record.get("facts") or {}).get("netdev")
        if place.switch_port in (device, netdev, key) or place.switch_port is None:
            return place.switch, key
    return None


def _own_reason(host, device, key, found, ports_of_host, node_check):
    """Why the growth of a port is its host's own, or None when it is not (a link may explain it)."""
    if len(ports_of_host) >= attribution.WITNESSES:
        return ("%s's link error counters grew on %d of its ports (%s) during the window: several links agree, so "
                "the common end - the host, its NIC, firmware or PCIe - is the suspect, not %d cables" % (
                    host, len(ports_of_host), ", ".join(sorted(ports_of_host)), len(ports_of_host)))
    if node_check:
        return ("%s's port %s grew %s and attribution judges %s a suspect node on %s (%s): no link explains it - but "
                "every pair of that rail goes through this port's one cable, so its cable, transceivers and switch port "
                "are as much suspects as the NIC: check them before returning the node" % (
                    host, key, _counters_text(found), host, device, node_check))
    return None


def _port_facts(key, record, found, place):
    return {"attribution": "link", "measured_check": CHECK, "port": key, "grown": found,
            "flapped": bool((record.get("facts") or {}).get("flapped")),
            "switch": place.switch if place else None, "switch_port": place.switch_port if place else None}


def _pair_links(host, device, key, found, facts, slow, cabled):
    """(records, findings) of a port charged to its slow pairs' links."""
    new, findings = [], []
    for check, peer, value, median in slow:
        how = "measured nothing" if value is None else "%s against a fleet median of %s" % (round(value, 2), round(median, 2))
        reason = ("link %s %s <-> %s: %s's port %s%s grew %s during the window and the pair is slow on %s (%s): the "
                  "link (cable, transceiver or switch port), not the node" % (
                      host, device, peer, host, key, cabled, _counters_text(found), check, how))
        link_facts = dict(facts, link=sorted([host, peer]), ports={host: key}, pair_check=check,
                          slow_peers=[p for _c, p, _v, _m in slow])
        for end, other in ((host, peer), (peer, host)):
            new.append(analysis_records.record(NAME, LINK_CHECK, "warn", end, peer=other, reason=reason, target=device,
                                               facts=link_facts))
        findings.append(analysis_records.finding("link", CHECK, [host, peer], target=device, evidence=dict(link_facts, text=reason)))
    return new, findings


def _judge_port(port, judged, where, erroring_by_host):
    """(new records, findings) of one erroring port: its link, or why the growth is its host's own."""
    host, device, key, record, found = port
    place = cabling.placement(where.get(host), device) if where.get(host) else None
    facts = _port_facts(key, record, found, place)
    mine = _own_reason(host, device, key, found, [k for _h, _d, k, _r, _f in erroring_by_host[host]],
                       node_on_rail(judged, host, device))
    if mine:
        return [], [analysis_records.finding("node", CHECK, [host], target=device, evidence=dict(facts, attribution="node", text=mine))]
    cabled = " (cabled to %s port %s)" % (place.switch, place.switch_port) if place else ""
    slow = slow_pairs(judged, host, device)
    if slow:
        return _pair_links(host, device, key, found, facts, slow, cabled)
    end = _cable_end(place, erroring_by_host)
    if end is not None:
        reason = ("link %s %s <-> %s %s: both ends of the cable grew during the window (%s: %s): the cable or its "
                  "transceivers, not either node" % (host, key, end[0], end[1], host, _counters_text(found)))
        link_facts = dict(facts, link=sorted([host, end[0]]), ports={host: key, end[0]: end[1]}, pair_check=None,
                          slow_peers=[])
        new = [analysis_records.record(NAME, LINK_CHECK, "warn", a, peer=b, reason=reason, target=device, facts=link_facts)
               for a, b in ((host, end[0]), (end[0], host))]
        return new, [analysis_records.finding("link", CHECK, [host, end[0]], target=device, evidence=dict(link_facts, text=reason))]
    if place and not facts["flapped"]:
        reason = ("%s's port %s grew %s during the window; it is cabled to %s port %s: that link (cable, transceiver or "
                  "switch port), not the node (no pair of the %s rail was slow)" % (
                      host, key, _counters_text(found), place.switch, place.switch_port, device))
        link_facts = dict(facts, link=[host, place.switch], ports={host: key}, pair_check=None, slow_peers=[])
        return ([analysis_records.record(NAME, LINK_CHECK, "warn", host, reason=reason, target=device, facts=link_facts)],
                [analysis_records.finding("link", CHECK, [host], target=device, evidence=dict(link_facts, text=reason))])
    why = ("%s's port %s %s during the window and nothing names a link: no slow pair on %s, no other end of its cable "
           "that grew%s: the port's own record is the host's" % (
               host, key, "went down (a flap)" if facts["flapped"] else "grew %s" % _counters_text(found), device,
               ", and a flap needs such partner evidence (a NIC reset takes the link down too)%s" % cabled
               if facts["flapped"] else ", no known switch port"))
    return [], [analysis_records.finding("node", CHECK, [host], target=device, evidence=dict(facts, attribution="node", text=why))]


def analyze(records, config):
    """The link, or the host, of every port whose link error counters grew (see the module docstring).
    (new_records, findings)."""
    erroring = erroring_ports(records)
    if not erroring:
        return [], []
    where, judged = cabling.read(records), matrices(records, config)
    by_host = {}
    for port in erroring:
        by_host.setdefault(port[0], []).append(port)
    new_records, findings = [], []
    for port in erroring:
        new, found_here = _judge_port(port, judged, where, by_host)
        new_records.extend(new)
        findings.extend(found_here)
    return _merged(new_records, findings)


def _merged(new_records, findings):
    """One link record per end and one finding per link: both ends of one slow pair or cable that grew give the same
    link twice, its ``ports`` and ``grown`` joined."""
    records_by, findings_by = {}, {}
    for rec in new_records:
        key = (rec["host"], rec["peer"], rec["target"], rec["facts"].get("pair_check"))
        if key in records_by:
            _join(records_by[key]["facts"], rec["facts"])
        else:
            rec["facts"] = _copied(rec["facts"])
            records_by[key] = rec
    for item in findings:
        key = (item["kind"], tuple(item["hosts"]), item["target"], item["evidence"].get("pair_check"))
        if key in findings_by:
            _join(findings_by[key]["evidence"], item["evidence"])
        else:
            item["evidence"] = _copied(item["evidence"])
            findings_by[key] = item
    return list(records_by.values()), list(findings_by.values())


def _copied(facts):
    return dict(facts, ports=dict(facts.get("ports") or {}), grown=dict(facts.get("grown") or {}))


def _join(into, other):
    into["ports"].update(other.get("ports") or {})
    for name, value in (other.get("grown") or {}).items():
        into["grown"][name] = max(value, into["grown"].get(name, 0))
    into["flapped"] = bool(into.get("flapped") or other.get("flapped"))


def explained_ports(records):
    """{(host, port key)} of the ``rdma.port_counters`` records a link explains: named in ``facts.ports`` of this
    analysis's link records (``facts.measured_check`` the port check). They count toward no host
    (verdict.host_records): the link records carry the verdicts."""
    out = set()
    for rec in analysis_records.added(records):
        tool = rec.get("tool") if isinstance(rec, dict) else None
        if not (isinstance(tool, dict) and tool.get("version") == NAME and analysis_records.is_analysis_record(rec)):
            continue
        facts = rec.get("facts") or {}
        if facts.get("measured_check") == CHECK and facts.get("attribution") == "link" and isinstance(facts.get("ports"), dict):
            out.update((host, port) for host, port in facts["ports"].items())
    return out
