#!/usr/bin/python
# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: port_counters
short_description: Read every RDMA port's error counters before and after a stage and judge their growth
version_added: 1.2.0
author: aifabric.acceptance contributors (@aifabric)
description:
  - Wraps a stage (the RDMA sweep, a soak, any stage) in a window. Before it (O(phase) C(before)) the module reads
    every RDMA port's counters and returns one C(rdma.port_counters) record whose C(facts.snapshot) holds them; after
    it (O(phase) C(after), O(before) the before task's result) it reads them again and returns one
    C(rdma.port_counters) record per port (C(target) C(<device>/<port>), for example C(mlx5_0/1)), judged on the
    growth of its error counters during the window.
  - "Read: every file of C(/sys/class/infiniband/<device>/ports/<port>/counters) (the InfiniBand PMA counters:
    C(symbol_error), C(link_downed), C(link_error_recovery), C(port_rcv_errors), C(port_xmit_discards),
    C(local_link_integrity_errors), C(excessive_buffer_overrun_errors), ...) and C(hw_counters) (the driver's:
    C(out_of_buffer), C(np_cnp_sent), C(rp_cnp_handled), C(np_ecn_marked_roce_packets), ...), and with O(ethtool)
    C(ethtool -S <netdev>) of the port's network interface (RoCE: PFC pause, discards, CRC and link-down counters).
    Every counter read is kept in C(facts.after); a file that is not a number (an iWARP port's C(N/A (no PMA))) is
    listed in C(facts.unread)."
  - "Judged (the collection's thresholds, each with its source, docs/port-counters.md): C(link_downed) or
    C(link_down_events_phy) growing at all fails the port as a flap; C(symbol_error), C(link_error_recovery),
    C(port_rcv_errors), C(local_link_integrity_errors), C(excessive_buffer_overrun_errors), C(rx_crc_errors_phy),
    C(rx_symbol_err_phy) warn on any growth and fail above 10 (rdma-core ibqueryerrors' example threshold);
    C(port_xmit_discards), C(out_of_buffer), C(rx_discards_phy) warn on any growth. Congestion counters (CNP, ECN,
    pause) are kept, with their growth, and not judged. A counter stuck at its largest value (the PMA counters have
    4, 8 or 16 bits and stop there) cannot show growth: the port warns, clear its counters (C(perfquery -R)). A
    counter that went down was cleared during the window: warn. A port read after but not before warns; one read
    before and gone after fails."
  - The fleet analysis charges a port's link error growth to its link where the pair matrix (perftest records) or the
    topology explains it - a bad cable fails no host, both ends warn - and to its host only when the growth is the
    host's own (several of its ports, a suspect node, a flap with no partner evidence; docs/port-counters.md).
  - A host without C(/sys/class/infiniband) gets one C(skip) record.
  - It only reads (sysfs, C(ethtool -S)), so it runs the same in check mode.
extends_documentation_fragment:
  - aifabric.acceptance._attributes
  - aifabric.acceptance._attributes.results
attributes:
  check_mode:
    support: full
    details: It only reads; check mode runs it in full.
  diff_mode:
    support: none
  idempotent:
    support: full
    details: It changes nothing.
options:
  phase:
    description: C(before) reads the counters at the start of the window; C(after) reads them again and judges.
    type: str
    choices: [before, after]
    default: before
  before:
    description:
      - With O(phase) C(after), the before task's registered result (or its C(results), or its record, or the
        record's C(facts.snapshot)) of this host.
    type: raw
  stage:
    description: The name of the stage the window wraps, kept in the records (C(params.stage)).
    type: str
    default: rdma
  ethtool:
    description: Also read C(ethtool -S) of each port's network interface, where C(ethtool) is installed.
    type: bool
    default: true
  timeout_s:
    description: Seconds each C(ethtool -S) may run; it is killed at it and the port's C(facts.unread) says so. Must be 1 or more.
    type: int
    default: 10
"""

EXAMPLES = r"""
- name: Read the fabric counters before the RDMA sweep
  aifabric.acceptance.port_counters:
    phase: before
  register: aifabric_counters_before

# ... the RDMA sweep ...

- name: Judge their growth during the sweep
  aifabric.acceptance.port_counters:
    phase: after
    before: "{{ aifabric_counters_before }}"
"""

RETURN = r"""
results:
  description:
    - The C(rdma.port_counters) records (docs/results.md). Phase C(before) - one, with C(facts.snapshot) (C(taken),
      C(epoch_s), C(ports) by C(<device>/<port>)). Phase C(after) - one per port; C(metrics) C(<counter>_growth) of
      each judged counter and C(window_s); C(facts) C(device), C(port), C(link_layer), C(netdev), C(flapped),
      C(unread), C(after), C(growth) (every counter that changed during the window, judged or not).
  returned: always
  type: list
  elements: dict
counts:
  description: Records per status.
  returned: always
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aifabric.acceptance.plugins.module_utils import argspec, modmain, probe_host, results
from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import port_counters

RANGES = {"timeout_s": argspec.POSITIVE}
SPEC = dict(port_counters.OPTIONS)


def _counters(module):
    host = probe_host.module_host(module)
    records = port_counters.records(host, module.params)
    return dict(changed=False, results=records, counts=results.count(records))


def main():
    module = argspec.module(AnsibleModule, RANGES, argument_spec=SPEC, supports_check_mode=True)
    modmain.run(module, "port_counters", _counters, fields={"results": []})


if __name__ == "__main__":
    main()
