#!/usr/bin/python
# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

# This is a virtual module: it is entirely implemented as an action plugin (plugins/action/check_vars.py)
# and runs on the controller.

from __future__ import annotations

DOCUMENTATION = r"""
module: check_vars
short_description: Fail on inventory variables that look like the collection's but that it does not read
version_added: 1.0.0
author:
  - aifabric.acceptance contributors (@aifabric)
description:
  - Role argument specs catch a misspelt role parameter, not an inventory variable. This step lists, for each host,
    the variables whose names start like the collection's (C(expect_), C(acceptance_), C(gpu_), C(nccl_), C(rdma_),
    C(hccl_), C(k8s_), C(aifabric_)) but that no playbook or role of the collection reads - a misspelling
    (C(gpu_nccl_test_bin_dir)), or an expectation set as a plain host variable (C(expect_gpu_count=1)) where the
    collection reads the C(acceptance_expect) mapping - and fails naming them, with the close names it does read.
  - It also names each key of a host's C(acceptance_expect) that is no environment expectation (the keys of
    M(aifabric.acceptance.env_probe)'s O(aifabric.acceptance.env_probe#module:expect) - C(gpu_count), C(hca_count),
    C(npu_count), ...; for example the old name C(acceptance_expect.expect_gpu_count)), and an C(acceptance_expect)
    that is not a mapping, and an C(acceptance_substrate) that is neither V(ssh) nor V(kubernetes) (such a host
    would be tested on no substrate).
  - The names read are scanned from the installed collection's own playbooks and roles (variables used, role
    argument specs and defaults).
  - Every playbook of the collection runs it first; C(acceptance_strict_vars=false) only warns.
  - Runs on the controller.
extends_documentation_fragment: [aifabric.acceptance._attributes]
attributes:
  check_mode:
    support: full
    details: Reads variables only.
  diff_mode:
    support: none
  idempotent:
    support: full
options:
  strict:
    description: Fail when a variable is not read (V(false) - only warn).
    type: bool
    default: true
  hosts:
    description: The hosts whose variables are checked (default the play's hosts, C(ansible_play_hosts_all)).
    type: list
    elements: str
notes:
  - This module returns no result records (it measures nothing).
"""

EXAMPLES = r"""
- name: Check the inventory's variables before anything runs
  aifabric.acceptance.check_vars:
    strict: "{{ acceptance_strict_vars | default(true) | bool }}"
  run_once: true
"""

RETURN = r"""
unread:
  description:
    - Per host, the variable names that look like the collection's but are not read, and the unknown keys of its
      C(acceptance_expect) (as C(acceptance_expect.<key>)).
  returned: always
  type: dict
  sample: {gpu-node-01: [expect_gpu_count, acceptance_expect.expect_hca_count]}
"""
