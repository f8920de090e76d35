# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The perftest parser on every real capture in fixtures/perftest/, plus fuzzing."""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import ParseError
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import perftest
from ansible_collections.aifabric.acceptance.tests.unit.plugins.module_utils.parsers.mutations import mutated as mutated_text
from ansible_collections.aifabric.acceptance.tests.unit.helpers import parser_fixture, read

FIXTURES = parser_fixture("perftest")


ALL = sorted(f for f in os.listdir(FIXTURES) if f.endswith(".txt"))

# name: (tool, side, unit, bidirectional, rows, blocks, device, first row, last row)
# The values were read off each capture by eye; first/last rows are (size, a, b) with
# (a, b) = (BW peak, BW average) for bandwidth and (t_typical, p99.9) for latency.
TABLES = {
    "amd-ionic-ib-write-bw-client-bidir-q4-a-gbits.txt":
        ("ib_write_bw", None, "Gb/sec", True, 23, 1, "ionic_1", (2, 0.147331, 0.146472), (8388608, 779.21, 779.21)),
    "amd-ionic-rocm-gdr-ib-write-bw-client-a-MiB.txt":
        ("ib_write_bw", None, "MiB/sec", False, 23, 1, "ionic_0", (2, 6.82, 6.76), (8388608, 19044.44, 19044.43)),
    "amd-ionic-rocm-gdr-ib-write-bw-server-a-MiB-only-last-size.txt":
        ("ib_write_bw", "server", "MiB/sec", False, 1, 1, "ionic_0", (8388608, 19044.44, 19044.43), None),
    "cx7-ndr-ib-read-bw-client-report-gbits-cpufreq-warning.txt":
        ("ib_read_bw", None, "Gb/sec", False, 1, 1, "mlx5_0", (65536, 328.64, 328.61), None),
    "cx7-ndr-ib-send-bw-client-MiB-per-sec-cpufreq-warning.txt":
        ("ib_send_bw", None, "MiB/sec", False, 1, 1, "mlx5_0", (65536, 46567.34, 46557.03), None),
    "dgx-spark-cx7-ib-write-lat-client-rdma-cm-force-link-ib.txt":
        ("ib_write_lat", None, None, False, 1, 1, "rocep1s0f1", (2, 1.47, 1.93), None),
    "k8s-mlx5-roce-ib-atomic-lat-client-rdma-cm-tab-padded.txt":
        ("ib_atomic_lat", None, None, False, 1, 1, "mlx5_0", (8, 2.65, 5.01), None),
    "mlx4-ib-atomic-bw-client-fetch-and-add-MB-cpufreq.txt":
        ("ib_atomic_bw", None, "MB/sec", False, 1, 1, "mlx4_0", (8, 18.79, 18.67), None),
    "mlx4-ib-atomic-lat-client-fetch-and-add-cpufreq.txt":
        ("ib_atomic_lat", None, None, False, 1, 1, "mlx4_0", (8, 2.34, 10.20), None),
    "pib-perftest2.0-ib-atomic-bw-client-cmp-and-swap-MB.txt":
        ("ib_atomic_bw", None, "MB/sec", False, 1, 1, "pib_1", (8, 1.70, 1.67), None),
    "rxe-softroce-ib-atomic-bw-client-fetch-and-add.txt":
        ("ib_atomic_bw", None, "MB/sec", False, 1, 1, "rxe0", (8, 0.06, 0.06), None),
    "rxe-softroce-ib-atomic-bw-server-banner-fetch-and-add.txt":
        ("ib_atomic_bw", "server", "MB/sec", False, 1, 1, "rxe0", (8, 0.06, 0.06), None),
    "hdr-ib-send-bw-client-a-gbits-1qp.txt":
        ("ib_send_bw", None, "Gb/sec", False, 23, 1, "mlx5_2", (2, 0.052812, 0.050794), (8388608, 196.69, 196.69)),
    "mlx4-ib-read-lat-client-a-all-sizes.txt":
        ("ib_read_lat", None, None, False, 23, 1, "mlx4_0", (2, 1.99, 9.95), (8388608, 2184.09, 2202.42)),
    "mlx4-ib-send-bw-client-a-narrow-msgrate-col.txt":
        ("ib_send_bw", None, "MB/sec", False, 23, 1, "mlx4_0", (2, 10.17, 9.90), (8388608, 3662.23, 3661.76)),
    "mlx4-ib-send-lat-client-a-all-sizes.txt":
        ("ib_send_lat", None, None, False, 23, 1, "mlx4_0", (2, 1.07, 5.00), (8388608, 2247.02, 3761.26)),
    "mlx4-ib-write-bw-client-a-all-sizes-MB.txt":
        ("ib_write_bw", None, "MB/sec", False, 23, 1, "mlx4_0", (2, 9.88, 9.78), (8388608, 3665.51, 3665.25)),
    "roce100g-ib-write-bw-client-bidir-D5-gbits-peak-and-cpufreq-warnings.txt":
        ("ib_write_bw", None, "Gb/sec", True, 1, 1, "mlx5_0", (65536, 0.00, 98.02), None),
    "rocm-docs-ib-write-bw-bidir-a-gbits-use-rocm-rst-indented.txt":
        ("ib_write_bw", None, "Gb/sec", True, 23, 1, "<RDMA-NIC-2>", (2, 0.142947, 0.012281), (8388608, 204.59, 204.59)),
    "rxe-softroce-ib-send-bw-client-roce-gid-lines.txt":
        ("ib_send_bw", None, "MB/sec", False, 1, 1, "rxe0", (65536, 3.75, 3.06), None),
    "rxe-softroce-ib-send-lat-client.txt":
        ("ib_send_lat", None, None, False, 1, 1, "rxe0", (2, 724.36, 37858.01), None),
    "rxe-softroce-ib-send-lat-server-glued-columns.txt":
        ("ib_send_lat", "server", None, False, 1, 1, "rxe0", (2, 692.41, 37330.73), None),
    "sriov-t4-cuda-ib-write-bw-client-pcie-relaxed-ordering-warning.txt":
        ("ib_write_bw", None, "Gb/sec", False, 1, 1, "mlx5_0", (65536, 10.46, 10.42), None),
    "superbench-ib-write-bw-loopback-8M-server-client-concat.txt":
        ("ib_write_bw", None, "MB/sec", False, 1, 2, "ib0", (8388608, 24056.74, 24056.72), None),
    "superbench-ib-write-bw-loopback-all-sizes-interleaved.txt":
        ("ib_write_bw", None, "MB/sec", False, 23, 1, "ib0", (2, 5.32, 5.30), (8388608, 23240.68, 23240.68)),
}

