# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 23 item 3: one schema per record family for ``series``, and a ``schema_version`` in every record.

docs/results.schema.json holds the family schemas ($defs series_<family>, chosen by ``check`` in its allOf);
results.SERIES_FAMILIES is their mirror for the targets (no jsonschema there): held equal here. Every golden record
(every real capture through every tool adapter, fixtures/records_golden) validates under both; a mutated series
(a column missing, an unknown column, a number as a string, another family's rows) fails under both. A record
without schema_version (an old results.json) is version 0: its series is only a list of mappings.
"""

from __future__ import annotations

import copy
import glob
import json
import os
import re

import pytest

from ansible_collections.aifabric.acceptance.plugins.module_utils import results
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import perftest_sweep as perftest_tool
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import fleet

jsonschema = pytest.importorskip("jsonschema")

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", "..", ".."))
SCHEMA_PATH = os.path.join(ROOT, "docs", "results.schema.json")
GOLDEN = sorted(glob.glob(os.path.join(HERE, "fixtures", "records_golden", "*.json")))
REAL_FIXTURES = os.path.join(ROOT, "tests", "unit", "plugins", "plugin_utils", "fixtures")
REAL_RUN = os.path.join(REAL_FIXTURES, "h200x2-acceptance-results.json")
# results.json of real runs (H100/H200 machines, docs in their directories), written before versions
REAL_RUNS = [REAL_RUN] + sorted(glob.glob(os.path.join(REAL_FIXTURES, "h*-judgement", "*.results.json")))


@pytest.fixture(scope="module")
def schema():
    with open(SCHEMA_PATH, encoding="utf-8") as handle:
        return json.load(handle)


@pytest.fixture(scope="module")
def validator(schema):
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _golden_records():
    out = []
    for path in GOLDEN:
        with open(path, encoding="utf-8") as handle:
            for index, record in enumerate(json.load(handle)):
                record = dict(record, started="2026-11-22T10:00:00Z")   # the golden files drop the clock
                out.append(("%s[%d]" % (os.path.basename(path), index), record))
    return out


GOLDEN_RECORDS = _golden_records()
WITH_SERIES = [(name, rec) for name, rec in GOLDEN_RECORDS if rec["series"]]


def _family_of_record(record):
    return results.series_family(record["check"])


def _one_of_each_family():
    seen = {}
    for name, record in WITH_SERIES:
        seen.setdefault(_family_of_record(record), (name, record))
    return [seen[family] for family in sorted(seen)]


def _invalid_both(validator, record):
    """(schema errors, Python problems) of a record: both must be non-empty for an invalid record."""
    return [e.message for e in validator.iter_errors(record)], results.validate(record)


# ---------------------------------------------------------------- the schema file and its Python mirror


def _schema_families(schema):
    """{family: {checks, x, plot, columns: {name: (types, required)}}} as docs/results.schema.json says."""
    out = {}
    for rule in schema["allOf"]:
        ref = rule["then"].get("properties", {}).get("series", {}).get("$ref")
        if ref is None:
            continue
        name = ref.rsplit("/", 1)[1][len("series_"):]
        definition = schema["$defs"]["series_" + name]
        items = definition["items"]
        assert items["additionalProperties"] is False, name
        columns = {}
        for column, spec in items["properties"].items():
            types = spec["type"] if isinstance(spec["type"], list) else [spec["type"]]
            columns[column] = (tuple(types), column in items["required"])
        assert rule["if"]["required"] == ["check", "schema_version"]
        assert rule["if"]["properties"]["schema_version"] == {"minimum": 1}
        out[name] = {"checks": rule["if"]["properties"]["check"]["pattern"], "x": definition["x-plot"]["x"],
                     "plot": tuple(definition["x-plot"]["y"]), "columns": columns}
    return out


def test_the_python_mirror_equals_the_schema_file(schema):
    mirror = dict((name, {"checks": f["checks"], "x": f["x"], "plot": tuple(f["plot"]), "columns": f["columns"]})
                  for name, f in results.SERIES_FAMILIES.items())
    assert _schema_families(schema) == mirror


def test_a_check_of_no_family_carries_no_series(schema):
    last = schema["allOf"][-1]
    patterns = [p["pattern"] for p in last["if"]["properties"]["check"]["not"]["anyOf"]]
    assert patterns == [f["checks"] for f in results.SERIES_FAMILIES.values()]
    assert last["then"] == {"properties": {"series": {"maxItems": 0}}}


def test_schema_version_in_the_schema_is_the_code_s(schema):
    prop = schema["properties"]["schema_version"]
    assert (prop["type"], prop["minimum"], prop["maximum"]) == ("integer", 0, results.SCHEMA_VERSION)
    assert "schema_version" not in schema["required"]      # absent: an old results.json, version 0


def test_each_family_x_is_a_required_integer_and_plot_columns_are_numbers():
    for name, family in results.SERIES_FAMILIES.items():
        assert family["columns"][family["x"]] == (("integer",), True), name
        for column in family["plot"]:
            assert family["columns"][column][0] == ("number", "null"), (name, column)


def test_the_families_cover_every_check_that_emits_a_series():
    """perftest: every test of perftest_tool.TESTS, both sides; the collectives; nothing else."""
    for test in perftest_tool.TESTS:
        for check in ("rdma." + test, "rdma.%s.server" % test):
            assert results.series_family(check) == "perftest_" + perftest_tool.kind_of(test), check
    assert results.series_family("nccl.all_reduce") == "collective"
    assert results.series_family("nccl.torch_all_reduce") == "collective"
    assert results.series_family("hccl.reduce_scatter") == "hccl"
    for check in ("gpu.gemm_bf16", "rdma.port", "rdma.sweep", "env.os", "k8s.job", "rdma.ib_write_bw_x", None, 3):
        assert results.series_family(check) is None, check


# ---------------------------------------------------------------- what production emits


def test_the_golden_records_cover_every_family():
    assert len(GOLDEN_RECORDS) > 150
    assert sorted(set(_family_of_record(r) for _n, r in WITH_SERIES)) == sorted(results.SERIES_FAMILIES)
    assert all(r["series"] == [] for _n, r in GOLDEN_RECORDS if _family_of_record(r) is None)


@pytest.mark.parametrize("name, record", GOLDEN_RECORDS, ids=[n for n, _r in GOLDEN_RECORDS])
def test_every_golden_record_validates(validator, name, record):
    assert record["schema_version"] == results.SCHEMA_VERSION, name
    assert [e.message for e in validator.iter_errors(record)] == []
    assert results.validate(record) == []


@pytest.mark.parametrize("path", REAL_RUNS, ids=[os.path.relpath(p, REAL_FIXTURES) for p in REAL_RUNS])
def test_the_real_runs_series_fit_the_family_schemas(validator, path):
    """The results.json of real runs (written before versions: version 0): their series rows, read as version 1,
    fit their families (the schemas describe what the tools really gave, not only the golden fixtures)."""
    with open(path, encoding="utf-8") as handle:
        records = json.load(handle)["records"]
    assert all("schema_version" not in r for r in records)
    with_series = [dict(r, schema_version=1) for r in records if r.get("series")]
    assert with_series
    for record in with_series:
        assert [e.message for e in validator.iter_errors(record)] == [], record["check"]
        assert results.validate(record) == [], record["check"]


# ---------------------------------------------------------------- what must fail


def _mutations(record):
    """(what, mutated record) for one record with a series of its family."""
    family = results.SERIES_FAMILIES[_family_of_record(record)]
    x_key = family["x"]
    number = next(c for c, (types, required) in family["columns"].items() if required and types == ("number", "null"))
    out = []
    missing = copy.deepcopy(record)
    del missing["series"][0][x_key]
    out.append(("x column missing", missing))
    renamed = copy.deepcopy(record)
    renamed["series"][-1]["busbw"] = renamed["series"][-1].pop(number)
    out.append(("a column renamed", renamed))
    unknown = copy.deepcopy(record)
    unknown["series"][0]["bw_gbit_s"] = 1.0
    out.append(("an unknown column", unknown))
    as_text = copy.deepcopy(record)
    as_text["series"][0][number] = "12.5"
    out.append(("a number as a string", as_text))
    x_text = copy.deepcopy(record)
    x_text["series"][0][x_key] = str(x_text["series"][0][x_key])
    out.append(("the size as a string", x_text))
    as_bool = copy.deepcopy(record)
    as_bool["series"][0][x_key] = True
    out.append(("the size as a bool", as_bool))
    not_row = copy.deepcopy(record)
    not_row["series"].append([1, 2])
    out.append(("a row that is not a mapping", not_row))
    return out


@pytest.mark.parametrize("name, record", _one_of_each_family(), ids=[n for n, _r in _one_of_each_family()])
def test_a_mutated_series_fails(validator, name, record):
    assert _invalid_both(validator, record) == ([], [])
    for what, mutated in _mutations(record):
        schema_errors, problems = _invalid_both(validator, mutated)
        assert schema_errors, "%s: %s passes the schema" % (name, what)
        assert problems, "%s: %s passes results.validate" % (name, what)
        with pytest.raises(results.RecordError):
            results.make(**dict((k, v) for k, v in mutated.items() if k != "schema_version"))


def test_a_family_s_series_under_another_family_s_check_fails(validator):
    samples = dict((_family_of_record(r), r) for _n, r in _one_of_each_family())
    checks = {"collective": "nccl.all_reduce", "hccl": "hccl.all_reduce", "perftest_bw": "rdma.ib_write_bw",
              "perftest_lat": "rdma.ib_write_lat", "soak": "gpu.soak"}
    assert sorted(samples) == sorted(checks)
    for family, record in samples.items():
        for other, check in checks.items():
            if other == family or (family, other) == ("collective", "hccl"):
                continue    # hccl's rows are the collective's plus check_result (optional: see the test below)
            moved = dict(record, check=check)
            schema_errors, problems = _invalid_both(validator, moved)
            assert schema_errors and problems, "%s rows pass as %s" % (family, other)
        for check in ("gpu.gemm_bf16", "rdma.port", "env.os"):
            schema_errors, problems = _invalid_both(validator, dict(record, check=check))
            assert schema_errors and problems, "%s rows pass under %s (a check of no family)" % (family, check)
            assert any("has no series schema" in p for p in problems)


def test_an_hccl_row_is_a_collective_row_plus_check_result(validator):
    record = next(r for _n, r in WITH_SERIES if _family_of_record(r) == "hccl")
    assert all("check_result" in row for row in record["series"])
    schema_errors, problems = _invalid_both(validator, dict(record, check="nccl.all_reduce"))
    assert any("check_result" in e for e in schema_errors) and any("check_result" in p for p in problems)


def test_the_problems_of_a_long_bad_series_are_few():
    record = copy.deepcopy(next(r for _n, r in WITH_SERIES if _family_of_record(r) == "perftest_bw"))
    record["series"] = [dict(row, msg_size_bytes=str(row["msg_size_bytes"])) for row in record["series"] * 20]
    problems = results.validate(record)
    assert len(problems) == results.SERIES_PROBLEMS_SHOWN + 1
    assert re.match(r"^\.\.\. \d+ more series problems$", problems[-1])


# ---------------------------------------------------------------- schema_version


def test_make_stamps_the_version():
    record = results.make("env.os", "pass")
    assert record["schema_version"] == results.SCHEMA_VERSION == 1
    assert results.record_version(record) == 1


def test_a_record_without_a_version_is_version_0_and_its_series_is_not_checked(validator):
    record = dict(next(r for _n, r in WITH_SERIES if _family_of_record(r) == "perftest_bw"))
    del record["schema_version"]
    old = dict(record, series=[{"bytes": 65536, "bw": 182.4}])     # the shape of a series before the schemas
    assert results.record_version(old) == 0
    assert results.validate(old) == []
    assert [e.message for e in validator.iter_errors(old)] == []
    assert results.validate(dict(old, schema_version=1))     # the same rows as version 1: not its family's


@pytest.mark.parametrize("version, problem", [
    (2, "newer than this collection reads"), (-1, "whole number"), (True, "whole number"), (1.0, "whole number"),
    (None, "whole number"), ("1", "whole number")])
def test_a_bad_or_later_version_is_refused(validator, version, problem):
    record = dict(results.make("env.os", "pass"), schema_version=version)
    problems = results.validate(record)
    assert any(problem in p for p in problems), problems
    if version != 1.0:      # JSON Schema's integer is mathematical (1.0 is one); the Python check takes JSON's int
        assert list(validator.iter_errors(record))


def test_results_json_says_its_schema_version(tmp_path):
    report = fleet.build_report([results.make("env.os", "pass", host="a")], fleet.run_metadata("r1", "s", "e", ["a"]))
    assert report["schema_version"] == results.SCHEMA_VERSION
    assert [r["schema_version"] for r in report["records"]] == [results.SCHEMA_VERSION]
    path = tmp_path / "results.json"
    for version, readable in ((None, True), (0, True), (1, True), (2, False), ("1", False)):
        data = dict(report, run=dict(report["run"]))
        if version is None:
            del data["schema_version"]
        else:
            data["schema_version"] = version
        path.write_text(json.dumps(data), encoding="utf-8")
        if readable:
            assert fleet.load_results(str(path))["records"][0]["check"] == "env.os"
        else:
            with pytest.raises(ValueError, match="schema_version"):
                fleet.load_results(str(path))


def test_old_records_are_read_as_version_0_and_analysed_again():
    """The real run's results.json (no versions): re-analysed, its measured records are version 0 (and their series
    kept as they were), the analysis records and results.json itself version 1."""
    data, plain = fleet.read_results(REAL_RUN)
    report = fleet.reanalyze(data, plain_json=plain)
    assert report["schema_version"] == results.SCHEMA_VERSION
    measured = [r for r in report["records"] if (r.get("tool") or {}).get("name") != "fleet-analysis"]
    analysis = [r for r in report["records"] if (r.get("tool") or {}).get("name") == "fleet-analysis"]
    assert measured and analysis
    assert set(r["schema_version"] for r in measured) == {0}
    assert set(r["schema_version"] for r in analysis) == {results.SCHEMA_VERSION}
    again = fleet.reanalyze(json.loads(json.dumps(report)))
    assert again["records"] == report["records"]
