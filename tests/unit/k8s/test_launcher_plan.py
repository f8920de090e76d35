# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 22's risky launcher items and the plan side of defects 1 and 8, on the rendered plan: workers Ready only
once their sshd listens, the MPIJob launcher waiting for the workers as Volcano's does, launcher pods pinned to the
run's nodes with cpu/memory requests and no GPU, pod annotations (Multus) on every pod template, Open MPI's host
names kept whole and resolvable, and limits that are consistent by construction (a pod's deadline covers its steps,
the module's wait covers the deadline, an explicit setting that breaks this is refused). Also the entry program's
sshd set-up started with an operator's key file names (real OpenSSH sshd)."""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import time

import pytest

from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_entry, k8s_plan
from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_manifests as km
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import AcceptanceError
from ansible_collections.aifabric.acceptance.tests.unit.plugins.module_utils import k8s_cases as cases

NODES = ["gpu-node-01", "gpu-node-02"]
SSH_PORT = k8s_plan.DEFAULTS["nccl_test_multinode"]["ssh_port"]
POD = dict(cases.FULL_POD, active_deadline_s=None)
OPTS = {"collectives": ["all_reduce"], "tool_dir": "/opt/nccl-tests/build"}


def multinode(launcher, pod=None, options=None):
    return k8s_plan.build("nccl_test_multinode", NODES, dict(POD if pod is None else pod), "l22", dict(OPTS, **(options or {})),
                          launcher=launcher, ssh_keys=cases.KEYS if launcher == "indexed" else None)


def templates(plan):
    """{role: pod template} of the plan's multi-node object (indexed: the one template, as 'worker')."""
    out = {}
    for obj in k8s_plan.objects_of(plan):
        spec = obj.get("spec") or {}
        if obj["kind"] == "Job" and "template" in spec:
            out["worker"] = spec["template"]
        for name, replica in (spec.get("mpiReplicaSpecs") or {}).items():
            out["launcher" if name == "Launcher" else "worker"] = replica["template"]
        for task in spec.get("tasks") or []:
            out[task["template"]["metadata"]["labels"][km.ROLE_LABEL]] = task["template"]
    return out


def entry_spec(container):
    command = container["command"]
    return json.loads(command[command.index("--spec") + 1])


def env_of(container):
    return dict((e["name"], e.get("value")) for e in container.get("env") or [])


# --------------------------------------------------------------------------- readiness and the launcher's wait

@pytest.mark.parametrize("launcher", ["mpijob", "volcano"])
def test_operator_workers_are_ready_only_once_their_sshd_listens(launcher):
    """mpi-operator's WaitForWorkersReady creates the launcher once the workers are Ready, and its Service publishes
    only Ready pods: Ready must mean 'sshd answers on ssh_port', not 'container started'."""
    (worker,) = templates(multinode(launcher))["worker"]["spec"]["containers"]
    assert worker.get("readinessProbe", {}).get("tcpSocket") == {"port": SSH_PORT}, worker.get("readinessProbe")
    assert {"containerPort": SSH_PORT, "name": "ssh", "protocol": "TCP"} in worker.get("ports", [])


@pytest.mark.parametrize("launcher,worker_name", [("mpijob", "worker"), ("volcano", "mpiworker")])
def test_operator_launchers_wait_for_every_workers_sshd(launcher, worker_name):
    """The MPIJob launcher waits for the workers exactly as Volcano's: every worker's DNS name on ssh_port, for
    wait_workers_s; and it keeps the alive port open, which the workers watch to know when to stop."""
    plan = multinode(launcher, options={"wait_workers_s": 123})
    tpl = templates(plan)
    run = entry_spec(tpl["launcher"]["spec"]["containers"][0])
    hosts = ["aif-l22-mn-%s-%d.aif-l22-mn" % (worker_name, i) for i in range(len(NODES))]
    assert (run.get("wait_hosts"), run.get("wait_port"), run.get("wait_s")) == (hosts, SSH_PORT, 123)
    sshd = entry_spec(tpl["worker"]["spec"]["containers"][0])
    assert sshd["alive"].endswith(":%d" % run["alive_port"])
    # the operators mount their keys at /root/.ssh as id_rsa + authorized_keys; mpirun's ssh uses that key
    assert (sshd["keys_dir"], sshd["host_key"], sshd["authorized_keys"]) == ("/root/.ssh", "id_rsa", "authorized_keys")
    for section in plan["steps"][0]["slots"][0]["sections"]:
        argv = section["argv"]
        assert "-i /root/.ssh/id_rsa" in argv[argv.index("plm_rsh_args") + 1]


# --------------------------------------------------------------------------- launcher pods

@pytest.mark.parametrize("launcher", ["mpijob", "volcano"])
def test_launcher_pods_are_pinned_to_the_runs_nodes_and_hold_no_gpu(launcher):
    """The launcher keeps the pod's runtime class, tolerations and node labels (meant for the GPU nodes): so it is
    pinned to the run's nodes, and holds no GPU nor extended resource; on Volcano (the operator does it on MPIJob)
    the NVIDIA runtime is told to expose none."""
    spec = templates(multinode(launcher))["launcher"]["spec"]
    (container,) = spec["containers"]
    assert spec.get("runtimeClassName") == "nvidia" and spec.get("tolerations")
    terms = spec["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    assert terms == [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": NODES}]}]
    assert "podAntiAffinity" not in spec["affinity"]
    assert km.GPU_RESOURCE not in str(container.get("resources")) and "rdma/" not in str(container.get("resources"))
    assert not spec.get("hostNetwork")
    if launcher == "volcano":
        assert env_of(container).get("NVIDIA_VISIBLE_DEVICES") == ""


