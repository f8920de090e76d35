# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/hccl.yml end to end with real ansible-playbook runs on a two-host local fleet.

No Ascend hardware here: each host's ``mpirun`` (hccl_mpirun) is a stand-in that prints a real HCCL Test capture
(the CANN documentation's 8-NPU all-reduce for node-a, the FAQ's init_hcclComm retcode 7 failure for node-b), so
the whole path - env_probe npu group (skip: no npu-smi), hccl_test, the fleet_report callback - is exercised and
the verdicts are asserted per host. Every path the runs write is under the test's tmp_path.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ansible_collections.aifabric.acceptance.tests.integration.conftest import collections_path

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
FIXTURES = os.path.join(REPO, "tests", "unit", "plugins", "module_utils", "parsers", "fixtures", "hccl_test")
ANSIBLE_PLAYBOOK = os.path.join(os.path.dirname(sys.executable), "ansible-playbook")


@pytest.fixture(scope="module")
def env():
    collections = collections_path()
    if not collections:
        pytest.fail("cannot tell where aifabric.acceptance is importable from: set AIFABRIC_TEST_COLLECTIONS")
    out = dict(os.environ)
    for name in ("ANSIBLE_COLLECTIONS_PATHS", "ANSIBLE_INVENTORY", "AIFABRIC_HISTORY_DB", "AIFABRIC_REPORT_FORMATS",
                 "AIFABRIC_DRIFT_PINS", "AIFABRIC_HISTORY"):
        out.pop(name, None)
    out.update({"ANSIBLE_CONFIG": os.path.join(REPO, "ansible.cfg"), "ANSIBLE_COLLECTIONS_PATH": collections,
                "ANSIBLE_CALLBACKS_ENABLED": "aifabric.acceptance.fleet_report", "ANSIBLE_NOCOLOR": "1",
                "PYTHONDONTWRITEBYTECODE": "1"})
    return out


def _inside(tmp_path, path):
    path = os.path.realpath(str(path))
    assert path.startswith(os.path.realpath(str(tmp_path)) + os.sep), path
    return path


def _stand_in(tmp_path, name, capture, rc):
    path = tmp_path / name
    path.write_text("#!/bin/sh\ncat '%s'\nexit %d\n" % (os.path.join(FIXTURES, capture), rc), encoding="utf-8")
    path.chmod(0o755)
    return _inside(tmp_path, path)


def test_fleet_with_a_healthy_and_a_failing_npu_host(env, tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "all_reduce_test").write_text("#!/bin/sh\nexit 0\n", encoding="utf-8")
    (bindir / "all_reduce_test").chmod(0o755)
    good = _stand_in(tmp_path, "mpirun-good", "oam-tools-docs-all-reduce-8npu-8K-64M-avg-time-header.txt", 0)
    bad = _stand_in(tmp_path, "mpirun-bad", "oam-tools-faq-retcode7-init-hcclcomm-failure.txt", 1)
    reports = _inside(tmp_path, tmp_path / "reports")
    inventory = tmp_path / "inventory.ini"
    inventory.write_text(
        "[npu_nodes]\nnode-a hccl_mpirun=%s\nnode-b hccl_mpirun=%s\n\n[npu_nodes:vars]\nansible_connection=local\n"
        "ansible_python_interpreter={{ ansible_playbook_python }}\n" % (good, bad), encoding="utf-8")
    argv = [ANSIBLE_PLAYBOOK, "-i", str(inventory), os.path.join(REPO, "playbooks", "hccl.yml"),
            "-e", "hccl_bin_dir=%s" % _inside(tmp_path, bindir), "-e", "hccl_env_script=",
            "-e", '{"hccl_collectives": ["all_reduce"]}', "-e", "hccl_max_bytes=64M", "-e", "hccl_npus=8"]
    proc = subprocess.run(argv, env=dict(env, AIFABRIC_REPORT_DIR=reports), cwd=str(tmp_path), capture_output=True,
                          text=True, timeout=300, check=False)
    out = proc.stdout + proc.stderr
    assert "PLAY RECAP" in proc.stdout, out[-4000:]
    with open(os.path.join(reports, "latest", "results.json"), encoding="utf-8") as handle:
        records = json.load(handle)["records"]
    hccl = dict((r["host"], r) for r in records if r["check"] == "hccl.all_reduce")
    assert sorted(hccl) == ["node-a", "node-b"]
    assert hccl["node-a"]["status"] == "pass"
    assert hccl["node-a"]["metrics"]["busbw_max_gbyte_s"] == pytest.approx(23.76245 * 1.75, rel=1e-6)
    assert hccl["node-a"]["series"][-1]["oop_algbw_gbyte_s"] == 23.76245
    assert hccl["node-b"]["status"] == "error" and "retcode: 7" in hccl["node-b"]["reason"]
    probes = [r for r in records if r["check"] == "gpu.npu_inventory"]
    assert len(probes) == 2 and all(r["status"] == "skip" for r in probes)
    argv_a = hccl["node-a"]["params"]["argv"]
    assert argv_a[0] == good and argv_a[1:3] == ["-n", "8"] and argv_a[-8:] == [
        "-b", "8K", "-e", "64M", "-f", "2", "-p", "8"]
