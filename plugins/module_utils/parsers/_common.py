# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Small helpers every parser shares (private). Pure, no I/O, Python 3.8."""

from __future__ import annotations


def quote(text, limit=120):
    """A short, unambiguous quotation of an offending line for ParseError messages."""
    text = text if isinstance(text, str) else repr(text)
    return repr(text[:limit] + ("..." if len(text) > limit else ""))


def is_uint(text):
    """True for a non-empty run of ASCII digits.

    Not ``str.isdigit()``: that is also true for superscripts such as '¹', which ``int()`` rejects.
    """
    return bool(text) and text.isascii() and text.isdigit()


def as_text(text):
    """Tool output as text: bytes decoded (bad bytes replaced), anything else not a string is empty."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    return text if isinstance(text, str) else ""


def numbered_lines(text):
    """[(line number, line)] of the non-blank lines, carriage returns dropped."""
    return [(i + 1, line.rstrip("\r")) for i, line in enumerate(as_text(text).splitlines()) if line.strip()]


def add_problem(out, message, limit=10):
    """Append ``message`` to ``out["problems"]`` while it holds fewer than ``limit``."""
    if len(out["problems"]) < limit:
        out["problems"].append(message)
