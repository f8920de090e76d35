# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""One byte that is not UTF-8 costs neither the records nor the task (issue 18, item 8).

A real module run: env_probe.main() with the real AnsibleModule.run_command, a fake ``nvidia-smi`` on PATH that
prints the real H100 captures (parsers/fixtures/nvidia_smi) with one 0xff byte put into the GPU's product name,
and an environment variable holding a 0xff byte. Before the fix the GPU group became an "internal error" record
and the module result carried lone surrogates (U+DCFF), which the controller refuses ("Refusing to deserialize
an invalid UTF8 string value"): the whole task failed and every record of the node was lost.
"""

from __future__ import annotations

import json
import os

import pytest
from ansible.module_utils.testing import patch_module_args
from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules.module_harness import Exit, patch_exits

from ansible_collections.aifabric.acceptance.plugins.module_utils import results, runner
from ansible_collections.aifabric.acceptance.plugins.modules import env_probe
from ansible_collections.aifabric.acceptance.tests.unit.helpers import parser_fixture

HERE = os.path.dirname(os.path.abspath(__file__))
NVIDIA = parser_fixture("nvidia_smi")
CAPTURES = {"-q": "driver580-h100-80gb-hbm3-q-x.xml", "topo": "driver580-h100-topo-m-1gpu.txt",
            "nvlink": "driver580-h100-nvlink-s-empty.txt"}
NAME = b"<product_name>NVIDIA H100 80GB HBM3</product_name>"


def fake_nvidia_smi(tmp_path):
    """bin/nvidia-smi printing the capture its first argument asks for; the XML with 0xff in the product name."""
    for arg, name in CAPTURES.items():
        with open(os.path.join(NVIDIA, name), "rb") as handle:
            data = handle.read()
        if arg == "-q":
            assert data.count(NAME) == 1
            data = data.replace(NAME, NAME.replace(b"NVIDIA ", b"NVIDIA \xff"))
        (tmp_path / ("out" + arg.strip("-"))).write_bytes(data)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    script = bindir / "nvidia-smi"
    script.write_text('#!/bin/sh\nexec cat "%s/out$(echo "$1" | tr -d -)"\n' % tmp_path)
    script.chmod(0o755)
    return str(bindir)


def strict_utf8(value):
    """What the controller does with a module's result: it must be valid UTF-8 (no lone surrogates)."""
    return json.dumps(value, ensure_ascii=False).encode("utf-8")


def test_a_0xff_byte_in_nvidia_smi_output_and_in_an_env_var(tmp_path, monkeypatch):
    patch_exits(monkeypatch)
    monkeypatch.setenv("PATH", fake_nvidia_smi(tmp_path) + os.pathsep + os.environ["PATH"])
    monkeypatch.setenv("AIF_PROBE_BYTES", os.fsdecode(b"a\xffb"))     # the process environment holds b"a\xffb"
    with patch_module_args({"groups": ["env", "gpu"], "env_vars": ["AIF_PROBE_*"]}):
        with pytest.raises(Exit) as exc:
            env_probe.main()
    result = exc.value.kwargs
    assert not exc.value.failed
    strict_utf8(result)
    records = result["results"]
    assert all(results.validate(r) == [] for r in records)
    assert results.count(records)["error"] == 0, [r["reason"] for r in records if r["status"] == "error"]
    by_check = dict((r["check"], r) for r in records)
    env = by_check["env.env_vars"]
    assert env["status"] == "pass" and env["facts"]["env"] == {"AIF_PROBE_BYTES": "a\ufffdb"}
    assert env["facts"]["decode_note"] == "environment variable AIF_PROBE_BYTES had 1 undecodable byte(s), " \
                                          "replaced with U+FFFD"
    inventory, device = by_check["gpu.inventory"], by_check["gpu.device"]
    assert inventory["status"] == "pass" and inventory["facts"]["gpu_model"] == "NVIDIA \ufffdH100 80GB HBM3"
    assert device["status"] == "pass" and device["facts"]["serial"] == "1752524009576"
    note = "output of nvidia-smi -q -x had 1 undecodable byte(s), replaced with U+FFFD"
    assert inventory["facts"]["decode_note"] == note and device["facts"]["decode_note"] == note
    assert "decode_note" not in by_check["env.os"]["facts"]


def test_decode_counts_each_byte_that_is_not_utf8():
    assert runner.decode(b"ok \xe2\x82\xac") == ("ok \u20ac", 0)
    assert runner.decode(b"a\xffb\xe2\x82") == ("a\ufffdb\ufffd\ufffd", 3)     # a cut 3-byte sequence: 2 bytes
    assert runner.decode("a\udcffb") == ("a\ufffdb", 1)                        # what surrogateescape left in a str
    assert runner.decode(None) == ("", 0)
