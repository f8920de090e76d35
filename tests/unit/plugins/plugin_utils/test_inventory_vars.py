# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which inventory variables the collection reads, scanned from its own playbooks and roles (issue 19 item 5)."""

from __future__ import annotations

import glob
import os

import yaml

from ansible_collections.aifabric.acceptance.plugins.plugin_utils import inventory_vars

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
KNOWN = inventory_vars.known_names(ROOT)


def test_variables_read_as_such_are_known_and_option_keys_or_attributes_are_not():
    for name in ("acceptance_expect", "gpu_python", "gpu_nccl", "rdma_hcas", "rdma_perftest", "k8s_namespace",
                 "nccl_tests_install_dir", "aifabric_required_checks", "acceptance_fail_on", "acceptance_strict_vars"):
        assert name in KNOWN, name
    # gpu_count is only read as acceptance_expect.gpu_count: no expect_* variable is read
    assert "expect_gpu_count" not in KNOWN
    assert "expect_driver_version" not in KNOWN
    # the GPU stage's variables before its role (issue 23): an inventory that still sets them is told at the start
    for name in ("gpu_gemm_timeout_s", "gpu_gemm_dtypes", "gpu_probe_iters", "gpu_nccl_tests_bin_dir", "gpu_nccl_tests"):
        assert name not in KNOWN, name
    # the RDMA stage's variables before its role (issue 23): rdma_perftest, rdma_pairings and rdma_hcas hold them now
    for name in ("rdma_devices", "rdma_test_args", "rdma_mode", "rdma_random_rounds", "rdma_timeout_s", "rdma_lease_s",
                 "rdma_perftest_path", "rdma_expect_line_rate_pct", "rdma_expect_hca_count"):
        assert name not in KNOWN, name


def test_every_variable_of_the_shipped_inventories_is_read():
    paths = glob.glob(os.path.join(ROOT, "inventories", "**", "*.yml"), recursive=True)
    assert len(paths) >= 3, paths
    for path in paths:
        with open(path, encoding="utf-8") as fh:
            data = yaml.safe_load(fh) or {}
        names = set(data) if "group_vars" in path or "host_vars" in path else _inventory_names(data)
        if path.endswith(os.path.join("localhost", "hosts.yml")):    # the walk reaches host variables
            assert {"ansible_connection", "ansible_python_interpreter"} <= names, names
        assert inventory_vars.unread({path: names}, KNOWN) == {}, path
        assert inventory_vars.unknown_expect_keys(dict((i, e) for i, e in enumerate(_expects(data)))) == {}, path


def _expects(group):
    """Every acceptance_expect value an inventory file sets, at any depth."""
    for name, sub in (group or {}).items():
        if name == "acceptance_expect":
            yield sub
        elif isinstance(sub, dict):
            yield from _expects(sub)


def _inventory_names(group):
    """The variable names a YAML inventory sets, through its children, hosts and vars at any depth."""
    names = set()
    for name, sub in (group or {}).items():
        if name == "vars":
            names.update(sub or {})
        elif name == "hosts":
            for host_vars in (sub or {}).values():
                names.update(host_vars or {})
        elif isinstance(sub, dict):
            names.update(_inventory_names(sub))
    return names


def test_unread_names_come_with_the_close_names_that_are_read():
    found = inventory_vars.unread({"n1": ["expect_gpu_count", "gpu_gem", "ansible_host", "foo"],
                                   "n2": ["gpu_python"]}, KNOWN)
    assert list(found) == ["n1"]
    assert dict(found["n1"])["gpu_gem"][0] == "gpu_gemm"
    assert [name for name, _close in found["n1"]] == ["expect_gpu_count", "gpu_gem"]
    assert inventory_vars.message(found).startswith("n1: expect_gpu_count, gpu_gem (did you mean ")


def test_comments_yaml_keys_and_attribute_access_are_not_uses():
    text = ("# gpu_in_a_comment is documentation\n"
            "gpu_count: \"{{ acceptance_expect.gpu_count | default(omit) }}\"\n"
            "when: gpu_used_bare | bool and hostvars[h]['gpu_in_brackets']\n")
    assert inventory_vars._used_names(text) == {"acceptance_expect", "gpu_used_bare"}  # pylint: disable=protected-access


def test_acceptance_expect_keys_outside_the_environment_expectations_are_named():
    expects = {"n1": {"gpu_count": 8, "expect_hca_count": 8, "gpu_modle": "H100"}, "n2": {"npu_count": 8},
               "n3": None}
    found = inventory_vars.unknown_expect_keys(expects)
    assert list(found) == ["n1"]
    assert found["n1"] == [("acceptance_expect.expect_hca_count", ["acceptance_expect.hca_count"]),
                           ("acceptance_expect.gpu_modle", ["acceptance_expect.gpu_model"])]
    assert inventory_vars.message(found) == (
        "n1: acceptance_expect.expect_hca_count (did you mean acceptance_expect.hca_count?), "
        "acceptance_expect.gpu_modle (did you mean acceptance_expect.gpu_model?)")


def test_every_environment_expectation_of_the_glossary_is_a_known_key():
    with open(os.path.join(ROOT, "docs", "glossary.md"), encoding="utf-8") as fh:
        table = fh.read().split("## Environment expectations", 1)[1].split("\n## ", 1)[0]
    keys = set(line.split("`")[1] for line in table.splitlines() if line.startswith("| `"))
    assert keys == set(inventory_vars.EXPECT_KEYS)
    assert inventory_vars.unknown_expect_keys({"n1": dict((key, 1) for key in keys)}) == {}


def test_acceptance_expect_that_is_not_a_mapping_is_named():
    found = inventory_vars.unknown_expect_keys({"n1": [8]})
    assert found == {"n1": [("acceptance_expect (a list, not a mapping)", [])]}


def test_a_substrate_that_is_neither_ssh_nor_kubernetes_is_named():
    found = inventory_vars.unknown_substrates({"n1": "ssh", "n2": "kubernetes", "n3": None, "n4": "k8s"})
    assert found == {"n4": [("acceptance_substrate k8s (ssh or kubernetes)", [])]}
