# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How parse time grows with the input, for every parser of plugins/module_utils/parsers/ (and the GEMM worker's).

A parser must take time in proportion to its input: an output far under the 64 MiB import cap must never take
minutes (issue 18: a 100 KB perftest header line took ~3 min, 40,000 rows ~20 s). Each parser is given a real
capture (tests/unit/**/fixtures) made bigger in four ways, each at 1x, 10x and 100x:

- rows:   the capture's repeated lines (table rows, GPUs, links, ...) repeated, the first number of each copy
          bumped so rows stay distinct; the 1x input is about 20 KB;
- words:  one real line of the capture, its content repeated within the line: 2 KB, 20 KB, 200 KB;
- word:   the same line's first word repeated, blank-separated: 2 KB, 20 KB, 200 KB;
- blanks: the same line, a word added at its end, every run of blanks between its words widened: 2 KB, 20 KB,
          200 KB.

For each it prints the time per size (CPU time of the fastest of 3 calls or more) and the growth ratio to the
previous size: about 10 is linear, about 100 quadratic (flagged ``SUPERLINEAR`` above 40; the 1x inputs are
small enough that caches make some 10x steps read 15-25 on a linear parser). A size whose predecessor took more
than a hundredth of --budget seconds is skipped (on a quadratic parser 10x the input takes 100x the time). The
last column says how the parser ended on the largest input (ok, or the ParseError it refused it with: that is
timed too). Results are printed and written to bench/results/parse_scale.json.

Run from the collection root with the collection importable:

    PYTHONPATH=/tmp/at python bench/parse_scale.py [--only perftest] [--budget 30]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import re
import time

from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import gemm as gemm_parser
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import AcceptanceError
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import (
    hccl, hccn_tool, nccl_tests, npu_smi, nvidia_smi, perftest, rdma, system)

HERE = os.path.dirname(os.path.abspath(__file__))
UNIT = os.path.join(HERE, "..", "tests", "unit", "plugins")
FIX = os.path.join(UNIT, "module_utils", "parsers", "fixtures")
GEMM_CAPTURE = os.path.join(UNIT, "modules", "fixtures", "h200x2-proof-1", "gemm_bare.txt")
RESULTS = os.path.join(HERE, "results", "parse_scale.json")
ROWS_BASE = 20000          # bytes of the 1x "rows" input
LINE_BASE = 2000           # characters of the 1x long line
SCALES = (1, 10, 100)
SUPERLINEAR = 40          # growth for 10x the input: ~10 linear, ~100 quadratic
FIRST_NUMBER_RE = re.compile(r"(?<![\w.])\d+(?![\w.])")

