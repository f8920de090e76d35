# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Throwaway fleets of SSH hosts made of Linux network namespaces, for integration tests.

Each host of a fleet is one network namespace plugged into a private bridge by a veth
pair, with its own /etc/netns/<ns>/{hosts,resolv.conf} (so name lookups answer at once),
its own hostname (a UTS namespace) and its own ``sshd -D`` listening on the host's IP.
The controller (the machine running the tests) reaches every host over real SSH with a
throwaway ed25519 key. An INI inventory describes the fleet to Ansible.

Only the network and the hostname are isolated: files, users and process IDs are
shared with the controller, so every host gets its own work directory. The exceptions
live in each sshd's own mount namespace (private: nothing mounted there is seen by the
controller or by another host): the login user's shell start-up files (~/.bashrc,
~/.profile, ...) read as empty, as on a fresh machine, and a fleet made with
``Fleet(sysfs=build)`` gives every host its own view of parts of /sys (see ``Fleet``):
e.g. a /sys/class/infiniband holding a fake HCA, or a cpufreq tree per CPU, while every
other entry of /sys stays the real one (the host's own /sys/class/net included);
``Fleet(private_run=True)`` gives every host its own empty /run.

Everything a fleet creates carries a random suffix (names stay within the 15 characters
of a Linux interface name) and a random 10.213.X.0/24, so parallel runs and leftovers
of killed runs do not collide. ``Fleet.down()`` removes everything on every path:
processes are killed by PID and reaped, SSH ControlMaster sockets are closed, links,
namespaces and /etc/netns directories are deleted. A fleet finds its processes by the
(dev, inode) of its namespaces, and holds each namespace open until ``release()`` (after
its last ``down()``): the kernel gives a freed namespace's inode to the next one made, so
an id kept past that would name another fleet's hosts. A fleet whose owning process died
without tearing down is removed by ``reap_stale()``, which ``Fleet.up()`` calls.

Needs root, ``ip`` (iproute2), ``unshare`` (util-linux), ``sshd``, ``ssh`` and
``ssh-keygen`` (OpenSSH). ``missing_prerequisites()`` says what is missing.
"""

from __future__ import annotations

import ipaddress
import json
import os
import pwd
import random
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import warnings

PREFIX = "aft"                      # every name this module creates starts with it
SUBNET_BASE = "10.213"              # fleets live in 10.213.X.0/24, X random
XDIST_SLICES = 8                    # pytest -n: worker gwN takes the X with X % 8 == N % 8 (_free_subnet)
TOOLS = ("ip", "unshare", "sshd", "ssh", "ssh-keygen")
CMD_TIMEOUT_S = 15                  # any one ip/ssh-keygen/ssh -O call
SSHD_READY_TIMEOUT_S = 10
TERM_GRACE_S = 3                    # SIGTERM, then SIGKILL after this
ETC_NETNS = "/etc/netns"
RUN_NETNS = "/var/run/netns"
STATE_FILE = "fleet.json"
SBIN_DIRS = ("/usr/sbin", "/sbin", "/usr/local/sbin")
SYSFS = "/sys"
SYSFS_PER_NETNS = ("/sys/class/net", "/sys/devices/virtual/net")   # what they list differs per network namespace

# sshd starts inside the host's own UTS and mount namespaces: set the hostname, hide the
# controller user's shell start-up files (an empty file bind-mounted over each, in this
# namespace only), lay the host's own sysfs view over /sys, then become sshd. A host is a
# fresh machine: an SSH session there must not run the controller's ~/.bashrc, whose
# `pyenv init` blocks for a minute on the lock file a killed session leaves behind.
# It refuses to mount anything unless it runs in a mount namespace other than the
# controller's. The names come in as positional arguments, never inside the script text:
# $1 hostname, $2 the empty file, $3 the controller's mount namespace (readlink of
# /proc/self/ns/mnt), $4 "private-run" for a fresh tmpfs on /run (else empty), then the rc
# files up to "--", then (source, target) pairs to `mount --rbind` in order up to "--"
# (see _sysfs_mounts), then sshd's argv.
_HOST_SETUP_AND_EXEC = """\
hostname "$1" || exit 1
empty="$2"; controller_mnt="$3"; run="$4"; shift 4
if [ "$(readlink /proc/self/ns/mnt)" = "$controller_mnt" ]; then
  echo "refusing to mount: still in the controller's mount namespace $controller_mnt" >&2; exit 1
fi
while [ "$1" != "--" ]; do
  if [ -f "$1" ]; then mount --bind "$empty" "$1" || exit 1; fi
  shift
done
shift
while [ "$1" != "--" ]; do
  mount --rbind "$1" "$2" || exit 1
  shift 2
done
shift
if [ "$run" = private-run ]; then
  mount -t tmpfs -o mode=0755,size=64m,nosuid,nodev aft-run /run || exit 1
  mkdir -m 0755 /run/sshd /run/lock || exit 1
fi
exec "$@"
"""
SHELL_RC_FILES = (".bashrc", ".bash_profile", ".bash_login", ".profile")

SSHD_CONFIG = """\
# aifabric.acceptance integration-test fleet (throwaway; removed on teardown)
Port 22
HostKey {dir}/ssh_host_ed25519_key
PermitRootLogin prohibit-password
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
AuthorizedKeysFile {dir}/authorized_keys
StrictModes no
UsePAM no
UseDNS no
PrintMotd no
PrintLastLog no
MaxStartups 100:30:200
MaxSessions 50
ClientAliveInterval 5
ClientAliveCountMax 3
LogLevel INFO
Subsystem sftp internal-sftp
"""


class FleetError(RuntimeError):
    """The fleet could not be brought up or torn down cleanly."""


def find_tool(name):
    """Absolute path of a tool (sbin directories included), or None."""
    return shutil.which(name) or shutil.which(name, path=os.pathsep.join(SBIN_DIRS))


def missing_prerequisites(try_netns=True):
    """Why a fleet cannot be brought up here: a list of reasons, empty when it can."""
    reasons = []
    if os.geteuid() != 0:
        return ["needs root (network namespaces, veth, bridge, sshd as root); running as uid %d" % os.geteuid()]
    missing = [name for name in TOOLS if not find_tool(name)]
    if missing:
        reasons.append("missing tools: %s (Debian: apt-get install openssh-server openssh-client iproute2 util-linux)"
                       % ", ".join(missing))
        return reasons
    if try_netns:
        probe = "%sprobe%s" % (PREFIX, secrets.token_hex(3))
        try:
            _run([find_tool("ip"), "netns", "add", probe])
        except FleetError as exc:
            reasons.append("cannot create a network namespace: %s" % exc)
        else:
            try:
                # what every host needs: run a program inside it, in its own UTS namespace
                _run([find_tool("ip"), "netns", "exec", probe, find_tool("unshare"), "--uts", "--", "/bin/true"])
            except FleetError as exc:
                reasons.append("cannot run a program in a network + UTS namespace: %s" % exc)
            try:
                _run([find_tool("ip"), "netns", "del", probe])
            except FleetError as exc:
                reasons.append("cannot delete the probe network namespace %s: %s" % (probe, exc))
    return reasons


def _run(argv, timeout=CMD_TIMEOUT_S, check=True, input_text=None):
    """Run one command (argv list) with a timeout; raise FleetError on failure."""
    try:
        proc = subprocess.run(argv, input=input_text, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              stdin=None if input_text is not None else subprocess.DEVNULL,
                              timeout=timeout, check=False, text=True)
    except subprocess.TimeoutExpired:
        raise FleetError("%s: timed out after %ss" % (" ".join(argv), timeout))
    except OSError as exc:
        raise FleetError("%s: %s" % (" ".join(argv), exc))
    if check and proc.returncode != 0:
        raise FleetError("%s: exit %d: %s" % (" ".join(argv), proc.returncode,
                                              (proc.stderr or proc.stdout).strip()))
    return proc


# ---------------------------------------------------------------- processes (via /proc)

def _pids():
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            yield int(entry)


def _proc_state(pid):
    """The one-letter state of a process (R, S, Z, ...), or None when it is gone."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    # "pid (comm) S ..." where comm may contain spaces and parentheses
    return data[data.rfind(b")") + 2:data.rfind(b")") + 3].decode("ascii", "replace")


def _cmdline(pid):
    try:
        with open("/proc/%d/cmdline" % pid, "rb") as handle:
            return handle.read().replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except OSError:
        return ""


def _netns_id(path):
    """(st_dev, st_ino) of a network namespace file, or None."""
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_dev, st.st_ino)


