# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One records function per tool (issue 20 item 1): the same real capture through the SSH module (its main() with a
runner that replays the capture), the Kubernetes planner (the pod entry program prints the capture, the planner reads
the log) and import mode (the module's from_output) gives the same records.

Fields that legitimately differ between the paths, and only those, are left out of the comparison:

- ``started``, ``duration_s``: the clock;
- ``params``: what ran where (the module's argv with this host's binary path; the pod's argv, job and pod name;
  import mode's ``from_output`` path instead of an argv);
- ``host``, ``peer``: the planner stamps the node names; a module leaves ``host`` to the callback;
- ``facts.imported_from``: import mode names the file it read; ``facts.output_format`` and ``facts.launch``: a run
  knows how it was launched and which of its outputs it read, a saved file does not.

And one path does more: the SSH module runs a one-node collective that failed on its figures once more and judges it
on both runs (docs/results.md, "Runs"); replaying the same capture twice, its record is ``results.retested`` of the
planner's record with itself.

The GEMM check and the torch all-reduce probe have no import mode; HCCL Test has no Kubernetes launch.
"""

from __future__ import annotations

import os

import pytest
from ansible_collections.aifabric.acceptance.tests.unit.plugins.module_utils.test_k8s_plan import POD, ok, pod_log
from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules.test_gpu_modules import (  # pylint: disable=unused-import
    NCCL_FIXTURES, PROOF, _call, _runner, module_env)  # noqa: F401 - module_env is a fixture
from ansible_collections.aifabric.acceptance.tests.unit.helpers import read
from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules.test_hccl_module import (  # pylint: disable=unused-import
    DOCS_8NPU, _bindir, calls)  # noqa: F401 - calls is a fixture
from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules.test_hccl_module import (
    _call as _call_hccl, _runner as _runner_hccl)
from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules.test_perftest_module import (
    FIXTURES as PERFTEST_FIXTURES)

from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_plan, results
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import _collective
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import perftest as perftest_parser
from ansible_collections.aifabric.acceptance.plugins.modules import gemm_bench, nccl_test, perftest
from ansible_collections.aifabric.acceptance.plugins.module_utils import runner as tool_runner

ALWAYS = ("started", "duration_s", "params", "host", "peer")
RUN_ONLY_FACTS = ("imported_from", "output_format", "launch")


def _same(record, facts_too=False):
    out = dict((k, v) for k, v in record.items() if k not in ALWAYS)
    if facts_too:
        out["facts"] = dict((k, v) for k, v in (record.get("facts") or {}).items() if k not in RUN_ONLY_FACTS)
    return out


def _nccl_bindir(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "all_reduce_perf").write_text("#!/bin/sh\n")
    (bindir / "all_reduce_perf").chmod(0o755)
    return str(bindir)


@pytest.mark.parametrize("name", ["all_reduce_g2.txt", "all_reduce_debug.txt", "all_reduce_toomany.txt"])
def test_nccl_tests_module_planner_and_import_mode_give_the_same_record(module_env, monkeypatch, tmp_path, name):
    fixture = os.path.join(NCCL_FIXTURES, "h200x2-nccl-tests-2.19.6", name)
    monkeypatch.setattr(tool_runner, "spawn", _runner(module_env, lambda argv: (0, read(fixture), "")))
    (from_ssh,) = _call(nccl_test.main, {"tool_dir": _nccl_bindir(tmp_path), "collectives": ["all_reduce"], "json_output": "never",
                                         "gpus_per_process": 2}).kwargs["results"]
    plan = k8s_plan.build("nccl_test", ["gpu-node-01"], dict(POD, gpus_per_pod=2), "t1", {"tool_dir": "/opt/nccl-tests/build", "collectives": ["all_reduce"]})
    (slot,) = plan["steps"][0]["slots"]
    rc, log = pod_log([{"label": "all_reduce", "argv": ["cat", fixture], "timeout_s": 30}])
    (from_k8s,) = k8s_plan.slot_records(plan, slot, ok(slot), log)
    (from_import,) = _call(nccl_test.main, {"from_output": fixture, "collective": "all_reduce",
                                            "node_count": 1}).kwargs["results"]
    assert rc == 0 and results.validate(from_ssh) == []
    twice = _collective.retest_worth(from_k8s)
    assert from_ssh["params"].get("runs") == (2 if twice else from_k8s["params"].get("runs")) and (name == "all_reduce_debug.txt") == twice
    assert _same(results.retested(from_k8s, from_k8s, _collective.HEADLINE) if twice else from_k8s) == _same(from_ssh)
    assert _same(from_import, facts_too=True) == _same(from_k8s, facts_too=True)


def test_hccl_test_module_and_import_mode_give_the_same_record(calls, monkeypatch, tmp_path):
    bindir = _bindir(tmp_path, "all_reduce_test")
    monkeypatch.setattr(tool_runner, "spawn", _runner_hccl(calls, lambda argv: (0, read(DOCS_8NPU), "")))
    (from_ssh,) = _call_hccl({"tool_dir": bindir, "npus_per_node": 8, "collectives": ["all_reduce"]}).kwargs["results"]
    (from_import,) = _call_hccl({"from_output": DOCS_8NPU, "npus_per_node": 8, "collective": "all_reduce"}).kwargs["results"]
    assert from_ssh["status"] == "pass"
    assert _same(from_import, facts_too=True) == _same(from_ssh, facts_too=True)


def test_gemm_module_and_planner_give_the_same_records(module_env, monkeypatch):
    text = read(os.path.join(PROOF, "gemm_bare.txt"))
    monkeypatch.setattr(tool_runner, "spawn", _runner(module_env, lambda argv: (0, text, "")))
    from_ssh = _call(gemm_bench.main, {}).kwargs["results"]
    plan = k8s_plan.build("gemm_bench", ["gpu-node-02"], POD, "t1")
    (slot,) = plan["steps"][0]["slots"]
    rc, log = pod_log([{"label": "gemm", "argv": ["cat", os.path.join(PROOF, "gemm_bare.txt")], "timeout_s": 30}])
    from_k8s = k8s_plan.slot_records(plan, slot, ok(slot, "gpu-node-02"), log)
    assert rc == 0 and len(from_ssh) == 4
    assert [_same(r) for r in from_k8s] == [_same(r) for r in from_ssh]


@pytest.mark.parametrize("name", ["cx7-ndr-ib-read-bw-client-report-gbits-cpufreq-warning.txt",
                                  "hdr-ib-send-bw-client-a-gbits-1qp.txt", "mlx4-ib-send-lat-client-a-all-sizes.txt"])
def test_perftest_planner_and_import_mode_give_the_same_client_record(module_env, name):
    """The sweep runner (the one RDMA run path) builds its client records with the same call (tools.perftest_sweep.records, shown
    by the golden test and the sweep's own tests); here the planner's pod log and the module's import mode."""
    fixture = os.path.join(PERFTEST_FIXTURES, name)
    header = perftest_parser.parse(read(fixture))
    opts = {"hcas": [header["header"]["Device"]], "test": header["tool"], "expect": {"bw_avg_gbit_s": {"min": 100}}}
    plan = k8s_plan.build("perftest_sweep", ["n1", "n2"], dict(POD, gpus_per_pod=0), "t1", opts, rounds=[[["n1", "n2"]]])
    slot = [s for s in plan["steps"][0]["slots"] if s["role"] == "client"][0]
    rc, log = pod_log([{"label": opts["hcas"][0], "argv": ["cat", fixture], "timeout_s": 30}], parallel=True)
    (from_k8s,) = k8s_plan.slot_records(plan, slot, ok(slot, "n2"), log)
    (from_import,) = _call(perftest.main, dict(opts, from_output=fixture, side="client", peer_name="n1",
                                               inventory_hostname="n2")).kwargs["results"]
    assert rc == 0 and from_k8s["status"] in ("pass", "fail", "warn")
    facts_k8s = dict(from_k8s["facts"])
    # the pod planned its rail (GID, port rate: from the node's sysfs, absent here); import mode plans nothing
    planned = [k for k in facts_k8s if k not in from_import["facts"]]
    for key in planned:
        facts_k8s.pop(key)
    assert _same(dict(from_k8s, facts=facts_k8s), facts_too=True) == _same(from_import, facts_too=True)
    assert from_import["status"] == from_k8s["status"] and from_import["metrics"] == from_k8s["metrics"]
