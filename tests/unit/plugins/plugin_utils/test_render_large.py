# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Large fleets: report.html stays small (data once, heat maps binned), whatever the number of pairs."""
from __future__ import annotations

from ansible_collections.aifabric.acceptance.plugins.module_utils import results
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import fleet, render, report_html


def _mesh(n):
    hosts = ["n%04d" % i for i in range(n)]
    recs = [results.make("rdma.ib_write_bw", "pass", host=a, peer=b, target="mlx5_0",
                         metrics={"bw_avg_gbit_s": 360.0 + (i * 7 + j) % 5}, started="2026-11-22T00:00:00Z")
            for i, a in enumerate(hosts) for j, b in enumerate(hosts) if i < j]
    return hosts, recs


def _page(hosts, recs):
    run = fleet.run_metadata("x", "2026-11-22T00:00:00Z", "2026-11-22T00:01:00Z", hosts)
    return render.render_html(fleet.build_report(recs, run, analyses=[]))


def test_a_binned_mesh_page_grows_with_the_records_not_with_the_square_of_the_cells(monkeypatch):
    monkeypatch.setattr(report_html, "HEAT_FULL_MAX", 40)
    monkeypatch.setattr(report_html, "HEAT_BINS", 20)
    small = _page(*_mesh(60))
    large = _page(*_mesh(120))          # 4x the pairs
    assert len(large) < 4.5 * len(small)
    assert small.count("<td") < 60 * 30 and large.count("<td") < 120 * 30      # no N x N table


def test_passing_pairs_of_a_huge_mesh_are_counted_not_listed(monkeypatch):
    monkeypatch.setattr(report_html, "PASSING_PAIRS_LISTED", 100)
    hosts, recs = _mesh(30)
    run = fleet.run_metadata("x", "2026-11-22T00:00:00Z", "2026-11-22T00:01:00Z", hosts)
    data = report_html.build_data(fleet.build_report(recs, run, analyses=[]), lambda r: "")
    assert not any(r[3] >= 0 for r in data["recs"])
    assert sum(data["unlisted"].values()) == len(recs)
    [matrix] = data["heat"]
    assert matrix["pairs"] == len(recs) and len(matrix["cells"]) == 4 * len(recs)   # the heat map still has all
