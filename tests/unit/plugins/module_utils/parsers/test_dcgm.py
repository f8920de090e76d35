# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""dcgmi diag -j: the parser and the adapter's records on real captured outputs (fixtures/dcgm/README.md)."""

from __future__ import annotations

from hypothesis import HealthCheck, given, settings

from ansible_collections.aifabric.acceptance.plugins.module_utils import results
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import dcgm, dcgm_errors
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import Context
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import dcgm_diag as tool
from ansible_collections.aifabric.acceptance.tests.unit.helpers import parser_fixture, read
from ansible_collections.aifabric.acceptance.tests.unit.plugins.module_utils.parsers.mutations import mutated

V3 = read(parser_fixture("dcgm", "dcgm-3.1.0-8gpu-deployment-custom-pass.json"))
V4 = read(parser_fixture("dcgm", "dcgm-4.2.3-gb10-r1-software-fail.json"))
FRAGMENT = read(parser_fixture("dcgm", "dcgm-4.x-issue215-diagnostic-test-fragment.txt"))


def test_dcgm_3_layout_after_a_warning_line_with_null_tests():
    parsed = dcgm.parse_diag(V3)
    assert parsed["error"] is None and parsed["layout"] == "dcgm-gpu-diagnostic" and parsed["version"] == "3.1.0"
    deployment = [r for r in parsed["results"] if r["category"] == "Deployment"]
    assert [r["test"] for r in deployment][:2] == ["Denylist", "NVML Library"] and len(deployment) == 9
    assert all(r["entity"] == "0,1,2,3,4,5,6,7" and r["status"] == "pass" for r in deployment)
    assert [r["entity"] for r in parsed["results"] if r["category"] == "Custom"] == [str(i) for i in range(8)]


def test_dcgm_4_layout_codes_and_metadata():
    parsed = dcgm.parse_diag(V4)
    assert (parsed["layout"], parsed["version"], parsed["driver_version"]) == ("dcgm-diagnostic", "4.2.3", "580.82.09")
    (row,) = parsed["results"]
    assert (row["test"], row["entity"], row["status"], row["summary_status"]) == ("software", "0", "fail", "fail")
    assert row["warnings"][0]["code"] == "DCGM_FR_PERSISTENCE_MODE" and row["warnings"][0]["error_id"] == 29


def test_records_one_per_test_and_gpu_with_code_and_message():
    records = tool.records_of(V4, Context(params={"level": 1}, rc=226, argv=["dcgmi", "diag", "-r", "1", "-j"]))
    (record,) = records
    assert record["check"] == "gpu.dcgm_diag" and record["status"] == "fail" and record["target"] == "0"
    assert record["facts"]["codes"] == ["DCGM_FR_PERSISTENCE_MODE"]
    assert "Persistence mode for GPU 0 is disabled" in record["reason"] and record["params"]["rc"] == 226
    passing = tool.records_of(V3, Context(params={"level": 1}, rc=0))
    assert len(passing) == 17 and {r["status"] for r in passing} == {"pass"}
    assert {r["tool"]["version"] for r in passing} == {"3.1.0"}


def test_a_cut_off_document_is_an_error_with_its_text():
    (record,) = tool.records_of(FRAGMENT, Context(params={"level": 4}, rc=0))
    assert record["status"] == "error" and "neither" in record["reason"] and record["raw"]
    (record,) = tool.records_of("Error: unable to establish a connection to the specified host: localhost\n",
                                Context(params={"level": 1}, rc=255))
    assert record["status"] == "error" and "unable to establish a connection" in record["reason"]


def test_error_names_come_from_dcgm_errors_h():
    assert dcgm_errors.name(29) == "DCGM_FR_PERSISTENCE_MODE" and dcgm_errors.name(0) == "DCGM_FR_OK"
    assert dcgm_errors.name(100000) == "DCGM_FR_100000" and dcgm_errors.name("x") is None


def test_missing_dcgmi_is_skip_with_the_install_hint():
    class NoDcgm(object):
        def which(self, name):
            return None
    (record,) = tool.records(NoDcgm(), {"level": 3})
    assert record["status"] == "skip" and "install NVIDIA DCGM" in record["reason"]


def test_argv_and_level_timeouts():
    assert tool.diag_argv("/usr/bin/dcgmi", {"level": 3, "host_engine": "nvidia-dcgm:5555"}) == [
        "/usr/bin/dcgmi", "diag", "-r", "3", "-j", "--host", "nvidia-dcgm:5555"]
    assert tool.timeout_of({"level": 3}) == 3600 and tool.timeout_of({"level": 1, "timeout_s": 20}) == 20


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=mutated(V3) | mutated(V4) | mutated(FRAGMENT))
def test_fuzz_never_raises_and_gives_valid_records(text):
    parsed = dcgm.parse_diag(text)
    assert parsed["error"] or parsed["results"] or parsed["runtime_error"]
    for record in tool.records_of(text, Context(params={"level": 1}, rc=0)):
        assert not results.validate(record)


def test_the_driver_is_no_second_drift_subject():
    (record,) = tool.records_of(V4, Context(params={"level": 1}, rc=226))
    assert record["facts"]["driver_detected"] == "580.82.09" and record["facts"]["dcgm_version"] == "4.2.3"
    assert "driver_version" not in record["facts"]
