# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The perftest module end to end on this host: real processes (the fake ib_write_bw of the
integration tests, and Debian's real perftest binaries for the no-device paths)."""

from __future__ import annotations

import json
import os
import shutil
import socket

import pytest
from ansible.module_utils import basic
from ansible.module_utils.testing import patch_module_args

from ansible_collections.aifabric.acceptance.plugins.module_utils import results, statedir
from ansible_collections.aifabric.acceptance.plugins.modules import perftest

HERE = os.path.dirname(os.path.abspath(__file__))
FAKE_DIR = os.path.join(HERE, "..", "..", "..", "integration", "fake_perftest")
FIXTURES = os.path.join(HERE, "..", "module_utils", "parsers", "fixtures", "perftest")


class Exit(Exception):
    pass


class Fail(Exception):
    pass


@pytest.fixture(autouse=True)
def exits(monkeypatch):
    def exit_json(self, **kwargs):
        raise Exit(kwargs)

    def fail_json(self, **kwargs):
        raise Fail(kwargs)
    monkeypatch.setattr(basic.AnsibleModule, "exit_json", exit_json)
    monkeypatch.setattr(basic.AnsibleModule, "fail_json", fail_json)


def call(args, expect=Exit):
    with patch_module_args(args):
        with pytest.raises(expect) as info:
            perftest.main()
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
    return {"dir": FAKE_DIR, "log": log, "state": str(tmp_path / "state"), "port": free_port()}


def base(fake, **kw):
    args = {"perftest_path": fake["dir"], "state_root": fake["state"], "run_id": "r1", "port": fake["port"],
            "host_name": "me", "peer_name": "other", "sysfs_root": "/nonexistent"}
    args.update(kw)
    return args


def events(fake):
    if not fake["log"].exists():
        return []
    return [json.loads(line) for line in fake["log"].read_text().splitlines()]


def test_round_on_two_devices(fake):
    server = call(base(fake, state="server", devices=["mlx5_0", "mlx5_1"]))
    assert server["changed"] and len(server["handles"]) == 2
    assert [h["tcp_port"] for h in server["handles"]] == [fake["port"], fake["port"] + 1]
    client = call(base(fake, state="client", devices=["mlx5_0", "mlx5_1"], peer="127.0.0.1"))
    recs = client["results"]
    assert [r["check"] for r in recs] == ["rdma.ib_write_bw", "rdma.ib_write_bw"]
    assert [r["target"] for r in recs] == ["mlx5_0", "mlx5_1"]
    for rec in recs:
        assert results.validate(rec) == [] and rec["status"] == "pass"
        assert rec["host"] == "me" and rec["peer"] == "other"
        assert rec["metrics"]["bw_avg_gbit_s"] == 779.21 and rec["tool"]["version"] == "fake-0"
    # both clients ran at the same time
    connected = [e for e in events(fake) if e["role"] == "client" and e["event"] == "connected"]
    finished = [e for e in events(fake) if e["role"] == "client" and e["event"] == "finished"]
    assert len(connected) == 2 and max(e["time"] for e in connected) < min(e["time"] for e in finished)
    collected = call(base(fake, state="collect", handles=server["handles"]))
    assert [r["check"] for r in collected["results"]] == ["rdma.ib_write_bw.server"] * 2
    assert all(r["status"] == "pass" for r in collected["results"])
    assert not os.path.exists(os.path.join(fake["state"], statedir.host_id(), "r1"))


def test_client_retries_until_the_server_listens(fake):
    # the client starts first; the server comes up while it retries
    import threading
    timer = threading.Timer(1.2, lambda: call(base(fake, state="server", devices=["mlx5_0"])))
    timer.start()
    try:
        client = call(base(fake, state="client", devices=["mlx5_0"], peer="127.0.0.1",
                           connect_timeout_s=20, connect_retry_delay_s=0.3))
    finally:
        timer.join()
    rec = client["results"][0]
    assert rec["status"] == "pass" and rec["params"]["attempts"] > 1
    call(base(fake, state="collect"))


def test_client_gives_up_when_nobody_listens(fake):
    client = call(base(fake, state="client", devices=["mlx5_0"], peer="127.0.0.1",
                       connect_timeout_s=4, connect_retry_delay_s=0.2))
    rec = client["results"][0]
    assert rec["status"] == "error" and "Couldn't connect to 127.0.0.1" in rec["reason"]
    assert rec["params"]["attempts"] >= 2


