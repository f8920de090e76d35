# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Report writers: results.json against the schema, junit.xml parses, HTML escapes tool text.

Measured records are real (real nccl-tests records with their series, real perftest figures
on a synthetic pair matrix); hostile text is injected on purpose into copies of them.
"""

from __future__ import annotations

import base64
import gzip
import html.parser
import html
import json
import os
import xml.etree.ElementTree as ET

import pytest

from ansible_collections.aifabric.acceptance.plugins.module_utils import results
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import fleet, render, report_html, verdict
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
        fleet.publish(report, reports_root=str(tmp_path), history_db=history_db)
    return report


def test_results_json_records_all_validate_against_the_schema(tmp_path, validator):
    report = _report(tmp_path, evil=True)
    data = json.loads(render.render_format("json", report))
    assert set(data) >= {"run", "summary", "findings", "history", "records"}
    assert data["run"]["run_id"] == "0123456789abcdef"
    assert data["run"]["inventory_host_count"] == 4 and data["run"]["hosts_targeted_count"] == 4
    assert data["run"]["ansible_version"] == "2.19.14" and data["run"]["collection_version"]
    for rec in data["records"]:
        assert list(validator.iter_errors(rec)) == [], rec
    assert any(f["kind"] == "drift" for f in data["findings"])
    assert data["summary"]["counts"] == results.count(data["records"])


def test_junit_one_testsuite_per_host_with_metrics_as_properties(tmp_path):
    report = _report(evil=True)
    root = ET.fromstring(render.render_format("junit", report).encode("utf-8"))
    suites = root.findall("./testsuite")
    verdicts = dict((h["host"], h["status"]) for h in report["summary"]["hosts"])
    assert sorted(s.get("name") for s in suites) == sorted(set(r["host"] for r in report["records"]))
    cases = root.findall("./testsuite/testcase")
    assert len(cases) == len(report["records"])
    counted = [r for recs in verdict.host_records(report["records"]).values() for r in recs]
    counts = results.count(dict((id(r), r) for r in counted).values())
    assert sum(int(s.get("failures")) for s in suites) == counts["fail"] == int(root.get("failures"))
    assert sum(int(s.get("errors")) for s in suites) == counts["error"]
    for suite in suites:
        props = dict((p.get("name"), p.get("value")) for p in suite.findall("./properties/property"))
        assert props["verdict"] == verdicts[suite.get("name")]
        assert all(c.get("classname") == suite.get("name") for c in suite.findall("testcase"))
        failing = int(suite.get("failures")) + int(suite.get("errors"))
        assert (failing > 0) == (verdicts[suite.get("name")] in ("fail", "error")), suite.get("name")
    by_name = dict(((c.get("classname"), c.get("name")), c) for c in cases)
    # the low pair: attribution judged the matrix, so the pair record is shown but fails no suite (gpu-b's
    # verdict comes from rdma.ib_write_bw.node / .link, like every other report of the run)
    low = by_name[("gpu-b", "rdma.ib_write_bw[mlx5_0][gpu-c]")]
    assert low.find("failure") is None and low.find("system-out").text.startswith("PAIR FAIL")
    assert "bw_avg_gbit_s" in low.find("system-out").text
    props = dict((p.get("name"), p.get("value")) for p in low.findall("./properties/property"))
    rec = [r for r in report["records"] if (r["host"], r.get("peer"), r["check"]) == ("gpu-b", "gpu-c", "rdma.ib_write_bw")][0]
    assert props["bw_avg_gbit_s"] == render.fmt_value(rec["metrics"]["bw_avg_gbit_s"])
    assert props["expect.bw_avg_gbit_s.min"] == "300"
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
        self.scripts = []
        self._in_script = False

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        self._in_script = tag == "script"

    def handle_endtag(self, tag):
        self._in_script = False

    def handle_data(self, data):
        (self.scripts if self._in_script else self.text).append(data)


def _page_data(page):
    """The data embedded in report.html, as the page's JavaScript reads it."""
    rest = page.partition('<script type="application/json" id="report-data" data-mode="')[2]
    mode, _sep, rest = rest.partition('">')
    text = rest.split("</script>", 1)[0]
    if mode == "gzip":
        return json.loads(gzip.decompress(base64.b64decode(text)).decode("utf-8"))
    return json.loads(text)


