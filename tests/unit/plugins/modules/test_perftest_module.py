# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""perftest pairs end to end on this host, through the one RDMA protocol: the sweep runner (module perftest_sweep),
a single pair being a schedule of one step. Real processes: the fake ib_write_bw of the integration tests, and
Debian's real perftest binaries for the no-device paths. Both ends run on this host (host names ``me`` and
``other``, every address 127.0.0.1), each runner in its own process as on two hosts; module perftest keeps import
mode and ``state: absent`` (tested here too).

What the retired 3-step protocol (``perftest state=server/client/collect``) was tested for, in sweep form: a pair on
two rails (clients at once), a client that retries until its server listens, a client nobody answers, a server
nobody used (its timeout), a missing binary (the error record), a bad device name, check mode, the CPU governor
set and restored, an interrupt, and ``state: absent`` after a run that did not clean up.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import types

import pytest
from ansible.module_utils.testing import patch_module_args

from ansible_collections.aifabric.acceptance.plugins.module_utils import results, state_child, statedir
from ansible_collections.aifabric.acceptance.plugins.module_utils.perftest_run import PerftestRun
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools.perftest_sweep import argvs_for, device_plan
from ansible_collections.aifabric.acceptance.plugins.module_utils.perftest_sweep import Sweep
from ansible_collections.aifabric.acceptance.plugins.module_utils.proc import process_start_time
from ansible_collections.aifabric.acceptance.plugins.modules import cleanup, perftest, perftest_sweep
from ansible_collections.aifabric.acceptance.tests.unit.helpers import Exit, Fail, parser_fixture, raise_on_exit

HERE = os.path.dirname(os.path.abspath(__file__))
FAKE_DIR = os.path.join(HERE, "..", "..", "..", "integration", "fake_perftest")
FIXTURES = parser_fixture("perftest")


@pytest.fixture(autouse=True)
def exits(monkeypatch):
    raise_on_exit(monkeypatch)


def call(args, expect=Exit, module=perftest):
    with patch_module_args(args):
        with pytest.raises(expect) as info:
            module.main()
    return info.value.args[0]


def free_port():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


@pytest.fixture
def fake(tmp_path, monkeypatch):
    conf = tmp_path / "fake.json"
    log = tmp_path / "fake.log"
    conf.write_text(json.dumps({"default": {"duration_s": 0.3, "log": str(log)}}))
    monkeypatch.setenv("FAKE_PERFTEST_CONFIG", str(conf))
    return {"dir": FAKE_DIR, "log": log, "state": str(tmp_path / "state"), "port": free_port(), "tmp": tmp_path}


def base(fake, **kw):
    args = {"tool_dir": fake["dir"], "state_root": fake["state"], "run_id": "r1", "port": fake["port"],
            "inventory_hostname": "me", "sysfs_root": "/nonexistent"}
    args.update(kw)
    return args


def absent(fake, **kw):
    """perftest state=absent on the run of these tests."""
    return dict({"state": "absent", "state_root": fake["state"], "run_id": "r1", "inventory_hostname": "me"}, **kw)


def events(fake):
    if not fake["log"].exists():
        return []
    return [json.loads(line) for line in fake["log"].read_text().splitlines()]


# --------------------------------------------------------------------------- a pair: a schedule of one step

def runner_args(fake, host, role, peer, steps=1, **kw):
    """perftest_sweep phase=run for one end of a pair: ``steps`` rounds of the same pair, ``host`` in ``role``."""
    # limits far above a pair's seconds on a loaded machine (a server waiting 20 s for its client failed once): the
    # tests of giving up pass their own
    args = base(fake, phase="run", inventory_hostname=host, hcas=["mlx5_0"], port_span=2, lease_s=0, timeout_s=90,
                connect_timeout_s=60, connect_retry_delay_s=0.3,
                schedule=[[step, "ib_write_bw", step, role, peer] for step in range(steps)],
                peers={peer: "127.0.0.1"})
    args.update(kw)
    return args


