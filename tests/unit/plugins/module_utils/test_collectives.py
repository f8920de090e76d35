# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""collectives (argv, mpirun, records), expectations' profile layer, the GEMM worker output parser."""

from __future__ import annotations

import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.aifabric.acceptance.plugins.module_utils import expectations, gpu_worker, results
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import gemm as gemm_parser
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import _collective, _mpirun
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import ParseError
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import nccl_tests
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import Context
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import nccl_test as adapter
from ansible_collections.aifabric.acceptance.tests.unit.helpers import parser_fixture, read

HERE = os.path.dirname(os.path.abspath(__file__))
NCCL = parser_fixture("nccl_tests")
PROOF = os.path.join(HERE, "..", "modules", "fixtures")


# ------------------------------------------------------------------ argv


def test_nccl_tests_argv_all_flags():
    argv = adapter.nccl_tests_argv("/b/all_reduce_perf", {
        "min_bytes": "8", "max_bytes": "8G", "step_factor": 2, "gpus_per_process": 8, "threads": 1, "iterations": 20,
        "warmup_iterations": 5, "verify_data": True, "datatype": "bfloat16", "op": "sum", "root": 0, "agg_iterations": 1,
        "average": 1,
        "blocking": 0, "cudagraph": 0, "tool_timeout_s": 600, "extra_args": ["-p", "1"]}, json_path="/t/x.json")
    assert argv == ["/b/all_reduce_perf", "-b", "8", "-e", "8G", "-f", "2", "-g", "8", "-t", "1", "-n", "20",
                    "-w", "5", "-c", "1", "-r", "0", "-m", "1", "-a", "1", "-z", "0", "-G", "0", "-T", "600",
                    "-d", "bfloat16", "-o", "sum", "-J", "/t/x.json", "-p", "1"]


@pytest.mark.parametrize("opts", [{"max_bytes": "8 G"}, {"min_bytes": "1;rm"}, {"datatype": "float; x"}])
def test_nccl_tests_argv_rejects_bad_values(opts):
    with pytest.raises(_mpirun.OptionError):
        adapter.nccl_tests_argv("x", opts)


def test_mpirun_argv_multi_node():
    argv = _mpirun.ranks_argv(
        "mpirun", ["/b/all_reduce_perf", "-g", "1"], ["10.0.0.1", "10.0.0.2"], 8,
        env={"NCCL_IB_HCA": "=mlx5_0", "NCCL_TESTS_SPLIT": "AND 0x7"}, env_names=["LD_LIBRARY_PATH"],
        mca={"pml": "ob1"}, allow_run_as_root=True, tcp_if_include="10.0.0.0/24", hostfile="/t/hostfile")
    assert argv == [
        "mpirun", "--allow-run-as-root", "-np", "16", "--hostfile", "/t/hostfile", "--map-by", "ppr:8:node",
        "--bind-to", "none", "--mca", "btl_tcp_if_include", "10.0.0.0/24", "--mca", "oob_tcp_if_include",
        "10.0.0.0/24", "--mca", "pml", "ob1", "-x", "NCCL_IB_HCA==mlx5_0", "-x", "NCCL_TESTS_SPLIT=AND 0x7",
        "-x", "LD_LIBRARY_PATH", "/b/all_reduce_perf", "-g", "1"]
    assert _mpirun.hostfile_text(["a", "b"], 8) == "a slots=8\nb slots=8\n"


@pytest.mark.parametrize("kwargs", [
    {"hosts": []}, {"hosts": ["a b"]}, {"hosts": ["a"], "env": {"BAD NAME": "1"}}, {"hosts": ["a"], "ranks": 0},
    {"hosts": ["a"], "mca": {"x;y": "1"}},
])
def test_mpirun_argv_rejects(kwargs):
    with pytest.raises(_mpirun.OptionError):
        _mpirun.ranks_argv("mpirun", ["x"], kwargs["hosts"], kwargs.get("ranks", 1), env=kwargs.get("env"),
                           mca=kwargs.get("mca"))


