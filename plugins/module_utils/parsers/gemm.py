# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser for the GPU worker's GEMM output (module_utils/torch_worker.py's ``gemm`` command): its marked
``AIFABRIC_GEMM {json}`` result lines.

Pure, no I/O, Python 3.8. ``parse_gemm(text)`` raises ParseError on an unreadable marked line and when no marked
line is present (the adapter, tools/gemm_bench.py, turns that into an ``error`` record).
"""

from __future__ import annotations

import json

from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import ParseError
from ansible_collections.aifabric.acceptance.plugins.module_utils.torch_worker import GEMM_MARK


def parse_gemm(text):
    """The ``AIFABRIC_GEMM {json}`` lines of the worker's gemm command -> list of dicts.

    Raises ParseError (quoting the line) on a marked line that is not a JSON object,
    and when no marked line is present at all.
    """
    out = []
    for line in (text or "").splitlines():
        if not line.startswith(GEMM_MARK):
            continue
        body = line[len(GEMM_MARK):]
        try:
            item = json.loads(body)
        except ValueError:
            raise ParseError("gemm worker: unreadable result line %r" % line[:200])
        if not isinstance(item, dict):
            raise ParseError("gemm worker: result line is not an object %r" % line[:200])
        out.append(item)
    if not out:
        first = next((ln for ln in (text or "").splitlines() if ln.strip()), "")
        raise ParseError("gemm worker: no result line in the output (first line %r)" % first[:200])
    return out
