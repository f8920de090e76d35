# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU worker checks (GEMM, torch all-reduce probe): the worker's arguments and what a record says ran (private).
Their records come from tools.gemm.records and tools.torch_allreduce.records (the one builder each caller uses).

- ``gemm_worker_args(params) -> [str]`` - the worker's arguments (after ``python worker.py``) for the
  gemm_bench options (dtypes, m, n, k, iterations, warmup_iterations, warmup_s, gpu_indices);
- ``gemm_params(params, argv)`` - a GEMM record's params;
- ``probe_worker_args(params) -> [str]`` - the all-reduce probe's arguments (before --json-out/--launcher);
- ``probe_params(params, argv, env, launcher, ranks_per_node, hosts)`` - a probe record's params.

Runs on the targets: Python 3.8+, no Ansible imports.
"""

from __future__ import annotations

from ansible_collections.aifabric.acceptance.plugins.module_utils import collectives, launch

GEMM_TOOL = "torch-gemm"
PROBE_CHECK = "nccl.torch_all_reduce"
PROBE_TOOL = "torch-allreduce-probe"
PROBE_COLLECTIVE = "all_reduce"   # what the probe measures (its JSON document's argv names all_reduce_perf)


# --------------------------------------------------------------------------- GEMM

def gemm_worker_args(params):
    """Arguments of the worker's ``gemm`` command."""
    args = ["gemm", "--dtypes", ",".join(params["dtypes"]), "--m", str(params["m"]), "--n", str(params["n"]),
            "--k", str(params["k"]), "--iters", str(params["iterations"]),
            "--warmup", str(params["warmup_iterations"]), "--warmup-s", str(params["warmup_s"])]
    if params.get("gpu_indices"):
        args += ["--devices", ",".join(str(d) for d in params["gpu_indices"])]
    if "tf32" in params["dtypes"]:
        args.append("--allow-tf32")
    return args


def gemm_params(params, argv):
    """The record's params: what ran."""
    return {"argv": argv, "dtypes": params["dtypes"], "m": params["m"], "n": params["n"], "k": params["k"],
            "iterations": params["iterations"], "warmup_iterations": params["warmup_iterations"],
            "warmup_s": params["warmup_s"]}


# --------------------------------------------------------------------------- torch all-reduce probe

def probe_worker_args(params):
    """Arguments of the worker's ``allreduce`` command (sizes, iterations, data type, data verification)."""
    for key in ("min_bytes", "max_bytes"):
        if not collectives.SIZE_RE.match(str(params[key])):
            raise collectives.OptionError("%s %r is not a size (digits with an optional K, M or G)"
                                          % (key, params[key]))
    return ["allreduce", "--min-bytes", params["min_bytes"], "--max-bytes", params["max_bytes"],
            "--step-factor", str(params["step_factor"]), "--iters", str(params["iterations"]),
            "--warmup", str(params["warmup_iterations"]), "--dtype", params["datatype"],
            "--check", str(int(params["verify_data"]))]


def probe_params(params, argv, env, launcher, ranks_per_node, hosts):
    """The record's params: what ran."""
    env = dict((k, v) for k, v in (env or {}).items() if k != launch.TAG_ENV)   # the run tag is not a parameter
    return {"argv": argv, "env": env, "launcher": launcher, "ranks_per_node": ranks_per_node,
            "hosts": hosts, "min_bytes": params.get("min_bytes"), "max_bytes": params.get("max_bytes"),
            "iterations": params.get("iterations"), "warmup_iterations": params.get("warmup_iterations"),
            "datatype": params.get("datatype")}
