# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
name: sweep_schedule
short_description: Split the rounds of a pairwise sweep into each host's own schedule
version_added: 1.0.0
author: aifabric.acceptance contributors (@aifabric)
description:
  - Takes the rounds of the P(aifabric.acceptance.pairings#filter) filter (the single source of the schedule) and
    the tests to run, and gives every host its own part, in order - one C([step, test, round, role, peer]) per step
    in which the host takes part (C(role) V(server) or V(client)). Steps are the rounds of the first test, then
    those of the next test, and so on; C(step) counts them from O(first_step).
  - Used by the role aifabric.acceptance.rdma with M(aifabric.acceptance.perftest_sweep) (one runner per host). Linear in the
    number of pairs.
options:
  _input:
    description: The rounds, each a list of C([server, client]) pairs.
    type: list
    elements: list
    required: true
  tests:
    description: The perftest programs, run one after the other over all rounds.
    type: list
    elements: str
    default: [ib_write_bw]
  first_step:
    description: Number of the first step (a second sweep of the same run continues the numbering).
    type: int
    default: 0
  perftest:
    description:
      - The options the runners of the sweep get (M(aifabric.acceptance.perftest_sweep)'s names, for example the
        stage role's C(rdma_perftest)); only its limits are read, for C(_step_s). What it does not set has the
        module's own default (read from the module, never repeated here).
    type: dict
    default: {}
"""

EXAMPLES = r"""
- name: Every host's schedule
  ansible.builtin.set_fact:
    schedules: "{{ [[['a', 'b'], ['c', 'd']], [['a', 'c'], ['b', 'd']]] | aifabric.acceptance.sweep_schedule(tests=['ib_write_bw']) }}"
  # schedules.a == [[0, 'ib_write_bw', 0, 'server', 'b'], [1, 'ib_write_bw', 1, 'server', 'c']]
"""

RETURN = r"""
_value:
  description:
    - Host name to its steps, plus C(_steps) - C([test, round, pairs]) of every step (for progress lines) - and
      C(_step_s) - the longest one step may take on a host with the options of O(perftest) - C(timeout_s) +
      C(connect_timeout_s) + C(collect_timeout_s) + 30 s (its kills and records); the task time limits of the sweep
      are counted in it.
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import perftest_sweep as adapter

STEP_MARGIN_S = 30      # a step's kills (SIGTERM, 3 s, SIGKILL) and its records, beyond its processes' limits
LIMITS = ("timeout_s", "connect_timeout_s", "collect_timeout_s")


def step_s(options):
    """The longest one step of the sweep may take on a host with the runner options ``options`` (the defaults of
    module perftest_sweep for those it does not set)."""
    if options is None:
        options = {}
    if not isinstance(options, dict):
        raise AnsibleFilterError("sweep_schedule: perftest must be a mapping of perftest_sweep options, got %r"
                                 % (options,))
    # the module's argument spec: the adapter's OPTIONS and the sweep's own options, defaults included
    from ansible_collections.aifabric.acceptance.plugins.modules.perftest_sweep import argument_spec
    spec = argument_spec()
    total = STEP_MARGIN_S
    for name in LIMITS:
        value = options.get(name)
        value = spec[name]["default"] if value is None else value
        try:
            total += int(value)
        except (TypeError, ValueError):
            raise AnsibleFilterError("sweep_schedule: perftest.%s must be a number of seconds, got %r" % (name, value))
    return total


def sweep_schedule(rounds, tests=None, first_step=0, perftest=None):
    tests = list(tests or [adapter.DEFAULT_TEST])
    if not isinstance(rounds, list):
        raise AnsibleFilterError("sweep_schedule: the rounds must be a list of rounds, got %r" % (rounds,))
    out = {}
    steps = []
    step = first_step
    for test in tests:
        for index, pairs in enumerate(rounds):
            seen = set()
            for pair in pairs:
                if not isinstance(pair, (list, tuple)) or len(pair) != 2:
                    raise AnsibleFilterError("sweep_schedule: round %d has a pair that is not [server, client]: %r"
                                             % (index + 1, pair))
                server, client = pair
                if server in seen or client in seen or server == client:
                    raise AnsibleFilterError("sweep_schedule: round %d is not a matching (%s and %s)"
                                             % (index + 1, server, client))
                seen.update((server, client))
                out.setdefault(server, []).append([step, test, index, "server", client])
                out.setdefault(client, []).append([step, test, index, "client", server])
            steps.append([test, index, len(pairs)])
            step += 1
    out["_steps"] = steps
    out["_step_s"] = step_s(perftest)
    return out


class FilterModule(object):
    def filters(self):
        return {"sweep_schedule": sweep_schedule}
