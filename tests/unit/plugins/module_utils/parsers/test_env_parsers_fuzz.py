# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fuzzing of the env_probe parsers: mutated REAL captures; only ParseError may escape."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import ParseError
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import nvidia_smi, rdma, system
from ansible_collections.aifabric.acceptance.tests.unit.plugins.module_utils.parsers.mutations import mutated as mutated_text
from ansible_collections.aifabric.acceptance.tests.unit.helpers import parser_fixture

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = parser_fixture()


def read(rel):
    with open(os.path.join(FIXTURES, rel), encoding="utf-8") as handle:
        return handle.read()


def _csv(text):
    return nvidia_smi.gpus_from_query(nvidia_smi.parse_query_csv(text, nvidia_smi.QUERY_FIELDS))


def _csv_header(text):
    return nvidia_smi.gpus_from_query(nvidia_smi.parse_query_csv(text))


def _topo(text):
    topo = nvidia_smi.parse_topo(text)
    return nvidia_smi.nvlink_peers(topo), nvidia_smi.gpu_nic_affinity(topo)


def _cmdline(text):
    return system.parse_cmdline(text)


# (parser, real captures it is fuzzed with)
TARGETS = {
    "xml": (nvidia_smi.parse_xml, ["nvidia_smi/driver580-h100-80gb-hbm3-q-x.xml", "nvidia_smi/driver580-h200x2-q-x.xml"]),
    "csv": (_csv, ["nvidia_smi/driver580-h100-query-gpu-27fields-noheader-nounits.csv"]),
    "csv_header": (_csv_header, [
        "nvidia_smi/driver580-h100-query-gpu-27fields-header-units.csv",
        "nvidia_smi/query-gpu-csv-2x3090-util-percent-units.txt", "nvidia_smi/query-gpu-csv-a4000-pstate.txt"]),
    "topo": (_topo, [
        "nvidia_smi/driver580-h100-topo-m-1gpu.txt", "nvidia_smi/h200x2-nccl-tests-2.19.6/nvidia_smi_topo.txt",
        "nvidia_smi/topo-m-dgx1-8xV100-hybrid-cube-mesh-tabs.txt",
        "nvidia_smi/topo-m-old-driver-nic-columns-named-mlx5-legend-switch-wording.txt",
        "nvidia_smi/topo-m-8gpu-nv12-10nic-nic-legend-tabs.txt",
        "nvidia_smi/topo-m-1gpu-1nic-spaces-nic-legend-sglang-env.txt"]),
    "nvlink": (nvidia_smi.parse_nvlink_status, ["nvidia_smi/driver580-h200x2-nvlink-s.txt"]),
    "show_gids": (rdma.parse_show_gids, [
        "show_gids/" + n for n in sorted(os.listdir(os.path.join(FIXTURES, "show_gids"))) if n.endswith(".txt")]),
    "ibdev2netdev": (rdma.parse_ibdev2netdev, [
        "ibdev2netdev/" + n for n in sorted(os.listdir(os.path.join(FIXTURES, "ibdev2netdev"))) if n.endswith(".txt")]),
    "ibstat": (rdma.parse_ibstat, ["misc/ibstat-cx4-mlx5-eth-active-and-ib-down.txt",
                                   "misc/ibstat-mlx4-cx3-2port-ib-eth-tmux-border.txt"]),
    "os_release": (system.parse_os_release, ["misc/ubuntu2404-h100vm-os-release.txt", "misc/debian12-testbed-os-release.txt"]),
    "cpuinfo": (system.parse_cpuinfo, ["misc/ubuntu2404-h100vm-cpuinfo.txt", "misc/debian12-testbed-cpuinfo.txt"]),
    "meminfo": (system.parse_meminfo, ["misc/ubuntu2404-h100vm-meminfo.txt", "misc/debian12-testbed-meminfo.txt"]),
    "cmdline": (_cmdline, ["misc/ubuntu2404-h100vm-cmdline.txt", "misc/debian12-testbed-cmdline.txt"]),
    "modules": (system.parse_modules, ["misc/ubuntu2404-h100vm-modules.txt"]),
    "ldconfig": (system.parse_ldconfig, ["misc/ubuntu2404-h100vm-ldconfig-p.txt"]),
    "probe": (system.parse_probe, ["misc/ubuntu2404-h100vm-python-probe-torch-venv.txt",
                                   "misc/ubuntu2404-h100vm-python-probe-system-python.txt",
                                   "misc/debian12-testbed-pyenv-2.7.18-python-probe.txt"]),
    "pip_freeze": (system.parse_pip_freeze, ["misc/ubuntu2404-h100vm-pip-freeze.txt"]),
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
            func(read(rel))  # the unmutated capture parses


@settings(max_examples=1500, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated())
def test_mutated_captures_raise_only_parse_error(case):
    name, text = case
    try:
        TARGETS[name][0](text)
    except ParseError as exc:
        assert str(exc)


@settings(max_examples=300, deadline=None)
@given(st.sampled_from(sorted(TARGETS)), st.text(max_size=300))
def test_random_text_raises_only_parse_error(name, text):
    try:
        TARGETS[name][0](text)
    except ParseError:
        pass


# sysfs model: random damage to the real-value tree of test_rdma.CX4_SYSFS style dictionaries
SYSFS_KEYS = ("mlx5_0/fw_ver", "mlx5_0/ports/1/state", "mlx5_0/ports/1/rate", "mlx5_0/ports/1/gids/0",
              "mlx5_0/ports/1/gid_attrs/types/0", "mlx5_0/device/net/ens11f0/dev_port", "mlx5_0/ports/x/state",
              "mlx5_0/ports/1/gids/y", "/abs", "", "mlx5_0/device/net/ens11f0/dev_id")


@settings(max_examples=300, deadline=None)
@given(st.dictionaries(st.sampled_from(SYSFS_KEYS), st.one_of(st.none(), st.text(max_size=40)), max_size=8))
def test_build_hcas_raises_only_parse_error(files):
    try:
        rdma.build_hcas(files)
    except ParseError:
        pass