# (parser, function, capture under FIX, lines to repeat for "rows" (None: every line), the line made long)
CASES = (
    ("perftest.parse", perftest.parse, "perftest/mlx4-ib-write-bw-client-a-all-sizes-MB.txt",
     r"^\s*\d+\s+\d+\s", r"Dual-port"),
    ("perftest.parse (latency)", perftest.parse, "perftest/mlx4-ib-read-lat-client-a-all-sizes.txt",
     r"^\s*\d+\s+\d+\s", r"Number of qps"),
    ("nccl_tests.parse_text", nccl_tests.parse_text, "nccl_tests/h200x2-nccl-tests-2.19.6/all_reduce_g2.txt",
     r"^\s+\d+\s+\d+\s+\w+", r"#\s+Rank\s+0"),
    ("hccl.parse", hccl.parse, "hccl_test/oam-tools-docs-all-reduce-8npu-8K-64M-avg-time-header.txt",
     r"^\d+\s+\|", r"data_size"),
    ("hccn_tool.parse_ip", hccn_tool.parse_ip, "hccn_tool/deepseekv3-910b3-8npu-hccn-tool-ip-g-loop-i0-7.txt",
     None, r"ipaddr"),
    ("hccn_tool.parse_link", hccn_tool.parse_link, "hccn_tool/mindcluster-docs-hccn-tool-link-g-up.txt",
     None, r"link status"),
    ("hccn_tool.parse_gateway", hccn_tool.parse_gateway,
     "hccn_tool/deepseekv3-910b3-8npu-hccn-tool-gateway-g-loop-i0-7.txt", None, r"default gateway"),
    ("hccn_tool.parse_lldp", hccn_tool.parse_lldp,
     "hccn_tool/arthurchiao-910b1-hccn-tool-i3-lldp-g-huawei-vrp-switch.txt", r"^\s", r"Ifname"),
    ("npu_smi.parse_info", npu_smi.parse_info, "npu_smi/vllm-ascend-issue362-npu-smi-23.0.7-8x910B2-info.txt",
     r"^\| \d", r"^\| 0\s+910B2"),
    ("npu_smi.parse_install_info", npu_smi.parse_install_info,
     "npu_smi/vllm-ascend-issue362-cann-8.0.0-ascend_toolkit_install.info", None, r"version"),
    ("nvidia_smi.parse_query_csv", nvidia_smi.parse_query_csv,
     "nvidia_smi/driver580-h200x2-query-gpu-27fields-header-units.csv", r"^\d", r"^0, "),
    ("nvidia_smi.parse_topo", nvidia_smi.parse_topo, "nvidia_smi/topo-m-8gpu-nv12-10nic-nic-legend-tabs.txt",
     r"^\s*NIC\d+:", r"^GPU0\s"),
    ("nvidia_smi.parse_nvlink_status", nvidia_smi.parse_nvlink_status, "nvidia_smi/driver580-h200x2-nvlink-s.txt",
     r"^\s+Link", r"^GPU 0"),
    ("rdma.parse_show_gids", rdma.parse_show_gids, "show_gids/mlx5-bond-roce-ipv4-tabs.txt", r"^mlx5", r"^mlx5"),
    ("rdma.parse_ibdev2netdev", rdma.parse_ibdev2netdev, "ibdev2netdev/sriov-cni-cx4-v-verbose-with-4-vfs.txt",
     None, r"mlx5_0"),
    ("rdma.parse_ibstat", rdma.parse_ibstat, "misc/ibstat-cx4-mlx5-eth-active-and-ib-down.txt", r"^\s+\w",
     r"Firmware version"),
    ("system.parse_os_release", system.parse_os_release, "misc/ubuntu2404-h100vm-os-release.txt", None,
     r"PRETTY_NAME"),
    ("system.parse_cpuinfo", system.parse_cpuinfo, "misc/ubuntu2404-h100vm-cpuinfo.txt", None, r"^flags"),
    ("system.parse_meminfo", system.parse_meminfo, "misc/ubuntu2404-h100vm-meminfo.txt", None, r"MemTotal"),
    ("system.parse_cmdline", system.parse_cmdline, "misc/ubuntu2404-h100vm-cmdline.txt", None, r"."),
    ("system.parse_modules", system.parse_modules, "misc/ubuntu2404-h100vm-modules.txt", None, r"."),
    ("system.parse_ldconfig", system.parse_ldconfig, "misc/ubuntu2404-h100vm-ldconfig-p.txt", r"=>", r"libnccl"),
    ("system.parse_probe", system.parse_probe, "misc/ubuntu2404-h100vm-python-probe-torch-venv.txt", None, r"."),
    ("system.parse_pip_freeze", system.parse_pip_freeze, "misc/ubuntu2404-h100vm-pip-freeze.txt", None, r"torch"),
    ("gemm_parser.parse_gemm", gemm_parser.parse_gemm, GEMM_CAPTURE, None, r"AIFABRIC_GEMM"),
)
# rows repeated as they are (a bumped first number, the PCI address, would make every copy unreadable)
AS_IS = ("rdma.parse_ibdev2netdev",)


def read(rel):
    with open(os.path.join(FIX, rel), encoding="utf-8") as handle:
        return handle.read()


def bumped(line, serial):
    """``line`` with its first whole number raised by ``serial`` x 1,000,003 (0: unchanged), so that every
    repeated line is a distinct row (table rows, links, GID indexes)."""
    if not serial:
        return line
    return FIRST_NUMBER_RE.sub(lambda m: str(int(m.group(0)) + serial * 1000003), line, count=1)


