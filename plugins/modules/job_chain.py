#!/usr/bin/python
# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

# This is a virtual module: it is entirely implemented as an action plugin (plugins/action/job_chain.py, the host's
# side in plugins/plugin_utils/job_chain.py).

from __future__ import annotations

DOCUMENTATION = r"""
module: job_chain
short_description: Start modules as async jobs that run one after the other on the host, in one call
version_added: 2.1.0
author:
  - aifabric.acceptance contributors (@aifabric)
description:
  - Starts every job of O(jobs) on the host in one call and returns at once; on the host the jobs then run one after
    the other, each as C(async_wrapper) runs an async job (C(async) with C(poll=0)) - its time limit O(jobs[].timeout_s),
    the kill of its module's process group at that limit ("Timeout exceeded"), its result in a job file.
  - Each job's result is read with M(aifabric.acceptance.job_wait) under the job's C(ansible_job_id) (RV(jobs)), as the
    result of that module's own async task - the same result, records included.
  - A job whose result is failed (the module failed, its time limit passed, output that could not be read) ends the
    chain - every later job's result is C(skipped), its C(msg) saying it was not run, as a host whose task failed runs no
    further task. A job whose C(async_wrapper) gives no result within its limit + 60 s is failed.
  - One task a host instead of one start per job - the GPU stage (role C(aifabric.acceptance.gpu)) starts its checks
    with it (O(aifabric.acceptance.gpu#role:main:gpu_async)) and reads them with one M(aifabric.acceptance.job_wait)
    task that loops over RV(jobs).
  - The call is pipelined where the connection pipelines modules, else the program goes through a file in a remote
    temporary directory. Each job's module gets its arguments as given - no C(module_defaults) apply to them.
attributes:
  check_mode:
    support: none
    details:
      - In check mode no job starts (the task is skipped); each module's own task says what it would run.
  diff_mode:
    support: none
  idempotent:
    support: none
    details:
      - Every run starts the jobs again.
extends_documentation_fragment: [aifabric.acceptance._attributes]
options:
  jobs:
    description: The jobs, in the order they run on the host.
    type: list
    elements: dict
    required: true
    suboptions:
      module:
        description: The module's fully qualified name (a Python module).
        type: str
        required: true
      args:
        description: Its arguments.
        type: dict
        default: {}
      timeout_s:
        description: Its time limit in seconds, as C(async) of its own task would be (C(async_wrapper) kills it past it).
        type: int
        required: true
      name:
        description: A name for it (RV(jobs[].name); default the module's name), for the loop label of its wait.
        type: str
seealso:
  - module: aifabric.acceptance.job_wait
notes:
  - This module returns no result records - the jobs' modules return them, read by M(aifabric.acceptance.job_wait).
  - The host needs Python 3 (the interpreter the jobs' modules run with).
"""

EXAMPLES = r"""
- name: Start - GEMM, then nccl-tests, on every host (one call a host)
  aifabric.acceptance.job_chain:
    jobs:
      - {name: gemm, module: aifabric.acceptance.gemm_bench, args: {dtypes: [bf16]}, timeout_s: 1000}
      - {name: nccl, module: aifabric.acceptance.nccl_test, args: {collectives: [all_reduce]}, timeout_s: 2000}
  changed_when: false
  register: checks

- name: The checks (one result a job)
  aifabric.acceptance.job_wait:
    jid: "{{ job.ansible_job_id }}"
    wait_timeout_s: "{{ job.timeout_s + 30 }}"
  loop: "{{ checks.jobs }}"
  loop_control:
    loop_var: job
    label: "{{ job.name }}"
"""

RETURN = r"""
ansible_job_id:
  description: The first job's id.
  returned: success
  type: str
  sample: "j512186146478.1"
jobs:
  description: The jobs started, in order, each with the id its M(aifabric.acceptance.job_wait) polls.
  returned: success
  type: list
  elements: dict
  contains:
    ansible_job_id:
      description: The job's id (its job file in the shell's C(async_dir)).
      type: str
      sample: "j512186146478.2"
    module:
      description: Its module.
      type: str
      sample: aifabric.acceptance.nccl_test
    name:
      description: Its name (O(jobs[].name), else its module's).
      type: str
      sample: nccl
    timeout_s:
      description: Its time limit in seconds.
      type: int
      sample: 2000
"""
