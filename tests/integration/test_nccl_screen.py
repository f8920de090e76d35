# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/nccl_screen.yml over real SSH on 8 network-namespace hosts, one of them bad: real Open MPI, stand-in
nccl-tests (fixtures/fake_nccl_tests/fake_perf.py) that makes a run as slow as its slowest node - every rank notes
whether its host is marked bad (a file named after the host), and rank 0 replays a captured 0.6 GB/s run when one
is, the captured 345 GB/s H200 run otherwise; nccl_expect's floor of 100 GB/s then fails a group that holds it.

Two leafs of four (nccl_screen_topology_var), groups of 4, the sixth host (h5) bad, two runs per verdict (the
default nccl_screen_evidence): the screen round runs one test per leaf at once ([h0..h3] passes, [h4..h7] fails);
[h4, h5] fails while [h0..h3] is rechecked (known good after a second pass); h4 passes with the known-good h0 (so h5
is the suspect) and h6, h7 are screened again; h4, h6, h7 are rechecked while h5 waits for a known-good mate; h5 fails
with h4, then with h6 - two failing confirmations inside its leaf, with different partners: bad. 6 rounds, 10 runs.
Exactly the bad host fails; h4, which launched two failing tests, passes.

Without nccl_screen_topology_var, the screen learns each host's switch with fabric_topology from the declared topology
file (probe_topology_file: the even hosts on leaf-even, the odd ones on leaf-odd, across the inventory's order) and
its groups follow the switches: [h0, h2, h4, h6] passes, [h1, h3, h5, h7] fails, [h1, h3] passes (and the even
leaf is rechecked), [h1, h3] is rechecked, h5 fails with the known-good h1 and h3 of its own leaf while a span test
[h0, h3] crosses the two leaves, and h7 passes with h1 and h3; h5, named by elimination (no failing run of its own
localised it), fails a third confirmation with h1 before it is bad. 7 rounds, 12 runs."""


from __future__ import annotations

import itertools
import json
import os
import re

import pytest

from ansible_collections.aifabric.acceptance.tests.integration.fixtures.fake_nccl_tests import fake_perf
from ansible_collections.aifabric.acceptance.tests.integration.test_ssh_fleet import (
    assert_nothing_left, assert_valid_records, finish, load_report, records_of, schema_validator, start, tail)

MARKER = "AIFABRIC_SCREEN"


def _setup(fleet, *bad):
    """The stand-in nccl-tests, the bad hosts' marker files and the screen's variables (topology aside)."""
    if not os.access("/usr/bin/mpirun", os.X_OK):
        pytest.skip("Open MPI's mpirun is not installed (apt-get install openmpi-bin)")
    bindir = os.path.join(fleet.dir, "nccl-tests")
    os.makedirs(bindir)
    fake_perf.install(bindir, ["all_reduce_perf"])
    bad_dir = os.path.join(fleet.dir, "bad-hosts")
    os.makedirs(bad_dir)
    for name in bad:
        with open(os.path.join(bad_dir, name), "w") as handle:
            handle.write("slow\n")
    log = os.path.join(fleet.dir, "fake_nccl.log")
    ssh = "-i %s -F /dev/null -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR" % fleet.key
    variables = {
        "nccl_hosts": fleet.group,
        "nccl_screen_group_size": 4,
        "nccl_options": {"tool_dir": bindir, "ranks_per_node": 1, "tcp_if_include": fleet.subnet, "timeout_s": 120,
                         "mpirun_mca": {"plm_rsh_args": ssh}, "mpirun_extra_args": ["--oversubscribe"]},
        "nccl_env": {"FAKE_NCCL_BAD_DIR": bad_dir, "FAKE_NCCL_LOG": log},
        "nccl_profile": "none",
        "nccl_expect": {"nccl.all_reduce": {"busbw_max_gbyte_s": {"min": 100}}},
    }
    return variables, log


def _screen(fleet, controller, tmp_path, variables, limit_s, leaves=False, ok=True):
    """Run playbooks/nccl_screen.yml over the fleet (8 forks) with ``variables`` (``leaves``: h0-h3 on leafA, the
    rest on leafB, as the inventory variable ``leaf``), within ``limit_s``; with ``ok`` it must succeed and its
    records be valid. Returns (the output's path, the report, its records, its nccl.all_reduce records)."""
    names = [h.name for h in fleet.hosts]
    host_vars = dict((name, {"leaf": "leafA" if index < 4 else "leafB"}) for index, name in enumerate(names))
    inventory = fleet.write_inventory(path=str(tmp_path / "inventory.ini"), **({"host_vars": host_vars} if leaves else {}))
    report_dir = tmp_path / "report"
    out = str(tmp_path / "ansible.log")
    argv = controller.playbook_argv("playbooks/nccl_screen.yml", inventory, "-f", "8", "--tags", "nccl_screen",
                                    "-e", json.dumps(variables))
    proc = start(fleet, argv, controller.env(fleet, report_dir), out, controller.repo)
    rc = finish(proc, limit_s, out)
    if ok:
        assert rc == 0, tail(out)
    _run_dir, report = load_report(report_dir, out)
    records = records_of(report)
    if ok:
        assert_valid_records(records, schema_validator(controller))
    return out, report, records, [r for r in records if r["check"] == "nccl.all_reduce"]


def _rounds(tests, names):
    """{round: sorted [(purpose, [host index...], status)]} of the screen's records, from their markers."""
    rounds = {}
    for rec in tests:
        words = rec["params"]["env"][MARKER].split()
        test_round, purpose = int(words[0].split("=")[1]), words[1].split("=")[1]
        # the hosts, up to the first word naming something else (groups=, evidence=, margin_pct=)
        hosts = [words[2].split("=")[1]] + list(itertools.takewhile(lambda word: "=" not in word, words[3:]))
        assert rec["host"] == hosts[0]                                   # launched from the test's first host
        rounds.setdefault(test_round, []).append((purpose, [names.index(h) for h in hosts], rec["status"]))
    return dict((k, sorted(v)) for k, v in rounds.items())


def _cleaned(out):
    """The hosts on which the screen's cleanup task ran (not skipped), over every round, from the run's output."""
    with open(out) as handle:
        text = handle.read()
    hosts = []
    for block in text.split("TASK [")[1:]:
        if block.startswith("aifabric.acceptance.nccl : Stop whatever of the test is left"):
            hosts.extend(re.findall(r"^(?:ok|changed|failed|fatal): \[([^\]]+)\]", block, re.MULTILINE))
    return hosts


def _task_runs(out, name):
    """How many times the run's output started the screen's task ``name`` (its banner: once per round it ran in)."""
    with open(out) as handle:
        return handle.read().count("TASK [aifabric.acceptance.nccl : %s" % name)


LAUNCH = "Run nccl-tests across the test's hosts"
NEXT_ROUND = "Screen, bisect and confirm - the next round"


def _assert_rounds_walked(out, rounds):
    """The round's tasks ran in ``rounds`` rounds, no more: the round loop stopped once the screen was over (each
    round includes the next one only while it plans a test; the last round's include skipped on every host)."""
    assert _task_runs(out, LAUNCH) == rounds, tail(out)
    assert _task_runs(out, NEXT_ROUND) == rounds, tail(out)
    with open(out) as handle:
        included = [line for line in handle if line.startswith("included: ") and "screen_round.yml" in line]
    assert len(included) == rounds, tail(out)


@pytest.mark.fleet(n=8)
def test_the_screen_finds_the_bad_host_in_six_rounds(fleet, controller, tmp_path):
    names = [h.name for h in fleet.hosts]
    bad = names[5]
    variables, log = _setup(fleet, bad)
    variables["nccl_screen_topology_var"] = "leaf"
    out, report, records, tests = _screen(fleet, controller, tmp_path, variables, 240, leaves=True)

    # two runs per verdict: the hosts that passed once are rechecked; h5 (the pool once h4 passed) waits for its
    # leaf-mates' recheck, then fails two confirmations inside its leaf, with h4 and with h6
    assert _rounds(tests, names) == {
        0: [("screen", [0, 1, 2, 3], "pass"), ("screen", [4, 5, 6, 7], "fail")],
        1: [("bisect", [4, 5], "fail"), ("recheck", [0, 1, 2, 3], "pass")],
        2: [("confirm", [4, 0], "pass"), ("rescreen", [6, 7], "pass")],
        3: [("recheck", [4, 6, 7], "pass")],
        4: [("confirm", [5, 4], "fail"), ("span", [0, 6], "pass")],
        5: [("confirm", [5, 6], "fail")],
    }, tail(out)
    slow = [r for r in tests if r["status"] == "fail"]
    assert all(r["metrics"]["busbw_max_gbyte_s"] < 1 and "busbw_max_gbyte_s" in r["reason"] for r in slow)

    verdicts = dict((h["host"], h["status"]) for h in report["summary"]["hosts"])
    assert verdicts == dict((n, "fail" if n == bad else "pass") for n in names), verdicts
    screen = dict((r["host"], r) for r in records if r["check"] == "nccl.all_reduce.screen")
    assert sorted(screen) == sorted(names)
    assert screen[bad]["status"] == "fail" and screen[bad]["reason"].startswith(
        "confirmed bad node: round 4 confirm of %s, %s (fail); round 5 confirm of %s, %s (fail)" % (
            bad, names[4], bad, names[6]))
    findings = [f for f in report["findings"] if f.get("analysis") == "screen"]
    assert [(f["kind"], f["hosts"]) for f in findings] == [("node", [bad])]

    with open(log) as handle:                                            # every test ran on its own hosts only
        ranks = [json.loads(line) for line in handle if line.strip()]
    assert len(ranks) == 4 + 4 + 2 + 4 + 2 + 2 + 3 + 2 + 2 + 2 and all(r["argv"][r["argv"].index("-g") + 1] == "1" for r in ranks)
    # every launch ended clean (a slow run exits 0): no cleanup call on any host, and the rounds' tasks ran in the
    # 6 rounds the screen needed, of a bound of 13 at 8 hosts
    assert _cleaned(out) == [], tail(out)
    _assert_rounds_walked(out, 6)
    assert_nothing_left(fleet)


@pytest.mark.fleet(n=8)
def test_the_screen_groups_follow_the_switches_fabric_topology_learns(fleet, controller, tmp_path):
    names = [h.name for h in fleet.hosts]
    bad = names[5]
    variables, log = _setup(fleet, bad)
    leaf = dict((name, "leaf-even" if index % 2 == 0 else "leaf-odd") for index, name in enumerate(names))
    declared = tmp_path / "topology.yml"
    declared.write_text(json.dumps(dict((name, {"mlx5_0": {"switch": leaf[name], "switch_port": "swp%d" % (index + 1)}})
                                        for index, name in enumerate(names))))
    variables.update(probe_topology_file=str(declared), probe_lldp=False)     # no nccl_screen_topology_var
    inventory = fleet.write_inventory(path=str(tmp_path / "inventory.ini"))
    report_dir = tmp_path / "report"
    out = str(tmp_path / "ansible.log")
    argv = controller.playbook_argv("playbooks/nccl_screen.yml", inventory, "-f", "8", "--tags", "nccl_screen",
                                    "-e", json.dumps(variables))
    proc = start(fleet, argv, controller.env(fleet, report_dir), out, controller.repo)
    assert finish(proc, 240, out) == 0, tail(out)
    _run_dir, report = load_report(report_dir, out)
    records = records_of(report)
    assert_valid_records(records, schema_validator(controller))

    learned = [r for r in records if r["check"] == "net.topology"]         # in the report like every module's records
    assert sorted((r["host"], r["status"], r["facts"]["ports"]["mlx5_0"]["switch"], r["facts"]["ports"]["mlx5_0"]["source"])
                  for r in learned) == sorted((name, "pass", leaf[name], "declared") for name in names)
    tests = [r for r in records if r["check"] == "nccl.all_reduce"]
    assert _rounds(tests, names) == {
        0: [("screen", [0, 2, 4, 6], "pass"), ("screen", [1, 3, 5, 7], "fail")],    # one group per switch
        1: [("bisect", [1, 3], "pass"), ("recheck", [0, 2, 4, 6], "pass")],
        2: [("recheck", [1, 3], "pass")],                                         # h5, h7 wait for a known-good mate
        3: [("confirm", [5, 1], "fail"), ("span", [0, 3], "pass")],               # h5 with h1 of its own leaf
        4: [("confirm", [5, 3], "fail"), ("confirm", [7, 1], "pass")],            # ... and with h3
        # h5 was named by elimination ([h1, h3] passed): no failing run of its own localised it, so a third
        # confirmation (h1 again: h7 is not known good yet), while h7 passes a second time
        5: [("confirm", [5, 1], "fail"), ("confirm", [7, 3], "pass")],
        6: [("span", [0, 1], "pass")],
    }, tail(out)
    for rec in tests:                                                     # each marker names each host's switch
        words = rec["params"]["env"][MARKER].split()
        assert words[-2:] == ["evidence=2", "margin_pct=5"]                 # the rules it was planned with
        words = words[:-2]
        cut = [w.startswith("groups=") for w in words].index(True)
        hosts = [words[2].split("=")[1]] + words[3:cut]
        assert [words[cut].split("=")[1]] + words[cut + 1:] == [leaf[h] for h in hosts]

    verdicts = dict((h["host"], h["status"]) for h in report["summary"]["hosts"])
    assert verdicts == dict((n, "fail" if n == bad else "pass") for n in names), verdicts
    screen = dict((r["host"], r) for r in records if r["check"] == "nccl.all_reduce.screen")
    assert screen[bad]["status"] == "fail" and screen[bad]["reason"].startswith("confirmed bad node: round 3 confirm")
    findings = [f for f in report["findings"] if f.get("analysis") == "screen"]
    assert [(f["kind"], f["hosts"]) for f in findings] == [("node", [bad])]
    with open(log) as handle:
        ranks = [json.loads(line) for line in handle if line.strip()]
    assert len(ranks) == 4 + 4 + 2 + 4 + 2 + 2 + 2 + 2 + 2 + 2 + 2 + 2              # 12 runs in 7 rounds
    # every launch ended clean (each mpirun run exited 0, nothing left on its launcher): no cleanup call on any host
    assert _cleaned(out) == [], tail(out)
    assert_nothing_left(fleet)


@pytest.mark.fleet(n=8)
def test_one_unlucky_confirmation_of_a_healthy_host_does_not_fail_it(fleet, controller, tmp_path):
    """The fleet of the first test (two leaves, h5 bad), where h4's first confirmation - the run that clears it in
    that test, [h4, h0] - is slow once, healthy as h4 is (FAKE_NCCL_FLAKY: a transient). One failing confirmation
    names no node: h4 is confirmed again with other known-good partners (h6, then h7), passes both and ends `pass`
    (known good on the two passes after its failing run), never `fail`; h5 still fails on its two confirmations,
    every other host passes. With one run per verdict (nccl_screen_evidence 1) that one run fails h4."""
    names = [h.name for h in fleet.hosts]
    bad, unlucky = names[5], names[4]
    variables, log = _setup(fleet, bad)
    variables["nccl_screen_topology_var"] = "leaf"
    variables["nccl_env"]["FAKE_NCCL_FLAKY"] = unlucky
    inventory = fleet.write_inventory(path=str(tmp_path / "inventory.ini"), host_vars=dict(
        (name, {"leaf": "leafA" if index < 4 else "leafB"}) for index, name in enumerate(names)))
    report_dir = tmp_path / "report"
    out = str(tmp_path / "ansible.log")
    argv = controller.playbook_argv("playbooks/nccl_screen.yml", inventory, "-f", "8", "--tags", "nccl_screen",
                                    "-e", json.dumps(variables))
    proc = start(fleet, argv, controller.env(fleet, report_dir), out, controller.repo)
    assert finish(proc, 300, out) == 0, tail(out)
    _run_dir, report = load_report(report_dir, out)
    records = records_of(report)
    assert_valid_records(records, schema_validator(controller))
    assert os.path.exists(os.path.join(fleet.dir, "bad-hosts", "flaky-" + unlucky))      # the transient happened
    tests = [r for r in records if r["check"] == "nccl.all_reduce"]
    assert _rounds(tests, names) == {
        0: [("screen", [0, 1, 2, 3], "pass"), ("screen", [4, 5, 6, 7], "fail")],
        1: [("bisect", [4, 5], "fail"), ("recheck", [0, 1, 2, 3], "pass")],
        2: [("confirm", [4, 0], "fail"), ("rescreen", [6, 7], "pass")],           # the transient
        3: [("confirm", [5, 0], "fail"), ("recheck", [6, 7], "pass")],
        4: [("confirm", [4, 6], "pass"), ("confirm", [5, 7], "fail")],            # h4 with another partner: pass
        5: [("confirm", [4, 7], "pass"), ("confirm", [5, 6], "fail")],
    }, tail(out)
    verdicts = dict((h["host"], h["status"]) for h in report["summary"]["hosts"])
    assert verdicts == dict((n, "fail" if n == bad else "pass") for n in names), verdicts
    screen = dict((r["host"], r) for r in records if r["check"] == "nccl.all_reduce.screen")
    assert screen[unlucky]["reason"].startswith("known good: passed 2 group test(s), round 4 confirm of %s, %s (pass)"
                                                % (unlucky, names[6]))
    assert screen[bad]["status"] == "fail" and screen[bad]["reason"].startswith("confirmed bad node: round 4 confirm")
    assert_nothing_left(fleet)


@pytest.mark.fleet(n=8)
def test_a_launch_past_its_time_limit_is_cleaned_up_on_every_host_of_its_test(fleet, controller, tmp_path):
    """Every rank hangs (FAKE_NCCL_SLEEP) past the run's limit: nccl_test stops its mpirun on the launcher (an error
    record) and the screen's cleanup runs on every host of each test - what a launch that ended clean skips - and
    nothing of the run is left on any host."""
    names = [h.name for h in fleet.hosts]
    variables, _log = _setup(fleet, names[5])
    variables["nccl_screen_topology_var"] = "leaf"
    variables["nccl_screen_max_rounds"] = 1
    variables["nccl_options"]["timeout_s"] = 8
    variables["nccl_env"]["FAKE_NCCL_SLEEP"] = "600"
    out, _report, _records, tests = _screen(fleet, controller, tmp_path, variables, 300, leaves=True, ok=False)
    assert sorted((r["host"], r["status"]) for r in tests) == [(names[0], "error"), (names[4], "error")], tail(out)
    assert sorted(_cleaned(out)) == sorted(names), tail(out)
    assert_nothing_left(fleet)


@pytest.mark.fleet(n=8)
def test_a_healthy_fleet_s_screen_runs_one_round_and_stops(fleet, controller, tmp_path):
    """No bad host, one run per verdict (nccl_screen_evidence 1), groups of 4 in inventory order: the first round's
    two tests pass, the next plan has no test, and the screen is over after one round - the round's tasks ran once,
    not once per round of the bound (9 at 8 hosts with one run per verdict). Every host passes."""
    names = [h.name for h in fleet.hosts]
    variables, log = _setup(fleet)
    variables.update(nccl_screen_evidence=1, nccl_screen_learn_topology=False)
    out, report, records, tests = _screen(fleet, controller, tmp_path, variables, 240)
    assert _rounds(tests, names) == {0: [("screen", [0, 1, 2, 3], "pass"), ("screen", [4, 5, 6, 7], "pass")]}, tail(out)
    _assert_rounds_walked(out, 1)
    verdicts = dict((h["host"], h["status"]) for h in report["summary"]["hosts"])
    assert verdicts == dict((n, "pass") for n in names), verdicts
    screen = dict((r["host"], r) for r in records if r["check"] == "nccl.all_reduce.screen")
    assert sorted(screen) == sorted(names) and all(r["status"] == "pass" for r in screen.values())
    with open(log) as handle:
        assert len([line for line in handle if line.strip()]) == 4 + 4            # two runs of four ranks
    assert _cleaned(out) == [], tail(out)
    assert_nothing_left(fleet)


@pytest.mark.fleet(n=8)
def test_two_bad_hosts_are_named_and_the_screen_stops_after_the_rounds_it_needs(fleet, controller, tmp_path):
    """Two bad hosts (h2, h5) in different groups of 4, no topology, two runs per verdict (the default): both groups
    fail, both halves [h0, h1] and [h4, h5] are bisected, h2 and h5 are confirmed twice with known-good partners
    (h5 named by the failing half [h4, h5], h2 by elimination: a third confirmation). Exactly the two bad hosts fail,
    and the round's tasks ran in the 6 rounds the screen needed (of a bound of 13)."""
    names = [h.name for h in fleet.hosts]
    bad = [names[2], names[5]]
    variables, _log = _setup(fleet, *bad)
    variables["nccl_screen_learn_topology"] = False
    out, report, _records, tests = _screen(fleet, controller, tmp_path, variables, 300)
    assert _rounds(tests, names) == {
        0: [("screen", [0, 1, 2, 3], "fail"), ("screen", [4, 5, 6, 7], "fail")],
        1: [("bisect", [0, 1], "pass"), ("bisect", [4, 5], "fail")],              # h2 or h3; h4 or h5
        2: [("recheck", [0, 1], "pass"), ("rescreen", [6, 7], "pass")],
        3: [("confirm", [2, 0], "fail"), ("confirm", [4, 1], "pass"), ("recheck", [6, 7], "pass")],
        4: [("confirm", [2, 1], "fail"), ("confirm", [3, 6], "pass"), ("confirm", [4, 7], "pass"),
            ("confirm", [5, 0], "fail")],
        5: [("confirm", [2, 4], "fail"), ("confirm", [3, 0], "pass"), ("confirm", [5, 1], "fail")],
    }, tail(out)
    _assert_rounds_walked(out, 6)
    verdicts = dict((h["host"], h["status"]) for h in report["summary"]["hosts"])
    assert verdicts == dict((n, "fail" if n in bad else "pass") for n in names), verdicts
    findings = [f for f in report["findings"] if f.get("analysis") == "screen"]
    assert sorted(h for f in findings if f["kind"] == "node" for h in f["hosts"]) == sorted(bad), findings
    assert_nothing_left(fleet)


def _walked(out):
    """{host: the number of rounds in which it ran the round's launch task (ran or skipped: any line of it)}, and the
    hosts each round's file was included for, in order, from the run's output."""
    with open(out) as handle:
        text = handle.read()
    walked = {}
    for block in text.split("TASK [")[1:]:
        if block.startswith("aifabric.acceptance.nccl : " + LAUNCH):
            for host in re.findall(r"^(?:ok|changed|skipping|failed|fatal): \[([^\]]+)\]", block, re.MULTILINE):
                walked[host] = walked.get(host, 0) + 1
    included = [line.split(" for ", 1)[1].strip().split(", ") for line in text.splitlines()
                if line.startswith("included: ") and "screen_round.yml" in line]
    return walked, included


@pytest.mark.fleet(n=8)
def test_hosts_the_screen_is_done_with_walk_no_further_round(fleet, controller, tmp_path):
    """Groups of 2 in inventory order, no topology, h5 bad, two runs per verdict: [h4, h5] fails, the rest pass and
    are rechecked (h7 with h2); h4 is confirmed with h0, h5 fails three confirmations (with h0, h1, h2: named by
    elimination). Once a round's plan knows h7 good and no later round can take it (the hosts not known good and the
    first known-good ones, as partners, are what the next rounds may use: aifabric.acceptance.group_screen_hosts),
    it includes no further round: h7, known good after round 1, runs no task of round 2 on; h4 and h6 none after
    round 3 - while the rounds, the records and the verdicts are those of the screen that walked every host: exactly
    h5 fails."""
    names = [h.name for h in fleet.hosts]
    bad = names[5]
    variables, _log = _setup(fleet, bad)
    variables.update(nccl_screen_group_size=2, nccl_screen_learn_topology=False)
    out, report, records, tests = _screen(fleet, controller, tmp_path, variables, 300)
    assert _rounds(tests, names) == {
        0: [("screen", [0, 1], "pass"), ("screen", [2, 3], "pass"), ("screen", [4, 5], "fail"),
            ("screen", [6, 7], "pass")],
        1: [("recheck", [0, 3], "pass"), ("recheck", [1, 6], "pass"), ("recheck", [2, 7], "pass")],
        2: [("confirm", [4, 0], "pass")],
        3: [("confirm", [4, 1], "pass"), ("confirm", [5, 0], "fail")],
        4: [("confirm", [5, 1], "fail")],
        5: [("confirm", [5, 2], "fail")],
    }, tail(out)
    walked, included = _walked(out)
    everyone = dict((n, 6) for n in names)
    assert walked == dict(everyone, **{names[4]: 4, names[6]: 4, names[7]: 2}), (walked, tail(out))
    assert [sorted(names.index(h) for h in hosts) for hosts in included] == [
        list(range(8)), list(range(8)), [0, 1, 2, 3, 4, 5, 6], [0, 1, 2, 3, 4, 5, 6], [0, 1, 2, 3, 5], [0, 1, 2, 3, 5]]
    verdicts = dict((h["host"], h["status"]) for h in report["summary"]["hosts"])
    assert verdicts == dict((n, "fail" if n == bad else "pass") for n in names), verdicts
    findings = [f for f in report["findings"] if f.get("analysis") == "screen"]
    assert [(f["kind"], f["hosts"]) for f in findings] == [("node", [bad])]
    screen = dict((r["host"], r) for r in records if r["check"] == "nccl.all_reduce.screen")
    assert sorted(screen) == sorted(names) and screen[bad]["status"] == "fail"
    assert _cleaned(out) == [], tail(out)
    assert_nothing_left(fleet)
