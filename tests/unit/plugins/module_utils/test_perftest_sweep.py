# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The per-host sweep (issue 13): schedule split, ports per step, TCP state, the client retry race."""

from __future__ import annotations

import functools
import itertools
import json
import os
import sys
import time

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.aifabric.acceptance.plugins.filter.pairings import pairings
from ansible_collections.aifabric.acceptance.plugins.filter.sweep_schedule import sweep_schedule
from ansible_collections.aifabric.acceptance.plugins.module_utils import perftest_clients, perftest_sweep, state_child
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import AcceptanceError
from ansible_collections.aifabric.acceptance.tests.unit.helpers import parser_fixture

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = parser_fixture("perftest")


@pytest.mark.parametrize("n", [2, 5, 8])
def test_sweep_schedule_gives_every_host_its_rounds_in_order(n):
    hosts = ["h%02d" % i for i in range(n)]
    rounds = pairings(hosts, mode="all")
    out = sweep_schedule(rounds, tests=["ib_write_bw", "ib_write_lat"])
    steps = out.pop("_steps")
    out.pop("_step_s")
    assert len(steps) == 2 * len(rounds)
    assert [s[0] for s in steps] == ["ib_write_bw"] * len(rounds) + ["ib_write_lat"] * len(rounds)
    seen = {}
    for host, entries in out.items():
        assert [e[0] for e in entries] == sorted(e[0] for e in entries)          # in step order
        assert len(set(e[0] for e in entries)) == len(entries)                  # one role per step
        for step, test, rnd, role, peer in entries:
            assert steps[step][0] == test and steps[step][1] == rnd
            seen.setdefault((step, role), set()).add((host, peer))
    # each step: the server's view and the client's view are the same pairs, and they are the round's pairs
    for step, (test, rnd, count) in enumerate(steps):
        servers = seen.get((step, "server"), set())
        clients = set((b, a) for a, b in seen.get((step, "client"), set()))
        assert servers == clients == set(tuple(p) for p in rounds[rnd]) and len(servers) == count
    # every unordered pair once per test
    pairs = [frozenset(p) for r in rounds for p in r]
    assert sorted(map(sorted, pairs)) == sorted(map(sorted, (frozenset(c) for c in itertools.combinations(hosts, 2))))


def test_sweep_schedule_refuses_a_round_that_is_not_a_matching():
    with pytest.raises(AnsibleFilterError, match="not a matching"):
        sweep_schedule([[["a", "b"], ["b", "c"]]])
    with pytest.raises(AnsibleFilterError, match="not \\[server, client\\]"):
        sweep_schedule([[["a"]]])


def test_sweep_schedule_numbers_a_second_sweep_after_the_first():
    out = sweep_schedule([[["a", "b"]]], first_step=7)
    assert out["a"] == [[7, "ib_write_bw", 0, "server", "b"]]
    assert out["b"] == [[7, "ib_write_bw", 0, "client", "a"]]


def test_sweep_schedule_gives_the_longest_step_from_the_options_and_the_module_defaults():
    """_step_s (the sweep tasks' time limits count in it): the options' limits where given, else perftest_sweep's own
    defaults (read from the module: timeout_s 120, connect_timeout_s 60, collect_timeout_s 60), plus the margin."""
    from ansible_collections.aifabric.acceptance.plugins.modules.perftest_sweep import argument_spec
    spec = argument_spec()
    defaults = sum(spec[name]["default"] for name in ("timeout_s", "connect_timeout_s", "collect_timeout_s"))
    assert defaults == 240
    assert sweep_schedule([[["a", "b"]]])["_step_s"] == defaults + 30
    assert sweep_schedule([[["a", "b"]]], perftest={"timeout_s": 10, "size": 4096})["_step_s"] == 10 + 60 + 60 + 30
    assert sweep_schedule([[["a", "b"]]], perftest={"timeout_s": 5, "connect_timeout_s": 6,
                                                    "collect_timeout_s": "7"})["_step_s"] == 5 + 6 + 7 + 30
    with pytest.raises(AnsibleFilterError, match="perftest.timeout_s must be a number"):
        sweep_schedule([[["a", "b"]]], perftest={"timeout_s": "soon"})
    with pytest.raises(AnsibleFilterError, match="must be a mapping"):
        sweep_schedule([[["a", "b"]]], perftest=["timeout_s"])


