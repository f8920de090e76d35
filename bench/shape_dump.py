# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The refactor guard of the shape below the modules: every output a refactor must keep, in one JSON file.

- ``golden/<kind>/<file>``: the records of every golden case (tests/unit/plugins/module_utils/test_records_golden.py,
  clock and threshold provenance text dropped as there);
- ``k8s/<case>``: every Kubernetes plan of tests/unit/plugins/module_utils/k8s_cases.py (every kind and launcher,
  every pod knob set, and the same with the default pod);
  (the source files a plan ships to its pods are compared by name: their text is the code being refactored);
- ``argv/<builder>/<n>``: the argv every builder gives for a set of option sets (nccl-tests, the mpirun wraps of
  nccl-tests, HCCL Test (Open MPI and MPICH) and the torch probe, the GPU workers, perftest), or the error it raises;
- ``declared/...``: the declared-topology checks of parsers/topology.py (errors and their order).

    PYTHONPATH=... python bench/shape_dump.py dump OUT.json          # on a tree
    PYTHONPATH=... python bench/shape_dump.py compare BEFORE.json AFTER.json   # field by field; exit 1 on a change

Written before the refactor of issue 36 on the untouched tree; the builders' homes move, so ``_first`` finds each
builder where it lives now (the old home first).
"""

from __future__ import annotations

import importlib
import json
import os
import sys

PKG = "ansible_collections.aifabric.acceptance."
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)


def _first(*dotted):
    """The first of ``module:attr`` names that exists (a builder's old home, then its new ones)."""
    for name in dotted:
        module, attr = name.split(":")
        try:
            return getattr(importlib.import_module(PKG + module), attr)
        except (ImportError, AttributeError):
            continue
    raise LookupError("none of %s" % (dotted,))


def _module(*homes):
    """The first of a module's homes (its name before the adapters carried their module's name, then after) that
    exists (a ``plugins.module_utils.`` name)."""
    for home in homes:
        try:
            return importlib.import_module(PKG + "plugins.module_utils." + home)
        except ImportError:
            continue
    raise LookupError("none of %s" % (homes,))


def _jsonable(value):
    return json.loads(json.dumps(value, sort_keys=True, default=repr))


def golden():
    sys.path.insert(0, ROOT)
    golden_test = importlib.import_module(PKG + "tests.unit.plugins.module_utils.test_records_golden")
    out = {}
    cwd = os.getcwd()
    os.chdir(ROOT)
    try:
        for kind, rel, make in golden_test.CASES:
            out["golden/%s/%s" % (kind, rel)] = _jsonable(golden_test._stable(make()))
    finally:
        os.chdir(cwd)
    return out


def k8s():
    cases = importlib.import_module(PKG + "tests.unit.plugins.module_utils.k8s_cases")
    out = {}
    for name, plan in cases.plans():
        out["k8s/full/%s" % name] = _jsonable(plan)
    minimal = {"image": "registry.example.com/acceptance/nccl-tests:2.17-mpi"}
    for name, plan in cases.plans(minimal):
        out["k8s/minimal/%s" % name] = _jsonable(plan)
    return out


NCCL_PARAMS = [
    {},
    {"min_bytes": "8", "max_bytes": "8G", "step_factor": 2, "iterations": 20, "warmup_iterations": 5,
     "verify_data": True, "datatype": "bfloat16", "op": "sum", "extra_args": ["-a", "3"]},
    {"step_bytes": 1024, "step_factor": 2, "root": 0, "cudagraph": 1, "blocking": False, "tool_timeout_s": 30},
    {"min_bytes": "1X"},
    {"datatype": "bad;name"},
]
LAUNCH_PARAMS = [
    {"hosts": ["a", "b"], "ranks_per_node": 8},
    {"hosts": ["a", "b", "c"], "ranks_per_node": 4, "mpirun_env_forward": ["LD_LIBRARY_PATH", "PATH"],
     "mpirun_mca": {"pml": "ucx", "btl": "^openib"}, "tcp_if_include": "eth0", "mpirun_extra_args": ["--report-bindings"]},
    {"hosts": ["a"], "ranks_per_node": 0},
    {"hosts": [], "ranks_per_node": 2},
    {"hosts": ["a b"], "ranks_per_node": 2},
    {"hosts": ["a"], "ranks_per_node": 1, "mpirun_mca": {"bad name": 1}},
]
HCCL_PARAMS = [
    {"hosts": ["a", "b"], "ranks_per_node": 8, "min_bytes": "8", "max_bytes": "1G", "step_factor": 2, "iterations": 20,
     "warmup_iterations": 5, "verify_data": True, "npus_per_node": 8, "datatype": "fp32", "op": "sum",
     "extra_args": ["-x"]},
    {"hosts": ["a", "b"], "npus_per_node": 8, "mpi_flavour": "mpich", "mpirun_env_forward": ["PATH"],
     "mpirun_extra_args": ["-v"], "step_bytes": 1024, "root": 0},
    {"hosts": [], "ranks_per_node": 4, "tcp_if_include": "ib0", "mpirun_env_forward": ["LD_LIBRARY_PATH"]},
    {"hosts": ["a"], "ranks_per_node": 0},
    {"hosts": ["a;b"], "ranks_per_node": 1},
]
ENVS = [{}, {"NCCL_ALGO": "Ring", "NCCL_DEBUG": "INFO"}, {"BAD NAME": "1"}]


def _call(fn, *args, **kwargs):
    try:
        return _jsonable(fn(*args, **kwargs))
    except Exception as exc:     # the error a builder raises is part of its behaviour
        return {"raised": type(exc).__name__, "message": str(exc)}


def _collective_argvs(out):
    nccl_argv = _first("plugins.module_utils.tools.nccl_tests:nccl_argv", "plugins.module_utils.tools.nccl_test:nccl_argv")
    nccl_launch = _first("plugins.module_utils.tools.nccl_tests:launch_argv", "plugins.module_utils.tools.nccl_test:launch_argv")
    hccl_argv = _first("plugins.module_utils.hccl_run:hccl_argv", "plugins.module_utils.tools.hccl:hccl_argv",
                       "plugins.module_utils.tools.hccl_test:hccl_argv")
    hccl_launch = _first("plugins.module_utils.hccl_run:launch_argv", "plugins.module_utils.tools.hccl:launch_argv",
                         "plugins.module_utils.tools.hccl_test:launch_argv")
    hccl_hostfile = _first("plugins.module_utils.hccl_run:hostfile_text", "plugins.module_utils.tools.hccl:hostfile_text",
                           "plugins.module_utils.tools.hccl_test:hostfile_text")
    probe_launch = _first("plugins.module_utils.collectives:mpirun_argv", "plugins.module_utils.tools._mpirun:ranks_argv")
    for n, params in enumerate(NCCL_PARAMS):
        out["argv/nccl_argv/%d" % n] = _call(nccl_argv, "all_reduce_perf", params)
        out["argv/nccl_argv/%d/json" % n] = _call(nccl_argv, "all_reduce_perf", params, gpus_per_process=2,
                                                  json_path="/tmp/x.json")
    for n, params in enumerate(LAUNCH_PARAMS):
        for e, env in enumerate(ENVS):
            for hostfile in (None, "/tmp/hosts"):
                for root in (False, True):
                    key = "%d/%d/%s/%s" % (n, e, hostfile, root)
                    out["argv/nccl_launch/" + key] = _call(nccl_launch, ["all_reduce_perf"], "/usr/bin/mpirun", params,
                                                           env, hostfile=hostfile, allow_run_as_root=root)
                    out["argv/probe_launch/" + key] = _call(
                        probe_launch, "mpirun", ["python3", "w.py"], params["hosts"], params["ranks_per_node"], env=env,
                        mca=params.get("mpirun_mca"), allow_run_as_root=root, tcp_if_include=params.get("tcp_if_include"),
                        extra_args=params.get("mpirun_extra_args"))
    for n, params in enumerate(HCCL_PARAMS):
        out["argv/hccl_argv/%d" % n] = _call(hccl_argv, "all_reduce_test", params)
        out["argv/hccl_hostfile/%d" % n] = _call(hccl_hostfile, params["hosts"], 8, params.get("mpi_flavour"))
        for e, env in enumerate(ENVS):
            for hostfile in (None, "/tmp/hosts"):
                for root in (False, True):
                    for forward in (None, ["ASCEND_HOME", "PATH"]):
                        key = "%d/%d/%s/%s/%s" % (n, e, hostfile, root, forward)
                        out["argv/hccl_launch/" + key] = _call(hccl_launch, ["all_reduce_test"], "mpirun", params, env,
                                                               hostfile=hostfile, allow_run_as_root=root,
                                                               forward=forward)


def _worker_argvs(out):
    gemm = _module("tools.gemm", "tools.gemm_bench")
    probe = _module("tools.torch_allreduce", "tools.allreduce_probe")
    gemm_params = [{"dtypes": ["bf16", "fp16"], "m": 8192, "n": 8192, "k": 8192, "iterations": 200,
                    "warmup_iterations": 10, "warmup_s": 1.0},
                   {"dtypes": ["tf32"], "m": 1, "n": 2, "k": 3, "iterations": 1, "warmup_iterations": 0, "warmup_s": 0,
                    "gpu_indices": [0, 3]}]
    for n, params in enumerate(gemm_params):
        out["argv/gemm_worker/%d" % n] = _call(gemm.worker_args, params)
    probe_params = [{"min_bytes": "1M", "max_bytes": "8G", "iterations": 20, "warmup_iterations": 5,
                     "datatype": "float"},
                    {"min_bytes": "1X", "max_bytes": "8G", "iterations": 20, "warmup_iterations": 5,
                     "datatype": "float"}]
    for n, params in enumerate(probe_params):
        out["argv/probe_worker/%d" % n] = _call(probe.worker_args, params)
        out["argv/probe_record_params/%d" % n] = _call(
            probe.record_params, params, ["python3"], {"NCCL_ALGO": "Ring", "AIFABRIC_RUN_TAG": "t"}, "mpirun", 8,
            ["a", "b"])


def _perftest_argvs(out):
    perftest = _module("tools.perftest", "tools.perftest_sweep")
    hcas = [{"device": "mlx5_0", "port": 1, "state": "ACTIVE", "rate_gbit_s": 400.0, "rate": "400 Gb/sec",
             "link_layer": "Ethernet", "gids": [{"index": 3, "gid": "::ffff:10.0.0.1", "type": "RoCE v2"}]}]
    base = dict((k, v.get("default")) for k, v in perftest.OPTIONS.items())
    for n, extra in enumerate([{}, {"test": "ib_read_lat", "gid_index": 3, "size": 65536, "qps": 4},
                               {"bidirectional": True, "use_cuda": None, "all_sizes": True}]):
        params = dict(base, **extra)
        plan = _call(perftest.device_plan, ["mlx5_0", "mlx5_1"], params, hcas=hcas)
        out["argv/perftest_plan/%d" % n] = plan
        if "raised" in plan:
            continue
        real_plan = perftest.device_plan(["mlx5_0", "mlx5_1"], params, hcas=hcas)
        for side, peer in (("server", None), ("client", "10.0.0.2")):
            out["argv/perftest/%d/%s" % (n, side)] = _call(perftest.argvs_for, "ib_write_bw", params, real_plan, side,
                                                           peer_address=peer, json_dir="/tmp/j")


DECLARED = [None, 5, [], {}, {"eth0": {"switch": "s1", "switch_port": 3}},
            {"Ethernet1": {"switch": ""}, None: {}, "": 1, " ": {}},
            {"a": 5, 3: {"switch": "x"}, "b": {"switch": "x", "bogus": 1, "other": 2}},
            {"h1": {"eth0": {"switch": "s"}}, "h2": 7, None: {}, "H0": {"p": {"switch": None}}}]


def declared():
    """parsers/topology's declared-topology checks (their error texts and order)."""
    topology = importlib.import_module(PKG + "plugins.module_utils.parsers.topology")
    out = {}
    for n, value in enumerate(DECLARED):
        out["declared/ports/%d" % n] = _call(topology.declared_ports, value)
        out["declared/fleet/%d" % n] = _call(topology.declared_fleet, value)
    return out


def argvs():
    out = {}
    _collective_argvs(out)
    _worker_argvs(out)
    _perftest_argvs(out)
    return out


def dump(path):
    data = {}
    for part in (golden, k8s, argvs, declared):
        data.update(part())
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=1, sort_keys=True)
    print("%d entries -> %s" % (len(data), path))


