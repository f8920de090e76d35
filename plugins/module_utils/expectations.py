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

import math

from ansible_collections.aifabric.acceptance.plugins.module_utils import results, thresholds

# Argument spec of the hardware-profile options (documented by the aifabric.acceptance._profiles fragment).
PROFILE_SPEC = {
    "profile": {"type": "str", "default": "auto"},
    "profiles": {"type": "dict", "default": {}},
}
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


def is_judging(rule):
    """A rule that judges a value: a bound or an equality (a rule with only a ``source`` says why nothing was judged,
    e.g. no RDMA floor at that message size)."""
    return isinstance(rule, dict) and any(rule.get(k) is not None for k in ("min", "max", "equals"))


def short_source(source):
    """The name of a rule's source for a reason people read: "profile h100-sxm-8gpu" of a profile's source (its
    provenance, the measurement or document behind the number, stays in the record's ``expect`` source)."""
    if isinstance(source, str) and source.startswith("profile ") and ": " in source:
        return source.split(": ", 1)[0]
    return source


def judge_value(name, value, rule):
    """Judge one value against one rule: returns (status, reason or None). The reason names the rule's source
    short (:func:`short_source`); the provenance is in the rule's ``source``."""
    check_rule(name, rule)
    source = short_source(rule.get("source"))
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
        verdict, why = judge_value(name, values.get(name), rule)
        expect[name] = dict(rule)
        if verdict != "pass":
            reasons.append(why)
            status = results.worst([status, verdict])
    return status, ("; ".join(r for r in reasons if r) or None), expect


# --- Hardware profiles and shape-aware lookups (issue 3) ---------------------------------
# Profiles: built-ins in module_utils/thresholds.py, plus user profiles passed in as data
# (loaded on the controller from YAML; see docs/expectations.md).

SHAPE_KEYS = ("nodes", "ranks", "algo")
WHEN_KEYS = SHAPE_KEYS + ("nodes_min", "nodes_max", "ranks_min", "ranks_max")


MATCH_KEYS = ("gpu_model", "form_factor", "gpus_per_node")
FORM_FACTORS = ("SXM", "PCIe", "NVL", "superchip")
# Tokens of a GPU name that name its form factor. Names as nvidia-smi and CUDA print them, checked
# against the NVIDIA Linux driver README's supported-products table (product name -> PCI device id):
# "NVIDIA H100 80GB HBM3" is device 2330, the SXM5 module; "NVIDIA H100 PCIe" 2331; "NVIDIA H100 NVL"
# 2321; "NVIDIA H200" 2335, the SXM module ("NVIDIA H200 NVL" is 233B); "NVIDIA GH200 480GB" 2342, the
# Grace Hopper superchip; "NVIDIA H100" (2339) says no form factor, so none is assumed.
_FORM_TOKENS = {"PCIE": "PCIe", "NVL": "NVL", "SXM": "SXM", "SXM2": "SXM", "SXM3": "SXM", "SXM4": "SXM",
                "SXM5": "SXM"}
_SXM_BY_DEFAULT = {"H100": ("HBM3",), "H200": ()}  # model -> tokens that, alone, mean the SXM module
_MODEL_RE = r"^[A-Z]{1,3}\d{1,4}[A-Z]?$"


def parse_gpu_name(name):
    """{"model": "H100", "form_factor": "SXM"/"PCIe"/"NVL"/"superchip"/None} from a GPU name.

    The model is the first name token shaped like a GPU model (letters then digits: H100, GH200, A100,
    V100, T4, A4000); "NVIDIA"/"Tesla" prefixes are ignored; tokens are split on spaces and hyphens
    ("A100-SXM4-40GB"). Consumer names without such a token ("GeForce RTX 3090") have no model.
    """
    import re

    tokens = [t.upper() for t in re.split(r"[\s\-]+", str(name or "").strip()) if t]
    tokens = [t for t in tokens if t not in ("NVIDIA", "TESLA")]
    model = next((t for t in tokens if re.match(_MODEL_RE, t)), None)
    form = None
    for token in tokens:
        if token in _FORM_TOKENS or token.startswith("NVL"):
            form = _FORM_TOKENS.get(token, "NVL")
            break
    if form is None and model in _SXM_BY_DEFAULT:
        rest = [t for t in tokens if t != model and not re.match(r"^\d+GB$", t)]
        if sorted(rest) == sorted(_SXM_BY_DEFAULT[model]):
            form = "SXM"
    if form is None and model and model[:2] in ("GH", "GB"):  # Grace Hopper / Grace Blackwell modules
        form = "superchip"
    return {"model": model, "form_factor": form}