@pytest.mark.parametrize("launcher", ["mpijob", "volcano"])
def test_launcher_pods_request_cpu_and_memory(launcher):
    (container,) = templates(multinode(launcher))["launcher"]["spec"]["containers"]
    assert container["resources"] == {"requests": {"cpu": "1", "memory": "1Gi"},
                                      "limits": {"cpu": "1", "memory": "1Gi"}}
    (container,) = templates(multinode(launcher, options={"launcher_cpu": "250m", "launcher_memory": "2Gi"}))[
        "launcher"]["spec"]["containers"]
    assert container["resources"] == {"requests": {"cpu": "250m", "memory": "2Gi"},
                                      "limits": {"cpu": "250m", "memory": "2Gi"}}


@pytest.mark.parametrize("options,needle", [
    ({"launcher_cpu": "lots"}, "launcher_cpu 'lots' is not a Kubernetes quantity"),
    ({"launcher_memory": "1 GB"}, "launcher_memory '1 GB' is not a Kubernetes quantity"),
    ({"ssh_port": 70000}, "ssh_port 70000 is not a TCP port"),
    ({"alive_port": 2222}, "must differ"),
    ({"cluster_domain": "Cluster_Local"}, "cluster_domain"),
])
def test_bad_launcher_options_are_clear_errors(options, needle):
    with pytest.raises(AcceptanceError, match=needle):
        multinode("mpijob", options=options)


# --------------------------------------------------------------------------- annotations

def test_pod_annotations_are_on_every_ranks_pod_template_and_no_operator_launcher():
    """Multus networks (k8s.v1.cni.cncf.io/networks) are read from the pod's annotations: every pod template of
    every kind and launcher that runs ranks carries them (the Job's pinning annotation stays); an operator's
    launcher (MPIJob, Volcano mpimaster) holds no device and none (with SR-IOV and no resources injector it
    would stay in ContainerCreating)."""
    wanted = cases.FULL_POD["annotations"]
    seen = launchers = 0
    for name, plan in cases.plans():
        for obj in k8s_plan.objects_of(plan):
            for where, template, _owner in cases._templates(obj):  # pylint: disable=protected-access
                annotations = (template.get("metadata") or {}).get("annotations") or {}
                if obj["kind"] in ("MPIJob",) or obj["apiVersion"].startswith("batch.volcano.sh"):
                    role = template["metadata"]["labels"][km.ROLE_LABEL]
                    if role == "launcher":
                        assert not set(wanted) & set(annotations), (name, where, annotations)
                        launchers += 1
                        continue
                assert dict((k, annotations.get(k)) for k in wanted) == wanted, (name, where, annotations)
                seen += 1
    assert seen >= 8 and launchers == 2


