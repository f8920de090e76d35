# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""nccl-tests' adapter: ``OPTIONS``, argv, ``records(text, ctx)``, ``from_output(path, params)`` (see tools/__init__.py).

``OPTIONS``: what a run takes (tools/_collective.py's, shared with HCCL Test, plus the sizes, nccl-tests' own flags,
``gpus_per_process``, ``json_output`` and NCCL's split and socket interface, and nccl-tests' own default collectives:
every collective the SSH and Kubernetes paths run unless told otherwise); the nccl_test module adds the hosts,
run id and import mode's options (collective_module.SPEC, ``from_format``).

argv, the same for every substrate (the SSH module's nccl_run and the Kubernetes planner build theirs here):

- ``run_env(params) -> dict`` - the environment every rank of a run gets (env, split, socket_ifname);
- ``nccl_argv(binary, params, gpus_per_process=None, json_path=None) -> argv`` - one nccl-tests binary;
- ``launch_argv(argv, mpirun, params, env, hostfile=None, allow_run_as_root=False) -> argv`` - wrapped in
  mpirun over ``params["hosts"]`` (the collective runner, _mpirun.ranks_argv).

``records`` gives one ``nccl.<collective>`` record of one run from its text output; ``ctx.document`` is the run's
-J JSON document when it wrote one; ``ctx.params`` the nccl_test module's options (profile, profiles, expect;
defaults apply to missing keys); ``ctx.hosts`` the nodes of a multi-node run (None or [] = single node). With
``ctx.source`` (import mode) the text is a saved output: text or JSON by ``params["from_format"]`` (auto: by its
content), argv and environment from the output itself, the collective from ``params["collective"]`` or the file
name. Never raises on tool output. Runs on the targets: Python 3.8+, no Ansible imports.
"""

from __future__ import annotations

import os
import re

from ansible_collections.aifabric.acceptance.plugins.module_utils import expectations, imports, results
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import ParseError
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import nccl_tests
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import Context, _collective, _mpirun

TOOL = "nccl-tests"
# its names (docs/architecture.md's table of tools) and what the contract checks (tools/__init__.py)
CHECKS = "nccl"
MODULE = "nccl_test"
KUBERNETES = ("nccl_test", "nccl_test_multinode")
# how it runs and what its records come from
ARGV = ("nccl_argv", "launch_argv", "run_env")
PARSERS = ("nccl_tests",)
GOLDEN = ("nccl-records", "nccl-import", "nccl-records-json")
# the collectives a run measures when none are named (single and multi node, over SSH and on Kubernetes)
DEFAULT_COLLECTIVES = ("all_reduce", "all_gather", "reduce_scatter", "alltoall", "broadcast", "reduce", "sendrecv")
OPTIONS = dict(
    _collective.OPTIONS,
    collectives=dict(type="list", elements="str", default=list(DEFAULT_COLLECTIVES)),
    gpus_per_process=dict(type="int", default=0),
    min_bytes=dict(type="str", default="8"),
    max_bytes=dict(type="str", default="8G"),
    # the binary's integer flags -t -m -a -z -G -T, unset by default
    **{name: dict(type="int") for name in ("threads", "agg_iterations", "average", "blocking", "cudagraph", "tool_timeout_s")},
    json_output=dict(type="str", choices=["auto", "always", "never"], default="auto"),
    split=dict(type="str"),
    socket_ifname=dict(type="str"),
    mpirun_mca=dict(type="dict", default={}),
)
ARGV_OPTIONS = ("min_bytes", "max_bytes", "step_factor", "step_bytes", "gpus_per_process", "threads", "iterations",
                "warmup_iterations", "verify_data", "datatype", "op", "root", "agg_iterations", "average", "blocking",
                "cudagraph", "tool_timeout_s", "extra_args")
# argv as data: option -> nccl-tests flag and the form of its value (_collective.flags_argv); then -J <json_path>
# and extra_args
FLAGS = (("min_bytes", "-b", "size"), ("max_bytes", "-e", "size"), ("step_factor", "-f", "int"),
         ("step_bytes", "-i", "int"), ("gpus_per_process", "-g", "int"), ("threads", "-t", "int"),
         ("iterations", "-n", "int"), ("warmup_iterations", "-w", "int"), ("verify_data", "-c", "int"),
         ("root", "-r", "int"), ("agg_iterations", "-m", "int"), ("average", "-a", "int"), ("blocking", "-z", "int"),
         ("cudagraph", "-G", "int"), ("tool_timeout_s", "-T", "int"), ("datatype", "-d", "name"), ("op", "-o", "name"))


def binary_name(collective):
    if collective not in _collective.COLLECTIVES and not re.match(r"^[a-z][a-z0-9_]*$", collective or ""):
        raise _mpirun.OptionError("collective %r is not a nccl-tests collective name" % (collective,))
    return "%s_perf" % collective


def nccl_tests_argv(binary, opts, json_path=None):
    """argv of one nccl-tests binary. ``opts`` keys as in the nccl_test module (None = tool default; a bool such as
    ``verify_data`` is the flag's 1 or 0: nccl-tests checks the data unless told ``-c 0``)."""
    argv = _collective.flags_argv(binary, opts, FLAGS, "nccl-tests")
    if json_path:
        argv += ["-J", json_path]
    return argv + [str(word) for word in opts.get("extra_args") or []]


def run_env(params):
    """The environment every rank of a run gets (NCCL_* from env, split, socket_ifname)."""
    env = dict((str(k), str(v)) for k, v in (params.get("env") or {}).items())
    if params.get("split"):
        env["NCCL_TESTS_SPLIT"] = params["split"]
    if params.get("socket_ifname"):
        env["NCCL_SOCKET_IFNAME"] = params["socket_ifname"]
    return env


def nccl_argv(binary, params, gpus_per_process=None, json_path=None):
    """argv of one nccl-tests binary from the module's options (gpus_per_process overrides the option)."""
    opts = dict((k, params.get(k)) for k in ARGV_OPTIONS)
    if params.get("step_bytes") is not None:
        opts["step_factor"] = None
    if gpus_per_process is not None:
        opts["gpus_per_process"] = gpus_per_process
    return nccl_tests_argv(binary, opts, json_path=json_path)


def launch_argv(argv, mpirun, params, env, hostfile=None, allow_run_as_root=False):
    """argv wrapped in mpirun over params["hosts"] with params["ranks_per_node"] ranks each."""
    return _mpirun.ranks_argv(
        mpirun, argv, params["hosts"], params["ranks_per_node"], env=env,
        env_names=params.get("mpirun_env_forward"), mca=params.get("mpirun_mca"),
        allow_run_as_root=allow_run_as_root, tcp_if_include=params.get("tcp_if_include"),
        extra_args=params.get("mpirun_extra_args"), hostfile=hostfile)


def records(text, ctx):
    """The nccl.<collective> record of one nccl-tests run."""
    if ctx.source is not None:
        return results.rests_on(_saved_records(text, ctx.source, ctx.params, ctx.started))
    return results.rests_on(_run_records(text, ctx.rc, ctx.params, hosts=ctx.hosts, collective=ctx.collective,
                                         json_text=ctx.document, started=ctx.started, duration_s=ctx.duration_s,
                                         argv=ctx.argv, env=ctx.env, launch=ctx.launch, host=ctx.host))


def from_output(path, params):
    """Import mode: the record of a saved output."""
    started = results.utc_now()
    return imports.bounded(records(imports.read_output(path), Context(params=params, source=path, started=started)))


def _profile(choice, parsed, profiles):
    devices = parsed.get("devices") or []
    names = [d.get("name") for d in devices if d.get("name")]
    hosts = set(d.get("host") for d in devices if d.get("host"))
    per_node = len(devices) // max(1, len(hosts)) if devices else None
    return expectations.choose_profile(choice, names[0] if names else None, per_node, profiles)


def _build_record(parsed, p, profiles, **kwargs):
    """_collective.to_record with the module's profile choice and user expectations."""
    profile, why = _profile(p.get("profile", "auto"), parsed, profiles)
    facts = dict(kwargs.pop("extra_facts", {}) or {})
    facts["profile_choice"] = why
    check = kwargs.get("check") or "nccl.%s" % (parsed.get("collective") or "unknown")
    rules = expectations.rules_for_check(p.get("expect") or {}, check)
    return _collective.to_record(parsed, rules=rules, profile=profile, profiles=profiles,
                                 extra_facts=facts, **kwargs)


def _run_records(text, rc, params, hosts=None, collective=None, json_text=None, started=None, duration_s=None,
                 argv=None, env=None, launch=None, host=None):
    """The record of one nccl-tests run from its output (text, and the -J document when there is one)."""
    env = dict(env or {})
    collective = collective or (params.get("collectives") or [None])[0]
    check = "nccl.%s" % (collective or "unknown")
    run_params = {"argv": argv, "env": env}
    parsed_text = None
    text_error = None
    try:
        parsed_text = nccl_tests.parse_text(text)
    except ParseError as exc:
        text_error = exc
    parsed = parsed_text
    output_format = "text"
    if json_text is not None:
        try:
            parsed = _collective.merge_text_into_json(nccl_tests.parse_json(json_text), parsed_text)
            output_format = "json"
        except ParseError as exc:
            if parsed_text is None:
                return [results.error(check, "could not read nccl-tests output: %s; JSON: %s" % (text_error, exc),
                                      raw=text, params=run_params, started=started, duration_s=duration_s,
                                      tool={"name": TOOL}, host=host)]
    if parsed is None:
        reason = "could not read nccl-tests output (rc %s): %s" % (rc, text_error)
        return [results.error(check, reason, raw=text, params=run_params, started=started, duration_s=duration_s,
                              tool={"name": TOOL}, host=host)]
    parsed["collective"] = parsed.get("collective") or collective
    nodes = len(hosts) if hosts else 1
    extra = {"output_format": output_format, "launch": launch or ("mpirun" if hosts else "single-node")}
    if env.get("NCCL_TESTS_SPLIT"):
        extra["split"] = env["NCCL_TESTS_SPLIT"]
    profiles = expectations.all_profiles(params.get("profiles"))
    return [_build_record(parsed, params, profiles, check=check, params=run_params, tool_name=TOOL, host=host,
                          started=started, duration_s=duration_s, raw=text, rc=rc, nodes=nodes,
                          algo=env.get("NCCL_ALGO"), extra_facts=extra, asked_collective=collective)]


def collective_from_name(path):
    """The collective a file name mentions (all_reduce.json, node7-all-gather.txt), or None."""
    base = os.path.basename(path or "")
    for name in sorted(_collective.COLLECTIVES, key=len, reverse=True):
        if re.search(r"(^|[^a-z])%s([^a-z]|$)" % re.escape(name), base.replace("-", "_")):
            return name
    return None


def _saved_records(text, path, params, started):
    """Import mode: the record of the saved output ``text`` of file ``path``."""
    hint = params.get("collective") or collective_from_name(path)
    check = "nccl.%s" % hint if hint else None
    run_params = {"from_output": path}
    fmt = params.get("from_format") or "auto"
    try:
        parsed = nccl_tests.parse_json(text) if fmt == "json" else (
            nccl_tests.parse_text(text) if fmt == "text" else nccl_tests.parse(text))
    except ParseError as exc:
        return [results.error(check or "nccl.import", "could not read nccl-tests output %s: %s" % (path, exc),
                              raw=text, params=run_params, started=started, tool={"name": TOOL})]
    if not parsed.get("collective") and hint:
        parsed["collective"] = hint
    env = dict(e.split("=", 1) for e in parsed.get("env") or [] if "=" in e)
    if parsed.get("argv"):
        run_params["argv"] = parsed["argv"]
    if env:
        run_params["env"] = env
    profiles = expectations.all_profiles(params.get("profiles"))
    return [_build_record(parsed, params, profiles, check=check, params=run_params, tool_name=TOOL, started=started,
                          raw=text, nodes=params.get("node_count"), algo=env.get("NCCL_ALGO"),
                          extra_facts={"imported_from": path}, asked_collective=params.get("collective"))]
