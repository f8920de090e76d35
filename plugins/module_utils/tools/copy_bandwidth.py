# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The copy-bandwidth matrix's adapter: ``OPTIONS``, ``worker_args(params)``, ``nvbandwidth_argv(params)``,
``records(text, ctx)`` (see tools/__init__.py).

One record per measured copy: ``gpu.copy_h2d`` / ``gpu.copy_d2h`` per GPU (target = the GPU index, pinned host
memory) and ``gpu.copy_p2p_read`` / ``gpu.copy_p2p_write`` per ordered GPU pair (target ``"<src>-><dst>"``; the
reason names both GPUs). ``text`` is the copy worker's stdout (burnin_worker.py copy) or nvbandwidth's text output
(read by parsers.burnin.parse_nvbandwidth); the link facts (``nvidia-smi --query-gpu=pcie.link...`` CSV and
``nvidia-smi nvlink -s``) come from the worker's start line, or ``ctx.facts`` {pcie_csv, nvlink_status} beside an
nvbandwidth run. Judged against the hardware (PCIe generation x width: thresholds.PCIE_LANE_GBYTE_S,
HOST_COPY_EFFICIENCY, COPY_MARGIN; NVLink links x per-link rate: NVLINK_COPY_EFFICIENCY), the node's other copies of
the same kind (thresholds.PEERS) and the user's ``expect``.
Runs on the targets: Python 3.8+, no Ansible imports.
"""

from __future__ import annotations

import statistics

from ansible_collections.aifabric.acceptance.plugins.module_utils import expectations, imports, results, thresholds
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import ParseError
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import burnin, nvidia_smi
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import Context

OPTIONS = dict(
    use_nvbandwidth=dict(type="str", choices=["auto", "always", "never"], default="auto"),
    nvbandwidth=dict(type="str", default="nvbandwidth"),
    size_bytes=dict(type="int", default=268435456),
    iterations=dict(type="int", default=20),
    peer_copies=dict(type="bool", default=True),
    gpu_indices=dict(type="list", elements="int", default=[]),
    nvidia_smi=dict(type="str", default="nvidia-smi"),
    timeout_s=dict(type="int", default=300),
    expect=dict(type="dict", default={}),
)
WORKER_TOOL = "copy_bandwidth"     # the copy worker's records' tool.name; nvbandwidth's records name nvbandwidth
CHECK = "gpu.copy"
# its names (docs/architecture.md's table of tools) and what the contract checks (tools/__init__.py)
CHECKS = "gpu"
MODULE = "copy_bandwidth"
KUBERNETES = ("copy_bandwidth",)
NO_TOOL_NAME = "a record names what measured it: copy_bandwidth (the copy worker) or nvbandwidth"
# how it runs and what its records come from
ARGV = ("worker_args", "nvbandwidth_argv")
PARSERS = ("burnin", "nvidia_smi")
GOLDEN = ("copy-records", "copy-import")
# nvbandwidth's link facts (the module and the Kubernetes pod run the same two queries): nvidia-smi arguments, limit
FACT_QUERIES = {"pcie_csv": ("--query-gpu=index,pci.bus_id,pcie.link.gen.max,pcie.link.width.max,"
                             "pcie.link.width.current", "--format=csv"),
                "nvlink_status": ("nvlink", "-s")}
FACT_S = 30
NVBANDWIDTH_TESTS = ("host_to_device_memcpy_ce", "device_to_host_memcpy_ce", "device_to_device_memcpy_read_ce",
                     "device_to_device_memcpy_write_ce")


def worker_args(params):
    """Arguments of the worker's ``copy`` command (after ``python burnin_worker.py``)."""
    args = ["copy", "--bytes", str(params["size_bytes"]), "--iters", str(params["iterations"]),
            "--p2p", "1" if params["peer_copies"] else "0", "--nvidia-smi", params["nvidia_smi"]]
    if params.get("gpu_indices"):
        args += ["--devices", ",".join(str(d) for d in params["gpu_indices"])]
    return args


