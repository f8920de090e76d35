# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""`make acceptance` as a user runs it, twice at once from one checkout (a copy of this tree).

Before: each run force-reinstalled the one shared .collections, so concurrent runs failed with
FileNotFoundError / "Cannot resolve 'aifabric.acceptance.nccl_test'" or wrote a report with every
host `error`; and `make acceptance` installed the test tools too. Now the collection is installed once
per content under a lock (.ci/collection.py) and both runs report the same healthy host.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import sys

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENV = os.path.dirname(os.path.dirname(os.path.abspath(sys.executable)))
SKIP = {".git", ".venv", ".collections", "reports", "dist", ".pytest_cache", ".hypothesis", "output", "__pycache__"}


@pytest.fixture
def checkout(tmp_path):
    if not shutil.which("make") or not shutil.which("flock"):
        pytest.skip("make and flock (util-linux) are needed")
    if not os.path.isfile(os.path.join(VENV, "bin", "ansible-playbook")):
        pytest.skip("pytest does not run from the project's venv (%s)" % VENV)
    copy = tmp_path / "checkout"
    shutil.copytree(REPO, str(copy), symlinks=True, ignore=lambda _d, names: [n for n in names if n in SKIP])
    os.symlink(VENV, str(copy / ".venv"))        # the installed venv: no network needed
    return copy


def _env():
    env = dict(os.environ)
    for name in list(env):
        if name.startswith(("ANSIBLE_", "AIFABRIC_")) or name in ("MAKEFLAGS", "MAKELEVEL", "PYTHONPATH"):
            env.pop(name)
    return env


def test_make_acceptance_installs_only_the_run_requirements(checkout):
    plan = subprocess.run(["make", "-n", "-B", "acceptance"], cwd=str(checkout), env=_env(), capture_output=True,
                          text=True, timeout=120, check=False)
    assert plan.returncode == 0, plan.stderr
    assert "-r requirements.txt" in plan.stdout and "requirements-test.txt" not in plan.stdout


def test_two_make_acceptance_at_once(checkout, tmp_path):
    procs = []
    for n in (1, 2):
        log = open(str(tmp_path / ("make%d.log" % n)), "wb")
        procs.append((subprocess.Popen(["make", "acceptance", "REPORT_DIR=%s" % (tmp_path / ("reports%d" % n))],
                                       cwd=str(checkout), env=_env(), stdout=log, stderr=subprocess.STDOUT,
                                       stdin=subprocess.DEVNULL), log))
    for proc, log in procs:
        try:
            proc.wait(timeout=300)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            log.close()
    for n, (proc, _log) in enumerate(procs, 1):
        with open(str(tmp_path / ("make%d.log" % n)), errors="replace") as handle:
            text = handle.read()
        assert proc.returncode == 0, text[-4000:]
        found = glob.glob(str(tmp_path / ("reports%d" % n) / "*" / "results.json"))
        found = [p for p in found if not os.path.islink(os.path.dirname(p))]
        assert len(found) == 1, text[-4000:]
        with open(found[0]) as handle:
            data = json.load(handle)
        assert data["summary"]["hosts_total"] == 1 and data["summary"]["failed_hosts"] == [], data["summary"]
        assert not [r for r in data["records"] if r["status"] == "error"]
    installs = os.listdir(str(checkout / ".collections"))
    assert len([n for n in installs if not n.startswith(".")]) == 1 and not [n for n in installs if n.startswith(".tmp")]


