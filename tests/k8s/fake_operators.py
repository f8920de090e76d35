# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The operators of the fake cluster (tests/k8s/fake_apiserver.py ``FakeApiServer(operators=("mpi", "volcano"))``):
what kubeflow mpi-operator v0.8.2 (or v0.4.0's naming: ``operators=("mpi-v0.4",)``, ``mpi_service``) and Volcano
v1.15's job controller with its ``ssh`` and ``svc`` plugins create for
an MPIJob / a vcjob, object by object, as their upstream source does it, so that pods run on the process kubelet
(tests/k8s/process_kubelet.py) meet the same keys, files, environment, host names and DNS names as on a cluster.

**mpi-operator** (github.com/kubeflow/mpi-operator, pkg/controller/mpi_job_controller.go; defaults
pkg/apis/kubeflow/v2beta1/default.go: slotsPerWorker 1, sshAuthMountPath /root/.ssh, OpenMPI,
launcherCreationPolicy AtStartup, cleanPodPolicy None):

- Service ``<job>`` (``newJobService``): headless, selector operator-name + job-name (launcher and workers),
  ``publishNotReadyAddresses`` only with runLauncherAsWorker - so a worker's name resolves once it is Ready;
- ConfigMap ``<job>-config`` (``newConfigMap``, ``updateDiscoverHostsInConfigMap``): ``hostfile`` with
  ``<job>-worker-<i>.<job>.<ns>.svc slots=<slotsPerWorker>`` per worker and ``discover_hosts.sh`` echoing the
  running workers' names;
- Secret ``<job>-ssh`` (``newSSHAuthSecret``): type kubernetes.io/ssh-auth, an ECDSA P-521 key (``ssh-privatekey``,
  SEC1 PEM) and its ``ssh-publickey`` (authorized_keys line);
- worker pods ``<job>-worker-<i>`` (``newWorker``): the template's labels plus operator-name/job-name/job-role
  worker/replica-index, ``hostname`` = the pod name, ``subdomain`` = the job, ``dnsPolicy: ClusterFirstWithHostNet``
  with hostNetwork, ``dnsConfig.searches`` + ``<job>.<ns>.svc.cluster.local``, ``/usr/sbin/sshd -De`` only when the
  container has no command and no args, env K_MPI_JOB_ROLE=worker, the ssh volume (``setupSSHOnPod``: items
  ssh-privatekey -> id_rsa, ssh-publickey -> id_rsa.pub and authorized_keys, mode 0600 at /root/.ssh) mounted at
  sshAuthMountPath;
- the launcher Job ``<job>-launcher`` (``newLauncherJob``): created at once (AtStartup) or when every worker's
  ``Ready`` condition is True (WaitForWorkersReady, ``countReadyWorkerPods``); runPolicy's TTL, deadline and
  backoffLimit; its pod template: hostname ``<job>-launcher``, subdomain the job, env K_MPI_JOB_ROLE=launcher,
  OMPI_MCA_orte_keep_fqdn_hostnames=true, OMPI_MCA_orte_default_hostfile=/etc/mpi/hostfile,
  OMPI_MCA_plm_rsh_args="-o ConnectionAttempts=10", OMPI_MCA_orte_set_default_slots, NVIDIA_VISIBLE_DEVICES and
  NVIDIA_DRIVER_CAPABILITIES emptied, the ssh volume, and ``mpi-job-config`` (hostfile 0444, discover_hosts.sh 0555)
  at /etc/mpi;
- status: the launcher Job's Complete/Failed makes the MPIJob Succeeded/Failed; cleanPodPolicy Running/All then
  deletes the workers that still run.

**Volcano** (github.com/volcano-sh/volcano v1.15: pkg/controllers/job/job_controller_util.go ``createJobPod``,
plugins/ssh/ssh.go, plugins/svc/svc.go):

- pods ``<job>-<task>-<i>`` (helpers.MakePodName) with labels and annotations volcano.sh/task-index, job-name,
  task-spec, job-namespace, queue-name, the podgroup annotation, the job's schedulerName;
- ``ssh`` plugin (flags --ssh-key-file-path, --ssh-private-key, --ssh-public-key, --ssh-port (v1.15+, default
  22)): Secret ``<job>-ssh`` with id_rsa (RSA 2048, PKCS#1 PEM), id_rsa.pub, authorized_keys and ``config``
  (``generateSSHConfig``: StrictHostKeyChecking no, UserKnownHostsFile /dev/null, and per task replica
  ``Host <hostname>`` / ``HostName <hostname>.<subdomain>`` / ``Port <port>``), mounted into every container at
  /root/.ssh (subPath .ssh, mode 0600);
- ``svc`` plugin (flags --publish-not-ready-addresses, --disable-network-policy): ConfigMap ``<job>-svc`` with
  ``<task>.host`` (one host per line), ``VC_<TASK>_HOSTS`` (comma-separated) and ``VC_<TASK>_NUM``; every pod gets
  hostname = its name, subdomain = the job, the VC_* env from that ConfigMap (configMapKeyRef) and the ConfigMap at
  /etc/volcano; a headless Service ``<job>`` (selector job-name + job-namespace, publishNotReadyAddresses only with
  its flag); and unless --disable-network-policy a NetworkPolicy ``<job>`` admitting ingress only from the job's
  pods (stored, not enforced: the testbed has no CNI);
- policies: a task's ``TaskCompleted -> CompleteJob`` completes the job once all its pods succeeded, the job's
  ``PodFailed -> AbortJob`` aborts it; the pods that still run are deleted then;
- the **PodGroup** and the scheduler's **enqueue** (gang admission): the job controller makes PodGroup
  ``<job>-<uid>`` (scheduling.volcano.sh/v1beta1; ``minMember`` = minAvailable, the job's queue, ``minResources`` =
  the requests of the first minAvailable pods, calcPGMinResources) in phase ``Pending`` and creates **no pod**
  while it is Pending (syncJob: ``pg.Status.Phase != Pending`` gates the task sync). The scheduler's enqueue action
  moves it to ``Inqueue`` when its minResources fit the queue's capability (capacity/proportion plugins,
  ``FakeApiServer.volcano_queue(name, capability)``) and the cluster's idle resources times the overcommit factor
  1.2 (overcommit plugin); else it stays Pending with the condition ``Unschedulable`` (reason NotEnoughResources,
  "<pending>/<tasks> tasks in gang unschedulable: pod group is not ready, <n> minAvailable") and the scheduler's
  events on the PodGroup - Normal ``Unschedulable`` "queue resource quota insufficient" or "resource in cluster
  is overused", Warning ``Unschedulable`` with the condition's message -, and the job controller's Warning
  ``PodGroupPending`` on the vcjob "PodGroup <ns>:<job> unschedule,reason: <condition message>"
  (job_controller_actions.go syncJob).
"""

from __future__ import annotations

import base64
import json

import kmock

SERVICES = kmock.resource("", "v1", "services")
CONFIGMAPS = kmock.resource("", "v1", "configmaps")
SECRETS = kmock.resource("", "v1", "secrets")
NETPOLS = kmock.resource("networking.k8s.io", "v1", "networkpolicies")
PODGROUPS = kmock.resource("scheduling.volcano.sh", "v1beta1", "podgroups")
VC_OVERCOMMIT_FACTOR = 1.2          # the overcommit plugin's default overcommit-factor

# mpi-operator (pkg/apis/kubeflow/v2beta1/constants.go, pkg/controller/mpi_job_controller.go)
MPI_OPERATOR_LABEL = "training.kubeflow.org/operator-name"
MPI_JOB_NAME_LABEL = "training.kubeflow.org/job-name"
MPI_JOB_ROLE_LABEL = "training.kubeflow.org/job-role"
MPI_REPLICA_INDEX_LABEL = "training.kubeflow.org/replica-index"
MPI_CONFIG_MOUNT = "/etc/mpi"
MPI_RSH_ARGS = "-o ConnectionAttempts=10"
# Volcano (volcano.sh/apis batch/v1alpha1 labels, plugins/svc/const.go)
VC_TASK_INDEX = "volcano.sh/task-index"
VC_JOB_NAME = "volcano.sh/job-name"
VC_TASK_SPEC = "volcano.sh/task-spec"
VC_JOB_NAMESPACE = "volcano.sh/job-namespace"
VC_QUEUE_NAME = "volcano.sh/queue-name"
VC_GROUP_ANNOTATION = "scheduling.k8s.io/group-name"
VC_HOSTS_MOUNT = "/etc/volcano"


class OperatorError(RuntimeError):
    pass


def _copy(value):
    return json.loads(json.dumps(value))


def _owner(api_version, kind, name, uid):
    return [{"apiVersion": api_version, "kind": kind, "name": name, "uid": uid, "controller": True,
             "blockOwnerDeletion": True}]


def _b64(data):
    return base64.b64encode(data).decode()


# --------------------------------------------------------------------------- keys

def ecdsa_p521_key_pair():
    """(SEC1 PEM private key, authorized_keys line) as mpi-operator's newSSHAuthSecret makes them."""
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ec
    except ImportError as exc:        # ansible-core depends on it: missing only in a broken environment
        raise OperatorError("the fake mpi-operator needs the cryptography package for its ssh keys: %s" % exc)
    key = ec.generate_private_key(ec.SECP521R1())
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return private, public + b"\n"


def rsa_2048_key_pair():
    """(PKCS#1 PEM private key, authorized_keys line) as Volcano's ssh plugin's generateRsaKey makes them."""
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa
    except ImportError as exc:
        raise OperatorError("the fake Volcano ssh plugin needs the cryptography package for its keys: %s" % exc)
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL,
                                serialization.NoEncryption())
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH, serialization.PublicFormat.OpenSSH)
    return private, public + b"\n"