# name: (error_kind, first error line)
FAILURES = {
    "ib_read_lat-client-no-rdma-device.txt": ("no_device", "Did not detect devices"),
    "ib_read_lat-server-no-rdma-device.txt": ("no_device", "Did not detect devices"),
    "ib_write_bw-client-no-rdma-device.txt": ("no_device", "Did not detect devices"),
    "ib_write_bw-named-device-mlx5_0-no-rdma-device.txt": ("no_device", "Did not detect devices"),
    "ib_write_bw-server-no-rdma-device.txt": ("no_device", "Did not detect devices"),
    "perftest-client-failed-to-modify-qp-to-rts.txt": ("qp", "Failed to modify QP to RTS"),
    "perftest-ib-send-lat-port-down-couldnt-set-link-layer.txt": ("port", "Port number 1 state is Down"),
    "perftest-couldnt-connect-unable-to-init-socket-pre-fix.txt": ("connect", "Couldn't connect to 192.168.125.211:18515"),
    "perftest-ib-write-bw-server-couldnt-create-ib-resources.txt": ("resources", "Couldn't get device attributes"),
    "perftest-server-ethernet-read-keys-couldnt-read-remote-address.txt":
        ("exchange", "ethernet_read_keys: Couldn't read remote address"),
}


# name: the first words of the ParseError (an output without a table or a failure line: a server that prints no
# report, see tools/perftest_sweep.py _SILENT_SERVERS)
NO_TABLE = {
    "pib-perftest2.0-ib-atomic-bw-server-fetch-and-add-no-table.txt": "no perftest result table",
}


