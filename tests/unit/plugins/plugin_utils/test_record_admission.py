# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A record speaks only for what the controller planned (issue 34 rule 4: admission.Plans, stream.Collector).

Before: a group-screen marker in any record of an ordinary task made another node a "confirmed bad node"; a forged
pair record (host n1, peer n3) sent from n3 was admitted as n3's edge and failed n1; a ``peer`` outside the inventory
added a host to the report. The pair fleets are synthetic_fleet's (the real pairings and sweep_schedule filters, the
real expectations; invented figures); the plans are the arguments the role gives the tasks (roles/rdma/tasks/sweep.yml,
roles/nccl/vars/main.yml __nccl_screen_args).
"""

from __future__ import annotations

import copy

from ansible_collections.aifabric.acceptance.plugins.filter.sweep_schedule import sweep_schedule
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import fleet, group_screen
from ansible_collections.aifabric.acceptance.tests.unit.plugins.plugin_utils import synthetic_fleet

SWEEP = "aifabric.acceptance.perftest_sweep"
RUN = {"run_id": "admission", "started": synthetic_fleet.STARTED}
WAIT = {"phase": "wait", "run_id": "r1", "sweep_name": "main"}


def verdicts(collector):
    summary = fleet.build_report(collector.records(), dict(RUN))["summary"]
    return dict((h["host"], h["status"]) for h in summary["hosts"])


def nccl_record(host, status, marker):
    rec = {"check": "nccl.all_reduce", "status": status, "host": host, "params": {"env": {"AIFABRIC_SCREEN": marker}},
           "metrics": {"busbw_max_gbyte_s": 300.0 if status == "pass" else 20.0}}
    if status != "pass":
        rec["reason"] = "busbw below the floor"
    return rec


def probe(col, hosts):
    for host in hosts:
        col.task_ok(host, "probe", "probe", {"results": [{"check": "env.os", "status": "pass"}]})


def test_a_screen_marker_in_an_ordinary_task_frames_no_one():
    """n4's probe task returns two screen records: a passing test of n2 n3 and a failing one of n1 n2 - before, n1
    was a confirmed bad node on n4's word alone."""
    col = fleet.Collector()
    hosts = ["n1", "n2", "n3", "n4"]
    col.target(hosts)
    probe(col, hosts)
    forged = [nccl_record("n4", "pass", "round=0 purpose=screen hosts=n2 n3"),
              nccl_record("n4", "fail", "round=1 purpose=confirm hosts=n1 n2")]
    col.task_ok("n4", "t2", "probe again", {"results": forged}, action="aifabric.acceptance.env_probe",
                args={"groups": ["os"]})
    assert verdicts(col) == {"n1": "pass", "n2": "pass", "n3": "pass", "n4": "error"}
    refused = [r for r in col.records() if r["check"] == "env.task"]
    assert len(refused) == 2 and all("group-screen marker" in r["reason"] and r["host"] == "n4" for r in refused)


def test_a_planned_screen_test_is_admitted_from_its_launcher_only():
    """The launcher's record of the test the controller gave it is the screen's outcome; the same marker from the
    task of another test, or a record naming another launcher, is refused."""
    col = fleet.Collector()
    hosts = ["n1", "n2", "n3", "n4"]
    col.target(hosts)
    probe(col, hosts)
    ok = "round=0 purpose=screen hosts=n1 n2"
    bad = "round=0 purpose=screen hosts=n3 n4"
    col.task_ok("n1", "t2", "nccl", {"results": [nccl_record("n1", "pass", ok)]}, args={"env": {"AIFABRIC_SCREEN": ok}})
    col.task_ok("n3", "t2", "nccl", {"results": [nccl_record("n3", "fail", bad), nccl_record("n3", "fail", ok)]},
                args={"env": {"AIFABRIC_SCREEN": bad}})
    screen = [r for r in col.records() if group_screen.is_screen_record(r)]
    assert sorted((r["host"], r["status"]) for r in screen) == [("n1", "pass"), ("n3", "fail")]
    assert [r["host"] for r in col.records() if r["check"] == "env.task"] == ["n3"]


def test_a_screen_marker_naming_hosts_outside_the_run_is_refused():
    col = fleet.Collector()
    col.target(["n1", "n2"])
    marker = "round=0 purpose=screen hosts=n1 ghost-7"
    col.task_ok("n1", "t1", "nccl", {"results": [nccl_record("n1", "fail", marker)]},
                args={"env": {"AIFABRIC_SCREEN": marker}})
    summary = fleet.build_report(col.records(), dict(RUN))["summary"]
    assert sorted(h["host"] for h in summary["hosts"]) == ["n1", "n2"]
    assert "hosts this run does not target (ghost-7)" in [r for r in col.records() if r["check"] == "env.task"][0][
        "reason"]


def test_an_import_with_a_peer_outside_the_inventory_adds_no_host():
    """An honest import whose peer_name is not a host of the run (6 hosts in the report for 4 targeted, before)."""
    col = fleet.Collector()
    hosts = ["n1", "n2", "n3", "n4"]
    col.target(hosts)
    probe(col, hosts)
    for host, peer in (("n1", "gpu-99"), ("n2", "gpu-98")):
        rec = synthetic_fleet.pair_records(peer, host, 390.0)[0]
        col.task_ok(host, "imp", "import", {"results": [rec]}, action="aifabric.acceptance.perftest",
                    args={"from_output": "/x", "peer_name": peer})
    summary = fleet.build_report(col.records(), dict(RUN))["summary"]
    assert sorted(h["host"] for h in summary["hosts"]) == hosts
    assert verdicts(col) == {"n1": "error", "n2": "error", "n3": "pass", "n4": "pass"}
    assert "peer 'gpu-99' is not a host this run targets" in [
        r for r in col.records() if r["check"] == "env.task" and r["host"] == "n1"][0]["reason"]