def test_a_wrong_inventory_path_fails_with_the_line_that_fixes_it(checkout, tmp_path):
    done = subprocess.run(["make", "acceptance", "INVENTORY=inventories/mysitee", "REPORT_DIR=%s" % (tmp_path / "r")],
                          cwd=str(checkout), env=_env(), capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 2
    assert "make acceptance INVENTORY=inventories/localhost" in done.stderr     # a command that works here
    assert "ARGS='-e acceptance_hosts=all'" in done.stderr
    assert not os.path.exists(str(tmp_path / "r"))


def test_an_install_in_use_is_never_replaced(checkout):
    """A change to the checkout installs a second copy next to the first (renamed into place whole):
    a run that uses the first keeps its files (before: `--force` reinstalled them under it)."""
    argv = [sys.executable, ".ci/collection.py", os.path.join(VENV, "bin")]
    first = subprocess.run(argv, cwd=str(checkout), capture_output=True, text=True, timeout=600, check=True).stdout.strip()
    manifest = os.path.join(first, "ansible_collections", "aifabric", "acceptance", "MANIFEST.json")
    before = os.stat(manifest)
    again = subprocess.run(argv, cwd=str(checkout), capture_output=True, text=True, timeout=600, check=True).stdout.strip()
    assert again == first and os.stat(manifest).st_ino == before.st_ino          # same content: not rebuilt
    with open(str(checkout / "docs" / "report.md"), "a") as handle:
        handle.write("\nedited\n")
    second = subprocess.run(argv, cwd=str(checkout), capture_output=True, text=True, timeout=600, check=True).stdout.strip()
    assert second != first and os.path.isdir(os.path.join(second, "ansible_collections", "aifabric", "acceptance"))
    after = os.stat(manifest)
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)


@pytest.mark.parametrize("kind", ["foreign", "group_writable", "symlink"])
def test_make_refuses_a_test_copy_base_it_cannot_trust(checkout, tmp_path, kind):
    """`make test` runs Python with its staging base on PYTHONPATH: a base another user made first (a planted
    sitecustomize.py), one others can write, or a link is refused before anything is copied or run from it."""
    base = tmp_path / "base"
    real = tmp_path / "real"
    planted = real if kind == "symlink" else base
    planted.mkdir()
    (planted / "sitecustomize.py").write_text("raise SystemExit('planted code ran')\n")
    if kind == "foreign":
        if os.geteuid() != 0:
            pytest.skip("chown to another uid needs root")
        os.chown(str(base), 65534, 65534)
        os.chmod(str(base), 0o755)
    elif kind == "group_writable":
        os.chmod(str(base), 0o775)
    else:
        os.symlink(str(real), str(base))
    run = subprocess.run(["make", "--no-print-directory", "stage", "AT_BASE=%s" % base], cwd=str(checkout),
                         env=_env(), capture_output=True, text=True, timeout=120, check=False)
    assert run.returncode != 0
    assert "make: refusing %s" % base in run.stderr
    assert sorted(os.listdir(str(planted))) == ["sitecustomize.py"]     # nothing was staged into it


def test_make_creates_the_test_copy_base_private(checkout, tmp_path):
    base = tmp_path / "fresh"
    run = subprocess.run(["make", "--no-print-directory", "stage", "AT_BASE=%s" % base], cwd=str(checkout),
                         env=_env(), capture_output=True, text=True, timeout=120, check=False)
    assert "refusing" not in run.stderr
    assert oct(os.stat(str(base)).st_mode & 0o777) == oct(0o700)


def _make(checkout, tmp_path, *args, timeout=300):
    done = subprocess.run(["make", "--no-print-directory", "acceptance"] + list(args), cwd=str(checkout), env=_env(),
                          capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL, check=False)
    return done, done.stdout + done.stderr


def _report_line(out):
    lines = [line for line in out.splitlines() if line.startswith("Report: ")]
    return lines[-1][len("Report: "):].split("/ (")[0] if lines else None


