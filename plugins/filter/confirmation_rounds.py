# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
name: confirmation_rounds
short_description: Second-pass rounds that tell a bad node from a bad link
version_added: 1.0.0
author: aifabric.acceptance contributors (@aifabric)
description:
  - Runs the fleet report's fault attribution (the same code as the C(fleet_report) callback) on the pairwise
    result records of a first pass (typically O(aifabric.acceptance.pairings#filter:mode=random) or V(ring)),
    and returns rounds of C([server, client]) pairs that settle what it could not - every suspect host
    against O(per_suspect) known-good hosts, and every pair whose link finding needs confirmation measured
    again.
  - The suspect nodes are also paired with each other, in a ring ordered by switch where C(net.topology) records
    among the input say it (else by name) - hosts behind one slow switch uplink are fine with each other (one group
    finding), bad nodes are not; random rounds alone almost never pair two hosts of one leaf.
  - Returns an empty list when nothing is suspect.
options:
  _input:
    description: Result records of the first pass (every host's C(results) lists, flattened).
    type: list
    elements: dict
    required: true
  hosts:
    description: The hosts that may take part (the known-good ones are drawn from here, in order).
    type: list
    elements: str
    required: true
  per_suspect:
    description: How many known-good hosts each suspect is paired with.
    type: int
    default: 2
  check:
    description: Only consider findings of this check (default every pairwise C(rdma.*) check).
    type: str
"""

EXAMPLES = r"""
- name: Plan the confirmation pass
  ansible.builtin.set_fact:
    rdma_confirm_rounds: >-
      {{ first_pass_records | aifabric.acceptance.confirmation_rounds(hosts=groups['rdma_nodes'], per_suspect=2) }}
"""

RETURN = r"""
_value:
  description: Rounds, each a list of C([server, client]) pairs with no host twice in a round.
  type: list
  elements: list
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.aifabric.acceptance.plugins.plugin_utils import attribution


def confirmation_rounds(records, hosts, per_suspect=2, check=None):
    """Confirmation rounds for the suspects of the attribution analysis; see DOCUMENTATION."""
    if not isinstance(records, (list, tuple)):
        raise AnsibleFilterError("aifabric.acceptance.confirmation_rounds: input must be a list of records")
    if not isinstance(hosts, (list, tuple)):
        raise AnsibleFilterError("aifabric.acceptance.confirmation_rounds: hosts must be a list")
    try:
        per_suspect = int(per_suspect)
    except (TypeError, ValueError):
        raise AnsibleFilterError("aifabric.acceptance.confirmation_rounds: per_suspect must be an integer")
    records = [dict(r) for r in records if isinstance(r, dict)]
    new_records, findings = attribution.analyze(records, {})
    return attribution.plan_confirmation(findings, hosts, per_suspect=per_suspect, check=check,
                                         records=records + new_records)


class FilterModule(object):
    """aifabric.acceptance.confirmation_rounds"""

    def filters(self):
        return {"confirmation_rounds": confirmation_rounds}
