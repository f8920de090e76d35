# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stage the GPU worker program (module_utils/torch_worker.py) on the target and read its output.

The worker travels inside the module payload like any module_utils file; this
writes its source text (never pickled code) to a directory on the target so the
host's own Python (the one with PyTorch) can run it.
"""

from __future__ import annotations

import hashlib
import inspect
import json
import os

from ansible_collections.aifabric.acceptance.plugins.module_utils import torch_worker
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import ParseError

WORKER_NAME = "aifabric_torch_worker.py"


def source():
    """The worker's source text."""
    return inspect.getsource(torch_worker)


def stage(directory):
    """Write the worker into ``directory`` (created 0700 if absent); returns (path, changed)."""
    text = source()
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o700)
    path = os.path.join(directory, WORKER_NAME)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    if os.path.isfile(path):
        with open(path, "rb") as handle:
            if hashlib.sha256(handle.read()).hexdigest() == digest:
                return path, False
    tmp = path + ".tmp"
    with open(tmp, "w") as handle:
        handle.write(text)
    os.chmod(tmp, 0o644)
    os.replace(tmp, path)
    return path, True


def parse_gemm(text):
    """The ``AIFABRIC_GEMM {json}`` lines of the worker's gemm command -> list of dicts.

    Raises ParseError (quoting the line) on a marked line that is not a JSON object,
    and when no marked line is present at all.
    """
    out = []
    for line in (text or "").splitlines():
        if not line.startswith(torch_worker.GEMM_MARK):
            continue
        body = line[len(torch_worker.GEMM_MARK):]
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
