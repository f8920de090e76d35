# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The real-process integration tests (SSH fleets in network namespaces, the process kubelet, mpirun over sshd)
skip when a tool is missing. Every package behind such a tool is in bindep.txt (a machine set up from it runs them)
and in what .ci/run installs; in CI (CI=true) a missing one fails here instead of a silent skip there."""

from __future__ import annotations

import os
import re

import pytest

from ansible_collections.aifabric.acceptance.tests.integration import netns
from ansible_collections.aifabric.acceptance.tests.k8s import process_kubelet

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, os.pardir)
# the tools the real-process tests skip without (netns.TOOLS, process_kubelet.TOOLS, mpirun: test_mpi_cleanup,
# test_nccl_fleet, test_nccl_screen, test_k8s_real_pods*; ethtool: test_port_counters_ethtool) -> the Debian package
# that ships each
SKIP_TOOLS = {"ip": "iproute2", "unshare": "util-linux", "sshd": "openssh-server", "ssh": "openssh-client",
              "ssh-keygen": "openssh-client", "mpirun": "openmpi-bin", "ethtool": "ethtool"}


def bindep_test_packages():
    """Package names of bindep.txt lines for Debian (platform:dpkg)."""
    out = set()
    with open(os.path.join(ROOT, "bindep.txt"), encoding="utf-8") as handle:
        for line in handle:
            line = line.split("#", 1)[0].strip()
            match = re.match(r"^([A-Za-z0-9.+-]+)(?:\s+\[([^\]]*)\])?$", line)
            if match and (not match.group(2) or "platform:dpkg" in match.group(2).split()):
                out.add(match.group(1))
    return out


def ci_packages():
    """The packages .ci/run installs (its `for pkg in ...; do` list)."""
    with open(os.path.join(ROOT, ".ci", "run"), encoding="utf-8") as handle:
        text = handle.read()
    words = re.search(r"for pkg in (.*?); do", text, re.S).group(1)
    return set(words.replace("\\", " ").split())


def test_every_tool_the_real_process_tests_skip_without_is_covered():
    assert set(netns.TOOLS) | set(process_kubelet.TOOLS) | {"mpirun", "ethtool"} == set(SKIP_TOOLS)
    packages = set(SKIP_TOOLS.values())
    assert packages - bindep_test_packages() == set(), "bindep.txt lacks them"
    assert packages - ci_packages() == set(), ".ci/run does not install them"


@pytest.mark.skipif(os.environ.get("CI") != "true", reason="CI only: a developer's machine may lack a tool")
def test_in_ci_no_real_process_test_skips_for_a_missing_tool():
    missing = sorted("%s (%s)" % (tool, pkg) for tool, pkg in SKIP_TOOLS.items() if not netns.find_tool(tool))
    assert missing == [], "the real-process integration tests would skip: missing %s" % ", ".join(missing)
