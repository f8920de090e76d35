# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A kubelet that really runs the pods of the fake API server (tests/k8s/fake_apiserver.py) as processes.

``ProcessKubelet`` is the runner of ``Behaviour("process", runner=...)``: when the fake scheduler has bound a pod
and its kubelet starts it, every container's ``command + args`` runs here as real processes, as root, each in

- the pod's own **network namespace** on a private bridge (one IP per pod; ``hostNetwork`` pods share ONE
  namespace per node, with the node's IP, so two of them that listen on one port clash as on a real node);
- its own **UTS** namespace (the pod's ``hostname``: ``spec.hostname`` or the pod name; the node name for
  ``hostNetwork``), its own **PID** namespace (the command is PID 1, as in a container; when it dies the kernel
  kills whatever it left behind) and its own private **mount** namespace, where the pod's volumes are mounted at
  their ``mountPath``: ``configMap`` (read from the fake server's store at start: the collection's code ConfigMap,
  the nccl hostfile), ``secret``, ``emptyDir`` (a tmpfs for ``medium: Memory``). A mount point that does not
  exist (``/opt/aifabric``) is made inside an overlay of its nearest existing parent, in that namespace only:
  nothing is ever created or mounted on the machine's real paths;
- the container's ``env`` (``value`` and ``fieldRef`` to metadata.name/namespace, spec.nodeName, status.podIP),
  a clean environment otherwise, and a PATH that starts with the test's fake tool directories (binaries replaying
  real captures) and a ``python3`` (the interpreter given);
- a **cluster-DNS stand-in**: the pod's /etc/hosts (bound over /etc/hosts in its mount namespace, rewritten in
  place at every kubelet tick) holds localhost, the pod's own name and, for every headless Service of the pod's
  namespace, ``<hostname>.<service>`` and ``<hostname>.<service>.<namespace>.svc.cluster.local`` of each running
  pod the Service selects whose ``subdomain`` is the Service: nothing else resolves (no bare pod names, no other
  pods). The short ``<hostname>.<service>`` form is what the pod's DNS search path
  (``<namespace>.svc.cluster.local``) makes of it on a real cluster; /etc/resolv.conf carries that search path
  and a nameserver nobody answers on.

The cluster DNS answers only for pods the Service would list: Ready ones (a tcpSocket readiness probe must connect;
no probe: Ready once started) unless it has ``publishNotReadyAddresses``, with ``spec.hostname`` set; hostNetwork pods
by their node's IP. Which short names resolve follows each pod's resolver (``dns_config``): the search list of
``ClusterFirst`` plus ``dnsConfig.searches``; a hostNetwork pod with ``ClusterFirst`` gets the node's resolver (no
cluster names) unless its policy is ``ClusterFirstWithHostNet``. Volumes: configMap, secret (``subPath`` too),
emptyDir; env from ``value``, ``fieldRef``, ``configMapKeyRef``/``secretKeyRef``, and ``envFrom`` (every key of a
ConfigMap or Secret, ``env`` overriding it).

Images: ``images={name: {"mounts": [(source, path)], "run_dirs": [...]}}`` lays what an image has that this machine
lacks over its files (tests/k8s/images.py: a distribution image's /etc/ssh, mpi-operator's base image); the
directories under /run are the image's (default /run/sshd and /run/lock). ``node_sshd=True``: every node's host
network has its own sshd on port 22 (a stand-in answering with an OpenSSH banner), as a real node does.

Every pod also gets its own /run (a tmpfs) and /tmp (an overlay of the machine's: it reads what is
there, what it writes stays its own). For an Indexed Job's pod it sets JOB_COMPLETION_INDEX, as the Job controller
does. A state file per kubelet lets the next one's ``up()`` remove what a killed test process left (``reap_stale``).

Logs: each container's stdout and stderr go to one file (what ``kubectl logs`` shows), read at every tick.
Stop (the pod deleted): SIGTERM to the container's PID 1, the grace period (capped at ``max_grace_s``), SIGKILL
(which ends its whole PID namespace), in a background thread so the fake server's loop never blocks. Every pod
has a deadline (``timeout_s``): past it, it is killed and ends with exit code 137. ``down()`` stops everything
that is left and removes the bridge, the namespaces and the pods' directories; it kills only processes it
started (their PID namespaces) and returns what it could not remove.

