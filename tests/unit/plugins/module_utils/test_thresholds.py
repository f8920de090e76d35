# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Thresholds as data in one place (issue 20 item 4): every built-in threshold has a source that names a measurement
or a document, never a test file, and the record builders read the table (a changed value changes the verdict on
a real capture)."""

from __future__ import annotations

import copy
import os
import re

from ansible_collections.aifabric.acceptance.plugins.module_utils import (
    env_probe, expectations, perftest_clients, thresholds)
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import nccl_tests
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import _collective
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import perftest_sweep as perftest_tool
from ansible_collections.aifabric.acceptance.tests.unit.plugins.module_utils.test_env_probe import (
    SMI, FakeCommands, by, host_for, read)
from ansible_collections.aifabric.acceptance.tests.unit.helpers import parser_fixture

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = parser_fixture()
PLUGINS = os.path.join(HERE, "..", "..", "..", "..", "plugins", "module_utils")
# what a test file's name looks like inside a sentence: the word fixture(s), a tests/ path, a capture's file name
TEST_FILE = re.compile(r"fixture|tests/|\.(txt|json|log|xml|csv)\b", re.IGNORECASE)


def capture(*parts):
    with open(os.path.join(FIXTURES, *parts)) as handle:
        return handle.read()


def test_every_threshold_has_a_source_that_names_no_test_file():
    found = thresholds.sources()
    assert len(found) >= 60      # profiles, RDMA floors and limits, jitter, health rules, physical ranges, analyses
    for name, source in found:
        assert isinstance(source, str) and source.strip(), name
        assert not TEST_FILE.search(source), (name, source)
        assert "%%" not in source, (name, source)     # a format left unapplied


def test_every_profile_entry_is_a_rule_with_its_source():
    for name, profile in thresholds.PROFILES.items():
        for check, entries in profile["checks"].items():
            for entry in entries:
                assert entry["source"].startswith("profile %s" % name), (name, check)
                for metric, rule in entry.get("metrics", {}).items():
                    expectations.check_rule(metric, rule)


def test_consumers_hold_no_threshold_of_their_own():
    """The numbers live in thresholds.py only: the consumers' old constants are gone and no profiles module exists."""
    gone = {perftest_clients: ("BW_FLOORS", "LAT_LIMITS_US", "LAT_SMALL_BYTES", "LAT_SOURCE"),
            _collective: ("JITTER_CV_WARN_PCT", "JITTER_MIN_SIZE_BYTES"),
            env_probe: ("BAD_REASONS", "NPU_HEALTH_WARN"), expectations: ("PHYSICAL_RANGES",)}
    for module, names in gone.items():
        assert not [n for n in names if hasattr(module, n)], module.__name__
    assert not os.path.exists(os.path.join(PLUGINS, "profiles.py"))
    assert perftest_tool.TEST_SPEC["line_rate_floor_pct"]["default"] == thresholds.RDMA_LINE_RATE_PCT["value"]


def _read_bw_64k(rate=400.0):
    ctx = {"test": "ib_read_bw", "side": "client", "host": "a", "peer": "b", "device": "mlx5_0",
           "params": {"line_rate_floor_pct": 90, "peer_rate_gbit_s": rate, "expect": {}},
           "argv": ["ib_read_bw"], "tool_version": "6.06", "facts": {"port_rate_gbit_s": rate}}
    text = capture("perftest", "cx7-ndr-ib-read-bw-client-report-gbits-cpufreq-warning.txt")
    return perftest_tool.side_records(text, 0, ctx)[0]


def test_rdma_floor_from_the_table_decides_the_verdict(monkeypatch):
    """ConnectX-7 NDR ib_read_bw at 64 KiB, 328.61 Gb/s: passes the table's 70 % band, fails at 85 %."""
    before = _read_bw_64k()
    assert before["status"] == "pass" and before["expect"]["bw_avg_gbit_s"]["min"] == 280.0
    floors = copy.deepcopy(thresholds.RDMA_BW_FLOORS)
    floors["read"] = (floors["read"][0], (65536, 85, "changed for the test"))
    monkeypatch.setattr(thresholds, "RDMA_BW_FLOORS", floors)
    after = _read_bw_64k()
    assert after["status"] == "fail" and after["expect"]["bw_avg_gbit_s"]["min"] == 340.0
    assert "changed for the test" in after["reason"]


