# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Host verdicts of the collective group-testing screen (issue 25 item 1; an analysis of ``analyses.ANALYSES``).

A screen test (``playbooks/nccl_screen.yml``: one multi-node ``nccl.<collective>`` run per group, launched from the
group's first host) measures a GROUP: its record is the launcher's, but a failing group does not say which of its
hosts is bad, and a passing one clears all of them. The records carry their test in ``params.env`` (the
``AIFABRIC_SCREEN`` marker, group_screen.screen_of). This analysis replays the screen's outcomes through the
planner's own rules (group_screen.state) and gives, per check, one ``<check>.screen`` record to every host the screen
tested:

- ``fail``: a confirmed bad node - a failing test whose other hosts are all known good (it names that test, the
  tests it failed, and the known-good hosts it failed with) - and one ``node`` finding with the same evidence;
- ``pass``: known good - a host of a passing test (it names the first one);
- ``warn``: unresolved, with why - a host of failing tests that no later test cleared or confirmed (the rounds
  ran out, or no known-good host was left to confirm it against);
- ``skip``: every test it was in gave no outcome (skipped).

``verdict.host_records`` then counts the screen's measured records toward no host (as it does for the pairwise
records of a matrix the attribution analysis judged), so a failing group fails neither its launcher nor its other
hosts: the ``.screen`` records carry the host verdicts. Controller-only (plugin_utils), no Ansible imports.
"""

from __future__ import annotations

from ansible_collections.aifabric.acceptance.plugins.plugin_utils import analysis, group_screen

NAME = "screen"
SUFFIX = ".screen"
MAX_EVIDENCE = 8


def _tests(records):
    """{check: [test]} of the screen's measured records; a test: {round, purpose, hosts, launcher, status, reason}."""
    out = {}
    for rec in records:
        test = group_screen.screen_of(rec) if group_screen.is_screen_record(rec) else None
        if test is None or not isinstance(rec.get("check"), str):
            continue
        out.setdefault(rec["check"], []).append(dict(test, launcher=rec.get("host"), status=rec.get("status"),
                                                     reason=rec.get("reason")))
    return out


def _label(test):
    return "round %d %s of %s (%s)" % (test["round"], test["purpose"], ", ".join(test["hosts"]), test["status"])


def _evidence(test):
    return dict((k, test.get(k)) for k in ("round", "purpose", "hosts", "launcher", "status", "reason")
                if test.get(k) is not None)


def _bad_host(check, host, tests, good):
    """The fail record and the node finding of a confirmed bad host."""
    failed = [t for t in tests if group_screen.OUTCOME.get(t["status"]) is False and host in t["hosts"]]
    confirming = [t for t in failed if set(t["hosts"]) - good == {host}]
    proof = sorted(confirming or failed, key=lambda t: (len(t["hosts"]), t["round"]))[0]   # the most direct one
    with_good = sorted(set(proof["hosts"]) - {host})
    reason = ("confirmed bad node: %s failed with known-good %s; in %d failing test(s)"
              % (_label(proof), ", ".join(with_good), len(failed)))
    evidence = {"confirmed_by": _evidence(proof), "known_good_with": with_good,
                "failed_tests": [_evidence(t) for t in failed[:MAX_EVIDENCE]]}
    rec = analysis.record(NAME, check + SUFFIX, "fail", host, reason=reason,
                          facts=dict(evidence, measured_check=check))
    return rec, analysis.finding("node", check, [host], evidence=evidence)


def _switch_unknown(host, failed, good):
    """The warn reason of a host without a topology group in a screen that has one, left unresolved: its failing
    tests with known-good hosts only could have crossed an uplink (group_screen._conclusive)."""
    across = [t for t in failed if set(t["hosts"]) - good == {host}] or failed
    return ("unresolved: its switch is not known (no topology group: its net.topology record was skip or error, or "
            "no fabric port is known), so no test of it is known to stay inside its switch - it failed %d test(s) "
            "with known-good hosts only (%s), which a slow uplink would explain as well as a bad node; not failed"
            % (len(across), "; ".join(_label(t) for t in across[:3])))


