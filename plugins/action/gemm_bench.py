# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The action of the module gemm_bench: ansible-core's normal action, with an async start (the roles start it as a job) in
one pipelined call where the connection allows it (plugin_utils/one_call_start.py). Without ``async:`` it is the
normal action, unchanged."""

from __future__ import annotations

from ansible.plugins.action.normal import ActionModule as NormalAction

from ansible_collections.aifabric.acceptance.plugins.plugin_utils.one_call_start import OneCallStart


class ActionModule(OneCallStart, NormalAction):
    """ansible.builtin's normal action; an async start is one call to the host."""
