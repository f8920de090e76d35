#!/usr/bin/python
# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

# The action plugin (plugins/action/job_wait.py) does the waiting, on the controller; each of its polls reads the
# job's file on the host as ansible.builtin.async_status's module does and, once the job finished, removes the file
# in the same call (O(cleanup)): module_utils/async_job.py's poll, run by this module where the connection does not
# pipeline, else sent alone to the host's interpreter (the light poll, without this module's payload).

from __future__ import annotations

DOCUMENTATION = r"""
module: job_wait
short_description: Wait for a host's async job quietly, each poll bounded, and return the job's result
version_added: 1.1.0
author:
  - aifabric.acceptance contributors (@aifabric)
description:
  - Waits for the async job O(jid) (started by an earlier task with C(async) and C(poll=0)) on the host, and returns
    the finished job's result as its own - what M(ansible.builtin.async_status) returns once the job finished (the
    module's C(results) records, C(failed), C(msg), C(changed), with C(ansible_job_id), C(started) and C(finished)).
    A job that failed fails this task the same way.
  - One task per host, one line of output per host - unlike M(ansible.builtin.async_status) in an C(until) loop,
    which prints one C(FAILED - RETRYING) line per poll that finds the job still running. The polls are the
    action's own, on the controller - a read of the job's file every O(poll_s) seconds (C(-vvv) shows them), with
    the job directory of the shell's C(async_dir) (C(ANSIBLE_ASYNC_DIR)), as M(ansible.builtin.async_status) does.
  - Where the connection pipelines modules (C(ansible_pipelining)) a poll sends the host's module interpreter only the
    reading's own code, not this module's whole payload (about 18 ms of the host's CPU against about 180 ms); else
    this module polls, with the same code. The answers are the same.
  - Each call to the host is bounded by O(poll_timeout_s) whatever the connection settings (an inventory's own
    C(ansible_ssh_common_args) may leave out SSH keep-alives) - a poll that gets no answer within it is stopped (the
    SSH client and ControlMaster of the call are killed) and counts as a failed poll, as does a connection failure.
    O(unreachable_after_polls) failed polls in a row make the host unreachable, and no further call is made to it.
  - A poll whose C(async_status) module runs but gives no result - output that cannot be parsed (the module killed,
    for example for memory) or an error other than a connection failure (a failed transfer) - is polled again, as
    ansible-core's own C(async) polling does. O(status_errors_after_polls) of them in a row fail the task, saying so
    with the last error; the host answers, so it is not declared unreachable, and the job and its file are left.
    The two kinds of failed poll are counted apart.
  - A poll within the first 10 s of the wait that finds no job file (C(could not find job)) is a job not started yet
    - the task that started it returns after at most 2.5 s even when the job's file is not written yet - and is polled
    again; a later one fails the task with that message.
  - A job that has not finished after O(wait_timeout_s) fails the task, saying so (the job goes on until its own
    C(async) limit). The action returns within O(wait_timeout_s) plus twice (O(poll_timeout_s) + 6 s) - its last
    poll and the removal of the job's file - so a task C(timeout) above that lets the action's own deadline and
    message come first.
  - With O(cleanup), the job's file is removed once the job finished, by the poll that finds it finished - one call
    to the host, the poll reads the file, as M(ansible.builtin.async_status) does, and removes it; not in check
    mode, not a file that names another job.
  - Waits on the controller; each poll runs this module on the host (Python, as M(ansible.builtin.async_status)),
    with the job directory of the shell's C(async_dir) (C(ANSIBLE_ASYNC_DIR), C(~/.ansible_async)) in its
    environment, as C(async_wrapper) had it.
extends_documentation_fragment: [aifabric.acceptance._attributes]
attributes:
  check_mode:
    support: full
    details: Polls the job (reading its file only); the job's file is not removed.
  diff_mode:
    support: none
  idempotent:
    support: N/A
    details: Returns the job's result; the job's own module decides C(changed).
options:
  jid:
    description:
      - The job's id, C(ansible_job_id) of the task that started it (C(async), C(poll=0)).
      - One name of letters, digits, underscores, dots, colons or hyphens, starting with a letter or digit (as
        C(async_wrapper) makes them) -
        anything else (a C(/), a C(..)) fails the task before any call, since the job's file is the job directory
        joined with it.
    type: str
    required: true
  wait_timeout_s:
    description:
      - Seconds to wait for the job, its polls included; past it the task fails. Set it above the job's C(async)
        limit to see the job's own end (C(async_wrapper)'s C(Timeout exceeded) included).
      - Must be 0 or more (0 - one poll).
    type: int
    default: 3600
  poll_s:
    description: Seconds between two polls. Must be more than 0.
    type: float
    default: 5
  poll_timeout_s:
    description:
      - The longest one call to the host may take (a poll, the removal of the job's file, the removal of the remote
        temporary directory); a call past it fails, and the processes that hold its connection on the controller are
        killed. Must be more than 0.
    type: float
    default: 30
  unreachable_after_polls:
    description: Failed polls in a row (no answer within O(poll_timeout_s), or a connection failure) after which the
      host is declared unreachable. Must be 1 or more.
    type: int
    default: 2
  status_errors_after_polls:
    description:
      - Polls in a row whose C(async_status) module gave no result (output that could not be parsed, an error other
        than a connection failure) after which the task fails. The job may still be running; its file is left.
      - Must be 1 or more.
    type: int
    default: 3
  cleanup:
    description: Remove the job's file once the job finished (its result came back).
    type: bool
    default: true
  async_dir:
    description:
      - The job directory on the host, where C(async_wrapper) wrote the job's file - set by the module's action from
        the shell's C(async_dir) (C(ANSIBLE_ASYNC_DIR)), as the task that started the job used it; a task does not
        give it (the action's options do not take it).
      - C(~) is expanded on the host, as the user the module runs as (the job's user), as C(async_wrapper) did.
    type: path
    required: true
seealso:
  - module: ansible.builtin.async_status
notes:
  - This module returns no result records of its own - those of the job's module, when it returns them.
"""