def _alive(pid):
    state = _proc_state(pid)
    return state is not None and state not in ("Z", "X")


def procs_in_netns(ns_ids):
    """Live PIDs whose network namespace is one of ns_ids (zombies have none)."""
    ns_ids = set(i for i in ns_ids if i)
    found = []
    if not ns_ids:
        return found
    for pid in _pids():
        if pid == os.getpid():
            continue
        if _netns_id("/proc/%d/ns/net" % pid) in ns_ids and _alive(pid):
            found.append(pid)
    return found


def procs_mentioning(text):
    """Live PIDs (other than this one) whose command line contains text."""
    found = []
    for pid in _pids():
        if pid == os.getpid():
            continue
        if text in _cmdline(pid) and _alive(pid):
            found.append(pid)
    return found


def _describe(pid):
    return "pid %d (%s): %s" % (pid, _proc_state(pid), _cmdline(pid)[:200])


def kill_pids(pids, grace_s=TERM_GRACE_S, first_signal=signal.SIGTERM):
    """Signal exact PIDs, SIGKILL the ones still alive after grace_s; return the survivors.

    Each PID is signalled only while it is the process it was when listed (same start time): one that exits
    during the grace may be reused by another test's process before the SIGKILL."""
    started = dict((pid, _start_time(pid)) for pid in pids if pid != os.getpid())
    started = dict((pid, start) for pid, start in started.items() if start is not None)

    def same(pid):
        return _alive(pid) and _start_time(pid) == started[pid]

    def signal_all(sig):
        for pid in started:
            if same(pid):
                try:
                    os.kill(pid, sig)
                except ProcessLookupError:
                    pass

    def wait():
        deadline = time.monotonic() + grace_s
        while time.monotonic() < deadline and any(same(p) for p in started):
            _reap_children(started)
            time.sleep(0.05)

    signal_all(first_signal)
    wait()
    signal_all(signal.SIGKILL)
    wait()
    _reap_children(started)
    return [pid for pid in started if same(pid)]


def _reap_children(pids):
    """Reap those of pids that are our own exited children (others are not ours to reap)."""
    for pid in pids:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass


# ---------------------------------------------------------------- the fleet

