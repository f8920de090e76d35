# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU worker checks (GEMM, torch all-reduce probe): argv and records from outputs (private).

Functions another substrate (Kubernetes: the worker runs in a pod, its log is the same text) calls:

- ``gemm_worker_args(params) -> [str]`` - the worker's arguments (after ``python worker.py``) for the
  gemm_bench options (dtypes, m, n, k, iters, warmup_iters, warmup_s, devices);
- ``records_from_gemm_output(stdout, rc, params, output=None, started=None, duration_s=None, argv=None,
  python="python3") -> [records]`` - ``gpu.gemm_<dtype>`` records per GPU, or one skip/error record;
  ``params`` the gemm_bench options (profile, profiles, expect, ...); raises expectations.ExpectationError
  only for a bad ``profile`` option, never on tool output;
- ``probe_worker_args(params) -> [str]`` - the all-reduce probe's arguments (before --json-out/--launcher);
- ``records_from_probe_output(json_text, output, rc, params, gpu_name=None, gpus=None, nodes=1, argv=None,
  env=None, started=None, duration_s=None, python="python3", launcher="spawn", ranks_per_node=None,
  hosts=None) -> [records]`` - one ``nccl.torch_all_reduce`` record from the probe's JSON document (None when
  it wrote none) and its text output (skip reasons, errors).

Runs on the targets: Python 3.8+, no Ansible imports.
"""

from __future__ import annotations

import json

from ansible_collections.aifabric.acceptance.plugins.module_utils import collectives, expectations, gpu_worker, launch
from ansible_collections.aifabric.acceptance.plugins.module_utils import results
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import ParseError
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import nccl_tests

GEMM_TOOL = "torch-gemm"
PROBE_CHECK = "nccl.torch_all_reduce"
PROBE_TOOL = "torch-allreduce-probe"
PROBE_COLLECTIVE = "all_reduce"   # what the probe measures (its JSON document's argv names all_reduce_perf)


# --------------------------------------------------------------------------- GEMM

def gemm_worker_args(params):
    """Arguments of the worker's ``gemm`` command."""
    args = ["gemm", "--dtypes", ",".join(params["dtypes"]), "--m", str(params["m"]), "--n", str(params["n"]),
            "--k", str(params["k"]), "--iters", str(params["iters"]), "--warmup", str(params["warmup_iters"]),
            "--warmup-s", str(params["warmup_s"])]
    if params.get("devices"):
        args += ["--devices", ",".join(str(d) for d in params["devices"])]
    if "tf32" in params["dtypes"]:
        args.append("--allow-tf32")
    return args


def gemm_params(params, argv):
    """The record's params: what ran."""
    return {"argv": argv, "dtypes": params["dtypes"], "m": params["m"], "n": params["n"], "k": params["k"],
            "iters": params["iters"], "warmup_iters": params["warmup_iters"], "warmup_s": params["warmup_s"]}


def gemm_records(items, params, started, duration_s, raw, profile, profile_why, profiles, rules):
    """Result records from the worker's result lines (pure; unit-tested)."""
    out = []
    for item in items:
        if "skip" in item:
            out.append(results.skip("gpu.gemm", "no GPU: %s" % item["skip"], params=params, started=started,
                                    tool={"name": GEMM_TOOL, "version": item.get("torch")}))
            continue
        dtype = item.get("dtype") or "unknown"
        check = "gpu.gemm_%s" % dtype
        target = str(item.get("device"))
        shape = "%sx%sx%s" % (item.get("m"), item.get("n"), item.get("k"))
        facts = {"gpu_model": item.get("gpu_name"), "torch_version": item.get("torch"),
                 "cuda_version": item.get("cuda"), "shape": "%s %s" % (dtype, shape),
                 "profile_choice": profile_why}
        tool = {"name": GEMM_TOOL, "version": item.get("torch")}
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
        out.append(expectations.physical_check(record, raw=raw))
    return out


def missing_gemm_results(items, params, run_params, started, raw):
    """An ``error`` record for each asked dtype of a GPU that printed no result line for it (the worker walks GPUs
    and dtypes in order: a killed worker or a cut output loses the tail), and for each asked GPU (``devices``)
    that printed none."""
    if any("skip" in item for item in items):
        return []
    seen = set((str(item.get("device")), item.get("dtype")) for item in items)
    devices = [str(d) for d in params.get("devices") or []] or sorted(set(d for d, _dtype in seen), key=str)
    out = []
    for device in devices:
        for dtype in params.get("dtypes") or []:
            if (device, dtype) not in seen:
                out.append(results.error(
                    "gpu.gemm_%s" % dtype, "no GEMM %s result for GPU %s in the worker's output: the run stopped "
                    "before it (killed, or the output was cut)" % (dtype, device), raw=raw, target=device,
                    params=run_params, started=started, tool={"name": GEMM_TOOL}))
    return out