What it cannot be: no container images (the pods run this machine's files: the image is ignored), no real CNI or
kube-proxy (no Service virtual IPs: only the headless Services' DNS names), no cgroups or resource limits, no
GPUs or RDMA devices (the tools are fakes replaying captures), and no scheduler at scale (the fake's scheduler
binds, this runs a handful of pods).
"""

from __future__ import annotations

import base64
import ipaddress
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

from ansible_collections.aifabric.acceptance.tests.integration import netns
from ansible_collections.aifabric.acceptance.tests.k8s.fake_apiserver import INDEX_KEY, match_labels

ENV_NAME = re.compile(r"^[-._a-zA-Z][-._a-zA-Z0-9]*$")     # the API's rule for an envFrom key as a variable name
PREFIX = "akp"                       # every link, namespace and directory this module creates starts with it
STATE_FILE = "kubelet.json"
TOOLS = ("ip", "unshare")
SYSTEM_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
DEFAULT_RUN_DIRS = ("sshd", "lock")
# the node's own sshd on port 22 of its host network (ProcessKubelet(node_sshd=True)): it answers with a node's
# OpenSSH banner and then closes, so a client (ssh, a wait-for-port) that reaches it talks to the wrong daemon
_NODE_SSHD = """\
import socket
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("0.0.0.0", 22))
s.listen(64)
while True:
    c, _ = s.accept()
    c.settimeout(2)
    try:
        c.sendall(b"SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\\r\\n")
        c.recv(4096)
    except OSError:
        pass
    c.close()
"""

# Runs as PID 1 of the pod's PID namespace, in its private mount and UTS namespaces, before the container's command.
# The pod gets its own /run (a tmpfs with /run/sshd) and its own /tmp (an overlay of the real one: it reads what is
# there, what it writes stays its own, so two pods of one machine never share /tmp/aifabric-sshd).
# $1 hostname, $2 the controller's mount namespace (refuse to mount anything in it), $3 a directory for the
# overlays' upper layers (a tmpfs mounted here), then (source, target) pairs to bind-mount in order up to "--"
# (a source "tmpfs:" mounts a fresh tmpfs), then the command. $4 (before the pairs): the directories the pod's
# image has under /run, space-separated (e.g. "sshd lock").
_POD_SETUP_AND_EXEC = """\
hostname "$1" || exit 1
controller_mnt="$2"; ovl="$3"; run_dirs="$4"; shift 4
if [ "$(readlink /proc/self/ns/mnt)" = "$controller_mnt" ]; then
  echo "refusing to mount: still in the controller's mount namespace" >&2; exit 1
fi
mount -t tmpfs -o size=16m akp-ovl "$ovl" || exit 1
mkdir -p "$ovl/tmp-u" "$ovl/tmp-w" || exit 1
mount -t overlay akp-tmp -o "lowerdir=/tmp,upperdir=$ovl/tmp-u,workdir=$ovl/tmp-w" /tmp || exit 1
mount -t tmpfs -o mode=0755,size=64m,nosuid,nodev akp-run /run || exit 1
for d in $run_dirs; do mkdir -m 0755 "/run/$d" || exit 1; done
# first every missing mount point (an overlay of its nearest existing parent), then every mount: an overlay made
# for a later target (/etc/mpi) would otherwise hide what was bound under it before (/etc/ssh of the image)
n=0; src=""; half=0
for arg in "$@"; do
  [ "$arg" = "--" ] && break
  if [ "$half" = 0 ]; then src="$arg"; half=1; continue; fi
  half=0; dst="$arg"
  if [ ! -e "$dst" ]; then
    parent="$dst"
    while [ ! -d "$parent" ]; do parent=$(dirname "$parent"); done
    if [ "$parent" = / ]; then echo "refusing to overlay /" >&2; exit 1; fi
    n=$((n + 1)); mkdir -p "$ovl/u$n" "$ovl/w$n"
    mount -t overlay akp-ovl -o "lowerdir=$parent,upperdir=$ovl/u$n,workdir=$ovl/w$n" "$parent" || exit 1
    if [ -f "$src" ]; then mkdir -p "$(dirname "$dst")" && : > "$dst"; else mkdir -p "$dst"; fi
  fi
done
while [ "$1" != "--" ]; do
  src="$1"; dst="$2"; shift 2
  if [ "$src" = tmpfs: ]; then
    mount -t tmpfs -o size=256m akp-pod "$dst" || exit 1
  else
    mount --bind "$src" "$dst" || exit 1
  fi
done
shift
cd / || exit 1
exec "$@"
"""


class KubeletError(RuntimeError):
    pass


def missing_prerequisites():
    """Why the process kubelet cannot run here (None when it can)."""
    if os.geteuid() != 0:
        return "the process kubelet needs root (network, PID and mount namespaces)"
    missing = [t for t in TOOLS if not netns.find_tool(t)]
    if missing:
        return "missing tools: %s" % ", ".join(missing)
    return None


class Container(object):
    def __init__(self, name, proc, log):
        self.name, self.proc, self.log = name, proc, log
        self.code = None

    def init_pid(self):
        """PID (here) of the container's PID 1: the child of ``unshare``."""
        try:
            with open("/proc/%d/task/%d/children" % (self.proc.pid, self.proc.pid)) as handle:
                kids = handle.read().split()
        except OSError:
            return None
        return int(kids[0]) if kids else None

    def ended(self):
        if self.code is None and self.proc.poll() is not None:
            rc = self.proc.returncode
            self.code = 128 - rc if rc < 0 else rc
        return self.code is not None


class Pod(object):
    """One running pod (the runner's handle)."""

    def __init__(self, uid, namespace, name, node, hostname, subdomain, labels, directory, host_network):
        self.uid, self.namespace, self.name, self.node = uid, namespace, name, node
        self.hostname, self.subdomain, self.labels = hostname, subdomain, labels
        self.dir, self.host_network = directory, host_network
        self.spec_hostname = None        # spec.hostname (what the cluster DNS names it by), None if unset
        self.ns = self.ip = self.veth = None
        self.containers = []
        self.deadline = None
        self.result = None
        self.stopping = None             # the thread that stops it
        self.hosts_text = None
        self.searches = []               # its resolver's search list; cluster_dns: the cluster DNS answers it
        self.cluster_dns = True
        self.probes = []                 # (host, port) of its containers' tcpSocket readiness probes
        self.ready = False

    @property
    def hosts_file(self):
        return os.path.join(self.dir, "etc", "hosts")


class ProcessKubelet(object):
    """The ``process`` runner (see the module docstring). ``up()``/``down()`` or ``with``.

    ``server``: the FakeApiServer (its store gives the pods' ConfigMaps, Secrets and Services);
    ``path``: directories put first on every pod's PATH (fake tools); ``python``: what ``python3`` is in the pods;
    ``env``: variables every container gets (before its own); ``timeout_s``: every pod's deadline;
    ``sysfs(pod, root)``: optional, writes files to lay over /sys in that pod (``root/sys/class/infiniband/...``);
    ``base_dir``: where its directory is made (not under /tmp by default: what pods write to /tmp stays theirs,
    what they write under ``dir`` the test reads).
    """

    def __init__(self, server, path=(), python=None, env=None, timeout_s=120, max_grace_s=10, base_dir="/var/tmp",
                 sysfs=None, images=None, node_sshd=False):
        self.server = server
        self.path = [str(p) for p in path]
        self.python = python or "/usr/bin/python3"
        self.env = dict(env or {})
        self.timeout_s, self.max_grace_s = timeout_s, max_grace_s
        self.sysfs = sysfs
        # image name -> {"mounts": [(source on this machine, path in the pod)], "run_dirs": [names under /run]}: what
        # an image has that this machine's files do not (e.g. its /etc/ssh); other images: this machine's files
        # with /run/sshd and /run/lock (DEFAULT_RUN_DIRS)
        self.images = dict(images or {})
        # node_sshd: every node's host network has an sshd of its own on port 22 (a stand-in that answers with an
        # OpenSSH banner and accepts no key), as a real node has: a hostNetwork pod cannot bind port 22 there
        self.node_sshd = node_sshd
        self.tag = PREFIX + secrets.token_hex(3)
        self.dir = tempfile.mkdtemp(prefix=self.tag + "-", dir=base_dir)
        self.bridge = self.tag + "br"
        self.ip_tool, self.unshare = netns.find_tool("ip"), netns.find_tool("unshare")
        self.pods = {}                   # uid -> Pod
        self.nodes = {}                  # node name -> (netns, ip, veth) of its host network
        self.namespaces = []             # every netns made, to delete
        self.links = []
        self.threads = []
        self.node_daemons = []           # the node sshd stand-ins (Popen), ended with their node's namespace
        self.lock = threading.RLock()
        self.counter = 0
        self.closed = False
        self.net = None
        self.gateway = None
        self.controller_mnt = os.readlink("/proc/self/ns/mnt")

    # --- lifecycle
    def __enter__(self):
        return self.up()

    def __exit__(self, *exc):
        problems = self.down()
        if problems and exc[0] is None:
            raise KubeletError("process kubelet %s left things behind: %s" % (self.tag, "; ".join(problems)))
        return False

    def up(self):
        why = missing_prerequisites()
        if why:
            raise KubeletError(why)
        reap_stale(os.path.dirname(self.dir))
        try:
            self._write_state()
            self.net = ipaddress.ip_network(netns._free_subnet())
            self.gateway = str(self.net.network_address + 1)
            self._ip("link", "add", self.bridge, "type", "bridge")
            self.links.append(self.bridge)
            self._ip("addr", "add", "%s/%d" % (self.gateway, self.net.prefixlen), "dev", self.bridge)
            self._ip("link", "set", self.bridge, "up")
            bin_dir = os.path.join(self.dir, "bin")
            os.makedirs(bin_dir)
            os.symlink(self.python, os.path.join(bin_dir, "python3"))
        except BaseException:
            self.down()
            raise
        return self

    def down(self):
        """Stop every pod, remove every namespace, link and directory made. Returns what is left (empty: all)."""
        with self.lock:
            self.closed = True
        for pod in list(self.pods.values()):
            self.stop(pod, 0)
        deadline = time.monotonic() + self.max_grace_s + 30
        while time.monotonic() < deadline:          # a tick of the server may still finish a pod meanwhile
            pending = [t for t in list(self.threads) if t.is_alive()]
            if not pending:
                break
            pending[0].join(max(0.1, deadline - time.monotonic()))
        problems = []
        for pod in self.pods.values():
            for c in pod.containers:
                if c.proc.poll() is None:
                    problems.append("pod %s container %s (pid %d) still running" % (pod.name, c.name, c.proc.pid))
        for ns in list(self.namespaces):
            problems.extend(self._delete_netns(ns))
        for proc in self.node_daemons:
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                problems.append("node sshd stand-in (pid %d) still running" % proc.pid)
        if self.links and os.path.exists("/sys/class/net/%s" % self.bridge):
            try:
                self._ip("link", "del", self.bridge)
            except netns.FleetError as exc:
                problems.append(str(exc))
        if not problems:
            shutil.rmtree(self.dir, ignore_errors=True)
        return problems

    def _write_state(self):
        """What a later run's reap_stale() needs to remove this kubelet's things if its process dies first."""
        state = {"owner_pid": os.getpid(), "owner_start": netns._start_time(os.getpid()), "tag": self.tag,
                 "bridge": self.bridge, "namespaces": list(self.namespaces)}
        tmp = os.path.join(self.dir, STATE_FILE + ".tmp")
        with open(tmp, "w") as handle:
            json.dump(state, handle)
        os.replace(tmp, os.path.join(self.dir, STATE_FILE))

    def _ip(self, *args):
        return netns._run([self.ip_tool] + list(args))

    def _new_netns(self, label):
        with self.lock:
            self.counter += 1
            n = self.counter
        name = "%s%s%d" % (self.tag, label, n)
        ip = str(self.net.network_address + 10 + n)
        veth, peer = "%sv%d" % (self.tag, n), "%sp%d" % (self.tag, n)
        self._ip("netns", "add", name)
        self.namespaces.append(name)
        self._write_state()
        self._ip("link", "add", veth, "type", "veth", "peer", "name", peer)
        self._ip("link", "set", peer, "netns", name)
        self._ip("-n", name, "link", "set", peer, "name", "eth0")
        self._ip("link", "set", veth, "master", self.bridge, "up")
        self._ip("-n", name, "link", "set", "lo", "up")
        self._ip("-n", name, "addr", "add", "%s/%d" % (ip, self.net.prefixlen), "dev", "eth0")
        self._ip("-n", name, "link", "set", "eth0", "up")
        self._ip("-n", name, "route", "add", "default", "via", self.gateway)
        return name, ip, veth

    def _start_node_sshd(self, node, ns):
        """The node's own sshd on port 22 of its host network (see _NODE_SSHD); ends with the namespace."""
        log = open(os.path.join(self.dir, "node-sshd-%s.log" % node), "ab")
        with log:
            proc = subprocess.Popen([self.ip_tool, "netns", "exec", ns, self.python, "-S", "-c", _NODE_SSHD],
                                    stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT, close_fds=True)
        self.node_daemons.append(proc)
        deadline = time.monotonic() + 10
        while not _port_open(self.nodes[node][1], 22):
            if proc.poll() is not None or time.monotonic() > deadline:
                raise KubeletError("the sshd stand-in of node %s did not listen on port 22" % node)
            time.sleep(0.02)

    def _delete_netns(self, name):
        """Kill what is left in the namespace (only ever processes of our pods), then delete it."""
        problems = []
        ns_id = netns._netns_id(os.path.join(netns.RUN_NETNS, name))
        if ns_id is not None:
            left = netns.procs_in_netns([ns_id])
            if left:
                survivors = netns.kill_pids(left, grace_s=2, first_signal=signal.SIGKILL)
                problems.extend("process %s in %s" % (netns._describe(p), name) for p in survivors)
        try:
            if name in netns._netns_names():
                self._ip("netns", "del", name)
            if name in self.namespaces:
                self.namespaces.remove(name)
        except netns.FleetError as exc:
            problems.append("network namespace %s: %s" % (name, exc))
        return problems

    # --- the store (called in the fake server's loop thread: its dict is read directly, no await)
    def _stored(self, plural, namespace):
        for _attempt in range(5):
            try:     # read from the server's loop thread, or (a sandbox run) from the test's while the loop writes
                items = list(self.server.emu._objects.items())
                break
            except RuntimeError:
                time.sleep(0.01)
        else:
            items = []
        return [obj.raw for (res, ns, _name), obj in items
                if res.plural == plural and res.group == "" and ns == namespace and not obj.deleted]

    def _stored_one(self, plural, namespace, name):
        for raw in self._stored(plural, namespace):
            if raw["metadata"]["name"] == name:
                return raw
        return None

    # --- the runner API
    def start(self, pod):
        md, spec = pod["metadata"], pod.get("spec") or {}
        host_network = bool(spec.get("hostNetwork"))
        node = spec.get("nodeName")
        directory = os.path.join(self.dir, "pods", "%s-%s" % (md["name"], md["uid"][:8]))
        hostname = node if host_network else (spec.get("hostname") or md["name"])[:63]
        handle = Pod(md["uid"], md["namespace"], md["name"], node, hostname, spec.get("subdomain"),
                     dict(md.get("labels") or {}), directory, host_network)
        handle.spec_hostname = spec.get("hostname")
        with self.lock:
            if self.closed:         # the kubelet went down before the server: the pod fails without running
                handle.deadline = time.monotonic()
                return handle
            self.pods[handle.uid] = handle
        os.makedirs(os.path.join(directory, "etc"))
        os.makedirs(os.path.join(directory, "ovl"))
        if host_network:
            with self.lock:
                if node not in self.nodes:
                    self.nodes[node] = self._new_netns("n")
                    if self.node_sshd:
                        self._start_node_sshd(node, self.nodes[node][0])
            handle.ns, handle.ip, _veth = self.nodes[node]
        else:
            handle.ns, handle.ip, handle.veth = self._new_netns("p")
        self.dns_config(handle, spec)
        handle.probes = _tcp_probes(spec, handle.ip)
        self._write_etc(handle)
        mounts = self._volume_mounts(handle, spec)
        handle.deadline = time.monotonic() + self.timeout_s
        for container in spec.get("containers") or []:
            handle.containers.append(self._start_container(handle, pod, container, mounts))
        return handle

    def poll(self, handle):
        if handle.result is None and handle.stopping is None and not handle.ready:
            handle.ready = all(_port_open(host, port) for host, port in handle.probes)
        self.refresh_dns()
        if handle.result is not None:
            return handle.result
        if all(c.ended() for c in handle.containers):
            handle.result = dict((c.name, (c.code, "Completed" if c.code == 0 else "Error"))
                                 for c in handle.containers)
            self._finish(handle, 0)
            return handle.result
        if time.monotonic() > handle.deadline:
            self._finish(handle, 0)
        return None

    def is_ready(self, handle):
        """Whether the pod is Ready: running, and every tcpSocket readiness probe of its containers connects
        (the kubelet's prober; a pod without probes is Ready once its containers run)."""
        return bool(handle.ready) and handle.result is None and handle.stopping is None

    def logs(self, handle):
        out = {}
        for c in handle.containers:
            try:
                with open(c.log, "rb") as fh:
                    out[c.name] = fh.read()
            except OSError:
                out[c.name] = b""
        return out

    def stop(self, handle, grace_s):
        self._finish(handle, min(float(grace_s or 0), self.max_grace_s))

    # --- starting
    @staticmethod
    def dns_config(handle, spec):
        """The pod's resolver as the kubelet sets it up (pkg/kubelet/network/dns/dns.go ``GetPodDNS``):
        ``ClusterFirst`` (the default) - the cluster DNS and the search list <ns>.svc.cluster.local svc.cluster.local
        cluster.local; a hostNetwork pod with ``ClusterFirst`` falls back to ``Default``, the node's own resolver
        (no cluster names), unless its policy is ``ClusterFirstWithHostNet``; ``None``: only ``dnsConfig``.
        ``dnsConfig.searches`` are appended (mpi-operator adds <job>.<ns>.svc.cluster.local to its workers)."""
        policy = spec.get("dnsPolicy") or "ClusterFirst"
        if handle.host_network and policy == "ClusterFirst":
            policy = "Default"
        handle.cluster_dns = policy in ("ClusterFirst", "ClusterFirstWithHostNet", "None")
        base = ["%s.svc.cluster.local" % handle.namespace, "svc.cluster.local", "cluster.local"] \
            if policy in ("ClusterFirst", "ClusterFirstWithHostNet") else []
        wanted = base + [str(d) for d in ((spec.get("dnsConfig") or {}).get("searches") or [])]
        handle.searches = [d for i, d in enumerate(wanted) if d not in wanted[:i]]

    def _write_etc(self, handle):
        with open(os.path.join(handle.dir, "etc", "resolv.conf"), "w") as fh:
            fh.write("%snameserver 127.0.0.1\noptions ndots:5 timeout:1 attempts:1\n"
                     % ("search %s\n" % " ".join(handle.searches) if handle.searches else ""))
        with open(os.path.join(handle.dir, "etc", "hostname"), "w") as fh:
            fh.write(handle.hostname + "\n")
        self._write_hosts(handle, self._hosts_text(handle, []))

    def _volume_mounts(self, handle, spec):
        """{volume name: source path} for the volumes this kubelet can provide."""
        out = {}
        for volume in spec.get("volumes") or []:
            name = volume["name"]
            target = os.path.join(handle.dir, "volumes", name)
            if "configMap" in volume or "secret" in volume:
                ref = volume.get("configMap") or volume.get("secret")
                plural = "configmaps" if "configMap" in volume else "secrets"
                obj = self._stored_one(plural, handle.namespace, ref.get("name") or ref.get("secretName"))
                if obj is None:
                    raise KubeletError("pod %s: %s %s not found (FailedMount)" % (
                        handle.name, plural, ref.get("name") or ref.get("secretName")))
                data = _volume_data(plural, obj)
                os.makedirs(target, exist_ok=True)
                items = ref.get("items") or [{"key": k, "path": k} for k in sorted(data)]
                for item in items:
                    path = os.path.join(target, item["path"])
                    os.makedirs(os.path.dirname(path), exist_ok=True)
                    with open(path, "wb") as fh:
                        fh.write(data[item["key"]])
                    os.chmod(path, item.get("mode") or ref.get("defaultMode") or 0o644)
                out[name] = target
            elif "emptyDir" in volume:
                if (volume["emptyDir"] or {}).get("medium") == "Memory":
                    out[name] = "tmpfs:"
                else:
                    os.makedirs(target)
                    out[name] = target
        return out

    def _env(self, handle, pod, container):
        env = {"PATH": ":".join(self.path + [os.path.join(self.dir, "bin"), SYSTEM_PATH]),
               "HOSTNAME": handle.hostname, "HOME": "/root", "LANG": "C.UTF-8"}
        env.update(self.env)
        md = pod["metadata"]
        fields = {"metadata.name": handle.name, "metadata.namespace": handle.namespace,
                  "spec.nodeName": handle.node or "", "status.podIP": handle.ip}
        for kind in ("labels", "annotations"):
            for key, value in (md.get(kind) or {}).items():
                fields["metadata.%s['%s']" % (kind, key)] = value
        index = (md.get("annotations") or {}).get(INDEX_KEY)
        if index is not None:
            # what the Job controller adds to every container of an Indexed Job's pod (the fake's leaves it out)
            env["JOB_COMPLETION_INDEX"] = str(index)
        env.update(self._env_from(handle, container))
        for item in container.get("env") or []:
            source = item.get("valueFrom") or {}
            if "value" in item:
                env[item["name"]] = str(item["value"])
            elif (source.get("fieldRef") or {}).get("fieldPath") in fields:
                env[item["name"]] = fields[source["fieldRef"]["fieldPath"]]
            elif source.get("configMapKeyRef") or source.get("secretKeyRef"):
                env[item["name"]] = self._key_ref(handle, item["name"], source)
        return env

    def _env_from(self, handle, container):
        """``envFrom``: every key of each ConfigMap (``configMapRef``) or Secret (``secretRef``) that is a valid
        variable name, with its ``prefix``, in order (a later source wins); the container's ``env`` then overrides
        them (pkg/kubelet/kubelet_pods.go makeEnvironmentVariables). A missing one that is not ``optional`` fails the
        start (CreateContainerConfigError on a real kubelet)."""
        out = {}
        for source in container.get("envFrom") or []:
            plural, ref = ("configmaps", source["configMapRef"]) if source.get("configMapRef") else \
                ("secrets", source.get("secretRef") or {})
            obj = self._stored_one(plural, handle.namespace, ref.get("name"))
            if obj is None:
                if ref.get("optional"):
                    continue
                raise KubeletError("pod %s: envFrom %s %r not found" % (handle.name, plural[:-1], ref.get("name")))
            for key, value in sorted(_volume_data(plural, obj).items()):
                name = (source.get("prefix") or "") + key
                if ENV_NAME.match(name):
                    out[name] = value.decode("utf-8", "replace")
        return out

    def _key_ref(self, handle, name, source):
        """An env value from a ConfigMap's or Secret's key (e.g. the Volcano svc plugin's VC_<TASK>_HOSTS)."""
        plural = "configmaps" if source.get("configMapKeyRef") else "secrets"
        ref = source.get("configMapKeyRef") or source.get("secretKeyRef")
        obj = self._stored_one(plural, handle.namespace, ref.get("name"))
        data = _volume_data(plural, obj) if obj is not None else {}
        if ref.get("key") not in data:
            # the kubelet's CreateContainerConfigError ("configmap "x" not found", "couldn't find key k in ...")
            raise KubeletError("pod %s: env %s: key %s of %s %s not found (CreateContainerConfigError)"
                               % (handle.name, name, ref.get("key"), plural[:-1], ref.get("name")))
        return data[ref["key"]].decode("utf-8", "replace")

    def _start_container(self, handle, pod, container, volumes):
        argv = [str(w) for w in (container.get("command") or []) + (container.get("args") or [])]
        if not argv:
            raise KubeletError("pod %s container %s: no command (the image's entrypoint cannot be known here)"
                               % (handle.name, container.get("name")))
        image = self.images.get(container.get("image")) or {}
        pairs = []
        for source, target in image.get("mounts") or []:
            pairs += [str(source), str(target)]
        for mount in container.get("volumeMounts") or []:
            if mount["name"] in volumes:
                source = volumes[mount["name"]]
                if mount.get("subPath"):
                    if source == "tmpfs:":
                        raise KubeletError("pod %s: subPath of a memory emptyDir is not supported here" % handle.name)
                    source = os.path.join(source, mount["subPath"])
                    if not os.path.exists(source):          # the kubelet makes a missing subPath a directory
                        os.makedirs(source)
                pairs += [source, mount["mountPath"]]
        if self.sysfs is not None:
            root = os.path.join(handle.dir, "sysfs")
            if not os.path.isdir(root):
                os.makedirs(root)
                self.sysfs(pod, root)
            for source, target in netns._sysfs_mounts(root):
                pairs += [source, target]
        for name in ("hosts", "resolv.conf", "hostname"):
            pairs += [os.path.join(handle.dir, "etc", name), "/etc/" + name]
        log = os.path.join(handle.dir, "%s.log" % container["name"])
        argv = [self.ip_tool, "netns", "exec", handle.ns,
                self.unshare, "--uts", "--mount", "--propagation", "private", "--pid", "--kill-child",
                "--mount-proc", "--", "/bin/sh", "-c", _POD_SETUP_AND_EXEC, "sh", handle.hostname,
                self.controller_mnt, os.path.join(handle.dir, "ovl"),
                " ".join(image.get("run_dirs", DEFAULT_RUN_DIRS))] + pairs + ["--"] + argv
        with open(log, "ab") as out:
            proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT,
                                    env=self._env(handle, pod, container), close_fds=True, cwd="/")
        return Container(container["name"], proc, log)

    # --- DNS stand-in
    def _hosts_text(self, handle, entries):
        lines = ["# Kubernetes-managed hosts file (process kubelet of the fake cluster).",
                 "127.0.0.1\tlocalhost", "::1\tlocalhost ip6-localhost ip6-loopback"]
        if handle.subdomain and not handle.host_network:
            fqdn = "%s.%s.%s.svc.cluster.local" % (handle.hostname, handle.subdomain, handle.namespace)
            lines.append("%s\t%s\t%s" % (handle.ip, fqdn, handle.hostname))
        else:
            lines.append("%s\t%s" % (handle.ip, handle.hostname))
        lines.extend(entries)
        return "\n".join(lines) + "\n"

    def _write_hosts(self, handle, text):
        if text == handle.hosts_text:
            return
        # in place (same inode): the file is bind-mounted over /etc/hosts in the pod's mount namespace
        with open(handle.hosts_file, "r+" if os.path.exists(handle.hosts_file) else "w") as fh:
            fh.write(text)
            fh.truncate()
        handle.hosts_text = text

    def dns_records(self, namespace):
        """[(ip, fqdn)] the cluster DNS answers in ``namespace``: for every headless Service, each running pod it
        selects whose ``hostname`` is set and whose ``subdomain`` is the Service (the EndpointSlice controller gives
        an endpoint a hostname only then: endpointslice/utils.go ``ShouldSetHostname``), Ready unless the Service
        has ``publishNotReadyAddresses``; a hostNetwork pod is answered with its node's IP (its pod IP)."""
        out = []
        running = [p for p in self.pods.values() if p.namespace == namespace and p.result is None
                   and p.stopping is None and p.spec_hostname]
        for svc in self._stored("services", namespace):
            spec = svc.get("spec") or {}
            selector = ",".join("%s=%s" % kv for kv in sorted((spec.get("selector") or {}).items()))
            if not selector or spec.get("clusterIP") not in ("None", None):
                continue
            name = svc["metadata"]["name"]
            for pod in running:
                if pod.subdomain == name and match_labels(pod.labels, selector) and (
                        pod.ready or spec.get("publishNotReadyAddresses")):
                    out.append((pod.ip, "%s.%s.%s.svc.cluster.local" % (pod.spec_hostname, name, namespace)))
        return sorted(set(out))

    @staticmethod
    def names_for(handle, fqdn):
        """The names of ``fqdn`` that resolve in the pod: the FQDN, and what its search list makes of shorter
        names (``w-1.svc`` with the search domain <ns>.svc.cluster.local, ``w-1.svc.<ns>.svc`` with cluster.local,
        a bare ``w-1`` with mpi-operator's <job>.<ns>.svc.cluster.local); nothing without the cluster DNS."""
        if not handle.cluster_dns:
            return []
        return [fqdn] + [fqdn[:-len(d) - 1] for d in handle.searches if fqdn.endswith("." + d)]

    def dns_names(self, namespace, handle=None):
        """[(ip, names)] the pod ``handle`` (default: a pod with the cluster's default search list) resolves."""
        if handle is None:
            handle = Pod("", namespace, "", None, "", None, {}, "", False)
            handle.searches = ["%s.svc.cluster.local" % namespace, "svc.cluster.local", "cluster.local"]
        out = []
        for ip, fqdn in self.dns_records(namespace):
            names = self.names_for(handle, fqdn)
            if names:
                out.append((ip, names))
        return out

    def refresh_dns(self):
        with self.lock:
            pods = [p for p in self.pods.values() if p.result is None and p.stopping is None]
            records = {}
            for pod in pods:
                if pod.namespace not in records:
                    records[pod.namespace] = self.dns_records(pod.namespace)
                entries = []
                for ip, fqdn in records[pod.namespace]:
                    names = self.names_for(pod, fqdn)
                    if names:
                        entries.append("%s\t%s" % (ip, " ".join(names)))
                self._write_hosts(pod, self._hosts_text(pod, entries))

    # --- stopping
    def _finish(self, handle, grace_s):
        with self.lock:
            if handle.stopping is not None:
                return
            handle.stopping = threading.Thread(target=self._stop_pod, args=(handle, grace_s),
                                               name="akp-stop-%s" % handle.name, daemon=True)
            self.threads.append(handle.stopping)
        handle.stopping.start()

    def _stop_pod(self, handle, grace_s):
        for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, 5)):
            for c in handle.containers:
                if not c.ended():
                    pid = c.init_pid()
                    for target in filter(None, (pid,)):
                        try:
                            os.kill(target, sig)
                        except OSError:
                            pass
                    if sig == signal.SIGKILL:
                        c.proc.kill()     # unshare --kill-child: its PID 1 goes with it
            end = time.monotonic() + wait_s
            while time.monotonic() < end and not all(c.ended() for c in handle.containers):
                time.sleep(0.05)
        for c in handle.containers:
            try:
                c.proc.wait(5)
            except subprocess.TimeoutExpired:
                pass
            c.ended()
        if handle.result is None:
            handle.result = dict((c.name, (c.code if c.code is not None else 137, "Error"))
                                 for c in handle.containers)
        if handle.ns and not handle.host_network:
            self._delete_netns(handle.ns)


