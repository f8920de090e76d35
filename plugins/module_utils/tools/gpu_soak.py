# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The burn-in soak's adapter: ``OPTIONS``, ``worker_args(params)``, ``records(text, ctx)`` (see tools/__init__.py).

``gpu.soak`` records, one per GPU (target = the GPU index), and one ``gpu.soak_node`` record for the node (its GPUs
against each other), or one skip/error record. ``text`` is the soak worker's stdout (burnin_worker.py soak);
``ctx.output`` stdout and stderr together (reasons); ``ctx.params`` the gpu_soak options. Judged per GPU on: the
sustained TFLOP/s (the GEMM profile's floor for the data type, the user's ``expect``), its jitter over the windows,
power reaching the enforced limit (proof of load) and a cap below the default limit, any hardware slowdown reason
while loaded (thresholds.GPU_CLOCK_EVENT_REASONS), new Xid lines, ECC / remapped-row / PCIe replay growth
(thresholds.SOAK_COUNTER_RULES); per node on the temperature spread (a GPU far below its siblings is the report's
peers analysis: gpu.soak.peers). Each GPU's record carries a downsampled series (t_ms, tflops, power_w,
temperature_c, sm_clock_mhz, reasons).
Runs on the targets: Python 3.8+, no Ansible imports.
"""

from __future__ import annotations

import statistics

from ansible_collections.aifabric.acceptance.plugins.module_utils import expectations, imports, results, thresholds
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import ParseError
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import burnin
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import Context
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools.gemm_bench import SHAPE_OPTIONS

OPTIONS = dict(
    duration_s=dict(type="int", default=120),
    datatype=dict(type="str", choices=["bf16", "fp16", "fp32", "tf32"], default="bf16"),
    **SHAPE_OPTIONS,
    sample_ms=dict(type="int", default=1000),
    gpu_indices=dict(type="list", elements="int", default=[]),
    nvidia_smi=dict(type="str", default="nvidia-smi"),
    **expectations.PROFILE_SPEC,
    expect=dict(type="dict", default={}),
)
TOOL = "gpu_soak"
CHECK = "gpu.soak"
NODE_CHECK = "gpu.soak_node"
# its names (docs/architecture.md's table of tools) and what the contract checks (tools/__init__.py)
CHECKS = "gpu"
MODULE = "gpu_soak"
KUBERNETES = ("gpu_soak",)
# how it runs and what its records come from
ARGV = ("worker_args",)
PARSERS = ("burnin",)
GOLDEN = ("soak-records", "soak-import")
# the worker's own time besides the soak: the Xid and PCIe reads before and after (30 s each at most), the start
# of torch and the last samples
OVERHEAD_S = 150


def timeout_s(params):
    """The run's time limit: the soak and OVERHEAD_S."""
    return int(params["duration_s"]) + OVERHEAD_S


def worker_args(params):
    """Arguments of the worker's ``soak`` command (after ``python burnin_worker.py``): the SSH module and the
    Kubernetes planner run the same."""
    args = ["soak", "--duration-s", str(params["duration_s"]), "--dtype", params["datatype"], "--m", str(params["m"]),
            "--n", str(params["n"]), "--k", str(params["k"]), "--sample-ms", str(params["sample_ms"]),
            "--nvidia-smi", params["nvidia_smi"]]
    if params.get("gpu_indices"):
        args += ["--devices", ",".join(str(d) for d in params["gpu_indices"])]
    return args


def record_params(params, argv):
    return {"argv": argv, "duration_s": params["duration_s"], "datatype": params["datatype"], "m": params["m"],
            "n": params["n"], "k": params["k"], "sample_ms": params["sample_ms"]}


def _loaded(points, soak):
    """The points of a GPU's windows or samples after the warm-up (SOAK warmup_fraction, at least 3 s)."""
    skip = max(3.0, thresholds.SOAK["warmup_fraction"][0] * float(soak.get("duration_s") or 0))
    return [p for p in points if p["t_s"] >= skip]


def _sample_times(samples, windows):
    """Each sample's t_s on the windows' clock: the samples run 1 per sample_ms from the load's start."""
    step = 1.0
    return [dict(s, t_s=i * step) for i, s in enumerate(samples)]


def _growth(samples, key):
    values = [s.get(key) for s in samples if s.get(key) is not None]
    return None if len(values) < 2 else max(0.0, max(values) - values[0])


def _downsample(points, limit):
    if len(points) <= limit:
        return points
    step = len(points) / float(limit)
    return [points[int(i * step)] for i in range(limit)]


def _series(windows, samples):
    """The record's series: one row per window with the nearest telemetry sample, at most SOAK series_points."""
    rows = []
    for w in windows:
        near = min(samples, key=lambda s: abs(s["t_s"] - w["t_s"])) if samples else {}
        rows.append({"t_ms": int(round(w["t_s"] * 1000)), "tflops": w["tflops"], "power_w": near.get("power_w"),
                     "temperature_c": near.get("temperature_c"), "sm_clock_mhz": near.get("sm_clock_mhz"),
                     "reasons": ",".join(near.get("reasons") or []) or None})
    return _downsample(rows, int(thresholds.SOAK["series_points"][0]))