def _other_host(check, host, tests, good, topology=None):
    """The pass, warn or skip record of a host the screen did not name bad."""
    mine = [t for t in tests if host in t["hosts"]]
    judged = [t for t in mine if group_screen.OUTCOME.get(t["status"]) is not None]
    if host in good:
        proof = [t for t in judged if group_screen.OUTCOME[t["status"]]][0]
        status, reason = "pass", "known good: in a passing group test, %s" % _label(proof)
    elif not judged:
        status, reason = "skip", "the screen's tests of this host gave no outcome: %s" % "; ".join(
            "%s: %s" % (_label(t), t.get("reason") or "skipped") for t in mine[:3])
    else:
        failed = [t for t in judged if not group_screen.OUTCOME[t["status"]]]
        status, reason = "warn", (_switch_unknown(host, failed, good) if topology and host not in topology else
                                  "unresolved: in %d failing group test(s) (%s) that no later test cleared or "
                                  "confirmed - the rounds ran out, or no known-good host was left to test it with"
                                  % (len(failed), "; ".join(_label(t) for t in failed[:3])))
    facts = {"measured_check": check, "tests": [_evidence(t) for t in mine[:MAX_EVIDENCE]]}
    return analysis.record(NAME, check + SUFFIX, status, host, reason=reason, facts=facts)


def _topology(tests):
    """{host: topology group} the screen's markers name (empty when the screen had no topology)."""
    out = {}
    for test in tests:
        out.update(test.get("groups") or {})
    return out


def _slow_groups(check, hosts, tests, outcomes, topology):
    """{host: reason} of the hosts of each topology group confirmed slow to the rest, and one ``group`` finding per
    group (in the shape of attribution's: its hosts, the switch, the failing span tests)."""
    slow, _unresolved = group_screen.group_verdicts(hosts, outcomes, topology)
    reasons, findings = {}, []
    for group in slow:
        members = sorted(h for h in hosts if topology.get(h) == group)
        failed = [t for t in tests if t["purpose"] == "span" and group_screen.OUTCOME.get(t["status"]) is False
                  and group in t["groups"].values()]
        passed = [t for t in tests if t["purpose"] == "span" and group_screen.OUTCOME.get(t["status"])]
        text = ("%s is slow to the rest: its hosts pass with each other, and %d test(s) across it with known-good "
                "hosts of other groups failed (%s) - a switch or uplink suspect, not %d bad nodes"
                % (group, len(failed), "; ".join(_label(t) for t in failed[:3]), len(members)))
        evidence = {"switches": [group], "text": text, "failed_tests": [_evidence(t) for t in failed[:MAX_EVIDENCE]],
                    "passed_span_tests": len(passed)}
        findings.append(analysis.finding("group", check, members, evidence=evidence))
        reasons.update((h, text) for h in members)
    return reasons, findings


def _check_output(check, tests):
    """The records and findings of one check's screen."""
    hosts = []
    for test in tests:
        hosts.extend(h for h in test["hosts"] if h not in hosts)
    outcomes = [(t["hosts"], group_screen.OUTCOME[t["status"]]) for t in tests
                if group_screen.OUTCOME.get(t["status"]) is not None]
    topology = _topology(tests)
    good, bad, _pools, _unknown = group_screen.state(hosts, outcomes, topology or None)
    slow, findings = _slow_groups(check, hosts, tests, outcomes, topology) if topology else ({}, [])
    new = []
    for host in hosts:
        if host in bad:
            rec, found = _bad_host(check, host, tests, good)
            new.append(rec)
            findings.append(found)
        elif host in slow and host in good:
            new.append(analysis.record(NAME, check + SUFFIX, "warn", host, reason=slow[host], facts={
                "measured_check": check, "attribution": "group", "group": topology[host],
                "tests": [_evidence(t) for t in tests if host in t["hosts"]][:MAX_EVIDENCE]}))
        else:
            new.append(_other_host(check, host, tests, good, topology))
    return new, findings


def analyze(records, config=None):  # pylint: disable=unused-argument
    """One ``<check>.screen`` record per host the screen tested, one ``node`` finding per confirmed bad host, one
    ``group`` finding per topology group confirmed slow to the rest (its hosts warn)."""
    new, findings = [], []
    for check, tests in sorted(_tests(records).items()):
        more, found = _check_output(check, tests)
        new.extend(more)
        findings.extend(found)
    return new, findings


def judged_checks(records):
    """The checks whose screen records this analysis gave host verdicts for (verdict.host_records)."""
    out = set()
    for rec in records:
        tool = rec.get("tool") if isinstance(rec, dict) else None
        if analysis.is_analysis_record(rec) and tool.get("version") == NAME:
            measured = (rec.get("facts") or {}).get("measured_check")
            if measured:
                out.add(measured)
    return out
