#!/usr/bin/python
# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

# This is a virtual module: it is entirely implemented as an action plugin (plugins/action/report.py)
# and runs on the controller.

from __future__ import annotations

DOCUMENTATION = r"""
module: report
short_description: Re-run the fleet analysis of an existing results.json and render its report again
version_added: 1.0.0
author:
  - aifabric.acceptance contributors (@aifabric)
description:
  - Reads a C(results.json) written by the P(aifabric.acceptance.fleet_report#callback) callback (or by this
    module), drops the records and findings that the fleet analyses added, runs the analysis pipeline again
    on the measured records, and writes C(results.json), C(summary.md), C(junit.xml), C(ctrf.json) and C(report.html)
    into O(dest).
  - Measured records are never rewritten, so re-analysing the same input gives the same report.
  - Runs on the controller. Used by the C(aifabric.acceptance.report) playbook.
attributes:
  check_mode:
    support: full
    details:
      - Computes the report and says whether any file would change.
      - Writes nothing; the history store is only read.
  diff_mode:
    support: none
  idempotent:
    support: full
    details:
      - A file whose content would not change is not rewritten.
      - The run is stored in the history store under its own run id, replacing earlier copies of it.
extends_documentation_fragment: [aifabric.acceptance._attributes]
options:
  src:
    description: Path of the C(results.json) to re-analyse.
    type: path
    required: true
  dest:
    description:
      - Directory to write the report files into (created when missing); the run's directory of this report (the
        C(aifabric.acceptance.report) playbook's C(run_dir)).
      - The alias O(report_dir) (the playbook passes its C(report_dir) variable, the name of C(run_dir) before
        2.0.0) is deprecated and accepted with a deprecation warning until 3.0.0.
    type: path
    required: true
    aliases: [report_dir]
  formats:
    description: Report files to write.
    type: list
    elements: str
    choices: [json, md, html, junit, ctrf]
    default: [json, md, html, junit, ctrf]
  history_db:
    description:
      - History store to compare with, a SQLite file or a PostgreSQL URL V(postgresql://user@host/dbname) (needs
        C(psycopg) 3). The run is stored in it under its run id (replacing an earlier copy of the same run), and each
        record shows the change since the previous run of its host.
      - Without it, no history is read or written.
    type: str
  compare_with:
    description:
      - Compare this run with another one, a C(results.json) path, a baseline name or a run id in O(history_db)
        (tried in that order). Regressions and improvements per host and check beyond O(compare_margin_pct) go into
        C(results.json) (key C(comparison)) and C(summary.md).
      - Without it, and with O(history_db), the run is compared with the previous run of each host.
    type: str
  compare_margin_pct:
    description:
      - Noise margin of the comparison, in percent of the reference value. A change within it is not listed.
      - Which way is better follows the metric, bandwidth and TFLOP/s higher, latency lower.
    type: float
    default: 5.0
  baseline:
    description:
      - Hold the run against a baseline frozen with M(aifabric.acceptance.history) (O(history_db) needed). Each
        measured record with baseline values gets an added record C(<check>.baseline) that fails below
        O(baseline.min_pct) percent of the baseline (above C(100 / min_pct) times it for latencies).
    type: dict
    suboptions:
      name:
        description: Name of the baseline.
        type: str
        required: true
      min_pct:
        description: The floor, in percent of the baseline value.
        type: float
        default: 95.0
      status:
        description: Status of a record beyond the floor.
        type: str
        choices: [fail, warn]
        default: fail
  prometheus_dir:
    description:
      - Also write the Prometheus text exposition of the run there (for the node_exporter textfile collector),
        C(aifabric.prom), or one C(aifabric_<host>.prom) per host with O(prometheus_per_host).
      - Metric names and labels are in the collection's C(docs/history.md).
    type: path
  prometheus_per_host:
    description: One Prometheus file per host instead of one for the fleet.
    type: bool
    default: false
  drift_pins:
    description:
      - "Pinned values for fleet drift, C({fact_or_subject: value}). A key is a fact name (V(driver_version))
        or a subject C(check[target].fact) (V(env.package[/usr/bin/python3:torch].version))."
      - A host with another value gets a C(fail) record; without pins, hosts that differ from the fleet
        majority get a C(warn) record.
    type: dict
    default: {}
seealso:
  - plugin: aifabric.acceptance.fleet_report
    plugin_type: callback
  - module: aifabric.acceptance.history
notes:
  - This module returns no result records of its own (it measures nothing); the records are in O(dest)C(/results.json).
"""