def test_step_ports_differ_between_neighbouring_steps():
    ports = [perftest_sweep.step_port(18515, step, 32, 2) for step in range(64)]
    for step in range(63):
        assert abs(ports[step + 1] - ports[step]) >= 2            # two rails: no overlap with the next step
    assert len(set(ports)) == 32 and ports[0] == ports[32] == 18515
    with pytest.raises(AcceptanceError, match="above 65535"):
        perftest_sweep.step_port(65530, 5, 32, 2)


def _proc(tmp_path, lines):
    net = tmp_path / "net"
    net.mkdir(exist_ok=True)
    header = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
    (net / "tcp").write_text(header + "".join(lines))
    return str(tmp_path)


def test_tcp_established_reads_the_state_of_the_port(tmp_path):
    listen = "   0: 00000000:4853 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 1\n"
    established = "   1: 0AD50102:4853 0AD50103:9C40 01 00000000:00000000 00:00000000 00000000     0        0 2\n"
    assert perftest_sweep.tcp_established(18515, proc=_proc(tmp_path, [listen])) is False
    assert perftest_sweep.tcp_established(18515, proc=_proc(tmp_path, [listen, established])) is True
    assert perftest_sweep.tcp_established(18516, proc=_proc(tmp_path, [listen, established])) is False
    assert perftest_sweep.tcp_established(18515, proc=str(tmp_path / "nothing")) is None
    # the same reader answers "listening" (the ready notice waits for it)
    listening = functools.partial(perftest_sweep.tcp_ports_in_state, state=perftest_sweep.TCP_LISTEN)
    assert listening([18515], proc=_proc(tmp_path, [established])) == set()
    assert listening([18515], proc=_proc(tmp_path, [listen])) == {18515}
    assert listening([18516], proc=_proc(tmp_path, [listen])) == set()
    assert listening([18515], proc=str(tmp_path / "nothing")) is None


def test_one_read_of_the_tcp_tables_answers_every_port(tmp_path, monkeypatch):
    """The servers of every rail are asked about in one read of each table (the kernel walks its whole socket hash
    for each), and tcp6 is read only when tcp did not hold them all."""
    line = "   %d: %s:%04X %s %s 00000000:00000000 00:00000000 00000000     0        0 %d\n"
    v4 = [line % (i, "0AD50102", 18515 + i, "0AD50103:9C40", "01", i) for i in range(3)]
    v6 = [line % (9, "0" * 32, 18525, "0" * 32 + ":9C41", "01", 9),
          line % (10, "0" * 32, 18526, "0" * 32 + ":0000", "0A", 10)]
    proc = _proc(tmp_path, v4)
    (tmp_path / "net" / "tcp6").write_text("header\n" + "".join(v6))
    reads = []
    real_open = open

    def counting_open(path, *args, **kwargs):
        reads.append(os.path.basename(str(path)))
        return real_open(path, *args, **kwargs)
    monkeypatch.setattr(perftest_sweep, "open", counting_open, raising=False)
    state = perftest_sweep.TCP_ESTABLISHED
    # every port in tcp: tcp6 is not read
    assert perftest_sweep.tcp_ports_in_state([18515, 18516, 18517], state, proc) == {18515, 18516, 18517}
    assert reads == ["tcp"]
    # one in tcp6 (an IPv6 socket), one nowhere, one listening only: one read of each table for all of them
    del reads[:]
    assert perftest_sweep.tcp_ports_in_state([18515, 18525, 18526, 18600], state, proc) == {18515, 18525}
    assert reads == ["tcp", "tcp6"]
    # tcp unreadable, tcp6 readable: tcp6 answers
    (tmp_path / "net" / "tcp").unlink()
    assert perftest_sweep.tcp_ports_in_state([18525, 18515], state, proc) == {18525}


