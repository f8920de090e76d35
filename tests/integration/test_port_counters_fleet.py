# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The fabric error counter window (rdma_counter_window) end to end: playbooks/rdma.yml over real SSH on 4
network-namespace hosts, the fake ib_write_bw (tests/integration/fake_perftest) printing real perftest captures.

Every host sees its own /sys/class/infiniband (netns.Fleet(sysfs=...), laid over /sys in its sshd mount namespace
only): one InfiniBand port mlx5_0/1, ACTIVE, whose counters are the real ConnectX values of
fixtures/port_counters/gpud-pr943-mlx5_1-port1-counters.txt (test_port_counters.healthy: its saturated
link_downed and port_xmit_discards lowered so they can show growth). The role reads them before the rounds and
after them (aifabric.acceptance.port_counters); during the sweep the fake perftest's first finished test on a host
adds to a counter file of that host's own test-made tree ("bumps"):

- node1's symbol_error grows by 40 (above the fail threshold of 10) and node1's pair with node2 is slow (the
  fake prints a real, slower capture for that pair only, "degraded_peers"): node1's port record fails as measured,
  the analysis charges it to the link node1 <-> node2 (rdma.port_counters.link on both ends, naming the port):
  a bad cable between two healthy hosts fails neither, both warn;
- node3's link_downed grows by one (a flap) and nothing names a link (no slow pair, no topology): the growth is
  node3's own, its port fails it;
- node4 is healthy and passes.
"""

from __future__ import annotations

import os
import time

import pytest

from ansible_collections.aifabric.acceptance.tests.integration.test_rdma_fleet import CHECK, PLAYBOOK, events, prepare
from ansible_collections.aifabric.acceptance.tests.integration.test_ssh_fleet import (
    assert_accounts_for, assert_nothing_left, assert_valid_records, finish, load_report, records_of, schema_validator, start, tail)
from ansible_collections.aifabric.acceptance.tests.unit.plugins.module_utils import test_env_probe as tep
from ansible_collections.aifabric.acceptance.tests.unit.plugins.module_utils import test_port_counters as tpc

PORT = "mlx5_0/1"
COUNTERS = "/sys/class/infiniband/mlx5_0/ports/1/counters"
COUNTER_CHECK = "rdma.port_counters"
GROWS = {"node1": ("symbol_error", 40), "node3": ("link_downed", 1)}


def ib_port(host, root):
    """The sysfs a host sees: mlx5_0 port 1, InfiniBand, ACTIVE at 100 Gb/s, real healthy counter values."""
    tpc.sysfs(root, {PORT: {"counters": tpc.healthy(), "hw_counters": {"out_of_buffer": "0"}}})
    base = "/sys/class/infiniband/mlx5_0/ports/1"
    tep.put(root, base + "/state", tep.KERNEL_STATE["Active"] + "\n")
    tep.put(root, base + "/phys_state", tep.KERNEL_PHYS["LinkUp"] + "\n")
    tep.put(root, base + "/rate", tep.KERNEL_RATE["100"] + "\n")


def counter_file(host, name):
    """The host's own test-made counter file, as the controller sees it (never the real /sys)."""
    path = os.path.join(host.sysfs_root, COUNTERS.lstrip("/"), name)
    assert path.startswith(host.workdir + os.sep) and os.path.isfile(path), path
    return path


def read_counter(host, name):
    with open(counter_file(host, name)) as handle:
        return int(handle.read().strip())


