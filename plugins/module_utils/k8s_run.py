# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run a k8s_plan against a cluster, or render it to files (private; controller side).

- ``execute(api, plan, timeout_s, cleanup_timeout_s) -> (records, leftover)``: creates
  the plan's setup objects, then step by step creates the step's objects, waits for its
  pods (k8s_api.wait: watches with a timeout), reads each pod's log the moment that pod
  ends (``PodLogs``: before a TTL controller or the garbage collector can remove it, while
  other pods of the step still run) and turns the logs into records (k8s_plan.slot_records);
  a pod that is gone before its log was read says "pod deleted (TTL/GC)"; pods that cannot
  be created (admission) end the step at once with their owner's FailedCreate message;
  everything runs inside ``k8s_api.guard``, so
  the run's objects are deleted on success, error, timeout, SIGTERM and Ctrl-C. Every
  planned pod yields records: a pod that did not run gives ``error`` records naming the
  reason (k8s_api.diagnose); a step that could not even be created, or never started
  because of an interrupt, gives ``error`` records for each of its checks; objects left
  after cleanup give a ``k8s.cleanup`` error record.
- ``render(plan, directory, write=True) -> [paths]``: one YAML file per object.
- ``select_nodes``, ``choose_launcher`` (API discovery), ``ssh_keys`` (per-run key pair).

Imports nothing from Ansible.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import time

from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_api, k8s_plan, results, statedir
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import AcceptanceError
from ansible_collections.aifabric.acceptance.plugins.module_utils.proc import decode, spawn

LOG_TAIL_LINES = 40
# the time limits of a run besides its steps' waits: connecting, discovery, the node list and the setup objects;
# per step, creating its objects and reading its logs and diagnoses (each request is bounded by
# k8s_api.REQUEST_TIMEOUT, a healthy API answers in well under a second)
SETUP_S = 30
STEP_OVERHEAD_S = 30


def worst_case_s(plan, wait_s, cleanup_timeout_s):
    """The longest ``execute`` runs for ``plan`` when each step waits ``wait_s``: the setup, every step (its wait
    plus STEP_OVERHEAD_S), then the cleanup. A task's ``timeout:`` is this plus a margin (the k8s role's)."""
    return SETUP_S + len(plan["steps"]) * (int(wait_s) + STEP_OVERHEAD_S) + int(cleanup_timeout_s) \
        + k8s_api.WAIT_SLACK_S


def reserve_s(cleanup_timeout_s):
    """What ``execute`` keeps back from a task's time limit after the last wait: one step's log reads and the
    cleanup, so that it returns before Ansible's limit even when the limit cuts its waits."""
    return STEP_OVERHEAD_S + int(cleanup_timeout_s) + k8s_api.WAIT_SLACK_S


def object_names(plan):
    return ["%s/%s/%s" % (o["kind"], o["metadata"].get("namespace") or plan["namespace"], o["metadata"]["name"])
            for o in k8s_plan.objects_of(plan)]


def _dump(obj):
    try:
        import yaml
    except ImportError:  # pragma: no cover - PyYAML ships with ansible-core
        return json.dumps(obj, indent=2, sort_keys=True) + "\n"

    class _Dumper(yaml.SafeDumper):
        pass

    def _text(dumper, data):  # multi-line ConfigMap files as block scalars (readable, diffable)
        style = "|" if "\n" in data and not any(ord(c) < 32 and c not in "\n\t" for c in data) and \
            not data.endswith((" ", "\t")) and "\n " not in data[-2:] else None
        return dumper.represent_scalar("tag:yaml.org,2002:str", data, style=style)

    _Dumper.add_representer(str, _text)
    return yaml.dump(obj, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=120)


def render(plan, directory, write=True):
    """Write every object of ``plan`` to ``directory/NN-kind-name.yaml``; returns the paths.

    ``directory`` passes statedir.trusted_dir (created 0700; an existing one must be ours and writable by nobody
    else: another user could edit the manifests before an operator applies them). Every file is written 0600
    (one of them may be the run's ssh private key), atomically and never through a planted link.
    """
    directory = statedir.trusted_dir(directory, create=write, private=True, what="render_dir")
    paths = []
    objects = list(k8s_plan.objects_of(plan))
    for i, obj in enumerate(objects):
        labelled = k8s_api.label_object(obj, plan["run_id"])
        name = "%02d-%s-%s.yaml" % (i, obj["kind"].lower(), obj["metadata"]["name"])
        statedir.check_name(name, "manifest file name")
        paths.append(os.path.join(directory, name))
        if write:
            statedir.write_file(directory, name, _dump(labelled), mode=0o600)
    return paths


