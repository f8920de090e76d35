# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The pure decisions perftest_clients and the perftest adapter split out: GID choice, GPU sharing, client re-starts,
a record's header facts and warnings."""

from __future__ import annotations

from ansible_collections.aifabric.acceptance.plugins.module_utils import perftest_clients
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import perftest_sweep as adapter


def _gid(index, gid, netdev="eth0", ipv4=None, kind="RoCE v2"):
    return {"index": index, "gid": gid, "netdev": netdev, "ipv4": ipv4, "type": kind}


def test_routable_gids_prefer_ipv4_on_the_ports_netdev_lowest_index_first():
    port = {"netdevs": [{"name": "eth0"}], "gids": [
        _gid(0, "fe80::1"), _gid(5, "::ffff:10.0.0.2", ipv4="10.0.0.2"), _gid(3, "::ffff:10.0.0.1", ipv4="10.0.0.1"),
        _gid(1, "::ffff:10.9.0.1", netdev="eth9", ipv4="10.9.0.1"), _gid(2, "::ffff:10.0.0.3", ipv4="10.0.0.3", kind="RoCE v1")]}
    assert [g["index"] for g in adapter.routable_gids(port)] == [3, 5]


def test_routable_gids_ipv6_only_skip_link_local():
    port = {"netdevs": [], "gids": [_gid(0, "fe80::1"), _gid(4, "2001:db8::1"), _gid(2, "FE80::2")]}
    assert [g["index"] for g in adapter.routable_gids(port)] == [4]
    assert adapter.routable_gids({"gids": [_gid(0, "fe80::1")]}) == []


def test_gpus_shared_when_more_hcas_than_gpus():
    topology = {"matrix": {"GPU0": {"NIC0": "PIX", "NIC1": "SYS", "NIC2": "PXB"}},
                "nic_names": {"NIC0": "mlx5_0", "NIC1": "mlx5_1", "NIC2": "mlx5_2"}}
    out = adapter.gpus_for_hcas(["mlx5_0", "mlx5_1", "mlx5_2", "mlx5_9"], topology)
    assert out["mlx5_0"]["gpu"] == 0 and "closest free GPU" in out["mlx5_0"]["why"]
    # the HCAs left share in rail order, each told whom it shares with
    assert out["mlx5_1"]["why"] == "GPU0 is the closest GPU (SYS) to mlx5_1, shared with mlx5_0 (more HCAs than GPUs)"
    assert out["mlx5_2"]["why"].endswith("(PXB) to mlx5_2, shared with mlx5_0, mlx5_1 (more HCAs than GPUs)")
    assert out["mlx5_9"]["gpu"] is None and "not in nvidia-smi topo -m" in out["mlx5_9"]["why"]


def test_refused_only_a_failed_run_that_could_not_connect():
    refused = "Couldn't connect to 10.0.0.2:18515\nUnable to open file descriptor for socket connection\n"
    assert perftest_clients.refused(refused, 1, False)
    assert not perftest_clients.refused(refused, 0, False)
    assert not perftest_clients.refused(refused, 124, True)
    assert not perftest_clients.refused("", None, False)


def test_warned_names_doubtful_warnings_and_the_callers_note():
    parsed = {"warnings": [], "rows": []}
    assert adapter.warned(parsed, None) == ("pass", None)
    assert adapter.warned(parsed, "governor is powersave") == ("warn", "governor is powersave")


def test_jobs_compare_by_identity():
    one = perftest_clients.Job(0, "mlx5_0", 18515, ["ib_write_bw"], "/tmp/x", {})
    two = perftest_clients.Job(0, "mlx5_0", 18515, ["ib_write_bw"], "/tmp/x", {})
    assert one != two and len({one, two}) == 2
    assert (one.handle, one.attempts, one.result) == (None, 0, None)
