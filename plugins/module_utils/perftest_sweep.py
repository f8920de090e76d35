# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A host's whole perftest schedule, run on the host itself (private; issue 13).

The controller computes the rounds once (filter ``pairings``, split per host by
filter ``sweep_schedule``) and starts one runner per host (module ``perftest_sweep``
``phase: run`` under Ansible ``async``). The runner walks its steps in order; a step
is ``[step, test, round, role, peer]``:

- ``server``: one server per device, the runner's own child (TCP port ``port + (step % port_span) *
  rails + i``, ``rails`` the most devices of any host of the sweep, sweep_rails: the same on
  every host; a client that runs ahead can never reach the server of an earlier step), waited
  for until it ends (at its ``timeout_s`` at the latest; listening again while the client's
  host is alive and still busy with an earlier step);
- ``client``: perftest_clients.run_clients (retries while the server does not listen,
  within ``connect_timeout_s``, extended while the server's host is alive and still busy
  with an earlier step: what its own runner answers on the position port (PositionServer,
  PositionWatch; bounded by that step's worst-case duration, LagBound), or ``positions.json``,
  the steps the controller last saw).

Runners tell each other their position directly: each answers on TCP port ``position_port``
(default the control port's number, ``port + port_span * rails``; 0: off) with its current
step, only while it lives (closed on every exit path). It listens on the wildcard address, as
perftest's servers do; where the address its peers are given for it is a loopback address it
listens there only if every peer's is loopback too (one machine), and else answers nothing
and says so once in its progress (listen_address). One thread serves every question at once
(a selector, a deadline per connection, POSITION_MAX_CLIENTS at most). A runner whose partner
does not come asks the partner's runner in a thread (never blocking the runner); an earlier
step means "only late" and it keeps waiting, at most ``timeout_s + connect_timeout_s +
collect_timeout_s`` per step the partner is seen at; no answer (dead, silent, filtered), an
ended runner, this step or a later one end the wait as before. Without the controller's
positions (the lease off: fewer forks than hosts) this is what keeps a partner delayed by a
dead host from being taken for dead.

Pairs synchronise through their own connection: no barrier, no deadlock (each round is
a matching and each host runs its rounds in order). Faults cost little: a peer that
did not answer once (refused for ``connect_timeout_s``, or never connected to a server) or
that the controller declared unreachable (``dead.json``, written by ``phase: status`` from what the controller's
wait hands it in the internal option ``_poll``) is not
waited for again: its remaining pairs become ``error`` records at once (the client
check ``rdma.<test>`` with the CLIENT as host, so attribution sees the edge).

The CPU governor is acquired once for the runner and released on every path
(end, failure, SIGTERM/SIGINT/SIGHUP). The runner stops by itself when the controller
stops renewing its lease (``lease`` file touched by every ``phase: status``) for
``lease_s`` seconds: killing ansible-playbook stops every runner.

Files (all under ``<state_root>/<host id>/<run_id>/sweep-<sweep_name>-<host>/``, see
PerftestRun.open_state): ``progress.json`` (pid, next step, pairs done, failing, notes),
``records.json`` (at the end), ``lease``, ``dead.json``; the per-step process directories
live beside them. Every directory is made (and marked) by the collection; the cleanup
kills and removes only those (PerftestRun.stop_and_remove).
Runs on the targets: Python 3.8+, no Ansible imports.
"""

from __future__ import annotations

import errno
import functools
import ipaddress
import json
import os
import select
import selectors
import socket
import threading
import time

from ansible_collections.aifabric.acceptance.plugins.module_utils import perftest_clients, results, state_child
from ansible_collections.aifabric.acceptance.plugins.module_utils import perftest_status
from ansible_collections.aifabric.acceptance.plugins.module_utils.perftest_status import (
    DEAD, LEASE, POSITIONS, PROGRESS, RECORDS, START, STATUS_POLL_S, read_json, write_json)
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import AcceptanceError, Interrupted, ToolMissing
from ansible_collections.aifabric.acceptance.plugins.module_utils.governor import describe
from ansible_collections.aifabric.acceptance.plugins.module_utils.proc import DETACHED_TIMEOUT_RCS, interrupt_guard, process_start_time
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import Context
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import perftest_sweep as adapter

POLL_S = 0.05          # the runner's own polls (process ends, TCP connections)
POSITION_ASK_S = 0.5   # a runner waiting for its partner asks the partner's runner its position this often
POSITION_TIMEOUT_S = 1.0   # one question (connect, ask, answer), and how long an answering runner reads a question
POSITION_FRESH_S = 3.0     # an answer older than this is not used (the partner stopped answering: as if it never did)
POSITION_MAX_BYTES = 1024  # a question or an answer is one JSON line of at most this many bytes
POSITION_MAX_CLIENTS = 32  # questions answered at once; a connection beyond this is closed at once


TCP_ESTABLISHED, TCP_LISTEN = "01", "0A"     # the st column of /proc/net/tcp
_NOT_READ = object()


def tcp_ports_in_state(ports, state, proc="/proc"):
    """The ports of ``ports`` that have a TCP socket (local port) in ``state`` in this network namespace: a set, or
    None when neither /proc/net/tcp nor tcp6 can be read (cannot tell). One read of each table for all the ports, and
    tcp6 only when tcp did not hold them all: the kernel walks its whole socket hash for every read (about 4 ms of CPU
    on a small VM, more on a host with more memory), so a loop that asked port by port (the servers of every rail,
    every 10-50 ms) kept a core busy on an 8-rail host."""
    wanted = dict((":%04X" % int(port), int(port)) for port in ports)
    found = None
    for name in ("tcp", "tcp6"):
        if found is not None and len(found) == len(wanted):
            break
        try:
            with open(os.path.join(proc, "net", name)) as handle:
                lines = handle.readlines()[1:]
        except (IOError, OSError):
            continue
        found = found or set()
        for line in lines:
            fields = line.split()
            if len(fields) > 3 and fields[3] == state:
                port = wanted.get(fields[1][fields[1].rfind(":"):])
                if port is not None:
                    found.add(port)
    return found


def tcp_established(port, proc="/proc"):
    """True when a TCP socket with local port ``port`` is ESTABLISHED in this network namespace (None: cannot tell)."""
    found = tcp_ports_in_state([port], TCP_ESTABLISHED, proc)
    return None if found is None else port in found


def control_port(base, span, n_devices):
    """The UDP port of the ready notices: the first port after every step's TCP ports."""
    return base + max(1, span) * max(1, n_devices)


def step_port(base, step, span, n_devices):
    port = base + (step % max(1, span)) * max(1, n_devices)
    if port + n_devices - 1 > 65535:
        raise AcceptanceError("port %d + port_span %d x %d devices is above 65535; lower port or port_span"
                              % (base, span, n_devices))
    return port


def tool_env(plan):
    """Environment of the perftest processes of a step: with ``use_cuda: auto`` the GPU indices are nvidia-smi's
    (``topo -m``, PCI bus order), so CUDA must number the GPUs the same way (``CUDA_DEVICE_ORDER``)."""
    orders = set(facts.get("cuda_device_order") for _i, _d, _p, _g, facts in plan if facts.get("cuda_device_order"))
    return {"CUDA_DEVICE_ORDER": sorted(orders)[0]} if orders else None


# ---------------------------------------------------------------- the ports every host of the sweep agrees on
def sweep_rails(p):
    """The number of devices the sweep's ports are laid out for, the same on every host whatever its own rail count:
    O(rails) (the playbook: the most devices of any host of the sweep), else the longest device list of O(rates_by_peer)
    (every host's devices, handed alike to every runner), at least this host's own. The step ports, the control port
    and the position port come from it: a host with one rail and a host with four compute the same ports."""
    own = len(p.get("hcas") or [])
    if p.get("rails"):
        rails = int(p["rails"])
        if rails < own:
            raise AcceptanceError("rails %d is fewer than the %d devices of this host: give the most devices of any "
                                  "host of the sweep" % (rails, own))
        return rails
    lengths = [len(rates) for rates in (p.get("rates_by_peer") or {}).values() if isinstance(rates, list)]
    return max([own, 1] + lengths)


# ---------------------------------------------------------------- positions: runners tell each other where they are
# A runner answers on a TCP port (O(position_port), by default the number of the control port: O(port) +
# O(port_span) x sweep_rails, the UDP ready notices' number) with the step it is at, on the wildcard address as
# perftest's own servers listen (listen_address). A runner whose partner does not come (a client refused, a server
# nobody connected to) asks the partner's runner: an earlier step means "only late", and it keeps waiting for at most
# that step's worst-case duration (step_worst_s); anything else - no answer (a dead host, a firewall dropping the
# port), a runner that ended, this step or a later one - ends the wait as before. The answer is never trusted beyond
# that bounded wait.

def position_port(p):
    """The TCP port of the position answers (0: off): O(position_port), else the control port's number."""
    if p.get("position_port") is not None:
        return int(p["position_port"])
    return control_port(p["port"], p["port_span"], sweep_rails(p))


def check_position_port(p):
    """A position port that is one of the steps' perftest ports is refused (it would take a server's port)."""
    port = position_port(p)
    first, last = p["port"], control_port(p["port"], p["port_span"], sweep_rails(p)) - 1
    if port and first <= port <= last:
        raise AcceptanceError("position_port %d is one of the steps' TCP ports (%d-%d: port + (step mod port_span) x "
                              "rails + i); choose another, or 0 to turn the position answers off" % (port, first, last))


def step_worst_s(p):
    """The longest a step of a partner may legitimately last: its client retries for connect_timeout_s, then runs
    for at most timeout_s, then its server is collected within collect_timeout_s (a server step is shorter). The same
    allowance per step as the runner's own limit (``async`` in roles/rdma/tasks/sweep.yml)."""
    return float(p["timeout_s"]) + float(p["connect_timeout_s"]) + float(p["collect_timeout_s"])


def is_loopback(address):
    """True for a loopback address: 127.0.0.0/8, ::1 (or an IPv4-mapped loopback), ``localhost`` and ``*.localhost``
    (RFC 6761). A name is not resolved: what it resolves to here (Debian's 127.0.1.1 for the host's own name) is not
    what the peers resolve it to."""
    text = str(address).strip().lower().rstrip(".")
    if text == "localhost" or text.endswith(".localhost"):
        return True
    try:
        ip = ipaddress.ip_address(text.strip("[]").split("%", 1)[0])
    except ValueError:
        return False
    mapped = getattr(ip, "ipv4_mapped", None)
    return ip.is_loopback or bool(mapped and mapped.is_loopback)


def listen_address(own, peers):
    """Where a runner's answers listen, from ``own`` (the address its peers are given for this host) and ``peers``
    (every host's): the wildcard address, as perftest's servers listen (getaddrinfo(NULL, port, AI_PASSIVE)) - of
    IPv6, dual stack, unless ``own`` is an IPv4 address. A loopback ``own`` is reachable from this machine alone: it
    is bound itself when every address of ``peers`` is loopback too (a sweep on one machine, several runners each on
    its own loopback address), else nothing is (AcceptanceError: the peers elsewhere cannot reach it)."""
    if is_loopback(own):
        others = [str(a) for a in (peers or {}).values() if not is_loopback(a)]
        if others or not peers:
            raise AcceptanceError(
                "the address the peers are given for this host, %s, is a loopback address: hosts elsewhere (%s) "
                "cannot reach it; set rdma_server_address (or ansible_host) to an address they reach"
                % (own, ", ".join(sorted(others)[:3]) or "not known"))
        text = str(own).strip("[]")
        return ("127.0.0.1" if text.lower().rstrip(".").endswith("localhost") else text), None
    try:
        if ipaddress.ip_address(str(own).strip("[]").split("%", 1)[0]).version == 4:
            return "0.0.0.0", None
    except ValueError:
        pass
    return "::", "0.0.0.0"       # IPv6 dual stack; IPv4 where this host has no IPv6


def _listen(family, sockaddr):
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)      # TIME_WAIT only; never a live listener's port
        if family == socket.AF_INET6:
            sock.setsockopt(socket.IPPROTO_IPV6, socket.IPV6_V6ONLY, 0 if sockaddr[0] == "::" else 1)
        sock.bind(sockaddr)
        sock.listen(POSITION_MAX_CLIENTS)
        sock.setblocking(False)
    except (OSError, socket.error):
        sock.close()
        raise
    return sock


def bind_position(address, port, peers):
    """A listening, non-blocking TCP socket for the answers of the host the peers reach at ``address`` (listen_address):
    (socket, the address it is bound to). Raises AcceptanceError (a loopback address the peers cannot reach) or
    OSError (the port taken); the caller turns the answers off and says why."""
    first, fallback = listen_address(address, peers)
    try:
        family = socket.AF_INET6 if ":" in first else socket.AF_INET
        return _listen(family, (first, port)), first
    except (OSError, socket.error) as exc:
        if fallback is None or exc.errno not in (errno.EAFNOSUPPORT, errno.EADDRNOTAVAIL):
            raise
    return _listen(socket.AF_INET, (fallback, port)), fallback


def _parse_line(data):
    """The JSON object of the first line of ``data``; None when there is none."""
    if b"\n" not in data:
        return None
    try:
        item = json.loads(data.split(b"\n", 1)[0].decode("utf-8"))
    except ValueError:
        return None
    return item if isinstance(item, dict) else None


def _read_line(conn, deadline):
    """One line (at most POSITION_MAX_BYTES) from ``conn`` before ``deadline``; None when it does not come."""
    data = b""
    while b"\n" not in data and len(data) < POSITION_MAX_BYTES:
        left = deadline - time.monotonic()
        if left <= 0:
            return None
        conn.settimeout(left)
        chunk = conn.recv(POSITION_MAX_BYTES - len(data))
        if not chunk:
            break
        data += chunk
    return _parse_line(data)


def _encode(item):
    return (json.dumps(item, sort_keys=True) + "\n").encode("utf-8")


def ask_position(address, port, who, timeout_s=POSITION_TIMEOUT_S):
    """Ask the runner of ``who`` (``{"run", "label", "host"}``) at ``address``:``port`` where it is: ``{"step": int or
    None (not begun), "finished": bool}``, or None - refused, no answer within ``timeout_s``, or an answer that is not
    that runner's (another run, label or host; not a position)."""
    deadline = time.monotonic() + timeout_s
    try:
        with socket.create_connection((address, port), timeout=timeout_s) as conn:
            conn.sendall(_encode(who))
            item = _read_line(conn, deadline)
    except (OSError, socket.error, ValueError):
        return None
    if not item or any(item.get(key) != who[key] for key in ("run", "label", "host")):
        return None
    step, finished = item.get("step"), item.get("finished")
    if not isinstance(finished, bool) or not (step is None or (isinstance(step, int) and not isinstance(step, bool))):
        return None
    return {"step": step, "finished": finished}


class PositionServer(object):
    """This runner's answers: a thread that answers every question naming this run, label and host with ``where()``
    (``{"step", "finished"}``). One selector loop over non-blocking sockets: each connection has its own deadline
    (POSITION_TIMEOUT_S from its accept) and is closed when answered, refused or late, so a slow client delays no
    other; at most POSITION_MAX_CLIENTS at once (one more is closed at once). It answers only while the runner lives:
    close() (every exit path of the runner) ends the thread, which closes every connection and the socket, and the
    socket goes with the process however it ends (the perftest processes inherit no descriptor: proc.spawn closes
    them)."""

    def __init__(self, who, where):
        self.who = who
        self.where = where
        self.sock = None
        self.bound = None
        self.stop = threading.Event()
        self.thread = None

    def open(self, address, port, peers=None):
        self.sock, self.bound = bind_position(address, port, peers)
        self.thread = threading.Thread(target=self._serve, name="sweep-positions")
        self.thread.daemon = True
        self.thread.start()
        return self

    def _serve(self):
        selector = selectors.DefaultSelector()
        conns = {}       # socket -> {"deadline", "data" (read), "out" (left to send)}
        try:
            selector.register(self.sock, selectors.EVENT_READ)
            while not self.stop.is_set():
                now = time.monotonic()
                wait = min([0.2] + [max(0.0, c["deadline"] - now) for c in conns.values()])
                for key, _mask in selector.select(wait):
                    if key.fileobj is self.sock:
                        self._accept(selector, conns)
                    elif key.fileobj in conns:
                        self._step(selector, conns, key.fileobj)
                now = time.monotonic()
                for conn in [c for c, state in conns.items() if state["deadline"] <= now]:
                    self._drop(selector, conns, conn)
        except (OSError, socket.error, ValueError):
            pass            # the socket closed under it: answers end (best effort)
        finally:
            for conn in list(conns):
                self._drop(selector, conns, conn)
            selector.close()

    def _accept(self, selector, conns):
        while True:
            try:
                conn = self.sock.accept()[0]
            except (BlockingIOError, InterruptedError):
                return
            except (OSError, socket.error):
                return      # ECONNABORTED, EMFILE...: the next select tries again
            if len(conns) >= POSITION_MAX_CLIENTS:
                conn.close()
                continue
            conn.setblocking(False)
            conns[conn] = {"deadline": time.monotonic() + POSITION_TIMEOUT_S, "data": b"", "out": None}
            selector.register(conn, selectors.EVENT_READ)

    def _step(self, selector, conns, conn):
        """Read the question (answer it, or close), or send what is left of the answer (then close)."""
        state = conns[conn]
        try:
            if state["out"] is None:
                chunk = conn.recv(POSITION_MAX_BYTES - len(state["data"]))
                state["data"] += chunk
                if chunk and b"\n" not in state["data"] and len(state["data"]) < POSITION_MAX_BYTES:
                    return
                state["out"] = self._answer(_parse_line(state["data"]))
                if not state["out"]:
                    self._drop(selector, conns, conn)
                    return
                selector.modify(conn, selectors.EVENT_WRITE)
            sent = conn.send(state["out"])
            state["out"] = state["out"][sent:]
        except (BlockingIOError, InterruptedError):
            return
        except (OSError, socket.error):
            state["out"] = b""
        if not state["out"]:
            self._drop(selector, conns, conn)

    @staticmethod
    def _drop(selector, conns, conn):
        conns.pop(conn, None)
        try:
            selector.unregister(conn)
        except (KeyError, ValueError):
            pass
        conn.close()

    def _answer(self, item):
        """The answer to a question (bytes), or b"" for one that does not name this run, label and host."""
        if not item or any(item.get(key) != self.who[key] for key in ("run", "label", "host")):
            return b""
        where = self.where()
        return _encode(dict(self.who, step=where.get("step"), finished=bool(where.get("finished"))))

    def close(self):
        self.stop.set()
        if self.thread is not None:
            self.thread.join(POSITION_TIMEOUT_S + 1.0)
        if self.sock is not None:
            self.sock.close()
            self.sock = None


class PositionWatch(object):
    """Asks one partner's runner its position every POSITION_ASK_S, in a thread, until stopped; ``latest()`` is its
    last answer while fresh (POSITION_FRESH_S), else None. The thread never blocks the runner: a partner that does not
    answer (dead, silent, a firewall) costs the runner nothing."""

    def __init__(self, address, port, who, ask_s=POSITION_ASK_S, fresh_s=POSITION_FRESH_S):
        self.address, self.port, self.who = address, port, who
        self.ask_s, self.fresh_s = ask_s, fresh_s
        self.answer = None      # (answer, time.monotonic() it came)
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self._ask, name="sweep-position-watch")
        self.thread.daemon = True

    def start(self):
        self.thread.start()
        return self

    def _ask(self):
        while not self.stop_event.is_set():
            answer = ask_position(self.address, self.port, self.who, timeout_s=min(POSITION_TIMEOUT_S, self.ask_s * 2))
            if answer is not None:
                self.answer = (answer, time.monotonic())
            self.stop_event.wait(self.ask_s)

    def latest(self):
        item = self.answer
        if item is None or time.monotonic() - item[1] > self.fresh_s:
            return None
        return item[0]

    def stop(self, wait_s=0.0):
        """No more questions. Does not wait (unless ``wait_s``): a question in flight to a silent partner ends by
        itself within POSITION_TIMEOUT_S, and its answer is dropped - the runner goes on at once."""
        self.stop_event.set()
        if wait_s:
            self.thread.join(wait_s)


