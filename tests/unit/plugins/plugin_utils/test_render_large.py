# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Large fleets: the pairwise matrix must not grow quadratically in report.html."""
from __future__ import annotations

from ansible_collections.aifabric.acceptance.plugins.plugin_utils import fleet, render


def _pair(host, peer, value, status="pass"):
    return {"host": host, "peer": peer, "check": "rdma.ib_write_bw", "target": "mlx5_0/1", "status": status,
            "reason": None if status == "pass" else "bw_avg_gbit_s %s < 360 expected minimum" % value,
            "metrics": {"bw_avg_gbit_s": value}}


def test_small_matrix_is_a_full_table():
    recs = [_pair("a", "b", 370.0), _pair("b", "c", 360.0), _pair("c", "a", 180.0, "fail")]
    (matrix,) = render.heatmaps(recs)
    assert not matrix.get("compact")
    assert matrix["cols"] == ["a", "b", "c"]
    assert [row["host"] for row in matrix["rows"]] == ["a", "b", "c"]


def test_large_matrix_shows_worst_pairs_and_host_spread():
    hosts = ["n%04d" % i for i in range(render.HEAT_MAX_HOSTS + 72)]
    recs = [_pair(h, hosts[(i + 1) % len(hosts)], 360.0 + i % 3) for i, h in enumerate(hosts)]
    recs[17] = _pair(hosts[17], hosts[18], 150.0, "fail")
    (matrix,) = render.heatmaps(recs)
    assert matrix["compact"] is True
    assert matrix["rows"] == [] and matrix["cols"] == []
    assert matrix["pairs"] == len(hosts)
    assert (matrix["worst"][0]["host"], matrix["worst"][0]["peer"], matrix["worst"][0]["status"]) == (
        hosts[17], hosts[18], "fail")
    assert len(matrix["worst"]) == render.HEAT_WORST_PAIRS
    spread = dict((row["host"], row) for row in matrix["spread"])
    assert len(spread) == len(hosts)
    assert spread[hosts[18]]["min"] == "150"     # the slow pair shows at both of its ends
    run = fleet.run_metadata("x", "2026-11-22T00:00:00Z", "2026-11-22T00:01:00Z", hosts)
    html = render.render_html(fleet.build_report([dict(r, started="2026-11-22T00:00:00Z") for r in recs], run,
                                                 analyses=[]))
    assert html.count("<td") < 30 * len(hosts)   # linear in hosts, not quadratic
