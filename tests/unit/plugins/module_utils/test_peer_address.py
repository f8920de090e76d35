# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A peer address reaches perftest's argv only as an IP address or a host name (issue 34 rule 6).

Before: an inventory's ``rdma_server_address: -x9`` (or any word starting with "-") became the client's last argv word,
which perftest reads as an option. The one check (perftest_tool.check_peer_address) runs where the address enters
(the perftest_sweep action, on the controller, before the host is called) and on every client argv built for the SSH
runner and the Kubernetes planner (build_argv).
"""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ansible_collections.aifabric.acceptance.plugins.action import perftest_sweep as action
from ansible_collections.aifabric.acceptance.plugins.module_utils.errors import AcceptanceError
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import perftest_sweep as perftest_tool

PARAMS = {"test": "ib_write_bw", "ib_port": 1, "size": 65536, "iterations": 1000}


@pytest.mark.parametrize("address", ["10.0.0.12", "fe80::1", "gpu-node-12", "gpu-node-12.fabric.example.",
                                     "s0.aif-run-pt-r0", "node_7"])
def test_addresses_and_host_names_are_the_client_argvs_last_word(address):
    argv = perftest_tool.build_argv("/opt/ib_write_bw", PARAMS, "mlx5_0", 18515, 3, "client", peer_address=address)
    assert argv[-1] == address


@pytest.mark.parametrize("address", ["-x9", "--run_infinitely", "-", "a b", "host;rm", "", None, "a..b", "x" * 300,
                                     "-10.0.0.1", "node/../x"])
def test_anything_else_never_reaches_perftest(address):
    with pytest.raises(AcceptanceError):
        perftest_tool.build_argv("/opt/ib_write_bw", PARAMS, "mlx5_0", 18515, 3, "client", peer_address=address)
    with pytest.raises(AcceptanceError):
        perftest_tool.argvs_for("/opt/ib_write_bw", PARAMS, [(0, "mlx5_0", 18515, 3, {})], "client",
                                peer_address=address)


def test_the_sweep_action_refuses_a_bad_peer_before_calling_the_host():
    assert action._bad_peers({"n1": "10.0.0.1", "n2": "gpu-2"}) is None      # pylint: disable=protected-access
    why = action._bad_peers({"n1": "10.0.0.1", "n2": "-x9"})                  # pylint: disable=protected-access
    assert why and "peers[n2] '-x9' is neither an IP address nor a host name" in why


@given(st.text(min_size=1, max_size=40))
def test_no_accepted_address_is_an_option_or_holds_a_space(text):
    try:
        perftest_tool.check_peer_address(text)
    except AcceptanceError:
        return
    assert not text.startswith("-") and not any(c.isspace() for c in text) and "/" not in text