# --------------------------------------------------------------------------- mpi-operator

def mpi_defaults(spec):
    """The MPIJob spec with v2beta1's defaults (SetDefaults_MPIJob)."""
    spec = _copy(spec)
    spec.setdefault("slotsPerWorker", 1)
    spec.setdefault("sshAuthMountPath", "/root/.ssh")
    spec.setdefault("mpiImplementation", "OpenMPI")
    spec.setdefault("launcherCreationPolicy", "AtStartup")
    run_policy = spec.setdefault("runPolicy", {})
    run_policy.setdefault("cleanPodPolicy", "None")
    replicas = spec.setdefault("mpiReplicaSpecs", {})
    if "Launcher" in replicas:
        replicas["Launcher"].setdefault("restartPolicy", "OnFailure")
        replicas["Launcher"].setdefault("replicas", 1)
    if "Worker" in replicas:
        replicas["Worker"].setdefault("restartPolicy", "Never")
        replicas["Worker"].setdefault("replicas", 0)
    return spec


def mpi_validation_errors(spec):
    """What pkg/apis/kubeflow/validation/validation.go finds that this fake cannot do without: a Launcher replica
    spec, and a container in every replica's template (its field.ErrorList texts)."""
    errs = []
    replicas = spec.get("mpiReplicaSpecs") or {}
    if "Launcher" not in replicas:
        errs.append("spec.mpiReplicaSpecs[Launcher]: Required value: must have Launcher replica spec")
    for kind in sorted(replicas):
        if not (((replicas[kind] or {}).get("template") or {}).get("spec") or {}).get("containers"):
            errs.append("spec.mpiReplicaSpecs[%s].template.spec.containers: Required value: must define at least one "
                        "container" % kind)
    return errs