class Host(object):
    """One fake bare host: a network namespace with its own sshd."""

    def __init__(self, name, ns, ip, veth, peer, workdir):
        self.name = name            # inventory_hostname and hostname (UTS namespace)
        self.ns = ns                # network namespace name
        self.ip = ip                # address sshd listens on
        self.veth = veth            # host-side veth (on the bridge)
        self.peer = peer            # namespace side, renamed eth0 inside
        self.workdir = workdir      # this host's own directory (remote_tmp lives there)
        self.sysfs_root = None      # the fake tree laid over /sys for this host (Fleet(sysfs=...)), if any
        self.sysfs_mounts = []      # its (source, target) pairs, `mount --rbind` in order in sshd's namespace
        self.log = os.path.join(workdir, "sshd.log")
        self.proc = None            # Popen of sshd -D (exec chain: its PID is sshd's)
        self.ns_id = None           # (dev, inode) of the namespace: an identity only while ns_fd holds it
        self.ns_fd = None           # an open descriptor on the namespace, held from bring-up to release()
        self.alive = False

    def hold(self, path):
        """Open the namespace at path and keep it open: while held, the kernel cannot free it, so its
        (dev, inode) cannot be given to a namespace another fleet creates (a teardown that looked processes up
        by a freed id once killed a parallel test's sshd listeners). No-op when path is not there."""
        try:
            fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
        except OSError:
            return
        st = os.fstat(fd)
        self.release()
        self.ns_fd, self.ns_id = fd, (st.st_dev, st.st_ino)

    def release(self):
        if self.ns_fd is not None:
            os.close(self.ns_fd)
        self.ns_fd, self.ns_id = None, None

    def as_state(self):
        return {"name": self.name, "ns": self.ns, "ip": self.ip, "veth": self.veth, "peer": self.peer,
                "workdir": self.workdir, "ns_id": list(self.ns_id) if self.ns_id else None,
                "sshd_pid": self.proc.pid if self.proc else None}

    def __repr__(self):
        return "Host(%s %s ns=%s veth=%s alive=%s)" % (self.name, self.ip, self.ns, self.veth, self.alive)

    def path(self, path):
        """Where the controller reads ``path`` as this host sees it (its sshd's mount namespace): valid while
        its sshd lives."""
        if self.proc is None or self.proc.poll() is not None:
            raise FleetError("%s: its sshd is not running: its mount namespace is gone" % self.name)
        return "/proc/%d/root/%s" % (self.proc.pid, os.path.abspath(path).lstrip("/"))


