# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""HCCL Test's adapter: ``OPTIONS``, ``records(text, ctx)``, ``from_output(path, params)`` (see tools/__init__.py).

``OPTIONS``: what a run takes (tools/_collective.py's, shared with nccl-tests, plus the CANN environment script,
``npus_per_node``, the sizes, the mpirun flavour and ``ranks``); the hccl_test module adds the hosts, run tag and import
mode's options (collective_module.SPEC).

``records`` gives one ``hccl.<collective>`` record of one run from its output (the launcher's stdout then stderr);
``ctx.params`` are the hccl_test module's options (npus_per_node, ranks_per_node, ranks, datatype, op, root, profile,
profiles, expect; defaults apply to missing keys); ``ctx.hosts`` the nodes of a multi-node run. With ``ctx.source``
(import mode) the collective comes from ``params["collective"]`` or the file name, the node count from
``params["node_count"]``. Never raises on tool output.

Bus bandwidth: HCCL Test prints only the algorithm bandwidth (bytes per NPU / time, GB/s = 1e9 B/s); busbw is
algbw x the nccl-tests factor of the collective at n ranks (_collective.BUSBW_FACTORS), so NCCL and HCCL
records are comparable side by side. When n is not known (an import without O(ranks)) busbw is null.
Runs on the targets: Python 3.8+, no Ansible imports.
"""

from __future__ import annotations

import os
import re

from ansible_collections.aifabric.acceptance.plugins.module_utils import expectations, imports, results
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import hccl
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import Context, _collective, _mpirun

TOOL = "hccl_test"
# its names (docs/architecture.md's table of tools) and what the contract checks (tools/__init__.py)
CHECKS = "hccl"
MODULE = "hccl_test"
SSH_ONLY = "no Kubernetes kind plans Ascend NPU pods yet (HCCL Test runs over SSH with the CANN toolkit on the host)"
# how it runs and what its records come from
ARGV = ("hccl_argv", "launch_argv", "run_env")
PARSERS = ("hccl",)
GOLDEN = ("hccl-records", "hccl-import")
# where CANN installs the toolkit (its "latest" link): HCCL Test is built in tools/hccl_test, set_env.sh beside it
CANN_TOOLKIT = "/usr/local/Ascend/ascend-toolkit"
OPTIONS = dict(
    _collective.OPTIONS,
    collectives=dict(type="list", elements="str", default=["all_reduce", "all_gather", "reduce_scatter", "alltoall"]),
    tool_dir=dict(type="path", default=CANN_TOOLKIT + "/latest/tools/hccl_test/bin"),
    cann_env_script=dict(type="path", default=CANN_TOOLKIT + "/set_env.sh"),
    npus_per_node=dict(type="int", default=8),
    min_bytes=dict(type="str", default="8K"),
    max_bytes=dict(type="str", default="1G"),
    mpi_flavour=dict(type="str", choices=["mpich", "openmpi"], default="mpich"),
    ranks=dict(type="int"),
)
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "alltoall", "alltoallv", "reduce",
               "scatter", "all_gather_v", "reduce_scatter_v")


# argv as data: option -> HCCL Test flag and the form of its value (_collective.flags_argv); then extra_args
FLAGS = (("min_bytes", "-b", "size"), ("max_bytes", "-e", "size"), ("step_factor", "-f", "int"),
         ("step_bytes", "-i", "int"), ("root", "-r", "int"), ("iterations", "-n", "int"),
         ("warmup_iterations", "-w", "int"), ("verify_data", "-c", "int"), ("npus_per_node", "-p", "count"),
         ("datatype", "-d", "name"), ("op", "-o", "name"))
ENV_PASS_RE = re.compile(r"^(HCCL|ASCEND|HCCN)_[A-Za-z0-9_]*$")


class OptionError(_mpirun.OptionError):
    """A user option that cannot reach an argv (the message names it)."""


def binary_name(collective):
    if not re.match(r"^[a-z][a-z0-9_]*$", collective or ""):
        raise OptionError("collective %r is not an HCCL Test collective name" % (collective,))
    return "%s_test" % collective


def hccl_argv(binary, params):
    """argv of one HCCL Test binary from the module's options."""
    argv = _collective.flags_argv(binary, params, FLAGS, "HCCL Test", error=OptionError)
    return argv + [str(w) for w in params.get("extra_args") or []]


