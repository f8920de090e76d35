#!/usr/bin/python
# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: gemm_bench
short_description: Per-GPU matrix-multiply throughput (TFLOP/s) through PyTorch and cuBLAS
version_added: 1.0.0
author:
  - aifabric.acceptance contributors (@aifabric)
description:
  - Multiplies random matrices on every GPU of the host, one GPU after the other, with the host's own Python (the one
    that has PyTorch), and reports the throughput per GPU and data type (2 x M x N x K / time, timed with CUDA events
    over O(iters) products after O(warmup_iters) untimed ones).
  - Also reports the SM clock, power draw, temperature and utilisation sampled while the products run, so a low figure
    can be told apart as throttling.
  - Returns one result record C(gpu.gemm_<dtype>) per GPU and data type (target = the GPU index), judged by the
    hardware profile (auto-detected from the GPU model and count) and by O(expect).
  - A host without PyTorch or without a CUDA device gets a C(skip) record saying why.
extends_documentation_fragment:
  - aifabric.acceptance._attributes
  - aifabric.acceptance._attributes.results
  - aifabric.acceptance._attributes.benchmark
  - aifabric.acceptance._profiles
attributes:
  check_mode:
    details: Returns the command that would run and empty results; starts no work on the GPUs.
options:
  python:
    description: Python interpreter on the target that can import C(torch) with CUDA.
    type: str
    default: python3
  dtypes:
    description: Data types to measure.
    type: list
    elements: str
    choices: [bf16, fp16, fp32, tf32, fp8]
    default: [bf16, fp16]
  m:
    description: Rows of A and C.
    type: int
    default: 8192
  n:
    description: Columns of B and C.
    type: int
    default: 8192
  k:
    description: Columns of A, rows of B.
    type: int
    default: 8192
  iters:
    description: Timed products per GPU and data type (200 products of 8192^3 bf16 take about 0.3 s on an H200).
    type: int
    default: 200
  warmup_iters:
    description: Untimed products before timing (at least; see O(warmup_s)).
    type: int
    default: 10
  warmup_s:
    description: Seconds of untimed products before timing, so that clocks and power settle (an idle GPU starts slow).
    type: float
    default: 1.0
  devices:
    description: GPU indices to measure (as PyTorch numbers them). Empty means every GPU.
    type: list
    elements: int
    default: []
  worker_dir:
    description: Directory on the target where the worker program is written. Default is the module's temporary directory.
    type: path
  timeout:
    description: Seconds before the run is killed.
    type: int
    default: 600
  expect:
    description:
      - "User thresholds per metric (for example C({tflops: {min: 700}})), applied to every data type, or per check
        (C({gpu.gemm_bf16: {tflops: {min: 700}}})); they override the profile's."
    type: dict
    default: {}
seealso:
  - module: aifabric.acceptance.allreduce_probe
"""

EXAMPLES = r"""
- name: bf16 and fp16 GEMM on every GPU, 8192^3
  aifabric.acceptance.gemm_bench:
    python: /opt/torch/.venv/bin/python3

- name: A rectangular shape, bf16 only, with a site threshold
  aifabric.acceptance.gemm_bench:
    dtypes: [bf16]
    m: 16384
    n: 4096
    k: 8192
    expect:
      tflops: {min: 650, warn_below_pct: 95}
"""

RETURN = r"""
results:
  description: One C(gpu.gemm_<dtype>) record per GPU and data type, or one C(skip) record.
  returned: always
  type: list
  elements: dict
  sample:
    - check: gpu.gemm_bf16
      target: "0"
      status: pass
      metrics: {tflops: 786.5, time_ms: 1.398, sm_clock_mhz: 1980, power_w: 690.2}
cmd:
  description: The argv that ran (or would run).
  returned: always
  type: list
  elements: str
tool_rc:
  description:
    - Exit code of the worker. Not named C(rc) on purpose, a non-zero C(rc) would fail the task, while a failed
      benchmark is reported as an C(error) record and the play goes on.
  returned: when a process ran
  type: int