def _replaying(text, rc, starts):
    """A client start that runs a real process printing ``text`` (a captured client output) and exiting with ``rc``,
    as the sweep's children run (state_child.start)."""
    code = "import sys; sys.stdout.write(%r); sys.exit(%d)" % (text, rc)

    def start(argv, timeout_s, state_dir, env=None):
        os.makedirs(os.path.dirname(state_dir), exist_ok=True)
        handle = state_child.start([sys.executable, "-c", code], timeout_s, state_dir, env=env)
        starts.append(handle)
        return handle
    return start


def test_a_client_that_ended_gives_its_text_and_exit_code(tmp_path):
    """A client's exit code is its own wait status (the runner's child): read once it ended, never taken as killed
    (issue 13: a supervisor's rc file that came late was)."""
    text = open(os.path.join(FIXTURES, "amd-ionic-ib-write-bw-client-bidir-q4-a-gbits.txt")).read()
    starts = []
    job = perftest_clients.Job(0, "mlx5_0", 18515, ["ib_write_bw", "10.0.0.2"], str(tmp_path / "c"), {})
    perftest_clients.run_clients([job], 10, 5, 0.1, start=_replaying(text, 0, starts), poll_s=0.02)
    assert job.result == (text, 0, False) and job.attempts == 1 and len(starts) == 1


def test_retries_stop_when_the_server_host_is_declared_dead(tmp_path):
    refused = "Couldn't connect to 10.0.0.2:18515\nUnable to open file descriptor for socket connection " \
              "Unable to init the socket connection\n"
    starts = []
    job = perftest_clients.Job(0, "mlx5_0", 18515, ["ib_write_bw", "10.0.0.2"], str(tmp_path / "c"), {})
    perftest_clients.run_clients([job], 10, 600, 0.0, start=_replaying(refused, 1, starts), poll_s=0.0,
                                 give_up=lambda: len(starts) >= 3)
    assert len(starts) == 3 and job.result[1] == 1


def _server_host(tmp_path):
    """A runner's records side, as a host whose servers served steps (no process: judge_peer and lost_clients)."""
    runner = object.__new__(perftest_sweep.Sweep)
    runner.host, runner.here, runner.governor_text = "node4", str(tmp_path), "performance"
    runner.failing = runner.pairs_done = 0
    runner.dead, runner.served, runner.records = {}, [], []
    return runner


def _served(runner, peer):
    params = {"test": "ib_write_bw", "peer_name": peer}
    plan = [(0, "mlx5_0", 18515, None, {"port": 1}), (1, "mlx5_1", 18516, None, {"port": 1})]
    jobs = [object(), object()]
    runner.judge_peer(jobs, [], dict((id(job), True) for job in jobs), set(), params, plan)    # its client came


def test_a_client_whose_host_is_declared_unreachable_after_it_came_gets_its_pair_records_on_its_behalf(tmp_path):
    """node5's client came to node4's servers, then node5 went silent and the controller declared it unreachable:
    node5's own client records are never collected, so node4 writes them on its behalf (one per rail, the pair's
    edge as the client records it) - before, that pair was in no client record and attribution could not see it
    (a timing-dependent hole: CI's fault test lost the pair node4-node5 once). A peer that this runner alone stopped
    waiting for ("never connected") and a peer still alive get none: their own records come."""
    runner = _server_host(tmp_path)
    for peer in ("node5", "node6", "node3"):
        _served(runner, peer)
    runner.dead["node6"] = "never connected to node4's servers earlier in the sweep"      # this runner's own word
    with open(str(tmp_path / perftest_sweep.DEAD), "w") as handle:
        json.dump({"node5": "was declared unreachable by the controller (2 failed polls in a row)"}, handle)
    out = runner.lost_clients()
    assert [(r["check"], r["host"], r["peer"], r["target"], r["status"]) for r in out] == [
        ("rdma.ib_write_bw", "node5", "node4", "mlx5_0", "error"), ("rdma.ib_write_bw", "node5", "node4", "mlx5_1", "error")]
    assert out[0]["reason"] == ("not measured: node5 (the client) was declared unreachable by the controller (2 failed "
                                "polls in a row); its own record is lost with it")
    assert out[0]["facts"]["side"] == "client" and runner.failing == 0 and runner.pairs_done == 0
    assert runner.lost_clients() == []          # each step once