def test_rdma_latency_limit_from_the_table_decides_the_verdict(monkeypatch):
    text = capture("perftest", "dgx-spark-cx7-ib-write-lat-client-rdma-cm-force-link-ib.txt")
    ctx = {"test": "ib_write_lat", "side": "client", "host": "a", "peer": "b", "device": "rocep1s0f1",
           "params": {"line_rate_floor_pct": 90, "peer_rate_gbit_s": None, "expect": {}},
           "argv": ["ib_write_lat"], "tool_version": "6.06", "facts": {}}
    before = perftest_tool.side_records(text, 0, ctx)[0]
    assert before["expect"]["lat_typical_us"]["max"] == thresholds.RDMA_LAT_LIMITS_US["write"]
    monkeypatch.setattr(thresholds, "RDMA_LAT_LIMITS_US", dict(thresholds.RDMA_LAT_LIMITS_US, write=0.01))
    after = perftest_tool.side_records(text, 0, ctx)[0]
    assert after["status"] == "fail" and after["expect"]["lat_typical_us"]["max"] == 0.01


def _all_reduce_g2(profile="h200-sxm-8gpu"):
    parsed = nccl_tests.parse_text(capture("nccl_tests", "h200x2-nccl-tests-2.19.6", "all_reduce_g2.txt"))
    return _collective.to_record(parsed, profile=profile, profiles=expectations.all_profiles())


def test_profile_from_the_table_decides_the_verdict(monkeypatch):
    """The real 2x H200 all_reduce (busbw 344.8 GB/s at 8 GiB) passes its profile's 310 floor, fails at 400."""
    assert _all_reduce_g2()["status"] == "pass"
    profiles = copy.deepcopy(thresholds.PROFILES)
    entry = profiles["h200-sxm-8gpu"]["checks"]["nccl.all_reduce"][0]
    entry["metrics"]["busbw_max_gbyte_s"]["min"] = 400
    monkeypatch.setattr(thresholds, "PROFILES", profiles)
    after = _all_reduce_g2()
    assert after["status"] == "fail" and "< 400 expected minimum" in after["reason"]


def test_jitter_limit_from_the_table(monkeypatch):
    """The real 1x H100 -I 1 run: i_cv% above 25 % at 2 MiB and more is listed; a 200 % limit lists nothing."""
    parsed = nccl_tests.parse_text(capture("nccl_tests", "h100x1-nccl-tests-2.19.6-per-iteration", "all_reduce_I1_g1.txt"))
    series = _collective.series_rows(parsed["rows"])
    worst, high = _collective.jitter_of(series)
    assert high and high[0].startswith("2097152 B out-of-place: i_cv 39.81 %")
    assert _collective.jitter_reason(high).startswith("high per-iteration jitter (-I 1): i_cv% above 25 % at ")
    monkeypatch.setattr(thresholds, "NCCL_JITTER", dict(thresholds.NCCL_JITTER, cv_warn_pct={"value": 200.0}))
    assert _collective.jitter_of(series) == (worst, [])


def test_physical_range_from_the_table(monkeypatch):
    assert expectations.physical_range("tflops")[:2] == (0, 20000)
    ranges = tuple(r if r[0] != "tflops" else ("tflops", 0, 500, "changed for the test") for r in
                   thresholds.PHYSICAL_RANGES)
    monkeypatch.setattr(thresholds, "PHYSICAL_RANGES", ranges)
    assert expectations.out_of_range({"tflops": 654.8}) == ["tflops 654.8 > 500 (changed for the test)"]


