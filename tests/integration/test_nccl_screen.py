# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/nccl_screen.yml over real SSH on 8 network-namespace hosts, one of them bad: real Open MPI, stand-in
nccl-tests (fixtures/fake_nccl_tests/fake_perf.py) that makes a run as slow as its slowest node - every rank notes
whether its host is marked bad (a file named after the host), and rank 0 replays a captured 0.6 GB/s run when one
is, the captured 345 GB/s H200 run otherwise; nccl_expect's floor of 100 GB/s then fails a group that holds it.

Two leafs of four (nccl_screen_topology_var), groups of 4, the fifth host bad: the screen round runs one test per
leaf at once ([h0..h3] passes, [h4..h7] fails), the bisect round tests [h4, h5] (fails), the confirm round tests h4
with the known-good h0 (passes: h5 is confirmed bad) and screens h6, h7 again (pass). Exactly the bad host fails;
h4, which launched both failing tests, passes."""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.aifabric.acceptance.tests.integration.fixtures.fake_nccl_tests import fake_perf
from ansible_collections.aifabric.acceptance.tests.integration.test_ssh_fleet import (
    assert_nothing_left, assert_valid_records, finish, load_report, records_of, schema_validator, start, tail)

MARKER = "AIFABRIC_SCREEN"


@pytest.mark.fleet(n=8)
def test_the_screen_finds_the_bad_host_in_three_rounds(fleet, controller, tmp_path):
    if not os.access("/usr/bin/mpirun", os.X_OK):
        pytest.skip("Open MPI's mpirun is not installed (apt-get install openmpi-bin)")
    names = [h.name for h in fleet.hosts]
    bad = names[5]
    bindir = os.path.join(fleet.dir, "nccl-tests")
    os.makedirs(bindir)
    fake_perf.install(bindir, ["all_reduce_perf"])
    bad_dir = os.path.join(fleet.dir, "bad-hosts")
    os.makedirs(bad_dir)
    with open(os.path.join(bad_dir, bad), "w") as handle:
        handle.write("slow\n")
    log = os.path.join(fleet.dir, "fake_nccl.log")
    inventory = fleet.write_inventory(path=str(tmp_path / "inventory.ini"), host_vars=dict(
        (name, {"leaf": "leafA" if index < 4 else "leafB"}) for index, name in enumerate(names)))
    ssh = "-i %s -F /dev/null -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR" % fleet.key
    variables = {
        "nccl_hosts": fleet.group,
        "nccl_screen_group_size": 4,
        "nccl_screen_topology_var": "leaf",
        "nccl_options": {"tool_dir": bindir, "ranks_per_node": 1, "tcp_if_include": fleet.subnet, "timeout_s": 120,
                         "mpirun_mca": {"plm_rsh_args": ssh}, "mpirun_extra_args": ["--oversubscribe"]},
        "nccl_env": {"FAKE_NCCL_BAD_DIR": bad_dir, "FAKE_NCCL_LOG": log},
        "nccl_profile": "none",
        "nccl_expect": {"nccl.all_reduce": {"busbw_max_gbyte_s": {"min": 100}}},
    }
    report_dir = tmp_path / "report"
    out = str(tmp_path / "ansible.log")
    argv = controller.playbook_argv("playbooks/nccl_screen.yml", inventory, "-f", "8", "--tags", "nccl_screen",
                                    "-e", json.dumps(variables))
    proc = start(fleet, argv, controller.env(fleet, report_dir), out, controller.repo)
    assert finish(proc, 240, out) == 0, tail(out)
    _run_dir, report = load_report(report_dir, out)
    records = records_of(report)
    assert_valid_records(records, schema_validator(controller))

    tests = [r for r in records if r["check"] == "nccl.all_reduce"]
    rounds = {}
    for rec in tests:
        words = rec["params"]["env"][MARKER].split()
        test_round, purpose = int(words[0].split("=")[1]), words[1].split("=")[1]
        hosts = [words[2].split("=")[1]] + words[3:]
        assert rec["host"] == hosts[0]                                   # launched from the test's first host
        rounds.setdefault(test_round, []).append((purpose, [names.index(h) for h in hosts], rec["status"]))
    assert dict((k, sorted(v)) for k, v in rounds.items()) == {
        0: [("screen", [0, 1, 2, 3], "pass"), ("screen", [4, 5, 6, 7], "fail")],
        1: [("bisect", [4, 5], "fail")],
        2: [("confirm", [4, 0], "pass"), ("rescreen", [6, 7], "pass")],
    }, tail(out)
    slow = [r for r in tests if r["status"] == "fail"]
    assert all(r["metrics"]["busbw_max_gbyte_s"] < 1 and "busbw_max_gbyte_s" in r["reason"] for r in slow)

    verdicts = dict((h["host"], h["status"]) for h in report["summary"]["hosts"])
    assert verdicts == dict((n, "fail" if n == bad else "pass") for n in names), verdicts
    screen = dict((r["host"], r) for r in records if r["check"] == "nccl.all_reduce.screen")
    assert sorted(screen) == sorted(names)
    assert screen[bad]["status"] == "fail" and screen[bad]["reason"].startswith("confirmed bad node: round 1 bisect")
    findings = [f for f in report["findings"] if f.get("analysis") == "screen"]
    assert [(f["kind"], f["hosts"]) for f in findings] == [("node", [bad])]

    with open(log) as handle:                                            # every test ran on its own hosts only
        ranks = [json.loads(line) for line in handle if line.strip()]
    assert len(ranks) == 4 + 4 + 2 + 2 + 2 and all(r["argv"][r["argv"].index("-g") + 1] == "1" for r in ranks)
    with open(out) as handle:
        text = handle.read()
    assert "Stop whatever of the test is left" in text
    assert_nothing_left(fleet)
