# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Serve the fake cluster (fake_apiserver + fake_rdma_plugin) as a process, for molecule scenarios.

    python serve_fake.py --dir DIR [--nodes 2] [--lifetime 900]

writes ``DIR/kubeconfig`` once the server answers and ``DIR/pid``, then serves until SIGTERM/SIGINT or
``--lifetime`` seconds (it never outlives a forgotten destroy step). The nodes are ``gpu-node-01`` ... with the
NFD RDMA label and the RoCE port of the real CX-4 host the unit tests use (mlx5_0/1 = ens11f0, 15b3:1013, ether).
DIR must exist and pass the collection's path rule (statedir.trusted_dir: the caller's own, writable by nobody else).
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading

HERE = os.path.dirname(os.path.abspath(__file__))
# the collection root's parent of ansible_collections/ on sys.path (run from a checkout or a staged copy)
sys.path.insert(0, os.path.abspath(os.path.join(HERE, "..", "..", "..", "..", "..")))

from ansible_collections.aifabric.acceptance.plugins.module_utils import statedir  # noqa: E402
from ansible_collections.aifabric.acceptance.tests.k8s import fake_rdma_plugin as frp  # noqa: E402
from ansible_collections.aifabric.acceptance.tests.k8s.fake_apiserver import FakeApiServer  # noqa: E402

CX4_ROCE = {"ifName": "ens11f0", "vendor": "15b3", "deviceID": "1013", "driver": "mlx5_core", "linkType": "ether"}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dir", required=True)
    parser.add_argument("--nodes", type=int, default=2)
    parser.add_argument("--lifetime", type=float, default=900)
    args = parser.parse_args(argv)
    try:    # a directory the caller made and owns (statedir's path rule), never one another user could take first
        directory = statedir.trusted_dir(os.path.abspath(args.dir), create=False, what="--dir")
    except statedir.StateError as exc:
        parser.error(str(exc))
    if not os.path.isdir(directory):
        parser.error("--dir %s does not exist: make it (0700) first" % directory)
    nodes = [frp.rdma_node("gpu-node-%02d" % i, [CX4_ROCE]) for i in range(1, args.nodes + 1)]
    server = FakeApiServer(nodes=nodes).start()
    stop = threading.Event()
    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, lambda *_a: stop.set())
    try:
        frp.install(server)
        with open(os.path.join(directory, "pid"), "w") as handle:
            handle.write("%d\n" % os.getpid())
        path = os.path.join(directory, "kubeconfig")
        server.write_kubeconfig(path + ".tmp")
        os.replace(path + ".tmp", path)
        stop.wait(args.lifetime)
    finally:
        server.stop()
        for name in ("pid", "kubeconfig"):
            try:
                os.remove(os.path.join(directory, name))
            except OSError:
                pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