def _h100_device(tmp_path, old, new):
    """gpu.device 0 of the real H100 nvidia-smi -q -x with one value changed."""
    xml = read("nvidia_smi/driver580-h100-80gb-hbm3-q-x.xml")
    assert old in xml
    commands = FakeCommands({(SMI, "-q", "-x"): (0, xml.replace(old, new, 1))})
    return by(env_probe.probe(host_for(tmp_path, commands), {"groups": ["gpu"]}), "gpu.device", "0")


def test_gpu_ecc_rule_from_the_table(tmp_path, monkeypatch):
    """3 volatile uncorrectable ECC errors fail; with the table's rule at warn, or its limit at 3, they do not."""
    edit = ("<dram_uncorrectable>0</dram_uncorrectable>", "<dram_uncorrectable>3</dram_uncorrectable>")
    assert _h100_device(tmp_path, *edit)["status"] == "fail"
    rule = thresholds.GPU_ECC_RULES["ecc_volatile_uncorrectable"]
    monkeypatch.setattr(thresholds, "GPU_ECC_RULES", dict(thresholds.GPU_ECC_RULES,
                                                          ecc_volatile_uncorrectable=dict(rule, status="warn")))
    assert _h100_device(tmp_path, *edit)["status"] == "warn"
    monkeypatch.setattr(thresholds, "GPU_ECC_RULES", dict(thresholds.GPU_ECC_RULES,
                                                          ecc_volatile_uncorrectable=dict(rule, max=3)))
    assert _h100_device(tmp_path, *edit)["status"] == "pass"


def test_gpu_clock_event_rule_from_the_table(tmp_path, monkeypatch):
    edit = ("<clocks_event_reason_hw_thermal_slowdown>Not Active", "<clocks_event_reason_hw_thermal_slowdown>Active")
    assert _h100_device(tmp_path, *edit)["status"] == "fail"
    monkeypatch.setattr(thresholds, "GPU_CLOCK_EVENT_REASONS", tuple(
        (name, "warn" if name == "hw_thermal_slowdown" else status, why)
        for name, status, why in thresholds.GPU_CLOCK_EVENT_REASONS))
    assert _h100_device(tmp_path, *edit)["status"] == "warn"


def test_npu_health_words_from_the_table(monkeypatch):
    assert env_probe.npu_verdicts({"health": "Warning"})[0][0] == "warn"
    monkeypatch.setattr(thresholds, "NPU_HEALTH", dict(thresholds.NPU_HEALTH, warn=()))
    assert env_probe.npu_verdicts({"health": "Warning"})[0][0] == "fail"


def test_fleet_analyses_read_their_defaults_from_the_table(monkeypatch):
    """Seven GEMM values 700.0-700.5 and one at 686 (2 % low): within the table's min_drop_pct (5 %) nothing is
    flagged; with the table's value at 1 %, the slow one is."""
    from ansible_collections.aifabric.acceptance.plugins.module_utils import results
    from ansible_collections.aifabric.acceptance.plugins.plugin_utils import attribution, baseline, compare, fleet_relative

    assert attribution.DEFAULTS is thresholds.ATTRIBUTION and fleet_relative.DEFAULTS is thresholds.FLEET_RELATIVE
    assert (baseline.DEFAULT_MIN_PCT, compare.DEFAULT_MARGIN_PCT) == (thresholds.BASELINE_MIN_PCT,
                                                                      thresholds.COMPARE_MARGIN_PCT)
    recs = [results.make("gpu.gemm_bf16", "pass", host=host, target="0", metrics={"tflops": value},
                         facts={"shape": "bf16 8192x8192x8192", "gpu_model": "NVIDIA H200"})
            for host, value in [("n%d" % i, 700.0 + 0.1 * i) for i in range(6)] + [("slow", 686.0)]]
    assert fleet_relative.analyze(recs, {})[0] == []
    monkeypatch.setitem(thresholds.FLEET_RELATIVE, "min_drop_pct", 1.0)
    assert [r["host"] for r in fleet_relative.analyze(recs, {})[0]] == ["slow"]
