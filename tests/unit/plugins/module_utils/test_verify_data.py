# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""verify_data (issue 23: check, an int, became a bool): true asks the tool for its data check (-c 1), false turns it
off (-c 0: nccl-tests and HCCL Test both check by default, so leaving -c out would still check), unset leaves the
tool's default - for nccl-tests (nccl_tests.nccl_tests_argv, also the Kubernetes planner's) and HCCL Test alike."""

from __future__ import annotations

import pytest

from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import (

    hccl_test as hccl, nccl_test as nccl_tests)


def _c(argv):
    return argv[argv.index("-c") + 1] if "-c" in argv else None


@pytest.mark.parametrize("value, flag", [(True, "1"), (False, "0"), (None, None)])
def test_nccl_tests(value, flag):
    assert _c(nccl_tests.nccl_tests_argv("/b/all_reduce_perf", {"verify_data": value})) == flag


@pytest.mark.parametrize("value, flag", [(True, "1"), (False, "0"), (None, None)])
def test_hccl_test(value, flag):
    assert _c(hccl.hccl_argv("/b/all_reduce_test", {"verify_data": value})) == flag
