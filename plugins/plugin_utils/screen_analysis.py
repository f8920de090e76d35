# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Host verdicts of the collective group-testing screen (issue 25 item 1; an analysis of ``analysis_pipeline.ANALYSES``).

A screen test (``playbooks/nccl_screen.yml``: one multi-node ``nccl.<collective>`` run per group, launched from the
group's first host) measures a GROUP: its record is the launcher's, but a failing group does not say which of its
hosts is bad, and a passing one clears all of them. The records carry their test in ``params.env`` (the
``AIFABRIC_SCREEN`` marker, group_screen.screen_of). This analysis replays the screen's outcomes through the
planner's own rules (group_screen.state) and gives, per check, one ``<check>.screen`` record to every host the screen
tested:

- ``fail``: a confirmed bad node - failing tests whose other hosts are all known good, as many as the screen's
  ``evidence`` with different partners (it names them, the tests it failed, and the known-good hosts it failed
  with) - and one ``node`` finding with the same evidence;
- ``pass``: known good - a host that passed ``evidence`` tests clear of the band (it names them);
- ``warn``: inconclusive (its confirmations disagree - both runs named - or stayed inside the band around the
  bound) or unresolved, with why - a host of failing tests that no later test cleared or confirmed (the rounds
  ran out, or no known-good host was left to confirm it against), or one that passed too few tests;
- ``skip``: every test it was in gave no outcome (skipped).

``verdict.host_records`` then counts the screen's measured records toward no host (as it does for the pairwise
records of a matrix the attribution analysis judged), so a failing group fails neither its launcher nor its other
hosts: the ``.screen`` records carry the host verdicts. Controller-only (plugin_utils), no Ansible imports.
"""

from __future__ import annotations

from ansible_collections.aifabric.acceptance.plugins.plugin_utils import analysis_records, group_screen

NAME = "screen"
SUFFIX = ".screen"
MAX_EVIDENCE = 8


def _tests(records):
    """{check: [test]} of the screen's measured records; a test: {round, purpose, hosts, launcher, status, reason,
    outcome (group_screen.outcome under its marker's margin_pct: True, False, None inside the band, "skip")}."""
    out = {}
    for rec in records:
        test = group_screen.screen_of(rec) if group_screen.is_screen_record(rec) else None
        if test is None or not isinstance(rec.get("check"), str):
            continue
        out.setdefault(rec["check"], []).append(dict(
            test, launcher=rec.get("host"), status=rec.get("status"), reason=rec.get("reason"),
            outcome=group_screen.outcome(rec, test["rules"]["margin_pct"])))
    return out


def _failed(test):
    return test["outcome"] is False


def _inside(test):
    return test["outcome"] is None


def _label(test):
    inside = ", inside the band" if test.get("outcome", True) is None else ""
    return "round %d %s of %s (%s%s)" % (test["round"], test["purpose"], ", ".join(test["hosts"]), test["status"], inside)


def _evidence(test):
    out = dict((k, test.get(k)) for k in ("round", "purpose", "hosts", "launcher", "status", "reason")
               if test.get(k) is not None)
    if test.get("outcome", True) is None:
        out["inside_band"] = True
    return out


def _bad_host(check, host, tests, confirmations):
    """The fail record and the node finding of a confirmed bad host: every failing confirmation it rests on
    (``confirmations``: those tests, group_screen.assess)."""
    failed = [t for t in tests if _failed(t) and host in t["hosts"]]
    confirming = list(confirmations)
    proofs = sorted(confirming or failed, key=lambda t: (t["round"], len(t["hosts"])))
    proof = proofs[0]
    with_good = sorted(set(h for t in confirming for h in t["hosts"]) - {host})
    reason = ("confirmed bad node: %s; it failed %d confirmation(s) with known-good %s, and %d failing test(s)"
              % ("; ".join(_label(t) for t in proofs[:3]), len(confirming), ", ".join(with_good), len(failed)))
    evidence = {"confirmed_by": _evidence(proof), "confirmations": [_evidence(t) for t in confirming[:MAX_EVIDENCE]],
                "known_good_with": with_good, "failed_tests": [_evidence(t) for t in failed[:MAX_EVIDENCE]]}
    rec = analysis_records.record(NAME, check + SUFFIX, "fail", host, reason=reason,
                                  facts=dict(evidence, measured_check=check))
    return rec, analysis_records.finding("node", check, [host], evidence=evidence)


def _switch_unknown(host, failed, good):
    """The warn reason of a host without a topology group in a screen that has one, left unresolved: its failing
    tests with known-good hosts only could have crossed an uplink (group_screen._conclusive)."""
    across = [t for t in failed if set(t["hosts"]) - good == {host}] or failed
    return ("unresolved: its switch is not known (no topology group: its net.topology record was skip or error, or "
            "no fabric port is known), so no test of it is known to stay inside its switch - it failed %d test(s) "
            "with known-good hosts only (%s), which a slow uplink would explain as well as a bad node; not failed"
            % (len(across), "; ".join(_label(t) for t in across[:3])))


def _doubt_reason(host, mine, why):
    """The warn reason of a host in doubt: its confirmations disagree, or one stayed inside the band."""
    judged = [t for t in mine if t["outcome"] is not True]
    if why == "band":
        inside = [t for t in mine if _inside(t)]
        return ("inconclusive: its confirmation's figure stayed inside the band around its bound in %d run(s) (%s) - "
                "believed neither way; not failed" % (len(inside), "; ".join(_label(t) for t in inside[:3])))
    passed = [t for t in mine if t["outcome"] is True]
    return ("inconclusive: its confirmations disagree - %s failed, then %s passed; not failed (one run is no verdict)"
            % ("; ".join(_label(t) for t in judged[-2:]), "; ".join(_label(t) for t in passed[-2:])))


def _open_reason(host, mine, seen, evidence, topology):
    """The warn reason of a host the screen left unresolved."""
    failed = [t for t in mine if _failed(t)]
    passed = [t for t in mine if t["outcome"] is True]
    if host in seen["suspects"]:
        return ("unresolved: failed %d confirmation(s) (%s) of the %d a bad node needs, and no other known-good host "
                "was left to confirm it with; not failed" % (
                    len([t for t in failed if set(t["hosts"]) - seen["good"] == {host}]),
                    "; ".join(_label(t) for t in failed[-2:]), evidence))
    if topology and host not in topology and failed:
        return _switch_unknown(host, failed, seen["good"])
    if passed and not failed:
        return ("unresolved: passed %d run(s) (%s) of the %d a known-good host needs; the rounds ran out before it was "
                "tested again" % (len(passed), "; ".join(_label(t) for t in passed[:3]), evidence))
    if not failed:
        return ("unresolved: its runs were inside the band around their bound (%s) - believed neither way"
                % "; ".join(_label(t) for t in mine[:3]))
    return ("unresolved: in %d failing group test(s) (%s) that no later test cleared or confirmed - the rounds ran "
            "out, or no known-good host was left to test it with" % (len(failed), "; ".join(_label(t) for t in failed[:3])))


def _other_host(check, host, tests, seen, evidence, topology=None):
    """The pass, warn or skip record of a host the screen did not name bad."""
    mine = [t for t in tests if host in t["hosts"]]
    judged = [t for t in mine if t["outcome"] != "skip"]
    if host in seen["good"]:
        proof = [t for t in judged if t["outcome"] is True]
        status, reason = "pass", "known good: passed %d group test(s), %s" % (
            len(proof), "; ".join(_label(t) for t in proof[:evidence]))
    elif not judged:
        status, reason = "skip", "the screen's tests of this host gave no outcome: %s" % "; ".join(
            "%s: %s" % (_label(t), t.get("reason") or "skipped") for t in mine[:3])
    elif host in seen["doubt"]:
        status, reason = "warn", _doubt_reason(host, judged, seen["doubt"][host])
    else:
        status, reason = "warn", _open_reason(host, judged, seen, evidence, topology)
    facts = {"measured_check": check, "tests": [_evidence(t) for t in mine[:MAX_EVIDENCE]]}
    if host in seen["doubt"]:
        facts["inconclusive"] = seen["doubt"][host]
    return analysis_records.record(NAME, check + SUFFIX, status, host, reason=reason, facts=facts)


def _topology(tests):
    """{host: topology group} the screen's markers name (empty when the screen had no topology)."""
    out = {}
    for test in tests:
        out.update(test.get("groups") or {})
    return out


def _slow_groups(check, hosts, tests, outcomes, topology, evidence):
    """{host: reason} of the hosts of each topology group confirmed slow to the rest, and one ``group`` finding per
    group (in the shape of attribution's: its hosts, the switch, the failing span tests)."""
    slow, _unresolved = group_screen.group_verdicts(hosts, outcomes, topology, evidence)
    reasons, findings = {}, []
    for group in slow:
        members = sorted(h for h in hosts if topology.get(h) == group)
        failed = [t for t in tests if t["purpose"] == "span" and _failed(t) and group in t["groups"].values()]
        passed = [t for t in tests if t["purpose"] == "span" and t["outcome"] is True]
        text = ("%s is slow to the rest: its hosts pass with each other, and %d test(s) across it with known-good "
                "hosts of other groups failed (%s) - a switch or uplink suspect, not %d bad nodes"
                % (group, len(failed), "; ".join(_label(t) for t in failed[:3]), len(members)))
        evidence = {"switches": [group], "text": text, "failed_tests": [_evidence(t) for t in failed[:MAX_EVIDENCE]],
                    "passed_span_tests": len(passed)}
        findings.append(analysis_records.finding("group", check, members, evidence=evidence))
        reasons.update((h, text) for h in members)
    return reasons, findings


def _check_output(check, tests):
    """The records and findings of one check's screen."""
    hosts = []
    for test in tests:
        hosts.extend(h for h in test["hosts"] if h not in hosts)
    judged = [t for t in tests if t["outcome"] != "skip"]
    outcomes = [(t["hosts"], t["outcome"]) for t in judged]
    topology = _topology(tests)
    evidence = max(t["rules"]["evidence"] for t in tests)
    seen = group_screen.assess(hosts, outcomes, topology or None, evidence)
    good, bad = seen["good"], seen["bad"]
    slow, findings = _slow_groups(check, hosts, tests, outcomes, topology, evidence) if topology else ({}, [])
    new = []
    for host in hosts:
        if host in bad:
            rec, found = _bad_host(check, host, tests, [judged[i] for i in seen["confirmations"][host]])
            new.append(rec)
            findings.append(found)
        elif host in slow and host in good:
            new.append(analysis_records.record(NAME, check + SUFFIX, "warn", host, reason=slow[host], facts={
                "measured_check": check, "attribution": "group", "group": topology[host],
                "tests": [_evidence(t) for t in tests if host in t["hosts"]][:MAX_EVIDENCE]}))
        else:
            new.append(_other_host(check, host, tests, seen, evidence, topology))
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
    for rec in analysis_records.added(records):
        tool = rec.get("tool") if isinstance(rec, dict) else None
        if analysis_records.is_analysis_record(rec) and tool.get("version") == NAME:
            measured = (rec.get("facts") or {}).get("measured_check")
            if measured:
                out.add(measured)
    return out