class Fleet(object):
    """N hosts on one bridge, reachable over SSH. Use as a context manager or up()/down().

    >>> with Fleet(3) as fleet:
    ...     subprocess.run(["ansible", "-i", fleet.inventory, "all", "-m", "ping"], timeout=60)

    ``sysfs``: a callable ``sysfs(host, root)`` that writes the files a host is to see under
    /sys into ``root`` (``root/sys/class/infiniband/mlx5_0/...``). They are laid over /sys in
    that host's sshd mount namespace only (see ``_sysfs_mounts``); every other entry of /sys
    stays the real one, so /sys/class/net still lists the host's own eth0.

    ``private_run``: every host gets its own empty /run (a tmpfs in its sshd mount namespace,
    with /run/sshd and /run/lock), as separate machines have: per-machine state kept under
    /run (the perftest state root and its governor hold file) is no longer shared by the
    hosts. The controller reads a host's /run through ``host.path("/run/...")``.
    """

    def __init__(self, n=3, group="gpu_nodes", python="/usr/bin/python3", base_dir=None,
                 host_prefix="node", keep_dir=False, sysfs=None, private_run=False):
        if not 1 <= n <= 200:
            raise ValueError("a fleet has 1 to 200 hosts, not %r" % (n,))
        self.n = n
        self.group = group
        self.python = python
        self.keep_dir = keep_dir
        self.suffix = secrets.token_hex(3)          # 6 hex chars: "aft" + 6 + "v" + 3 digits <= 15
        self.tag = PREFIX + self.suffix
        self.dir = tempfile.mkdtemp(prefix="%s-" % self.tag, dir=base_dir)
        self.bridge = self.tag + "br"
        self.key = os.path.join(self.dir, "id_ed25519")
        self.control_path_dir = os.path.join(self.dir, "cp")
        self.local_tmp = os.path.join(self.dir, "ansible-local")
        self.inventory = os.path.join(self.dir, "inventory.ini")
        self.sshd_config = os.path.join(self.dir, "sshd_config")
        self.empty_rc = os.path.join(self.dir, "empty_rc")      # hides the login user's shell rc files on the hosts
        self.login_home = pwd.getpwuid(os.geteuid()).pw_dir
        self.subnet = None
        self.hosts = []
        self.tracked = []           # controller-side Popen objects to stop on teardown
        self.tools = dict((name, find_tool(name)) for name in TOOLS)
        self.sysfs = sysfs
        self.private_run = private_run

    # -- public API

    def __enter__(self):
        return self.up()

    def __exit__(self, *exc_info):
        problems = self.down()
        self.release()
        if problems and exc_info[0] is None:
            raise FleetError("fleet %s left things behind: %s" % (self.tag, "; ".join(problems)))
        return False

    @classmethod
    def from_state(cls, state):
        """The fleet a state file describes (to tear down what a dead process left behind)."""
        fleet = cls.__new__(cls)
        fleet.n = len(state.get("hosts", []))
        fleet.group = None
        fleet.python = None
        fleet.keep_dir = False
        fleet.suffix = state["tag"][len(PREFIX):]
        fleet.tag = state["tag"]
        fleet.dir = state["dir"]
        fleet.bridge = state["bridge"]
        fleet.key = os.path.join(fleet.dir, "id_ed25519")
        fleet.control_path_dir = os.path.join(fleet.dir, "cp")
        fleet.local_tmp = os.path.join(fleet.dir, "ansible-local")
        fleet.inventory = os.path.join(fleet.dir, "inventory.ini")
        fleet.sshd_config = os.path.join(fleet.dir, "sshd_config")
        fleet.subnet = state.get("subnet")
        fleet.tracked = []
        fleet.tools = dict((name, find_tool(name)) for name in TOOLS)
        fleet.sysfs = None
        fleet.private_run = False
        fleet.hosts = []
        for item in state.get("hosts", []):
            host = Host(item["name"], item["ns"], item["ip"], item["veth"], item["peer"], item["workdir"])
            # only a namespace that still exists by name is this fleet's: once it was freed, its recorded
            # (dev, inode) may belong to a namespace another fleet made since (processes left in a namespace
            # that lost its name are found through the fleet's directory on their command lines)
            host.hold(os.path.join(RUN_NETNS, host.ns))
            fleet.hosts.append(host)
        return fleet

    def host(self, name):
        for host in self.hosts:
            if host.name == name:
                return host
        raise KeyError("no host %r in fleet %s" % (name, self.tag))

    def up(self):
        """Create bridge, namespaces, sshd per host and the inventory; on failure undo it all."""
        missing = [name for name, path in self.tools.items() if not path]
        if missing:
            shutil.rmtree(self.dir, ignore_errors=True)
            raise FleetError("missing tools: %s" % ", ".join(missing))
        reap_stale()
        try:
            self._up()
        except BaseException:
            self.down()
            self.release()
            raise
        return self

    def release(self):
        """Let go of the namespaces (after the last down()): their ids may name another fleet's from now on."""
        for host in self.hosts:
            host.release()

    def down(self):
        """Remove everything this fleet created. Never raises; returns what could not be removed."""
        problems = self._teardown_pass()
        if problems:
            # something appeared or lingered while we tore down (a session forking as it was
            # killed, a slow exit under load): one more pass, and say what it was
            time.sleep(0.5)
            first = problems
            problems = self._teardown_pass()
            warnings.warn("fleet %s: a second teardown pass was needed for: %s%s" % (
                self.tag, "; ".join(first), "" if not problems else " (still left: %s)" % "; ".join(problems)))
        if not problems and not self.keep_dir:
            shutil.rmtree(self.dir, ignore_errors=True)
        elif problems:
            self._write_state()
        return problems

    def _teardown_pass(self):
        problems = []
        for step in (self._stop_tracked, self._close_masters, self._stop_hosts, self._delete_network):
            try:
                step()
            except Exception as exc:  # keep tearing down whatever failed
                problems.append("%s: %s" % (step.__name__, exc))
        problems.extend(self.leftovers())
        return problems

    def kill_host(self, name, wait_s=TERM_GRACE_S):
        """Take one host off the network as a power loss would, mid-run.

        Its veth goes down first (nothing it sends afterwards reaches the controller),
        then every process of the host (sshd, its sessions, the module running there) is
        SIGKILLed by PID and reaped. The controller sees a dead peer: SSH connections stall
        until ServerAlive gives up, new ones cannot connect.
        """
        host = self.host(name)
        _run([self.tools["ip"], "link", "set", host.veth, "down"])
        # a power loss stops every process at once; signals go one PID at a time, so a process forked between the
        # listing and the kill (a runner starting its next perftest) would live on as an orphan: list and kill
        # again until nothing of the host is left
        survivors = []
        for _round in range(20):
            pids = procs_in_netns([host.ns_id])
            if not pids:
                break
            survivors = kill_pids(pids, grace_s=wait_s, first_signal=signal.SIGKILL)
        if host.proc is not None:
            try:
                host.proc.wait(timeout=wait_s)
            except subprocess.TimeoutExpired:
                survivors.append(host.proc.pid)
        host.alive = False
        if survivors:
            raise FleetError("kill_host(%s): still alive: %s" % (name, ", ".join(_describe(p) for p in survivors)))

    def gate(self, name, limit_s=60):
        """A Gate for one host (see Gate): hold its next module start until released."""
        return Gate(self, name, limit_s=limit_s)

    def track(self, popen):
        """Stop this controller-side process (and its process group) on teardown."""
        self.tracked.append(popen)
        return popen

    def write_inventory(self, path=None, host_vars=None, group_vars=None):
        """Write an INI inventory of the fleet; host_vars: {host: {var: value}} added per host."""
        path = path or self.inventory
        host_vars = host_vars or {}
        common_args = " ".join([
            "-F /dev/null",                      # ignore the user's ~/.ssh/config
            "-o StrictHostKeyChecking=no", "-o UserKnownHostsFile=/dev/null", "-o LogLevel=ERROR",
            "-o IdentitiesOnly=yes", "-o ServerAliveInterval=2", "-o ServerAliveCountMax=2",
        ])
        variables = {
            "ansible_connection": "ssh",
            "ansible_user": "root",
            "ansible_port": "22",
            "ansible_ssh_private_key_file": self.key,
            "ansible_ssh_common_args": "'%s'" % common_args,
            "ansible_ssh_timeout": "5",
            "ansible_control_path_dir": self.control_path_dir,
            "ansible_python_interpreter": self.python,
        }
        variables.update(group_vars or {})
        lines = ["# fleet %s (%s) - throwaway, removed on teardown" % (self.tag, self.subnet), "[%s]" % self.group]
        for host in self.hosts:
            fields = ["ansible_host=%s" % host.ip, "ansible_remote_tmp=%s" % os.path.join(host.workdir, "tmp")]
            fields.extend("%s=%s" % item for item in sorted(host_vars.get(host.name, {}).items()))
            lines.append("%s %s" % (host.name, " ".join(fields)))
        lines.append("")
        lines.append("[%s:vars]" % self.group)
        lines.extend("%s=%s" % item for item in variables.items())
        with open(path, "w") as handle:
            handle.write("\n".join(lines) + "\n")
        return path

    def ansible_env(self, base=None):
        """Environment for ansible-* on the controller: local state inside the fleet's directory."""
        env = dict(os.environ if base is None else base)
        env.update({
            "ANSIBLE_SSH_CONTROL_PATH_DIR": self.control_path_dir,
            "ANSIBLE_LOCAL_TEMP": self.local_tmp,
            "ANSIBLE_HOST_KEY_CHECKING": "False",
            "ANSIBLE_RETRY_FILES_ENABLED": "False",
            "ANSIBLE_NOCOLOR": "1",
            "ANSIBLE_FORCE_COLOR": "0",
        })
        return env

    def leftovers(self):
        """Everything of this fleet that still exists (empty after a clean down())."""
        found = []
        ns_ids = [h.ns_id for h in self.hosts]
        for pid in sorted(set(procs_in_netns(ns_ids)) | set(procs_mentioning(self.dir))):
            found.append("process " + _describe(pid))
        for popen in self.tracked:
            if popen.poll() is None:
                found.append("tracked process %d still running" % popen.pid)
        try:
            existing_ns = set(_netns_names())
        except FleetError as exc:
            found.append("cannot list network namespaces: %s" % exc)
            existing_ns = set()
        for host in self.hosts:
            if host.ns in existing_ns:
                found.append("network namespace %s" % host.ns)
            if os.path.exists(os.path.join(ETC_NETNS, host.ns)):
                found.append("directory %s" % os.path.join(ETC_NETNS, host.ns))
        for link in [self.bridge] + [h.veth for h in self.hosts]:
            if os.path.exists("/sys/class/net/%s" % link):
                found.append("link %s" % link)
        if os.path.isdir(self.control_path_dir):
            for name in os.listdir(self.control_path_dir):
                found.append("ssh control socket %s" % os.path.join(self.control_path_dir, name))
        return found

    # -- bring-up

    def _up(self):
        os.chmod(self.dir, 0o700)
        for sub in (self.control_path_dir, self.local_tmp):
            os.makedirs(sub, mode=0o700)
        self.subnet = _free_subnet()
        net = ipaddress.ip_network(self.subnet)
        gateway = str(net.network_address + 1)
        for i in range(1, self.n + 1):
            name = "node%d" % i
            workdir = os.path.join(self.dir, name)
            os.makedirs(os.path.join(workdir, "tmp"), mode=0o700)
            self.hosts.append(Host(name=name, ns="%sn%d" % (self.tag, i), ip=str(net.network_address + 10 + i),
                                   veth="%sv%d" % (self.tag, i), peer="%sp%d" % (self.tag, i), workdir=workdir))
        self._write_state()
        self._make_keys()
        ip = self.tools["ip"]
        _run([ip, "link", "add", self.bridge, "type", "bridge"])
        _run([ip, "addr", "add", "%s/%d" % (gateway, net.prefixlen), "dev", self.bridge])
        _run([ip, "link", "set", self.bridge, "up"])
        etc_hosts = "127.0.0.1 localhost\n" + "".join("%s %s\n" % (h.ip, h.name) for h in self.hosts)
        for host in self.hosts:
            etc = os.path.join(ETC_NETNS, host.ns)
            os.makedirs(etc, mode=0o755)
            # `ip netns exec` bind-mounts these over /etc: lookups answer from files, no DNS timeouts
            with open(os.path.join(etc, "hosts"), "w") as handle:
                handle.write(etc_hosts)
            with open(os.path.join(etc, "resolv.conf"), "w") as handle:
                handle.write("options timeout:1 attempts:1\n")
            _run([ip, "netns", "add", host.ns])
            host.hold(os.path.join(RUN_NETNS, host.ns))
            self._write_state()
            _run([ip, "link", "add", host.veth, "type", "veth", "peer", "name", host.peer])
            _run([ip, "link", "set", host.peer, "netns", host.ns])
            _run([ip, "-n", host.ns, "link", "set", host.peer, "name", "eth0"])
            _run([ip, "link", "set", host.veth, "master", self.bridge, "up"])
            _run([ip, "-n", host.ns, "link", "set", "lo", "up"])
            _run([ip, "-n", host.ns, "addr", "add", "%s/%d" % (host.ip, net.prefixlen), "dev", "eth0"])
            _run([ip, "-n", host.ns, "link", "set", "eth0", "up"])
            _run([ip, "-n", host.ns, "route", "add", "default", "via", gateway])
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)      # sshd's privilege separation dir
        with open(self.sshd_config, "w") as handle:
            handle.write(SSHD_CONFIG.format(dir=self.dir))
        with open(self.empty_rc, "w"):
            pass
        for host in self.hosts:
            if self.sysfs is not None:
                host.sysfs_root = os.path.join(host.workdir, "sysfs")
                os.makedirs(host.sysfs_root, mode=0o755)
                self.sysfs(host, host.sysfs_root)
                host.sysfs_mounts = _sysfs_mounts(host.sysfs_root)
            self._start_sshd(host)
        self._write_state()
        for host in self.hosts:
            self._wait_sshd(host)
            host.alive = True
        self.write_inventory()

    def _make_keys(self):
        keygen = self.tools["ssh-keygen"]
        _run([keygen, "-q", "-t", "ed25519", "-N", "", "-C", "%s-throwaway" % self.tag, "-f", self.key])
        _run([keygen, "-q", "-t", "ed25519", "-N", "", "-C", "%s-host" % self.tag,
              "-f", os.path.join(self.dir, "ssh_host_ed25519_key")])
        shutil.copyfile(self.key + ".pub", os.path.join(self.dir, "authorized_keys"))
        os.chmod(os.path.join(self.dir, "authorized_keys"), 0o600)

    def _start_sshd(self, host):
        argv = [self.tools["ip"], "netns", "exec", host.ns,
                self.tools["unshare"], "--uts", "--mount", "--propagation", "private", "--",
                "/bin/sh", "-c", _HOST_SETUP_AND_EXEC, "sh", host.name, self.empty_rc, os.readlink("/proc/self/ns/mnt"),
                "private-run" if self.private_run else ""]
        argv += [os.path.join(self.login_home, name) for name in SHELL_RC_FILES]
        argv += ["--"]
        for source, target in host.sysfs_mounts:
            # only ever onto the host's own fake tree or onto /sys, and only in sshd's private namespace
            if not (_inside(target, host.sysfs_root) or _inside(target, SYSFS)):
                raise FleetError("refusing to mount %s onto %s: neither under %s nor under %s"
                                 % (source, target, host.sysfs_root, SYSFS))
            argv += [source, target]
        argv += ["--", self.tools["sshd"], "-D", "-f", self.sshd_config,
                 "-o", "ListenAddress=%s" % host.ip,
                 "-o", "PidFile=%s" % os.path.join(host.workdir, "sshd.pid"),
                 "-E", host.log]
        with open(host.log, "ab") as log:
            # ip netns exec, unshare and sh all exec: the Popen's PID is sshd's own
            host.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log, close_fds=True)

    def _wait_sshd(self, host):
        deadline = time.monotonic() + SSHD_READY_TIMEOUT_S
        last = None
        while time.monotonic() < deadline:
            if host.proc.poll() is not None:
                raise FleetError("sshd of %s exited with %s: %s" % (host.name, host.proc.returncode, _tail(host.log)))
            try:
                with socket.create_connection((host.ip, 22), timeout=1) as conn:
                    conn.settimeout(2)
                    banner = conn.recv(64)
                if banner.startswith(b"SSH-2.0-"):
                    return
                last = "unexpected banner %r" % banner
            except OSError as exc:
                last = str(exc)
            time.sleep(0.05)
        raise FleetError("sshd of %s not answering on %s:22 after %ss (%s): %s"
                         % (host.name, host.ip, SSHD_READY_TIMEOUT_S, last, _tail(host.log)))

    # -- teardown steps

    def _stop_tracked(self):
        for popen in self.tracked:
            if popen.poll() is not None:
                continue
            try:
                pgid = os.getpgid(popen.pid)
            except ProcessLookupError:
                pgid = None
            if pgid is not None and pgid == popen.pid:     # started with start_new_session=True
                _signal_group(pgid, signal.SIGTERM)
            else:
                popen.terminate()
            try:
                popen.wait(timeout=TERM_GRACE_S * 2)
            except subprocess.TimeoutExpired:
                if pgid is not None and pgid == popen.pid:
                    _signal_group(pgid, signal.SIGKILL)
                popen.kill()
                popen.wait(timeout=TERM_GRACE_S)
            if pgid is not None and pgid == popen.pid:
                _signal_group(pgid, signal.SIGKILL)     # workers left in the group

    def _close_masters(self):
        """Close Ansible's SSH ControlMaster connections, then kill whatever still names our directory."""
        if os.path.isdir(self.control_path_dir):
            for name in os.listdir(self.control_path_dir):
                sock = os.path.join(self.control_path_dir, name)
                try:
                    _run([self.tools["ssh"], "-F", "/dev/null", "-o", "ControlPath=%s" % sock, "-O", "exit", "fleet-host"],
                         timeout=5, check=False)
                except FleetError:
                    pass        # a wedged master: killed by PID below
                try:
                    os.unlink(sock)
                except FileNotFoundError:
                    pass        # the master removed its socket on exit (a race, not a leftover)
        ns_pids = set(procs_in_netns([h.ns_id for h in self.hosts]))
        controller_pids = [pid for pid in procs_mentioning(self.dir) if pid not in ns_pids]
        survivors = kill_pids(controller_pids)
        if survivors:
            raise FleetError("still alive: %s" % ", ".join(_describe(p) for p in survivors))

    def _stop_hosts(self):
        # a listener reaped before (kill_host) is no longer ours: its PID may be another process's by now
        listeners = set(h.proc.pid for h in self.hosts if h.proc is not None and h.proc.poll() is None)
        pids = procs_in_netns([h.ns_id for h in self.hosts])
        # sessions first, so that their own sshd reaps them; then the listeners
        survivors = kill_pids([p for p in pids if p not in listeners])
        survivors += kill_pids([p for p in pids if p in listeners] + [p for p in listeners if p not in pids])
        for host in self.hosts:
            if host.proc is not None:
                try:
                    host.proc.wait(timeout=TERM_GRACE_S)
                except subprocess.TimeoutExpired:
                    survivors.append(host.proc.pid)
            host.alive = False
        if survivors:
            raise FleetError("still alive: %s" % ", ".join(_describe(p) for p in survivors))

    def _delete_network(self):
        ip = self.tools["ip"] or "ip"
        errors = []
        existing_ns = set(_netns_names())
        for host in self.hosts:
            if os.path.exists("/sys/class/net/%s" % host.veth):
                _collect(errors, [ip, "link", "del", host.veth])
            if host.ns in existing_ns:
                _collect(errors, [ip, "netns", "del", host.ns])
            etc = os.path.join(ETC_NETNS, host.ns)
            if os.path.isdir(etc):
                shutil.rmtree(etc)
        if os.path.exists("/sys/class/net/%s" % self.bridge):
            _collect(errors, [ip, "link", "del", self.bridge])
        if errors:
            raise FleetError("; ".join(errors))

    def _write_state(self):
        if not os.path.isdir(self.dir):
            return
        state = {"owner_pid": os.getpid(), "owner_start": _start_time(os.getpid()), "tag": self.tag,
                 "dir": self.dir, "bridge": self.bridge, "subnet": self.subnet,
                 "hosts": [h.as_state() for h in self.hosts]}
        tmp = os.path.join(self.dir, STATE_FILE + ".tmp")
        with open(tmp, "w") as handle:
            json.dump(state, handle, indent=1)
        os.replace(tmp, os.path.join(self.dir, STATE_FILE))


