# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Kubernetes API layer of the collection (private; controller side).

A thin layer over the official ``kubernetes`` client (37.x) that the Kubernetes
modules use. Everything here exchanges **plain dicts** (manifests in, JSON out):
responses are read with ``_preload_content=False`` and decoded with ``json``, so
no pydantic model of the generated client leaks out and nothing depends on its
attribute names.

Public interface:

- ``RUN_LABEL`` (``aifabric.acceptance/run-id``), ``MANAGED_BY_KEY``/``MANAGED_BY_VALUE`` (the
  ``app.kubernetes.io/managed-by: aifabric.acceptance`` pair), ``MPIJOB_GV``,
  ``VOLCANO_GV``, ``run_selector(run_id)``.
- ``K8sError`` - an AcceptanceError; ``str()`` is one line the user can act on,
  ``details`` carries ``status`` (HTTP code) and ``body`` (the API's Status
  message) where the API answered.
- ``connection_argspec()`` - AnsibleModule options with the names and behaviour
  of ``kubernetes.core``: kubeconfig, context, host, api_key (no_log), username,
  password (no_log), validate_certs (alias verify_ssl), ca_cert (alias
  ssl_ca_cert), client_cert (alias cert_file), client_key (alias key_file),
  proxy, no_proxy, proxy_headers; every one falls back to ``K8S_AUTH_<NAME>``.
- ``connect(params) -> ApiClient`` - kubeconfig/context, explicit host/api_key,
  or in-cluster config when nothing is given (then the default kubeconfig).
- ``discover(api, group_versions) -> set`` - which of the asked "group/version"
  strings the server serves (e.g. ``{MPIJOB_GV, VOLCANO_GV}``).
- ``list_nodes(api, label_selector=None) -> [node dict]``.
- ``create(api, objects, run_id, namespace=None) -> refs`` - creates manifests
  in order, each (and each pod template) labelled with the run label.
- ``wait(api, namespace, selector, expected_pods, timeout_s, ...) -> outcomes``
  - watch-based; per-pod outcome dicts (see ``wait``).
- ``diagnose(api, namespace, pod) -> str`` - one line: why this pod did not
  finish well (scheduler message, image pull error, OOMKilled, exit code, log tail).
- ``logs(api, namespace, pod, container=None, limit_bytes=...) -> str``.
- ``cleanup(api, namespace, run_id, kinds=None, timeout_s=60) -> leftovers`` -
  deletes every object of the run by the one run-label selector and returns
  what is still there (``[]`` when all are gone).
- ``guard(api, namespace, run_id, ...)`` - context manager: cleanup on success,
  exception, KeyboardInterrupt and SIGTERM (raised in the block as ``Terminated``,
  a KeyboardInterrupt); ``.leftover`` afterwards.
- pure helpers: ``label_object(obj, run_id)`` (the labelling ``create`` applies,
  for render mode), ``pod_templates(obj)`` (the pod templates in a manifest) and ``classify(pod, ...)`` (one pod dict -> outcome; never raises);
  outcome names ``SUCCEEDED`` and ``ERROR_OUTCOMES`` (FAILED, OOM, UNSCHEDULABLE,
  IMAGE_PULL, CRASH_LOOP, CONFIG_ERROR, DELETED, TIMEOUT, ABORTED, CREATE_FAILED, SANDBOX, MOUNT, GANG_PENDING),
  ``RUNNING``; ``GRACES`` (every grace of a wait, by name) and ``creating(pod)``.

