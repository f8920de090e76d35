# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action behind the aifabric.acceptance.check_vars module: inventory variables the collection would not read."""

from __future__ import annotations

import os

from ansible.errors import AnsibleActionFail

from ansible_collections.aifabric.acceptance.plugins.plugin_utils import inventory_vars
from ansible_collections.aifabric.acceptance.plugins.plugin_utils.controller_action import ControllerAction

# plugins/action/check_vars.py -> the collection's root (its playbooks/ and roles/ are scanned)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


class ActionModule(ControllerAction):
    ARGUMENT_SPEC = {
        "strict": {"type": "bool", "default": True},
        "hosts": {"type": "list", "elements": "str"},
    }

    def act(self, args, task_vars, result):
        hostvars = task_vars.get("hostvars") or {}
        hosts = args["hosts"] if args["hosts"] is not None else list(task_vars.get("ansible_play_hosts_all") or [])
        names, expects, substrates = {}, {}, {}
        for host in hosts:
            if host in hostvars:
                names[host] = [str(name) for name in hostvars[host]]
                expects[host] = hostvars[host].get("acceptance_expect")
                substrates[host] = hostvars[host].get("acceptance_substrate")
        found = inventory_vars.unread(names, inventory_vars.known_names(ROOT))
        for more in (inventory_vars.unknown_expect_keys(expects), inventory_vars.unknown_substrates(substrates)):
            for host, entries in more.items():
                found[host] = found.get(host, []) + entries
        result.update(changed=False, unread={h: [name for name, _close in v] for h, v in found.items()})
        if not found:
            return result
        text = ("variables that look like aifabric.acceptance's but that it does not read (a misspelling, or an "
                "expectation outside the acceptance_expect mapping or a key of it that is no environment expectation, or an "
                "acceptance_substrate that is neither ssh nor kubernetes): %s" % inventory_vars.message(found))
        if args["strict"]:
            raise AnsibleActionFail(text + ". Fix or remove them, or set acceptance_strict_vars=false to only warn.")
        self._display.warning(text)
        result["warnings"] = [text]
        return result
