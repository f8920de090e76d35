# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
name: group_screen
short_description: The next round of the collective group-testing screen (screen, bisect, confirm)
version_added: 1.0.0
author: aifabric.acceptance contributors (@aifabric)
description:
  - Plans the next round of the group-testing screen (C(docs/group-screen.md)) from the screen's result records so
    far, as the C(screen) entry point of the role aifabric.acceptance.nccl does round after round.
  - A screen test's record is the C(nccl.<collective>) record of one multi-node run; it names its round, purpose
    and hosts in C(params.env.AIFABRIC_SCREEN) (the marker the role exports to every rank of the test, see
    RV(_value[].marker)). Its outcome is V(pass) for a C(pass) or C(warn) record, a failure for C(fail) or
    C(error); a C(skip) record is no outcome. Other records are ignored.
  - Round 0 splits the hosts into groups of about O(group_size) (inside the topology groups of O(topology));
    the next rounds test the first half of each failing group (bisect), a single suspect with a known-good host
    (confirm), and screen again what a confirmed bad host left unknown (rescreen). An empty list means every host
    is known good or bad (or can no longer be told apart).
  - No verdict rests on one run (O(evidence), O(margin_pct)) - a host is known good after passing two runs and bad
    after failing two confirmations with different known-good partners, and a run whose figure is within the margin
    of its bound is run again.
  - With O(topology), a suspect is confirmed with a known-good host of its own topology group (a failure with hosts
    of other groups only does not make it bad - a slow uplink would look the same), and V(span) tests of one
    known-good host per group screen the paths between the groups; each test's marker then names each host's group
    (C(groups=), URL-quoted), from which the report's screen analysis names a group slow to the rest (a C(group)
    finding, its hosts C(warn)).
  - Thin wrapper of C(plugins/plugin_utils/group_screen.py) (the same code drives the simulation
    C(bench/group_screen_sim.py)).
