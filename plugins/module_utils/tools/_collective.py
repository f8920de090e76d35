# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The options of a run that the collective benchmark tools' adapters share (private; nccl_tests, hccl).

Both tools run one binary per collective over a size sweep; ``OPTIONS`` (the AnsibleModule argument_spec shape)
holds what such a run takes in both: the collectives and where their binaries are, the sweep's step and
iterations, the result check, the reduction, the ranks' environment and ranks per host, the launcher's mpirun
options (launch.COLLECTIVE_SPEC, where the modules' launch plumbing is too), the timeout, the profile options and
``expect``. Each adapter adds its own (sizes, ...). Runs on the targets: Python 3.8+, no Ansible imports.
"""

from __future__ import annotations

from ansible_collections.aifabric.acceptance.plugins.module_utils import expectations, launch

# launch.COLLECTIVE_SPEC's options that describe the run (the others, hosts, run_id and import mode's, are the
# modules' own: collective_main.SPEC)
LAUNCH_OPTIONS = ("iterations", "warmup_iterations", "extra_args", "mpirun", "mpirun_env_forward", "mpirun_extra_args",
                  "tcp_if_include", "timeout_s")

OPTIONS = dict(
    collectives=dict(type="list", elements="str", default=["all_reduce"]),
    tool_dir=dict(type="path"),
    if_missing=dict(type="str", choices=["error", "skip"], default="error"),
    step_factor=dict(type="int", default=2),
    step_bytes=dict(type="int"),
    verify_data=dict(type="bool"),
    datatype=dict(type="str"),
    op=dict(type="str"),
    root=dict(type="int"),
    env=dict(type="dict", default={}),
    ranks_per_node=dict(type="int", default=0),
    **dict((name, launch.COLLECTIVE_SPEC[name]) for name in LAUNCH_OPTIONS),
    **expectations.PROFILE_SPEC,
    expect=dict(type="dict", default={}),
)
