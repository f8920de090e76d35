#!/usr/bin/python
# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import annotations

DOCUMENTATION = r"""
module: trusted_path
short_description: Refuse a directory or file another local user could turn against the run
version_added: 1.0.0
author: aifabric.acceptance contributors (@aifabric)
description:
  - The collection's one rule for a path it writes into or executes from (the same code its modules use).
    every directory on the way is owned by root or the user and not writable by group or others unless sticky
    (C(/tmp)); a symbolic link on the way is followed only when root or the user owns it and it sits in such a
    directory.
  - A directory (O(kind=directory)) must be a real directory (not a link) owned by the user and not writable by
    group or others; missing components are created (O(create=true)), C(0700) when O(private=true), else C(0755).
  - A file (O(kind=file), something to execute or source) must be a regular file owned by root or the user and not
    writable by group or others; C(..) and links on its path are resolved as the kernel resolves them (C(a/../b) is
    the parent of where the link C(a) points, never C(b)) and each link must pass the rule above. RV(path) is the
    resolved path; run the file by that path, so that what runs is what was checked.
  - The roles call it before they install into a directory the user names, and on every binary before they run
    it (its directory passing is not enough, a file another user owns in a root-owned directory is refused too).
    Anything else fails the task with the rule it breaks.
extends_documentation_fragment:
  - aifabric.acceptance._attributes
attributes:
  check_mode:
    support: full
    details: Checks what exists and creates nothing.
  diff_mode:
    support: none
  idempotent:
    support: full
options:
  path:
    description: Absolute path to check.
    type: path
    required: true
  kind:
    description:
      - V(directory) to write into (owned by the user), V(bin_directory) to execute from (owned by root or the
        user), V(file) to execute or source.
    type: str
    choices: [directory, bin_directory, file]
    default: directory
  create:
    description: Create a missing directory (and missing parents). With V(false), an absent directory is reported
      as RV(exists=false) once what exists of its path passed the checks.
    type: bool
    default: false
  private:
    description: Mode of the directories created, C(0700) (V(true)) or C(0755) (V(false)).
    type: bool
    default: true
  required:
    description: With O(kind=file), an absent file fails the task (V(true)) or is reported as RV(exists=false)
      (V(false)), once its directory passed the checks.
    type: bool
    default: true
"""

EXAMPLES = r"""
- name: The install directory must be ours before the tarball goes there
  aifabric.acceptance.trusted_path:
    path: /opt/nccl-tests
    create: true
    private: false

- name: A binary is run only by the path that passed the rule
  aifabric.acceptance.trusted_path:
    path: /opt/nccl-tests/build/all_reduce_perf
    kind: file
  register: checked

- name: Run it
  ansible.builtin.command:
    argv: ["{{ checked.path }}", "-h"]
  changed_when: false
"""

RETURN = r"""
path:
  description: The real path (trusted symbolic links and C(..) on the way resolved as the kernel does); for a file,
    the path to run it by.
  returned: always
  type: str
  sample: /opt/nccl-tests
exists:
  description: Whether the path exists now.
  returned: always
  type: bool
  sample: true
executable:
  description: With O(kind=file), whether the file exists and has an execute bit for this user.
  returned: always
  type: bool
  sample: true
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.aifabric.acceptance.plugins.module_utils import modmain, statedir


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            kind=dict(type="str", choices=["directory", "bin_directory", "file"], default="directory"),
            create=dict(type="bool", default=False),
            private=dict(type="bool", default=True),
            required=dict(type="bool", default=True),
        ),
        supports_check_mode=True,
    )
    modmain.run(module, "trusted_path", _trusted, fields={"path": module.params["path"]})


def _trusted(module):
    p = module.params
    if p["kind"] == "file":
        return _trusted_file(p)
    existed = os.path.lexists(p["path"])
    path = statedir.trusted_dir(p["path"], create=p["create"] and not module.check_mode,
                                private=p["private"], what=p["kind"].replace("_", " "),
                                exec_only=p["kind"] == "bin_directory")
    exists = os.path.isdir(path)
    return dict(changed=exists and not existed, path=path, exists=exists, executable=False)


def _trusted_file(p):
    """A file to execute or source: its resolved path (statedir.trusted_file); an absent one with required=false
    once its directory passed (statedir.trusted_dir, exec_only)."""
    if not p["required"] and not os.path.lexists(p["path"]):
        directory = statedir.trusted_dir(os.path.dirname(p["path"]), create=False, what="directory of file",
                                         exec_only=True)
        return dict(changed=False, path=os.path.join(directory, os.path.basename(p["path"])), exists=False,
                    executable=False)
    path = statedir.trusted_file(p["path"], what="file")
    return dict(changed=False, path=path, exists=True, executable=os.access(path, os.X_OK))


if __name__ == "__main__":
    main()
