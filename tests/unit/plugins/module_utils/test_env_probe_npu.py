# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""NPU (Ascend) probe group: npu-smi info and the CANN install info from real captures, skip without NPUs,
health verdicts, fuzzed npu-smi output, and drift of the NPU facts across a fleet."""

from __future__ import annotations


import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.aifabric.acceptance.plugins.module_utils import env_probe, probe_host, results
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import npu_smi
from ansible_collections.aifabric.acceptance.plugins.module_utils.runner import Run
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import drift
from ansible_collections.aifabric.acceptance.tests.unit.plugins.module_utils.parsers.mutations import mutated
from ansible_collections.aifabric.acceptance.tests.unit.helpers import parser_fixture, read

FIXTURES = parser_fixture("npu_smi")
SMI = "/usr/local/sbin/npu-smi"
B910 = "vllm-ascend-issue362-npu-smi-23.0.7-8x910B2-info.txt"
B310 = "davinci-mini-310B4-npu-smi-23.0.rc3-info-memory-no-hbm.txt"
INFO = "vllm-ascend-issue362-cann-8.0.0-ascend_toolkit_install.info"


def _host(root, text=None, rc=0, smi=True):
    calls = []

    def run(argv, timeout_s):
        calls.append(list(argv))
        return Run(list(argv), rc, text or "", "", 0.01)
    host = probe_host.Host(run=run, which={"npu-smi": SMI if smi else None}.get, root=str(root), environ={})
    host.calls = calls
    return host


def _cann(root):
    base = root / "usr/local/Ascend/ascend-toolkit/latest/aarch64-linux"
    base.mkdir(parents=True)
    (base / "ascend_toolkit_install.info").write_text(read(FIXTURES, INFO))


def test_910b_node_as_captured(tmp_path):
    _cann(tmp_path)
    host = _host(tmp_path, read(FIXTURES, B910))
    records = env_probe.probe(host, {"groups": ["npu"]})
    assert host.calls == [[SMI, "info"]] and all(results.validate(r) == [] for r in records)
    inventory = records[0]
    assert inventory["check"] == "gpu.npu_inventory" and inventory["status"] == "pass"
    assert inventory["metrics"] == {"npu_count": 8, "npu_hbm_total_min_mib": 65536}
    assert inventory["facts"]["driver_version"] == "23.0.7" and inventory["facts"]["cann_version"] == "8.0.0"
    assert inventory["facts"]["npu_model"] == "910B2" and inventory["facts"]["cann_arch"] == "aarch64"
    devices = [r for r in records if r["check"] == "gpu.npu_device"]
    assert [d["target"] for d in devices] == [str(i) for i in range(8)]
    assert devices[4]["metrics"] == {"temperature_c": 36, "power_draw_w": 96.6, "aicore_util_pct": 0,
                                     "hbm_total_mib": 65536, "hbm_used_mib": 3347, "memory_total_mib": 0,
                                     "memory_used_mib": 0}
    assert devices[4]["facts"]["bus_id"] == "0000:81:00.0" and devices[4]["status"] == "pass"


def test_310b_board_without_hbm_column(tmp_path):
    parsed = npu_smi.parse_info(read(FIXTURES, B310))
    assert parsed["version"] == "23.0.rc3" and parsed["problems"] == []
    (npu,) = parsed["npus"]
    assert (npu["name"], npu["power_w"], npu["temp_c"], npu["memory_used_mb"], npu["memory_total_mb"]) == (
        "310B4", 7.2, 37, 1797, 3513)
    assert npu["hbm_total_mb"] is None and npu["bus_id"] is None and npu["device"] == 0


def test_no_npu_smi_is_skip_with_the_reason(tmp_path):
    (record,) = env_probe.probe(_host(tmp_path, smi=False), {"groups": ["npu"]})
    assert record["status"] == "skip" and record["reason"] == "no Ascend NPU: npu-smi not found"


def test_npu_smi_failure_is_error_keeping_its_output(tmp_path):
    (record,) = env_probe.probe(_host(tmp_path, "dcmi module initialize failed. ret is -8005\n", rc=8),
                                {"groups": ["npu"]})
    assert record["status"] == "error" and "exited 8: dcmi module initialize failed" in record["reason"]
    assert "dcmi" in record["raw"]


@pytest.mark.parametrize("health,status", [("OK", "pass"), ("Warning", "warn"), ("Alarm", "fail"),
                                           ("Critical", "fail")])
def test_health_word_decides(health, status):
    assert (env_probe.npu_verdicts({"health": health}) or [("pass", None)])[0][0] == status


def test_npu_facts_drift_across_a_fleet(tmp_path):
    # the same real capture on three hosts, one of them with an older driver banner
    records = []
    for host, text in (("a", read(FIXTURES, B910)), ("b", read(FIXTURES, B910)), ("c", read(FIXTURES, B910).replace("23.0.7", "23.0.6"))):
        root = tmp_path / host
        root.mkdir()
        records.extend(results.with_host(env_probe.probe(_host(root, text), {"groups": ["npu"]}), host))
    new, _findings = drift.analyze(records, {})
    assert [(r["host"], r["check"], r["status"]) for r in new] == [("c", "gpu.npu_inventory.drift", "warn")]
    assert new[0]["reason"] == ("gpu.npu_inventory.driver_version is '23.0.6', fleet majority is '23.0.7' "
                                "(2 of 3 hosts)")


@pytest.mark.parametrize("name", [B910, B310])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_fuzz_never_raises(name, data):
    parsed = npu_smi.parse_info(data.draw(mutated(read(FIXTURES, name))))
    assert isinstance(parsed["npus"], list) and isinstance(parsed["problems"], list)