def ssh_keys():
    """A fresh ed25519 key pair for one run's MPI launch: {'id_ed25519': private, 'id_ed25519.pub': public}."""
    try:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ed25519
    except ImportError:
        return _ssh_keygen()
    key = ed25519.Ed25519PrivateKey.generate()
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.OpenSSH,
                                serialization.NoEncryption()).decode("ascii")
    public = key.public_key().public_bytes(serialization.Encoding.OpenSSH,
                                           serialization.PublicFormat.OpenSSH).decode("ascii")
    return {"id_ed25519": private, "id_ed25519.pub": public + " aifabric-acceptance\n"}


def _ssh_keygen():
    tool = shutil.which("ssh-keygen")
    if not tool:
        raise AcceptanceError("cannot make the per-run ssh key pair: neither the Python package cryptography nor "
                              "ssh-keygen is available on the controller")
    directory = tempfile.mkdtemp(prefix="aifabric-k8s-")
    try:
        path = os.path.join(directory, "id_ed25519")
        child = spawn([tool, "-q", "-t", "ed25519", "-N", "", "-C", "aifabric-acceptance", "-f", path], 30)
        _out, err = child.communicate()
        if child.rc != 0:
            raise AcceptanceError("ssh-keygen could not make the per-run key pair (rc %s): %s"
                                  % (child.rc, decode(err)[0].strip()[-500:]))
        with open(path) as private, open(path + ".pub") as public:
            return {"id_ed25519": private.read(), "id_ed25519.pub": public.read()}
    finally:
        shutil.rmtree(directory, ignore_errors=True)


def select_nodes(api, nodes, node_selector):
    """``nodes``, or the nodes matching ``node_selector`` (only those of ``nodes`` when both are given)."""
    if not node_selector:
        return list(nodes or [])
    found = [item["metadata"]["name"] for item in k8s_api.list_nodes(api, node_selector)]
    chosen = [n for n in nodes if n in found] if nodes else found
    if not chosen:
        raise AcceptanceError("no node matches node_selector %r%s" % (
            node_selector, " among %s" % ", ".join(nodes) if nodes else ""))
    return chosen


def choose_launcher(api):
    """API discovery: mpijob when kubeflow.org/v2beta1 is served, else volcano, else indexed."""
    served = k8s_api.discover(api, [k8s_api.MPIJOB_GV, k8s_api.VOLCANO_GV])
    if k8s_api.MPIJOB_GV in served:
        return "mpijob"
    if k8s_api.VOLCANO_GV in served:
        return "volcano"
    return "indexed"


MPIJOB_CRD = "mpijobs.kubeflow.org"


def mpi_operator_service(api):
    """The naming of the installed mpi-operator, from its MPIJob CRD (a capability check): ``"job"`` - the workers'
    Service and subdomain ``<job>`` (v0.5.0 on; its v2beta1 schema has ``launcherCreationPolicy``) -, ``"worker"`` -
    ``<job>-worker`` (v0.4.x, which serves kubeflow.org/v2beta1 too) -, or None when the CRD cannot be read (no
    RBAC for CRDs): the plan then names v0.5's and the launcher takes the names from the operator's hostfile."""
    from kubernetes import client
    crds = client.ApiextensionsV1Api(api)
    try:
        doc = k8s_api._json(crds.read_custom_resource_definition(  # pylint: disable=protected-access
            MPIJOB_CRD, _preload_content=False, _request_timeout=k8s_api.REQUEST_TIMEOUT))
    except k8s_api._api_errors():  # pylint: disable=protected-access
        return None
    for version in (doc.get("spec") or {}).get("versions") or []:
        if version.get("name") == "v2beta1":
            spec = (((version.get("schema") or {}).get("openAPIV3Schema") or {}).get("properties") or {}).get("spec")
            props = (spec or {}).get("properties") or {}
            return "job" if "launcherCreationPolicy" in props else "worker"
    return None


