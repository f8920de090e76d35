# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""report.html as written: the page's own assets reach it unchanged, data stays escaped, counts read as English,
and the header says which stages ran.

The CPU-only fixture (fixtures/cpu-only-acceptance-results.json) is the results.json of ``make acceptance`` on a
machine without GPU, NPU or HCA (2026-11-26); the two-host fleet is the same records on a second host name.
"""

from __future__ import annotations

import json
import os

import pytest

from ansible_collections.aifabric.acceptance.plugins.module_utils import results
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import fleet, render, report_html

HERE = os.path.dirname(os.path.abspath(__file__))
CPU_ONLY = os.path.join(HERE, "fixtures", "cpu-only-acceptance-results.json")
REAL = os.path.join(HERE, "fixtures", "h200x2-acceptance-results.json")
EVIL = '<script>alert("x")</script>'


def _between(page, start, end):
    assert page.count(start) == 1, start
    return page.split(start, 1)[1].split(end, 1)[0]


def _cpu_only(hosts=("localhost",)):
    with open(CPU_ONLY, encoding="utf-8") as handle:
        data = json.load(handle)
    records = [dict(r, host=host) for host in hosts for r in data["records"]]
    run = dict(data["run"], hosts_targeted=list(hosts), hosts_targeted_count=len(hosts), inventory_host_count=len(hosts))
    return fleet.build_report([fleet.normalize(r, r["host"]) for r in records], run)


def test_the_written_page_holds_the_stylesheet_and_the_script_byte_for_byte(tmp_path):
    report = _cpu_only()
    report["records"].append(results.make("env.os", "warn", host="localhost", reason="kernel " + EVIL))
    out = fleet.publish(report, dest=str(tmp_path / "report"), formats=["html"])
    with open(out["files"]["html"], encoding="utf-8", newline="") as handle:
        page = handle.read()
    for name, start, end in (("report.css", "<style>\n", "</style>"), ("report.js", "<script>\n", "</script>")):
        with open(os.path.join(report_html.ASSETS, name), encoding="utf-8", newline="") as handle:
            assert _between(page, start, end) == handle.read(), name
    assert '"Segoe UI"' in page and "&#34;Segoe UI&#34;" not in page
    # what came from a host is still escaped
    assert EVIL not in page and "kernel &lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;" in page


@pytest.mark.parametrize("name, text", [
    ("report.css", "body{color:red}</style><script>alert(1)</script>"),
    ("report.js", "var a = '</script><b>';"),
    ("report.js", "var a = '<!-- x';"),
])
def test_an_asset_that_would_end_its_own_element_is_refused(name, text):
    with pytest.raises(ValueError, match=name):
        report_html.trusted_asset(name, text)


@pytest.mark.parametrize("count, word, expected", [
    (0, "host", "0 hosts"), (1, "host", "1 host"), (2, "host", "2 hosts"), (1, "check", "1 check"),
    (3, "status change", "3 status changes"), (1, "regression", "1 regression"), (2, "match", "2 matches"),
])
def test_counts_read_as_english(count, word, expected):
    assert report_html.plural(count, word) == expected


def test_one_host_one_record_is_singular_in_every_format():
    rec = results.make("env.os", "pass", host="solo")
    report = fleet.build_report([fleet.normalize(rec, "solo")], fleet.run_metadata(
        "0123456789abcdef", "2026-11-22T10:00:00Z", "2026-11-22T10:01:00Z", ["solo"], inventory_host_count=1))
    page = render.render_html(report)
    head = _between(page, '<div class="chips">', "</div>")
    assert "1 host:" in head and "1 record<" in head and "1 hosts" not in head and "1 records" not in head
    md = render.render_md(report)
    assert "1 host (" in md and "1 record" in md and "1 hosts" not in md and "1 records" not in md
    js = report_html.JS
    for text in ('" hosts, "', '" pairs;', '" records"', '" hosts"'):
        assert text not in js, text


def _stages(page):
    return dict((item.split("</strong>")[0], item.split("</strong>:", 1)[1].split("</li>")[0])
                for item in _between(page, '<ul id="stages" class="stages">', "</ul>").split("<strong>")[1:])


def test_a_cpu_only_fleet_says_the_gpu_and_rdma_stages_never_ran():
    report = _cpu_only(("cpu-a", "cpu-b"))
    assert report["summary"]["worst_status"] == "pass"
    page = render.render_html(report)
    stages = _stages(page)
    assert list(stages) == ["Probe", "GPU", "HCCL", "RDMA"]
    assert stages["Probe"].strip().startswith("ran on 2 hosts;")
    assert stages["GPU"] == ' <span class="stage notrun">not run</span> skipped on 2 hosts: no NVIDIA GPU/driver: nvidia-smi not found'
    assert stages["RDMA"].endswith("not run</span> skipped on 2 hosts: no RDMA device: /sys/class/infiniband is absent")
    assert stages["HCCL"].endswith("skipped on 2 hosts: no Ascend NPU: npu-smi not found")
    banner = _between(page, '<div class="banner" id="notcovered">', "</div>")
    assert banner == "This PASS covers the Probe stage only: GPU, HCCL and RDMA did not run on any host."
    md = render.render_md(report)
    assert "- **GPU**: not run - skipped on 2 hosts: no NVIDIA GPU/driver: nvidia-smi not found\n" in md
    assert "- **RDMA**: not run - skipped on 2 hosts: no RDMA device: /sys/class/infiniband is absent\n" in md
    assert "> This PASS covers the Probe stage only: GPU, HCCL and RDMA did not run on any host.\n" in md
    assert md.index("- **GPU**") < md.index("## Findings")


def test_a_mixed_fleet_names_where_a_stage_ran_and_why_not_elsewhere():
    with open(REAL, encoding="utf-8") as handle:
        real = json.load(handle)
    cpu = _cpu_only(("cpu-a",))["records"]
    cpu[[r["check"] for r in cpu].index("gpu.inventory")]["reason"] = "no GPU " + EVIL
    hosts = ["h200x2", "cpu-a"]
    run = dict(real["run"], hosts_targeted=hosts, hosts_targeted_count=2, inventory_host_count=2)
    report = fleet.build_report([fleet.normalize(r, r["host"]) for r in real["records"]] + cpu, run)
    page = render.render_html(report)
    stages = _stages(page)
    gpu = stages["GPU"]
    assert gpu.startswith(" ran on 1 of 2 hosts; 7 checks skipped (nccl.all_gather, nccl.all_reduce,"), gpu
    assert gpu.endswith("; skipped on 1 host (cpu-a): no GPU &lt;script&gt;alert(&#34;x&#34;)&lt;/script&gt;"), gpu
    assert "not run" not in gpu and EVIL not in page
    assert stages["RDMA"].endswith("not run</span> skipped on 1 host (cpu-a): no RDMA device: /sys/class/infiniband is absent; "
                                   "1 host (h200x2): no RDMA device: /sys/class/infiniband is empty"), stages["RDMA"]
    banner = _between(page, '<div class="banner" id="notcovered">', "</div>")
    assert banner.endswith("covers the Probe and GPU stages only: HCCL and RDMA did not run on any host."), banner


def test_a_stage_with_no_record_says_so_and_the_hccl_and_kubernetes_lines_only_appear_with_records():
    recs = [results.make("rdma.ib_write_bw", "pass", host=h, target="mlx5_0", peer=p, metrics={"bw_avg_gbit_s": 390.0})
            for h, p in (("a", "b"), ("b", "a"))]
    report = fleet.build_report([fleet.normalize(r, r["host"]) for r in recs], fleet.run_metadata(
        "0123456789abcdef", "2026-11-22T10:00:00Z", "2026-11-22T10:01:00Z", ["a", "b"], inventory_host_count=2))
    stages = _stages(render.render_html(report))
    assert list(stages) == ["Probe", "GPU", "RDMA"]
    assert stages["RDMA"] == " ran on 2 hosts"
    assert stages["GPU"].endswith("not run</span> no record of this stage on any host")
    md = render.render_md(report)
    assert "> This PASS covers the RDMA stage only: Probe and GPU did not run on any host.\n" in md


def test_a_failed_inventory_is_not_found_hardware():
    """A host whose gpu.inventory failed (nvidia-smi not found, the inventory says 8 GPUs) had no GPU to run on: its
    GPU line says the probe did not find it (it said "not run although the probe found its hardware"); a host whose
    probe passed and whose stage left no record still says so."""
    found = "no NVIDIA GPU/driver: nvidia-smi not found, but expect.gpu_count is 8"
    recs = [results.make("env.os", "pass", host=h) for h in ("a", "b", "c")] + [
        results.make("gpu.inventory", "fail", host="a", reason=found, metrics={"gpu_count": 0}),
        results.make("gpu.inventory", "error", host="b", reason="nvidia-smi -q -x exited 9: no"),
        results.make("gpu.inventory", "pass", host="c", metrics={"gpu_count": 8})]
    report = fleet.build_report([fleet.normalize(r, r["host"]) for r in recs], fleet.run_metadata(
        "0123456789abcdef", "2026-11-22T10:00:00Z", "2026-11-22T10:01:00Z", ["a", "b", "c"], inventory_host_count=3))
    gpu = _stages(render.render_html(report))["GPU"]
    assert gpu == (' <span class="stage notrun">not run</span> not found by the probe on 1 host (a): ' + found
                   + "; 1 host (b): nvidia-smi -q -x exited 9: no"
                   + "; not run on 1 host (c) although the probe found its hardware"), gpu
    assert "found its hardware" not in gpu.split("; not run on")[0]


def test_a_gemm_that_skipped_as_a_whole_is_the_gpu_stage_s_record():
    """gemm_bench's one skip record is ``gpu.gemm`` (no torch, no GPU): the GPU line says why (it said "no record of
    this stage on any host")."""
    why = "PyTorch is not importable by /usr/bin/python3: ModuleNotFoundError: No module named 'torch'"
    recs = [results.make("env.os", "pass", host="a"), results.make("gpu.gemm", "skip", host="a", reason=why)]
    report = fleet.build_report([fleet.normalize(r, r["host"]) for r in recs], fleet.run_metadata(
        "0123456789abcdef", "2026-11-22T10:00:00Z", "2026-11-22T10:01:00Z", ["a"], inventory_host_count=1))
    gpu = _stages(render.render_html(report))["GPU"]
    assert gpu.endswith("not run</span> skipped on 1 host: PyTorch is not importable by /usr/bin/python3: "
                        "ModuleNotFoundError: No module named &#39;torch&#39;"), gpu