def _check_match(name, match):
    import re

    if not isinstance(match, dict):
        raise ExpectationError("profile %s: match must be a mapping, got %r" % (name, match))
    unknown = set(match) - set(MATCH_KEYS)
    if unknown:
        raise ExpectationError("profile %s: match has unknown keys %s (allowed: %s)"
                               % (name, ", ".join(sorted(unknown)), ", ".join(MATCH_KEYS)))
    model = match.get("gpu_model")
    if model is not None and not re.match(_MODEL_RE, str(model).upper()):
        raise ExpectationError("profile %s: match.gpu_model %r must be a GPU model name such as H100, H200, GH200 "
                               "or A100 (matched exactly, not a pattern)" % (name, model))
    form = match.get("form_factor")
    if form is not None and form not in FORM_FACTORS:
        raise ExpectationError("profile %s: match.form_factor %r must be one of %s" % (name, form, ", ".join(FORM_FACTORS)))
    count = match.get("gpus_per_node")
    if count is not None and (isinstance(count, bool) or not isinstance(count, int) or count < 1):
        raise ExpectationError("profile %s: match.gpus_per_node must be a positive integer, got %r" % (name, count))


def all_profiles(extra=None):
    """Built-in profiles (thresholds.PROFILES) overlaid with user ones (a user profile replaces a built-in of the
    same name)."""
    merged = dict(thresholds.PROFILES)
    for name, profile in (extra or {}).items():
        if not isinstance(profile, dict):
            raise ExpectationError("profile %s must be a mapping, got %r" % (name, profile))
        unknown = set(profile) - {"description", "match", "checks"}
        if unknown:
            raise ExpectationError("profile %s has unknown keys %s (allowed: description, match, checks)"
                                   % (name, ", ".join(sorted(unknown))))
        _check_match(name, profile.get("match") or {})
        merged[name] = profile
    return merged


def detect_profile(gpu_model, gpu_count, profiles):
    """Pick a profile name from the GPU name and the number of GPUs on the node.

    A profile matches when its ``match.gpu_model`` equals the model parsed from the name
    (parse_gpu_name) and its ``match.form_factor``, when given, equals the parsed form factor:
    "NVIDIA H100 PCIe" never gets an SXM profile, "NVIDIA GH200 480GB" never an H200 one, and a name
    whose form factor is unknown gets no profile that names one. Among matches, one whose
    ``gpus_per_node`` equals the count wins. When the count differs, the profile still applies under
    the GPU-count rule (see profile_rules): per-GPU rules (GEMM) apply at any count; collective rules
    apply only where their ``when`` names the ranks, or at the profile's own node shape.
    Returns (name or None, why) where ``why`` explains the choice for the record's facts.
    """
    if not gpu_model:
        return None, "no GPU model known, no profile chosen"
    parsed = parse_gpu_name(gpu_model)
    if not parsed["model"]:
        return None, "no profile: no GPU model token in %r" % gpu_model
    candidates = []
    for name in sorted(profiles):
        match = (profiles[name] or {}).get("match") or {}
        want = match.get("gpu_model")
        if not want or str(want).upper() != parsed["model"]:
            continue
        if match.get("form_factor") and match["form_factor"] != parsed["form_factor"]:
            continue
        per_node = match.get("gpus_per_node")
        exact = per_node is None or (gpu_count is not None and per_node == gpu_count)
        candidates.append((0 if exact else 1, 0 if match.get("form_factor") else 1, name))
    what = "%s (model %s, form factor %s)" % (gpu_model, parsed["model"], parsed["form_factor"] or "unknown")
    if not candidates:
        return None, "no profile matches %s" % what
    candidates.sort()
    rank, _form, name = candidates[0]
    if rank == 0:
        return name, "auto: %s x%s matches profile %s" % (what, gpu_count, name)
    return name, ("auto: %s matches profile %s; GPU count %s differs from the profile's %s: per-GPU rules apply, "
                  "collective rules only at the ranks they name" % (
                      what, name, gpu_count, profiles[name]["match"].get("gpus_per_node")))


