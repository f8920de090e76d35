# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which inventory variables the collection reads, scanned from its own playbooks and roles (issue 19 item 5)."""

from __future__ import annotations

import glob
import os

import yaml

from ansible_collections.aifabric.acceptance.plugins.plugin_utils import inventory_vars

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
VOCABULARY = inventory_vars.Vocabulary(ROOT)
KNOWN = VOCABULARY.names


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
        assert VOCABULARY.unread({path: names}) == {}, path
        assert _expect_problems(dict((i, e) for i, e in enumerate(_expects(data)))) == {}, path


def _expect_problems(expects):
    """The unknown keys of each host's acceptance_expect (``expects``: {host: the value, None where unset})."""
    return inventory_vars.unknown_keys(dict((host, {"acceptance_expect": value}) for host, value in expects.items()),
                                       VOCABULARY)


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
    found = VOCABULARY.unread({"n1": ["expect_gpu_count", "gpu_gem", "ansible_host", "foo"], "n2": ["gpu_python"]})
    assert list(found) == ["n1"]
    assert dict(found["n1"])["gpu_gem"][0] == "gpu_gemm"
    assert [name for name, _close in found["n1"]] == ["expect_gpu_count", "gpu_gem"]
    assert inventory_vars.message(found).startswith(
        "n1: expect_gpu_count (did you mean acceptance_expect: {gpu_count: ...}?), gpu_gem (did you mean ")


def test_comments_yaml_keys_and_attribute_access_are_not_uses():
    text = ("# gpu_in_a_comment is documentation\n"
            "gpu_count: \"{{ acceptance_expect.gpu_count | default(omit) }}\"\n"
            "when: gpu_used_bare | bool and hostvars[h]['gpu_in_brackets']\n")
    assert inventory_vars._used_names(text) == {"acceptance_expect", "gpu_used_bare"}  # pylint: disable=protected-access


def test_acceptance_expect_keys_outside_the_environment_expectations_are_named():
    expects = {"n1": {"gpu_count": 8, "expect_hca_count": 8, "gpu_modle": "H100"}, "n2": {"npu_count": 8},
               "n3": None}
    found = _expect_problems(expects)
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
    assert _expect_problems({"n1": dict((key, 1) for key in keys)}) == {}


def test_acceptance_expect_that_is_not_a_mapping_is_named():
    found = _expect_problems({"n1": [8]})
    assert found == {"n1": [("acceptance_expect (a list, not a mapping)", [])]}


def test_a_substrate_that_is_neither_ssh_nor_kubernetes_is_named():
    found = inventory_vars.unknown_substrates({"n1": "ssh", "n2": "kubernetes", "n3": None, "n4": "k8s"})
    assert found == {"n4": [("acceptance_substrate k8s (ssh or kubernetes)", [])]}


# ---- issue 33: every name the user writes, whatever its prefix, and every key of every mapping the collection reads


def _mutations(name):
    """Near-misses a hand makes of ``name``: two letters transposed, one left out, one doubled, a plural or singular."""
    middle = len(name) // 2
    out = {
        "transposed": name[:middle - 1] + name[middle] + name[middle - 1] + name[middle + 1:],
        "missing": name[:middle] + name[middle + 1:],
        "doubled": name[:middle] + name[middle] + name[middle:],
        "plural": name[:-1] if name.endswith("s") else name + "s",
    }
    return dict((kind, bad) for kind, bad in out.items() if bad != name)


def _mappings(vocabulary):
    """(dotted path, spec) of every mapping the collection reads, at any depth (from the argument specs)."""
    def walk(path, spec):
        if (spec or {}).get("options"):
            yield path, spec
            for key, sub in spec["options"].items():
                yield from walk("%s.%s" % (path, key), sub)
    for name, spec in sorted(vocabulary.specs.items()):
        yield from walk(name, spec)


def test_near_misses_of_every_name_the_collection_reads_are_refused_with_what_they_meant():
    """Generated from the vocabulary, not hand-picked: each top-level name's near-misses (whatever its prefix)."""
    checked = 0
    for name in sorted(n for n in KNOWN if len(n) >= 5 and not n.startswith("_")):
        for kind, bad in _mutations(name).items():
            if bad in KNOWN or bad.startswith("_"):
                continue            # a mutation that is another name the collection reads
            found = VOCABULARY.unread({"n1": [bad]})
            assert found, (name, kind, bad)
            assert name in found["n1"][0][1], (name, kind, bad, found)
            checked += 1
    assert checked > 400, checked