@pytest.mark.fleet(n=4, sysfs=ib_port)
def test_counters_grow_during_the_sweep_port_and_link_named(fleet, controller, tmp_path):
    validator = schema_validator(controller)
    report_dir = tmp_path / "reports"
    out = str(tmp_path / "ansible-playbook.log")
    ips = dict((h.name, h.ip) for h in fleet.hosts)
    settings = {"default": {"duration_s": 0.3},
                # the pair node1 <-> node2 is slow whichever end is the client
                "node1": {"degraded_peers": [ips["node2"]]}, "node2": {"degraded_peers": [ips["node1"]]}}
    before = {}
    for name, (counter, by) in GROWS.items():
        host = fleet.host(name)
        before[name] = read_counter(host, counter)
        settings.setdefault(name, {})["bumps"] = [{"file": counter_file(host, counter), "by": by,
                                                   "marker": os.path.join(host.workdir, "bumped-" + counter)}]
    inventory, extra, log = prepare(fleet, tmp_path, settings, devices=("mlx5_0",),
                                    # every pair measured once (mode all): the low pair is judged a link as it is
                                    extra_vars={"rdma_confirm": False, "rdma_pairings": {"mode": "all"}})
    started = time.monotonic()
    proc = start(fleet, controller.playbook_argv(PLAYBOOK, inventory, "-e", extra),
                 controller.env(fleet, report_dir), out, controller.repo)
    rc = finish(proc, 200, out)
    elapsed = time.monotonic() - started
    assert rc == 0, "ansible-playbook exit %d:\n%s" % (rc, tail(out))

    # the counters grew during the sweep: after the before reading, before the after reading
    bumped = [e for e in events(log) if e["role"] == "bump"]
    assert sorted(e["host"] for e in bumped) == ["node1", "node3"], bumped
    for name, (counter, by) in GROWS.items():
        assert read_counter(fleet.host(name), counter) == before[name] + by

    report = load_report(report_dir, out)[1]
    records = records_of(report)
    assert_valid_records(records, validator)
    clients = [r for r in records if r["check"] == CHECK]
    assert len(clients) == 6, [(r["host"], r["peer"]) for r in clients]
    slow = sorted(tuple(sorted((r["host"], r["peer"]))) for r in clients if r["metrics"]["bw_avg_gbit_s"] < 100)
    assert slow == [("node1", "node2")], slow

    # the window: one before record per host, one after record per host's port
    window = [r for r in records if r["check"] == COUNTER_CHECK]
    assert sorted((r["host"], r["params"]["phase"]) for r in window) == sorted(
        (h, phase) for h in ips for phase in ("before", "after")), window
    after = dict((r["host"], r) for r in window if r["params"]["phase"] == "after")
    assert dict((h, (r["target"], r["status"])) for h, r in after.items()) == {
        "node1": (PORT, "fail"), "node2": (PORT, "pass"), "node3": (PORT, "fail"), "node4": (PORT, "pass")}, after
    assert after["node1"]["metrics"]["symbol_error_growth"] == 40 and "symbol_error grew by 40" in after["node1"]["reason"]
    assert not after["node1"]["facts"]["flapped"]
    assert after["node3"]["metrics"]["link_downed_growth"] == 1 and after["node3"]["facts"]["flapped"]
    assert "went down 1 time(s)" in after["node3"]["reason"], after["node3"]
    for name in ("node2", "node4"):
        grown = dict((k, v) for k, v in after[name]["metrics"].items() if k.endswith("_growth") and v)
        assert grown == {} and after[name]["reason"] is None, after[name]

    # the link: node1's port errors and its slow pair with node2 are one fault, named on both ends
    links = sorted((r["host"], r["peer"], r["target"], r["status"]) for r in records
                   if r["check"] == COUNTER_CHECK + ".link")
    assert links == [("node1", "node2", "mlx5_0", "warn"), ("node2", "node1", "mlx5_0", "warn")], links
    link = [r for r in records if r["check"] == COUNTER_CHECK + ".link"][0]
    assert link["facts"]["link"] == ["node1", "node2"] and link["facts"]["grown"] == {"symbol_error": 40}
    # the slow pair's figure is the fake's real slower capture (30.746345 Gbit/s), the median the real normal one
    assert "grew symbol_error +40 during the window and the pair is slow on rdma.ib_write_bw (30.75 against a " \
           "fleet median of 779.21)" in link["reason"], link["reason"]
    assert link["facts"]["ports"] == {"node1": PORT} and link["facts"]["measured_check"] == COUNTER_CHECK
    mine = [f for f in report["findings"] if f.get("check") == COUNTER_CHECK]
    assert sorted((f["kind"], sorted(f["hosts"]), f["target"]) for f in mine) == [
        ("link", ["node1", "node2"], "mlx5_0"), ("node", ["node3"], "mlx5_0")]

    # the final verdicts of the whole fleet, and what each rests on (the pair records of the judged matrix count
    # toward no host: attribution's .node/.link records do; node1's port record counts toward no host either: the
    # link's records do): node1 and node2 warn for the link, node3 fails on its own flap, node4 passes
    hosts = dict((h["host"], (h["status"], h["checks"])) for h in report["summary"]["hosts"])
    assert hosts == {"node1": ("warn", [CHECK + ".link", COUNTER_CHECK + ".link"]),
                     "node2": ("warn", [CHECK + ".link", COUNTER_CHECK + ".link"]),
                     "node3": ("fail", [COUNTER_CHECK]),
                     "node4": ("pass", [])}, (hosts, sorted(
                         (r["host"], r["check"], r.get("target"), r["status"]) for r in records if r["status"] != "pass"))
    # the run summary the playbook publishes (set_stats, what AWX shows) gives the same verdicts
    assert_accounts_for(report, records, sorted(ips), ["node3"])
    print("rdma.yml with the counter window, 4 hosts: %.1f s" % elapsed)
    assert_nothing_left(fleet)