@pytest.mark.parametrize("annotations,needle", [
    ({"k8s.v1.cni.cncf.io networks": "x"}, "not a qualified name"),
    ({"-bad/name": "x"}, "not a qualified name"),
    ({"k8s.v1.cni.cncf.io/networks": [{"name": "rdma-net"}]}, "must be a string"),
    (["k8s.v1.cni.cncf.io/networks"], "must be a mapping"),
])
def test_bad_annotations_are_clear_errors(annotations, needle):
    with pytest.raises(AcceptanceError, match=needle):
        km.pod_options({"image": "i", "annotations": annotations})


def test_the_module_takes_and_documents_annotations():
    import yaml
    from ansible_collections.aifabric.acceptance.plugins.modules import k8s_workload
    assert k8s_workload.argument_spec()["annotations"] == {"type": "dict", "default": {}}
    assert "annotations" in k8s_workload.POD_OPTIONS
    docs = yaml.safe_load(k8s_workload.DOCUMENTATION)["options"]
    assert "k8s.v1.cni.cncf.io/networks" in " ".join(docs["annotations"]["description"])
    assert docs["annotations"]["type"] == "dict"


# --------------------------------------------------------------------------- defect 1: host names

@pytest.mark.parametrize("launcher", ["indexed", "volcano"])
def test_open_mpi_keeps_the_workers_names_whole_and_short_names_resolve(launcher):
    """ORTE cuts -H names at the first '.' unless orte_keep_fqdn_hostnames (what mpi-operator sets on its launcher);
    and the pods' DNS search path gets <svc>.<ns>.svc.<domain>, so a bare pod name resolves for any MPI."""
    tpl = templates(multinode(launcher, options={"cluster_domain": "k8s.example"}))
    role = "worker" if launcher == "indexed" else "launcher"
    assert env_of(tpl[role]["spec"]["containers"][0]).get("OMPI_MCA_orte_keep_fqdn_hostnames") == "true"
    for template in tpl.values():
        assert template["spec"]["dnsConfig"] == {"searches": ["aif-l22-mn.acceptance.svc.k8s.example"]}


def test_mpijob_leaves_to_the_operator_what_it_sets_itself():
    """mpi-operator appends OMPI_MCA_orte_keep_fqdn_hostnames and the NVIDIA_* blanks to its launcher and the DNS
    search entry to its workers: set them again and the pod has duplicates."""
    tpl = templates(multinode("mpijob"))
    names = set(env_of(tpl["launcher"]["spec"]["containers"][0]))
    assert not names & {"OMPI_MCA_orte_keep_fqdn_hostnames", "NVIDIA_VISIBLE_DEVICES", "OMPI_MCA_plm_rsh_args"}
    assert "dnsConfig" not in tpl["worker"]["spec"]


# --------------------------------------------------------------------------- defect 8: limits

def _steps_of(container):
    """(sum of step timeouts, wait for workers) of a pod's entry spec."""
    spec = entry_spec(container)
    run = spec.get("launcher") or spec
    total = sum(s["timeout_s"] for s in run.get("steps") or [])
    if run.get("perftest"):
        total = run["perftest"]["timeout_s"] + run["perftest"]["connect_timeout_s"]
    return total + (run.get("wait_s") or 0 if run.get("wait_hosts") else 0)