# mpi-operator v0.4.x names the workers' Service and every pod's subdomain "<job>-worker" (workerSuffix; the Service
# selects the workers only: the launcher has no DNS record) and adds no DNS search entry; v0.5.0 on name them "<job>"
# (newJobService: launcher and workers). v0.4's v2beta1 CRD has no launcherCreationPolicy (v0.5.0 adds it): a field
# it does not know is pruned, and its launcher Job is made at once.
MPI_V04 = "0.4.0"


def mpi_service(name, version=None):
    """The workers' Service and the pods' subdomain of MPIJob ``name`` under mpi-operator ``version``."""
    return name + "-worker" if version == MPI_V04 else name


def mpi_hostfile(name, namespace, workers, slots, cluster_domain="", version=None):
    domain = "%s.%s.%s.svc" + (".%s" % cluster_domain if cluster_domain else "")
    return "".join("%s slots=%d\n" % (domain % ("%s-worker-%d" % (name, i), mpi_service(name, version), namespace),
                                      slots) for i in range(workers))


def mpi_discover_hosts(name, namespace, running_workers, cluster_domain="", version=None):
    domain = "%s.%s.%s.svc" + (".%s" % cluster_domain if cluster_domain else "")
    return "#!/bin/sh\n" + "".join("echo %s\n" % (domain % (p, mpi_service(name, version), namespace))
                                   for p in sorted(running_workers))


def mpi_crd(version=None):
    """The MPIJob CRD as the operator's manifest installs it: v2beta1's spec properties of that version (only those
    the collection's capability check reads; the full schema is ../shared/schemas/)."""
    props = {"slotsPerWorker": {"type": "integer"}, "sshAuthMountPath": {"type": "string"},
             "mpiImplementation": {"type": "string"}, "runPolicy": {"type": "object"},
             "mpiReplicaSpecs": {"type": "object"}}
    if version != MPI_V04:
        props.update({"launcherCreationPolicy": {"type": "string"}, "runLauncherAsWorker": {"type": "boolean"}})
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "mpijobs.kubeflow.org"},
            "spec": {"group": "kubeflow.org", "scope": "Namespaced",
                     "names": {"kind": "MPIJob", "plural": "mpijobs", "singular": "mpijob"},
                     "versions": [{"name": "v2beta1", "served": True, "storage": True, "schema": {"openAPIV3Schema": {
                         "type": "object", "properties": {"spec": {"type": "object", "properties": props}}}}}]}}


def _mpi_ssh(pod_spec, name, mount_path):
    """setupSSHOnPod: the ssh-auth Secret volume, mounted at sshAuthMountPath in the first container."""
    volume = {"name": "ssh-auth", "secret": {"secretName": name + "-ssh", "items": [
        {"key": "ssh-privatekey", "path": "id_rsa"}, {"key": "ssh-publickey", "path": "id_rsa.pub"},
        {"key": "ssh-publickey", "path": "authorized_keys"}]}}
    if mount_path == "/root/.ssh":
        volume["secret"]["defaultMode"] = 0o600
    pod_spec.setdefault("volumes", []).append(volume)
    pod_spec["containers"][0].setdefault("volumeMounts", []).append({"name": "ssh-auth", "mountPath": mount_path})


def mpi_labels(name, role):
    return {MPI_OPERATOR_LABEL: "mpi-operator", MPI_JOB_NAME_LABEL: name, MPI_JOB_ROLE_LABEL: role}


