#!/usr/bin/python
# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: gpu_soak
short_description: Burn-in soak - sustained GEMM on every GPU at once with per-second telemetry
version_added: 1.2.0
author:
  - aifabric.acceptance contributors (@aifabric)
description:
  - Runs a matrix-multiply loop on every GPU of the host at once for O(duration_s) seconds with the host's own Python
    (the one that has PyTorch), timing each GPU's throughput in windows of about one second, while
    C(nvidia-smi --query-gpu=... --format=csv -lms <sample_ms>) samples every GPU's power draw and limit, temperature,
    SM clock, clock-event (throttle) reasons, ECC and remapped-row counters; the kernel log's Xid lines (C(NVRM Xid)) and
    the PCIe replay counters (C(nvidia-smi -q)) are read before and after.
  - Returns one C(gpu.soak) record per GPU (target = the GPU index) with a downsampled series (throughput, power,
    temperature, SM clock over time) and one C(gpu.soak_node) record for the node. A GPU fails on sustained TFLOP/s
    below the hardware profile's GEMM floor or O(expect), a hardware slowdown reason while loaded, new Xid lines,
    uncorrectable ECC or remapped-row growth, or throughput jitter above 15 %; it warns on jitter above 5 %, power
    below 80 % of its limit (the soak did not load it), a power limit below 95 % of the default (a cap), corrected
    ECC or PCIe replay growth. The node record warns on a temperature spread above 15 C across its GPUs;
    a GPU below 80 % of its siblings' median fails in the report's peers analysis (C(gpu.soak.peers)). The first
    10 % of the soak (at least 3 s) is warm-up and not judged.
  - A host without PyTorch or without a CUDA device gets a C(skip) record saying why.
extends_documentation_fragment: [aifabric.acceptance._attributes, aifabric.acceptance._attributes.results,
                                 aifabric.acceptance._attributes.benchmark, aifabric.acceptance._profiles, aifabric.acceptance._torch,
                                 aifabric.acceptance._gemm_shape]
attributes:
  check_mode:
    details: Returns the command that would run and empty results; starts no work on the GPUs.
options:
  duration_s:
    description:
      - Seconds of load on every GPU (120 for a quick run, 1800 or more for an acceptance burn-in).
      - Must be 1 or more.
    type: int
    default: 120
  datatype:
    description: Data type of the matrices.
    type: str
    choices: [bf16, fp16, fp32, tf32]
    default: bf16
  sample_ms:
    description:
      - Telemetry sampling interval of C(nvidia-smi -lms), milliseconds.
      - Must be 100 or more.
    type: int
    default: 1000
  gpu_indices:
    description:
      - GPU indices to load (as PyTorch numbers them). Empty means every GPU.
      - Must be 0 or more.
    type: list
    elements: int
    default: []
  nvidia_smi:
    description:
      - The C(nvidia-smi) program (name on PATH or absolute path).
      - It is executed, so an absolute path and every directory on its way must be writable by nobody but root and
        the module's user; otherwise the task fails and says why.
    type: str
    default: nvidia-smi
  worker_dir:
    description:
      - Directory on the target where the worker program is written; the worker runs from it. Default is the module's
        temporary directory.
      - Created C(0700) when absent. An existing one is used only when it is owned by the module's user, not writable
        by group or others, and no link on its way could be re-pointed by another user.
    type: path
  from_output:
    description:
      - Import mode, a saved stdout of the soak worker (a file on the host the module runs on) to make the records of,
        judged with the options given here; nothing runs.
    type: path
  expect:
    description:
      - "User thresholds per metric of C(gpu.soak) (for example C({tflops: {min: 650}, temperature_max_c: {max: 85}}));
        they override the profile's."
    type: dict
    default: {}
seealso:
  - module: aifabric.acceptance.gemm_bench
  - module: aifabric.acceptance.copy_bandwidth
"""

EXAMPLES = r"""
- name: A two-minute soak of every GPU
  aifabric.acceptance.gpu_soak:
    python: /opt/torch/.venv/bin/python3