def test_every_pods_deadline_covers_its_steps_and_the_modules_wait_covers_the_deadline():
    """Defaults, every kind and launcher: activeDeadlineSeconds >= the pod's steps (+ the launcher's wait for the
    workers) plus start-up; the module's default wait per step >= that deadline plus start-up."""
    pod = dict(POD)
    checked = 0
    for name, plan in cases.plans(pod):
        assert plan["timeout_s"] == plan["deadline_s"] + k8s_plan.START_UP_S
        for obj in k8s_plan.objects_of(plan):
            spec = obj.get("spec") or {}
            deadline = spec.get("activeDeadlineSeconds", (spec.get("runPolicy") or {}).get("activeDeadlineSeconds"))
            for where, template, _owner in cases._templates(obj):  # pylint: disable=protected-access
                if "--spec" not in template["spec"]["containers"][0]["command"] or name == "env":
                    continue
                work = _steps_of(template["spec"]["containers"][0])
                if deadline is not None:
                    assert deadline >= work + k8s_plan.START_UP_S, (name, where, deadline, work)
                    checked += 1
                assert plan["deadline_s"] >= work + k8s_plan.START_UP_S, (name, where, plan["deadline_s"], work)
    assert checked >= 6


def test_four_collectives_get_a_deadline_that_covers_them():
    plan = k8s_plan.build("nccl_test", NODES[:1], {"image": "i"}, "d8",
                          {"collectives": ["all_reduce", "all_gather", "reduce_scatter", "alltoall"]})
    (job,) = [o for o in k8s_plan.objects_of(plan) if o["kind"] == "Job"]
    assert job["spec"]["activeDeadlineSeconds"] == 4 * 1800 + k8s_plan.START_UP_S
    assert plan["timeout_s"] == 4 * 1800 + 2 * k8s_plan.START_UP_S


@pytest.mark.parametrize("kind,options,deadline,needle", [
    ("nccl_test", {"collectives": ["all_reduce", "all_gather"]}, 3600 - 1, "2 collectives x timeout_s 1800s = 3600 s"),
    ("nccl_test_multinode", OPTS, 1800, "wait_workers_s 600s \\+ 1 collectives x timeout_s 1800s = 2400 s"),
    ("gemm_bench", {"timeout_s": 900}, 600, "timeout_s 900s = 900 s"),
    ("allreduce_probe", {}, 60, "timeout_s 900s"),
])
def test_an_explicit_deadline_shorter_than_the_steps_is_refused(kind, options, deadline, needle):
    with pytest.raises(AcceptanceError, match="active_deadline_s %d does not cover the steps.*%s" % (deadline, needle)):
        k8s_plan.build(kind, NODES, dict(POD, active_deadline_s=deadline), "d8", options, launcher="volcano")


def test_the_modules_wait_defaults_to_the_plans_and_an_explicit_pair_that_breaks_it_is_refused():
    plan = k8s_plan.build("gemm_bench", NODES, dict(POD, active_deadline_s=1000), "d8", {"timeout_s": 900})
    assert (plan["deadline_s"], plan["timeout_s"]) == (1000, 1000 + k8s_plan.START_UP_S)
    assert k8s_plan.check_timeout(plan, None, True) == (plan["timeout_s"], None)
    assert k8s_plan.check_timeout(plan, 5000, True) == (5000, None)
    assert k8s_plan.check_timeout(plan, 1600, False) == (1600, None)
    wait, warning = k8s_plan.check_timeout(plan, 5, False)      # a wait alone is the user's bound, with a warning
    assert wait == 5
    assert warning.startswith("timeout_s 5 is shorter than the pods' deadline 1000 s plus 600 s of start-up (1600 s): "
                              "pods still inside their deadline will be stopped at 5 s")
    with pytest.raises(AcceptanceError, match="timeout_s 1500 is shorter than active_deadline_s 1000 plus 600 s"):
        k8s_plan.check_timeout(plan, 1500, True)


