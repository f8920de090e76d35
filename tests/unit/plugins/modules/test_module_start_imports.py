# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the modules the roles run on every host load when they start, and what their payload carries (as data).

Every module run on a host is an AnsiballZ payload: the module and every module_utils file it imports, found by
ansible-core's recursive_finder (imports inside functions too), compiled and imported on each run - at 1000 hosts,
once per host-task. The files a module does not use stay out of its start (``NOT_AT_START``: imported inside the
branch that needs them, or split into a file of their own) and, where nothing needs them, out of its payload
(``NOT_CARRIED``). The CPU and payload sizes are measured by bench/module_start.py, never asserted here.
"""

from __future__ import annotations

import os

from ansible_collections.aifabric.acceptance.tests.unit.plugins.module_utils.test_module_utils_imports import (
    MODULE_UTILS, ROOT, file_imports, graph, modules, reachable)

MODULES = os.path.join(ROOT, "plugins", "modules")
ENV_PROBES = "the env probes (80 kB and five parsers): a host is read through probe_host.Host"

# module -> {module_utils file it does not load when it starts: why}; shrink a why, never drop an entry to pass
NOT_AT_START = {
    "cleanup": {
        "env_probe": ENV_PROBES,
        "perftest_run": "the perftest run is loaded only to remove perftest state (perftest_state: true)",
        "tools.perftest_sweep": "the options naming the perftest state are perftest_state.STATE_SPEC",
        "results": "cleanup builds no record",
    },
    "perftest": {"env_probe": ENV_PROBES,
                 "parsers.nvidia_smi": "the GPU topology's link order, for use_cuda auto only"},
    "perftest_sweep": {"env_probe": ENV_PROBES,
                       "parsers.nvidia_smi": "the GPU topology's link order, for use_cuda auto only",
                       # phase=status, every poll of every host: the runner's directory and state (perftest_status,
                       # perftest_run's state part) alone
                       "perftest_sweep": "the runner: phases plan and run",
                       "perftest_clients": "the runner's clients, loaded with it",
                       "runner": "the commands perftest runs: the runner's",
                       "probe_host": "sysfs (the HCAs): phases plan and run",
                       "parsers.rdma": "sysfs (the HCAs): phases plan and run",
                       "tools.perftest_sweep": "the adapter: the options are tools._perftest_options",
                       "parsers.perftest": "perftest's output, read by the runner alone",
                       "expectations": "the records' rules, applied by the runner alone",
                       "results": "the records, built by the runner (the poll that ends one without its records "
                                  "builds one there)"},
    "port_counters": {"env_probe": ENV_PROBES},
    "dcgm_diag": {"env_probe": ENV_PROBES},
    "fabric_topology": {"env_probe": "the probes' NPU helpers, on a host with npu-smi only"},
}
# module -> {module_utils file its payload does not carry: why}
NOT_CARRIED = {
    "cleanup": {"env_probe": ENV_PROBES},
    "perftest": {"env_probe": ENV_PROBES},
    "perftest_sweep": {"env_probe": ENV_PROBES},
    "port_counters": {"env_probe": ENV_PROBES},
    "dcgm_diag": {"env_probe": ENV_PROBES},
}
# module -> every module_utils file it carries (the job polls: every poll of every host runs one)
EXACTLY = {
    "job_wait": {"async_job", "errors", "modmain", "statedir"},
    "trusted_path": {"errors", "modmain", "statedir"},
}


def loaded(module, start_only):
    """The module_utils files the module's import loads (``start_only``) or its payload carries (every import)."""
    known = modules()
    edges = graph(start_only=start_only)
    first = file_imports(os.path.join(MODULES, module + ".py"), known, start_only=start_only)
    out = set(first)
    for name in first:
        out |= reachable(edges, name)
    return out


def test_the_modules_run_on_every_host_do_not_start_what_they_do_not_use():
    bad = dict((module, sorted(set(why) & loaded(module, True))) for module, why in NOT_AT_START.items())
    assert dict((m, b) for m, b in bad.items() if b) == {}


def test_their_payloads_do_not_carry_what_nothing_in_them_uses():
    bad = dict((module, sorted(set(why) & loaded(module, False))) for module, why in NOT_CARRIED.items())
    assert dict((m, b) for m, b in bad.items() if b) == {}


def test_the_job_polls_carry_only_the_job_file_reader_the_state_directory_and_the_error_handler():
    assert dict((module, loaded(module, False)) for module in EXACTLY) == EXACTLY


def test_the_data_names_real_modules_and_files_and_the_start_set_is_narrower():
    known = modules()
    for table in (NOT_AT_START, NOT_CARRIED, EXACTLY):
        for module, files in table.items():
            assert os.path.isfile(os.path.join(MODULES, module + ".py")), module
            assert set(files) <= set(known), (module, sorted(set(files) - set(known)))
    # what a branch imports is carried but not started: the check tells the two apart (cleanup's perftest run)
    assert "perftest_run" in loaded("cleanup", False) and "perftest_run" not in loaded("cleanup", True)
    assert "env_probe" in loaded("fabric_topology", False) and "env_probe" not in loaded("fabric_topology", True)
    assert os.path.isdir(MODULE_UTILS)
