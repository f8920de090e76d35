# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""perftest pair glue: GID choice, argv, records and expectations, the sweep's children (state_child), governor."""

from __future__ import annotations

import json
import os
import sys
import time

import pytest

from ansible_collections.aifabric.acceptance.plugins.module_utils import results, state_child
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import AcceptanceError
from ansible_collections.aifabric.acceptance.plugins.module_utils.governor import Governor, describe
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import rdma
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import Context, replace
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import perftest_sweep as perftest_tool
from ansible_collections.aifabric.acceptance.tests.unit.helpers import parser_fixture

FIXTURES = parser_fixture("perftest")


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def roce_files(dev="mlx5_0", v2_ipv4=True):
    files = {
        dev + "/ports/1/state": "4: ACTIVE\n", dev + "/ports/1/rate": "400 Gb/sec (4X NDR)\n",
        dev + "/ports/1/link_layer": "Ethernet\n",
        dev + "/device/net/eth2/dev_port": "0\n",
        dev + "/ports/1/gids/0": "fe80:0000:0000:0000:0e42:a1ff:fe2b:3c4d\n",
        dev + "/ports/1/gid_attrs/types/0": "IB/RoCE v1\n", dev + "/ports/1/gid_attrs/ndev/0": "eth2\n",
        dev + "/ports/1/gids/1": "fe80:0000:0000:0000:0e42:a1ff:fe2b:3c4d\n",
        dev + "/ports/1/gid_attrs/types/1": "RoCE v2\n", dev + "/ports/1/gid_attrs/ndev/1": "eth2\n",
        dev + "/ports/1/gids/2": "0000:0000:0000:0000:0000:ffff:0a00:0002\n",
        dev + "/ports/1/gid_attrs/types/2": "IB/RoCE v1\n", dev + "/ports/1/gid_attrs/ndev/2": "eth2\n",
    }
    if v2_ipv4:
        files.update({
            dev + "/ports/1/gids/3": "0000:0000:0000:0000:0000:ffff:0a00:0002\n",
            dev + "/ports/1/gid_attrs/types/3": "RoCE v2\n", dev + "/ports/1/gid_attrs/ndev/3": "eth2\n",
        })
    return files


def test_select_gid_roce_v2_ipv4():
    port = perftest_tool.find_port(rdma.build_hcas(roce_files()), "mlx5_0", 1)
    index, how = perftest_tool.select_gid(port)
    assert index == 3 and "10.0.0.2" in how and "eth2" in how
    assert perftest_tool.find_port(rdma.build_hcas(roce_files()), "mlx5_0", 2) is None


def test_select_gid_ib_needs_none_and_roce_without_v2_fails():
    ib = {"mlx5_1/ports/1/state": "4: ACTIVE", "mlx5_1/ports/1/link_layer": "InfiniBand",
          "mlx5_1/ports/1/rate": "400 Gb/sec (4X NDR)",
          "mlx5_1/ports/1/gids/0": "fe80:0000:0000:0000:a088:c203:0012:3456"}
    port = perftest_tool.find_port(rdma.build_hcas(ib), "mlx5_1", 1)
    assert perftest_tool.select_gid(port) == (None, "InfiniBand port: no GID index needed")
    port = perftest_tool.find_port(rdma.build_hcas(roce_files(v2_ipv4=False)), "mlx5_0", 1)
    with pytest.raises(AcceptanceError, match="no RoCE v2 GID with an IPv4"):
        perftest_tool.select_gid(port)
    ipv6 = roce_files(v2_ipv4=False)
    ipv6.update({"mlx5_0/ports/1/gids/5": "fd00:0000:0000:0000:0000:0000:0000:0042",
                 "mlx5_0/ports/1/gid_attrs/types/5": "RoCE v2", "mlx5_0/ports/1/gid_attrs/ndev/5": "eth2"})
    index, how = perftest_tool.select_gid(perftest_tool.find_port(rdma.build_hcas(ipv6), "mlx5_0", 1))
    assert index == 5 and "fd00:" in how