def test_the_module_derives_its_limits_unless_given():
    from ansible_collections.aifabric.acceptance.plugins.modules import k8s_workload
    spec = k8s_workload.argument_spec()
    assert spec["timeout_s"].get("default") is None and spec["active_deadline_s"].get("default") is None


# --------------------------------------------------------------------------- the workers' sshd with an operator's keys

@pytest.mark.skipif(not (shutil.which("sshd") or os.path.exists("/usr/sbin/sshd")) or not shutil.which("ssh-keygen")
                    or not os.path.isdir("/run/sshd"), reason="needs OpenSSH sshd, ssh-keygen and /run/sshd")
def test_entry_sshd_starts_with_an_operators_key_file_names(tmp_path):
    """What a worker of an operator launcher runs: the entry program's sshd set-up with the keys mpi-operator and
    Volcano mount (id_rsa, authorized_keys), on ssh_port; it answers with an SSH banner (sshd exits at once when its
    host key is missing)."""
    keys = tmp_path / "ssh"
    keys.mkdir()
    subprocess.run(["ssh-keygen", "-q", "-t", "rsa", "-b", "2048", "-N", "", "-f", str(keys / "id_rsa")],
                   check=True, timeout=60, capture_output=True)
    shutil.copyfile(str(keys / "id_rsa.pub"), str(keys / "authorized_keys"))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    proc = k8s_entry.start_sshd(dict(k8s_plan.OPERATOR_KEYS, keys_dir=str(keys), port=port,
                                     work_dir=str(tmp_path / "work")))
    try:
        banner = b""
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and not banner and proc.poll() is None:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=2) as conn:
                    banner = conn.recv(64)
            except OSError:
                time.sleep(0.2)
        assert banner.startswith(b"SSH-2.0-"), (banner, proc.poll())
    finally:
        proc.kill(k8s_entry.KILL_GRACE_S)
        k8s_entry._CHILDREN.discard(proc)  # pylint: disable=protected-access


@pytest.mark.parametrize("shadow,pam,expected", [
    ("root:!locked::0:99999:7:::\n", True, ("yes", "root")),      # RHEL/UBI: root locked, PAM set up for sshd
    ("root:!!:19000:0:99999:7:::\n", False, ("no", "root")),       # locked, no PAM for sshd: said, cannot help
    ("root:*:19000:0:99999:7:::\n", True, ("no", None)),           # Debian: no password, not locked
    ("daemon:!:19000::::::\n", True, ("no", None)),                # another account
    (None, True, ("no", None)),                                    # no shadow file readable
])
def test_the_workers_sshd_uses_pam_only_for_a_locked_account(tmp_path, shadow, pam, expected):
    """With UsePAM no, OpenSSH refuses every login to an account whose password is locked ('!'), key logins too
    (auth.c allowed_user): root of RHEL/UBI images. There the entry's sshd uses PAM, which the image then has."""
    path = tmp_path / "shadow"
    if shadow is not None:
        path.write_text(shadow)
    pam_config = tmp_path / "pam.d-sshd"
    if pam:
        pam_config.write_text("account required pam_unix.so\n")
    assert k8s_entry.sshd_use_pam("root", str(path), str(pam_config)) == expected


def test_volcano_pods_have_deadlines_and_operator_workers_outlive_their_launcher():
    """A Volcano Job has no deadline of its own: its launcher pod gets the plan's, its workers (started first) that
    plus start-up; an operator's workers serve sshd until the launcher ends, at the latest that long."""
    plan = multinode("volcano")
    tpl = templates(plan)
    assert tpl["launcher"]["spec"]["activeDeadlineSeconds"] == plan["deadline_s"]
    assert tpl["worker"]["spec"]["activeDeadlineSeconds"] == plan["deadline_s"] + k8s_plan.START_UP_S
    for launcher in ("mpijob", "volcano"):
        plan = multinode(launcher)
        sshd = entry_spec(templates(plan)["worker"]["spec"]["containers"][0])
        assert sshd["wait_s"] == plan["deadline_s"] + k8s_plan.START_UP_S