def mpi_worker_pod(mpijob, index, version=None):
    """The worker pod ``newWorker`` makes (without the owner reference)."""
    md, spec = mpijob["metadata"], mpi_defaults(mpijob.get("spec") or {})
    name, ns = md["name"], md["namespace"]
    replica = spec["mpiReplicaSpecs"]["Worker"]
    template = _copy(replica.get("template") or {})
    labels = dict((template.get("metadata") or {}).get("labels") or {}, **mpi_labels(name, "worker"))
    labels[MPI_REPLICA_INDEX_LABEL] = str(index)
    pod_name = "%s-worker-%d" % (name, index)
    pspec = template.get("spec") or {}
    pspec["hostname"] = pod_name
    pspec["subdomain"] = mpi_service(name, version)
    if pspec.get("hostNetwork"):
        pspec["dnsPolicy"] = "ClusterFirstWithHostNet"
    if version != MPI_V04:
        dns = pspec.setdefault("dnsConfig", {})
        dns["searches"] = list(dns.get("searches") or []) + ["%s.%s.svc.cluster.local" % (name, ns)]
    pspec["restartPolicy"] = "Never" if replica["restartPolicy"] == "ExitCode" else replica["restartPolicy"]
    container = pspec["containers"][0]
    if not container.get("command") and not container.get("args"):
        container["command"] = ["/usr/sbin/sshd", "-De"]
    container.setdefault("env", []).append({"name": "K_MPI_JOB_ROLE", "value": "worker"})
    _mpi_ssh(pspec, name, spec["sshAuthMountPath"])
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": pod_name, "labels": labels,
                         "annotations": dict((template.get("metadata") or {}).get("annotations") or {})},
            "spec": pspec, "status": {"phase": "Pending"}}


def mpi_launcher_job(mpijob, version=None):
    """The launcher Job ``newLauncherJob`` makes (without the owner reference)."""
    md, spec = mpijob["metadata"], mpi_defaults(mpijob.get("spec") or {})
    name = md["name"]
    replica = spec["mpiReplicaSpecs"]["Launcher"]
    template = _copy(replica.get("template") or {})
    tmd = template.setdefault("metadata", {})
    tmd["labels"] = dict(tmd.get("labels") or {}, **mpi_labels(name, "launcher"))
    pspec = template.setdefault("spec", {})
    pspec["hostname"] = name + "-launcher"
    pspec["subdomain"] = mpi_service(name, version)
    if pspec.get("hostNetwork"):
        pspec["dnsPolicy"] = "ClusterFirstWithHostNet"
    container = pspec["containers"][0]
    slots = str(spec["slotsPerWorker"])
    env = [{"name": "K_MPI_JOB_ROLE", "value": "launcher"}]
    if spec["mpiImplementation"] == "OpenMPI":
        env += [{"name": "OMPI_MCA_orte_keep_fqdn_hostnames", "value": "true"},
                {"name": "OMPI_MCA_orte_default_hostfile", "value": MPI_CONFIG_MOUNT + "/hostfile"},
                {"name": "OMPI_MCA_plm_rsh_args", "value": MPI_RSH_ARGS},
                {"name": "OMPI_MCA_orte_set_default_slots", "value": slots}]
    else:
        raise OperatorError("the fake mpi-operator emulates the OpenMPI implementation only, got %r"
                            % spec["mpiImplementation"])
    env += [{"name": "NVIDIA_VISIBLE_DEVICES"}, {"name": "NVIDIA_DRIVER_CAPABILITIES"}]
    container["env"] = list(container.get("env") or []) + env
    _mpi_ssh(pspec, name, spec["sshAuthMountPath"])
    pspec["restartPolicy"] = "Never" if replica["restartPolicy"] == "ExitCode" else replica["restartPolicy"]
    pspec["volumes"].append({"name": "mpi-job-config", "configMap": {"name": name + "-config", "items": [
        {"key": "hostfile", "path": "hostfile", "mode": 0o444},
        {"key": "discover_hosts.sh", "path": "discover_hosts.sh", "mode": 0o555}]}})
    container["volumeMounts"].append({"name": "mpi-job-config", "mountPath": MPI_CONFIG_MOUNT})
    run_policy = spec["runPolicy"]
    jspec = {"template": template, "podReplacementPolicy": "Failed"}
    for ours, theirs in (("ttlSecondsAfterFinished", "ttlSecondsAfterFinished"),
                         ("activeDeadlineSeconds", "activeDeadlineSeconds"), ("backoffLimit", "backoffLimit")):
        if run_policy.get(theirs) is not None:
            jspec[ours] = run_policy[theirs]
    return {"apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": name + "-launcher", "labels": {"app": name}}, "spec": jspec}


def _ready(pod):
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (pod.get("status") or {}).get("conditions") or [])


def _present(ctl, key):
    return key in ctl.emu._objects and not ctl.emu._objects[key].deleted


