# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A full disk never loses a run silently (issue 18 item 7): real ansible-playbook runs, real ENOSPC.

The report directory (and its history.sqlite) is a small tmpfs in a private mount namespace, filled up so that
the history row fits and the report files do not (tests/integration/full_disk.py). Before: one warning, the
record stream deleted, exit 0, and (when the disk had room for the row) the history kept a run with no report.
Now: an error that says so, exit 1, no history row (the row's transaction is rolled back when the files cannot be
written), and the record stream kept with its path printed; ``playbooks/report.yml`` writes the report from it.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pytest

from ansible_collections.aifabric.acceptance.plugins.plugin_utils import fleet
from ansible_collections.aifabric.acceptance.tests.integration.test_callback import (  # pylint: disable=unused-import
    ANSIBLE_PLAYBOOK, PLAYBOOKS, REPO, env)

HERE = os.path.dirname(os.path.abspath(__file__))
SERIES_ROWS = 3000      # per record: the report files need ~2 MB, the history row a few kB
CHECKS = ("nccl.all_reduce", "nccl.all_gather", "nccl.reduce_scatter", "nccl.alltoall")


@pytest.fixture(scope="module")
def unshare():
    path = shutil.which("unshare")
    if os.geteuid() != 0 or path is None or shutil.which("mount") is None:
        pytest.skip("needs root, unshare and mount (a tmpfs in a private mount namespace)")
    probe = subprocess.run([path, "--mount", "--propagation", "private", "true"], capture_output=True, text=True,
                           timeout=30, check=False)
    if probe.returncode != 0:
        pytest.skip("cannot make a private mount namespace: %s" % probe.stderr.strip())
    return path


def synthetic_records():
    """SYNTHETIC test records: four collectives with a long per-size series each."""
    series = [{"size_bytes": 8 * (i + 1), "busbw_gbyte_s": round(0.001 * i, 3), "time_us": 30.0 + i}
              for i in range(SERIES_ROWS)]
    return [{"check": check, "status": "pass", "metrics": {"busbw_max_gbyte_s": 3.0}, "series": series}
            for check in CHECKS]


def run_on_full_disk(env, unshare, tmp_path, keep_kb, stream_on_disk=False):
    """disk_full.yml with its report directory (reports/ on the tmpfs) and, with stream_on_disk, TMPDIR (the
    callback's record stream) on a nearly full filesystem; returns the process and what the filesystem held."""
    disk, state, extra = tmp_path / "disk", tmp_path / "full_disk.json", tmp_path / "records.json"
    extra.write_text(json.dumps({"disk_full_records": synthetic_records()}), encoding="utf-8")
    for path in (disk, tmp_path / "tmp"):
        path.mkdir()
    run_env = dict(env, AIFABRIC_REPORTS_ROOT=str(disk / "reports"), ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp"),
                   TMPDIR=str((disk if stream_on_disk else tmp_path) / "tmp"))
    playbook = [ANSIBLE_PLAYBOOK, "-i", os.path.join(PLAYBOOKS, "fleet_report_inventory.ini"), "disk_full.yml",
                "-e", "@%s" % extra]
    argv = [unshare, "--mount", "--propagation", "private", sys.executable, os.path.join(HERE, "full_disk.py"),
            str(disk), "8m", "reports,tmp", str(keep_kb), str(state), "300", "--"] + playbook
    proc = subprocess.run(argv, env=run_env, cwd=PLAYBOOKS, capture_output=True, text=True, timeout=360, check=False)
    with open(str(state), encoding="utf-8") as handle:
        return proc, json.load(handle)


def kept_stream(out):
    kept = re.search(r"records are kept in (\S+\.jsonl)\b.*; free the space", out)
    assert kept, out[-4000:]
    assert "report_input=%s" % kept.group(1) in out
    return kept.group(1)


def report_files(disk):
    """What the report directory holds besides the filler and the history store (nothing, when lost)."""
    return sorted(name for name in disk["files"]
                  if name.startswith("reports/") and not name.startswith("reports/history.sqlite"))


# 600 kB free: room for the history row, not for the report. 128 kB: room for the row only while the files are
# not written; before, this run's row stayed in the history (the DELETE that undid it found no space) with no report
@pytest.mark.parametrize("keep_kb", [600, 128])
def test_a_report_that_does_not_fit_fails_the_run_and_keeps_its_records(env, unshare, tmp_path, keep_kb):
    proc, disk = run_on_full_disk(env, unshare, tmp_path, keep_kb)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 1, out[-4000:]
    assert "THE REPORT OF THIS RUN COULD NOT BE WRITTEN: [Errno 28] No space left on device" in out, out[-4000:]
    assert "FLEET REPORT: PASS: 2 hosts: 2 pass" in proc.stdout           # the verdict is still shown
    # both or neither: no run directory, no temporary one, and no history row
    assert report_files(disk) == [] and disk["history_runs"] in ({}, {"reports/history.sqlite": []}), disk
    # the record stream is kept, its path printed, outside the full filesystem
    stream = kept_stream(out)
    assert os.path.dirname(os.path.dirname(stream)) == str(tmp_path / "tmp") and os.path.isfile(stream)
    collected = fleet.Collector.load(stream)
    measured = sorted((r["host"], r["check"], len(r["series"])) for r in collected.records())
    assert measured == sorted((h, c, SERIES_ROWS) for h in ("node1", "node2") for c in CHECKS)

    # what the message says works: report.yml writes the run's report from the kept stream
    rerender = tmp_path / "rerender"
    again = subprocess.run([ANSIBLE_PLAYBOOK, os.path.join(REPO, "playbooks", "report.yml"), "-e",
                            "report_input=%s" % stream, "-e", "run_dir=%s" % rerender],
                           env=dict(env, ANSIBLE_LOCAL_TEMP=str(tmp_path / "ansible-tmp")), cwd=str(tmp_path),
                           capture_output=True, text=True, timeout=300, check=False)
    assert again.returncode == 0, (again.stdout + again.stderr)[-4000:]
    with open(str(rerender / "results.json"), encoding="utf-8") as handle:
        report = json.load(handle)
    assert report["run"]["run_id"] == collected.run["run_id"] and report["run"]["recovered_from"] == stream
    assert report["summary"]["hosts_total"] == 2 and report["summary"]["worst_status"] == "pass"
    assert sorted((r["host"], r["check"]) for r in report["records"]) == sorted(
        (h, c) for h in ("node1", "node2") for c in CHECKS)


def test_one_full_disk_for_the_stream_and_the_report_fails_the_summary_step_and_the_run(env, unshare, tmp_path):
    """The record stream (TMPDIR) on the same full disk: the run_summary step fails (the stream lost lines), the
    report cannot be written, the incomplete stream is kept and named as such; exit 1 + 2 (a failed task)."""
    proc, disk = run_on_full_disk(env, unshare, tmp_path, 600, stream_on_disk=True)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 3, out[-4000:]
    full = r"(No space left on device|short write)"      # one write: the disk took part of it, or nothing
    assert re.search(r"fatal: \[node1\]: FAILED! => .*cannot write the record stream .*" + full, out), out[-4000:]
    assert "THE REPORT OF THIS RUN COULD NOT BE WRITTEN: [Errno 28] No space left on device" in out, out[-4000:]
    stream = kept_stream(out)
    assert re.search(r"records\.jsonl \(incomplete: cannot write the record stream .*" + full, out), out[-4000:]
    assert os.path.relpath(stream, str(tmp_path / "disk")) in disk["files"], disk       # kept on that disk
    assert report_files(disk) == [] and disk["history_runs"] in ({}, {"reports/history.sqlite": []}), disk
