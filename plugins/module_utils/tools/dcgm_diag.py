# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""DCGM diagnostics' adapter: ``OPTIONS``, ``diag_argv``, ``records(host, params)``, ``records_of(text, ctx)``,
``from_output(path, params)`` (see tools/__init__.py).

``dcgmi diag -r <level> -j`` (NVIDIA DCGM, which DGX OS and the GPU operator ship) run on the node; every test and
entity (GPU) it reports is one ``gpu.dcgm_diag`` record with DCGM's status, its ``DCGM_FR_*`` codes and messages.
A node without ``dcgmi`` gets one ``skip`` record with the install hint. ``records`` runs on a probe_host.Host: the
dcgm_diag module's over SSH, a pod's own in Kubernetes (k8s_entry ``adapter``), so both give the same records.
Runs on the targets: Python 3.8+, no Ansible imports.
"""

from __future__ import annotations

import time

from ansible_collections.aifabric.acceptance.plugins.module_utils import imports, results
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import ToolTimeout
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import dcgm as parser
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import Context

CHECK = "gpu.dcgm_diag"
LEVELS = (1, 2, 3, 4)
OPTIONS = dict(
    level=dict(type="int", choices=list(LEVELS), default=1),
    dcgmi_path=dict(type="path"),
    host_engine=dict(type="str"),
    timeout_s=dict(type="int"),
)
# how long each suite may run when timeout_s is not given: the dcgmi diag reference
# (https://docs.nvidia.com/datacenter/dcgm/latest/reference/command-line-reference/dcgmi/dcgmi-diag.html) says level
# 1 normally lasts seconds, 2 about two minutes, 3 about 15 minutes, 4 longer ("extended"); each limit is several
# times that, so a slow but healthy node is not cut off
LEVEL_TIMEOUT_S = {1: 300, 2: 900, 3: 3600, 4: 10800}
INSTALL_HINT = ("dcgmi not found (PATH or dcgmi_path): install NVIDIA DCGM (the datacenter-gpu-manager-4-core package "
                "of NVIDIA's CUDA repository, https://docs.nvidia.com/datacenter/dcgm/latest/installation/) and start "
                "nv-hostengine, or point host_engine at the GPU operator's nvidia-dcgm service")
# its names (docs/architecture.md's table of tools) and what the contract checks (tools/__init__.py)
TOOL = "dcgmi"
CHECKS = "gpu"
MODULE = "dcgm_diag"
KUBERNETES = ("dcgm_diag",)
# how it runs and what its records come from
ARGV = ("diag_argv",)
PARSERS = ("dcgm", "dcgm_errors")
GOLDEN = ("dcgm-records", "dcgm-import")
STATUS = {"pass": "pass", "fail": "fail", "warn": "warn", "skip": "skip", "not run": "skip"}


def timeout_of(params):
    return int(params.get("timeout_s") or LEVEL_TIMEOUT_S[int(params.get("level") or 1)])


def diag_argv(dcgmi, params):
    """The argv of one run: ``dcgmi diag -r <level> -j`` (``--host <host_engine>`` when given)."""
    argv = [dcgmi, "diag", "-r", str(int(params.get("level") or 1)), "-j"]
    if params.get("host_engine"):
        argv += ["--host", str(params["host_engine"])]
    return argv


def _reason(row):
    said = ["%s: %s" % (w["code"], w["message"]) if w["code"] else (w["message"] or "") for w in row["warnings"]]
    said = [text for text in said if text] or row["info"][:2] or row["summary_info"][:2]
    where = "GPU %s" % row["entity"] if row["entity_group"] == "GPU" else "%s %s" % (row["entity_group"], row["entity"])
    return "DCGM %s test %s on %s: %s%s" % (
        row["category"] or "", row["test"], where, row["status"], (" (%s)" % "; ".join(said)) if said else "")


def _row_record(row, parsed, ctx, common):
    status = STATUS.get(row["status"])
    if status is None:
        status = "error"
    reason = None if status == "pass" and not row["warnings"] else _reason(row)
    if row["status"] is None:
        reason = "DCGM %s test %s gave no status for %s %s" % (row["category"], row["test"], row["entity_group"],
                                                               row["entity"])
    facts = {"test": row["test"], "category": row["category"], "entity_group": row["entity_group"],
             "codes": [w["code"] for w in row["warnings"] if w["code"]],
             "messages": [w["message"] for w in row["warnings"] if w["message"]][:8], "info": row["info"][:8],
             # the driver DCGM saw, under DCGM's own words: not a *_version fact, so that fleet drift, which the env
             # probe's gpu records feed with the driver version already, does not warn twice for one driver
             "dcgm_version": parsed["version"], "driver_detected": parsed["driver_version"]}
    return results.make(CHECK, status, reason=reason, target=row["entity"], facts=facts,
                        metrics={"warnings_count": len(row["warnings"])}, **common)


def records_of(text, ctx):
    """The records of one ``dcgmi diag -j`` output (``ctx``: a Context, params with ``level``)."""
    params = dict(ctx.params or {})
    parsed = parser.parse_diag(text)
    common = dict(host=ctx.host, started=ctx.started or results.utc_now(), duration_s=ctx.duration_s,
                  params={"argv": ctx.argv, "level": params.get("level"), "rc": ctx.rc,
                          "layout": parsed["layout"]},
                  tool={"name": "dcgmi", "version": parsed["version"]} if parsed["version"] else {"name": "dcgmi"})
    raw = ctx.output if ctx.output is not None else text
    if parsed["error"]:
        said = (raw or "").strip().splitlines()[-1:] or [""]
        return [results.error(CHECK, "dcgmi diag output (exit status %s): %s; it said: %s" % (
            ctx.rc, parsed["error"], said[0][:300]), raw=raw, **common)]
    out = [_row_record(row, parsed, ctx, common) for row in parsed["results"]]
    if parsed["runtime_error"]:
        out.append(results.error(CHECK, "DCGM runtime error: %s" % parsed["runtime_error"][:400], raw=raw, **common))
    if parsed["problems"]:
        out.append(results.make(CHECK, "warn", reason="dcgmi diag output partly unreadable: %s"
                                % "; ".join(parsed["problems"]), raw=raw, **common))
    # one dcgmi run: DCGM's verdict of each test is its own (docs/results.md, "Runs")
    return results.rests_on(out, 1)


def records(host, params, started=None):
    """Run ``dcgmi diag`` on ``host`` (a probe_host.Host) and return its records; ``skip`` where dcgmi is absent."""
    started = started or results.utc_now()
    dcgmi = params.get("dcgmi_path") or host.which("dcgmi")
    if not dcgmi:
        return [results.skip(CHECK, INSTALL_HINT, started=started, params={"level": params.get("level")},
                             tool={"name": "dcgmi"})]
    argv = diag_argv(dcgmi, params)
    limit = timeout_of(params)
    began = time.monotonic()
    try:
        run = host.run(argv, limit)
    except ToolTimeout as exc:
        return [results.error(CHECK, "dcgmi diag -r %s ran past its limit of %d s and was killed (%s)"
                              % (params.get("level"), limit, exc), started=started,
                              params={"argv": argv, "level": params.get("level")}, tool={"name": "dcgmi"})]
    ctx = Context(params=params, argv=argv, rc=run.rc, started=started, duration_s=time.monotonic() - began,
                  output=run.output)
    return records_of(run.stdout, ctx)


def from_output(path, params, host=None, started=None):
    """Import mode: the records of a saved ``dcgmi diag -j`` output."""
    text = imports.read_output(path)
    return records_of(text, Context(params=params, host=host, started=started, source=path))
