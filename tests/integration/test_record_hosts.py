# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A record names only a host this run targets for it: a whole-fleet run over real SSH (issue 18 item 6).

Three network-namespace hosts run tests/integration/playbooks/record_hosts.yml with the fleet_report callback.
node2's module output carries a record for ``outsider-9`` (no host of the inventory) and one for node3 (a fellow
targeted host; node2's task is no run_once launch). Exactly node2 gets an ``error`` naming both, the summary lists
exactly the three targeted hosts, node3's verdict is its own; a run_once launcher's records for the hosts of its
play are kept. Before, the outsider was a fourth host of the report and node3 failed on node2's word.
"""

from __future__ import annotations

import os
import re

import pytest

from ansible_collections.aifabric.acceptance.tests.integration.test_ssh_fleet import finish, load_report, start, tail

HERE = os.path.dirname(os.path.abspath(__file__))


@pytest.mark.fleet(n=3)
def test_only_the_sender_of_records_for_other_hosts_gets_an_error(fleet, controller, tmp_path):
    inventory = fleet.write_inventory(path=str(tmp_path / "inventory.ini"))
    report_dir = tmp_path / "report"
    out = str(tmp_path / "ansible.log")
    argv = [controller.ansible_playbook, "-i", inventory, os.path.join(HERE, "playbooks", "record_hosts.yml")]
    proc = start(fleet, argv, controller.env(fleet, report_dir), out, os.path.join(HERE, "playbooks"))
    assert finish(proc, 240, out) == 0, tail(out)
    _run_dir, report = load_report(report_dir, out)
    hosts = [h.name for h in fleet.hosts]
    sender, victim = hosts[1], hosts[2]

    verdicts = dict((h["host"], h["status"]) for h in report["summary"]["hosts"])
    assert verdicts == {hosts[0]: "pass", sender: "error", victim: "pass"}, verdicts
    assert report["summary"]["hosts_total"] == 3 and report["run"]["hosts_targeted"] == hosts
    assert not [r for r in report["records"] if r["host"] not in hosts], "a record of a host outside the run"

    refused = [r for r in report["records"] if r["check"] == "env.task"]
    named = sorted((r["host"], r["params"]["refused_host"]) for r in refused)
    assert named == sorted([(sender, "outsider-9"), (sender, victim)])
    for rec in refused:
        assert re.search(r"returned a gpu\.ecc record for host '%s', refused: it is (not a host this run targets|"
                         r"another host of this run)" % re.escape(rec["params"]["refused_host"]), rec["reason"]), rec
    assert not [r for r in report["records"] if r["check"] == "gpu.ecc"]

    # the run_once launcher (the first host) named every host of its play: each keeps its record
    launched = sorted((r["host"], r["status"], r["params"]["hosts"]) for r in report["records"]
                      if r["check"] == "nccl.all_reduce")
    assert launched == [(h, "pass", hosts) for h in hosts]

    # the set_stats summary (run_summary step) says the same
    with open(out, errors="replace") as handle:
        line = re.search(r"RUN SUMMARY HOSTS ([^;]*);", handle.read())
    assert line and dict(item.split("=") for item in line.group(1).split(",")) == verdicts, tail(out)