def start_runner(fake, args):
    """One runner in its own process (as on its own host): the module itself, its arguments from a file."""
    path = fake["tmp"] / ("args-%s.json" % args["inventory_hostname"])
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    return subprocess.Popen([sys.executable, perftest_sweep.__file__, str(path)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p)))


def ended(proc, timeout=120):
    out, err = proc.communicate(timeout=timeout)
    assert out.strip(), err[-3000:]
    return json.loads(out.strip().splitlines()[-1])


def status(fake, host, **kw):
    """phase=status once the runner ended: its records, and its files removed (but the answer it keeps)."""
    out = call(base(fake, phase="status", inventory_hostname=host, hcas=["mlx5_0"], **kw), module=perftest_sweep)
    assert out["finished"], out
    return out


def pair(fake, steps=1, server=None, client=None, client_first_s=0.0):
    """Run a pair (``other`` serves, ``me`` connects); the records of each end."""
    procs = []
    server_args = runner_args(fake, "other", "server", "me", steps, **(server or {}))
    client_args = runner_args(fake, "me", "client", "other", steps, **(client or {}))
    if client_first_s:
        procs.append(start_runner(fake, client_args))
        time.sleep(client_first_s)
        procs.insert(0, start_runner(fake, server_args))
    else:
        procs = [start_runner(fake, server_args), start_runner(fake, client_args)]
    outcomes = [ended(proc) for proc in procs]
    assert [o.get("outcome") for o in outcomes] == ["finished", "finished"], outcomes
    return status(fake, "other")["results"], status(fake, "me")["results"]


def run_dir(fake):
    return os.path.join(fake["state"], statedir.host_id(), "r1")


def only_answers_left(fake):
    """After the polls that found the runners ended: nothing of the runners left but the answers those polls keep
    (``answer-<sweep>-<host>``: a poll whose answer is lost gives it again), which the run's cleanup (module cleanup
    with perftest_state, the rdma role's last task) removes with the run's directory."""
    if os.path.exists(run_dir(fake)):
        kept = sorted(os.listdir(run_dir(fake)))
        assert all(name == statedir.MARKER or name.startswith("answer-main-") for name in kept), kept
    out = call(cleanup_args(fake), module=cleanup)
    assert out["left"] == [] and not any(item.startswith("killed pid") for item in out["removed"]), out
    assert not os.path.exists(run_dir(fake))


def test_a_single_pair_on_two_devices_is_a_schedule_of_one_step(fake):
    servers, clients = pair(fake, server={"hcas": ["mlx5_0", "mlx5_1"]}, client={"hcas": ["mlx5_0", "mlx5_1"]})
    assert [r["check"] for r in clients] == ["rdma.ib_write_bw", "rdma.ib_write_bw"]
    assert [r["target"] for r in clients] == ["mlx5_0", "mlx5_1"]
    for rec in clients:
        assert results.validate(rec) == [] and rec["status"] == "pass"
        assert rec["host"] == "me" and rec["peer"] == "other"
        assert rec["metrics"]["bw_avg_gbit_s"] == 779.21 and rec["tool"]["version"] == "fake-0"
    # both clients ran at the same time, each on its own TCP port (port + i)
    connected = [e for e in events(fake) if e["role"] == "client" and e["event"] == "connected"]
    finished = [e for e in events(fake) if e["role"] == "client" and e["event"] == "finished"]
    assert len(connected) == 2 and max(e["time"] for e in connected) < min(e["time"] for e in finished)
    assert [r["check"] for r in servers] == ["rdma.ib_write_bw.server"] * 2
    assert all(r["status"] == "pass" and r["host"] == "other" and r["peer"] == "me" for r in servers)
    only_answers_left(fake)


