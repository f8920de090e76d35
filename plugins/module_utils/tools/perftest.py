# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""perftest's adapter: ``records(text, ctx)``, ``from_output(path, params, host)`` (see tools/__init__.py).

One side (``ctx.side``: client or server) of one device (``ctx.target``, rail ``ctx.index``) of one test
(``params["test"]``); ``ctx.facts`` are the planner's facts (port rate, GID choice, governor); a client is judged
against ``params["peer_rate_gbit_s"][ctx.index]`` (the server's port rate of that rail). Pods import this module
(k8s_plan.CODE_MODULES): Python 3.8+, no Ansible imports.
"""

from __future__ import annotations

from ansible_collections.aifabric.acceptance.plugins.module_utils import imports, perftest_pairs
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import ParseError
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import perftest as parser
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import Context

DEFAULT_TEST = "ib_write_bw"
DEFAULT_LINE_RATE_PCT = 90   # the module option's default, for callers that do not pass it


def rules_params(params, index, test):
    """The params a client of rail ``index`` is judged with: the server's port rate of that rail."""
    rules = dict(params)
    rules.setdefault("expect_line_rate_pct", DEFAULT_LINE_RATE_PCT)
    rates = params.get("peer_rate_gbit_s") or []
    rules["peer_rate_gbit_s"] = rates[index] if index < len(rates) else (rates[0] if len(rates) == 1 else None)
    rules["test"] = test
    return rules


def records(text, ctx):
    """The record of one side of one device from perftest's text."""
    params = ctx.params
    test = params.get("test") or DEFAULT_TEST
    built = {
        "test": test, "side": ctx.side, "host": ctx.host,
        "peer": ctx.peer or params.get("peer_name") or params.get("peer"), "device": ctx.target,
        "params": rules_params(params, ctx.index, test), "argv": ctx.argv,
        "tool_version": ctx.tool_version, "started": ctx.started, "attempts": ctx.attempts,
        "duration_s": ctx.duration_s, "facts": ctx.facts or {}, "timed_out": ctx.timed_out,
        "timeout_s": params.get("timeout_s"),
    }
    return perftest_pairs.build_records(text, ctx.rc, built)


def from_output(path, params, host):
    """Import mode: the record of a saved output (test and side from the output when the options leave them)."""
    text = imports.read_output(path)
    test = params.get("test")
    side = params.get("side")
    try:
        parsed = parser.parse(text)
        test = parsed.get("tool") or test
        side = side or parsed.get("side")
    except ParseError:
        pass
    devices = params.get("devices") or [None]
    return records(text, Context(params=dict(params, test=test or DEFAULT_TEST, timeout_s=None),
                                 side=side or "client", host=host, target=devices[0], facts={"imported_from": path}))
