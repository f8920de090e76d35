# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations


class ModuleDocFragment:
    # The perftest options the sweep runner (perftest_sweep, the one RDMA protocol) and the import/cleanup module
    # (perftest) share: the test's parameters, its limits and expectations, the state directory and the CPU governor
    # (spec: tools/_perftest_options.py TEST_SPEC and module_utils/perftest_state.py STATE_SPEC).
    DOCUMENTATION = r"""
options:
  inventory_hostname:
    description:
      - Inventory name of this host, stored as each record's C(host) (default the node's hostname).
      - Before 2.0.0 named O(host_name), still accepted with a deprecation warning until 3.0.0.
    type: str
    aliases: [host_name]
  run_id:
    description:
      - Name of the run; its runners, servers, clients and their files live in O(state_root)/<host id>/O(run_id)
        (host id - the node name and the first 12 hex digits of C(/etc/machine-id), so hosts sharing a state root
        stay apart).
      - 1-128 letters, digits, V(_), V(.), V(:) or V(-), starting with a letter or digit (never V(..), never a
        V(/)); anything else fails the task before any file is touched.
      - Give each run an unguessable id (the role aifabric.acceptance.rdma adds 128 random bits to its timestamp).
    type: str
    default: default
  state_root:
    description:
      - Directory for per-run state (the runner's progress and records, process handles and outputs, governor
        state). Must survive between tasks.
      - Created V(0700) when absent. An existing directory is used only when it is a real directory (not a
        symbolic link) owned by the user the module runs as and not writable by group or others; otherwise the
        task fails and says why. Every path under it is checked to stay inside it before any write, kill or
        removal, and files are created without following symbolic links.
      - Directories under it are created V(0700) with a private C(.aifabric-acceptance) marker file; only marked
        directories are used, cleaned up or have their processes stopped (an unmarked or foreign one fails the task
        or is left alone and reported).
      - Default C(/run/aifabric-acceptance/perftest) when the module runs as root (writable by root alone),
        else C($XDG_RUNTIME_DIR/aifabric-acceptance/perftest) or C(~/.cache/aifabric-acceptance/perftest).
    type: path
  keep_state:
    description: Keep the per-step output files after their records were built (for debugging).
    type: bool
    default: false
  ib_port:
    description:
      - IB port of the devices (C(-i)).
      - Must be between 1 and 255.
    type: int
    default: 1
  gid_index:
    description:
      - GID index (C(-x)) for every device. When unset it is chosen from sysfs per device.
      - Must be between 0 and 255.
    type: int
  size:
    description:
      - Message size in bytes (C(-s)). Ignored with O(all_sizes).
      - Not passed to C(ib_atomic_bw) and C(ib_atomic_lat) - perftest fixes their size at 8 bytes and refuses C(-s).
      - Must be 1 or more.
    type: int
  all_sizes:
    description:
      - Run every message size from 2 bytes to 8 MiB (C(-a)); records keep every size in C(series).
      - Not passed to C(ib_atomic_bw) and C(ib_atomic_lat) (one size, 8 bytes).
    type: bool
    default: false
  atomic_operation:
    description:
      - The atomic operation of C(ib_atomic_bw) and C(ib_atomic_lat) (C(-A), passed to both sides); unset leaves
        perftest's own default (V(FETCH_AND_ADD)). The other tests ignore it.
      - The record's C(facts.atomic_operation) is the operation the output's title names.
    type: str
    choices: [FETCH_AND_ADD, CMP_AND_SWAP]
  iterations:
    description:
      - Iterations per size (C(-n)).
      - Must be 1 or more.
    type: int
  duration_s:
    description:
      - Run for this many seconds (C(-D)) instead of a number of iterations.
      - Must be 1 or more.
    type: int
  qps:
    description:
      - Number of queue pairs (C(-q)), bandwidth tests only.
      - Must be between 1 and 65536.
    type: int
  bidirectional:
    description: Traffic in both directions (C(-b)), bandwidth tests only; judged against twice the rate.
    type: bool
    default: false
  rdma_cm:
    description: Connect the QPs with rdma_cm (C(-R)).
    type: bool
    default: false
  report_gbits:
    description: Ask perftest for Gbit/s (C(--report_gbits)), bandwidth tests only.
    type: bool
    default: true
  ignore_cpu_freq:
    description: Pass C(-F) (do not fail/warn when the CPU frequency is not at its maximum).
    type: bool
    default: false
  extra_args:
    description: More perftest arguments, one argv word per element.
    type: list
    elements: str
    default: []
  timeout_s:
    description:
      - Hard limit for one perftest process (client attempt, or a server's whole life).
      - Must be 1 or more.
    type: int
    default: 120
  cpu_governor:
    description:
      - Set this CPU frequency governor (usually V(performance)) while the tests run (a runner sets it once for its
        whole schedule), and restore the previous ones afterwards. Unset leaves the governor alone. Where cpufreq is absent the setting is skipped and
        the records say why.
    type: str
  cpu_sysfs:
    description: The cpufreq sysfs tree (for tests).
    type: path
    default: /sys/devices/system/cpu
  sysfs_root:
    description: Prefix for C(/sys/class/infiniband) (for tests; empty means the real tree).
    type: str
    default: ''
  tool_dir:
    description: Directory holding the perftest binaries (default from PATH).
    type: path
  expect:
    description:
      - "Expectations per metric, overriding the defaults, for example C({bw_avg_gbit_s: {min: 360}}) or
        C({lat_typical_us: {max: 3}}). A metric mapped to C(null) drops its default rule. Rule keys are
        C(min), C(max), C(equals), C(warn_below_pct), C(source)."
    type: dict
    default: {}
  line_rate_floor_pct:
    description:
      - Default bandwidth floor, in percent of the lower active port rate of the two ends (read from sysfs,
        for example C(400 Gb/sec (4X NDR))); doubled for bidirectional runs. V(0) turns it off.
      - Must be between 0 and 100.
    type: float
    default: 90
"""