# run in a fresh interpreter: the module with its arguments from a file, then the collection's modules it loaded
POLL_PROBE = """
import json, runpy, sys
sys.argv = [sys.argv[1], sys.argv[2]]
try:
    runpy.run_path(sys.argv[0], run_name="__main__")
except SystemExit:
    pass
sys.stderr.write("LOADED " + json.dumps(sorted(m for m in sys.modules if m.startswith("ansible_collections."))))
"""
RUNNER_CODE = ("module_utils.perftest_sweep", "module_utils.perftest_clients", "module_utils.tools.perftest_sweep",
               "module_utils.parsers.perftest", "module_utils.expectations", "module_utils.runner")


def test_the_status_poll_that_collects_an_ended_runner_never_loads_the_runner(fake):
    """phase=status in a process of its own, as on a host: the poll that finds the runner ended gives its records and
    removes its directory, and loads none of the runner's code (the adapter, the clients, perftest's parser, the
    expectations: about 80 ms of CPU a poll on a host) - the wait of every host of a sweep runs it."""
    procs = [start_runner(fake, runner_args(fake, "other", "server", "me")),
             start_runner(fake, runner_args(fake, "me", "client", "other"))]
    assert [ended(proc).get("outcome") for proc in procs] == ["finished", "finished"]
    path = fake["tmp"] / "status-me.json"
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": base(fake, phase="status", inventory_hostname="me",
                                                            hcas=["mlx5_0"])}))
    proc = subprocess.run([sys.executable, "-c", POLL_PROBE, perftest_sweep.__file__, str(path)], capture_output=True,
                          check=False, text=True, timeout=120,
                          env=dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p)))
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    loaded = json.loads(proc.stderr.rsplit("LOADED ", 1)[1])
    assert out["finished"] and [(r["check"], r["status"]) for r in out["results"]] == [("rdma.ib_write_bw", "pass")], out
    prefix = "ansible_collections.aifabric.acceptance.plugins."
    assert [name for name in RUNNER_CODE if prefix + name in loaded] == []
    assert prefix + "module_utils.perftest_status" in loaded
    assert not os.path.exists(os.path.join(run_dir(fake), "sweep-main-me"))
    # the other end, through the runner's own class (Sweep.status): the same answer
    assert [r["check"] for r in status(fake, "other")["results"]] == ["rdma.ib_write_bw.server"]


def test_the_progress_counts_pairs_not_rails(fake):
    """The wait's progress line says "<done>/<total> pairs done" with the total in pairs (sweep_schedule's steps):
    a pair on two rails is one pair done (it was two: "12/6 pairs done" for 6 pairs on 2 rails), and it fails once
    when both its rails fail."""
    procs = [start_runner(fake, runner_args(fake, "other", "server", "me", hcas=["mlx5_0", "mlx5_1"])),
             start_runner(fake, runner_args(fake, "me", "client", "other", hcas=["mlx5_0", "mlx5_1"]))]
    assert [ended(proc).get("outcome") for proc in procs] == ["finished", "finished"]
    progress = status(fake, "me")["progress"]
    assert (progress["pairs_done"], progress["failing"]) == (1, 0), progress
    # both rails of the pair fail (no server at all): one failing pair
    alone = start_runner(fake, runner_args(fake, "me", "client", "other", hcas=["mlx5_0", "mlx5_1"], run_id="r2",
                                           connect_timeout_s=1))
    assert ended(alone).get("outcome") == "finished"
    progress = status(fake, "me", run_id="r2")["progress"]
    assert (progress["pairs_done"], progress["failing"]) == (1, 1), progress


def test_consecutive_rounds_of_a_pair_use_their_own_ports(fake):
    """What ``state: server`` with the previous round's handles did: round after round on one pair (each step on
    its own ports, so a client that runs ahead never reaches the previous step's server)."""
    servers, clients = pair(fake, steps=2)
    assert [r["status"] for r in clients] == ["pass", "pass"] and [r["status"] for r in servers] == ["pass", "pass"]
    served = [e["port"] for e in events(fake) if e["role"] == "server" and e["event"] == "listening"]
    assert len(served) == 2 and served[0] != served[1] and fake["port"] in served
    only_answers_left(fake)


