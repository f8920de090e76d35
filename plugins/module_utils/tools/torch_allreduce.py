# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The torch all-reduce probe's adapter: ``records(text, ctx)`` (see tools/__init__.py).

``text`` is the probe's text output (skip reasons, errors); ``ctx.document`` its JSON result (None when it wrote
none); ``ctx.gpu_name``/``ctx.gpus`` choose the profile; ``ctx.nodes``, ``ctx.launcher``, ``ctx.ranks_per_node``,
``ctx.hosts`` describe the launch. Runs on the targets: Python 3.8+, no Ansible imports.
"""

from __future__ import annotations

from ansible_collections.aifabric.acceptance.plugins.module_utils import gpu_run


def records(text, ctx):
    """The nccl.torch_all_reduce record of one probe run."""
    return gpu_run.records_from_probe_output(
        ctx.document, text, ctx.rc, ctx.params, gpu_name=ctx.gpu_name, gpus=ctx.gpus, nodes=ctx.nodes,
        argv=ctx.argv, env=ctx.env, started=ctx.started, duration_s=ctx.duration_s, python=ctx.python,
        launcher=ctx.launcher, ranks_per_node=ctx.ranks_per_node, hosts=ctx.hosts)
