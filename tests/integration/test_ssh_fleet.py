# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The acceptance playbook over real SSH against a fleet of network-namespace hosts.

1. playbooks/acceptance.yml on 3 hosts with the fleet_report callback: the report lists
   every host, every record validates against docs/results.schema.json, junit.xml parses.
2. The same run with one host killed mid-run: the report still lists all 3 hosts, the
   dead one as `error` (unreachable), the others with their probe records.
3. After each test nothing is left: no sshd of the fleet, no ansible-playbook, no SSH
   master, no network namespace (checked here and again by the fixture's teardown).
"""

from __future__ import annotations

import glob
import json
import os
import subprocess
import time
import xml.etree.ElementTree as ET

import pytest

from ansible_collections.aifabric.acceptance.tests.integration import netns

PLAYBOOK = "playbooks/acceptance.yml"
PLAYBOOK_TIMEOUT_S = 120
GATE_TIMEOUT_S = 60
REACHABLE_CHECK = "env.reachable"       # the record fleet_report makes of an unreachable host


def missing_pieces(repo):
    """What the acceptance run needs from the collection and does not have yet."""
    missing = []
    for rel, what in ((PLAYBOOK, "the acceptance playbook"),
                      ("plugins/modules/env_probe.py", "the aifabric.acceptance.env_probe module"),
                      ("plugins/callback/fleet_report.py", "the aifabric.acceptance.fleet_report callback")):
        if not os.path.isfile(os.path.join(repo, rel)):
            missing.append("%s (%s)" % (rel, what))
    if not os.path.isfile(os.path.join(repo, "plugins", "action", "run_summary.py")):
        missing.append("plugins/action/run_summary.py (the run summary step of %s)" % PLAYBOOK)
    return missing


def _read(path):
    with open(path, errors="replace") as handle:
        return handle.read()


@pytest.fixture
def collection_ready(controller):
    missing = missing_pieces(controller.repo)
    if missing:
        pytest.skip("acceptance run over SSH needs what has not landed yet: " + "; ".join(missing))


def start(fleet, argv, env, log_path, cwd):
    """Start a controller-side command in its own process group, tracked by the fleet."""
    log = open(log_path, "wb")
    try:
        proc = subprocess.Popen(argv, env=env, cwd=cwd, stdin=subprocess.DEVNULL, stdout=log,
                                stderr=subprocess.STDOUT, start_new_session=True)
    finally:
        log.close()
    return fleet.track(proc)


def finish(proc, timeout_s, log_path):
    try:
        return proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        pytest.fail("%s still running after %ss:\n%s" % (os.path.basename(proc.args[0]), timeout_s, tail(log_path)))


def tail(path, lines=60):
    text = _read(path) if os.path.exists(path) else "(no output file)"
    return "\n".join(text.splitlines()[-lines:])


def load_report(report_dir, log_path):
    # one directory per run; `latest` is a symlink to it
    found = [path for path in glob.glob(os.path.join(str(report_dir), "*", "results.json"))
             if not os.path.islink(os.path.dirname(path))]
    assert len(found) == 1, "expected one run directory with results.json under %s, found %r\n%s" % (
        report_dir, found, tail(log_path))
    run_dir = os.path.dirname(found[0])
    with open(found[0]) as handle:
        report = json.load(handle)
    return run_dir, report


def records_of(report):
    return report["records"] if isinstance(report, dict) else report


def schema_validator(controller):
    jsonschema = pytest.importorskip("jsonschema")
    with open(controller.schema) as handle:
        schema = json.load(handle)
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def assert_valid_records(records, validator):
    problems = []
    for index, record in enumerate(records):
        for err in validator.iter_errors(record):
            where = "/".join(str(p) for p in err.path)
            problems.append("record %d (%s %s): %s at %s" % (index, record.get("host"), record.get("check"), err.message, where))
    assert not problems, "records not valid against docs/results.schema.json:\n" + "\n".join(problems[:30])


def assert_accounts_for(report, records, names, failed):
    """The run metadata, the summary and the set_stats summary (AWX) agree on the hosts."""
    assert sorted(report["run"]["hosts_targeted"]) == names
    summary = report["summary"]
    assert summary["hosts_total"] == len(names)
    assert summary["records_total"] == len(records)
    counts = dict((status, sum(1 for r in records if r["status"] == status))
                  for status in ("pass", "warn", "fail", "skip", "error"))
    assert summary["counts"] == counts
    assert sorted(summary["failed_hosts"]) == failed
    assert_set_stats_agree(report)
    compact = report["run"]["set_stats"]["_run"]["aifabric_summary"]
    assert compact["hosts_total"] == len(names) and sorted(compact["failed_hosts"]) == failed, compact


def assert_set_stats_agree(report):
    """One verdict: the playbook's set_stats (what AWX shows, from the run_summary step) and results.json
    give every host the same verdict and the run the same counts."""
    stats = (report["run"].get("set_stats") or {}).get("_run") or {}
    compact, verdicts = stats.get("aifabric_summary"), stats.get("aifabric_hosts")
    assert compact and verdicts, "no aifabric_summary/aifabric_hosts in the run's set_stats: %r" % stats
    assert verdicts == dict((h["host"], h["status"]) for h in report["summary"]["hosts"])
    for key in ("worst_status", "counts", "records_total", "hosts_total", "hosts_by_status"):
        assert compact[key] == report["summary"][key], (key, compact[key], report["summary"][key])


def assert_junit(run_dir, records):
    path = os.path.join(run_dir, "junit.xml")
    root = ET.parse(path).getroot()
    cases = root.findall(".//testcase")
    assert len(cases) == len(records), "junit.xml has %d testcases for %d records" % (len(cases), len(records))
    failing = len(root.findall(".//testcase/failure")) + len(root.findall(".//testcase/error"))
    bad = sum(1 for r in records if r["status"] in ("fail", "error"))
    assert failing == bad, "junit.xml marks %d testcases failure/error, the records have %d fail/error" % (failing, bad)


def assert_nothing_left(fleet):
    """Tear the fleet down now and check that nothing of it is left (the fixture checks again)."""
    problems = fleet.down()
    assert not problems, "left behind: %s" % "; ".join(problems)
    names = netns._netns_names()
    assert not [n for n in names if n.startswith(fleet.tag)], names
    assert not netns.procs_in_netns([h.ns_id for h in fleet.hosts])
    assert not netns.procs_mentioning(fleet.dir)
    assert all(p.poll() is not None for p in fleet.tracked)


def accepted_logins(host):
    return _read(host.log).count("Accepted publickey for root")


# ---------------------------------------------------------------- the harness itself


def ssh(fleet, host, command, timeout_s=30, master=True):
    """One command on a host over real SSH; master: through a persistent ControlMaster, as Ansible does."""
    argv = [netns.find_tool("ssh"), "-F", "/dev/null", "-i", fleet.key, "-o", "IdentitiesOnly=yes",
            "-o", "StrictHostKeyChecking=no", "-o", "UserKnownHostsFile=/dev/null", "-o", "LogLevel=ERROR",
            "-o", "BatchMode=yes", "-o", "ConnectTimeout=5", "-o", "ServerAliveInterval=2", "-o", "ServerAliveCountMax=2"]
    if master:
        argv += ["-o", "ControlMaster=auto", "-o", "ControlPersist=60", "-o", "ControlPath=%s/%%C" % fleet.control_path_dir]
    else:
        argv += ["-o", "ControlMaster=no", "-o", "ControlPath=none"]
    argv += ["root@%s" % host.ip, command]
    return subprocess.run(argv, stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=timeout_s, check=False)


def test_fleet_hosts_answer_over_ssh_and_kill_host_cuts_one_off(fleet):
    """Each host is its own sshd with its own hostname and IP; kill_host cuts off exactly that one."""
    assert [h.name for h in fleet.hosts] == ["node1", "node2", "node3"]
    assert len(set(h.ip for h in fleet.hosts)) == 3
    for host in fleet.hosts:
        done = ssh(fleet, host, "hostname; echo $SSH_CONNECTION; wc -c < ~/.bashrc; getent hosts node1 node2 node3")
        assert done.returncode == 0, done
        lines = done.stdout.splitlines()
        assert lines[0] == host.name                               # its own UTS namespace
        assert lines[1].split()[2] == host.ip                      # its own sshd, on its own address
        assert lines[2].strip() in ("0", "")                       # a fresh machine: the controller's ~/.bashrc is not run
        assert sorted(line.split()[1] for line in lines[3:]) == ["node1", "node2", "node3"]   # /etc/netns hosts
        assert accepted_logins(host) == 1, _read(host.log)
    assert len(os.listdir(fleet.control_path_dir)) == 3            # masters persist, as Ansible's do

    fleet.kill_host("node3")
    started = time.monotonic()
    dead = ssh(fleet, fleet.host("node3"), "hostname", master=False)      # a fresh connection cannot get in
    assert dead.returncode == 255, dead
    assert time.monotonic() - started < 15
    alive = ssh(fleet, fleet.host("node1"), "hostname")
    assert alive.returncode == 0 and alive.stdout.strip() == "node1", alive
    assert_nothing_left(fleet)


@pytest.mark.fleet(n=1)
def test_a_second_teardown_never_reaches_a_fleet_made_after_the_first(fleet, fleet_prerequisites):
    """A fleet torn down and then torn down again (the test's own check, then its fixture) must not touch a fleet
    another test brought up in between. The kernel gives a freed namespace's inode to the next namespace made, so a
    teardown that looked processes up by the (dev, inode) of a deleted namespace killed a parallel test's sshd
    listeners (CI, stop 42: 'Connection refused' on both hosts of another worker's fleet). A fleet now holds its
    namespaces open until release(), and its ids are never another's."""
    assert fleet.down() == []
    with netns.Fleet(1) as later:
        assert not set(h.ns_id for h in later.hosts) & set(h.ns_id for h in fleet.hosts)
        assert fleet.down() == []
        listener = later.hosts[0].proc
        assert listener.poll() is None, "the earlier fleet's teardown killed the later fleet's sshd"
        done = ssh(later, later.hosts[0], "hostname", master=False)
        assert done.returncode == 0 and done.stdout.strip() == "node1", done


# ---------------------------------------------------------------- the acceptance playbook over SSH


def test_acceptance_over_ssh_reports_every_host(fleet, controller, collection_ready, tmp_path):
    validator = schema_validator(controller)
    report_dir = tmp_path / "reports"
    log = str(tmp_path / "ansible-playbook.log")
    proc = start(fleet, controller.playbook_argv(PLAYBOOK, fleet.inventory),
                 controller.env(fleet, report_dir), log, controller.repo)
    rc = finish(proc, PLAYBOOK_TIMEOUT_S, log)
    assert rc == 0, "ansible-playbook exit %d:\n%s" % (rc, tail(log))

    run_dir, report = load_report(report_dir, log)
    records = records_of(report)
    assert records, "results.json has no records"
    assert_valid_records(records, validator)
    names = sorted(h.name for h in fleet.hosts)
    assert sorted(set(r["host"] for r in records)) == names
    for name in names:
        mine = [r for r in records if r["host"] == name]
        # probed for real over SSH: env_probe records, none of them an error
        assert [r for r in mine if r["check"].startswith("env.") and r["check"] != REACHABLE_CHECK], mine
        assert not [r for r in mine if r["status"] == "error"], [r for r in mine if r["status"] == "error"]
    for host in fleet.hosts:
        assert accepted_logins(host) >= 1, "sshd of %s saw no login" % host.name
    assert_accounts_for(report, records, names, failed=[])
    assert_junit(run_dir, records)
    for name in ("summary.md", "report.html"):
        assert os.path.getsize(os.path.join(run_dir, name)) > 0, name
    assert_nothing_left(fleet)


def test_acceptance_over_ssh_host_killed_mid_run(fleet, controller, collection_ready, tmp_path):
    validator = schema_validator(controller)
    report_dir = tmp_path / "reports"
    log = str(tmp_path / "ansible-playbook.log")
    # node3 holds its first module start: the run is under way on every host when it dies
    gate = fleet.gate("node3", limit_s=GATE_TIMEOUT_S)
    inventory = fleet.write_inventory(path=str(tmp_path / "inventory.ini"),
                                      host_vars={"node3": {"ansible_python_interpreter": gate.interpreter}})
    proc = start(fleet, controller.playbook_argv(PLAYBOOK, inventory),
                 controller.env(fleet, report_dir), log, controller.repo)
    entered = gate.wait_entered(GATE_TIMEOUT_S, alive=lambda: proc.poll() is None)
    assert entered, "node3 never started a module (ansible-playbook rc %s):\n%s" % (proc.poll(), tail(log))
    fleet.kill_host("node3")
    rc = finish(proc, PLAYBOOK_TIMEOUT_S, log)
    assert rc == 4, "ansible-playbook must end with rc 4 (a host unreachable), got %d:\n%s" % (rc, tail(log))

    run_dir, report = load_report(report_dir, log)
    records = records_of(report)
    assert_valid_records(records, validator)
    assert sorted(set(r["host"] for r in records)) == ["node1", "node2", "node3"]
    dead = [r for r in records if r["host"] == "node3"]
    assert dead and all(r["status"] == "error" for r in dead), dead
    assert [r for r in dead if r["check"] == REACHABLE_CHECK and "unreachable" in r["reason"]], dead
    for name in ("node1", "node2"):
        mine = [r for r in records if r["host"] == name]
        assert [r for r in mine if r["check"].startswith("env.") and r["check"] != REACHABLE_CHECK], mine
        assert not [r for r in mine if r["status"] == "error"], mine
    assert_accounts_for(report, records, ["node1", "node2", "node3"], failed=["node3"])
    assert_junit(run_dir, records)
    assert_nothing_left(fleet)


# ---------------------------------------------------------------- one verdict (issue 7)


def test_acceptance_with_gpu_expectations_on_gpu_less_hosts(fleet, controller, collection_ready, tmp_path):
    """The inventory says the hosts have 8 GPUs, the probe finds none: the GPU stage does not run on them
    (before: 27 skip records each from gpu.yml), the GPU checks are required there, and set_stats and
    results.json fail exactly these hosts for gpu.inventory."""
    report_dir = tmp_path / "reports"
    log = str(tmp_path / "ansible-playbook.log")
    inventory = fleet.write_inventory(path=str(tmp_path / "inventory.ini"),
                                      host_vars={"node3": {"aifabric_expect_gpus": "false"}})
    # the GPU stage's Python (a wrapper: another interpreter path than the module's own)
    gpu_python = os.path.join(fleet.dir, "gpu-python")
    with open(gpu_python, "w") as handle:
        handle.write('#!/bin/sh\nexec /usr/bin/python3 "$@"\n')
    os.chmod(gpu_python, 0o755)
    variables = {"acceptance_hosts": fleet.group, "acceptance_expect": {"gpu_count": 8},
                 "acceptance_rdma_stage": False, "gpu_python": gpu_python}
    proc = start(fleet, controller.playbook_argv(PLAYBOOK, inventory, "-e", json.dumps(variables)),
                 controller.env(fleet, report_dir), log, controller.repo)
    rc = finish(proc, PLAYBOOK_TIMEOUT_S, log)
    assert rc == 0, "ansible-playbook exit %d:\n%s" % (rc, tail(log))
    _run_dir, report = load_report(report_dir, log)
    records = records_of(report)
    gpu_stage = [r for r in records if r["check"].startswith(("gpu.gemm", "nccl.")) or r["check"] == "gpu.allreduce"]
    assert gpu_stage == [], gpu_stage
    inventory_records = dict((r["host"], r) for r in records if r["check"] == "gpu.inventory")
    assert sorted(inventory_records) == ["node1", "node2", "node3"]
    assert all(r["status"] == "fail" and "expect.gpu_count is 8" in r["reason"] for r in inventory_records.values())
    nvidia = ["gpu.device", "gpu.gemm_*", "gpu.inventory", "nccl.*"]     # the NVIDIA checks, not the NPU probe (issue 19)
    assert report["run"]["required_checks"] == {"node1": nvidia, "node2": nvidia}
    # the package check probed the Python the GPU stage runs (gpu_python), on every host
    probed = set((r["host"], r["facts"].get("python")) for r in records if r["check"] == "env.package")
    assert set(("node%d" % n, gpu_python) for n in (1, 2, 3)) <= probed, sorted(probed)
    assert sorted(report["summary"]["failed_hosts"]) == ["node1", "node2", "node3"]
    assert_set_stats_agree(report)
    assert_nothing_left(fleet)


@pytest.mark.fleet(n=2)
def test_nccl_standalone_every_host_gets_the_verdict_of_its_collectives(fleet, controller, tmp_path):
    """A standalone nccl.yml run: the launcher's records name both hosts (params.hosts), so the other
    host is not an env.coverage error (before: it was, while set_stats said pass)."""
    from ansible_collections.aifabric.acceptance.tests.integration.fixtures.fake_nccl_tests import fake_perf
    if not os.access("/usr/bin/mpirun", os.X_OK):
        pytest.skip("Open MPI's mpirun is not installed (apt-get install openmpi-bin)")
    bindir = os.path.join(fleet.dir, "nccl-tests")
    os.makedirs(bindir)
    fake_perf.install(bindir, ["all_reduce_perf"])
    inventory = fleet.write_inventory(path=str(tmp_path / "inventory.ini"))
    ssh_args = "-i %s -F /dev/null -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR" % fleet.key
    variables = {
        "nccl_hosts": fleet.group, "nccl_checks": ["nccl"],
        "nccl_options": {"tool_dir": bindir, "ranks_per_node": 1, "collectives": ["all_reduce"],
                         "tcp_if_include": fleet.subnet, "mpirun_mca": {"plm_rsh_args": ssh_args},
                         "mpirun_extra_args": ["--oversubscribe"]},
        "nccl_env": {"FAKE_NCCL_LOG": os.path.join(fleet.dir, "fake_nccl.log")},
    }
    report_dir = tmp_path / "report"
    log = str(tmp_path / "ansible.log")
    proc = start(fleet, controller.playbook_argv("playbooks/nccl.yml", inventory, "-e", json.dumps(variables)),
                 controller.env(fleet, report_dir), log, controller.repo)
    assert finish(proc, 240, log) == 0, tail(log)
    _run_dir, report = load_report(report_dir, log)
    records = records_of(report)
    assert_valid_records(records, schema_validator(controller))
    launcher, other = fleet.hosts[0].name, fleet.hosts[1].name
    nccl = [r for r in records if r["check"] == "nccl.all_reduce"]
    assert [(r["host"], r["status"], r["params"]["hosts"]) for r in nccl] == [(launcher, "pass", [launcher, other])]
    coverage = [r for r in records if r["check"] == "env.coverage"]
    assert [(r["host"], r["status"]) for r in coverage] == [(other, "pass")], coverage
    assert "launched from %s" % launcher in coverage[0]["reason"]
    assert dict((h["host"], h["status"]) for h in report["summary"]["hosts"]) == {launcher: "pass", other: "pass"}
    assert_set_stats_agree(report)
    assert_nothing_left(fleet)
