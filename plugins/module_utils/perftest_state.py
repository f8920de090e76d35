# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a host's perftest state is: the options that name it (private).

``STATE_SPEC``: the state root, the host's name in it and the CPU governor's sysfs (the governor's lease file lives in
the state root). The perftest and perftest_sweep modules take them with the test's options (tools/_perftest_options.py
``TEST_SPEC``); the cleanup module takes them to remove a run's perftest state (PerftestRun.absent), and so loads
neither the perftest adapter nor the run until it has state to remove. Documented by the doc fragment
aifabric.acceptance._perftest_test.
"""

from __future__ import annotations

from ansible_collections.aifabric.acceptance.plugins.module_utils import argspec

STATE_SPEC = {
    # host_name before 2.0.0: deprecated (hosts is a list of hosts, host the API server's URL; this is one host's name)
    "inventory_hostname": dict({"type": "str"}, **argspec.renamed("host_name")),
    "state_root": {"type": "path"},
    "cpu_sysfs": {"type": "path", "default": "/sys/devices/system/cpu"},
}