# --------------------------------------------------------------------------- mpirun as the launcher pod runs it

def launcher_steps(plan):
    """The mpirun steps of a multi-node plan's launcher (the Indexed pod's launcher spec, an operator's launcher)."""
    tpl = templates(plan)
    spec = entry_spec(tpl.get("launcher", tpl["worker"])["spec"]["containers"][0])
    return (spec.get("launcher") or spec)["steps"]


def which(found):
    return lambda name, path=None: found if name == "mpirun" else None


POD_ENV = {"PATH": "/usr/local/mpi/bin:/usr/bin:/bin", "HOME": "/root", "NCCL_DEBUG": "INFO",
           # from the env_from_configmaps ConfigMap: names the plan never saw
           "NCCL_IB_HCA": "=mlx5_0,mlx5_1", "NCCL_IB_GID_INDEX": "3", "UCX_TLS": "rc,cuda_copy", "OMPI_X": "1"}


def exported(argv):
    return [argv[i + 1] for i in range(len(argv) - 1) if argv[i] == "-x"]


@pytest.mark.parametrize("launcher", ["indexed", "mpijob", "volcano"])
def test_ranks_get_the_pods_own_nccl_and_ucx_names(launcher):
    """A NCCL_*/UCX_* variable that reaches the launcher pod through env_from_configmaps reaches every rank: mpirun
    exports it with -x (ranks started through sshd get a fresh environment); no other name of the pod than the
    plan's (mpirun_env_forward) is exported, and no name twice."""
    (step,) = launcher_steps(multinode(launcher))
    argv = k8s_entry.step_argv(step, environ=POD_ENV, which=which("/usr/bin/mpirun"))
    names = [x.split("=", 1)[0] for x in exported(argv)]
    assert {"NCCL_IB_HCA", "NCCL_IB_GID_INDEX", "UCX_TLS", "NCCL_DEBUG"} <= set(names), argv
    assert len(names) == len(set(names)) and "HOME" not in names and "OMPI_X" not in names
    assert argv.index("-x") < argv.index("/opt/nccl-tests/build/all_reduce_perf")


@pytest.mark.parametrize("mpirun,prefix", [
    ("/usr/local/mpi/bin/mpirun", "/usr/local/mpi"),       # NGC images
    ("/opt/hpcx/ompi/bin/mpirun", "/opt/hpcx/ompi"),       # HPC-X
    ("/usr/bin/mpirun", None),                             # the distribution's: orted is on sshd's PATH
])
def test_mpirun_runs_by_its_path_with_its_prefix_off_sshds_path(mpirun, prefix):
    """sshd's non-interactive PATH does not hold an image's /usr/local/mpi/bin or /opt/hpcx/ompi/bin: the bare
    'orted' of a bare 'mpirun' is not found there; the launcher runs mpirun by its path with --prefix."""
    (step,) = launcher_steps(multinode("mpijob"))
    assert step["argv"][0] == "mpirun"
    argv = k8s_entry.step_argv(step, environ=POD_ENV, which=which(mpirun))
    assert argv[0] == mpirun
    if prefix:
        assert argv[argv.index("--prefix") + 1] == prefix
    else:
        assert "--prefix" not in argv
    given = multinode("mpijob", options={"mpirun_extra_args": ["--prefix", "/opt/ompi"]})
    (step,) = launcher_steps(given)
    argv = k8s_entry.step_argv(step, environ=POD_ENV, which=which(mpirun))
    assert argv.count("--prefix") == 1 and argv[argv.index("--prefix") + 1] == "/opt/ompi"