def nvbandwidth_argv(binary, params):
    """nvbandwidth's argv: the four CE tests, the buffer in MiB, the samples."""
    tests = NVBANDWIDTH_TESTS if params["peer_copies"] else NVBANDWIDTH_TESTS[:2]
    return [binary, "-b", str(max(1, int(params["size_bytes"]) >> 20)), "-i", str(params["iterations"]), "-t"] + list(tests)


def link_facts(pcie_csv, nvlink_status):
    """{gpu index: {pcie_gen, pcie_width, pcie_width_current, pcie_gbyte_s, nvlink_links, nvlink_gbyte_s}} from
    the nvidia-smi outputs (unreadable parts give no facts, never an exception)."""
    out = {}
    try:
        rows = nvidia_smi.parse_query_csv(pcie_csv) if (pcie_csv or "").strip() else []
    except ParseError:
        rows = []
    for row in rows:
        index = nvidia_smi.number(row.get("index"))
        gens = [nvidia_smi.number(row.get(k)) for k in ("pcie.link.gen.gpumax", "pcie.link.gen.hostmax", "pcie.link.gen.max")]
        gens = [g for g in gens if isinstance(g, int)]
        width = nvidia_smi.number(row.get("pcie.link.width.max"))
        if not isinstance(index, int):
            continue
        gen = min(gens) if gens else None
        lane = thresholds.PCIE_LANE_GBYTE_S.get(gen)
        out[index] = {"pcie_gen": gen, "pcie_width": width if isinstance(width, int) else None,
                      "pcie_width_current": nvidia_smi.number(row.get("pcie.link.width.current")),
                      "pcie_gbyte_s": lane * width if lane and isinstance(width, int) else None}
    try:
        links = nvidia_smi.parse_nvlink_status(nvlink_status or "")
    except ParseError:
        links = {}
    for index, gpu in links.items():
        active = [v for v in gpu["links"].values() if v]
        out.setdefault(index, {}).update({"nvlink_links": len(active), "nvlink_gbyte_s": sum(active) or None})
    return out


def _hardware_floor(item, facts):
    """(floor GB/s, what it rests on, source) of one copy, or (None, why not, None)."""
    if item["kind"] in ("h2d", "d2h"):
        gpu = facts.get(item["dst"] if item["kind"] == "h2d" else item["src"]) or {}
        if not gpu.get("pcie_gbyte_s"):
            return None, "no PCIe link facts", None
        eff = thresholds.HOST_COPY_EFFICIENCY[0] * thresholds.COPY_MARGIN[0]
        what = "PCIe gen%s x%s %.1f GB/s" % (gpu["pcie_gen"], gpu["pcie_width"], gpu["pcie_gbyte_s"])
        return gpu["pcie_gbyte_s"] * eff, what, thresholds.HOST_COPY_EFFICIENCY[1]
    src, dst = facts.get(item["src"]) or {}, facts.get(item["dst"]) or {}
    if src.get("nvlink_gbyte_s") and dst.get("nvlink_gbyte_s"):
        figure = min(src["nvlink_gbyte_s"], dst["nvlink_gbyte_s"])
        return figure * thresholds.NVLINK_COPY_EFFICIENCY[0], "NVLink %d links %.1f GB/s" % (
            min(src["nvlink_links"], dst["nvlink_links"]), figure), thresholds.NVLINK_COPY_EFFICIENCY[1]
    if src.get("pcie_gbyte_s") and dst.get("pcie_gbyte_s"):
        figure = min(src["pcie_gbyte_s"], dst["pcie_gbyte_s"])
        return figure * thresholds.HOST_COPY_EFFICIENCY[0] * thresholds.COPY_MARGIN[0], \
            "PCIe %.1f GB/s (no NVLink)" % figure, thresholds.HOST_COPY_EFFICIENCY[1]
    return None, "no link facts", None


def _name(item):
    if item["kind"] in ("h2d", "d2h"):
        return "GPU %s" % (item["dst"] if item["kind"] == "h2d" else item["src"])
    return "GPU %s -> GPU %s" % (item["src"], item["dst"])


def _target(item):
    if item["kind"] == "h2d":
        return str(item["dst"])
    if item["kind"] == "d2h":
        return str(item["src"])
    return "%s->%s" % (item["src"], item["dst"])