def test_every_stage_that_ran_leaves_no_banner():
    recs = [results.make("env.os", "pass", host="a"),
            results.make("gpu.gemm_bf16", "pass", host="a", target="0", metrics={"tflops": 650.0}),
            results.make("rdma.ib_write_bw", "pass", host="a", target="mlx5_0", peer="a", metrics={"bw_avg_gbit_s": 390.0})]
    report = fleet.build_report([fleet.normalize(r, r["host"]) for r in recs], fleet.run_metadata(
        "0123456789abcdef", "2026-11-22T10:00:00Z", "2026-11-22T10:01:00Z", ["a"], inventory_host_count=1))
    page = render.render_html(report)
    assert set(_stages(page).values()) == {" ran on 1 host"}
    assert 'id="notcovered"' not in page and "did not run" not in render.render_md(report)


def test_a_per_size_expectation_is_placed_at_a_size_of_the_axis():
    """nccl.torch_all_reduce's ``ip_busbw_gbyte_s@8589934592`` floor: drawn at 8 GiB (rounding the size to four
    digits, 8.59e9, once put it at no size of the axis, so it was never drawn)."""
    with open(REAL, encoding="utf-8") as handle:
        report = fleet.reanalyze(json.load(handle))
    data = report_html.build_data(report, lambda rec: "")
    plot = [p for p in data["plots"] if p["check"] == "nccl.torch_all_reduce"][0]
    assert plot["floorAt"] == [[8589934592, 310]] and 8589934592 in plot["sizes"]


