# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""nvidia-smi parsers on real captures: goldens, figures read by eye, XML safety, cross-checks."""

from __future__ import annotations

import json
import os
import sys

import pytest

from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import ParseError
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import nvidia_smi
from ansible_collections.aifabric.acceptance.tests.unit.helpers import parser_fixture

HERE = os.path.dirname(os.path.abspath(__file__))
FIXTURES = parser_fixture("nvidia_smi")
GOLDEN = os.path.join(FIXTURES, "golden")
# The 15 fields of driver580-h100-query-gpu-noheader-nounits.csv (see PROVENANCE.md).
H100_15_FIELDS = (
    "index,name,serial,pci.bus_id,driver_version,memory.total,ecc.mode.current,"
    "ecc.errors.uncorrected.volatile.total,ecc.errors.uncorrected.aggregate.total,persistence_mode,"
    "pcie.link.gen.current,pcie.link.gen.max,pcie.link.width.current,pcie.link.width.max,"
    "clocks_event_reasons.active").split(",")


def _parsed(name):
    """Whether a collection parser reads this capture (the ``nvidia-smi -q`` text captures are kept for the record
    of what the tool printed; nothing in the collection reads that layout)."""
    return name.endswith(".xml") or any(word in name for word in ("topo", "nvlink", "query-gpu"))


def _files():
    out = []
    for root, dirs, files in os.walk(FIXTURES):
        dirs[:] = [d for d in dirs if d != "golden"]
        for name in files:
            if name != "PROVENANCE.md" and _parsed(name):
                out.append(os.path.relpath(os.path.join(root, name), FIXTURES))
    return sorted(out)


FILES = _files()


def read(rel):
    with open(os.path.join(FIXTURES, rel), encoding="utf-8") as handle:
        return handle.read()


def parse_fixture(rel, text=None):
    """Dispatch a fixture to its parser by what the file holds (name conventions of PROVENANCE.md)."""
    text = read(rel) if text is None else text
    name = os.path.basename(rel)
    if name.endswith(".xml"):
        return nvidia_smi.parse_xml(text)
    if "topo" in name:
        return nvidia_smi.parse_topo(text)
    if "nvlink" in name:
        return nvidia_smi.parse_nvlink_status(text)
    if "query-gpu" in name:
        fields = None
        if "27fields-noheader" in name:
            fields = nvidia_smi.QUERY_FIELDS
        elif "noheader" in name:
            fields = H100_15_FIELDS
        return nvidia_smi.gpus_from_query(nvidia_smi.parse_query_csv(text, fields))
    raise AssertionError("no parser reads %s" % rel)


def parse_or_error(rel):
    try:
        return parse_fixture(rel)
    except ParseError as exc:
        return {"parse_error": str(exc)}


def golden_path(rel):
    return os.path.join(GOLDEN, rel + ".parsed.json")


def test_fixture_set():
    # 4 captures of 2026-11-22 (H100) + 3 more H100 files + 3 of the 2x H200 VM + 8 shared
    # + 2 H200x2 (shared) + 2 public NIC-legend topo files, less the 5 ``nvidia-smi -q`` text captures (not read)
    assert len(FILES) == 17


@pytest.mark.parametrize("rel", FILES, ids=FILES)
def test_matches_golden(rel):
    with open(golden_path(rel), encoding="utf-8") as handle:
        golden = json.load(handle)
    assert json.loads(json.dumps(parse_or_error(rel))) == golden


# --- figures read by eye from the captures --------------------------------------------


def test_h100_xml_figures():
    data = nvidia_smi.parse_xml(read("driver580-h100-80gb-hbm3-q-x.xml"))
    assert data["driver_version"] == "580.159.04"
    assert data["cuda_version"] == "13.0"
    assert data["attached_gpus"] == 1
    gpu = data["gpus"][0]
    assert gpu["index"] == 0
    assert gpu["name"] == "NVIDIA H100 80GB HBM3"
    assert gpu["serial"] == "1752524009576"
    assert gpu["bus_id"] == "00000000:00:06.0"
    assert gpu["memory_total_mib"] == 81559
    assert gpu["ecc_mode_current"] == "Enabled"
    assert gpu["ecc_volatile_uncorrectable"] == 0
    assert gpu["ecc_aggregate_correctable"] == 0
    assert gpu["retired_pages_pending"] is None  # N/A on Hopper (row remapping replaces page retirement)
    assert gpu["remapped_rows_pending"] is False and gpu["remapped_rows_failure"] is False
    assert gpu["clocks_event_reasons"]["gpu_idle"] is True
    assert gpu["clocks_event_reasons"]["hw_slowdown"] is False
    assert (gpu["pcie_gen_current"], gpu["pcie_gen_max"]) == (5, 5)
    assert (gpu["pcie_width_current"], gpu["pcie_width_max"]) == (16, 16)
    assert gpu["power_draw_w"] == 74.46 and gpu["power_limit_w"] == 700.0
    assert gpu["temperature_c"] == 42
    assert gpu["fabric_state"] is None  # N/A: a VM with one GPU, no NVSwitch fabric


