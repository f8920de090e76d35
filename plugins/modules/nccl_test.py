#!/usr/bin/python
# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: nccl_test
short_description: Run NVIDIA nccl-tests (or rccl-tests) collectives, or import their saved output, as result records
version_added: 1.0.0
author:
  - aifabric.acceptance contributors (@aifabric)
description:
  - Runs one nccl-tests binary per collective (C(all_reduce_perf), C(all_gather_perf), ...) and returns one result record
    C(nccl.<collective>) per run, with the full per-size table in the record's C(series).
  - B(Single node) (O(hosts) empty) runs the binary on this host with C(-g) GPUs in one process.
    B(Multi-node) (O(hosts) set) runs C(mpirun) on this host (the launcher) over a hostfile built from O(hosts),
    one rank per GPU (C(-g 1)); the binaries must be built with C(MPI=1) and exist at O(binary_dir) on every host.
  - Prefers the JSON file output (C(-J), nccl-tests 2.18 and later) when the binary's help offers it, and reads the
    text table otherwise (every layout since 2018, Open MPI C([1,0]<stdout>:) prefixes, interleaved NCCL INFO/WARN lines).
  - B(Import mode) (O(from_output)) reads a saved output (text or C(-J) JSON) instead of running anything, so runs made
    elsewhere can join a report.
  - A crashed or truncated run gives an C(error) record that keeps the last lines of output; wrong elements (C(#wrong))
    or C(Out of bounds values ... FAILED) give C(fail); thresholds come from hardware profiles and O(expect).
extends_documentation_fragment:
  - aifabric.acceptance._attributes
  - aifabric.acceptance._attributes.results
  - aifabric.acceptance._attributes.benchmark
  - aifabric.acceptance._profiles
attributes:
  check_mode:
    details:
      - In run mode, returns the commands that would run and empty results; generates no traffic.
      - Import mode reads the file and returns records in check mode too.
options:
  collectives:
    description: Collectives to run, one binary each (C(<name>_perf)), in this order.
    type: list
    elements: str
    default: [all_reduce]
  binary_dir:
    description: Directory holding the nccl-tests binaries (for example C(/opt/nccl-tests/build)). Default is PATH.
    type: path
  if_missing:
    description: What a missing binary gives, V(error) (the default; the record carries the install hint) or V(skip).
    type: str
    choices: [error, skip]
    default: error
  gpus_per_process:
    description: nccl-tests C(-g). V(0) means every GPU of the host on one node (C(nvidia-smi -L)), 1 with O(hosts).
    type: int
    default: 0
  min_bytes:
    description: C(-b), smallest size (nccl-tests syntax, for example V(8), V(1M)).
    type: str
    default: "8"
  max_bytes:
    description: C(-e), largest size (for example V(8G)).
    type: str
    default: 8G
  step_factor:
    description: C(-f), multiplication factor between sizes.
    type: int
    default: 2
  step_bytes:
    description: C(-i), fixed increment between sizes (instead of O(step_factor)).
    type: int
  iters:
    description: C(-n), timed iterations per size.
    type: int
  warmup_iters:
    description: C(-w), warmup iterations per size.
    type: int
  check:
    description: C(-c), check the results (V(1), the tool's default) or not (V(0)).
    type: int
  datatype:
    description: C(-d), data type (V(float), V(half), V(bfloat16), V(all), ...).
    type: str
  op:
    description: C(-o), reduction (V(sum), V(prod), V(min), V(max), V(avg), V(all)).
    type: str
  root:
    description: C(-r), root rank for rooted collectives.
    type: int
  threads:
    description: C(-t), threads per process.
    type: int
  agg_iters:
    description: C(-m), operations aggregated per iteration.
    type: int
  average:
    description: C(-a), how per-rank times are combined (0 rank 0, 1 average, 2 min, 3 max).
    type: int
  blocking:
    description: C(-z), blocking collectives.
    type: int
  cudagraph:
    description: C(-G), CUDA graph launches.
    type: int
  tool_timeout:
    description: C(-T), the binary's own timeout in seconds (nccl-tests 2.14 and later).
    type: int
  extra_args:
    description: Extra argv words for the binary, one per element.
    type: list
    elements: str
    default: []
  json_output:
    description: Use C(-J FILE) (V(auto) when the binary's C(-h) lists it, V(always), V(never)).
    type: str
    choices: [auto, always, never]
    default: auto
  env:
    description:
      - Environment for the run (C(NCCL_*), C(CUDA_VISIBLE_DEVICES), ...), exported to every rank with C(-x) under C(mpirun).
      - A forced C(NCCL_ALGO) is recorded in the facts and in the shape the results are judged and compared by.
    type: dict
    default: {}
  split:
    description: C(NCCL_TESTS_SPLIT) for per-rail runs (for example V(AND 0x7) or V(MOD 8)).
    type: str
  socket_ifname:
    description: C(NCCL_SOCKET_IFNAME) (NCCL's bootstrap and socket transport interface).
    type: str
  hosts:
    description: Hosts of a multi-node run, rank 0's first (for example C(groups['gpu_nodes'])). Empty runs on this host only.
    type: list
    elements: str
    default: []
  ranks_per_node:
    description: MPI ranks per host (usually the GPUs per host). Required with O(hosts).
    type: int
    default: 0
  mpirun:
    description: The C(mpirun) program (name or absolute path).
    type: str
    default: mpirun
  mpirun_mca:
    description: "MCA parameters (C(--mca NAME VALUE)), for example C({pml: ob1, btl: ^openib})."
    type: dict
    default: {}
  mpirun_env_forward:
    description: Launcher environment variables forwarded to every rank with C(-x NAME).
    type: list
    elements: str
    default: [PATH, LD_LIBRARY_PATH]
  mpirun_extra_args:
    description: Extra C(mpirun) argv words, one per element.
    type: list
    elements: str
    default: []
  tcp_if_include:
    description: Interface or CIDR for Open MPI's TCP traffic (C(btl_tcp_if_include), C(oob_tcp_if_include)).
    type: str
  from_output:
    description: Import mode, a saved output file on the target (text or C(-J) JSON) to read instead of running.
    type: path
  from_format:
    description: Format of O(from_output).
    type: str
    choices: [auto, text, json]
    default: auto
  collective:
    description: Import mode, the collective of O(from_output) when the file does not say (old layouts).
    type: str
  nodes:
    description: Import mode, the number of nodes of the run when the file does not list its ranks.
    type: int
  timeout:
    description: Seconds before one binary's run is killed.
    type: int
    default: 1800
  expect:
    description:
      - "User thresholds per metric (for example C({busbw_max_gbyte_s: {min: 350}})), applied to every collective, or per
        check (C({nccl.all_reduce: {busbw_max_gbyte_s: {min: 350}}})); they override the profile's."
    type: dict
    default: {}
seealso:
  - module: aifabric.acceptance.allreduce_probe
  - name: Role aifabric.acceptance.nccl_tests
    description: Makes nccl-tests available (package, prebuilt tarball or existing directory) and verifies it.
    link: https://github.com/aifabric/acceptance/tree/main/roles/nccl_tests
"""

EXAMPLES = r"""
- name: All collectives on every GPU of this host
  aifabric.acceptance.nccl_test:
    binary_dir: /opt/nccl-tests/build
    collectives: [all_reduce, all_gather, reduce_scatter, alltoall]
    max_bytes: 8G

- name: 16 nodes x 8 GPUs, all_reduce through mpirun, one rail at a time
  aifabric.acceptance.nccl_test:
    binary_dir: /opt/nccl-tests/build
    hosts: "{{ groups['gpu_nodes'] }}"
    ranks_per_node: 8
    tcp_if_include: 10.0.0.0/16
    socket_ifname: bond0
    split: AND 0x7
    env:
      NCCL_IB_HCA: "=mlx5_0,mlx5_1,mlx5_2,mlx5_3"
  run_once: true

- name: Import a run made elsewhere
  aifabric.acceptance.nccl_test:
    from_output: /var/tmp/all_reduce.json
"""

RETURN = r"""
results:
  description: One C(nccl.<collective>) result record per collective (see C(docs/results.md)).
  returned: always
  type: list
  elements: dict
  sample:
    - check: nccl.all_reduce
      status: pass
      metrics: {busbw_max_gbyte_s: 345.69, algbw_max_gbyte_s: 345.69, busbw_avg_gbyte_s: 111.153, wrong_total: 0, ranks: 2}
cmd:
  description: The argv of each run (a list of argv lists), or what would run in check mode.
  returned: always
  type: list
  elements: list
runs:
  description: Per collective, its exit code and the trimmed tail of its output.
  returned: when a process ran
  type: list
  elements: dict
"""

import os
import re
import traceback

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aifabric.acceptance.plugins.module_utils import collectives, expectations, results, runner
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import AcceptanceError, ParseError, ToolMissing, ToolTimeout
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import nccl_tests

TOOL = "nccl-tests"
INSTALL_HINT = "install nccl-tests with the role aifabric.acceptance.nccl_tests or set binary_dir"
ARGV_OPTIONS = ("min_bytes", "max_bytes", "step_factor", "step_bytes", "gpus_per_process", "threads", "iters",
                "warmup_iters", "check", "datatype", "op", "root", "agg_iters", "average", "blocking", "cudagraph",
                "extra_args")


def _profile(choice, parsed, profiles):
    devices = parsed.get("devices") or []
    names = [d.get("name") for d in devices if d.get("name")]
    hosts = set(d.get("host") for d in devices if d.get("host"))
    per_node = len(devices) // max(1, len(hosts)) if devices else None
    return expectations.choose_profile(choice, names[0] if names else None, per_node, profiles)


def build_record(parsed, p, profiles, **kwargs):
    profile, why = _profile(p["profile"], parsed, profiles)
    facts = dict(kwargs.pop("extra_facts", {}) or {})
    facts["profile_choice"] = why
    check = kwargs.get("check") or "nccl.%s" % (parsed.get("collective") or "unknown")
    rules = expectations.rules_for_check(p["expect"], check)
    return collectives.to_record(parsed, rules=rules, profile=profile, profiles=profiles,
                                 extra_facts=facts, **kwargs)


def import_output(module, p):
    path = p["from_output"]
    started = results.utc_now()
    hint = p["collective"] or _collective_from_name(path)
    check = "nccl.%s" % hint if hint else None
    params = {"from_output": path}
    try:
        with open(path, "rb") as handle:
            text = handle.read().decode("utf-8", "replace")
    except (IOError, OSError) as exc:
        return [results.error(check or "nccl.import", "cannot read %s: %s" % (path, exc), params=params,
                              started=started, tool={"name": TOOL})]
    fmt = p["from_format"]
    try:
        parsed = nccl_tests.parse_json(text) if fmt == "json" else (
            nccl_tests.parse_text(text) if fmt == "text" else nccl_tests.parse(text))
    except ParseError as exc:
        return [results.error(check or "nccl.import", "could not read nccl-tests output %s: %s" % (path, exc),
                              raw=text, params=params, started=started, tool={"name": TOOL})]
    if not parsed.get("collective") and hint:
        parsed["collective"] = hint
    env = dict(e.split("=", 1) for e in parsed.get("env") or [] if "=" in e)
    if parsed.get("argv"):
        params["argv"] = parsed["argv"]
    if env:
        params["env"] = env
    profiles = expectations.all_profiles(p["profiles"])
    return [build_record(parsed, p, profiles, check=check, params=params, tool_name=TOOL, started=started,
                         raw=text, nodes=p["nodes"], algo=env.get("NCCL_ALGO"),
                         extra_facts={"imported_from": path})]


def _collective_from_name(path):
    base = os.path.basename(path or "")
    for name in sorted(collectives.COLLECTIVES, key=len, reverse=True):
        if re.search(r"(^|[^a-z])%s([^a-z]|$)" % re.escape(name), base.replace("-", "_")):
            return name
    return None


def _gpu_count(module):
    smi = module.get_bin_path("nvidia-smi", required=False)
    if not smi:
        return None
    run = runner.run(module, [smi, "-L"], 60)
    if run.rc != 0:
        return None
    return len([ln for ln in run.stdout.splitlines() if ln.startswith("GPU ")]) or None


def _supports_json(module, binary, mode):
    if mode == "never":
        return False
    if mode == "always":
        return True
    try:
        run = runner.run(module, [binary, "-h"], 60)
    except ToolTimeout:
        return False
    return bool(re.search(r"(^|\s)\[?-J\b|--output_file", run.stdout + run.stderr))


def run_collectives(module, p):
    env = dict((str(k), str(v)) for k, v in p["env"].items())
    if p["split"]:
        env["NCCL_TESTS_SPLIT"] = p["split"]
    if p["socket_ifname"]:
        env["NCCL_SOCKET_IFNAME"] = p["socket_ifname"]
    multi = bool(p["hosts"])
    if multi and p["ranks_per_node"] < 1:
        module.fail_json(msg="ranks_per_node is required (>= 1) with hosts (one rank per GPU)")
    opts = dict((k, p[k]) for k in ARGV_OPTIONS)
    opts["tool_timeout_s"] = p["tool_timeout"]
    profiles = expectations.all_profiles(p["profiles"])
    records, cmds, runs = [], [], []
    mpirun = None
    hostfile = None
    for collective in p["collectives"]:
        name = collectives.binary_name(collective)
        check = "nccl.%s" % collective
        started = results.utc_now()
        try:
            binary = runner.find_tool(module, name, path=p["binary_dir"], hint=INSTALL_HINT)
        except ToolMissing as exc:
            if module.check_mode:
                cmds.append([os.path.join(p["binary_dir"] or "", name)])
                continue
            maker = results.skip if p["if_missing"] == "skip" else results.error
            records.append(maker(check, str(exc), params={"binary_dir": p["binary_dir"]}, started=started,
                                 tool={"name": TOOL}))
            continue
        if multi and mpirun is None:
            mpirun = runner.find_tool(module, os.path.basename(p["mpirun"]),
                                      path=p["mpirun"] if os.path.isabs(p["mpirun"]) else None,
                                      hint="install Open MPI (Debian/Ubuntu: openmpi-bin)")
            hostfile = os.path.join(module.tmpdir, "hostfile")
            if not module.check_mode:
                with open(hostfile, "w") as handle:
                    handle.write(collectives.hostfile_text(p["hosts"], p["ranks_per_node"]))
        run_opts = dict(opts)
        if run_opts["gpus_per_process"] in (None, 0):
            run_opts["gpus_per_process"] = 1 if multi else (None if module.check_mode else _gpu_count(module))
        json_path = None
        if not module.check_mode and _supports_json(module, binary, p["json_output"]):
            json_path = os.path.join(module.tmpdir, "%s.json" % collective)
        argv = collectives.nccl_tests_argv(binary, run_opts, json_path=json_path)
        if multi:
            argv = collectives.mpirun_argv(
                mpirun, argv, p["hosts"], p["ranks_per_node"], env=env, env_names=p["mpirun_env_forward"],
                mca=p["mpirun_mca"], allow_run_as_root=os.geteuid() == 0, tcp_if_include=p["tcp_if_include"],
                extra_args=p["mpirun_extra_args"], hostfile=hostfile)
        cmds.append(argv)
        if module.check_mode:
            continue
        params = {"argv": argv, "env": env}
        try:
            run = runner.run(module, argv, p["timeout"], env=env)
        except ToolTimeout as exc:
            tail = (exc.details.get("stdout_tail") or "") + (exc.details.get("stderr_tail") or "")
            records.append(results.error(check, str(exc), raw=tail, params=params, started=started,
                                         tool={"name": TOOL}))
            runs.append({"collective": collective, "rc": exc.details.get("rc"), "stdout": results.trim(tail)})
            continue
        runs.append({"collective": collective, "rc": run.rc, "stdout": results.trim(run.output)})
        records.append(_record_of_run(run, json_path, collective, check, params, started, multi, p, env, profiles))
    return records, cmds, runs


def _record_of_run(run, json_path, collective, check, params, started, multi, p, env, profiles):
    text = run.output
    parsed_text = None
    text_error = None
    try:
        parsed_text = nccl_tests.parse_text(text)
    except ParseError as exc:
        text_error = exc
    parsed = parsed_text
    output_format = "text"
    if json_path and os.path.isfile(json_path):
        with open(json_path, "rb") as handle:
            doc = handle.read().decode("utf-8", "replace")
        try:
            parsed = collectives.merge_text_into_json(nccl_tests.parse_json(doc), parsed_text)
            output_format = "json"
        except ParseError as exc:
            if parsed_text is None:
                return results.error(check, "could not read nccl-tests output: %s; JSON: %s" % (text_error, exc),
                                     raw=text, params=params, started=started, duration_s=run.elapsed_s,
                                     tool={"name": TOOL})
    if parsed is None:
        reason = "could not read nccl-tests output (rc %d): %s" % (run.rc, text_error)
        return results.error(check, reason, raw=text, params=params, started=started, duration_s=run.elapsed_s,
                             tool={"name": TOOL})
    parsed["collective"] = parsed.get("collective") or collective
    nodes = len(p["hosts"]) if multi else 1
    extra = {"output_format": output_format, "launch": "mpirun" if multi else "single-node"}
    if env.get("NCCL_TESTS_SPLIT"):
        extra["split"] = env["NCCL_TESTS_SPLIT"]
    return build_record(parsed, p, profiles, check=check, params=params, tool_name=TOOL, started=started,
                        duration_s=run.elapsed_s, raw=text, rc=run.rc, nodes=nodes, algo=env.get("NCCL_ALGO"),
                        extra_facts=extra)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            collectives=dict(type="list", elements="str", default=["all_reduce"]),
            binary_dir=dict(type="path"),
            if_missing=dict(type="str", choices=["error", "skip"], default="error"),
            gpus_per_process=dict(type="int", default=0),
            min_bytes=dict(type="str", default="8"),
            max_bytes=dict(type="str", default="8G"),
            step_factor=dict(type="int", default=2),
            step_bytes=dict(type="int"),
            iters=dict(type="int"),
            warmup_iters=dict(type="int"),
            check=dict(type="int"),
            datatype=dict(type="str"),
            op=dict(type="str"),
            root=dict(type="int"),
            threads=dict(type="int"),
            agg_iters=dict(type="int"),
            average=dict(type="int"),
            blocking=dict(type="int"),
            cudagraph=dict(type="int"),
            tool_timeout=dict(type="int"),
            extra_args=dict(type="list", elements="str", default=[]),
            json_output=dict(type="str", choices=["auto", "always", "never"], default="auto"),
            env=dict(type="dict", default={}),
            split=dict(type="str"),
            socket_ifname=dict(type="str"),
            hosts=dict(type="list", elements="str", default=[]),
            ranks_per_node=dict(type="int", default=0),
            mpirun=dict(type="str", default="mpirun"),
            mpirun_mca=dict(type="dict", default={}),
            mpirun_env_forward=dict(type="list", elements="str", default=["PATH", "LD_LIBRARY_PATH"]),
            mpirun_extra_args=dict(type="list", elements="str", default=[]),
            tcp_if_include=dict(type="str"),
            from_output=dict(type="path"),
            from_format=dict(type="str", choices=["auto", "text", "json"], default="auto"),
            collective=dict(type="str"),
            nodes=dict(type="int"),
            timeout=dict(type="int", default=1800),
            **expectations.PROFILE_SPEC,
            expect=dict(type="dict", default={}),
        ),
        mutually_exclusive=[("from_output", "hosts")],
        supports_check_mode=True,
    )
    p = module.params
    try:
        if p["step_bytes"] is not None:
            p["step_factor"] = None
        if p["from_output"]:
            module.exit_json(changed=False, cmd=[], results=import_output(module, p))
        records, cmds, runs = run_collectives(module, p)
        module.exit_json(changed=False, cmd=cmds, runs=runs, results=records)
    except AcceptanceError as exc:
        module.fail_json(msg=str(exc), **exc.details)
    except (collectives.OptionError, expectations.ExpectationError) as exc:
        module.fail_json(msg=str(exc))
    except Exception as exc:  # pylint: disable=broad-except
        module.fail_json(msg="nccl_test failed: %s" % exc, exception=traceback.format_exc())


if __name__ == "__main__":
    main()
