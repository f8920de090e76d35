# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A host none of whose pairs measured anything does not pass when its peer is blamed (issue 34).

A random matching pairs n9 with the bad node n3 only; the pair never ran (an error record). Attribution names n3 a
suspect node, which explains the pair - and, before, n9 passed on it, although nothing ever showed n9 healthy. Whole
fleet: exactly which hosts fail, warn and pass. Synthetic records (bookkeeping of the matrix only).
"""

from __future__ import annotations

from ansible_collections.aifabric.acceptance.plugins.plugin_utils import fleet
from ansible_collections.aifabric.acceptance.tests.unit.plugins.plugin_utils.test_attribution import (
    CHECK, bw_record, full_mesh)


def test_a_host_whose_only_pair_never_ran_with_a_blamed_node_warns():
    hosts, recs = full_mesh(8, bad_nodes=["n03"])
    recs.append(bw_record("n09", "n03", None, status="error"))     # n09's one pair: with the bad node, not measured
    report = fleet.build_report(recs, {"run_id": "u", "started": "2026-11-22T10:00:00Z"})
    status = dict((h["host"], h["status"]) for h in report["summary"]["hosts"])
    assert status == dict([(h, "pass") for h in hosts if h != "n03"], n03="fail", n09="warn")
    n09 = [r for r in report["records"] if r["check"] == CHECK + ".node" and r["host"] == "n09"][0]
    assert n09["facts"]["attribution"] == "unmeasured"
    assert "none of the 1 pairs of n09 on mlx5_0 measured anything (with n03)" in n09["reason"]
