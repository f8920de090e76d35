# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Prometheus text exposition, parsed back with prometheus_client's own parser (the format's reference).

The fleet: real nccl-tests records (real_records) on three hosts, one host slowed to 80 %
(the fleet-relative analysis fails it), plus real perftest pair records with awkward label values.
"""

from __future__ import annotations

import calendar
import hashlib
import os

import hypothesis
import hypothesis.strategies as st
import pytest

from ansible_collections.aifabric.acceptance.plugins.module_utils import results
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import exports, fleet
from ansible_collections.aifabric.acceptance.tests.unit.plugins.plugin_utils import real_records

parser = pytest.importorskip("prometheus_client.parser", reason="prometheus_client (requirements-test.txt) is needed")

HOSTS = ("gpu-1", "gpu-2", "gpu-3", "gpu-4")


def fleet_report():
    records = []
    for host in HOSTS:
        for rec in real_records.nccl_records(host):
            if host == "gpu-3":
                rec["metrics"]["busbw_max_gbyte_s"] = round(rec["metrics"]["busbw_max_gbyte_s"] * 0.8, 5)
            records.append(rec)
    odd = results.error("env.os", 'tool said "no"\nand \\ quit', host='we"ird\\host')
    records.append(odd)
    run = fleet.run_metadata("0123456789abcdef", "2026-11-22T10:00:00Z", "2026-11-22T10:05:00Z", list(HOSTS) + ['we"ird\\host'])
    return fleet.build_report(records, run)


def families(text):
    return dict((f.name, f) for f in parser.text_string_to_metric_families(text))


def test_fleet_file_parses_back_with_every_sample():
    report = fleet_report()
    got = families(exports.prometheus(report))
    assert set(got) == {"aifabric_run_info", "aifabric_run_timestamp_seconds", "aifabric_host_status",
                        "aifabric_check_status", "aifabric_metric"}
    assert all(f.type == "gauge" for f in got.values())
    hosts = dict((s.labels["host"], s.value) for s in got["aifabric_host_status"].samples)
    assert hosts == {"gpu-1": 1, "gpu-2": 1, "gpu-3": 3, "gpu-4": 1, 'we"ird\\host': 4}    # pass, fail, error
    status = dict(((s.labels["host"], s.labels["check"]), s.value) for s in got["aifabric_check_status"].samples)
    assert status[("gpu-3", "nccl.all_reduce.fleet")] == 3 and status[("gpu-1", "nccl.all_reduce")] == 1
    assert status[('we"ird\\host', "env.os")] == 4
    metric = dict(((s.labels["host"], s.labels["check"], s.labels["metric"]), s.value)
                  for s in got["aifabric_metric"].samples)
    assert metric[("gpu-1", "nccl.all_reduce", "busbw_max_gbyte_s")] == 345.68839          # the real figure
    assert metric[("gpu-3", "nccl.all_reduce", "busbw_max_gbyte_s")] == round(345.68839 * 0.8, 5)
    assert all(set(s.labels) == {"host", "check", "target", "peer", "metric"} for s in got["aifabric_metric"].samples)
    # analysis records carry verdicts, not measurements: no duplicate metric samples
    assert not any(k[1].endswith(".fleet") for k in metric)
    run_info = got["aifabric_run_info"].samples[0]
    assert run_info.labels == {"run_id": "0123456789abcdef", "verdict": "error"} and run_info.value == 1
    ended = calendar.timegm((2026, 11, 22, 10, 5, 0, 0, 0, 0))      # run.ended 2026-11-22T10:05:00Z
    assert got["aifabric_run_timestamp_seconds"].samples[0].value == ended


def test_every_series_is_unique():
    """node_exporter rejects a textfile with a repeated series: two records with one key give one sample."""
    report = fleet_report()
    report["records"].append(dict(report["records"][0], status="fail"))
    text = exports.prometheus(report)
    series = [line.rsplit(" ", 1)[0] for line in text.splitlines() if not line.startswith("#")]
    assert len(series) == len(set(series))
    status = families(text)["aifabric_check_status"].samples
    first = report["records"][0]
    assert [s.value for s in status if s.labels["host"] == first["host"] and s.labels["check"] == first["check"]] == [3]


def test_one_file_per_host(tmp_path):
    report = fleet_report()
    paths = exports.write_prometheus(report, str(tmp_path / "textfile"), per_host=True)
    assert sorted(os.path.basename(p) for p in paths) == [
        "aifabric_gpu-1.prom", "aifabric_gpu-2.prom", "aifabric_gpu-3.prom", "aifabric_gpu-4.prom",
        "aifabric_we_ird_host-%s.prom" % hashlib.sha256(b'we"ird\\host').hexdigest()[:8]]
    assert exports.host_file_name("a/b") != exports.host_file_name("a_b") == "aifabric_a_b.prom"
    for path in paths:
        assert os.path.realpath(path).startswith(os.path.realpath(str(tmp_path)) + os.sep)
        with open(path, encoding="utf-8") as handle:
            got = families(handle.read())
        hosts = set(s.labels["host"] for s in got["aifabric_check_status"].samples)
        assert len(hosts) == 1
    assert not [n for n in os.listdir(str(tmp_path / "textfile")) if ".tmp" in n]


@hypothesis.settings(max_examples=200, deadline=None)
@hypothesis.given(
    host=st.text(min_size=1, max_size=30),
    target=st.one_of(st.none(), st.text(max_size=30)),
    reason=st.text(max_size=50),
    value=st.one_of(st.integers(min_value=-10 ** 12, max_value=10 ** 12),
                    st.floats(allow_nan=False, allow_infinity=False, width=64)))
def test_any_label_text_and_value_parse_back_unchanged(host, target, value, reason):
    rec = results.make("rdma.ib_write_bw", "pass", reason=reason or None, host=host, target=target,
                       metrics={"bw_avg_gbit_s": value})
    report = {"run": {"run_id": "r", "ended": "2026-11-22T10:05:00Z"},
              "summary": {"worst_status": "pass", "hosts": [{"host": host, "status": "pass"}]}, "records": [rec]}
    got = families(exports.prometheus(report))
    sample = got["aifabric_metric"].samples[0]
    assert sample.labels == {"host": host, "check": "rdma.ib_write_bw", "target": target or "", "peer": "",
                             "metric": "bw_avg_gbit_s"}
    assert sample.value == float(value)
    assert [s.labels["host"] for s in got["aifabric_host_status"].samples] == [host]


# ------------------------------------------------------------------ hostile records and destinations (issue 34)

LEGACY_METRIC_NAME = "[a-zA-Z_:][a-zA-Z0-9_:]*"     # the exposition format's metric and label names
LEGACY_LABEL_NAME = "[a-zA-Z_][a-zA-Z0-9_]*"


def one_record_report(**fields):
    """A report of ONE record as a node may send it (not through results.make: its word is not checked there)."""
    rec = dict({"check": "rdma.ib_write_bw", "status": "pass", "host": "h", "target": None, "peer": None,
                "metrics": {"bw_avg_gbit_s": 1.0}}, **fields)
    return {"run": {"run_id": "r", "ended": "2026-11-22T10:05:00Z"},
            "summary": {"worst_status": "pass", "hosts": [{"host": rec["host"], "status": "pass"}]}, "records": [rec]}


def test_family_and_label_names_are_the_formats_own():
    import re
    for name, _help, labels in exports.FAMILIES:
        assert re.fullmatch(LEGACY_METRIC_NAME, name), name
        assert all(re.fullmatch(LEGACY_LABEL_NAME, label) for label in labels), labels


def test_quotes_backslashes_and_newlines_in_every_label_are_escaped():
    nasty = 'x"} 1\naifabric_host_status{host="forged"} 0\n\\'
    report = one_record_report(host=nasty, check=nasty, target=nasty, peer=nasty, metrics={nasty: 2.0})
    text = exports.prometheus(report)
    assert "forged" not in [s.labels.get("host") for f in families(text).values() for s in f.samples]
    sample = families(text)["aifabric_metric"].samples[0]
    assert sample.labels == {"host": nasty, "check": nasty, "target": nasty, "peer": nasty, "metric": nasty}
    assert len([line for line in text.splitlines() if line.startswith("aifabric_host_status")]) == 1


def test_text_that_is_not_utf8_is_written_as_replacement_characters(tmp_path):
    """A lone surrogate (undecodable tool output, kept by surrogateescape) broke the whole textfile: UnicodeEncodeError."""
    report = one_record_report(host="node\udcff", target="mlx5_\udc80")
    paths = exports.write_prometheus(report, str(tmp_path / "textfile"))
    with open(paths[0], encoding="utf-8") as handle:
        sample = families(handle.read())["aifabric_metric"].samples[0]
    assert sample.labels["host"] == "node\ufffd" and sample.labels["target"] == "mlx5_\ufffd"


def test_a_number_no_float_can_hold_is_left_out_not_a_crash():
    """An integer metric of 10**400 (JSON carries any integer) raised OverflowError and lost the whole textfile."""
    report = one_record_report(metrics={"bw_avg_gbit_s": 10 ** 400, "bw_peak_gbit_s": 2 ** 70})
    got = families(exports.prometheus(report))
    assert [(s.labels["metric"], s.value) for s in got["aifabric_metric"].samples] == [("bw_peak_gbit_s", 2.0 ** 70)]


def test_a_link_planted_at_the_file_is_replaced_never_followed(tmp_path):
    directory = tmp_path / "textfile"
    directory.mkdir()
    victim = tmp_path / "victim"
    victim.write_text("keep\n")
    os.symlink(str(victim), str(directory / exports.FLEET_FILE))
    exports.write_prometheus(one_record_report(), str(directory))
    assert victim.read_text() == "keep\n" and not os.path.islink(str(directory / exports.FLEET_FILE))


def test_a_host_name_never_leaves_the_directory(tmp_path):
    report = one_record_report(host="../../etc/cron.d/x")
    paths = exports.write_prometheus(report, str(tmp_path / "textfile"), per_host=True)
    assert [os.path.dirname(p) for p in paths] == [str(tmp_path / "textfile")]
    assert os.listdir(str(tmp_path)) == ["textfile"]


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to make a directory another user owns")
def test_a_directory_another_user_owns_or_can_write_is_refused(tmp_path):
    import pwd
    from ansible_collections.aifabric.acceptance.plugins.module_utils import statedir
    foreign = tmp_path / "foreign"
    foreign.mkdir()
    os.chown(str(foreign), pwd.getpwnam("nobody").pw_uid, -1)
    with pytest.raises(statedir.StateError, match="owned by uid"):
        exports.write_prometheus(one_record_report(), str(foreign))
    shared = tmp_path / "shared"
    shared.mkdir()
    os.chmod(str(shared), 0o777)
    with pytest.raises(statedir.StateError, match="writable by group or others"):
        exports.write_prometheus(one_record_report(), str(shared))
    assert os.listdir(str(foreign)) == [] and os.listdir(str(shared)) == []