def test_csv_header_and_noheader_agree_and_match_the_xml_fields():
    header = nvidia_smi.gpus_from_query(nvidia_smi.parse_query_csv(read("driver580-h100-query-gpu-27fields-header-units.csv")))
    bare = nvidia_smi.gpus_from_query(nvidia_smi.parse_query_csv(
        read("driver580-h100-query-gpu-27fields-noheader-nounits.csv"), nvidia_smi.QUERY_FIELDS))
    assert header["driver_version"] == bare["driver_version"] == "580.159.04"
    one, two = header["gpus"][0], bare["gpus"][0]
    assert one["power_draw_w"] == 114.07 and two["power_draw_w"] == 111.75  # 'W' stripped, a second apart
    for key in nvidia_smi.GPU_KEYS:
        if key != "power_draw_w":
            assert one[key] == two[key], key
    assert one["uuid"] == "GPU-ee17be5e-dcd8-4578-ddd6-49176a9e38ab"
    assert one["memory_total_mib"] == 81559 and one["power_limit_w"] == 700.0
    assert one["retired_pages_pending"] is None  # [N/A]
    assert one["clocks_event_reasons"]["gpu_idle"] is True  # 0x0000000000000001
    assert not any(v for k, v in one["clocks_event_reasons"].items() if k != "gpu_idle")


def test_h200x2_xml_and_csv_of_the_same_machine():
    xml = nvidia_smi.parse_xml(read("driver580-h200x2-q-x.xml"))
    csv = nvidia_smi.gpus_from_query(nvidia_smi.parse_query_csv(read("driver580-h200x2-query-gpu-27fields-header-units.csv")))
    assert xml["attached_gpus"] == 2 and [g["bus_id"] for g in xml["gpus"]] == ["00000000:00:06.0", "00000000:00:07.0"]
    assert [g["fabric_state"] for g in xml["gpus"]] == ["Completed", "Completed"]
    assert [g["ecc_aggregate_correctable"] for g in xml["gpus"]] == [0, 40]
    for one, two in zip(xml["gpus"], csv["gpus"]):
        for key in ("index", "name", "serial", "uuid", "bus_id", "vbios_version", "persistence_mode", "memory_total_mib",
                    "ecc_mode_current", "ecc_mode_pending", "ecc_volatile_uncorrectable", "ecc_aggregate_uncorrectable",
                    "ecc_volatile_correctable", "ecc_aggregate_correctable", "pcie_gen_max", "pcie_width_current",
                    "pcie_width_max", "mig_mode", "compute_mode", "power_limit_w"):
            assert one[key] == two[key], key


def test_nvlink_status():
    status = nvidia_smi.parse_nvlink_status(read("driver580-h200x2-nvlink-s.txt"))
    assert sorted(status) == [0, 1]
    assert status[1]["uuid"] == "GPU-301fc23a-7896-88db-b0f0-a21cb135e203" and status[1]["name"] == "NVIDIA H200"
    assert status[0]["links"] == dict((n, 26.562) for n in range(18))
    assert nvidia_smi.parse_nvlink_status(read("driver580-h100-nvlink-s-empty.txt")) == {}  # a GPU without NVLink peers
    with pytest.raises(ParseError, match="listed twice"):
        nvidia_smi.parse_nvlink_status(read("driver580-h200x2-nvlink-s.txt").replace("Link 1:", "Link 0:", 1))


def test_csv_without_header_needs_the_field_list():
    with pytest.raises(ParseError, match="no header"):
        nvidia_smi.parse_query_csv(read("driver580-h100-query-gpu-noheader-nounits.csv"))
    rows = nvidia_smi.parse_query_csv(read("driver580-h100-query-gpu-noheader-nounits.csv"), H100_15_FIELDS)
    assert rows[0]["pci.bus_id"] == "00000000:00:06.0" and rows[0]["serial"] == "1752524009576"


def test_csv_with_units_from_other_drivers():
    rtx = nvidia_smi.gpus_from_query(nvidia_smi.parse_query_csv(read("query-gpu-csv-2x3090-util-percent-units.txt")))
    assert [g["index"] for g in rtx["gpus"]] == [0, 1]
    assert [g["temperature_c"] for g in rtx["gpus"]] == [42, 37]
    assert rtx["gpus"][0]["memory_total_mib"] == 24576 and rtx["driver_version"] == "515.65.01"
    a4000 = nvidia_smi.gpus_from_query(nvidia_smi.parse_query_csv(read("query-gpu-csv-a4000-pstate.txt")))
    assert a4000["gpus"][0]["performance_state"] == "P8" and a4000["gpus"][0]["memory_total_mib"] == 15352


def test_csv_failure_is_a_parse_error():
    text = "\n".join(read("../failures/nvidia-smi-query-gpu-invalid-field-driver580.txt").splitlines()[1:-1])
    with pytest.raises(ParseError, match="no.such.field"):
        nvidia_smi.parse_query_csv(text, ["index", "no.such.field"])