async def mpi_operator(ctl, jobs_resource, pods_resource):
    """One pass of the mpi-operator's syncHandler over every MPIJob (see the module docstring)."""
    from ansible_collections.aifabric.acceptance.tests.k8s.fake_apiserver import MPIJOBS
    version = ctl.mpi_version
    for key, obj in ctl._all(MPIJOBS):
        mj = obj.raw
        md, status = mj["metadata"], mj.get("status") or {}
        if version == MPI_V04:      # pruned by v0.4's CRD
            mj = dict(mj, spec=dict((k, v) for k, v in (mj.get("spec") or {}).items()
                                    if k not in ("launcherCreationPolicy", "runLauncherAsWorker")))
        spec = mpi_defaults(mj.get("spec") or {})
        if any(c.get("type") in ("Succeeded", "Failed") and c.get("status") == "True"
               for c in status.get("conditions") or []) or md.get("deletionTimestamp"):
            continue
        ns, name, uid = md["namespace"], md["name"], md["uid"]
        owner = _owner("kubeflow.org/v2beta1", "MPIJob", name, uid)
        invalid = mpi_validation_errors(spec)
        if invalid:          # syncHandler: a ValidationError event, nothing made, not requeued
            await ctl.owner_event(owner[0], ns, "ValidationError", "Found validation errors: %s" % (
                invalid[0] if len(invalid) == 1 else "[%s]" % ", ".join(invalid)), component="mpi-job-controller")
            continue
        workers = int(spec["mpiReplicaSpecs"].get("Worker", {}).get("replicas", 0))
        service = mpi_service(name, version)
        if not _present(ctl, (SERVICES, ns, service)):
            selector = {MPI_OPERATOR_LABEL: "mpi-operator", MPI_JOB_NAME_LABEL: name}
            if version == MPI_V04:
                selector[MPI_JOB_ROLE_LABEL] = "worker"
            await ctl._add(SERVICES, ns, {
                "apiVersion": "v1", "kind": "Service",
                "metadata": {"name": service, "labels": {"app": name}, "ownerReferences": owner},
                "spec": {"clusterIP": "None", "selector": selector,
                         "publishNotReadyAddresses": bool(spec.get("runLauncherAsWorker"))}})
        mine = [(k, p) for k, p in ctl._owned_pods(uid)
                if (p["metadata"].get("labels") or {}).get(MPI_JOB_ROLE_LABEL) == "worker"]
        running = [p["metadata"]["name"] for _k, p in mine if (p.get("status") or {}).get("phase") == "Running"]
        data = {"hostfile": mpi_hostfile(name, ns, workers, int(spec["slotsPerWorker"]), version=version),
                "discover_hosts.sh": mpi_discover_hosts(name, ns, running, version=version)}
        cm_key = (CONFIGMAPS, ns, name + "-config")
        if not _present(ctl, cm_key):
            await ctl._add(CONFIGMAPS, ns, {"apiVersion": "v1", "kind": "ConfigMap",
                                            "metadata": {"name": name + "-config", "labels": {"app": name},
                                                         "ownerReferences": owner}, "data": data})
        elif ctl.emu._objects[cm_key].raw.get("data") != data:
            await ctl._patch(cm_key, {"data": data})
        if not _present(ctl, (SECRETS, ns, name + "-ssh")):
            private, public = ecdsa_p521_key_pair()
            await ctl._add(SECRETS, ns, {"apiVersion": "v1", "kind": "Secret", "type": "kubernetes.io/ssh-auth",
                                         "metadata": {"name": name + "-ssh", "labels": {"app": name},
                                                      "ownerReferences": owner},
                                         "data": {"ssh-privatekey": _b64(private), "ssh-publickey": _b64(public)}})
        have = set(p["metadata"]["name"] for _k, p in mine)
        for i in range(workers):
            if "%s-worker-%d" % (name, i) not in have:
                pod = mpi_worker_pod(mj, i, version)
                pod["metadata"]["ownerReferences"] = owner
                ctl.defaults[pod["metadata"]["name"]] = "hang"      # sshd: never ends by itself
                await ctl._add(pods_resource, ns, pod)
        if not status.get("conditions"):
            await ctl._patch(key, {"status": {"conditions": [
                {"type": "Created", "status": "True", "reason": "MPIJobCreated",
                 "message": "MPIJob %s/%s is created." % (ns, name), "lastTransitionTime": _stamp(ctl)}],
                "startTime": _stamp(ctl)}})
        launcher_key = (jobs_resource, ns, name + "-launcher")
        if not _present(ctl, launcher_key):
            ready = len(mine) == workers and all(_ready(p) for _k, p in mine)
            if spec["launcherCreationPolicy"] == "AtStartup" or ready:
                job = mpi_launcher_job(mj, version)
                job["metadata"]["ownerReferences"] = owner
                await ctl._add(jobs_resource, ns, job)
            continue
        await _mpi_status(ctl, key, mj, spec, launcher_key, mine)


def _stamp(ctl):
    from ansible_collections.aifabric.acceptance.tests.k8s.fake_apiserver import _now
    return _now()


async def _mpi_status(ctl, key, mj, spec, launcher_key, workers):
    """updateMPIJobStatus: the launcher's end is the MPIJob's; then cleanPodPolicy Running/All removes workers."""
    jstatus = ctl.emu._objects[launcher_key].raw.get("status") or {}
    done = [c for c in jstatus.get("conditions") or [] if c.get("status") == "True"
            and c.get("type") in ("Complete", "Failed")]
    if not done:
        return
    md = mj["metadata"]
    ok = done[0]["type"] == "Complete"
    message = ("MPIJob %s/%s successfully completed." % (md["namespace"], md["name"]) if ok
               else done[0].get("message") or "MPIJob %s/%s has failed" % (md["namespace"], md["name"]))
    cond = {"type": "Succeeded" if ok else "Failed", "status": "True",
            "reason": "MPIJobSucceeded" if ok else (done[0].get("reason") or "MPIJobFailed"), "message": message,
            "lastTransitionTime": _stamp(ctl)}
    status = {"conditions": ((mj.get("status") or {}).get("conditions") or []) + [cond],
              "completionTime": _stamp(ctl)}
    if spec["runPolicy"]["cleanPodPolicy"] in ("Running", "All"):
        await ctl._finish_owner(key, workers, status)
    else:
        await ctl._patch(key, {"status": status})


# --------------------------------------------------------------------------- Volcano