def _median(values):
    return statistics.median(values) if values else None


def _throughput(loaded_w):
    """The windows after the warm-up -> tflops (median), min, max, jitter (coefficient of variation, %)."""
    tflops = [w["tflops"] for w in loaded_w]
    mean = statistics.mean(tflops) if tflops else None
    return {"tflops": _median(tflops), "tflops_min": min(tflops) if tflops else None,
            "tflops_max": max(tflops) if tflops else None,
            "tflops_jitter_pct": (100.0 * statistics.pstdev(tflops) / mean) if tflops and mean else None}


def _telemetry(samples, loaded_s):
    """Power (median, max, enforced and default limit, share of the limit), hottest temperature, median SM clock."""
    def values(points, key):
        return [p[key] for p in points if p.get(key) is not None]
    draws, limit = values(loaded_s, "power_w"), _median(values(loaded_s, "power_limit_w"))
    power, temps = _median(draws), values(samples, "temperature_c")
    return {"power_median_w": power, "power_max_w": max(draws) if draws else None,
            "power_limit_w": limit, "power_default_limit_w": _median(values(loaded_s, "power_default_limit_w")),
            "power_of_limit_pct": (100.0 * power / limit) if power is not None and limit else None,
            "temperature_max_c": max(temps) if temps else None,
            "sm_clock_median_mhz": _median(values(loaded_s, "sm_clock_mhz"))}


def _metrics(windows, samples, loaded_w, loaded_s, new_xids, replay_growth):
    metrics = _throughput(loaded_w)
    metrics.update({"windows_count": len(windows), "samples_count": len(samples)})
    metrics.update(_telemetry(samples, loaded_s))
    metrics.update({
        "new_xid_count": new_xids,
        "ecc_uncorrected_growth_count": _growth(samples, "ecc_uncorrected"),
        "ecc_corrected_growth_count": _growth(samples, "ecc_corrected"),
        "remapped_uncorrectable_growth_count": _growth(samples, "remapped_uncorrectable"),
        "pcie_replay_growth_count": replay_growth,
    })
    return metrics


def _findings(metrics, loaded_s):
    """[(status, reason)] of the soak's own rules (thresholds.SOAK, SOAK_COUNTER_RULES, GPU_CLOCK_EVENT_REASONS)."""
    out = []
    rules = thresholds.SOAK
    jitter = metrics["tflops_jitter_pct"]
    if jitter is not None and jitter > rules["jitter_fail_pct"][0]:
        out.append(("fail", "throughput jitter %.1f %% > %.0f %% over the soak" % (jitter, rules["jitter_fail_pct"][0])))
    elif jitter is not None and jitter > rules["jitter_warn_pct"][0]:
        out.append(("warn", "throughput jitter %.1f %% > %.0f %% over the soak" % (jitter, rules["jitter_warn_pct"][0])))
    share = metrics["power_of_limit_pct"]
    if share is not None and share < rules["power_of_limit_min_pct"][0]:
        out.append(("warn", "power %.0f W is %.0f %% of the %.0f W limit: the soak did not load the GPU" % (
            metrics["power_median_w"], share, metrics["power_limit_w"])))
    limit, default = metrics["power_limit_w"], metrics["power_default_limit_w"]
    if limit and default and 100.0 * limit / default < rules["power_cap_min_pct"][0]:
        out.append(("warn", "power capped at %.0f W of the default %.0f W" % (limit, default)))
    for reason, status, _source in thresholds.GPU_CLOCK_EVENT_REASONS:
        hits = [s for s in loaded_s if reason in (s.get("reasons") or [])]
        if hits:
            out.append((status, "%s active in %d of %d samples under load" % (reason, len(hits), len(loaded_s))))
    for metric, status, _source in thresholds.SOAK_COUNTER_RULES:
        if metrics.get(metric):
            out.append((status, "%s %d" % (metric.replace("_count", "").replace("_", " "), metrics[metric])))
    return out


def _xids_for(parsed, bus_id):
    before = (parsed["xid"].get("before") or {})
    after = (parsed["xid"].get("after") or {})
    if not before.get("readable") or not after.get("readable"):
        return None
    seen = set(x["line"] for x in before["xids"])
    short = (bus_id or "").lower()[-12:-2] if bus_id else ""
    return len([x for x in after["xids"] if x["line"] not in seen and (not short or x["bus"].endswith(short[-7:]))])


def _replay_growth(parsed, bus_id):
    before, after = parsed["replays"].get("before") or {}, parsed["replays"].get("after") or {}
    key = (bus_id or "").lower()
    if before.get(key) is None or after.get(key) is None:
        return None
    return max(0, after[key] - before[key])


