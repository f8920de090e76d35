# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action behind the aifabric.acceptance.check_vars module: the user's words and the run's configuration, checked
before anything runs (plugins/plugin_utils/inventory_vars.py holds the vocabulary and the rules)."""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping

from ansible.errors import AnsibleActionFail
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.aifabric.acceptance.plugins.plugin_utils import fleet, inventory_vars, run_store
from ansible_collections.aifabric.acceptance.plugins.plugin_utils.controller_action import ControllerAction

# plugins/action/check_vars.py -> the collection's root (its playbooks/ and roles/ are scanned)
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# the hosts a refused value names, at most (then their count)
HOSTS_SHOWN = 5
# tags that select by themselves (ansible-playbook's special tags)
SPECIAL_TAGS = ("all", "always", "never", "tagged", "untagged")
GROUP_VARS_EXTENSIONS = (".yml", ".yaml", ".json")


def _groups_of(hostvars, task_vars, targets):
    """({group: [names it sets itself]}, {group: [its hosts]}) for the groups that hold none of ``targets``: the
    inventory's groups (their inventory vars and group_vars files), and the names of group_vars files next to the
    inventory or the playbook that name no group of the inventory. ({}, {}) where the inventory is not reachable."""
    inventory = getattr(hostvars, "_inventory", None)
    loader = getattr(hostvars, "_loader", None)
    if inventory is None or loader is None:
        return {}, {}
    from ansible.inventory.group import Group   # pylint: disable=import-outside-toplevel
    from ansible.vars import plugins as vars_plugins    # pylint: disable=import-outside-toplevel
    sources = [s for s in (task_vars.get("ansible_inventory_sources") or []) if isinstance(s, str) and os.path.exists(s)]
    bases = [s if os.path.isdir(s) else os.path.dirname(s) for s in sources]
    playbook_dir = task_vars.get("playbook_dir")
    groups = dict(inventory.groups)
    for base in bases + ([playbook_dir] if playbook_dir else []):
        for name in _group_vars_names(base):
            groups.setdefault(name, None)
    names, members = {}, {}
    for name, group in sorted(groups.items()):
        hosts = [h.name for h in group.get_hosts()] if group is not None else []
        if set(hosts) & targets or name in ("all", "ungrouped"):
            continue
        entity = group if group is not None else Group(name)
        found = set(entity.get_vars() if group is not None else {})
        try:
            # the stages of ansible.cfg's run_vars_plugins: 'start' loads at "inventory", 'demand' at "task"
            for stage in ("inventory", "task"):
                found.update(vars_plugins.get_vars_from_inventory_sources(loader, sources, [entity], stage) or {})
                if playbook_dir:
                    found.update(vars_plugins.get_vars_from_path(loader, playbook_dir, [entity], stage) or {})
        except Exception as exc:  # pylint: disable=broad-except  # a file that does not load: Ansible says so itself
            found.add("(its variables could not be read: %s)" % exc)
        names[name], members[name] = sorted(str(n) for n in found), hosts
    return names, members


def _group_vars_names(base):
    """The group names of the entries of ``base``/group_vars (a file name without its extension, a directory)."""
    try:
        entries = os.listdir(os.path.join(base, "group_vars"))
    except OSError:
        return []
    out = []
    for entry in entries:
        if entry.startswith("."):
            continue
        stem, ext = os.path.splitext(entry)
        out.append(stem if ext in GROUP_VARS_EXTENSIONS else entry)
    return out


def _tag_problem(run_tags, stage_tags, substrates):
    """Why the --tags of this run select no stage, or None. ``stage_tags``: {substrate or "any": [tags]}."""
    asked = [str(t) for t in run_tags or ["all"]]
    if not stage_tags or "all" in asked:
        return None
    own = set()
    for substrate, tags in stage_tags.items():
        if substrate == "any" or substrate in substrates:
            own.update(str(t) for t in tags or [])
    wrong = [t for t in asked if t not in own and t not in SPECIAL_TAGS]
    if not wrong:
        return None
    every = sorted(set(str(t) for tags in stage_tags.values() for t in tags or []))
    parts = []
    for tag in wrong:
        elsewhere = sorted(s for s, tags in stage_tags.items() if tag in (tags or []))
        if elsewhere:
            parts.append("%s is a stage only over %s" % (tag, " and ".join(elsewhere)))
        else:
            close = inventory_vars.near_misses(tag, sorted(own))
            parts.append("%s%s" % (tag, " (did you mean %s?)" % " or ".join(close) if close else ""))
    where = " over %s" % " and ".join(sorted(substrates)) if "any" not in stage_tags else ""
    return ("--tags %s selects no stage of this playbook%s: %s. Its stages%s: %s" % (
        ",".join(asked), where, "; ".join(parts), where, ", ".join(sorted(own)) or ", ".join(every)))


def entry_points(vocabulary, roles):
    """{substrate or "any": [(role, entry point)]} of the ``roles`` option ({substrate: ["role" | "role:entry"]}); a
    name that is no entry point of the collection's roles is refused (a fault of the playbook that passed it)."""
    out = {}
    for substrate, names in (roles or {}).items():
        for name in names or []:
            role, _colon, point = str(name).partition(":")
            if (role, point or "main") not in vocabulary.entry_points:
                raise AnsibleActionFail("roles: %s is no role entry point of aifabric.acceptance" % name)
            out.setdefault(str(substrate), []).append((role, point or "main"))
    return out


