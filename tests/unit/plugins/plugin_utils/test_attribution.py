# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

import itertools

from ansible_collections.aifabric.acceptance.plugins.module_utils import results
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import analysis_records, attribution

CHECK = "rdma.ib_write_bw"


def bw_record(host, peer, value, target="mlx5_0", status="pass", check=CHECK):
    if status == "error":
        return results.error(check, "Couldn't connect to %s:18515" % peer, host=host, peer=peer, target=target,
                             raw="Couldn't connect")
    return results.make(check, status, reason=None if status == "pass" else "low", host=host, peer=peer,
                        target=target, metrics={"bw_avg_gbit_s": value, "msg_size_bytes": 65536})


def full_mesh(n, bad_nodes=(), bad_links=(), base=390.0, target="mlx5_0"):
    hosts = ["n%02d" % i for i in range(n)]
    recs = []
    for a, b in itertools.combinations(hosts, 2):
        value = base
        if a in bad_nodes or b in bad_nodes:
            value = base * 0.5
        if frozenset((a, b)) in set(frozenset(x) for x in bad_links):
            value = base * 0.6
        recs.append(bw_record(b, a, value + (hash((a, b)) % 7) * 0.1, target=target))
    return hosts, recs


def test_clean_fleet_has_no_findings_and_every_host_passes():
    recs = (full_mesh(8))[1]
    new, findings = attribution.analyze(recs, {})
    assert findings == []
    # one host verdict per host of the judged matrix, all pass
    assert sorted((r["host"], r["check"], r["status"]) for r in new) == \
        [("n%02d" % i, CHECK + ".node", "pass") for i in range(8)]
    assert all(r["metrics"]["pairs_count"] == 7 and r["metrics"]["low_pairs_count"] == 0 for r in new)
    assert all(r["facts"]["measured_check"] == CHECK and r["target"] == "mlx5_0" for r in new)


def test_bad_node_and_bad_link_are_told_apart():
    recs = (full_mesh(8, bad_nodes=["n03"], bad_links=[("n01", "n06")]))[1]
    new, findings = attribution.analyze(recs, {})
    kinds = sorted((f["kind"], tuple(f["hosts"])) for f in findings)
    assert kinds == [("link", ("n01", "n06")), ("node", ("n03",))]
    node = [f for f in findings if f["kind"] == "node"][0]
    assert node["check"] == CHECK and node["target"] == "mlx5_0"
    assert node["evidence"]["low_pairs"] == 7 and node["evidence"]["pairs"] == 7
    link = [f for f in findings if f["kind"] == "link"][0]
    assert link["evidence"]["needs_confirmation"] is False
    for item in findings:
        assert analysis_records.validate_finding(item) == []
    for rec in new:
        assert results.validate(rec) == []
        assert rec["tool"] == {"name": "fleet-analysis", "version": "attribution"}
        assert analysis_records.is_analysis_record(rec)
    verdicts = dict(((r["host"], r["check"]), r["status"]) for r in new if r["status"] != "pass")
    # the node fails; both ends of the link get a warn naming the link (the nodes themselves pass)
    assert verdicts == {("n03", CHECK + ".node"): "fail", ("n01", CHECK + ".link"): "warn",
                        ("n06", CHECK + ".link"): "warn"}
    links = [r for r in new if r["check"].endswith(".link")]
    assert sorted((r["host"], r["peer"]) for r in links) == [("n01", "n06"), ("n06", "n01")]
    assert all("suspect link n01 <-> n06" in r["reason"] for r in links)
    assert len([r for r in new if r["check"].endswith(".node")]) == 8


def test_measured_records_are_not_rewritten():
    recs = (full_mesh(6, bad_nodes=["n02"]))[1]
    before = [dict(r) for r in recs]
    attribution.analyze(recs, {})
    assert recs == before


def test_rails_and_checks_are_separate():
    rail0 = (full_mesh(6, bad_nodes=["n01"], target="mlx5_0"))[1]
    rail1 = (full_mesh(6, target="mlx5_1"))[1]
    findings = (attribution.analyze(rail0 + rail1, {}))[1]
    assert [(f["kind"], f["target"], f["hosts"]) for f in findings] == [("node", "mlx5_0", ["n01"])]


