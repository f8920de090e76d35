# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
name: group_screen_rounds
short_description: The most rounds the collective group-testing screen takes over a number of hosts
version_added: 1.0.0
author: aifabric.acceptance contributors (@aifabric)
description:
  - The bound on the rounds of the group-testing screen (C(docs/group-screen.md)) over O(_input) hosts - one screen
    round, the binary splitting of the largest group (the base-2 logarithm of its size, rounded up), one
    confirmation and five rounds for the rescreens that follow confirmed bad nodes - so that a playbook can loop
    over the rounds a bounded number of times (the C(screen) entry point of the role aifabric.acceptance.nccl).
  - In simulation (C(bench/group_screen_sim.py)) up to 1000 hosts with up to 5 bad ones need at most this many
    rounds; hosts still unresolved at the bound are reported as such (C(warn)), never guessed.
options:
  _input:
    description: The number of hosts.
    type: int
    required: true
  group_size:
    description: Hosts per screen group; V(0) means about the square root of the number of hosts.
    type: int
    default: 0
  evidence:
    description: The runs a host verdict rests on (the filter aifabric.acceptance.group_screen's O(evidence)); each run
      beyond one adds 4 rounds (6 with topology groups) for the rechecks and the repeated confirmations.
    type: int
    default: 2
    version_added: 1.2.0
  groups:
    description: The number of topology groups (leaves, racks); with 2 or more, the rounds of the span tests across
      them (2 + the base-2 logarithm of the square root of their number, rounded up) are added.
    type: int
    default: 0
"""

EXAMPLES = r"""
- name: At most this many rounds
  ansible.builtin.debug:
    msg: "{{ ansible_play_hosts | length | aifabric.acceptance.group_screen_rounds(group_size=8) }}"
"""

RETURN = r"""
_value:
  description: The number of rounds.
  type: int
"""

from ansible_collections.aifabric.acceptance.plugins.filter import group_screen as screen_filter
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import group_screen as planner


def group_screen_rounds(count, group_size=0, groups=0, evidence=planner.EVIDENCE):
    """The bound on the screen's rounds; see DOCUMENTATION."""
    where = "aifabric.acceptance.group_screen_rounds"
    count = screen_filter.count(count, "the number of hosts", 0, where)
    group_size = screen_filter.count(group_size or 0, "group_size", 0, where)
    groups = screen_filter.count(groups or 0, "groups", 0, where)
    evidence = screen_filter.count(evidence, "evidence", 1, where)
    return planner.max_rounds(count, group_size or None, groups=groups, evidence=evidence)


class FilterModule(object):
    """aifabric.acceptance.group_screen_rounds"""

    def filters(self):
        return {"group_screen_rounds": group_screen_rounds}
