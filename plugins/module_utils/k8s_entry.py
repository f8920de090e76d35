# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The program every pod of the Kubernetes path runs, inside the USER's image (private).

It travels in the run's ConfigMap next to the collection's own module_utils files
(env probe, parsers, results) laid out as their package tree under ``LIB``, so the
pod runs the very same code the SSH path runs; the image only needs ``python3``
(3.8+) besides the tools under test. Commands::

    python3 aifabric_k8s_entry.py env   --spec JSON   # env_probe.probe() -> one RECORDS line
    python3 aifabric_k8s_entry.py adapter --spec JSON # tools.<dcgm_diag|port_counters|fabric_topology>.records(host) -> one RECORDS line
    python3 aifabric_k8s_entry.py run   --spec JSON   # tool argvs, each output framed by markers
    python3 aifabric_k8s_entry.py sshd  --spec JSON   # worker of the no-operator multi-node path
    python3 aifabric_k8s_entry.py indexed --spec JSON # Indexed Job pod: index 0 launches, the others serve sshd

``run`` frames the output of each step as the tool printed it (pod log text = tool
text), so the controller cuts the log at the markers and hands each piece to the
same parser as the SSH path::

    AIFABRIC_BEGIN <label>
    ...the tool's stdout and stderr...
    AIFABRIC_END <label> {"rc": 0, "timed_out": false, "attempts": 1, "elapsed_s": 12.3}