def argument_problems(vocabulary, hostvars, hosts, roles):
    """(problems, warnings): the argument spec of each role entry point the playbook applies to a host's substrate
    (``roles``: entry_points()) against its variables, with ansible-core's own validator and the values as the role's
    own check at its start takes them (its options among the host's variables, templated) - here once, for every
    host, before any stage; the collection's playbooks apply their roles without that check of each host
    (``rolespec_validate: false``). A problem names the role, the entry point, ansible-core's messages and the hosts
    (hosts with the same messages together); a value that cannot be templated yet is a warning (not checked)."""
    refused, unchecked = {}, {}
    for host in hosts:
        if host not in hostvars or not roles:
            continue
        own = hostvars[host]
        names = set(str(name) for name in own)
        substrate = str(own.get("acceptance_substrate") or "ssh")
        for role, point in roles.get(substrate, []) + roles.get("any", []):
            options = vocabulary.entry_points[(role, point)]
            given = {}
            for name in sorted(names.intersection(options)):
                try:
                    given[name] = own.get(name)
                except Exception as exc:  # pylint: disable=broad-except  # any templating error: said, not raised
                    unchecked.setdefault("%s (%s)" % (name, str(exc).splitlines()[0][:200]), []).append(host)
            if not given:
                continue
            # the spec of the options given alone, a copy each time (ansible-core's validator writes into the spec
            # it is given: each role's check at its start builds its own)
            spec = copy.deepcopy(dict((name, options[name]) for name in given))
            errors = ArgumentSpecValidator(spec).validate(given, validate_role_argument_spec=True).error_messages
            if errors:
                key = "the argument spec of the role aifabric.acceptance.%s (entry point %s) refuses: %s" % (
                    role, point, "; ".join(str(e) for e in errors))
                refused.setdefault(key, []).append(host)
    problems = ["%s (%s)" % (key, _hosts_named(found)) for key, found in sorted(refused.items())]
    warnings = ["the value of %s could not be templated before the run, so its argument spec is not checked (%s)"
                % (what, _hosts_named(found)) for what, found in sorted(unchecked.items())]
    return problems, warnings


def _hosts_named(hosts):
    shown = ", ".join(hosts[:HOSTS_SHOWN])
    more = len(hosts) - HOSTS_SHOWN
    return ("host %s" % shown if len(hosts) == 1 else "hosts %s" % shown) + (" and %d more" % more if more > 0 else "")


def _fail_on_problem(value, source):
    if value is None or str(value) in fleet.FAIL_ON:
        return None
    return "%s=%s is not one of %s (the verdict that fails the run)" % (source, value, ", ".join(fleet.FAIL_ON))


# the variables the check's own play sets (playbooks/check_vars.yml): not the user's
CHECK_PLAY_VARS = ("fleet_report_targets",)


class _WithPlayVars(Mapping):
    """A host's variables as the roles see them: its own (``hostvars[host]``) under the variables the play sets
    (``top``: name -> a function giving the value as templated, raising as a host variable's templating raises)."""

    def __init__(self, own, top):
        self._own, self._top = own, top

    def __getitem__(self, name):
        if name in self._top:
            return self._top[name]()
        return self._own[name]

    def __iter__(self):
        seen = set()
        for name in list(self._own) + list(self._top):
            if name not in seen:
                seen.add(name)
                yield name

    def __len__(self):
        return len(set(self._own) | set(self._top))

    def __contains__(self, name):
        return name in self._top or name in self._own


def _report_problem():
    """Why this run would have no report (the callback not enabled, or its configuration refused), or None."""
    try:
        run_store.find(os.getppid())
    except run_store.RunSummaryError as exc:
        return str(exc)
    return None


