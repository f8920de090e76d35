# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

import json
import os

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.aifabric.acceptance.plugins.module_utils import results

jsonschema = pytest.importorskip("jsonschema")

SCHEMA_PATH = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "docs", "results.schema.json")


@pytest.fixture(scope="module")
def validator():
    with open(SCHEMA_PATH, encoding="utf-8") as handle:
        schema = json.load(handle)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_make_builds_a_schema_valid_record(validator):
    record = results.make(
        "rdma.ib_write_bw", "fail", reason="bw_avg_gbit_s 182.4 < 380 expected minimum",
        host="gpu-node-07", peer="gpu-node-12", target="mlx5_3",
        metrics={"bw_avg_gbit_s": 182.4, "msg_size_bytes": 65536},
        expect={"bw_avg_gbit_s": {"min": 380}}, params={"argv": ["ib_write_bw", "-d", "mlx5_3"]},
        tool={"name": "perftest", "version": "6.06"}, duration_s=12.4,
        series=[{"msg_size_bytes": 65536, "iterations": 5000, "bw_peak_gbit_s": 190.1, "bw_avg_gbit_s": 182.4,
                 "msg_rate_mpps": 0.35, "tool_unit": "Gb/sec", "tool_bw_peak": 190.1, "tool_bw_avg": 182.4}])
    assert list(validator.iter_errors(record)) == []
    assert record["status"] == "fail"
    assert record["target"] == "mlx5_3"
    assert record["started"].endswith("Z")


@pytest.mark.parametrize("kwargs, problem", [
    ({"check": "bogus.thing", "status": "pass"}, "check"),
    ({"check": "env.os", "status": "great"}, "status"),
    ({"check": "env.os", "status": "fail"}, "must say why"),
    ({"check": "env.os", "status": "skip", "reason": ""}, "must say why"),
    ({"check": "env.os", "status": "pass", "metrics": {"x": "12 GB"}}, "number"),
    ({"check": "env.os", "status": "pass", "metrics": {"Bad Name": 1}}, "snake_case"),
])
def test_make_rejects_contract_breaches(kwargs, problem):
    with pytest.raises(results.RecordError, match=problem):
        results.make(**kwargs)


def test_nan_metrics_become_null():
    record = results.make("gpu.gemm_bf16", "error", reason="no result", metrics={"tflops": float("nan")})
    assert record["metrics"]["tflops"] is None
    assert record["status"] == "error" and record["reason"] == "no result"


@pytest.mark.parametrize("status", ["pass", "warn", "fail"])
@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
def test_a_judged_record_without_a_finite_measurement_is_an_error(validator, status, value):
    """Issue 7: a NaN/inf metric used to become null in a *pass* record (a pass nothing measured)."""
    record = results.make("gpu.gemm_bf16", status, reason=None if status == "pass" else "below floor",
                          metrics={"tflops": value, "matrix_bytes": 1024}, expect={"tflops": {"min": 575}})
    assert record["status"] == "error"
    assert record["reason"].startswith("metric tflops is not a finite number (%s)" % value)
    assert ("below floor" in record["reason"]) == (status != "pass")
    assert record["metrics"] == {"tflops": None, "matrix_bytes": 1024}
    assert list(validator.iter_errors(record)) == []


def test_skip_with_a_nonfinite_metric_stays_skip():
    record = results.skip("gpu.gemm_bf16", "no GPU", metrics={"tflops": float("nan")})
    assert record["status"] == "skip" and record["metrics"]["tflops"] is None


def test_validate_and_demote_catch_nonfinite_metrics_of_received_records():
    received = {"check": "nccl.all_reduce", "status": "pass", "host": "a",
                "metrics": {"busbw_max_gbyte_s": float("inf"), "size_bytes": 8}}
    assert results.validate(received) == ["metric busbw_max_gbyte_s is not a finite number (inf)"]
    fixed = results.demote_nonfinite(received)
    assert received["status"] == "pass"           # the input is not modified
    assert fixed["status"] == "error" and fixed["metrics"]["busbw_max_gbyte_s"] is None
    assert results.validate(fixed) == []
    assert results.demote_nonfinite("not a record") == "not a record"