A ``run`` spec may first wait until peer hosts resolve and answer on a TCP port
(``wait_hosts``/``wait_port``/``wait_s``: rank 0 of an MPI launch waits for every
worker's sshd - the names of ``wait_hostfile`` when it exists -, a perftest client for its
server pod's ``alive_port``), retry a step while its failure is perftest's "cannot connect yet"
(``retry_until_s``), and keep a TCP port open while it runs (``alive_port``), which
the ``sshd`` workers watch to know when to stop. Every process has a timeout and is
killed on every path (a SIGTERM/SIGINT/SIGHUP stops every child, prints an ``interrupted_by_signal`` NOTE and
exits 128 + the signal: proc.interrupt_guard). Standard library and the collection's own module_utils that
the ConfigMap ships (k8s_plan.CODE_MODULES) only; imports nothing from Ansible.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import sys
import tempfile
import threading
import time

LIB = "/opt/aifabric/lib"          # where the ConfigMap lays out ansible_collections/aifabric/acceptance/...
BEGIN = "AIFABRIC_BEGIN "
END = "AIFABRIC_END "
RECORDS = "AIFABRIC_RECORDS "
NOTE = "AIFABRIC_NOTE "
KILL_GRACE_S = 5


_OUT = threading.RLock()            # one writer at a time: parallel steps print whole sections
_STOPPING = threading.Event()       # a signal arrived: no step prints any more (its tool was killed, not done)
_IN_FLIGHT = {}                     # label -> (time.monotonic() it started, its BEGIN line printed) of running steps


def say(text):
    with _OUT:
        sys.stdout.write(text + "\n")
        sys.stdout.flush()


_CHILDREN = set()


def run_argv(argv, timeout_s, merge=False, env=None):
    """Run one argv with a timeout (proc.spawn: its process group killed on timeout or interrupt): a runner.Run.
    The pod's environment as it is (``env``: the whole environment), no locale of the collection's."""
    from ansible_collections.aifabric.acceptance.plugins.module_utils.proc import PIPE, STDOUT, decode, spawn
    from ansible_collections.aifabric.acceptance.plugins.module_utils.runner import Run

    t0 = time.monotonic()
    try:
        child = spawn(argv, timeout_s, env=env, stderr=STDOUT if merge else PIPE, kill_after_s=KILL_GRACE_S,
                      locale=False)
    except OSError as exc:
        return Run(argv, 127, "", "%s: %s\n" % (argv[0], exc), time.monotonic() - t0)
    _CHILDREN.add(child)
    try:
        out, err = child.communicate()
    finally:
        _CHILDREN.discard(child)
    (out, bad_out), (err, bad_err) = decode(out), decode(err)
    return Run(argv, child.rc, out, err, time.monotonic() - t0, undecodable=bad_out + bad_err,
               timed_out=child.timed_out)


def _on_signal(signum):
    """Run inside proc.interrupt_guard's handler: stop every child, say so, exit 128 + signum. SystemExit, not
    Interrupted: nothing on the way out (the env probe's error handling) may take it for a tool's failure.

    The sections of the steps that ended are already in the log (print_section flushed each one when its step
    ended); each step still running gets a line saying it was interrupted (after its BEGIN line: a step run on its
    own printed it when it started), never an END line, so the controller's parser (k8s_plan.split_sections)
    reads it as cut off while it ran."""
    _STOPPING.set()
    for child in list(_CHILDREN):
        child.kill(KILL_GRACE_S)
    with _OUT:
        running = sorted(_IN_FLIGHT.items(), key=lambda item: item[1][0])

        def why(since):
            return "interrupted by signal %d after %.1f s: this step did not finish" % (signum, time.monotonic() - since)
        for label, (since, begun) in running:
            if begun:
                say(why(since))
        say(NOTE + json.dumps({"interrupted_by_signal": signum}))
        for label, (since, begun) in running:
            if not begun:
                say(BEGIN + label)
                say(why(since))
    raise SystemExit(128 + signum)


# --------------------------------------------------------------------------- env

def host_run(argv, timeout_s):
    """A probe_host.Host's ``run`` in this container: C locale, a timeout (ToolTimeout), the process group killed."""
    run = run_argv(argv, timeout_s, env=dict(os.environ, LC_ALL="C", LANG="C"))
    if run.timed_out:
        from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import ToolTimeout
        raise ToolTimeout("%s timed out after %ss" % (argv[0], timeout_s),
                          rc=run.rc, stdout_tail=run.stdout[-2000:], stderr_tail=run.stderr[-2000:])
    return run


def cmd_env(spec):
    """Run the collection's env probe (module_utils/env_probe.py) in this container; print its records."""
    from ansible_collections.aifabric.acceptance.plugins.module_utils import env_probe, probe_host  # noqa: E402

    host = probe_host.Host(run=host_run, which=shutil.which, executable=sys.executable)
    records = env_probe.probe(host, spec.get("params") or {})
    say(RECORDS + json.dumps(records, sort_keys=True))
    return 0


# the adapters that read the node itself (``records(host, params)``) and run in a pod of their own
HOST_ADAPTERS = ("dcgm_diag", "port_counters", "fabric_topology")


def cmd_adapter(spec):
    """Run one host-reading tool adapter (tools/<adapter>.py ``records(host, params)``, HOST_ADAPTERS) in this
    container, as its SSH module runs it on a host; print its records. ``root``: where sysfs is read (tests)."""
    import importlib  # noqa: E402
    from ansible_collections.aifabric.acceptance.plugins.module_utils import probe_host  # noqa: E402

    if spec.get("adapter") not in HOST_ADAPTERS:
        raise SystemExit("adapter %r is not one of %s" % (spec.get("adapter"), ", ".join(HOST_ADAPTERS)))
    adapter = importlib.import_module("ansible_collections.aifabric.acceptance.plugins.module_utils.tools."
                                      + spec["adapter"])
    host = probe_host.Host(run=host_run, which=shutil.which, executable=sys.executable, root=spec.get("root") or "")
    records = adapter.records(host, spec.get("params") or {})
    say(RECORDS + json.dumps(records, sort_keys=True))
    return 0


# --------------------------------------------------------------------------- run

def hostfile_hosts(text):
    """The host names of an Open MPI hostfile's text (``name slots=N`` lines, mpi-operator's; ``name:N`` too;
    comments and blank lines skipped), in order."""
    out = []
    for line in (text or "").splitlines():
        words = line.split("#", 1)[0].split()
        if words:
            out.append(words[0].split(":", 1)[0])
    return out


def wait_hosts_of(spec):
    """The hosts a run waits for: those of ``wait_hostfile`` when that file exists (the operator's names, whatever
    its version), else ``wait_hosts``."""
    path = spec.get("wait_hostfile")
    if path and os.path.isfile(path):
        with open(path) as handle:
            names = hostfile_hosts(handle.read(1 << 20))
        if names:
            return names
    return spec.get("wait_hosts") or []


def wait_for_peers(hosts, port, wait_s):
    """Block until every host resolves and accepts a TCP connection on port; returns the missing ones."""
    deadline = time.monotonic() + wait_s
    missing = list(hosts)
    while missing and time.monotonic() < deadline:
        for host in list(missing):
            try:
                with socket.create_connection((host, port), timeout=2):
                    missing.remove(host)
            except (OSError, socket.error):
                pass
        if missing:
            time.sleep(1)
    return missing


INDEX_WORD = "{JOB_COMPLETION_INDEX}"
RESULT_WORD = "{RESULT_DIR}"
_RESULT_DIR = []


def result_dir():
    """This program's private directory for the files its tools write (``tempfile.mkdtemp``: 0700, a random name,
    never a fixed name in a shared directory), made on first use, removed when ``cmd_run`` ends."""
    if not _RESULT_DIR:
        _RESULT_DIR.append(tempfile.mkdtemp(prefix="aifabric-"))
    return _RESULT_DIR[0]


def expand(word, environ=None):
    """``word`` with ``{JOB_COMPLETION_INDEX}`` replaced by this Indexed Job pod's index and ``{RESULT_DIR}`` by
    result_dir()."""
    environ = os.environ if environ is None else environ
    word = str(word).replace(INDEX_WORD, environ.get("JOB_COMPLETION_INDEX", "0"))
    return word.replace(RESULT_WORD, result_dir()) if RESULT_WORD in word else word


def step_argv(step, environ=None, which=shutil.which):
    """The step's argv, each word expanded (``expand``: the Indexed Job pod's index, the result directory); an mpirun
    step's (``mpirun`` in the step) as this pod runs it (``mpirun_argv``)."""
    environ = os.environ if environ is None else environ
    argv = [expand(w, environ) for w in step["argv"]]
    if step.get("mpirun"):
        argv = mpirun_argv(argv, step["mpirun"], environ, which)
    return argv


# where sshd's non-interactive sessions look for commands (OpenSSH's default PATH, _PATH_STDPATH and the
# distributions' --with-default-path): orted, started by the remote shell, is found only there
SSHD_PATH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")


def _forwarded(argv):
    """The names an mpirun argv already exports (``-x NAME`` or ``-x NAME=VALUE``)."""
    return set(argv[i + 1].split("=", 1)[0] for i in range(len(argv) - 1) if argv[i] == "-x")


def mpirun_argv(argv, how, environ, which=shutil.which):
    """An mpirun argv as this launcher pod runs it:

    - mpirun by its absolute path, and ``--prefix`` its installation when that is not on sshd's non-interactive
      PATH (NGC/HPC-X images: /usr/local/mpi, /opt/hpcx/ompi): Open MPI then starts the remote daemon (orted,
      prted) as ``<prefix>/bin/...`` with ``<prefix>/lib`` on LD_LIBRARY_PATH, where a bare ``orted`` is not found;
      an argv that names ``--prefix`` already is kept;
    - ``-x NAME`` for every variable of this pod whose name starts with one of ``how["forward_prefixes"]``
      (NCCL_*, UCX_*: the pod's env and its env_from_configmaps alike) that the argv does not export already:
      ranks started through sshd get a fresh environment, and the same name is wanted on every rank."""
    out = list(argv)
    path = out[0] if os.path.isabs(out[0]) else which(out[0], path=environ.get("PATH"))
    extra = []
    if path and how.get("prefix"):
        out[0] = path
        directory = os.path.dirname(os.path.abspath(path))
        if directory not in SSHD_PATH and "--prefix" not in out:
            extra += ["--prefix", os.path.dirname(directory)]
    given = _forwarded(out)
    prefixes = tuple(how.get("forward_prefixes") or ())
    for name in sorted(environ):
        if prefixes and name.startswith(prefixes) and name not in given:
            extra += ["-x", name]
    return out[:1] + extra + out[1:]


def _retryable(run):
    """A perftest client step (the only kind with ``retry_until_s``) whose server does not answer yet: the adapter's
    one retry decision (tools.perftest_sweep.read_output), as on the SSH path."""
    from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import perftest_sweep as perftest  # the pod's code tree
    return perftest.read_output(run.output, run.rc, run.timed_out).retry


def run_step(step):
    deadline = time.monotonic() + float(step.get("retry_until_s") or 0)
    attempts = 0
    argv = step_argv(step)
    if step.get("mpirun"):       # the argv as run (the record's params.argv)
        step["info"] = dict(step.get("info") or {}, argv=argv)
    while True:
        attempts += 1
        run = run_argv(argv, float(step.get("timeout_s") or 600), merge=True)
        if run.timed_out or run.rc == 0 or not step.get("retry_until_s") or _STOPPING.is_set():
            break
        if time.monotonic() + float(step.get("retry_delay_s") or 1) >= deadline or not _retryable(run):
            break
        time.sleep(float(step.get("retry_delay_s") or 1))
    return run, attempts


def perftest_steps(spec):
    """The steps of one perftest side, planned in this pod exactly as the SSH path plans them on the host: the
    TCP port of each rail, the GID (RoCE v2 from this node's sysfs unless given) and the port rate facts
    (tools.perftest_sweep.device_plan), then one argv per rail (tools.perftest_sweep.argvs_for). A plan that cannot be made
    (a RoCE port without a usable GID) gives a step that prints why and fails."""
    from ansible_collections.aifabric.acceptance.plugins.module_utils import probe_host
    from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import rdma
    from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import perftest_sweep as perftest
    params = spec["params"]
    try:
        files = probe_host.read_infiniband(probe_host.Host(root=spec.get("sysfs_root") or ""))
        hcas = rdma.build_hcas(files) if files else None
        plan = perftest.device_plan(params["hcas"], params, hcas)
    except Exception as exc:  # pylint: disable=broad-except
        return [{"label": d, "argv": [sys.executable, "-c", "import sys; sys.exit(%r)" % ("perftest plan: %s" % exc)],
                 "timeout_s": 10, "info": {"plan_error": str(exc)}} for d in params["hcas"]]
    argvs = perftest.argvs_for(spec["binary"], params, plan, spec["side"], peer_address=spec.get("peer_address"))
    steps = []
    for (_index, device, _port, _gid, facts), argv in zip(plan, argvs):
        step = {"label": device, "argv": argv, "timeout_s": spec["timeout_s"], "info": {"facts": facts, "argv": argv}}
        if spec["side"] == "client":
            step.update({"retry_until_s": spec["connect_timeout_s"], "retry_delay_s": 1})
        steps.append(step)
    return steps


def _lines(text):
    return text if text.endswith("\n") or not text else text + "\n"


def print_section(step, run, attempts, begun=False):
    """Print and flush one step's section (and its ``.file`` section) at once, as soon as the step ended (its
    BEGIN line too unless ``begun``): a SIGTERM later (deadline, eviction, the module's cleanup) keeps it in the
    log. Nothing once a signal arrived: a tool killed by it did not end by itself, its section stays cut off."""
    info = {"rc": run.rc, "timed_out": run.timed_out, "attempts": attempts, "elapsed_s": round(run.elapsed_s, 3)}
    info.update(step.get("info") or {})
    parts = ([] if begun else [BEGIN + step["label"] + "\n"]) + [
        _lines(run.output), END + step["label"] + " " + json.dumps(info, sort_keys=True) + "\n"]
    result_file = expand(step["result_file"]) if step.get("result_file") else None
    if result_file and os.path.isfile(result_file):
        # a document the tool wrote (the probe's -J style JSON): framed as <label>.file
        with open(result_file, "rb") as handle:
            text = handle.read(16 << 20).decode("utf-8", "replace")
        parts.extend([BEGIN + step["label"] + ".file\n", _lines(text), END + step["label"] + ".file {}\n"])
    with _OUT:
        if _STOPPING.is_set():
            return False
        sys.stdout.write("".join(parts))
        sys.stdout.flush()
        _IN_FLIGHT.pop(step["label"], None)
    return True


def _run_and_print(step, begin=False):
    """Run one step and print its section; with ``begin`` (a step run on its own) its BEGIN line first, so the log
    names the running step even before anything stops it (a pod deleted with its log keeps what was read)."""
    with _OUT:
        _IN_FLIGHT[step["label"]] = (time.monotonic(), begin)
        if begin:
            sys.stdout.write(BEGIN + step["label"] + "\n")
            sys.stdout.flush()
    run, attempts = run_step(step)
    print_section(step, run, attempts, begun=begin)


def run_steps(steps, parallel=False):
    """Run the steps one after the other (or all at once with ``parallel``); each prints its section when it ends.
    Parallel steps run in daemon threads (a signal ends the program without waiting for them) and print whole
    sections; a step run on its own prints its BEGIN line when it starts."""
    if parallel and len(steps) > 1:
        threads = [threading.Thread(target=_run_and_print, args=(step,)) for step in steps]
        for thread in threads:
            thread.daemon = True
            thread.start()
        for thread in threads:
            thread.join()
        return
    for step in steps:
        _run_and_print(step, begin=True)


def _alive(port, stop):
    """Accept (and drop) connections on port until stop is set: workers poll it."""
    server = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("0.0.0.0", port))
    server.listen(64)
    server.settimeout(0.5)
    while not stop.is_set():
        try:
            conn, _addr = server.accept()
            conn.close()
        except socket.timeout:
            continue
        except OSError:
            break
    server.close()


