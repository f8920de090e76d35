# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""perftest layouts of issue 12 item 5 read from real captures (fixtures/perftest_layouts, PROVENANCE.md there):
duration-mode latency tables (``t_avg[usec]  tps average``) and perftest 1.x bandwidth tables without the MsgRate
column. Before this change every one of these captures raised ParseError ("unsupported perftest table layout")."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.aifabric.acceptance.plugins.module_utils import thresholds
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import ParseError
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import perftest
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import perftest_sweep as perftest_tool
from ansible_collections.aifabric.acceptance.tests.unit.plugins.module_utils.parsers.mutations import mutated
from ansible_collections.aifabric.acceptance.tests.unit.helpers import parser_fixture, read

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = parser_fixture("perftest_layouts")
OLD_FIXTURES = parser_fixture("perftest")
ALL = sorted(f for f in os.listdir(FIXTURES) if f.endswith(".txt"))

# name: (tool, device, (size, iterations, t_avg, tps)) - read off each capture by eye
DURATION_LAT = {
    "mofed44-ib-read-lat-client-D300-duration-tavg-tps-rdma-cm-cpufreq.txt":
        ("ib_read_lat", "mlx5_0", (2, 62078352, 2.42, 413812.77)),
    "mofed44-ib-write-lat-client-D300-duration-tavg-tps-rdma-cm-cpufreq.txt":
        ("ib_write_lat", "mlx5_0", (2, 58732912, 1.28, 391518.70)),
    "freeflow-mlx4-ib-send-lat-client-D20-duration-tavg-tps.txt":
        ("ib_send_lat", "mlx4_0", (2, 1289984, 3.88, 128993.46)),
}
# name: (size, iterations, BW peak, BW average) in MB/sec, read by eye
NO_MSGRATE = {
    "perftest1x-ofed15-ib-write-bw-client-no-msgrate-wrapped-vaddr.txt": (65536, 5000, 939.37, 939.37),
    "perftest1x-mlnx-ofed153-ib-write-bw-client-no-msgrate-cpufreq-integrity.txt": (65536, 5000, 937.61, 937.60),
}


PEAK_0 = "mofed44-ib-write-bw-client-D300-peak-0-no-warning-line-rdma-cm.txt"


def test_every_fixture_is_covered():
    assert sorted(list(DURATION_LAT) + list(NO_MSGRATE) + [PEAK_0]) == ALL


def test_duration_bandwidth_without_the_warning_line_as_captured():
    # a real -D 300 run whose perftest printed BW peak 0.00 and no "BW peak won't be measured" line: not measured
    parsed = perftest.parse(read(FIXTURES, PEAK_0))
    (row,) = parsed["rows"]
    assert (row["bw_peak"], row["bw_avg"], row["msg_rate_mpps"], row["iterations"]) == (0.0, 10322.23, 0.165156,
                                                                                        24777100)
    assert not any("BW peak" in w for w in parsed["warnings"]) and perftest.peak_measured(parsed) is False
    (record,) = perftest_tool.side_records(read(FIXTURES, PEAK_0), 0, {"test": "ib_write_bw", "side": "client", "host": "a",
                                                                       "peer": "b", "device": "mlx5_0", "params": {}})
    assert record["metrics"]["bw_peak_gbit_s"] is None and record["metrics"]["bw_avg_gbit_s"] == pytest.approx(
        10322.23 * 1048576 * 8 / 1e9, abs=1e-6)


@pytest.mark.parametrize("name", sorted(DURATION_LAT))
def test_duration_mode_latency_table(name):
    tool, device, (size, iters, t_avg, tps) = DURATION_LAT[name]
    parsed = perftest.parse(read(FIXTURES, name))
    assert parsed["tool"] == tool and parsed["kind"] == "lat" and parsed["header"]["Device"] == device
    assert parsed["lat_duration_mode"] is True and parsed["msgrate_column"] is None
    (row,) = parsed["rows"]
    assert (row["size_bytes"], row["iterations"], row["t_avg"], row["tps_avg"]) == (size, iters, t_avg, tps)
    # perftest prints no per-iteration statistics in duration mode: they are absent, never zero
    assert all(row[key] is None for key in ("t_min", "t_max", "t_typical", "t_stdev", "p99", "p999"))
    assert parsed["errors"] == [] and parsed["errors_after_rows"] == []
    # the CPU-frequency lines printed between the header and the row are kept as (informational) warnings
    assert len(parsed["warnings"]) == 2 and perftest.doubtful_warnings(parsed) == []


