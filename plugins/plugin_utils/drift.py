# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fleet drift: hosts whose software/firmware versions differ from the rest of the fleet.

For every version-like fact (``driver_version``, ``cuda_version``, ``nccl_version``,
``env.package`` ``version`` per package, firmware ``fw_ver``, environment variables, ...)
the values of all hosts are grouped per *subject* ``(check, target, fact)``:

- the fleet value is the most common value; every host with another value gets a
  ``warn`` record (``<check>.drift``);
- when the user pins a value (config ``drift_pins: {fact_or_subject: value}``) every
  host with another value gets a ``fail`` record, whatever the majority says;
- when the most common value is shared by several groups (a tie: no majority), every
  host of the tied groups gets a ``warn`` record naming the groups.

One record per (host, check, target) lists every drifting fact of it. One finding
(kind ``drift``) per subject names the deviating hosts and the groups.

Controller-only (plugin_utils), no Ansible types.
"""

from __future__ import annotations

import collections
import functools
import json
import re

from ansible_collections.aifabric.acceptance.plugins.plugin_utils import analysis_records

NAME = "drift"
# Facts compared by default (regular expressions on the fact name).
DEFAULT_FACTS = (
    r"(^|_)versions?$",    # version, driver_version, cuda_version, nccl_version, vbios_version, fw_versions
    r"(^|_)ver$",          # fw_ver (sysfs name of HCA firmware)
    r"^firmware",          # firmware, firmware_version
    r"^[A-Z][A-Z0-9_]*$",  # environment variables (NCCL_*, UCX_*, CUDA_*) reported as facts
)
# Checks whose `value` fact is an environment variable's value (target = variable name),
# and facts that map environment variable names to values (env.env_vars: {env: {NAME: value}}).
ENV_CHECK_RE = re.compile(r"env_?var|environ")
ENV_FACTS = ("env", "environment")
UNSET = "(unset)"
MAX_NAMES = 5          # host names quoted in one reason
MAX_GROUP_HOSTS = 50   # host names kept per group in a finding's evidence


def subject_name(check, target, fact):
    """How a subject is named in reasons, findings and pins: ``check[target].fact``."""
    if target:
        return "%s[%s].%s" % (check, target, fact)
    return "%s.%s" % (check, fact)


def _canon(value):
    """Comparable text of a fact value (lists/dicts as sorted JSON)."""
    if isinstance(value, (list, dict)):
        return json.dumps(value, sort_keys=True)
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value).strip()


def _fact_matcher(config):
    patterns = config.get("drift_facts")
    if patterns is None:
        patterns = DEFAULT_FACTS
    compiled = [re.compile(p) for p in patterns]
    seen = {}       # (check, fact) -> answer: a fleet repeats the same few names on every host

    def matches(check, fact):
        key = (check, fact)
        got = seen.get(key)
        if got is None:
            if fact == "value" and ENV_CHECK_RE.search(check):
                got = True
            else:
                got = any(p.search(fact) for p in compiled)
            seen[key] = got
        return got
    return matches


def _names(hosts):
    hosts = sorted(hosts)
    text = ", ".join(hosts[:MAX_NAMES])
    if len(hosts) > MAX_NAMES:
        text += " and %d more" % (len(hosts) - MAX_NAMES)
    return text


@functools.lru_cache(maxsize=1024)
def _env_check(check):
    """Whether a check reports environment variables (a pure function of the check name: memoised, bounded)."""
    return bool(ENV_CHECK_RE.search(check))


def _collect(records, matches):
    """subject -> {host: canonical value} (the last value a host reported wins).

    A mapping-valued fact that is compared (``fw_versions: {mlx5_0: ...}``, or the ``env``
    mapping of ``env.env_vars``) becomes one subject per key (``fw_versions.mlx5_0``).
    For environment variables, a host that reported the mapping without the variable
    counts as ``(unset)``: a variable set on some hosts only is drift too.
    """
    subjects = {}
    env_hosts = {}      # (check, target, fact) -> hosts that reported that env mapping
    for rec in analysis_records.measured(records):
        host = rec.get("host")
        facts = rec.get("facts") or {}
        if not host or not isinstance(facts, dict):
            continue
        check, target = rec["check"], rec.get("target")
        env_check = _env_check(check)       # (once a record, not once a fact)
        for fact, value in facts.items():
            if value is None or value == "":
                continue
            is_env = env_check or fact in ENV_FACTS
            if isinstance(value, dict) and (is_env or matches(check, fact)):
                if is_env:
                    env_hosts.setdefault((check, target, fact), set()).add(host)
                for key, item in value.items():
                    if item is not None:
                        subjects.setdefault((check, target, "%s.%s" % (fact, key)), {})[host] = _canon(item)
            elif matches(check, fact):
                subjects.setdefault((check, target, fact), {})[host] = _canon(value)
    for (check, target, fact), hosts in env_hosts.items():
        prefix = fact + "."
        for (s_check, s_target, s_fact), by_host in subjects.items():
            if s_check == check and s_target == target and s_fact.startswith(prefix):
                for host in hosts:
                    by_host.setdefault(host, UNSET)
    return subjects


def _pin_for(pins, check, target, fact):
    name = subject_name(check, target, fact)
    if name in pins:
        return name, _canon(pins[name])
    if fact in pins:
        return fact, _canon(pins[fact])
    return None, None


Decision = collections.namedtuple("Decision", "expected source status deviating groups")


def _groups(by_host):
    """value -> hosts that reported it."""
    groups = {}
    for host, value in by_host.items():
        groups.setdefault(value, []).append(host)
    return groups


def _ranked(groups):
    """(value, hosts) of the groups, the largest first (ties by value)."""
    return sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0]))


def decide(by_host, pinned=None, pin_key=None):
    """The decision over one subject ({host: value}; pure): a :class:`Decision` (``expected`` None for a tie),
    or None when nothing is judged (fewer than two hosts or one value, and no pin)."""
    groups = _groups(by_host)
    if pinned is not None:
        deviating = [h for v, hs in groups.items() if v != pinned for h in hs]
        return Decision(pinned, "drift_pins %s" % pin_key, "fail", deviating, groups)
    if len(by_host) < 2 or len(groups) < 2:
        return None
    ranked = _ranked(groups)
    top = len(ranked[0][1])
    tied = [v for v, hs in ranked if len(hs) == top]
    if len(tied) > 1:
        return Decision(None, "no fleet majority", "warn", [h for v in tied for h in groups[v]], groups)
    expected = ranked[0][0]
    return Decision(expected, "fleet majority", "warn", [h for v, hs in groups.items() if v != expected for h in hs],
                    groups)


def _tie_reason(name, decision):
    return "%s: no fleet majority: %s" % (name, "; ".join(
        "%r on %d host%s (%s)" % (v, len(hs), "" if len(hs) == 1 else "s", _names(hs))
        for v, hs in _ranked(decision.groups)))


def _reason(name, value, decision, hosts_compared, pinned):
    """Why one host's value of a subject drifts (a tie: :func:`_tie_reason`)."""
    if pinned is not None:
        return "%s is %r, pinned to %r (%s)" % (name, value, decision.expected, decision.source)
    return "%s is %r, fleet majority is %r (%d of %d hosts)" % (
        name, value, decision.expected, len(decision.groups[decision.expected]), hosts_compared)