def choose_profile(choice, gpu_model, gpu_count, profiles):
    """The profile a module applies: O(profile) V(auto) detects it, V(none)/empty means none.

    Returns (name or None, why); raises ExpectationError for a name that is not a known profile.
    """
    if choice in (None, "", "none"):
        return None, "no profile (profile: none)"
    if choice == "auto":
        return detect_profile(gpu_model, gpu_count, profiles)
    if choice not in profiles:
        raise ExpectationError("unknown profile %r (known: %s)" % (choice, ", ".join(sorted(profiles))))
    return choice, "set by the user"


def _when_matches(when, shape):
    for key, want in (when or {}).items():
        if key not in WHEN_KEYS:
            raise ExpectationError("profile 'when' has unknown key %r (allowed: %s)" % (key, ", ".join(WHEN_KEYS)))
        if key.endswith("_min") or key.endswith("_max"):
            have = shape.get(key[:-4])
            if have is None:
                return False
            if key.endswith("_min") and have < want:
                return False
            if key.endswith("_max") and have > want:
                return False
        elif shape.get(key) != want:
            return False
    return True


def _count_rule_allows(when, shape, per_node):
    """The GPU-count rule: a collective entry (the shape has ranks) whose ``when`` names no ranks
    describes the profile's own node shape, so it applies only when ranks == nodes x gpus_per_node.
    Entries that name ranks (ranks, ranks_min, ranks_max) were measured at those ranks and apply there;
    per-GPU checks (no ranks in the shape) and profiles without gpus_per_node are not restricted."""
    ranks, nodes = shape.get("ranks"), shape.get("nodes")
    if per_node is None or ranks is None or any(k.startswith("ranks") for k in when or {}):
        return True
    return ranks == (nodes or 1) * per_node


def profile_rules(profile_name, check, shape, profiles):
    """The rules of one profile for one check and shape.

    ``shape`` is a dict like {"nodes": 1, "ranks": 2, "algo": None}. Returns
    (metric_rules, size_rules, source) or (None, None, None) when the profile has
    nothing for that check and shape. Every rule carries ``source`` naming the
    profile, so verdicts say where the number came from.
    """
    if not profile_name:
        return None, None, None
    if profile_name not in profiles:
        raise ExpectationError("unknown profile %r (known: %s)" % (profile_name, ", ".join(sorted(profiles))))
    checks = (profiles[profile_name] or {}).get("checks") or {}
    entries = checks.get(check)
    if entries is None:
        entries = checks.get(thresholds.PROFILE_ALIASES.get(check, ""), [])
    per_node = ((profiles[profile_name] or {}).get("match") or {}).get("gpus_per_node")
    best = None
    for entry in entries or []:
        when = entry.get("when") or {}
        if not _count_rule_allows(when, shape, per_node):
            continue
        if _when_matches(when, shape) and (best is None or len(when) > len(best.get("when") or {})):
            best = entry
    if best is None:
        return None, None, None
    source = best.get("source") or "profile %s" % profile_name
    metric_rules = {}
    for name, rule in (best.get("metrics") or {}).items():
        metric_rules[name] = check_rule(name, dict(rule, source=source))
    size_rules = {}
    for size, rules in (best.get("sizes") or {}).items():
        size_rules[str(int(size))] = dict(
            (name, check_rule(name, dict(rule, source=source))) for name, rule in rules.items())
    return metric_rules, size_rules, source


def merge_rules(base, override, source="user threshold"):
    """User thresholds override profile rules metric by metric; each keeps its source."""
    merged = dict(base or {})
    for name, rule in (override or {}).items():
        if rule is None:
            merged.pop(name, None)
            continue
        rule = dict(check_rule(name, rule))
        rule.setdefault("source", source)
        merged[name] = rule
    return merged


def series_value(series, size, key, placements=("oop_", "ip_")):
    """The value of ``key`` (e.g. busbw_gbyte_s) in the series row of ``size`` bytes.

    Looks at the out-of-place column first, then in-place (a probe that only
    measures in-place). Returns (value or None, column name used).
    """
    for row in series or []:
        if row.get("size_bytes") == int(size):
            for prefix in placements:
                value = row.get(prefix + key)
                if value is not None:
                    return value, prefix + key
            return None, placements[0] + key
    return None, placements[0] + key


