# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A virtualenv's python named by the user stays that virtualenv's python (issue 19 proof run on 2x H100).

`gpu_python: /opt/torch/.venv/bin/python3` (a link to /usr/bin/python3.12, as virtualenvs are) was resolved to
/usr/bin/python3.12 by the trust check, and the GEMM and torch probes then said "PyTorch is not importable": a
healthy GPU host got env.required failures. The check still walks the path; an interpreter runs by the name given
(in its resolved directory: ``keep_name``), every link from that name checked.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest

from ansible_collections.aifabric.acceptance.plugins.module_utils import runner
from ansible_collections.aifabric.acceptance.plugins.module_utils.statedir import StateError


class _Module:
    check_mode = False

    @staticmethod
    def get_bin_path(name, required=False, opt_dirs=None):
        return shutil.which(name)


@pytest.fixture(name="venv")
def _venv(tmp_path):
    os.chmod(tmp_path, 0o700)
    target = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(target)], check=True, timeout=120)
    return target


def test_venv_python_is_run_as_named_and_keeps_its_prefix(venv):
    named = str(venv / "bin" / "python3")
    assert os.path.islink(named), "a virtualenv's python is a link (the case this test is about)"
    found = runner.find_tool(_Module(), "python3", path=named, keep_name=True)     # an interpreter: gemm_bench's
    assert found == named
    # any other tool runs by the resolved path that was checked
    assert runner.find_tool(_Module(), "python3", path=named) == os.path.realpath(named)
    prefix = subprocess.run([found, "-c", "import sys; print(sys.prefix)"], capture_output=True, text=True,
                            timeout=60, check=True).stdout.strip()
    assert os.path.realpath(prefix) == os.path.realpath(str(venv))


def test_a_link_in_a_directory_others_can_write_is_still_refused(venv, tmp_path):
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    link = shared / "python3"
    os.symlink(str(venv / "bin" / "python3"), str(link))
    with pytest.raises(StateError):
        runner.find_tool(_Module(), "python3", path=str(link))