- name: Read a saved soak worker output
  aifabric.acceptance.gpu_soak:
    from_output: /srv/aifabric/captures/node07-soak.txt
    duration_s: 1800
  delegate_to: localhost

- name: The acceptance burn-in, 30 minutes
  aifabric.acceptance.gpu_soak:
    duration_s: 1800
    expect:
      temperature_max_c: {max: 87}
"""

RETURN = r"""
results:
  description: One C(gpu.soak) record per GPU and one C(gpu.soak_node) record, or one C(skip)/C(error) record.
  returned: always
  type: list
  elements: dict
  sample:
    - check: gpu.soak
      target: "0"
      status: pass
      metrics: {tflops: 687.6, tflops_jitter_pct: 0.2, power_of_limit_pct: 99.7, temperature_max_c: 65.0}
cmd:
  description: The argv that ran (or would run).
  returned: always
  type: list
  elements: str
tool_rc:
  description: Exit code of the worker (not C(rc) - a failed soak is a record, not a failed task).
  returned: when a process ran
  type: int
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aifabric.acceptance.plugins.module_utils import argspec, burnin_worker, expectations, gpu_worker
from ansible_collections.aifabric.acceptance.plugins.module_utils import modmain, results, runner
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import ToolTimeout
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import Context, gpu_soak as soak

RANGES = {"duration_s": argspec.POSITIVE, "m": argspec.POSITIVE, "n": argspec.POSITIVE, "k": argspec.POSITIVE,
          "sample_ms": (100, None), "gpu_indices": argspec.NON_NEGATIVE}
SPEC = dict(python=dict(type="str", default="python3"), worker_dir=dict(type="path"), from_output=dict(type="path"),
            **soak.OPTIONS)


def main():
    module = argspec.module(AnsibleModule, RANGES, argument_spec=SPEC, supports_check_mode=True)
    modmain.run(module, "gpu_soak", lambda module: _run(module, module.params),
                user_errors=(expectations.ExpectationError,))


def _run(module, p):
    started = results.utc_now()
    if p["from_output"]:
        module.exit_json(changed=False, results=soak.from_output(p["from_output"], p, started=started))
    directory = p["worker_dir"] or module.tmpdir
    worker = os.path.join(directory, gpu_worker.BURNIN_NAME)
    python = p["python"]
    if module.check_mode:
        module.exit_json(changed=False, cmd=runner.python_argv(python, [worker] + soak.worker_args(p)), results=[])
    python_path = runner.find_tool(module, os.path.basename(python), path=python if os.path.isabs(python) else None,
                                   required=False, keep_name=True)
    if not python_path:
        module.exit_json(changed=False, cmd=[python], results=[results.skip(
            soak.CHECK, "no Python %s on this host (set python: to the interpreter that has PyTorch)" % python,
            started=started)])
    # an nvidia-smi the user names by path is executed by the worker (often as root): it must pass the path rule first
    if os.path.isabs(p["nvidia_smi"]):
        p = dict(p, nvidia_smi=runner.checked_file(p["nvidia_smi"]))
    worker, _changed = gpu_worker.stage(directory, burnin_worker, gpu_worker.BURNIN_NAME)
    argv = runner.python_argv(python_path, [worker] + soak.worker_args(p))
    try:
        run = runner.run(module, argv, soak.timeout_s(p))
    except ToolTimeout as exc:
        module.exit_json(changed=False, cmd=argv, tool_rc=exc.details.get("rc"), results=[results.error(
            soak.CHECK, str(exc), raw=exc.details.get("stdout_tail", "") + exc.details.get("stderr_tail", ""),
            params=soak.record_params(p, argv), started=started, tool={"name": soak.TOOL})])
    records = soak.records(run.stdout, Context(params=p, rc=run.rc, output=run.output, started=started,
                                               duration_s=run.elapsed_s, argv=argv, python=python_path))
    module.exit_json(changed=False, cmd=argv, tool_rc=run.rc, results=records)


if __name__ == "__main__":
    main()