def test_busbw_factor_matches_nccl_tests():
    # all_reduce 2(n-1)/n; all_gather (n-1)/n -- check against the H200 capture's own columns.
    assert _collective.busbw_factor("all_reduce", 2) == 1.0
    assert _collective.busbw_factor("all_reduce", 8) == pytest.approx(1.75)
    parsed = nccl_tests.parse(read(NCCL, "h200x2-nccl-tests-2.19.6", "all_gather.json"))
    last = parsed["rows"][-1]["out_of_place"]
    assert last["busbw_gbyte_s"] == pytest.approx(last["algbw_gbyte_s"] * _collective.busbw_factor("all_gather", 2))


# ------------------------------------------------------------------ records

def _record(text, host=None, collective="all_reduce", **params):
    """The record nccl-tests' adapter builds (what every caller gets); no profile unless ``params`` name one."""
    (rec,) = adapter.records(text, Context(params=dict({"profile": "none"}, **params), host=host,
                                           collective=collective))
    return rec


def test_record_of_the_h200_all_reduce():
    rec = _record(read(NCCL, "h200x2-nccl-tests-2.19.6", "all_reduce_g2.txt"), host="h")
    assert results.validate(rec) == []
    assert rec["status"] == "pass" and rec["check"] == "nccl.all_reduce"
    m = rec["metrics"]
    assert (m["busbw_max_gbyte_s"], m["algbw_max_gbyte_s"], m["busbw_avg_gbyte_s"]) == (345.69, 345.69, 111.153)
    assert (m["size_at_busbw_max_bytes"], m["wrong_total"], m["ranks"]) == (8589934592, 0, 2)
    assert len(rec["series"]) == 31 and rec["series"][0]["size_bytes"] == 8
    assert rec["tool"] == {"name": "nccl-tests", "version": "2.19.6"}
    assert rec["facts"]["nccl_version"] == "2.28.9" and rec["raw"] is None


def test_wrong_elements_fail_and_old_error_column_is_kept():
    text = read(NCCL, "h200x2-nccl-tests-2.19.6", "all_reduce_g2.txt")
    # The same real run with one #wrong cell set (there is no public new-layout capture with #wrong > 0).
    line = [ln for ln in text.splitlines() if ln.strip().startswith("1048576 ")][0]
    bad = line[:-1] + "7"
    rec = _record(text.replace(line, bad))
    assert rec["status"] == "fail" and "7 wrong elements" in rec["reason"] and rec["raw"]
    old = _record(read(NCCL, "issue104-sendrecv-old-error-col-3e+02-inplace-fragment.txt"), collective="sendrecv")
    assert old["status"] == "error" and old["metrics"]["error_max"] == 300.0


def test_profile_and_user_rules_in_records():
    text = read(NCCL, "h200x2-nccl-tests-2.19.6", "all_reduce_debug.txt")  # one 64 MiB row only
    rec = _record(text, profile="h200-sxm-8gpu")
    assert rec["status"] == "fail"
    assert "busbw_max_gbyte_s 261.75 < 310 expected minimum (profile h200-sxm-8gpu (2 GPUs)" in rec["reason"]
    assert "no 8589934592 B row in this run" in rec["reason"]
    user = _record(text, profile="h200-sxm-8gpu", expect={"busbw_max_gbyte_s": {"min": 250}})
    assert user["expect"]["busbw_max_gbyte_s"] == {"min": 250, "source": "user threshold"}
    assert "busbw_max_gbyte_s" not in (user["reason"] or "")


# ------------------------------------------------------------------ expectations: profiles


def test_detect_profile():
    profiles = expectations.all_profiles()
    assert expectations.detect_profile("NVIDIA H200", 8, profiles)[0] == "h200-sxm-8gpu"
    name, why = expectations.detect_profile("NVIDIA H200", 2, profiles)
    assert name == "h200-sxm-8gpu" and "differs" in why
    assert expectations.detect_profile("NVIDIA A100-SXM4-40GB", 8, profiles)[0] == "a100-sxm-8gpu"
    assert expectations.detect_profile("Tesla K80", 1, profiles)[0] is None
    assert expectations.detect_profile(None, 8, profiles)[0] is None