The ``kubernetes`` package is imported lazily: importing this file never fails;
``connect`` raises K8sError with the install hint when the client is missing
(``HAS_K8S`` / ``K8S_IMPORT_ERROR`` say so up front, as in kubernetes.core).
Python 3.8 syntax (sanity checks module_utils for it); the client itself needs
Python >= 3.10, so this runs on the controller (``delegate_to: localhost``).
"""

from __future__ import annotations

import contextlib
import copy
import json
import math
import os
import re
import signal
import time

from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import AcceptanceError
from ansible_collections.aifabric.acceptance.plugins.module_utils.proc import interrupt_guard

try:
    # only whether it imports: the client's modules are imported where they are used
    import kubernetes  # noqa: F401  pylint: disable=unused-import
    HAS_K8S = True
    K8S_IMPORT_ERROR = None
except ImportError as _exc:  # pragma: no cover - depends on the environment
    HAS_K8S = False
    K8S_IMPORT_ERROR = str(_exc)

INSTALL_HINT = ("the Python package 'kubernetes' is required on the controller (not for render-only mode): "
                "pip install 'kubernetes>=37,<38'")

RUN_LABEL = "aifabric.acceptance/run-id"
MANAGED_BY_KEY = "app.kubernetes.io/managed-by"
MANAGED_BY_VALUE = "aifabric.acceptance"

MPIJOB_GV = "kubeflow.org/v2beta1"
VOLCANO_GV = "batch.volcano.sh/v1alpha1"

# Every request has a client-side timeout (connect, read) in seconds: nothing here can hang.
REQUEST_TIMEOUT = (10, 60)
LOG_LIMIT_BYTES = 64 << 20          # same ceiling as import mode (imports.MAX_IMPORT_BYTES)
WATCH_ROUND_S = 60                  # longest single watch request; re-established after it ends
WAIT_SLACK_S = 3                    # a wait's requests may read this long past its deadline, never more
UNSCHEDULABLE_GRACE_S = 60          # an Unschedulable pod gets this long (autoscalers) before it is an error
# a pod failing to pull its image (ErrImagePull, ImagePullBackOff) gets this long: a registry's 429/5xx or a slow
# mirror clears within the kubelet's first back-offs
IMAGE_PULL_GRACE_S = 120
OWNER_EVENT_POLL_S = 2              # while pods are missing, their owners' FailedCreate events are read this often
# the Warning events a controller records on its object when a pod create is refused, reason -> message prefix: the
# Kubernetes controllers' and Volcano's "FailedCreate" (controller_utils.go, FailedCreatePodReason), kubeflow/common's
# "FailedCreatePod", mpi-operator's "MPIJobFailed" "worker pod created failed: <err>" (getOrCreateWorker)
FAILED_CREATE_EVENTS = {"FailedCreate": "", "FailedCreatePod": "", "MPIJobFailed": "worker pod created failed"}
# what refused the pod, from the refusal's words, and so how long the wait gives it: ResourceQuota admission's
# "exceeded quota: <quota>, requested: ..., used: ..., limited: ..." (apiserver/pkg/admission/plugin/resourcequota/
# controller.go CheckRequest: the namespace's other pods hold the quota; it clears when they end, and the controllers
# retry the create with back-off) gets the "quota" grace; a validating webhook's 'admission webhook "<name>" denied
# the request: ...' (webhook/errors/statuserror.go ToStatusErr: a policy engine, a quota or placement webhook that
# may judge the cluster's state, a policy being fixed) the "admission" grace; a refusal of the pod's own spec
# (PodSecurity's "violates PodSecurity", the quota evaluator's "failed quota: ...: must specify", the LimitRanger's
# max/min) is final at once - nothing in the cluster changes it
REFUSAL_WORDS = (("exceeded quota: ", "quota"), ("admission webhook ", "admission"))
QUOTA_GRACE_S = 120
ADMISSION_GRACE_S = 60
# a pod bound to a node that cannot start: the kubelet's Warning events (pkg/kubelet/events/event.go), recorded on the
# pod while its containers wait in ContainerCreating, -> the grace they get (the kubelet retries each with back-off)
# and the outcome once it ran out:
# - "sandbox": FailedCreatePodSandBox "Failed to create pod sandbox: <err>" (kuberuntime_manager.go SyncPod: a CNI
#   ADD that fails, a RuntimeClass the node's runtime has no handler for - containerd's "no runtime for "x" is
#   configured" -, a RuntimeClass the kubelet cannot find), FailedPodSandBoxStatus, and NetworkNotReady "network is
#   not ready: container runtime network not ready: ..." (kubelet.go SyncPod: the node's CNI is not initialised);
# - "mount": FailedMount (MountVolume.SetUp failed, "Unable to attach or mount volumes: ..."), FailedAttachVolume,
#   FailedMapVolume (a CSI attach may take a minute or two before it succeeds)
START_EVENTS = {"FailedCreatePodSandBox": "sandbox", "FailedPodSandBoxStatus": "sandbox", "NetworkNotReady": "sandbox",
                "FailedMount": "mount", "FailedAttachVolume": "mount", "FailedMapVolume": "mount"}
SANDBOX_GRACE_S = 180
MOUNT_GRACE_S = 300
# Volcano creates a vcjob's pods only once the scheduler enqueued its PodGroup (pkg/controllers/job
# job_controller_actions.go syncJob: no task sync while the PodGroup phase is Pending); while it is not, the job
# controller records "PodGroupPending" on the vcjob ("PodGroup <ns>:<job> unschedule,reason: <condition message>")
# and the scheduler "Unschedulable" on the PodGroup ("queue resource quota insufficient" - capacity/proportion -,
# "resource in cluster is overused" - overcommit: the gang is larger than the free resources -, "<n>/<m> tasks in
# gang unschedulable: pod group is not ready, <k> minAvailable"): reason -> the kind of the object it is about
GANG_EVENTS = {"PodGroupPending": "Job", "Unschedulable": "PodGroup"}
PODGROUP_GRACE_S = 300
STUCK_EVENT_POLL_S = 5              # while a pod waits in ContainerCreating, the kubelet's events are read this often

# Outcome names of ``wait``: terminal (finished by itself) and unrecoverable (will not finish).
SUCCEEDED = "succeeded"
FAILED = "failed"                   # ran and exited non-zero (exit_code set), or the Pod phase is Failed
OOM = "oom_killed"
UNSCHEDULABLE = "unschedulable"
IMAGE_PULL = "image_pull"
CRASH_LOOP = "crash_loop"
CONFIG_ERROR = "config_error"       # CreateContainerConfigError / CreateContainerError / InvalidImageName
DELETED = "deleted"                 # the pod vanished before it finished (evicted, preempted, deleted)
CREATE_FAILED = "create_failed"     # the owner's controller cannot create the pod (admission: PodSecurity, quota, webhook)
SANDBOX = "sandbox_failed"          # bound, but its sandbox/network never came up (START_EVENTS "sandbox") past its grace
MOUNT = "mount_failed"              # bound, but a volume never attached/mounted (START_EVENTS "mount") past its grace
GANG_PENDING = "gang_pending"       # a Volcano Job's PodGroup was not enqueued (no pod created) past its grace
TIMEOUT = "timeout"                 # still pending/running when the wait ran out of time
ABORTED = "aborted"                 # fail_fast: unfinished when another pod of the gang failed
RUNNING = "running"                 # not required to finish (done_selector) and still running at the end
ERROR_OUTCOMES = (FAILED, OOM, UNSCHEDULABLE, IMAGE_PULL, CRASH_LOOP, CONFIG_ERROR, DELETED, TIMEOUT, ABORTED,
                  CREATE_FAILED, SANDBOX, MOUNT, GANG_PENDING)
START_OUTCOMES = {"sandbox": SANDBOX, "mount": MOUNT}
# every grace of a wait (seconds), by the name of its option without "_grace_s"
GRACES = {"unschedulable": UNSCHEDULABLE_GRACE_S, "image_pull": IMAGE_PULL_GRACE_S, "sandbox": SANDBOX_GRACE_S,
          "mount": MOUNT_GRACE_S, "podgroup": PODGROUP_GRACE_S, "quota": QUOTA_GRACE_S, "admission": ADMISSION_GRACE_S}

# Deletion order of ``cleanup``: operators' objects first (they own pods), then Jobs, then the rest.
# (api_version, kind, plural, namespaced)
CORE_KINDS = (
    ("batch/v1", "Job", "jobs"),
    ("v1", "Pod", "pods"),
    ("v1", "Service", "services"),
    ("v1", "ConfigMap", "configmaps"),
    ("v1", "Secret", "secrets"),
)
CUSTOM_KINDS = (
    (MPIJOB_GV, "MPIJob", "mpijobs"),
    (VOLCANO_GV, "Job", "jobs"),
)

_LABEL_VALUE = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$")


class K8sError(AcceptanceError):
    """A Kubernetes API call failed or the client is unusable; the message says what to do."""


def run_selector(run_id):
    """The one label selector that finds every object of run ``run_id``."""
    return "%s=%s" % (RUN_LABEL, check_run_id(run_id))


def check_run_id(run_id):
    """``run_id`` if it is a valid label value (<= 63 chars, alphanumerics, ``-_.``), else K8sError."""
    if not isinstance(run_id, str) or not _LABEL_VALUE.match(run_id):
        raise K8sError("run id %r is not a valid Kubernetes label value (1-63 characters: letters, digits, "
                       "'-', '_', '.', starting and ending with a letter or digit)" % (run_id,))
    return run_id


class Terminated(KeyboardInterrupt):
    """Raised inside ``guard`` when the process receives SIGTERM (treated like Ctrl-C)."""


# ---------------------------------------------------------------- connection

# option name -> (environment variable of kubernetes.core, attribute of kubernetes.client.Configuration)
_AUTH = (
    ("kubeconfig", "K8S_AUTH_KUBECONFIG", None),
    ("context", "K8S_AUTH_CONTEXT", None),
    ("host", "K8S_AUTH_HOST", "host"),
    ("api_key", "K8S_AUTH_API_KEY", "api_key"),
    ("username", "K8S_AUTH_USERNAME", "username"),
    ("password", "K8S_AUTH_PASSWORD", "password"),
    ("validate_certs", "K8S_AUTH_VERIFY_SSL", "verify_ssl"),
    ("ca_cert", "K8S_AUTH_SSL_CA_CERT", "ssl_ca_cert"),
    ("client_cert", "K8S_AUTH_CERT_FILE", "cert_file"),
    ("client_key", "K8S_AUTH_KEY_FILE", "key_file"),
    ("proxy", "K8S_AUTH_PROXY", "proxy"),
    ("no_proxy", "K8S_AUTH_NO_PROXY", "no_proxy"),
    ("proxy_headers", None, "proxy_headers"),
)


def connection_argspec():
    """AnsibleModule ``argument_spec`` entries for the API connection (kubernetes.core names).

    All default to None; ``connect`` applies the ``K8S_AUTH_*`` environment fallbacks
    (as kubernetes.core does) so that the module documentation can say so once.
    """
    return dict(
        kubeconfig=dict(type="raw", no_log=True),     # an inline kubeconfig holds tokens and keys: never logged
        context=dict(type="str"),
        host=dict(type="str"),
        api_key=dict(type="str", no_log=True),
        username=dict(type="str"),
        password=dict(type="str", no_log=True),
        validate_certs=dict(type="bool", aliases=["verify_ssl"]),
        ca_cert=dict(type="path", aliases=["ssl_ca_cert"]),
        client_cert=dict(type="path", aliases=["cert_file"]),
        client_key=dict(type="path", aliases=["key_file"], no_log=False),
        proxy=dict(type="str"),
        no_proxy=dict(type="str"),
        proxy_headers=dict(type="dict", options=dict(
            proxy_basic_auth=dict(type="str", no_log=True),
            basic_auth=dict(type="str", no_log=True),
            user_agent=dict(type="str"),
        )),
    )


def _auth_params(params):
    out = {}
    for name, env, _attr in _AUTH:
        value = params.get(name)
        if value is None and env and os.environ.get(env):
            value = os.environ[env]
            if name == "validate_certs":
                value = value.strip().lower() in ("1", "true", "yes", "on")
        out[name] = value
    return out


def _require_client():
    if not HAS_K8S:
        raise K8sError("%s (%s)" % (INSTALL_HINT, K8S_IMPORT_ERROR))


def connect(params):
    """An ``ApiClient`` for ``params`` (the options of ``connection_argspec``; others ignored).

    The same choice as kubernetes.core: host plus credentials (api_key, username/password
    or client cert/key) need no config file; else ``kubeconfig`` (a path, or a dict holding
    a whole kubeconfig) and/or ``context``; else in-cluster config, and failing that the
    default kubeconfig (``$KUBECONFIG`` or ``~/.kube/config``). Explicit options then
    override what was loaded. Raises K8sError saying what is missing.
    """
    _require_client()
    from kubernetes import client, config
    from kubernetes.config.config_exception import ConfigException

    auth = _auth_params(params or {})
    cfg = client.Configuration()

    def have(*names):
        return all(auth.get(n) for n in names)

    def load_kubeconfig():
        kc = auth.get("kubeconfig")
        try:
            if isinstance(kc, dict):
                config.load_kube_config_from_dict(config_dict=kc, context=auth.get("context"),
                                                  client_configuration=cfg, persist_config=False)
            else:
                if kc is not None and not isinstance(kc, str):
                    raise K8sError("kubeconfig must be a path or a dict, got %s" % type(kc).__name__)
                path = os.path.expanduser(kc) if kc else None
                if path and not os.path.exists(path):
                    raise K8sError("kubeconfig %s does not exist" % path)
                config.load_kube_config(config_file=path, context=auth.get("context"),
                                        client_configuration=cfg, persist_config=False)
        except (ConfigException, OSError, ValueError, TypeError, KeyError) as exc:
            raise K8sError("cannot load the kubeconfig%s%s: %s"
                           % (" " + kc if isinstance(kc, str) else "",
                              " (context %s)" % auth["context"] if auth.get("context") else "", exc))

    if have("host", "api_key") or have("host", "username", "password") or have("host", "client_cert", "client_key"):
        pass
    elif auth.get("kubeconfig") or auth.get("context"):
        load_kubeconfig()
    else:
        try:
            config.load_incluster_config(client_configuration=cfg)
        except ConfigException:
            try:
                load_kubeconfig()
            except K8sError as exc:
                if not auth.get("host"):
                    raise K8sError("no Kubernetes connection: not in a cluster, and %s; give kubeconfig, "
                                   "context or host (or set K8S_AUTH_KUBECONFIG / KUBECONFIG)" % exc)
    for name, _env, attr in _AUTH:
        value = auth.get(name)
        if attr is None or value is None:
            continue
        if name == "api_key":
            cfg.api_key = {"authorization": "Bearer %s" % value}
        elif name == "proxy_headers":
            import urllib3
            cfg.proxy_headers = urllib3.util.make_headers(**{k: v for k, v in value.items() if v is not None})
        else:
            setattr(cfg, attr, value)
    if not cfg.host:
        raise K8sError("no Kubernetes API host: give host, or a kubeconfig with a server")
    # urllib3 retries a read timeout 3 times by default, which would multiply every bound of this
    # file by 4; connection errors are still retried (a refused connect costs nothing)
    import urllib3
    cfg.retries = urllib3.util.Retry(total=3, connect=3, read=0, status=0, redirect=0)
    return client.ApiClient(configuration=cfg)


# ---------------------------------------------------------------- raw calls (plain dicts)

def _json(resp):
    """Decode a raw (``_preload_content=False``) response; always releases the connection."""
    try:
        data = resp.data
    finally:
        with contextlib.suppress(Exception):
            resp.release_conn()
    if not data:
        return {}
    return json.loads(data.decode("utf-8", "replace") if isinstance(data, bytes) else data)


def _status_of(exc):
    """(HTTP status, the API's message) of an ApiException or a transport error."""
    status = getattr(exc, "status", None)
    body = getattr(exc, "body", None)
    if body is None and getattr(exc, "http_resp", None) is not None:
        body = getattr(exc.http_resp, "data", None)
    message = None
    if body:
        try:
            doc = json.loads(body.decode("utf-8", "replace") if isinstance(body, bytes) else body)
            message = doc.get("message") if isinstance(doc, dict) else None
        except ValueError:
            message = (body.decode("utf-8", "replace") if isinstance(body, bytes) else str(body))[:300]
    if not message:
        message = getattr(exc, "reason", None) or str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return status, " ".join(str(message).split())


def _api_errors():
    from kubernetes.client.exceptions import ApiException
    import urllib3.exceptions
    return (ApiException, urllib3.exceptions.HTTPError, OSError)


def _fail(what, exc, verb=None, plural=None, group=None, namespace=None):
    status, message = _status_of(exc)
    text = "%s: %s" % (what, message)
    if status:
        text = "%s: HTTP %s %s" % (what, status, message)
    if status == 403 and verb and plural:
        text += (" - the collection's Role needs verb '%s' on resource '%s'%s%s (see docs/kubernetes.md, RBAC)"
                 % (verb, plural, " in API group '%s'" % group if group else " in the core API group",
                    " in namespace '%s'" % namespace if namespace else ""))
    elif status == 409:
        text += " - an object of that name exists (a leftover of an earlier run? remove it with state=absent and its run id)"
    elif status is None or status == 0:
        text += " (is the API server reachable?)"
    return K8sError(text, status=status, body=message)


def _split_gv(api_version):
    if "/" in api_version:
        return tuple(api_version.split("/", 1))
    return "", api_version


_CORE_APIS = {"v1": "CoreV1Api", "batch/v1": "BatchV1Api", "apps/v1": "AppsV1Api",
              "rbac.authorization.k8s.io/v1": "RbacAuthorizationV1Api"}
_PLURALS = {"MPIJob": "mpijobs", "Job": "jobs", "Pod": "pods", "Service": "services",
            "ConfigMap": "configmaps", "Secret": "secrets", "DaemonSet": "daemonsets",
            "ServiceAccount": "serviceaccounts", "Role": "roles", "RoleBinding": "rolebindings",
            "PodGroup": "podgroups"}


def _snake(kind):
    return re.sub(r"(?<!^)(?=[A-Z])", "_", kind).lower()


def _plural(kind):
    return _PLURALS.get(kind, kind.lower() + "s")


def _call(api, api_version, kind, verb, namespace, name=None, body=None, **query):
    """One namespaced call (create/list/delete/read) for any kind; returns the decoded JSON."""
    from kubernetes import client
    query.setdefault("_request_timeout", REQUEST_TIMEOUT)
    query["_preload_content"] = False
    cls = _CORE_APIS.get(api_version)
    if cls:
        typed = getattr(client, cls)(api)
        method = getattr(typed, "%s_namespaced_%s" % (verb, _snake(kind)))
        args = [a for a in (name, namespace) if a is not None]
        if body is not None:
            args.append(body)
        return _json(method(*args, **query))
    group, version = _split_gv(api_version)
    custom = client.CustomObjectsApi(api)
    method = getattr(custom, "%s_namespaced_custom_object" % verb)
    args = [group, version, namespace, _plural(kind)]
    if name is not None:
        args.append(name)
    if body is not None:
        args.append(body)
    return _json(method(*args, **query))


# ---------------------------------------------------------------- discovery

def discover(api, group_versions):
    """The subset of ``group_versions`` ("group/version" strings) that the server serves."""
    _require_client()
    from kubernetes import client
    wanted = set(group_versions)
    try:
        doc = _json(client.ApisApi(api).get_api_versions(_preload_content=False, _request_timeout=REQUEST_TIMEOUT))
    except _api_errors() as exc:
        raise _fail("cannot list the API groups of the server", exc)
    served = set()
    for group in doc.get("groups") or []:
        for ver in group.get("versions") or []:
            if ver.get("groupVersion"):
                served.add(ver["groupVersion"])
    if "v1" in wanted:
        served.add("v1")
    return wanted & served


def list_nodes(api, label_selector=None):
    """Node dicts (cluster-scoped; ``label_selector`` e.g. ``nvidia.com/gpu.present=true``), sorted by name."""
    _require_client()
    from kubernetes import client
    kwargs = dict(_preload_content=False, _request_timeout=REQUEST_TIMEOUT)
    if label_selector:
        kwargs["label_selector"] = label_selector
    try:
        doc = _json(client.CoreV1Api(api).list_node(**kwargs))
    except _api_errors() as exc:
        raise _fail("cannot list nodes%s" % (" matching %r" % label_selector if label_selector else ""), exc,
                    verb="list", plural="nodes")
    return sorted(doc.get("items") or [], key=lambda n: _d(n.get("metadata")).get("name") or "")


# ---------------------------------------------------------------- create

def pod_templates(obj):
    """The pod-template dicts inside ``obj`` (Job/DaemonSet, MPIJob replicas, Volcano tasks)."""
    spec = obj.get("spec") or {}
    out = []
    if isinstance(spec.get("template"), dict):
        out.append(spec["template"])
    for replica in (spec.get("mpiReplicaSpecs") or {}).values():
        if isinstance(replica, dict) and isinstance(replica.get("template"), dict):
            out.append(replica["template"])
    for task in spec.get("tasks") or []:
        if isinstance(task, dict) and isinstance(task.get("template"), dict):
            out.append(task["template"])
    return out


def label_object(obj, run_id):
    """A deep copy of manifest ``obj`` with the run label and the managed-by label on it and on its pod templates."""
    check_run_id(run_id)
    obj = copy.deepcopy(obj)
    for holder in [obj] + pod_templates(obj):
        md = holder.setdefault("metadata", {})
        labels = md.setdefault("labels", {})
        labels[RUN_LABEL] = run_id
        labels.setdefault(MANAGED_BY_KEY, MANAGED_BY_VALUE)
    return obj


def create(api, objects, run_id, namespace=None):
    """Create ``objects`` (plain dict manifests) in order; return refs of what was created.

    Each object, and each pod template in it, gets ``RUN_LABEL=run_id`` and the managed-by label, so
    ``cleanup`` finds it with one selector. The namespace is the object's own
    ``metadata.namespace``, else ``namespace``. Core kinds (Pod, Service, ConfigMap, Secret,
    ServiceAccount), batch/v1 Job, apps/v1 DaemonSet and RBAC go through the typed APIs; any
    other apiVersion (MPIJob, Volcano Job) through CustomObjectsApi. Refs are
    ``{apiVersion, kind, namespace, name, uid}``. The first failure raises K8sError with the
    API's message (409: exists; 403: the verb/resource the Role lacks); objects created
    before it stay (labelled) for ``cleanup`` or ``guard`` to remove.
    """
    _require_client()
    refs = []
    for raw in objects:
        if not isinstance(raw, dict) or not raw.get("apiVersion") or not raw.get("kind"):
            raise K8sError("not a Kubernetes manifest (apiVersion and kind are required): %r" % (raw,)[:200])
        obj = label_object(raw, run_id)
        md = obj["metadata"]
        ns = md.get("namespace") or namespace
        if not ns:
            raise K8sError("%s %s has no namespace and none was given" % (obj["kind"], md.get("name")))
        md["namespace"] = ns
        name = md.get("name") or md.get("generateName")
        group, _version = _split_gv(obj["apiVersion"])
        try:
            doc = _call(api, obj["apiVersion"], obj["kind"], "create", ns, body=obj)
        except _api_errors() as exc:
            raise _fail("cannot create %s %s/%s" % (obj["kind"], ns, name), exc, verb="create",
                        plural=_plural(obj["kind"]), group=group, namespace=ns)
        cmd = doc.get("metadata") or {}
        refs.append({"apiVersion": obj["apiVersion"], "kind": obj["kind"], "namespace": ns,
                     "name": cmd.get("name") or name, "uid": cmd.get("uid")})
    return refs


# ---------------------------------------------------------------- pod state

_IMAGE_REASONS = ("ImagePullBackOff", "ErrImagePull", "ErrImageNeverPull", "InvalidImageName",
                  "RegistryUnavailable", "SignatureValidationFailed")
# the kubelet retries these with back-off (pkg/kubelet/images/image_manager.go): they may clear by themselves
_TRANSIENT_IMAGE_REASONS = ("ErrImagePull", "ImagePullBackOff", "RegistryUnavailable")
_CONFIG_REASONS = ("CreateContainerConfigError", "CreateContainerError", "RunContainerError",
                   "PreCreateHookError", "PostStartHookError")


def _d(value):
    """``value`` if it is a dict, else {} (pod dicts from odd servers never make classify raise)."""
    return value if isinstance(value, dict) else {}


def _dl(value):
    """The dict items of ``value`` if it is a list, else []."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _containers(pod):
    status = _d(_d(pod).get("status"))
    return _dl(status.get("initContainerStatuses")) + _dl(status.get("containerStatuses"))


def _condition(pod, ctype):
    for cond in _dl(_d(_d(pod).get("status")).get("conditions")):
        if cond.get("type") == ctype:
            return cond
    return None


def _terminated_summary(pod):
    """(exit_code, reason, message, container, oom) of the first container that failed, else of any."""
    first = None
    for cs in _containers(pod):
        term = _d(_d(cs.get("state")).get("terminated")) or _d(_d(cs.get("lastState")).get("terminated"))
        if not term:
            continue
        item = (term.get("exitCode"), term.get("reason"), term.get("message"), cs.get("name"))
        if term.get("reason") == "OOMKilled":
            return item + (True,)
        if term.get("exitCode") not in (0, None) and (first is None or first[0] in (0, None)):
            first = item
        elif first is None:
            first = item
    if first is None:
        return None, None, None, None, False
    return first + (False,)


def classify(pod, unschedulable_since=None, now=None, grace_s=UNSCHEDULABLE_GRACE_S, pulling_since=None,
             pull_grace_s=IMAGE_PULL_GRACE_S):
    """(outcome, reason, message, exit_code) of one pod dict; outcome None while it may still finish.

    ``unschedulable_since`` is when (time.monotonic) the caller first saw it Unschedulable;
    the pod is an UNSCHEDULABLE outcome once ``grace_s`` passed since then. Likewise
    ``pulling_since``: when the caller first saw it failing to pull its image with an error the
    kubelet retries (ErrImagePull, ImagePullBackOff, RegistryUnavailable); it is an IMAGE_PULL
    outcome once ``pull_grace_s`` passed (without ``pulling_since``, or for a final error such as
    InvalidImageName, at once). Pure; never raises, whatever the dict holds.
    """
    status = _d(_d(pod).get("status"))
    phase = status.get("phase")
    code, treason, tmsg, cname, oom = _terminated_summary(pod)
    if phase == "Succeeded":
        return SUCCEEDED, treason or "Completed", tmsg, 0 if code is None else code
    if phase == "Failed":
        if oom:
            return OOM, "OOMKilled", "container %s was OOMKilled (exit %s)" % (cname, code), code
        if code not in (0, None):
            return FAILED, treason or "Error", "container %s exited %s%s" % (
                cname, code, " (%s)" % treason if treason else ""), code
        return FAILED, status.get("reason") or treason or "Failed", status.get("message") or tmsg, code
    for cs in _containers(pod):
        waiting = _d(_d(cs.get("state")).get("waiting"))
        wreason = waiting.get("reason")
        last = _d(_d(cs.get("lastState")).get("terminated"))
        if wreason in _IMAGE_REASONS:
            if wreason in _TRANSIENT_IMAGE_REASONS and pulling_since is not None and now is not None \
                    and now - pulling_since < pull_grace_s:
                continue        # the kubelet retries it: within the grace it may still start
            return IMAGE_PULL, wreason, _pull_message(cs, waiting, pulling_since, now), None
        if wreason in _CONFIG_REASONS:
            return CONFIG_ERROR, wreason, waiting.get("message"), None
        if last.get("reason") == "OOMKilled":
            return OOM, "OOMKilled", "container %s was OOMKilled (exit %s), restarted %s times" % (
                cs.get("name"), last.get("exitCode"), cs.get("restartCount", 0)), last.get("exitCode")
        if wreason == "CrashLoopBackOff":
            return CRASH_LOOP, wreason, "container %s keeps exiting %s (%s restarts)" % (
                cs.get("name"), last.get("exitCode"), cs.get("restartCount", 0)), last.get("exitCode")
    return _unschedulable_outcome(pod, unschedulable_since, now, grace_s)


def _unschedulable_outcome(pod, since, now, grace_s):
    """UNSCHEDULABLE with the scheduler's message once ``grace_s`` passed since ``since`` (and how long that was,
    for a wait's judgement: ``diagnose`` asks without a clock), else no outcome."""
    if not _is_unschedulable(pod) or since is None or now is None or now - since < grace_s:
        return None, None, None, None
    message = _condition(pod, "PodScheduled").get("message")
    if now > since:
        message = "%s (still Unschedulable %d s after it was first seen)" % (message, int(now - since))
    return UNSCHEDULABLE, "Unschedulable", message, None


def _pull_message(cs, waiting, pulling_since, now):
    """The kubelet's pull error, naming the image (and how long it has failed, past a grace period)."""
    image = cs.get("image") or "?"
    message = waiting.get("message") or "cannot pull image %s" % image
    if image not in message:
        message = "image %s: %s" % (image, message)
    if pulling_since is not None and now is not None and now - pulling_since >= 1:
        message += " (still failing after %d s)" % int(now - pulling_since)
    return message


def _pulling(pod):
    """The kubelet is retrying an image pull of this pod (a transient pull error, no final one)."""
    reasons = [_d(_d(cs.get("state")).get("waiting")).get("reason") for cs in _containers(pod)]
    return any(r in _TRANSIENT_IMAGE_REASONS for r in reasons) and \
        not any(r in _IMAGE_REASONS and r not in _TRANSIENT_IMAGE_REASONS for r in reasons)


def _waiting_why(pod):
    """``"; <reason>: <message>"`` of the first waiting container with a reason other than ContainerCreating."""
    for cs in _containers(pod):
        waiting = _d(_d(cs.get("state")).get("waiting"))
        if waiting.get("reason") and waiting.get("reason") != "ContainerCreating":
            return "; %s: %s" % (waiting["reason"], _pull_message(cs, waiting, None, None)
                                 if waiting["reason"] in _IMAGE_REASONS else waiting.get("message") or "")
    return ""


def _is_unschedulable(pod):
    sched = _condition(pod, "PodScheduled")
    return bool(sched and sched.get("status") == "False" and sched.get("reason") == "Unschedulable")


def _outcome(pod, outcome, reason, message, exit_code):
    md = pod.get("metadata") or {}
    return {"name": md.get("name"), "node": (pod.get("spec") or {}).get("nodeName"),
            "phase": (pod.get("status") or {}).get("phase"), "outcome": outcome, "exit_code": exit_code,
            "reason": reason, "message": message, "labels": dict(md.get("labels") or {}),
            "annotations": dict(md.get("annotations") or {}),
            "containers": [c.get("name") for c in _dl(_d(pod.get("spec")).get("containers"))]}


# ---------------------------------------------------------------- wait

def _match(labels, selector):
    """Equality-based label selector match (``a=b,c!=d,e,!f``), as the API server applies it."""
    for term in filter(None, (t.strip() for t in (selector or "").split(","))):
        if "!=" in term:
            key, value = term.split("!=", 1)
            if labels.get(key.strip()) == value.strip():
                return False
        elif "=" in term:
            key, value = term.split("==", 1) if "==" in term else term.split("=", 1)
            if labels.get(key.strip()) != value.strip():
                return False
        elif term.startswith("!"):
            if term[1:].strip() in labels:
                return False
        elif term not in labels:
            return False
    return True


def _list_pods(api, namespace, selector, read_timeout=REQUEST_TIMEOUT[1]):
    doc = _call(api, "v1", "Pod", "list", namespace, label_selector=selector,
                _request_timeout=(REQUEST_TIMEOUT[0], read_timeout))
    return doc.get("items") or [], (doc.get("metadata") or {}).get("resourceVersion")


def _watch_pods(api, namespace, selector, resource_version, seconds):
    """Yield (type, pod) events of one watch request that lasts at most ``seconds``."""
    from kubernetes import client
    from kubernetes.watch.watch import iter_resp_lines
    kwargs = dict(label_selector=selector, watch=True, timeout_seconds=int(seconds),
                  allow_watch_bookmarks=True, _preload_content=False,
                  _request_timeout=(REQUEST_TIMEOUT[0], int(seconds) + WAIT_SLACK_S))
    if resource_version:
        kwargs["resource_version"] = resource_version
    resp = client.CoreV1Api(api).list_namespaced_pod(namespace, **kwargs)
    try:
        for line in iter_resp_lines(resp):
            if not line.strip():
                continue
            event = json.loads(line)
            yield event.get("type"), event.get("object") or {}
    finally:
        with contextlib.suppress(Exception):
            resp.close()
        with contextlib.suppress(Exception):
            resp.release_conn()


def creating(pod):
    """The pod is bound to a node and has not started: Pending, each container waiting in ContainerCreating or
    PodInitializing (or no status yet) - where a sandbox, network or volume failure leaves it."""
    if not _d(_d(pod).get("spec")).get("nodeName") or _d(pod.get("status")).get("phase") not in (None, "Pending"):
        return False
    for cs in _containers(pod):
        state = _d(cs.get("state"))
        if state.get("running") or state.get("terminated") or \
                _d(state.get("waiting")).get("reason") not in (None, "ContainerCreating", "PodInitializing"):
            return False
    return True


def _event_time(event):
    return event.get("lastTimestamp") or event.get("eventTime") or _d(event.get("metadata")).get("creationTimestamp") \
        or ""


def _events_of(api, namespace, reasons, read_timeout):
    """The events of ``namespace`` with one of ``reasons`` (a list per reason: the field selector the API serves),
    or None when the API did not answer (evidence is read again next round)."""
    items = []
    for reason in reasons:
        try:
            items.extend(_dl(_call(api, "v1", "Event", "list", namespace, field_selector="reason=%s" % reason,
                                   _request_timeout=(REQUEST_TIMEOUT[0], read_timeout)).get("items")))
        except _api_errors():
            return None
    return items


class _PodWatch(object):
    """The state of one ``wait``: the latest dict of each pod, the outcomes of those that ended, when each
    pod was first seen Unschedulable or failing to pull its image, and the owners whose pods cannot be created;
    one method a decision (an event, a list, a round, an API error, the end)."""

    def __init__(self, expected_pods, done_selector, fail_fast, graces=None, owners=None, on_final=None,
                 on_terminating=None, planned_pods=None):
        self.expected_pods = expected_pods
        self.planned_pods = planned_pods
        self.done_selector = done_selector
        self.fail_fast = fail_fast
        self.graces = dict(GRACES, **(graces or {}))
        self.grace_s = self.graces["unschedulable"]
        self.pull_grace_s = self.graces["image_pull"]
        self.owners = [o for o in owners or [] if o.get("name")]
        self.on_final = on_final
        self.on_terminating = on_terminating
        self.terminating = set()    # names of pods seen with a deletionTimestamp (handed to on_terminating once)
        self.pods = {}          # name -> latest pod dict
        self.final = {}         # name -> outcome dict (terminal or unrecoverable)
        self.unsched = {}       # name -> monotonic time first seen Unschedulable
        self.pulling = {}       # name -> monotonic time first seen failing to pull its image (a retried error)
        self.refused = {}       # object name -> {since, kind, reason, message}: its pods' creates are refused
        self.refused_final = {}     # object name -> (event reason, message): refused past its grace (quota/admission)
        self.starting = {}      # name -> the kubelet's START_EVENTS warning of a pod that waits in ContainerCreating
        self.next_start_poll = 0.0      # when the kubelet's events are read next (while pods wait to start)
        self.gang = {}          # owner name -> {since, messages}: its PodGroup is not enqueued (GANG_EVENTS)
        self.gang_final = {}    # owner name -> why no pod of it will come (its PodGroup pending past its grace)
        self.failures = self.gone = 0   # API errors in a row; 410 Gone in a row
        self.last_error = None          # the error of the last round that failed (not a 410)

    # -- pods and events

    def update(self, kind, pod):
        """One pod dict seen as ``kind`` (ADDED, MODIFIED or DELETED)."""
        name = (pod.get("metadata") or {}).get("name")
        if not name or name in self.final:
            return
        now = time.monotonic()
        if kind == "DELETED":
            self._deleted(name, pod)
        else:
            self._seen(name, pod, now)

    def _deleted(self, name, pod):
        if not self.required(pod) and self.done_selector is not None and self.required_done():
            self.pods.pop(name, None)   # an operator removing workers after the launcher finished: not a failure
            return
        outcome, reason, message, code = classify(pod)
        if outcome is None:
            outcome, reason, message = DELETED, "Deleted", "the pod was deleted before it finished"
        self.pods.pop(name, None)
        self._final(name, _outcome(pod, outcome, reason, message, code))

    def _seen(self, name, pod, now):
        self.pods[name] = pod
        if _d(pod.get("metadata")).get("deletionTimestamp") and name not in self.terminating:
            self.terminating.add(name)
            if self.on_terminating is not None:     # its containers get SIGTERM now; its log goes with it soon
                self.on_terminating(_outcome(pod, None, None, None, None))
        for since, now_in in ((self.unsched, _is_unschedulable(pod)), (self.pulling, _pulling(pod))):
            if now_in:
                since.setdefault(name, now)
            else:
                since.pop(name, None)
        outcome, reason, message, code = classify(pod, self.unsched.get(name), now, self.grace_s,
                                                  self.pulling.get(name), self.pull_grace_s)
        if outcome is not None:
            self._final(name, _outcome(pod, outcome, reason, message, code))
            return
        start = self.starting.get(name)
        if start is not None and not creating(pod):
            self.starting.pop(name)         # it started after all (the kubelet's retry worked)
        elif start is not None and now - start["since"] >= self.graces[start["kind"]]:
            self._final(name, _outcome(pod, START_OUTCOMES[start["kind"]], start["reason"], "%s (pod %s on node %s "
                                       "still ContainerCreating %d s after the kubelet's first %s)" % (
                                           start["message"], name, _d(pod.get("spec")).get("nodeName"),
                                           int(now - start["since"]), start["first"]), None))

    def _final(self, name, outcome):
        """A pod's outcome is final: record it, and hand it to ``on_final`` at once (the caller reads its log
        now, before a TTL controller or the garbage collector removes the pod)."""
        self.final[name] = outcome
        if self.on_final is not None:
            self.on_final(dict(outcome))

    def apply_list(self, items):
        """A fresh list: every listed pod is MODIFIED, every unfinished pod it lacks DELETED."""
        listed = set()
        for pod in items:
            listed.add((pod.get("metadata") or {}).get("name"))
            self.update("MODIFIED", pod)
        for name in [n for n in self.pods if n not in listed and n not in self.final]:
            self.update("DELETED", self.pods[name])

    def recheck_grace(self):
        """Judge the Unschedulable pods, those failing to pull their image and those that cannot start again (their
        grace may have run out)."""
        for name in list(self.unsched) + list(self.pulling) + list(self.starting):
            if name not in self.final and name in self.pods:
                self.update("MODIFIED", self.pods[name])

    # -- owners whose pods cannot be created

    def pods_missing(self):
        """Fewer required pods than expected were seen, or fewer pods than ``planned_pods`` (their owner may be
        unable to create them)."""
        if not self.owners:
            return False
        done, pending = self._required_state()
        if len(done) + len(pending) < max(1, self.expected_pods):
            return True
        return self.planned_pods is not None and len(set(self.pods) | set(self.final)) < self.planned_pods

    def _owner_of(self, involved):
        name = involved.get("name") or ""
        for owner in self.owners:
            if name == owner["name"] and (not owner.get("uid") or not involved.get("uid")
                                          or involved["uid"] == owner["uid"]):
                return owner
            if name.startswith(owner["name"] + "-"):     # what an operator creates for it (the MPIJob's launcher)
                return owner
        return None

    def check_owners(self, api, namespace, read_timeout):
        """Read the owners' ``FailedCreate`` Warning events (the job controller's, an operator's: pod creation
        refused by PodSecurity, a ResourceQuota, a webhook; FAILED_CREATE_EVENTS) into ``refused``, and the events
        saying a Volcano Job's PodGroup is not enqueued (GANG_EVENTS) into ``gang`` (into ``gang_final`` past the
        podgroup grace). Events are evidence, not the wait's subject: an API error here is left for the next round."""
        items = _events_of(api, namespace, sorted(FAILED_CREATE_EVENTS) + sorted(GANG_EVENTS), read_timeout)
        if items is None:
            return
        now = time.monotonic()
        for event in items:
            involved = _d(event.get("involvedObject"))
            reason = event.get("reason")
            owner = self._owner_of(involved) if involved.get("kind") != "Pod" else None
            if owner is None:
                continue
            if reason in GANG_EVENTS:
                if involved.get("kind") == GANG_EVENTS[reason]:
                    gang = self.gang.setdefault(owner["name"], {"since": now, "messages": {}, "owner": owner})
                    gang["messages"][(involved.get("kind"), event.get("type"))] = "%s %s: %s" % (
                        involved.get("kind"), involved.get("name"), _one_line(event.get("message"), 300))
                continue
            if not str(event.get("message") or "").startswith(FAILED_CREATE_EVENTS.get(reason, "\0")):
                continue
            text = str(event.get("message"))
            self.refused.setdefault(involved.get("name"), {"since": now}).update(
                kind=next((kind for words, kind in REFUSAL_WORDS if words in text), None), reason=reason,
                message="%s %s: %s: %s" % (involved.get("kind"), involved.get("name"), reason, _one_line(text, 600)))
        self.judge_blocked(now)

    def judge_blocked(self, now):
        """The refused owners and pending PodGroups whose grace ran out are final."""
        for name, refusal in self.refused.items():
            if name not in self.refused_final and now - refusal["since"] >= self.graces.get(refusal["kind"], 0):
                self.refused_final[name] = self.refused_message(name, now)
        for name, gang in self.gang.items():
            if name not in self.gang_final and now - gang["since"] >= self.graces["podgroup"]:
                self.gang_final[name] = self.gang_message(name, now)

    def refused_message(self, name, now):
        refusal = self.refused[name]
        if refusal["kind"] is None:
            return refusal["reason"], refusal["message"]
        return refusal["reason"], "%s (still refused %d s after the first refusal: %s)" % (
            refusal["message"], int(now - refusal["since"]),
            "the namespace's ResourceQuota is used up" if refusal["kind"] == "quota" else "an admission webhook")

    def gang_message(self, name, now):
        gang = self.gang[name]
        return "%s %s created no pod: its PodGroup was not enqueued by the scheduler in %d s (queue capacity, or " \
            "a gang larger than the free resources): %s" % (
                gang["owner"].get("kind"), name, int(now - gang["since"]),
                "; ".join(m for _k, m in sorted(gang["messages"].items())))

    # -- pods that wait in ContainerCreating (the kubelet cannot make their sandbox or mount their volumes)

    def check_start_events(self, api, namespace, read_timeout):
        """Every STUCK_EVENT_POLL_S while a bound pod waits to start: the kubelet's START_EVENTS Warnings about it
        (the latest one each) into ``starting``; the pod's grace runs from the first one seen."""
        waiting = dict((n, p) for n, p in self.pods.items() if n not in self.final and creating(p))
        now = time.monotonic()
        if not waiting or now < self.next_start_poll:
            return
        self.next_start_poll = now + self.start_poll_s()
        items = _events_of(api, namespace, sorted(START_EVENTS), read_timeout)
        for event in sorted(items or [], key=_event_time):
            involved = _d(event.get("involvedObject"))
            pod = waiting.get(involved.get("name"))
            uid = _d(_d(pod).get("metadata")).get("uid")
            if pod is None or involved.get("kind", "Pod") != "Pod" or event.get("type") != "Warning" or \
                    (uid and involved.get("uid") and involved["uid"] != uid):
                continue
            start = self.starting.setdefault(involved["name"], {"since": now, "first": event.get("reason")})
            start.update(kind=START_EVENTS[event.get("reason")], reason=event.get("reason"),
                         message="%s: %s" % (event.get("reason"), _one_line(event.get("message"), 600)))

    def start_poll_s(self):
        return max(1.0, min(STUCK_EVENT_POLL_S, self.graces["sandbox"] / 2.0, self.graces["mount"] / 2.0))

    # -- when the wait is over

    def required(self, pod_or_outcome):
        """True when the pod (or outcome) must finish for the wait to be done (it matches done_selector)."""
        labels = pod_or_outcome.get("labels") if "outcome" in pod_or_outcome else \
            (pod_or_outcome.get("metadata") or {}).get("labels")
        return self.done_selector is None or _match(labels or {}, self.done_selector)

    def _required_state(self):
        done = [o for o in self.final.values() if self.required(o)]
        pending = [p for n, p in self.pods.items() if n not in self.final and self.required(p)]
        return done, pending

    def required_done(self):
        done, pending = self._required_state()
        return len(done) >= max(1, self.expected_pods) and not pending

    def finished(self):
        blocked = self.refused_final or self.gang_final
        if self.fail_fast and (blocked or any(o["outcome"] != SUCCEEDED for o in self.final.values())):
            return True
        done, pending = self._required_state()
        if blocked and not pending:
            return True         # the pods that could be created ended; the others will not come
        return len(done) >= self.expected_pods and not pending

    # -- one round: a list, then one bounded watch

    def round_seconds(self, deadline, round_s):
        """The length of one watch: at most round_s, and no longer than the deadline or the next grace expiry."""
        limit = deadline - time.monotonic()
        for since in self.unsched.values():
            limit = min(limit, since + self.grace_s - time.monotonic())
        for since in self.pulling.values():
            limit = min(limit, since + self.pull_grace_s - time.monotonic())
        for start in self.starting.values():
            limit = min(limit, start["since"] + self.graces[start["kind"]] - time.monotonic())
        if any(n not in self.final and creating(p) for n, p in self.pods.items()):
            limit = min(limit, self.next_start_poll - time.monotonic())
        if self.pods_missing():
            limit = min(limit, OWNER_EVENT_POLL_S)
        return max(1, min(round_s, int(math.ceil(limit))))

    def one_round(self, api, namespace, selector, deadline, round_s, now):
        """List the pods, then watch them for one round; True when the wait is over."""
        items, rv = _list_pods(api, namespace, selector,
                               max(1.0, min(REQUEST_TIMEOUT[1], deadline - now + WAIT_SLACK_S)))
        self.apply_list(items)
        read_timeout = max(1.0, min(REQUEST_TIMEOUT[1], deadline - now + WAIT_SLACK_S))
        if self.pods_missing():
            self.check_owners(api, namespace, read_timeout)
        self.check_start_events(api, namespace, read_timeout)
        self.recheck_grace()
        if self.finished():
            return True
        for kind, pod in _watch_pods(api, namespace, selector, rv, self.round_seconds(deadline, round_s)):
            if kind == "ERROR":
                break       # e.g. 410 Gone: relist
            if kind in ("ADDED", "MODIFIED", "DELETED"):
                self.update(kind, pod)
            self.recheck_grace()
            if self.finished() or time.monotonic() >= deadline:
                break
        self.recheck_grace()
        self.failures = self.gone = 0
        self.last_error = None
        if self.finished() and self.fail_fast:
            self.account_for_all(api, namespace, selector, read_timeout)
        return self.finished()

    def account_for_all(self, api, namespace, selector, read_timeout):
        """After a fail_fast stop inside a watch: one more list, so that every pod of the run is in the outcomes (the
        stop may come from the first of a burst of events - a watch's initial ADDED ones after a list taken before
        the pods existed - and the pods later in it were never seen). Evidence only: an API error leaves it."""
        try:
            items, _rv = _list_pods(api, namespace, selector, read_timeout)
        except _api_errors():
            return
        self.apply_list(items)

    def api_error(self, exc, namespace, selector, deadline):
        """A round that the API failed: relist at once after a 410 Gone (3 in a row), raise K8sError on 401, 403,
        404 or the 5th failure in a row, else back off (1 s more each time, never past the deadline)."""
        status, _message = _status_of(exc)
        self.last_error = None if status == 410 else exc
        self.gone = self.gone + 1 if status == 410 else 0
        if status == 410 and self.gone <= 3:
            return          # resourceVersion expired: the next round relists at once
        self.failures += 1
        if status in (401, 403, 404) or self.failures >= 5:
            raise _fail("cannot watch pods %s in namespace %s" % (selector, namespace), exc, verb="watch",
                        plural="pods", namespace=namespace)
        time.sleep(min(1.0 * self.failures, max(0.0, deadline - time.monotonic())))

    # -- the end

    def outcomes(self, start, deadline):
        """One outcome a pod seen, sorted by name: the ended ones, then each unfinished one as ABORTED (after a
        fail_fast stop), RUNNING (not required, time left) or TIMEOUT."""
        now = time.monotonic()
        if self.pods_missing():     # a refusal or a pending PodGroup still there at the end is the cause, grace or not
            for name in self.gang:
                self.gang_final.setdefault(name, self.gang_message(name, now))
            for name in self.refused:
                self.refused_final.setdefault(name, self.refused_message(name, now))
        gang = dict((name, ("PodGroupPending", message)) for name, message in self.gang_final.items())
        out = list(self.final.values()) + [
            {"name": None, "node": None, "phase": None, "outcome": outcome, "exit_code": None,
             "reason": reason, "message": message, "labels": {}, "annotations": {}, "owner": owner}
            for outcome, blocked in ((CREATE_FAILED, self.refused_final), (GANG_PENDING, gang))
            for owner, (reason, message) in sorted(blocked.items())]
        waited = int(round(now - start))
        culprit = next((o for o in out if o["outcome"] != SUCCEEDED), None) if self.fail_fast else None
        for name, pod in self.pods.items():
            if name not in self.final:
                out.append(self._unfinished(pod, culprit, waited, deadline))
        return sorted(out, key=lambda o: o["name"] or "")

    def _unfinished(self, pod, culprit, waited, deadline):
        if culprit is not None:
            return _outcome(pod, ABORTED, "Aborted", "not finished: %s of the same run ended %s" % (
                "pod %s" % culprit["name"] if culprit["name"] else culprit.get("owner"), culprit["outcome"]), None)
        if not self.required(pod) and time.monotonic() < deadline:
            return _outcome(pod, RUNNING, None, None, None)
        phase = _d(pod.get("status")).get("phase") or "Pending"
        sched = _condition(pod, "PodScheduled")
        why = " (%s)" % sched.get("message") if sched and sched.get("status") == "False" and sched.get("message") else ""
        start = self.starting.get(_d(pod.get("metadata")).get("name"))
        last = "; last event %s" % start["message"] if start else ""
        return _outcome(pod, TIMEOUT, "Timeout", "still %s after %d s%s%s%s" % (
            phase, waited, why, _waiting_why(pod), last), None)


def wait(api, namespace, selector, expected_pods, timeout_s, done_selector=None, fail_fast=False,
         unschedulable_grace_s=UNSCHEDULABLE_GRACE_S, round_s=WATCH_ROUND_S, image_pull_grace_s=IMAGE_PULL_GRACE_S,
         owners=None, on_final=None, on_terminating=None, graces=None, planned_pods=None):
    """Watch the pods of ``selector`` until they finish; return one outcome dict per pod seen.

    Done when at least ``expected_pods`` pods matching ``done_selector`` (default: every pod
    of ``selector``) were seen and every one of them is terminal (Succeeded/Failed) or
    unrecoverable (Unschedulable for longer than ``unschedulable_grace_s``, image pull
    errors - ErrImagePull/ImagePullBackOff, which the kubelet retries, only after
    ``image_pull_grace_s`` -, CrashLoopBackOff, OOMKilled, container config errors, deleted; bound but waiting in
    ContainerCreating with a kubelet Warning of START_EVENTS - a sandbox/CNI/RuntimeClass failure, SANDBOX after
    ``graces["sandbox"]``, a volume that does not mount, MOUNT after ``graces["mount"]``, the grace counted from the
    first such event seen). ``graces``: {unschedulable, image_pull, sandbox, mount, podgroup, quota, admission} seconds
    (GRACES;
    the two ``*_grace_s`` arguments are the first two). Pods outside
    ``done_selector`` (e.g. MPI workers that only serve the launcher) are watched for
    unrecoverable states but need not finish. With ``fail_fast`` (a gang: one bad pod dooms
    the rest) it returns as soon as any pod failed or is unrecoverable. At ``timeout_s``
    it returns, every unfinished pod with outcome TIMEOUT; if the API server did not answer
    when the time ran out (or failed 5 times in a row, or answered 401/403/404) it raises
    K8sError instead. No request of a wait reads longer than WAIT_SLACK_S past the deadline.

    Each outcome: ``{name, node, phase, outcome, exit_code, reason, message, labels,
    annotations, containers}`` (``containers``: the pod's container names); ``outcome`` is
    SUCCEEDED, one of ERROR_OUTCOMES, or RUNNING (a pod outside ``done_selector`` still
    running at the end). After a ``fail_fast`` return the
    unfinished pods are ABORTED (their message names the pod that ended the wait). Pods that never appeared have no
    entry: compare with the plan. ``owners`` (refs of the objects that own the pods, as ``create``
    returns them): while pods are missing (fewer than ``expected_pods`` required ones, or fewer than ``planned_pods``
    in all: an operator's launcher and workers), their ``FailedCreate`` events are read every
    OWNER_EVENT_POLL_S; an owner whose pods are refused (admission: PodSecurity, ResourceQuota,
    a webhook) gives one CREATE_FAILED outcome (``name`` None, ``owner``, ``reason`` the event's, ``message`` the
    object and the controller's "Error creating: ..."), at once for a refusal of the pod's own spec, after
    ``graces["quota"]`` for an exceeded ResourceQuota and ``graces["admission"]`` for a webhook's denial (REFUSAL_WORDS;
    each from the first event seen), and the wait ends once the pods that exist ended (at
    once with ``fail_fast``); an owner whose Volcano PodGroup is not enqueued (GANG_EVENTS) for
    ``graces["podgroup"]`` gives one GANG_PENDING outcome the same way (its message the scheduler's and the job
    controller's words: queue capacity, a gang larger than the free resources), and so does one still pending when
    the wait ends. A pod still unfinished at ``timeout_s`` is TIMEOUT with its scheduler message, waiting reason
    and the last kubelet warning seen. ``on_final(outcome)`` is called the moment a pod's outcome is
    final (read its log then: a TTL controller may delete it soon after); ``on_terminating(outcome)``
    (``outcome`` None) the moment a pod is seen being deleted (a deadline, an eviction, a
    preemption: its log is gone with it once it terminated). Watches are bounded (``timeoutSeconds`` and a client read
    timeout), re-established when they end, and every round starts from a fresh list, so
    a 410 Gone (expired resourceVersion) costs one relist.
    """
    _require_client()
    if expected_pods < 0 or timeout_s <= 0:
        raise K8sError("wait needs expected_pods >= 0 and timeout_s > 0")
    start = time.monotonic()
    deadline = start + timeout_s
    graces = dict({"unschedulable": unschedulable_grace_s, "image_pull": image_pull_grace_s}, **(graces or {}))
    watch = _PodWatch(expected_pods, done_selector, fail_fast, graces, owners, on_final, on_terminating, planned_pods)
    errors = _api_errors()
    while True:
        now = time.monotonic()
        if now >= deadline:
            if watch.last_error is not None:      # the time ran out while the API did not answer: say so
                raise _fail("cannot watch pods %s in namespace %s within %s s" % (selector, namespace, timeout_s),
                            watch.last_error)
            break
        try:
            if watch.one_round(api, namespace, selector, deadline, round_s, now):
                break
        except errors as exc:
            watch.api_error(exc, namespace, selector, deadline)
    return watch.outcomes(start, deadline)


# ---------------------------------------------------------------- logs and diagnosis

def logs(api, namespace, pod, container=None, limit_bytes=LOG_LIMIT_BYTES, tail_lines=None, previous=False):
    """The log text of ``pod`` (one container; the only one when None), at most ``limit_bytes``.

    Read raw (``text/plain``, decoded UTF-8 with bad bytes replaced), so no content-type
    quirk of the generated client applies. Raises K8sError with the API's message.
    """
    _require_client()
    from kubernetes import client
    kwargs = dict(_preload_content=False, _request_timeout=(REQUEST_TIMEOUT[0], 120))
    if container:
        kwargs["container"] = container
    if limit_bytes:
        kwargs["limit_bytes"] = int(limit_bytes)
    if tail_lines:
        kwargs["tail_lines"] = int(tail_lines)
    if previous:
        kwargs["previous"] = True
    try:
        resp = client.CoreV1Api(api).read_namespaced_pod_log(pod, namespace, **kwargs)
        try:
            data = resp.data
        finally:
            with contextlib.suppress(Exception):
                resp.release_conn()
    except _api_errors() as exc:
        raise _fail("cannot read the log of pod %s/%s" % (namespace, pod), exc, verb="get",
                    plural="pods/log", namespace=namespace)
    if limit_bytes and len(data) > limit_bytes:
        data = data[:limit_bytes]
    return data.decode("utf-8", "replace") if isinstance(data, bytes) else str(data)


def _events(api, namespace, pod_name):
    """Events about pod ``pod_name``, oldest first (field selector, filtered again client-side)."""
    doc = _call(api, "v1", "Event", "list", namespace,
                field_selector="involvedObject.name=%s" % pod_name)
    items = [e for e in doc.get("items") or []
             if (e.get("involvedObject") or {}).get("name") == pod_name
             and (e.get("involvedObject") or {}).get("kind", "Pod") == "Pod"]

    def when(e):
        return e.get("lastTimestamp") or e.get("eventTime") or (e.get("metadata") or {}).get("creationTimestamp") or ""
    return sorted(items, key=when)


def _one_line(text, limit=400):
    text = " | ".join(line.strip() for line in (text or "").splitlines() if line.strip())
    return text if len(text) <= limit else text[:limit - 3] + "..."


def _last_events(events, count=3):
    """The last ``count`` distinct "reason: message" of ``events`` (oldest first; the kubelet repeats its warnings)."""
    lines = []
    for e in events:
        line = "%s: %s" % (e.get("reason"), _one_line(e.get("message"), 200))
        lines = [x for x in lines if x != line] + [line]
    return " | ".join(lines[-count:])


def _event_parts(events, parts, waiting):
    """What ``diagnose`` says of a pod's events: while it still waits, its last events (the kubelet's, the
    scheduler's words); the last Warning unless ``parts`` already say it."""
    out = ["last events: " + _last_events(events)] if waiting and events else []
    warnings = [e for e in events if e.get("type") == "Warning"]
    if warnings:
        last = warnings[-1]
        text = "%s: %s" % (last.get("reason"), _one_line(last.get("message"), 300))
        if not any(text in p or (last.get("message") or "") in p for p in parts + out):
            out.append("event " + text)
    return out


def diagnose(api, namespace, pod):
    """One line saying why ``pod`` did not finish well, from its status, its events and its log tail.

    E.g. ``Unschedulable: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu``,
    ``ImagePullBackOff: Back-off pulling image "x"``, ``OOMKilled: container nccl was
    OOMKilled (exit 137)``, ``Error: container nccl exited 1 (Error); log: ...``. Never
    raises for API errors: it says what it could not read instead.
    """
    _require_client()
    errors = _api_errors()
    try:
        obj = _call(api, "v1", "Pod", "read", namespace, name=pod)
    except errors as exc:
        status, message = _status_of(exc)
        if status == 404:
            return "pod %s/%s no longer exists" % (namespace, pod)
        return "cannot read pod %s/%s: %s" % (namespace, pod, message)
    outcome, reason, message, code = classify(obj, 0.0, 0.0, 0.0)
    parts = []
    if outcome is None:
        phase = _d(obj.get("status")).get("phase") or "Pending"
        node = _d(obj.get("spec")).get("nodeName")
        parts.append("%s%s" % (phase, " on node %s" % node if node else " (not scheduled)"))
    elif outcome != SUCCEEDED:
        parts.append("%s: %s" % (reason, message) if message else str(reason))
    try:
        events = _events(api, namespace, pod)
    except errors as exc:
        events = []
        parts.append("events unreadable: %s" % _status_of(exc)[1])
    parts.extend(_event_parts(events, parts, outcome is None))
    if outcome in (FAILED, CRASH_LOOP, OOM) or (outcome is None and code not in (0, None)):
        try:
            # always the container's name: a real API answers 400 without it on a multi-container pod
            container = _terminated_summary(obj)[3] or (_d(obj.get("spec")).get("containers") or [{}])[0].get("name")
            tail = logs(api, namespace, pod, container=container, limit_bytes=64 << 10, tail_lines=5,
                        previous=outcome == CRASH_LOOP)
            if tail.strip():
                parts.append("log: " + _one_line(tail, 300))
        except K8sError:
            pass
    return "; ".join(parts) if parts else "pod %s/%s finished normally" % (namespace, pod)


# ---------------------------------------------------------------- cleanup

def _kinds_for(kinds):
    if kinds is None:
        return list(CUSTOM_KINDS) + list(CORE_KINDS)
    out = []
    for item in kinds:
        if isinstance(item, (tuple, list)) and len(item) == 3:
            out.append(tuple(item))
            continue
        match = [k for k in CUSTOM_KINDS + CORE_KINDS if item in (k[1], k[2], "%s/%s" % (k[0], k[1]))]
        if not match:
            raise K8sError("cleanup does not know kind %r (known: %s)"
                           % (item, ", ".join("%s/%s" % (k[0], k[1]) for k in CUSTOM_KINDS + CORE_KINDS)))
        out.extend(match)
    return out


def cleanup(api, namespace, run_id, kinds=None, timeout_s=60, propagation="Background", poll_s=0.5):
    """Delete every object of run ``run_id`` in ``namespace``; return what is left (``[]``: all gone).

    Finds them with the one selector ``RUN_LABEL=run_id`` per kind — by default MPIJob and
    Volcano Job (skipped where the server does not serve them), Job, Pod, Service,
    ConfigMap, Secret, in that order (owners before what they own) — deletes each with
    ``propagation`` (Background or Foreground), then re-lists (and deletes again what a
    controller re-created) until nothing is left or ``timeout_s`` passed. Leftovers are
    ``"Kind/namespace/name"`` strings, or ``"plural: <why it could not be listed>"``.
    Never raises for API errors (it runs on error paths); a bad run id raises K8sError.
    Each request reads at most until WAIT_SLACK_S past ``timeout_s`` (a wedged server
    cannot stretch it).
    """
    _require_client()
    selector = run_selector(run_id)
    if propagation not in ("Background", "Foreground", "Orphan"):
        raise K8sError("propagation must be Background, Foreground or Orphan, got %r" % (propagation,))
    kinds = _kinds_for(kinds)
    errors = _api_errors()
    deadline = time.monotonic() + timeout_s
    absent = set()       # kinds the server does not serve (404 on list)

    def bound():
        """(connect, read) timeouts that end no later than WAIT_SLACK_S past the deadline."""
        return (REQUEST_TIMEOUT[0], max(1.0, min(REQUEST_TIMEOUT[1], deadline - time.monotonic() + WAIT_SLACK_S)))

    def sweep(delete):
        left = []
        for api_version, kind, plural in kinds:
            if (api_version, kind) in absent:
                continue
            try:
                items = _call(api, api_version, kind, "list", namespace, label_selector=selector,
                              _request_timeout=bound()).get("items") or []
            except errors as exc:
                status, message = _status_of(exc)
                if status == 404:
                    absent.add((api_version, kind))
                    continue
                if not status:         # transport error: the other kinds would wait for the same dead server
                    left.append("API server unreachable, nothing of the run could be listed (%s)" % message)
                    return left
                left.append("%s: cannot list (%s)" % (plural, message))
                continue
            for item in items:
                md = item.get("metadata") or {}
                if not _match(md.get("labels") or {}, selector):
                    continue        # a server that ignores labelSelector: never delete what is not ours
                ref = "%s/%s/%s" % (kind, namespace, md.get("name"))
                left.append(ref)
                if not delete or md.get("deletionTimestamp"):
                    continue
                try:
                    _call(api, api_version, kind, "delete", namespace, name=md.get("name"),
                          propagation_policy=propagation, _request_timeout=bound())
                except errors as exc:
                    status, message = _status_of(exc)
                    if status != 404:
                        left[-1] = "%s (delete failed: %s)" % (ref, message)
        return left

    left = sweep(True)
    if left:
        left = sweep(False)     # what was deleted at once is gone now; the rest terminates or has finalizers
    while left and time.monotonic() < deadline:
        time.sleep(min(poll_s, max(0.0, deadline - time.monotonic())))
        left = sweep(True)
    return left


class guard(object):
    """``with guard(api, namespace, run_id) as g:`` - cleanup of the run on every way out.

    On leaving the block (normally, by exception, KeyboardInterrupt, or SIGTERM, which is
    turned into ``Terminated`` (a KeyboardInterrupt) while the block runs) it calls
    ``cleanup`` and stores its result in ``g.leftover`` (``[]``: nothing left). A second
    SIGTERM during cleanup is ignored so cleanup finishes (it is bounded by ``timeout_s``);
    the previous SIGTERM handler is restored afterwards. Exceptions of the block propagate
    unchanged; a failing cleanup never masks them (its error goes into ``g.leftover``).
    The signal handler is only installed in the main thread (Python's rule).
    """

    def __init__(self, api, namespace, run_id, kinds=None, timeout_s=60, propagation="Background"):
        check_run_id(run_id)
        self.api, self.namespace, self.run_id = api, namespace, run_id
        self.kinds, self.timeout_s, self.propagation = kinds, timeout_s, propagation
        self.leftover = None
        self._signals = None

    def _on_term(self, signum):
        raise Terminated("SIGTERM received: cleaning up Kubernetes run %s" % self.run_id)

    def __enter__(self):
        self._signals = interrupt_guard(on_signal=self._on_term, signals=(signal.SIGTERM,)).__enter__()
        return self

    def __exit__(self, exc_type, exc, tb):
        self._signals.ignore()
        try:
            self.leftover = cleanup(self.api, self.namespace, self.run_id, kinds=self.kinds,
                                    timeout_s=self.timeout_s, propagation=self.propagation)
        except Exception as cexc:   # never mask the block's own exception
            self.leftover = ["cleanup failed: %s" % cexc]
        finally:
            self._signals.__exit__(None, None, None)
        return False