def cmd_run(spec):
    stop = threading.Event()
    alive = None
    if spec.get("alive_port"):
        alive = threading.Thread(target=_alive, args=(int(spec["alive_port"]), stop))
        alive.daemon = True
        alive.start()
    try:
        steps = spec.get("steps") or []
        if spec.get("perftest"):
            steps = perftest_steps(spec["perftest"])
        if spec.get("wait_hosts"):
            missing = wait_for_peers(wait_hosts_of(spec), int(spec.get("wait_port") or 22),
                                     float(spec.get("wait_s") or 300))
            if missing:
                say(NOTE + json.dumps({"peers_missing": missing, "port": spec.get("wait_port"),
                                       "waited_s": spec.get("wait_s")}))
                for step in steps:
                    say(BEGIN + step["label"])
                    say("peers did not answer on port %s within %ss: %s"
                        % (spec.get("wait_port"), spec.get("wait_s"), ", ".join(missing)))
                    say(END + step["label"] + " " + json.dumps({"rc": None, "timed_out": False, "attempts": 0,
                                                                "elapsed_s": 0, "peers_missing": missing}))
                return 3
        run_steps(steps, parallel=spec.get("parallel"))
        return 0
    finally:
        stop.set()
        if alive is not None:
            alive.join(2)
        if _RESULT_DIR:
            shutil.rmtree(_RESULT_DIR.pop(), ignore_errors=True)


