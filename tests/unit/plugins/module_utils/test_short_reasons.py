# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Reasons people read (issue 19 item 6): a short reason; the provenance in the rule's source, not in the reason."""

from __future__ import annotations

from ansible_collections.aifabric.acceptance.plugins.module_utils import expectations, thresholds


def test_a_profile_rule_s_reason_names_the_profile_and_its_source_keeps_the_measurement():
    rule = dict(thresholds.PROFILES["h100-sxm-8gpu"]["checks"]["gpu.gemm_bf16"][0]["metrics"]["tflops"])
    rule["source"] = "profile h100-sxm-8gpu: " + thresholds.PROFILES["h100-sxm-8gpu"]["checks"]["gpu.gemm_bf16"][0]["source"]
    status, reason = expectations.judge_value("tflops", 304.331, rule)
    assert status == "fail"
    assert reason == "tflops 304.331 < %s expected minimum (profile h100-sxm-8gpu)" % rule["min"]
    # the provenance is untouched in the rule (the record's expect): the measurement behind the number
    assert rule["source"].startswith("profile h100-sxm-8gpu: ") and len(rule["source"]) > 60


def test_other_sources_are_kept_whole():
    status, reason = expectations.judge_value("bw_avg_gbit_s", 7.865, {"min": 100, "source": "user expectation"})
    assert (status, reason) == ("fail", "bw_avg_gbit_s 7.865 < 100 expected minimum (user expectation)")
