# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The defects of issue 22 ("Kubernetes that works on a real cluster") that tests/integration/test_k8s_cluster_semantics.py
does not show: 2, 3, 4, 6, 9 and 10. Each is a test of what a correct implementation must render (the plan's objects,
the device plugin's manifests, the rdma_device_plugin role with its defaults and shipped RBAC), run against today's
code and expected to fail (strict) with the defect named, until issue 22 fixes it; the fix flips it to a pass, and
then its mark goes. Each collects every problem it finds, so the failure message lists them all."""

from __future__ import annotations

import json
import os
import re

import pytest
import yaml

from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_device_plugin as dp
from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_manifests as km
from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_plan
from ansible_collections.aifabric.acceptance.tests.unit.plugins.module_utils import k8s_cases as cases

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
ROLE = os.path.join(ROOT, "roles", "rdma_device_plugin")
NODES = ["gpu-node-01", "gpu-node-02"]
SSH_PORT = k8s_plan.DEFAULTS["nccl_test_multinode"]["ssh_port"]          # 2222
# the example inventory's setting (host network) and a pod env that must reach every rank
POD = dict(cases.FULL_POD, host_network=True, env={"NCCL_IB_GID_INDEX": "3", "NCCL_DEBUG": "INFO"})
GPU_TAINT = {"key": "nvidia.com/gpu", "effect": "NoSchedule"}
OPERATOR = ["mpijob", "volcano"]


def multinode(launcher, pod=None):
    """The objects and the mpirun argv of every section of an nccl_multinode plan."""
    plan = k8s_plan.build("nccl_test_multinode", NODES, dict(POD if pod is None else pod), "d22",
                          {"collectives": ["all_reduce"], "tool_dir": "/opt/nccl-tests/build"}, launcher=launcher,
                          ssh_keys=cases.KEYS if launcher == "indexed" else None)
    argvs = [s["argv"] for step in plan["steps"] for slot in step["slots"] for s in slot["sections"]]
    return k8s_plan.objects_of(plan), argvs


def templates(objects):
    """(role, pod spec) of every pod template: Job's, MPIJob's replicas', Volcano Job's tasks'."""
    out = []
    for obj in objects:
        spec = obj.get("spec") or {}
        if obj["kind"] == "Job" and "template" in spec:
            out.append(((spec["template"]["metadata"].get("labels") or {}).get(km.ROLE_LABEL, "worker"),
                        spec["template"]["spec"]))
        for name, replica in (spec.get("mpiReplicaSpecs") or {}).items():
            out.append(("launcher" if name == "Launcher" else "worker", replica["template"]["spec"]))
        for task in spec.get("tasks") or []:
            out.append((task["template"]["metadata"]["labels"][km.ROLE_LABEL], task["template"]["spec"]))
    return out


def entry_spec(command):
    """The --spec of the collection's entry program when ``command`` starts it, else None."""
    if k8s_plan.ENTRY not in command or "--spec" not in command:
        return None
    return json.loads(command[command.index("--spec") + 1])


def _walk(node, key=None):
    if isinstance(node, dict):
        yield key, node
        for k, v in node.items():
            yield from _walk(v, k)
    elif isinstance(node, list):
        for v in node:
            yield from _walk(v, key)


def sshd_ports(container):
    """The ports the container's sshd listens on: the entry program's sshd set-up ({port, keys_dir}), or a plain
    sshd's ``-p`` (22 without it); [] when it starts no sshd."""
    command = [str(w) for w in container.get("command") or []] + [str(w) for w in container.get("args") or []]
    spec = entry_spec(command)
    if spec is not None:
        return sorted(set(d["port"] for key, d in _walk(spec)
                          if "port" in d and ("keys_dir" in d or key in ("sshd", "worker"))))
    if command and command[0].endswith("sshd"):
        return [int(command[command.index("-p") + 1])] if "-p" in command else [22]
    return []


def rsh_args(argv, launcher_container):
    """Open MPI's plm_rsh_args for an mpirun argv: its --mca, else the launcher's OMPI_MCA_plm_rsh_args env."""
    for i, word in enumerate(argv[:-2]):
        if word == "--mca" and argv[i + 1] == "plm_rsh_args":
            return argv[i + 2]
    env = dict((e["name"], e.get("value")) for e in launcher_container.get("env") or [])
    return env.get("OMPI_MCA_plm_rsh_args") or ""


def launcher_container(objects):
    launchers = [spec for role, spec in templates(objects) if role == "launcher"]
    return launchers[0]["containers"][0] if launchers else {}


def rsh_port(args):
    found = re.search(r"(?:^|\s)-p\s*(\d+)", args)
    return int(found.group(1)) if found else 22


# --------------------------------------------------------------------------- defect 2

def _ssh_port_problems(launcher):
    objects, argvs = multinode(launcher)
    problems = []
    for role, spec in templates(objects):
        if role == "worker":
            ports = sshd_ports(spec["containers"][0])
            if ports != [SSH_PORT]:
                problems.append("%s worker's sshd listens on %s, not ssh_port %d (hostNetwork: the node's sshd holds "
                                "22)" % (launcher, ports, SSH_PORT))
    for argv in argvs:
        args = rsh_args(argv, launcher_container(objects))
        if rsh_port(args) != SSH_PORT:
            problems.append("%s mpirun's plm_rsh_args %r reach port %d, not %d"
                            % (launcher, args, rsh_port(args), SSH_PORT))
    for spec in [s for role, s in templates(objects)]:
        for run in [d for key, d in _walk(entry_spec(spec["containers"][0].get("command") or []) or {})]:
            if run.get("wait_hosts") and run.get("wait_port") != SSH_PORT:
                problems.append("%s launcher waits for port %s of the workers, not %d"
                                % (launcher, run["wait_port"], SSH_PORT))
    return problems


def test_defect2_indexed_workers_sshd_on_the_ssh_port():
    """The Indexed path already does it (the reference the operator launchers must follow)."""
    assert _ssh_port_problems("indexed") == []


@pytest.mark.parametrize("launcher", OPERATOR)
def test_defect2_operator_workers_sshd_on_the_ssh_port(launcher):
    problems = _ssh_port_problems(launcher)
    assert problems == [], "\n".join(problems)


# --------------------------------------------------------------------------- defect 3

@pytest.mark.parametrize("launcher", OPERATOR)
def test_defect3_operator_launchers_set_ssh_options_and_start_sshd_themselves(launcher):
    objects, argvs = multinode(launcher)
    problems = []
    for argv in argvs:
        args = rsh_args(argv, launcher_container(objects))
        for option in ("StrictHostKeyChecking=no", "UserKnownHostsFile=/dev/null", "ConnectionAttempts="):
            if option not in args:
                problems.append("%s plm_rsh_args %r lack -o %s" % (launcher, args, option))
    for role, spec in templates(objects):
        if role == "worker":
            command = spec["containers"][0].get("command") or []
            if entry_spec(command) is None or not sshd_ports(spec["containers"][0]):
                problems.append("%s worker starts %s, not the entry program's sshd set-up (%s sshd)"
                                % (launcher, command, k8s_plan.ENTRY))
    assert problems == [], "\n".join(problems)


# --------------------------------------------------------------------------- defect 4

def _forwarded(argv):
    """Names an mpirun argv exports to every rank with -x (NAME or NAME=VALUE)."""
    return set(argv[i + 1].split("=", 1)[0] for i, w in enumerate(argv[:-1]) if w == "-x")


def test_defect4_every_launcher_forwards_the_pod_env_to_remote_ranks():
    problems = []
    for launcher in ("indexed", "mpijob", "volcano"):
        argvs = multinode(launcher, dict(POD, env={"NCCL_IB_GID_INDEX": "3"}))[1]
        for argv in argvs:
            if "NCCL_IB_GID_INDEX" not in _forwarded(argv):
                problems.append("%s mpirun forwards %s, not NCCL_IB_GID_INDEX" % (launcher, sorted(_forwarded(argv))))
    assert problems == [], "\n".join(problems)


# --------------------------------------------------------------------------- defect 6

def test_defect6_use_cdi_mounts_the_cdi_directory():
    cfg = dp.config([{"resourceName": "hca_shared_devices_a", "resourcePrefix": "rdma", "rdmaHcaMax": 63,
                      "selectors": {"vendors": ["15b3"], "deviceIDs": ["1021"], "linkTypes": ["ether"]}}], 300)
    (ds,) = [o for o in dp.manifests(cfg, use_cdi=True) if o["kind"] == "DaemonSet"]
    spec = ds["spec"]["template"]["spec"]
    (container,) = spec["containers"]
    assert "--use-cdi" in (container.get("args") or [])
    volumes = dict((v["name"], (v.get("hostPath") or {}).get("path", "").rstrip("/")) for v in spec["volumes"])
    mounted = dict((volumes.get(m["name"]), m["mountPath"].rstrip("/")) for m in container["volumeMounts"])
    assert mounted.get("/var/run/cdi") == "/var/run/cdi", (
        "--use-cdi without the hostPath /var/run/cdi mounted at /var/run/cdi; hostPath -> mountPath: %s" % mounted)


# --------------------------------------------------------------------------- defect 9

def _render(value, variables):
    """Jinja templates of a task's args resolved against the role's variables (native types, a few passes)."""
    from jinja2.nativetypes import NativeEnvironment
    env = NativeEnvironment()
    for _pass in range(5):
        if isinstance(value, dict):
            return dict((k, _render(v, variables)) for k, v in value.items())
        if isinstance(value, list):
            return [_render(v, variables) for v in value]
        if not isinstance(value, str) or "{{" not in value:
            return value
        value = env.from_string(value).render(**variables)
    return value


def _role_probe():
    """(the probe task's args, the role defaults) of roles/rdma_device_plugin."""
    with open(os.path.join(ROLE, "tasks", "main.yml")) as handle:
        tasks = yaml.safe_load(handle)
    with open(os.path.join(ROLE, "defaults", "main.yml")) as handle:
        defaults = yaml.safe_load(handle)
    flat = [t for block in tasks for t in block.get("block", [block])]
    (probe,) = [t for t in flat if (t.get("aifabric.acceptance.k8s_workload") or {}).get("kind") == "env_probe"]
    return probe["aifabric.acceptance.k8s_workload"], defaults


def _tolerates(tolerations, taint):
    """Whether one of the tolerations tolerates the taint (its key, or an empty key with Exists; its effect or any)."""
    for tol in tolerations or []:
        key_ok = tol.get("key") == taint["key"] or (not tol.get("key") and tol.get("operator") == "Exists")
        if key_ok and tol.get("effect") in (None, "", taint["effect"]):
            return True
    return False


def _rights_in(path, namespace):
    """(apiGroup, resource, verb) the shipped RBAC file grants in ``namespace`` (Roles there, ClusterRoles bound)."""
    with open(path) as handle:
        items = yaml.safe_load(handle)["items"]
    roles = dict(((d["kind"], d["metadata"]["name"]), d) for d in items
                 if d["kind"] == "ClusterRole" or (d["kind"] == "Role" and d["metadata"].get("namespace") == namespace))
    out = set()
    for binding in items:
        in_namespace = binding["kind"] == "RoleBinding" and binding["metadata"].get("namespace") == namespace
        if binding["kind"] == "ClusterRoleBinding" or in_namespace:
            role = roles.get((binding["roleRef"]["kind"], binding["roleRef"]["name"]))
            for rule in (role or {}).get("rules", []):
                out.update((g, r, v) for g in rule["apiGroups"] for r in rule["resources"] for v in rule["verbs"])
    return out


# what a kind=env run of k8s_workload does in its namespace (extras/k8s/rbac.yml's Role, for the probe's objects)
PROBE_RIGHTS = [("", "configmaps", "create"), ("", "configmaps", "delete"), ("batch", "jobs", "create"),
                ("batch", "jobs", "delete"), ("", "pods", "list"), ("", "pods/log", "get")]


def test_defect9_device_plugin_role_probe_runs_with_the_shipped_settings():
    args, defaults = _role_probe()
    variables = dict(defaults, ansible_play_hosts_all=NODES, k8s_image="registry.example.com/acceptance/tools:1")
    resolved = _render(args, variables)
    problems = []
    for option in ("tolerations", "image_pull_secrets", "namespace"):
        if not re.search(r"\{\{\s*rdma_device_plugin_\w+", str(args.get(option, ""))):
            problems.append("the probe task's %s is no role variable: %r" % (option, args.get(option)))
    pod = dict((k, v) for k, v in resolved.items() if k in km.POD_DEFAULTS)
    plan = k8s_plan.build("env_probe", NODES, pod, "p9")
    for spec in [s for role, s in templates(k8s_plan.objects_of(plan))]:
        if spec.get("hostNetwork") is not True:
            problems.append("the probe pod is not on the host network (a pod netns hides the HCA's netdev)")
        if not _tolerates(spec.get("tolerations"), GPU_TAINT):
            problems.append("the probe pod does not tolerate nvidia.com/gpu:NoSchedule: %s" % spec.get("tolerations"))
    granted = _rights_in(os.path.join(ROOT, "extras", "k8s", "rbac-device-plugin.yml"), plan["namespace"])
    missing = [r for r in PROBE_RIGHTS if r not in granted]
    if missing:
        problems.append("the shipped rbac-device-plugin.yml gives no %s in the probe namespace %r"
                        % (missing, plan["namespace"]))
    problems = sorted(set(problems), key=problems.index)
    assert problems == [], "\n".join(problems)


# --------------------------------------------------------------------------- defect 10

def test_defect10_volcano_launcher_reachable_from_host_network_workers():
    objects = multinode("volcano")[0]
    (job,) = [o for o in objects if o["apiVersion"].startswith("batch.volcano.sh/")]
    specs = templates([job])
    workers_host = all(s.get("hostNetwork") for r, s in specs if r == "worker")
    launcher_host = all(s.get("hostNetwork") for r, s in specs if r == "launcher")
    svc = job["spec"]["plugins"].get("svc") or []
    assert workers_host, "the example setting is host-network workers"
    assert launcher_host or "--disable-network-policy=true" in svc, (
        "workers on the host network, launcher not (hostNetwork=%s), svc plugin args %s keep the NetworkPolicy"
        % (launcher_host, svc))