def _finding(check, target, fact, decision):
    groups = decision.groups
    return analysis_records.finding(
        "drift", check, decision.deviating, target=target,
        evidence={
            "subject": subject_name(check, target, fact), "fact": fact, "expected": decision.expected,
            "source": decision.source, "status": decision.status,
            "groups": dict((v, sorted(hs)[:MAX_GROUP_HOSTS]) for v, hs in groups.items()),
            "group_sizes": dict((v, len(hs)) for v, hs in groups.items()),
        })


def _host_records(flagged):
    """One ``<check>.drift`` record per (host, check, target), listing every drifting fact of it."""
    new_records = []
    for (host, check, target), items in sorted(flagged.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2] or "")):
        status = "fail" if any(i[0] == "fail" for i in items) else "warn"
        expect = {}
        for _status, _reason, fact, detail in items:
            if detail["expected"] is not None:
                expect[fact] = {"equals": detail["expected"], "source": detail["source"]}
        new_records.append(analysis_records.record(
            NAME, check + ".drift", status, host, target=target,
            reason="; ".join(i[1] for i in items),
            facts=dict((i[2], i[3]) for i in items),
            expect=expect))
    return new_records


def analyze(records, config):
    """The drift analysis (see the module docstring). Returns (new_records, findings)."""
    pins = config.get("drift_pins") or {}
    # (host, check, target) -> list of (status, reason, fact, detail)
    flagged = {}
    findings = []
    for (check, target, fact), by_host in sorted(_collect(records, _fact_matcher(config)).items(),
                                                 key=lambda kv: (kv[0][0], kv[0][1] or "", kv[0][2])):
        pin_key, pinned = _pin_for(pins, check, target, fact)
        decision = decide(by_host, pinned, pin_key)
        if decision is None or not decision.deviating:
            continue
        name, expected = subject_name(check, target, fact), decision.expected
        tie_reason = _tie_reason(name, decision) if expected is None else None
        for host in decision.deviating:
            detail = {"value": by_host[host], "expected": expected, "source": decision.source,
                      "hosts_compared": len(by_host),
                      "hosts_agreeing": len(decision.groups.get(expected, [])) if expected is not None else None}
            reason = tie_reason or _reason(name, by_host[host], decision, len(by_host), pinned)
            flagged.setdefault((host, check, target), []).append((decision.status, reason, fact, detail))
        findings.append(_finding(check, target, fact, decision))
    return _host_records(flagged), findings
