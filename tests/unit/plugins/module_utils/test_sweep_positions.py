# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Runners tell each other their position directly (perftest_sweep: PositionServer, ask_position, PositionWatch,
LagBound), over real TCP sockets; and the defect it fixes: a client whose server's host is only late (busy with an
earlier step, the controller having no fresh position of it) gave up after connect_timeout_s - a healthy pair ended
"Couldn't connect"."""

from __future__ import annotations

import json
import socket
import threading
import time

import pytest

from ansible_collections.aifabric.acceptance.plugins.module_utils import perftest_sweep
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import AcceptanceError
from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules.test_perftest_module import (  # noqa: F401 pylint: disable=unused-import
    base, ended, events, exits, fake, free_port, only_answers_left, run_dir, start_runner, status)

WHO = {"run": "r1", "label": "main", "host": "node2"}
# a sweep on this machine alone: every runner on its own loopback address (listen_address binds it)
ON_ONE_MACHINE = {"node1": "127.0.0.2", "node2": "127.0.0.1"}


class Where(object):
    """What a runner's position answers say, changed by the test."""

    def __init__(self, step=None, finished=False):
        self.value = {"step": step, "finished": finished}

    def __call__(self):
        return self.value


@pytest.fixture
def server():
    where = Where(step=3)
    srv = perftest_sweep.PositionServer(dict(WHO), where).open("127.0.0.1", free_port(), ON_ONE_MACHINE)
    yield srv, where
    srv.close()