def test_error_pairs_count_as_low_and_server_records_are_ignored():
    hosts, recs = full_mesh(6)
    recs = [r for r in recs if "n04" not in (r["host"], r["peer"])]
    for other in hosts:
        if other != "n04":
            recs.append(bw_record("n04", other, None, status="error"))
            server = bw_record(other, "n04", 1.0)
            server["check"] = CHECK + ".server"
            recs.append(server)
    findings = (attribution.analyze(recs, {}))[1]
    assert [(f["kind"], f["hosts"]) for f in findings] == [("node", ["n04"])]


def test_single_matching_needs_confirmation_then_confirmation_resolves():
    # one random matching: every host has one edge, so a low edge cannot be attributed
    recs = [bw_record("a", "b", 390.0), bw_record("c", "d", 150.0), bw_record("e", "f", 391.0)]
    new, findings = attribution.analyze(recs, {})
    assert [(f["kind"], f["hosts"], f["evidence"]["needs_confirmation"]) for f in findings] == \
        [("link", ["c", "d"], True)]
    # the low pair's ends need confirmation (warn); the hosts of good pairs pass
    assert sorted((r["host"], r["status"]) for r in new) == [
        ("a", "pass"), ("b", "pass"), ("c", "warn"), ("d", "warn"), ("e", "pass"), ("f", "pass")]
    assert all("needs confirmation" in r["reason"] for r in new if r["status"] == "warn")
    suspects = attribution.suspects(findings)
    assert suspects == ["c", "d"]
    rounds = attribution.confirmation_rounds(["a", "b", "c", "d", "e", "f"], suspects, per_suspect=2)
    for rnd in rounds:
        busy = [h for p in rnd for h in p]
        assert len(busy) == len(set(busy))
    pairs = [p for rnd in rounds for p in rnd]
    assert sorted(p[1] for p in pairs) == ["c", "c", "d", "d"]
    assert all(p[0] in ("a", "b", "e", "f") for p in pairs)
    # second pass: c is bad with everybody, d is fine with everybody -> c is the node
    second = [bw_record(p[1], p[0], 150.0 if p[1] == "c" else 389.0) for p in pairs]
    findings2 = (attribution.analyze(recs + second, {}))[1]
    assert [(f["kind"], f["hosts"]) for f in findings2] == [("node", ["c"])]


def test_latency_direction_and_config():
    recs = []
    for a, b in itertools.combinations(["a", "b", "c", "d", "e"], 2):
        value = 9.0 if "e" in (a, b) else 2.0
        recs.append(results.make("rdma.ib_write_lat", "pass", host=a, peer=b, target="mlx5_0",
                                 metrics={"lat_typical_us": value}))
    findings = (attribution.analyze(recs, {}))[1]
    assert [(f["kind"], f["hosts"]) for f in findings] == [("node", ["e"])]
    none = (attribution.analyze(recs, {"attribution_low_pct": 400}))[1]
    assert none == []


def test_skip_and_foreign_records_are_ignored():
    recs = [results.skip(CHECK, "no RDMA device", host="a", peer="b"),
            results.make("env.os", "pass", host="a"),
            {"not": "a record"}]
    assert attribution.analyze(recs, {}) == ([], [])


def test_error_only_pair_is_never_a_confirmed_link_and_is_retested():
    hosts, recs = full_mesh(6)
    recs = [r for r in recs if frozenset((r["host"], r["peer"])) != frozenset(("n01", "n02"))]
    recs.append(bw_record("n02", "n01", None, status="error"))
    new, findings = attribution.analyze(recs, {})
    assert [(f["kind"], f["hosts"], f["evidence"]["needs_confirmation"]) for f in findings] == \
        [("link", ["n01", "n02"], True)]
    warned = [r for r in new if r["status"] != "pass"]
    assert sorted(r["host"] for r in warned) == ["n01", "n02"]
    assert all("failed" in r["reason"] and r["status"] == "warn" for r in warned)
    assert attribution.retest_pairs(findings) == [["n01", "n02"]]
    rounds = attribution.confirmation_rounds(hosts, attribution.suspects(findings), per_suspect=1,
                                             retest=attribution.retest_pairs(findings))
    assert ["n01", "n02"] in [p for rnd in rounds for p in rnd]
    # the re-test measured the pair fine: the transient error no longer makes a finding
    after = (attribution.analyze(recs + [bw_record("n02", "n01", 390.0)], {}))[1]
    assert after == []