def test_html_escapes_all_tool_text_and_is_self_contained():
    page = render.render_html(_report(evil=True))
    assert EVIL not in page and "<b>bold</b>" not in page
    assert "&lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in page       # the static findings/problems rows
    parser = _Collect()
    parser.feed(page)
    assert parser.tags.count("script") == 2             # the page's own: the data block and the code
    assert "b" not in parser.tags
    assert EVIL in "".join(parser.text)                 # shown to the reader, as text
    data = _page_data(page)                             # and in the data, escaped for a <script> block
    assert EVIL in data["S"] and "odd & <b>bold</b>" in data["S"]
    js = parser.scripts[1]
    assert "innerHTML" not in js and "insertAdjacentHTML" not in js and "document.write" not in js
    for external in ("src=", "href=\"http", "<link", "@import", "http://", "https://"):
        assert external not in page.replace("http://www.w3.org/2000/svg", "")


def test_html_header_findings_first_and_every_host():
    report = _report()
    page = render.render_html(report)
    for host in HOSTS + ["gpu-d"]:
        assert ">%s<" % host in page
    assert page.index("<h2>Findings") < page.index("<h2>Problems") < page.index("<h2>Hosts")
    table = page.split("<h2>Hosts</h2>")[1].split("</table>")[0]
    assert table.index("gpu-d") < table.index("gpu-b") < table.index("gpu-a")
    findings = page.split("<h2>Findings")[1].split("</table>")[0]
    assert "torch" in findings and "2.3.0" in findings and "{" not in findings      # a sentence, not JSON


def test_findings_are_readable_sentences_with_rounded_figures():
    rows = report_html.finding_rows([
        {"kind": "node", "check": "rdma.ib_write_bw", "target": "mlx5_0", "hosts": ["gpu0250"], "evidence": {
            "metric": "bw_avg_gbit_s", "fleet_median": 371.35499999999996, "limit": 185.6775, "low_pct": 50,
            "low_pairs": 2, "pairs": 2, "failed_pairs": 2, "low_peers": {"gpu0249": 88.51, "gpu0251": 88.5},
            "good_peers": []}},
        {"kind": "drift", "check": "gpu.device", "target": None, "hosts": ["gpu0333"], "evidence": {
            "subject": "gpu.device.driver_version", "fact": "driver_version", "expected": "580.159.04",
            "source": "fleet majority", "status": "warn",
            "groups": {"580.159.04": ["gpu%04d" % i for i in range(50)], "570.86.15": ["gpu0333"]},
            "group_sizes": {"580.159.04": 999, "570.86.15": 1}}}])
    assert [r["kind"] for r in rows] == ["node", "drift"] and rows[0]["status"] == "fail"
    assert "371.4" in rows[0]["text"] and "371.35499" not in rows[0]["text"]
    assert "gpu0249 88.51" in rows[0]["text"]
    assert rows[1]["text"].startswith("gpu.device.driver_version: expected 580.159.04 (fleet majority, 999 of 1000 hosts)")
    assert "570.86.15 on 1 host (gpu0333)" in rows[1]["text"] and "gpu0010" not in rows[1]["text"]


def test_a_node_finding_that_needs_confirmation_is_a_warn():
    """A suspect node too few known-good hosts are low with (attribution: evidence.needs_confirmation) is listed as a
    warn that says so, not as a fail."""
    evidence = {"metric": "bw_avg_gbit_s", "fleet_median": 390.0, "limit": 351.0, "low_pct": 10, "low_pairs": 2,
                "pairs": 2, "failed_pairs": 2, "low_peers": {"gpu0005": 175.5, "gpu0007": 175.4}, "good_peers": [],
                "witnesses": [], "needs_confirmation": True}
    rows = report_html.finding_rows([{"kind": "node", "check": "rdma.ib_write_bw", "target": "mlx5_0",
                                      "hosts": ["gpu0006"], "evidence": evidence}])
    assert rows[0]["status"] == "warn" and rows[0]["text"].startswith("suspect node, needs confirmation")
    rows = report_html.finding_rows([{"kind": "node", "check": "rdma.ib_write_bw", "target": "mlx5_0",
                                      "hosts": ["gpu0006"], "evidence": dict(evidence, needs_confirmation=False)}])
    assert rows[0]["status"] == "fail" and rows[0]["text"].startswith("suspect node: 2 of 2 pairs low")


