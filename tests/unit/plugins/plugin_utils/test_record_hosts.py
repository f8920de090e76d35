# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A record names only a host this run targets for it (issue 18 item 6): the rule of fleet.Collector._admitted.

A task's records name the host that ran it, or (a run_once task) a host of its play. Anything else (an outsider,
a fellow host of the run from a task that does not act for it) becomes an ``env.task`` error of the sender that
names the refused host; before, the record was kept under the host it named, so one node added records, and
hosts, to the report. The records are SYNTHETIC (bookkeeping only: which host); the whole-fleet test over real
SSH hosts is tests/integration/test_record_hosts.py.
"""

from __future__ import annotations

from ansible_collections.aifabric.acceptance.plugins.plugin_utils import fleet


def rec(host=None, check="env.os", status="pass"):
    out = {"check": check, "status": status}
    if status != "pass":
        out["reason"] = "synthetic %s" % status
    if host is not None:
        out["host"] = host
    return out


def verdicts(collector):
    summary = fleet.build_report(collector.records(), {"run_id": "r1", "started": "2026-11-25T10:00:00Z"})["summary"]
    return dict((h["host"], h["status"]) for h in summary["hosts"])


def test_records_for_an_outsider_and_for_a_fellow_host_are_errors_of_the_sender():
    col = fleet.Collector()
    col.target(["n1", "n2", "n3"])
    for host in ("n1", "n2", "n3"):
        col.task_ok(host, "t1", "probe", {"results": [rec()]})
    col.task_ok("n2", "t2", "custom", {"results": [rec("intruder-9", "gpu.ecc", "fail"), rec("n3", "gpu.ecc", "fail"),
                                                   rec("n2", "gpu.ecc")]})
    assert verdicts(col) == {"n1": "pass", "n2": "error", "n3": "pass"}
    refused = sorted((r["params"]["refused_host"], r["reason"]) for r in col.records() if r["check"] == "env.task")
    assert [name for name, _why in refused] == ["intruder-9", "n3"]
    assert "record for host 'intruder-9', refused: it is not a host this run targets" in refused[0][1]
    assert "record for host 'n3', refused: it is another host of this run" in refused[1][1]
    for r in col.records():
        if r["check"] == "env.task":    # the sender's, naming the task; raw keeps the refused record
            assert r["host"] == "n2" and r["target"] == "custom", r
            assert '"host": "%s"' % r["params"]["refused_host"] in r["raw"], r


def test_a_pair_record_of_the_senders_link_may_name_the_other_end_of_this_run():
    """The RDMA sweep's record of a pair whose client died (host = the dead client, peer = the server that wrote
    it) is kept when the controller scheduled that pair with the sender as its server (issue 34): it is the link's
    record, and the dead host gets its error. A pair record naming an outsider, or a link the sender is no end of, is
    still refused."""
    col = fleet.Collector()
    col.target(["n1", "n2", "n3"])
    col.task_ok("n1", "t0", "start", {}, action="aifabric.acceptance.perftest_sweep",
                args={"phase": "run", "run_id": "r1", "schedule": [[0, "ib_write_bw", 0, "server", "n3"]]})
    edge = dict(rec("n3", "rdma.ib_write_bw", "error"), peer="n1", target="mlx5_0")
    not_mine = dict(rec("n3", "rdma.ib_write_bw", "error"), peer="n2", target="mlx5_0")
    outsider = dict(rec("intruder-9", "rdma.ib_write_bw", "error"), peer="n1", target="mlx5_0")
    col.task_ok("n1", "t1", "sweep", {"results": [edge, not_mine, outsider]})
    kept = [r for r in col.records() if r["check"] == "rdma.ib_write_bw"]
    assert [(r["host"], r["peer"]) for r in kept] == [("n3", "n1")]
    refused = sorted(r["params"]["refused_host"] for r in col.records() if r["check"] == "env.task")
    assert refused == ["intruder-9", "n3"]


def test_a_run_once_launcher_keeps_its_records_for_the_hosts_of_its_play_only():
    col = fleet.Collector()
    col.target(["n1", "n2", "n3", "n4"])
    play = ["n1", "n2", "n3"]
    col.task_ok("n1", "t1", "nccl", {"results": [rec("n2", "nccl.all_reduce"), rec("n3", "nccl.all_reduce", "fail"),
                                                 rec("n4", "nccl.all_reduce")]}, participants=play)
    out = col.records()
    kept = sorted((r["host"], r["status"]) for r in out if r["check"] == "nccl.all_reduce")
    assert kept == [("n2", "pass"), ("n3", "fail")]
    assert [r["params"]["hosts"] for r in out if r["check"] == "nccl.all_reduce"] == [play, play]
    assert [r["params"]["refused_host"] for r in out if r["check"] == "env.task"] == ["n4"]     # not of its play


def test_a_kubernetes_namespace_is_named_by_a_run_once_task_only():
    col = fleet.Collector()
    col.target(["gpu-node-01", "gpu-node-02"])
    col.task_ok("gpu-node-01", "t1", "preflight", {"results": [rec("namespace/default", "k8s.pending_pod", "fail")]},
                participants=["gpu-node-01", "gpu-node-02"])
    col.task_ok("gpu-node-02", "t2", "custom", {"results": [rec("namespace/default", "k8s.pending_pod", "fail"),
                                                            rec("namespace/../etc", "k8s.pending_pod")]},
                participants=["gpu-node-01", "gpu-node-02"])
    col.task_ok("gpu-node-01", "t3", "not run_once", {"results": [rec("namespace/kube-system", "k8s.pending_pod")]})
    by_host = sorted((r["host"], r["check"], (r["params"] or {}).get("refused_host")) for r in col.records())
    assert by_host == [("gpu-node-01", "env.task", "namespace/kube-system"),
                       ("gpu-node-02", "env.task", "namespace/../etc"),
                       ("namespace/default", "k8s.pending_pod", None), ("namespace/default", "k8s.pending_pod", None)]


def test_the_stream_and_the_run_summary_see_the_same_refusal(tmp_path):
    path = str(tmp_path / "records.jsonl")
    col = fleet.Collector()
    col.open_stream(path, run={"run_id": "r1", "started": "2026-11-25T10:00:00Z"})
    col.target(["n1", "n2"])
    col.task_ok("n1", "t1", "probe", {"results": [rec(), rec("elsewhere")]})
    col.task_failed("n2", "t1", "probe", {"msg": "boom", "results": [rec("n1", "gpu.ecc", "fail")]})
    col.task_skipped("n2", "t2", "loop", {"results": [{"ansible_loop_var": "item", "skipped": True,
                                                      "results": [rec("n1", "gpu.ecc", "fail")]}]})
    col.close_stream()
    again = fleet.Collector.load(path)
    assert sorted((r["host"], r["check"], r["status"]) for r in again.records()) == [
        ("n1", "env.os", "pass"), ("n1", "env.task", "error"), ("n2", "env.task", "error"), ("n2", "env.task", "error")]
    assert sorted(r["params"]["refused_host"] for r in again.records() if r["check"] == "env.task") == [
        "elsewhere", "n1", "n1"]
