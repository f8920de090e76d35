# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
name: fleet_summary
short_description: Compact fleet summary of result records, for set_stats and AWX artifacts
version_added: 1.0.0
author:
  - aifabric.acceptance contributors (@aifabric)
description:
  - Computes the compact summary of a run (counts per status, hosts total, failed hosts, worst status)
    with the same code as the P(aifabric.acceptance.fleet_report#callback) callback, from the result
    records the playbook collected.
  - Meant for the final C(run_once) M(ansible.builtin.set_stats) task of a playbook (C(per_host=false)), because
    AWX publishes only run-wide C(set_stats) data as artifacts and a callback cannot feed them.
  - Records without a C(host) take it from the mapping key when the input is a mapping of host to records.
  - Every host listed in O(hosts) that has no record counts as an C(error) host (C(env.coverage)), so
    failed and unreachable hosts are never missing from the summary.
  - The fleet analyses (drift, ...) are not run here; the callback's report has them.
positional: _input
options:
  _input:
    description:
      - The records. Either a list (records, or lists of records, flattened one level) whose records all
        have C(host) set, or a mapping of inventory host name to that host's records (a list of records,
        or a registered module result holding them under C(results)).
    type: raw
    required: true
  hosts:
    description: The hosts targeted; a host with no record counts as an C(error) host.
    type: list
    elements: str
    default: []
  report_dir:
    description: Where the report is (copied into the summary as is).
    type: str
  max_hosts:
    description: At most this many host names in RV(_value.failed_hosts) and RV(_value.worst_hosts).
    type: int
    default: 20
"""

EXAMPLES = r"""
- name: Set the compact summary as run-wide stats (AWX artifacts)
  run_once: true
  delegate_to: localhost
  vars:
    __hosts: "{{ ansible_play_hosts_all }}"
    # host -> the records that host registered (hosts that failed early have none: default [])
    __by_host: "{{ dict(__hosts | zip(__hosts | map('extract', hostvars) | map(attribute='aifabric_records', default=[]))) }}"
  ansible.builtin.set_stats:
    data:
      aifabric_summary: "{{ __by_host | aifabric.acceptance.fleet_summary(hosts=__hosts, report_dir=lookup('ansible.builtin.env', 'AIFABRIC_REPORT_DIR')) }}"
    per_host: false
    aggregate: false
"""

RETURN = r"""
_value:
  description: The compact summary.
  type: dict
  contains:
    worst_status:
      description: Worst status of any host (V(error) > V(fail) > V(warn) > V(skip) > V(pass)).
      type: str
      sample: fail
    counts:
      description: Number of records per status (every status present).
      type: dict
      sample: {pass: 40, warn: 1, fail: 2, skip: 6, error: 1}
    records_total:
      description: Number of records.
      type: int
      sample: 50
    hosts_total:
      description: Number of hosts (with records, plus targeted hosts without any).
      type: int
      sample: 8
    hosts_by_status:
      description: Number of hosts per worst status.
      type: dict
      sample: {pass: 5, warn: 1, fail: 1, skip: 0, error: 1}
    failed_hosts:
      description: Hosts whose worst status is V(fail) or V(error), worst first (at most O(max_hosts)).
      type: list
      elements: str
      sample: [gpu-node-07, gpu-node-12]
    failed_hosts_total:
      description: Number of hosts whose worst status is V(fail) or V(error).
      type: int
      sample: 2
    worst_hosts:
      description: The worst hosts (warn or worse), with the checks at their worst status.
      type: list
      elements: dict
      sample: [{host: gpu-node-07, status: error, checks: [env.reachable]}]
    report_dir:
      description: O(report_dir) as given.
      type: str
      sample: /srv/reports
"""

from collections.abc import Mapping

from ansible.errors import AnsibleFilterError

from ansible_collections.aifabric.acceptance.plugins.plugin_utils import fleet


def _records_of(value, host=None):
    """The records in one value: a record, a list of records, or a registered result."""
    if isinstance(value, Mapping) and "check" in value and "status" in value:
        return [fleet.normalize(value, host)]
    if isinstance(value, Mapping):
        inner = value.get("results")
        return _records_of(inner if isinstance(inner, list) else [], host)
    if isinstance(value, (list, tuple)):
        out = []
        for item in value:
            if isinstance(item, Mapping) and "check" in item and "status" in item:
                out.append(fleet.normalize(item, host))
            elif isinstance(item, (list, tuple)):
                out.extend(_records_of(item, host))
            else:
                raise AnsibleFilterError("fleet_summary: %r is not a result record" % (item,))
        return out
    if value is None:
        return []
    raise AnsibleFilterError("fleet_summary: expected records, got %s" % type(value).__name__)


def fleet_summary(records, hosts=None, report_dir=None, max_hosts=20):
    """Compact summary of the records (see DOCUMENTATION)."""
    if isinstance(records, Mapping) and not ("check" in records and "status" in records):
        collected = []
        for host, value in records.items():
            collected.extend(_records_of(value, str(host)))
    else:
        collected = _records_of(records)
        nameless = [r["check"] for r in collected if not r.get("host")]
        if nameless:
            raise AnsibleFilterError(
                "fleet_summary: %d record(s) have no host (e.g. %s): pass a mapping {host: records} "
                "or records with host set" % (len(nameless), nameless[0]))
    if hosts is not None and not isinstance(hosts, (list, tuple)):
        raise AnsibleFilterError("fleet_summary: hosts must be a list of host names, got %r" % (hosts,))
    host_names = [str(h) for h in hosts or []]
    collected.extend(fleet.missing_host_records(collected, host_names, "error"))
    return fleet.compact_summary(fleet.summarize(collected), max_hosts=int(max_hosts), report_dir=report_dir)


class FilterModule:
    def filters(self):
        return {"fleet_summary": fleet_summary}
