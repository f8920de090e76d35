# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pipeline gives each analysis its records with the measured ones first (analysis_records.Records): an analysis finds
them as a prefix instead of asking every record. Each analysis must conclude the same from a plain list (its
callers outside the pipeline: the tests, the summary) as from the pipeline's Records."""
from __future__ import annotations

import os

import pytest

from ansible_collections.aifabric.acceptance.plugins.plugin_utils import analysis_pipeline, analysis_records, fleet
from ansible_collections.aifabric.acceptance.tests.unit.plugins.plugin_utils import synthetic_fleet

HERE = os.path.dirname(os.path.abspath(__file__))
LOADED = os.path.join(HERE, "fixtures", "h200x2-judgement", "loaded.results.json")


def _fleet_records():
    """The real loaded 2x H200 run (a slow GPU) with its analysis records, and a synthetic 8-host ring (a bad node,
    a bad link) measured under it."""
    data = fleet.load_results(LOADED)
    return data["records"] + synthetic_fleet.build(8, "ring").records, data["run"]["required_checks"]


@pytest.mark.usefixtures("frozen_clock")
def test_every_analysis_concludes_the_same_from_the_pipelines_records_and_a_plain_list():
    records, required = _fleet_records()
    out = analysis_pipeline.strip_analysis(records)
    config = {"required_checks": required}
    seen = []
    for func in analysis_pipeline.ANALYSES:
        given = analysis_records.Records(out)
        given.measured_count = len(analysis_pipeline.strip_analysis(out))
        assert analysis_records.measured(given) == [r for r in out if not analysis_records.is_analysis_record(r)]
        from_index, from_list = func(given, config), func(list(out), config)
        assert from_index == from_list
        seen.append(len(from_index[0]))
        out = out + [fleet.normalize(r, r["host"]) for r in from_index[0]]
    assert sum(seen) > 0       # the analyses added records (peers, hardware, attribution, required): a real test


def test_measured_of_a_plain_list_walks_it():
    records, _required = _fleet_records()
    got = analysis_records.measured(records)
    assert got == [r for r in records if not analysis_records.is_analysis_record(r)]
    assert 0 < len(got) < len(records)


def test_a_report_keeps_its_split_and_gives_it_up_when_its_records_change():
    """fleet.build_report's records know where the measured ones end: the summary and the files take the two parts
    (analysis_records.measured / added) as a walk would find them; once a record is appended they walk again."""
    records, required = _fleet_records()
    report = fleet.build_report(records, {"run_id": "split", "started": "2026-11-22T10:00:00Z"},
                                {"required_checks": required})
    got = report["records"]
    walked_measured = [r for r in got if not analysis_records.is_analysis_record(r)]
    walked_added = [r for r in got if analysis_records.is_analysis_record(r)]
    assert walked_measured and walked_added
    assert got.measured_count == len(walked_measured)
    assert analysis_records.measured(got) == walked_measured
    assert analysis_records.added(got) == walked_added
    late = fleet.normalize(dict(walked_measured[0], check="env.late"), walked_measured[0]["host"])
    got.append(late)        # a measured record after the analyses' (tests, callers that add one): no prefix any more
    assert analysis_records.measured(got) == walked_measured + [late]
    assert analysis_records.added(got) == walked_added
