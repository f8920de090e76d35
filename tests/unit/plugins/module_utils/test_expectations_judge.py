# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

import pytest

from ansible_collections.aifabric.acceptance.plugins.module_utils import expectations


def test_min_rule_fails_below_and_names_rule_and_source():
    status, reason, expect = expectations.judge(
        {"bw_avg_gbit_s": 182.4}, {"bw_avg_gbit_s": {"min": 380, "source": "profile h100-ndr"}})
    assert status == "fail"
    assert reason == "bw_avg_gbit_s 182.4 < 380 expected minimum (profile h100-ndr)"
    assert expect == {"bw_avg_gbit_s": {"min": 380, "source": "profile h100-ndr"}}


def test_soft_band_warns_above_the_floor():
    # floor 360, warn band: below 360 * 100 / 90 = 400
    status, reason = expectations.judge({"bw": 380.0}, {"bw": {"min": 360, "warn_below_pct": 90}})[:2]
    assert status == "warn"
    assert "soft floor 400" in reason
    assert expectations.judge({"bw": 401.0}, {"bw": {"min": 360, "warn_below_pct": 90}})[0] == "pass"


def test_max_and_equals():
    assert expectations.judge({"lat_typical_us": 3.1}, {"lat_typical_us": {"max": 2.5}})[0] == "fail"
    rules = {"driver_version": {"equals": "580.159.04"}}
    status, reason = expectations.judge({"driver_version": "550.90.12"}, rules)[:2]
    assert status == "fail"
    assert reason == "driver_version is 550.90.12, expected 580.159.04"
    assert expectations.judge({"gpu_count": 8}, {"gpu_count": {"equals": 8}})[0] == "pass"


def test_unmeasured_value_is_an_error_not_a_pass():
    status, reason = expectations.judge({}, {"tflops": {"min": 700}})[:2]
    assert status == "error"
    assert "not measured" in reason


def test_existing_verdict_is_kept_unless_worse():
    status, reason = expectations.judge({"x": 5}, {"x": {"min": 1}}, status="warn", reason="parser note")[:2]
    assert (status, reason) == ("warn", "parser note")


@pytest.mark.parametrize("rule, message", [
    ({"minimum": 3}, "unknown key 'minimum'"),
    ({"min": "fast"}, "must be a number"),
    ("380", "must be a mapping"),
])
def test_malformed_rules_are_rejected_with_the_rule_named(rule, message):
    with pytest.raises(expectations.ExpectationError, match=message):
        expectations.judge({"bw": 1}, {"bw": rule})


def test_choose_profile_auto_none_named_and_unknown():
    profiles = expectations.all_profiles()
    name, why = expectations.choose_profile("auto", "NVIDIA H200", 8, profiles)
    assert name == "h200-sxm-8gpu" and why.startswith("auto:")
    assert expectations.choose_profile("none", "NVIDIA H200", 8, profiles) == (None, "no profile (profile: none)")
    chosen = expectations.choose_profile("h100-sxm-8gpu", "NVIDIA H200", 8, profiles)
    assert chosen == ("h100-sxm-8gpu", "set by the user")
    with pytest.raises(expectations.ExpectationError, match="unknown profile 'b300'"):
        expectations.choose_profile("b300", "NVIDIA H200", 8, profiles)
