# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fabric port counters over a run window: ``OPTIONS``, ``snapshot(host, params)``, ``judge(before, after, params)``,
``records(host, params)`` (see tools/__init__.py).

Every RDMA port's counters are read twice, before and after a stage (the RDMA sweep, a soak: any stage is wrapped
the same way): ``phase: before`` gives one ``rdma.port_counters`` record per host holding the snapshot in
``facts.snapshot``; ``phase: after`` takes that record (or its snapshot) as ``before``, reads again and gives one
``rdma.port_counters`` record per port, judged on the growth of its error counters during the window
(thresholds.PORT_COUNTER_RULES; a counter stuck at its largest value, PORT_COUNTER_BITS, cannot show growth).
What is read: /sys/class/infiniband/<dev>/ports/<port>/{counters,hw_counters}/* and, for a port with a network
interface (RoCE, IPoIB), ``ethtool -S <netdev>`` (PFC pause, discards, CRC and link-down counters).
``host`` is a probe_host.Host (its root reads sysfs, its ``run`` runs ethtool with a timeout): the port_counters
module's over SSH, a pod's own in Kubernetes (k8s_entry ``adapter``), so both give the same records.
Runs on the targets: Python 3.8+, no Ansible imports.
"""

from __future__ import annotations

import time

from ansible_collections.aifabric.acceptance.plugins.module_utils import results, thresholds
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import ToolTimeout
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import port_counters as parser

CHECK = "rdma.port_counters"
# its names (docs/architecture.md's table of tools) and what the contract checks (tools/__init__.py)
TOOL = "port_counters"
CHECKS = "rdma"
MODULE = "port_counters"
KUBERNETES = ("port_counters",)
# how it runs and what its records come from
NO_ARGV = "reads sysfs files; its one command, ethtool -S <the port's netdev>, takes no option"
PARSERS = ("port_counters",)
NO_IMPORT = ("a window is two live readings of the host's counters (the before record carries its snapshot to the "
             "after phase); no tool writes an output to import")
GOLDEN = ("port-counters-window",)
IB_CLASS = "/sys/class/infiniband"
GROUPS = ("counters", "hw_counters")
OPTIONS = dict(
    phase=dict(type="str", choices=["before", "after"], default="before"),
    before=dict(type="raw"),
    stage=dict(type="str", default="rdma"),
    ethtool=dict(type="bool", default=True),
    timeout_s=dict(type="int", default=10),
)


def _netdevs(host, dev):
    return host.listdir("%s/%s/device/net" % (IB_CLASS, dev)) or []


def _read_group(host, base, group, port):
    for name in host.listdir("%s/%s" % (base, group)) or []:
        value, why = parser.parse_value(host.read("%s/%s/%s" % (base, group, name)))
        if why:
            port["unread"]["%s/%s" % (group, name)] = why
        else:
            port[group][name] = value


def _ethtool(host, tool, netdev, timeout_s, port):
    try:
        run = host.run([tool, "-S", netdev], timeout_s)
    except ToolTimeout as exc:
        port["unread"]["ethtool"] = "ethtool -S %s ran past %d s: %s" % (netdev, timeout_s, exc)
        return
    parsed = parser.parse_ethtool_stats(run.stdout)
    if run.rc != 0:
        said = (run.output or "").strip().splitlines()[-1:] or [""]
        port["unread"]["ethtool"] = "ethtool -S %s exited %s: %s" % (netdev, run.rc, said[0][:200])
        return
    if parsed["error"]:
        port["unread"]["ethtool"] = "ethtool -S %s: %s" % (netdev, parsed["error"])
        return
    port["ethtool"] = parsed["counters"]


def snapshot(host, params):
    """{"taken", "epoch_s", "ports": {"<dev>/<port>": {device, port, link_layer, netdev, counters, hw_counters,
    ethtool, unread}}}, or None when the host has no /sys/class/infiniband."""
    devices = host.listdir(IB_CLASS)
    if devices is None:
        return None
    tool = host.which("ethtool") if params.get("ethtool", True) else None
    snap = {"taken": results.utc_now(), "epoch_s": round(time.time(), 3), "ports": {}, "ethtool": bool(tool)}
    for dev in devices:
        netdevs = _netdevs(host, dev)
        for number in host.listdir("%s/%s/ports" % (IB_CLASS, dev)) or []:
            base = "%s/%s/ports/%s" % (IB_CLASS, dev, number)
            layer = (host.read(base + "/link_layer") or "").strip() or None
            port = {"device": dev, "port": number, "link_layer": layer, "netdev": netdevs[0] if netdevs else None,
                    "counters": {}, "hw_counters": {}, "ethtool": {}, "unread": {}}
            for group in GROUPS:
                _read_group(host, base, group, port)
            if tool and port["netdev"]:
                _ethtool(host, tool, port["netdev"], int(params.get("timeout_s") or 10), port)
            snap["ports"]["%s/%s" % (dev, number)] = port
    return snap


def before_snapshot(value):
    """The snapshot a ``before`` option holds: a snapshot, a before record, or a list of records (the before run's
    ``results``, the first record with a snapshot); None when there is none."""
    if isinstance(value, list):
        for item in value:
            found = before_snapshot(item)
            if found:
                return found
        return None
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("ports"), dict):
        return value
    if isinstance(value.get("results"), list):
        return before_snapshot(value["results"])
    facts = value.get("facts")
    if isinstance(facts, dict) and isinstance(facts.get("snapshot"), dict):
        return before_snapshot(facts["snapshot"])
    return None


def _growth(name, group, old, new, window_h, judged):
    """One counter's judgement: (status, text) or None for no finding; its growth goes into ``judged``."""
    rule = thresholds.PORT_COUNTER_RULES.get(name)
    if rule is None or rule["group"] != group or name not in old or name not in new:
        return None
    grown = new[name] - old[name]
    bits = thresholds.PORT_COUNTER_BITS.get(name) if group == "counters" else None
    if bits and old[name] >= (1 << bits) - 1:
        judged[name] = None
        return "warn", "%s is stuck at its largest value %d (%d bits) and cannot show growth: clear the port's " \
                       "counters (perfquery -R)" % (name, old[name], bits)
    if grown < 0:
        judged[name] = None
        return "warn", "%s went from %d to %d: the counters were cleared during the window" % (name, old[name], new[name])
    judged[name] = grown
    per_hour = " (%.1f per hour)" % (grown / window_h) if window_h > 0 else ""
    if rule["fail_above"] is not None and grown > rule["fail_above"]:
        what = "the link went down %d time(s) during the window (a flap)" % grown if rule.get("flap") else \
            "%s grew by %d%s, above %d" % (name, grown, per_hour, rule["fail_above"])
        return "fail", "%s: %s" % (name, what) if rule.get("flap") else what
    if rule["warn_above"] is not None and grown > rule["warn_above"]:
        return "warn", "%s grew by %d%s" % (name, grown, per_hour)
    return None


def changed(old, new):
    """{group: {counter: growth}} of every counter read both times whose value changed (judged or not: the traffic,
    congestion and pause counters are kept with their growth; a negative growth is a counter cleared or wrapped)."""
    out = {}
    for group in GROUPS + ("ethtool",):
        before, after = old.get(group) or {}, new.get(group) or {}
        moved = dict((name, after[name] - before[name]) for name in sorted(after)
                     if isinstance(before.get(name), int) and isinstance(after[name], int) and after[name] != before[name])
        if moved:
            out[group] = moved
    return out


def judge_port(key, old, new, window_h, common):
    """The record of one port from its before and after readings."""
    judged, findings = {}, []
    for group in GROUPS + ("ethtool",):
        for name in sorted(new.get(group) or {}):
            found = _growth(name, group, old.get(group) or {}, new[group], window_h, judged)
            if found:
                findings.append(found)
    status = results.worst([s for s, _t in findings]) if findings else "pass"
    metrics = dict(("%s_growth" % name, value) for name, value in judged.items() if value is not None)
    metrics["window_s"] = round(window_h * 3600, 3)
    rules = thresholds.PORT_COUNTER_RULES
    expect = dict(("%s_growth" % name, {"max": rules[name]["fail_above"], "source": rules[name]["source"]})
                  for name in judged if rules[name]["fail_above"] is not None)
    facts = {"device": new["device"], "port": new["port"], "link_layer": new["link_layer"], "netdev": new["netdev"],
             "flapped": any(thresholds.PORT_COUNTER_RULES[n].get("flap") and judged.get(n) for n in judged),
             "unread": new.get("unread") or {},
             "after": dict((g, new.get(g) or {}) for g in GROUPS + ("ethtool",)), "growth": changed(old, new)}
    reason = "; ".join(text for _s, text in findings) or None
    return results.make(CHECK, status, reason=reason, target=key, metrics=metrics, expect=expect, facts=facts,
                        **common)


def judge(before, after, params, started=None):
    """The per-port records of a window: ``before`` and ``after`` snapshots (see ``snapshot``)."""
    started = started or results.utc_now()
    window_h = max(0.0, float(after["epoch_s"]) - float(before["epoch_s"])) / 3600.0
    common = dict(started=started, params={"phase": "after", "stage": params.get("stage"), "window_began": before["taken"],
                                           "window_ended": after["taken"]}, tool={"name": TOOL})
    out = []
    for key in sorted(after["ports"]):
        new, old = after["ports"][key], (before.get("ports") or {}).get(key)
        if not isinstance(old, dict):
            out.append(results.make(CHECK, "warn", reason="port %s was not read before the %s stage: its growth is "
                                    "unknown" % (key, params.get("stage")), target=key, **common))
            continue
        out.append(judge_port(key, old, new, window_h, common))
    for key in sorted(set(before.get("ports") or {}) - set(after["ports"])):
        out.append(results.make(CHECK, "fail", reason="port %s was there before the %s stage and is gone after it"
                                % (key, params.get("stage")), target=key, **common))
    # one window: a counter's growth is what the hardware counted during it, not a sample to repeat
    return results.rests_on(out, 1)


def records(host, params, started=None):
    """``phase: before``: one record holding the snapshot; ``phase: after``: the judged records of each port."""
    started = started or results.utc_now()
    snap = snapshot(host, params)
    if snap is None:
        return [results.skip(CHECK, "no RDMA device: %s is absent" % IB_CLASS, started=started,
                             params={"phase": params.get("phase"), "stage": params.get("stage")})]
    if params.get("phase", "before") == "before":
        return [results.make(CHECK, "pass", reason="counters of %d port(s) read before the %s stage" % (
            len(snap["ports"]), params.get("stage")), metrics={"ports_count": len(snap["ports"])},
            facts={"snapshot": snap}, params={"phase": "before", "stage": params.get("stage")}, started=started,
            tool={"name": TOOL})]
    before = before_snapshot(params.get("before"))
    if before is None:
        return [results.error(CHECK, "phase after needs before: the before phase's record (or its results) of this "
                              "host", started=started, params={"phase": "after", "stage": params.get("stage")})]
    return judge(before, snap, params, started)
