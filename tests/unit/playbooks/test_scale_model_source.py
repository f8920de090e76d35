# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One source for the measured per-host costs of the stages: playbooks/vars/scale_model.yml (written by
bench/e2e_model.py --publish from its fit) is what the run's forks warning reads (playbooks/check_vars.yml) and what
docs/scale-model.md publishes; the warning holds no figure of its own."""

from __future__ import annotations

import os
import re

import yaml

from ansible_collections.aifabric.acceptance.tests.unit.helpers import read

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, os.pardir))
TABLE = os.path.join(ROOT, "playbooks", "vars", "scale_model.yml")
HEADING = "### The per-host costs the run's warning uses"
ROW = re.compile(r"^\| `(\w+)` \| ([0-9.]+) \| ([0-9.]+) \|$")


def published():
    return yaml.safe_load(read(TABLE))["__check_scale_model"]


def test_the_page_publishes_the_table_the_warning_reads():
    page = read(os.path.join(ROOT, "docs", "scale-model.md"))
    assert HEADING in page, "docs/scale-model.md has no section %r" % HEADING
    section = page.split(HEADING, 1)[1].split("\n#", 1)[0]
    rows = dict((m.group(1), (float(m.group(2)), float(m.group(3))))
                for m in (ROW.match(line.strip()) for line in section.splitlines()) if m)
    table = published()
    assert rows == dict((tag, (table["host_s_per_wave"][tag], table["main_s_per_host"][tag]))
                        for tag in table["host_s_per_wave"]), rows
    assert table["measured"] in section


def test_the_warning_reads_the_table_and_holds_no_figure_of_its_own():
    text = read(os.path.join(ROOT, "playbooks", "check_vars.yml"))
    play = yaml.safe_load(text)[0]
    assert play["vars_files"] == ["vars/scale_model.yml"]
    task = [t for t in play["tasks"] if t["name"].startswith("Say what the forks cost")][0]
    assert "__check_scale_model.host_s_per_wave" in task["vars"]["__check_per_wave_s"]
    assert "__check_scale_model.main_s_per_host" in task["vars"]["__check_main_s"]
    # no seconds written into the task: every figure comes from the table
    assert not re.search(r"\b\d+\.\d+\b", yaml.safe_dump(task)), task


def test_every_stage_the_playbooks_tag_has_a_cost():
    table = published()
    assert sorted(table["host_s_per_wave"]) == sorted(table["main_s_per_host"]) == sorted(
        ["probe", "gpu", "rdma", "nccl_screen"])
    assert all(v > 0 for v in table["host_s_per_wave"].values())