def test_make_acceptance_takes_an_inventory_anywhere_and_never_builds_it(checkout, tmp_path):
    """The README's advice: keep the site's inventory outside the checkout. `make acceptance INVENTORY=` takes it by
    an absolute path (with a space in it) and by a relative one (from the checkout, here leading out of it); editing
    it installs the collection no second time; the line "Report:" names the run each time, and no run where none was
    written (playbooks/report.yml writes where it is told, and says so: before, the line named reports/latest)."""
    site = tmp_path / "site inventories" / "my site"
    shutil.copytree(str(checkout / "inventories" / "localhost"), str(site))
    reports = tmp_path / "reports"
    done, out = _make(checkout, tmp_path, "INVENTORY=%s" % (site / "hosts.yml"), "REPORT_DIR=%s" % reports)
    assert done.returncode == 0, out[-4000:]
    first = _report_line(out)
    assert first and os.path.dirname(first) == str(reports) and os.path.isfile(os.path.join(first, "results.json"))
    with open(os.path.join(first, "results.json")) as handle:
        assert json.load(handle)["summary"]["hosts_total"] == 1
    installs = sorted(n for n in os.listdir(str(checkout / ".collections")) if not n.startswith("."))
    with open(str(site / "hosts.yml"), "a") as handle:
        handle.write("# edited by the site\n")
    relative = os.path.relpath(str(site / "hosts.yml"), str(checkout))
    assert relative.startswith("..")
    done, out = _make(checkout, tmp_path, "INVENTORY=%s" % relative, "REPORT_DIR=%s" % reports)
    assert done.returncode == 0, out[-4000:]
    second = _report_line(out)
    assert second and second != first and os.path.isfile(os.path.join(second, "results.json"))
    assert sorted(n for n in os.listdir(str(checkout / ".collections")) if not n.startswith(".")) == installs
    rerun = tmp_path / "rerun"
    done, out = _make(checkout, tmp_path, "PLAYBOOK=playbooks/report.yml", "REPORT_DIR=%s" % reports,
                      "ARGS=-e report_input=%s/results.json -e run_dir=%s" % (second, rerun))
    assert done.returncode == 0, out[-4000:]
    assert _report_line(out) is None and "report: %s" % (rerun / "report.html") in " ".join(out.split())
    assert os.path.isfile(str(rerun / "report.html"))


def test_make_keeps_its_test_files_in_a_private_directory_of_its_own(checkout, tmp_path):
    """Issue 34: `make test` used fixed names in /tmp (ANSIBLE_ASYNC_DIR=/tmp/aifabric-ansible-async-<uid>, the
    staged copy /tmp/aifabric-ansible-test-<uid>-<pid>): a local user who made them first planted job-file links
    and sitecustomize.py. Now one `mktemp -d` directory per make (0700, a random name) holds them, removed by
    `make test` at its end; a squatted name of the old scheme is never used."""
    shared = tmp_path / "shared-tmp"
    shared.mkdir()
    os.chmod(str(shared), 0o1777)
    uid = os.getuid()
    old = shared / ("aifabric-ansible-async-%d" % uid)
    old.mkdir()
    env = dict(_env(), TMPDIR=str(shared))
    run = subprocess.run(["make", "--no-print-directory", "-p", "stage"], cwd=str(checkout), env=env,
                         capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stderr[-2000:]
    made = [p for p in shared.iterdir() if p != old]
    assert len(made) == 1 and made[0].name.startswith("aifabric-make-%d-" % uid)
    assert oct(os.stat(str(made[0])).st_mode & 0o777) == oct(0o700) and not made[0].is_symlink()
    assert (made[0] / "at" / "ansible_collections" / "aifabric" / "acceptance").is_dir()     # the staged copy's place
    exports = dict(line.split(" := ", 1) for line in run.stdout.splitlines()
                   if line.startswith(("RUN_TMP :=", "AT_BASE :=")))
    assert exports == {"RUN_TMP": str(made[0]), "AT_BASE": str(made[0] / "at")}
    assert sorted(os.listdir(str(old))) == []       # the squatted name of the old scheme is left alone
    test_rules = subprocess.run(["make", "--no-print-directory", "-n", "-p", "test"], cwd=str(checkout), env=env,
                                capture_output=True, text=True, timeout=300, check=False).stdout
    for name in ("ANSIBLE_ASYNC_DIR", "ANSIBLE_REMOTE_TEMP"):
        value = [line for line in test_rules.splitlines() if line.startswith("test: %s := " % name)]
        assert value and value[0].split(" := ", 1)[1].startswith(str(shared / ("aifabric-make-%d-" % uid))), value
    shutil.rmtree(str(shared))
