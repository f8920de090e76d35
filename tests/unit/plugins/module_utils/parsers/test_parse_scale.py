# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every parser reads long lines and many rows in linear time (issue 18 item 10).

No wall time is asserted here (bench/parse_scale.py measures the growth): these inputs only have to be parsed,
and before the fix some took minutes to hours (a 200 KB perftest header line: about 12 minutes). Each input is
a real capture with one real line made 200 KB long, or its table rows repeated.
"""

from __future__ import annotations

import os
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import gemm as gemm_parser
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import ParseError
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import (
    hccl, hccn_tool, nccl_tests, npu_smi, nvidia_smi, perftest, rdma, system)
from ansible_collections.aifabric.acceptance.tests.unit.helpers import parser_fixture

FIX = parser_fixture()
GEMM = os.path.join(os.path.dirname(__file__), "..", "..", "modules", "fixtures", "h200x2-proof-1", "gemm_bare.txt")
LONG = 200000

# (parser, capture, a line of it to make long)
CASES = [
    (perftest.parse, "perftest/mlx4-ib-write-bw-client-a-all-sizes-MB.txt", "Dual-port"),
    (perftest.parse, "perftest/mlx4-ib-read-lat-client-a-all-sizes.txt", "#bytes"),
    (nccl_tests.parse_text, "nccl_tests/h200x2-nccl-tests-2.19.6/all_reduce_g2.txt", "Rank  0"),
    (nccl_tests.parse_text, "nccl_tests/h200x2-nccl-tests-2.19.6/all_reduce_g2.txt", "nThread"),
    (hccl.parse, "hccl_test/oam-tools-docs-all-reduce-8npu-8K-64M-avg-time-header.txt", "8192"),
    (hccl.parse, "hccl_test/oam-tools-faq-mpich-gethostbyname-failed.txt", "Fatal error"),
    (hccn_tool.parse_ip, "hccn_tool/deepseekv3-910b3-8npu-hccn-tool-ip-g-loop-i0-7.txt", "ipaddr"),
    (hccn_tool.parse_gateway, "hccn_tool/deepseekv3-910b3-8npu-hccn-tool-gateway-g-loop-i0-7.txt", "gateway"),
    (hccn_tool.parse_lldp, "hccn_tool/arthurchiao-910b1-hccn-tool-i3-lldp-g-huawei-vrp-switch.txt", "Ifname"),
    (hccn_tool.parse_link, "hccn_tool/mindcluster-docs-hccn-tool-link-g-up.txt", "link"),
    (npu_smi.parse_info, "npu_smi/vllm-ascend-issue362-npu-smi-23.0.7-8x910B2-info.txt", "29954/"),
    (nvidia_smi.parse_query_csv, "nvidia_smi/driver580-h200x2-query-gpu-27fields-header-units.csv", "0, NVIDIA"),
    (nvidia_smi.parse_topo, "nvidia_smi/topo-m-8gpu-nv12-10nic-nic-legend-tabs.txt", "NIC0:"),
    (nvidia_smi.parse_nvlink_status, "nvidia_smi/driver580-h200x2-nvlink-s.txt", "GPU 0"),
    (rdma.parse_show_gids, "show_gids/mlx5-bond-roce-ipv4-tabs.txt", "mlx5_bond_0"),
    (rdma.parse_ibdev2netdev, "ibdev2netdev/sriov-cni-cx4-v-verbose-with-4-vfs.txt", "mlx5_0"),
    (rdma.parse_ibstat, "misc/ibstat-cx4-mlx5-eth-active-and-ib-down.txt", "Firmware"),
    (system.parse_cpuinfo, "misc/ubuntu2404-h100vm-cpuinfo.txt", "model name"),
    (system.parse_meminfo, "misc/ubuntu2404-h100vm-meminfo.txt", "MemTotal"),
    (system.parse_cmdline, "misc/ubuntu2404-h100vm-cmdline.txt", "mitigations"),
    (system.parse_ldconfig, "misc/ubuntu2404-h100vm-ldconfig-p.txt", "libnccl"),
    (system.parse_pip_freeze, "misc/ubuntu2404-h100vm-pip-freeze.txt", "torch"),
    (system.parse_os_release, "misc/ubuntu2404-h100vm-os-release.txt", "PRETTY_NAME"),
    (gemm_parser.parse_gemm, GEMM, "AIFABRIC_GEMM"),
]


def read(rel):
    with open(os.path.join(FIX, rel), encoding="utf-8") as handle:
        return handle.read()


def long_variants(line):
    """The line with its content repeated, its first word repeated, and every run of blanks between its words (a
    word added at its end) widened: each about LONG characters (bench/parse_scale.py's long lines)."""
    indent = line[:len(line) - len(line.lstrip())]
    body, word = line.strip() + " ", line.split()[0] + " "
    words = (line.strip() + " x").split()
    widened = indent + (" " * (LONG // (len(words) - 1))).join(words)
    return [indent + body * (LONG // len(body) + 1), indent + word * (LONG // len(word) + 1), widened]


def parsed_or_refused(func, text):
    try:
        return func(text)
    except ParseError as exc:
        return exc


@pytest.mark.parametrize("func, rel, marker", CASES, ids=["%s:%s" % (c[0].__name__, c[2]) for c in CASES])
def test_a_200kb_line_is_parsed(func, rel, marker):
    text = read(rel)
    lines = text.splitlines(True)
    at = next(i for i, line in enumerate(lines) if marker in line)
    for variant in long_variants(lines[at].rstrip("\r\n")):
        parsed_or_refused(func, "".join(lines[:at]) + variant + "\n" + "".join(lines[at + 1:]))


def test_perftest_long_header_line_keeps_the_header():
    """The issue's case: a long line in perftest's header block (about 12 minutes at 200 KB before the fix)."""
    text = read("perftest/mlx4-ib-write-bw-client-a-all-sizes-MB.txt")
    noise = " Number of qps   " + "word " * (LONG // 5)
    parsed = perftest.parse(text.replace(" Connection type", noise + "\n Connection type", 1))
    assert parsed["header"]["Device"] == "mlx4_0" and len(parsed["rows"]) == 23 and parsed["complete"]


def test_perftest_40000_rows():
    """40,000 distinct rows (about 20 s before the fix): every one is kept."""
    text = read("perftest/mlx4-ib-write-bw-client-a-all-sizes-MB.txt")
    row = next(line for line in text.splitlines(True) if line.startswith(" 2 "))
    rows = "".join(row.replace(" 2 ", " %d " % (1000 + n), 1) for n in range(40000))
    parsed = perftest.parse(text.replace(row, row + rows, 1))
    assert len(parsed["rows"]) == 40023 and parsed["complete"]


# the regex header_pairs replaced; on short lines its cost does not matter, so it is the reference
OLD_HEADER_RE = re.compile(r"([A-Za-z][A-Za-z0-9_.*\-]*(?: [A-Za-z0-9_.*\-]+)*)\s*:\s*(\S+)")
HEADER_LINES = [line for name in sorted(os.listdir(os.path.join(FIX, "perftest"))) if name.endswith(".txt")
                for line in read(os.path.join("perftest", name)).splitlines()]


def test_header_pairs_read_every_real_line_as_the_regex_did():
    assert all(perftest.header_pairs(line) == OLD_HEADER_RE.findall(line) for line in HEADER_LINES)


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet="aZ9_.*- \t:()\u00a0", max_size=30))
def test_header_pairs_equal_the_regex_on_any_line(line):
    assert perftest.header_pairs(line) == OLD_HEADER_RE.findall(line)