def _flags(args, known):
    """Go's flag package over a plugin's argument list (``--name=value``, ``--name value``, bool ``--name``)."""
    out, i = {}, 0
    args = [str(a) for a in args or []]
    while i < len(args):
        word = args[i].lstrip("-")
        name, sep, value = word.partition("=")
        if name not in known:
            raise OperatorError("plugin flag %r is not one of %s (flagset parse failed)" % (args[i], sorted(known)))
        if not sep and known[name] is bool:
            value = "true"
        elif not sep:
            i += 1
            value = args[i] if i < len(args) else ""
        out[name] = (value.lower() in ("1", "t", "true")) if known[name] is bool else known[name](value)
        i += 1
    return out


def volcano_hosts(vcjob):
    """(task name, [host names]) per task, as svc.GenerateHosts / ssh's generateSSHConfig walk them."""
    out = []
    name = vcjob["metadata"]["name"]
    for task in (vcjob.get("spec") or {}).get("tasks") or []:
        tspec = (task.get("template") or {}).get("spec") or {}
        hosts = []
        for i in range(int(task.get("replicas", 1))):
            hostname = tspec.get("hostname") or "%s-%s-%d" % (name, task["name"], i)
            hosts.append((hostname, tspec.get("subdomain") or name))
            if tspec.get("hostname"):
                break
        out.append((task["name"], hosts))
    return out


def volcano_ssh_config(vcjob, port):
    config = "StrictHostKeyChecking no\nUserKnownHostsFile /dev/null\n"
    for _task, hosts in volcano_hosts(vcjob):
        for hostname, subdomain in hosts:
            config += "Host %s\n  HostName %s.%s\n  Port %d\n" % (hostname, hostname, subdomain, port)
    return config


def volcano_svc_data(vcjob):
    data = {}
    for task, hosts in volcano_hosts(vcjob):
        names = ["%s.%s" % h for h in hosts]
        key = task.replace("-", "_")
        data["%s.host" % key] = "\n".join(names)
        data["VC_%s_HOSTS" % key.upper()] = ",".join(names)
        data["VC_%s_NUM" % key.upper()] = str(len(names))
    return data


def volcano_pod(vcjob, task, index, plugins):
    """createJobPod, then the plugins' OnPodCreate (ssh: the key volume; svc: hostname, subdomain, env, hosts)."""
    md, spec = vcjob["metadata"], vcjob.get("spec") or {}
    name, ns = md["name"], md["namespace"]
    template = _copy(task.get("template") or {})
    pspec = template.get("spec") or {}
    pod_name = "%s-%s-%d" % (name, task["name"], index)
    queue = spec.get("queue") or "default"
    if not pspec.get("schedulerName"):
        pspec["schedulerName"] = spec.get("schedulerName") or "volcano"
    annotations = dict((template.get("metadata") or {}).get("annotations") or {})
    annotations.update({VC_TASK_INDEX: str(index), VC_TASK_SPEC: task["name"],
                        VC_GROUP_ANNOTATION: "%s-%s" % (name, md.get("uid")), VC_JOB_NAME: name,
                        VC_QUEUE_NAME: queue, "volcano.sh/job-version": "0",
                        "volcano.sh/template-uid": "%s-%s" % (name, task["name"]), "volcano.sh/job-retry-count": "0"})
    labels = dict((template.get("metadata") or {}).get("labels") or {})
    labels.update({VC_TASK_INDEX: str(index), VC_JOB_NAME: name, VC_TASK_SPEC: task["name"], VC_JOB_NAMESPACE: ns,
                   VC_QUEUE_NAME: queue})
    containers = list(pspec.get("containers") or []) + list(pspec.get("initContainers") or [])
    if "ssh" in plugins:
        ssh_path = plugins["ssh"].get("ssh-key-file-path", "/root/.ssh")
        pspec.setdefault("volumes", []).append({"name": name + "-ssh", "secret": {
            "secretName": name + "-ssh", "defaultMode": 0o600 if ssh_path == "/root/.ssh" else 0o644,
            "items": [{"key": k, "path": ".ssh/" + k} for k in ("id_rsa", "id_rsa.pub", "authorized_keys", "config")]}})
        for c in containers:
            c.setdefault("volumeMounts", []).append({"name": name + "-ssh", "mountPath": ssh_path, "subPath": ".ssh"})
    if "svc" in plugins:
        pspec["hostname"] = pspec.get("hostname") or pod_name
        pspec["subdomain"] = pspec.get("subdomain") or name
        env = []
        for t in spec.get("tasks") or []:
            key = t["name"].replace("-", "_").upper()
            for var in ("VC_%s_HOSTS" % key, "VC_%s_NUM" % key):
                env.append({"name": var, "valueFrom": {"configMapKeyRef": {"name": name + "-svc", "key": var}}})
        pspec.setdefault("volumes", []).append({"name": name + "-svc", "configMap": {"name": name + "-svc"}})
        for c in containers:
            c["env"] = list(c.get("env") or []) + env
            c.setdefault("volumeMounts", []).append({"name": name + "-svc", "mountPath": VC_HOSTS_MOUNT})
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": pod_name, "labels": labels, "annotations": annotations},
            "spec": pspec, "status": {"phase": "Pending"}}