def test_client_retries_until_the_server_listens(fake):
    # the client's runner starts first; the server's comes up while it retries
    _servers, clients = pair(fake, client_first_s=1.5)
    rec = clients[0]
    assert rec["status"] == "pass" and rec["params"]["attempts"] > 1


def test_a_runner_s_start_removes_the_answer_an_earlier_runner_of_its_sweep_kept(fake):
    """The poll that found a runner ended keeps its answer (given again after a lost one); the next runner of the
    same sweep removes it at its start, so that its own wait can never be given the earlier runner's records."""
    pair(fake)
    kept = os.path.join(run_dir(fake), "answer-main-me")
    assert os.path.isdir(kept)
    out = ended(start_runner(fake, runner_args(fake, "me", "client", "other", connect_timeout_s=1,
                                               connect_retry_delay_s=0.2)))
    assert out["outcome"] == "finished" and not os.path.exists(kept)
    (rec,) = status(fake, "me", _poll={"seen": True})["results"]
    assert rec["status"] == "error" and "Couldn't connect to 127.0.0.1" in rec["reason"]
    only_answers_left(fake)


def test_client_gives_up_when_nobody_listens(fake):
    """A server that never answers: the client's error record (the pair's edge), and the peer not waited for
    again (its next pair is an error at once)."""
    out = ended(start_runner(fake, runner_args(fake, "me", "client", "other", steps=2, connect_timeout_s=3,
                                               connect_retry_delay_s=0.2)))
    assert out["outcome"] == "finished"
    first, second = status(fake, "me")["results"]
    assert first["status"] == "error" and "Couldn't connect to 127.0.0.1" in first["reason"]
    assert first["params"]["attempts"] >= 2
    assert second["status"] == "error" and second["reason"].startswith("not run: other did not answer")
    only_answers_left(fake)


def test_a_server_nobody_used_ends_at_its_timeout(fake):
    out = ended(start_runner(fake, runner_args(fake, "other", "server", "me", timeout_s=2)))
    assert out["outcome"] == "finished"
    (rec,) = status(fake, "other")["results"]
    assert rec["check"] == "rdma.ib_write_bw.server" and rec["status"] == "error"
    assert "timed out after 2s" in rec["reason"] and "no client connected" in rec["reason"], rec
    assert not [e for e in events(fake) if e["role"] == "client"]


def test_missing_binary_and_bad_device_name(fake):
    # a missing binary is the documented error record on each end (issue 9 item 7), not a failed task
    servers, clients = pair(fake, server={"tool_dir": "/nonexistent"}, client={"tool_dir": "/nonexistent"})
    for rec, check in ((servers[0], "rdma.ib_write_bw.server"), (clients[0], "rdma.ib_write_bw")):
        assert rec["check"] == check and rec["status"] == "error"
        assert "ib_write_bw not found" in rec["reason"] and "install perftest" in rec["reason"]
    assert events(fake) == []
    bad = call(runner_args(fake, "me", "client", "other", hcas=["mlx5_0;reboot"]), expect=Fail,
               module=perftest_sweep)
    assert "not a valid name" in bad["msg"]
    only_answers_left(fake)


def test_check_mode_starts_nothing(fake):
    out = call(runner_args(fake, "me", "client", "other", _ansible_check_mode=True), module=perftest_sweep)
    assert out["results"] == [] and out["steps"] == 1 and not out["changed"]
    assert not os.path.exists(fake["state"]) and events(fake) == []
    out = call(absent(fake, _ansible_check_mode=True))
    assert out["removed"] == [] and not out["changed"] and not os.path.exists(fake["state"])


def _cpufreq(tmp_path, was, cpus=1):
    root = tmp_path / "cpu"
    for i in range(cpus):
        d = root / ("cpu%d" % i) / "cpufreq"
        d.mkdir(parents=True)
        (d / "scaling_governor").write_text("%s\n" % was)
        (d / "scaling_available_governors").write_text("performance %s\n" % was)
    return root