def rows_input(text, pattern, scale, bump=True):
    """The capture with the lines that match ``pattern`` (every line: None) repeated to ~ROWS_BASE x scale bytes."""
    lines = text.splitlines(True)
    picked = [i for i, line in enumerate(lines) if pattern is None or re.search(pattern, line)]
    block = "".join(lines[i] for i in picked)
    copies = max(1, -(-ROWS_BASE * scale // max(1, len(block))))
    at = len(lines) if pattern is None else picked[-1] + 1
    extra = "".join(bumped(lines[i], (c * len(picked) + j + 1) if bump else 0)
                    for c in range(copies - 1) for j, i in enumerate(picked))
    return "".join(lines[:at]) + extra + "".join(lines[at:])


def long_line_input(text, pattern, scale, how):
    """The capture with its first line matching ``pattern`` made LINE_BASE x scale characters long."""
    lines = text.splitlines(True)
    at = next(i for i, line in enumerate(lines) if re.search(pattern, line))
    line = lines[at].rstrip("\r\n")
    indent = line[:len(line) - len(line.lstrip())]
    size = LINE_BASE * scale
    if how == "words":
        body = line.strip() + " "
        long_line = indent + (body * (size // len(body) + 1))[:size]
    elif how == "word":
        word = line.split()[0] + " "
        long_line = indent + (word * (size // len(word) + 1))[:size]
    else:   # blanks: every run of blanks between two words of the line (and a word added at its end) widened
        words = (line.strip() + " x").split()
        width = max(1, (size - sum(len(w) for w in words)) // (len(words) - 1))
        long_line = indent + (" " * width).join(words)
    return "".join(lines[:at]) + long_line + "\n" + "".join(lines[at + 1:])


def timed(func, text):
    """(CPU seconds of the fastest of 3 calls or more (one when it takes over a second), garbage collection off
    as timeit does; what the parser
    returned: ok or the exception's name). CPU time of this process, not wall time: other processes on a shared
    machine do not count."""
    best, outcome, spent, calls = None, None, 0.0, 0
    gc.collect()
    gc.disable()
    try:
        while calls < 1 or (calls < 3 and best < 1.0) or (spent < 0.5 and calls < 200):
            start = time.process_time()
            try:
                func(text)
                outcome = "ok"
            except (AcceptanceError, ValueError) as exc:    # ParseError is an AcceptanceError
                outcome = type(exc).__name__
            took = time.process_time() - start
            spent, calls = spent + took, calls + 1
            best = took if best is None else min(best, took)
    finally:
        gc.enable()
    return best, outcome


def measure(name, func, build, budget):
    row = {"parser": name, "sizes": []}
    previous = None
    for scale in SCALES:
        if previous is not None and previous * 100 > budget:   # 10x the input may take 100x the time
            row["sizes"].append({"scale": scale, "skipped": "the previous size took %.1f s" % float(previous)})
            continue
        data = build(scale)
        seconds, outcome = timed(func, data)
        row["sizes"].append({"scale": scale, "bytes": len(data), "seconds": seconds, "result": outcome})
        previous = seconds
    times = [s.get("seconds") for s in row["sizes"]]
    row["growth"] = [None if a is None or b is None else b / a for a, b in zip(times, times[1:])]
    row["superlinear"] = any(g is not None and g > SUPERLINEAR for g in row["growth"])
    return row


def scaled_xml(scale):
    """The 2x H200 ``nvidia-smi -q -x`` with its two <gpu> elements repeated 2 x scale times (attached_gpus too)."""
    xml = read("nvidia_smi/driver580-h200x2-q-x.xml")
    start, end = xml.index("\t<gpu id="), xml.rindex("</gpu>") + len("</gpu>\n")
    xml = xml[:start] + xml[start:end] * (2 * scale) + xml[end:]
    return re.sub(r"<attached_gpus>\d+</attached_gpus>", "<attached_gpus>%d</attached_gpus>" % (4 * scale), xml)


def cases(only):
    for name, func, rel, rows_re, line_re in CASES:
        if only and not any(word in name for word in only):
            continue
        text = read(rel)
        yield name, "rows", func, (lambda s, t=text, r=rows_re, b=name not in AS_IS: rows_input(t, r, s, b))
        for how in ("words", "word", "blanks"):
            yield name, how, func, (lambda s, t=text, r=line_re, h=how: long_line_input(t, r, s, h))
    if not only or any(word in "nccl_tests.parse_json nvidia_smi.parse_xml" for word in only):
        doc = json.loads(read("nccl_tests/h200x2-nccl-tests-2.19.6/all_reduce.json"))
        yield "nccl_tests.parse_json", "rows", nccl_tests.parse_json, (
            lambda s, d=doc: json.dumps(dict(d, results=d["results"] * max(1, 20 * s))))
        yield "nvidia_smi.parse_xml", "rows", nvidia_smi.parse_xml, scaled_xml


def show(row, how):
    cells = []
    for size in row["sizes"]:
        if "skipped" in size:
            cells.append("%5dx skipped (%s)" % (size["scale"], size["skipped"]))
            continue
        cells.append("%8.1f KB %9.2f ms" % (size["bytes"] / 1000.0, size["seconds"] * 1000))
    growth = " ".join("x%.1f" % g if g is not None else "-" for g in row["growth"])
    last = [s for s in row["sizes"] if "result" in s]
    outcome = last[-1]["result"] if last else ""
    flag = "  SUPERLINEAR" if row["superlinear"] else ""
    print("%-32s %-6s %s  growth %-12s %s%s" % (row["parser"], how, " | ".join(cells), growth, outcome, flag),
          flush=True)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n", maxsplit=1)[0])
    parser.add_argument("--only", nargs="*", help="parsers whose name contains one of these words")
    parser.add_argument("--budget", type=float, default=30.0,
                        help="seconds: a size after one that took more than a hundredth of this is skipped")
    args = parser.parse_args()
    print("sizes: rows %d B x %s; long lines %d characters x %s; time: CPU time, fastest of 3 calls or more"
          % (ROWS_BASE, SCALES, LINE_BASE, SCALES))
    out = []
    for name, how, func, build in cases(args.only):
        row = measure(name, func, build, args.budget)
        row["input"] = how
        show(row, how)
        out.append(row)
    flagged = [r for r in out if r["superlinear"]]
    print("%d inputs, %d superlinear%s" % (len(out), len(flagged), "".join(
        "\n  %s (%s)" % (r["parser"], r["input"]) for r in flagged)))
    if not os.path.isdir(os.path.dirname(RESULTS)):
        os.makedirs(os.path.dirname(RESULTS))
    with open(RESULTS, "w") as handle:
        json.dump(out, handle, indent=1)


if __name__ == "__main__":
    main()