def _gpu_record(dev, parsed, params, base, profile):
    """The gpu.soak record of one GPU."""
    windows = parsed["windows"].get(dev) or []
    samples = _sample_times(parsed["samples"].get(dev) or [], windows)
    soak = parsed["start"]
    loaded_w, loaded_s = _loaded(windows, soak), _loaded(samples, soak)
    bus_id = samples[0].get("bus_id") if samples else None
    metrics = _metrics(windows, samples, loaded_w, loaded_s, _xids_for(parsed, bus_id), _replay_growth(parsed, bus_id))
    facts = {"gpu_model": (soak.get("gpu_names") or {}).get(str(dev)), "bus_id": bus_id,
             "torch_version": soak.get("torch"), "xid_readable": _xids_for(parsed, bus_id) is not None,
             "profile_choice": profile[1]}
    rules = None
    if profile[0] and (params["m"], params["n"], params["k"]) == (8192, 8192, 8192):
        facts["profile"] = profile[0]
        rules = expectations.profile_rules(profile[0], "gpu.gemm_%s" % params["datatype"], {}, profile[2])[0]
    status, reason, expect = expectations.judge(
        metrics, expectations.merge_rules(rules, expectations.rules_for_check(params.get("expect") or {}, CHECK)))
    findings = _findings(metrics, loaded_s)
    if not loaded_w:
        findings.append(("error", "no throughput window after the warm-up"))
    for finding_status, text in findings:
        status = results.worst([status, finding_status])
        reason = "; ".join(r for r in (reason, text) if r)
    if dev in parsed["errors"]:
        status, reason = "error", "the GEMM loop failed on GPU %s: %s" % (dev, parsed["errors"][dev])
    return results.make(CHECK, status, reason=reason, target=str(dev), metrics=metrics, expect=expect, facts=facts,
                        series=_series(windows, samples), **base)


def node_record(gpu_records, base):
    """gpu.soak_node: the node's GPUs together - the temperature spread (thresholds.SOAK), the median throughput. A
    GPU far below its siblings is the report's peers analysis (plugin_utils/peers.py: gpu.soak.peers records)."""
    figures = [r["metrics"]["tflops"] for r in gpu_records if r["metrics"].get("tflops") is not None]
    temps = [r["metrics"]["temperature_max_c"] for r in gpu_records if r["metrics"].get("temperature_max_c") is not None]
    metrics = {"gpus_count": len(gpu_records), "tflops_median": statistics.median(figures) if figures else None,
               "temperature_spread_c": (max(temps) - min(temps)) if len(temps) > 1 else None}
    status, reason = "pass", None
    spread, limit = metrics["temperature_spread_c"], thresholds.SOAK["temperature_spread_warn_c"][0]
    if spread is not None and spread > limit:
        hottest = max(gpu_records, key=lambda r: r["metrics"].get("temperature_max_c") or 0)
        status, reason = "warn", "temperature spread %.0f C > %.0f C across the node's GPUs (hottest GPU %s, %.0f C)" % (
            spread, limit, hottest["target"], hottest["metrics"]["temperature_max_c"])
    return results.make(NODE_CHECK, status, reason=reason, target="node", metrics=metrics, **base)


def records(text, ctx):
    """gpu.soak records per GPU and the gpu.soak_node record, or one skip/error record."""
    params = ctx.params
    base = {"params": record_params(params, ctx.argv), "tool": {"name": TOOL}, "started": ctx.started,
            "duration_s": ctx.duration_s}
    output = text if ctx.output is None else ctx.output
    try:
        parsed = burnin.parse_soak(text)
    except ParseError as exc:
        if "No module named 'torch'" in (output or ""):
            return [results.skip(CHECK, "PyTorch is not importable by %s" % ctx.python, **base)]
        return [results.error(CHECK, "soak worker failed (rc %s): %s" % (ctx.rc, exc), raw=output, **base)]
    base["tool"] = {"name": TOOL, "version": parsed["start"].get("torch")}
    if parsed["skip"]:
        return [results.skip(CHECK, "no GPU: %s" % parsed["skip"], **base)]
    devices = [d for d in parsed["start"].get("devices") or [] if isinstance(d, int)]
    profiles = expectations.all_profiles(params.get("profiles"))
    names = [n for n in (parsed["start"].get("gpu_names") or {}).values() if n]
    profile, why = expectations.choose_profile(params.get("profile", "auto"), names[0] if names else None,
                                               len(devices), profiles)
    out = [_gpu_record(dev, parsed, params, base, (profile, why, profiles)) for dev in devices]
    if out:
        out.append(node_record(out, base))
    if parsed["end"] is None or ctx.rc not in (0, None):
        out.append(results.error(CHECK, "the soak worker stopped early (rc %s%s)" % (
            ctx.rc, ", timed out" if ctx.timed_out else ""), raw=output, **base))
    return out


def from_output(path, params, host=None, started=None):
    """Import mode: the records of a saved soak worker stdout (burnin_worker.py soak)."""
    text = imports.read_output(path)
    return imports.bounded(records(text, Context(params=params, host=host, started=started or results.utc_now(),
                                                 source=path)))