@pytest.mark.parametrize("given", [{"plm_ssh_args": "-o Compression=no"}, {"plm_rsh_args": "-o Compression=no"}])
def test_one_ssh_args_parameter_keeps_the_port_under_orte_and_prrte(given):
    """PRRTE (Open MPI 5) renames plm_rsh_args to plm_ssh_args: a user's plm_ssh_args next to the plan's
    plm_rsh_args would replace it (its -p 2222 and key gone). One parameter carries both."""
    (step,) = launcher_steps(multinode("volcano", options={"mpirun_mca": given}))
    argv = step["argv"]
    params = [(argv[i + 1], argv[i + 2]) for i in range(len(argv) - 2) if argv[i] == "--mca"
              and argv[i + 1] in ("plm_rsh_args", "plm_ssh_args")]
    assert len(params) == 1 and params[0][0] == "plm_rsh_args", params
    assert ("-p %d " % SSH_PORT) in params[0][1] and params[0][1].endswith("-o Compression=no")


# --------------------------------------------------------------------------- perftest: the client's clock

def test_perftest_clients_clock_starts_at_its_servers_readiness():
    """A client pod that gave up connect_timeout_s after its own start failed a good link whenever its server pod
    came up later (an uncached image, an RDMA resource to come): the server opens ready_port once its entry
    program runs, the client waits for it (up to the server's start-up) before its connect_timeout_s begins, and
    the pods' deadline counts that wait."""
    plan = k8s_plan.build("perftest_sweep", NODES, dict(POD, gpus_per_pod=0), "pt7", {"hcas": ["mlx5_0", "mlx5_1"]},
                          rounds=[[NODES]])
    runs = {}
    for obj in k8s_plan.objects_of(plan):
        if obj["kind"] == "Job":
            container = obj["spec"]["template"]["spec"]["containers"][0]
            runs[obj["metadata"]["labels"][km.ROLE_LABEL]] = (entry_spec(container), obj["spec"])
    (server, _s), (client, job) = runs["server"], runs["client"]
    ready = k8s_plan.DEFAULTS["perftest_sweep"]["ready_port"]
    assert server["alive_port"] == ready and "wait_hosts" not in server
    assert client["wait_hosts"] == [client["perftest"]["peer_address"]] and client["wait_port"] == ready
    assert client["wait_s"] == k8s_plan.SERVER_READY_S
    assert job["activeDeadlineSeconds"] >= (client["wait_s"] + client["perftest"]["connect_timeout_s"]
                                            + client["perftest"]["timeout_s"] + k8s_plan.START_UP_S)
    with pytest.raises(AcceptanceError, match="ready_port 18516 must be a TCP port outside the rails' ports"):
        k8s_plan.build("perftest_sweep", NODES, dict(POD, gpus_per_pod=0), "pt7",
                       {"hcas": ["mlx5_0", "mlx5_1", "mlx5_2"], "ready_port": 18516}, rounds=[[NODES]])


def test_a_client_whose_server_never_came_up_says_so():
    plan = k8s_plan.build("perftest_sweep", NODES, dict(POD, gpus_per_pod=0), "pt7", {"hcas": ["mlx5_0"]},
                          rounds=[[NODES]])
    step = plan["steps"][0]
    slot = next(s for s in step["slots"] if s["role"] == "client")
    address = entry_spec(next(o for o in step["objects"] if o["metadata"]["name"] == slot["job"])
                         ["spec"]["template"]["spec"]["containers"][0])["wait_hosts"][0]
    log = "".join([k8s_entry.NOTE, json.dumps({"peers_missing": [address], "port": 18514, "waited_s": 600}), "\n",
                   k8s_entry.BEGIN, "mlx5_0\n", "peers did not answer on port 18514 within 600s: %s\n" % address,
                   k8s_entry.END, "mlx5_0 ", json.dumps({"rc": None, "timed_out": False, "attempts": 0,
                                                         "elapsed_s": 0, "peers_missing": [address]}), "\n"])
    (record,) = k8s_plan.slot_records(plan, slot, {"outcome": "failed", "name": "c", "node": NODES[1]}, log)
    assert record["status"] == "error" and record["target"] == "mlx5_0" and record["peer"] == NODES[0]
    assert record["reason"].startswith("the server pod %s was not up within 600 s" % address), record["reason"]
