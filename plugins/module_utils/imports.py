# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Import mode: read one saved tool output, safely (private).

The one reader every module with ``from_output`` uses, and the one a second
substrate (Kubernetes pod logs saved to a file) uses:

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
