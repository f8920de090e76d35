# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one hypothesis strategy the parser fuzz tests share: a real capture, mutated.

1 to 4 mutations of a real tool output: truncate it, drop, duplicate or swap lines, flip a
character, cut a line short, insert a line of arbitrary text, or put a non-ASCII digit in place of an
ASCII one in every line with a number (``"\u00b2".isdigit()`` is True and int() rejects it; int() reads
``"\u0663"``, which no tool prints). Line endings are kept.
"""

from __future__ import annotations

from hypothesis import strategies as st

MUTATIONS = ("truncate", "drop", "duplicate", "flip", "garbage", "swap", "cut_line", "digit")
# superscript two and one, Arabic-Indic three, fullwidth one, Devanagari five
DIGITS = "0123456789"
NON_ASCII_DIGITS = ("\u00b2", "\u00b9", "\u0663", "\uff11", "\u096b")


@st.composite
def mutated(draw, text):
    lines = text.splitlines(True)
    for unused_step in range(draw(st.integers(min_value=1, max_value=4))):
        if not lines:
            break
        kind = draw(st.sampled_from(MUTATIONS))
        i = draw(st.integers(min_value=0, max_value=len(lines) - 1))
        line = lines[i]
        if kind == "truncate":
            lines = lines[:i] + [line[:draw(st.integers(min_value=0, max_value=len(line)))]]
        elif kind == "drop":
            del lines[i]
        elif kind == "duplicate":
            lines.insert(i, line)
        elif kind == "flip" and line:
            j = draw(st.integers(min_value=0, max_value=len(line) - 1))
            lines[i] = line[:j] + draw(st.characters(blacklist_categories=("Cs",))) + line[j + 1:]
        elif kind == "garbage":
            lines.insert(i, draw(st.text(max_size=80)) + "\n")
        elif kind == "swap" and len(lines) > 1:
            j = draw(st.integers(min_value=0, max_value=len(lines) - 1))
            lines[i], lines[j] = lines[j], lines[i]
        elif kind == "digit":
            # one digit of every line with a number (most lines of a capture have none: one line drawn would
            # seldom be the number a parser reads)
            for k, each in enumerate(lines):
                at = [j for j, char in enumerate(each) if char in DIGITS]
                if at:
                    j = draw(st.sampled_from(at))
                    lines[k] = each[:j] + draw(st.sampled_from(NON_ASCII_DIGITS)) + each[j + 1:]
        elif kind == "cut_line" and line:
            lines[i] = line[:draw(st.integers(min_value=0, max_value=len(line) - 1))] + "\n"
    return "".join(lines)
