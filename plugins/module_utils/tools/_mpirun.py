# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collective runner: the one mpirun argv builder of nccl-tests, HCCL Test and the torch all-reduce probe
(private; pure, no process).

The flavours' syntax is data (``FORMS``: option -> argv form, in the spirit of community.general's CmdRunner):
``wrap(flavour, mpirun, steps, argv)`` writes each ``(option, value)`` step in the flavour's form, in the order
given, then the program's argv. Two layouts call it:

- ``ranks_argv(mpirun, argv, hosts, ranks_per_node, ...)`` - Open MPI, ``ranks_per_node`` ranks on each host
  (``-np``, ``-H host:N`` or ``--hostfile``, ``--map-by ppr:N:node --bind-to none``, MCA, ``-x``): nccl-tests
  (tools.nccl_test.launch_argv, SSH and Kubernetes) and the torch probe's mpirun launcher;
- ``flavour_argv(argv, mpirun, params, env, ...)`` - Open MPI or MPICH (``params["mpi_flavour"]``), one rank per
  NPU over a hostfile: HCCL Test (tools.hccl_test.launch_argv).

``hostfile_text(hosts, slots, flavour)`` writes the hostfile in either syntax. The options of a collective launch
every collective module shares (``COLLECTIVE_SPEC``, ``COLLECTIVE_RANGES``, documented by the doc fragment
aifabric.acceptance._collective_launch) and ``TAG_ENV``, the variable that marks a run's processes on every host
(launch.py finds them by it), live here so that the adapters take them without importing the run code.
Runs on the targets: Python 3.8+, no Ansible imports.
"""

from __future__ import annotations

import re

from ansible_collections.aifabric.acceptance.plugins.module_utils import argspec

TAG_ENV = "AIFABRIC_RUN_TAG"
SIZE_RE = re.compile(r"^\d+[KMGkmg]?$")
NAME_RE = re.compile(r"^[A-Za-z0-9_.:\-]+$")
ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

# The options nccl_test and hccl_test share (documented by the doc fragment aifabric.acceptance._collective_launch);
# their ranges are in COLLECTIVE_RANGES.
COLLECTIVE_SPEC = {
    "iterations": {"type": "int"},
    "warmup_iterations": {"type": "int"},
    "extra_args": {"type": "list", "elements": "str", "default": []},
    "hosts": {"type": "list", "elements": "str", "default": []},
    "mpirun": {"type": "str", "default": "mpirun"},
    "mpirun_env_forward": {"type": "list", "elements": "str", "default": ["PATH", "LD_LIBRARY_PATH"]},
    "mpirun_extra_args": {"type": "list", "elements": "str", "default": []},
    "tcp_if_include": {"type": "str"},
    "timeout_s": {"type": "int", "default": 1800},
    "run_id": {"type": "str"},
    "from_output": {"type": "path"},
    "collective": {"type": "str"},
    "node_count": {"type": "int"},
}
COLLECTIVE_RANGES = {"iterations": argspec.POSITIVE, "warmup_iterations": argspec.NON_NEGATIVE,
                     "node_count": argspec.POSITIVE, "timeout_s": argspec.POSITIVE}

# option -> argv form per flavour: a tuple of words ("{}" the value, "{0}"/"{1}" a pair's name and value); a bool
# option's form is written when the value is true; a list value writes the form once per item
FORMS = {
    "openmpi": {
        "allow_run_as_root": ("--allow-run-as-root",),
        "np": ("-np", "{}"),
        "hostfile": ("--hostfile", "{}"),
        "hosts": ("-H", "{}"),
        "map_by": ("--map-by", "{}"),
        "bind_to": ("--bind-to", "{}"),
        "mca": ("--mca", "{0}", "{1}"),
        "env": ("-x", "{0}={1}"),
        "forward": ("-x", "{}"),
    },
    "mpich": {
        "hostfile": ("-f", "{}"),
        "np": ("-n", "{}"),
        "env": ("-genv", "{0}", "{1}"),
        "forward_list": ("-genvlist", "{}"),
    },
}
HOSTFILE_LINES = {"openmpi": "%s slots=%d\n", "mpich": "%s:%d\n"}


class OptionError(ValueError):
    """A user option that cannot reach an argv (the message names it)."""


def _form(words, value):
    if isinstance(value, tuple):
        return [w.format(*value) for w in words]
    return [w.format(value) for w in words]


def wrap(flavour, mpirun, steps, argv, extra_args=None):
    """``[mpirun] + each (option, value) step in the flavour's form + extra_args + argv``. A step whose value is
    None, False or empty is left out."""
    forms = FORMS[flavour]
    out = [mpirun]
    for option, value in steps:
        if value is None or value is False or value == [] or value == "":
            continue
        if value is True:
            out += list(forms[option])
        elif isinstance(value, list):
            for item in value:
                out += _form(forms[option], item)
        else:
            out += _form(forms[option], value)
    return out + [str(w) for w in (extra_args or [])] + list(argv)


def check_names(hosts=(), env_names=(), mca_names=()):
    """OptionError for a host, environment variable or MCA parameter name that cannot reach mpirun."""
    for host in hosts:
        if not NAME_RE.match(str(host)):
            raise OptionError("host name %r has characters that cannot reach mpirun" % (host,))
    for key in mca_names:
        if not ENV_NAME_RE.match(key):
            raise OptionError("MCA parameter name %r is not valid" % (key,))
    for name in env_names:
        if not ENV_NAME_RE.match(name):
            raise OptionError("environment variable name %r is not valid" % (name,))


def ranks_argv(mpirun, argv, hosts, ranks_per_node, env=None, env_names=None, mca=None,
               allow_run_as_root=False, tcp_if_include=None, extra_args=None, hostfile=None):
    """Wrap ``argv`` in Open MPI's mpirun: one rank per GPU slot over ``hosts``.

    ``hosts`` is the ordered list of hosts (the first is rank 0's); a hostfile path, when given, is used instead of
    ``-H``. ``env`` values are exported to every rank with ``-x NAME=VALUE``; ``env_names`` are forwarded from the
    launcher's own environment with ``-x NAME``.
    """
    if not hosts:
        raise OptionError("mpirun needs at least one host")
    if int(ranks_per_node) < 1:
        raise OptionError("ranks_per_node must be >= 1, got %r" % ranks_per_node)
    check_names(hosts=hosts)
    per = int(ranks_per_node)
    mca = dict(mca or {})
    if tcp_if_include:
        mca.setdefault("btl_tcp_if_include", tcp_if_include)
        mca.setdefault("oob_tcp_if_include", tcp_if_include)
    check_names(mca_names=sorted(mca))
    check_names(env_names=sorted(env or {}))
    check_names(env_names=env_names or [])
    steps = [("allow_run_as_root", bool(allow_run_as_root)), ("np", str(len(hosts) * per)),
             ("hostfile", hostfile), ("hosts", None if hostfile else ",".join("%s:%d" % (h, per) for h in hosts)),
             ("map_by", "ppr:%d:node" % per), ("bind_to", "none"),
             ("mca", [(key, str(mca[key])) for key in sorted(mca)]),
             ("env", [(name, env[name]) for name in sorted(env or {})]),
             ("forward", list(env_names or []))]
    return wrap("openmpi", mpirun, steps, argv, extra_args)


def flavour_argv(argv, mpirun, params, env, hostfile=None, allow_run_as_root=False, forward=None):
    """argv wrapped in mpirun: one rank per NPU, over params['hosts'] (hostfile) or on this host.

    ``env`` values reach every rank (MPICH ``-genv NAME VALUE``, Open MPI ``-x NAME=VALUE``); ``forward``
    names are passed from the launcher's own environment (MPICH ``-genvlist``, Open MPI ``-x NAME``).
    """
    hosts = params.get("hosts") or []
    per = int(params.get("ranks_per_node") or params.get("npus_per_node") or 0)
    if per < 1:
        raise OptionError("ranks_per_node (or npus_per_node) must be >= 1: one rank per NPU")
    check_names(hosts=hosts)
    names = sorted(set(list(forward or []) + list(params.get("mpirun_env_forward") or [])))
    check_names(env_names=list(env or {}) + names)
    count = str(per * max(1, len(hosts)))
    pairs = [(name, env[name]) for name in sorted(env or {})]
    if params.get("mpi_flavour") == "mpich":
        steps = [("hostfile", hostfile), ("np", count), ("env", pairs), ("forward_list", ",".join(names))]
        return wrap("mpich", mpirun, steps, argv, params.get("mpirun_extra_args"))
    tcp = params.get("tcp_if_include")
    steps = [("allow_run_as_root", bool(allow_run_as_root)), ("hostfile", hostfile), ("np", count),
             ("mca", [("btl_tcp_if_include", tcp), ("oob_tcp_if_include", tcp)] if tcp else []),
             ("env", pairs), ("forward", names)]
    return wrap("openmpi", mpirun, steps, argv, params.get("mpirun_extra_args"))


def hostfile_text(hosts, slots, flavour="openmpi"):
    """A hostfile: one ``host slots=N`` (Open MPI) or ``host:N`` (MPICH) line per host."""
    line = HOSTFILE_LINES["mpich" if flavour == "mpich" else "openmpi"]
    return "".join(line % (h, int(slots)) for h in hosts)
