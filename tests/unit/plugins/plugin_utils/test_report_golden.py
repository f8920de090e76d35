# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The report files of fixed inputs, byte for byte (issue 20: the controller pipeline is rebuilt, its output is not).

Inputs: the real run's results.json (fixtures/h200x2-acceptance-results.json) re-analysed, and the same records
with a synthetic 8-host RDMA ring and its confirmation pass (a bad node, a bad link: attribution, counted records,
the heat map). The expected files in fixtures/golden/ were written by this module's ``main``; a change of the
report's content is a deliberate change of these files (run this module as a script to rewrite them), and
results.json is also compared field by field so that a difference names the record and field.
"""
from __future__ import annotations

import glob
import json
import os
import subprocess
import sys
import tarfile

import pytest

from ansible_collections.aifabric.acceptance.plugins.plugin_utils import fleet, history, history_index, render, report_html
from ansible_collections.aifabric.acceptance.tests.unit.helpers import listing
from ansible_collections.aifabric.acceptance.tests.unit.plugins.plugin_utils import synthetic_fleet

HERE = os.path.dirname(os.path.abspath(__file__))

RESULTS = os.path.join(HERE, "fixtures", "h200x2-acceptance-results.json")
GOLDEN = os.path.join(HERE, "fixtures", "golden")
CASES = ("h200x2", "h200x2-ring8")


def report_of(case):
    data, plain_json = fleet.read_results(RESULTS)     # as the report action reads it
    if case == "h200x2-ring8":
        plain_json = False
        built = synthetic_fleet.build(8, "ring", confirm=True)     # a ring alone condemns no node: the pass does
        run = dict(data["run"], hosts_targeted=data["run"]["hosts_targeted"] + built.hosts)
        data = dict(data, run=run, records=data["records"] + [dict(r) for r in built.records])
    report = fleet.reanalyze(data, plain_json=plain_json)
    report["history"] = {"db": None, "deltas": []}
    return report


def rendered(case):
    report = report_of(case)
    return dict((fmt, render.render_format(fmt, report)) for fmt in sorted(render.FORMATS))


def _golden_path(case, fmt):
    return os.path.join(GOLDEN, "%s.%s" % (case, render.FORMATS[fmt]))


def _diff_records(expected, got):
    problems = []
    if len(expected) != len(got):
        problems.append("%d records, expected %d" % (len(got), len(expected)))
    for index, (want, have) in enumerate(zip(expected, got)):
        for key in sorted(set(want) | set(have)):
            if want.get(key) != have.get(key):
                problems.append("record %d (%s %s) field %s: %r != %r" % (
                    index, want.get("host"), want.get("check"), key, have.get(key), want.get(key)))
    return problems


@pytest.mark.parametrize("case", CASES)
def test_results_json_field_by_field(case):
    with open(_golden_path(case, "json"), encoding="utf-8") as handle:
        expected = json.load(handle)
    got = json.loads(rendered(case)["json"])
    assert _diff_records(expected["records"], got["records"]) == []
    for key in sorted(set(expected) | set(got)):
        assert got.get(key) == expected.get(key), key


@pytest.mark.parametrize("case", CASES)
def test_report_files_byte_identical(case):
    files = rendered(case)
    for fmt, text in files.items():
        with open(_golden_path(case, fmt), encoding="utf-8", newline="") as handle:
            assert text == handle.read(), "%s of %s differs" % (render.FORMATS[fmt], case)


def test_the_built_collection_ships_the_report_assets(tmp_path):
    """report.html's CSS, script and template are package files: ``ansible-galaxy collection build`` keeps them."""
    root = os.path.abspath(os.path.join(HERE, "..", "..", "..", ".."))
    galaxy = os.path.join(os.path.dirname(sys.executable), "ansible-galaxy")
    subprocess.run([galaxy, "collection", "build", "--output-path", str(tmp_path), root], check=True,
                   capture_output=True, timeout=300)
    with tarfile.open(glob.glob(str(tmp_path / "*.tar.gz"))[0]) as tar:
        names = set(tar.getnames())
    for name in listing(report_html.ASSETS):
        assert "plugins/plugin_utils/report_assets/" + name in names


def main():
    import tempfile     # pylint: disable=import-outside-toplevel
    import pathlib      # pylint: disable=import-outside-toplevel
    with tempfile.TemporaryDirectory() as tmp, open(os.path.join(GOLDEN, "index.html"), "w", encoding="utf-8",
                                                    newline="") as handle:
        handle.write(index_page(pathlib.Path(tmp)))
    for case in CASES:
        for fmt, text in rendered(case).items():
            with open(_golden_path(case, fmt), "w", encoding="utf-8", newline="") as handle:
                handle.write(text)


def index_page(tmp_path):
    """reports/index.html of a history store holding both golden runs (history_index.render_index)."""
    db = str(tmp_path / "h.sqlite")
    for case, started in (("h200x2", None), ("h200x2-ring8", "2026-11-22T15:30:00Z")):
        report = report_of(case)
        run = dict(report["run"])
        if started:
            run.update(run_id=run["run_id"][:-6] + "ring08", started=started, ended=started)
        history.record_run(db, run, report["records"])
    return history_index.render_index(history.run_index(db), None, "h.sqlite")


def test_history_index_page_byte_identical(tmp_path):
    with open(os.path.join(GOLDEN, "index.html"), encoding="utf-8", newline="") as handle:
        assert index_page(tmp_path) == handle.read()


if __name__ == "__main__":
    main()
