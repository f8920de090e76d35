# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The filters aifabric.acceptance.group_screen (the next round of the screen from its records so far) and
group_screen_rounds (the bound on its rounds): outcomes come from the screen's records only (pass and warn pass,
fail and error fail, skip is none), each test carries the marker its record will carry, bad input is named."""

from __future__ import annotations

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.aifabric.acceptance.plugins.filter.group_screen import FilterModule, group_screen
from ansible_collections.aifabric.acceptance.plugins.filter.group_screen_rounds import group_screen_rounds
from ansible_collections.aifabric.acceptance.plugins.module_utils import results
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import group_screen as planner

HOSTS = ["a", "b", "c", "d", "e", "f"]


def rec(test, status, check="nccl.all_reduce"):
    return results.make(check, status, reason=None if status == "pass" else "x", host=test["hosts"][0],
                        params={"argv": ["mpirun"], "env": {planner.MARKER_ENV: test["marker"]}})


def test_round_zero_is_the_screen_groups_with_their_markers():
    tests = group_screen(HOSTS, records=[], group_size=3)
    assert [(t["hosts"], t["purpose"], t["round"], t["index"]) for t in tests] == [
        (["a", "b", "c"], "screen", 0, 0), (["d", "e", "f"], "screen", 0, 1)]
    assert tests[1]["marker"] == "round=0 purpose=screen hosts=d e f evidence=2 margin_pct=5"
    legacy = group_screen(HOSTS, records=[], group_size=3, evidence=1, margin_pct=0)
    assert legacy[1]["marker"] == "round=0 purpose=screen hosts=d e f"      # one run per verdict: as before
    assert planner.parse_marker(tests[1]["marker"])["rules"] == {"evidence": 2, "margin_pct": 5.0}
    assert FilterModule().filters()["group_screen"] is group_screen


def test_the_next_round_follows_from_the_records_and_skip_and_other_records_are_no_outcome():
    first = group_screen(HOSTS, group_size=3)
    records = [rec(first[0], "pass"), rec(first[1], "error"),
               results.make("nccl.all_reduce", "fail", reason="not a screen test", host="d"),   # no marker
               rec(first[1], "fail", check="nccl.alltoall")]                                     # another check
    tests = group_screen(HOSTS, records=records, group_size=3, check="nccl.all_reduce", round=1)
    # the failing group's first half; the passing group again (a host is known good after two passes)
    assert [(t["hosts"], t["purpose"]) for t in tests] == [(["d", "e"], "bisect"), (["a", "b", "c"], "recheck")]
    assert tests[0]["marker"] == "round=1 purpose=bisect hosts=d e evidence=2 margin_pct=5"
    skipped = [rec(first[0], "pass"), rec(first[1], "skip")]
    assert [t["hosts"] for t in group_screen(HOSTS, records=skipped, group_size=3, round=1)] == [
        ["d", "e", "f"], ["a", "b", "c"]]
    warned = [rec(first[0], "warn"), rec(first[1], "pass")]
    assert [t["purpose"] for t in group_screen(HOSTS, records=warned, group_size=3, round=1)] == ["recheck"] * 2
    assert group_screen(HOSTS, records=warned, group_size=3, round=1, evidence=1) == []    # every host known good
    again = warned + [rec(t, "pass") for t in group_screen(HOSTS, records=warned, group_size=3, round=1)]
    assert group_screen(HOSTS, records=again, group_size=3, round=2) == []                # every host known good


def test_topology_and_a_host_outside_the_screen():
    topo = {"a": "leaf1", "b": "leaf2", "c": "leaf1", "d": "leaf2"}
    assert [t["hosts"] for t in group_screen(["a", "b", "c", "d"], topology=topo, group_size=2)] == [["a", "c"], ["b", "d"]]
    other = rec({"hosts": ["x", "y"], "marker": planner.marker(0, "screen", ["x", "y"])}, "fail")
    assert [t["hosts"] for t in group_screen(["a", "b"], records=[other])] == [["a", "b"]]     # not this screen's


@pytest.mark.parametrize("kwargs, words", [
    ({"group_size": 1}, "group_size must be 0"), ({"group_size": "x"}, "group_size must be an integer"),
    ({"records": "x"}, "records must be a list"), ({"topology": ["a"]}, "topology must map"),
    ({"round": -1}, "round must be >= 0"), ({"evidence": 0}, "evidence must be >= 1"),
    ({"margin_pct": 100}, "margin_pct must be 0 to 100"), ({"margin_pct": "x"}, "margin_pct must be a number")])
def test_bad_arguments_are_named(kwargs, words):
    with pytest.raises(AnsibleFilterError, match=words):
        group_screen(HOSTS, **kwargs)


def test_bad_hosts_are_named():
    for hosts in ("a,b", ["a", "a"], ["a b", "c"], [1, 2]):
        with pytest.raises(AnsibleFilterError, match="aifabric.acceptance.group_screen"):
            group_screen(hosts)


def test_the_bound_on_the_rounds():
    assert group_screen_rounds(8, evidence=1) == planner.max_rounds(8, evidence=1) == 2 + 2 + 5   # groups of 3: log2 3 -> 2
    assert group_screen_rounds(1000, group_size=32, evidence=1) == 2 + 5 + 5
    assert group_screen_rounds(8) == planner.max_rounds(8) == 2 + 2 + 5 + 4     # the second run of evidence: 4 more
    with pytest.raises(AnsibleFilterError):
        group_screen_rounds(8, evidence=0)
    with pytest.raises(AnsibleFilterError):
        group_screen_rounds("many")


# ------------------------------------------------------------------ an attacker's input (issue 34, rule 7)

def test_records_naming_hosts_outside_the_screen_change_nothing():
    """A forged record of a failing test over a screen host and hosts outside the inventory is no outcome."""
    plain = group_screen(HOSTS, group_size=3)
    forged = rec({"hosts": ["a", "evil"], "marker": planner.marker(0, "screen", ["a", "evil"])}, "fail")
    assert group_screen(HOSTS, records=[forged, "junk", None, 7], group_size=3) == plain


@pytest.mark.parametrize("hosts", [
    ["groups=x", "b"],                   # read back as the marker's groups word: was a ValueError, not a filter error
    ["a=b", "c"], ["a\x00", "b"], ["a\x1b[2J", "b"], ["a\u2028b", "c"], ["n" * 256, "b"], ["", "b"], [None, "b"],
    [["a"], "b"], [{"a": 1}, "b"], [True, "b"],
])
def test_a_host_name_the_marker_cannot_carry_is_refused(hosts):
    with pytest.raises(AnsibleFilterError, match="aifabric.acceptance.group_screen: .*host name"):
        group_screen(hosts)


@pytest.mark.parametrize("kwargs, words", [
    ({"group_size": 10 ** 30}, "group_size must be"), ({"group_size": 2.5}, "group_size must be an integer"),
    ({"group_size": True}, "group_size must be an integer"), ({"round": float("inf")}, "round must be an integer"),
    ({"round": 10 ** 30}, "round must be"), ({"round": float("nan")}, "round must be an integer"),
    ({"topology": {"a": ["leaf"]}}, "topology"), ({"topology": {"a": {"x": 1}}}, "topology"),
    ({"topology": {"a": True}}, "topology"), ({"topology": {1: "leaf"}}, "topology"),
    ({"topology": {"a": "l" * 256}}, "topology"), ({"check": ["nccl.all_reduce"]}, "check must be"),
])
def test_absurd_sizes_and_non_string_names_are_refused(kwargs, words):
    with pytest.raises(AnsibleFilterError, match=words):
        group_screen(HOSTS, **kwargs)


def test_a_whole_number_given_as_text_or_float_is_accepted():
    assert group_screen(HOSTS, group_size="3", round=2.0) == group_screen(HOSTS, group_size=3, round=2)


@pytest.mark.parametrize("args", [(10 ** 300,), (float("inf"),), (4, 0, 10 ** 400), (True,), (4, 2.5), (-1,)])
def test_the_bound_on_the_rounds_refuses_absurd_numbers(args):
    with pytest.raises(AnsibleFilterError, match="aifabric.acceptance.group_screen_rounds"):
        group_screen_rounds(*args)
