#!/usr/bin/python
# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: copy_bandwidth
short_description: Copy-bandwidth matrix - host-to-device, device-to-host and every GPU pair's peer-to-peer copies
version_added: 1.2.0
author:
  - aifabric.acceptance contributors (@aifabric)
description:
  - Measures, per GPU, host-to-device and device-to-host copies from and to pinned host memory, and per ordered GPU
    pair the peer-to-peer copy issued by the source GPU (write) and by the destination GPU (read) - through
    C(nvbandwidth) when it is installed (its copy-engine tests; O(use_nvbandwidth)), else the collection's own GPU worker
    (PyTorch and C(cudaMemcpyPeerAsync), timed with CUDA events).
  - Returns one record per copy, C(gpu.copy_h2d) and C(gpu.copy_d2h) (target = the GPU index), C(gpu.copy_p2p_read)
    and C(gpu.copy_p2p_write) (target C(<src>-><dst>); the reason names both GPUs).
  - Each copy is judged against what its link should carry - PCIe generation x width (from C(nvidia-smi)) times the
    lowest healthy efficiency measured (86 %) times 0.8, or for a GPU pair over NVLink the links x per-link rate of
    C(nvidia-smi nvlink -s) times 0.5 - and against the node's other copies of the same kind (below 80 % of their
    median fails), and by O(expect).
extends_documentation_fragment: [aifabric.acceptance._attributes, aifabric.acceptance._attributes.results,
                                 aifabric.acceptance._attributes.benchmark, aifabric.acceptance._torch]
attributes:
  check_mode:
    details: Returns the command that would run and empty results; starts no copies.
options:
  use_nvbandwidth:
    description: V(auto) runs C(nvbandwidth) when O(nvbandwidth) is found, else the worker; V(always) requires it (a
      host without it gets an C(error) record); V(never) always runs the collection's worker.
    type: str
    choices: [auto, always, never]
    default: auto
  nvbandwidth:
    description: The C(nvbandwidth) program (name on PATH or absolute path).
    type: str
    default: nvbandwidth
  size_bytes:
    description:
      - Bytes per copy (nvbandwidth takes it in MiB, rounded down).
      - Must be 1 or more.
    type: int
    default: 268435456
  iterations:
    description:
      - Timed copies per measurement (nvbandwidth C(-i) samples).
      - Must be 1 or more.
    type: int
    default: 20
  peer_copies:
    description: Measure the GPU pairs too (with one GPU there are none).
    type: bool
    default: true
  gpu_indices:
    description:
      - GPU indices to measure (the worker only). Empty means every GPU.
      - Must be 0 or more.
    type: list
    elements: int
    default: []
  nvidia_smi:
    description: The C(nvidia-smi) program that reports the PCIe and NVLink facts.
    type: str
    default: nvidia-smi
  timeout_s:
    description:
      - Seconds before the measurement is killed.
      - Must be 1 or more.
    type: int
    default: 300
  worker_dir:
    description: Directory on the target where the worker program is written (as for M(aifabric.acceptance.gemm_bench)).
    type: path
  from_output:
    description:
      - Import mode, a saved stdout of the copy worker or a saved C(nvbandwidth) text output (a file on the host the
        module runs on) to make the records of; nothing runs. An nvbandwidth output is judged against its copies of the
        same kind and O(expect) (the PCIe and NVLink facts are not in it).
    type: path
  expect:
    description: "User thresholds per metric (for example C({gpu.copy_h2d: {bw_gbyte_s: {min: 50}}}))."
    type: dict
    default: {}
seealso:
  - module: aifabric.acceptance.gpu_soak
"""

EXAMPLES = r"""
- name: The copy matrix, nvbandwidth where installed
  aifabric.acceptance.copy_bandwidth:
    python: /opt/torch/.venv/bin/python3

- name: Read a saved nvbandwidth output
  aifabric.acceptance.copy_bandwidth:
    from_output: /srv/aifabric/captures/node07-nvbandwidth.txt
  delegate_to: localhost
"""

RETURN = r"""
results:
  description: One C(gpu.copy_<kind>) record per copy, or one C(skip)/C(error) record.
  returned: always
  type: list
  elements: dict
  sample:
    - check: gpu.copy_h2d
      target: "0"
      status: pass
      metrics: {bw_gbyte_s: 54.2, size_bytes: 268435456}