class Gate(object):
    """Hold a host at its next Python start, so that a test can act while the run is under way.

    Use ``gate.interpreter`` as the host's ``ansible_python_interpreter``: every module
    Ansible starts there first writes a line to ``gate.entered`` (the host's work directory
    is shared with the controller), then waits until ``release()`` (or ``limit_s``) and only
    then becomes the real interpreter, with the same argv and stdin (pipelining works).
    """

    SCRIPT = """#!{python}
# aifabric.acceptance integration-test gate for {host} (throwaway)
import os, sys, time
with open({entered!r}, "a") as handle:
    handle.write("%d %s\\n" % (os.getpid(), " ".join(sys.argv)))
deadline = time.monotonic() + {limit_s!r}
while not os.path.exists({release!r}) and time.monotonic() < deadline:
    time.sleep(0.05)
os.execv({python!r}, [{python!r}] + sys.argv[1:])
"""

    def __init__(self, fleet, name, limit_s=60):
        host = fleet.host(name)
        self.host = name
        self.python = fleet.python
        self.interpreter = os.path.join(host.workdir, "gate-python")
        self.entered = os.path.join(host.workdir, "gate.entered")
        self.release_file = os.path.join(host.workdir, "gate.release")
        with open(self.interpreter, "w") as handle:
            handle.write(self.SCRIPT.format(python=self.python, host=name, entered=self.entered,
                                            release=self.release_file, limit_s=limit_s))
        os.chmod(self.interpreter, 0o755)

    def wait_entered(self, timeout_s, alive=None):
        """Wait until a module started on the host; alive() may say the run already ended."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if os.path.exists(self.entered):
                return True
            if alive is not None and not alive():
                return False
            time.sleep(0.05)
        return False

    def release(self):
        with open(self.release_file, "w") as handle:
            handle.write("released\n")


# ---------------------------------------------------------------- helpers

def _inside(path, directory):
    """True when path is directory or lies below it (both made absolute and normalised)."""
    if not directory:
        return False
    path, directory = os.path.abspath(path), os.path.abspath(directory)
    return os.path.commonpath([path, directory]) == directory


def _real_dir(path):
    return os.path.isdir(path) and not os.path.islink(path)


def _kind(path):
    """"link", "dir", "file" or None (absent)."""
    if os.path.islink(path):
        return "link"
    if os.path.isdir(path):
        return "dir"
    return "file" if os.path.lexists(path) else None


def _sysfs_mounts(root, real_root=SYSFS):
    """(source, target) pairs that lay the fake tree ``root/sys`` over /sys, in mount order.

    sysfs allows no mkdir, so where the fake tree adds a name the real directory lacks
    (/sys/class/infiniband on a machine without RDMA), or has as another kind (a real
    symlink cpuN/cpufreq where the fake tree has a directory), the real directory that
    holds it (/sys/class) is replaced as a whole by its fake copy. That copy is completed here
    first, inside ``root``: for every other real entry an empty directory or file is
    made as a mount point onto which the real one is bound (its submounts with it), and
    real symlinks are copied (relative ones resolve the same once the copy is in place).
    A fake file that exists in /sys is bound over the real one. The sources are read
    in the host's own namespace, so a bound /sys/class/net lists that host's interfaces;
    a fake tree that would need a copy of a directory listed per network namespace
    (SYSFS_PER_NETNS) is refused. Only the mounts run in the host's namespace; the
    mount points are made here, in the controller's view, inside ``root``.
    """
    fake_sys = os.path.join(root, "sys")
    others = sorted(set(os.listdir(root)) - {"sys"})
    if others or not _real_dir(fake_sys):
        raise FleetError("a sysfs view holds sys/ and nothing else: %s has %s" % (root, others or "no sys/"))
    fills, tops = [], []

    def complete(fake, real):
        if real in SYSFS_PER_NETNS:
            raise FleetError("cannot fake entries of %s: what it lists differs per network namespace" % real)
        for name in sorted(os.listdir(real)):
            f, r = os.path.join(fake, name), os.path.join(real, name)
            if os.path.lexists(f):
                if _real_dir(f) and _real_dir(r):
                    complete(f, r)
                continue                        # the fake entry wins
            if os.path.islink(r):
                os.symlink(os.readlink(r), f)
            elif os.path.isdir(r):
                os.mkdir(f)
                fills.append((r, f))
            else:
                with open(f, "w"):
                    pass
                fills.append((r, f))

    def walk(fake, real):
        names = sorted(os.listdir(fake))
        # a name the real directory lacks, or has as another kind (a symlink where the fake tree has a directory,
        # as cpuN/cpufreq -> ../cpufreq/policyN), or a symlink (a mount cannot replace one): replace the whole
        # directory by its completed fake copy
        if any(_kind(os.path.join(real, name)) != _kind(os.path.join(fake, name)) or _kind(os.path.join(fake, name))
               == "link" for name in names):
            complete(fake, real)
            tops.append((fake, real))
            return
        for name in names:
            f, r = os.path.join(fake, name), os.path.join(real, name)
            if _kind(f) == "dir":
                walk(f, r)
            else:
                tops.append((f, r))             # a plain file over a plain file

    walk(fake_sys, real_root)
    return fills + tops


def _collect(errors, argv):
    try:
        _run(argv)
    except FleetError as exc:
        errors.append(str(exc))


def _signal_group(pgid, sig):
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass


def _tail(path, lines=15):
    try:
        with open(path, "r", errors="replace") as handle:
            return " | ".join(handle.read().splitlines()[-lines:])
    except OSError as exc:
        return "(no log: %s)" % exc


def _netns_names():
    out = _run([find_tool("ip") or "ip", "netns", "list"]).stdout
    # "name" or "name (id: 3)"
    return [line.split()[0] for line in out.splitlines() if line.strip()]


def _free_subnet():
    """A random 10.213.X.0/24 that no address or route of this machine overlaps."""
    ip = find_tool("ip") or "ip"
    used = _run([ip, "-4", "-o", "addr", "show"]).stdout + _run([ip, "-4", "route", "show", "table", "all"]).stdout
    candidates = list(range(1, 255))
    # parallel workers of one pytest run (pytest -n: PYTEST_XDIST_WORKER gw0, gw1, ...) pick from disjoint thirds,
    # so two fleets brought up at the same moment never both take the subnet that was free when each looked
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    if worker.startswith("gw") and worker[2:].isdigit():
        candidates = [third for third in candidates if third % XDIST_SLICES == int(worker[2:]) % XDIST_SLICES]
    random.shuffle(candidates)
    for third in candidates:
        if "%s.%d." % (SUBNET_BASE, third) not in used:
            return "%s.%d.0/24" % (SUBNET_BASE, third)
    raise FleetError("no free %s.X.0/24 left" % SUBNET_BASE)


def _start_time(pid):
    """Start time of a process in clock ticks since boot (tells a reused PID apart)."""
    try:
        with open("/proc/%d/stat" % pid, "rb") as handle:
            data = handle.read()
    except OSError:
        return None
    fields = data[data.rfind(b")") + 2:].split()
    return int(fields[19])


def own_state(base_dir, entry, state_file, prefix):
    """The state a dead run of ours left in ``base_dir/entry``, or None when it may not be trusted.

    Reaping runs as root and deletes what the state names, so a state is believed only when its directory is a real
    directory (not a link) of this user that nobody else can write, its file a regular file of this user that nobody
    else can write (opened without following a link), and its tag this entry's own (the names it lists are then
    checked against the tag by the caller). Anything else (planted by another user in a shared /tmp) is left alone.
    """
    import stat     # pylint: disable=import-outside-toplevel
    directory = os.path.join(base_dir, entry)
    try:
        info = os.lstat(directory)
        if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
            return None
        fd = os.open(os.path.join(directory, state_file), os.O_RDONLY | os.O_NOFOLLOW)
        with os.fdopen(fd) as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_uid != os.geteuid() or info.st_mode & 0o022:
                return None
            state = json.load(handle)
    except (OSError, ValueError):
        return None
    tag = state.get("tag") if isinstance(state, dict) else None
    if not isinstance(tag, str) or not tag.startswith(prefix) or not entry.startswith(tag):
        return None
    return state


def _names_are_the_fleets(state):
    """Every directory, link and namespace the fleet state names is the fleet's own (its dir, names with its tag)."""
    tag = state["tag"]
    names = [state.get("bridge")] + [h.get(k) for h in state.get("hosts") or [] for k in ("ns", "veth", "peer")]
    return all(isinstance(n, str) and n.startswith(tag) for n in names if n is not None)


def reap_stale(base_dir=None):
    """Tear down fleets whose owning process is gone (a test run killed before its teardown).

    Returns the tags of the fleets removed. Fleets of live processes are left alone, and so is anything whose state
    may not be trusted (own_state): another user's directory, a link, names that are not the fleet's own.
    """
    base_dir = base_dir or tempfile.gettempdir()
    removed = []
    for entry in sorted(os.listdir(base_dir)):
        if not entry.startswith(PREFIX):
            continue
        state = own_state(base_dir, entry, STATE_FILE, PREFIX)
        if state is None or os.path.realpath(str(state.get("dir"))) != os.path.realpath(os.path.join(base_dir, entry)) \
                or not _names_are_the_fleets(state):
            continue
        owner = state.get("owner_pid")
        if owner and _alive(owner) and _start_time(owner) == state.get("owner_start"):
            continue
        fleet = Fleet.from_state(state)
        # the listeners are not our children: kill them by PID through their namespace
        try:
            fleet.down()
        finally:
            fleet.release()
        removed.append(fleet.tag)
    return removed
