# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Huawei CANN HCCL Test on one substrate or another: records from outputs, argv, the SSH-path run (private).

Functions another substrate (Kubernetes: a launcher pod's log is HCCL Test's text) calls:

- ``records_from_hccl_output(text, rc, params, hosts=None, collective=None, started=None, duration_s=None,
  argv=None, env=None, launch=None) -> [records]`` - one ``hccl.<collective>`` record from one run's output;
  ``params`` are the hccl_test module's options (npus, ranks_per_node, ranks, datatype, op, root, profile,
  profiles, expect; defaults apply to missing keys); ``hosts`` the nodes of a multi-node run; never raises on
  tool output;
- ``ranks_of(params, hosts) -> int or None`` - the rank count the busbw factor uses;
- ``hccl_argv(binary, params) -> argv`` - one HCCL Test binary (flags -b -e -f -i -d -o -r -n -w -c -p);
- ``launch_argv(argv, mpirun, params, env, hostfile=None, allow_run_as_root=False) -> argv`` - wrapped in
  mpirun with MPICH (``-f hostfile -n N -genv``) or Open MPI (``--hostfile -np N -x``) syntax;
- ``hostfile_text(hosts, slots, flavour)`` - ``host:N`` (MPICH) or ``host slots=N`` (Open MPI) lines;
- ``env_from_script_output(blob, base)`` - the variables a CANN ``set_env.sh`` sets or changes (from the
  NUL-separated ``env -0`` output of ``bash -c '. "$1" && env -0' _ <path>``);
- ``import_records(path, params) -> [records]`` - import mode (imports.read_output).

Bus bandwidth: HCCL Test prints only the algorithm bandwidth (bytes per NPU / time, GB/s = 1e9 B/s); busbw is
algbw x the nccl-tests factor of the collective at n ranks (collectives.BUSBW_FACTORS), so NCCL and HCCL
records are comparable side by side. When n is not known (an import without O(ranks)) busbw is null.

