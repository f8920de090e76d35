# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""How long the env_probe parsers take on the real captures (and on scaled-up copies).

Each probe runs once per host, so what matters is that no parser is slow on the largest
real input and that time grows linearly with the input: the XML of 2 GPUs is repeated
to 8 and 64 <gpu> elements, the 10-NIC topo matrix is parsed as is, the H100 ldconfig
cache (520 libraries) and pip freeze (196 lines) as captured.

Run from the collection root with the collection importable:

    PYTHONPATH=/tmp/at python bench/env_probe_parsers.py
"""

from __future__ import annotations

import os
import re
import timeit

from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import nvidia_smi, system

HERE = os.path.dirname(os.path.abspath(__file__))
FIX = os.path.join(HERE, "..", "tests", "unit", "plugins", "module_utils", "parsers", "fixtures")


def read(rel):
    with open(os.path.join(FIX, rel), encoding="utf-8") as handle:
        return handle.read()


def scaled_xml(copies):
    """The 2x H200 XML with its two <gpu> elements repeated to 2*copies GPUs (attached_gpus adjusted)."""
    text = read("nvidia_smi/driver580-h200x2-q-x.xml")
    start, end = text.index("\t<gpu id="), text.rindex("</gpu>") + len("</gpu>\n")
    body = text[start:end] * copies
    text = text[:start] + body + text[end:]
    return re.sub(r"<attached_gpus>\d+</attached_gpus>", "<attached_gpus>%d</attached_gpus>" % (2 * copies), text)


CASES = [
    ("parse_xml 1 GPU (H100)", nvidia_smi.parse_xml, read("nvidia_smi/driver580-h100-80gb-hbm3-q-x.xml")),
    ("parse_xml 2 GPUs (H200)", nvidia_smi.parse_xml, read("nvidia_smi/driver580-h200x2-q-x.xml")),
    ("parse_xml 8 GPUs (scaled)", nvidia_smi.parse_xml, scaled_xml(4)),
    ("parse_xml 64 GPUs (scaled)", nvidia_smi.parse_xml, scaled_xml(32)),
    ("parse_topo 8 GPU + 10 NIC", nvidia_smi.parse_topo, read("nvidia_smi/topo-m-8gpu-nv12-10nic-nic-legend-tabs.txt")),
    ("parse_nvlink_status 2x18 links", nvidia_smi.parse_nvlink_status, read("nvidia_smi/driver580-h200x2-nvlink-s.txt")),
    ("parse_cpuinfo 16 CPUs", system.parse_cpuinfo, read("misc/ubuntu2404-h100vm-cpuinfo.txt")),
    ("parse_ldconfig 520 libs", system.parse_ldconfig, read("misc/ubuntu2404-h100vm-ldconfig-p.txt")),
    ("parse_pip_freeze 196 lines", system.parse_pip_freeze, read("misc/ubuntu2404-h100vm-pip-freeze.txt")),
]


def main():
    print("%-34s %10s %12s" % ("parser / input", "bytes", "ms per call"))
    for name, func, text in CASES:
        runs = 50
        seconds = min(timeit.repeat(lambda: func(text), number=runs, repeat=3)) / runs
        print("%-34s %10d %12.3f" % (name, len(text), seconds * 1000))


if __name__ == "__main__":
    main()
