# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit test configuration. The shared helpers are plain functions in tests/unit/helpers.py (fixture paths,
``read``, ``listing``, the Exit/Fail stand-ins of AnsibleModule.exit_json/fail_json), imported as
``ansible_collections.aifabric.acceptance.tests.unit.helpers``; plugins/modules/module_harness.py runs a main()."""

from __future__ import annotations


def pytest_configure(config):
    config.addinivalue_line("markers", "slow: takes over ~20 s; `-m 'not slow'` leaves it out of a quick loop")