def judge_sizes(series, size_rules, status="pass", reason=None):
    """Judge per-message-size rules against a series (rows with size_bytes and oop_/ip_ columns).

    Returns (status, reason, expect) like judge(); the expect keys read
    ``<column>@<size>`` (for example ``oop_busbw_gbyte_s@8589934592``).
    """
    expect = {}
    reasons = [reason] if reason else []
    for size in sorted(size_rules or {}, key=int):
        for name, rule in sorted(size_rules[size].items()):
            value, column = series_value(series, size, name)
            label = "%s@%s" % (column, size)
            expect[label] = dict(rule)
            if value is None and not any(row.get("size_bytes") == int(size) for row in series or []):
                # The run did not cover this size (a shorter -e): nothing to judge, say so.
                reasons.append("no %s B row in this run: the per-size rule for %s was not applied" % (size, name))
                continue
            verdict, why = judge_value(label, value, rule)
            if verdict != "pass":
                reasons.append(why)
                status = results.worst([status, verdict])
    return status, ("; ".join(r for r in reasons if r) or None), expect


def rules_for_check(expect, check):
    """User thresholds for one check.

    ``expect`` is either metric rules ({busbw_max_gbyte_s: {min: 330}}, applied to every
    check the module returns) or per-check rules ({"nccl.all_reduce": {...}, "gpu.gemm_bf16":
    {...}}); check names contain a dot, metric names never do.
    """
    expect = expect or {}
    if expect and all("." in str(key) for key in expect):
        return expect.get(check) or {}
    return expect


# --- Physical ranges (issue 18 item 4) ---------------------------------------------------
# A figure outside its physical range was not measured: whatever an expectation says, a record that carries
# one is ``error``. Every record builder (perftest, nccl-tests, HCCL Test, GEMM, the torch all-reduce probe)
# passes its record through physical_check() below. The ranges are data in thresholds.PHYSICAL_RANGES: a name is
# looked up exactly first, then by the longest ``*suffix`` that ends it (units live in metric names); a name found
# in neither is not checked.
def physical_range(name):
    """(min, max, why) of a metric name, or None when nothing bounds it (thresholds.PHYSICAL_RANGES)."""
    ranges = thresholds.PHYSICAL_RANGES
    found = next((r for r in ranges if r[0] == name), None) or next(
        (r for r in sorted(ranges, key=lambda r: -len(r[0])) if r[0].startswith("*") and name.endswith(r[0][1:])),
        None)
    return found[1:] if found else None


