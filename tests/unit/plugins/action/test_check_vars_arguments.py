# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""check_vars' check of the roles' argument specs for every host at once (action check_vars.argument_problems), on
whole fleets: the collection's own role specs (the Vocabulary of this tree), ansible-core's validator, hostvars as
plain mappings (a value whose templating fails stands in as a mapping that raises on it)."""

from __future__ import annotations

import os

import pytest

from ansible.errors import AnsibleActionFail

from ansible_collections.aifabric.acceptance.plugins.action import check_vars
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import inventory_vars

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
ACCEPTANCE = {"ssh": ["probe", "gpu", "hccl", "rdma"], "kubernetes": ["k8s"]}


@pytest.fixture(scope="module")
def vocabulary():
    return inventory_vars.Vocabulary(ROOT)


class Failing(dict):
    """A host's variables where one value's template fails (HostVarsVars.get raises)."""

    def __init__(self, data, bad):
        super().__init__(data)
        self.bad = bad

    def get(self, key, default=None):
        if key == self.bad:
            raise ValueError("'probe_found' is undefined\nmore lines")
        return super().get(key, default)


def check(vocabulary, hostvars, roles=None):
    return check_vars.argument_problems(vocabulary, hostvars, sorted(hostvars),
                                        check_vars.entry_points(vocabulary, roles or ACCEPTANCE))


def test_a_fleet_with_one_bad_value_per_role_names_exactly_those_hosts(vocabulary):
    hostvars = {"node1": {"gpu_gemm": {"iterations": 5}, "rdma_confirm": True},
                "node2": {"gpu_gemm": {"iterations": "many"}},
                "node3": {"rdma_confirm": "maybe"},
                "node4": {},
                "node5": {"acceptance_substrate": "kubernetes", "gpu_gemm": {"iterations": "many"}},
                # a key of nccl_options that the k8s role reads and the SSH nccl role does not: fine on Kubernetes
                "node6": {"acceptance_substrate": "kubernetes", "nccl_options": {"ssh_port": 2022}}}
    problems, warnings = check(vocabulary, hostvars)
    assert warnings == []
    named = sorted((p.split("aifabric.acceptance.", 1)[1].split(" ", 1)[0], p.rsplit("(", 1)[1]) for p in problems)
    assert named == [("gpu", "host node2)"), ("k8s", "host node5)"), ("rdma", "host node3)")], problems
    assert all("(entry point main) refuses: " in p for p in problems)
    assert any("'many'" in p and "iterations" in p for p in problems)


def test_the_same_refusal_on_many_hosts_is_one_problem_naming_five_and_the_count(vocabulary):
    hostvars = dict(("node%02d" % i, {"rdma_confirm": "maybe"}) for i in range(8))
    hostvars["node99"] = {"rdma_confirm": False}
    problems, _warnings = check(vocabulary, hostvars)
    assert len(problems) == 1, problems
    assert problems[0].endswith("(hosts node00, node01, node02, node03, node04 and 3 more)"), problems


def test_only_the_entry_points_the_playbook_applies_are_checked(vocabulary):
    hostvars = {"node1": {"nccl_options": {"ssh_port": 2022}}}
    # acceptance.yml applies no nccl role over SSH; nccl.yml does, and its spec has no ssh_port
    assert check(vocabulary, hostvars) == ([], [])
    problems, _warnings = check(vocabulary, hostvars, {"any": ["nccl"]})
    assert len(problems) == 1 and "aifabric.acceptance.nccl (entry point main)" in problems[0], problems
    assert "nccl_options.ssh_port" in problems[0]
    problems, _warnings = check(vocabulary, {"node1": {"nccl_screen_group_size": "eight"}}, {"any": ["nccl:screen"]})
    assert len(problems) == 1 and "(entry point screen)" in problems[0], problems
    # no roles: nothing checked here (the roles check their own at their start)
    assert check_vars.argument_problems(vocabulary, hostvars, ["node1"], {}) == ([], [])


def test_a_role_that_is_not_the_collection_s_is_the_playbook_s_fault(vocabulary):
    with pytest.raises(AnsibleActionFail, match="roles: gpu:nope is no role entry point"):
        check_vars.entry_points(vocabulary, {"any": ["gpu:nope"]})
    with pytest.raises(AnsibleActionFail, match="roles: gpus is no role entry point"):
        check_vars.entry_points(vocabulary, {"ssh": ["gpus"]})


def test_a_value_that_cannot_be_templated_yet_is_a_warning_and_the_rest_is_checked(vocabulary):
    hostvars = {"node1": Failing({"rdma_hcas": "{{ probe_found }}", "rdma_confirm": "maybe"}, "rdma_hcas"),
                "node2": {"rdma_confirm": True}}
    problems, warnings = check(vocabulary, hostvars)
    assert len(problems) == 1 and "rdma_confirm" in problems[0] and problems[0].endswith("(host node1)"), problems
    assert warnings == ["the value of rdma_hcas ('probe_found' is undefined) could not be templated before the run, "
                        "so its argument spec is not checked (host node1)"], warnings


def test_the_spec_is_not_changed_by_a_check(vocabulary):
    """ansible-core's validator writes into the spec it is given: each host's check gets its own copy, so the second
    host's check is the first's (a shared spec made the second host fail on options it never set)."""
    hostvars = {"node1": {"gpu_gemm": {"iterations": "many"}}, "node2": {"gpu_gemm": {"iterations": "many"}}}
    problems, _warnings = check(vocabulary, hostvars, {"any": ["gpu"]})
    assert len(problems) == 1 and problems[0].endswith("(hosts node1, node2)"), problems
