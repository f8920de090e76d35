# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Stage the GPU worker program (module_utils/torch_worker.py) on the target (its output: parsers/gemm.py).

The worker travels inside the module payload like any module_utils file; this
writes its source text (never pickled code) to a directory on the target so the
host's own Python (the one with PyTorch) can run it.
"""

from __future__ import annotations

import hashlib
import inspect
import os

from ansible_collections.aifabric.acceptance.plugins.module_utils import statedir, torch_worker

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
