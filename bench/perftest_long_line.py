# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""perftest.parse on hostile input: one 100 KB line, 1 MB of garbage, and a normal capture (issue 20 item 5).

A parser that backtracks or rescans on a long line takes minutes on an output far under the import cap. The parse
reads each line once (a classifier gives it a kind, a small state machine consumes the kinds), so every case here
must take time in proportion to its size: a 100 KB line a few milliseconds, 1 MB a few tenths of a second.

Cases (each ends in a result or a ParseError; both are timed and the outcome is printed):

- normal:          a real capture (ib_write_bw, all sizes);
- 100k-header:     a header block whose one line is 100 KB of ``Key : value`` pairs;
- 100k-colons:     a 100 KB line of ``a : `` inside a header block;
- 100k-words:      a 100 KB line of one header key repeated, no colon (``Dual-port Dual-port ...``; issue 18: minutes);
- 100k-wide-pair:  a header pair whose blank run before its colon is 100 KB wide;
- 100k-row:        a 100 KB table row (under its heading: refused, too many fields);
- 100k-blanks:     100 KB of blanks before one word;
- 100k-dashes:     100 KB of dashes, then a character that spoils the separator;
- 100k-phrases:    100 KB of failure-phrase beginnings that never complete (``IB device ``, ``Failed status ``);
- 100k-garbage:    one 100 KB line of random printable characters, inside a header block;
- capture+100k:    the real capture with a 100 KB garbage line among its address lines (parsed: the line is a note);
- 1m-garbage:      1 MB of random printable characters, a line break about every 100 characters;
- 1m-garbage-line: 1 MB of random printable characters on one line.

Each case is timed in a child process of its own, stopped after --timeout seconds (a slow parser is reported as
``timeout``, not waited for); the time is the CPU time of the fastest of 3 calls. --parser FILE times another copy
of parsers/perftest.py (e.g. an older one: ``git show REV:plugins/module_utils/parsers/perftest.py > /tmp/old.py``).

Run from the collection root with the collection importable:

    PYTHONPATH=/tmp/at python bench/perftest_long_line.py [--parser FILE] [--timeout 60] [--only 100k-row]
"""

from __future__ import annotations

import argparse
import gc
import importlib.util
import os
import random
import string
import subprocess
import sys
import time

from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import AcceptanceError

HERE = os.path.dirname(os.path.abspath(__file__))
CAPTURE = os.path.join(HERE, "..", "tests", "unit", "plugins", "module_utils", "parsers", "fixtures", "perftest",
                       "mlx4-ib-write-bw-client-a-all-sizes-MB.txt")
TITLE = " RDMA_Write BW Test\n"
BW_HEADING = " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]\n"
KB100 = 100000
MB1 = 1 << 20


def _garbage(size, newline_every, seed=1):
    """``size`` random printable characters, without blanks, a line break every ``newline_every`` of them."""
    chars = random.Random(seed).choices(string.printable[:94], k=size)
    if newline_every:
        for at in range(newline_every, size, newline_every):
            chars[at] = "\n"
    return "".join(chars)


def _fill(piece, size):
    return piece * (size // len(piece) + 1)


def build(name):
    """The input text of one case."""
    with open(CAPTURE, encoding="utf-8") as handle:
        capture = handle.read()
    builders = {
        "normal": lambda: capture,
        "100k-header": lambda: TITLE + _fill(" Dual-port       : OFF\t\tDevice         : mlx4_0", KB100) + "\n",
        "100k-colons": lambda: TITLE + _fill("a : ", KB100) + "\n",
        "100k-words": lambda: TITLE + _fill(" Dual-port", KB100) + "\n",
        "100k-wide-pair": lambda: TITLE + " Dual-port" + " " * KB100 + ": OFF x\n",
        "100k-row": lambda: TITLE + BW_HEADING + " 2 20000 " + _fill("9.88 ", KB100) + "\n",
        "100k-blanks": lambda: " " * KB100 + "x\n",
        "100k-dashes": lambda: "-" * KB100 + "x\n",
        "100k-phrases": lambda: _fill("IB device Failed status ", KB100) + "\n",
        "100k-garbage": lambda: TITLE + _garbage(KB100, 0) + "\n",
        "capture+100k": lambda: capture.replace(" remote address:", _garbage(KB100, 0) + "\n remote address:", 1),
        "1m-garbage": lambda: _garbage(MB1, 100),
        "1m-garbage-line": lambda: _garbage(MB1, 0),
    }
    return builders[name]()


CASES = ("normal", "100k-header", "100k-colons", "100k-words", "100k-wide-pair", "100k-row", "100k-blanks",
         "100k-dashes", "100k-phrases", "100k-garbage", "capture+100k", "1m-garbage", "1m-garbage-line")


def load_parse(path):
    """parse() of the collection's perftest parser, or of the copy at ``path``."""
    if not path:
        from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import perftest
        return perftest.parse
    spec = importlib.util.spec_from_file_location("perftest_under_bench", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.parse


def time_one(parse, text):
    """(CPU seconds of the fastest of 3 calls, outcome: ok with the row count, or the exception's name)."""
    best, outcome = None, None
    gc.collect()
    gc.disable()
    try:
        for _attempt in range(3):
            start = time.process_time()
            try:
                outcome = "ok, %d rows" % len(parse(text)["rows"])
            except AcceptanceError as exc:   # ParseError is one
                outcome = type(exc).__name__
            took = time.process_time() - start
            best = took if best is None else min(best, took)
    finally:
        gc.enable()
    return best, outcome


def child(name, parser_path):
    """Time one case in this process and print ``seconds<TAB>outcome``."""
    text = build(name)
    best, outcome = time_one(load_parse(parser_path), text)
    print("%.6f\t%s" % (best, outcome))


def run_case(name, parser_path, timeout):
    """(size in bytes, seconds or None on timeout, outcome) of one case, timed in a child process."""
    size = len(build(name))
    command = [sys.executable, os.path.abspath(__file__), "--child", name]
    if parser_path:
        command += ["--parser", parser_path]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, check=False)
    except subprocess.TimeoutExpired:
        return size, None, "timeout after %ss" % timeout
    if done.returncode != 0:
        return size, None, "failed: %s" % (done.stderr.strip().splitlines() or ["?"])[-1][:200]
    seconds, outcome = done.stdout.strip().splitlines()[-1].split("\t", 1)
    return size, float(seconds), outcome


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--parser", help="time this copy of parsers/perftest.py instead of the collection's")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds one case may take (default 60)")
    parser.add_argument("--only", action="append", choices=CASES, help="time only this case (repeatable)")
    parser.add_argument("--child", choices=CASES, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.parser)
        return 0
    print("perftest.parse: %s" % (args.parser or "the collection's"))
    print("%-16s %10s %12s  %s" % ("case", "bytes", "CPU s", "outcome"))
    for name in args.only or CASES:
        size, seconds, outcome = run_case(name, args.parser, args.timeout)
        shown = "%.4f" % seconds if seconds is not None else "-"
        print("%-16s %10d %12s  %s" % (name, size, shown, outcome), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