def test_user_profiles_override_and_validate():
    mine = {"h200-sxm-8gpu": {"match": {"gpu_model": "H200"}, "checks": {
        "nccl.all_reduce": [{"when": {"nodes_min": 2}, "metrics": {"busbw_max_gbyte_s": {"min": 380}}, "source": "site"}]}}}
    profiles = expectations.all_profiles(mine)
    rules, sizes, source = expectations.profile_rules("h200-sxm-8gpu", "nccl.all_reduce", {"nodes": 4, "ranks": 32}, profiles)
    assert rules == {"busbw_max_gbyte_s": {"min": 380, "source": "site"}} and sizes == {} and source == "site"
    assert expectations.profile_rules("h200-sxm-8gpu", "nccl.all_reduce", {"nodes": 1, "ranks": 8}, profiles) == (None, None, None)
    with pytest.raises(expectations.ExpectationError):
        expectations.all_profiles({"x": {"checks": {}, "bogus": 1}})
    with pytest.raises(expectations.ExpectationError):
        expectations.profile_rules("nope", "gpu.gemm_bf16", {}, profiles)


def test_most_specific_when_wins_and_alias():
    profiles = {"p": {"checks": {"nccl.all_reduce": [
        {"when": {"nodes": 1}, "metrics": {"busbw_max_gbyte_s": {"min": 1}}},
        {"when": {"nodes": 1, "ranks": 8}, "metrics": {"busbw_max_gbyte_s": {"min": 2}}},
        {"when": {"nodes": 1, "ranks": 8, "algo": "Tree"}, "metrics": {"busbw_max_gbyte_s": {"min": 3}}},
    ]}}}
    pick = expectations.profile_rules
    assert pick("p", "nccl.all_reduce", {"nodes": 1, "ranks": 8, "algo": None}, profiles)[0]["busbw_max_gbyte_s"]["min"] == 2
    assert pick("p", "nccl.all_reduce", {"nodes": 1, "ranks": 8, "algo": "Tree"}, profiles)[0]["busbw_max_gbyte_s"]["min"] == 3
    assert pick("p", "nccl.torch_all_reduce", {"nodes": 1, "ranks": 4}, profiles)[0]["busbw_max_gbyte_s"]["min"] == 1
    with pytest.raises(expectations.ExpectationError):
        pick("p", "nccl.all_reduce", {"nodes": 1}, {"p": {"checks": {"nccl.all_reduce": [{"when": {"gpus": 1}}]}}})


def test_judge_sizes_and_rules_for_check():
    series = [{"size_bytes": 1024, "oop_busbw_gbyte_s": None, "ip_busbw_gbyte_s": 5.0}]
    status, reason, expect = expectations.judge_sizes(series, {"1024": {"busbw_gbyte_s": {"min": 10, "source": "s"}}})
    assert status == "fail" and "ip_busbw_gbyte_s@1024 5 < 10" in reason and "ip_busbw_gbyte_s@1024" in expect
    assert expectations.rules_for_check({"nccl.all_reduce": {"a": {"min": 1}}}, "nccl.all_reduce") == {"a": {"min": 1}}
    assert expectations.rules_for_check({"nccl.all_reduce": {"a": {"min": 1}}}, "nccl.alltoall") == {}
    assert expectations.rules_for_check({"tflops": {"min": 1}}, "gpu.gemm_bf16") == {"tflops": {"min": 1}}


def test_every_builtin_profile_rule_is_valid_and_sourced():
    for name, profile in expectations.all_profiles().items():
        for check, entries in profile["checks"].items():
            for entry in entries:
                assert entry.get("source"), (name, check)
                rules, _sizes, _source = expectations.profile_rules(name, check, dict(entry.get("when") or {}),
                                                                    expectations.all_profiles())
                assert rules


# ------------------------------------------------------------------ GEMM worker output


@pytest.mark.parametrize("rel", ["h200x2-proof-1/gemm_bare.txt", "h200x2-proof-2/gemm_bare.txt",
                                 "h200x2-proof-3/gemm_burst_bare.txt"])
def test_parse_gemm_real_captures(rel):
    items = gemm_parser.parse_gemm(read(PROOF, rel))
    assert [(i["device"], i["dtype"]) for i in items] == [(0, "bf16"), (0, "fp16"), (1, "bf16"), (1, "fp16")]
    assert all(i["gpu_name"] == "NVIDIA H200" and i["tflops"] > 500 for i in items)


def test_parse_gemm_errors():
    with pytest.raises(ParseError):
        gemm_parser.parse_gemm("Traceback (most recent call last):\n")
    with pytest.raises(ParseError):
        gemm_parser.parse_gemm("AIFABRIC_GEMM {broken\n")
    with pytest.raises(ParseError):
        gemm_parser.parse_gemm("AIFABRIC_GEMM [1, 2]\n")


