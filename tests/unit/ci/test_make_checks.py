# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The two checks `make test` ends its stages with: .ci/suite_ran.py (a suite that tested nothing fails the stage,
read from the JUnit XML a real pytest run writes) and .ci/home_check.py (files written to the real home fail
`make test`)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, os.pardir)
SUITE_RAN = os.path.join(ROOT, ".ci", "suite_ran.py")
HOME_CHECK = os.path.join(ROOT, ".ci", "home_check.py")


def _pytest_junit(tmp_path, body):
    """Run a real pytest on a one-file suite and return the JUnit XML path it wrote."""
    (tmp_path / "test_case.py").write_text(body)
    junit = tmp_path / "out" / "junit.xml"
    subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "--junitxml", str(junit),
                    str(tmp_path / "test_case.py")], cwd=str(tmp_path), capture_output=True, timeout=120, check=False)
    return junit


def _suite_ran(junit, allow=False):
    env = dict(os.environ)
    env.pop("AIFABRIC_ALLOW_SKIPPED", None)
    if allow:
        env["AIFABRIC_ALLOW_SKIPPED"] = "1"
    return subprocess.run([sys.executable, SUITE_RAN, "integration", str(junit)], capture_output=True, text=True,
                          timeout=60, env=env, check=False)


ALL_SKIPPED = "import pytest\n\n@pytest.mark.skip(reason='no sshd')\ndef test_a():\n    pass\n\n" \
              "def test_b():\n    pytest.skip('no netns')\n"
ONE_RAN = ALL_SKIPPED + "\ndef test_c():\n    assert True\n"


def test_a_suite_whose_every_test_skipped_fails_the_stage(tmp_path):
    done = _suite_ran(_pytest_junit(tmp_path, ALL_SKIPPED))
    assert done.returncode == 1
    assert "all 2 tests were skipped" in done.stderr


def test_an_empty_suite_fails_the_stage(tmp_path):
    done = _suite_ran(_pytest_junit(tmp_path, "X = 1\n"))
    assert done.returncode == 1
    assert "no test was collected" in done.stderr


def test_a_missing_report_fails_the_stage(tmp_path):
    done = _suite_ran(tmp_path / "absent.xml")
    assert done.returncode == 1
    assert "did not run" in done.stderr


def test_a_suite_that_ran_a_test_passes(tmp_path):
    done = _suite_ran(_pytest_junit(tmp_path, ONE_RAN))
    assert done.returncode == 0, done.stderr
    assert "1 tests ran (2 skipped)" in done.stdout


def test_allowed_skips_pass_with_a_warning(tmp_path):
    done = _suite_ran(_pytest_junit(tmp_path, ALL_SKIPPED), allow=True)
    assert done.returncode == 0
    assert "WARNING all 2 tests were skipped" in done.stdout


def _home_check(home, stamp, *exclude):
    return subprocess.run([sys.executable, HOME_CHECK, str(home), str(stamp)] + [str(e) for e in exclude],
                          capture_output=True, text=True, timeout=60, check=False)


@pytest.fixture
def home(tmp_path):
    """A home with old files, and a stamp touched after them."""
    root = tmp_path / "home"
    (root / ".config").mkdir(parents=True)
    (root / ".config" / "old").write_text("x")
    past = time.time() - 3600
    os.utime(root / ".config" / "old", (past, past))
    stamp = tmp_path / "stamp"
    stamp.write_text("")
    os.utime(stamp, (past + 60, past + 60))
    return root, stamp


def test_nothing_written_to_the_home_passes(home):
    root, stamp = home
    done = _home_check(root, stamp)
    assert done.returncode == 0, done.stderr


def test_a_file_written_to_the_home_fails_naming_it(home):
    root, stamp = home
    (root / ".ansible" / "collections" / "ansible_collections").mkdir(parents=True)
    (root / ".ansible" / "collections" / "ansible_collections" / "MANIFEST.json").write_text("{}")
    done = _home_check(root, stamp)
    assert done.returncode == 1
    assert os.path.join(".ansible", "collections", "ansible_collections", "MANIFEST.json") in done.stderr
    assert "old" not in done.stderr.replace("collections", "")


def test_the_checkout_under_the_home_is_not_counted(home):
    root, stamp = home
    checkout = root / "src" / "aifabric"
    checkout.mkdir(parents=True)
    (checkout / "reports.txt").write_text("y")
    done = _home_check(root, stamp, checkout)
    assert done.returncode == 0, done.stderr          # what the tests write in the checkout is theirs
    (root / ".cache").mkdir()
    (root / ".cache" / "pip").write_text("z")
    done = _home_check(root, stamp, checkout)
    assert done.returncode == 1
    assert ".cache" in done.stderr and "reports.txt" not in done.stderr