def test_problems_follow_the_verdict_rules():
    """A pairwise record that attribution judged counts toward no host: it is not listed as the client's
    problem (before: the raw fail record of every low pair was listed under its client host)."""
    from ansible_collections.aifabric.acceptance.tests.unit.plugins.plugin_utils import synthetic_fleet
    fleet_ = synthetic_fleet.build(12, "all")
    recs = fleet_.records
    run = fleet.run_metadata("v", "2026-11-22T10:00:00Z", "2026-11-22T10:01:00Z", fleet_.hosts)
    report = fleet.build_report(recs, run)
    bad_node = fleet_.bad_node
    md = render.render_md(report)
    problems = md.split("## Problems")[1].split("## ")[0]
    assert "| %s | rdma.ib_write_bw.node\\[mlx5_0\\] | fail |" % bad_node in problems
    assert "rdma.ib_write_bw[mlx5_0][" not in problems        # no raw pair record
    data = _page_data(render.render_html(report))
    listed = [data["S"][r[1]] for r in data["recs"] if r[4] >= 2 and r[11]]
    assert listed and set(listed) <= {"rdma.ib_write_bw.node", "rdma.ib_write_bw.link"}   # attribution's verdicts
    assert any(r[3] >= 0 and r[4] == 3 for r in data["recs"])  # the raw failing pairs are still in the data


def test_heat_map_coloured_against_the_expectation():
    report = _report()
    data = _page_data(render.render_html(report))
    [matrix] = data["heat"]
    assert (matrix["check"], matrix["target"], matrix["metric"]) == ("rdma.ib_write_bw", "mlx5_0", "bw_avg_gbit_s")
    assert matrix["refKind"] == "expectation" and matrix["ref"] == 300 and matrix["n"] == 3 and matrix["bin"] == 1
    names = [data["hosts"][i][0] for i in matrix["axis"]]
    assert names == HOSTS
    cells = dict(((names[c[0]], names[c[1]]), (c[2], c[3])) for c in zip(*[iter(matrix["cells"])] * 4))
    assert len(cells) == 6 and ("gpu-a", "gpu-a") not in cells
    low = cells[("gpu-b", "gpu-c")]
    assert low[1] == report_html.STATUS_CODE["fail"] and low[0] < 1000
    assert [data["hosts"][w[0]][0] for w in matrix["worst"]][:1] == ["gpu-b"]