``run_hccl(module, params, tag)`` is the SSH path. Runs on the targets: Python 3.8+, no Ansible imports.
"""

from __future__ import annotations

import os
import re

from ansible_collections.aifabric.acceptance.plugins.module_utils import collectives, expectations, imports, launch
from ansible_collections.aifabric.acceptance.plugins.module_utils import nccl_run, results, runner, statedir
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import hccl

TOOL = "hccl_test"
INSTALL_HINT = ("build HCCL Test from the CANN toolkit (<toolkit>/tools/hccl_test, 'make MPI_HOME=... ASCEND_DIR=...') "
                "and set binary_dir to its bin directory")
COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "broadcast", "alltoall", "alltoallv", "reduce",
               "scatter", "all_gather_v", "reduce_scatter_v")
ENV_PASS_RE = re.compile(r"^(HCCL|ASCEND|HCCN)_[A-Za-z0-9_]*$")
# what a CANN set_env.sh is allowed to hand on (it sets these; anything else it changes is not taken)
SCRIPT_ENV_RE = re.compile(r"^(PATH|LD_LIBRARY_PATH|PYTHONPATH|ASCEND_[A-Z0-9_]*|TOOLCHAIN_HOME|ASCEND_OPP_PATH|"
                           r"ASCEND_AICPU_PATH|ASCEND_HOME_PATH|ASCEND_TOOLKIT_HOME|CMAKE_PREFIX_PATH|PKG_CONFIG_PATH)$")
SCRIPT_TIMEOUT_S = 60


class OptionError(collectives.OptionError):
    """A user option that cannot reach an argv (the message names it)."""


def binary_name(collective):
    if not re.match(r"^[a-z][a-z0-9_]*$", collective or ""):
        raise OptionError("collective %r is not an HCCL Test collective name" % (collective,))
    return "%s_test" % collective


# --------------------------------------------------------------------------- pure: records

def ranks_of(params, hosts=None):
    """Ranks of the run: hosts x ranks_per_node under mpirun, npus on one node, else params['ranks']."""
    if params.get("ranks"):
        return int(params["ranks"])
    if hosts:
        per = params.get("ranks_per_node") or params.get("npus")
        return len(hosts) * int(per) if per else None
    return int(params["npus"]) if params.get("npus") else None


def busbw_factor(collective, ranks):
    """collectives.busbw_factor, but None (not 1.0) when the collective or the rank count is unknown."""
    if collective not in collectives.BUSBW_FACTORS or not ranks or ranks < 1:
        return None
    return collectives.busbw_factor(collective, ranks)


def _as_nccl_parse(parsed, collective, ranks, params):
    """The HCCL parse in the nccl-tests parse shape collectives.to_record reads (out-of-place cells only)."""
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


def build_record(parsed, collective, params, hosts=None, rc=None, check=None, run_params=None, started=None,
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
    record = collectives.to_record(_as_nccl_parse(parsed, collective, ranks, params), check=check, params=run_params,
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


def records_from_hccl_output(text, rc, params, hosts=None, collective=None, started=None, duration_s=None,
                             argv=None, env=None, launch=None):
    """The record of one HCCL Test run from its output (stdout then stderr)."""
    collective = collective or (params.get("collectives") or [None])[0]
    run_params = {"argv": argv, "env": dict(env or {})}
    parsed = hccl.parse(text)
    extra = {"launch": launch} if launch else None
    return [build_record(parsed, collective, params, hosts=hosts, rc=rc, run_params=run_params, started=started,
                         duration_s=duration_s, raw=text, extra_facts=extra)]


def collective_from_name(path):
    """The collective a file name mentions (all_reduce_test.log, node7-all-gather.txt), or None."""
    base = os.path.basename(path or "").replace("-", "_")
    for name in sorted(COLLECTIVES, key=len, reverse=True):
        if re.search(r"(^|[^a-z])%s([^a-z]|$)" % re.escape(name), base):
            return name
    return None


def import_records(path, params):
    """Import mode: the record of a saved output (raises imports.ImportRefused when the file is not readable)."""
    started = results.utc_now()
    collective = params.get("collective") or collective_from_name(path)
    text = imports.read_output(path)
    parsed = hccl.parse(text)
    hosts = None
    if params.get("nodes") and params["nodes"] > 1:
        hosts = ["node%d" % i for i in range(params["nodes"])]   # only their count is used
    return [build_record(parsed, collective, params, hosts=hosts, check="hccl.%s" % (collective or "import"),
                         run_params={"from_output": path}, started=started, raw=text,
                         extra_facts={"imported_from": path})]


# --------------------------------------------------------------------------- pure: argv and environment

def hccl_argv(binary, params):
    """argv of one HCCL Test binary from the module's options."""
    argv = [binary]
    for key, flag in (("min_bytes", "-b"), ("max_bytes", "-e")):
        value = params.get(key)
        if value is not None:
            value = str(value)
            if not collectives.SIZE_RE.match(value):
                raise OptionError("%s %r is not a size (digits with an optional K, M or G)" % (key, value))
            argv += [flag, value]
    for key, flag in (("step_factor", "-f"), ("step_bytes", "-i"), ("root", "-r"), ("iters", "-n"),
                      ("warmup_iters", "-w"), ("check", "-c"), ("npus", "-p")):
        value = params.get(key)
        if value is None or (key == "npus" and not value):
            continue
        argv += [flag, str(int(value))]
    for key, flag in (("datatype", "-d"), ("op", "-o")):
        value = params.get(key)
        if value is not None:
            if not collectives.NAME_RE.match(str(value)):
                raise OptionError("%s %r has characters HCCL Test does not accept" % (key, value))
            argv += [flag, str(value)]
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
    if flavour == "mpich":
        return "".join("%s:%d\n" % (h, int(slots)) for h in hosts)
    return collectives.hostfile_text(hosts, slots)


def launch_argv(argv, mpirun, params, env, hostfile=None, allow_run_as_root=False, forward=None):
    """argv wrapped in mpirun: one rank per NPU, over params['hosts'] (hostfile) or on this host.

    ``env`` values reach every rank (MPICH ``-genv NAME VALUE``, Open MPI ``-x NAME=VALUE``); ``forward``
    names are passed from the launcher's own environment (MPICH ``-genvlist``, Open MPI ``-x NAME``).
    """
    hosts = params.get("hosts") or []
    per = int(params.get("ranks_per_node") or params.get("npus") or 0)
    if per < 1:
        raise OptionError("ranks_per_node (or npus) must be >= 1: one rank per NPU")
    for host in hosts:
        if not collectives.NAME_RE.match(str(host)):
            raise OptionError("host name %r has characters that cannot reach mpirun" % (host,))
    names = sorted(set(list(forward or []) + list(params.get("mpirun_env_forward") or [])))
    for name in list(env or {}) + names:
        if not collectives.ENV_NAME_RE.match(name):
            raise OptionError("environment variable name %r is not valid" % (name,))
    count = str(per * max(1, len(hosts)))
    out = [mpirun]
    if params.get("mpi_flavour") == "mpich":
        if hostfile:
            out += ["-f", hostfile]
        out += ["-n", count]
        for name in sorted(env or {}):
            out += ["-genv", name, env[name]]
        if names:
            out += ["-genvlist", ",".join(names)]
    else:
        if allow_run_as_root:
            out.append("--allow-run-as-root")
        if hostfile:
            out += ["--hostfile", hostfile]
        out += ["-np", count]
        if params.get("tcp_if_include"):
            out += ["--mca", "btl_tcp_if_include", params["tcp_if_include"],
                    "--mca", "oob_tcp_if_include", params["tcp_if_include"]]
        for name in sorted(env or {}):
            out += ["-x", "%s=%s" % (name, env[name])]
        for name in names:
            out += ["-x", name]
    return out + [str(w) for w in params.get("mpirun_extra_args") or []] + list(argv)


