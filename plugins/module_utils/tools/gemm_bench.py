# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GEMM check's adapter: ``OPTIONS``, ``worker_args(params)``, ``records(text, ctx)`` (see tools/__init__.py).

``gpu.gemm_<dtype>`` records per GPU, or one skip/error record. ``text`` is the worker's stdout (its result lines);
``ctx.output`` stdout and stderr together (skip and error reasons; default ``text``); ``ctx.python`` the interpreter
that ran the worker; ``ctx.params`` the gemm_bench options (profile, profiles, expect, ...). Raises
expectations.ExpectationError only for a bad ``profile`` option, never on tool output. ``OPTIONS``: the shapes,
dtypes, GPU indices, time limit and judgement of a run (the module adds where its worker runs: ``python``, ``worker_dir``).
Runs on the targets: Python 3.8+, no Ansible imports.
"""

from __future__ import annotations

import statistics

from ansible_collections.aifabric.acceptance.plugins.module_utils import expectations, results, thresholds
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import gemm as gemm_parser
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import ParseError

# the matrix shape, C = A x B with A m x k and B k x n (the soak's too; doc fragment _gemm_shape)
SHAPE_OPTIONS = dict(
    m=dict(type="int", default=8192),
    n=dict(type="int", default=8192),
    k=dict(type="int", default=8192),
)
OPTIONS = dict(
    dtypes=dict(type="list", elements="str", choices=["bf16", "fp16", "fp32", "tf32", "fp8"], default=["bf16", "fp16"]),
    **SHAPE_OPTIONS,
    iterations=dict(type="int", default=200),
    warmup_iterations=dict(type="int", default=10),
    warmup_s=dict(type="float", default=1.0),
    gpu_indices=dict(type="list", elements="int", default=[]),
    timeout_s=dict(type="int", default=600),
    **expectations.PROFILE_SPEC,
    expect=dict(type="dict", default={}),
)
TOOL = "gemm_bench"
# its names (docs/architecture.md's table of tools) and what the contract checks (tools/__init__.py)
CHECKS = "gpu"
MODULE = "gemm_bench"
KUBERNETES = ("gemm_bench",)
# how it runs and what its records come from
ARGV = ("worker_args",)
PARSERS = ("gemm",)
NO_IMPORT = "the GEMM worker's output is only read from the run the module or the pod launched"
GOLDEN = ("gemm-records",)


def worker_args(params):
    """Arguments of the worker's ``gemm`` command (after ``python worker.py``): the SSH module and the Kubernetes
    planner run the same."""
    args = ["gemm", "--dtypes", ",".join(params["dtypes"]), "--m", str(params["m"]), "--n", str(params["n"]),
            "--k", str(params["k"]), "--iters", str(params["iterations"]),
            "--warmup", str(params["warmup_iterations"]), "--warmup-s", str(params["warmup_s"])]
    if params.get("gpu_indices"):
        args += ["--devices", ",".join(str(d) for d in params["gpu_indices"])]
    if "tf32" in params["dtypes"]:
        args.append("--allow-tf32")
    return args


def record_params(params, argv):
    """A record's params: what ran."""
    return {"argv": argv, "dtypes": params["dtypes"], "m": params["m"], "n": params["n"], "k": params["k"],
            "iterations": params["iterations"], "warmup_iterations": params["warmup_iterations"],
            "warmup_s": params["warmup_s"]}


def records(text, ctx):
    """gpu.gemm_<dtype> records per GPU, or one skip/error record."""
    return results.rests_on(_records(text, ctx.rc, ctx.params, output=ctx.output, started=ctx.started,
                                     duration_s=ctx.duration_s, argv=ctx.argv, python=ctx.python))


def retest_wanted(records):
    """The (GPU index, dtype) pairs of a run to measure once more before a verdict rests on them: each judged record
    that failed, and each GPU whose figure is below thresholds.PEERS ``fail_below_pct`` % of the median of its
    siblings (the same dtype on the other GPUs of the run), which the report's peers analysis would fail. Sorted."""
    judged = [r for r in records if r.get("status") in results.JUDGED and r.get("check", "").startswith("gpu.gemm_")]
    wanted = set()
    for record in judged:
        figure = (record.get("metrics") or {}).get("tflops")
        siblings = [(r.get("metrics") or {}).get("tflops") for r in judged
                    if r["check"] == record["check"] and r.get("target") != record.get("target")]
        siblings = [f for f in siblings if f is not None]
        low = (figure is not None and siblings and statistics.median(siblings) > 0
               and 100.0 * figure / statistics.median(siblings) < thresholds.PEERS["fail_below_pct"])
        if record["status"] == "fail" or low:
            wanted.add((int(record["target"]), record["check"][len("gpu.gemm_"):]))
    return sorted(wanted)


def retest_params(params, wanted):
    """The options of the retest of ``wanted`` (retest_wanted): the same run on those GPUs and dtypes only."""
    dtypes = set(dtype for _gpu, dtype in wanted)
    return dict(params, gpu_indices=sorted(set(gpu for gpu, _dtype in wanted)),
                dtypes=[dtype for dtype in params["dtypes"] if dtype in dtypes])


def with_retest(records, retest, wanted):
    """``records`` of the first run with each ``wanted`` (GPU, dtype) judged on both runs (results.retested; the
    retest's records ``retest``: a GPU and dtype it has no judged record of, or a whole-run error, is a retest that
    measured nothing)."""
    keys = set(("gpu.gemm_%s" % dtype, str(gpu)) for gpu, dtype in wanted)
    again = dict(((r.get("check"), r.get("target")), r) for r in retest if r.get("check") != "gpu.gemm")
    whole = [r for r in retest if r.get("check") == "gpu.gemm"]
    out = []
    for record in records:
        key = (record.get("check"), record.get("target"))
        if key in keys:
            second = again.get(key) or (whole[0] if whole else results.error(
                record["check"], "the retest printed no result for GPU %s" % record.get("target"), tool={"name": TOOL}))
            record = results.retested(record, second, "tflops")
        out.append(record)
    return out