def _step_selector(plan, step):
    return "%s,%s=%s" % (k8s_api.run_selector(plan["run_id"]), k8s_plan.STEP_LABEL, step["name"])


def _unrun(plan, step, reason, started):
    """Error records for every check of a step whose pods never ran."""
    out = []
    for slot in step["slots"]:
        outcome = {"name": None, "node": slot.get("node"), "outcome": "not run", "reason": reason}
        out.extend(k8s_plan.slot_records(plan, slot, outcome, "", started=started))
    return out


# the reason of a log that cannot be read because its pod is gone (404): the Job's TTL-after-finished controller or
# the garbage collector (an owner deleted) removed it - the records say so instead of "log has no output"
POD_GONE = "pod deleted (TTL/GC)"
LOG_UNREADABLE = "log_unreadable"       # the outcome a finished pod gets when its log could not be read


def _declared_containers(step):
    """The container names of the step's pod templates (the collection's containers, not injected sidecars)."""
    names = set()
    for obj in step.get("objects") or []:
        for template in k8s_api.pod_templates(obj):
            names.update(c.get("name") for c in (template.get("spec") or {}).get("containers") or [])
    return names


def read_pod_log(api, namespace, outcome, declared=None):
    """(log text, None) of the pod of ``outcome``, or ("", why it could not be read): a 404 says POD_GONE.
    The container is named (the one the plan declared, else the pod's first): a pod with an injected sidecar
    (Istio, Linkerd) answers 400 without a name."""
    names = outcome.get("containers") or []
    container = next((n for n in names if n in (declared or ())), names[0] if names else None)
    try:
        return k8s_api.logs(api, namespace, outcome["name"], container=container), None
    except AcceptanceError as exc:
        if (getattr(exc, "details", None) or {}).get("status") == 404:
            return "", "%s before its log was read (%s)" % (POD_GONE, exc)
        return "", str(exc)


class PodLogs(object):
    """Each pod's log (and, for a pod that did not succeed, its diagnosis) read the moment k8s_api.wait reports it
    final (``on_final``), not when the whole step ends: a pod of the step that finished early can be deleted by its
    Job's TTL while another node still runs. A pod seen being deleted (``on_terminating``: its deadline, an
    eviction) has its log read at once too: once it terminated it is gone with its log, and what it printed so far
    holds the steps it finished (the entry program prints each step's section when the step ends)."""

    def __init__(self, api, namespace, declared=None):
        self.api, self.namespace, self.declared = api, namespace, declared
        self.texts = {}         # pod name -> (text, why unreadable or None)
        self.diagnosis = {}     # pod name -> k8s_api.diagnose line
        self.at_deletion = {}   # pod name -> its log as read when it was seen being deleted

    def on_terminating(self, outcome):
        text, why = read_pod_log(self.api, self.namespace, outcome, self.declared)
        if why is None:
            self.at_deletion[outcome["name"]] = text

    def on_final(self, outcome):
        name = outcome.get("name")
        if not name or name in self.texts:
            return
        text, why = read_pod_log(self.api, self.namespace, outcome, self.declared)
        if why and why.startswith(POD_GONE) and name in self.at_deletion:
            text, why = self.at_deletion[name], None        # all there is: what it printed until it was deleted
        self.texts[name] = (text, why)
        if outcome.get("outcome") != k8s_api.SUCCEEDED:
            self.diagnosis[name] = k8s_api.diagnose(self.api, self.namespace, name)

    def log_of(self, outcome):
        if outcome["name"] not in self.texts:
            self.on_final(outcome)
        return self.texts[outcome["name"]]

    def diagnose(self, outcome):
        if outcome["name"] not in self.diagnosis:
            self.diagnosis[outcome["name"]] = k8s_api.diagnose(self.api, self.namespace, outcome["name"])
        return self.diagnosis[outcome["name"]]


BLOCKED = (k8s_api.CREATE_FAILED, k8s_api.GANG_PENDING)     # owner outcomes: the step's pods will not come
# outcomes whose wait message names the cause (the event, how long it was waited out)
OWN_WORDS = (k8s_api.SANDBOX, k8s_api.MOUNT, k8s_api.TIMEOUT, k8s_api.IMAGE_PULL, k8s_api.UNSCHEDULABLE)


