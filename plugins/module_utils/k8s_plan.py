# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which Kubernetes objects each check needs, and pod logs -> result records (private, pure).

``build(kind, nodes, pod, run_id, options, ...)`` returns a plan::

    {"run_id", "namespace", "kind", "launcher",
     "setup": [ConfigMap (the code), Secret (per-run ssh keys, multi-node only)],
     "steps": [{"name", "objects": [...], "slots": [slot, ...], "expected_pods", "done_selector", "fail_fast",
                "planned_pods" (an operator's step: every pod it creates, launcher and workers)}]}

Steps run one after the other (perftest_sweep: one step per round of disjoint pairs);
the objects of one step run at once. A *slot* is one pod the plan expects::

    {"slot": "env_probe-0", "job": "aif-r1-env-probe-0", "node": "gpu-node-07" (None: known once scheduled),
     "role": "env"|"single"|"server"|"client"|"launcher", "peer": node or None,
     "sections": [{"label", "how": "env"|"records"|"gemm"|"nccl"|"perftest", "check", ...}]}

Every pod runs ``k8s_entry.py`` from the code ConfigMap: the env probe is the
collection's own code; the tools print their own text between markers, and
``slot_records(plan, slot, outcome, log)`` hands each piece to the same function
the SSH path uses (the tool adapters' ``records``, tools/<tool>.py, where the argv come from too), then sets ``host`` to the
node name and adds ``substrate: kubernetes`` with the pod/job names to ``params``.
A pod that did not run (unschedulable, image pull, crash, timeout, interrupt)
gives one ``error`` record per check it owed, with the reason from its status.

Imports nothing from Ansible; Python 3.8+.
"""

from __future__ import annotations

import copy
import inspect
import json

from ansible_collections.aifabric.acceptance.plugins.module_utils import env_probe, k8s_entry, k8s_manifests as km
from ansible_collections.aifabric.acceptance.plugins.module_utils import results, runner
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import AcceptanceError
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import Context, defaults, replace
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import (
    env_probe as env, gemm_bench as gemm, nccl_test as nccl_tests, perftest_sweep as perftest,
    allreduce_probe as torch_allreduce)
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import (
    copy_bandwidth, dcgm_diag as dcgm, port_counters, gpu_soak as soak)
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import fabric_topology

# A kind is the name of the module that runs its tool over SSH; the gang form of a tool that also has a per-node kind
# adds MULTINODE (docs/architecture.md, "One name per tool")
MULTINODE = "_multinode"
KINDS = ("env_probe", "gemm_bench", "nccl_test", "perftest_sweep", "nccl_test" + MULTINODE, "allreduce_probe",
         "dcgm_diag", "port_counters", "gpu_soak", "copy_bandwidth", "fabric_topology")
# The kinds' names before 2.0.0: still accepted, with a deprecation warning, until KINDS_RENAMED_UNTIL (the one table;
# current_kind maps and words the warning, k8s_workload gives it)
KINDS_RENAMED = {"env": "env_probe", "gemm": "gemm_bench", "nccl": "nccl_test", "nccl_multinode": "nccl_test_multinode",
                 "perftest": "perftest_sweep", "allreduce_multinode": "allreduce_probe", "dcgm": "dcgm_diag",
                 "soak": "gpu_soak"}
KINDS_RENAMED_UNTIL = "3.0.0"
# the kinds whose pod runs a host-reading adapter (k8s_entry ``adapter``: tools/<MODULE>.py records(host, params))
HOST_ADAPTER_KINDS = {"dcgm_diag": dcgm.CHECK, "port_counters": port_counters.CHECK,
                      "fabric_topology": fabric_topology.CHECK}
HOST_ADAPTER_FILES = {"dcgm_diag": dcgm.MODULE, "port_counters": port_counters.MODULE,     # tools/<MODULE>.py
                      "fabric_topology": fabric_topology.MODULE}
LAUNCHERS = ("auto", "indexed", "mpijob", "volcano")
SLOT_LABEL = "aifabric.acceptance/slot"
STEP_LABEL = "aifabric.acceptance/step"
INDEX_ANNOTATION = "batch.kubernetes.io/job-completion-index"
ENTRY = km.CODE_MOUNT + "/aifabric_k8s_entry.py"
WORKER = km.CODE_MOUNT + "/aifabric_torch_worker.py"
BURNIN_WORKER = km.CODE_MOUNT + "/aifabric_burnin_worker.py"     # the soak and copy-bandwidth worker
LIB = km.CODE_MOUNT + "/lib"
PKG = "lib/ansible_collections/aifabric/acceptance/plugins/module_utils/"
# module_utils files the pods import (env probe and its parsers; perftest's parser decides client retries)
CODE_MODULES = ("errors", "results", "expectations", "thresholds", "env_probe", "probe_host", "parsers/__init__", "parsers/_common",
                "parsers/nvidia_smi", "parsers/npu_smi", "parsers/hccn_tool", "parsers/lldptool", "parsers/rdma", "parsers/system",
                "parsers/perftest",
                # the soak and copy-bandwidth records are built by the planner from the pods' logs; the pods import
                # nothing of them
                # perftest pods plan their rails and argv with the tool adapter, as the SSH path does (GID and port
                # rate from the node's sysfs)
                "tools/__init__", "tools/perftest_sweep", "tools/_perftest_options", "argspec", "statedir", "runner", "imports",
                # the entry program's interrupt guard (and the runners')
                "proc",
                # the host-reading adapters' pods (DCGM diagnostics, fabric port counters)
                "parsers/dcgm", "parsers/dcgm_errors", "parsers/port_counters", "tools/dcgm_diag", "tools/port_counters",
                # the fabric topology's pods (LLDP: lldpctl, lldptool, hccn_tool)
                "parsers/topology", "tools/fabric_topology")

# Each kind's options: its tool adapter's option spec (tools/<adapter>.py OPTIONS, the module's too) less those the
# pods do not take, plus the pods' own options and the defaults the planner sets differently from the module.
# KUBERNETES_OPTIONS holds those last two (k8s_workload documents them):
# - env_probe, gemm_bench: none (the adapters' defaults, as over SSH: every probe group, npu included - a node
#   without npu-smi gives the same gpu.npu_inventory skip record as an SSH host does);
# - nccl_test: the workers' sshd port (every launcher), the launcher's alive port, how long the launcher waits for the
#   workers, the cluster's DNS domain (the pods' DNS search entry for the workers' short names) and the cpu/memory
#   requests of an operator's launcher pod (it holds no GPU);
# - perftest_sweep: the test run when none is named, every rail's devices, no server rates yet (the planner learns them
#   from the server pods), the server pod's ready port (open once its entry program runs: the client's
#   connect_timeout_s counts from then, not from its own start);
# - allreduce_probe: torchrun and its fixed master port (the pods' Service and container port name it; the
#   allreduce_probe module's default 0 picks a random one per run). Its timeout_s is the adapter's (900): the pods'
#   start is counted apart (START_UP_S in their deadline and the wait), no longer folded into a longer timeout;
# - fabric_topology: the declared topology of every node, {node: {port: {switch, switch_port}}} (each node's pod gets
#   its own entry as the module's ``declared``, adapter_params), and the node's lldpd socket the pods mount
#   (lldpd_socket: "" mounts none).
KUBERNETES_OPTIONS = {
    "env_probe": {},
    "gemm_bench": {},
    "nccl_test": {"ssh_port": 2222, "alive_port": 2223, "wait_workers_s": 600, "cluster_domain": "cluster.local",
                  "launcher_cpu": "1", "launcher_memory": "1Gi"},
    "perftest_sweep": {"test": "ib_write_bw", "hcas": [], "peer_rates_gbit_s": [], "ready_port": 18514},
    "allreduce_probe": {"torchrun": "torchrun", "master_port": 29500},
    "dcgm_diag": {},
    "port_counters": {},
    "gpu_soak": {},
    "copy_bandwidth": {},
    "fabric_topology": {"topology": {}, "lldpd_socket": ""},
}
# the adapters' options the pods do not take: the SSH path's (ranks per host and -g: the pod's GPUs decide; a missing
# binary and nccl-tests' -J detection: the image is known)
NCCL_NOT_TAKEN = ("if_missing", "ranks_per_node", "gpus_per_process", "json_output")
# one host's declared ports: the pods take every node's (topology) and give each pod its own
TOPOLOGY_NOT_TAKEN = ("declared",)

ENV_DEFAULTS = dict(defaults(env.OPTIONS), **KUBERNETES_OPTIONS["env_probe"])
GEMM_DEFAULTS = dict(defaults(gemm.OPTIONS), **KUBERNETES_OPTIONS["gemm_bench"])
NCCL_DEFAULTS = dict(defaults(nccl_tests.OPTIONS, omit=NCCL_NOT_TAKEN), **KUBERNETES_OPTIONS["nccl_test"])
PERFTEST_DEFAULTS = dict(defaults(perftest.OPTIONS), **KUBERNETES_OPTIONS["perftest_sweep"])
PROBE_DEFAULTS = dict(defaults(torch_allreduce.OPTIONS), **KUBERNETES_OPTIONS["allreduce_probe"])
SOAK_DEFAULTS = dict(defaults(soak.OPTIONS), **KUBERNETES_OPTIONS["gpu_soak"])
COPY_DEFAULTS = dict(defaults(copy_bandwidth.OPTIONS), **KUBERNETES_OPTIONS["copy_bandwidth"])
DEFAULTS = {"env_probe": ENV_DEFAULTS, "gemm_bench": GEMM_DEFAULTS, "nccl_test": NCCL_DEFAULTS,
            "nccl_test_multinode": NCCL_DEFAULTS, "perftest_sweep": PERFTEST_DEFAULTS, "allreduce_probe": PROBE_DEFAULTS,
            "gpu_soak": SOAK_DEFAULTS, "copy_bandwidth": COPY_DEFAULTS,
            "dcgm_diag": dict(defaults(dcgm.OPTIONS), **KUBERNETES_OPTIONS["dcgm_diag"]),
            "port_counters": dict(defaults(port_counters.OPTIONS), **KUBERNETES_OPTIONS["port_counters"]),
            "fabric_topology": dict(defaults(fabric_topology.OPTIONS, omit=TOPOLOGY_NOT_TAKEN),
                                    **KUBERNETES_OPTIONS["fabric_topology"])}
PROBE_RESULT = "{RESULT_DIR}/allreduce.json"     # the entry program's private directory (k8s_entry.expand)


def _check_kubernetes_options(kind, opts):
    """The pods' own options of a kind: ports, the DNS domain, the launcher's requests."""
    if kind == "fabric_topology":
        _check_topology_options(opts)
    if kind == "perftest_sweep":
        rails = range(int(opts["port"]), int(opts["port"]) + max(1, len(opts["hcas"] or [])))
        if not 0 < int(opts["ready_port"]) < 65536 or int(opts["ready_port"]) in rails:
            raise AcceptanceError("perftest_sweep: ready_port %r must be a TCP port outside the rails' ports %d-%d"
                                  % (opts["ready_port"], rails[0], rails[-1]))
    if kind not in ("nccl_test", "nccl_test_multinode"):
        return
    for key in ("ssh_port", "alive_port"):
        if not 0 < int(opts[key]) < 65536:
            raise AcceptanceError("nccl_test: %s %r is not a TCP port" % (key, opts[key]))
    if opts["ssh_port"] == opts["alive_port"]:
        raise AcceptanceError("nccl_test: ssh_port and alive_port must differ, both are %s" % opts["ssh_port"])
    domain = str(opts["cluster_domain"])
    if len(domain) > 253 or not all(km.DNS_LABEL_RE.match(part) for part in domain.split(".")):
        raise AcceptanceError("nccl_test: cluster_domain %r is not a DNS name (for example cluster.local)" % (domain,))
    for key in ("launcher_cpu", "launcher_memory"):
        if not km.QUANTITY_RE.match(str(opts[key])):
            raise AcceptanceError("nccl_test: %s %r is not a Kubernetes quantity (for example 1, 500m, 1Gi)" % (key, opts[key]))


def _check_topology_options(opts):
    """fabric_topology's pods' own options: a mapping of node to declared ports, an absolute socket path or ""."""
    if not isinstance(opts["topology"], dict):
        raise AcceptanceError("fabric_topology: topology must be a mapping {node: {port: {switch, switch_port}}}, "
                              "got %s" % type(opts["topology"]).__name__)
    socket = str(opts["lldpd_socket"] or "")
    if socket and (not socket.startswith("/") or ".." in socket.split("/")):
        raise AcceptanceError("fabric_topology: lldpd_socket %r is not an absolute path on the node (for example "
                              "/run/lldpd.socket)" % (socket,))


def options_of(kind, options):
    """DEFAULTS[kind] overlaid with ``options`` (None keeps the default); unknown keys are an error."""
    out = copy.deepcopy(DEFAULTS[kind])
    for key, value in (options or {}).items():
        if key not in out:
            raise AcceptanceError("%s: unknown option %r (known: %s)" % (kind, key, ", ".join(sorted(out))))
        if value is not None:
            out[key] = value
    if kind == "env_probe":
        _check_env_expect(out["expect"])
    return out


def _check_env_expect(expect):
    """env_probe's expect mapping takes the module's keys only (its argument spec refuses others over SSH)."""
    if not isinstance(expect, dict):
        raise AcceptanceError("env_probe: expect must be a mapping, got %s" % type(expect).__name__)
    for key in sorted(expect, key=str):
        if key not in env.EXPECT:
            raise AcceptanceError("env_probe: unknown expect key %r (known: %s)" % (key, ", ".join(sorted(env.EXPECT))))


# --------------------------------------------------------------------------- the code ConfigMap

def code_files():
    """relative path -> source text of what the pods run (the collection's own module_utils files)."""
    from ansible_collections.aifabric.acceptance.plugins.module_utils import torch_worker
    from ansible_collections.aifabric.acceptance.plugins.module_utils import burnin_worker
    files = {"aifabric_k8s_entry.py": inspect.getsource(k8s_entry),
             "aifabric_torch_worker.py": inspect.getsource(torch_worker),
             "aifabric_burnin_worker.py": inspect.getsource(burnin_worker)}
    for name in CODE_MODULES:
        module = __import__("ansible_collections.aifabric.acceptance.plugins.module_utils." + name.replace("/", "."),
                            fromlist=["_"])
        text = inspect.getsource(module) if name != "parsers/__init__" else ""
        files[PKG + name + ".py"] = text
    return files


# --------------------------------------------------------------------------- plans

def _bin(directory, name):
    return "%s/%s" % (directory.rstrip("/"), name) if directory else name


def _entry(pod, command, spec):
    return [pod["python"], ENTRY, command, "--spec", json.dumps(spec, sort_keys=True, separators=(",", ":"))]


def _slot_labels(slot, step):
    return {SLOT_LABEL: slot, STEP_LABEL: step}


def _with_template_labels(obj, extra):
    """Add labels to an object's pod template(s) (the slot and step a pod belongs to)."""
    templates = []
    spec = obj.get("spec") or {}
    if "template" in spec:
        templates.append(spec["template"])
    for replica in (spec.get("mpiReplicaSpecs") or {}).values():
        templates.append(replica["template"])
    for task in spec.get("tasks") or []:
        templates.append(task["template"])
    for template in templates:
        template.setdefault("metadata", {}).setdefault("labels", {}).update(extra)
    return obj


def _single_node_job(plan, pod, kind, index, node, step, command, sections, gpus=None, role="single", opts=None):
    slot = "%s-%d" % (kind, index)
    name = km.object_name(plan["run_id"], kind.replace("_", "-"), index)     # DNS labels: port_counters, copy_bandwidth
    mounts, volumes = node_mounts(kind, opts or {})
    spec = km.pod_spec(pod, [km.container(pod, kind.replace("_", "-"), command, gpus=gpus, mounts=mounts)],
                       plan["code_config_map"], plan["code_items"], nodes=[node], volumes=volumes)
    obj = _with_template_labels(km.job(name, pod, plan["run_id"], kind, spec, role=role, node=node),
                                _slot_labels(slot, step))
    return obj, {"slot": slot, "job": name, "node": node, "role": role, "peer": None, "sections": sections}


def _per_node_step(plan, pod, kind, nodes, opts):
    step = {"name": kind, "objects": [], "slots": [], "done_selector": None, "fail_fast": False}
    for index, node in enumerate(nodes):
        if kind in HOST_ADAPTER_KINDS:
            command = _entry(pod, "adapter", {"adapter": HOST_ADAPTER_FILES[kind], "params": adapter_params(kind, opts, node),
                                              "lib": LIB})
            sections = [{"label": kind, "how": "records", "check": HOST_ADAPTER_KINDS[kind]}]
            gpus = 0 if kind == "fabric_topology" else None     # LLDP holds no GPU
        elif kind == "env_probe":
            params = dict(opts)
            command = _entry(pod, "env", {"params": params, "lib": LIB})
            sections = [{"label": "env", "how": "env", "check": "env.probe"}]
            gpus = None
        elif kind == "gemm_bench":
            argv = runner.python_argv(pod["python"], [WORKER] + gemm.worker_args(opts))    # as gemm_bench
            command = _entry(pod, "run", {"steps": [{"label": "gemm", "argv": argv, "timeout_s": opts["timeout_s"]}]})
            sections = [{"label": "gemm", "how": "gemm", "check": "gpu.gemm", "argv": argv}]
            gpus = None
        elif kind in ("gpu_soak", "copy_bandwidth"):
            command, sections = burnin_steps(pod, kind, opts)
            gpus = None
        else:  # nccl_test, single node: every GPU of the node in one process (-g gpus)
            steps, sections = [], []
            for collective in opts["collectives"]:
                argv = nccl_tests.nccl_argv(_bin(opts["tool_dir"], nccl_tests.binary_name(collective)), opts,
                                            gpus_per_process=int(pod["gpus_per_pod"]) or None)
                steps.append({"label": collective, "argv": argv, "timeout_s": opts["timeout_s"]})
                sections.append({"label": collective, "how": "nccl", "check": "nccl.%s" % collective,
                                 "collective": collective, "argv": argv, "env": nccl_tests.run_env(opts)})
            command = _entry(pod, "run", {"steps": steps})
            gpus = None
        if kind == "nccl_test":
            pod = dict(pod, env=dict(pod["env"], **nccl_tests.run_env(opts)))
        obj, slot = _single_node_job(plan, pod, kind, index, node, kind, command, sections, gpus=gpus, opts=opts)
        step["objects"].append(obj)
        step["slots"].append(slot)
    step["expected_pods"] = len(step["slots"])
    return [step]


def adapter_params(kind, opts, node):
    """The params a host-reading adapter's pod on ``node`` runs with: the options, and for port_counters' after
    phase only the node's own records of the before run (``before``: that run's records, every node's); for
    fabric_topology the node's own entry of the declared topology as the module's ``declared`` (the node's value as
    it is: the adapter's record says what is wrong with one that is not a mapping of ports), without the pods'
    own options."""
    params = dict(opts)
    if kind == "port_counters" and isinstance(opts.get("before"), list):
        params["before"] = [r for r in opts["before"] if isinstance(r, dict) and r.get("host") == node]
    if kind == "fabric_topology":
        for key in KUBERNETES_OPTIONS[kind]:
            params.pop(key)
        params["declared"] = opts["topology"].get(node, {})
    return params


# where the node's lldpd socket is mounted in a fabric_topology pod: the path lldpctl asks by default (lldpd's
# ${runstatedir}/lldpd.socket: /run/lldpd.socket in Debian 12's lldpd 1.0.16, the socket its lldpctl names)
LLDPD_SOCKET_MOUNT = "/run/lldpd.socket"


def node_mounts(kind, opts):
    """(container mounts, pod volumes) of the node's own paths a kind's pods read: a fabric_topology pod's the
    node's lldpd socket (``lldpd_socket``, read-only, hostPath type Socket: a node without it does not start the
    pod, which its record then names), at the path lldpctl asks (LLDPD_SOCKET_MOUNT)."""
    if kind != "fabric_topology" or not opts.get("lldpd_socket"):
        return [], []
    volume = {"name": "lldpd-socket", "hostPath": {"path": opts["lldpd_socket"], "type": "Socket"}}
    return [{"name": "lldpd-socket", "mountPath": LLDPD_SOCKET_MOUNT, "readOnly": True}], [volume]


def burnin_steps(pod, kind, opts):
    """(the pod's command, its log sections) of a soak or copy-bandwidth pod: the same argv as the gpu_soak and
    copy_bandwidth modules (the worker, or nvbandwidth with use_nvbandwidth: always and the two nvidia-smi queries of its
    link facts before it)."""
    if kind == "gpu_soak":
        argv = runner.python_argv(pod["python"], [BURNIN_WORKER] + soak.worker_args(opts))
        steps = [{"label": "soak", "argv": argv, "timeout_s": soak.timeout_s(opts)}]
        return _entry(pod, "run", {"steps": steps}), [{"label": "soak", "how": "soak", "check": soak.CHECK,
                                                       "argv": argv}]
    if opts["use_nvbandwidth"] == "always":
        smi = opts["nvidia_smi"]
        steps = [{"label": "copy_pcie", "argv": [smi] + list(copy_bandwidth.FACT_QUERIES["pcie_csv"]), "timeout_s": copy_bandwidth.FACT_S},
                 {"label": "copy_nvlink", "argv": [smi] + list(copy_bandwidth.FACT_QUERIES["nvlink_status"]),
                  "timeout_s": copy_bandwidth.FACT_S}]
        argv = copy_bandwidth.nvbandwidth_argv(opts["nvbandwidth"], opts)
    else:
        steps, argv = [], runner.python_argv(pod["python"], [BURNIN_WORKER] + copy_bandwidth.worker_args(opts))
    steps.append({"label": "copy", "argv": argv, "timeout_s": opts["timeout_s"]})
    return _entry(pod, "run", {"steps": steps}), [{"label": "copy", "how": "copy", "check": copy_bandwidth.CHECK,
                                                   "argv": argv}]


def _perftest_pod_params(opts):
    """The perftest options the pod needs to plan and build its argvs (no expectations: judged here)."""
    return dict((k, v) for k, v in opts.items() if k not in ("expect", "line_rate_floor_pct", "peer_rates_gbit_s",
                                                             "tool_dir", "timeout_s", "connect_timeout_s",
                                                             "ready_port"))


def _perftest_steps(plan, pod, rounds, opts):
    if not opts["hcas"]:
        raise AcceptanceError("perftest_sweep: hcas (the HCAs of every rail, e.g. [mlx5_0, mlx5_1]) are required")
    binary = _bin(opts["tool_dir"], opts["test"])
    device_plan = perftest.device_plan(opts["hcas"], opts)
    ports = [("perftest-%d" % i, tcp_port) for i, _d, tcp_port, _g, _f in device_plan]
    steps = []
    for r, pairs in enumerate(rounds):
        step_name = "pt-r%d" % r
        svc = km.object_name(plan["run_id"], "pt", "r%d" % r)
        step = {"name": step_name, "objects": [], "slots": [], "done_selector": None, "fail_fast": False}
        step["objects"].append(km.headless_service(svc, pod, plan["run_id"], plan["kind"],
                                                   {km.RUN_LABEL: plan["run_id"], STEP_LABEL: step_name,
                                                    km.ROLE_LABEL: "server"}, ports))
        for p, pair in enumerate(pairs):
            server, client = pair
            hostname = "s%d" % p
            address = "%s.%s" % (hostname, svc)
            for role, node, peer in (("server", server, client), ("client", client, server)):
                slot = "pt-r%d-p%d-%s" % (r, p, role)
                # the argvs as planned here (no sysfs): the pod plans again with its node's sysfs (GID, rates)
                argvs = perftest.argvs_for(binary, opts, device_plan, role,
                                           peer_address=address if role == "client" else None)
                sections = []
                for (i, device, _tcp_port, _gid, facts), argv in zip(device_plan, argvs):
                    sections.append({"label": device, "how": "perftest", "side": role, "device": device,
                                     "index": i, "argv": argv, "facts": facts,
                                     "check": "rdma.%s%s" % (opts["test"], ".server" if role == "server" else "")})
                pod_plan = {"params": _perftest_pod_params(opts), "binary": binary, "side": role, "lib": LIB,
                            "peer_address": address if role == "client" else None, "timeout_s": opts["timeout_s"],
                            "connect_timeout_s": opts["connect_timeout_s"]}
                run = {"perftest": pod_plan, "parallel": True}
                if role == "server":        # open while its entry program runs: the server pod is up
                    run["alive_port"] = opts["ready_port"]
                else:                       # the client's connect_timeout_s counts from the server's readiness
                    run.update({"wait_hosts": [address], "wait_port": opts["ready_port"], "wait_s": SERVER_READY_S})
                command = _entry(pod, "run", run)
                name = km.object_name(plan["run_id"], "pt", "r%d" % r, "p%d" % p, role[0])
                spec = km.pod_spec(pod, [km.container(pod, "perftest", command, gpus=0)], plan["code_config_map"],
                                   plan["code_items"], nodes=[node], hostname=hostname if role == "server" else None,
                                   subdomain=svc if role == "server" else None)
                obj = km.job(name, pod, plan["run_id"], plan["kind"], spec, role=role, node=node)
                step["objects"].append(_with_template_labels(obj, _slot_labels(slot, step_name)))
                step["slots"].append({"slot": slot, "job": name, "node": node, "role": role, "peer": peer,
                                      "sections": sections})
        step["expected_pods"] = len(step["slots"])
        steps.append(step)
    return steps


# how the launcher pod completes an mpirun argv at run time (k8s_entry.mpirun_argv): mpirun by its path with
# --prefix off sshd's PATH, and -x for its own variables of these prefixes (env_from_configmaps included)
MPIRUN_AT_RUN_TIME = {"prefix": True, "forward_prefixes": ["NCCL_", "UCX_"]}


def _mpi_sections(opts, argv_of, nodes):
    env = nccl_tests.run_env(opts)
    steps, sections = [], []
    for collective in opts["collectives"]:
        argv = argv_of(collective)
        steps.append({"label": collective, "argv": argv, "timeout_s": opts["timeout_s"],
                      "mpirun": dict(MPIRUN_AT_RUN_TIME)})
        sections.append({"label": collective, "how": "nccl", "check": "nccl.%s" % collective,
                         "collective": collective, "argv": argv, "env": env, "hosts": list(nodes),
                         "launch": "mpirun"})
    return steps, sections


def _multinode_gpus(tool, pod, nodes, per_gpu):
    """GPUs per node of a multi-node run; AcceptanceError with fewer than 2 nodes or no GPU per node."""
    if len(nodes) < 2:
        raise AcceptanceError("%s needs at least 2 nodes, got %d" % (tool, len(nodes)))
    gpus = int(pod["gpus_per_pod"])
    if gpus < 1:
        raise AcceptanceError("%s needs gpus_per_pod >= 1 (%s)" % (tool, per_gpu))
    return gpus


# how each launcher's pods reach one another over ssh: the keys (the per-run Secret on the Indexed path; the keys the
# operator mounts at /root/.ssh otherwise: mpi-operator's sshAuthMountPath, Volcano's ssh plugin, both id_rsa and
# authorized_keys) and the DNS names of the workers and the launcher (the operators' hostname.subdomain)
OPERATOR_KEYS = {"keys_dir": "/root/.ssh", "host_key": "id_rsa", "authorized_keys": "authorized_keys"}
INDEXED_KEYS = {"keys_dir": km.KEYS_MOUNT, "host_key": "id_ed25519", "authorized_keys": "id_ed25519.pub"}
# the hostfile mpi-operator mounts on its launcher (every version), its workers' names in its own naming
MPI_HOSTFILE = "/etc/mpi/hostfile"
# Open MPI (ORTE, 4.x) strips -H/hostfile names at the first '.' unless told not to (mpi-operator sets the same)
KEEP_FQDN_ENV = {"OMPI_MCA_orte_keep_fqdn_hostnames": "true"}
# a launcher that holds no GPU sees none through the NVIDIA runtime (mpi-operator's nvidiaDisableEnvVars)
NO_GPU_ENV = {"NVIDIA_VISIBLE_DEVICES": "", "NVIDIA_DRIVER_CAPABILITIES": ""}


def rsh_args(port, key, extra=None):
    """Open MPI's plm_rsh_args: the workers' sshd port and the key, no host key prompts or known_hosts writes (the
    image's ssh_config is not relied on), mpi-operator's ConnectionAttempts=10; then the user's own words."""
    words = ("-p %d -i %s -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o ConnectionAttempts=10 "
             "-o LogLevel=ERROR" % (int(port), key))
    return words + (" " + str(extra) if extra else "")


def forwarded_env(pod, opts):
    """Names mpirun forwards from the launcher's environment with ``-x``: the user's mpirun_env_forward, then every
    pod env name (ranks that orted starts through sshd get a fresh environment) not already set with NAME=VALUE."""
    given = set(nccl_tests.run_env(opts))
    names = list(opts.get("mpirun_env_forward") or [])
    for name in sorted(str(k) for k in pod.get("env") or {}):
        if name not in given and name not in names:
            names.append(name)
    return names


def _multinode_steps(plan, pod, nodes, opts, launcher, mpi_service=None):
    gpus = _multinode_gpus(plan["kind"], pod, nodes, "one MPI rank per GPU")
    ctx = {"plan": plan, "pod": pod, "nodes": nodes, "opts": opts, "gpus": gpus,
           "name": km.object_name(plan["run_id"], "mn"), "env": nccl_tests.run_env(opts), "mpi_service": mpi_service,
           "spread": {km.RUN_LABEL: plan["run_id"], km.ROLE_LABEL: "worker"},
           "search": "%s.%s.svc.%s" % (km.object_name(plan["run_id"], "mn"), pod["namespace"],
                                       opts["cluster_domain"])}

    def nccl(collective):
        return nccl_tests.nccl_argv(_bin(opts["tool_dir"], nccl_tests.binary_name(collective)), opts,
                                    gpus_per_process=1)

    def sections_for(hosts, keys, hostfile=None):
        mca = dict(opts["mpirun_mca"])
        # one ssh-args parameter, plm_rsh_args: Open MPI 4 (ORTE) knows only that name, and PRRTE (Open MPI 5)
        # renames it to plm_ssh_args (schizo_base_stubs.c); a plm_ssh_args of the user's given as well would
        # come after it and replace it under PRRTE (its -p and key dropped), and be ignored under ORTE
        user = " ".join(str(mca.pop(k)) for k in ("plm_rsh_args", "plm_ssh_args") if mca.get(k))
        mca["plm_rsh_args"] = rsh_args(opts["ssh_port"], keys["keys_dir"] + "/" + keys["host_key"], user or None)
        launch = dict(opts, ranks_per_node=gpus, hosts=hosts, mpirun_mca=mca,
                      mpirun_env_forward=forwarded_env(pod, opts))
        return _mpi_sections(opts, lambda c: nccl_tests.launch_argv(nccl(c), opts["mpirun"], launch, ctx["env"],
                                                                    hostfile=hostfile, allow_run_as_root=True), nodes)

    ctx["sections_for"] = sections_for
    if launcher == "indexed":
        return _indexed_steps(ctx)
    return _operator_steps(ctx, launcher)


def _indexed_steps(ctx):
    """No operator: an Indexed Job (one pod per node) + headless Service; index 0 serves sshd and launches."""
    plan, pod, nodes, opts, name = ctx["plan"], ctx["pod"], ctx["nodes"], ctx["opts"], ctx["name"]
    hosts = ["%s-%d.%s" % (name, i, name) for i in range(len(nodes))]
    steps, sections = ctx["sections_for"](hosts, INDEXED_KEYS)
    sshd = dict(INDEXED_KEYS, port=opts["ssh_port"], wait_s=pod["active_deadline_s"],
                alive="%s:%d" % (hosts[0], opts["alive_port"]))
    spec = {"launcher": {"steps": steps, "wait_hosts": hosts[1:], "wait_port": opts["ssh_port"],
                         "wait_s": opts["wait_workers_s"], "alive_port": opts["alive_port"], "sshd": sshd},
            "worker": sshd}
    keys = [{"name": "ssh-keys", "secret": {"secretName": plan["secret"], "defaultMode": 0o400}}]
    spec_pod = km.pod_spec(pod, [km.container(pod, "nccl", _entry(pod, "indexed", spec),
                                              extra_env=dict(ctx["env"], **KEEP_FQDN_ENV),
                                              mounts=[{"name": "ssh-keys", "mountPath": km.KEYS_MOUNT,
                                                       "readOnly": True}],
                                              ports=[("ssh", opts["ssh_port"]), ("alive", opts["alive_port"])])],
                           plan["code_config_map"], plan["code_items"], nodes=nodes, spread_label=ctx["spread"],
                           subdomain=name, volumes=keys, dns_searches=[ctx["search"]])
    job = km.job(name, pod, plan["run_id"], plan["kind"], spec_pod, role="worker", indexed_count=len(nodes))
    _with_template_labels(job, {STEP_LABEL: "mn", km.ROLE_LABEL: "worker"})
    svc = km.headless_service(name, pod, plan["run_id"], plan["kind"],
                              {km.RUN_LABEL: plan["run_id"], STEP_LABEL: "mn"},
                              [("ssh", opts["ssh_port"]), ("alive", opts["alive_port"])])
    return [{"name": "mn", "objects": [svc, job], "fail_fast": True, "done_selector": None,
             "expected_pods": len(nodes),
             "slots": [{"slot": "mn-launcher", "job": name, "index": 0, "node": None, "role": "launcher",
                        "peer": None, "sections": sections}]}]


def _operator_steps(ctx, launcher):
    """MPIJob (mpi-operator) or Volcano Job: workers serve sshd through the entry program on ssh_port with the keys
    the operator mounts (Ready once it listens); the launcher, pinned to the run's nodes with cpu/memory requests and
    no GPU, waits until every worker answers on that port, then runs mpirun (with the workers' names on Volcano,
    the operator's hostfile on MPIJob), and keeps the alive port open until it ends: the workers' cue to stop."""
    plan, pod, nodes, opts, name = ctx["plan"], ctx["pod"], ctx["nodes"], ctx["opts"], ctx["name"]
    if launcher == "mpijob":
        # the workers' Service: "<job>" (mpi-operator v0.5 on), "<job>-worker" (v0.4.x); the launcher's run takes the
        # names of the operator's hostfile when it has one (whatever the version: when the check could not tell)
        svc = name + "-worker" if ctx["mpi_service"] == "worker" else name
        hosts = ["%s-worker-%d.%s" % (name, i, svc) for i in range(len(nodes))]
        launcher_host = "%s-launcher.%s" % (name, svc)
        steps, sections = ctx["sections_for"](hosts, OPERATOR_KEYS, hostfile=MPI_HOSTFILE)
        # mpi-operator sets keep_fqdn and the NVIDIA_* blanks on its launcher, the DNS search entry on its workers
        searches, launcher_env = None, ctx["env"]
    else:
        hosts = ["%s-mpiworker-%d.%s" % (name, i, name) for i in range(len(nodes))]
        launcher_host = "%s-mpimaster-0.%s" % (name, name)
        steps, sections = ctx["sections_for"](hosts, OPERATOR_KEYS)
        searches, launcher_env = [ctx["search"]], dict(ctx["env"], **dict(KEEP_FQDN_ENV, **NO_GPU_ENV))
    # the workers start before the launcher (which the operator may create only once they are Ready): they serve
    # until the launcher's alive port closes, at the latest its deadline plus start-up
    sshd = dict(OPERATOR_KEYS, port=opts["ssh_port"], wait_s=pod["active_deadline_s"] + START_UP_S,
                alive="%s:%d" % (launcher_host, opts["alive_port"]))
    worker_spec = km.pod_spec(pod, [km.container(pod, "worker", _entry(pod, "sshd", sshd), extra_env=ctx["env"],
                                                 ports=[("ssh", opts["ssh_port"])], readiness_port=opts["ssh_port"])],
                              plan["code_config_map"], plan["code_items"], nodes=nodes, spread_label=ctx["spread"],
                              dns_searches=searches)
    run = {"steps": steps, "wait_hosts": hosts, "wait_port": opts["ssh_port"], "wait_s": opts["wait_workers_s"],
           "alive_port": opts["alive_port"]}
    if launcher == "mpijob":
        run["wait_hostfile"] = MPI_HOSTFILE
    # the launcher holds no GPU and needs no host network; pinned to the run's nodes, where the pod's runtime
    # class, tolerations and node labels were meant to apply
    launcher_pod = dict(pod, host_network=False, resources={})
    requests = {"cpu": str(opts["launcher_cpu"]), "memory": str(opts["launcher_memory"])}
    launcher_spec = km.pod_spec(launcher_pod, [km.container(launcher_pod, "launcher", _entry(pod, "run", run), gpus=0,
                                                            extra_env=launcher_env, requests=requests,
                                                            ports=[("alive", opts["alive_port"])])],
                                plan["code_config_map"], plan["code_items"], nodes=nodes, dns_searches=searches)
    if launcher == "mpijob":
        obj = km.mpi_job(name, pod, plan["run_id"], launcher_spec, worker_spec, len(nodes), ctx["gpus"], plan["kind"])
    else:
        # a Volcano Job has no deadline of its own: each pod has one (from its start), the workers' past the
        # launcher's
        launcher_spec["activeDeadlineSeconds"] = int(pod["active_deadline_s"])
        worker_spec["activeDeadlineSeconds"] = int(pod["active_deadline_s"]) + START_UP_S
        obj = km.volcano_job(name, pod, plan["run_id"], launcher_spec, worker_spec, len(nodes), plan["kind"])
    _with_template_labels(obj, {STEP_LABEL: "mn"})
    # planned_pods: the launcher and a worker per node - one the operator cannot create (a quota, a webhook) is
    # looked for in its events though the launcher exists
    return [{"name": "mn", "objects": [obj], "fail_fast": True, "expected_pods": 1, "planned_pods": len(nodes) + 1,
             "done_selector": "%s=launcher" % km.ROLE_LABEL,
             "slots": [{"slot": "mn-launcher", "job": name, "node": None, "role": "launcher", "peer": None,
                        "sections": sections}]}]


def _probe_steps(plan, pod, nodes, opts):
    """The torch all-reduce probe across nodes: an Indexed Job (one pod per node) + headless Service; torchrun in
    every pod with env rendezvous on the index-0 pod's DNS name; rank 0 writes the nccl-tests style JSON."""
    gpus = _multinode_gpus(plan["kind"], pod, nodes, "one process per GPU")
    run_id = plan["run_id"]
    name = km.object_name(run_id, "ar")
    master = "%s-0.%s" % (name, name)
    argv = [opts["torchrun"], "--nnodes", str(len(nodes)), "--nproc-per-node", str(gpus),
            "--node-rank", k8s_entry.INDEX_WORD, "--master-addr", master, "--master-port", str(opts["master_port"]),
            WORKER] + torch_allreduce.worker_args(opts) + ["--launcher", "env", "--json-out", PROBE_RESULT]
    env = dict((str(k), str(v)) for k, v in (opts.get("env") or {}).items())
    steps = [{"label": "allreduce", "argv": argv, "timeout_s": opts["timeout_s"], "result_file": PROBE_RESULT}]
    sections = [{"label": "allreduce", "how": "probe", "check": "nccl.torch_all_reduce", "argv": argv,
                 "env": env, "hosts": list(nodes), "ranks_per_node": gpus}]
    spread = {km.RUN_LABEL: run_id, km.ROLE_LABEL: "worker"}
    spec = km.pod_spec(pod, [km.container(pod, "allreduce", _entry(pod, "run", {"steps": steps}), extra_env=env,
                                          ports=[("rendezvous", opts["master_port"])])],
                       plan["code_config_map"], plan["code_items"], nodes=nodes, spread_label=spread, subdomain=name)
    job = km.job(name, pod, run_id, plan["kind"], spec, role="worker", indexed_count=len(nodes))
    _with_template_labels(job, {STEP_LABEL: "ar", km.ROLE_LABEL: "worker"})
    svc = km.headless_service(name, pod, run_id, plan["kind"], {km.RUN_LABEL: run_id, STEP_LABEL: "ar"},
                              [("rendezvous", opts["master_port"])])
    return [{"name": "ar", "objects": [svc, job], "fail_fast": True, "done_selector": None,
             "expected_pods": len(nodes),
             "slots": [{"slot": "ar-rank0", "job": name, "index": 0, "node": None, "role": "launcher",
                        "peer": None, "sections": sections}]}]


# --------------------------------------------------------------------------- limits

# what a pod may spend before its first step (scheduling, image pull, volume mounts), on top of its steps' time in
# its activeDeadlineSeconds (a Job's deadline counts from its start), and what the module waits on top of that
START_UP_S = 600
# how long a perftest client pod waits for its server pod's entry program (the server's own start-up)
SERVER_READY_S = START_UP_S
# The env probe runs its commands one at a time, each within its ``timeout``; its npu group runs
# len(env_probe.HCCN_QUERIES) hccn_tool queries per NPU that `npu-smi info` lists on the node, a count the plan does
# not know and env_probe does not bound. The deadline allows for ENV_PROBE_MAX_NPUS: the devices of an Atlas 800T A3
# node (8 Ascend 910C of 2 dies each, hccn_tool device ids 0-15), the most of any Ascend server so far.
ENV_PROBE_MAX_NPUS = 16
# port_counters runs one ethtool -S per RDMA port with a network interface, a count the plan does not know: the
# deadline allows for 32 (a node of 8 dual-port HCAs and 16 more: more than any GPU server so far has)
PORT_COUNTERS_MAX_PORTS = 32


def env_probe_commands(opts, npus=ENV_PROBE_MAX_NPUS):
    """(count, how): the most commands env_probe.probe runs with ``opts`` on a node of ``npus`` NPUs, group by group
    as env_probe runs them (env and rdma read files only):
    - software: the python probe per interpreter (the probe's own, each of ``pythons``, python3 on PATH when it
      is another one), ``ldconfig -p``, and ``pip freeze`` per interpreter with ``pip_freeze``;
    - gpu: ``nvidia-smi -q -x``, its ``--query-gpu`` fallback, ``nvlink -s``, ``topo -m``;
    - npu: ``npu-smi info``, then each of env_probe.HCCN_QUERIES per NPU."""
    groups = opts.get("groups") or list(env_probe.GROUPS)
    parts = []
    if "software" in groups:
        pythons = 2 + len(set(opts.get("pythons") or []))
        parts.append(("software", pythons * (2 if opts.get("pip_freeze") else 1) + 1))
    if "gpu" in groups:
        parts.append(("gpu", 4))
    if "npu" in groups:
        parts.append(("npu %d NPUs" % npus, 1 + len(env_probe.HCCN_QUERIES) * npus))
    count = sum(n for _g, n in parts)
    return count, " + ".join("%s %d" % part for part in parts) or "no commands"


def pod_work_s(kind, opts):
    """(seconds, how) the longest pod of a plan may run its steps, from the options that bound each step."""
    if kind == "env_probe":
        count, how = env_probe_commands(opts)
        return count * int(opts["timeout_s"]), "%d probe commands (%s) x timeout_s %ss" % (count, how, opts["timeout_s"])
    if kind in ("gemm_bench", "allreduce_probe"):
        return int(opts["timeout_s"]), "timeout_s %ss" % opts["timeout_s"]
    if kind == "dcgm_diag":
        return dcgm.timeout_of(opts), "dcgmi diag level %s: %ss" % (opts["level"], dcgm.timeout_of(opts))
    if kind == "port_counters":     # one ethtool -S per port, each within timeout_s
        return PORT_COUNTERS_MAX_PORTS * int(opts["timeout_s"]), "%d ports x timeout_s %ss" % (
            PORT_COUNTERS_MAX_PORTS, opts["timeout_s"])
    if kind == "fabric_topology":     # the adapter's own bound of a host's commands (fabric_topology.Budget)
        work = fabric_topology.FIXED_COMMANDS * int(opts["timeout_s"]) + fabric_topology.PER_PORT_S * \
            fabric_topology.MAX_ASKED + k8s_entry.KILL_GRACE_S
        return work, "%d x timeout_s %ss + %d s x %d interfaces or NPUs + %d s kill-after" % (
            fabric_topology.FIXED_COMMANDS, opts["timeout_s"], fabric_topology.PER_PORT_S, fabric_topology.MAX_ASKED,
            k8s_entry.KILL_GRACE_S)
    if kind == "gpu_soak":
        return soak.timeout_s(opts), "duration_s %ss + %ss" % (opts["duration_s"], soak.OVERHEAD_S)
    if kind == "copy_bandwidth":
        facts = 2 * copy_bandwidth.FACT_S if opts["use_nvbandwidth"] == "always" else 0
        return int(opts["timeout_s"]) + facts, "timeout_s %ss + %ss of nvidia-smi queries" % (opts["timeout_s"], facts)
    if kind == "perftest_sweep":     # rails at once; a client waits for its server pod, retries its connect until
        # connect_timeout_s, then runs
        return SERVER_READY_S + int(opts["connect_timeout_s"]) + int(opts["timeout_s"]), (
            "the server's start %ss + connect_timeout_s %ss + timeout_s %ss" % (
                SERVER_READY_S, opts["connect_timeout_s"], opts["timeout_s"]))
    count = len(opts["collectives"] or [])
    steps = count * int(opts["timeout_s"])
    how = "%d collectives x timeout_s %ss" % (count, opts["timeout_s"])
    if kind == "nccl_test_multinode":   # the launcher waits for every worker's sshd first
        return int(opts["wait_workers_s"]) + steps, "wait_workers_s %ss + %s" % (opts["wait_workers_s"], how)
    return steps, how


def deadline_of(kind, pod, opts):
    """The pods' activeDeadlineSeconds: the pod option, else its steps' time plus START_UP_S. AcceptanceError when
    an explicit one does not cover the steps (the deadline would kill a pod in the middle of a step)."""
    work, how = pod_work_s(kind, opts)
    if pod.get("active_deadline_s") is None:
        return work + START_UP_S
    deadline = int(pod["active_deadline_s"])
    if deadline < work:
        raise AcceptanceError("active_deadline_s %d does not cover the steps of a %s pod: %s = %d s; give at least %d "
                              "(better %d, with %d s to start) or leave it unset" % (
                                  deadline, kind, how, work, work, work + START_UP_S, START_UP_S))
    return deadline


def check_timeout(plan, timeout, explicit_deadline):
    """(wait, warning or None): the module's wait per step, ``timeout``, else the plan's (its pods' deadline plus
    start-up). Refused when the user set both and the wait does not cover the deadline plus start-up (the module
    would stop pods still within their own limits); an explicit wait alone is the user's bound on waiting, kept with
    a warning when it is shorter than the deadline plus start-up."""
    if timeout is None:
        return plan["timeout_s"], None
    if int(timeout) >= plan["timeout_s"]:
        return int(timeout), None
    if explicit_deadline:
        raise AcceptanceError("timeout_s %s is shorter than active_deadline_s %s plus %d s of start-up (%d): the module "
                              "would stop pods still within their deadline; raise timeout_s or leave it unset"
                              % (timeout, plan["deadline_s"], START_UP_S, plan["timeout_s"]))
    return int(timeout), ("timeout_s %d is shorter than the pods' deadline %d s plus %d s of start-up (%d s): pods "
                          "still inside their deadline will be stopped at %d s and count as timed out; raise timeout_s "
                          "or leave it unset to wait as long as the pods may run" % (
                              int(timeout), plan["deadline_s"], START_UP_S, plan["timeout_s"], int(timeout)))


def current_kind(kind):
    """(the kind ``kind`` names, the deprecation warning for a name before 2.0.0 or None): KINDS_RENAMED's one mapping."""
    if kind in KINDS_RENAMED:
        return KINDS_RENAMED[kind], ("kind %s is deprecated: kinds carry their module's name since 2.0.0, use kind %s "
                                     "(%s is accepted until %s)" % (kind, KINDS_RENAMED[kind], kind, KINDS_RENAMED_UNTIL))
    return kind, None


def build(kind, nodes, pod, run_id, options=None, rounds=None, launcher="indexed", ssh_keys=None, mpi_service=None):
    """The plan of one check over ``nodes`` (node names). Raises AcceptanceError on bad input. ``mpi_service``: the
    mpi-operator's naming of its workers' Service (k8s_run.mpi_operator_service: "job", "worker" or None)."""
    if kind not in KINDS:
        raise AcceptanceError("kind %r is not one of %s" % (kind, ", ".join(KINDS)))
    km.check_run_id(run_id)
    pod = km.pod_options(pod)
    nodes = list(nodes or [])
    if not nodes:
        raise AcceptanceError("no nodes selected (give nodes, or a node selector that matches nodes)")
    if len(set(nodes)) != len(nodes):
        raise AcceptanceError("duplicate node names in %s" % nodes)
    opts = options_of(kind, options)
    _check_kubernetes_options(kind, opts)
    pod["active_deadline_s"] = deadline_of(kind, pod, opts)
    code = code_files()
    plan = {"run_id": run_id, "namespace": pod["namespace"], "kind": kind, "launcher": None,
            "deadline_s": pod["active_deadline_s"], "timeout_s": pod["active_deadline_s"] + START_UP_S,
            "code_config_map": km.object_name(run_id, "code"), "code_items": km.code_volume_items(code),
            "secret": None, "setup": [], "steps": []}
    plan["setup"].append(km.config_map(plan["code_config_map"], pod, run_id, code))
    if kind in ("env_probe", "gemm_bench", "nccl_test", "gpu_soak", "copy_bandwidth") or kind in HOST_ADAPTER_KINDS:
        if kind == "copy_bandwidth" and opts["use_nvbandwidth"] == "auto":
            raise AcceptanceError("copy_bandwidth: in a pod say which tool the image has: use_nvbandwidth: never (the "
                                  "collection's PyTorch worker) or use_nvbandwidth: always")
        plan["steps"] = _per_node_step(plan, pod, kind, nodes, opts)
    elif kind == "perftest_sweep":
        if rounds is None:
            raise AcceptanceError("perftest_sweep needs rounds of [server, client] pairs (the aifabric.acceptance.pairings "
                                  "filter gives them)")
        for pairs in rounds:
            seen = [n for pair in pairs for n in pair]
            if len(set(seen)) != len(seen) or any(len(pair) != 2 for pair in pairs):
                raise AcceptanceError("a round must be disjoint [server, client] pairs, got %s" % (pairs,))
            unknown = sorted(set(seen) - set(nodes))
            if unknown:
                raise AcceptanceError("rounds name nodes that are not selected: %s" % ", ".join(unknown))
        plan["steps"] = _perftest_steps(plan, pod, rounds, opts)
    elif kind == "allreduce_probe":
        plan["steps"] = _probe_steps(plan, pod, nodes, opts)
    else:
        if launcher not in LAUNCHERS or launcher == "auto":
            raise AcceptanceError("launcher must be resolved to indexed, mpijob or volcano, got %r" % (launcher,))
        plan["launcher"] = launcher
        if launcher == "indexed":
            if not ssh_keys:
                raise AcceptanceError("the indexed launcher needs a per-run ssh key pair (ssh_keys)")
            plan["secret"] = km.object_name(run_id, "ssh")
            plan["setup"].append(km.secret(plan["secret"], pod, run_id, ssh_keys))
        plan["steps"] = _multinode_steps(plan, pod, nodes, opts, launcher, mpi_service)
    plan["options"] = opts
    return plan


def objects_of(plan):
    """Every manifest of the plan in creation order."""
    out = list(plan["setup"])
    for step in plan["steps"]:
        out.extend(step["objects"])
    return out


# --------------------------------------------------------------------------- logs -> records

def split_sections(text):
    """{label: (tool text, end info dict or None)} and the notes the entry program printed."""
    sections, notes = {}, []
    label, lines = None, []
    for line in (text or "").splitlines():
        if line.startswith(k8s_entry.BEGIN):
            label, lines = line[len(k8s_entry.BEGIN):].strip(), []
            continue
        if label is not None and (line == k8s_entry.END + label or line.startswith(k8s_entry.END + label + " ")):
            rest = line[len(k8s_entry.END + label):].strip()
            try:
                info = json.loads(rest) if rest else {}
            except ValueError:
                info = {}
            sections[label] = ("\n".join(lines) + ("\n" if lines else ""), info if isinstance(info, dict) else {})
            label = None
            continue
        if label is not None:
            lines.append(line)
        elif line.startswith(k8s_entry.NOTE):
            try:
                notes.append(json.loads(line[len(k8s_entry.NOTE):]))
            except ValueError:
                notes.append({"note": line[len(k8s_entry.NOTE):][:200]})
    if label is not None:  # cut off inside a section: the pod died while the tool ran
        sections[label] = ("\n".join(lines) + "\n", None)
    return sections, notes


def env_records_of(text):
    """The env probe's records from an ``env`` pod's log, or None when the line is missing or unreadable."""
    for line in (text or "").splitlines():
        if line.startswith(k8s_entry.RECORDS):
            try:
                records = json.loads(line[len(k8s_entry.RECORDS):])
            except ValueError:
                return None
            if isinstance(records, list) and records and \
                    all(isinstance(r, dict) and not results.validate(r) for r in records):
                return records
            return None
    return None


def _pod_reason(outcome):
    if not outcome:
        return "the pod never appeared"
    what = outcome.get("outcome")
    where = " on %s" % outcome["node"] if outcome.get("node") else ""
    text = "pod %s%s: %s" % (outcome["name"], where, what) if outcome.get("name") else "%s%s" % (what, where)
    detail = "; ".join(str(x) for x in (outcome.get("reason"), outcome.get("message")) if x)
    if outcome.get("exit_code") not in (None, 0):
        detail = "; ".join(x for x in (detail, "exit code %s" % outcome["exit_code"]) if x)
    return text + (" (%s)" % detail if detail else "")


def _k8s_params(plan, slot, outcome, section=None, ran=None):
    out = {"substrate": "kubernetes", "namespace": plan["namespace"], "job": slot["job"],
           "pod": (outcome or {}).get("name"), "run_id": plan["run_id"]}
    if plan.get("launcher"):
        out["launcher"] = plan["launcher"]
    if ran or (section and section.get("argv")):
        out["argv"] = ran or section["argv"]      # what the pod ran (its END line), else what was planned
    if section and section.get("hosts"):
        out["hosts"] = list(section["hosts"])     # every node of a multi-node run (fleet verdicts account for it)
    else:
        # the nodes this record measured: the module runs once for the whole play, and the report must not
        # take a per-node record as a run on behalf of every host of the play
        out["hosts"] = [n for n in (slot.get("node") or (outcome or {}).get("node"), slot.get("peer")) if n]
    return out


def _stamp(records, plan, slot, outcome, node, section=None, ran=None):
    out = []
    for record in records:
        record = dict(record)
        record["host"] = node if node else record.get("host")
        if slot.get("peer") and not record.get("peer"):
            record["peer"] = slot["peer"]
        params = dict(record.get("params") or {})
        params.update(_k8s_params(plan, slot, outcome, section, ran))
        record["params"] = params
        out.append(record)
    return out


def peer_rates_of(records, devices):
    """The port rates (Gbit/s) of ``devices`` (rail order) that a perftest server pod's records report, or None."""
    by_target = dict((r.get("target"), (r.get("facts") or {}).get("port_rate_gbit_s")) for r in records)
    rates = [by_target.get(d) for d in devices]
    return rates if any(rates) else None


def slot_records(plan, slot, outcome, log_text, started=None, peer_rates=None):
    """The records of one planned pod from its outcome (k8s_api.wait) and its log. Never raises on a log.

    ``peer_rates``: a perftest client's server port rates per rail (peer_rates_of the server's records), so the
    bandwidth floor is the lower port rate of both ends, as on the SSH path."""
    node = slot.get("node") or (outcome or {}).get("node")
    hosts = next((s["hosts"] for s in slot["sections"] if s.get("hosts")), None)
    if hosts and node not in hosts:
        node = hosts[0]     # an operator's launcher pod runs on any node: the run belongs to its first node
    opts = plan["options"]
    sections, notes = split_sections(log_text)
    ok = (outcome or {}).get("outcome") == "succeeded"
    out = []
    for section in slot["sections"]:
        how = section["how"]
        if how in ("env", "records"):
            records = env_records_of(log_text)
            if records is not None:
                out.extend(_stamp(records, plan, slot, outcome, node))
                continue
            piece = None
        else:
            piece = sections.get(section["label"])
        if piece is None or (piece[1] is None and not ok):
            reason = _pod_reason(outcome) if not ok else "the pod finished but its log has no %s output" % how
            if piece is not None:
                reason += "; the log stops while %s ran" % section["label"]
            if notes:
                reason += "; %s" % json.dumps(notes[-1], sort_keys=True)
            raw = (piece[0] if piece else None) or log_text or (outcome or {}).get("log_tail")
            out.extend(_stamp([results.error(section["check"], reason, raw=raw, target=section.get("device"),
                                             started=started, tool={"name": "kubernetes"})],
                              plan, slot, outcome, node, section))
            continue
        text, info = piece
        info = info or {}
        out.extend(_stamp(_records_of_section(section, text, info, opts, slot, node, started, sections, peer_rates),
                          plan, slot, outcome, node, section, info.get("argv")))
    return out


def _records_of_section(section, text, info, opts, slot, node, started, sections=None, peer_rates=None):
    if info.get("peers_missing") and section["how"] == "perftest":
        return [results.error(section["check"], "the server pod %s was not up within %s s (its pod's outcome says "
                              "why); the client never ran" % (", ".join(info["peers_missing"]), SERVER_READY_S),
                              target=section["device"], peer=slot.get("peer"), raw=text, started=started,
                              tool={"name": "kubernetes"})]
    if info.get("peers_missing"):
        return [results.error(section["check"], "workers did not answer ssh in time: %s"
                              % ", ".join(info["peers_missing"]), raw=text, started=started,
                              tool={"name": "kubernetes"})]
    if section["how"] == "perftest" and info.get("plan_error"):
        return [results.error(section["check"], "perftest could not plan %s on %s: %s"
                              % (section["device"], node, info["plan_error"]), target=section["device"],
                              peer=slot.get("peer"), started=started, tool={"name": "perftest"})]
    adapter, ctx = _adapter_and_context(section, info, opts, slot, node, started, sections, peer_rates)
    return adapter.records(text, ctx)


def _adapter_and_context(section, info, opts, slot, node, started, sections, peer_rates):
    """The tool adapter of a log section and the Context of its run (what the SSH path passes for the same run)."""
    how = section["how"]
    ctx = Context(params=opts, rc=info.get("rc"), duration_s=info.get("elapsed_s"), started=started,
                  argv=section.get("argv"))
    if how == "gemm":
        from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import gemm_bench as gemm
        return gemm, ctx
    if how == "soak":
        return soak, replace(ctx, python=opts.get("python") or "python3")
    if how == "copy":
        facts = dict((key, ((sections or {}).get(label) or ("",))[0] or "")
                     for key, label in (("pcie_csv", "copy_pcie"), ("nvlink_status", "copy_nvlink")))
        return copy_bandwidth, replace(ctx, facts=facts)
    if how == "probe":
        from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import (
            allreduce_probe as torch_allreduce)
        document = (sections or {}).get(section["label"] + ".file")
        return torch_allreduce, replace(ctx, document=document[0] if document else None, nodes=len(section["hosts"]),
                                        env=section.get("env"), launcher="torchrun",
                                        ranks_per_node=section.get("ranks_per_node"), hosts=section.get("hosts"))
    if how == "nccl":
        from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import nccl_test as nccl_tests
        # an mpirun argv as the launcher ran it (k8s_entry.mpirun_argv completes it in the pod)
        return nccl_tests, replace(ctx, argv=info.get("argv") or section.get("argv"), hosts=section.get("hosts"),
                                   collective=section["collective"],
                                   env=section.get("env"), launch=section.get("launch"))
    from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import perftest_sweep as perftest
    params = dict(opts, peer_name=slot.get("peer"))
    if peer_rates:
        params["peer_rates_gbit_s"] = peer_rates
    return perftest, replace(ctx, params=params, side=section["side"], host=node, target=section["device"],
                             index=section["index"], argv=info.get("argv") or section.get("argv"),
                             facts=info.get("facts") or section.get("facts"), timed_out=bool(info.get("timed_out")),
                             attempts=info.get("attempts") or 1)


def slot_of_outcome(step, outcome):
    """The planned slot a pod outcome belongs to (by its slot label; Indexed Job pods by completion index)."""
    labels = outcome.get("labels") or {}
    annotations = outcome.get("annotations") or {}
    for slot in step["slots"]:
        if labels.get(SLOT_LABEL) == slot["slot"]:
            return slot
        if slot.get("index") is not None and labels.get(SLOT_LABEL) is None:
            index = annotations.get(INDEX_ANNOTATION, labels.get(INDEX_ANNOTATION))
            if str(index) == str(slot["index"]) and labels.get("job-name") == slot["job"]:
                return slot
        if slot["role"] == "launcher" and labels.get(km.ROLE_LABEL) == "launcher":
            return slot
    return None
