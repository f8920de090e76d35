# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pure decisions perftest_clients and the perftest adapter split out: GID choice, GPU sharing, client re-starts
(the one retry decision, from the one parse the record reuses), a record's header facts and warnings."""

from __future__ import annotations

import os
import sys

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.aifabric.acceptance.plugins.module_utils import perftest_clients, state_child
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import Context, replace
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import perftest_sweep as adapter
from ansible_collections.aifabric.acceptance.tests.unit.helpers import parser_fixture

from ansible_collections.aifabric.acceptance.tests.unit.plugins.module_utils.parsers.mutations import mutated

FIXTURES = parser_fixture("perftest")
CAPTURES = sorted(n for n in os.listdir(FIXTURES) if n.endswith(".txt"))
REFUSED = "perftest-couldnt-connect-unable-to-init-socket-pre-fix.txt"

# one start for both records of a comparison (two calls may straddle a second: utc_now)
STARTED = "2026-01-01T00:00:00Z"


def _gid(index, gid, netdev="eth0", ipv4=None, kind="RoCE v2"):
    return {"index": index, "gid": gid, "netdev": netdev, "ipv4": ipv4, "type": kind}


def test_routable_gids_prefer_ipv4_on_the_ports_netdev_lowest_index_first():
    port = {"netdevs": [{"name": "eth0"}], "gids": [
        _gid(0, "fe80::1"), _gid(5, "::ffff:10.0.0.2", ipv4="10.0.0.2"), _gid(3, "::ffff:10.0.0.1", ipv4="10.0.0.1"),
        _gid(1, "::ffff:10.9.0.1", netdev="eth9", ipv4="10.9.0.1"), _gid(2, "::ffff:10.0.0.3", ipv4="10.0.0.3", kind="RoCE v1")]}
    assert [g["index"] for g in adapter.routable_gids(port)] == [3, 5]


def test_routable_gids_ipv6_only_skip_link_local():
    port = {"netdevs": [], "gids": [_gid(0, "fe80::1"), _gid(4, "2001:db8::1"), _gid(2, "FE80::2")]}
    assert [g["index"] for g in adapter.routable_gids(port)] == [4]
    assert adapter.routable_gids({"gids": [_gid(0, "fe80::1")]}) == []


def test_gpus_shared_when_more_hcas_than_gpus():
    topology = {"matrix": {"GPU0": {"NIC0": "PIX", "NIC1": "SYS", "NIC2": "PXB"}},
                "nic_names": {"NIC0": "mlx5_0", "NIC1": "mlx5_1", "NIC2": "mlx5_2"}}
    out = adapter.gpus_for_hcas(["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_9"], topology)
    assert out["mlx5_0"]["gpu"] == 0 and "closest free GPU" in out["mlx5_0"]["why"]
    # the HCAs left share in rail order, each told whom it shares with
    assert out["mlx5_1"]["why"] == "GPU0 is the closest GPU (SYS) to mlx5_1, shared with mlx5_0 (more HCAs than GPUs)"
    assert out["mlx5_2"]["why"].endswith("(PXB) to mlx5_2, shared with mlx5_0, mlx5_1 (more HCAs than GPUs)")
    assert out["mlx5_9"]["gpu"] is None and "not in nvidia-smi topo -m" in out["mlx5_9"]["why"]


def _capture(name):
    with open(os.path.join(FIXTURES, name), encoding="utf-8") as handle:
        return handle.read()


def test_the_one_retry_decision_only_a_failed_run_that_could_not_connect():
    refused = _capture(REFUSED)             # linux-rdma/perftest PR #228 (PROVENANCE.md)
    assert adapter.read_output(refused, 1, False).retry
    assert not adapter.read_output(refused, 0, False).retry
    assert not adapter.read_output(refused, 124, True).retry
    assert not adapter.read_output(refused, None, False).retry     # killed from outside: no exit code to trust
    assert not adapter.read_output("", 1, False).retry
    # a failure that is not about reaching the server, a measured run, no device: final
    for name in ("perftest-client-failed-to-modify-qp-to-rts.txt", "ib_write_bw-client-no-rdma-device.txt",
                 "amd-ionic-ib-write-bw-client-bidir-q4-a-gbits.txt"):
        assert not adapter.read_output(_capture(name), 1, False).retry, name


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(CAPTURES), rc=st.sampled_from([0, 1, None]), data=st.data())
def test_fuzz_the_reading_never_raises_and_retries_only_without_a_row(name, rc, data):
    text = data.draw(mutated(_capture(name)))
    read = adapter.read_output(text, rc, False)
    assert (read.parsed is None) != (read.problem is None)
    assert not read.retry or (rc == 1 and not (read.parsed or {}).get("rows"))
    ctx = Context(params={"test": "ib_write_bw", "timeout_s": 30}, rc=rc, host="h1", peer="h2", target="mlx5_0",
                  started=STARTED)
    assert adapter.records(text, replace(ctx, reading=read)) == adapter.records(text, ctx)