def test_governor_set_and_restored_around_a_client(fake, tmp_path):
    root = _cpufreq(tmp_path, "powersave", cpus=2)
    out = ended(start_runner(fake, runner_args(fake, "me", "client", "other", connect_timeout_s=1,
                                               connect_retry_delay_s=0.2, cpu_governor="performance",
                                               cpu_sysfs=str(root))))
    assert out["outcome"] == "finished"
    (rec,) = status(fake, "me", cpu_governor="performance", cpu_sysfs=str(root))["results"]
    assert rec["facts"]["cpu_governor"] == "set to performance (was powersave)"
    assert (root / "cpu0" / "cpufreq" / "scaling_governor").read_text().strip() == "powersave"
    assert (root / "cpu1" / "cpufreq" / "scaling_governor").read_text().strip() == "powersave"


def test_gid_auto_detection_from_a_fake_sysfs(fake, tmp_path):
    ib = tmp_path / "root" / "sys" / "class" / "infiniband" / "mlx5_0"
    port = ib / "ports" / "1"
    for rel, text in {"state": "4: ACTIVE", "rate": "400 Gb/sec (4X NDR)", "link_layer": "Ethernet",
                      "gids/0": "fe80:0000:0000:0000:0e42:a1ff:fe2b:3c4d", "gid_attrs/types/0": "IB/RoCE v1",
                      "gids/1": "0000:0000:0000:0000:0000:ffff:0a00:0002", "gid_attrs/types/1": "RoCE v2"}.items():
        (port / rel).parent.mkdir(parents=True, exist_ok=True)
        (port / rel).write_text(text + "\n")
    plan = call(base(fake, phase="plan", hcas=["mlx5_0"], sysfs_root=str(tmp_path / "root")),
                module=perftest_sweep)
    assert plan["rates"] == [400.0]
    # what the runner plans for each step (the same sysfs reading, Sweep.hcas)
    params = dict(perftest_sweep.argument_spec(), **{})
    params = dict((k, v.get("default")) for k, v in params.items())
    params.update(base(fake, hcas=["mlx5_0"], sysfs_root=str(tmp_path / "root"), test="ib_write_bw"))
    sweep = Sweep(types.SimpleNamespace(params=params, check_mode=False, warn=lambda msg: None))
    (step,) = device_plan(["mlx5_0"], params, sweep.hcas())
    assert step[3] == 1 and step[4]["gid_choice"].startswith("RoCE v2 GID 1")
    (argv,) = argvs_for("/usr/bin/ib_write_bw", params, [step], "client", peer_address="127.0.0.1")
    assert argv[7:9] == ["-x", "1"]


def test_import_mode():
    out = call({"from_output": os.path.join(FIXTURES, "rxe-softroce-ib-send-lat-server-glued-columns.txt"),
                "hcas": ["rxe0"], "peer_name": "n1", "inventory_hostname": "n2"})
    rec = out["results"][0]
    assert rec["check"] == "rdma.ib_send_lat.server" and rec["status"] == "pass"
    assert rec["metrics"]["lat_p99_us"] == 1216.65 and rec["facts"]["imported_from"].endswith(".txt")
    out = call({"from_output": os.path.join(FIXTURES, "perftest-client-failed-to-modify-qp-to-rts.txt"),
                "test": "ib_write_bw", "side": "client"})
    assert out["results"][0]["status"] == "error" and "Failed to modify QP to RTS" in out["results"][0]["reason"]
    failed = call({"from_output": "/nonexistent/file"}, expect=Fail)
    assert "cannot read from_output" in failed["msg"]


