# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""perftest's atomic tests (issue 26 item 2): ib_atomic_bw and ib_atomic_lat, fetch-and-add and compare-and-swap.

Import mode (the perftest module's from_output) on every real atomics capture in the parser's fixtures (see their
PROVENANCE.md): the record's check, operation and metrics are the values the tool printed (bandwidth converted with
perftest's own MB/sec definition, 2**20 bytes/s). The runner's argv passes -A where asked and never a size, and
no default floor judges an atomic test (no source gives one).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys

import pytest

from ansible_collections.aifabric.acceptance.plugins.module_utils import results
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import perftest_sweep as perftest_tool
from ansible_collections.aifabric.acceptance.plugins.modules import perftest, perftest_sweep
from ansible_collections.aifabric.acceptance.tests.unit.helpers import Fail, parser_fixture
from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules import test_perftest_module

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = parser_fixture("perftest")
MB = 1048576 * 8 / 1e9     # perftest's MB/sec (format_factor 0x100000) in Gbit/s


exits = test_perftest_module.exits      # the perftest module tests' stand-in exits (autouse) and module call
call = test_perftest_module.call


def imported(name, **args):
    out = call(dict({"from_output": os.path.join(FIXTURES, name), "inventory_hostname": "n1"}, **args))
    assert len(out["results"]) == 1
    record = out["results"][0]
    assert not results.validate(record), results.validate(record)   # the record schema, series family included
    return record


# name: (check, operation, device, (tool BW peak, tool BW average, MsgRate[Mpps], #iterations))
BW_CAPTURES = {
    "pib-perftest2.0-ib-atomic-bw-client-cmp-and-swap-MB.txt":
        ("rdma.ib_atomic_bw", "CMP_AND_SWAP", "pib_1", (1.70, 1.67, 0.219031, 1000)),
    "mlx4-ib-atomic-bw-client-fetch-and-add-MB-cpufreq.txt":
        ("rdma.ib_atomic_bw", "FETCH_AND_ADD", "mlx4_0", (18.79, 18.67, 2.446776, 20000)),
    "rxe-softroce-ib-atomic-bw-client-fetch-and-add.txt":
        ("rdma.ib_atomic_bw", "FETCH_AND_ADD", "rxe0", (0.06, 0.06, 0.008390, 5)),
    "rxe-softroce-ib-atomic-bw-server-banner-fetch-and-add.txt":
        ("rdma.ib_atomic_bw.server", "FETCH_AND_ADD", "rxe0", (0.06, 0.06, 0.008390, 5)),
}
# name: (operation, device, (t_min, t_max, t_typical, t_avg, t_stdev, 99%, 99.9%), #iterations)
LAT_CAPTURES = {
    "mlx4-ib-atomic-lat-client-fetch-and-add-cpufreq.txt":
        ("FETCH_AND_ADD", "mlx4_0", (2.27, 14.36, 2.34, 2.37, 0.31, 2.56, 10.20), 20000),
    "k8s-mlx5-roce-ib-atomic-lat-client-rdma-cm-tab-padded.txt":
        ("FETCH_AND_ADD", "mlx5_0", (2.60, 5.01, 2.65, 2.65, 0.03, 2.77, 5.01), 1000),
}


@pytest.mark.parametrize("name", sorted(BW_CAPTURES), ids=sorted(BW_CAPTURES))
def test_atomic_bw_captures_import_with_the_printed_values(name):
    check, operation, device, (peak, avg, rate, iterations) = BW_CAPTURES[name]
    record = imported(name)
    assert record["check"] == check
    # no floor judges an atomic test: the CPU-frequency warning is informational, so the record passes
    assert record["status"] == "pass", record.get("reason")
    assert record["facts"]["atomic_operation"] == operation
    assert record["facts"]["device_reported"] == device
    assert record["facts"]["tool_unit"] == "MB/sec"
    metrics = record["metrics"]
    assert metrics["msg_size_bytes"] == 8 and metrics["iterations_count"] == iterations
    assert metrics["msg_rate_mpps"] == rate
    assert metrics["bw_avg_gbit_s"] == round(avg * MB, 6)
    assert metrics["bw_peak_gbit_s"] == round(peak * MB, 6)
    row, = record["series"]
    assert (row["tool_bw_peak"], row["tool_bw_avg"], row["msg_rate_mpps"]) == (peak, avg, rate)
    assert row["msg_size_bytes"] == 8 and row["tool_unit"] == "MB/sec"


@pytest.mark.parametrize("name", sorted(LAT_CAPTURES), ids=sorted(LAT_CAPTURES))
def test_atomic_lat_captures_import_with_the_printed_values(name):
    operation, device, printed, iterations = LAT_CAPTURES[name]
    record = imported(name)
    assert record["check"] == "rdma.ib_atomic_lat"
    assert record["status"] == "pass", record.get("reason")
    assert record["expect"] == {}      # no latency limit for atomics (thresholds.RDMA_LAT_LIMITS_US has none)
    assert record["facts"]["atomic_operation"] == operation
    assert record["facts"]["device_reported"] == device
    names = ("lat_min_us", "lat_max_us", "lat_typical_us", "lat_avg_us", "lat_stdev_us", "lat_p99_us", "lat_p999_us")
    assert tuple(record["metrics"][n] for n in names) == printed
    assert record["metrics"]["msg_size_bytes"] == 8 and record["metrics"]["iterations_count"] == iterations
    row, = record["series"]
    assert tuple(row[n] for n in names) == printed


def test_a_server_that_prints_no_report_is_a_skip_not_an_error():
    """perftest 2.0's ib_atomic_bw server prints its header and addresses only (its report came with upstream
    commit c57509e, 2013-10-29); the pair's figures are in the client's record."""
    record = imported("pib-perftest2.0-ib-atomic-bw-server-fetch-and-add-no-table.txt", side="server")
    assert record["check"] == "rdma.ib_atomic_bw.server"
    assert record["status"] == "skip", record
    assert "measures nothing" in record["reason"] and "client's record" in record["reason"]
    # the same output as a client's is not a measurement: an error, never a skip
    client = imported("pib-perftest2.0-ib-atomic-bw-server-fetch-and-add-no-table.txt", side="client",
                      test="ib_atomic_bw")
    assert client["status"] == "error"


def test_a_given_test_that_the_output_contradicts_is_the_outputs():
    """The program named by the output wins over the test option (import mode's rule), for the atomics too."""
    record = imported("mlx4-ib-atomic-lat-client-fetch-and-add-cpufreq.txt", test="ib_write_bw")
    assert record["check"] == "rdma.ib_atomic_lat"


def test_the_bandwidth_floor_says_why_atomics_have_none():
    rules = perftest_tool.default_rules(
        "ib_atomic_bw", {"msg_size_bytes": 8, "bw_avg_gbit_s": 0.15}, {"port_rate_gbit_s": 56.0},
        {"peer_rate_gbit_s": 56.0, "line_rate_floor_pct": 90})
    assert "min" not in rules["bw_avg_gbit_s"]
    assert "no source gives an atomic message-rate floor" in rules["bw_avg_gbit_s"]["source"]
    # the hardware-ceiling analysis compares bandwidth with the line rate: not the atomic tests
    assert "ib_atomic_bw" in perftest_tool.TESTS and "ib_atomic_bw" not in perftest_tool.LINE_RATE_TESTS
    assert "ib_write_bw" in perftest_tool.LINE_RATE_TESTS


def _argv(test, **params):
    base = {"test": test, "ib_port": 1, "report_gbits": True}
    base.update(params)
    return perftest_tool.build_argv("/usr/bin/" + test, base, "mlx5_0", 18515, None, "client", "10.0.0.2")


def test_argv_passes_the_operation_and_never_a_size_to_the_atomic_tests():
    argv = _argv("ib_atomic_bw", atomic_operation="CMP_AND_SWAP", size=65536, iterations=1000)
    assert argv[argv.index("-A") + 1] == "CMP_AND_SWAP"
    assert "-s" not in argv and "-a" not in argv and argv[argv.index("-n") + 1] == "1000"
    assert "--report_gbits" in argv
    argv = _argv("ib_atomic_lat", all_sizes=True)
    assert "-a" not in argv and "-A" not in argv          # unset: perftest's own default (FETCH_AND_ADD)
    assert "--report_gbits" not in argv
    # the other tests refuse -A ("You are not running the atomic_lat/bw test!"): never passed to them
    argv = _argv("ib_write_bw", atomic_operation="CMP_AND_SWAP", all_sizes=True)
    assert "-A" not in argv and "-a" in argv


def test_the_modules_accept_the_atomic_tests_and_operations():
    assert "ib_atomic_lat" in perftest.argument_spec()["test"]["choices"]
    for spec in (perftest.argument_spec(), perftest_sweep.argument_spec()):
        assert spec["atomic_operation"]["choices"] == ["FETCH_AND_ADD", "CMP_AND_SWAP"]
        assert "default" not in spec["atomic_operation"]
    out = call({"from_output": os.path.join(FIXTURES, "mlx4-ib-atomic-bw-client-fetch-and-add-MB-cpufreq.txt"),
                "atomic_operation": "ADD"}, expect=Fail)
    assert "atomic_operation" in out["msg"]


def test_a_message_rate_expectation_judges_an_atomic_bw_client():
    """docs/rdma.md's example: with no default floor, a user rule on msg_rate_mpps is what judges the atomics."""
    name = "mlx4-ib-atomic-bw-client-fetch-and-add-MB-cpufreq.txt"
    low = imported(name, expect={"rdma.ib_atomic_bw": {"msg_rate_mpps": {"min": 3.0}}})
    assert low["status"] == "fail" and low["expect"]["msg_rate_mpps"]["min"] == 3.0
    ok = imported(name, expect={"rdma.ib_atomic_bw": {"msg_rate_mpps": {"min": 2.0}}})
    assert ok["status"] == "pass"


def test_an_output_of_another_operation_is_not_what_was_asked():
    name = "mlx4-ib-atomic-bw-client-fetch-and-add-MB-cpufreq.txt"
    record = imported(name, atomic_operation="CMP_AND_SWAP")
    assert record["status"] == "error"
    assert "atomic_operation CMP_AND_SWAP" in record["reason"] and "FETCH_AND_ADD" in record["reason"]
    assert imported(name, atomic_operation="FETCH_AND_ADD")["status"] == "pass"
    assert imported("pib-perftest2.0-ib-atomic-bw-client-cmp-and-swap-MB.txt",
                    atomic_operation="CMP_AND_SWAP")["status"] == "pass"


# --------------------------------------------------------------------------- a live pair through the sweep runner

def test_a_pair_of_atomic_bw_runs_through_the_sweep_runner(tmp_path, monkeypatch):
    """perftest_sweep runs ib_atomic_bw like the other tests: the integration stand-in (fake_perftest, which prints
    only real captures - here the Soft-RoCE fetch-and-add pair) as both ends, -A passed, no size passed."""
    fake_dir = os.path.join(HERE, "..", "..", "..", "integration", "fake_perftest")
    tools = tmp_path / "bin"
    tools.mkdir()
    os.symlink(os.path.abspath(os.path.join(fake_dir, "ib_write_bw")), str(tools / "ib_atomic_bw"))
    conf = tmp_path / "fake.json"
    conf.write_text(json.dumps({"default": {
        "duration_s": 0.2, "client_output": "rxe-softroce-ib-atomic-bw-client-fetch-and-add.txt",
        "server_output": "rxe-softroce-ib-atomic-bw-server-banner-fetch-and-add.txt"}}))
    monkeypatch.setenv("FAKE_PERFTEST_CONFIG", str(conf))
    port = _free_port()

    def runner(host, role, peer):
        args = {"tool_dir": str(tools), "state_root": str(tmp_path / "state"), "run_id": "r1", "port": port,
                "inventory_hostname": host, "sysfs_root": "/nonexistent", "phase": "run", "hcas": ["rxe0"], "port_span": 2,
                "lease_s": 0, "timeout_s": 30, "connect_timeout_s": 20, "connect_retry_delay_s": 0.3,
                "schedule": [[0, "ib_atomic_bw", 0, role, peer]], "peers": {peer: "127.0.0.1"},
                "atomic_operation": "FETCH_AND_ADD", "size": 65536}
        path = tmp_path / ("args-%s.json" % host)
        path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
        return subprocess.Popen([sys.executable, perftest_sweep.__file__, str(path)], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True,
                                env=dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p)))

    procs = [runner("other", "server", "me"), runner("me", "client", "other")]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert json.loads(out.strip().splitlines()[-1]).get("outcome") == "finished", err[-3000:]
    records = {}
    for host in ("other", "me"):
        out = call({"state_root": str(tmp_path / "state"), "run_id": "r1", "port": port, "inventory_hostname": host,
                    "phase": "status", "hcas": ["rxe0"]}, module=perftest_sweep)
        records[host], = out["results"]
    client, server = records["me"], records["other"]
    assert client["check"] == "rdma.ib_atomic_bw" and client["status"] == "pass", client
    assert server["check"] == "rdma.ib_atomic_bw.server" and server["status"] == "pass", server
    for record in (client, server):
        argv = record["params"]["argv"]
        assert argv[argv.index("-A") + 1] == "FETCH_AND_ADD" and "-s" not in argv and "-a" not in argv
        assert record["facts"]["atomic_operation"] == "FETCH_AND_ADD"
        assert record["metrics"]["msg_rate_mpps"] == 0.008390 and record["metrics"]["msg_size_bytes"] == 8


def _free_port():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port