def raw_question(port, data, timeout=2.0):
    """Send ``data`` and read whatever comes back until the server closes (a reset: it closed with the rest of the
    question unread)."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as conn:
        conn.sendall(data)
        out = b""
        while True:
            try:
                chunk = conn.recv(4096)
            except ConnectionResetError:
                return out
            if not chunk:
                return out
            out += chunk


def test_a_runner_answers_its_step_and_follows_it(server):
    srv, where = server
    port = srv.sock.getsockname()[1]
    assert perftest_sweep.ask_position("127.0.0.1", port, WHO) == {"step": 3, "finished": False}
    where.value = {"step": 7, "finished": False}
    assert perftest_sweep.ask_position("127.0.0.1", port, WHO) == {"step": 7, "finished": False}
    where.value = {"step": None, "finished": True}
    assert perftest_sweep.ask_position("127.0.0.1", port, WHO) == {"step": None, "finished": True}


def test_it_binds_the_address_its_peers_reach_it_on_only(server):
    srv, _where = server
    assert srv.sock.getsockname()[0] == "127.0.0.1" and srv.bound == "127.0.0.1"
    port = srv.sock.getsockname()[1]
    # another loopback address of this host is not bound: nobody answers there
    assert perftest_sweep.ask_position("127.0.0.2", port, WHO, timeout_s=1.0) is None


@pytest.mark.parametrize("own", ["192.0.2.1", "node2.example"])
def test_an_address_that_is_not_loopback_listens_on_the_wildcard(own):
    """As perftest's own servers (getaddrinfo(NULL, port, AI_PASSIVE)): whatever the peers' address of the host (its
    own, one behind NAT - TEST-NET-1 192.0.2.1 is nobody's address - or a name), every address of the host answers."""
    port = free_port()
    srv = perftest_sweep.PositionServer(dict(WHO), Where(step=1)).open(own, port, {"node1": "10.0.0.1", "node2": own})
    try:
        assert srv.bound == ("0.0.0.0" if own[0].isdigit() else srv.bound) and srv.bound in ("0.0.0.0", "::")
        assert srv.sock.getsockname()[:2] == (srv.bound, port)
        assert perftest_sweep.ask_position("127.0.0.1", port, WHO) == {"step": 1, "finished": False}
    finally:
        srv.close()


def test_a_port_in_use_is_an_error_for_the_caller():
    port = free_port()
    first = perftest_sweep.PositionServer(dict(WHO), Where(step=1)).open("127.0.0.1", port, ON_ONE_MACHINE)
    try:
        with pytest.raises(OSError):
            perftest_sweep.PositionServer(dict(WHO), Where(step=2)).open("127.0.0.1", port, ON_ONE_MACHINE)
        # the first one still answers
        assert perftest_sweep.ask_position("127.0.0.1", port, WHO) == {"step": 1, "finished": False}
    finally:
        first.close()


@pytest.mark.parametrize("question", [
    {"run": "r2", "label": "main", "host": "node2"},       # another run
    {"run": "r1", "label": "confirm", "host": "node2"},    # another sweep of the run
    {"run": "r1", "label": "main", "host": "node3"},       # another host (two runners on one address)
])
def test_a_question_for_another_runner_gets_no_answer(server, question):
    srv, _where = server
    port = srv.sock.getsockname()[1]
    assert raw_question(port, (json.dumps(question) + "\n").encode()) == b""
    assert perftest_sweep.ask_position("127.0.0.1", port, question) is None


@pytest.mark.parametrize("data", [b"garbage\n", b"[1, 2]\n", b"\xff\xfe\n", b"{" * 2000, b""])
def test_garbage_gets_no_answer_and_the_runner_keeps_answering(server, data):
    srv, _where = server
    port = srv.sock.getsockname()[1]
    assert raw_question(port, data) == b""
    assert perftest_sweep.ask_position("127.0.0.1", port, WHO) == {"step": 3, "finished": False}


def test_a_silent_client_is_closed_without_an_answer_at_its_deadline(server):
    srv, _where = server
    port = srv.sock.getsockname()[1]
    with socket.create_connection(("127.0.0.1", port), timeout=5) as hog:
        started = time.monotonic()
        # the hog says nothing: the next question is answered meanwhile, the hog closed at its own deadline
        answer = perftest_sweep.ask_position("127.0.0.1", port, WHO, timeout_s=perftest_sweep.POSITION_TIMEOUT_S + 2)
        assert answer == {"step": 3, "finished": False}
        assert time.monotonic() - started < perftest_sweep.POSITION_TIMEOUT_S + 1.5
        assert hog.recv(10) == b""          # closed without an answer


def test_closed_answers_are_refused_at_once():
    """A runner that ended (close: every exit path) answers nothing: its port refuses, the thread is gone."""
    port = free_port()
    srv = perftest_sweep.PositionServer(dict(WHO), Where(step=1)).open("127.0.0.1", port, ON_ONE_MACHINE)
    srv.close()
    assert not srv.thread.is_alive() and srv.sock is None
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    started = time.monotonic()
    assert perftest_sweep.ask_position("127.0.0.1", port, WHO) is None
    assert time.monotonic() - started < 0.5


def _reply_once(listener, answer):
    conn = listener.accept()[0]
    conn.recv(4096)
    conn.sendall((json.dumps(answer) + "\n").encode())
    conn.close()


def test_an_answer_from_someone_else_is_not_taken():
    """A local user's listener on the position port (or another program): only a well-formed answer naming the run,
    label and host asked about counts."""
    port = free_port()
    fake_answers = [
        {"run": "r1", "label": "main", "host": "node9", "step": 0, "finished": False},     # another host
        {"run": "r1", "label": "main", "host": "node2", "step": "0", "finished": False},   # not a step
        {"run": "r1", "label": "main", "host": "node2", "step": True, "finished": False},  # not a step
        {"run": "r1", "label": "main", "host": "node2", "step": 0},                        # no finished
    ]
    listener = socket.socket()
    listener.bind(("127.0.0.1", port))
    listener.listen(4)
    try:
        for answer in fake_answers:
            thread = threading.Thread(target=_reply_once, args=(listener, answer))
            thread.start()
            assert perftest_sweep.ask_position("127.0.0.1", port, WHO) is None, answer
            thread.join(5)
    finally:
        listener.close()


def test_no_answer_costs_one_question_timeout():
    """A host that accepts and never answers (or a firewall that drops the port): None within the timeout."""
    port = free_port()
    listener = socket.socket()
    listener.bind(("127.0.0.1", port))
    listener.listen(4)          # the kernel accepts; nobody reads or answers
    try:
        started = time.monotonic()
        assert perftest_sweep.ask_position("127.0.0.1", port, WHO, timeout_s=0.5) is None
        assert 0.4 < time.monotonic() - started < 0.5 + 5.0     # its timeout, not a hang (far above a loaded machine's)
    finally:
        listener.close()


def test_a_watch_follows_the_partner_and_forgets_a_stale_answer():
    where = Where(step=2)
    port = free_port()
    srv = perftest_sweep.PositionServer(dict(WHO), where).open("127.0.0.1", port, ON_ONE_MACHINE)
    watch = perftest_sweep.PositionWatch("127.0.0.1", port, WHO, ask_s=0.05, fresh_s=0.5).start()
    try:
        deadline = time.monotonic() + 5
        while watch.latest() is None and time.monotonic() < deadline:
            time.sleep(0.02)
        assert watch.latest() == {"step": 2, "finished": False}
        where.value = {"step": 4, "finished": False}
        while watch.latest() != {"step": 4, "finished": False} and time.monotonic() < deadline:
            time.sleep(0.02)
        assert watch.latest() == {"step": 4, "finished": False}
        srv.close()             # the partner's runner ended: its last answer goes stale, then nothing
        time.sleep(0.8)
        assert watch.latest() is None
    finally:
        watch.stop(wait_s=5)
        srv.close()
    assert not watch.thread.is_alive()


def test_a_watch_of_nobody_never_blocks_and_stops_at_once():
    watch = perftest_sweep.PositionWatch("127.0.0.1", free_port(), WHO, ask_s=0.05).start()
    time.sleep(0.3)
    assert watch.latest() is None
    started = time.monotonic()
    watch.stop()
    assert time.monotonic() - started < 1.0          # the runner goes on at once (a loaded CI machine: not 0.1)
    watch.thread.join(2)
    assert not watch.thread.is_alive()


def test_stopping_a_watch_of_a_silent_partner_does_not_wait_for_its_question():
    """A partner that accepts and never answers (a hung host, a port filtered after the handshake): stop() returns at
    once, the question in flight ends by itself within its timeout, and its thread with it."""
    port = free_port()
    listener = socket.socket()
    listener.bind(("127.0.0.1", port))
    listener.listen(4)
    try:
        watch = perftest_sweep.PositionWatch("127.0.0.1", port, WHO, ask_s=0.5).start()
        time.sleep(0.1)             # a question is in flight (1 s timeout)
        started = time.monotonic()
        watch.stop()
        assert time.monotonic() - started < perftest_sweep.POSITION_TIMEOUT_S / 2   # not the question's timeout
        watch.thread.join(perftest_sweep.POSITION_TIMEOUT_S + 1.0)
        assert not watch.thread.is_alive() and watch.latest() is None
    finally:
        listener.close()


# ---------------------------------------------------------------- the bound (LagBound)

def test_lag_bound_keeps_waiting_for_an_earlier_step_up_to_its_worst_case_duration():
    bound = perftest_sweep.LagBound(step=10, step_worst_s=100.0)
    at8 = {"step": 8, "finished": False}
    assert bound.keep_waiting(at8, now=1000.0)
    assert bound.keep_waiting(at8, now=1100.0)              # within the step's worst case
    assert not bound.keep_waiting(at8, now=1100.5)          # stuck at step 8 longer than a step can last
    # a partner that moved on (still earlier) is making progress: that step's own allowance
    at9 = {"step": 9, "finished": False}
    assert bound.keep_waiting(at9, now=1101.0)
    assert bound.keep_waiting(at9, now=1201.0) and not bound.keep_waiting(at9, now=1201.5)


def test_lag_bound_grants_one_more_wait_when_a_late_partner_arrives():
    bound = perftest_sweep.LagBound(step=10, step_worst_s=100.0)
    assert bound.keep_waiting({"step": 9, "finished": False}, now=0.0)
    here = {"step": 10, "finished": False}
    assert bound.keep_waiting(here, now=5.0)                # its servers are starting
    assert not bound.keep_waiting(here, now=6.0)            # once only


@pytest.mark.parametrize("answer", [
    None,                                           # no answer: dead, silent, filtered, answers off
    {"step": 10, "finished": False},                # at this step, never seen late: its server should listen
    {"step": 11, "finished": False},                # past it
    {"step": None, "finished": True},               # ended
    {"step": 3, "finished": True},
])
def test_lag_bound_gives_up_as_before(answer):
    assert not perftest_sweep.LagBound(step=10, step_worst_s=100.0).keep_waiting(answer, now=0.0)


def test_lag_bound_not_begun_is_before_every_step():
    bound = perftest_sweep.LagBound(step=0, step_worst_s=5.0)
    assert bound.keep_waiting({"step": None, "finished": False}, now=0.0)
    assert not bound.keep_waiting({"step": None, "finished": False}, now=5.1)


def test_lag_bound_is_finite_whatever_the_answers():
    """A hostile answerer that says "earlier step" forever, moving on as slowly as it may: the wait ends by
    step x (steps before it) x step_worst_s at the latest."""
    bound = perftest_sweep.LagBound(step=4, step_worst_s=10.0)
    now, waited = 0.0, 0.0
    for at in (-1, 0, 1, 2, 3, 3, 3):
        while bound.keep_waiting({"step": None if at < 0 else at, "finished": False}, now):
            now += 1.0
            waited += 1.0
        assert waited < 1000
    assert waited <= 5 * 11.0
    assert not bound.keep_waiting({"step": 3, "finished": False}, now + 1000)


def test_step_worst_case_comes_from_the_parameters():
    assert perftest_sweep.step_worst_s({"timeout_s": 120, "connect_timeout_s": 60, "collect_timeout_s": 60}) == 240.0


def test_the_position_port_default_option_and_checks():
    p = {"port": 18515, "port_span": 32, "hcas": ["mlx5_0", "mlx5_1"], "position_port": None}
    assert perftest_sweep.position_port(p) == 18515 + 64 == perftest_sweep.control_port(18515, 32, 2)
    perftest_sweep.check_position_port(p)
    assert perftest_sweep.position_port(dict(p, position_port=0)) == 0
    perftest_sweep.check_position_port(dict(p, position_port=0))
    perftest_sweep.check_position_port(dict(p, position_port=20000))
    with pytest.raises(AcceptanceError, match="one of the steps' TCP ports"):
        perftest_sweep.check_position_port(dict(p, position_port=18520))


# ---------------------------------------------------------------- the runners (real processes, real sockets)

def late_server_pair(fake, client_extra=None, server_extra=None):
    """``other`` serves ``me`` at step 1 but is first busy at step 0 with a server nobody uses (its client ``third``
    never comes: ``other`` is late by its timeout_s); no controller (lease off, no positions). ``me`` (connect_timeout_s
    2 s) reaches step 1 at once. Both on their own loopback address (their position answers do not collide)."""
    peers = {"me": "127.0.0.1", "other": "127.0.0.2", "third": "127.0.0.3"}
    common = dict(hcas=["mlx5_0"], port_span=2, lease_s=0, collect_timeout_s=10, connect_retry_delay_s=0.2,
                  peers=peers)
    server = base(fake, phase="run", inventory_hostname="other", timeout_s=5, connect_timeout_s=2,
                  schedule=[[0, "ib_write_bw", 0, "server", "third"], [1, "ib_write_bw", 1, "server", "me"]],
                  **common)
    client = base(fake, phase="run", inventory_hostname="me", timeout_s=5, connect_timeout_s=2,
                  schedule=[[1, "ib_write_bw", 1, "client", "other"]], **common)
    server.update(server_extra or {})
    client.update(client_extra or {})
    started = time.monotonic()
    procs = [start_runner(fake, server), start_runner(fake, client)]
    outcomes = [ended(proc) for proc in procs]
    took = time.monotonic() - started
    assert [o.get("outcome") for o in outcomes] == ["finished", "finished"], outcomes
    return status(fake, "other")["results"], status(fake, "me")["results"], took


def test_a_client_waits_for_a_late_server_its_runner_says_is_at_an_earlier_step(fake):
    """The defect: ``me``'s client gave up after connect_timeout_s (2 s) while ``other`` was still at step 0 (5 s):
    "Couldn't connect" on a healthy pair. Now ``other``'s runner says it is at step 0, and ``me`` waits."""
    servers, clients, _took = late_server_pair(fake)
    (client,) = clients
    assert client["status"] == "pass", (client["status"], client.get("reason"))
    assert client["host"] == "me" and client["peer"] == "other" and client["params"]["attempts"] > 1
    by_peer = dict((r["peer"], r) for r in servers)
    assert by_peer["me"]["status"] == "pass"
    assert by_peer["third"]["status"] == "error" and "no client connected" in by_peer["third"]["reason"]
    only_answers_left(fake)


def test_with_the_answers_off_a_late_server_is_given_up_as_before(fake):
    """position_port 0 (or a firewall dropping it): exactly the old behaviour - the client gives up after
    connect_timeout_s, before the late server's host reached the step."""
    _servers, clients, _took = late_server_pair(fake, client_extra={"position_port": 0},
                                                server_extra={"position_port": 0})
    (client,) = clients
    assert client["status"] == "error" and "Couldn't connect" in client["reason"], client


def test_a_client_of_a_dead_host_gives_up_after_connect_timeout_as_before(fake):
    """Nobody answers on the server's address (no runner: a dead host): no slowdown, connect_timeout_s as before."""
    args = base(fake, phase="run", inventory_hostname="me", hcas=["mlx5_0"], port_span=2, lease_s=0, timeout_s=30,
                connect_timeout_s=3, connect_retry_delay_s=0.2, schedule=[[0, "ib_write_bw", 0, "client", "other"]],
                peers={"me": "127.0.0.1", "other": "127.0.0.2"})
    started = time.monotonic()
    out = ended(start_runner(fake, args))
    took = time.monotonic() - started
    assert out["outcome"] == "finished"
    (rec,) = status(fake, "me")["results"]
    assert rec["status"] == "error" and "Couldn't connect to 127.0.0.2" in rec["reason"]
    # connect_timeout_s and the runner's own start and end (a loaded machine), far below a wait for a late host
    # (step_worst_s: 30 + 3 + 60 s)
    assert took < 3 + 10.0, took
    assert not [e for e in events(fake) if e["role"] == "server"]


# ---------------------------------------------------------------- review: rails, concurrent answers, loopback

def test_hosts_with_different_rail_counts_agree_on_every_port():
    """The ports come from what every runner of the sweep is handed alike (rates_by_peer: every host's devices; the
    playbook's ``rails``), not from the local device count: a host with one rail and one with four ask and answer on
    the same position port, notify on the same control port and meet on the same step ports."""
    rates = {"a": [400.0], "b": [400.0] * 4}
    one = {"port": 18515, "port_span": 32, "hcas": ["mlx5_0"], "position_port": None, "rates_by_peer": rates}
    four = dict(one, hcas=["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_3"])
    assert perftest_sweep.position_port(one) == perftest_sweep.position_port(four) == 18515 + 32 * 4
    assert perftest_sweep.sweep_rails(one) == perftest_sweep.sweep_rails(four) == 4
    assert perftest_sweep.sweep_rails(dict(one, rails=6)) == 6
    with pytest.raises(AcceptanceError, match="rails 2 is fewer than the 4 devices"):
        perftest_sweep.sweep_rails(dict(four, rails=2))
    for p in (one, four):
        with pytest.raises(AcceptanceError, match="one of the steps' TCP ports"):
            perftest_sweep.check_position_port(dict(p, position_port=18515 + 32 * 4 - 1))
        perftest_sweep.check_position_port(p)


def test_a_pair_with_different_rail_counts_meets_and_hears_the_late_server(fake):
    """``other`` (one rail) is late at step 0; ``me`` (two rails) waits for it at step 1 because both compute the
    same step ports and position port (rates_by_peer, as the playbook hands them). Before, ``me`` asked and connected
    on ports laid out for two devices, ``other`` listened on ports laid out for one: "Couldn't connect"."""
    rates = {"me": [None, None], "other": [None], "third": [None]}
    servers, clients, _took = late_server_pair(fake, client_extra={"hcas": ["mlx5_0", "mlx5_1"],
                                                                   "rates_by_peer": rates},
                                               server_extra={"rates_by_peer": rates})
    by_device = dict((r["target"], r) for r in clients)
    assert by_device["mlx5_0"]["status"] == "pass", by_device["mlx5_0"].get("reason")
    assert by_device["mlx5_0"]["params"]["attempts"] > 1
    # the second rail has no server on a one-rail host: an error of that rail alone
    assert by_device["mlx5_1"]["status"] == "error"
    assert dict((r["peer"], r["status"]) for r in servers)["me"] == "pass"


def test_a_slow_client_does_not_delay_another_answer(server):
    srv, _where = server
    port = srv.sock.getsockname()[1]
    hogs = [socket.create_connection(("127.0.0.1", port), timeout=5) for _i in range(3)]
    try:
        hogs[0].sendall(b'{"run": "r1", ')      # half a question, then nothing
        time.sleep(0.05)
        started = time.monotonic()
        assert perftest_sweep.ask_position("127.0.0.1", port, WHO, timeout_s=2.0) == {"step": 3, "finished": False}
        assert time.monotonic() - started < perftest_sweep.POSITION_TIMEOUT_S * 0.7   # before the hog's deadline
        # each slow client is closed at its own deadline, without an answer
        for hog in hogs:
            assert hog.recv(10) == b""
    finally:
        for hog in hogs:
            hog.close()


def test_more_clients_than_the_cap_are_closed_at_once_and_the_answers_go_on(server):
    srv, _where = server
    port = srv.sock.getsockname()[1]
    hogs = [socket.create_connection(("127.0.0.1", port), timeout=5)
            for _i in range(perftest_sweep.POSITION_MAX_CLIENTS + 3)]
    try:
        time.sleep(0.3)
        closed = 0
        for hog in hogs:
            hog.settimeout(0.05)
            try:
                closed += hog.recv(10) == b""
            except socket.timeout:
                pass
            except ConnectionResetError:
                closed += 1
        assert closed >= 3
        time.sleep(perftest_sweep.POSITION_TIMEOUT_S + 0.3)   # the others reach their deadline
        assert perftest_sweep.ask_position("127.0.0.1", port, WHO) == {"step": 3, "finished": False}
    finally:
        for hog in hogs:
            hog.close()
    srv.close()
    assert not srv.thread.is_alive() and srv.sock is None


def test_a_name_that_resolves_to_loopback_here_listens_on_the_wildcard(monkeypatch):
    """Debian/Ubuntu map the host's own name to 127.0.1.1: binding what the name resolves to here answered on an
    address no peer reaches. A name is never resolved to bind: the wildcard address, as perftest's servers."""
    real = socket.getaddrinfo

    def resolve(host, *args, **kwargs):
        return real("127.0.1.1" if host == "node2" else host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", resolve)
    port = free_port()
    srv = perftest_sweep.PositionServer(dict(WHO), Where(step=1)).open("node2", port, {"node1": "10.0.0.1"})
    try:
        assert srv.bound in ("::", "0.0.0.0")
        assert perftest_sweep.ask_position("127.0.0.1", port, WHO) == {"step": 1, "finished": False}
    finally:
        srv.close()


@pytest.mark.parametrize("own", ["127.0.0.1", "127.0.1.1", "::1", "localhost"])
def test_a_loopback_address_that_peers_elsewhere_cannot_reach_answers_nothing(own):
    with pytest.raises(AcceptanceError, match="loopback"):
        perftest_sweep.PositionServer(dict(WHO), Where(step=1)).open(own, free_port(), {"node1": "10.0.0.1"})


def test_a_runner_given_a_loopback_address_says_once_that_it_answers_nothing(fake):
    args = base(fake, phase="run", inventory_hostname="me", hcas=["mlx5_0"], port_span=2, lease_s=0, schedule=[],
                peers={"me": "127.0.0.1", "other": "192.0.2.1"})
    out = ended(start_runner(fake, args))
    assert out["outcome"] == "finished"
    notes = status(fake, "me")["progress"]["notes"]
    assert len(notes) == 1 and "position answers off" in notes[0] and "loopback" in notes[0], notes


class _Display(object):
    def __init__(self):
        self.warnings = []

    def warning(self, text):
        self.warnings.append(text)


def test_the_wait_prints_each_note_of_a_runner_once(tmp_path, monkeypatch):
    """A runner under async is heard only through its progress: each note (its position answers off) is printed once
    by the controller's wait, however many polls bring it."""
    from ansible import constants as C
    from ansible_collections.aifabric.acceptance.plugins.action.perftest_sweep import ActionModule
    monkeypatch.setattr(C, "DEFAULT_LOCAL_TMP", str(tmp_path))
    shared = ActionModule._shared(None, {"run_id": "r1", "sweep_name": "main"})
    action = ActionModule.__new__(ActionModule)
    action._display = _Display()
    note = "position answers off (127.0.0.1 port 18547: ... loopback ...)"
    for _poll in range(3):
        action._notes(shared, "node1", {"notes": [note]})
    action._notes(shared, "node2", {"notes": [note, "ready notices off"]})
    action._notes(shared, "node1", {})
    assert action._display.warnings == ["rdma sweep: node1: " + note, "rdma sweep: node2: " + note,
                                        "rdma sweep: node2: ready notices off"]
