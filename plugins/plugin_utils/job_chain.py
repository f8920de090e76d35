# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Several modules as async jobs that run one after the other on a host, started in one call (private).

The GPU stage runs its checks one after the other on each host (they share the GPUs) and on every host at once. As a
job of its own each check was a start and a wait on every host: two tasks a host and check, each a worker process and
the strategy's work on the controller, and at fewer forks than hosts a wave of starts and a wave of waits per check.
Here one call starts them all: the host's interpreter reads :data:`CHAIN` on its standard input with every job's
module (its AnsiballZ payload, built by the controller as for any module) and ``async_wrapper``, writes each job's pair
into a temporary directory of its own under the shell's ``remote_tmp`` (``async_wrapper`` removes it when that job
ends), writes a "running" file for every job under the id the controller gave it (``ansible_job_id``: what its wait
polls), answers with the ids and leaves a daemon (its own session) behind that, for each job in order, runs
``async_wrapper`` as ansible-core runs it for an async start (its time limit, its kill of the module's process group
at that limit, its job file), waits for that job's file to hold the job's result, and moves the result under the
job's own id. Each job's result is thus exactly what ansible-core's async start of that module would have left,
read by aifabric.acceptance.job_wait as any job's.

A job whose result failed (``failed``: the module failed, ``async_wrapper``'s "Timeout exceeded", output it could
not read) ends the chain: every later job's result is ``skipped`` ("not run: ..."), as a host whose task failed runs
no further task. A job whose ``async_wrapper`` gives no result within its limit + ``GRACE_S`` is failed by the chain.
Python 3 on the host (the collection's modules need it). Controller only; the program runs on the host.
"""

from __future__ import annotations

from ansible_collections.aifabric.acceptance.plugins.plugin_utils.one_call_start import packed

GRACE_S = 60        # past a job's time limit: async_wrapper's kill and its "Timeout exceeded" file come within ~6 s
POLL_S = 0.5        # how often the chain reads the running job's file

# The program the host's interpreter reads on its standard input. async_job's source comes before it (its status():
# a job file as async_status reads it).
CHAIN = r"""
import base64, select, shutil, subprocess, sys, tempfile, zlib
_jobs = %(jobs)r            # [(id, time limit s, module file name, async_wrapper's arguments), ...]
_wrapper_name = %(wrapper_name)r
_packed = {"wrapper": %(wrapper)r, "modules": %(modules)r}
_grace_s, _poll_s = %(grace_s)r, %(poll_s)r


def _write(path, text):
    # a new file of this user's (a link or file planted under the name is refused, not followed), then the rename
    # async_wrapper's own write makes
    if os.path.lexists(path + ".tmp"):
        os.unlink(path + ".tmp")
    fd = os.open(path + ".tmp", os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0), 0o600)
    with os.fdopen(fd, "w") as out:
        out.write(text)
    os.rename(path + ".tmp", path)


def _stage(top, async_dir):
    staged = []
    try:
        for (jid, limit, module_name, argv), module in zip(_jobs, _packed["modules"]):
            where = tempfile.mkdtemp(prefix="ansible-tmp-aif-", dir=top)
            staged.append((jid, limit, where, None))
            paths = []
            for name, data in ((_wrapper_name, _packed["wrapper"]), (module_name, module)):
                path = os.path.join(where, name)
                with open(path, "wb") as out:
                    out.write(zlib.decompress(base64.b64decode(data)))
                os.chmod(path, 0o700)
                paths.append(path)
            argv = [a.replace("{module}", paths[1]).replace("{python}", sys.executable) for a in argv]
            staged[-1] = (jid, limit, where, [sys.executable, paths[0]] + argv)
        for jid, _limit, _where, _argv in staged:     # what async_wrapper writes first: the job is running
            _write(os.path.join(async_dir, jid), json.dumps({"started": 1, "finished": 0, "ansible_job_id": jid}))
    except BaseException:
        for jid, _limit, where, _argv in staged:
            shutil.rmtree(where, True)
            for path in (os.path.join(async_dir, jid), os.path.join(async_dir, jid) + ".tmp"):
                if os.path.lexists(path):
                    os.unlink(path)
        raise
    return staged