def test_the_old_verbs_are_gone():
    """One RDMA protocol (issue 20): perftest runs nothing itself; pairs are the sweep runner's (a schedule of one
    step). A task still written for the 3-step protocol fails and says so, before anything runs."""
    for verb in ("server", "client", "collect"):
        out = call({"state": verb, "hcas": ["mlx5_0"]}, expect=Fail)
        assert "state" in out["msg"] and "absent" in out["msg"]
    out = call({}, expect=Fail)
    assert "from_output" in out["msg"] and "state" in out["msg"]
    for option in ({"handles": [{"state_dir": "/etc"}]}, {"peer": "10.0.0.2"}, {"collect_timeout_s": 5}):
        out = call(dict(option, state="absent"), expect=Fail)
        assert "Unsupported parameters" in out["msg"], out


def leftover_server(fake, host="me", step=0, device="mlx5_0", port=None):
    """A server the sweep runner started, as a runner that stopped without its cleanup leaves it: its step
    directory (made and marked by the collection), handle and live process, listening on ``port`` (the fake's by
    default) once this returns."""
    port = port or fake["port"]
    params = base(fake, cpu_sysfs="/nonexistent", inventory_hostname=host)
    run = PerftestRun(types.SimpleNamespace(params=params, check_mode=False, warn=lambda msg: None))
    run.open_state()
    argv = [os.path.join(FAKE_DIR, "ib_write_bw"), "-d", device, "-p", str(port)]
    handle = run.start(argv, 60, run.inside("sweep-main-%s-s%d-%s" % (host, step, device)),
                       extra={"device": device, "host_name": host, "run_id": "r1"})
    deadline = time.monotonic() + 30
    while not [e for e in events(fake) if e["role"] == "server" and e["event"] == "listening" and e["port"] == port]:
        assert time.monotonic() < deadline and state_child.alive(handle), "the fake server on %d did not listen" % port
        time.sleep(0.05)
    return handle


def two_leftover_servers(fake):
    """The servers of both rails of one step, each on its own port (as the runner gives them: two servers on one
    port cannot both listen - the second one's bind failed, and a test that found both alive only raced its start)."""
    return [leftover_server(fake, device="mlx5_0"), leftover_server(fake, device="mlx5_1", port=free_port())]


def test_absent_cleans_everything(fake):
    handles = two_leftover_servers(fake)
    out = call(absent(fake))
    assert out["changed"] and any(item.startswith("killed pid") for item in out["removed"])
    for handle in handles:
        assert process_start_time(handle["pid"]) is None or not state_child.alive(handle)
    assert not os.path.exists(run_dir(fake))
    again = call(absent(fake))
    assert again["changed"] is False


def cleanup_args(fake, **kw):
    """cleanup perftest_state=true on the run of these tests (what perftest state=absent did)."""
    return dict({"perftest_state": True, "state_root": fake["state"], "run_id": "r1", "inventory_hostname": "me"}, **kw)


def test_cleanup_removes_the_perftest_state_as_absent_did(fake):
    handles = two_leftover_servers(fake)
    checked = call(cleanup_args(fake, _ansible_check_mode=True), module=cleanup)    # says what it would remove
    assert len(checked["removed"]) == 2 and os.path.exists(run_dir(fake))
    assert all(state_child.alive(handle) for handle in handles)
    out = call(cleanup_args(fake), module=cleanup)
    assert out["changed"] and any(item.startswith("killed pid") for item in out["removed"])
    assert out["found"] == [] and out["killed"] == [] and out["governor"] == {"action": "none"} and out["left"] == []
    for handle in handles:
        assert process_start_time(handle["pid"]) is None or not state_child.alive(handle)
    assert not os.path.exists(run_dir(fake))
    again = call(cleanup_args(fake), module=cleanup)
    assert again["changed"] is False and again["removed"] == []


def test_cleanup_without_perftest_state_leaves_it(fake):
    leftover_server(fake)
    out = call({"run_id": "r1"}, module=cleanup)
    assert out == {"changed": False, "found": [], "killed": [], "results": []}
    assert os.path.exists(run_dir(fake))
    call(cleanup_args(fake), module=cleanup)
    assert not os.path.exists(run_dir(fake))


