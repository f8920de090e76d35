#!/usr/bin/python
# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: k8s_node_verdicts
short_description: Put acceptance verdicts on Kubernetes nodes (label, annotations, optional NoSchedule taint)
version_added: 1.0.0
author:
  - aifabric.acceptance contributors (@aifabric)
description:
  - After a run, labels every node of the run C(aifabric.io/acceptance=<verdict>) (V(pass), V(warn), V(fail), V(error),
    V(skip)) and annotates it with the run id (C(aifabric.io/acceptance-run)) and the report path
    (C(aifabric.io/acceptance-report)), so schedulers can keep failed nodes out (a node selector or affinity on the label).
  - With O(taint), nodes whose verdict is in O(taint_on) also get the taint C(aifabric.io/acceptance=<verdict>:NoSchedule);
    other taints are kept, and a node that is no longer failing loses ours. A patch that writes the taints carries the
    node's C(resourceVersion) as a precondition, so a taint another controller adds meanwhile (a NoExecute taint of
    the node lifecycle controller) is never written over - the API answers 409 Conflict, the node is read again and
    the patch computed anew (up to 6 attempts, then the task fails naming the node).
  - Patches only the nodes named in O(verdicts) (or O(hosts) for O(state=absent)), and only where something differs.
    O(state=absent) removes the label, the annotations and the taint (by default from every node carrying the label).
  - "Runs on the controller (C(delegate_to: localhost)) and needs the C(kubernetes) Python client there."
extends_documentation_fragment: [aifabric.acceptance._attributes, aifabric.acceptance._k8s_auth]
attributes:
  check_mode:
    support: full
    details: Returns the patch each node would get; patches nothing.
  diff_mode:
    support: none
  idempotent:
    support: full
options:
  state:
    description: V(present) puts the verdicts on the nodes; V(absent) removes them.
    type: str
    choices: [present, absent]
    default: present
  verdicts:
    description:
      - Node name -> verdict (V(pass), V(warn), V(fail), V(error), V(skip)), for example from the C(hosts) of
        M(aifabric.acceptance.run_summary) (C({{ __run_summary.hosts | items2dict(key_name='host', value_name='status') }})).
    type: dict
    default: {}
  run_id:
    description: The run id written into the annotation C(aifabric.io/acceptance-run). Required with O(state=present).
    type: str
  report:
    description: The report path or URL written into the annotation C(aifabric.io/acceptance-report).
    type: str
  taint:
    description: Taint the nodes whose verdict is in O(taint_on) with C(NoSchedule).
    type: bool
    default: false
  taint_on:
    description: Verdicts that get the taint.
    type: list
    elements: str
    choices: [pass, warn, fail, error, skip]
    default: [fail, error]
  hosts:
    description: With O(state=absent), the nodes to clear; empty - every node carrying the label.
    type: list
    elements: str
    default: []
seealso:
  - module: aifabric.acceptance.run_summary
  - module: aifabric.acceptance.k8s_preflight
requirements:
  - kubernetes >= 37 (Python client, on the controller)
"""

EXAMPLES = r"""
- name: Label the nodes with this run's verdicts and taint the failed ones
  aifabric.acceptance.k8s_node_verdicts:
    verdicts: "{{ __run_summary.hosts | items2dict(key_name='host', value_name='status') }}"
    run_id: "{{ __k8s_prefix }}"
    report: /srv/reports/latest
    taint: true
  delegate_to: localhost
  run_once: true

- name: Remove every verdict label, annotation and taint again
  aifabric.acceptance.k8s_node_verdicts:
    state: absent
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
changes:
  description: The nodes patched (or that would be, in check mode) and the merge patch each got.
  returned: always
  type: list
  elements: dict
  sample: [{node: gpu-node-03, verdict: fail, patch: {metadata: {labels: {aifabric.io/acceptance: fail}}}}]
"""


from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_api, k8s_node_verdicts as nv
from ansible_collections.aifabric.acceptance.plugins.module_utils import modmain


def argument_spec():
    spec = dict(
        state=dict(type="str", choices=["present", "absent"], default="present"),
        verdicts=dict(type="dict", default={}),
        run_id=dict(type="str"),
        report=dict(type="str"),
        taint=dict(type="bool", default=False),
        taint_on=dict(type="list", elements="str", choices=list(nv.VERDICTS), default=["fail", "error"]),
        hosts=dict(type="list", elements="str", default=[]),
    )
    spec.update(k8s_api.connection_argspec())
    return spec


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True,
                           required_if=[("state", "present", ("run_id",))])
    modmain.run(module, "k8s_node_verdicts", _state, fields={"changes": []})


def _state(module):
    p = module.params
    bad = dict((n, v) for n, v in p["verdicts"].items() if v not in nv.VERDICTS)
    if bad:
        module.fail_json(msg="unknown verdicts %s (allowed: %s)" % (bad, ", ".join(nv.VERDICTS)), changes=[])
    api = k8s_api.connect(p)
    if p["state"] == "absent":
        changes = nv.remove(api, p["hosts"], check_mode=module.check_mode)
    else:
        changes = nv.apply(api, p["verdicts"], p["run_id"], p["report"], p["taint"], tuple(p["taint_on"]),
                           check_mode=module.check_mode)
    return dict(changed=bool(changes), changes=changes)


if __name__ == "__main__":
    main()
