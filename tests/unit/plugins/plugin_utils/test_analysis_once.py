# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The analyses run once per new data (issue 20): a run_summary step's analysis is stored in the run's stream and
the report at the end of the run takes it while no later entry changed the records; the report is the same as a
fresh analysis would give. The records are SYNTHETIC bookkeeping (hosts, statuses) as in test_run_stream.py."""
from __future__ import annotations

import copy

import pytest

from ansible_collections.aifabric.acceptance.plugins.plugin_utils import analysis_pipeline, fleet

from ansible_collections.aifabric.acceptance.tests.unit.plugins.plugin_utils.test_run_stream import feed, ok, rec

STARTED = "2026-11-23T10:00:00Z"
ENDED = "2026-11-23T10:05:00Z"


@pytest.fixture
def runs(monkeypatch):
    """How often each analysis of the pipeline ran."""
    counts = {}

    def counted(func):
        name = analysis_pipeline._analysis_name(func)   # pylint: disable=protected-access

        def wrapper(records, config):
            counts[name] = counts.get(name, 0) + 1
            return func(records, config)
        wrapper.NAME = name
        return wrapper

    monkeypatch.setattr(analysis_pipeline, "ANALYSES", [counted(f) for f in analysis_pipeline.ANALYSES])
    return counts


def stream(tmp_path):
    live = fleet.Collector()
    live.open_stream(str(tmp_path / "records.jsonl"), run={"run_id": "r1", "started": STARTED},
                     config={"drift_pins": {}})
    feed(live)
    return live


def final_report(path, fresh=False):
    """What the callback builds at the end of the run (plugins/callback/fleet_report.py _write)."""
    collected = fleet.Collector.load(path)
    run = dict(collected.run, ended=ENDED)
    prior = None if fresh else collected.analysis
    return fleet.build_report(collected.records(), run, dict(collected.config), prior=prior)


@pytest.mark.usefixtures("frozen_clock")
def test_one_run_summary_and_the_report_analyse_once_and_agree_with_a_fresh_analysis(tmp_path, runs):
    live = stream(tmp_path)
    fleet.run_summary(live.stream_path, required_checks={"n2": ["gpu.*"]})
    assert set(runs.values()) == {1} and len(runs) == len(analysis_pipeline.ANALYSES)
    end = final_report(live.stream_path)
    assert set(runs.values()) == {1}                  # taken from the stream, not made again
    again, _collected = fleet.run_summary(live.stream_path)
    assert set(runs.values()) == {1}                  # a second summary of the same data neither
    fresh = final_report(live.stream_path, fresh=True)
    assert set(runs.values()) == {2}
    assert end == fresh
    assert again["findings"] == fresh["findings"] and again["summary"] == fresh["summary"]


@pytest.mark.usefixtures("frozen_clock")
def test_new_records_after_the_summary_are_analysed(tmp_path, runs):
    live = stream(tmp_path)
    fleet.run_summary(live.stream_path)
    live.task_ok("n1", "t9", "probe", ok())                   # no record, on a host that has records: same data
    assert fleet.Collector.load(live.stream_path).analysis is not None
    live.task_skipped("n4", "t9", "probe")                    # a host without records: its coverage record changes
    assert fleet.Collector.load(live.stream_path).analysis is None
    live.task_ok("n2", "t10", "probe", ok(rec("gpu.ecc", "fail", target="1")))
    end = final_report(live.stream_path)
    assert set(runs.values()) == {2}
    assert end == final_report(live.stream_path, fresh=True)
    assert any(r["check"] == "gpu.ecc" and r["host"] == "n2" for r in end["records"])


def test_a_line_written_between_the_summary_read_and_its_analysis_is_not_lost(tmp_path, runs, monkeypatch):
    live = stream(tmp_path)
    real = fleet.append_entry

    def late_task_first(path, entry):
        if entry["e"] == "analysis":     # another host's task result lands while the summary analyses
            live.task_ok("n2", "t11", "probe", ok(rec("gpu.ecc", "fail", target="2")))
        real(path, entry)

    monkeypatch.setattr(fleet, "append_entry", late_task_first)
    fleet.run_summary(live.stream_path)
    assert fleet.Collector.load(live.stream_path).analysis is None
    end = final_report(live.stream_path)
    assert set(runs.values()) == {2}
    assert any(r["check"] == "gpu.ecc" and r["target"] == "2" for r in end["records"])


def test_other_config_or_other_analyses_analyse_again(tmp_path, runs):
    live = stream(tmp_path)
    fleet.run_summary(live.stream_path)
    collected = fleet.Collector.load(live.stream_path)
    run = dict(collected.run, ended=ENDED)
    config = dict(collected.config, drift_pins={"driver_version": "580"})
    fleet.build_report(collected.records(), run, config, prior=copy.deepcopy(collected.analysis))
    assert set(runs.values()) == {2}
    fleet.build_report(collected.records(), run, dict(collected.config), analyses=[], prior=collected.analysis)
    assert set(runs.values()) == {2}
