# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Expectations: turn measured metrics and facts into verdicts.

Every verdict says which rule and which value decided it. Private to the
collection; imports nothing from Ansible; runs on target Pythons (3.8+).

Rule shapes (per metric name):
    {"min": 380}                 fail below 380
    {"max": 2.5}                 fail above 2.5
    {"min": 380, "warn_below_pct": 95}
                                 warn when the value is >= min but below 95 % of ... min/(pct)
                                 i.e. below min * 100 / pct (a soft band above the floor)
    {"equals": "580.159.04"}     fail when different (facts and metrics alike)
    {"source": "profile h100-sxm-8gpu"}
                                 where the rule came from, quoted in the reason
"""

from __future__ import annotations

from ansible_collections.aifabric.acceptance.plugins.module_utils import results

RULE_KEYS = ("min", "max", "equals", "warn_below_pct", "source")


class ExpectationError(ValueError):
    """A malformed rule (bad user input): the message names the rule."""


def check_rule(name, rule):
    """Validate one rule; raise ExpectationError naming the offending key."""
    if not isinstance(rule, dict):
        raise ExpectationError("expectation for %s must be a mapping, got %r" % (name, rule))
    for key in rule:
        if key not in RULE_KEYS:
            raise ExpectationError("expectation for %s has unknown key %r (allowed: %s)"
                                   % (name, key, ", ".join(RULE_KEYS)))
    for key in ("min", "max", "warn_below_pct"):
        if key in rule and rule[key] is not None:
            if isinstance(rule[key], bool) or not isinstance(rule[key], (int, float)):
                raise ExpectationError("expectation %s.%s must be a number, got %r" % (name, key, rule[key]))
    return rule


def _fmt(value):
    if isinstance(value, float):
        return ("%.3f" % value).rstrip("0").rstrip(".")
    return str(value)


def judge_value(name, value, rule):
    """Judge one value against one rule: returns (status, reason or None)."""
    check_rule(name, rule)
    source = rule.get("source")
    suffix = " (%s)" % source if source else ""
    if value is None:
        return "error", "%s was not measured, so the expectation %s cannot be judged%s" % (
            name, _describe(rule), suffix)
    if "equals" in rule and rule["equals"] is not None:
        if str(value) != str(rule["equals"]):
            return "fail", "%s is %s, expected %s%s" % (name, _fmt(value), _fmt(rule["equals"]), suffix)
    if rule.get("min") is not None:
        if value < rule["min"]:
            return "fail", "%s %s < %s expected minimum%s" % (name, _fmt(value), _fmt(rule["min"]), suffix)
        pct = rule.get("warn_below_pct")
        if pct:
            soft = rule["min"] * 100.0 / pct
            if value < soft:
                return "warn", "%s %s is within %s%% of the minimum %s (soft floor %s)%s" % (
                    name, _fmt(value), _fmt(100 - pct), _fmt(rule["min"]), _fmt(soft), suffix)
    if rule.get("max") is not None and value > rule["max"]:
        return "fail", "%s %s > %s expected maximum%s" % (name, _fmt(value), _fmt(rule["max"]), suffix)
    return "pass", None


def _describe(rule):
    parts = []
    for key in ("equals", "min", "max"):
        if rule.get(key) is not None:
            parts.append("%s %s" % (key, _fmt(rule[key])))
    return ", ".join(parts) or "(none)"


def judge(values, rules, status="pass", reason=None):
    """Judge several named values against rules.

    ``values`` maps names to measured values (metrics or facts); ``rules`` maps
    names to rules. Names in ``rules`` that are absent from ``values`` are errors
    (the expectation cannot be judged). Returns (status, reason, expect) where
    ``expect`` is the rules actually applied, for the record's ``expect`` field.
    The starting status/reason (for example a parser's ``warn``) is kept unless a
    worse verdict replaces it.
    """
    expect = {}
    reasons = [reason] if reason else []
    for name in sorted(rules or {}):
        rule = rules[name]
        if rule is None:
            continue
        expect[name] = dict(rule)
        verdict, why = judge_value(name, values.get(name), rule)
        if verdict != "pass":
            reasons.append(why)
            status = results.worst([status, verdict])
    return status, ("; ".join(r for r in reasons if r) or None), expect