def reap_stale(base_dir):
    """Remove what process kubelets whose process died left in ``base_dir``: the processes in their network
    namespaces (only ever pods they started), the namespaces, the bridge, the directory. Returns their tags."""
    removed = []
    for entry in sorted(os.listdir(base_dir)):
        if not entry.startswith(PREFIX):
            continue
        # only a state of ours that nobody else could have written, naming only this kubelet's own bridge and
        # namespaces (reaping runs as root: a planted state must not delete another link or namespace)
        state = netns.own_state(base_dir, entry, STATE_FILE, PREFIX)
        if state is None or state.get("bridge") != state["tag"] + "br" or not all(
                isinstance(n, str) and n.startswith(state["tag"]) for n in state.get("namespaces") or []):
            continue
        owner = state.get("owner_pid")
        if owner and netns._alive(owner) and netns._start_time(owner) == state.get("owner_start"):
            continue
        ip = netns.find_tool("ip")
        existing = netns._netns_names()
        for name in state.get("namespaces") or []:
            ns_id = netns._netns_id(os.path.join(netns.RUN_NETNS, name))
            if ns_id is not None:
                netns.kill_pids(netns.procs_in_netns([ns_id]), grace_s=2, first_signal=signal.SIGKILL)
            if name in existing:
                netns._run([ip, "netns", "del", name], check=False)
        if state.get("bridge") and os.path.exists("/sys/class/net/%s" % state["bridge"]):
            netns._run([ip, "link", "del", state["bridge"]], check=False)
        shutil.rmtree(os.path.join(base_dir, entry), ignore_errors=True)
        removed.append(state.get("tag"))
    return removed


