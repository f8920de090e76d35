# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Import mode: read one saved tool output, safely (private).

The one reader every module with ``from_output`` uses, and the one a second
substrate (Kubernetes pod logs saved to a file) uses:

- ``bounded(records, max_rows=MAX_IMPORT_SERIES_ROWS)`` - the records of an import with every ``series`` cut to
  ``max_rows`` rows, each cut record saying so in its facts (what import mode returns is bounded, whatever the file).
- ``read_output(path, limit=MAX_IMPORT_BYTES) -> str`` - the text of a regular
  file of at most ``limit`` bytes (decoded UTF-8, bad bytes replaced); raises
  ``ImportRefused`` (an AcceptanceError) saying why otherwise: missing,
  unreadable, a directory, a device (``/dev/zero``), a FIFO or socket, or larger
  than the limit. The file is opened non-blocking (a FIFO cannot hang the
  module), checked with ``fstat`` on the open descriptor (no check-then-open
  race) and read to at most ``limit + 1`` bytes.

Runs on the targets: Python 3.8+, no Ansible imports.
"""

from __future__ import annotations

import errno
import os
import stat

from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import AcceptanceError

MAX_IMPORT_BYTES = 64 << 20   # 64 MiB: the largest all-sizes nccl-tests run with NCCL_DEBUG=INFO is ~10 MiB
# The most per-size rows a record of an import keeps: an all-sizes run (-b 8 -e 16G -f 2) has 32, one with -f 1.1
# about 250; a file of 100,000 rows (a 13 MB import gave a 29 MB task result, issue 34) keeps the first ones, and its
# record says how many it had (facts.series_rows_total, facts.series_cut)
MAX_IMPORT_SERIES_ROWS = 4096


class ImportRefused(AcceptanceError):
    """from_output names something that is not a readable regular file of a sane size."""


def _kind(mode):
    for test, name in ((stat.S_ISDIR, "a directory"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                       (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return name
    return "not a regular file"


def read_output(path, limit=MAX_IMPORT_BYTES):
    """Text of the regular file ``path`` (at most ``limit`` bytes); ImportRefused says why not."""
    if not path or not isinstance(path, str):
        raise ImportRefused("from_output must name a file, got %r" % (path,))
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.EISDIR:
            raise ImportRefused("cannot read from_output %s: it is a directory, not a saved output file" % path)
        raise ImportRefused("cannot read from_output %s: %s" % (path, exc.strerror or exc))
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise ImportRefused("cannot read from_output %s: it is %s; import mode reads regular files only"
                                % (path, _kind(info.st_mode)))
        if info.st_size > limit:
            raise ImportRefused("cannot read from_output %s: %d bytes is more than the import limit of %d bytes "
                                "(%d MiB); import the tool's output, not a dump"
                                % (path, info.st_size, limit, limit >> 20))
        chunks, total = [], 0
        while total <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
        if total > limit:   # grew while we read it
            raise ImportRefused("cannot read from_output %s: more than the import limit of %d bytes" % (path, limit))
    except OSError as exc:
        raise ImportRefused("cannot read from_output %s: %s" % (path, exc.strerror or exc))
    finally:
        os.close(fd)
    return b"".join(chunks).decode("utf-8", "replace")


def bounded(records, max_rows=MAX_IMPORT_SERIES_ROWS):
    """``records`` with each ``series`` cut to its first ``max_rows`` rows; a cut record's facts say how many rows
    it had (``series_rows_total``) and why (``series_cut``). The headline metrics were read from every row."""
    out = []
    for rec in records:
        series = rec.get("series") if isinstance(rec, dict) else None
        if isinstance(series, list) and len(series) > max_rows:
            facts = dict(rec.get("facts") or {}, series_rows_total=len(series), series_cut=(
                "import mode returns at most %d series rows: kept the first %d of %d (the metrics were read from "
                "every row)" % (max_rows, max_rows, len(series))))
            rec = dict(rec, series=series[:max_rows], facts=facts)
        out.append(rec)
    return out
