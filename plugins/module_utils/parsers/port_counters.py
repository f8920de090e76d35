# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parsers of a port's counters (private). Pure, no I/O, Python 3.8; never raise.

- ``parse_value(text)``: one sysfs counter file (``/sys/class/infiniband/<dev>/ports/<p>/counters/symbol_error``,
  ``.../hw_counters/out_of_buffer``): ``(value, None)`` for a decimal number, ``(None, why)`` otherwise (an iWARP
  port's ``N/A (no PMA)``, an unreadable file).
- ``parse_ethtool_stats(text)``: ``ethtool -S <netdev>``: a ``NIC statistics:`` header, then ``     name: value``
  lines; a name may hold ``: `` itself (bnx2x's ``[0]: rx_bytes``, be2net's ``rxq0: rx_bytes``), so the value is
  after the last one. ``{"error", "problems", "counters": {name: int}}``.
"""

from __future__ import annotations

from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers._common import add_problem, as_text, is_uint, quote

HEADER = "NIC statistics:"


def parse_value(text):
    if text is None:
        return None, "unreadable"
    word = as_text(text).strip()
    if is_uint(word):
        return int(word), None
    return None, "not a number: %s" % quote(word, 40)


def parse_ethtool_stats(text):
    out = {"error": None, "problems": [], "counters": {}}
    lines = as_text(text).splitlines()
    seen_header = False
    for number, line in enumerate(lines, 1):
        stripped = line.strip()
        if not stripped:
            continue
        if stripped == HEADER:
            seen_header = True
            continue
        name, sep, value = stripped.rpartition(":")
        value = value.strip()
        if not sep or not name.strip() or not is_uint(value):
            add_problem(out, "line %d is not 'name: value': %s" % (number, quote(stripped)))
            continue
        out["counters"][name.strip()] = int(value)
    if not seen_header:
        out["error"] = "no %r header (not an ethtool -S output)" % HEADER
    elif not out["counters"]:
        out["error"] = "ethtool -S listed no counter"
    return out