def test_build_argv():
    params = {"test": "ib_write_bw", "ib_port": 1, "all_sizes": True, "duration_s": 5, "qps": 4,
              "bidirectional": True, "report_gbits": True, "rdma_cm": True, "use_cuda": "0",
              "ignore_cpu_freq": True, "extra_args": ["--tclass=96"]}
    argv = perftest_tool.build_argv("/usr/bin/ib_write_bw", params, "mlx5_0", 18516, 3, "client", "10.0.0.1",
                                    json_file="/tmp/x.json")
    assert argv == ["/usr/bin/ib_write_bw", "-d", "mlx5_0", "-i", "1", "-p", "18516", "-x", "3", "-a",
                    "-D", "5", "-q", "4", "-b", "--report_gbits", "-F", "-R", "--use_cuda=0",
                    "--out_json", "--out_json_file=/tmp/x.json", "--tclass=96", "10.0.0.1"]
    lat = perftest_tool.build_argv("ib_read_lat", {"test": "ib_read_lat", "ib_port": 2, "size": 2, "iterations": 1000,
                                                   "qps": 4, "bidirectional": True},
                                   "mlx5_1", 18515, None, "server")
    assert lat == ["ib_read_lat", "-d", "mlx5_1", "-i", "2", "-p", "18515", "-s", "2", "-n", "1000"]
    with pytest.raises(AcceptanceError):
        perftest_tool.check_name("mlx5_0; rm -rf /", "device")


def ctx(test="ib_write_bw", side="client", device="mlx5_0", params=None, timeout_s=None, **kw):
    """The Context of one run of ``test`` (``params``: the module options it is judged with; a client is judged
    against ``peer_rate_gbit_s``, the server's port rate)."""
    params = dict(params or {"line_rate_floor_pct": 90, "peer_rate_gbit_s": None, "expect": {}})
    rate = params.get("peer_rate_gbit_s")
    params.update(test=test, timeout_s=timeout_s, peer_rates_gbit_s=[rate] if rate is not None else None)
    base = dict(params=params, side=side, host="a", peer="b", target=device, argv=["ib_write_bw"],
                tool_version="6.06", facts={})
    base.update(kw)
    return Context(**base)


def records(text, rc, context):
    """What every caller gets: perftest's adapter."""
    return perftest_tool.records(text, replace(context, rc=rc))


def test_bw_record_converts_units_and_keeps_tool_figures():
    text = fixture("cx7-ndr-ib-send-bw-client-MiB-per-sec-cpufreq-warning.txt")
    rec = records(text, 0, ctx("ib_send_bw", facts={"port_rate_gbit_s": 400.0},
                               params={"line_rate_floor_pct": 90,
                                       "peer_rate_gbit_s": 400.0}))[0]
    assert results.validate(rec) == []
    assert rec["check"] == "rdma.ib_send_bw" and rec["host"] == "a" and rec["peer"] == "b"
    assert rec["metrics"]["bw_avg_gbit_s"] == round(46557.03 * 1048576 * 8 / 1e9, 6)
    assert rec["metrics"]["msg_size_bytes"] == 65536
    assert rec["series"][0]["tool_unit"] == "MiB/sec" and rec["series"][0]["tool_bw_avg"] == 46557.03
    # ib_send_bw at 64 KiB has no default floor (healthy links measure 54 % to 98 % of line rate
    # there): nothing is judged, and the expectation says why. The CPU-frequency warning is a fact.
    assert "min" not in rec["expect"]["bw_avg_gbit_s"]
    assert "no default floor for ib_send_bw at 65536 B" in rec["expect"]["bw_avg_gbit_s"]["source"]
    assert rec["status"] == "pass" and rec["reason"] is None
    assert "CPU frequency" in rec["facts"]["tool_warnings"][0]


def test_duration_mode_and_cpu_frequency_warnings_are_facts_not_warn():
    """Every -D run prints 'BW peak won't be measured'; before issue 7 each was judged warn."""
    text = fixture("roce100g-ib-write-bw-client-bidir-D5-gbits-peak-and-cpufreq-warnings.txt")
    rec = records(text, 0, ctx(params={"line_rate_floor_pct": 90, "duration_s": 5,
                                       "expect": {"bw_avg_gbit_s": {"min": 90}}}))[0]
    assert rec["status"] == "pass" and rec["reason"] is None
    assert rec["facts"]["tool_warnings"] == [
        "WARNING: BW peak won't be measured in this run.",
        "Conflicting CPU frequency values detected: 1500.000000 != 3300.016000. CPU Frequency is not max."]
    assert rec["metrics"]["bw_peak_gbit_s"] is None and rec["metrics"]["bw_avg_gbit_s"] == 98.02
    # the measurement still decides: the same run under a higher floor fails, warnings or not
    low = records(text, 0, ctx(params={"expect": {"bw_avg_gbit_s": {"min": 150}}}))[0]
    assert low["status"] == "fail" and "bw_avg_gbit_s 98.02 < 150" in low["reason"]