class ActionModule(ControllerAction):
    ARGUMENT_SPEC = {
        "strict": {"type": "bool", "default": True},
        "hosts": {"type": "list", "elements": "str"},
        "targets": {"type": "list", "elements": "str"},
        "host_pattern": {"type": "str"},
        "stage_tags": {"type": "dict"},
        "roles": {"type": "dict"},
        "require_report": {"type": "bool", "default": False},
        "fail_on": {"type": "str"},
        "fail_on_source": {"type": "str", "default": "acceptance_fail_on"},
    }

    def act(self, args, task_vars, result):
        hosts = args["hosts"] if args["hosts"] is not None else list(task_vars.get("ansible_play_hosts_all") or [])
        hostvars = self._with_play_vars(task_vars.get("hostvars") or {}, task_vars)
        vocabulary = inventory_vars.Vocabulary(ROOT)
        found = self._variables(vocabulary, hostvars, hosts)
        result.update(changed=False, unread={h: [name for name, _close in v] for h, v in found.items()})
        words = []
        if found:
            words.append("variables that aifabric.acceptance does not read (a misspelling, an expectation outside the "
                         "acceptance_expect mapping, a key no option of the mapping has, an acceptance_substrate that "
                         "is neither ssh nor kubernetes): %s" % inventory_vars.message(found))
        targets = args["targets"]
        if targets:
            stray = inventory_vars.untargeted(*_groups_of(task_vars.get("hostvars") or {}, task_vars, set(targets)),
                                              targets, vocabulary)
            result["untargeted"] = dict(stray)
            shown = ", ".join(sorted(targets)[:5]) + (", ..." if len(targets) > 5 else "")
            inventory_groups = task_vars.get("groups") or {}
            for group, names in stray:
                where = ("holds none of the %d hosts this run targets (%s)" % (len(targets), shown)
                         if group in inventory_groups else
                         "is no group of the inventory (group_vars/%s names it), so they apply to no host" % group)
                words.append("the group %s sets %s, but %s: put the hosts tested in the group, or the variables in a "
                             "group that holds them" % (group, ", ".join(names), where))
        problems = self._configuration(args, task_vars, hostvars, targets)
        refused, unchecked = argument_problems(vocabulary, hostvars, hosts, entry_points(vocabulary, args["roles"]))
        problems += refused
        for text in unchecked:
            self._display.warning(text)
        result["problems"] = problems + words
        if problems or (words and args["strict"]):
            hint = " Fix or remove them, or set acceptance_strict_vars=false to only warn." if words else ""
            raise AnsibleActionFail("the run stops before any stage: %s.%s" % ("; ".join(problems + words), hint))
        for text in words:
            self._display.warning(text)
        result["warnings"] = words + unchecked
        return result

    def _with_play_vars(self, hostvars, task_vars):
        """Each host's variables with those the play sets (``vars:`` of a user's ``import_playbook`` of a collection
        playbook reach every play of it, this check's too): the roles see them above the inventory's, and
        hostvars does not hold them. Their values as this task sees them (an extra variable still wins), templated
        once for every host; the check play's own and the playbooks' private ones (``__``) left out."""
        play = self._task.get_play() if hasattr(self._task, "get_play") else None
        names = [str(name) for name in ((play.get_vars() if play is not None else None) or {})
                 if not str(name).startswith("__") and name not in CHECK_PLAY_VARS and name in task_vars]
        if not names:
            return hostvars
        cache = {}

        def value(name):
            if name not in cache:
                try:
                    cache[name] = (self._templar.template(task_vars[name]), None)
                except Exception as exc:  # pylint: disable=broad-except  # raised where the value is read
                    cache[name] = (None, exc)
            found, error = cache[name]
            if error is not None:
                raise error
            return found

        top = dict((name, lambda name=name: value(name)) for name in names)
        return dict((host, _WithPlayVars(hostvars[host], top)) for host in hostvars)

    @staticmethod
    def _variables(vocabulary, hostvars, hosts):
        names, values, substrates = {}, {}, {}
        for host in hosts:
            if host not in hostvars:
                continue
            own = hostvars[host]
            names[host] = [str(name) for name in own]
            values[host] = {}
            for name in names[host]:
                if (vocabulary.specs.get(name) or {}).get("options"):
                    try:
                        values[host][name] = own.get(name)
                    except Exception:  # pylint: disable=broad-except  # a template that fails: the role says so
                        continue
            substrates[host] = own.get("acceptance_substrate")
        found = vocabulary.unread(names)
        for more in (inventory_vars.unknown_keys(values, vocabulary), inventory_vars.unknown_substrates(substrates)):
            for host, entries in more.items():
                found[host] = found.get(host, []) + entries
        return found

    @staticmethod
    def _configuration(args, task_vars, hostvars, targets):
        """The run's configuration errors: none of them is a matter of strictness."""
        problems = []
        if targets is not None and not targets:
            inventory = sorted(g for g in (task_vars.get("groups") or {}) if g not in ("all", "ungrouped"))
            problems.append("the host pattern %s matches no host of the inventory (%d hosts; groups: %s): set "
                            "acceptance_hosts to a group or host pattern that holds your hosts" % (
                                args["host_pattern"] or "of this playbook", len((task_vars.get("groups") or {}).get("all") or []),
                                ", ".join(inventory) or "none"))
        substrates = set()
        for host in targets or []:
            if host in hostvars:
                substrates.add(str(hostvars[host].get("acceptance_substrate") or "ssh"))
        for problem in (_fail_on_problem(args["fail_on"], args["fail_on_source"]),
                        _tag_problem(task_vars.get("ansible_run_tags"), args["stage_tags"], substrates or {"ssh"}),
                        _report_problem() if args["require_report"] else None):
            if problem:
                problems.append(problem)
        return problems