def volcano_plugins(vcjob):
    """{plugin: parsed flags} of the plugins this fake knows (ssh, svc); others are refused."""
    plugins = {}
    for plugin, args in ((vcjob.get("spec") or {}).get("plugins") or {}).items():
        if plugin == "ssh":
            plugins[plugin] = _flags(args, {"ssh-key-file-path": str, "ssh-private-key": str, "ssh-public-key": str,
                                            "ssh-port": int})
        elif plugin == "svc":
            plugins[plugin] = _flags(args, {"publish-not-ready-addresses": bool, "disable-network-policy": bool})
        else:
            raise OperatorError("the fake Volcano has no %r plugin" % plugin)
    return plugins


async def _volcano_add(ctl, vj, plugins, pods_resource):
    """OnJobAdd of the plugins, then the pods (syncJob)."""
    md, spec = vj["metadata"], vj.get("spec") or {}
    ns, name, uid = md["namespace"], md["name"], md["uid"]
    owner = _owner("batch.volcano.sh/v1alpha1", "Job", name, uid)
    if "ssh" in plugins:
        flags = plugins["ssh"]
        port = flags.get("ssh-port", 22)
        port = port if 0 < port <= 65535 else 22
        if flags.get("ssh-private-key"):
            private, public = flags["ssh-private-key"].encode(), flags.get("ssh-public-key", "").encode()
        else:
            private, public = rsa_2048_key_pair()
        data = {"id_rsa": private, "id_rsa.pub": public, "authorized_keys": public,
                "config": volcano_ssh_config(vj, port).encode()}
        await ctl._add(SECRETS, ns, {"apiVersion": "v1", "kind": "Secret", "type": "Opaque",
                                     "metadata": {"name": name + "-ssh", "ownerReferences": owner},
                                     "data": dict((k, _b64(v)) for k, v in data.items())})
    if "svc" in plugins:
        flags = plugins["svc"]
        await ctl._add(CONFIGMAPS, ns, {"apiVersion": "v1", "kind": "ConfigMap",
                                        "metadata": {"name": name + "-svc", "ownerReferences": owner},
                                        "data": volcano_svc_data(vj)})
        selector = {VC_JOB_NAME: name, VC_JOB_NAMESPACE: ns}
        await ctl._add(SERVICES, ns, {"apiVersion": "v1", "kind": "Service",
                                      "metadata": {"name": name, "ownerReferences": owner},
                                      "spec": {"clusterIP": "None", "selector": selector,
                                               "publishNotReadyAddresses": bool(flags.get("publish-not-ready-addresses"))}})
        if not flags.get("disable-network-policy"):
            await ctl._add(NETPOLS, ns, {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                                         "metadata": {"name": name, "ownerReferences": owner},
                                         "spec": {"podSelector": {"matchLabels": dict(selector)},
                                                  "ingress": [{"from": [{"podSelector": {"matchLabels": dict(selector)}}]}],
                                                  "policyTypes": ["Ingress"]}})
    await ctl._add(PODGROUPS, ns, volcano_podgroup(vj, owner))


async def _volcano_pods(ctl, vj, plugins, pods_resource):
    """syncJob once the PodGroup is enqueued: every task's pods."""
    spec = vj.get("spec") or {}
    ns, name, uid = vj["metadata"]["namespace"], vj["metadata"]["name"], vj["metadata"]["uid"]
    owner = _owner("batch.volcano.sh/v1alpha1", "Job", name, uid)
    for task in spec.get("tasks") or []:
        completes = any(p.get("event") == "TaskCompleted" and p.get("action") == "CompleteJob"
                        for p in task.get("policies") or [])
        for i in range(int(task.get("replicas", 1))):
            pod = volcano_pod(vj, task, i, plugins)
            pod["metadata"]["ownerReferences"] = owner
            if not completes:
                ctl.defaults[pod["metadata"]["name"]] = "hang"
            await ctl._add(pods_resource, ns, pod)


async def volcano(ctl, pods_resource):
    """One pass of Volcano's job controller over every vcjob (see the module docstring)."""
    from ansible_collections.aifabric.acceptance.tests.k8s.fake_apiserver import VCJOBS
    for key, obj in ctl._all(VCJOBS):
        vj = obj.raw
        spec, status = vj.get("spec") or {}, vj.get("status") or {}
        phase = (status.get("state") or {}).get("phase")
        if phase in ("Completed", "Aborted", "Failed") or vj["metadata"].get("deletionTimestamp"):
            continue
        if not phase:
            await _volcano_add(ctl, vj, volcano_plugins(vj), pods_resource)
            await ctl._patch(key, {"status": {"state": {"phase": "Pending"}, "minAvailable": spec.get("minAvailable", 0)}})
        if not await _volcano_enqueued(ctl, vj, pods_resource):
            continue
        owned = ctl._owned_pods(vj["metadata"]["uid"])
        failed = [p for _k, p in owned if (p.get("status") or {}).get("phase") == "Failed"]
        if failed and any(p.get("event") == "PodFailed" and p.get("action") == "AbortJob"
                          for p in spec.get("policies") or []):
            await ctl._finish_owner(key, owned, {"state": {"phase": "Aborted", "reason": "PodFailed"}})
            continue
        for task in spec.get("tasks") or []:
            if not any(p.get("event") == "TaskCompleted" and p.get("action") == "CompleteJob"
                       for p in task.get("policies") or []):
                continue
            mine = [p for _k, p in owned if (p["metadata"].get("labels") or {}).get(VC_TASK_SPEC) == task["name"]]
            if mine and len(mine) == int(task.get("replicas", 1)) and all(
                    (p.get("status") or {}).get("phase") == "Succeeded" for p in mine):
                await ctl._finish_owner(key, owned, {"state": {"phase": "Completed"}})
                break
        else:
            if phase == "Pending" and owned and all((p.get("status") or {}).get("phase") == "Running"
                                                    for _k, p in owned):
                await ctl._patch(key, {"status": {"state": {"phase": "Running"}}})


