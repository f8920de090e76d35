# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The rule per check of docs/results.md ("Runs: what a verdict rests on") for the checks that do not retest: a
multi-node nccl-tests run, an HCCL Test run and the Kubernetes preflight checks say in every judged record that
their status rests on one run (``params.runs: 1``, set by results.rests_on where the adapters make the records).
The outputs are REAL captures (their PROVENANCE.md files); the Kubernetes node is test_k8s_preflight's real one."""

from __future__ import annotations

import os

from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_preflight, results
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import Context
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import hccl_test as hccl_tool
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import nccl_test as nccl_tool
from ansible_collections.aifabric.acceptance.tests.unit.helpers import read
from ansible_collections.aifabric.acceptance.tests.unit.plugins.module_utils.test_k8s_preflight import node

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "parsers", "fixtures")
NCCL = os.path.join(FIXTURES, "nccl_tests", "h200x2-nccl-tests-2.19.6", "all_reduce_g2.txt")
NCCL_SLOW = os.path.join(FIXTURES, "nccl_tests", "pkb-all-reduce-2node-K80-validation0-no-group-col.txt")
HCCL = os.path.join(FIXTURES, "hccl_test", "hccl-vm-all-reduce-2MB-16rank-aveg-time.txt")


def _judged(records):
    return [r for r in records if r["status"] in ("pass", "warn", "fail")]


def _nccl_over_hosts(path):
    """The records of a capture read as a run over two hosts, its busbw judged against a floor of 100 GB/s."""
    params = {"expect": {"nccl.all_reduce": {"busbw_max_gbyte_s": {"min": 100.0}}}}
    context = Context(rc=0, params=params, collective="all_reduce", hosts=["gpu-a", "gpu-b"], nodes=2)
    return _judged(nccl_tool.records(read(path), context))


def test_a_multi_node_nccl_run_rests_on_one_run_pass_or_fail():
    """Over hosts nothing retests the run (the group screen names nodes from collectives): each record says 1."""
    for path in (NCCL, NCCL_SLOW):
        judged = _nccl_over_hosts(path)
        assert judged and all(r["params"]["runs"] == 1 and results.validate(r) == [] for r in judged), path
    assert set(r["status"] for r in _nccl_over_hosts(NCCL_SLOW)) == {"fail"}    # 0.6 GB/s: fails, on one run
    assert set(r["status"] for r in _nccl_over_hosts(NCCL)) == {"pass"}


def test_an_hccl_run_rests_on_one_run():
    recs = hccl_tool.records(read(HCCL), Context(rc=0, params={}, collective="all_reduce", hosts=["npu-a", "npu-b"]))
    judged = _judged(recs)
    assert judged and all(r["params"]["runs"] == 1 and r["check"].startswith("hccl.") for r in judged)


def test_the_kubernetes_preflight_checks_rest_on_one_read_of_the_api():
    healthy = k8s_preflight.node_records(node())
    broken = k8s_preflight.node_records(node(alloc_gpus=6))              # two GPUs marked unhealthy
    assert set(r["status"] for r in healthy) == {"pass"} and "fail" in set(r["status"] for r in broken)
    assert all(r["params"]["runs"] == 1 for r in healthy + broken)
