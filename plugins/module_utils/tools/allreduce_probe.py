# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The torch all-reduce probe's adapter: ``OPTIONS``, ``worker_args(params)``, ``records(text, ctx)`` (see
tools/__init__.py).

One ``nccl.torch_all_reduce`` record. ``text`` is the probe's text output (skip reasons, errors); ``ctx.document``
its JSON result (None when it wrote none); ``ctx.gpu_name``/``ctx.gpus`` choose the profile; ``ctx.nodes``,
``ctx.launcher``, ``ctx.ranks_per_node``, ``ctx.hosts`` describe the launch. Never raises on tool output.
``OPTIONS``: the sweep, the ranks' environment, the timeout and the judgement of a probe run; how the ranks are
launched (the allreduce_probe module's launcher, hosts, mpirun and master options, the Kubernetes planner's torchrun
and master_port) is each caller's own.
Runs on the targets: Python 3.8+, no Ansible imports.
"""

from __future__ import annotations

import json

from ansible_collections.aifabric.acceptance.plugins.module_utils import expectations, results
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import _collective, _mpirun
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import ParseError
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import nccl_tests

OPTIONS = dict(
    min_bytes=dict(type="str", default="1M"),
    max_bytes=dict(type="str", default="8G"),
    step_factor=dict(type="int", default=2),
    iterations=dict(type="int", default=20),
    warmup_iterations=dict(type="int", default=5),
    datatype=dict(type="str", choices=["float", "half", "bfloat16", "double"], default="float"),
    verify_data=dict(type="bool", default=True),
    env=dict(type="dict", default={}),
    timeout_s=dict(type="int", default=900),
    **expectations.PROFILE_SPEC,
    expect=dict(type="dict", default={}),
)
CHECK = "nccl.torch_all_reduce"
TOOL = "allreduce_probe"
# its names (docs/architecture.md's table of tools) and what the contract checks (tools/__init__.py)
CHECKS = "nccl"
MODULE = "allreduce_probe"
KUBERNETES = ("allreduce_probe",)
# how it runs and what its records come from
ARGV = ("worker_args",)
PARSERS = ("nccl_tests",)
NO_IMPORT = "the probe's JSON document is only read from the run the module or the pod launched"
GOLDEN = ("probe-records",)
COLLECTIVE = "all_reduce"   # what the probe measures (its JSON document's argv names all_reduce_perf)


def worker_args(params):
    """Arguments of the worker's ``allreduce`` command (sizes, iterations, data type, data verification; before
    --json-out/--launcher): the SSH module and the Kubernetes planner run the same."""
    for key in ("min_bytes", "max_bytes"):
        if not _mpirun.SIZE_RE.match(str(params[key])):
            raise _mpirun.OptionError("%s %r is not a size (digits with an optional K, M or G)"
                                      % (key, params[key]))
    return ["allreduce", "--min-bytes", params["min_bytes"], "--max-bytes", params["max_bytes"],
            "--step-factor", str(params["step_factor"]), "--iters", str(params["iterations"]),
            "--warmup", str(params["warmup_iterations"]), "--dtype", params["datatype"],
            "--check", str(int(params["verify_data"]))]


def record_params(params, argv, env, launcher, ranks_per_node, hosts):
    """A record's params: what ran."""
    env = dict((k, v) for k, v in (env or {}).items() if k != _mpirun.TAG_ENV)   # the run tag is not a parameter
    return {"argv": argv, "env": env, "launcher": launcher, "ranks_per_node": ranks_per_node,
            "hosts": hosts, "min_bytes": params.get("min_bytes"), "max_bytes": params.get("max_bytes"),
            "iterations": params.get("iterations"), "warmup_iterations": params.get("warmup_iterations"),
            "datatype": params.get("datatype")}


def records(text, ctx):
    """The nccl.torch_all_reduce record of one probe run."""
    return results.rests_on(_records(
        ctx.document, text, ctx.rc, ctx.params, gpu_name=ctx.gpu_name, gpus=ctx.gpus, nodes=ctx.nodes, argv=ctx.argv,
        env=ctx.env, started=ctx.started, duration_s=ctx.duration_s, python=ctx.python, launcher=ctx.launcher,
        ranks_per_node=ctx.ranks_per_node, hosts=ctx.hosts))


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


def _records(json_text, output, rc, params, gpu_name=None, gpus=None, nodes=1, argv=None,
             env=None, started=None, duration_s=None, python="python3", launcher="spawn",
             ranks_per_node=None, hosts=None):
    """The nccl.torch_all_reduce record of one probe run (its JSON document, or None, and its text output)."""
    env = dict(env or {})
    run_params = record_params(params, argv, env, launcher, ranks_per_node, hosts)
    profiles = expectations.all_profiles(params.get("profiles"))
    profile, profile_why = expectations.choose_profile(params.get("profile", "auto"), gpu_name, gpus, profiles)
    if json_text is None:
        skip = probe_skip_reason(output)
        if skip:
            return [results.skip(CHECK, "%s (%s)" % (skip, python), params=run_params, started=started,
                                 tool={"name": TOOL})]
        return [results.error(CHECK, "the probe wrote no result (rc %s): %s" % (rc, last_line(output)),
                              raw=output, params=run_params, started=started, duration_s=duration_s,
                              tool={"name": TOOL})]
    extra_facts = {"launcher": launcher, "placement": "in_place", "profile_choice": profile_why}
    try:
        parsed = nccl_tests.parse_json(json_text)
        doc = json.loads(json_text)
    except (ParseError, ValueError) as exc:
        return [results.error(CHECK, "could not read the probe's JSON: %s" % exc, raw=output,
                              params=run_params, started=started, duration_s=duration_s,
                              tool={"name": TOOL})]
    if isinstance(doc, dict):
        extra_facts.update({"torch_version": doc.get("torch_version"), "cuda_version": doc.get("cuda_version")})
    return [_collective.to_record(
        parsed, check=CHECK, params=run_params, tool_name=TOOL, started=started,
        duration_s=duration_s, raw=output, rc=rc, nodes=nodes, algo=env.get("NCCL_ALGO"),
        rules=expectations.rules_for_check(params.get("expect") or {}, CHECK), profile=profile,
        profiles=profiles, extra_facts=extra_facts, asked_collective=COLLECTIVE)]
