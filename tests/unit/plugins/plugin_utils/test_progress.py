# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Progress lines (plugin_utils.progress): one line per stage of each task, from the streamed entries.

The entries are what fleet.Collector streams (its observer), fed with task results shaped like
Ansible's. The records are REAL where they can be: the 2x H200 acceptance run
(fixtures/h200x2-acceptance-results.json: env probe, GPU, GEMM per GPU, torch all-reduce, nccl-tests
not installed) and the real nccl-tests 2.19.6 records (real_records). Host names are labels; the one
failing GEMM record and the unreachable/failed hosts are SYNTHETIC faults, labelled where made.
"""

from __future__ import annotations

import copy
import json
import os

import hypothesis
import hypothesis.strategies as st

from ansible_collections.aifabric.acceptance.plugins.plugin_utils import fleet, progress
from ansible_collections.aifabric.acceptance.tests.unit.plugins.plugin_utils import real_records

FIXTURE = os.path.join(os.path.dirname(__file__), "fixtures", "h200x2-acceptance-results.json")
HOSTS = ["h200-a", "h200-b", "h200-c", "h200-d"]
GEMM_REASON = "tflops 301.5 < 575 expected (synthetic fault for this test)"


def real_by_task():
    """The real run's records, grouped as its tasks returned them (probe, GEMM, torch, nccl-tests)."""
    with open(FIXTURE, encoding="utf-8") as handle:
        records = json.load(handle)["records"]
    tasks = {"probe": [], "gemm": [], "torch": [], "nccl": []}
    for rec in records:
        if rec["check"].startswith("gpu.gemm"):
            tasks["gemm"].append(rec)
        elif rec["check"] == "nccl.torch_all_reduce":
            tasks["torch"].append(rec)
        elif rec["check"].startswith("nccl."):
            tasks["nccl"].append(rec)
        else:
            tasks["probe"].append(rec)
    return tasks


def on(host, records):
    out = []
    for rec in records:
        rec = copy.deepcopy(rec)
        rec["host"] = host
        out.append(rec)
    return {"changed": False, "results": out}


def fleet_run(tally):
    """Four hosts through a real Collector: h200-d unreachable at the probe, h200-c one slow GPU."""
    tasks = real_by_task()
    col = fleet.Collector()
    col.observer = tally.add
    col.target(HOSTS)
    tally.play(HOSTS)
    seen = []
    tally.start("probe")
    for host in HOSTS[:3]:
        col.task_ok(host, "probe", "Probe OS, GPUs, RDMA and software", on(host, tasks["probe"]))
    col.task_unreachable("h200-d", "probe", "Probe OS, GPUs, RDMA and software",
                         {"msg": "ssh: connect to host h200-d port 22: Connection refused"})
    seen.append(tally.take())
    tally.start("gemm")
    for host in HOSTS[:3]:
        recs = on(host, tasks["gemm"])
        if host == "h200-c":      # SYNTHETIC fault: GPU 1 of h200-c slow
            bad = [r for r in recs["results"] if r["check"] == "gpu.gemm_bf16" and r["target"] == "1"][0]
            bad.update(status="fail", reason=GEMM_REASON, metrics=dict(bad["metrics"], tflops=301.5))
        col.task_ok(host, "gemm", "Measure GEMM throughput on every GPU", recs)
    seen.append(tally.take())
    tally.start("torch")
    for host in HOSTS[:3]:
        col.task_ok(host, "torch", "Measure all-reduce bus bandwidth", on(host, tasks["torch"]))
    seen.append(tally.take())
    tally.start("nccl")
    col.task_failed("h200-b", "nccl", "Run nccl-tests collectives", {"msg": "mpirun: exit 1 (synthetic)"})
    for host in ("h200-a", "h200-c"):
        col.task_ok(host, "nccl", "Run nccl-tests collectives", on(host, tasks["nccl"]))
    seen.append(tally.take())
    return seen, col