def _pair(row, kind):
    if kind == "bw":
        return (row["size_bytes"], row["bw_peak"], row["bw_avg"])
    return (row["size_bytes"], row["t_typical"], row["p999"])


def test_every_fixture_is_covered():
    assert sorted(list(TABLES) + list(FAILURES) + list(NO_TABLE)) == ALL


@pytest.mark.parametrize("name", sorted(NO_TABLE), ids=sorted(NO_TABLE))
def test_outputs_without_a_table(name):
    with pytest.raises(ParseError) as info:
        perftest.parse(read(FIXTURES, name))
    assert str(info.value).startswith(NO_TABLE[name])


@pytest.mark.parametrize("name", sorted(TABLES), ids=sorted(TABLES))
def test_tables(name):
    tool, side, unit, bidir, nrows, nblocks, device, first, last = TABLES[name]
    parsed = perftest.parse(read(FIXTURES, name))
    assert parsed["tool"] == tool
    assert parsed["side"] == side
    assert parsed["unit"] == unit
    assert parsed["bidirectional"] is bidir
    assert len(parsed["rows"]) == nrows
    assert parsed["blocks"] == nblocks
    assert parsed["header"]["Device"] == device
    assert parsed["errors"] == []
    kind = tool.rsplit("_", 1)[1]
    assert parsed["kind"] == kind
    assert _pair(parsed["rows"][0], kind) == first
    if last:
        assert _pair(parsed["rows"][-1], kind) == last
    sizes = [r["size_bytes"] for r in parsed["rows"]]
    assert sizes == sorted(sizes) and len(set(sizes)) == len(sizes)


@pytest.mark.parametrize("name", sorted(FAILURES), ids=sorted(FAILURES))
def test_failures(name):
    kind, first = FAILURES[name]
    parsed = perftest.parse(read(FIXTURES, name))
    assert parsed["rows"] == []
    assert parsed["error_kind"] == kind
    assert parsed["errors"][0] == first


def test_header_details():
    parsed = perftest.parse(read(FIXTURES, "amd-ionic-ib-write-bw-client-bidir-q4-a-gbits.txt"))
    header = parsed["header"]
    assert header["Number of qps"] == "4"
    assert header["Link type"] == "Ethernet"
    assert header["GID index"] == "1"
    assert header["Using Enhanced Reorder"] == "OFF"
    assert header["Mtu"] == "4096[B]"
    assert len(parsed["local"]) == 4 and len(parsed["remote"]) == 4
    assert parsed["local"][0]["gid"] == "253:147:22:211:89:182:01:80:06:144:129:255:254:54:91:176"
    assert parsed["local"][0]["qpn"] == "0x0800"
    # tab-separated two-column header lines, key with a tab before the colon
    cx7 = perftest.parse(read(FIXTURES, "cx7-ndr-ib-read-bw-client-report-gbits-cpufreq-warning.txt"))
    assert cx7["header"]["Outstand reads"] == "16"
    assert cx7["header"]["rdma_cm QPs"] == "OFF"
    assert cx7["header"]["Transport type"] == "IB"
    assert cx7["warnings"] == ["Conflicting CPU frequency values detected: 3295.212000 != 5003.410000. "
                               "CPU Frequency is not max."]
    assert cx7["local"][0]["lid"] == "0x01"
    # glued rxe server header keys "Device: rxe0"
    rxe = perftest.parse(read(FIXTURES, "rxe-softroce-ib-send-lat-server-glued-columns.txt"))
    assert rxe["header"]["Transport type"] == "IB" and rxe["header"]["Using SRQ"] == "OFF"
    assert rxe["rows"][0]["t_stdev"] == 2465.90 and rxe["rows"][0]["p99"] == 1216.65


