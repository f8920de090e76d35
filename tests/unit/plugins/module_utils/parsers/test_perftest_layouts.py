# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""perftest outputs found in the wild (issue 12, item 5): root cause first, errors after the rows,
an unmeasured peak. Each test failed before the change it covers."""

from __future__ import annotations


from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import perftest
from ansible_collections.aifabric.acceptance.tests.unit.helpers import parser_fixture, read

FIXTURES = parser_fixture("perftest")
PORT_DOWN = "perftest-ib-send-lat-port-down-couldnt-set-link-layer.txt"
D5 = "roce100g-ib-write-bw-client-bidir-D5-gbits-peak-and-cpufreq-warnings.txt"
TABLE = "cx7-ndr-ib-read-bw-client-report-gbits-cpufreq-warning.txt"


def test_port_down_leads_the_errors():
    parsed = perftest.parse(read(FIXTURES, PORT_DOWN))
    assert parsed["error_kind"] == "port"
    # root cause first, then by category (resources before other), print order within a category
    assert parsed["errors"] == ["Port number 1 state is Down", "Couldn't get context for the device",
                                "Couldn't set the link layer"]


def test_root_cause_sorts_first_whatever_the_print_order():
    lines = read(FIXTURES, PORT_DOWN).splitlines(True)
    parsed = perftest.parse("".join(lines[1:] + lines[:1]))   # the follow-on lines printed first
    assert parsed["errors"][0] == "Port number 1 state is Down" and parsed["error_kind"] == "port"


def test_errors_after_rows_are_kept_with_the_rows():
    # a real table followed by the completion-error lines perftest prints when a QP breaks mid-run
    # (perftest_resources.h NOTIFY_COMP_ERROR_SEND; wording as reported in linux-rdma/perftest issues)
    text = read(FIXTURES, TABLE) + " Completion with error at client\n Failed status 12: wr_id 0 syndrom 0x81\nscnt=128, ccnt=0\n"
    parsed = perftest.parse(text)
    assert len(parsed["rows"]) == 1 and parsed["error_kind"] == "completion"
    assert parsed["errors_after_rows"] == ["Completion with error at client", "Failed status 12: wr_id 0 syndrom 0x81",
                                           "scnt=128, ccnt=0"]
    assert perftest.parse(read(FIXTURES, TABLE))["errors_after_rows"] == []


def test_peak_not_measured_without_the_warning_line():
    text = read(FIXTURES, D5)
    assert perftest.peak_measured(perftest.parse(text)) is False          # with perftest's own warning
    without = "".join(ln for ln in text.splitlines(True) if "BW peak won't be measured" not in ln)
    assert without != text
    parsed = perftest.parse(without)
    assert parsed["rows"][0]["bw_peak"] == 0.0 and parsed["rows"][0]["bw_avg"] == 98.02
    assert perftest.peak_measured(parsed) is False                        # 0.00 peak under a 98 Gb/s average
    assert perftest.peak_measured(perftest.parse(read(FIXTURES, TABLE))) is True