class LagBound(object):
    """Whether a runner at ``step`` keeps waiting for a partner, from the partner runner's answer: while the partner is
    at an earlier step, for at most ``step_worst_s`` from when it was first seen at that step (a partner that moves on
    to a later step, still earlier than ``step``, gets that step's allowance: it is making progress); once, when a
    partner seen late has just reached ``step`` (its servers are starting). No answer, a runner that ended, ``step``
    itself otherwise, or a later step: no (the wait ends as before). The steps a partner can be at are finitely many,
    so the wait is bounded whatever the answers say."""

    def __init__(self, step, step_worst_s):
        self.step = step
        self.step_worst_s = step_worst_s
        self.first_seen = {}
        self.arrived = False

    def keep_waiting(self, answer, now):
        if not answer or answer.get("finished"):
            return False
        at = answer.get("step")
        at = -1 if at is None else at
        if at < self.step:
            first = self.first_seen.setdefault(at, now)
            return now - first <= self.step_worst_s
        if at == self.step and self.first_seen and not self.arrived:
            self.arrived = True
            return True
        return False


class Sweep(perftest_status.SweepState):
    """phase plan / run of module perftest_sweep (SweepState gives its directory, its status poll and its cleanup;
    PerftestRun the state root, binary, sysfs)."""

    # ---------------------------------------------------------------- plan (synchronous, before the sweep)
    def plan(self):
        plan = adapter.device_plan(self.p["hcas"] or [], self.p, self.hcas())
        cuda_keys = ("memory", "cuda_device", "cuda_link", "cuda_choice")
        return dict(changed=False, results=[], rates=[facts.get("port_rate_gbit_s") for _i, _d, _p, _g, facts in plan],
                    buffers=dict((device, dict((k, facts[k]) for k in cuda_keys if k in facts))
                                 for _i, device, _p, _g, facts in plan))

    # ---------------------------------------------------------------- run (the runner, under async)
    def run_sweep(self):
        """phase=run: set up, walk the schedule (run_guarded), then hand the records over (finish)."""
        p = self.p
        self.open_state()
        if not p["hcas"]:
            raise AcceptanceError("hcas is required for phase=run")
        adapter.device_plan(p["hcas"], p, None)      # names and port range checked before anything starts
        check_position_port(p)
        steps = p["schedule"] or []
        if self.module.check_mode:
            return dict(changed=False, results=[], steps=len(steps))
        self.begin()
        outcome = self.run_guarded(steps)
        return self.finish(outcome, len(steps))

    def begin(self):
        """The runner's directory (made and marked), its counters, its lease and its first progress line; what an
        earlier runner of this sweep kept of its answer (SweepState.answer_dir) removed."""
        self.here = self.make_dir(self.sweep_dir())
        self.remove(self.answer_dir())
        self.records = []
        self.dead = {}            # peer -> why it is not waited for again
        self.pairs_done = 0
        self.failing = 0
        self.started_pid = os.getpid()
        self.governor_text = "not requested"
        self.notes = []           # what the runner says once of itself (progress.json: printed by the wait)
        self.lease_touch()
        self.progress(None, 0)
        self.live = []
        self.deferred = []
        self.served = []        # (params, plan) of the server steps whose client came (lost_clients)
        self.notices = None
        self.heard = set()
        self.where = {"step": None, "finished": False}     # what the position answers say (a new dict each time)
        self.positions = None
        self.watch = None           # (peer, step, PositionWatch, LagBound) of the partner this step waits for

    def run_guarded(self, steps):
        """The schedule under the interrupt guard: ``finished``, or why it stopped early. Whatever happens, every
        process it started is stopped, the records left are built and the governor is released (tear_down)."""
        p = self.p
        holder = "sweep:%s:%s:%d" % (p["run_id"], p["sweep_name"], os.getpid())
        with interrupt_guard() as guard:
            try:
                hcas, tools = self.set_up(holder, steps)
                self.wait_for_start()
                self.walk(steps, hcas, tools)
                return "finished"
            except Interrupted as exc:
                return "interrupted: %s" % exc
            except _LeaseExpired as exc:
                return str(exc)
            except Exception as exc:  # pylint: disable=broad-except  # the runner must always leave its records
                return "failed: %s: %s" % (type(exc).__name__, exc)
            finally:
                guard.ignore()      # an impatient second Ctrl-C must not skip the cleanup
                self.tear_down(holder)

    def set_up(self, holder, steps):
        """Governor, sysfs, the perftest programs, the ready-notice socket: (hcas, tools)."""
        p = self.p
        governor_result = None
        if p["cpu_governor"]:
            governor_result = self.governor.acquire(holder, os.getpid(), target=p["cpu_governor"])
        self.governor_text = describe(governor_result) if p["cpu_governor"] else "not requested"
        hcas = self.hcas()
        tools = {}
        for test in sorted(set(entry[1] for entry in steps)):
            tools[test] = self.tool(test)
        self.open_notices()
        self.open_positions()
        return hcas, tools

    def wait_for_start(self):
        """Every runner begins at the same moment (start_at, chosen once by the controller after the time it needs
        to start them all): no pair waits for a runner that is still being started. Clocks need not agree: a host
        that begins early only waits for its partner (pairs meet through their connection)."""
        p = self.p
        start_at = p["start_at"]
        while start_at is None and p["lease_s"]:
            # no start given: the controller's first poll of every runner hands it one (start.json)
            self.check_lease()
            start_at = (read_json(self.here, START) or {}).get("start_at")
            if start_at is None:
                time.sleep(0.05)
        while start_at and time.time() < start_at:
            self.check_lease()
            time.sleep(min(0.05, max(0.0, start_at - time.time())))

    def walk(self, steps, hcas, tools):
        """The loop: every step in order (run_step), then the records left for later."""
        for position, entry in enumerate(steps):
            self.where = {"step": entry[0], "finished": False}
            self.progress(entry[0], position)
            self.check_lease()
            self.read_dead()
            try:
                self.run_step(entry, hcas, tools)
            finally:
                self.stop_watch()
        self.where = {"step": None, "finished": True}
        self.read_dead()
        self.records.extend(self.lost_clients())
        self.flush()
        self.progress(None, len(steps))

    def run_step(self, entry, hcas, tools):
        """One ``[step, test, round, role, peer]``: its servers or its clients, or its error records at once (a
        missing program, a peer not waited for again)."""
        step, test, role, peer = entry[0], entry[1], entry[3], entry[4]
        params = self.step_params(step, test, peer)
        plan = adapter.device_plan(self.p["hcas"], params, hcas)
        if test not in tools:
            tools[test] = self.tool(test)
        binary, version, missing = tools[test]
        if binary is None:
            self.records.extend(self.error_records(params, plan, role, missing))
        elif peer in self.dead:
            self.flush()
            self.records.extend(self.error_records(
                params, plan, role, "not run: %s %s" % (peer, self.dead[peer]), peer_is_client=role == "server"))
        elif role == "server":
            self.run_servers(params, plan, binary, version, step)
        else:
            self.run_client_step(params, plan, binary, version)

    def tear_down(self, holder):
        """Stop answering positions, stop every process still running, close the notices, build the records left,
        release the governor."""
        p = self.p
        self.where = {"step": None, "finished": True}
        self.stop_watch()
        if self.positions is not None:
            self.positions.close()
            self.positions = None
        for handle in self.live:
            state_child.kill(handle)
        if self.notices is not None:
            self.notices.close()
        try:
            self.flush()
        except Exception as exc:  # pylint: disable=broad-except  # keep the records already built
            self.records.append(results.error("rdma.sweep", "could not build records: %s" % exc,
                                              host=self.host, target=p["sweep_name"]))
        if p["cpu_governor"]:
            self.governor.release(holder)
            self.governor.reconcile()

    def finish(self, outcome, n_steps):
        """Leave the records for phase=status (records.json), and stay until it collected them (it removes this
        directory); when the controller is gone (no lease renewal) nobody will: remove everything."""
        p = self.p
        here = self.here
        if outcome != "finished":
            self.records.append(results.error(
                "rdma.sweep", "the schedule of %s stopped early (%s); every process it started was stopped"
                % (self.host, outcome), host=self.host, target=p["sweep_name"]))
        if outcome.startswith("the controller stopped polling"):
            # nobody will collect: leave nothing behind (processes were stopped above, the governor restored)
            self.cleanup(here)
            return dict(changed=True, results=self.records, outcome=outcome, steps=n_steps)
        write_json(here, RECORDS, self.records)
        self.progress(None, n_steps, finished=outcome)
        while p["lease_s"] and os.path.isdir(here):
            try:
                self.check_lease()
            except _LeaseExpired:
                self.cleanup(here)
                break
            time.sleep(STATUS_POLL_S)
        return dict(changed=True, results=[], outcome=outcome, steps=n_steps)

    def tool(self, test):
        """(binary, version, None) of a perftest program, or (None, None, why) when it is missing."""
        try:
            binary = self.binary(test)
        except ToolMissing as exc:
            return None, None, str(exc)
        return binary, self.version(binary), None

    def step_params(self, step, test, peer):
        p = self.p
        rates = (p["rates_by_peer"] or {}).get(peer) or []
        return dict(p, test=test, peer=(p["peers"] or {}).get(peer) or peer, peer_name=peer,
                    port=step_port(p["port"], step, p["port_span"], sweep_rails(p)),
                    peer_rates_gbit_s=[float(r or 0) for r in rates], state="sweep", step=step)

    def error_records(self, params, plan, role, reason, peer_is_client=False):
        """Every rail's error record of a step that cannot run; a client's step counts as one pair done and failing
        (the progress counts pairs, as the schedule's steps do, not rails)."""
        test = params["test"]
        out = []
        if role == "client" and not peer_is_client and plan:
            self.failing += 1
            self.pairs_done += 1
        for _index, device, tcp_port, _gid, facts in plan:
            facts = dict(facts, side="client", cpu_governor=self.governor_text)
            if peer_is_client:
                # the pair's edge, on the client (the peer) as the client records it
                out.append(results.error("rdma.%s" % test, reason, host=params["peer_name"], peer=self.host,
                                         target=device, facts=facts, tool={"name": "perftest"}))
            elif role == "server":
                out.append(results.error("rdma.%s.server" % test, reason, host=self.host, peer=params["peer_name"],
                                         target=device, facts=dict(facts, side="server"), tool={"name": "perftest"}))
            else:
                out.append(results.error("rdma.%s" % test, reason, host=self.host, peer=params["peer_name"],
                                         target=device, facts=facts, tool={"name": "perftest"}))
        return out

    def run_servers(self, params, plan, binary, version, step):
        """A server step: start one server per device, tell the client's runner, wait for the servers (the
        loop: wait_servers), then their records and what the step says of the peer."""
        jobs = self.start_servers(params, plan, binary, version, step)
        self.notify_ready(jobs, peer=params["peer_name"], address=params["peer"], step=step)
        self.flush()
        connected, abandoned, ran_out = self.wait_servers(jobs, params["peer_name"], plan, step)
        self.settle_servers(jobs, abandoned, params, version)
        self.judge_peer(jobs, abandoned, connected, ran_out, params, plan)

    def start_servers(self, params, plan, binary, version, step):
        """One server per device (perftest_clients.Job with its handle); one that cannot start is an error
        record at once."""
        p = self.p
        argvs = adapter.argvs_for(binary, params, plan, "server")
        jobs = []
        for (index, device, tcp_port, _gid, facts), argv in zip(plan, argvs):
            facts["cpu_governor"] = self.governor_text
            state_dir = self.inside("sweep-%s-%s-s%d-%s" % (p["sweep_name"], self.host, step, device))
            extra = {"device": device, "tcp_port": tcp_port, "index": index, "test": params["test"],
                     "inventory_hostname": self.host, "peer_name": params["peer_name"], "tool_version": version,
                     "facts": facts, "run_id": p["run_id"], "started_utc": results.utc_now(),
                     "params": {"timeout_s": p["timeout_s"]}}
            try:
                handle = self.start(argv, p["timeout_s"], state_dir, extra=extra, env=tool_env(plan))
            except Interrupted:
                raise
            except AcceptanceError as exc:
                self.records.extend(results.with_host([results.error(
                    "rdma.%s.server" % params["test"], "could not start the server: %s" % exc, target=device,
                    peer=params["peer_name"], params={"argv": argv}, facts=facts)], self.host))
                continue
            self.live.append(handle)
            job = perftest_clients.Job(index, device, tcp_port, argv, state_dir, facts)
            job.handle = handle
            job.extra = extra
            jobs.append(job)
        return jobs

    def wait_servers(self, jobs, peer, plan, step):
        """Wait for every server: it ends when its client is done (or at its timeout_s); a client the controller
        declares unreachable meanwhile is not waited for (dead.json, read every half second). Returns
        ({id(job): a client connected}, [the jobs abandoned], {id(job) of the servers that ran to their timeout}).
        A client is seen by its ESTABLISHED socket while its test runs (looked for with the dead list, twice a
        second: a read of the TCP tables costs the kernel a walk of every socket, and a partner of a dead or late host
        waits here for minutes), or, for a test shorter than a look, by its server's clean exit: a perftest server
        exits 0 only after a test with a client (src/write_bw.c and the other tests' main(): every path before and
        during the exchange with the client returns 1). A server's end is seen at once (every POLL_S)."""
        connected = dict((id(job), False) for job in jobs)
        abandoned = []
        ran_out = set()
        pending = list(jobs)
        next_look = time.monotonic() + 0.5
        while pending:
            self.check_lease()
            look = time.monotonic() >= next_look
            if look:
                next_look = time.monotonic() + 0.5
                self.read_dead()
                if any(connected.values()):
                    self.stop_watch()
                else:
                    self.watch_position(peer, step)       # no client yet: is its host only late?
            established = _NOT_READ     # one read of the TCP tables a look, for every server that needs it
            for job in list(pending):
                ended = state_child.outcome(job.handle)
                if ended is not None and not connected[id(job)] and ended.get("rc") in DETACHED_TIMEOUT_RCS \
                        and self.peer_behind(peer, step):
                    self.listen_again(job, plan)
                    continue
                if ended is not None:
                    connected[id(job)] = connected[id(job)] or ended.get("rc") == 0
                    if ended.get("rc") in DETACHED_TIMEOUT_RCS:
                        ran_out.add(id(job))
                    pending.remove(job)
                    continue
                if look and not connected[id(job)]:
                    if established is _NOT_READ:
                        established = tcp_ports_in_state(
                            [other.tcp_port for other in pending if not connected[id(other)]], TCP_ESTABLISHED)
                    # cannot tell (None): as connected, as before
                    connected[id(job)] = established is None or job.tcp_port in established
                if peer in self.dead:
                    state_child.kill(job.handle)
                    abandoned.append(job)
                    pending.remove(job)
            if pending:
                time.sleep(POLL_S)
        return connected, abandoned, ran_out

    def listen_again(self, job, plan):
        """No client came because its host is still busy with an earlier step: the same server, started again."""
        p = self.p
        self.live.remove(job.handle)
        self.remove(job.state_dir)
        job.handle = self.start(job.argv, p["timeout_s"], job.state_dir, env=tool_env(plan),
                                extra=dict(job.extra, started_utc=results.utc_now()))
        self.live.append(job.handle)

    def settle_servers(self, jobs, abandoned, params, version):
        """The servers' records: an abandoned one is an error at once, an ended one is built once the next step's
        processes run (off the critical path)."""
        p = self.p
        peer = params["peer_name"]
        for job in jobs:
            if job in abandoned:
                text = perftest_clients.text_of(job.handle)
                self.records.append(results.error(
                    "rdma.%s.server" % params["test"],
                    "server on %s stopped: its client %s %s" % (job.device, peer, self.dead.get(peer)),
                    host=self.host, peer=peer,
                    target=job.device, raw=text, tool={"name": "perftest", "version": version},
                    params={"argv": job.argv}, facts=dict(job.facts, side="server")))
            else:
                text, rc, timed_out, _killed = perftest_clients.collect(job, p["collect_timeout_s"])
                ended = state_child.outcome(job.handle) or {}
                ctx = Context(params={"test": params["test"], "timeout_s": p["timeout_s"]}, rc=rc, side="server",
                              host=self.host, peer=peer, target=job.device, argv=job.argv,
                              tool_version=version, started=job.handle.get("started_utc"),
                              duration_s=max(0.0, ended["ended"] - job.handle["started"]) if ended.get("ended")
                              else None, facts=job.facts, timed_out=timed_out)
                self.deferred.append(lambda text=text, ctx=ctx, where=job.state_dir: self.server_records(
                    text, ctx, where))
            self.live.remove(job.handle)
            if job in abandoned and not p["keep_state"]:
                self.remove(job.state_dir)

    def judge_peer(self, jobs, abandoned, connected, ran_out, params, plan):
        """What the server step says of its client: not measured (every server abandoned, none connected), or
        never came (every server ran to its timeout and no client connected: not waited for again). A server that
        ended on its own (it failed, or its client came and went between two looks) says nothing of the peer:
        the client's own record does."""
        peer = params["peer_name"]
        if jobs and len(abandoned) == len(jobs) and not any(connected.values()):
            self.records.extend(self.error_records(
                params, plan, "server", "not measured: %s (the client) %s" % (peer, self.dead.get(peer)),
                peer_is_client=True))
        elif jobs and not any(connected.values()) and all(id(job) in ran_out for job in jobs) \
                and tcp_established(jobs[0].tcp_port) is not None:
            # the servers ran to their timeout and no client ever connected: do not wait for this peer again
            self.dead.setdefault(peer, "never connected to %s's servers earlier in the sweep" % self.host)
        elif any(connected.values()):
            # its client came: the pair's client record is the peer's own, lost with it if the controller declares
            # the peer unreachable before this runner ends (lost_clients)
            self.served.append((params, plan))

    def lost_clients(self):
        """The client records, on their behalf, of the peers whose clients came to this host's servers and that the
        controller has declared unreachable since (its dead list, not this runner's own "never connected"): no record
        of a host declared unreachable is collected, and attribution sees a pair by its client record - without
        these, a pair whose client's host went silent during its test was in no client record at all."""
        declared = read_json(self.here, DEAD) or {}
        out = []
        for params, plan in self.served:
            peer = params["peer_name"]
            if peer in declared:
                out.extend(self.error_records(params, plan, "server", "not measured: %s (the client) %s; its own "
                                              "record is lost with it" % (peer, declared[peer]), peer_is_client=True))
        self.served = []
        return out

    def run_client_step(self, params, plan, binary, version):
        p = self.p
        argvs = adapter.argvs_for(binary, params, plan, "client", peer_address=params["peer"])
        jobs = []
        for (index, device, tcp_port, _gid, facts), argv in zip(plan, argvs):
            facts["cpu_governor"] = self.governor_text
            state_dir = self.inside("sweep-%s-%s-s%d-c-%s" % (p["sweep_name"], self.host, params["step"], device))
            jobs.append(perftest_clients.Job(index, device, tcp_port, argv, state_dir, facts))
        # the server's notice is usually there already (or comes within the pause): no refused first attempt
        self.heard_ready(params["peer_name"], params["step"], p["connect_retry_delay_s"])
        try:
            # every client is this runner's child (it dies with it), and the lease is checked while they run
            perftest_clients.run_clients(jobs, p["timeout_s"], p["connect_timeout_s"],
                                         p["connect_retry_delay_s"], env=tool_env(plan), started=self.on_started,
                                         poll_s=POLL_S,
                                         start=self.start, tick=self.check_lease,
                                         give_up=lambda: self.read_dead() or params["peer_name"] in self.dead,
                                         keep_waiting=lambda: self.peer_behind(params["peer_name"], params["step"]),
                                         ready=functools.partial(self.refused_once, params["peer_name"], params["step"]))
        finally:
            for job in jobs:
                if job.handle is not None:
                    state_child.kill(job.handle)
                    if job.handle in self.live:
                        self.live.remove(job.handle)
        if all(job.result[1] == 0 for job in jobs):
            # a clean step: its records are built once the next step's processes run (off the critical path)
            self.deferred.append(lambda: self.client_records(params, jobs, version))
        else:
            refused = self.client_records(params, jobs, version)
            if jobs and refused == len(jobs):
                self.dead[params["peer_name"]] = "did not answer (its servers never listened within " \
                                                 "connect_timeout_s=%ss) earlier in the sweep" % p["connect_timeout_s"]

    def refused_once(self, peer, step, wait_s):
        """A client was refused: watch the server's runner (is its host only late?), and wait at most wait_s for
        its ready notice (True: it came)."""
        self.watch_position(peer, step)
        return self.heard_ready(peer, step, wait_s)

    def on_started(self, handle):
        self.live.append(handle)
        self.flush()

    def client_records(self, params, jobs, version):
        """The records of a client step's rails; the step is one pair done (failing when a rail failed)."""
        refused = 0
        failed = False
        for job in jobs:
            text, rc, timed_out = job.result
            duration_s = None
            ended = (state_child.outcome(job.handle) or {}) if job.handle else {}
            if ended.get("ended"):
                duration_s = max(0.0, ended["ended"] - job.handle["started"])
            recs = adapter.records(text, Context(
                params=dict(params, sweep_name=self.p["sweep_name"]), rc=rc, side="client", host=self.host,
                target=job.device, index=job.index,
                argv=job.argv, tool_version=version, facts=job.facts, timed_out=timed_out, started=job.started,
                duration_s=duration_s, attempts=job.attempts, reading=job.reading))
            self.records.extend(recs)
            failed = failed or any(r.get("status") in ("fail", "error") for r in recs)
            refused += 1 if job.reading is not None and job.reading.retry else 0    # refused to the end
            if not self.p["keep_state"]:
                self.remove(job.state_dir)
        if jobs:
            self.pairs_done += 1
            self.failing += 1 if failed else 0
        return refused

    def server_records(self, text, ctx, where):
        self.records.extend(adapter.records(text, ctx))
        if not self.p["keep_state"]:
            self.remove(where)

    def flush(self):
        """Build the records left for later (see run_client_step); never loses one."""
        while self.deferred:
            self.deferred.pop(0)()

    # ---------------------------------------------------------------- ready notices (UDP, best effort)
    def open_notices(self):
        """A UDP socket on the control port: a server's runner tells its client's runner "listening now" so
        that a refused client re-starts at once. Best effort: without it (port taken, datagrams filtered) a
        refused client re-starts after connect_retry_delay_s, as before."""
        p = self.p
        try:
            sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("0.0.0.0", control_port(p["port"], p["port_span"], sweep_rails(p))))
            sock.setblocking(False)
            self.notices = sock
        except (OSError, socket.error) as exc:
            self.note("ready notices off (%s): refused clients retry every %ss" % (exc, p["connect_retry_delay_s"]))
            self.notices = None

    def notify_ready(self, jobs, peer, address, step):
        if self.notices is None or not jobs:
            return
        deadline = time.monotonic() + 5.0
        while time.monotonic() < deadline:
            listening = tcp_ports_in_state([job.tcp_port for job in jobs], TCP_LISTEN)
            if listening is None or all(job.tcp_port in listening for job in jobs):
                break
            if any(state_child.outcome(job.handle) is not None for job in jobs):
                break
            time.sleep(0.01)
        message = json.dumps({"run": self.p["run_id"], "label": self.p["sweep_name"], "from": self.host,
                              "step": step}).encode("utf-8")
        target = (address, control_port(self.p["port"], self.p["port_span"], sweep_rails(self.p)))
        for _copy in range(2):
            try:
                self.notices.sendto(message, target)
            except (OSError, socket.error):
                return

    def heard_ready(self, peer, step, wait_s):
        """True once ``peer`` said its servers of ``step`` listen (waits at most wait_s for it)."""
        if self.notices is None:
            return False
        deadline = time.monotonic() + wait_s
        while True:
            while True:
                try:
                    data = self.notices.recv(4096)
                except (OSError, socket.error):
                    break
                try:
                    item = json.loads(data.decode("utf-8"))
                except ValueError:
                    continue
                if isinstance(item, dict) and item.get("run") == self.p["run_id"] and \
                        item.get("label") == self.p["sweep_name"]:
                    self.heard.add((item.get("from"), item.get("step")))
            if (peer, step) in self.heard:
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            select.select([self.notices], [], [], left)

    # ---------------------------------------------------------------- lease, dead peers, progress
    def check_lease(self):
        lease_s = self.p["lease_s"]
        if not lease_s:
            return
        try:
            age = time.time() - os.lstat(os.path.join(self.here, LEASE)).st_mtime
        except OSError:
            age = lease_s + 1
        if age > lease_s:
            raise _LeaseExpired("the controller stopped polling (no lease renewal for %.0f s > lease_s=%s): "
                                "ansible-playbook was stopped or lost this host" % (age, lease_s))

    def peer_behind(self, peer, step):
        """True while ``peer`` is alive and still at a step before ``step``: the controller saw it there (fresh within
        lease_s), or its own runner says so (position answers, bounded by LagBound)."""
        self.read_dead()
        if peer in self.dead:
            return False
        data = read_json(self.here, POSITIONS) or {}
        fresh = time.time() - float(data.get("time") or 0) < max(30, self.p["lease_s"] or 0)
        position = (data.get("positions") or {}).get(peer)
        if fresh and position is not None and int(position) < step:
            return True
        return self.peer_says_behind(peer, step)

    # ---------------------------------------------------------------- position answers (TCP, best effort)
    def open_positions(self):
        """Answer the peers' runners where this one is (PositionServer; where it listens: listen_address). Best
        effort: without it (off, no address of this host, a loopback address the peers cannot reach, the port taken)
        a late partner is only known from the controller's positions, as before - and the runner says so once
        (note)."""
        p = self.p
        port = position_port(p)
        address = (p["peers"] or {}).get(self.host)
        if not port:
            return
        if not address:
            self.note("position answers off: peers gives no address of %s" % self.host)
            return
        try:
            self.positions = PositionServer(self.who(self.host), lambda: self.where).open(address, port, p["peers"])
        except (AcceptanceError, OSError, socket.error) as exc:
            self.note("position answers off (%s port %s: %s): a late partner is known from the controller alone"
                      % (address, port, exc))
            self.positions = None

    def note(self, text):
        """Say ``text`` once: in progress.json (the wait prints each note of a host once) and as a module warning."""
        if text in self.notes:
            return
        self.notes.append(text)
        self.module.warn(text)
        self.progress(*self.last_progress)

    def who(self, host):
        return {"run": self.p["run_id"], "label": self.p["sweep_name"], "host": host}

    def watch_position(self, peer, step):
        """Start asking ``peer``'s runner its position (once per step; nothing when the answers are off)."""
        port = position_port(self.p)
        if not port or (self.watch is not None and self.watch[:2] == (peer, step)):
            return
        self.stop_watch()
        address = (self.p["peers"] or {}).get(peer) or peer
        self.watch = (peer, step, PositionWatch(address, port, self.who(peer)).start(),
                      LagBound(step, step_worst_s(self.p)))

    def stop_watch(self):
        if self.watch is not None:
            self.watch[2].stop()
            self.watch = None

    def peer_says_behind(self, peer, step):
        """What ``peer``'s own runner last said (fresh), judged by the step's LagBound."""
        if self.watch is None or self.watch[:2] != (peer, step):
            return False
        return self.watch[3].keep_waiting(self.watch[2].latest(), time.monotonic())

    def read_dead(self):
        for name, why in (read_json(self.here, DEAD) or {}).items():
            if name != self.host and name not in self.dead:
                self.dead[name] = why

    def progress(self, step, position, finished=None):
        self.last_progress = (step, position, finished)
        data = {"pid": self.started_pid, "proc_start_time": process_start_time(self.started_pid),
                "next_step": step, "position": position, "pairs_done": self.pairs_done, "failing": self.failing,
                "dead": sorted(self.dead), "finished": finished, "time": time.time(),
                "notes": list(self.notes)}
        write_json(self.here, PROGRESS, data)


class _LeaseExpired(Exception):
    pass