"""

import os
import traceback

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aifabric.acceptance.plugins.module_utils import expectations, gpu_worker, results, runner
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import AcceptanceError, ParseError, ToolTimeout

TOOL = "torch-gemm"


def gemm_records(items, params, started, duration_s, raw, profile, profile_why, profiles, rules):
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
        out.append(results.make(check, status, reason=reason, target=target, metrics=metrics, expect=expect,
                                facts=facts, params=params, tool=tool, started=started, duration_s=duration_s))
    return out


def main():
    module = AnsibleModule(
        argument_spec=dict(
            python=dict(type="str", default="python3"),
            dtypes=dict(type="list", elements="str", choices=["bf16", "fp16", "fp32", "tf32", "fp8"],
                        default=["bf16", "fp16"]),
            m=dict(type="int", default=8192),
            n=dict(type="int", default=8192),
            k=dict(type="int", default=8192),
            iters=dict(type="int", default=200),
            warmup_iters=dict(type="int", default=10),
            warmup_s=dict(type="float", default=1.0),
            devices=dict(type="list", elements="int", default=[]),
            worker_dir=dict(type="path"),
            timeout=dict(type="int", default=600),
            **expectations.PROFILE_SPEC,
            expect=dict(type="dict", default={}),
        ),
        supports_check_mode=True,
    )
    p = module.params
    try:
        _run(module, p)
    except AcceptanceError as exc:
        module.fail_json(msg=str(exc), **exc.details)
    except expectations.ExpectationError as exc:
        module.fail_json(msg=str(exc))
    except Exception as exc:  # pylint: disable=broad-except
        module.fail_json(msg="gemm_bench failed: %s" % exc, exception=traceback.format_exc())


def _run(module, p):
    started = results.utc_now()
    directory = p["worker_dir"] or module.tmpdir
    worker = os.path.join(directory, gpu_worker.WORKER_NAME)
    worker_args = ["gemm", "--dtypes", ",".join(p["dtypes"]), "--m", str(p["m"]), "--n", str(p["n"]),
                   "--k", str(p["k"]), "--iters", str(p["iters"]), "--warmup", str(p["warmup_iters"]),
                   "--warmup-s", str(p["warmup_s"])]
    if p["devices"]:
        worker_args += ["--devices", ",".join(str(d) for d in p["devices"])]
    if "tf32" in p["dtypes"]:
        worker_args.append("--allow-tf32")
    python = p["python"]
    if module.check_mode:
        module.exit_json(changed=False, cmd=[python, worker] + worker_args, results=[])
    python_path = runner.find_tool(module, os.path.basename(python), path=python if os.path.isabs(python) else None,
                                   required=False)
    if not python_path:
        module.exit_json(changed=False, cmd=[python], results=[results.skip(
            "gpu.gemm", "no Python %s on this host (set python: to the interpreter that has PyTorch)" % python,
            started=started)])
    worker, _changed = gpu_worker.stage(directory)
    argv = [python_path, worker] + worker_args
    params = {"argv": argv, "dtypes": p["dtypes"], "m": p["m"], "n": p["n"], "k": p["k"],
              "iters": p["iters"], "warmup_iters": p["warmup_iters"], "warmup_s": p["warmup_s"]}
    try:
        run = runner.run(module, argv, p["timeout"])
    except ToolTimeout as exc:
        module.exit_json(changed=False, cmd=argv, tool_rc=exc.details.get("rc"), results=[results.error(
            "gpu.gemm", str(exc), raw=exc.details.get("stdout_tail", "") + exc.details.get("stderr_tail", ""),
            params=params, started=started, tool={"name": TOOL})])
    try:
        items = gpu_worker.parse_gemm(run.stdout)
    except ParseError as exc:
        missing = [ln.strip() for ln in run.output.splitlines() if "No module named 'torch'" in ln]
        if missing:
            module.exit_json(changed=False, cmd=argv, tool_rc=run.rc, results=[results.skip(
                "gpu.gemm", "PyTorch is not importable by %s: %s" % (python_path, missing[-1]), params=params,
                started=started, tool={"name": TOOL})])
        module.exit_json(changed=False, cmd=argv, tool_rc=run.rc, results=[results.error(
            "gpu.gemm", "GEMM worker failed (rc %d): %s" % (run.rc, exc), raw=run.output, params=params,
            started=started, duration_s=run.elapsed_s, tool={"name": TOOL})])
    profiles = expectations.all_profiles(p["profiles"])
    gpu_names = [i.get("gpu_name") for i in items if i.get("gpu_name")]
    gpu_count = len(set(i.get("device") for i in items if "device" in i))
    try:
        profile, why = expectations.choose_profile(p["profile"], gpu_names[0] if gpu_names else None, gpu_count,
                                                   profiles)
    except expectations.ExpectationError as exc:
        module.fail_json(msg=str(exc))
    records = gemm_records(items, params, started, run.elapsed_s, run.output, profile, why, profiles, p["expect"])
    if run.rc != 0:
        records.append(results.error("gpu.gemm", "GEMM worker exited with rc %d" % run.rc, raw=run.output,
                                     params=params, started=started, tool={"name": TOOL}))
    module.exit_json(changed=False, cmd=argv, tool_rc=run.rc, stdout=results.trim(run.stdout), results=records)


if __name__ == "__main__":
    main()
