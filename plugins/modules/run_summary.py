#!/usr/bin/python
# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

# This is a virtual module: it is entirely implemented as an action plugin (plugins/action/run_summary.py)
# and runs on the controller.

from __future__ import annotations

DOCUMENTATION = r"""
module: run_summary
short_description: The verdict of the running playbook, for set_stats (AWX artifacts) and the RDMA confirmation pass
version_added: 1.0.0
author:
  - aifabric.acceptance contributors (@aifabric)
description:
  - Reads the record stream that the P(aifabric.acceptance.fleet_report#callback) callback writes while the
    playbook runs (every record of every task, once), runs the same fleet analysis as the report
    (C(fleet.build_report)) and returns its compact summary, so the C(set_stats) artifact and C(results.json)
    give every host the same verdict.
  - Marks checks as required. The host variable C(aifabric_required_checks) (a list of check globs, for example
    V([gpu.*, nccl.*])) of every targeted host and O(required_checks) are stored in the run's stream; the
    callback's report at the end of the run uses them too. A required check that was skipped, or is missing,
    fails the host.
  - B(Fails) when the callback is not enabled (the message gives the line that enables it,
    C(ANSIBLE_CALLBACKS_ENABLED=aifabric.acceptance.fleet_report)), when its configuration is bad, and when the run
    targeted no host (a wrong inventory path or an empty group), so such a run never looks like a success.
  - B(Fails) as well when the callback could not write the record stream (a full disk). The report is then
    written from memory at the end of the run, but no summary can be made.
  - It runs before the report is written. A report that cannot be written at the end of the run (a full disk)
    is the callback's error. It keeps the record stream, prints its path, and C(ansible-playbook) exits non-zero.
  - Runs on the controller (use it in a C(localhost) play, or with C(run_once) and C(delegate_to=localhost)).
attributes:
  check_mode:
    support: full
    details:
      - Returns the same summary; the report dir it names is V(null), as a check-mode run writes no report.
  diff_mode:
    support: none
  idempotent:
    support: full
extends_documentation_fragment: [aifabric.acceptance._attributes]
options:
  required_checks:
    description:
      - "Checks a host must pass, C({host: [check glob, ...]}), with V(*) for every host. Merged with (and
        overriding) the C(aifabric_required_checks) host variables."
    type: dict
    default: {}
  max_hosts:
    description: At most this many host names in RV(summary.failed_hosts) and RV(summary.worst_hosts).
    type: int
    default: 20
  confirm_hosts:
    description:
      - Also plan the RDMA confirmation pass among these hosts (the P(aifabric.acceptance.confirmation_rounds#filter)
        filter on the records measured so far) and return it in RV(confirmation_rounds).
    type: list
    elements: str
  confirm_per_suspect:
    description: Known-good hosts each suspect is paired with in the confirmation pass.
    type: int
    default: 2
  confirm_check:
    description: Only plan the confirmation pass for findings of this check (default every pairwise C(rdma.*) check).
    type: str
  fail_on:
    description:
      - Fail this step when a targeted host's verdict is at or beyond this status - V(fail) (a host that fails or
        errs), V(warn) (also a host that warns) - so that C(ansible-playbook) exits non-zero and AWX and CI show
        the run failed. V(never) only reports.
      - Before failing, the step publishes the report (the history row and the report files, as the callback
        would); the callback then writes no other report of the run. The failing step is no host's error.
      - The playbooks pass the variable C(acceptance_fail_on) (default V(fail), or the environment variable
        C(AIFABRIC_FAIL_ON)) in a last step of their own (C(playbooks/tasks/run_summary.yml)).
    type: str
    choices: [fail, warn, never]
    default: never
seealso:
  - plugin: aifabric.acceptance.fleet_report
    plugin_type: callback
notes:
  - This module returns no result records of its own (it measures nothing).
"""

EXAMPLES = r"""
- name: Publish the run summary
  # the hosts under test (so that --limit keeps this play) and localhost (a run that targeted no host
  # still reaches this step, which then fails and says why)
  hosts: gpu_nodes:localhost
  gather_facts: false
  vars:
    fleet_report_targets: false   # bookkeeping: its hosts are not targeted again here
  tasks:
    - name: Summarise the run (the same verdict as the report)
      aifabric.acceptance.run_summary:
      register: __run_summary
      run_once: true

    - name: Set the compact summary as run-wide stats (AWX artifacts)
      ansible.builtin.set_stats:
        data:
          aifabric_summary: "{{ __run_summary.summary }}"
          aifabric_hosts: "{{ __run_summary.hosts }}"
        per_host: false
        aggregate: false
      run_once: true

- name: Plan the RDMA confirmation pass from the records measured so far
  hosts: rdma_nodes
  gather_facts: false
  tasks:
    - name: Pair every suspect with two known-good hosts
      aifabric.acceptance.run_summary:
        confirm_hosts: "{{ ansible_play_hosts }}"
        confirm_per_suspect: 2
      register: __first_pass
      run_once: true
      delegate_to: localhost
"""

RETURN = r"""
summary:
  description: The compact summary of the run so far (the callback's report has the same verdicts).
  returned: success
  type: dict
  contains:
    worst_status:
      description: The run verdict, the worst host verdict.
      type: str
      sample: fail
    counts:
      description: Number of records per status.
      type: dict
      sample: {pass: 40, warn: 1, fail: 2, skip: 6, error: 1}
    records_total:
      description: Number of records.
      type: int
      sample: 50
    hosts_total:
      description: Number of hosts targeted.
      type: int
      sample: 8
    hosts_by_status:
      description: Number of hosts per verdict.
      type: dict
      sample: {pass: 5, warn: 1, fail: 1, skip: 0, error: 1}
    failed_hosts:
      description: Hosts whose verdict is V(fail) or V(error), worst first (at most O(max_hosts)).
      type: list
      elements: str
      sample: [gpu-node-07]
    failed_hosts_total:
      description: Number of hosts whose verdict is V(fail) or V(error).
      type: int
      sample: 1
    worst_hosts:
      description: The worst hosts (warn or worse), with the checks at their worst status.
      type: list
      elements: dict
      sample: [{host: gpu-node-07, status: error, checks: [env.reachable]}]
    report_dir:
      description: The directory the callback writes this run's report into at its end (V(null) in check mode).
      type: str
      sample: /srv/reports/20261122T101500Z-1a2b3c4d
hosts:
  description: The verdict of every targeted host.
  returned: success
  type: dict
  sample: {gpu-node-01: pass, gpu-node-07: fail}
run_id:
  description: Run id of this run (as in C(results.json) and the history store).
  returned: success
  type: str
  sample: 1a2b3c4d5e6f47a8b9c0d1e2f3a4b5c6
report_dir:
  description: Same as RV(summary.report_dir).
  returned: success
  type: str
  sample: /srv/reports/20261122T101500Z-1a2b3c4d
required_checks:
  description: The required checks in force for this run, by host (V(*) for every host).
  returned: success
  type: dict
  sample: {gpu-node-01: ["gpu.*", "nccl.*"]}
confirmation_rounds:
  description: Rounds of C([server, client]) pairs of the confirmation pass (empty when nothing is suspect).
  returned: when O(confirm_hosts) is set
  type: list
  elements: list
  sample: [[["gpu-node-03", "gpu-node-01"]]]
results:
  description: Always empty; this module measures nothing.
  returned: success
  type: list
  elements: dict
  sample: []
failing_hosts:
  description: With O(fail_on) - the hosts whose verdict failed the run.
  returned: when the step failed the run on its verdict
  type: list
  elements: str
"""
