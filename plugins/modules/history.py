#!/usr/bin/python
# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

# This is a virtual module: it is entirely implemented as an action plugin (plugins/action/history.py)
# and runs on the controller.

from __future__ import annotations

DOCUMENTATION = r"""
module: history
short_description: Index, export, prune the fleet report's history store, and freeze baselines in it
version_added: 1.0.0
author:
  - aifabric.acceptance contributors (@aifabric)
description:
  - Works on the history store that the P(aifabric.acceptance.fleet_report#callback) callback and
    M(aifabric.acceptance.report) append every run to (a SQLite file or a PostgreSQL URL).
  - O(operation=index) writes a self-contained C(index.html) listing every run with its host counts by
    verdict and a trend per headline metric (fleet medians of nccl busbw, GEMM TFLOP/s, RDMA bandwidth and latency).
  - O(operation=export) writes the whole store as JSON lines, one line per run then one per record of it.
  - O(operation=prune) applies retention, keeping the newest O(keep_runs) runs and those started in the last
    O(keep_days) days; baselines are never removed.
  - O(operation=freeze) stores a baseline called O(name), the fleet medians or the per-host values of run O(run),
    that M(aifabric.acceptance.report) can hold a later run against (O(aifabric.acceptance.report#module:baseline)).
  - O(operation=expect) holds the running playbook against baseline O(name), values below O(min_pct) percent of it
    fail (the C(baseline) analysis). It adds the baseline to the run's record stream (the
    P(aifabric.acceptance.fleet_report#callback) callback must be enabled), so the M(aifabric.acceptance.run_summary)
    step and the report give the same verdicts. Run it once (C(run_once)) anywhere before the summary step.
  - Runs on the controller. Used by the C(aifabric.acceptance.baseline) playbook.
attributes:
  check_mode:
    support: full
    details:
      - Says what would change; writes nothing (O(operation=expect) still adds the baseline to the run's own
        temporary record stream, so a check-mode run is judged the same way).
  diff_mode:
    support: none
  idempotent:
    support: full
    details:
      - A file whose content would not change is reported unchanged; freezing the same run again changes nothing.
extends_documentation_fragment: [aifabric.acceptance._attributes]
options:
  history_db:
    description:
      - The history store, a SQLite file or a PostgreSQL URL V(postgresql://user@host/dbname) (needs C(psycopg) 3).
    type: str
    required: true
  operation:
    description: What to do.
    type: str
    required: true
    choices: [index, export, prune, freeze, expect]
  dest:
    description:
      - The file to write, for O(operation=index) (an C(index.html)) and O(operation=export) (a C(.jsonl) file).
    type: path
  reports_root:
    description:
      - Directory holding the run directories (C(<UTC stamp>-<run id>/report.html)) the index links to (the
        C(fleet_report) callback's C(reports_root)).
      - Defaults to the directory of O(dest).
      - Before 2.0.0 named O(reports_dir), still accepted with a deprecation warning until 3.0.0.
    type: path
    aliases: [reports_dir]
  keep_runs:
    description: For O(operation=prune), the number of newest runs to keep.
    type: int
  keep_days:
    description: For O(operation=prune), remove runs that started more than this many days ago.
    type: int
  name:
    description:
      - For O(operation=freeze), the name of the baseline (an existing one of that name is replaced).
      - For O(operation=expect), the baseline to hold the run against.
    type: str
  run:
    description:
      - For O(operation=freeze), the run to freeze, a run id in the store, a C(results.json) path (its run is
        stored first), or V(latest) (the newest run in the store).
    type: str
    default: latest
  kind:
    description:
      - For O(operation=freeze), V(medians) freezes the fleet median of each headline metric per check and
        target; V(run) freezes every host's own values.
    type: str
    choices: [run, medians]
    default: medians
  min_pct:
    description: For O(operation=expect), the floor in percent of the baseline (for latencies, the ceiling is C(100 / min_pct) times it).
    type: float
    default: 95.0
  status:
    description: For O(operation=expect), the status of a value beyond the floor.
    type: str
    choices: [fail, warn]
    default: fail
seealso:
  - module: aifabric.acceptance.report
  - plugin: aifabric.acceptance.fleet_report
    plugin_type: callback
notes:
  - The callback writes C(<output_dir>/index.html) itself after each run; this module is for other places and for
    re-writing it.
"""

EXAMPLES = r"""
- name: Freeze the fleet medians of the newest run as baseline h200-2026-11
  aifabric.acceptance.history:
    history_db: reports/history.sqlite
    operation: freeze
    name: h200-2026-11

- name: Fail every value below 95 % of baseline h200-2026-11 in this run (before the summary step)
  aifabric.acceptance.history:
    history_db: reports/history.sqlite
    operation: expect
    name: h200-2026-11
    min_pct: 95
  run_once: true

- name: Keep the newest 200 runs and those of the last 90 days
  aifabric.acceptance.history:
    history_db: postgresql://aifabric@db.example.com/aifabric
    operation: prune
    keep_runs: 200
    keep_days: 90

- name: Export the history as JSON lines
  aifabric.acceptance.history:
    history_db: reports/history.sqlite
    operation: export
    dest: reports/history.jsonl
"""

RETURN = r"""
history_db:
  description: The store (a file's absolute path, or the URL without its password).
  returned: always
  type: str
  sample: /srv/reports/history.sqlite
dest:
  description: The file written (index, export).
  returned: when O(operation) is index or export
  type: str
  sample: /srv/reports/index.html
runs:
  description: Number of runs listed or exported.
  returned: when O(operation) is index or export
  type: int
  sample: 12
records:
  description: Number of records exported.
  returned: when O(operation=export)
  type: int
  sample: 1200
removed_runs:
  description: Run ids removed (that would be removed, in check mode), oldest first.
  returned: when O(operation=prune)
  type: list
  elements: str
  sample: [1a2b3c4d5e6f47a8b9c0d1e2f3a4b5c6]
baseline:
  description: The baseline frozen or applied (name, source_run, kind, number of values; min_pct for expect).
  returned: when O(operation) is freeze or expect
  type: dict
  sample: {name: h200-2026-11, source_run: 1a2b3c4d5e6f47a8b9c0d1e2f3a4b5c6, kind: medians, values: 4}
results:
  description: Always empty; this module measures nothing.
  returned: always
  type: list
  elements: dict
  sample: []
"""
