# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Launcher line prefixes every collective parser removes (private). Pure, no I/O, Python 3.8.

- Open MPI ``--tag-output``: ``[1,0]<stdout>:`` (or ``<stderr>``), with anything a cluster launcher prints before
  the tag (for example ``(head, rank=0, pid=3808) [1,0]<stdout>:``);
- Slurm ``srun -l``: the task number and ``: `` before every line (`` 0: ``, ``12: ``).
"""

from __future__ import annotations

import re

OMPI_PREFIX_RE = re.compile(r"^.{0,200}?\[\d+,\d+\]<std(?:out|err)>:\s?")
SRUN_PREFIX_RE = re.compile(r"^\s{0,8}\d{1,6}: ")


def strip(line):
    """(line without its launcher prefix, True when one was removed)."""
    out = OMPI_PREFIX_RE.sub("", line, count=1)
    if out != line:
        return out, True
    out = SRUN_PREFIX_RE.sub("", line, count=1)
    return out, out != line