def test_noise_widens_the_bound():
    import random
    rng = random.Random(3)
    recs = []
    for a, b in itertools.combinations(["h%02d" % i for i in range(30)], 2):
        recs.append(bw_record(b, a, 390.0 + rng.gauss(0, 20.0)))
    findings = (attribution.analyze(recs, {}))[1]
    # sd 20 Gbit/s (5 % of line rate): a fixed 90 % bound would flag ~2.5 % of 435 pairs
    assert findings == []


def test_a_pair_below_its_own_floor_is_low_even_when_the_fleet_median_is_not():
    """A fleet uniformly below its floor is not healthy: every pair failed its expectation, so
    every node is a suspect (before: no finding at all, the raw fails alone judged the hosts)."""
    hosts, recs = full_mesh(6)
    failing = [results.make(CHECK, "fail", reason="bw_avg_gbit_s 390 < 396 expected minimum", host=r["host"],
                            peer=r["peer"], target=r["target"], metrics=r["metrics"]) for r in recs]
    new, findings = attribution.analyze(failing, {})
    assert sorted(f["hosts"][0] for f in findings if f["kind"] == "node") == hosts
    assert all(r["status"] == "fail" and "failed" in r["reason"] for r in new)


def test_one_pair_below_its_floor_between_healthy_ends_is_a_link():
    hosts, recs = full_mesh(6)
    out = []
    for r in recs:
        if frozenset((r["host"], r["peer"])) == frozenset(("n02", "n04")):
            r = results.make(CHECK, "fail", reason="bw_avg_gbit_s 385 < 386 expected minimum", host=r["host"],
                             peer=r["peer"], target=r["target"], metrics={"bw_avg_gbit_s": 385.0})
        out.append(r)
    new, findings = attribution.analyze(out, {})
    assert [(f["kind"], f["hosts"], f["evidence"]["needs_confirmation"]) for f in findings] == \
        [("link", ["n02", "n04"], False)]
    assert sorted((r["host"], r["status"]) for r in new if r["status"] != "pass") == [("n02", "warn"), ("n04", "warn")]


def test_a_failed_repeat_of_a_good_pair_keeps_the_pair_low():
    """Repeats: the worse measurement counts, with its own status (a good first run does not hide it)."""
    hosts, recs = full_mesh(6)
    recs.append(results.make(CHECK, "fail", reason="bw_avg_gbit_s 100 < 360", host="n02", peer="n01",
                             target="mlx5_0", metrics={"bw_avg_gbit_s": 100.0}))
    findings = attribution.analyze(recs, {})[1]
    assert [(f["kind"], f["hosts"], f["evidence"]["failed"]) for f in findings] == [("link", ["n01", "n02"], True)]


def test_a_node_whose_pairs_never_measured_anything_is_an_error_not_a_fail():
    """perftest missing on n04: every pair through it errored. The check could not run there (error), and the
    hosts it was paired with pass (their other pairs are good)."""
    hosts, recs = full_mesh(6)
    recs = [r for r in recs if "n04" not in (r["host"], r["peer"])]
    for other in hosts:
        if other != "n04":
            recs.append(results.error(CHECK, "ib_write_bw not found on PATH (install perftest)", host="n04",
                                      peer=other, target="mlx5_0"))
    new = attribution.analyze(recs, {})[0]
    verdicts = dict((r["host"], (r["status"], r["reason"])) for r in new if r["check"] == CHECK + ".node")
    assert verdicts["n04"] == ("error", "none of the 5 pairs of n04 on mlx5_0 measured anything: "
                                        "ib_write_bw not found on PATH (install perftest)")
    assert set(status for host, (status, _reason) in verdicts.items() if host != "n04") == {"pass"}