def _run(async_dir, jid, limit, argv):
    # async_wrapper answers once its job started (its own daemon): the job's real id is in that answer
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        out = proc.communicate(timeout=_grace_s)[0]
    except subprocess.TimeoutExpired:
        proc.kill()         # its pipe is not read again: a process that kept it open would hold the chain
        proc.wait()
        return json.dumps({"failed": True, "msg": "async_wrapper did not answer within %%s s" %% _grace_s})
    try:
        lines = [l for l in out.decode("utf-8", "replace").splitlines() if l.startswith("{")]
        real = json.loads(lines[-1])["ansible_job_id"]
    except Exception as exc:
        return json.dumps({"failed": True, "msg": "async_wrapper did not start this job (rc %%s): %%s: %%.300s" %% (
            proc.returncode, exc, out)})
    path = os.path.join(async_dir, real)
    deadline = time.monotonic() + float(limit) + _grace_s
    while True:
        _data, done = status(real, path)
        if done:
            with open(path) as handle:
                text = handle.read()
            os.unlink(path)
            return text
        if time.monotonic() >= deadline:
            return json.dumps({"failed": True, "msg": "the job gave no result within its time limit (%%s s) + %%s s "
                               "(its async_wrapper %%s, job file %%s)" %% (limit, _grace_s, real, path)})
        time.sleep(_poll_s)


def _chain(async_dir, staged):
    why_not = None
    for jid, limit, where, argv in staged:
        target = os.path.join(async_dir, jid)
        if why_not:
            shutil.rmtree(where, True)
            _write(target, json.dumps({"skipped": True, "changed": False, "msg": "not run: " + why_not}))
            continue
        try:
            text = _run(async_dir, jid, limit, argv)
        except Exception as exc:    # never a chain that stops without a result: its waits would wait to their end
            text = json.dumps({"failed": True, "msg": "the chain failed running this job: %%r" %% (exc,)})
        _write(target, text)
        try:
            result = json.loads(text)
        except ValueError:
            result = {"failed": True}
        if not isinstance(result, dict) or result.get("failed"):
            msg = str(result.get("msg") if isinstance(result, dict) else "")[:300]
            why_not = "job %%s of this host's chain failed before it%%s" %% (jid, ": " + msg if msg else "")


_top = os.path.expanduser(%(remote_tmp)r)
_async_dir = os.path.expanduser(os.environ.get("ANSIBLE_ASYNC_DIR", "~/.ansible_async"))
for _d in (_top, _async_dir):
    if not os.path.isdir(_d):
        os.makedirs(_d, 0o700, exist_ok=True)     # hosts may share it (another chain made it meanwhile)
_staged = _stage(_top, _async_dir)
# the daemon: its own session, its standard streams /dev/null. This process answers (and the call ends) once the daemon
# said it is out of the call's session - as async_wrapper does: a process still in it when the call ends can be gone
# with it (seen on an SSH host: a chain staged, never run)
_ready_r, _ready_w = os.pipe()
if os.fork():
    os.close(_ready_w)
    select.select([_ready_r], [], [], _grace_s)
    sys.stdout.write(json.dumps({"started": 1, "finished": 0, "changed": True, "ansible_job_id": _jobs[0][0],
                                 "jobs": [j[0] for j in _jobs]}))
    sys.stdout.flush()
    os._exit(0)
os.close(_ready_r)
os.setsid()
if os.fork():
    os._exit(0)
_null = os.open(os.devnull, os.O_RDWR)
for _fd in (0, 1, 2):
    os.dup2(_null, _fd)
os.write(_ready_w, b"1")
os.close(_ready_w)
try:
    _chain(_async_dir, _staged)
finally:
    os._exit(0)
"""


def program(async_job_source, remote_tmp, wrapper_name, wrapper, jobs):
    """The chain's program: ``jobs`` is ``[(id, time limit s, module file name, module payload (bytes),
    async_wrapper's arguments ({module}: the module's path, {python}: the interpreter)), ...]``."""
    return async_job_source + "\n" + CHAIN % {
        "jobs": [(jid, limit, name, argv) for jid, limit, name, _payload, argv in jobs],
        "wrapper_name": wrapper_name, "wrapper": packed(wrapper),
        "modules": [packed(payload) for _jid, _limit, _name, payload, _argv in jobs],
        "grace_s": GRACE_S, "poll_s": POLL_S, "remote_tmp": remote_tmp}
