# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report at fleet scale (issue 26 item 3): what bench/report_scale.py measures, and what made it cheaper.

- the benchmark's input: a real run's results.json replicated to N hosts, every record and series kept;
- the cyclic garbage collector is off while a report is read, analysed and written, and as it was afterwards;
- the report action's task result carries the first FINDINGS_RETURNED findings and their total (all of them are in
  results.json).
"""

from __future__ import annotations

import gc
import json
import os
import sys
import types

import pytest

from ansible_collections.aifabric.acceptance.plugins.action import report as report_action
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import fleet

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
sys.path.insert(0, os.path.join(ROOT, "bench"))
import report_scale  # noqa: E402  pylint: disable=wrong-import-position,import-error


def test_real_source_is_the_judgement_run_with_most_records_per_host():
    path = report_scale.real_source()
    assert os.path.dirname(path) == report_scale.JUDGEMENT
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    assert len(data["records"]) >= 40 and sum(1 for r in data["records"] if r.get("series")) >= 5


def test_replicated_results_keep_every_record_and_series_per_host(tmp_path):
    source = report_scale.real_source()
    measured = [r for r in fleet.load_results(source)["records"] if not r["check"].startswith("analysis.")]
    path = report_scale.replicated_results(source, 3, str(tmp_path))
    data = fleet.load_results(path)
    assert data["run"]["hosts_targeted"] == ["gpu0000", "gpu0001", "gpu0002"]
    for host in data["run"]["hosts_targeted"]:
        mine = [r for r in data["records"] if r["host"] == host and not r["check"].startswith("analysis.")]
        assert len(mine) == len(measured)
        assert [r["series"] for r in mine] == [r["series"] for r in measured]
    assert set(data["run"]["required_checks"]) <= set(data["run"]["hosts_targeted"]) | {"*"}


def test_no_cyclic_gc_restores_the_collector_state():
    assert gc.isenabled()
    with fleet.no_cyclic_gc():
        assert not gc.isenabled()
        with fleet.no_cyclic_gc():      # nested: the inner block leaves it off
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()
    with pytest.raises(ValueError):
        with fleet.no_cyclic_gc():
            raise ValueError("boom")
    assert gc.isenabled()
    gc.disable()
    try:
        with fleet.no_cyclic_gc():
            pass
        assert not gc.isenabled()       # off before: still off
    finally:
        gc.enable()


def test_report_functions_run_without_the_collector(monkeypatch, tmp_path):
    seen = []
    real = fleet.analyze

    def spy(*args, **kwargs):
        seen.append(gc.isenabled())
        return real(*args, **kwargs)

    monkeypatch.setattr(fleet, "analyze", spy)
    data, plain_json = fleet.read_results(report_scale.real_source())
    fleet.reanalyze(data, plain_json=plain_json)
    assert seen == [False] and gc.isenabled()


def _action_args(src, dest):
    args = dict((name, spec.get("default")) for name, spec in report_action.ARGUMENT_SPEC.items())
    args.update(src=src, dest=dest)
    return args


def test_report_action_returns_the_first_findings_and_their_total(tmp_path):
    path = report_scale.replicated_results(report_scale.real_source(), 20, str(tmp_path))
    with open(path, encoding="utf-8") as handle:
        total = len(json.load(handle)["findings"])
    assert total > report_action.FINDINGS_RETURNED     # the real run has findings on every host
    warnings = []
    fake = types.SimpleNamespace(_task=types.SimpleNamespace(check_mode=False),
                                 _display=types.SimpleNamespace(warning=warnings.append))
    result = report_action.ActionModule._report(fake, _action_args(path, str(tmp_path / "out")), {})
    assert result["findings_total"] == total
    with open(os.path.join(str(tmp_path / "out"), "results.json"), encoding="utf-8") as handle:
        written = json.load(handle)["findings"]
    assert result["findings"] == written[:report_action.FINDINGS_RETURNED] and len(written) == total
