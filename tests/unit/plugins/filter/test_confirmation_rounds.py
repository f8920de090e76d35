# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

import glob
import itertools
import os

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.aifabric.acceptance.plugins.filter.confirmation_rounds import FilterModule, confirmation_rounds
from ansible_collections.aifabric.acceptance.plugins.module_utils import results
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import attribution, fleet


def rec(host, peer, value, status="pass"):
    if status == "error":
        return results.error("rdma.ib_write_bw", "Couldn't connect", host=host, peer=peer, target="mlx5_0")
    return results.make("rdma.ib_write_bw", status, reason=None if status == "pass" else "x", host=host, peer=peer,
                        target="mlx5_0", metrics={"bw_avg_gbit_s": value})


def test_one_matching_with_a_low_pair_gives_confirmation_rounds():
    hosts = ["a", "b", "c", "d", "e", "f"]
    first = [rec("b", "a", 390.0), rec("d", "c", 120.0), rec("f", "e", 391.0)]
    rounds = confirmation_rounds(first, hosts, per_suspect=2)
    pairs = [p for rnd in rounds for p in rnd]
    for rnd in rounds:
        busy = [h for p in rnd for h in p]
        assert len(busy) == len(set(busy))
    assert ["c", "d"] in pairs                                       # the pair itself, re-tested
    assert sorted(p[1] for p in pairs if p != ["c", "d"]) == ["c", "c", "d", "d"]
    assert all(p[0] in ("a", "b", "e", "f") for p in pairs if p != ["c", "d"])


def test_nothing_suspect_gives_no_rounds_and_errors_name_the_filter():
    hosts = ["a", "b", "c", "d"]
    clean = [rec(b, a, 390.0) for a, b in itertools.combinations(hosts, 2)]
    assert confirmation_rounds(clean, hosts) == []
    with pytest.raises(AnsibleFilterError, match="confirmation_rounds"):
        confirmation_rounds("x", hosts)
    with pytest.raises(AnsibleFilterError, match="per_suspect"):
        confirmation_rounds(clean, hosts, per_suspect="many")
    assert FilterModule().filters()["confirmation_rounds"] is confirmation_rounds


def test_fleet_pipeline_runs_attribution():
    hosts = ["n1", "n2", "n3", "n4", "n5"]
    recs = [rec(b, a, 150.0 if "n4" in (a, b) else 390.0) for a, b in itertools.combinations(hosts, 2)]
    out, findings, problems = fleet.analyze(recs, {})
    assert problems == []
    mine = [f for f in findings if f.get("analysis") == "attribution"]
    assert [(f["kind"], f["hosts"]) for f in mine] == [("node", ["n4"])]
    verdicts = [(r["host"], r["check"], r["status"]) for r in out if r["tool"].get("version") == "attribution"]
    assert verdicts == [(h, "rdma.ib_write_bw.node", "fail" if h == "n4" else "pass") for h in hosts]
    # a re-analysis starts from the measured records again: same result
    again = fleet.analyze(out, {})
    assert [f for f in again[1] if f.get("analysis") == "attribution"] == mine


def test_a_reports_findings_plan_the_same_rounds_as_the_filter_on_its_records():
    """run_summary's confirm_hosts plans from the report's own findings (the analyses ran once): the same
    rounds as the filter, which runs attribution on the records itself; other analyses' findings are ignored."""
    hosts = ["a", "b", "c", "d", "e", "f"]
    first = [rec("b", "a", 390.0), rec("d", "c", 120.0), rec("f", "e", 391.0)]
    first += [results.make("env.package", "pass", host=h, target="torch", facts={"version": v})
              for h, v in zip(hosts, "111112")]
    report = fleet.build_report([fleet.normalize(r, r["host"]) for r in first], {"run_id": "r", "started": "t"})
    assert {f["analysis"] for f in report["findings"]} == {"attribution", "drift"}
    planned = attribution.plan_confirmation(report["findings"], hosts, per_suspect=2)
    assert planned == confirmation_rounds(first, hosts, per_suspect=2) != []


def test_no_action_plugin_imports_a_filter_plugin():
    here = os.path.dirname(os.path.abspath(__file__))
    for path in glob.glob(os.path.join(here, "..", "..", "..", "..", "plugins", "action", "*.py")):
        with open(path, encoding="utf-8") as handle:
            assert "plugins.filter" not in handle.read(), path