def script_argv(bash, path):
    """Source a CANN environment script and print the environment NUL-separated.

    The command text is fixed; the script's path travels as the positional argument $1, never inside it.
    """
    return [bash, "-c", '. "$1" >/dev/null 2>&1 && env -0', "aifabric-set-env", path]


def env_from_script_output(blob, base):
    """Variables the script set or changed (SCRIPT_ENV_RE names only) from ``env -0`` output."""
    if isinstance(blob, bytes):
        blob = blob.decode("utf-8", "replace")
    changed = {}
    for item in (blob or "").split("\0"):
        if "=" not in item:
            continue
        name, value = item.split("=", 1)
        name = name.lstrip("\n")
        if SCRIPT_ENV_RE.match(name) and base.get(name) != value:
            changed[name] = value
    return changed


# --------------------------------------------------------------------------- the SSH path

def _script_env(module, path):
    """The environment of O(cann_env_script); raises OptionError naming the problem."""
    if not os.path.isfile(path):
        raise OptionError("cann_env_script %s is not a file (CANN installs it as <toolkit>/set_env.sh)" % path)
    path = statedir.trusted_file(os.path.abspath(path), what="cann_env_script")     # bash sources it: runs it
    bash = runner.find_tool(module, "bash", hint="install bash")
    run = runner.run(module, script_argv(bash, path), SCRIPT_TIMEOUT_S)
    if run.rc != 0:
        raise OptionError("sourcing cann_env_script %s failed (rc %s): %s" % (path, run.rc, run.stderr.strip()[-300:]))
    changed = env_from_script_output(run.stdout, os.environ)
    if not changed:
        raise OptionError("cann_env_script %s set none of PATH, LD_LIBRARY_PATH, ASCEND_*: not a CANN set_env.sh" % path)
    return changed


def run_hccl(module, p, tag=None):
    """Run every collective of p['collectives'] through mpirun (over p['hosts'] when given).

    Returns (records, cmds, runs). A missing binary is a ``skip`` or ``error`` record (p['if_missing']).
    """
    tag = launch.check_tag(tag or p.get("run_tag") or launch.new_tag())
    env = run_env(p)
    script_env = _script_env(module, p["cann_env_script"]) if p.get("cann_env_script") else {}
    launcher_env = dict(script_env)
    launcher_env.update(env)
    rank_env = dict(env)
    rank_env[launch.TAG_ENV] = tag
    multi = bool(p["hosts"])
    records, cmds, runs = [], [], []
    mpirun, hostfile = None, None
    for collective in p["collectives"]:
        name = binary_name(collective)
        check = "hccl.%s" % collective
        started = results.utc_now()
        binary = nccl_run.collective_binary(module, p, name, check, started, TOOL, INSTALL_HINT, records, cmds)
        if binary is None:
            continue
        if mpirun is None:
            mpirun = runner.find_tool(module, os.path.basename(p["mpirun"]),
                                      path=p["mpirun"] if os.path.isabs(p["mpirun"]) else None,
                                      hint="install MPICH or Open MPI (HCCL Test is always launched by mpirun)")
            if multi:
                hostfile = os.path.join(module.tmpdir, "hostfile")
                if not module.check_mode:
                    with open(hostfile, "w") as handle:
                        handle.write(hostfile_text(p["hosts"], p["ranks_per_node"] or p["npus"], p["mpi_flavour"]))
        argv = launch_argv(hccl_argv(binary, p), mpirun, p, rank_env, hostfile=hostfile,
                           allow_run_as_root=os.geteuid() == 0, forward=sorted(script_env))
        cmds.append(argv)
        if module.check_mode:
            continue
        run, timed_out, swept = launch.run_tagged(module, argv, p["timeout"], launcher_env, tag, foreground=True)
        if timed_out is not None:
            tail = (timed_out.details.get("stdout_tail") or "") + (timed_out.details.get("stderr_tail") or "")
            reason = str(timed_out)
            if swept:
                reason += "; stopped %d leftover process(es) of the run on this host" % len(
                    set(item["pid"] for item in swept))
            records.append(results.error(check, reason, raw=tail, params={"argv": argv, "env": env},
                                         started=started, tool={"name": TOOL}))
            runs.append({"collective": collective, "rc": timed_out.details.get("rc"), "stdout": results.trim(tail),
                         "swept": swept})
            continue
        runs.append({"collective": collective, "rc": run.rc, "stdout": results.trim(run.output), "swept": swept})
        records.extend(records_from_hccl_output(
            run.output, run.rc, p, hosts=p["hosts"], collective=collective, started=started,
            duration_s=run.elapsed_s, argv=argv, env=env))
    return records, cmds, runs