# --------------------------------------------------------------------------- sshd (multi-node workers)

SSHD_CONFIG = """Port {port}
HostKey {key}
AuthorizedKeysFile {authorized}
PasswordAuthentication no
KbdInteractiveAuthentication no
PermitRootLogin prohibit-password
StrictModes no
UsePAM {use_pam}
PidFile {pidfile}
"""


def sshd_use_pam(user=None, shadow="/etc/shadow", pam_config="/etc/pam.d/sshd"):
    """UsePAM of the workers' sshd: ``yes`` when the account's password is locked (a leading '!' in the shadow
    file, root on RHEL/UBI images) and the image configures PAM for sshd - with UsePAM no OpenSSH refuses every
    login to a locked account, key logins included (auth.c allowed_user), with PAM a locked password only disables
    passwords; else ``no`` (no PAM set-up needed). Returns (value, the locked account's name or None)."""
    import pwd
    try:
        name = user or pwd.getpwuid(os.getuid()).pw_name
    except KeyError:        # a UID the image's passwd does not name: sshd cannot log it in anyway
        return "no", None
    locked = False
    try:
        with open(shadow) as handle:
            for line in handle:
                fields = line.rstrip("\n").split(":")
                if fields[0] == name and len(fields) > 1:
                    locked = fields[1].startswith("!")
                    break
    except OSError:
        return "no", None
    if not locked:
        return "no", None
    return ("yes" if os.path.isfile(pam_config) else "no"), name


