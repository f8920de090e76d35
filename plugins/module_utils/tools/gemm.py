# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GEMM check's adapter: ``records(text, ctx)`` (see tools/__init__.py).

``text`` is the worker's stdout (its result lines); ``ctx.output`` stdout and stderr together (skip and error
reasons; default ``text``); ``ctx.python`` the interpreter that ran the worker.
Runs on the targets: Python 3.8+, no Ansible imports.
"""

from __future__ import annotations

from ansible_collections.aifabric.acceptance.plugins.module_utils import gpu_run


def records(text, ctx):
    """gpu.gemm_<dtype> records per GPU, or one skip/error record."""
    return gpu_run.records_from_gemm_output(
        text, ctx.rc, ctx.params, output=ctx.output, started=ctx.started, duration_s=ctx.duration_s,
        argv=ctx.argv, python=ctx.python)
