# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""perftest's options: the programs, the options of one test and their ranges (the perftest adapter's private helper).

``TEST_SPEC`` (with ``TEST_RANGES``): the options the perftest and perftest_sweep modules share, documented by the doc
fragment aifabric.acceptance._perftest_test; ``RUN_OPTIONS``: the devices, port and GPU buffers of a run and its
connect timeout. The adapter (tools/perftest_sweep.py) builds its ``OPTIONS`` from them, and module perftest_sweep its
argument spec: its status poll, run on every host again and again, loads this file and not the adapter, its parser
and its expectations (module_utils/perftest_status.py). Runs on the targets and in pods: Python 3.8+, no
Ansible imports.
"""

from __future__ import annotations

from ansible_collections.aifabric.acceptance.plugins.module_utils import argspec, thresholds

TESTS = ("ib_write_bw", "ib_read_bw", "ib_send_bw", "ib_write_lat", "ib_read_lat", "ib_send_lat", "ib_atomic_bw",
         "ib_atomic_lat")
# perftest's atomic operations (-A, perftest_parameters.c atomicTypesStr; FETCH_AND_ADD when -A is not given)
ATOMIC_OPERATIONS = ("FETCH_AND_ADD", "CMP_AND_SWAP")
# The options the perftest and perftest_sweep modules share (documented by the doc fragment
# aifabric.acceptance._perftest_test), and their ranges
# (with perftest_state.STATE_SPEC: the state root, the host's name in it and the governor's sysfs)
TEST_SPEC = {
    "run_id": {"type": "str", "default": "default"},
    "keep_state": {"type": "bool", "default": False},
    "ib_port": {"type": "int", "default": 1},
    "gid_index": {"type": "int"},
    "size": {"type": "int"},
    "all_sizes": {"type": "bool", "default": False},
    "iterations": {"type": "int"},
    "duration_s": {"type": "int"},
    "qps": {"type": "int"},
    "bidirectional": {"type": "bool", "default": False},
    "rdma_cm": {"type": "bool", "default": False},
    "report_gbits": {"type": "bool", "default": True},
    "ignore_cpu_freq": {"type": "bool", "default": False},
    "atomic_operation": {"type": "str", "choices": list(ATOMIC_OPERATIONS)},
    "extra_args": {"type": "list", "elements": "str", "default": []},
    "timeout_s": {"type": "int", "default": 120},
    "cpu_governor": {"type": "str"},
    "sysfs_root": {"type": "str", "default": ""},
    "tool_dir": {"type": "path"},
    "expect": {"type": "dict", "default": {}},
    "line_rate_floor_pct": {"type": "float", "default": thresholds.RDMA_LINE_RATE_PCT["value"]},
}
TEST_RANGES = {
    "ib_port": (1, 255), "gid_index": (0, 255), "size": argspec.POSITIVE, "iterations": argspec.POSITIVE,
    "duration_s": argspec.POSITIVE, "qps": (1, 65536), "timeout_s": argspec.POSITIVE, "line_rate_floor_pct": (0, 100),
}
# the run's options besides TEST_SPEC's (the adapter's OPTIONS; module perftest_sweep takes them all)
RUN_OPTIONS = dict(
    hcas=dict(type="list", elements="str"),
    port=dict(type="int", default=18515),
    use_cuda=dict(type="str"),
    connect_timeout_s=dict(type="int", default=60),
)