def start_sshd(spec):
    """Write an sshd config from the per-run Secret's key pair and start ``sshd -D`` (returns the process).

    ``spec``: ``port``, ``keys_dir``, and the file names there of the private key (``host_key``, it serves as the
    host key too) and of the authorized keys (``authorized_keys``); default the Secret's id_ed25519(.pub)."""
    work = spec.get("work_dir") or tempfile.mkdtemp(prefix="aifabric-sshd-")    # private: 0700, a random name
    if not os.path.isdir(work):
        os.makedirs(work, 0o700)
    key = os.path.join(work, "host_key")
    # the per-run Secret's names; an operator's mounted keys name theirs (mpi-operator, Volcano: id_rsa, authorized_keys)
    shutil.copyfile(os.path.join(spec["keys_dir"], spec.get("host_key") or "id_ed25519"), key)
    os.chmod(key, 0o600)
    authorized = os.path.join(work, "authorized_keys")
    shutil.copyfile(os.path.join(spec["keys_dir"], spec.get("authorized_keys") or "id_ed25519.pub"), authorized)
    os.chmod(authorized, 0o600)
    config = os.path.join(work, "sshd_config")
    use_pam, locked = sshd_use_pam()
    if locked:
        say(NOTE + json.dumps({"sshd_account_locked": locked, "use_pam": use_pam}))
    with open(config, "w") as handle:
        handle.write(SSHD_CONFIG.format(port=int(spec["port"]), key=key, authorized=authorized, use_pam=use_pam,
                                        pidfile=os.path.join(work, "sshd.pid")))
    if not os.path.isdir("/run/sshd"):
        os.makedirs("/run/sshd", 0o755)
    sshd = shutil.which("sshd") or "/usr/sbin/sshd"
    from ansible_collections.aifabric.acceptance.plugins.module_utils.proc import spawn
    # its output goes to the pod log as before (the entry program's own stdout and stderr); it lives while the pod
    # serves (killed on every path below), at most the pod's wait plus a minute
    child = spawn([sshd, "-D", "-e", "-f", config], float(spec.get("wait_s") or 3600) + 60, stdout=None, stderr=None,
                  kill_after_s=KILL_GRACE_S, locale=False)
    _CHILDREN.add(child)
    return child


