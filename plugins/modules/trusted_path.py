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
  - A file (O(kind=file), something to execute or source) must be owned by root or the user and not writable by
    group or others.
  - The roles call it before they install into, or run binaries from, a directory the user names. Anything else
    fails the task with the rule it breaks.
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
"""

EXAMPLES = r"""
- name: The install directory must be ours before the tarball goes there
  aifabric.acceptance.trusted_path:
    path: /opt/nccl-tests
    create: true
    private: false
"""

RETURN = r"""
path:
  description: The real path (trusted symbolic links on the way resolved).
  returned: always
  type: str
  sample: /opt/nccl-tests
exists:
  description: Whether the path exists now.
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
        ),
        supports_check_mode=True,
    )
    modmain.run(module, "trusted_path", _trusted, fields={"path": module.params["path"]})


def _trusted(module):
    p = module.params
    existed = os.path.lexists(p["path"])
    if p["kind"] == "file":
        path = statedir.trusted_file(p["path"], what="file")
    else:
        path = statedir.trusted_dir(p["path"], create=p["create"] and not module.check_mode,
                                    private=p["private"], what=p["kind"].replace("_", " "),
                                    exec_only=p["kind"] == "bin_directory")
    exists = os.path.isdir(path) if p["kind"] != "file" else True
    return dict(changed=exists and not existed, path=path, exists=exists)


if __name__ == "__main__":
    main()
