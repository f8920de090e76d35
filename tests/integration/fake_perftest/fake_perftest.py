# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A stand-in for perftest's ib_write_bw on hosts without RDMA (integration tests only).

It behaves like the real tool where orchestration can tell the difference, and
prints only REAL captured perftest output (files of
tests/unit/plugins/module_utils/parsers/fixtures/perftest/):

- server (no address argument): listens on the TCP port (-p, default 18515) like
  perftest's out-of-band exchange, prints the real "Waiting for client to
  connect..." banner, accepts one client, runs the "test" for FAKE_T seconds
  while the client stays connected, then prints the captured server output;
  if the client goes away mid-test it prints perftest's real exchange failure
  lines and exits 1;
- client (last argument an address): connects to address:port; when nothing
  listens it prints the real "Couldn't connect to <addr>:<port>" lines and
  exits 1 (the module retries); after the test it prints the captured client
  output; if the server dies mid-test it prints the real exchange failure.

Behaviour knobs come from the JSON file named by $FAKE_PERFTEST_CONFIG or
fake_perftest.json next to this script (hosts share a filesystem in the netns
harness, so settings are keyed by hostname):
  {"default": {"duration_s": 0.5, "client_output": "...", "server_output": "..."},
   "node2": {"duration_s": 3, "degraded": true}}
