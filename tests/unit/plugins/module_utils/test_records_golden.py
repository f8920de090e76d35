# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Golden records (issue 20 item 1): every real capture through every records entry point of every tool, compared
field by field with the JSON written from the code before the tools' adapters existed.

Only ``started`` and ``duration_s`` (the clock) and each threshold's provenance text (``expect.<metric>.source``,
the thresholds table's words) are dropped. The expected files were written by the builders of the
time (``records_from_*_output``, ``import_records``); the cases now call the adapters (plugins/module_utils/tools),
so a refactor that changes a record fails here. Regenerate only for an intended change of a record:
``AIFABRIC_REGEN_GOLDEN=1 pytest tests/unit/plugins/module_utils/test_records_golden.py`` (review the diff).
"""

from __future__ import annotations

import glob
import json
import os

import pytest

from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import ParseError
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import perftest as perftest_parser
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import port_counters as port_counters_parser
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import (
    Context, gemm_bench as gemm, hccl_test as hccl, nccl_test as nccl_tests, perftest_sweep as perftest)
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import (
    copy_bandwidth, dcgm_diag as dcgm, defaults, gpu_soak as soak)
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import port_counters
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import (
    fabric_topology as topology, allreduce_probe as torch_allreduce)
from ansible_collections.aifabric.acceptance.tests.unit.helpers import read

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", "..", ".."))
PARSERS = os.path.join("tests", "unit", "plugins", "module_utils", "parsers", "fixtures")
MODULES = os.path.join("tests", "unit", "plugins", "modules", "fixtures")
GOLDEN = os.path.join(HERE, "fixtures", "records_golden")
VOLATILE = ("started", "duration_s")


def _files(*patterns):
    out = []
    for pattern in patterns:
        out += sorted(os.path.relpath(p, ROOT) for p in glob.glob(os.path.join(ROOT, pattern)))
    return out


NCCL_TEXTS = _files(os.path.join(PARSERS, "nccl_tests", "*.txt"), os.path.join(PARSERS, "nccl_tests", "*", "*.txt"),
                    os.path.join(PARSERS, "nccl_tests_layouts", "*.txt"), os.path.join(MODULES, "h100x1-proof", "*.txt"))
NCCL_JSONS = _files(os.path.join(PARSERS, "nccl_tests", "h200x2-nccl-tests-2.19.6", "*.json"))
HCCL_TEXTS = _files(os.path.join(PARSERS, "hccl_test", "*.txt"))
PERFTEST_TEXTS = _files(os.path.join(PARSERS, "perftest", "*.txt"), os.path.join(PARSERS, "perftest_layouts", "*.txt"))
GEMM_TEXTS = _files(os.path.join(MODULES, "*", "gemm*.txt"))
IBNETDISCOVER_TEXTS = _files(os.path.join("tests", "unit", "fixtures", "topology", "ibnetdiscover-*.txt"))
SOAK_TEXTS = _files(os.path.join(PARSERS, "burnin", "h100-soak_*.txt"))
COPY_TEXTS = _files(os.path.join(PARSERS, "burnin", "h100-copy*.txt"), os.path.join(PARSERS, "nvbandwidth", "*.txt"))
DCGM_OUTPUTS = _files(os.path.join(PARSERS, "dcgm", "*.json"), os.path.join(PARSERS, "dcgm", "*.txt"))
PORT_COUNTER_TEXTS = _files(os.path.join(PARSERS, "port_counters", "*.txt"))
PROBE_JSONS = [p for p in _files(os.path.join(MODULES, "*", "probe_*.json"))
               if os.path.exists(os.path.join(ROOT, p[:-len(".json")] + ".txt"))]
NCCL_OPTS = {"expect": {"busbw_max_gbyte_s": {"min": 1}}}
PERFTEST_OPTS = {"peer_name": "n1", "expect": {"bw_avg_gbit_s": {"min": 100}}, "hcas": ["mlx5_0"]}
GEMM_OPTS = {"dtypes": ["bf16", "fp16"], "m": 8192, "n": 8192, "k": 8192, "iterations": 200, "warmup_iterations": 10,
             "warmup_s": 1.0, "profile": "auto"}
TOPOLOGY_HOSTS = ["node1", "node24.cluster", "gpu99"]
PROBE_OPTS = {"min_bytes": "1M", "max_bytes": "8G", "iterations": 20, "warmup_iterations": 5, "datatype": "float",
              "profile": "auto"}


def _nccl_json_text(rel):
    """The text output of the run that wrote a -J document (all_reduce.json -> all_reduce_g2.txt)."""
    return read(ROOT, rel[:-len(".json")] + "_g2.txt")


def _perftest_run_of(text):
    """(test, side, device) the capture is of, as the run that printed it asked (else ib_write_bw client mlx5_0)."""
    try:
        parsed = perftest_parser.parse(text)
    except ParseError:
        return "ib_write_bw", "client", "mlx5_0"
    return (parsed.get("tool") or "ib_write_bw", parsed.get("side") or "client",
            (parsed.get("header") or {}).get("Device") or "mlx5_0")


def _port_snapshot(rel, taken, epoch_s):
    """A port_counters snapshot of one port holding a real capture's values: a sysfs counters listing
    (``=== ./<name> ===`` then the value), an ``ethtool -S`` output (the port's netdev's counters) or ``rdma stat show -p``
    (the hw counters)."""
    text = read(ROOT, rel)
    port = {"device": "mlx5_1", "port": "1", "link_layer": "InfiniBand", "netdev": None, "counters": {},
            "hw_counters": {}, "ethtool": {}, "unread": {}}
    if "ethtool" in os.path.basename(rel):
        parsed = port_counters_parser.parse_ethtool_stats(text)
        port.update(link_layer="Ethernet", netdev="eth0", ethtool=parsed["counters"])
        if parsed["error"]:
            port["unread"]["ethtool"] = parsed["error"]
    if os.path.basename(rel).startswith("rdma-stat"):     # rdma stat show -p: the hw counters, "\t<name> <value>"
        port["hw_counters"] = dict((n, port_counters_parser.parse_value(v)[0]) for n, v in
                                   (line.split() for line in text.splitlines() if line.startswith("\t")))
    name = None
    for line in text.splitlines() if "ethtool" not in os.path.basename(rel) else ():
        if line.startswith("=== ./"):
            name = line[len("=== ./"):-len(" ===")]
        elif line.strip() and name:
            value, why = port_counters_parser.parse_value(line)
            if why:
                port["unread"]["counters/" + name] = why
            else:
                port["counters"][name] = value
    return {"taken": taken, "epoch_s": epoch_s, "ports": {"mlx5_1/1": port}, "ethtool": True}


def _port_window(rel):
    """The after-phase records of an hour's window over which the capture's counters did not move."""
    before = _port_snapshot(rel, "2026-12-06T00:00:00Z", 1796515200.0)
    return port_counters.judge(before, _port_snapshot(rel, "2026-12-06T01:00:00Z", 1796518800.0),
                               {"phase": "after", "stage": "rdma"})


def _cases():
    cases = []
    for rel in NCCL_TEXTS:
        collective = nccl_tests.collective_from_name(rel)
        cases.append(("nccl-records", rel, lambda rel=rel, c=collective: nccl_tests.records(
            read(ROOT, rel), Context(rc=0, params=NCCL_OPTS, collective=c, argv=["all_reduce_perf"],
                                     env={"NCCL_ALGO": "Ring"}))))
        cases.append(("nccl-import", rel, lambda rel=rel: nccl_tests.from_output(rel, NCCL_OPTS)))
    for rel in NCCL_JSONS:
        collective = nccl_tests.collective_from_name(rel)
        cases.append(("nccl-records-json", rel, lambda rel=rel, c=collective: nccl_tests.records(
            _nccl_json_text(rel), Context(rc=0, params=NCCL_OPTS, collective=c, document=read(ROOT, rel),
                                          hosts=["a", "b"], launch="mpirun"))))
        cases.append(("nccl-import", rel, lambda rel=rel: nccl_tests.from_output(rel, dict(NCCL_OPTS, node_count=1))))
    for rel in HCCL_TEXTS:
        collective = hccl.collective_from_name(rel) or "all_reduce"
        cases.append(("hccl-records", rel, lambda rel=rel, c=collective: hccl.records(
            read(ROOT, rel), Context(rc=0, params={"ranks": 8}, collective=c, hosts=["a", "b"], argv=["mpirun"]))))
        cases.append(("hccl-import", rel, lambda rel=rel: hccl.from_output(rel, {"node_count": 2})))
    for rel in PERFTEST_TEXTS:
        test, side, device = _perftest_run_of(read(ROOT, rel))
        cases.append(("perftest-records", rel, lambda rel=rel, t=test, s=side, d=device: perftest.records(
            read(ROOT, rel), Context(rc=0, params=dict(PERFTEST_OPTS, test=t), side=s, host="n2", target=d,
                                     argv=[t, "-d", d], attempts=2, facts={"port_rate_gbit_s": 100.0}))))
        cases.append(("perftest-import", rel, lambda rel=rel: perftest.from_output(rel, PERFTEST_OPTS, "n2")))
    for rel in GEMM_TEXTS:
        cases.append(("gemm-records", rel, lambda rel=rel: gemm.records(
            read(ROOT, rel), Context(rc=0, params=GEMM_OPTS, argv=["python3", "worker.py"]))))
    for rel in SOAK_TEXTS:
        soak_opts = dict(defaults(soak.OPTIONS), duration_s=30 if "capped" in rel else 20 if "20s" in rel else 60)
        cases.append(("soak-records", rel, lambda rel=rel, o=soak_opts: soak.records(read(ROOT, rel), Context(
            rc=0, params=o, argv=["python3"]))))
        cases.append(("soak-import", rel, lambda rel=rel, o=soak_opts: soak.from_output(rel, o)))
    for rel in COPY_TEXTS:
        cases.append(("copy-records", rel, lambda rel=rel: copy_bandwidth.records(read(ROOT, rel), Context(
            rc=0, params=defaults(copy_bandwidth.OPTIONS), argv=["python3"]))))
        cases.append(("copy-import", rel, lambda rel=rel: copy_bandwidth.from_output(rel, defaults(copy_bandwidth.OPTIONS))))
    for rel in PROBE_JSONS:
        cases.append(("probe-records", rel, lambda rel=rel: torch_allreduce.records(
            read(ROOT, rel[:-len(".json")] + ".txt"), Context(
                rc=0, params=PROBE_OPTS, document=read(ROOT, rel), gpu_name="NVIDIA H200", gpus=2, argv=["python3"],
                env={"NCCL_ALGO": "Ring"}))))
    for rel in DCGM_OUTPUTS:
        cases.append(("dcgm-records", rel, lambda rel=rel: dcgm.records_of(read(ROOT, rel), Context(
            params={"level": 1}, rc=0, argv=["dcgmi", "diag", "-r", "1", "-j"]))))
        cases.append(("dcgm-import", rel, lambda rel=rel: dcgm.from_output(rel, {"level": 1})))
    for rel in PORT_COUNTER_TEXTS:
        cases.append(("port-counters-window", rel, lambda rel=rel: _port_window(rel)))
    for rel in IBNETDISCOVER_TEXTS:
        cases.append(("topology-import", rel, lambda rel=rel: topology.from_output(rel, TOPOLOGY_HOSTS)))
    return cases


CASES = _cases()


def _stable(records):
    """The records without the clock, and without the provenance text of each threshold (``expect.<metric>.source``:
    the thresholds table's words, not record building)."""
    out = []
    for record in records:
        record = dict((k, v) for k, v in record.items() if k not in VOLATILE)
        record["expect"] = dict((metric, dict((k, v) for k, v in rule.items() if k != "source"))
                                for metric, rule in (record.get("expect") or {}).items())
        out.append(record)
    return out


def _golden_path(kind, rel):
    return os.path.join(GOLDEN, "%s--%s.json" % (kind, rel.replace(os.sep, "__")))


def test_every_tool_has_cases():
    kinds = set(kind for kind, _rel, _make in CASES)
    assert kinds == {"nccl-records", "nccl-import", "nccl-records-json", "hccl-records", "hccl-import",
                     "perftest-records", "perftest-import", "gemm-records", "probe-records", "topology-import",
                     "soak-records", "soak-import", "copy-records", "copy-import", "dcgm-records", "dcgm-import", "port-counters-window"}
    assert len(CASES) > 100


@pytest.mark.parametrize("kind, rel, make", CASES, ids=["%s:%s" % (k, os.path.basename(r)) for k, r, _m in CASES])
def test_records_equal_the_golden_records(kind, rel, make, monkeypatch):
    monkeypatch.chdir(ROOT)     # import mode records name the file as given: the relative path
    got = json.loads(json.dumps(_stable(make()), sort_keys=True))
    path = _golden_path(kind, rel)
    if os.environ.get("AIFABRIC_REGEN_GOLDEN"):
        os.makedirs(GOLDEN, exist_ok=True)
        with open(path, "w", encoding="utf-8") as handle:
            json.dump(got, handle, indent=1, sort_keys=True)
            handle.write("\n")
    with open(path, encoding="utf-8") as handle:
        want = json.load(handle)
    assert len(got) == len(want)
    for one, other in zip(got, want):
        for key in sorted(set(one) | set(other)):
            assert one.get(key) == other.get(key), "%s %s: field %s differs" % (kind, rel, key)
