# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Child Pythons run isolated (issue 34): env_probe (``python -c``, ``python -m pip``) and allreduce_probe ran
Python with the inherited working directory first on ``sys.path``, so a ``platform.py`` planted in a cwd another
user can write ran as root. Every child Python now starts through runner.python_argv (``-I``). The planted modules
here (in a directory the test created, made the working directory) write a marker when imported; the real
interpreter runs through the real runner."""

from __future__ import annotations

import shutil
import subprocess
import sys

import pytest

from ansible_collections.aifabric.acceptance.plugins.module_utils import env_probe, probe_host, runner
from ansible_collections.aifabric.acceptance.plugins.modules import allreduce_probe


class _Module:
    check_mode = False

    @staticmethod
    def get_bin_path(name, required=False, opt_dirs=None):
        return shutil.which(name)


@pytest.fixture(name="planted")
def _planted(tmp_path, monkeypatch):
    """A working directory holding platform.py, pip.py and torch.py that write a marker when imported."""
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    marker = tmp_path / "imported"
    for name in ("platform", "pip", "torch"):
        (cwd / (name + ".py")).write_text("open(%r, 'a').write(%r + '\\n')\n" % (str(marker), name))
    monkeypatch.chdir(str(cwd))
    return marker


def test_the_planted_module_would_be_imported_without_isolation(planted):
    """The attack is real: the same interpreter, started as before (``python -c``), imports the planted file."""
    subprocess.run([sys.executable, "-c", "import platform"], timeout=60, check=True)
    assert planted.read_text() == "platform\n"


def test_env_probe_pythons_never_import_from_the_working_directory(planted):
    host = probe_host.Host(run=lambda argv, timeout_s: runner.run(_Module(), argv, timeout_s), which={}.get,
                           executable=sys.executable, environ={})
    records = env_probe.probe(host, {"groups": ["software"], "pip_freeze": True, "timeout_s": 60})
    assert not planted.exists(), planted.read_text()
    python = [r for r in records if r["check"] == "env.python"]
    assert python and python[0]["status"] == "pass"
    assert python[0]["facts"]["python_version"] == "%d.%d.%d" % sys.version_info[:3]
    argvs = [r["params"]["argv"] for r in records if r.get("params", {}).get("argv")]
    assert argvs and all(argv[1] == "-I" for argv in argvs if argv[0] == sys.executable)


def test_allreduce_probe_asks_its_python_without_importing_from_the_working_directory(planted):
    gpus, _name, problem = allreduce_probe._probe_gpus(_Module(), sys.executable, 60)
    assert not planted.exists(), planted.read_text()
    assert gpus is None or gpus >= 0
    assert problem is None or "torch" in problem[0].lower() or "cuda" in problem[0].lower()


def test_python_argv_is_the_one_way_to_start_a_child_python():
    assert runner.python_argv("/usr/bin/python3", ["-c", "pass"]) == ["/usr/bin/python3", "-I", "-c", "pass"]