options:
  _input:
    description: The hosts of the screen (inventory names, in the order groups are cut from).
    type: list
    elements: str
    required: true
  records:
    description: Result records so far (any records; only the screen's own count).
    type: list
    elements: dict
    default: []
  group_size:
    description: Hosts per screen group. V(0) means about the square root of the number of hosts (at least 2).
    type: int
    default: 0
  topology:
    description: "Host to its leaf switch, rack or clique (C({node1: leaf1, node2: leaf1, ...})): screen groups stay
      inside one, and a suspect is confirmed inside its own. Hosts it does not name share one screen group of their
      own and are judged against any known-good host."
    type: dict
    default: {}
  check:
    description: Only the records of this check count (for example V(nccl.all_reduce)); V('') means every screen record.
    type: str
    default: ""
  round:
    description: The index of the round being planned (it goes into each test's marker).
    type: int
    default: 0
  evidence:
    description:
      - The runs a host verdict rests on. A host is known good once it passed this many runs (a host that passed
        fewer is tested again, V(recheck), in another group), and bad once it failed this many confirmations, each
        with a different known-good partner (of its own topology group where that is known); a host that passes a
        run after a failing confirmation is left V(warn), inconclusive. V(1) is the screen of one run per verdict.
      - Named in every test's marker (C(evidence=)), so that the report judges the screen by the same rule.
    type: int
    default: 2
    version_added: 1.2.0
  margin_pct:
    description:
      - The inconclusive band around each bound the screen test's record was judged by (its C(expect) C(min) or
        C(max)), in % of the bound. A run whose figure is inside it - a pass just above a floor, a fail just below
        it - is believed neither way, and run again (V(retest)); a set of hosts inside the band O(evidence) times
        is split like a failing group, and a suspect whose confirmation stays inside it is left V(warn). V(0) believes
        every run's own status (C(docs/group-screen.md)).
      - Named in every test's marker (C(margin_pct=)).
    type: float
    default: 5.0
    version_added: 1.2.0
"""

EXAMPLES = r"""
- name: Plan the next round of the screen
  ansible.builtin.set_fact:
    screen_tests: >-
      {{ ansible_play_hosts | aifabric.acceptance.group_screen(records=screen_records, group_size=8,
         topology=leaf_of_host, check='nccl.all_reduce', round=screen_round) }}
  run_once: true
"""

RETURN = r"""
_value:
  description: The next round's tests, on disjoint hosts; empty when the screen is over.
  type: list
  elements: dict
  contains:
    hosts:
      description: The hosts of the test; the first one launches it.
      type: list
      elements: str
    purpose:
      description: V(screen), V(bisect), V(confirm), V(rescreen), V(span) (across topology groups), V(recheck) (hosts
        that passed fewer than O(evidence) runs, in other groups) or V(retest) (a run inside the inconclusive band,
        again).
      type: str
    round:
      description: The round index given.
      type: int
    index:
      description: The test's place in the round (0, 1, ...), for a run id of its own.
      type: int
    marker:
      description: The value of C(AIFABRIC_SCREEN) for the test's environment (its round, purpose and hosts), which its
        record then carries in C(params.env).
      type: str
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.aifabric.acceptance.plugins.plugin_utils import group_screen as planner


FILTER = "aifabric.acceptance.group_screen"
MAX_COUNT = 1000000          # hosts, group size, round index, topology groups: far above any fleet
MAX_NAME = 255               # a host or topology group name (a DNS name is at most 253 characters)


def count(value, name, minimum, where=FILTER):
    """``value`` as an int between ``minimum`` and MAX_COUNT: an int, a whole float or decimal text (templating
    gives text), never a bool, NaN or infinity; else AnsibleFilterError naming ``name``."""
    number = None
    if isinstance(value, float) and value.is_integer():
        number = int(value)
    elif isinstance(value, int) and not isinstance(value, bool):
        number = value
    elif isinstance(value, str) and value.strip().lstrip("-").isdigit() and len(value) < 20:
        number = int(value)
    if number is None:
        raise AnsibleFilterError("%s: %s must be an integer, got %r" % (where, name, value))
    if number < minimum:
        raise AnsibleFilterError("%s: %s must be >= %d, got %d" % (where, name, minimum, number))
    if number > MAX_COUNT:
        raise AnsibleFilterError("%s: %s must be <= %d, got %d" % (where, name, MAX_COUNT, number))
    return number


def is_name(value):
    """A host or group name a screen marker can carry: 1-255 printable characters, no white space and no '='
    (the marker's words are ``key=value``, separated by spaces)."""
    return (isinstance(value, str) and 0 < len(value) <= MAX_NAME and value.isprintable()
            and not any(c.isspace() or c == "=" for c in value))


def host_names(hosts, what="input", where=FILTER):
    """``hosts`` as a list of distinct host names (:func:`is_name`), else AnsibleFilterError."""
    if not isinstance(hosts, (list, tuple)) or len(hosts) > MAX_COUNT or not all(is_name(h) for h in hosts):
        bad = hosts if not isinstance(hosts, (list, tuple)) else [h for h in hosts if not is_name(h)][:3]
        raise AnsibleFilterError("%s: %s must be a list of host names (1-%d printable characters, no spaces, no '='), "
                                 "got %.300r" % (where, what, MAX_NAME, bad))
    if len(set(hosts)) != len(hosts):
        raise AnsibleFilterError("%s: a host is listed twice in %.300r" % (where, hosts))
    return [str(h) for h in hosts]


def _group_name(group):
    """A topology group: None (no group), or text or a number of at most MAX_NAME printable characters."""
    if group is None:
        return True
    if isinstance(group, bool) or not isinstance(group, (str, int)):
        return False
    return len(str(group)) <= MAX_NAME and str(group).isprintable()


def topology_map(topology):
    """The topology mapping: host names to a group name (text or a number) or None (no group)."""
    if topology is None:
        return {}
    if not isinstance(topology, dict):
        raise AnsibleFilterError("%s: topology must map a host to its leaf, rack or clique" % FILTER)
    for host, group in topology.items():
        if not is_name(host) or not _group_name(group):
            raise AnsibleFilterError("%s: topology must map host names to a leaf, rack or clique name (text or a "
                                     "number, 1-%d characters), got %.100r: %.100r" % (FILTER, MAX_NAME, host, group))
    return dict(topology)


def _rules(evidence, margin_pct):
    evidence = count(evidence, "evidence", 1)
    try:
        margin = float(margin_pct)
    except (TypeError, ValueError):
        raise AnsibleFilterError("%s: margin_pct must be a number, got %.100r" % (FILTER, margin_pct))
    if not 0 <= margin < 100:
        raise AnsibleFilterError("%s: margin_pct must be 0 to 100 (%% of the bound), got %.100r" % (FILTER, margin_pct))
    return {"evidence": evidence, "margin_pct": margin}


def screen_outcomes(hosts, records, check):
    """[(hosts, passed)] of the screen records of ``check`` ('' for any) whose hosts are all among ``hosts``; an
    AnsibleFilterError when ``records`` is not a list (None: none) or ``check`` not text."""
    if records is None:
        records = []
    if not isinstance(records, (list, tuple)):
        raise AnsibleFilterError("%s: records must be a list of result records" % FILTER)
    if not isinstance(check, str):
        raise AnsibleFilterError("%s: check must be a check name, got %.100r" % (FILTER, check))
    known = set(hosts)
    measured = planner.screen_outcomes([r for r in records if isinstance(r, dict)], check=check or None)
    return [(tested, ok) for tested, ok in measured if set(tested) <= known]


def group_screen(hosts, records=None, group_size=0, topology=None, check="", round=0,  # pylint: disable=redefined-builtin
                 evidence=planner.EVIDENCE, margin_pct=planner.MARGIN_PCT):
    """The next round of the screen; see DOCUMENTATION."""
    hosts = host_names(hosts)
    outcomes = screen_outcomes(hosts, records, check)
    topology = topology_map(topology)
    size = count(group_size, "group_size", 0)
    round_index = count(round, "round", 0)
    rules = _rules(evidence, margin_pct)
    if size == 1:
        raise AnsibleFilterError("%s: group_size must be 0 (about the square root of the number of hosts) or 2 or "
                                 "more: a collective needs two nodes" % FILTER)
    tests = planner.plan(hosts, outcomes, group_size=size or None, topology=dict(topology) or None,
                         evidence=rules["evidence"])
    out = []
    for test in tests:
        if len(test["hosts"]) < 2:     # a lone host without a known-good one to test it with: not testable
            continue
        groups = [topology.get(h) for h in test["hosts"]] if topology else None
        out.append({"hosts": list(test["hosts"]), "purpose": test["purpose"], "round": round_index, "index": len(out),
                    "marker": planner.marker(round_index, test["purpose"], test["hosts"], groups, rules)})
    return out


class FilterModule(object):
    """aifabric.acceptance.group_screen"""

    def filters(self):
        return {"group_screen": group_screen}
