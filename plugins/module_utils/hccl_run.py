# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Huawei CANN HCCL Test on one substrate or another: argv and the SSH-path run (private). Its records come from
tools.hccl_test.records (the one builder every caller uses).

Functions another substrate (Kubernetes: a launcher pod's log is HCCL Test's text) calls:

- ``hccl_argv(binary, params) -> argv`` - one HCCL Test binary (flags -b -e -f -i -d -o -r -n -w -c -p);
- ``launch_argv(argv, mpirun, params, env, hostfile=None, allow_run_as_root=False) -> argv`` - wrapped in
  mpirun with MPICH (``-f hostfile -n N -genv``) or Open MPI (``--hostfile -np N -x``) syntax;
- ``hostfile_text(hosts, slots, flavour)`` - ``host:N`` (MPICH) or ``host slots=N`` (Open MPI) lines;
- ``env_from_script_output(blob, base)`` - the variables a CANN ``set_env.sh`` sets or changes (from the
  NUL-separated ``env -0`` output of ``bash -c '. "$1" && env -0' _ <path>``);

``run_hccl(module, params, tag)`` is the SSH path. Runs on the targets: Python 3.8+, no Ansible imports.
"""

from __future__ import annotations

import os
import re

from ansible_collections.aifabric.acceptance.plugins.module_utils import launch, nccl_run, results, runner
from ansible_collections.aifabric.acceptance.plugins.module_utils import statedir
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import Context
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import hccl_test as adapter

TOOL = adapter.TOOL
OptionError = adapter.OptionError
INSTALL_HINT = ("build HCCL Test from the CANN toolkit (<toolkit>/tools/hccl_test, 'make MPI_HOME=... ASCEND_DIR=...') "
                "and set tool_dir to its bin directory")
# what a CANN set_env.sh is allowed to hand on (it sets these; anything else it changes is not taken)
SCRIPT_ENV_RE = re.compile(r"^(PATH|LD_LIBRARY_PATH|PYTHONPATH|ASCEND_[A-Z0-9_]*|TOOLCHAIN_HOME|ASCEND_OPP_PATH|"
                           r"ASCEND_AICPU_PATH|ASCEND_HOME_PATH|ASCEND_TOOLKIT_HOME|CMAKE_PREFIX_PATH|PKG_CONFIG_PATH)$")
SCRIPT_TIMEOUT_S = 60


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
    path = statedir.trusted_file(runner.absolute(path), what="cann_env_script")     # bash sources it: runs it
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
    tag = launch.check_tag(tag or p.get("run_id") or launch.new_tag())
    env = adapter.run_env(p)
    script_env = _script_env(module, p["cann_env_script"]) if p.get("cann_env_script") else {}
    launcher_env = dict(script_env)
    launcher_env.update(env)
    rank_env = dict(env)
    rank_env[launch.TAG_ENV] = tag
    multi = bool(p["hosts"])
    records, cmds, runs = [], [], []
    mpirun, hostfile = None, None
    for collective in p["collectives"]:
        name = adapter.binary_name(collective)
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
                        handle.write(adapter.hostfile_text(p["hosts"], p["ranks_per_node"] or p["npus_per_node"], p["mpi_flavour"]))
        argv = adapter.launch_argv(adapter.hccl_argv(binary, p), mpirun, p, rank_env, hostfile=hostfile,
                                   allow_run_as_root=os.geteuid() == 0, forward=sorted(script_env))
        cmds.append(argv)
        if module.check_mode:
            continue
        run, timed_out, swept = launch.run_tagged(module, argv, p["timeout_s"], launcher_env, tag, foreground=True)
        if timed_out is not None:
            record, entry = nccl_run.timed_out_run(timed_out, swept, collective, check, argv, env, started, TOOL)
            records.append(record)
            runs.append(entry)
            continue
        runs.append({"collective": collective, "rc": run.rc, "stdout": results.trim(run.output), "swept": swept})
        records.extend(adapter.records(run.output, Context(
            params=p, rc=run.rc, hosts=p["hosts"], collective=collective, started=started,
            duration_s=run.elapsed_s, argv=argv, env=env)))
    return records, cmds, runs