def test_pcie_relaxed_ordering_warning_stays_warn():
    text = fixture("sriov-t4-cuda-ib-write-bw-client-pcie-relaxed-ordering-warning.txt")
    rec = records(text, 0, ctx())[0]
    assert rec["status"] == "warn" and "PCIe relaxed ordering" in rec["reason"]
    assert len(rec["facts"]["tool_warnings"]) == 2


def test_ndr_read_at_64k_passes_its_size_floor():
    """Real ConnectX-7 NDR ib_read_bw at 64 KiB, 328.6 Gb/s: failed the old 90 % floor (360)."""
    text = fixture("cx7-ndr-ib-read-bw-client-report-gbits-cpufreq-warning.txt")
    rec = records(text, 0, ctx("ib_read_bw", facts={"port_rate_gbit_s": 400.0},
                               params={"line_rate_floor_pct": 90,
                                       "peer_rate_gbit_s": 400.0}))[0]
    assert rec["expect"]["bw_avg_gbit_s"]["min"] == 280.0
    assert "ConnectX-7 NDR at 64 KiB" in rec["expect"]["bw_avg_gbit_s"]["source"]
    assert rec["status"] == "pass", rec["reason"]


def test_large_message_send_uses_the_line_rate_floor():
    text = fixture("hdr-ib-send-bw-client-a-gbits-1qp.txt")
    ok = records(text, 0, ctx("ib_send_bw", device="mlx5_2", facts={"port_rate_gbit_s": 200.0},
                                                   params={"line_rate_floor_pct": 90, "peer_rate_gbit_s": 200.0}))[0]
    assert ok["metrics"]["msg_size_bytes"] == 8388608
    assert ok["expect"]["bw_avg_gbit_s"]["min"] == 180.0 and ok["status"] == "pass"
    # the same 196.69 Gb/s on a 400 Gb/s pair is a slow link
    slow = records(text, 0, ctx("ib_send_bw", device="mlx5_2", facts={"port_rate_gbit_s": 400.0},
                                                     params={"line_rate_floor_pct": 90, "peer_rate_gbit_s": 400.0}))[0]
    assert slow["status"] == "fail" and "196.69 < 360" in slow["reason"]


@pytest.mark.parametrize("verb,size,pct", [
    ("write", 8388608, 90), ("write", 1048576, 90), ("write", 1048575, 80), ("write", 65536, 80),
    ("write", 65535, None), ("write", 2, None),
    ("read", 1048576, 90), ("read", 65536, 70), ("read", 4096, None),
    ("send", 2097152, 90), ("send", 1048576, 80), ("send", 524288, None), ("send", 65536, None),
])
def test_floor_table_by_verb_and_size(verb, size, pct):
    got, source = perftest_tool.bw_floor_pct("ib_%s_bw" % verb, size, 90)
    assert got == pct and source
    # a lower configured percentage lowers every band; 0 turns the floor off
    lower, _source = perftest_tool.bw_floor_pct("ib_%s_bw" % verb, size, 50)
    assert lower == (None if pct is None else 50)
    assert perftest_tool.bw_floor_pct("ib_%s_bw" % verb, size, 0)[0] is None


def test_bidirectional_floor_doubles_except_send_in_duration_mode():
    facts = {"port_rate_gbit_s": 100.0, "bidirectional": True}
    metrics = {"msg_size_bytes": 8388608}
    write = perftest_tool.default_rules("ib_write_bw", metrics, facts, {"line_rate_floor_pct": 90, "duration_s": 5})
    assert write["bw_avg_gbit_s"]["min"] == 180.0
    # send_bw.c prints only the local side's figure for -b -D (no exchange of reports)
    send = perftest_tool.default_rules("ib_send_bw", metrics, facts, {"line_rate_floor_pct": 90, "duration_s": 5})
    assert send["bw_avg_gbit_s"]["min"] == 90.0
    send_n = perftest_tool.default_rules("ib_send_bw", metrics, facts, {"line_rate_floor_pct": 90})
    assert send_n["bw_avg_gbit_s"]["min"] == 180.0


