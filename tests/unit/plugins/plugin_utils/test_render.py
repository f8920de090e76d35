# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Report writers: results.json against the schema, junit.xml parses, HTML escapes tool text.

Measured records are real (real nccl-tests records with their series, real perftest figures
on a synthetic pair matrix); hostile text is injected on purpose into copies of them.
"""

from __future__ import annotations

import html.parser
import json
import os
import xml.etree.ElementTree as ET

import pytest

from ansible_collections.aifabric.acceptance.plugins.module_utils import results
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import fleet, render
from ansible_collections.aifabric.acceptance.tests.unit.plugins.plugin_utils import real_records

jsonschema = pytest.importorskip("jsonschema")
SCHEMA_PATH = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "docs", "results.schema.json")
EVIL = '<script>alert("x")</script>'
HOSTS = ["gpu-a", "gpu-b", "gpu-c"]


@pytest.fixture(scope="module")
def validator():
    with open(SCHEMA_PATH, encoding="utf-8") as handle:
        return jsonschema.Draft202012Validator(json.load(handle))


def _report(tmp_path=None, evil=False, history_db=None, run_id="0123456789abcdef"):
    recs = real_records.nccl_records("gpu-a") + real_records.perftest_pairs(HOSTS, low_pair=("gpu-b", "gpu-c"),
                                                                            min_gbit_s=300)
    recs.append(results.make("env.package", "pass", host="gpu-c", target="torch", facts={"version": "2.3.0"}))
    recs += [results.make("env.package", "pass", host=h, target="torch", facts={"version": "2.4.1"}) for h in HOSTS[:2]]
    recs.append(results.error("env.reachable", "host unreachable: Connection refused", host="gpu-d",
                              raw="ssh: connect to host 10.0.0.4 port 22: Connection refused\x1b[0m\x00\x07"))
    recs.append(results.skip("gpu.inventory", "no NVIDIA GPU/driver: nvidia-smi not found", host="gpu-c"))
    if evil:
        recs.append(results.make("env.os", "fail", host=EVIL, reason="kernel " + EVIL,
                                 facts={"pretty_name": EVIL}, raw="tail " + EVIL + "\x1b[31m\x0c"))
        recs.append(results.make("env.os", "warn", host="gpu-a", target=EVIL, reason="odd & <b>bold</b>"))
    run = fleet.run_metadata(run_id, "2026-11-22T10:00:00Z", "2026-11-22T10:09:00Z", HOSTS + ["gpu-d"],
                             inventory_host_count=4, playbooks=["acceptance.yml"], ansible_version="2.19.14")
    report = fleet.build_report(recs, run)
    if tmp_path is not None:
        fleet.publish(report, output_dir=str(tmp_path), history_db=history_db)
    return report


def test_results_json_records_all_validate_against_the_schema(tmp_path, validator):
    report = _report(tmp_path, evil=True)
    data = json.loads(render.render_json(report))
    assert set(data) >= {"run", "summary", "findings", "history", "records"}
    assert data["run"]["run_id"] == "0123456789abcdef"
    assert data["run"]["inventory_host_count"] == 4 and data["run"]["hosts_targeted_count"] == 4
    assert data["run"]["ansible_version"] == "2.19.14" and data["run"]["collection_version"]
    for rec in data["records"]:
        assert list(validator.iter_errors(rec)) == [], rec
    assert any(f["kind"] == "drift" for f in data["findings"])
    assert data["summary"]["counts"] == results.count(data["records"])


def test_junit_one_testcase_per_record_with_status_mapping(tmp_path):
    report = _report(evil=True)
    root = ET.fromstring(render.render_junit(report).encode("utf-8"))
    cases = root.findall("./testsuite/testcase")
    assert len(cases) == len(report["records"])
    suite = root.find("testsuite")
    counts = report["summary"]["counts"]
    assert (suite.get("failures"), suite.get("errors"), suite.get("skipped")) == (
        str(counts["fail"]), str(counts["error"]), str(counts["skip"]))
    by_name = dict(((c.get("classname"), c.get("name")), c) for c in cases)
    low = by_name[("gpu-b", "rdma.ib_write_bw[mlx5_0][gpu-c]")]
    assert low.find("failure") is not None and "bw_avg_gbit_s" in low.find("failure").get("message")
    dead = by_name[("gpu-d", "env.reachable")]
    assert dead.find("error") is not None and "Connection refused" in dead.find("error").text
    assert "\x00" not in dead.find("error").text and "\x1b" not in dead.find("error").text
    assert by_name[("gpu-c", "gpu.inventory")].find("skipped") is not None
    warn = by_name[("gpu-a", "env.os[%s]" % EVIL)]
    assert warn.find("failure") is None and warn.find("system-out").text.startswith("WARN: odd & <b>bold</b>")
    assert by_name[(EVIL, "env.os")].find("failure").get("message") == "kernel " + EVIL


class _Collect(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags = []
        self.text = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)

    def handle_data(self, data):
        self.text.append(data)


def test_html_escapes_all_tool_text_and_is_self_contained():
    page = render.render_html(_report(evil=True))
    assert EVIL not in page and "<b>bold</b>" not in page
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in page
    parser = _Collect()
    parser.feed(page)
    assert "script" not in parser.tags and "b" not in parser.tags
    assert EVIL in "".join(parser.text)                 # shown to the reader, as text
    for external in ("src=", "href=\"http", "<link", "@import"):
        assert external not in page


def test_html_lists_failures_first_and_every_host():
    report = _report()
    page = render.render_html(report)
    for host in HOSTS + ["gpu-d"]:
        assert ">%s<" % host in page
    table = page.split("<h2>Hosts</h2>")[1].split("</table>")[0]
    assert table.index("gpu-d") < table.index("gpu-b") < table.index("gpu-a")


def test_heatmap_one_matrix_per_check_and_target_coloured_against_the_median():
    report = _report()
    [matrix] = render.heatmaps(report["records"])
    assert (matrix["check"], matrix["target"], matrix["metric"]) == ("rdma.ib_write_bw", "mlx5_0", "bw_avg_gbit_s")
    assert matrix["cols"] == HOSTS and [r["host"] for r in matrix["rows"]] == HOSTS
    values = [r["metrics"]["bw_avg_gbit_s"] for r in report["records"] if r.get("peer")]
    assert len(values) == 6 and matrix["median"] == pytest.approx((sorted(values)[2] + sorted(values)[3]) / 2)
    cells = dict(((row["host"], peer), cell) for row in matrix["rows"] for peer, cell in zip(matrix["cols"], row["cells"]))
    assert cells[("gpu-a", "gpu-a")] is None
    assert cells[("gpu-b", "gpu-c")]["status"] == "fail"
    assert cells[("gpu-b", "gpu-c")]["color"] != cells[("gpu-a", "gpu-b")]["color"]
    assert "Pairwise matrices" in render.render_html(report)


def test_heat_colour_direction_for_latency():
    assert render._heat_color(2.0, 2.0, True) == render._heat_color(100.0, 100.0, False) == "hsl(120, 65%, 72%)"
    assert render._heat_color(4.0, 2.0, True) == "hsl(0, 65%, 72%)"       # twice the median latency: red
    assert render._heat_color(None, 2.0, False) == "#ddd"


def test_curves_from_real_series():
    report = _report()
    charts = render.curves(report["records"])
    names = [(c["check"], c["target"]) for c in charts]
    assert ("nccl.all_reduce", None) in names and ("rdma.ib_write_bw", "mlx5_0") in names
    nccl = [c for c in charts if c["check"] == "nccl.all_reduce"][0]
    assert (nccl["xkey"], nccl["ykey"], nccl["log"]) == ("size_bytes", "oop_busbw_gbyte_s", True)
    assert len(nccl["lines"][0]["points"].split()) == 31      # the 31 sizes 8 B .. 8 GiB of the real run
    page = render.render_html(report)
    assert page.count("<svg") == len(charts)


def test_markdown_summary_names_every_host_and_escapes():
    md = render.render_md(_report(evil=True))
    for host in HOSTS + ["gpu-d"]:
        assert "| %s |" % host in md
    assert EVIL not in md and "&lt;script&gt;" in md
    assert "## Findings" in md and "drift" in md


def test_history_deltas_show_in_every_format(tmp_path):
    db = str(tmp_path / "h.sqlite")
    _report(tmp_path, history_db=db, run_id="aaaaaaaa00000000")
    second = _report(history_db=db, run_id="bbbbbbbb00000000")
    second["run"]["started"] = "2026-11-23T10:00:00Z"
    for rec in second["records"]:
        if rec["check"] == "nccl.all_reduce":
            rec["metrics"]["busbw_max_gbyte_s"] = 300.0
            rec["status"], rec["reason"] = "fail", "busbw_max_gbyte_s 300 < 340"
    out = fleet.publish(second, output_dir=str(tmp_path), history_db=db)
    data = json.loads(open(out["files"]["json"], encoding="utf-8").read())
    delta = [d for d in data["history"]["deltas"] if d["check"] == "nccl.all_reduce"][0]
    assert delta["previous_status"] == "pass" and delta["metrics"]["busbw_max_gbyte_s"]["current"] == 300.0
    md = open(out["files"]["md"], encoding="utf-8").read()
    assert "was pass (run aaaaaaaa), now fail" in md
    page = open(out["files"]["html"], encoding="utf-8").read()
    assert "Changes since the previous run" in page and "busbw_max_gbyte_s -45.6884" in page
    assert os.path.basename(os.path.realpath(str(tmp_path / "latest"))).endswith("-bbbbbbbb")


def test_files_are_replaced_atomically_and_unchanged_files_left_alone(tmp_path):
    report = _report()
    files, changed = render.write_report(report, str(tmp_path), ["json", "md"])
    assert sorted(changed) == ["json", "md"]
    before = os.stat(files["json"]).st_mtime_ns
    files, changed = render.write_report(report, str(tmp_path), ["json", "md"])
    assert changed == [] and os.stat(files["json"]).st_mtime_ns == before
    assert sorted(os.listdir(str(tmp_path))) == ["results.json", "summary.md"]     # no temp files left
    _files, changed = render.write_report(report, str(tmp_path / "check"), ["json"], check_mode=True)
    assert changed == ["json"] and not os.path.exists(str(tmp_path / "check"))


def test_an_interrupted_run_says_so_in_markdown_and_html_and_others_do_not():
    report = _report()
    assert "Interrupted run" not in render.render_md(report) and "Interrupted run" not in render.render_html(report)
    report["run"].update(interrupted=True, interrupt_reason="SIGINT")
    assert "> **Interrupted run** (SIGINT)" in render.render_md(report)
    assert 'Interrupted run (SIGINT)' in render.render_html(report)


def test_a_new_report_directory_never_merges_into_an_existing_one(tmp_path):
    target = tmp_path / "20261122T100000Z-01234567"
    target.mkdir()
    (target / "foreign.txt").write_text("keep")
    with pytest.raises(OSError):
        render.write_report_dir(_report(), str(target), ["json"])
    assert os.listdir(str(target)) == ["foreign.txt"]
    assert sorted(os.listdir(str(tmp_path))) == [target.name]            # no temporary directory left


def test_a_partial_directory_of_a_killed_writer_is_removed_after_an_hour(tmp_path):
    stale = tmp_path / ".20261122T090000Z-aaaaaaaa.tmp-x1"
    fresh = tmp_path / ".20261122T095959Z-bbbbbbbb.tmp-x2"       # a writer still at work
    for path in (stale, fresh):
        path.mkdir()
        (path / "results.json").write_text("{")
    os.utime(str(stale), (0, os.stat(str(stale)).st_mtime - 2 * render.STALE_PARTIAL_S))
    render.write_report_dir(_report(), str(tmp_path / "20261122T100000Z-01234567"), ["json"])
    assert sorted(os.listdir(str(tmp_path))) == [fresh.name, "20261122T100000Z-01234567"]
