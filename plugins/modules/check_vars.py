#!/usr/bin/python
# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

# This is a virtual module: it is entirely implemented as an action plugin (plugins/action/check_vars.py)
# and runs on the controller.

from __future__ import annotations

DOCUMENTATION = r"""
module: check_vars
short_description: Check the user's words and the run's configuration before anything runs
version_added: 1.0.0
author:
  - aifabric.acceptance contributors (@aifabric)
description:
  - "The first step of every playbook of the collection. It fails, naming each with what it probably meant, on every
    word of the inventory the collection would not read: a variable with one of its prefixes (C(acceptance_),
    C(aifabric_), C(expect_) and its roles' names - C(probe_), C(gpu_), C(nccl_), C(nccl_tests_), C(hccl_), C(rdma_),
    C(perftest_), C(k8s_), ...) that it does not read, a near-miss of a name it reads whatever its prefix (one or two
    letters changed, missing, doubled or transposed, a plural or singular: C(acceptence_expect)), and a key of a
    mapping it reads that none of its options has, at any depth (C(probe_options.packges),
    C(acceptance_expect.gpu_cnt)). Variables from group_vars and host_vars files, inventory vars and C(-e) alike;
    names of Ansible's own (C(ansible_*), magic variables) and names that are near none of the collection's are
    someone else's and pass."
  - "The vocabulary is read from the installed collection itself: every role's argument specs (options and
    suboptions), defaults and vars, the variables its playbooks and roles use, and for C(acceptance_expect)
    M(aifabric.acceptance.env_probe)'s O(aifabric.acceptance.env_probe#module:expect) keys."
  - A group that sets the collection's variables but holds none of the O(targets) (or that a C(group_vars) file
    names but the inventory does not have) fails the check too, naming the group, its variables and the targets.
  - These fail only as warnings with O(strict=false) (C(acceptance_strict_vars=false)).
  - "The run's configuration errors always fail it, before any stage: O(targets) empty (the host pattern matches no
    host), C(--tags) that select none of O(stage_tags), an O(fail_on) out of its choices, and, with
    O(require_report), a run that would have no report (the C(aifabric.acceptance.fleet_report) callback not
    enabled, or its configuration refused - a report directory or history store that the path rule refuses)."
  - Also names an C(acceptance_substrate) that is neither V(ssh) nor V(kubernetes).
  - "With O(roles), every host's variables against the argument spec of each role entry point the playbook applies to
    the host's substrate, with ansible-core's own validator, as the role's check at its start takes them (its options
    among the host's variables, templated): a value it refuses fails the run before any stage, naming the role, the
    entry point, ansible-core's message and the hosts, whatever O(strict) says. The collection's playbooks then apply
    their roles without that check of each host (C(rolespec_validate: false)): one check of the whole fleet instead of
    one task on every host at each role's start. A value that cannot be templated yet is a warning (not checked)."
  - "A host's variables are its own with those of the play above them (the C(vars) of a playbook's C(import_playbook)
    reach every play of the imported playbook, this check's too): both checks see what the roles will see (an extra
    variable still wins). The play's variables are templated once, with the variables of the host the task runs on."
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
    description: Fail on the inventory's words (V(false) - only warn); configuration errors fail whatever it says.
    type: bool
    default: true
  hosts:
    description: The hosts whose variables are checked (default the play's hosts, C(ansible_play_hosts_all)).
    type: list
    elements: str
  targets:
    description:
      - The hosts the run targets (its host pattern resolved, C(--limit) aside); empty fails the run. Unset - no
        host pattern check, no group check.
    type: list
    elements: str
  host_pattern:
    description: The host pattern O(targets) come from, to name in the message.
    type: str
  stage_tags:
    description:
      - The tags that select a stage of the playbook, per substrate (V(ssh), V(kubernetes)) or V(any); a C(--tags)
        value that is none of them (for the targets' substrates) fails the run, with the close tags. Unset - not
        checked.
    type: dict
  roles:
    description:
      - The role entry points the playbook applies, per substrate (V(ssh), V(kubernetes)) or V(any) (every host) -
        role names of the collection, or C(role:entry_point) (default entry point V(main)). Unset - no argument spec
        is checked here (the roles check their own at their start).
    type: dict
  require_report:
    description: The playbook ends with the run summary - fail when the run would have no report.
    type: bool
    default: false
  fail_on:
    description: The verdict that fails the run (C(acceptance_fail_on), else C(AIFABRIC_FAIL_ON)), as the user wrote it.
    type: str
  fail_on_source:
    description: Where O(fail_on) came from, to name in the message.
    type: str
    default: acceptance_fail_on
notes:
  - This module returns no result records (it measures nothing).
"""

EXAMPLES = r"""
- name: Check the inventory's variables and the run's configuration before anything runs
  aifabric.acceptance.check_vars:
    strict: "{{ acceptance_strict_vars | default(true) | bool }}"
    targets: "{{ query('ansible.builtin.inventory_hostnames', acceptance_hosts | default('gpu_nodes')) }}"
    host_pattern: "{{ acceptance_hosts | default('gpu_nodes') }}"
    stage_tags: {ssh: [probe, gpu, hccl, rdma]}
    require_report: true
    fail_on: "{{ acceptance_fail_on | default('fail') }}"
  run_once: true
"""

RETURN = r"""
unread:
  description:
    - Per host, the variable names the collection does not read (a near-miss, a name with its prefixes) and the
      unknown keys of its mappings (as C(<variable>.<key>)).
  returned: always
  type: dict
  sample: {gpu-node-01: [acceptence_expect, probe_options.packges]}
untargeted:
  description: Per group that holds none of the targets, the collection's variables it sets.
  returned: when targets is set
  type: dict
  sample: {gpu_nodes: [acceptance_expect]}
problems:
  description: Every finding, one sentence each (configuration errors first).
  returned: always
  type: list
  elements: str
"""