@pytest.mark.parametrize("record, problem", [
    ({"check": "env.os", "status": "pass", "host": 5}, "host must be a string"),
    ({"check": "env.os", "status": "pass", "peer": ["a"]}, "peer must be a string"),
    ({"check": "env.os", "status": "pass", "metrics": [1]}, "metrics must be a mapping"),
    ({"check": 7, "status": "pass"}, "check 7 is not family.name"),
    (["env.os", "pass"], "not a dict"),
])
def test_validate_names_malformed_records(record, problem):
    assert any(problem in p for p in results.validate(record)), results.validate(record)


def test_error_keeps_the_tail_of_the_output():
    text = "\n".join("line %d" % i for i in range(100))
    record = results.error("rdma.ib_write_bw", "Couldn't connect", raw=text)
    assert record["raw"].endswith("line 99")
    assert "line 10\n" not in record["raw"]
    assert "60 lines trimmed" in record["raw"]


def test_worst_and_count():
    assert results.worst(["pass", "skip", "warn"]) == "warn"
    # skip is below pass: a host with passes and (optional) skips is pass; skip only when nothing ran
    assert results.worst(["pass", "skip"]) == "pass"
    assert results.worst(["skip", "skip"]) == "skip"
    assert sorted(results.STATUSES, key=results.SEVERITY.get) == ["skip", "pass", "warn", "fail", "error"]
    assert results.worst(["fail", "error", "pass"]) == "error"
    assert results.worst([]) == "pass"
    recs = [results.make("env.os", "pass"), results.skip("gpu.inventory", "no GPU")]
    assert results.count(recs) == {"pass": 1, "warn": 0, "fail": 0, "skip": 1, "error": 0}


def test_with_host_fills_only_missing_hosts():
    recs = [results.make("env.os", "pass"), results.make("env.os", "pass", host="a")]
    out = results.with_host(recs, "b")
    assert [r["host"] for r in out] == ["b", "a"]
    assert recs[0]["host"] is None  # inputs are not modified


def _gemm(status, tflops, reason=None):
    return results.make("gpu.gemm_bf16", status, reason=reason, target="0", metrics={"tflops": tflops},
                        params={"argv": ["python3"]}, started="2026-11-22T10:00:00Z", duration_s=2.0)


def test_rests_on_stamps_judged_records_only(validator):
    recs = results.rests_on([_gemm("pass", 700.0), _gemm("fail", 500.0, "tflops 500 < 650"),
                             results.error("gpu.gemm", "worker failed"), results.skip("gpu.gemm", "no GPU")])
    assert [r["params"].get("runs") for r in recs] == [1, 1, None, None]
    assert all(list(validator.iter_errors(r)) == [] for r in recs)
    for bad in (0, True, "1"):
        record = dict(recs[0], params={"runs": bad})
        assert results.validate(record) and list(validator.iter_errors(record)), bad


def test_retested_rests_on_both_runs(validator):
    low, ok = _gemm("fail", 500.0, "tflops 500 < 650"), _gemm("pass", 700.0)
    both = results.retested(low, _gemm("fail", 520.0, "tflops 520 < 650"), "tflops")
    assert both["status"] == "fail" and both["params"]["runs"] == 2 and both["metrics"]["tflops"] == 520.0
    assert (both["metrics"]["run1_tflops"], both["metrics"]["run2_tflops"]) == (500.0, 520.0)
    assert both["reason"] == "tflops 520 < 650 (both runs: tflops 500, then 520)" and both["duration_s"] == 4.0
    for first, second in ((low, ok), (ok, low)):        # either order: one failing run of two is inconclusive
        mixed = results.retested(first, second, "tflops")
        assert mixed["status"] == "warn" and mixed["params"]["runs"] == 2 and mixed["metrics"]["tflops"] == 700.0
        assert mixed["reason"].startswith("inconclusive: its two runs disagree: run 1 ")
        assert list(validator.iter_errors(mixed)) == []
    lat = results.retested(dict(low, metrics={"lat_us": 9.0}), dict(low, metrics={"lat_us": 7.0}), "lat_us",
                           better="lower")
    assert lat["metrics"]["lat_us"] == 7.0
    none = results.retested(low, results.error("gpu.gemm", "timed out"), "tflops")
    assert none["status"] == "fail" and none["params"]["runs"] == 1
    assert none["reason"] == "tflops 500 < 650 (one run; retest: timed out)" and "run1_tflops" not in none["metrics"]