def volcano_podgroup(vj, owner):
    """createPodGroupIfNotExist: PodGroup <job>-<uid>, Pending until the scheduler enqueues it."""
    md, spec = vj["metadata"], vj.get("spec") or {}
    return {"apiVersion": "scheduling.volcano.sh/v1beta1", "kind": "PodGroup",
            "metadata": {"name": "%s-%s" % (md["name"], md["uid"]), "annotations": dict(md.get("annotations") or {}),
                         "ownerReferences": owner},
            "spec": {"minMember": int(spec.get("minAvailable") or 0), "queue": spec.get("queue") or "default",
                     "minResources": volcano_min_resources(vj)},
            "status": {"phase": "Pending"}}


def volcano_min_resources(vj):
    """calcPGMinResources: the requests of the first minAvailable pods, task by task (devices as counts, cpu in cores,
    memory in bytes)."""
    from ansible_collections.aifabric.acceptance.tests.k8s.fake_apiserver import _requests
    spec = vj.get("spec") or {}
    left, total = int(spec.get("minAvailable") or 0), {}
    for task in spec.get("tasks") or []:
        for _i in range(int(task.get("replicas", 1))):
            if left <= 0:
                break
            left -= 1
            for res, qty in _requests({"spec": (task.get("template") or {}).get("spec") or {}}).items():
                total[res] = total.get(res, 0) + qty
    return total


def volcano_enqueue_refusal(ctl, pg):
    """The scheduler's enqueue verdict on PodGroup ``pg``: None (enqueued), else the plugin's event message."""
    need = (pg.get("spec") or {}).get("minResources") or {}
    capability = ctl.volcano_queues.get((pg.get("spec") or {}).get("queue") or "default") or {}
    inqueue = {}
    for _key, obj in ctl._all(PODGROUPS):
        other = obj.raw
        if other is not pg and (other.get("status") or {}).get("phase") in ("Inqueue", "Running") and \
                (other.get("spec") or {}).get("queue") == (pg.get("spec") or {}).get("queue"):
            for res, qty in ((other.get("spec") or {}).get("minResources") or {}).items():
                inqueue[res] = inqueue.get(res, 0) + qty
    if any(res in capability and inqueue.get(res, 0) + qty > int(capability[res]) for res, qty in need.items()):
        return "queue resource quota insufficient"
    used = ctl._used()
    for res, qty in need.items():
        if res in ("cpu", "memory") or not any(res in (n.get("allocatable") or {}) for n in ctl.nodes):
            continue    # the fake's overcommit accounts devices only
        idle = sum(int(str((n.get("allocatable") or {}).get(res, 0))) - used.get((n["name"], res), 0)
                   for n in ctl.nodes)
        if qty > idle * VC_OVERCOMMIT_FACTOR:
            return "resource in cluster is overused"
    return None


async def _volcano_enqueued(ctl, vj, pods_resource):
    """True once the vcjob's PodGroup is enqueued (its pods then exist); else the scheduler's and the job
    controller's events say why not."""
    md = vj["metadata"]
    ns, name = md["namespace"], md["name"]
    pg_key = (PODGROUPS, ns, "%s-%s" % (name, md["uid"]))
    if not _present(ctl, pg_key):
        return False
    pg = ctl.emu._objects[pg_key].raw
    if (pg.get("status") or {}).get("phase") != "Pending":
        return True
    why = volcano_enqueue_refusal(ctl, pg)
    if why is None:
        await ctl._patch(pg_key, {"status": {"phase": "Inqueue", "conditions": []}})
        await _volcano_pods(ctl, vj, volcano_plugins(vj), pods_resource)
        return True
    group = _owner("scheduling.volcano.sh/v1beta1", "PodGroup", pg["metadata"]["name"], pg["metadata"]["uid"])[0]
    job = _owner("batch.volcano.sh/v1alpha1", "Job", name, md["uid"])[0]
    message = "0/0 tasks in gang unschedulable: pod group is not ready, %d minAvailable" % pg["spec"]["minMember"]
    if not (pg.get("status") or {}).get("conditions"):
        await ctl._patch(pg_key, {"status": {"conditions": [
            {"type": "Unschedulable", "status": "True", "reason": "NotEnoughResources", "message": message,
             "transitionID": "fake", "lastTransitionTime": _stamp(ctl)}]}})
    await ctl.owner_event(group, ns, "Unschedulable", why, type_="Normal", component="volcano")
    await ctl.owner_event(group, ns, "Unschedulable", message, component="volcano")
    await ctl.owner_event(job, ns, "PodGroupPending", "PodGroup %s:%s unschedule,reason: %s" % (ns, name, message),
                          component="vc-controller-manager")
    return False