def run_env(params):
    """HCCL_*/ASCEND_*/HCCN_* variables of O(env) (others are refused: this is what reaches every rank)."""
    env = {}
    for name, value in (params.get("env") or {}).items():
        if not ENV_PASS_RE.match(str(name)):
            raise OptionError("env %r: only HCCL_*, ASCEND_* and HCCN_* variables are passed to the ranks" % (name,))
        env[str(name)] = str(value)
    return env


def hostfile_text(hosts, slots, flavour):
    """``host:N`` (MPICH) or ``host slots=N`` (Open MPI) lines."""
    return _mpirun.hostfile_text(hosts, slots, flavour)


def launch_argv(argv, mpirun, params, env, hostfile=None, allow_run_as_root=False, forward=None):
    """argv wrapped in mpirun (the collective runner, _mpirun.flavour_argv): one rank per NPU, over params['hosts']
    (hostfile) or on this host, in MPICH or Open MPI syntax (``params["mpi_flavour"]``)."""
    return _mpirun.flavour_argv(argv, mpirun, params, env, hostfile=hostfile, allow_run_as_root=allow_run_as_root,
                                forward=forward)


def records(text, ctx):
    """The hccl.<collective> record of one HCCL Test run."""
    if ctx.source is not None:
        return results.rests_on(_saved_records(text, ctx.source, ctx.params, ctx.started))
    return results.rests_on(_run_records(text, ctx.rc, ctx.params, hosts=ctx.hosts, collective=ctx.collective,
                                         started=ctx.started, duration_s=ctx.duration_s, argv=ctx.argv, env=ctx.env,
                                         launch=ctx.launch))


def from_output(path, params):
    """Import mode: the record of a saved output."""
    started = results.utc_now()
    return imports.bounded(records(imports.read_output(path), Context(params=params, source=path, started=started)))


def ranks_of(params, hosts=None):
    """Ranks of the run: hosts x ranks_per_node under mpirun, npus_per_node on one node, else params['ranks']."""
    if params.get("ranks"):
        return int(params["ranks"])
    if hosts:
        per = params.get("ranks_per_node") or params.get("npus_per_node")
        return len(hosts) * int(per) if per else None
    return int(params["npus_per_node"]) if params.get("npus_per_node") else None


def busbw_factor(collective, ranks):
    """_collective.busbw_factor, but None (not 1.0) when the collective or the rank count is unknown."""
    if collective not in _collective.BUSBW_FACTORS or not ranks or ranks < 1:
        return None
    return _collective.busbw_factor(collective, ranks)


def _as_nccl_parse(parsed, collective, ranks, params):
    """The HCCL parse in the nccl-tests parse shape _collective.to_record reads (out-of-place cells only)."""
    factor = busbw_factor(collective, ranks)
    rows = []
    for row in parsed["rows"]:
        busbw = None if factor is None else round(row["algbw_gbyte_s"] * factor, 6)
        rows.append({"size": row["size"], "count": None, "type": params.get("datatype"), "redop": params.get("op"),
                     "root": params.get("root"),
                     "out_of_place": {"time_us": row["time_us"], "algbw_gbyte_s": row["algbw_gbyte_s"],
                                      "busbw_gbyte_s": busbw, "wrong": None},
                     "in_place": None})
    return {"format": "text", "collective": collective, "ranks": ranks, "rows": rows, "devices": [],
            "complete": True, "failures": [], "warnings": []}


def verdict_of(parsed, rc):
    """(status or None, reason): what the tool's own output says before any expectation (None = judge it)."""
    if parsed["failures"]:
        return "error", "HCCL Test failed: %s%s" % (
            parsed["failures"][0], " (%d such lines, one per failing rank)" % len(parsed["failures"])
            if len(parsed["failures"]) > 1 else "")
    if parsed["launcher_error"] and not parsed["rows"]:
        return "error", "the MPI launcher failed before HCCL Test ran: %s" % parsed["launcher_error"]
    if not parsed["rows"]:
        why = "no result rows in the output (the run ended before its table: crashed, killed or not started)"
        if parsed["problems"]:
            why += "; %s" % parsed["problems"][0]
        return "error", why
    if parsed["launcher_error"]:
        return "error", "the launcher reported a failure after %d result rows: %s" % (
            len(parsed["rows"]), parsed["launcher_error"])
    if not parsed["complete"]:
        return "error", ("output ended after %d result rows at %d bytes, before the maxbytes %d of its prologue "
                         "(crashed, killed or truncated)" % (len(parsed["rows"]), parsed["rows"][-1]["size"],
                                                             parsed["prologue"]["max_bytes"]))
    if rc not in (None, 0):
        return "error", "HCCL Test exited with rc %s although it printed its table" % rc
    return None, None