def _judge(item, facts, siblings, params, base):
    check = "%s_%s" % (CHECK, item["kind"])
    value = item.get("gbyte_s")
    record_facts = {"copy": _name(item), "engine": item.get("engine", "CE")}
    if item.get("error") or value is None:
        return results.error(check, "%s: %s" % (_name(item), item.get("error") or "no figure (N/A)"),
                             target=_target(item), facts=record_facts, **base)
    metrics = {"bw_gbyte_s": value, "size_bytes": item.get("bytes")}
    floor, what, source = _hardware_floor(item, facts)
    record_facts["link"] = what
    rules = {"bw_gbyte_s": {"min": round(floor, 2), "source": source}} if floor else None
    status, reason, expect = expectations.judge(
        metrics, expectations.merge_rules(rules, expectations.rules_for_check(params.get("expect") or {}, check)))
    others = [s for s in siblings if s is not value]
    if len(others) >= 1:
        median = statistics.median(others)
        metrics["node_median_gbyte_s"] = median
        if median > 0 and 100.0 * value / median < thresholds.PEERS["fail_below_pct"]:
            status = results.worst([status, "fail"])
            reason = "; ".join(r for r in (reason, "%.1f GB/s is %.0f %% of the node's other %s copies (median %.1f)" % (
                value, 100.0 * value / median, item["kind"], median)) if r)
    if reason:
        reason = "%s: %s" % (_name(item), reason)
    return results.make(check, status, reason=reason, target=_target(item), metrics=metrics, expect=expect,
                        facts=record_facts, **base)


def records(text, ctx):
    """gpu.copy_<kind> records, one per copy, or one skip/error record."""
    params = ctx.params
    base = {"params": {"argv": ctx.argv, "size_bytes": params["size_bytes"], "iterations": params["iterations"]},
            "tool": {"name": WORKER_TOOL}, "started": ctx.started, "duration_s": ctx.duration_s}
    output = text if ctx.output is None else ctx.output
    try:
        if burnin.COPY_START_MARK in (text or ""):
            parsed = burnin.parse_copy(text)
            start = parsed["start"]
            if "skip" in start:
                return [results.skip(CHECK, "no GPU: %s" % start["skip"], **base)]
            base["tool"] = {"name": WORKER_TOOL, "version": start.get("torch")}
            facts = link_facts(start.get("pcie_csv"), start.get("nvlink_status"))
        else:
            parsed = burnin.parse_nvbandwidth(text)
            base["tool"] = {"name": "nvbandwidth", "version": parsed["version"]}
            facts = link_facts((ctx.facts or {}).get("pcie_csv"), (ctx.facts or {}).get("nvlink_status"))
    except ParseError as exc:
        if "No module named 'torch'" in (output or ""):
            return [results.skip(CHECK, "PyTorch is not importable by %s" % ctx.python, **base)]
        return [results.error(CHECK, "copy measurement failed (rc %s): %s" % (ctx.rc, exc), raw=output, **base)]
    items = parsed["items"]
    out = []
    for item in items:
        siblings = [i["gbyte_s"] for i in items if i["kind"] == item["kind"] and i is not item and i.get("gbyte_s")]
        out.append(_judge(item, facts, siblings, params, base))
    if not items:
        out.append(results.error(CHECK, "no copy was measured", raw=output, **base))
    if parsed.get("problems"):
        out.append(results.make(CHECK, "warn", reason="copy output partly unreadable: %s" % "; ".join(
            parsed["problems"][:5]), raw=output, **base))
    if ctx.rc not in (0, None):
        out.append(results.error(CHECK, "the copy measurement exited with rc %s" % ctx.rc, raw=output, **base))
    return out


def from_output(path, params, host=None, started=None, facts=None):
    """Import mode: the records of a saved copy worker stdout (burnin_worker.py copy) or nvbandwidth text output
    (``facts``: {pcie_csv, nvlink_status} of the node, as beside an nvbandwidth run; without them the copies are
    judged against each other and ``expect`` only)."""
    text = imports.read_output(path)
    return imports.bounded(records(text, Context(params=params, host=host, started=started or results.utc_now(),
                                                 source=path, facts=facts)))