def test_warnings_split_into_facts_and_doubts():
    """Duration mode's 'BW peak' warning and the CPU-frequency warning cast no doubt on BW average;
    the PCIe relaxed-ordering advisory does (perftest_parameters.c, see parsers/perftest.py)."""
    both = perftest.parse(read(FIXTURES, "roce100g-ib-write-bw-client-bidir-D5-gbits-peak-and-cpufreq-warnings.txt"))
    assert both["warnings"] == ["WARNING: BW peak won't be measured in this run.",
                                "Conflicting CPU frequency values detected: 1500.000000 != 3300.016000. "
                                "CPU Frequency is not max."]
    assert perftest.doubtful_warnings(both) == []
    assert perftest.peak_measured(both) is False
    cx7 = perftest.parse(read(FIXTURES, "cx7-ndr-ib-read-bw-client-report-gbits-cpufreq-warning.txt"))
    assert perftest.doubtful_warnings(cx7) == [] and perftest.peak_measured(cx7) is True
    ro = perftest.parse(read(FIXTURES, "sriov-t4-cuda-ib-write-bw-client-pcie-relaxed-ordering-warning.txt"))
    assert perftest.doubtful_warnings(ro) == [
        "WARNING: CPU is not PCIe relaxed ordering compliant.",
        "WARNING: You should disable PCIe RO with `--disable_pcie_relaxed` for both server and client."]


def test_run_time_and_notes():
    parsed = perftest.parse(read(FIXTURES, "amd-ionic-rocm-gdr-ib-write-bw-client-a-MiB.txt"))
    assert parsed["run_time_s"] == 5.459
    assert any(n.startswith("Using ROCm Device") for n in parsed["notes"])


def test_interleaved_repeat_is_noted_not_counted():
    parsed = perftest.parse(read(FIXTURES, "superbench-ib-write-bw-loopback-all-sizes-interleaved.txt"))
    assert any("repeated after the table" in n for n in parsed["notes"])


def test_concatenated_blocks_pick_first_and_count_both():
    text = read(FIXTURES, "superbench-ib-write-bw-loopback-8M-server-client-concat.txt")
    parsed = perftest.parse(text)
    assert parsed["blocks"] == 2
    # the server half alone is recognised as the server side
    server_half = text[text.index("************************************"):]
    assert perftest.parse(server_half)["side"] == "server"


def test_units_as_perftest_defines_them():
    # perftest_resources.c: format_factor = (report_fmt == MBS) ? 0x100000 : 125000000
    assert perftest.gbit_s(1.0, "Gb/sec") == 1.0
    assert perftest.gbit_s(1.0, "MB/sec") == 1048576 * 8 / 1e9
    assert perftest.gbit_s(1.0, "MiB/sec") == 1048576 * 8 / 1e9
    assert round(perftest.gbit_s(46557.03, "MiB/sec"), 2) == 390.55
    assert perftest.gbit_s(None, "MB/sec") is None
    with pytest.raises(ParseError):
        perftest.gbit_s(1.0, "GB/sec")


@pytest.mark.parametrize("text,needle", [
    ("", "no perftest result table"),
    ("hello world\n", "hello world"),
    (" #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n", "no result rows"),
    (" #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n 2   20000  9.88\n",
     "2   20000  9.88"),
    (" #bytes     #iterations    BW peak[GB/sec]    BW average[GB/sec]   MsgRate[Mpps]\n", "GB/sec"),
    (" 2          20000            9.88               9.78               5.128076\n", "without a table header"),
    (" #bytes    #sl      #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n", "#sl"),
])
def test_parse_errors_quote_the_line(text, needle):
    with pytest.raises(ParseError) as info:
        perftest.parse(text)
    assert needle in str(info.value)


# --- fuzzing: only ParseError may escape, whatever the mutation -----------------------


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(ALL), data=st.data())
def test_fuzz_only_parse_error_escapes(name, data):
    text = data.draw(mutated_text(read(FIXTURES, name)))
    try:
        parsed = perftest.parse(text)
    except ParseError:
        return
    assert isinstance(parsed["rows"], list)
    assert parsed["rows"] or parsed["errors"]