def _tcp_probes(spec, ip):
    """(host, port) of every container's tcpSocket readiness probe (a named port resolved from the container's
    ports); other probe kinds (exec, httpGet, grpc) cannot be run here: KubeletError."""
    out = []
    for container in spec.get("containers") or []:
        probe = container.get("readinessProbe")
        if not probe:
            continue
        if "tcpSocket" not in probe:
            raise KubeletError("container %s: only tcpSocket readiness probes can run here, got %s"
                               % (container.get("name"), sorted(probe)))
        port = probe["tcpSocket"].get("port")
        if isinstance(port, str) and not port.isdigit():
            named = [p.get("containerPort") for p in container.get("ports") or [] if p.get("name") == port]
            if not named:
                raise KubeletError("container %s: readiness probe port %r is no port of it"
                                   % (container.get("name"), port))
            port = named[0]
        out.append((probe["tcpSocket"].get("host") or ip, int(port)))
    return out


def _port_open(host, port):
    try:
        with socket.create_connection((host, int(port)), timeout=0.3):
            return True
    except OSError:
        return False


def _volume_data(plural, obj):
    """{key: bytes} of a ConfigMap or Secret (a Secret's stringData too: the API server merges it into data)."""
    if plural == "configmaps":
        out = dict((k, v.encode()) for k, v in (obj.get("data") or {}).items())
        out.update((k, base64.b64decode(v)) for k, v in (obj.get("binaryData") or {}).items())
        return out
    out = dict((k, base64.b64decode(v)) for k, v in (obj.get("data") or {}).items())
    out.update((k, v.encode()) for k, v in (obj.get("stringData") or {}).items())
    return out


