# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""perftest.parse as a line classifier and a state machine (issue 20 item 5): each line gets one kind from its own
text, and hostile input (one 100 KB line, 1 MB of garbage) ends in the right result or a ParseError.

No wall time is asserted here (bench/perftest_long_line.py measures it); before issue 18 some of these inputs took
minutes, so a regression shows as a test run that does not end.
"""

from __future__ import annotations

import functools
import random
import string

import pytest

from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import ParseError
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import perftest
from ansible_collections.aifabric.acceptance.tests.unit.helpers import parser_fixture, read

FIX = parser_fixture("perftest")
CAPTURE = "mlx4-ib-write-bw-client-a-all-sizes-MB.txt"
LONG = 100000
MB1 = 1 << 20
TITLE = " RDMA_Write BW Test\n"
BW_HEADING = " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n"


def _fill(piece, size=LONG):
    return piece * (size // len(piece) + 1)


@functools.lru_cache(maxsize=None)
def _garbage(size, newline_every=0, seed=1):
    """``size`` random printable characters, without blanks, a line break every ``newline_every`` of them."""
    chars = random.Random(seed).choices(string.printable[:94], k=size)
    if newline_every:
        for at in range(newline_every, size, newline_every):
            chars[at] = "\n"
    return "".join(chars)


def _refused(text):
    with pytest.raises(ParseError) as info:
        perftest.parse(text)
    return str(info.value)


# --- the classifier: one kind per line, from the line alone ------------------------------------------------------


@pytest.mark.parametrize("line,kind", [
    ("", perftest.SKIP),
    ("   \t", perftest.SKIP),
    ("# command: ib_write_bw -d mlx5_0", perftest.SKIP),
    ("# exit: 1", perftest.SKIP),
    (" ************************************", perftest.SKIP),
    ("* Waiting for client to connect... *", perftest.BANNER),
    ("                    RDMA_Write BW Test", perftest.TITLE),
    (" Send Bidirectional BW Test", perftest.TITLE),
    ("---------------------------------------------------------------------------------------", perftest.SEPARATOR),
    (BW_HEADING.rstrip(), perftest.HEADING),
    (" 2          20000            9.88               9.78               5.128076", perftest.ROW),
    ("Couldn't connect to 10.0.0.2:18515", perftest.ERROR),
    (" local address: LID 0x03 QPN 0x3371a PSN 0xe5e87 RKey 0x10011b4e VAddr 0x007f507fa1f000", perftest.ADDRESS),
    (" GID: 253:147:22:211:89:182:01:80:06:144:129:255:254:54:91:176", perftest.GID),
    (" Total run time: 5.00s", perftest.RUN_TIME),
    ("Conflicting CPU frequency values detected: 1200.000000 != 3400.000000. CPU Frequency is not max.",
     perftest.WARNING),
    (" WARNING: BW peak won't be measured in this run.", perftest.WARNING),
    (" Using ROCm Device with ID: 0", perftest.NOTE),
    (" Dual-port       : OFF          Device         : mlx4_0", perftest.TEXT),
    ("some wrapper banner", perftest.TEXT),
])
def test_classify_line_kinds(line, kind):
    assert perftest.classify_line(line)[0] == kind


def test_classify_line_values():
    assert perftest.classify_line(" RDMA_Read Bidirectional BW Test") == (perftest.TITLE, ("read", "bw", True, None))
    # the atomic tests name their operation after the verb (perftest_parameters.c ctx_print_test_info)
    assert perftest.classify_line("                    Atomic CMP_AND_SWAP Latency Test") == (
        perftest.TITLE, ("atomic", "lat", False, "CMP_AND_SWAP"))
    assert perftest.classify_line(BW_HEADING.rstrip()) == (
        perftest.HEADING, {"table": "bw", "unit": "MB/sec", "msgrate": True, "extra_columns": []})
    assert perftest.classify_line("IB device mlx5_9 not found") == (perftest.ERROR, "no_device")
    kind, (side, entry) = perftest.classify_line(" remote address: LID 0x0a QPN 0x2aa3e PSN 0x5eab46")
    assert (kind, side, entry["lid"], entry["qpn"]) == (perftest.ADDRESS, "remote", "0x0a", "0x2aa3e")
    assert perftest.classify_line(" Total run time: 5.00s") == (perftest.RUN_TIME, 5.0)


def test_classify_line_refuses_unreadable_headings():
    with pytest.raises(ParseError, match="#sl"):
        perftest.classify_line(" #bytes    #sl      #iterations    BW peak[MB/sec]    BW average[MB/sec]")
    with pytest.raises(ParseError, match="mixes units"):
        perftest.classify_line(" #bytes     #iterations    BW peak[MB/sec]    BW average[Gb/sec]")


@pytest.mark.parametrize("line,kind", [
    ("-" * LONG, perftest.SEPARATOR),
    ("-" * LONG + "x", perftest.TEXT),
    ("*" * LONG, perftest.SKIP),
    ("*" * LONG + "x", perftest.TEXT),
    (" " * LONG + "x", perftest.TEXT),
    ("1" * LONG, perftest.TEXT),
    (" 2 20000 " + _fill("9.88 "), perftest.ROW),
    (_fill(" Dual-port"), perftest.TEXT),
    (_fill("IB device Failed status "), perftest.TEXT),
    (_fill("x") + " Couldn't create IB resources", perftest.ERROR),
    ("#" * LONG, perftest.TEXT),
])
def test_classify_line_long_lines(line, kind):
    assert perftest.classify_line(line)[0] == kind


# --- whole outputs with a 100 KB line or 1 MB of garbage --------------------------------------------------------


@pytest.mark.parametrize("text,needle", [
    (TITLE + _fill(" Dual-port       : OFF\t\tDevice         : mlx4_0") + "\n", "no perftest result table"),
    (TITLE + _fill("a : ") + "\n", "no perftest result table"),
    (TITLE + _fill(" Dual-port") + "\n", "no perftest result table"),
    (TITLE + " Dual-port" + " " * LONG + ": OFF\n", "no perftest result table"),
    (TITLE + BW_HEADING + " 2 20000 " + _fill("9.88 ") + "\n", "expected 5"),
    (" " * LONG + "x\n", "first line: 'x'"),
    ("-" * LONG + "x\n", "no perftest result table"),
    (_fill("IB device Failed status ") + "\n", "no perftest result table"),
    (TITLE + _garbage(LONG) + "\n", "no perftest result table"),
    (_garbage(MB1, newline_every=100), "no perftest result table"),
    (_garbage(MB1), "no perftest result table"),
])
def test_hostile_input_is_refused(text, needle):
    assert needle in _refused(text)


def test_long_garbage_line_in_a_capture_is_a_note():
    capture = read(FIX, CAPTURE)
    garbage = _garbage(LONG).replace(":", ";")
    lines = capture.splitlines(True)
    at = next(i for i, line in enumerate(lines) if "remote address" in line)
    parsed = perftest.parse("".join(lines[:at] + [garbage + "\n"] + lines[at:]))
    expected = perftest.parse(capture)
    assert parsed["rows"] == expected["rows"] and parsed["complete"] == expected["complete"]
    assert garbage.strip() in parsed["notes"]


def test_long_header_line_in_a_capture_keeps_its_first_pairs():
    capture = read(FIX, CAPTURE)
    long_pairs = _fill(" Extra key : 1\t\tOther key : 2") + " Last : end"
    parsed = perftest.parse(capture.replace(" TX depth        : 128\n", " TX depth        : 128\n" + long_pairs + "\n"))
    assert parsed["header"]["Extra key"] == "1" and parsed["header"]["Other key"] == "2"
    assert parsed["header"]["Last"] == "end" and parsed["header"]["Device"] == "mlx4_0"
    assert len(parsed["rows"]) == len(perftest.parse(capture)["rows"])


def test_failure_after_garbage_is_still_an_error():
    text = _garbage(MB1, newline_every=100) + "\n Couldn't connect to 10.0.0.2:18515\n"
    parsed = perftest.parse(text)
    assert parsed["error_kind"] == "connect" and parsed["rows"] == []
