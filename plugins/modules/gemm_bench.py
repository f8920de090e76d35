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
    over O(iterations) products after O(warmup_iterations) untimed ones).
  - Also reports the SM clock, power draw, temperature and utilisation sampled while the products run, so a low figure
    can be told apart as throttling.
  - Returns one result record C(gpu.gemm_<dtype>) per GPU and data type (target = the GPU index), judged by the
    hardware profile (auto-detected from the GPU model and count) and by O(expect).
  - A host without PyTorch or without a CUDA device gets a C(skip) record saying why.
  - No GPU fails on one run. A GPU and data type whose record fails, or whose throughput is below 80 % of the median of
    the other GPUs of the host (the report's peers analysis would fail it), is measured once more, within what is left
    of O(timeout_s), and judged on both runs - C(fail) only when both fail, C(warn) "inconclusive" when one fails and
    the other does not. The record keeps both figures (metrics C(run1_tflops), C(run2_tflops)) and says in
    C(params.runs) how many runs its status rests on (1 when nothing was retested).
extends_documentation_fragment: [aifabric.acceptance._attributes, aifabric.acceptance._attributes.results,
                                 aifabric.acceptance._attributes.benchmark, aifabric.acceptance._profiles, aifabric.acceptance._torch,
                                 aifabric.acceptance._gemm_shape]
attributes:
  check_mode:
    details: Returns the command that would run and empty results; starts no work on the GPUs.
options:
  dtypes:
    description: Data types to measure.
    type: list
    elements: str
    choices: [bf16, fp16, fp32, tf32, fp8]
    default: [bf16, fp16]
  iterations:
    description:
      - Timed products per GPU and data type (200 products of 8192^3 bf16 take about 0.3 s on an H200).
      - Must be 1 or more.
    type: int
    default: 200
  warmup_iterations:
    description:
      - Untimed products before timing (at least; see O(warmup_s)).
      - Must be 0 or more.
    type: int
    default: 10
  warmup_s:
    description:
      - Seconds of untimed products before timing, so that clocks and power settle (an idle GPU starts slow).
      - Must be 0 or more.
    type: float
    default: 1.0
  gpu_indices:
    description:
      - GPU indices to measure (as PyTorch numbers them). Empty means every GPU.
      - Must be 0 or more.
    type: list
    elements: int
    default: []
  worker_dir:
    description:
      - Directory on the target where the worker program is written; the worker runs from it. Default is the module's
        temporary directory.
      - Created C(0700) when absent. An existing one is used only when it is owned by the module's user, not writable
        by group or others, and no link on its way could be re-pointed by another user; otherwise the task fails and
        says which rule it breaks.
    type: path
  timeout_s:
    description:
      - Seconds before the run is killed; the retest of a failing GPU runs within what the first run left of them, and
        only when at least the first run's time is left.
      - Must be 1 or more.
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
retest_cmd:
  description: The argv of the retest of the GPUs and data types that failed or lay far below their siblings, null
    when nothing was retested.
  returned: when a process ran
  type: list
  elements: str
tool_rc:
  description:
    - Exit code of the worker. Not named C(rc) on purpose, a non-zero C(rc) would fail the task,
      while a failed benchmark is reported as an C(error) record and the play goes on.
  returned: when a process ran
  type: int
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aifabric.acceptance.plugins.module_utils import argspec, expectations, gpu_worker, results, runner
from ansible_collections.aifabric.acceptance.plugins.module_utils import modmain
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import ToolTimeout
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import Context, gemm_bench as gemm


RANGES = {
    "m": argspec.POSITIVE, "n": argspec.POSITIVE, "k": argspec.POSITIVE, "iterations": argspec.POSITIVE,
    "warmup_iterations": argspec.NON_NEGATIVE, "warmup_s": argspec.NON_NEGATIVE, "gpu_indices": argspec.NON_NEGATIVE,
    "timeout_s": argspec.POSITIVE,
}


# the run's options (tools/gemm_bench.py: the single source, the Kubernetes planner's too) and where the worker runs
SPEC = dict(
    python=dict(type="str", default="python3"),
    worker_dir=dict(type="path"),
    **gemm.OPTIONS,
)


def main():
    module = argspec.module(AnsibleModule, RANGES, argument_spec=SPEC, supports_check_mode=True)
    modmain.run(module, "gemm_bench", lambda module: _run(module, module.params),
                user_errors=(expectations.ExpectationError,))


def _run(module, p):
    started = results.utc_now()
    directory = p["worker_dir"] or module.tmpdir
    worker = os.path.join(directory, gpu_worker.WORKER_NAME)
    worker_args = gemm.worker_args(p)
    python = p["python"]
    if module.check_mode:
        module.exit_json(changed=False, cmd=runner.python_argv(python, [worker] + worker_args), results=[])
    python_path = runner.find_tool(module, os.path.basename(python), path=python if os.path.isabs(python) else None,
                                   required=False, keep_name=True)
    if not python_path:
        module.exit_json(changed=False, cmd=[python], results=[results.skip(
            "gpu.gemm", "no Python %s on this host (set python: to the interpreter that has PyTorch)" % python,
            started=started)])
    worker, _changed = gpu_worker.stage(directory)
    argv = runner.python_argv(python_path, [worker] + worker_args)
    try:
        run = runner.run(module, argv, p["timeout_s"])
    except ToolTimeout as exc:
        module.exit_json(changed=False, cmd=argv, tool_rc=exc.details.get("rc"), results=[results.error(
            "gpu.gemm", str(exc), raw=exc.details.get("stdout_tail", "") + exc.details.get("stderr_tail", ""),
            params=gemm.record_params(p, argv), started=started, tool={"name": gemm.TOOL})])
    records = gemm.records(run.stdout, Context(params=p, rc=run.rc, output=run.output, started=started,
                                               duration_s=run.elapsed_s, argv=argv, python=python_path))
    records, retest_cmd = _retest(module, p, records, run.elapsed_s, python_path, worker)
    module.exit_json(changed=False, cmd=argv, tool_rc=run.rc, stdout=results.trim(run.stdout), results=records,
                     retest_cmd=retest_cmd)


def _retest(module, p, records, elapsed_s, python_path, worker):
    """(records, the retest's argv or None): each GPU and dtype that failed or lies far below its siblings
    (gemm.retest_wanted) measured once more within what is left of ``timeout_s`` (runner.retest_limit) and judged on
    both runs (gemm.with_retest)."""
    wanted = gemm.retest_wanted(records)
    if not wanted:
        return records, None
    limit_s, why_not = runner.retest_limit(p["timeout_s"], elapsed_s, elapsed_s)
    retest_p = gemm.retest_params(p, wanted)
    argv = runner.python_argv(python_path, [worker] + gemm.worker_args(retest_p))
    started = results.utc_now()
    if limit_s is None:
        return gemm.with_retest(records, [results.error("gpu.gemm", why_not, started=started,
                                                        tool={"name": gemm.TOOL})], wanted), None
    try:
        run = runner.run(module, argv, limit_s)
    except ToolTimeout as exc:
        again = [results.error("gpu.gemm", str(exc), started=started, tool={"name": gemm.TOOL})]
    else:
        again = gemm.records(run.stdout, Context(params=retest_p, rc=run.rc, output=run.output, started=started,
                                                 duration_s=run.elapsed_s, argv=argv, python=python_path))
    return gemm.with_retest(records, again, wanted), argv


if __name__ == "__main__":
    main()
