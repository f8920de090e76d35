# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A pytest plugin that records each test's CPU time (not its wall time): what `make test` on two CPUs pays.

    PYTHONPATH=<dir above ansible_collections>:bench TEST_CPU_OUT=tests/output/cpu.tsv \\
        .venv/bin/python -m pytest -p cpu_per_test -n 2 tests/unit
    python bench/cpu_per_test.py tests/output/cpu.tsv [--files] [--top N]

Around each test (setup, call and teardown: a module-scoped fixture's cost falls on the first test that uses it) it
takes user + system time of the pytest process (RUSAGE_SELF) and of every process it has waited for
(RUSAGE_CHILDREN: ansible-playbook, ssh, the test hosts' sshd and what they waited for) and appends one line to
TEST_CPU_OUT: nodeid, wall s, CPU s, the process id. Each xdist worker appends its own lines; the collection and
start of a worker (imports) fall on no test, and are the line "<session>" of each process at its end; the xdist
controller's line holds its own CPU only (its children are the workers, counted in their lines).
"""

from __future__ import annotations

import collections
import os
import resource
import sys
import time

import pytest


def _cpu():
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def _write(nodeid, wall, cpu):
    path = os.environ.get("TEST_CPU_OUT")
    if not path:
        return
    line = "%s\t%.3f\t%.3f\t%d\n" % (nodeid, wall, cpu, os.getpid())
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, line.encode())
    finally:
        os.close(fd)


_SPENT = [0.0]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item):
    wall0, cpu0 = time.monotonic(), _cpu()
    yield
    cpu = _cpu() - cpu0
    _SPENT[0] += cpu
    _write(item.nodeid, time.monotonic() - wall0, cpu)


def pytest_sessionfinish(session):
    if getattr(session.config, "workerinput", None) is None and session.config.pluginmanager.hasplugin("dsession"):
        # the xdist controller: its children are the workers, whose CPU their own lines already hold
        own = resource.getrusage(resource.RUSAGE_SELF)
        _write("<session: xdist controller>", 0.0, own.ru_utime + own.ru_stime)
        return
    _write("<session>", 0.0, _cpu() - _SPENT[0])


def _report(path, by_file, top):
    totals = collections.defaultdict(lambda: [0.0, 0.0, 0])
    with open(path) as handle:
        for line in handle:
            nodeid, wall, cpu, _pid = line.rstrip("\n").split("\t")
            key = nodeid.split("::")[0] if by_file else nodeid
            totals[key][0] += float(wall)
            totals[key][1] += float(cpu)
            totals[key][2] += 1
    cpu_sum = sum(v[1] for v in totals.values())
    print("CPU s\twall s\ttests\t%s  (all: %.1f s CPU)" % ("file" if by_file else "test", cpu_sum))
    for key, (wall, cpu, count) in sorted(totals.items(), key=lambda kv: -kv[1][1])[:top]:
        print("%.1f\t%.1f\t%d\t%s" % (cpu, wall, count, key))


if __name__ == "__main__":
    args = sys.argv[1:]
    top = 40
    if "--top" in args:
        top = int(args[args.index("--top") + 1])
    _report(args[0], "--files" in args, top)