def test_collect_kills_a_server_nobody_used(fake):
    server = call(base(fake, state="server", devices=["mlx5_0"]))
    pid = server["handles"][0]["pid"]
    out = call(base(fake, state="collect", collect_timeout_s=1))
    rec = out["results"][0]
    assert rec["status"] == "error" and "killed" in rec["reason"]
    assert not os.path.exists("/proc/%d/cmdline" % pid) or open("/proc/%d/stat" % pid).read().split()[2] == "Z"


def test_absent_cleans_everything(fake):
    call(base(fake, state="server", devices=["mlx5_0", "mlx5_1"]))
    out = call(base(fake, state="absent"))
    assert out["changed"] and any(item.startswith("killed pid") for item in out["removed"])
    assert not os.path.exists(os.path.join(fake["state"], statedir.host_id(), "r1"))
    again = call(base(fake, state="absent"))
    assert again["changed"] is False


def test_check_mode_starts_nothing(fake):
    out = call(base(fake, state="server", devices=["mlx5_0"], _ansible_check_mode=True))
    assert out["results"] == [] and out["cmd"][-1] == "--report_gbits"
    assert not os.path.exists(fake["state"])
    out = call(base(fake, state="client", devices=["mlx5_0"], peer="127.0.0.1", _ansible_check_mode=True))
    assert out["cmd"][-1] == "127.0.0.1" and events(fake) == []


def test_governor_set_and_restored_around_a_client(fake, tmp_path):
    root = tmp_path / "cpu"
    for i in range(2):
        d = root / ("cpu%d" % i) / "cpufreq"
        d.mkdir(parents=True)
        (d / "scaling_governor").write_text("powersave\n")
        (d / "scaling_available_governors").write_text("performance powersave\n")
    out = call(base(fake, state="client", devices=["mlx5_0"], peer="127.0.0.1", connect_timeout_s=1,
                    connect_retry_delay_s=0.2, cpu_governor="performance", cpu_sysfs=str(root)))
    assert out["governor"]["action"] == "set" and out["governor"]["restored"] == {"powersave": "cpu0,cpu1"}
    assert out["results"][0]["facts"]["cpu_governor"] == "set to performance (was powersave)"
    assert (root / "cpu0" / "cpufreq" / "scaling_governor").read_text().strip() == "powersave"


def test_gid_auto_detection_from_a_fake_sysfs(fake, tmp_path):
    ib = tmp_path / "root" / "sys" / "class" / "infiniband" / "mlx5_0"
    port = ib / "ports" / "1"
    for rel, text in {"state": "4: ACTIVE", "rate": "400 Gb/sec (4X NDR)", "link_layer": "Ethernet",
                      "gids/0": "fe80:0000:0000:0000:0e42:a1ff:fe2b:3c4d", "gid_attrs/types/0": "IB/RoCE v1",
                      "gids/1": "0000:0000:0000:0000:0000:ffff:0a00:0002", "gid_attrs/types/1": "RoCE v2"}.items():
        (port / rel).parent.mkdir(parents=True, exist_ok=True)
        (port / rel).write_text(text + "\n")
    out = call(base(fake, state="client", devices=["mlx5_0"], peer="127.0.0.1", sysfs_root=str(tmp_path / "root"),
                    _ansible_check_mode=True))
    assert out["cmd"][7:9] == ["-x", "1"]
    srv = call(base(fake, state="server", devices=["mlx5_0"], sysfs_root=str(tmp_path / "root")))
    assert srv["handles"][0]["port_rate_gbit_s"] == 400.0
    assert srv["handles"][0]["facts"]["gid_choice"].startswith("RoCE v2 GID 1")
    call(base(fake, state="absent"))


def test_import_mode():
    out = call({"from_output": os.path.join(FIXTURES, "rxe-softroce-ib-send-lat-server-glued-columns.txt"),
                "devices": ["rxe0"], "peer_name": "n1", "host_name": "n2"})
    rec = out["results"][0]
    assert rec["check"] == "rdma.ib_send_lat.server" and rec["status"] == "pass"
    assert rec["metrics"]["lat_p99_us"] == 1216.65 and rec["facts"]["imported_from"].endswith(".txt")
    out = call({"from_output": os.path.join(FIXTURES, "perftest-client-failed-to-modify-qp-to-rts.txt"),
                "test": "ib_write_bw", "side": "client"})
    assert out["results"][0]["status"] == "error" and "Failed to modify QP to RTS" in out["results"][0]["reason"]
    failed = call({"from_output": "/nonexistent/file"}, expect=Fail)
    assert "cannot read from_output" in failed["msg"]