def records_from_gemm_output(stdout, rc, params, output=None, started=None, duration_s=None, argv=None,
                             python="python3"):
    """Records of one GEMM worker run from its stdout (``output`` = stdout+stderr, for errors and skips)."""
    output = stdout if output is None else output
    run_params = gemm_params(params, argv)
    try:
        items = gpu_worker.parse_gemm(stdout)
    except ParseError as exc:
        missing = [ln.strip() for ln in (output or "").splitlines() if "No module named 'torch'" in ln]
        if missing:
            return [results.skip("gpu.gemm", "PyTorch is not importable by %s: %s" % (python, missing[-1]),
                                 params=run_params, started=started, tool={"name": GEMM_TOOL})]
        return [results.error("gpu.gemm", "GEMM worker failed (rc %s): %s" % (rc, exc), raw=output,
                              params=run_params, started=started, duration_s=duration_s,
                              tool={"name": GEMM_TOOL})]
    profiles = expectations.all_profiles(params.get("profiles"))
    gpu_names = [i.get("gpu_name") for i in items if i.get("gpu_name")]
    gpu_count = len(set(i.get("device") for i in items if "device" in i))
    profile, why = expectations.choose_profile(params.get("profile", "auto"), gpu_names[0] if gpu_names else None,
                                               gpu_count, profiles)
    records = gemm_records(items, run_params, started, duration_s, output, profile, why, profiles,
                           params.get("expect") or {})
    records += missing_gemm_results(items, params, run_params, started, output)
    if rc not in (0, None):
        records.append(results.error("gpu.gemm", "GEMM worker exited with rc %s" % rc, raw=output,
                                     params=run_params, started=started, tool={"name": GEMM_TOOL}))
    return records


# --------------------------------------------------------------------------- torch all-reduce probe

def probe_worker_args(params):
    """Arguments of the worker's ``allreduce`` command (sizes, iterations, data type, check)."""
    for key in ("min_bytes", "max_bytes"):
        if not collectives.SIZE_RE.match(str(params[key])):
            raise collectives.OptionError("%s %r is not a size (digits with an optional K, M or G)"
                                          % (key, params[key]))
    return ["allreduce", "--min-bytes", params["min_bytes"], "--max-bytes", params["max_bytes"],
            "--step-factor", str(params["step_factor"]), "--iters", str(params["iters"]),
            "--warmup", str(params["warmup_iters"]), "--dtype", params["datatype"],
            "--check", str(int(params["check"]))]


def probe_skip_reason(output):
    """Why the worker could not measure at all (no torch, no CUDA device), or None."""
    for line in (output or "").splitlines():
        if "No module named 'torch'" in line:
            return "PyTorch is not importable: %s" % line.strip()
        if line.startswith("AIFABRIC_SKIP"):
            return line[len("AIFABRIC_SKIP"):].strip()
    return None


def last_line(text):
    lines = [ln.strip() for ln in (text or "").splitlines() if ln.strip()]
    return lines[-1] if lines else "no output"


def probe_params(params, argv, env, launcher, ranks_per_node, hosts):
    """The record's params: what ran."""
    env = dict((k, v) for k, v in (env or {}).items() if k != launch.TAG_ENV)   # the run tag is not a parameter
    return {"argv": argv, "env": env, "launcher": launcher, "ranks_per_node": ranks_per_node,
            "hosts": hosts, "min_bytes": params.get("min_bytes"), "max_bytes": params.get("max_bytes"),
            "iters": params.get("iters"), "warmup_iters": params.get("warmup_iters"),
            "datatype": params.get("datatype")}


def records_from_probe_output(json_text, output, rc, params, gpu_name=None, gpus=None, nodes=1, argv=None,
                              env=None, started=None, duration_s=None, python="python3", launcher="spawn",
                              ranks_per_node=None, hosts=None):
    """The nccl.torch_all_reduce record of one probe run (its JSON document, or None, and its text output)."""
    env = dict(env or {})
    run_params = probe_params(params, argv, env, launcher, ranks_per_node, hosts)
    profiles = expectations.all_profiles(params.get("profiles"))
    profile, profile_why = expectations.choose_profile(params.get("profile", "auto"), gpu_name, gpus, profiles)
    if json_text is None:
        skip = probe_skip_reason(output)
        if skip:
            return [results.skip(PROBE_CHECK, "%s (%s)" % (skip, python), params=run_params, started=started,
                                 tool={"name": PROBE_TOOL})]
        return [results.error(PROBE_CHECK, "the probe wrote no result (rc %s): %s" % (rc, last_line(output)),
                              raw=output, params=run_params, started=started, duration_s=duration_s,
                              tool={"name": PROBE_TOOL})]
    extra_facts = {"launcher": launcher, "placement": "in_place", "profile_choice": profile_why}
    try:
        parsed = nccl_tests.parse_json(json_text)
        doc = json.loads(json_text)
    except (ParseError, ValueError) as exc:
        return [results.error(PROBE_CHECK, "could not read the probe's JSON: %s" % exc, raw=output,
                              params=run_params, started=started, duration_s=duration_s, tool={"name": PROBE_TOOL})]
    if isinstance(doc, dict):
        extra_facts.update({"torch_version": doc.get("torch_version"), "cuda_version": doc.get("cuda_version")})
    return [collectives.to_record(
        parsed, check=PROBE_CHECK, params=run_params, tool_name=PROBE_TOOL, started=started, duration_s=duration_s,
        raw=output, rc=rc, nodes=nodes, algo=env.get("NCCL_ALGO"),
        rules=expectations.rules_for_check(params.get("expect") or {}, PROBE_CHECK), profile=profile,
        profiles=profiles, extra_facts=extra_facts, asked_collective=PROBE_COLLECTIVE)]