EXAMPLES = r"""
- name: Start - Measure GEMM throughput on every GPU
  aifabric.acceptance.gemm_bench:
    dtypes: [bf16]
  async: 1000
  poll: 0
  register: gemm_job

- name: Measure GEMM throughput on every GPU
  aifabric.acceptance.job_wait:
    jid: "{{ gemm_job.ansible_job_id }}"
    wait_timeout_s: 1030
    poll_s: 5
    poll_timeout_s: 30
  timeout: 1100      # above wait_timeout_s + 2 x (poll_timeout_s + 6)
  when: gemm_job.ansible_job_id is defined
"""

RETURN = r"""
ansible_job_id:
  description: The job's id (O(jid)).
  returned: always
  type: str
  sample: "j512186146478.4137"
started:
  description: Whether the job started (M(ansible.builtin.async_status)'s).
  returned: success
  type: bool
  sample: true
finished:
  description: Whether the job finished (false - it did not finish within O(wait_timeout_s)).
  returned: success
  type: bool
  sample: true
results:
  description: The result records of the job's module, when it returns them (every other key of its result comes
    back too).
  returned: when the job's module returns them
  type: list
  elements: dict
  sample: [{check: gpu.gemm_bf16, status: pass, host: gpu-node-01, target: "GPU0"}]
results_file:
  description: The job's file on the host.
  returned: success
  type: str
  sample: /root/.ansible_async/j512186146478.4137
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aifabric.acceptance.plugins.module_utils import modmain, statedir
from ansible_collections.aifabric.acceptance.plugins.module_utils.async_job import poll


def main():
    module = AnsibleModule(
        argument_spec=dict(
            jid=dict(type="str", required=True),
            wait_timeout_s=dict(type="int", default=3600),
            poll_s=dict(type="float", default=5.0),
            poll_timeout_s=dict(type="float", default=30.0),
            unreachable_after_polls=dict(type="int", default=2),
            status_errors_after_polls=dict(type="int", default=3),
            cleanup=dict(type="bool", default=True),
            async_dir=dict(type="path", required=True),
        ),
        supports_check_mode=True,
    )
    modmain.run(module, "job_wait", _poll)


def _poll(module):
    """One poll of the job; the job's own result printed as it is (async_status's answer), the module exits."""
    jid = module.params["jid"]
    if not statedir.NAME_RE.match(jid):      # the action refuses it first: never a path outside the directory
        module.fail_json(msg="jid %.100r is not a job id" % jid, ansible_job_id=jid)
    # the job directory as async_wrapper found it (the action gives the shell's async_dir; type path expands ~ here)
    data = poll(jid, module.params["async_dir"], module.params["cleanup"] and not module.check_mode)
    # the job's own result as it is (its invocation, changed, results), as ansible.builtin.async_status returns it
    module.exit_json(**data)


if __name__ == "__main__":
    main()
