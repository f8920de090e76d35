# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
""".ci/stages.py, which runs `make test`'s stages (some side by side) and prints their times: run for real on a
small Makefile of its own (make is the command it drives)."""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import sys
import time

import pytest

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, os.pardir)
STAGES = os.path.join(ROOT, ".ci", "stages.py")

# each stage appends its name to order.txt when it starts and when it ends; "slow" and "quick" each wait for a file
# the other writes, so the two can only both pass when they run side by side (each waits for the file, at most 30 s:
# far above a loaded machine's start of the other, and the SIGTERM test interrupts "slow" while it waits)
MAKEFILE = """\
.PHONY: prep slow quick after broken
prep:
\techo prep >> order.txt
slow: prep
\techo slow-start >> order.txt; touch slow.started; i=0; while [ ! -e quick.done ] && [ $$i -lt 600 ]; do sleep 0.05; \\
\t  i=$$((i+1)); done; test -e quick.done && echo slow-end >> order.txt
quick: prep
\ti=0; while [ ! -e slow.started ] && [ $$i -lt 600 ]; do sleep 0.05; i=$$((i+1)); done; test -e slow.started && { \\
\t  echo quick-start >> order.txt; echo quick says hello; echo quick-end >> order.txt; touch quick.done; }
after: prep
\techo after >> order.txt
broken: prep
\techo broken >> order.txt; exit 3
"""


def _stages(tmp_path, *steps, timeout=None):
    if not shutil.which("make"):
        pytest.skip("make is needed")
    (tmp_path / "Makefile").write_text(MAKEFILE)
    argv = [sys.executable, STAGES, "--log-dir", str(tmp_path / "logs")]
    if timeout:
        argv += ["--timeout", str(timeout)]
    env = dict((k, v) for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS"))
    return subprocess.run(argv + list(steps) + ["--", "make", "--no-print-directory"], cwd=str(tmp_path), env=env,
                          capture_output=True, text=True, timeout=120, check=False)


def _rows(stdout):
    """{stage: (step, result)} from the table at the end."""
    rows = {}
    for line in stdout.split("make test: stage times", 1)[1].splitlines()[2:]:
        fields = line.split()
        if fields and fields[0].isdigit():
            rows[fields[1]] = (int(fields[0]), " ".join(f for f in fields[2:] if not re.match(r"^\d+:\d\d\.\d$", f)))
    return rows


def test_lanes_run_side_by_side_and_every_stage_is_timed(tmp_path):
    done = _stages(tmp_path, "prep", "slow,quick+after")
    assert done.returncode == 0, done.stdout + done.stderr
    order = (tmp_path / "order.txt").read_text().split()
    # prep once (the later stages get `-o prep`), then slow waited for quick: they overlapped
    assert order.count("prep") == 1 and order[0] == "prep"
    assert order.index("slow-start") < order.index("quick-end") < order.index("slow-end")
    assert order.index("quick-end") < order.index("after")
    assert _rows(done.stdout) == {"prep": (1, "ok"), "slow": (2, "ok"), "quick": (2, "ok"), "after": (2, "ok")}
    assert re.search(r"^\s+total\s+\d+:\d\d\.\d$", done.stdout, re.M)
    # the machine's load beside the times (a shared machine: the wall times move with it)
    assert re.search(r"^  load average \(1 min\) at the start \d+\.\d, at the end \d+\.\d, on \d+ CPUs", done.stdout, re.M)
    # the second lane's output is kept in its log and printed whole, between markers
    assert "quick says hello" in (tmp_path / "logs" / "quick.log").read_text()
    block = done.stdout.split("==== quick (", 1)[1].split("==== end of quick ====", 1)[0]
    assert "quick says hello" in block


def test_a_failed_stage_fails_the_run_and_stops_later_steps(tmp_path):
    done = _stages(tmp_path, "prep", "broken,after", "quick")
    assert done.returncode == 1
    assert _rows(done.stdout) == {"prep": (1, "ok"), "broken": (2, "FAILED (exit 2)"), "after": (2, "ok"),
                                  "quick": (3, "not run")}
    assert "quick-start" not in (tmp_path / "order.txt").read_text().split()


def test_a_stage_past_its_timeout_is_stopped(tmp_path):
    done = _stages(tmp_path, "slow", timeout=1)    # nothing writes quick.done: slow would wait 30 s
    assert done.returncode == 1
    assert _rows(done.stdout) == {"slow": (1, "stopped (timeout)")}
    assert "slow-end" not in (tmp_path / "order.txt").read_text()


def test_sigterm_stops_every_running_stage_and_still_prints_the_table(tmp_path):
    if not shutil.which("make"):
        pytest.skip("make is needed")
    (tmp_path / "Makefile").write_text(MAKEFILE)
    env = dict((k, v) for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MAKELEVEL", "MFLAGS"))
    # slow waits up to 30 s for quick.done, which nothing writes here
    proc = subprocess.Popen([sys.executable, STAGES, "--log-dir", str(tmp_path / "logs"), "slow,broken", "--", "make",
                             "--no-print-directory"], cwd=str(tmp_path), env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 30
        while not (tmp_path / "slow.started").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        proc.send_signal(signal.SIGTERM)
        # the script's own worst case is a stage that ignores SIGINT: SIGKILL after GRACE_S (30 s), threads joined
        # in GRACE_S + 10; far above it (a loaded CI machine took more than 30 s once)
        out, _err = proc.communicate(timeout=180)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert proc.returncode == 1, out
    assert _rows(out)["slow"] == (1, "interrupted"), out
    assert "slow-end" not in (tmp_path / "order.txt").read_text()
