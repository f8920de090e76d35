# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""aifabric.acceptance.dcgm_diag: check mode starts nothing, import mode reads a saved real output, a dcgmi that
hangs is killed at timeout_s and the record says so (its process cleaned up by the one process layer)."""

from __future__ import annotations

import os
import stat

from ansible_collections.aifabric.acceptance.plugins.modules import dcgm_diag
from ansible_collections.aifabric.acceptance.tests.unit.helpers import parser_fixture
from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules.module_harness import patch_exits, run_main

V3 = parser_fixture("dcgm", "dcgm-3.1.0-8gpu-deployment-custom-pass.json")


def _script(tmp_path, body):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    script = bindir / "dcgmi"
    script.write_text("#!/bin/sh\n%s\n" % body)
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return bindir


def test_check_mode_returns_the_command_and_runs_nothing(tmp_path, monkeypatch):
    marker = tmp_path / "ran"
    bindir = _script(tmp_path, "touch %s" % marker)
    monkeypatch.setenv("PATH", "%s%s%s" % (bindir, os.pathsep, os.environ.get("PATH", "")))
    patch_exits(monkeypatch)
    out = run_main(dcgm_diag.main, {"level": 2, "_ansible_check_mode": True})
    assert not out.failed and out.kwargs["results"] == [] and not marker.exists()
    assert out.kwargs["cmd"] == [str(bindir / "dcgmi"), "diag", "-r", "2", "-j"]


def test_import_mode_reads_a_saved_output(monkeypatch):
    patch_exits(monkeypatch)
    out = run_main(dcgm_diag.main, {"from_output": V3})
    assert not out.failed and out.kwargs["counts"]["pass"] == 17


def test_a_hanging_dcgmi_is_killed_at_its_limit(tmp_path, monkeypatch):
    bindir = _script(tmp_path, "sleep 30")
    monkeypatch.setenv("PATH", "%s%s%s" % (bindir, os.pathsep, os.environ.get("PATH", "")))
    patch_exits(monkeypatch)
    out = run_main(dcgm_diag.main, {"level": 1, "timeout_s": 1})
    (record,) = out.kwargs["results"]
    assert record["status"] == "error" and "ran past its limit of 1 s" in record["reason"]