def _refused_for(slot, refused):
    """The CREATE_FAILED or GANG_PENDING outcome of the slot's owner (its Job, or what its operator created), else any
    of the step."""
    own = [o for o in refused if o.get("owner") == slot["job"] or str(o.get("owner")).startswith(slot["job"] + "-")]
    return (own or refused or [None])[0]


def _pod_outcome(logs, slot, outcome, refused):
    """(outcome, log text) of one planned slot: its log (read early by ``logs``), its diagnosis, or why no pod."""
    if outcome is not None and outcome.get("name"):
        text, why = logs.log_of(outcome)
        if outcome.get("outcome") == k8s_api.SUCCEEDED:
            if why:
                outcome = dict(outcome, outcome=LOG_UNREADABLE, message="the pod succeeded but %s" % why)
        else:       # a log that could not be read matters here only when the pod is gone (else: diagnose says why)
            gone = why if why and why.startswith(POD_GONE) else None
            # the wait's own words where they are the cause (how long it waited, the kubelet's warning), then the pod
            own = outcome.get("message") if outcome.get("outcome") in OWN_WORDS else None
            outcome = dict(outcome, message="; ".join(x for x in (own, logs.diagnose(outcome), gone) if x))
        return outcome, text
    if outcome is None:
        culprit = _refused_for(slot, refused)
        if culprit is not None:
            why = "its pods cannot be created" if culprit["outcome"] == k8s_api.CREATE_FAILED else "no pod was created"
            return dict(culprit, node=slot.get("node"), message="%s: %s" % (why, culprit["message"])), ""
        outcome = {"name": None, "node": slot.get("node"), "outcome": "missing",
                   "reason": "no pod of %s appeared before the wait ended" % slot["job"]}
    return outcome, ""


def _gang_culprit(logs, outcome, failed_others, refused=()):
    """A gang's slot aborted (or whose pod never came: an operator's launcher waits for its workers) because another
    pod of it could not run (a worker stuck in ContainerCreating on its node, unschedulable, crashed) or could not be
    created (a quota, a webhook): the slot's records speak for the pod
    or object that ended the gang - its node where it had one, its pod, its reason (the event's) -, not for the
    innocent launcher's node."""
    culprits = [o for o in failed_others if o.get("outcome") != k8s_api.ABORTED]
    culprit = next((o for o in culprits if o.get("node")), None) or next(iter(culprits), None)
    if outcome.get("outcome") not in (k8s_api.ABORTED, "missing") or (culprit is None and not refused):
        return outcome
    stopped = "the gang stopped: pod %s%s was aborted" % (outcome.get("name"), " on %s" % outcome["node"]
                                                          if outcome.get("node") else "") if outcome.get("name") \
        else "the gang stopped: %s" % outcome.get("reason")
    if culprit is None:
        return dict(refused[0], message="its pods cannot be created: %s; %s" % (refused[0]["message"], stopped))
    own = culprit.get("message") if culprit.get("outcome") in OWN_WORDS else None
    return dict(culprit, message="; ".join(x for x in (own, logs.diagnose(culprit), stopped) if x))