def _build_record(parsed, collective, params, hosts=None, rc=None, check=None, run_params=None, started=None,
                  duration_s=None, raw=None, extra_facts=None):
    """One hccl.<collective> record from a parse (parsers/hccl.py). Never raises on tool output."""
    check = check or "hccl.%s" % (collective or "unknown")
    ranks = ranks_of(params, hosts)
    profiles = expectations.all_profiles(params.get("profiles"))
    choice = params.get("profile", "auto")
    if choice == "auto":
        profile, why = None, "auto: HCCL Test output names no NPU model; set profile (the playbook passes the probe's)"
    else:
        profile, why = expectations.choose_profile(choice, None, None, profiles)
    facts = {"collective": collective, "output_layout": "hccl_test", "time_column": parsed["time_spelling"],
             "profile_choice": why, "launch": "mpirun" if hosts else "single-node"}
    if parsed["prologue"]:
        facts.update(("hccl_%s" % k, v) for k, v in parsed["prologue"].items())
    if ranks is None:
        facts["busbw_note"] = "rank count unknown (set ranks): busbw not computed"
    else:
        factor = busbw_factor(collective, ranks)
        facts["busbw_factor"] = None if factor is None else round(factor, 6)
    if parsed["prefixes_stripped"]:
        facts["prefixed_lines"] = parsed["prefixes_stripped"]
    facts.update(extra_facts or {})
    rules = expectations.rules_for_check(params.get("expect") or {}, check)
    record = _collective.to_record(_as_nccl_parse(parsed, collective, ranks, params), check=check, params=run_params,
                                   tool_name=TOOL, started=started, duration_s=duration_s, raw=raw, rc=None,
                                   nodes=len(hosts) if hosts else 1, rules=rules, profile=profile,
                                   profiles=profiles, extra_facts=facts)
    checks = [r["check"] for r in parsed["rows"]]
    failed = checks.count("failed")
    record["metrics"]["check_failed_total"] = failed if any(c in ("success", "failed") for c in checks) else None
    record["metrics"]["check_null_total"] = checks.count("NULL")
    for item, row in zip(record["series"], parsed["rows"]):
        item["check_result"] = row["check"]
    if parsed["check_errors"]:
        record["metrics"]["check_err_elements_total"] = sum(parsed["check_errors"])
    status, reason = verdict_of(parsed, rc)
    if status is None and failed:
        status = "fail"
        reason = "check_result failed at %d of %d sizes (data corruption: the tool's own result check)%s" % (
            failed, len(checks), "; " + record["reason"] if record.get("reason") else "")
    if status is not None:
        record["status"], record["reason"] = status, reason
        if status == "error":
            record["expect"] = {}
        record["raw"] = results.trim(raw)
    return expectations.physical_check(results.make(**dict((k, record[k]) for k in (
        "check", "status", "reason", "host", "target", "metrics", "expect", "facts", "params", "tool", "started",
        "duration_s", "raw", "series"))), raw=raw)


def _run_records(text, rc, params, hosts=None, collective=None, started=None, duration_s=None,
                 argv=None, env=None, launch=None):
    """The record of one HCCL Test run from its output (stdout then stderr)."""
    collective = collective or (params.get("collectives") or [None])[0]
    run_params = {"argv": argv, "env": dict(env or {})}
    parsed = hccl.parse(text)
    extra = {"launch": launch} if launch else None
    return [_build_record(parsed, collective, params, hosts=hosts, rc=rc, run_params=run_params, started=started,
                          duration_s=duration_s, raw=text, extra_facts=extra)]


def collective_from_name(path):
    """The collective a file name mentions (all_reduce_test.log, node7-all-gather.txt), or None."""
    base = os.path.basename(path or "").replace("-", "_")
    for name in sorted(COLLECTIVES, key=len, reverse=True):
        if re.search(r"(^|[^a-z])%s([^a-z]|$)" % re.escape(name), base):
            return name
    return None


def _saved_records(text, path, params, started):
    """Import mode: the record of the saved output ``text`` of file ``path``."""
    collective = params.get("collective") or collective_from_name(path)
    parsed = hccl.parse(text)
    hosts = None
    if params.get("node_count") and params["node_count"] > 1:
        hosts = ["node%d" % i for i in range(params["node_count"])]   # only their count is used
    return [_build_record(parsed, collective, params, hosts=hosts, check="hccl.%s" % (collective or "import"),
                          run_params={"from_output": path}, started=started, raw=text,
                          extra_facts={"imported_from": path})]
