# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/nccl.yml over real SSH on network-namespace hosts: real Open MPI, stand-in nccl-tests.

The stand-in (fixtures/fake_nccl_tests/fake_perf.py, installed as all_reduce_perf and
alltoall_perf) parses nccl-tests' flags, logs argv/rank/host/NCCL_* per rank, and on rank 0
prints the REAL captured output of the same collective (and writes the real -J document).
Real mpirun, started by the nccl_test module on the first host, starts its daemons on the
other host over SSH, so this proves the multi-node command line end to end: hostfile from
the inventory group, -np = hosts x ranks_per_node, --allow-run-as-root, -x for the NCCL
environment, --mca passthrough, btl/oob_tcp_if_include, NCCL_TESTS_SPLIT and -J handling.
"""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.aifabric.acceptance.tests.integration.fixtures.fake_nccl_tests import fake_perf
from ansible_collections.aifabric.acceptance.tests.integration.test_ssh_fleet import (
    assert_nothing_left, assert_valid_records, finish, load_report, records_of, schema_validator, start, tail)


@pytest.mark.fleet(n=2)
def test_nccl_playbook_across_two_hosts(fleet, controller, tmp_path):
    if not os.access("/usr/bin/mpirun", os.X_OK):
        pytest.skip("Open MPI's mpirun is not installed (apt-get install openmpi-bin)")
    bindir = os.path.join(fleet.dir, "nccl-tests")
    os.makedirs(bindir)
    fake_perf.install(bindir, ["all_reduce_perf", "alltoall_perf"])
    log = os.path.join(fleet.dir, "fake_nccl.log")
    inventory = fleet.write_inventory(path=str(tmp_path / "inventory.ini"))
    ssh = "-i %s -F /dev/null -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR" % fleet.key
    variables = {
        "nccl_hosts": fleet.group,
        "nccl_options": {                       # the nccl_test module's options, passed whole
            "tool_dir": bindir,
            "ranks_per_node": 2,
            "collectives": ["all_reduce", "alltoall"],
            "socket_ifname": "eth0",
            "tcp_if_include": fleet.subnet,
            "mpirun_mca": {"plm_rsh_args": ssh},
            "mpirun_extra_args": ["--oversubscribe"],
            "split": "MOD 2",
        },
        "nccl_env": {"NCCL_NVLS_ENABLE": "0", "NCCL_IB_HCA": "=mlx5_0", "FAKE_NCCL_LOG": log},
        "nccl_checks": ["nccl"],
    }
    report_dir = tmp_path / "report"
    out = str(tmp_path / "ansible.log")
    proc = start(fleet, controller.playbook_argv("playbooks/nccl.yml", inventory, "-e", json.dumps(variables)),
                 controller.env(fleet, report_dir), out, controller.repo)
    assert finish(proc, 240, out) == 0, tail(out)
    _run_dir, report = load_report(report_dir, out)
    records = [r for r in records_of(report) if r["check"].startswith("nccl.")]
    assert_valid_records(records, schema_validator(controller))
    by_check = dict((r["check"], r) for r in records)
    assert sorted(by_check) == ["nccl.all_reduce", "nccl.alltoall"]
    first = fleet.hosts[0].name
    for rec in by_check.values():
        assert rec["status"] == "pass", rec
        assert rec["host"] == first                      # the launcher's record
        assert rec["facts"]["launch"] == "mpirun" and rec["facts"]["split"] == "MOD 2"
        assert rec["facts"]["output_format"] == "json" and rec["facts"]["nodes"] == 2
        argv = rec["params"]["argv"]
        assert argv[:4] == ["/usr/bin/mpirun", "--allow-run-as-root", "-np", "4"]
        assert "--hostfile" in argv and "NCCL_TESTS_SPLIT=MOD 2" in argv and "NCCL_SOCKET_IFNAME=eth0" in argv
        assert argv[argv.index("btl_tcp_if_include") + 1] == fleet.subnet
    assert by_check["nccl.all_reduce"]["metrics"]["busbw_max_gbyte_s"] == 345.68839
    with open(log) as handle:
        ranks = [json.loads(line) for line in handle if line.strip()]
    assert len(ranks) == 8                               # 2 collectives x 4 ranks
    assert sorted(set(r["hostname"] for r in ranks)) == sorted(h.name for h in fleet.hosts)
    for rank in ranks:
        assert rank["size"] == 4
        assert rank["env"]["NCCL_TESTS_SPLIT"] == "MOD 2" and rank["env"]["NCCL_IB_HCA"] == "=mlx5_0"
        assert rank["argv"][rank["argv"].index("-g") + 1] == "1" and "-J" in rank["argv"]


@pytest.mark.fleet(n=2)
def test_nccl_role_runs_the_probe_over_the_same_launch(fleet, controller, tmp_path):
    """The role's default checks (nccl and allreduce_probe): nccl_options' launch options launch both runs, the
    probe's worker is staged at nccl_allreduce_probe's worker_dir on every host first; these hosts have no PyTorch
    with CUDA, so the probe gives the skip record that says so (and the run still passes)."""
    if not os.access("/usr/bin/mpirun", os.X_OK):
        pytest.skip("Open MPI's mpirun is not installed (apt-get install openmpi-bin)")
    bindir = os.path.join(fleet.dir, "nccl-tests")
    os.makedirs(bindir)
    fake_perf.install(bindir, ["all_reduce_perf"])
    worker_dir = os.path.join(fleet.dir, "worker")
    inventory = fleet.write_inventory(path=str(tmp_path / "inventory.ini"))
    ssh = "-i %s -F /dev/null -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR" % fleet.key
    variables = {
        "nccl_hosts": fleet.group,
        "nccl_options": {"tool_dir": bindir, "ranks_per_node": 1, "collectives": ["all_reduce"],
                         "tcp_if_include": fleet.subnet, "mpirun_mca": {"plm_rsh_args": ssh},
                         "mpirun_extra_args": ["--oversubscribe"]},
        "nccl_allreduce_probe": {"worker_dir": worker_dir, "max_bytes": "1M"},
        "nccl_python": "/nonexistent/python3",
        "nccl_env": {"FAKE_NCCL_LOG": os.path.join(fleet.dir, "fake_nccl.log")},
    }
    report_dir = tmp_path / "report"
    out = str(tmp_path / "ansible.log")
    proc = start(fleet, controller.playbook_argv("playbooks/nccl.yml", inventory, "-e", json.dumps(variables)),
                 controller.env(fleet, report_dir), out, controller.repo)
    assert finish(proc, 240, out) == 0, tail(out)
    _run_dir, report = load_report(report_dir, out)
    records = [r for r in records_of(report) if r["check"].startswith("nccl.")]
    assert_valid_records(records, schema_validator(controller))
    by_check = dict((r["check"], r) for r in records)
    assert sorted(by_check) == ["nccl.all_reduce", "nccl.torch_all_reduce"]
    first = fleet.hosts[0].name
    assert by_check["nccl.all_reduce"]["status"] == "pass" and by_check["nccl.all_reduce"]["host"] == first
    probe = by_check["nccl.torch_all_reduce"]
    assert probe["status"] == "skip" and probe["host"] == first
    assert "no Python /nonexistent/python3" in probe["reason"]
    assert os.path.isfile(os.path.join(worker_dir, "aifabric_torch_worker.py"))     # staged first
    with open(out) as handle:
        log = handle.read()
    assert "Stage the all-reduce probe's worker" in log and "Stop whatever of the run is left" in log
    assert_nothing_left(fleet)