EXAMPLES = r"""
- name: Re-analyse an old run with a pinned driver version
  aifabric.acceptance.report:
    src: reports/20261122T101500Z-1a2b3c4d/results.json
    dest: reports/reanalysed
    history_db: reports/history.sqlite
    drift_pins:
      driver_version: "580.82.07"
  register: __report

- name: Compare with baseline h200-2026-11 and fail hosts below 95 % of it
  aifabric.acceptance.report:
    src: reports/latest/results.json
    dest: reports/against-baseline
    history_db: reports/history.sqlite
    compare_with: h200-2026-11
    baseline:
      name: h200-2026-11
      min_pct: 95

- name: Show the verdict
  ansible.builtin.debug:
    msg: "{{ __report.summary.worst_status }}: {{ __report.summary.failed_hosts }}"
"""

RETURN = r"""
dest:
  description: Absolute path of the directory written.
  returned: success
  type: str
  sample: /srv/reports/reanalysed
files:
  description: Path of each report file, by format.
  returned: success
  type: dict
  sample: {json: /srv/reports/reanalysed/results.json, html: /srv/reports/reanalysed/report.html}
changed_files:
  description: Formats whose file changed (or would change, in check mode).
  returned: success
  type: list
  elements: str
  sample: [json, html]
verdict:
  description: The run verdict with the host counts behind it.
  returned: success
  type: str
  sample: "FAIL: 8 hosts: 1 fail, 7 pass"
report:
  description: The main report file written (C(report.html), else C(summary.md), else the directory).
  returned: success
  type: str
  sample: /srv/reports/reanalysed/report.html
comparison:
  description:
    - What the run was compared with and the totals (the full lists are in C(results.json), key C(comparison)).
    - V(null) when there was nothing to compare with.
  returned: success
  type: dict
  sample: {against: {kind: baseline, name: h200-2026-11, run_ids: [1a2b3c4d5e6f47a8b9c0d1e2f3a4b5c6]},
           text: "baseline h200-2026-11 (medians of run 1a2b3c4d)", margin_pct: 5.0,
           totals: {regressions: 1, improvements: 0, status_changes: 0}, hosts: {gpu-node-07: {regressions: 1, improvements: 0}}}
prometheus_files:
  description: The Prometheus textfiles written.
  returned: success
  type: list
  elements: str
  sample: [/var/lib/node_exporter/textfile/aifabric.prom]
summary:
  description: The compact summary (the same as M(aifabric.acceptance.run_summary) returns).
  returned: success
  type: dict
  sample: {worst_status: fail, counts: {pass: 40, warn: 1, fail: 2, skip: 6, error: 1}, hosts_total: 8,
           failed_hosts: [gpu-node-07], failed_hosts_total: 1}
findings:
  description:
    - The findings of the analyses (kind, check, target, hosts, evidence), the first 100 (all of them are in
      C(results.json), key C(findings); their number is RV(findings_total)).
  returned: success
  type: list
  elements: dict
  sample: [{kind: drift, check: env.nvidia, target: null, hosts: [gpu-node-07], evidence: {fact: driver_version}}]
findings_total:
  description: The number of findings (RV(findings) lists the first 100).
  returned: success
  type: int
  sample: 1
run_id:
  description: Run id of the re-analysed run.
  returned: success
  type: str
  sample: 1a2b3c4d5e6f47a8b9c0d1e2f3a4b5c6
results:
  description: Always empty; this module measures nothing (the records are in O(dest)C(/results.json)).
  returned: success
  type: list
  elements: dict
  sample: []
"""
