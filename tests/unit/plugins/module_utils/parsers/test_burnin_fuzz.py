# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fuzzing of the burn-in parsers and of the soak and copy-bandwidth records on mutated REAL captures: the parsers
raise only ParseError, the adapters' ``records`` never raise and every record they return is valid (an unreadable
output is an ``error`` record)."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.aifabric.acceptance.plugins.module_utils import results
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import ParseError
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import burnin
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import (
    Context, copy_bandwidth, defaults, gpu_soak as soak)
from ansible_collections.aifabric.acceptance.tests.unit.helpers import parser_fixture
from ansible_collections.aifabric.acceptance.tests.unit.plugins.module_utils.parsers.mutations import mutated as mutated_text

FIXTURES = parser_fixture()


def read(rel):
    with open(os.path.join(FIXTURES, rel), encoding="utf-8") as handle:
        return handle.read()


def _samples(text):
    out = {"problems": []}
    return burnin.parse_samples(text.splitlines(), out)


def _soak_records(text):
    for record in soak.records(text, Context(params=dict(defaults(soak.OPTIONS), duration_s=60), rc=0)):
        assert results.validate(record) == [], record


def _copy_records(text):
    for record in copy_bandwidth.records(text, Context(params=defaults(copy_bandwidth.OPTIONS), rc=0)):
        assert results.validate(record) == [], record


SOAKS = ["burnin/h100-soak_healthy.txt", "burnin/h100-soak_loaded.txt", "burnin/h100-soak_capped.txt",
         "burnin/h100-soak_20s_current_worker.txt"]
NVB = ["nvbandwidth/" + n for n in sorted(os.listdir(os.path.join(FIXTURES, "nvbandwidth"))) if n.endswith(".txt")]
# (function, real captures, raises ParseError on a damaged capture?)
TARGETS = {
    "soak": (burnin.parse_soak, SOAKS),
    "samples": (_samples, ["burnin/h100-query-gpu-lms1000-units.csv", "burnin/h100-query-gpu-lms1000-nounits.csv"]),
    "copy": (burnin.parse_copy, ["burnin/h100-copy.txt"]),
    "nvbandwidth": (burnin.parse_nvbandwidth, [n for n in NVB if "assert" not in n]),
    "replays": (burnin.parse_pcie_replays, ["burnin/h100-nvidia_smi_q.txt"]),
    "xids": (lambda text: burnin.parse_xids(text.splitlines()), ["dmesg/forum-2019-gtx550ti-xid32.txt"]),
    "soak_records": (_soak_records, SOAKS),
    "copy_records": (_copy_records, ["burnin/h100-copy.txt", "burnin/h100-copy_current_worker.txt"] + NVB),
}
CASES = [(name, rel) for name in sorted(TARGETS) for rel in TARGETS[name][1]]


@st.composite
def mutated(draw):
    name, rel = draw(st.sampled_from(CASES))
    return name, draw(mutated_text(read(rel)))


def test_every_target_has_real_captures():
    for name, (func, files) in TARGETS.items():
        assert files, name
        for rel in files:
            func(read(rel))


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutated_captures_raise_only_parse_error(case):
    name, text = case
    try:
        TARGETS[name][0](text)
    except ParseError as exc:
        assert not name.endswith("_records"), "records() raised %s" % exc
        assert str(exc)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(sorted(TARGETS)), st.text(max_size=300))
def test_random_text_raises_only_parse_error(name, text):
    try:
        TARGETS[name][0](text)
    except ParseError:
        assert not name.endswith("_records")
