# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A record speaks only for what the controller planned, through a real ansible-playbook run (issue 34 rule 4).

playbooks/record_admission.yml on four local hosts with the fleet_report callback: node1 launches the screen test
the controller planned (the marker in the task's arguments, templated through module_defaults as the nccl role
does); node4, compromised, returns screen records of tests nobody planned (a pass of node2 node3 and a fail of node1
node2: node1 a "confirmed bad node" before), an edge record failing node1, and a pair with a peer outside the
inventory (a fifth host before). Exactly node4 is an error, the others pass, the report has exactly the four hosts:
the callback reads the plan from the task's own fields (task_fields), not from what the host returned.
"""

from __future__ import annotations

import json
import os
import subprocess

from ansible_collections.aifabric.acceptance.tests.integration.test_callback import (  # noqa: F401  # pylint: disable=unused-import
    ANSIBLE_PLAYBOOK, PLAYBOOKS, env)

HOSTS = ["node1", "node2", "node3", "node4"]


def test_a_compromised_node_fails_only_itself(env, tmp_path):  # pylint: disable=redefined-outer-name
    report_dir = tmp_path / "report"
    argv = [ANSIBLE_PLAYBOOK, "-i", os.path.join(PLAYBOOKS, "record_admission_inventory.ini"),
            os.path.join(PLAYBOOKS, "record_admission.yml")]
    proc = subprocess.run(argv, env=dict(env, AIFABRIC_REPORTS_ROOT=str(report_dir)), cwd=PLAYBOOKS, capture_output=True,
                          text=True, timeout=300, check=False)
    assert proc.returncode in (0, 2), proc.stdout[-3000:] + proc.stderr[-3000:]
    with open(os.path.join(os.path.realpath(str(report_dir / "latest")), "results.json"), encoding="utf-8") as handle:
        report = json.load(handle)
    verdicts = dict((h["host"], h["status"]) for h in report["summary"]["hosts"])
    assert verdicts == {"node1": "pass", "node2": "pass", "node3": "pass", "node4": "error"}, verdicts
    refused = [r for r in report["records"] if r["check"] == "env.task"]
    assert len(refused) == 4 and all(r["host"] == "node4" for r in refused)
    screen = [r for r in report["records"] if r["check"] == "nccl.all_reduce.screen"]
    assert sorted((r["host"], r["status"]) for r in screen) == [("node1", "pass"), ("node2", "pass")]
    assert sorted(set(r["host"] for r in report["records"])) == HOSTS