def test_bw_below_line_rate_fails_and_bidirectional_doubles():
    text = fixture("rocm-docs-ib-write-bw-bidir-a-gbits-use-rocm-rst-indented.txt")
    rec = records(text, 0, ctx(device="<RDMA-NIC-2>", facts={"port_rate_gbit_s": 200.0}))[0]
    # bidirectional 204.59 Gbit/s against 2 x 90 % x 200
    assert rec["expect"]["bw_avg_gbit_s"]["min"] == 360.0
    assert rec["status"] == "fail" and "bw_avg_gbit_s 204.59 < 360" in rec["reason"]
    assert rec["metrics"]["msg_size_bytes"] == 8388608 and len(rec["series"]) == 23
    user = records(text, 0, ctx(device="<RDMA-NIC-2>", facts={"port_rate_gbit_s": 200.0},
                                params={"line_rate_floor_pct": 90,
                                        "expect": {"bw_avg_gbit_s": {"min": 180}}}))[0]
    assert user["status"] == "pass" and user["expect"]["bw_avg_gbit_s"]["source"] == "user expectation"


def test_latency_rules():
    ok = records(fixture("dgx-spark-cx7-ib-write-lat-client-rdma-cm-force-link-ib.txt"), 0,
                 ctx("ib_write_lat", device="rocep1s0f1"))[0]
    assert ok["status"] == "pass" and ok["expect"]["lat_typical_us"]["max"] == 2.5
    assert ok["metrics"]["lat_p999_us"] == 1.93 and ok["metrics"]["lat_typical_us"] == 1.47
    slow = records(fixture("rxe-softroce-ib-send-lat-client.txt"), 0, ctx("ib_send_lat", device="rxe0"))[0]
    assert slow["status"] == "fail" and "lat_typical_us 724.36 > 2.5" in slow["reason"]
    read = records(fixture("mlx4-ib-read-lat-client-a-all-sizes.txt"), 0,
                   ctx("ib_read_lat", device="mlx4_0"))[0]
    assert read["expect"]["lat_typical_us"]["max"] == 4.5 and read["status"] == "pass"
    assert read["metrics"]["msg_size_bytes"] == 2 and len(read["series"]) == 23


@pytest.mark.parametrize("name,status,needle", [
    ("ib_write_bw-client-no-rdma-device.txt", "skip", "Did not detect devices"),
    ("perftest-client-failed-to-modify-qp-to-rts.txt", "error", "(qp, rc 1)"),
    ("perftest-couldnt-connect-unable-to-init-socket-pre-fix.txt", "error", "Couldn't connect to"),
])
def test_failures_become_skip_or_error_with_the_tool_message(name, status, needle):
    rec = records(fixture(name), 1, ctx())[0]
    assert rec["status"] == status and needle in rec["reason"] and rec["raw"]
    assert results.validate(rec) == []


def test_unreadable_output_and_timeout_are_errors():
    rec = records("segfault\n", 139, ctx())[0]
    assert rec["status"] == "error" and "could not read" in rec["reason"] and rec["raw"] == "segfault"
    rec = records("", 124, ctx(side="server", timed_out=True, timeout_s=30))[0]
    assert rec["check"] == "rdma.ib_write_bw.server" and "timed out after 30s" in rec["reason"]


def test_server_records_carry_no_expectations():
    rec = records(fixture("amd-ionic-rocm-gdr-ib-write-bw-server-a-MiB-only-last-size.txt"),
                  0, ctx(side="server", device="ionic_0", facts={"port_rate_gbit_s": 400.0}))[0]
    assert rec["check"] == "rdma.ib_write_bw.server" and rec["expect"] == {} and rec["status"] == "pass"
    assert rec["facts"]["side"] == "server"


# --------------------------------------------------------------------------- state_child: the sweep's children

def py(code):
    return [sys.executable, "-c", code]


def test_state_child_start_wait_read(tmp_path):
    handle = state_child.start(py("import sys; print('out'); sys.stderr.write('err'); sys.exit(3)"), 30,
                               str(tmp_path / "s"))
    outcome = state_child.wait(handle, 20)
    assert outcome["rc"] == 3 and outcome["ended"] >= handle["started"]
    assert state_child.read(handle) == ("out\n", "err")
    assert json.load(open(handle["handle_file"]))["pid"] == handle["pid"]
    assert state_child.load(str(tmp_path / "s"))["pgid"] == handle["pid"]
    assert not state_child.alive(handle)


def test_state_child_timeout_and_kill(tmp_path):
    slow = state_child.start(py("import time; time.sleep(60)"), 1, str(tmp_path / "t"), kill_after_s=1)
    outcome = state_child.wait(slow, 20)
    assert outcome["rc"] == 124
    hung = state_child.start(py("import time, os; os.fork(); time.sleep(60)"), 60, str(tmp_path / "k"))
    time.sleep(0.3)
    assert state_child.alive(hung)
    assert state_child.kill(hung, grace_s=1) is True
    assert not state_child.alive(hung)
    assert state_child.outcome(hung)["rc"] == -15
    # the forked grandchild of the tool died with the process group
    # (zombies awaiting a late reaper do not count: they no longer run)
    assert os.system("pgrep -g %d -r R,S,D,T >/dev/null" % hung["pgid"]) != 0
    assert state_child.kill(hung) is False


