# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fixtures for integration tests over real SSH.

``fleet``      N fake bare hosts (network namespaces, each with its own sshd), default 3;
               ``@pytest.mark.fleet(n=5)`` changes N; ``sysfs=build`` gives each host its own
               view of parts of /sys, ``private_run=True`` its own /run (netns.Fleet).
               Function scoped: bringing a fleet up takes well under a second, and every
               test gets hosts no earlier test killed.
               Teardown removes everything and FAILS the test if anything was left behind.
``controller`` how to run Ansible on the controller: the ansible-playbook of the venv that
               runs pytest, this source tree as the collection, the repo's ansible.cfg.

Tests skip (with the reason) when not root, when ip/sshd/unshare/ssh/ssh-keygen are
missing, or when a network namespace cannot be created.
"""

from __future__ import annotations

import os
import sys

import pytest

from ansible_collections.aifabric.acceptance.tests.integration import netns

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
COLLECTION_TAIL = ("ansible_collections", "aifabric", "acceptance")
TARGET_PYTHON = "/usr/bin/python3"


def pytest_configure(config):
    # The playbooks fail the run on its verdict (acceptance_fail_on, default fail). Most tests here make hosts fail on
    # purpose and read the report: they run with "never"; test_fail_on.py sets its own.
    os.environ.setdefault("AIFABRIC_FAIL_ON", "never")
    config.addinivalue_line("markers", "fleet(n=3): number of hosts of the `fleet` fixture")
    config.addinivalue_line("markers", "cluster: needs a real Kubernetes cluster; runs only with -m cluster and KUBECONFIG set")
    config.addinivalue_line("markers", "slow: takes over ~20 s (SLOW_FILES); `-m 'not slow'` leaves it out of a quick loop")


# Files whose tests took over ~20 s each in `make integration`'s --durations output (a loaded 2-CPU machine). The
# marker only selects: `make test` runs them all; `pytest -m "not slow" tests/integration` is the quick loop.
SLOW_FILES = ("test_acceptance_tags.py", "test_k8s_real_pods.py", "test_k8s_real_pods_gemm.py",
              "test_k8s_real_pods_operators.py", "test_nccl_screen.py", "test_rdma_discovery.py", "test_rdma_fleet.py",
              "test_rdma_silent_host.py", "test_rdma_sweep_faults.py", "test_ssh_fleet.py", "test_port_counters_fleet.py")


# Files by the longest single test of each in one full run with 4 workers (--durations; docs/dev/test-times.md),
# longest first. They start first: xdist hands tests out in collection order, so the run ends on short tests on every
# worker instead of one long test on one worker while the others wait (the browser test, last in name order, used to
# be that tail). A file missing here keeps its place after these; the order inside a file is kept.
LONGEST_FIRST = ("test_report_browser.py", "test_k8s_workload_lifecycle.py", "test_k8s_task_limits.py",
                 "test_probe_async.py", "test_make.py", "test_nccl_screen.py", "test_nccl_tests_role.py",
                 "test_disk_full.py", "test_k8s_device_plugin_preflight.py", "test_report_history.py",
                 "test_config_check.py", "test_k8s_real_pods.py", "test_rdma_sweep_faults.py", "test_gpu_async.py",
                 "test_silent_host_tasks.py", "test_rdma_silent_host.py", "test_rdma_fleet.py", "test_history_postgres.py",
                 "test_fail_on.py", "test_rdma_discovery.py", "test_ssh_fleet.py", "test_rdma_role.py",
                 "test_rdma_gpudirect_latency.py", "test_mpi_cleanup.py")


def _unknown_slow_files():
    here = os.path.dirname(os.path.abspath(__file__))
    return [name for name in SLOW_FILES if not os.path.isfile(os.path.join(here, name))]


def pytest_collection_modifyitems(config, items):
    if _unknown_slow_files():    # a renamed file would silently lose its marker
        raise pytest.UsageError("SLOW_FILES names no file here: %s" % ", ".join(_unknown_slow_files()))
    for item in items:
        if item.path.name in SLOW_FILES:
            item.add_marker(pytest.mark.slow)
    rank = dict((name, index) for index, name in enumerate(LONGEST_FIRST))
    items.sort(key=lambda item: rank.get(item.path.name, len(rank)))    # stable: a file's tests stay together


def collections_path():
    """Where Ansible must look for aifabric.acceptance so that it loads THIS source tree.

    $AIFABRIC_TEST_COLLECTIONS wins; else the directory above ansible_collections/ when the
    tree is seen through a path ending in ansible_collections/aifabric/acceptance (directly,
    or through an entry of PYTHONPATH, as `make test` runs it). None when neither applies.
    """
    explicit = os.environ.get("AIFABRIC_TEST_COLLECTIONS")
    if explicit:
        return explicit
    parts = REPO.split(os.sep)
    if tuple(parts[-3:]) == COLLECTION_TAIL:
        return os.sep.join(parts[:-3]) or os.sep
    real = os.path.realpath(REPO)
    for entry in [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p] + list(sys.path):
        candidate = os.path.join(entry, *COLLECTION_TAIL)
        if os.path.isdir(candidate) and os.path.realpath(candidate) == real:
            return entry
    return None


class Controller(object):
    """The controller side: paths and environment for ansible-playbook against a fleet."""

    def __init__(self):
        self.repo = REPO
        self.bindir = os.path.dirname(sys.executable)          # the venv running pytest
        self.ansible_playbook = os.path.join(self.bindir, "ansible-playbook")
        self.collections = collections_path()
        self.config = os.path.join(REPO, "ansible.cfg")
        self.schema = os.path.join(REPO, "docs", "results.schema.json")

    def problems(self):
        found = []
        if not os.access(self.ansible_playbook, os.X_OK):
            found.append("no ansible-playbook next to %s (install requirements.txt into that venv)" % sys.executable)
        if not self.collections:
            found.append("cannot tell where aifabric.acceptance is importable from: run from a path ending in "
                         "ansible_collections/aifabric/acceptance or set AIFABRIC_TEST_COLLECTIONS")
        if not os.access(TARGET_PYTHON, os.X_OK):
            found.append("the targets' %s is missing" % TARGET_PYTHON)
        return found

    def env(self, fleet, report_dir, callbacks=("aifabric.acceptance.fleet_report",), extra=None):
        env = fleet.ansible_env()
        for name in ("ANSIBLE_COLLECTIONS_PATHS", "ANSIBLE_INVENTORY", "ANSIBLE_LIBRARY", "ANSIBLE_ROLES_PATH"):
            env.pop(name, None)
        env.update({
            "ANSIBLE_CONFIG": self.config,
            "ANSIBLE_COLLECTIONS_PATH": self.collections,
            "ANSIBLE_CALLBACKS_ENABLED": ",".join(callbacks),
            "AIFABRIC_REPORTS_ROOT": str(report_dir),
            "PYTHONDONTWRITEBYTECODE": "1",
            # the fleet's hosts' async job files in the fleet's own directory (removed with it), never in the
            # passwd home's ~/.ansible_async that every host of every fleet and the local tests share: a test that
            # looks there (test_probe_async) sees no other test's job
            "ANSIBLE_ASYNC_DIR": os.path.join(fleet.dir, "async-jobs"),
        })
        env.update(extra or {})
        return env

    def playbook_argv(self, playbook, inventory, *extra):
        return [self.ansible_playbook, "-i", inventory, os.path.join(self.repo, playbook)] + list(extra)


@pytest.fixture(scope="session")
def fleet_prerequisites():
    reasons = netns.missing_prerequisites()
    if reasons:
        pytest.skip("netns SSH fleet unavailable: " + "; ".join(reasons))


@pytest.fixture(scope="session")
def controller():
    ctl = Controller()
    problems = ctl.problems()
    if problems:
        pytest.fail("integration controller misconfigured: " + "; ".join(problems))
    return ctl


@pytest.fixture
def fleet(request, fleet_prerequisites):
    marker = request.node.get_closest_marker("fleet")
    n = marker.kwargs.get("n", 3) if marker else 3
    options = dict((k, v) for k, v in (marker.kwargs if marker else {}).items() if k in ("sysfs", "private_run"))
    the_fleet = netns.Fleet(n, **options)
    the_fleet.up()
    try:
        yield the_fleet
    finally:
        problems = the_fleet.down()
        the_fleet.release()
        if problems:
            pytest.fail("fleet %s teardown left things behind: %s" % (the_fleet.tag, "; ".join(problems)))
