# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/rdma.yml as a composition of the role aifabric.acceptance.rdma (issue 23), real ansible-playbook runs
against local hosts (no RDMA device, no sweep):

- a misspelt key of an option group (rdma_perftest, rdma_pairings) fails at the role's start with its argument-spec
  message, before any task of the stage runs on a host;
- ``--tags rdma`` runs the stage with the check of the inventory's variables and the summary; ``--skip-tags rdma``
  runs no task of the stage.
"""

from __future__ import annotations

import os

from ansible_collections.aifabric.acceptance.tests.integration.test_acceptance_tags import _by_name, _run, tasks
from ansible_collections.aifabric.acceptance.tests.integration.test_callback import env  # noqa: F401  pylint: disable=unused-import

RDMA = os.path.realpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "playbooks",
                                     "rdma.yml"))
STAGE = "RDMA - perftest between pairs of hosts"
# the hosts: gpu_nodes (the inventory helper's group), each with no HCA to test (rdma_hcas given, empty)
HOSTS = {"node1": {"rdma_hcas": "[]"}, "node2": {"rdma_hcas": "[]"}}
ON_GPU_NODES = ["-e", "rdma_hosts=gpu_nodes"]


def test_a_misspelt_key_of_an_option_group_fails_before_any_stage(env, tmp_path):  # noqa: F811  pylint: disable=redefined-outer-name
    for variable, bad in (("rdma_perftest", '{"timout_s": 5}'), ("rdma_pairings", '{"mode": "random", "rounds": 3}')):
        misspelt = "timout_s" if variable == "rdma_perftest" else "rounds"
        # the first play refuses it (issue 33) - and, with acceptance_strict_vars=false (only a warning for the names),
        # the role's argument spec, checked there for every host: ansible-core's message, the key under its group and
        # the keys the group supports; no stage runs either way
        for extra in ((), ("-e", "acceptance_strict_vars=false")):
            proc, out = _run(env, tmp_path, HOSTS, RDMA, *ON_GPU_NODES, "-e", '{"%s": %s}' % (variable, bad), *extra)
            assert proc.returncode != 0 and "the run stops before any stage" in out, out[-4000:]
            assert not _by_name(out, STAGE), out[-4000:]
            flat = out.replace("\n", " ")
            assert ("the argument spec of the role aifabric.acceptance.rdma (entry point main) refuses: %s.%s. "
                    "Supported parameters include" % (variable, misspelt)) in flat, flat[-3000:]


def test_tags_rdma_runs_the_stage_with_the_check_and_the_summary(env, tmp_path):  # noqa: F811  pylint: disable=redefined-outer-name
    proc, out = _run(env, tmp_path, HOSTS, RDMA, *ON_GPU_NODES, "--tags", "rdma")
    (check,) = _by_name(out, "Check the inventory's variables")
    assert "Check the inventory's variables" in tasks(check), out[-4000:]
    (stage,) = _by_name(out, STAGE)
    names = tasks(stage)
    assert "aifabric.acceptance.rdma : Pair the hosts (once for the whole fleet)" in names, names
    assert "aifabric.acceptance.rdma : Remove whatever the run left behind" in names, names
    for host in HOSTS:
        assert "%s has no ACTIVE RDMA port: it takes no part in the rounds" % host in stage, stage[-3000:]
    (summary,) = _by_name(out, "Publish the run summary")
    assert tasks(summary), out[-4000:]
    # nothing was measured: the summary says so (no pass); the run got there
    assert proc.returncode != 4, out[-4000:]

    proc, out = _run(env, tmp_path, HOSTS, RDMA, *ON_GPU_NODES, "--skip-tags", "rdma")
    (stage,) = _by_name(out, STAGE)
    assert tasks(stage) == [], out[-4000:]