def test_absent_is_deprecated_for_cleanup(fake, monkeypatch):
    said = []
    monkeypatch.setattr(perftest.AnsibleModule, "deprecate", lambda self, msg, **kw: said.append((msg, kw)))
    call(absent(fake))
    assert said == [("perftest state=absent: use aifabric.acceptance.cleanup with perftest_state=true (the same "
                     "removal)", {"version": "2.0.0", "collection_name": "aifabric.acceptance"})]


def test_absent_during_a_run_stops_it_and_leaves_nothing(fake):
    """A runner still serving (its client never came): state=absent kills its server and removes its files; the
    runner then ends (it can no longer write its records) without making anything again."""
    proc = start_runner(fake, runner_args(fake, "other", "server", "me", timeout_s=60))
    try:
        deadline = time.monotonic() + 30
        while not [e for e in events(fake) if e["role"] == "server"] and time.monotonic() < deadline:
            time.sleep(0.1)
        out = call(absent(fake))
        assert out["changed"] and any(item.startswith("killed pid") for item in out["removed"]), out
        proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate()
    assert not os.path.exists(run_dir(fake))
    assert running_fakes(fake["port"]) == []


@pytest.mark.skipif(not shutil.which("ib_write_bw") or os.path.exists("/sys/class/infiniband"),
                    reason="needs Debian's perftest on a host without RDMA devices")
@pytest.mark.parametrize("test", ["ib_write_bw", "ib_read_lat"])
def test_real_perftest_without_device_is_skip_with_the_tool_message(fake, test):
    real = {"tool_dir": None, "schedule": None}
    servers, clients = pair(fake, server=dict(real, connect_timeout_s=5, collect_timeout_s=10,
                                              schedule=[[0, test, 0, "server", "me"]]),
                            client=dict(real, connect_timeout_s=5, schedule=[[0, test, 0, "client", "other"]]))
    for rec in clients + servers:
        assert rec["status"] == "skip" and "Did not detect devices" in rec["reason"]
        assert rec["tool"]["version"]
    only_answers_left(fake)
    assert os.listdir(fake["state"]) == [statedir.host_id()]
    assert os.listdir(os.path.join(fake["state"], statedir.host_id())) == [statedir.MARKER]


def test_interrupt_stops_the_clients_and_restores_the_governor(fake, tmp_path):
    root = _cpufreq(tmp_path, "schedutil")
    # a server that accepts and never finishes: the client hangs in its test until interrupted
    sock = socket.socket()
    sock.bind(("127.0.0.1", fake["port"]))
    sock.listen(1)
    try:
        proc = start_runner(fake, runner_args(fake, "me", "client", "other", cpu_governor="performance",
                                              cpu_sysfs=str(root), timeout_s=60))
        deadline = time.monotonic() + 30
        while not [e for e in events(fake) if e["role"] == "client" and e["event"] == "connected"] \
                and time.monotonic() < deadline:
            time.sleep(0.1)
        proc.send_signal(signal.SIGTERM)
        out = ended(proc)
    finally:
        sock.close()
    assert out["outcome"].startswith("interrupted by signal 15") or "interrupted" in out["outcome"], out
    assert (root / "cpu0" / "cpufreq" / "scaling_governor").read_text().strip() == "schedutil"
    assert [e for e in events(fake) if e["role"] == "client" and e["event"] == "connected"]
    assert running_fakes(fake["port"]) == []
    recs = status(fake, "me", cpu_sysfs=str(root))["results"]
    assert recs[-1]["check"] == "rdma.sweep" and "stopped early (interrupted" in recs[-1]["reason"]


def running_fakes(port):
    """PIDs of fake perftest processes on this TCP port that still run (zombies do not count)."""
    found = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % pid, "rb") as handle:
                argv = handle.read().split(b"\0")
            with open("/proc/%s/stat" % pid) as handle:
                state = handle.read().rsplit(")", 1)[1].split()[0]
        except (IOError, OSError):
            continue
        if state != "Z" and any(a.endswith(b"fake_perftest.py") for a in argv) and str(port).encode() in argv:
            found.append(int(pid))
    return found
