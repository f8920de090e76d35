# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
name: sweep_schedule
short_description: Split the rounds of a pairwise sweep into each host's own schedule
version_added: 1.1.0
author: aifabric.acceptance contributors (@aifabric)
description:
  - Takes the rounds of the P(aifabric.acceptance.pairings#filter) filter (the single source of the schedule) and
    the tests to run, and gives every host its own part, in order - one C([step, test, round, role, peer]) per step
    in which the host takes part (C(role) V(server) or V(client)). Steps are the rounds of the first test, then
    those of the next test, and so on; C(step) counts them from O(first_step).
  - Used by C(playbooks/rdma.yml) with M(aifabric.acceptance.perftest_sweep) (one runner per host). Linear in the
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
"""

EXAMPLES = r"""
- name: Every host's schedule
  ansible.builtin.set_fact:
    schedules: "{{ [[['a', 'b'], ['c', 'd']], [['a', 'c'], ['b', 'd']]] | aifabric.acceptance.sweep_schedule(tests=['ib_write_bw']) }}"
  # schedules.a == [[0, 'ib_write_bw', 0, 'server', 'b'], [1, 'ib_write_bw', 1, 'server', 'c']]
"""

RETURN = r"""
_value:
  description: Host name to its steps, plus C(_steps) - C([test, round, pairs]) of every step (for progress lines).
  type: dict
"""

from ansible.errors import AnsibleFilterError


def sweep_schedule(rounds, tests=None, first_step=0):
    tests = list(tests or ["ib_write_bw"])
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
    return out


class FilterModule(object):
    def filters(self):
        return {"sweep_schedule": sweep_schedule}