def test_bad_input_fails_cleanly(fake):
    assert "peer" in call(base(fake, state="client", devices=["mlx5_0"]), expect=Fail)["msg"]
    assert "not a valid name" in call(base(fake, state="server", devices=["mlx5_0;reboot"]), expect=Fail)["msg"]
    # a missing binary is the documented error record, as in nccl_test (issue 9 item 7), not a failed task
    missing = call(base(fake, state="server", devices=["mlx5_0"], perftest_path="/nonexistent"))
    (record,) = missing["results"]
    assert record["status"] == "error" and missing["handles"] == []
    assert "ib_write_bw not found" in record["reason"] and "install perftest" in record["reason"]


@pytest.mark.skipif(not shutil.which("ib_write_bw") or os.path.exists("/sys/class/infiniband"),
                    reason="needs Debian's perftest on a host without RDMA devices")
@pytest.mark.parametrize("test", ["ib_write_bw", "ib_read_lat"])
def test_real_perftest_without_device_is_skip_with_the_tool_message(tmp_path, test):
    args = {"test": test, "devices": ["mlx5_0"], "state_root": str(tmp_path), "run_id": "real",
            "port": free_port(), "peer_name": "x"}
    server = call(dict(args, state="server"))
    client = call(dict(args, state="client", peer="127.0.0.1", connect_timeout_s=5))
    collected = call(dict(args, state="collect", collect_timeout_s=10))
    for rec in client["results"] + collected["results"]:
        assert rec["status"] == "skip" and "Did not detect devices" in rec["reason"]
        assert rec["tool"]["version"]
    assert not os.path.exists("/proc/%d" % server["handles"][0]["pid"]) or \
        open("/proc/%d/stat" % server["handles"][0]["pid"]).read().split()[2] == "Z"
    assert os.listdir(str(tmp_path)) == [statedir.host_id()]
    assert os.listdir(os.path.join(str(tmp_path), statedir.host_id())) == [statedir.MARKER]


def test_interrupt_stops_the_clients_and_restores_the_governor(fake, tmp_path):
    import signal
    import threading
    root = tmp_path / "cpu"
    d = root / "cpu0" / "cpufreq"
    d.mkdir(parents=True)
    (d / "scaling_governor").write_text("schedutil\n")
    (d / "scaling_available_governors").write_text("performance schedutil\n")
    # a server that accepts and never finishes: the client hangs in its test until interrupted
    sock = socket.socket()
    sock.bind(("127.0.0.1", fake["port"]))
    sock.listen(1)
    timer = threading.Timer(1.5, lambda: os.kill(os.getpid(), signal.SIGTERM))
    timer.start()
    try:
        out = call(base(fake, state="client", devices=["mlx5_0"], peer="127.0.0.1", cpu_governor="performance",
                        cpu_sysfs=str(root), timeout_s=60), expect=Fail)
    finally:
        timer.cancel()
        sock.close()
    assert "interrupted by signal 15" in out["msg"]
    assert (d / "scaling_governor").read_text().strip() == "schedutil"
    clients = [e for e in events(fake) if e["role"] == "client" and e["event"] == "connected"]
    assert clients
    assert running_fakes(fake["port"]) == []


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


@pytest.mark.skipif(not shutil.which("ib_write_bw"), reason="needs Debian's perftest (it lists --out_json)")
def test_out_json_only_when_the_binary_supports_it(fake, tmp_path):
    real = call({"state": "client", "devices": ["mlx5_0"], "peer": "127.0.0.1", "out_json": True,
                 "state_root": str(tmp_path), "_ansible_check_mode": True})
    assert "--out_json" in real["cmd"] and real["cmd"][-2].startswith("--out_json_file=")
    old = call(base(fake, state="client", devices=["mlx5_0"], peer="127.0.0.1", out_json=True,
                    _ansible_check_mode=True))
    assert "--out_json" not in old["cmd"]


def test_server_with_handles_collects_the_previous_round_first(fake):
    first = call(base(fake, state="server", devices=["mlx5_0"]))
    call(base(fake, state="client", devices=["mlx5_0"], peer="127.0.0.1"))
    second = call(base(fake, state="server", devices=["mlx5_0"], handles=first["handles"]))
    assert [r["check"] for r in second["results"]] == ["rdma.ib_write_bw.server"]
    assert second["results"][0]["status"] == "pass" and second["collected"][0]["rc"] == 0
    assert len(second["handles"]) == 1 and second["handles"][0]["pid"] != first["handles"][0]["pid"]
    client = call(base(fake, state="client", devices=["mlx5_0"], peer="127.0.0.1"))
    assert client["results"][0]["status"] == "pass"
    last = call(base(fake, state="collect", handles=second["handles"]))
    assert [r["status"] for r in last["results"]] == ["pass"]
    assert not os.path.exists(os.path.join(fake["state"], statedir.host_id(), "r1"))
