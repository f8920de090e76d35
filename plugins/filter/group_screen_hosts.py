# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
name: group_screen_hosts
short_description: The hosts the next rounds of the collective group-testing screen may still use
version_added: 1.2.0
author: aifabric.acceptance contributors (@aifabric)
description:
  - From the screen's records so far (as the filter aifabric.acceptance.group_screen takes them), the hosts that a
    later round of the group-testing screen (C(docs/group-screen.md)) may still test, launch a test from, or clean
    up after - so that a playbook's round loop goes on with them only, and the hosts the screen is done with walk no
    further round (the C(screen) entry point of the role aifabric.acceptance.nccl).
  - Every host not known good, and of each topology group (of O(topology); the hosts it does not name form one) the
    first known-good hosts, in order, that a later round can take as the known-good partners of a single suspect
    or for a span test across the groups - as many as the hosts not known good, plus O(evidence), plus one. A
    host known good stays known good while it takes no test, so the hosts left out are never planned again.
  - Every host before the first round (no screen record).
options:
  _input:
    description: The hosts of the screen (inventory names), as given to aifabric.acceptance.group_screen.
    type: list
    elements: str
    required: true
  records:
    description: Result records so far (any records; only the screen's own count).
    type: list
    elements: dict
    default: []
  topology:
    description: Host to its leaf switch, rack or clique, as given to aifabric.acceptance.group_screen.
    type: dict
    default: {}
  check:
    description: Only the records of this check count (for example V(nccl.all_reduce)); V('') means every screen record.
    type: str
    default: ""
  evidence:
    description: The runs a host verdict rests on, as given to aifabric.acceptance.group_screen.
    type: int
    default: 2
"""

EXAMPLES = r"""
- name: Plan the next round of the screen, and the hosts it and the rounds after it may use
  ansible.builtin.set_fact:
    screen_tests: >-
      {{ ansible_play_hosts | aifabric.acceptance.group_screen(records=screen_records, check='nccl.all_reduce',
         round=screen_round) }}
    screen_hosts: "{{ ansible_play_hosts | aifabric.acceptance.group_screen_hosts(records=screen_records, check='nccl.all_reduce') }}"
  run_once: true
"""

RETURN = r"""
_value:
  description: The hosts the next rounds may use, in the order of O(_input).
  type: list
  elements: str
"""

from ansible_collections.aifabric.acceptance.plugins.filter import group_screen as screen_filter
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import group_screen as planner


def group_screen_hosts(hosts, records=None, topology=None, check="", evidence=planner.EVIDENCE):
    """The hosts the screen's next rounds may use; see DOCUMENTATION."""
    where = "aifabric.acceptance.group_screen_hosts"
    hosts = screen_filter.host_names(hosts, where=where)
    outcomes = screen_filter.screen_outcomes(hosts, records, check)
    topology = screen_filter.topology_map(topology)
    evidence = screen_filter.count(evidence, "evidence", 1, where)
    return planner.kept(hosts, outcomes, dict(topology) or None, evidence)


class FilterModule(object):
    """aifabric.acceptance.group_screen_hosts"""

    def filters(self):
        return {"group_screen_hosts": group_screen_hosts}
