# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations


class ModuleDocFragment:
    # The one mpirun option that allreduce_probe's mpirun launch shares word for word with nccl_test and hccl_test:
    # in DOCUMENTATION, and alone as MPIRUN_EXTRA_ARGS (aifabric.acceptance._collective_launch.mpirun_extra_args).
    # Both are plain string literals: ansible-test's yamllint reads doc fragments from the source text.
    MPIRUN_EXTRA_ARGS = r"""
options:
  mpirun_extra_args:
    description: Extra C(mpirun) argv words, one per element.
    type: list
    elements: str
    default: []
"""

    # The options the collective benchmark modules (nccl_test, hccl_test) share: iterations, the mpirun launch of
    # a multi-node run, its limits and run id, and import mode (spec: tools/_mpirun.py COLLECTIVE_SPEC).
    DOCUMENTATION = r"""
options:
  iterations:
    description:
      - C(-n), timed iterations per size.
      - Must be 1 or more.
    type: int
  warmup_iterations:
    description:
      - C(-w), warmup iterations per size.
      - Must be 0 or more.
    type: int
  extra_args:
    description: Extra argv words for the binary, one per element.
    type: list
    elements: str
    default: []
  hosts:
    description: Hosts of a multi-node run, rank 0's first (for example C(groups['gpu_nodes'])). Empty runs on this host only.
    type: list
    elements: str
    default: []
  mpirun:
    description: The C(mpirun) program (name or absolute path).
    type: str
    default: mpirun
  mpirun_env_forward:
    description: Launcher environment variables forwarded to every rank by name (Open MPI C(-x NAME), MPICH C(-genvlist)).
    type: list
    elements: str
    default: [PATH, LD_LIBRARY_PATH]
  tcp_if_include:
    description: Open MPI only, interface or CIDR for its TCP traffic (C(btl_tcp_if_include), C(oob_tcp_if_include)).
    type: str
  timeout_s:
    description:
      - Seconds before one binary's run is stopped. A multi-node run's C(mpirun) gets C(SIGTERM) first (it tears down
        its daemons and ranks on every host), C(SIGKILL) 10 seconds later; then every process left on this host that
        carries the run id is stopped. The same cleanup runs when the module itself is interrupted.
      - Must be 1 or more.
    type: int
    default: 1800
  run_id:
    description:
      - Identifier of this run, exported as C(AIFABRIC_RUN_TAG) to the launcher and every rank on every host, so that
        M(aifabric.acceptance.cleanup) run on every host can stop whatever the run left behind (a launcher killed
        outright, a lost controller). Default an unguessable new identifier, returned as C(run_id).
      - 1-128 letters, digits, V(_), V(.), V(:) or V(-), starting with a letter or digit.
    type: str
  from_output:
    description:
      - Import mode, a saved output file of the tool on the target to read instead of running.
      - Only a regular file of at most 64 MiB is read (symbolic links to one are followed); a missing or unreadable
        file, a directory, a device such as C(/dev/zero), a FIFO, a socket or a larger file fails the task with the
        reason, before anything is read. A file that is read but is not the tool's output gives an C(error) record.
    type: path
  collective:
    description: Import mode, the collective of O(from_output) when the file does not say.
    type: str
  node_count:
    description:
      - Import mode, the number of nodes of the run when the file does not say.
      - Must be 1 or more.
    type: int
  mpirun_extra_args:
    description: Extra C(mpirun) argv words, one per element.
    type: list
    elements: str
    default: []
"""