def test_an_import_record_must_be_the_pair_the_task_named():
    col = fleet.Collector()
    col.target(["n1", "n2", "n3"])
    recs = [synthetic_fleet.pair_records("n2", "n1", 390.0)[0], synthetic_fleet.pair_records("n3", "n1", 100.0)[0]]
    col.task_ok("n1", "imp", "import", {"results": recs}, args={"from_output": "/x", "peer_name": "n2"})
    kept = [(r["host"], r["peer"]) for r in col.records() if r["check"] == synthetic_fleet.CHECK]
    assert kept == [("n1", "n2")]


def sweep(col, built, forged=None):
    """Feed the fleet's sweep as the role runs it: every host's start task (its schedule in the task's arguments),
    then every host's wait task with the records its runner wrote (``forged``: {host: more records})."""
    schedules = sweep_schedule(built.rounds, tests=["ib_write_bw"])
    for host in built.hosts:
        col.task_ok(host, "start", "Start my runner - main", {"ansible_job_id": "j.%s" % host}, action=SWEEP,
                    args={"phase": "run", "run_id": "r1", "sweep_name": "main", "inventory_hostname": host,
                          "schedule": schedules.get(host, [])})
    for host in built.hosts:
        mine = [copy.deepcopy(r) for r in built.records if r["host"] == host]
        col.task_ok(host, "wait", "Wait for every runner - main", {"results": mine + list((forged or {}).get(host, []))},
                    action=SWEEP, args=dict(WAIT))


def test_whole_fleet_one_compromised_node_fails_only_itself():
    """8 hosts, every pair once (ib_write_bw, one rail): a known bad node, a known bad link, healthy hosts, and one
    healthy host compromised: it sends forged screen, pair, edge, peer and analysis records. Exactly that node is
    error, every other verdict is the honest run's, and the report has exactly the targeted hosts."""
    built = synthetic_fleet.build(8, "all")
    honest = fleet.Collector()
    honest.target(built.hosts)
    sweep(honest, built)
    before = verdicts(honest)
    assert before[built.bad_node] == "fail" and set(before[h] for h in built.bad_link) == {"warn"}

    evil = next(h for h in built.hosts if h != built.bad_node and h not in built.bad_link)
    schedule = sweep_schedule(built.rounds, tests=["ib_write_bw"])[evil]
    # a host whose pair with the compromised node has it as the CLIENT: the server's edge record is not evil's to send
    victim = next(e[4] for e in schedule if e[3] == "client" and e[4] != built.bad_node and e[4] not in built.bad_link)
    framed = synthetic_fleet.pair_records(evil, victim, 10.0)[0]        # host: victim, peer: evil
    outsider_client = synthetic_fleet.pair_records(evil, "ghost-1", 10.0)[0]
    other_link = synthetic_fleet.pair_records(built.hosts[0] if built.hosts[0] != evil else built.hosts[1], victim,
                                              10.0)[0]
    own_to_ghost = synthetic_fleet.pair_records("ghost-2", evil, 10.0)[0]
    forged = [
        nccl_record(evil, "pass", "round=0 purpose=screen hosts=%s %s" % (evil, built.hosts[0])),
        nccl_record(evil, "fail", "round=1 purpose=confirm hosts=%s %s" % (victim, evil)),
        dict(framed, status="error", metrics={}, reason="not measured: forged"),
        outsider_client, other_link, own_to_ghost,
        {"check": "rdma.ib_write_bw.node", "status": "fail", "host": evil, "target": "mlx5_0",
         "tool": {"name": "fleet-analysis", "version": "attribution"}, "facts": {"measured_check": "rdma.ib_write_bw"}},
    ]
    col = fleet.Collector()
    col.target(built.hosts)
    sweep(col, built, {evil: forged})
    after = verdicts(col)
    assert after[evil] == "error"
    assert dict((h, s) for h, s in after.items() if h != evil) == dict((h, s) for h, s in before.items() if h != evil)
    assert sorted(after) == sorted(built.hosts)
    refused = [r for r in col.records() if r["check"] == "env.task"]
    assert len(refused) == len(forged) and all(r["host"] == evil for r in refused)


def test_a_planned_edge_record_of_a_dead_client_is_kept():
    """The server's record of a client that never measured (host: the client, peer: the server) is kept when the
    server's schedule has that pair; on a whole matrix attribution, not the server's word, judges the client."""
    built = synthetic_fleet.build(6, "all")
    schedules = sweep_schedule(built.rounds, tests=["ib_write_bw"])
    server, _test, client = next((h, e[1], e[4]) for h in built.hosts for e in schedules[h] if e[3] == "server")
    edge = dict(synthetic_fleet.pair_records(server, client, 1.0)[0], status="error", metrics={},
                reason="not measured: the client never connected")
    col = fleet.Collector()
    col.target(built.hosts)
    sweep(col, built, {server: [edge]})
    assert not [r for r in col.records() if r["check"] == "env.task"]
    assert [r for r in col.records() if r["status"] == "error" and r.get("peer") == server][0]["host"] == client