def test_a_loaded_handle_is_killed_by_its_recorded_start_time(tmp_path):
    """What the cleanup does with a handle it loads back (no child): the recorded group is stopped while the pid is
    the process that started at the recorded start time, never once that time differs."""
    handle = state_child.start(py("import time; time.sleep(60)"), 60, str(tmp_path / "l"))
    loaded = state_child.load(str(tmp_path / "l"))
    assert "child" not in loaded and state_child.alive(loaded)
    assert state_child.kill(dict(loaded, proc_start_time=loaded["proc_start_time"] + 1)) is False
    assert state_child.alive(handle)
    assert state_child.kill(loaded, grace_s=1) is True
    assert state_child.wait(handle, 10)["rc"] == -15


def test_state_child_exec_error(tmp_path):
    with pytest.raises(AcceptanceError, match="could not start"):
        state_child.start(["/nonexistent/tool"], 5, str(tmp_path / "e"))


# --------------------------------------------------------------------------- governor

def fake_cpus(root, n=4, governor="powersave", offered="performance powersave"):
    for i in range(n):
        d = root / ("cpu%d" % i) / "cpufreq"
        d.mkdir(parents=True)
        (d / "scaling_governor").write_text(governor + "\n")
        (d / "scaling_available_governors").write_text(offered + "\n")


def governors(root):
    return sorted(set(p.read_text().strip() for p in root.glob("cpu*/cpufreq/scaling_governor")))


def test_governor_refcount_and_restore(tmp_path):
    root = tmp_path / "cpu"
    fake_cpus(root)
    gov = Governor(str(tmp_path / "state" / "governor.json"), root=str(root))
    first = gov.acquire("a", os.getpid())
    assert first["action"] == "set" and governors(root) == ["performance"]
    assert describe(first) == "set to performance (was powersave)"
    assert gov.acquire("b", os.getpid())["action"] == "shared"
    assert gov.release("a")["action"] == "released" and governors(root) == ["performance"]
    assert gov.release("b")["action"] == "restored" and governors(root) == ["powersave"]
    assert not os.path.exists(str(tmp_path / "state" / "governor.json"))


def test_governor_dead_holder_is_pruned(tmp_path):
    root = tmp_path / "cpu"
    fake_cpus(root, governor="schedutil", offered="performance schedutil")
    gov = Governor(str(tmp_path / "governor.json"), root=str(root))
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    gov.acquire("ghost", pid)
    assert governors(root) == ["performance"]
    assert gov.reconcile()["action"] == "restored"
    assert governors(root) == ["schedutil"]


def test_governor_skips_without_cpufreq_or_target(tmp_path):
    gov = Governor(str(tmp_path / "g.json"), root=str(tmp_path / "none"))
    result = gov.acquire("a", os.getpid())
    assert result["action"] == "skip" and "no cpufreq" in result["reason"]
    root = tmp_path / "cpu"
    fake_cpus(root, offered="powersave")
    result = Governor(str(tmp_path / "g2.json"), root=str(root)).acquire("a", os.getpid())
    assert result["action"] == "skip" and "not offered" in result["reason"]


def test_table_then_failure_is_error_keeping_the_rows():
    """A real NDR ib_read_bw table followed by the completion-error lines perftest prints when a QP breaks
    mid-run (issue 12): the run did not complete, so the record is error (it was pass), with the figures kept."""
    name = "cx7-ndr-ib-read-bw-client-report-gbits-cpufreq-warning.txt"
    good = records(fixture(name), 0, ctx("ib_read_bw", facts={"port_rate_gbit_s": 400.0}))[0]
    broken = fixture(name) + " Completion with error at client\n Failed status 12: wr_id 0 syndrom 0x81\n"
    rec = records(broken, 1, ctx("ib_read_bw", facts={"port_rate_gbit_s": 400.0}))[0]
    assert good["status"] == "pass"
    assert rec["status"] == "error" and "failed after 1 result row" in rec["reason"]
    assert "Completion with error at client" in rec["reason"]
    assert rec["metrics"] == good["metrics"] and rec["series"] == good["series"]
    assert rec["raw"] and not results.validate(rec)