def test_a_fleet_gets_one_line_per_stage_of_each_task_when_the_task_is_done():
    seen, col = fleet_run(progress.Tally())
    unreachable = "(h200-d: host unreachable: ssh: connect to host h200-d port 22: Connection refused)"
    assert seen[0] == [
        "aifabric env: 4/4 hosts, 3 pass, 1 error " + unreachable,
        "aifabric gpu: 4/4 hosts, 3 pass, 1 error " + unreachable,
        "aifabric rdma: 4/4 hosts, 1 error, 3 skip " + unreachable,
    ]
    # h200-d left the play when it was unreachable: the GEMM task is done once the three others reported
    assert seen[1] == [
        "aifabric gpu gemm_bf16: 3/3 hosts, 2 pass, 1 fail, tflops min 301.5 (h200-c) max 679.379 "
        "(h200-c: %s)" % GEMM_REASON,
        "aifabric gpu gemm_fp16: 3/3 hosts, 3 warn, tflops min 603.456 (h200-a) max 644.623 (h200-a: tflops "
        "603.456 is within 5% of the minimum 575 (soft floor 605.263) (profile ...; +2 more)",
    ]
    # the real torch record names params.hosts ['localhost'], not a host of this play: not counted
    assert seen[2] == ["aifabric nccl torch_all_reduce: 3/3 hosts, 3 pass, busbw_max_gbyte_s 343.598"]
    assert len(seen[3]) == 7      # one line per collective; h200-b's failed task counts in each
    assert seen[3][0] == "aifabric nccl all_reduce: 3/3 hosts, 1 error, 2 skip (h200-b: task failed: mpirun: exit 1 (synthetic))"
    assert [line.split(":")[0] for line in seen[3]] == [
        "aifabric nccl " + name for name in
        ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "reduce", "sendrecv")]
    # the report of the same stream agrees with the lines on the hosts that fail and error
    verdicts = dict((h["host"], h["status"]) for h in fleet.summarize(col.records())["hosts"])
    assert verdicts["h200-d"] == "error" and verdicts["h200-b"] == "error" and verdicts["h200-c"] == "fail"


def test_the_pure_builder_gives_the_same_lines_as_the_live_tally():
    entries = []
    col = fleet.Collector()
    col.observer = entries.append
    tasks = real_by_task()
    for host in HOSTS[:2]:
        col.task_ok(host, "gemm", "GEMM", on(host, tasks["gemm"]))
    assert progress.stage_lines(entries) == [
        "aifabric gpu gemm_bf16: 2/2 hosts, 2 pass, tflops min 647.863 (h200-a) max 679.379",
        "aifabric gpu gemm_fp16: 2/2 hosts, 2 warn, tflops min 603.456 (h200-a) max 644.623 (h200-a: tflops "
        "603.456 is within 5% of the minimum 575 (soft floor 605.263) (profile ...; +1 more)",
    ]


def test_a_multi_node_run_once_record_counts_for_the_hosts_of_the_play_it_names():
    tally = progress.Tally()
    col = fleet.Collector()
    col.observer = tally.add
    tally.play(["h200-a", "h200-b", "h200-c"])
    tally.start("nccl", run_once=True)
    records = real_records.nccl_records(host="h200-a")
    col.task_ok("h200-a", "nccl", "nccl-tests", {"results": records}, participants=["h200-a", "h200-b"])
    lines = tally.take()        # one result is all a run_once task returns
    assert lines[1] == "aifabric nccl all_reduce: 2/2 hosts, 2 pass, busbw_max_gbyte_s 345.688"
    assert len(lines) == 4 and tally.flush() == []