def test_the_reading_is_the_records_parse():
    """The record built from the client round's reading is the record built from the text alone, on every real
    perftest capture, as a client and a server, exited 0 or 1, and timed out."""
    for name in CAPTURES:
        text = _capture(name)
        for side, rc, timed_out in (("client", 0, False), ("client", 1, False), ("server", 0, False),
                                    ("client", 124, True)):
            ctx = Context(params={"test": "ib_write_bw", "timeout_s": 30}, rc=rc, timed_out=timed_out, side=side,
                          host="h1", peer="h2", target="mlx5_0", started=STARTED)
            read = adapter.read_output(text, rc, timed_out)
            assert adapter.records(text, replace(ctx, reading=read)) == adapter.records(text, ctx), (name, side, rc)


def test_a_client_round_parses_each_output_once(tmp_path, monkeypatch):
    """Two refused attempts, then a measured one: three parses in all - the retry decision's - and the record of the
    last attempt is built from the same parse, not a fourth."""
    outputs = [_capture(REFUSED), _capture(REFUSED), _capture("amd-ionic-ib-write-bw-client-bidir-q4-a-gbits.txt")]
    calls = []
    real_parse = adapter.parser.parse

    def counted(text):
        calls.append(text)
        return real_parse(text)
    monkeypatch.setattr(adapter.parser, "parse", counted)

    def start(argv, timeout_s, state_dir, env=None):
        # each attempt a real process (state_child.start: the sweep's own children) that prints the next capture
        text = outputs.pop(0)
        path = str(tmp_path / ("output-%d" % len(outputs)))
        with open(path, "w", encoding="utf-8") as out:
            out.write(text)
        program = "import sys; sys.stdout.write(open(sys.argv[1]).read()); sys.exit(int(sys.argv[2]))"
        rc = 1 if "Couldn't connect" in text else 0
        return state_child.start([sys.executable, "-c", program, path, str(rc)], timeout_s, state_dir, env=env,
                                 base=str(tmp_path))

    job = perftest_clients.Job(0, "mlx5_0", 18515, ["ib_write_bw", "10.0.0.2"], str(tmp_path / "c"), {})
    perftest_clients.run_clients([job], 10, 600, 0.0, start=start, poll_s=0.01)
    text, rc, timed_out = job.result
    assert (job.attempts, rc, len(calls)) == (3, 0, 3) and not job.reading.retry
    recs = adapter.records(text, Context(params={"test": "ib_write_bw"}, rc=rc, timed_out=timed_out, host="h1",
                                         peer="h2", target="ionic_1", attempts=job.attempts, reading=job.reading,
                                         started="2026-12-06T10:00:00Z"))
    assert recs[0]["metrics"]["bw_avg_gbit_s"] > 0
    assert len(calls) == 3 and recs[0]["params"]["attempts"] == 3
    assert recs == adapter.records(text, Context(params={"test": "ib_write_bw"}, rc=rc, host="h1", peer="h2",
                                                 target="ionic_1", attempts=3, started="2026-12-06T10:00:00Z"))


def test_warned_names_doubtful_warnings_and_the_callers_note():
    parsed = {"warnings": [], "rows": []}
    assert adapter.warned(parsed, None) == ("pass", None)
    assert adapter.warned(parsed, "governor is powersave") == ("warn", "governor is powersave")


def test_jobs_compare_by_identity():
    one = perftest_clients.Job(0, "mlx5_0", 18515, ["ib_write_bw"], "/tmp/x", {})
    two = perftest_clients.Job(0, "mlx5_0", 18515, ["ib_write_bw"], "/tmp/x", {})
    assert one != two and len({one, two}) == 2
    assert (one.handle, one.attempts, one.result) == (None, 0, None)
