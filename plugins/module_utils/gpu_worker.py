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

from ansible_collections.aifabric.acceptance.plugins.module_utils import statedir, torch_worker
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import ParseError

WORKER_NAME = "aifabric_torch_worker.py"
BURNIN_NAME = "aifabric_burnin_worker.py"     # burnin_worker.py: the soak and copy-bandwidth worker


def source(module=None):
    """The worker's source text (``module``: another worker program, e.g. burnin_worker)."""
    return inspect.getsource(module or torch_worker)


def stage(directory, module=None, name=WORKER_NAME):
    """Write the worker into ``directory``; returns (path, changed).

    ``directory`` passes statedir.trusted_dir first (created 0700; an existing one must be ours, not writable by
    group or others, with no untrusted link on the way): the worker runs with it first on ``sys.path``, as root on
    many nodes. The file is written atomically, never through a planted link.
    """
    text = source(module)
    directory = statedir.trusted_dir(directory, private=True, what="worker_dir")
    path = os.path.join(directory, name)
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
    except OSError:
        fd = None
    if fd is not None:
        with os.fdopen(fd, "rb") as handle:
            if hashlib.sha256(handle.read()).hexdigest() == digest:
                return path, False
    statedir.write_file(directory, name, text, mode=0o644)
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