def test_a_task_waits_for_every_host_still_in_the_play_and_flush_prints_what_is_open():
    tally = progress.Tally()
    tally.play(["a", "b"])
    tally.start("t1")
    tally.add({"e": "task", "host": "a", "task": "t1", "kind": "ok",
               "records": [{"check": "env.os", "status": "pass"}]})
    assert tally.take() == []                   # b has not reported yet
    tally.add({"e": "task", "host": "b", "task": "t1", "kind": "failed",
               "records": [{"check": "env.os", "status": "fail", "reason": "kernel too old"}]})
    assert tally.take() == ["aifabric env: 2/2 hosts, 1 pass, 1 fail (b: kernel too old)"]
    tally.start("t2")                           # b failed: it left the play
    tally.add({"e": "task", "host": "a", "task": "t2", "kind": "ok",
               "records": [{"check": "gpu.device", "status": "pass"}]})
    assert tally.take() == ["aifabric gpu: 1/1 hosts, 1 pass"]
    tally.play(None)                            # hosts not known: lines only when flushed
    tally.start("t3")
    tally.add({"e": "task", "host": "a", "task": "t3", "kind": "skipped"})
    tally.add({"e": "task", "host": "c", "task": "t3", "kind": "ok",
               "records": [{"check": "env.os", "status": "pass"}]})
    assert tally.take() == [] and tally.flush() == ["aifabric env: 1/1 hosts, 1 pass"]
    assert tally.flush() == []


def test_malformed_records_and_tool_text_stay_one_safe_line():
    lines = progress.stage_lines([
        {"e": "task", "host": "a", "task": "t", "kind": "ok", "records": [
            {"check": "gpu.ecc", "status": "fail", "reason": "\x1b[31mred\x07\nsecond line " + "x" * 300}]},
        {"e": "task", "host": "b", "task": "t", "kind": "ok", "records": [
            {"check": "gpu.ecc", "status": "bogus"}, "not a record", {"status": "pass"}]},
    ])
    assert lines == ["aifabric gpu: 2/2 hosts, 1 fail, 1 error (b: status 'bogus' is not a status)"]
    only_a = progress.stage_lines([{"e": "task", "host": "a", "task": "t", "kind": "ok", "records": [
        {"check": "gpu.ecc", "status": "fail", "reason": "\x1b[31mred\x07\nsecond line " + "x" * 300}]}])
    assert only_a[0].startswith("aifabric gpu: 1/1 hosts, 1 fail (a: [31mred second line xxx")
    assert len(only_a[0]) < 160 and only_a[0].isprintable()


ANY = st.recursive(st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=20),
                   lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
                   max_leaves=12)
RECORD = st.fixed_dictionaries({}, optional={
    "check": st.sampled_from(["env.os", "gpu.gemm_bf16", "nccl.all_reduce", "rdma.ib_write_lat", "env.task", "x"])
    | ANY, "status": st.sampled_from(["pass", "warn", "fail", "error", "skip"]) | ANY, "reason": ANY,
    "host": ANY, "metrics": st.dictionaries(st.sampled_from(["tflops", "busbw_max_gbyte_s", "lat_typical_us"]),
                                            ANY, max_size=2) | ANY,
    "params": st.fixed_dictionaries({"hosts": st.lists(st.sampled_from(["a", "b", "z"]), max_size=3) | ANY}) | ANY})
ENTRY = st.fixed_dictionaries({"host": st.sampled_from(["a", "b", "c"]), "task": st.sampled_from(["t1", "t2"]),
                               "kind": st.sampled_from(["ok", "failed", "ignored", "skipped", "unreachable", "?"])},
                              optional={"records": st.lists(RECORD | ANY, max_size=4) | ANY, "unreachable": ANY})


@hypothesis.settings(max_examples=300, deadline=None)
@hypothesis.given(st.lists(ENTRY | ANY, max_size=8), st.booleans())
def test_any_entries_give_lines_and_never_raise(entries, known):
    tally = progress.Tally()
    tally.play(["a", "b"] if known else None)
    tally.start("t1")
    for entry in entries:
        tally.add(entry)
    lines = tally.take() + tally.flush()
    for line in lines:
        assert line.startswith("aifabric ") and " hosts" in line and line.isprintable()
    stages = [line.split(":")[0] for line in lines]
    assert len(stages) <= 2 * len(set(stages))      # at most one line per stage of each of the two tasks