def _outside(name, value):
    """Why ``value`` cannot be a measurement of ``name``, or None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    bounds = physical_range(name)
    if bounds is None:
        return None
    low, high, why = bounds
    if isinstance(value, float) and math.isnan(value):
        return "%s is not a number (%s)" % (name, why)
    if low is not None and value < low:
        return "%s %s < %s (%s)" % (name, _fmt(value), _fmt(low), why)
    if high is not None and value > high:
        return "%s %s > %s (%s)" % (name, _fmt(value), _fmt(high), why)
    return None


def _number(value):
    return None if isinstance(value, bool) or not isinstance(value, (int, float)) else value


def _implausible(figures):
    """Why the figures of one measurement (a record's metrics, or one series row) cannot be measured together: a
    figure that is not a number, a figure of thresholds.PLAUSIBLE_POSITIVE at 0 or below, figures out of the order of
    thresholds.PLAUSIBLE_ORDER (checked where all of them are above 0: a 0.00 peak is perftest's "not measured")."""
    found = []
    for name, value in sorted(figures.items()):
        if _number(value) is not None and isinstance(value, float) and not math.isfinite(value) \
                and physical_range(name) is None:
            found.append("%s is not a finite number" % name)
    for name, why in thresholds.PLAUSIBLE_POSITIVE:
        value = _number(figures.get(name))
        if value is not None and value <= 0:
            found.append("%s %s is not above 0 (%s)" % (name, _fmt(value), why))
    for names, why in thresholds.PLAUSIBLE_ORDER:
        values = [_number(figures.get(n)) for n in names]
        if any(v is None or not math.isfinite(v) or v <= 0 for v in values):
            continue
        for (low_name, low), (high_name, high) in zip(zip(names, values), zip(names[1:], values[1:])):
            if low > high + thresholds.PLAUSIBLE_ORDER_SLACK:
                found.append("%s %s > %s %s (%s)" % (low_name, _fmt(low), high_name, _fmt(high), why))
    return found


def out_of_range(metrics, series=()):
    """Every figure of ``metrics`` and of the ``series`` rows outside its physical range, or implausible with the
    other figures of its measurement (:func:`_implausible`), as reasons."""
    metrics = metrics or {}
    found = [why for why in (_outside(n, v) for n, v in sorted(metrics.items())) if why] + _implausible(metrics)
    for number, row in enumerate(series or [], 1):
        if not isinstance(row, dict):
            continue
        size = row.get("size_bytes", row.get("msg_size_bytes"))
        where = "series row %d%s: " % (number, "" if size is None else " (%s B)" % size)
        found.extend(where + why for why in (_outside(n, v) for n, v in sorted(row.items())) if why)
        found.extend(where + why for why in _implausible(row))
    return found


def gemm_implausible(metrics, dtype, gpu_name):
    """Why a GEMM's figures were not measured: its TFLOP/s does not follow from its printed time and matrix size
    (2*m*n*k / time, within thresholds.GEMM_RECOMPUTE_TOLERANCE_PCT), or is above the dense datasheet peak of its GPU
    model and dtype (thresholds.GEMM_PEAK_TFLOPS, plus GEMM_PEAK_MARGIN_PCT). [] when nothing says so."""
    printed = _number(metrics.get("tflops"))
    size = [_number(metrics.get(k)) for k in ("m", "n", "k")]
    time_ms = _number(metrics.get("time_ms"))
    if printed is None or not math.isfinite(printed):
        return []
    if time_ms is None or not math.isfinite(time_ms) or time_ms <= 0 or any(v is None or v <= 0 for v in size):
        return ["tflops %s without a time and a size it follows from (time_ms %s, %sx%sx%s)" % (
            _fmt(printed), _fmt(time_ms), size[0], size[1], size[2])]
    derived = 2.0 * size[0] * size[1] * size[2] / (time_ms / 1e3) / 1e12
    found = []
    if abs(printed - derived) > derived * thresholds.GEMM_RECOMPUTE_TOLERANCE_PCT / 100.0:
        found.append("tflops %s is not 2*m*n*k/time = %s TFLOP/s (%s)" % (
            _fmt(round(printed, 3)), _fmt(round(derived, 3)), thresholds.GEMM_RECOMPUTE_SOURCE))
    gpu = parse_gpu_name(gpu_name)
    peaks, source = thresholds.GEMM_PEAK_TFLOPS.get((gpu["model"], gpu["form_factor"]), ({}, None))
    peak = peaks.get(dtype)
    if peak is not None:
        limit = peak * (1.0 + thresholds.GEMM_PEAK_MARGIN_PCT / 100.0)
        for name, value in (("tflops", printed), ("2*m*n*k/time", derived)):
            if value > limit:
                found.append("%s %s > the %s %s %s dense peak %s TFLOP/s + %s %% (%s)" % (
                    name, _fmt(round(value, 3)), gpu["model"], gpu["form_factor"], dtype, _fmt(peak),
                    _fmt(thresholds.GEMM_PEAK_MARGIN_PCT), source))
                break
    return found


def physical_check(record, raw=None, extra=()):
    """The record, ``error`` when a figure of its metrics or series is outside its physical range (or ``extra``, the
    reasons a check of its own found, such as :func:`gemm_implausible`'s).

    Only a record that claims a judged measurement (pass, warn, fail) changes; the figures stay as printed (the
    report shows what the tool said) and ``raw`` (the tool's output) is kept. Applying it twice changes nothing
    more. Returns a new dict.
    """
    found = out_of_range(record.get("metrics"), record.get("series")) + list(extra)
    if not found or record.get("status") not in results.JUDGED:
        return record
    record = dict(record)
    text = "; ".join(found[:3]) + ("; and %d more" % (len(found) - 3) if len(found) > 3 else "")
    head = "impossible figure(s), so not a valid measurement: %s" % text
    was = record.get("reason")
    record["status"] = "error"
    record["reason"] = head if not was else was if head in was else "%s; %s" % (head, was)
    if raw is not None and not record.get("raw"):
        record["raw"] = results.trim(raw)
    return record