def _gemm_records(items, params, started, duration_s, raw, profile, profile_why, profiles, rules):
    """Result records from the worker's result lines (pure; unit-tested)."""
    out = []
    for item in items:
        if "skip" in item:
            out.append(results.skip("gpu.gemm", "no GPU: %s" % item["skip"], params=params, started=started,
                                    tool={"name": TOOL, "version": item.get("torch")}))
            continue
        dtype = item.get("dtype") or "unknown"
        check = "gpu.gemm_%s" % dtype
        target = str(item.get("device"))
        shape = "%sx%sx%s" % (item.get("m"), item.get("n"), item.get("k"))
        facts = {"gpu_model": item.get("gpu_name"), "torch_version": item.get("torch"),
                 "cuda_version": item.get("cuda"), "shape": "%s %s" % (dtype, shape),
                 "profile_choice": profile_why}
        tool = {"name": TOOL, "version": item.get("torch")}
        if item.get("error"):
            out.append(results.error(check, "GEMM %s %s failed on GPU %s: %s" % (dtype, shape, target, item["error"]),
                                     raw=raw, target=target, facts=facts, params=params, tool=tool, started=started))
            continue
        power_mw = item.get("power_mw")
        metrics = {
            "tflops": item.get("tflops"),
            "time_ms": item.get("time_ms"),
            "sm_clock_mhz": item.get("sm_clock_mhz"),
            "power_w": None if power_mw is None else power_mw / 1000.0,
            "temperature_c": item.get("temperature_c"),
            "utilization_pct": item.get("utilization_pct"),
            "m": item.get("m"), "n": item.get("n"), "k": item.get("k"),
            "iters_count": item.get("iters"),
            "warmup_count": item.get("warmup_products"),
        }
        metric_rules, _sizes, _source = (None, None, None)
        if profile:
            facts["profile"] = profile
            metric_rules, _sizes, _source = expectations.profile_rules(profile, check, {}, profiles)
            if shape != "8192x8192x8192" and metric_rules:
                # Profile floors are for the 8192^3 square product; other shapes are judged by user rules only.
                facts["profile_note"] = "profile floors apply to 8192x8192x8192 only; not applied to %s" % shape
                metric_rules = None
        status, reason, expect = expectations.judge(
            metrics, expectations.merge_rules(metric_rules, expectations.rules_for_check(rules, check)))
        record = results.make(check, status, reason=reason, target=target, metrics=metrics, expect=expect,
                              facts=facts, params=params, tool=tool, started=started, duration_s=duration_s)
        out.append(expectations.physical_check(
            record, raw=raw, extra=expectations.gemm_implausible(metrics, dtype, item.get("gpu_name"))))
    return out


def _missing_results(items, params, run_params, started, raw):
    """An ``error`` record for each asked dtype of a GPU that printed no result line for it (the worker walks GPUs
    and dtypes in order: a killed worker or a cut output loses the tail), and for each asked GPU (``gpu_indices``)
    that printed none."""
    if any("skip" in item for item in items):
        return []
    seen = set((str(item.get("device")), item.get("dtype")) for item in items)
    devices = [str(d) for d in params.get("gpu_indices") or []] or sorted(set(d for d, _dtype in seen), key=str)
    out = []
    for device in devices:
        for dtype in params.get("dtypes") or []:
            if (device, dtype) not in seen:
                out.append(results.error(
                    "gpu.gemm_%s" % dtype, "no GEMM %s result for GPU %s in the worker's output: the run stopped "
                    "before it (killed, or the output was cut)" % (dtype, device), raw=raw, target=device,
                    params=run_params, started=started, tool={"name": TOOL}))
    return out


def _records(stdout, rc, params, output=None, started=None, duration_s=None, argv=None,
             python="python3"):
    """Records of one GEMM worker run from its stdout (``output`` = stdout+stderr, for errors and skips)."""
    output = stdout if output is None else output
    run_params = record_params(params, argv)
    try:
        items = gemm_parser.parse_gemm(stdout)
    except ParseError as exc:
        missing = [ln.strip() for ln in (output or "").splitlines() if "No module named 'torch'" in ln]
        if missing:
            return [results.skip("gpu.gemm", "PyTorch is not importable by %s: %s" % (python, missing[-1]),
                                 params=run_params, started=started, tool={"name": TOOL})]
        return [results.error("gpu.gemm", "GEMM worker failed (rc %s): %s" % (rc, exc), raw=output,
                              params=run_params, started=started, duration_s=duration_s,
                              tool={"name": TOOL})]
    profiles = expectations.all_profiles(params.get("profiles"))
    gpu_names = [i.get("gpu_name") for i in items if i.get("gpu_name")]
    gpu_count = len(set(i.get("device") for i in items if "device" in i))
    profile, why = expectations.choose_profile(params.get("profile", "auto"), gpu_names[0] if gpu_names else None,
                                               gpu_count, profiles)
    records = _gemm_records(items, run_params, started, duration_s, output, profile, why, profiles,
                            params.get("expect") or {})
    records += _missing_results(items, params, run_params, started, output)
    if rc not in (0, None):
        records.append(results.error("gpu.gemm", "GEMM worker exited with rc %s" % rc, raw=output,
                                     params=run_params, started=started, tool={"name": TOOL}))
    return records