def _diff(path, one, other, out):
    if path.endswith(".py") and isinstance(one, str) and isinstance(other, str):
        return      # a source file a pod ships (k8s_plan.CODE_MODULES): its name is compared, its text is the code
    if isinstance(one, dict) and isinstance(other, dict):
        for key in sorted(set(one) | set(other)):
            _diff("%s.%s" % (path, key), one.get(key, "<absent>"), other.get(key, "<absent>"), out)
    elif isinstance(one, list) and isinstance(other, list) and len(one) == len(other):
        for n, (a, b) in enumerate(zip(one, other)):
            _diff("%s[%d]" % (path, n), a, b, out)
    elif one != other:
        out.append("%s: %r != %r" % (path, one, other))


def compare(before, after):
    with open(before, encoding="utf-8") as handle:
        one = json.load(handle)
    with open(after, encoding="utf-8") as handle:
        other = json.load(handle)
    out = []
    _diff("", one, other, out)
    leaves = sum(1 for _leaf in _leaves(one))
    print("%d entries, %d leaf fields compared, %d differ" % (len(one), leaves, len(out)))
    for line in out[:50]:
        print(line)
    return 1 if out else 0


def _leaves(node):
    if isinstance(node, dict):
        for value in node.values():
            yield from _leaves(value)
    elif isinstance(node, list):
        for value in node:
            yield from _leaves(value)
    else:
        yield node


if __name__ == "__main__":
    if sys.argv[1] == "dump":
        dump(sys.argv[2])
    else:
        sys.exit(compare(sys.argv[2], sys.argv[3]))