def test_a_server_step_whose_client_never_came_is_not_kept_for_lost_clients(tmp_path):
    runner = _server_host(tmp_path)
    params = {"test": "ib_write_bw", "peer_name": "node5"}
    jobs = [object()]
    runner.judge_peer(jobs, jobs, {id(jobs[0]): False}, set(), params, [(0, "mlx5_0", 18515, None, {})])   # abandoned
    assert runner.served == [] and [r["host"] for r in runner.records] == ["node5"]


def _ended_server(tmp_path, name, code, timeout_s):
    """A server step's job whose process (a real child, as the runner starts them) has already ended."""
    job = perftest_clients.Job(0, "mlx5_0", 18515, ["ib_write_bw"], str(tmp_path / name), {})
    job.handle = state_child.start([sys.executable, "-c", code], timeout_s, job.state_dir)
    job.handle["child"].wait(timeout_s=30)
    return job


@pytest.mark.parametrize("code, timeout_s, came, ran_out", [
    ("pass", 30, True, False),                              # its client came and went between two looks
    ("import time; time.sleep(30)", 0.3, False, True),      # nobody came: the server ran to its timeout
    ("import sys; sys.exit(1)", 30, False, False),          # the server failed on its own (a bad device)
])
def test_what_a_server_step_says_of_its_client_when_no_look_saw_the_connection(
        tmp_path, monkeypatch, code, timeout_s, came, ran_out):
    """A test shorter than one look at the TCP table (0.3 s on the fake, the server's runner starved on a loaded
    host: CI failed on it): the server's clean exit says its client came, so the pair's client is not declared
    "never connected" and its next round is run, not skipped. Only servers that ran to their timeout with no
    client say the peer never came; a server that failed on its own says nothing of the peer."""
    monkeypatch.setattr(perftest_sweep, "tcp_ports_in_state", lambda ports, state, proc="/proc": set())
    runner = _server_host(tmp_path)
    for name in ("check_lease", "read_dead", "stop_watch"):
        setattr(runner, name, lambda: None)
    runner.watch_position = runner.peer_behind = lambda peer, step: False
    job = _ended_server(tmp_path, "s", code, timeout_s)
    connected, abandoned, ended_by_timeout = runner.wait_servers([job], "node5", [], 0)
    assert (connected[id(job)], abandoned, bool(ended_by_timeout)) == (came, [], ran_out)
    params = {"test": "ib_write_bw", "peer_name": "node5"}
    runner.judge_peer([job], abandoned, connected, ended_by_timeout, params, [(0, "mlx5_0", 18515, None, {})])
    assert ("node5" in runner.dead) == ran_out and len(runner.served) == int(came) and runner.records == []


def test_a_server_step_reads_the_tcp_tables_twice_a_second_while_its_client_is_late(tmp_path, monkeypatch):
    """Waiting for a client that does not come (a late or dead partner: minutes), the runner reads the kernel's TCP
    tables with its look at the dead list, twice a second - not every POLL_S (each read walks every socket of the
    host: a partner of a dead host kept 13% of a core busy); the server's own end is still seen at once."""
    reads = []
    monkeypatch.setattr(perftest_sweep, "tcp_ports_in_state",
                        lambda ports, state, proc="/proc": reads.append(time.monotonic()) or set())
    runner = _server_host(tmp_path)
    for name in ("check_lease", "read_dead", "stop_watch"):
        setattr(runner, name, lambda: None)
    runner.watch_position = runner.peer_behind = lambda peer, step: False
    job = perftest_clients.Job(0, "mlx5_0", 18515, ["ib_write_bw"], str(tmp_path / "s"), {})
    job.handle = state_child.start([sys.executable, "-c", "import time; time.sleep(30)"], 1.6, job.state_dir)
    started = time.monotonic()
    connected, abandoned, ran_out = runner.wait_servers([job], "node5", [], 0)
    waited = time.monotonic() - started
    assert (connected[id(job)], abandoned, ran_out) == (False, [], {id(job)})
    assert 1 <= len(reads) <= waited / 0.5 + 1, (len(reads), waited)
    assert all(b - a >= 0.45 for a, b in zip(reads, reads[1:])), reads
