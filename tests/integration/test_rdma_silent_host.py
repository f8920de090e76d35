# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/rdma.yml with no SSH keep-alives: a host that goes silent mid-sweep never hangs the run (issue 18, 11).

The inventory sets its own ``ansible_ssh_common_args`` (as every bastion/ProxyJump inventory does): that variable
replaces the keep-alives of the repository's ansible.cfg, so SSH alone never notices a host whose link went down
(an established connection with nothing to send waits forever). Once the sweep runs, one host's link goes down
(its processes keep running: a cut cable, a hung NIC, a powered-off switch port). The collection's own bound on
every poll declares it unreachable: the play ends (rc 4) with that host unreachable and every pair of the others
measured and passed. The 240 s limit on ansible-playbook is the hang detector (before the bound, the wait task was
still waiting on the silent host after 13 minutes), not a performance figure.
"""

from __future__ import annotations

import re
import time

import pytest

from ansible_collections.aifabric.acceptance.tests.integration.test_rdma_fleet import CHECK, PLAYBOOK, prepare
from ansible_collections.aifabric.acceptance.tests.integration.test_rdma_sweep_faults import silence, wait_for_event
from ansible_collections.aifabric.acceptance.tests.integration.test_ssh_fleet import (
    assert_nothing_left, assert_valid_records, finish, load_report, records_of, schema_validator, start, tail)

HANG_LIMIT_S = 240
SILENT = "node4"


def without_keepalives(inventory):
    """The fleet's inventory with its own ansible_ssh_common_args and no ServerAlive option anywhere."""
    with open(inventory) as handle:
        text = handle.read()
    text, count = re.subn(r" -o ServerAlive\w+=\d+", "", text)
    assert count == 2 and "ansible_ssh_common_args=" in text and "ServerAlive" not in text, text
    with open(inventory, "w") as handle:
        handle.write(text)


def assert_survivors_exact(report, records, fleet):
    """Every pair of the other hosts measured and passed, their node verdicts pass, nobody else blamed or failed; every
    pair with the silent host has a record on the survivor's side (a client's error, or the server's own record
    when the silent host was the client: a client's record is lost with its host)."""
    survivors = sorted(h.name for h in fleet.hosts if h.name != SILENT)
    clients = [r for r in records if r["check"] == CHECK]
    for i, a in enumerate(survivors):
        for b in survivors[i + 1:]:
            recs = [r for r in clients if {r["host"], r["peer"]} == {a, b}]
            assert len(recs) == 1 and recs[0]["status"] == "pass", (a, b, [(r["status"], r.get("reason")) for r in recs])
        node = [r for r in records if r["check"] == CHECK + ".node" and r["host"] == a]
        assert len(node) == 1 and node[0]["status"] == "pass", (a, node)
        seen = [r for r in records if r["check"] in (CHECK, CHECK + ".server") and r["host"] == a
                and r["peer"] == SILENT]
        assert seen, "no record of the pair %s-%s on %s" % (a, SILENT, a)
    blamed = set()
    for finding in report.get("findings") or []:
        if finding.get("analysis") == "attribution" and finding["kind"] == "node":
            blamed.update(finding["hosts"])
    assert blamed <= {SILENT}, report.get("findings")
    assert report["summary"]["failed_hosts"] == [SILENT], report["summary"]


@pytest.mark.fleet(n=6)
@pytest.mark.parametrize("config", ["repo", "none"])
def test_rdma_sweep_silent_host_without_keepalives(fleet, controller, tmp_path, config):
    """config repo: the repository's ansible.cfg (pipelining, forks 50, its keep-alives replaced by the inventory's
    ssh args); none: no ansible.cfg at all, as an installed collection runs (no pipelining: every poll also copies
    the module over SFTP; 5 forks for 6 hosts: the lease is off and the last host is polled only once a wait ends)."""
    validator = schema_validator(controller)
    report_dir = tmp_path / "reports"
    out = str(tmp_path / "ansible-playbook.log")
    # the bound is what is tested, not its default (poll_s 5 + 20 s a poll, two in a row: about 50 s of waiting):
    # 10 s a poll, with 1 s long polls
    # stall_s: a perftest whose peer went silent mid-test gives up 8 s after the test's duration (not 30)
    inventory, extra, log = prepare(fleet, tmp_path, {"default": {"duration_s": 1.5, "stall_s": 8}},
                                    perftest={"connect_timeout_s": 8, "poll_s": 1, "poll_timeout_s": 10},
                                    devices=("mlx5_0",))
    without_keepalives(inventory)
    env = controller.env(fleet, report_dir)
    if config == "none":
        empty = tmp_path / "ansible.cfg"
        empty.write_text("")
        env["ANSIBLE_CONFIG"] = str(empty)
    started = time.monotonic()
    proc = start(fleet, controller.playbook_argv(PLAYBOOK, inventory, "-e", extra), env, out, controller.repo)
    wait_for_event(proc, log, out, "finished")
    silenced = time.monotonic()
    silence(fleet, SILENT)
    rc = finish(proc, HANG_LIMIT_S, out)
    ended = time.monotonic()
    assert rc == 4, "ansible-playbook must end with rc 4 (a host unreachable), got %d:\n%s" % (rc, tail(out))
    text = open(out).read()
    assert "rdma sweep: %s is unreachable" % SILENT in text, tail(out)

    report = load_report(report_dir, out)[1]
    records = records_of(report)
    assert_valid_records(records, validator)
    silent = [r for r in records if r["host"] == SILENT and r["check"] == "env.reachable"]
    assert silent and silent[0]["status"] == "error", [r for r in records if r["host"] == SILENT]
    print("rdma sweep, 6 hosts, ansible.cfg %s, no keep-alives, %s silenced: ended %.1f s after the silence "
          "(%.1f s in all)" % (config, SILENT, ended - silenced, ended - started))
    assert_nothing_left(fleet)
    # config none: a survivor paired with the silent host lags by that host's timeouts while the controller has no
    # fresh position of it (the lease is off, the 6th host's wait starts late); its next partner asks its runner
    # directly (position answers) and waits for it instead of ending a healthy pair "Couldn't connect"
    assert_survivors_exact(report, records, fleet)