def test_duration_mode_noise_of_a_modified_libibverbs_is_kept_as_notes():
    parsed = perftest.parse(read(FIXTURES, "freeflow-mlx4-ib-send-lat-client-D20-duration-tavg-tps.txt"))
    assert "### FreeFlow ###" in parsed["notes"] and "[INFO] Succeed to mount shm ctrlshm-qp8" in parsed["notes"]


@pytest.mark.parametrize("name", sorted(NO_MSGRATE))
def test_perftest_1x_bandwidth_table_without_msgrate(name):
    size, iters, peak, avg = NO_MSGRATE[name]
    parsed = perftest.parse(read(FIXTURES, name))
    assert parsed["tool"] == "ib_write_bw" and parsed["unit"] == "MB/sec" and parsed["msgrate_column"] is False
    assert parsed["lat_duration_mode"] is None
    (row,) = parsed["rows"]
    assert (row["size_bytes"], row["iterations"], row["bw_peak"], row["bw_avg"]) == (size, iters, peak, avg)
    assert row["msg_rate_mpps"] is None
    assert [e["lid"] for e in parsed["local"]] == ["0x01" if "ofed15-" in name else "0x04"]


def test_perftest_1x_timestamp_warning_casts_doubt():
    # MLNX_OFED 1.5.3 perftest: "Test integrity may be harmed !" after each CPU-frequency line, then a warning
    # that the measured timestamp frequency differs from the nominal one: the figure is doubtful (warn)
    parsed = perftest.parse(read(FIXTURES, "perftest1x-mlnx-ofed153-ib-write-bw-client-no-msgrate-cpufreq-integrity.txt"))
    assert perftest.doubtful_warnings(parsed) == [
        "Warning: measured timestamp frequency 3092.95 differs from nominal 3300 MHz"]
    assert parsed["notes"].count("Test integrity may be harmed !") == 3


def test_iteration_tables_keep_their_layout_flags():
    lat = perftest.parse(read(OLD_FIXTURES, "mlx4-ib-send-lat-client-a-all-sizes.txt"))
    assert lat["lat_duration_mode"] is False and lat["rows"][0]["tps_avg"] is None
    assert lat["rows"][0]["t_typical"] == 1.07
    bw = perftest.parse(read(OLD_FIXTURES, "mlx4-ib-write-bw-client-a-all-sizes-MB.txt"))
    assert bw["msgrate_column"] is True and bw["rows"][0]["msg_rate_mpps"] is not None


def test_records_of_the_new_layouts_keep_what_was_measured():
    ctx = {"side": "client", "host": "a", "peer": "b", "device": "mlx5_0", "params": {}}
    (lat,) = perftest_tool.side_records(
        read(FIXTURES, "mofed44-ib-write-lat-client-D300-duration-tavg-tps-rdma-cm-cpufreq.txt"), 0,
        dict(ctx, test="ib_write_lat"))
    assert lat["metrics"]["lat_avg_us"] == 1.28 and lat["metrics"]["lat_typical_us"] is None
    assert lat["metrics"]["iterations_count"] == 58732912
    (bw,) = perftest_tool.side_records(
        read(FIXTURES, "perftest1x-ofed15-ib-write-bw-client-no-msgrate-wrapped-vaddr.txt"), 0, dict(ctx, test="ib_write_bw"))
    assert bw["status"] == "pass" and bw["metrics"]["msg_rate_mpps"] is None
    # 939.37 MB/sec (perftest's 2**20 bytes) = 7.880 Gbit/s
    assert bw["metrics"]["bw_avg_gbit_s"] == pytest.approx(939.37 * 1048576 * 8 / 1e9, abs=1e-6)


