# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit test configuration. The shared helpers are plain functions in tests/unit/helpers.py (fixture paths,
``read``, ``listing``, the Exit/Fail stand-ins of AnsibleModule.exit_json/fail_json), imported as
``ansible_collections.aifabric.acceptance.tests.unit.helpers``; plugins/modules/module_harness.py runs a main()."""

from __future__ import annotations

import pytest


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: takes over ~20 s; `-m 'not slow'` leaves it out of a quick loop")


@pytest.fixture
def frozen_clock(monkeypatch):
    """results.utc_now stands still: for a test that compares records made at two moments field by field (the two
    could straddle a second of the wall clock and differ in ``started``: a failure once in many runs). A test whose
    subject is the time itself leaves it out."""
    from ansible_collections.aifabric.acceptance.plugins.module_utils import results

    monkeypatch.setattr(results, "utc_now", lambda: "2026-12-06T10:00:00Z")
    return "2026-12-06T10:00:00Z"