def step_records(api, plan, step, outcomes, started, logs=None):
    """Records of every planned pod of a step from k8s_api.wait's outcomes; the logs ``logs`` (PodLogs) read while
    the step ran, the others read here."""
    ns = plan["namespace"]
    logs = logs if logs is not None else PodLogs(api, ns, _declared_containers(step))
    failed_others = []
    refused = [o for o in outcomes if o.get("outcome") in BLOCKED]
    by_slot = {}
    for outcome in outcomes:
        slot = k8s_plan.slot_of_outcome(step, outcome) if outcome.get("name") else None
        if slot is None:
            if outcome.get("outcome") in k8s_api.ERROR_OUTCOMES and outcome.get("name"):
                failed_others.append(outcome)
            continue
        by_slot[slot["slot"]] = outcome
    out = []
    servers = {}      # perftest: a pair's server records, for its client's bandwidth floor (both ends' port rates)
    slots = sorted(step["slots"], key=lambda s: s["role"] == "client")
    for slot in slots:
        outcome, text = _pod_outcome(logs, slot, by_slot.get(slot["slot"]), refused)
        outcome = _gang_culprit(logs, outcome, failed_others, refused)
        others = [o for o in failed_others if o.get("name") != outcome.get("name")
                  and o.get("outcome") != k8s_api.ABORTED]
        if others and outcome.get("outcome") != k8s_api.SUCCEEDED:
            why = "; ".join("%s%s: %s" % (o.get("name"), " on %s" % o["node"] if o.get("node") else "",
                                          logs.diagnose(o)) for o in others[:4])
            outcome = dict(outcome, message="; ".join(x for x in (outcome.get("message"), "gang: " + why) if x))
        peer_rates = None
        if slot["role"] == "client":
            peer_rates = k8s_plan.peer_rates_of(servers.get(slot["slot"][:-len("client")]) or [],
                                                plan["options"]["hcas"])
        records = k8s_plan.slot_records(plan, slot, outcome, text, started=started, peer_rates=peer_rates)
        if slot["role"] == "server":
            servers[slot["slot"][:-len("server")]] = records
        out.extend(records)
    return out


def execute(api, plan, timeout_s, cleanup_timeout_s=120, unschedulable_grace_s=k8s_api.UNSCHEDULABLE_GRACE_S,
            image_pull_grace_s=k8s_api.IMAGE_PULL_GRACE_S, graces=None, deadline=None):
    """Run every step of ``plan``; returns (records, leftover). Cleans up on every way out. ``graces``: the waits'
    other graces (k8s_api.GRACES names: sandbox, mount, podgroup). ``deadline`` (time.monotonic): the last moment
    a step may wait until (Ansible's limit for the task less ``reserve_s``): a step's wait is cut to it, and a step
    with no time left is not started (its records say so); the cleanup still runs."""
    ns = plan["namespace"]
    run_id = plan["run_id"]
    records = []
    done = set()
    stop_reason = None
    interrupted = None
    guard = k8s_api.guard(api, ns, run_id, timeout_s=cleanup_timeout_s)
    try:
        with guard:
            k8s_api.create(api, plan["setup"], run_id, ns)
            for step in plan["steps"]:
                wait_s = timeout_s if deadline is None else min(timeout_s, int(deadline - time.monotonic()))
                if wait_s < 1:
                    stop_reason = "not run: the task's time limit (Ansible's timeout) left no time for this step; " \
                        "raise the task's timeout: or let the k8s role compute it"
                    break
                started = results.utc_now()
                refs = k8s_api.create(api, step["objects"], run_id, ns)
                logs = PodLogs(api, ns, _declared_containers(step))
                outcomes = k8s_api.wait(api, ns, _step_selector(plan, step), step["expected_pods"], wait_s,
                                        done_selector=step.get("done_selector"), fail_fast=step.get("fail_fast"),
                                        unschedulable_grace_s=unschedulable_grace_s,
                                        image_pull_grace_s=image_pull_grace_s, owners=refs, on_final=logs.on_final,
                                        on_terminating=logs.on_terminating, graces=graces,
                                        planned_pods=step.get("planned_pods"))
                records.extend(step_records(api, plan, step, outcomes, started, logs))
                done.add(step["name"])
    except KeyboardInterrupt as exc:
        interrupted = "interrupted (%s) before this step finished; the run's objects were deleted" % (
            str(exc) or type(exc).__name__)
    except AcceptanceError as exc:
        stop_reason = "the run stopped: %s" % exc
    now = results.utc_now()
    for step in plan["steps"]:
        if step["name"] not in done:
            records.extend(_unrun(plan, step, interrupted or stop_reason or "not run", now))
    leftover = guard.leftover or []
    if leftover:
        records.append(results.error(
            "k8s.cleanup", "%d object(s) of run %s are still present after cleanup: %s; remove them with "
            "state: absent, run_id: %s" % (len(leftover), run_id, ", ".join(leftover[:10]), run_id),
            params={"substrate": "kubernetes", "namespace": ns, "run_id": run_id}, tool={"name": "kubernetes"}))
    return records, leftover
