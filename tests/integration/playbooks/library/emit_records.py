# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Test-only module for the fleet_report callback integration test (not part of the collection).

Returns the records it is given under ``results`` (as the collection's modules do), and
fails on request, so a playbook can exercise every path of the callback.
"""

from __future__ import annotations

DOCUMENTATION = r"""
module: emit_records
short_description: Test-only - return the given result records, optionally failing
description: Returns O(records) under C(results); fails with O(msg) when O(fail) is true.
author: [aifabric.acceptance contributors (@aifabric)]
options:
  records: {description: Records to return., type: list, elements: dict, default: []}
  fail: {description: Fail the task., type: bool, default: false}
  msg: {description: Failure message., type: str, default: test failure}
  env: {description: Ignored; what a collective module's C(env) would carry (a group-screen marker)., type: dict}
"""

from ansible.module_utils.basic import AnsibleModule


def main():
    module = AnsibleModule(
        argument_spec=dict(
            records=dict(type="list", elements="dict", default=[]),
            fail=dict(type="bool", default=False),
            msg=dict(type="str", default="test failure"),
            env=dict(type="dict"),
            peer_name=dict(type="str"),     # as an import task names its pair's other end (record admission)
        ),
        supports_check_mode=True,
    )
    if module.params["fail"]:
        module.fail_json(msg=module.params["msg"], stderr="stderr of the failing tool\n\x1b[31mred\x07\n",
                         results=module.params["records"])
    module.exit_json(changed=False, results=module.params["records"])


if __name__ == "__main__":
    main()
