# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What import mode returns is bounded, and says what was cut (issue 34 rule 6).

Before: a 13 MB nccl-tests import (a real capture's table repeated, 109,244 rows) gave a 29 MB record (every row in
``series``), which Ansible carried back as the task result. Here a real capture's rows repeated to 20,000 rows (a
smaller file: the same cut, in a unit test's time).
"""

from __future__ import annotations

import json
import os
import re

from ansible_collections.aifabric.acceptance.plugins.module_utils import imports
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import nccl_test as nccl_tests
from ansible_collections.aifabric.acceptance.tests.unit.helpers import parser_fixture

CAPTURE = os.path.join(parser_fixture(), "nccl_tests", "h200x2-nccl-tests-2.19.6", "all_reduce_g2.txt")


def repeated(path, rows_wanted):
    with open(CAPTURE, encoding="utf-8") as handle:
        lines = handle.read().splitlines()
    rows = [i for i, line in enumerate(lines) if re.match(r"^\s+\d+\s+\d+\s+float", line)]
    body = lines[rows[0]:rows[-1] + 1]
    times = rows_wanted // len(body) + 1
    with open(path, "w", encoding="utf-8") as handle:
        handle.write("\n".join(lines[:rows[0]] + body * times + lines[rows[-1] + 1:]) + "\n")
    return len(body) * times


def test_a_huge_import_keeps_a_bounded_series_and_says_so(tmp_path):
    path = str(tmp_path / "all_reduce_huge.txt")
    total = repeated(path, 20000)
    (record,) = nccl_tests.from_output(path, {"collective": "all_reduce"})
    (whole,) = nccl_tests.from_output(CAPTURE, {"collective": "all_reduce"})
    assert record["status"] == whole["status"] == "pass"
    assert len(record["series"]) == imports.MAX_IMPORT_SERIES_ROWS
    assert record["facts"]["series_rows_total"] == total
    assert "kept the first %d of %d" % (imports.MAX_IMPORT_SERIES_ROWS, total) in record["facts"]["series_cut"]
    assert dict(record["metrics"], sizes_count=None) == dict(whole["metrics"], sizes_count=None)
    assert record["metrics"]["sizes_count"] == total        # the headline was read from every row
    assert len(json.dumps(record)) < 2 * 1024 * 1024


def test_a_normal_import_is_returned_whole():
    (record,) = nccl_tests.from_output(CAPTURE, {"collective": "all_reduce"})
    assert "series_cut" not in record["facts"] and len(record["series"]) > 20