def test_the_history_index_counts_one_run_in_the_singular(tmp_path):
    from ansible_collections.aifabric.acceptance.plugins.plugin_utils import history, history_index
    report = _cpu_only()
    db = str(tmp_path / "h.sqlite")
    history.record_run(db, report["run"], report["records"])
    page = history_index.render_index(history.run_index(db), None, "h.sqlite")
    assert "1 run in the history store h.sqlite" in page and "1 runs" not in page


def test_required_checks_are_a_readable_list_of_every_host_s_checks():
    """The header lists the required checks, hosts with the same list together (it printed the mapping as JSON cut
    at 300 characters: on a fleet, a few hosts' lists and the rest lost)."""
    gpu = ["gpu.inventory", "gpu.device", "gpu.gemm_*", "nccl.*", "rdma.*"]
    hosts = ["gpu-%03d" % i for i in range(40)]
    required = dict((h, gpu) for h in hosts[:39])
    required.update({hosts[39]: ["rdma.*"], "*": ["env.os"]})
    run = dict(fleet.run_metadata("0123456789abcdef", "2026-11-22T10:00:00Z", "2026-11-22T10:01:00Z", hosts,
                                  inventory_host_count=40), required_checks=required)
    recs = [results.make("env.os", "pass", host=h) for h in hosts]
    report = fleet.build_report([fleet.normalize(r, r["host"]) for r in recs], run)
    page = render.render_html(report)
    assert "required checks: <strong>{" not in page
    items = _between(page, '<ul id="required">', "</ul>").split("</li>")[:-1]
    assert [item.strip() for item in items] == [
        "<li><strong>env.os</strong> on every host",
        "<li><strong>gpu.inventory, gpu.device, gpu.gemm_*, nccl.*, rdma.*</strong> on 39 hosts "
        "(gpu-000, gpu-001, gpu-002, ...)",
        "<li><strong>rdma.*</strong> on 1 host (gpu-039)"], items
    md = render.render_md(report)
    assert ("Required checks (a host where one did not run fails):\n\n"
            "- env.os on every host\n"
            "- gpu.inventory, gpu.device, gpu.gemm\\_\\*, nccl.\\*, rdma.\\* on 39 hosts (gpu-000, gpu-001, gpu-002, ...)\n"
            "- rdma.\\* on 1 host (gpu-039)\n") in md, md[:3000]


def test_a_gemm_chart_has_its_soft_floor():
    """The fp16 GEMM of GPU 0 warned (603.5 TFLOP/s: above the floor 575, below the soft floor 575 / 95 %): the chart
    data carries the soft floor, so the page draws the line it warned against (it drew only the floor)."""
    with open(REAL, encoding="utf-8") as handle:
        report = fleet.reanalyze(json.load(handle))
    data = report_html.build_data(report, lambda rec: "")
    fp16 = [g for g in data["gemm"] if g["check"] == "gpu.gemm_fp16"][0]
    assert (fp16["floor"], fp16["soft"]) == (575, 605.3)     # rounded to 4 digits, as every figure of the page