def test_near_misses_of_the_collection_s_names_without_its_prefixes_are_refused():
    """acceptence_expect has no prefix of the collection: refused as a near-miss (it gave a green on GPU-less hosts)."""
    found = VOCABULARY.unread({"n1": ["acceptence_expect", "aceptance_expect", "Acceptance-Expect", "report_inptu",
                                      "my_own_var", "expected", "ansible_hots", "inventory_hostname"]})
    assert dict(found["n1"]) == {"acceptence_expect": ["acceptance_expect"], "aceptance_expect": ["acceptance_expect"],
                                 "Acceptance-Expect": ["acceptance_expect"], "report_inptu": ["report_input"]}
    # the prefixes of its roles are the collection's: probe_ and perftest_ too
    found = dict(VOCABULARY.unread({"n1": ["probe_optons", "probe_option", "perftest_tool_dri", "perftest_mine"]})["n1"])
    assert sorted(found) == ["perftest_mine", "perftest_tool_dri", "probe_option", "probe_optons"]
    assert found["probe_optons"] == found["probe_option"] == ["probe_options"]
    assert found["perftest_tool_dri"] == ["perftest_tool_dir"]


def test_near_misses_of_every_key_of_every_mapping_are_refused_with_what_they_meant():
    checked = 0
    mappings = list(_mappings(VOCABULARY))
    assert {"acceptance_expect", "probe_options", "gpu_gemm", "rdma_perftest", "rdma_pairings", "hccl_options",
            "k8s_pod", "nccl_options"} <= set(path for path, _spec in mappings)
    for path, spec in mappings:
        name = path.split(".")[0]
        for key in sorted(spec["options"]):
            for kind, bad in _mutations(key).items():
                if bad in spec["options"] or len(key) < 5:
                    continue
                value = {bad: 1}
                for part in reversed(path.split(".")[1:]):
                    value = {part: value}
                found = VOCABULARY.unknown_keys(name, value)
                assert [entry[0] for entry in found] == ["%s.%s" % (path, bad)], (path, key, kind, found)
                assert "%s.%s" % (path, key) in found[0][1], (path, key, kind, found)
                checked += 1
    assert checked > 300, checked


def test_a_known_mapping_s_keys_pass_and_a_free_one_takes_any_key():
    assert VOCABULARY.unknown_keys("probe_options", {"packages": ["torch"], "env_vars": ["NCCL_*"]}) == []
    assert VOCABULARY.unknown_keys("acceptance_expect", {"package_versions": {"anything": "1.0"}}) == []
    assert VOCABULARY.unknown_keys("probe_options", "packages") == [("probe_options (a string, not a mapping)", [])]
    assert VOCABULARY.unknown_keys("my_own_var", {"x": 1}) == []


def test_one_name_in_several_specs_takes_the_union_of_their_suboptions():
    nccl = VOCABULARY.specs["nccl_options"]["options"]
    with open(os.path.join(ROOT, "roles", "k8s", "meta", "argument_specs.yml"), encoding="utf-8") as fh:
        k8s = yaml.safe_load(fh)["argument_specs"]["main"]["options"]["nccl_options"]["options"]
    with open(os.path.join(ROOT, "roles", "nccl", "meta", "argument_specs.yml"), encoding="utf-8") as fh:
        own = yaml.safe_load(fh)["argument_specs"]["main"]["options"]["nccl_options"]["options"]
    assert set(nccl) == set(k8s) | set(own)


def test_a_group_that_holds_no_targeted_host_and_sets_the_collection_s_variables_is_named():
    group_vars = {"gpu_nodes": ["acceptance_expect", "probe_options"], "mynodes": ["acceptance_expect"],
                  "rack_b": ["ntp_server"], "all": ["acceptance_fail_on"], "ghost": ["acceptence_expect"]}
    members = {"gpu_nodes": ["a1"], "mynodes": ["m1", "m2"], "rack_b": ["b1"], "all": ["a1", "m1", "m2", "b1"],
               "ghost": []}
    found = inventory_vars.untargeted(group_vars, members, ["m1", "m2"], VOCABULARY)
    assert found == [("ghost", ["acceptence_expect"]), ("gpu_nodes", ["acceptance_expect", "probe_options"])]


def test_findings_shared_by_hosts_are_said_once_naming_the_hosts():
    found = VOCABULARY.unread(dict(("n%02d" % i, ["acceptence_expect"]) for i in range(30)))
    text = inventory_vars.message(found)
    assert text.startswith("n00, n01, ") and "(and 10 more hosts): acceptence_expect (did you mean acceptance_expect?)" \
        in text and text.count("acceptence_expect") == 1