def cmd_sshd(spec):
    """Serve sshd for the launcher until its alive port was seen and has closed (or the deadline)."""
    proc = start_sshd(spec)
    host, port = spec["alive"].rsplit(":", 1)
    deadline = time.monotonic() + float(spec.get("wait_s") or 3600)
    seen = False
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            try:
                with socket.create_connection((host, int(port)), timeout=2):
                    seen = True
            except (OSError, socket.error):
                if seen:
                    say(NOTE + json.dumps({"launcher_done": True}))
                    return 0
            time.sleep(2)
        if proc.poll() is not None:
            say(NOTE + json.dumps({"sshd_exited": proc.rc}))
            return 4
        say(NOTE + json.dumps({"launcher_not_done_by_deadline": True, "seen": seen}))
        return 5
    finally:
        proc.kill(KILL_GRACE_S)
        _CHILDREN.discard(proc)


def cmd_indexed(spec):
    """Indexed Job pod: index 0 serves sshd too and launches (``launcher`` run spec); the others serve sshd."""
    if os.environ.get("JOB_COMPLETION_INDEX", "") != "0":
        return cmd_sshd(spec["worker"])
    launcher = dict(spec["launcher"])
    proc = start_sshd(launcher.pop("sshd"))
    try:
        return cmd_run(launcher)
    finally:
        proc.kill(KILL_GRACE_S)
        _CHILDREN.discard(proc)


COMMANDS = {"env": cmd_env, "adapter": cmd_adapter, "run": cmd_run, "sshd": cmd_sshd, "indexed": cmd_indexed}


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if len(argv) != 3 or argv[0] not in COMMANDS or argv[1] != "--spec":
        sys.stderr.write("usage: aifabric_k8s_entry.py %s --spec JSON\n" % "|".join(sorted(COMMANDS)))
        return 2
    spec = json.loads(argv[2])
    # the collection's module_utils, as the code ConfigMap lays them out (a perftest spec names it for its side)
    sys.path.insert(0, spec.get("lib") or (spec.get("perftest") or {}).get("lib") or LIB)
    from ansible_collections.aifabric.acceptance.plugins.module_utils.proc import interrupt_guard  # noqa: E402

    with interrupt_guard(on_signal=_on_signal):
        return COMMANDS[argv[0]](spec)


if __name__ == "__main__":
    raise SystemExit(main())