@settings(max_examples=300, deadline=None)
@given(st.data())
def test_fuzz_parse_gemm(data):
    lines = read(PROOF, "h200x2-proof-2", "gemm_bare.txt").splitlines()
    for _step in range(data.draw(st.integers(1, 4))):
        if not lines:
            break
        i = data.draw(st.integers(0, len(lines) - 1))
        kind = data.draw(st.sampled_from(["drop", "truncate", "flip", "garbage", "dup"]))
        if kind == "drop":
            del lines[i]
        elif kind == "truncate":
            lines[i] = lines[i][:data.draw(st.integers(0, len(lines[i])))]
        elif kind == "flip" and lines[i]:
            j = data.draw(st.integers(0, len(lines[i]) - 1))
            lines[i] = lines[i][:j] + data.draw(st.characters(blacklist_categories=("Cs",))) + lines[i][j + 1:]
        elif kind == "garbage":
            lines.insert(i, data.draw(st.text(max_size=60)))
        else:
            lines.insert(i, lines[i])
    try:
        gemm_parser.parse_gemm("\n".join(lines))
    except ParseError:
        pass


def test_worker_source_is_staged(tmp_path):
    path, changed = gpu_worker.stage(str(tmp_path / "w"))
    assert changed and os.path.isfile(path)
    assert gpu_worker.stage(str(tmp_path / "w")) == (path, False)
    with open(path, encoding="utf-8") as handle:
        assert "def run_allreduce" in handle.read()


PROBE_RUNS = ["h200x2-proof-%d/probe_%s" % (n, kind) for n in (1, 2, 4) for kind in ("spawn", "mpirun")]


@pytest.mark.parametrize("stem", PROBE_RUNS)
def test_probe_text_and_json_agree(stem):
    """The probe's own table (nccl-tests text layout) and its -J shaped document say the same."""
    text = nccl_tests.parse_text(read(PROOF, stem + ".txt"))
    doc = nccl_tests.parse_json(read(PROOF, stem + ".json"))
    assert text["complete"] and doc["complete"] and text["ranks"] == doc["ranks"] == 2
    assert [r["size"] for r in text["rows"]] == [r["size"] for r in doc["rows"]] == [2 ** i for i in range(20, 34)]
    for a, b in zip(text["rows"], doc["rows"]):
        assert a["out_of_place"]["time_us"] is None and b["out_of_place"] is None
        assert abs(a["in_place"]["busbw_gbyte_s"] - b["in_place"]["busbw_gbyte_s"]) <= 0.006
        assert a["in_place"]["wrong"] == b["in_place"]["wrong"] == 0
    rec = _collective.to_record(doc, check="nccl.torch_all_reduce", tool_name="allreduce_probe")
    assert results.validate(rec) == [] and rec["status"] == "pass" and rec["metrics"]["wrong_total"] == 0


# ---------------------------------------------------------------- one rank measures no interconnect


def test_one_rank_is_skip_not_pass_real_h100x1_capture():
    """all_reduce_perf -g 1 on a real H100 (busbw 0.00 on every row, in-place rows are no-ops): the run worked,
    but nothing between GPUs was measured, so the record is skip (figures kept), never pass."""
    text = read(PROOF, "h100x1-proof", "all_reduce_g1.txt")
    rec = _record(text, host="vm")
    assert rec["status"] == "skip", rec["reason"]
    assert "1 rank" in rec["reason"] and "no interconnect" in rec["reason"]
    assert rec["metrics"]["busbw_max_gbyte_s"] == 0.0
    assert len(rec["series"]) == 28
    assert not results.validate(rec)


def test_one_rank_keeps_its_error_and_fail_verdicts():
    """The rule only turns a pass into skip: a truncated 1-rank output is still error."""
    text = read(PROOF, "h100x1-proof", "all_reduce_g1.txt")
    cut = "\n".join(line for line in text.splitlines() if "Avg bus bandwidth" not in line)
    assert _record(cut)["status"] == "error"


def test_two_ranks_are_still_judged_real_h200x2_capture():
    text = read(NCCL, "h200x2-nccl-tests-2.19.6", "all_reduce_g2.txt")
    rec = _record(text)
    assert rec["status"] == "pass" and rec["metrics"]["busbw_max_gbyte_s"] > 100