def fake_tool(directory, name, table, python=None, fallback=None):
    """Write a fake ``name`` into ``directory`` that replays real captures: ``table`` is a list of
    ``(args, capture file, exit code)``; the first entry whose ``args`` all appear in the tool's arguments answers
    (the file's bytes on stdout, then that exit code); no entry: "<name>: unrecognized arguments", exit 2 - or,
    with ``fallback`` (a real program's path), that program runs with the same arguments (e.g. a ``python3`` that
    answers the GEMM worker's ``gemm`` command with a real GPU run's output, and is the real interpreter for
    everything else)."""
    os.makedirs(directory, exist_ok=True)
    path = os.path.join(directory, name)
    miss = ("os.execv(%r, [%r] + args)\n" % (fallback, fallback) if fallback else
            "sys.stderr.write('%s: unrecognized arguments: %%s\\n' %% ' '.join(args))\nsys.exit(2)\n" % name)
    script = ("#!%s -S\nimport os, sys\nTABLE = %s\nargs = sys.argv[1:]\n"
              "for want, path, rc in TABLE:\n"
              "    if all(w in args for w in want):\n"
              "        with open(path, 'rb') as fh:\n"
              "            sys.stdout.buffer.write(fh.read())\n"
              "        sys.exit(rc)\n"
              % (python or sys.executable, json.dumps([[list(a), str(p), int(rc)] for a, p, rc in table]))) + miss
    with open(path, "w") as fh:
        fh.write(script)
    os.chmod(path, 0o755)
    return path
