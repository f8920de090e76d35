# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit test configuration. Shared helpers (fixture paths, read, AnsibleModule stand-ins) live in helpers.py
(tests/unit/helpers.py), plain functions importable from any test; module_harness.py holds main()-level runs."""

from __future__ import annotations

import pytest

from ansible_collections.aifabric.acceptance.tests.unit import helpers


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: takes over ~20 s; `-m 'not slow'` leaves it out of a quick loop")


@pytest.fixture
def module_exits(monkeypatch):
    """AnsibleModule.exit_json raises helpers.Exit and fail_json helpers.Fail (the result is ``args[0]``)."""
    helpers.raise_on_exit(monkeypatch)
    return helpers