("fixtures" may name the directory of the captures when this script is copied elsewhere; "stall_s" is how long
either side waits beyond the test's duration for a peer that went silent mid-test before it prints the exchange
failure - 30 s, as a tool left alone would wait; fault tests lower it, what they test is not that wait.
"degraded_peers": the addresses a client of this host prints the degraded capture against - one slow link, not a
bad node. "bumps": [{"file", "by", "marker"}] - once per host (the first run to create "marker" does it), after its
test, "by" is added to the number in "file": a counter of the host's test-made sysfs tree growing during the run.)
Every run is also logged (one JSON line: host, pid, argv, role, outcome) to
"log" in that file's settings, for the tests to assert on concurrency.
"""

import json
import os
import re
import select
import socket
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = os.path.join(HERE, "..", "..", "unit", "plugins", "module_utils", "parsers", "fixtures", "perftest")
DEFAULTS = {
    "duration_s": 0.5,
    "client_output": "amd-ionic-ib-write-bw-client-bidir-q4-a-gbits.txt",
    "server_output": "amd-ionic-rocm-gdr-ib-write-bw-server-a-MiB-only-last-size.txt",
    "log": None,
    "fixtures": None,
    # a "bad node": every pair it takes part in prints this (real, slower) client capture instead
    "degraded": False,
    "degraded_output": "mlx4-ib-write-bw-client-a-all-sizes-MB.txt",
    "stall_s": 30,
}
BANNER = ("************************************\n"
          "* Waiting for client to connect... *\n"
          "************************************\n")


def settings():
    path = os.environ.get("FAKE_PERFTEST_CONFIG") or os.path.join(HERE, "fake_perftest.json")
    conf = dict(DEFAULTS)
    try:
        with open(path) as handle:
            data = json.load(handle)
    except (IOError, OSError, ValueError):
        data = {}
    conf.update(data.get("default", {}))
    conf.update(data.get(socket.gethostname(), {}))
    return conf


def capture(name, conf=None, device=None):
    with open(os.path.join((conf or {}).get("fixtures") or FIXTURES, name)) as handle:
        text = handle.read()
    if device:
        # perftest prints the device it was given (-d) in its header: so does the stand-in
        text = re.sub(r"(\bDevice +: )\S+", lambda match: match.group(1) + device, text)
    # the real output only: drop a leading server banner of the capture (printed live above)
    return text.replace(BANNER, "")


def log(conf, **event):
    if not conf.get("log"):
        return
    event.update({"host": socket.gethostname(), "pid": os.getpid(), "time": time.time()})
    with open(conf["log"], "a") as handle:
        handle.write(json.dumps(event) + "\n")


def bump(conf):
    """Add each bump's "by" to the number in its "file", once per bump: the run that creates its "marker" does it."""
    for entry in conf.get("bumps") or ():
        try:
            os.close(os.open(entry["marker"], os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644))
        except FileExistsError:
            continue
        with open(entry["file"]) as handle:
            value = int(handle.read().strip())
        with open(entry["file"], "w") as handle:
            handle.write("%d\n" % (value + entry["by"]))
        log(conf, role="bump", event="bumped", file=entry["file"], value=value + entry["by"])


def parse(argv):
    port, address, device = 18515, None, None
    i = 0
    takes_value = {"-d", "-i", "-p", "-x", "-s", "-n", "-D", "-q", "-A"}
    while i < len(argv):
        arg = argv[i]
        if arg == "-p":
            port = int(argv[i + 1])
        if arg == "-d":
            device = argv[i + 1]
        if arg in takes_value:
            i += 2
            continue
        if not arg.startswith("-"):
            address = arg
        i += 1
    return port, address, device


def exchange_failure():
    # perftest's real wording (fixture perftest-server-ethernet-read-keys-couldnt-read-remote-address.txt)
    sys.stderr.write(capture("perftest-server-ethernet-read-keys-couldnt-read-remote-address.txt", CONF))
    sys.stderr.flush()
    return 1


def server(conf, port, device):
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    listener.bind(("0.0.0.0", port))
    listener.listen(1)
    sys.stdout.write("\n" + BANNER)
    sys.stdout.flush()
    log(conf, role="server", event="listening", port=port, device=device)
    conn = listener.accept()[0]
    listener.close()
    log(conf, role="server", event="accepted", port=port, device=device)
    conn.sendall(b"go degraded\n" if conf.get("degraded") else b"go\n")
    conn.settimeout(conf["duration_s"] + conf["stall_s"])
    try:
        done = conn.recv(16)
    except socket.timeout:
        done = b""
    if done != b"done\n":
        log(conf, role="server", event="client lost", port=port, device=device)
        return exchange_failure()
    conn.sendall(b"ok\n")
    bump(conf)
    sys.stdout.write(capture(conf["server_output"], conf, device))
    sys.stdout.flush()
    log(conf, role="server", event="finished", port=port, device=device)
    return 0


def client(conf, address, port, device):
    try:
        conn = socket.create_connection((address, port), timeout=5)
    except (OSError, socket.error):
        # perftest's real wording (fixture perftest-couldnt-connect-unable-to-init-socket-pre-fix.txt)
        sys.stderr.write("Couldn't connect to %s:%d\n" % (address, port))
        sys.stderr.write("Unable to open file descriptor for socket connection Unable to init the socket "
                         "connection\n")
        log(conf, role="client", event="refused", port=port, device=device, address=address)
        return 1
    log(conf, role="client", event="connected", port=port, device=device, address=address)
    conn.settimeout(conf["duration_s"] + conf["stall_s"])
    try:
        greeting = conn.recv(32)
        if not greeting.startswith(b"go"):
            return exchange_failure()
        degraded = conf.get("degraded") or b"degraded" in greeting or address in conf.get("degraded_peers", ())
        started = time.time()
        # the "test": the server must stay there all along (EOF on the socket = it died)
        readable = select.select([conn], [], [], conf["duration_s"])[0]
        if readable and not conn.recv(16):
            raise OSError("server closed the connection")
        conn.sendall(b"done\n")
        if conn.recv(16) != b"ok\n":
            raise OSError("no acknowledgement from the server")
    except (OSError, socket.error):
        log(conf, role="client", event="server lost", port=port, device=device, address=address)
        return exchange_failure()
    bump(conf)
    sys.stdout.write(capture(conf["degraded_output"] if degraded else conf["client_output"], conf, device))
    sys.stdout.flush()
    log(conf, role="client", event="finished", port=port, device=device, address=address,
        elapsed=time.time() - started)
    return 0


CONF = {}


def main():
    conf = settings()
    CONF.update(conf)
    if "--version" in sys.argv[1:]:
        sys.stdout.write("Version: fake-0 (aifabric integration stand-in)\n")
        return 0
    if "--help" in sys.argv[1:] or "-h" in sys.argv[1:]:
        sys.stdout.write("Usage: ib_write_bw [options] [server address] (aifabric integration stand-in; "
                         "-d -i -p -x -s -n -D -q -A and a server address are understood)\n")
        return 0
    port, address, device = parse(sys.argv[1:])
    if address:
        return client(conf, address, port, device)
    return server(conf, port, device)


if __name__ == "__main__":
    sys.exit(main())