def test_topo_h200x2_ansi_header_and_nvlink():
    topo = nvidia_smi.parse_topo(read("h200x2-nccl-tests-2.19.6/nvidia_smi_topo.txt"))
    assert topo["gpus"] == ["GPU0", "GPU1"] and topo["nics"] == []
    assert topo["matrix"]["GPU0"]["GPU1"] == "NV18"
    assert topo["affinity"]["GPU1"] == {"cpu_affinity": "0-31", "numa_affinity": "0", "gpu_numa_id": None}
    assert nvidia_smi.nvlink_peers(topo) == {"GPU0": {"GPU1": "NV18"}, "GPU1": {"GPU0": "NV18"}}


def test_topo_dgx1_hybrid_cube_mesh():
    topo = nvidia_smi.parse_topo(read("topo-m-dgx1-8xV100-hybrid-cube-mesh-tabs.txt"))
    assert len(topo["gpus"]) == 8
    assert nvidia_smi.nvlink_peers(topo)["GPU0"] == {"GPU1": "NV1", "GPU2": "NV1", "GPU3": "NV2", "GPU6": "NV2"}
    assert topo["matrix"]["GPU7"]["GPU0"] == "SYS"


def test_topo_nic_naming_old_and_new():
    old = nvidia_smi.parse_topo(read("topo-m-old-driver-nic-columns-named-mlx5-legend-switch-wording.txt"))
    assert old["nics"] == ["mlx5_0", "mlx5_1", "mlx5_2"]
    assert nvidia_smi.gpu_nic_affinity(old) == {"GPU0": {"nics": ["mlx5_0", "mlx5_1"], "link": "PIX"}}
    assert old["affinity"] == {"GPU0": {"cpu_affinity": "0-23,48-71"}}
    new = nvidia_smi.parse_topo(read("topo-m-8gpu-nv12-10nic-nic-legend-tabs.txt"))
    assert new["nic_names"]["NIC9"] == "mlx5_9"
    assert nvidia_smi.gpu_nic_affinity(new)["GPU4"] == {"nics": ["mlx5_4", "mlx5_5"], "link": "PXB"}
    assert new["affinity"]["GPU4"] == {"cpu_affinity": "112-127,240-255", "numa_affinity": "7"}
    spaces = nvidia_smi.parse_topo(read("topo-m-1gpu-1nic-spaces-nic-legend-sglang-env.txt"))
    assert nvidia_smi.gpu_nic_affinity(spaces) == {"GPU0": {"nics": ["mlx5_0"], "link": "PHB"}}
    assert spaces["affinity"]["GPU0"]["cpu_affinity"] == "0-251"


def test_topo_section_inside_env_txt():
    env = read("../misc/h200x2-nccl-tests-2.19.6/env.txt")
    block = env.split("## topo\n", 1)[1].split("## infiniband", 1)[0]
    assert nvidia_smi.parse_topo(block)["matrix"] == nvidia_smi.parse_topo(
        read("h200x2-nccl-tests-2.19.6/nvidia_smi_topo.txt"))["matrix"]


def test_topo_p2p_matrix_is_refused():
    with pytest.raises(ParseError, match="unknown link cell 'OK'"):
        nvidia_smi.parse_topo(read("pkb-topo-p2p-4gpu-OK-NS-matrix.txt"))


# --- XML safety and damage -------------------------------------------------------------------


def test_xml_entity_declarations_are_refused_before_parsing():
    real = read("driver580-h100-80gb-hbm3-q-x.xml")
    bomb = real.replace('<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v13.dtd">',
                        '<!DOCTYPE nvidia_smi_log [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;">]>')
    bomb = bomb.replace("<driver_version>580.159.04</driver_version>", "<driver_version>&b;</driver_version>")
    with pytest.raises(ParseError, match="entities"):
        nvidia_smi.parse_xml(bomb)
    external = real.replace('<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v13.dtd">',
                            '<!DOCTYPE nvidia_smi_log [<!ENTITY x SYSTEM "file:///etc/passwd">]>')
    with pytest.raises(ParseError):
        nvidia_smi.parse_xml(external)


def test_xml_truncated_is_a_parse_error_quoting_the_line():
    real = read("driver580-h100-80gb-hbm3-q-x.xml")
    with pytest.raises(ParseError, match="not well-formed"):
        nvidia_smi.parse_xml(real[: len(real) // 2])


def test_xml_gpu_count_mismatch():
    real = read("driver580-h100-80gb-hbm3-q-x.xml")
    with pytest.raises(ParseError, match="attached_gpus 2"):
        nvidia_smi.parse_xml(real.replace("<attached_gpus>1</attached_gpus>", "<attached_gpus>2</attached_gpus>"))


def test_reason_mask_bits():
    reasons = nvidia_smi.reasons_from_mask("0x00000000000000C8")  # 0x80 | 0x40 | 0x08
    assert [k for k, v in reasons.items() if v] == ["hw_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"]
    with pytest.raises(ParseError):
        nvidia_smi.reasons_from_mask("0xZZ")


def regen():
    for rel in FILES:
        path = golden_path(rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(parse_or_error(rel), handle, indent=1, sort_keys=True)
            handle.write("\n")
        print("wrote", os.path.relpath(path, FIXTURES))


if __name__ == "__main__" and "--regen" in sys.argv:
    regen()