_json_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=5))


@settings(max_examples=300, deadline=None)
@given(record=st.dictionaries(
    st.sampled_from(results.FIELDS + ("extra",)),
    st.one_of(_json_scalars, st.sampled_from(["env.os", "rdma.ib_write_bw", "nope", "pass", "fail", "skip"]),
              st.dictionaries(st.sampled_from(["a_us", "Bad", "x"]), _json_scalars, max_size=2),
              st.lists(st.dictionaries(st.text(max_size=3), _json_scalars, max_size=2), max_size=2)),
    max_size=len(results.FIELDS)))
def test_validate_agrees_with_the_json_schema(validator, record):
    """results.validate (used on targets without jsonschema) never accepts what the schema rejects."""
    ours = results.validate(record)
    theirs = list(validator.iter_errors(record))
    if not ours:
        # The schema also requires host/metrics/started, which make() always fills in.
        full = dict({"host": None, "metrics": {}, "started": "2026-11-22T00:00:00Z"}, **record)
        assert list(validator.iter_errors(full)) == [], (record, theirs)


# ---------------------------------------------------------------- validate's one-pass check of a valid record

_JUDGEMENT = os.path.join(os.path.dirname(__file__), "..", "plugin_utils", "fixtures", "h200x2-judgement")


def _real_records():
    """Every record of the real 2x H200 judgement runs (measured and analysis records, series included)."""
    out = []
    for name in ("healthy", "loaded", "nop2p"):
        with open(os.path.join(_JUDGEMENT, name + ".results.json"), encoding="utf-8") as handle:
            out.extend(json.load(handle)["records"])
    return out


_REAL = _real_records()
_ODD_VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=True, allow_infinity=True), st.text(max_size=8),
    st.sampled_from(["pass", "warn", "fail", "skip", "error", "env.x", "gpu.gemm_bf16", "Bad.check", "bw_gbit_s"]),
    st.lists(st.integers(0, 2), max_size=2), st.dictionaries(st.sampled_from(["runs", "a", "BadName", "x_s"]),
                                                             st.one_of(st.none(), st.integers(-1, 2), st.floats(),
                                                                       st.text(max_size=3)), max_size=2))


def _by_field_checks(record):
    problems = []
    for field_check in results._FIELD_CHECKS:   # pylint: disable=protected-access
        problems.extend(field_check(record))
    return problems


@settings(max_examples=600, deadline=None)
@given(index=st.integers(0, len(_REAL) - 1), key=st.sampled_from(results.FIELDS + ("unknown", "runs", "metric")),
       value=_ODD_VALUES, drop=st.booleans())
def test_validate_says_what_every_field_check_says(index, key, value, drop):
    """validate's one pass over a valid record (``_plainly_valid``) never calls valid what a field check refuses: on
    real records with one field mutated (or dropped), validate lists exactly the field checks' problems."""
    record = json.loads(json.dumps(_REAL[index]))
    if key == "runs":
        record["params"] = dict(record.get("params") or {}, runs=value)
    elif key == "metric":
        record["metrics"] = dict(record.get("metrics") or {}, **{"x_%s" % len(record): value})
    elif drop and key in record:
        del record[key]
    else:
        record[key] = value
    assert results.validate(record) == _by_field_checks(record)


def test_validate_passes_the_real_records_and_names_a_broken_series():
    assert [results.validate(r) for r in _REAL] == [[] for _r in _REAL]
    record = json.loads(json.dumps(next(r for r in _REAL if r["series"] and r["check"].startswith("nccl."))))
    record["schema_version"] = results.SCHEMA_VERSION      # (series are checked on records of version 1 on)
    assert results.validate(record) == []
    record["series"][0]["size_bytes"] = "1M"
    assert results.validate(record) == _by_field_checks(record) != []
