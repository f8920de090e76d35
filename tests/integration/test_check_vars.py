# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Inventory variables the collection does not read fail the run at its start (issue 19 item 5), a real
ansible-playbook run: ``expect_gpu_count: 1`` as a plain host variable (the collection reads
``acceptance_expect: {gpu_count: 1}``), a misspelt ``gpu_gem`` (gpu_gemm), and a key of ``acceptance_expect``
that is no environment expectation (``acceptance_expect: {expect_gpu_count: 1}``, the old name)."""

from __future__ import annotations

import json
import os
import re
import subprocess

from ansible_collections.aifabric.acceptance.tests.integration.test_callback import ANSIBLE_PLAYBOOK, PLAYBOOKS, env  # noqa: F401  pylint: disable=unused-import


def _run(env, tmp_path, host_vars, *extra):  # noqa: F811  pylint: disable=redefined-outer-name
    return _run_fleet(env, tmp_path, {"node1": host_vars}, *extra)


def test_unread_variables_fail_the_run_naming_them(env, tmp_path):  # noqa: F811  pylint: disable=redefined-outer-name
    proc = _run(env, tmp_path, {"expect_gpu_count": 1, "gpu_gem": "{iterations: 5}",
                                "gpu_python": "/usr/bin/python3", "my_own_var": 1})
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out[-3000:]
    assert ("node1: expect_gpu_count (did you mean acceptance_expect: {gpu_count: ...}?), gpu_gem (did you mean gpu_gemm?)" in out
            .replace("\n", " ")), out[-3000:]
    assert "after the check" not in out
    assert "gpu_python" not in out.split("does not read", 1)[-1].split("acceptance_strict_vars", 1)[0]


def test_acceptance_strict_vars_false_only_warns(env, tmp_path):  # noqa: F811  pylint: disable=redefined-outer-name
    proc = _run(env, tmp_path, {"expect_gpu_count": 1}, "-e", "acceptance_strict_vars=false")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-3000:]
    assert "expect_gpu_count" in out and "after the check" in out


def test_the_collection_s_own_variables_pass(env, tmp_path):  # noqa: F811  pylint: disable=redefined-outer-name
    proc = _run(env, tmp_path, {"acceptance_expect": "{gpu_count: 1, npu_count: 0}", "gpu_python": "/usr/bin/python3",
                                "rdma_hosts": "all", "aifabric_required_checks": "[env.package]"})
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]


def test_an_unknown_acceptance_expect_key_fails_the_run_naming_it(env, tmp_path):  # noqa: F811  pylint: disable=redefined-outer-name
    proc = _run(env, tmp_path, {"acceptance_expect": "{expect_gpu_count: 1, hca_count: 2}"})
    out = (proc.stdout + proc.stderr).replace("\n", " ")
    assert proc.returncode == 2, out[-3000:]
    assert "node1: acceptance_expect.expect_gpu_count (did you mean acceptance_expect.gpu_count?)" in out, out[-3000:]
    assert "hca_count" not in out.split("does not read", 1)[-1].replace("expect_gpu_count", "")


def test_an_unknown_substrate_fails_the_run_naming_it(env, tmp_path):  # noqa: F811  pylint: disable=redefined-outer-name
    """acceptance.yml tests each host on its acceptance_substrate; a host on neither (a typo) would be tested by no
    play, and the run would end without a verdict."""
    proc = _run(env, tmp_path, {"acceptance_substrate": "k8s"})
    out = (proc.stdout + proc.stderr).replace("\n", " ")
    assert proc.returncode == 2, out[-3000:]
    assert "node1: acceptance_substrate k8s (ssh or kubernetes)" in out, out[-3000:]


def _run_fleet(env, tmp_path, fleet_vars, *extra):  # noqa: F811  pylint: disable=redefined-outer-name
    inventory = tmp_path / "hosts.yml"
    lines = ["all:", "  hosts:"]
    for host, host_vars in fleet_vars.items():
        lines += ["    %s:" % host, "      ansible_connection: local"]
        lines += ["      %s: %s" % item for item in host_vars.items()]
    inventory.write_text("\n".join(lines) + "\n", encoding="utf-8")
    argv = [ANSIBLE_PLAYBOOK, "-i", str(inventory), os.path.join(PLAYBOOKS, "check_vars_run.yml")] + list(extra)
    return subprocess.run(argv, env=dict(env, AIFABRIC_REPORTS_ROOT=str(tmp_path / "reports")), cwd=PLAYBOOKS,
                          capture_output=True, text=True, timeout=300, check=False)


def test_a_value_a_role_s_argument_spec_refuses_fails_the_run_naming_its_hosts(env, tmp_path):  # noqa: F811  pylint: disable=redefined-outer-name
    """The argument specs of the roles the playbook applies (acceptance.yml's, per substrate), checked for every host
    by the first play (the playbooks apply their roles without each host's own check): node2's gpu_gemm.iterations is
    no integer (the GPU stage's role), node3's rdma_confirm no boolean (the RDMA stage's), node5's gpu_gemm neither,
    on Kubernetes (its role there: k8s); node1, node4 and node6 (on Kubernetes, with a key of nccl_options that the
    k8s role reads and the SSH nccl role would not) are fine - exactly node2, node3 and node5 are named, each under
    the role of its substrate, with ansible-core's own message; the run stops before any stage,
    acceptance_strict_vars=false or not (a wrong value is not a matter of strictness)."""
    fleet = {"node1": {"gpu_gemm": "{iterations: 5}", "rdma_confirm": "true"},
             "node2": {"gpu_gemm": "{iterations: many}"},
             "node3": {"rdma_confirm": "maybe"},
             "node4": {},
             "node5": {"acceptance_substrate": "kubernetes", "gpu_gemm": "{iterations: many}"},
             "node6": {"acceptance_substrate": "kubernetes", "nccl_options": "{ssh_port: 2022}"}}
    for extra in ((), ("-e", "acceptance_strict_vars=false")):
        proc = _run_fleet(env, tmp_path, fleet, *extra)
        out = (proc.stdout + proc.stderr).replace("\n", " ")
        assert proc.returncode == 2, out[-3000:]
        assert "after the check" not in out
        (line,) = [x for x in proc.stdout.splitlines() if x.startswith("fatal: [node1]: FAILED! => ")]
        message = json.loads(line.split(" => ", 1)[1])["msg"]
        refused = re.findall(r"the argument spec of the role aifabric\.acceptance\.(\w+) \(entry point (\w+)\) refuses: "
                             r"([^(]*)\((hosts? [^)]*)\)", message)
        assert sorted((role, point, hosts) for role, point, _why, hosts in refused) == [
            ("gpu", "main", "host node2"), ("k8s", "main", "host node5"), ("rdma", "main", "host node3")], message
        for role, _point, why, _hosts in refused:
            assert ("'iterations'" in why and "'many'" in why) if role != "rdma" else "'maybe'" in why, why


def test_a_templated_value_is_checked_as_templated_and_one_not_defined_yet_only_warns(env, tmp_path):  # noqa: F811  pylint: disable=redefined-outer-name
    """Through real templating (hostvars): node1's rdma_confirm is a template whose value ("maybe") the RDMA role's
    spec refuses - the run stops naming node1; its rdma_hcas names a variable no one has defined yet - a warning
    (not checked), not a refusal. node2, without either, is named nowhere."""
    proc = _run_fleet(env, tmp_path, {"node1": {"rdma_hcas": '"{{ found_later }}"', "rdma_confirm": '"{{ my_flag }}"',
                                                "my_flag": "maybe"},
                                      "node2": {}})
    out = (proc.stdout + proc.stderr).replace("\n", " ")
    assert proc.returncode == 2 and "after the check" not in out, out[-3000:]
    assert ("the argument spec of the role aifabric.acceptance.rdma (entry point main) refuses: argument "
            "'rdma_confirm' is of type str") in out and "'maybe' is not a valid boolean" in out, out[-3000:]
    assert "(host node1)" in out and "node2" not in out.split("the run stops before any stage", 1)[1], out[-3000:]
    assert ("the value of rdma_hcas ('found_later' is undefined) could not be templated before the run, so its "
            "argument spec is not checked (host node1)") in out, out[-3000:]
    # without the refused value the run goes on, with the warning
    proc = _run_fleet(env, tmp_path, {"node1": {"rdma_hcas": '"{{ found_later }}"'}, "node2": {}})
    out = (proc.stdout + proc.stderr).replace("\n", " ")
    assert proc.returncode == 0 and "after the check" in out and "could not be templated before the run" in out, \
        out[-3000:]


def test_variables_a_user_s_playbook_sets_on_its_import_are_checked_as_the_roles_see_them(env, tmp_path):  # noqa: F811  pylint: disable=redefined-outer-name
    """A user's playbook that imports a collection playbook with ``vars:`` sets them on every play of it, above the
    inventory's - and the roles no longer check their arguments on each host: the first play checks them. Its
    rdma_confirm "maybe" (the RDMA role's spec refuses it) is named for every host it reaches, its misspelt
    rdma_perftset too, though no host variable holds them; an extra variable still wins over the play's (-e
    rdma_confirm=true: only the misspelling is left)."""
    user = tmp_path / "site.yml"
    user.write_text("- name: The user's import of the collection's playbook\n"
                    "  ansible.builtin.import_playbook: %s\n"
                    "  vars:\n"
                    "    rdma_confirm: maybe\n"
                    "    rdma_perftset: {}\n" % os.path.join(PLAYBOOKS, "check_vars_run.yml"), encoding="utf-8")
    inventory = tmp_path / "hosts.yml"
    inventory.write_text("all:\n  hosts:\n    node1:\n      ansible_connection: local\n      rdma_confirm: true\n"
                         "    node2:\n      ansible_connection: local\n", encoding="utf-8")

    def run(*extra):
        proc = subprocess.run([ANSIBLE_PLAYBOOK, "-i", str(inventory), str(user)] + list(extra),
                              env=dict(env, AIFABRIC_REPORTS_ROOT=str(tmp_path / "reports")), cwd=PLAYBOOKS,
                              capture_output=True, text=True, timeout=300, check=False)
        return proc.returncode, (proc.stdout + proc.stderr).replace("\n", " ")

    rc, out = run()
    assert rc == 2 and "after the check" not in out, out[-3000:]
    assert ("the argument spec of the role aifabric.acceptance.rdma (entry point main) refuses: argument "
            "'rdma_confirm' is of type str") in out and "(hosts node1, node2)" in out, out[-3000:]
    assert "node1, node2: rdma_perftset (did you mean rdma_perftest?)" in out, out[-3000:]
    rc, out = run("-e", "rdma_confirm=true")
    assert rc == 2 and "refuses" not in out and "rdma_perftset (did you mean rdma_perftest?)" in out, out[-3000:]