@pytest.mark.parametrize("bad,needle", [
    # a duration-mode row with a field cut off, and one with an extra field: quoted, never half-read
    (" #bytes        #iterations       t_avg[usec]    tps average\n 2             58732912            1.28\n",
     "1.28"),
    (" #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]\n 65536      5000      939.37  939.37  0.01  7\n",
     "0.01"),
])
def test_malformed_rows_quote_the_line(bad, needle):
    with pytest.raises(ParseError) as info:
        perftest.parse(bad)
    assert needle in str(info.value)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(ALL), data=st.data())
def test_fuzz_only_parse_error_escapes(name, data):
    text = data.draw(mutated(read(FIXTURES, name)))
    try:
        parsed = perftest.parse(text)
    except ParseError as exc:
        assert str(exc)
        return
    assert parsed["rows"] or parsed["errors"]


def test_duration_latency_is_judged_on_the_average():
    # duration mode (-D) prints only t_avg: the default small-message limit applies to lat_avg_us (its source
    # says so), never an error for the typical latency the tool did not print; a user rule still wins
    text = read(FIXTURES, "mofed44-ib-write-lat-client-D300-duration-tavg-tps-rdma-cm-cpufreq.txt")
    ctx = {"test": "ib_write_lat", "side": "client", "device": "mlx5_0"}

    def judged(params):
        (record,) = perftest_tool.side_records(text, 0, dict(ctx, params=params))
        return record
    record = judged({})
    assert record["status"] == "pass", record
    assert record["expect"] == {"lat_avg_us": {"max": 2.5, "source": thresholds.RDMA_LAT_SOURCE % "write"
                                               + " (duration mode prints no typical latency: judged on the average)"}}
    assert record["metrics"]["lat_typical_us"] is None
    assert judged({"expect": {"lat_avg_us": {"max": 1.0}}})["status"] == "fail"
    assert judged({"expect": {"lat_avg_us": None}})["status"] == "pass"


def test_fleet_of_duration_latency_runs_names_the_slow_node_and_the_slow_link():
    """A whole all-pairs -D sweep judged by default on the average: the real MLNX_OFED 4.4 row (t_avg 1.28 us)
    everywhere, made slower on every pair of one node (3.90 us) and on one link (2.90 us), both above the NGC
    2.5 us write limit. Exactly the node fails, the link's two ends warn, every other host passes; nothing is an
    error for the typical latency duration mode does not print."""
    from ansible_collections.aifabric.acceptance.plugins.filter.pairings import pairings
    from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import Context
    from ansible_collections.aifabric.acceptance.plugins.plugin_utils import fleet

    text = read(FIXTURES, "mofed44-ib-write-lat-client-D300-duration-tavg-tps-rdma-cm-cpufreq.txt")
    row = " 2             58732912            1.28           391518.70"
    assert row in text
    hosts = ["d%02d" % i for i in range(8)]
    bad_node, bad_link = hosts[3], frozenset((hosts[1], hosts[6]))
    records = []
    for rnd in pairings(hosts, mode="all"):
        for server, client in rnd:
            pair = frozenset((server, client))
            t_avg = 3.90 if bad_node in pair else 2.90 if pair == bad_link else None
            out = text if t_avg is None else text.replace(row, row.replace("1.28", "%.2f" % t_avg))
            params = {"test": "ib_write_lat", "peer_name": server, "duration_s": 300}
            rec, = perftest_tool.records(out, Context(params=params, rc=0, side="client", host=client, target="mlx5_0"))
            records.append(rec)
    assert {r["status"] for r in records} == {"pass", "fail"}
    report = fleet.build_report(records, {"run_id": "lat-d", "started": "2026-11-23T15:00:00Z",
                                          "ended": "2026-11-23T15:10:00Z"})
    verdicts = dict((h["host"], h["status"]) for h in report["summary"]["hosts"])
    assert report["summary"]["failed_hosts"] == [bad_node]
    assert verdicts == dict((h, "fail" if h == bad_node else "warn" if h in bad_link else "pass") for h in hosts)