def test_large_matrix_is_binned_and_keeps_the_bad_pair_visible():
    hosts = ["n%04d" % i for i in range(report_html.HEAT_FULL_MAX + 200)]
    recs = [results.make("rdma.ib_write_bw", "pass", host=h, peer=hosts[(i + 1) % len(hosts)], target="mlx5_0",
                         metrics={"bw_avg_gbit_s": 360.0 + i % 3}) for i, h in enumerate(hosts)]
    recs[317] = results.make("rdma.ib_write_bw", "fail", reason="bw_avg_gbit_s 150 < 300", host=hosts[317],
                             peer=hosts[318], target="mlx5_0", metrics={"bw_avg_gbit_s": 150.0},
                             expect={"bw_avg_gbit_s": {"min": 300}})
    data = report_html.build_data(fleet.build_report(recs, fleet.run_metadata("x", "2026-11-22T00:00:00Z", "2026-11-22T00:01:00Z", hosts), analyses=[]),
                                  lambda r: "")
    [matrix] = data["heat"]
    assert matrix["bin"] == 3 and len(matrix["axis"]) <= report_html.HEAT_BINS
    cells = list(zip(*[iter(matrix["cells"])] * 4))
    assert len(cells) <= 2 * report_html.HEAT_BINS
    block = [c for c in cells if (c[0], c[1]) == (317 // 3, 318 // 3)]
    assert block and block[0][3] == report_html.STATUS_CODE["fail"]      # the block shows its worst pair
    assert data["hosts"][matrix["worst"][0][0]][0] == hosts[317]


def test_curves_from_real_series_with_band_expectation_and_log_sizes():
    report = _report()
    data = _page_data(render.render_html(report))
    names = [(p["check"], p["target"]) for p in data["plots"]]
    assert ("nccl.all_reduce", "") in names and ("rdma.ib_write_bw", "mlx5_0") in names
    nccl = [p for p in data["plots"] if p["check"] == "nccl.all_reduce"][0]
    assert (nccl["x"], nccl["y"]) == ("size_bytes", "oop_busbw_gbyte_s")
    assert len(nccl["sizes"]) == 31 and nccl["sizes"][0] == 8 and nccl["sizes"][-1] == 8589934592   # 8 B .. 8 GiB
    assert len(nccl["med"]) == len(nccl["p10"]) == len(nccl["p90"]) == 31
    rdma = [p for p in data["plots"] if p["check"] == "rdma.ib_write_bw"][0]
    with_curves = [r for r in report["records"] if r["check"] == "rdma.ib_write_bw" and len(r["series"]) >= 2]
    assert rdma["floor"] == 300 and rdma["n"] == len(with_curves) >= 2
    assert rdma["flagged"] and data["recs"][rdma["flagged"][0]][4] == report_html.STATUS_CODE["fail"]


def test_large_data_is_embedded_compressed_and_once(monkeypatch):
    monkeypatch.setattr(report_html, "COMPRESS_ABOVE", 10000)
    # 100 hosts: 400 records, 3.7 MB of JSON, a page 57 times smaller (400 hosts: 6.6 s of CPU for the same checks)
    hosts = ["n%04d" % i for i in range(100)]
    recs = []
    for h in hosts:
        recs += real_records.nccl_records(h)
    report = fleet.build_report(recs, fleet.run_metadata("big", "2026-11-22T00:00:00Z", "2026-11-22T00:01:00Z", hosts),
                                analyses=[])
    page = render.render_html(report)
    assert 'data-mode="gzip"' in page
    data = _page_data(page)
    assert len(data["recs"]) == len(recs) and len(data["hosts"]) == len(hosts)
    assert len(page) < len(render.render_format("json", report)) / 5


def test_markdown_summary_names_every_host_and_escapes():
    md = render.render_md(_report(evil=True))
    for host in HOSTS + ["gpu-d"]:
        assert "| %s |" % host in md
    assert EVIL not in md and "\\<script\\>" in md
    assert "## Findings" in md and "drift" in md


MD_PAYLOADS = [
    "[click](javascript:alert(1))", "![t](https://tracker.example/p.png)", "<img src=x onerror=alert(1)>",
    "https://evil.example/x", "www.evil.example", "ops@evil.example", "&lt;b&gt; &#x3C;", "*bold* _em_ ~~s~~",
    "`code` | cell", "<https://evil.example>", "[ref]: https://evil.example", "\\[x](y)",
]


@pytest.mark.parametrize("payload", MD_PAYLOADS)
def test_markdown_summary_renders_hostile_text_as_text(payload):
    """summary.md through a GitHub-flavoured renderer (tables, strikethrough, autolinks): a host name, a reason and
    tool text that carry Markdown stay literal text - no link, image, HTML tag or entity comes out."""
    pytest.importorskip("linkify_it")
    from markdown_it import MarkdownIt
    recs = [results.make("env.os", "fail", host="gpu-" + payload, reason="kernel " + payload, target=payload),
            results.make("env.os", "pass", host="gpu-ok")]
    run = fleet.run_metadata("0123456789abcdef", "2026-11-22T10:00:00Z", "2026-11-22T10:09:00Z",
                             ["gpu-" + payload, "gpu-ok"], inventory_host_count=2)
    page = MarkdownIt("gfm-like").render(render.render_md(fleet.build_report(recs, run)))
    body = page.split("<h2>Findings</h2>", 1)[1]     # what comes from records (the run line has a code span)
    for tag in ("<a ", "<img", "<code>", "<em>", "<strong>", "<s>", "<script", "<b>"):
        assert tag not in body, (tag, body)
    assert html.escape(" ".join(("gpu-" + payload).split()), quote=False) in body.replace("&quot;", '"')


def test_history_deltas_show_in_every_format(tmp_path):
    db = str(tmp_path / "h.sqlite")
    _report(tmp_path, history_db=db, run_id="aaaaaaaa00000000")
    second = _report(history_db=db, run_id="bbbbbbbb00000000")
    second["run"]["started"] = "2026-11-23T10:00:00Z"
    for rec in second["records"]:
        if rec["check"] == "nccl.all_reduce":
            rec["metrics"]["busbw_max_gbyte_s"] = 300.0
            rec["status"], rec["reason"] = "fail", "busbw_max_gbyte_s 300 < 340"
    out = fleet.publish(second, reports_root=str(tmp_path), history_db=db)
    data = json.loads(open(out["files"]["json"], encoding="utf-8").read())
    delta = [d for d in data["history"]["deltas"] if d["check"] == "nccl.all_reduce"][0]
    assert delta["previous_status"] == "pass" and delta["metrics"]["busbw_max_gbyte_s"]["current"] == 300.0
    md = open(out["files"]["md"], encoding="utf-8").read()
    assert "was pass (run aaaaaaaa), now fail" in md
    page = open(out["files"]["html"], encoding="utf-8").read()
    assert "Changes since the previous run" in page and "busbw_max_gbyte_s -45.6884" in page
    compared = page.split("<h2>Comparison</h2>")[1].split("<h2>")[0]       # the regression, in the static page
    assert "Regressions (worst first)" in compared and "busbw_max_gbyte_s" in compared and "-13.2 %" in compared
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
        render.stage_report(_report(), str(target), ["json"], fresh=True).commit()
    assert os.listdir(str(target)) == ["foreign.txt"]
    assert sorted(os.listdir(str(tmp_path))) == [target.name]            # no temporary directory left


def test_a_partial_directory_of_a_killed_writer_is_removed_after_an_hour(tmp_path):
    stale = tmp_path / ".20261122T090000Z-aaaaaaaa.tmp-x1"
    fresh = tmp_path / ".20261122T095959Z-bbbbbbbb.tmp-x2"       # a writer still at work
    for path in (stale, fresh):
        path.mkdir()
        (path / "results.json").write_text("{")
    os.utime(str(stale), (0, os.stat(str(stale)).st_mtime - 2 * render.STALE_PARTIAL_S))
    render.stage_report(_report(), str(tmp_path / "20261122T100000Z-01234567"), ["json"], fresh=True).commit()
    assert sorted(os.listdir(str(tmp_path))) == [fresh.name, "20261122T100000Z-01234567"]


def test_latency_records_give_a_distribution_and_a_lower_is_better_heat_map():
    """The REAL ib_read_lat capture through the perftest record builder, on a 4-host matrix (host names are labels)."""
    from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import Context
    from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import perftest_sweep as perftest_tool
    path = os.path.join(real_records.PERFTEST_DIR, "mlx4-ib-read-lat-client-a-all-sizes.txt")
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    hosts = ["lat-a", "lat-b", "lat-c", "lat-d"]
    recs = []
    for host in hosts:
        for peer in hosts:
            if host != peer:
                recs += perftest_tool.records(text, Context(
                    params={"test": "ib_read_lat", "peer": peer}, rc=0, host=host, target="mlx4_0"))
    assert len(recs) == 12 and all(r["peer"] and "lat_typical_us" in r["metrics"] for r in recs)
    run = fleet.run_metadata("lat", "2026-11-22T00:00:00Z", "2026-11-22T00:01:00Z", hosts)
    data = _page_data(render.render_html(fleet.build_report(recs, run, analyses=[])))
    [lat] = data["lat"]
    assert lat["metric"] == "lat_typical_us" and len(lat["values"]) == 12
    assert lat["values"][0] == recs[0]["metrics"]["lat_typical_us"]
    [matrix] = data["heat"]
    assert matrix["metric"] == "lat_typical_us" and matrix["lower"] is True and matrix["n"] == 4


def test_report_writers_never_follow_a_planted_link(tmp_path):
    """`report.yml -e report_dir=/tmp/rerun`: a link planted at a report file (or its old predictable temporary
    name) is replaced, and the file it points to is never written."""
    victim = tmp_path / "victim"
    victim.write_text("root-owned file")
    out = tmp_path / "rerun"
    out.mkdir(mode=0o755)
    for name in ("report.html", "report.html.tmp-%d" % os.getpid(), "summary.md", "LATEST"):
        os.symlink(str(victim), str(out / name))
    report = _report()
    render.write_report(report, str(out))
    render.point_latest(str(out), str(out / "somerun"))
    assert victim.read_text() == "root-owned file"
    for name in ("report.html", "summary.md", "LATEST"):
        assert not os.path.islink(str(out / name)) and os.stat(str(out / name)).st_mode & 0o777 == 0o644
