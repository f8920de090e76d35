# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Peers inside the node: the "peers" fleet analysis (issue 19).

A GPU far below its siblings in the same node is a finding even when it clears every floor: the siblings are the
best reference there is (same model, board, cooling, driver and run). For every per-GPU measured check of
:data:`PER_GPU` with at least two GPUs on a host, each GPU's headline value is compared with the median of the
OTHER GPUs of that host and check. Below thresholds.PEERS ``fail_below_pct`` (80 %) of it the GPU fails, below
``warn_below_pct`` (90 %) it warns; the analysis ADDS one ``<check>.peers`` record per GPU (target: the GPU index)
naming the GPU by index, serial and PCI bus id (from the host's ``gpu.device`` records), and one finding per GPU
that is not ``pass``. The measured records are never rewritten.

Controller-only (plugin_utils); imports nothing from Ansible.
"""

from __future__ import annotations

import fnmatch
import functools
import statistics

from ansible_collections.aifabric.acceptance.plugins.module_utils import thresholds
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import analysis_records

NAME = "peers"
SUFFIX = ".peers"
# per-GPU checks and the headline metric (higher is better) they are compared on
PER_GPU = (("gpu.gemm_*", "tflops", "TFLOP/s"), ("gpu.soak", "tflops", "TFLOP/s"))
JUDGED = ("pass", "warn", "fail")


def _num(value):
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


@functools.lru_cache(maxsize=4096)      # a fleet has few distinct checks; every measured record asks
def _headline(check):
    for pattern, metric, unit in PER_GPU:
        if fnmatch.fnmatchcase(check, pattern):
            return metric, unit
    return None


def groups(records):
    """{(host, check): {target: value}} of the measured per-GPU records (the last value of a target wins)."""
    out = {}
    for rec in analysis_records.measured(records):
        check = rec.get("check") or ""
        wanted = _headline(check)
        if (wanted is None or not rec.get("host") or rec.get("peer")
                or rec.get("target") in (None, "") or rec.get("status") not in JUDGED):
            continue
        value = _num((rec.get("metrics") or {}).get(wanted[0]))
        if value is not None:
            out.setdefault((rec["host"], check), {})[str(rec["target"])] = value
    return out


def gpu_names(records):
    """{(host, target): "GPU 1 (serial 165..., PCI 00000000:00:07.0)"} from the gpu.device records."""
    out = {}
    for rec in analysis_records.measured(records):
        if rec.get("check") == "gpu.device" and rec.get("host"):
            facts = rec.get("facts") or {}
            extra = ", ".join(part for part in (
                "serial %s" % facts["serial"] if facts.get("serial") else None,
                "PCI %s" % facts["bus_id"] if facts.get("bus_id") else None) if part)
            out[(rec["host"], str(rec.get("target")))] = "GPU %s%s" % (rec.get("target"), " (%s)" % extra if extra else "")
    return out


def status_of(pct, limits):
    """fail / warn / pass of a value at ``pct`` % of its siblings' median."""
    if pct < limits["fail_below_pct"]:
        return "fail"
    if pct < limits["warn_below_pct"]:
        return "warn"
    return "pass"


def compare(values, limits):
    """{target: (status, pct, siblings' median)} for one host and check (at least two GPUs)."""
    out = {}
    for target, value in values.items():
        others = [v for t, v in values.items() if t != target]
        median = statistics.median(others)
        pct = 100.0 * value / median if median > 0 else 100.0
        out[target] = (status_of(pct, limits), pct, median)
    return out


def settings(config):
    """The effective limits: thresholds.PEERS overridden by config ``peers`` ({fail_below_pct, warn_below_pct})."""
    given = (config or {}).get(NAME) or {}
    if not isinstance(given, dict):
        raise ValueError("peers must be a mapping such as {fail_below_pct: 80, warn_below_pct: 90}, got %r" % (given,))
    limits = dict(thresholds.PEERS, **given)
    for key in ("fail_below_pct", "warn_below_pct"):
        value = limits[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 < value <= 100:
            raise ValueError("peers %s must be a number above 0 and at most 100, got %r" % (key, value))
    return limits


def analyze(records, config):
    """Add a ``<check>.peers`` record per GPU of every host with two or more GPUs measured (module docstring)."""
    limits = settings(config)
    names = gpu_names(records)
    added, findings = [], []
    for (host, check), values in sorted(groups(records).items()):
        if len(values) < 2:
            continue
        metric, unit = _headline(check)
        for target, (status, pct, median) in sorted(compare(values, limits).items()):
            gpu = names.get((host, target)) or "GPU %s" % target
            text = "%s of %s: %s %s %s, %s %% of its siblings' median %s %s" % (
                gpu, host, check, _fmt(values[target]), unit, _fmt(round(pct, 1)), _fmt(round(median, 1)), unit)
            added.append(analysis_records.record(
                NAME, check + SUFFIX, status, host, reason=None if status == "pass" else text, target=target,
                metrics={metric: values[target], "pct_of_siblings_median": round(pct, 1)},
                expect={"pct_of_siblings_median": {"min": limits["fail_below_pct"], "source": thresholds.PEERS_SOURCE}},
                facts={"measured_check": check, "gpu": gpu, "siblings_median": round(median, 3),
                       "siblings": len(values) - 1}))
            if status != "pass":
                findings.append(analysis_records.finding(NAME, check, [host], target=target, evidence={
                    "gpu": gpu, metric: values[target], "pct_of_siblings_median": round(pct, 1),
                    "siblings_median": round(median, 3), "status": status, "text": text}))
    return added, findings


def _fmt(value):
    return ("%.3f" % value).rstrip("0").rstrip(".") if isinstance(value, float) else str(value)