cmd:
  description: The argv that ran (or would run).
  returned: always
  type: list
  elements: str
tool_rc:
  description: Exit code of the measurement (not C(rc) - a slow copy is a record, not a failed task).
  returned: when a process ran
  type: int
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aifabric.acceptance.plugins.module_utils import argspec, burnin_worker, gpu_worker, modmain
from ansible_collections.aifabric.acceptance.plugins.module_utils import results, runner
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import ToolTimeout
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import Context, copy_bandwidth

RANGES = {"size_bytes": argspec.POSITIVE, "iterations": argspec.POSITIVE, "gpu_indices": argspec.NON_NEGATIVE,
          "timeout_s": argspec.POSITIVE}
SPEC = dict(python=dict(type="str", default="python3"), worker_dir=dict(type="path"), from_output=dict(type="path"),
            **copy_bandwidth.OPTIONS)


def main():
    module = argspec.module(AnsibleModule, RANGES, argument_spec=SPEC, supports_check_mode=True)
    modmain.run(module, "copy_bandwidth", lambda module: _run(module, module.params))


def _find(module, program):
    """A program by name on PATH or by absolute path (runner.find_tool's trust rules), or None."""
    return runner.find_tool(module, os.path.basename(program), path=program if os.path.isabs(program) else None,
                            required=False)


def _facts(module, p):
    """The link facts beside an nvbandwidth run: the PCIe query and nvlink -s (empty when nvidia-smi fails)."""
    out = {}
    smi = _find(module, p["nvidia_smi"])
    if not smi:
        return out
    for key, args in sorted(copy_bandwidth.FACT_QUERIES.items()):
        try:
            run = runner.run(module, [smi] + list(args), copy_bandwidth.FACT_S)
        except ToolTimeout:
            continue
        out[key] = run.stdout if run.rc == 0 else ""
    return out


def _run(module, p):
    started = results.utc_now()
    if p["from_output"]:
        module.exit_json(changed=False, results=copy_bandwidth.from_output(p["from_output"], p, started=started))
    binary = None if p["use_nvbandwidth"] == "never" else _find(module, p["nvbandwidth"])
    if p["use_nvbandwidth"] == "always" and not binary:
        module.exit_json(changed=False, cmd=[p["nvbandwidth"]], results=[results.error(
            copy_bandwidth.CHECK, "nvbandwidth is not installed (%s); build it from github.com/NVIDIA/nvbandwidth or "
            "set use_nvbandwidth: auto" % p["nvbandwidth"], started=started)])
    directory = p["worker_dir"] or module.tmpdir
    facts, python_path = None, p["python"]
    if binary:
        argv = copy_bandwidth.nvbandwidth_argv(binary, p)
    else:
        argv = runner.python_argv(p["python"], [os.path.join(directory, gpu_worker.BURNIN_NAME)]
                                  + copy_bandwidth.worker_args(p))
    if module.check_mode:
        module.exit_json(changed=False, cmd=argv, results=[])
    if binary:
        facts = _facts(module, p)
    else:
        python_path = runner.find_tool(module, os.path.basename(p["python"]),
                                       path=p["python"] if os.path.isabs(p["python"]) else None, required=False,
                                       keep_name=True)
        if not python_path:
            module.exit_json(changed=False, cmd=[p["python"]], results=[results.skip(
                copy_bandwidth.CHECK, "no Python %s on this host and no nvbandwidth" % p["python"], started=started)])
        worker, _changed = gpu_worker.stage(directory, burnin_worker, gpu_worker.BURNIN_NAME)
        argv = runner.python_argv(python_path, [worker] + copy_bandwidth.worker_args(p))
    try:
        run = runner.run(module, argv, p["timeout_s"])
    except ToolTimeout as exc:
        module.exit_json(changed=False, cmd=argv, tool_rc=exc.details.get("rc"), results=[results.error(
            copy_bandwidth.CHECK, str(exc), raw=exc.details.get("stdout_tail", "") + exc.details.get("stderr_tail", ""),
            started=started, tool={"name": copy_bandwidth.WORKER_TOOL})])
    records = copy_bandwidth.records(run.stdout, Context(params=p, rc=run.rc, output=run.output, started=started,
                                                         duration_s=run.elapsed_s, argv=argv, facts=facts,
                                                         python=python_path))
    module.exit_json(changed=False, cmd=argv, tool_rc=run.rc, results=records)


if __name__ == "__main__":
    main()
