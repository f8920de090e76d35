# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The user's words checked before anything runs (issues 19 and 33): every inventory variable and every key of every
mapping the collection reads is read by it, belongs to someone else, or is refused as a near-miss of one it reads.

One vocabulary, :class:`Vocabulary`, read from the collection itself (no list kept by hand):

- every role's ``meta/argument_specs.yml`` (all entry points; the options of one name in several specs united, their
  suboptions too; :attr:`Vocabulary.entry_points` keeps each entry point's own), the keys of the roles' ``defaults/``
  and ``vars/`` files, and the names its playbooks and roles use
  as variables with one of its prefixes (the roles' names, ``acceptance_``, ``aifabric_``, and ``report_``,
  ``baseline_``, ``compare_`` of the report and baseline playbooks);
- ``acceptance_expect``: env_probe's ``expect`` option (tools/env_probe.py, docs/glossary.md's environment expectations).

Then, for the variables of each host (group_vars, host_vars, inventory vars and ``-e`` alike, as hostvars has them):

- :meth:`Vocabulary.unread` - a name with one of the collection's own prefixes (:attr:`Vocabulary.prefixes`: the
  roles' names, ``acceptance_``, ``aifabric_``, ``expect_``) that it does not read, and any other name that is a
  near-miss of one it reads (:func:`near_misses`: one or two letters changed, missing, doubled or transposed, or a
  plural/singular), each with what it probably meant;
- :meth:`Vocabulary.unknown_keys` - the keys of a mapping it reads (``acceptance_expect``, ``probe_options``,
  ``gpu_gemm``, ``rdma_perftest``, ``k8s_pod``, ...: any option whose spec has suboptions), at any depth, that are not
  its suboptions;
- :func:`untargeted` - a group that sets the collection's variables but holds none of the hosts the run targets;
- :func:`unknown_substrates` - the hosts whose ``acceptance_substrate`` is neither ssh nor kubernetes.

Controller-only (plugin_utils), no Ansible imports; PyYAML (a dependency of ansible-core).
"""

from __future__ import annotations

import difflib
import os
import re

import yaml

from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import env_probe as env_tool

# the collection's own prefixes besides its roles' names: a variable with one of them that it does not read is refused
OWN_PREFIXES = ("acceptance_", "aifabric_", "expect_")
# prefixes of variables its playbooks read (report.yml, baseline.yml): scanned, but a name of the user's with one of
# them is refused only as a near-miss
SCAN_PREFIXES = ("report_", "baseline_", "compare_")
# names of Ansible's own (magic variables, connection variables): never a near-miss of ours
_ANSIBLE = re.compile(r"^(ansible_|inventory_|group_names$|groups$|hostvars$|omit$|playbook_dir$|role_)")
_COMMENT = re.compile(r"(^|\s)#.*$")
# the keys of acceptance_expect: env_probe's expect mapping (tools/env_probe.py, the single source)
EXPECT_KEYS = tuple(env_tool.EXPECT)
EXPECT_SPEC = {"type": "dict", "options": env_tool.EXPECT}


def _role_names(root):
    try:
        return sorted(name for name in os.listdir(os.path.join(root, "roles"))
                      if os.path.isfile(os.path.join(root, "roles", name, "meta", "argument_specs.yml")))
    except OSError:
        return []


def _yaml_files(root, sub):
    base = os.path.join(root, sub)
    for folder, _dirs, files in os.walk(base):
        if os.sep + "molecule" in folder[len(root):]:
            continue       # the scenarios' own test variables are not the collection's
        for name in sorted(files):
            if name.endswith((".yml", ".yaml", ".j2")):
                yield os.path.join(folder, name)


def _name_pattern(prefixes):
    return re.compile(r"(?<![\w.\[\]'\"])((?:%s)[a-z0-9_]*)(?![\w])(?!\s*:(?!:))" % "|".join(
        re.escape(p) for p in prefixes))


def _used_names(text, pattern=None):
    pattern = pattern or _name_pattern(OWN_PREFIXES + SCAN_PREFIXES + ("gpu_", "nccl_", "rdma_", "hccl_", "k8s_"))
    found = set()
    for line in text.splitlines():
        line = _COMMENT.sub("", line)
        found.update(m.group(1) for m in pattern.finditer(line))
    return found


def _load(path):
    try:
        with open(path, encoding="utf-8") as fh:
            data = yaml.safe_load(fh)
    except (OSError, yaml.YAMLError):
        return None
    return data if isinstance(data, dict) else None


def merge_spec(one, other):
    """Two specs of one name united: the union of their suboptions, at any depth (a spec without suboptions takes
    any value and stays so)."""
    if not one:
        return dict(other or {})
    if not other:
        return dict(one)
    out = dict(one)
    if "options" in one and "options" in other:
        options = dict(one["options"] or {})
        for key, sub in (other["options"] or {}).items():
            options[key] = merge_spec(options.get(key), sub or {"type": "raw"})
        out["options"] = options
    elif "options" in other or "options" in one:
        out.pop("options", None)        # one spec takes any key: so does the name
    return out


class Vocabulary:
    """The names the collection under ``root`` reads, with their specs (see the module docstring)."""

    def __init__(self, root):
        roles = _role_names(root)
        self.prefixes = OWN_PREFIXES + tuple(role + "_" for role in roles)
        self.specs = {"acceptance_expect": dict(EXPECT_SPEC)}
        # {(role, entry point): its options}: each role's argument spec as the role checks it at its start
        self.entry_points = {}
        pattern = _name_pattern(self.prefixes + SCAN_PREFIXES)
        for sub in ("playbooks", "roles"):
            for path in _yaml_files(root, sub):
                try:
                    with open(path, encoding="utf-8", errors="replace") as fh:
                        used = _used_names(fh.read(), pattern)
                except OSError:
                    continue
                for name in used:
                    self.specs.setdefault(name, {})
                parts = path[len(root):].split(os.sep)
                if sub == "roles" and parts[-2:] == ["meta", "argument_specs.yml"]:
                    self._add_specs(parts[-3], _load(path))
                elif sub == "roles" and ("defaults" in parts or "vars" in parts):
                    for name in _load(path) or {}:
                        self.specs.setdefault(str(name), {})
        self.names = frozenset(self.specs)
        self._pool = sorted(self.names)

    def _add_specs(self, role, data):
        for point, entry in ((data or {}).get("argument_specs") or {}).items():
            options = (entry or {}).get("options") or {}
            self.entry_points[(role, str(point))] = options
            for name, spec in options.items():
                self.specs[name] = merge_spec(self.specs.get(name), spec or {"type": "raw"})

    def ours(self, name):
        """True for a name with one of the collection's own prefixes."""
        return isinstance(name, str) and name.startswith(self.prefixes)

    def unread(self, host_vars):
        """{host: [(name, [what it probably meant])]} for each host's variables the collection does not read and
        would refuse (see the module docstring). ``host_vars``: {host: iterable of names}."""
        verdicts = {}
        out = {}
        for host, names in sorted(host_vars.items()):
            bad = []
            for name in sorted(set(names)):
                if name not in verdicts:
                    verdicts[name] = self._refused(name)
                if verdicts[name] is not None:
                    bad.append((name, verdicts[name]))
            if bad:
                out[host] = bad
        return out

    def _refused(self, name):
        """None when ``name`` is read or someone else's; else what it probably meant (maybe nothing)."""
        if not isinstance(name, str) or name in self.names or _ANSIBLE.match(name):
            return None
        bare = name[len("expect_"):]
        if name.startswith("expect_") and bare in EXPECT_KEYS:
            return ["acceptance_expect: {%s: ...}" % bare]     # the old form of an expectation
        close = near_misses(name, self._pool)
        if self.ours(name):
            return close or difflib.get_close_matches(name, self._pool, n=2, cutoff=0.75)
        return close or None

    def unknown_keys(self, name, value):
        """[(dotted name, [what it probably meant])] for the keys of the value of ``name`` that its spec has no
        suboption for, at any depth (a value that is not the mapping its spec says is named as such)."""
        spec = self.specs.get(name)
        return _unknown_keys(name, value, spec) if spec else []


def _unknown_keys(path, value, spec):
    options = spec.get("options")
    if not options:
        return []
    if spec.get("type") == "list":
        if not isinstance(value, (list, tuple)):
            return []
        out = []
        for index, item in enumerate(value):
            out += _unknown_keys("%s[%d]" % (path, index), item, dict(spec, type="dict"))
        return out
    if value is None:
        return []
    if not isinstance(value, dict):
        return [("%s (a %s, not a mapping)" % (path, _kind(value)), [])]
    out = []
    for key in value:
        key_name = "%s.%s" % (path, key)
        if str(key) not in options:
            out.append((key_name, ["%s.%s" % (path, close) for close in _close_keys(str(key), options)]))
        elif (options[str(key)] or {}).get("options"):
            out += _unknown_keys(key_name, value[key], options[str(key)])
    return out


def _damerau(one, other, limit):
    """The optimal-string-alignment distance of two names, or ``limit + 1`` once it is sure to exceed ``limit``."""
    if abs(len(one) - len(other)) > limit:
        return limit + 1
    previous2, previous = None, list(range(len(other) + 1))
    for i, a in enumerate(one, 1):
        row = [i] + [0] * len(other)
        for j, b in enumerate(other, 1):
            row[j] = min(previous[j] + 1, row[j - 1] + 1, previous[j - 1] + (a != b))
            if previous2 is not None and i > 1 and j > 1 and a == other[j - 2] and one[i - 2] == b:
                row[j] = min(row[j], previous2[j - 2] + 1)
        if min(row) > limit:
            return limit + 1
        previous2, previous = previous, row
    return previous[-1]


def _singular(name):
    return name[:-1] if name.endswith("s") else name


def near_misses(name, pool):
    """The names of ``pool`` that ``name`` most likely means: the same after case and ``-``/``_``, a plural or a
    singular of it, or one letter changed, missing, doubled or two transposed (two for names of 10 letters and
    more). Nearest first."""
    bare = str(name).lower().replace("-", "_")
    found = []
    for known in pool:
        if known == name:
            return []
        if bare == known or _singular(bare) == _singular(known):
            found.append((0, known))
            continue
        if len(known) < 5:
            continue
        limit = 2 if len(known) >= 10 else 1
        distance = _damerau(bare, known, limit)
        if distance <= limit:
            found.append((distance, known))
    return [known for _distance, known in sorted(found)[:2]]


def unknown_keys(values, vocabulary):
    """{host: [(dotted name, [suggestions])]} for the keys of each host's mappings that the collection does not read.

    ``values``: {host: {name: value}} of the host's variables that the vocabulary knows (others are not looked at)."""
    out = {}
    seen = {}
    for host, named in sorted(values.items()):
        bad = []
        for name, value in sorted(named.items()):
            key = (name, repr(value))
            if key not in seen:
                seen[key] = vocabulary.unknown_keys(name, value)
            bad += seen[key]
        if bad:
            out[host] = bad
    return out


def untargeted(group_vars, group_hosts, targets, vocabulary):
    """[(group, [names])] for each group that sets variables the collection reads (or would refuse) but holds none of
    the ``targets``: those variables apply to no host this run tests (an expectation that silently stops applying).

    ``group_vars``: {group: iterable of the names the group itself sets (its inventory vars, its group_vars file)};
    ``group_hosts``: {group: iterable of its hosts, its children's included}; ``targets``: the hosts the run targets."""
    targets = set(targets)
    out = []
    for group, names in sorted(group_vars.items()):
        if group in ("all", "ungrouped") or targets & set(group_hosts.get(group) or ()):
            continue
        ours = sorted(n for n in set(names) if isinstance(n, str)
                      and (n in vocabulary.names or vocabulary.ours(n) or vocabulary.unread({"": [n]})))
        if ours:
            out.append((group, ours))
    return out


SUBSTRATES = ("ssh", "kubernetes")


def unknown_substrates(substrates):
    """{host: [("acceptance_substrate <value> (ssh or kubernetes)", [])]} for each host whose acceptance_substrate is
    neither: acceptance.yml would test it on no substrate, and the run would end without its verdict.

    ``substrates``: {host: the host's acceptance_substrate, None where unset}."""
    return dict((host, [("acceptance_substrate %s (%s)" % (value, " or ".join(SUBSTRATES)), [])])
                for host, value in sorted(substrates.items()) if value is not None and value not in SUBSTRATES)


def _kind(value):
    for kind, name in ((bool, "boolean"), (str, "string"), (list, "list"), ((int, float), "number")):
        if isinstance(value, kind):
            return name
    return type(value).__name__


def _close_keys(key, keys):
    """The key a misspelt one most likely means: its name without an expect_ prefix (the old names of acceptance_expect),
    a near-miss, or the close names."""
    keys = sorted(str(k) for k in keys)
    bare = key[len("expect_"):] if key.startswith("expect_") else key
    if bare in keys:
        return [bare]
    return near_misses(bare, keys) or difflib.get_close_matches(bare, keys, n=2, cutoff=0.75)


def message(found, limit=20):
    """One readable sentence per finding, naming the hosts that share it: 'node1, node2: expect_gpu_count, gpu_gem
    (did you mean gpu_gemm?)' (the hosts of one finding cut at ``limit``, the findings too)."""
    shared = {}
    for host, entries in sorted(found.items()):
        parts = tuple("%s (did you mean %s?)" % (name, " or ".join(close)) if close else name
                      for name, close in entries)
        shared.setdefault(parts, []).append(host)
    lines = []
    for parts, hosts in sorted(shared.items(), key=lambda item: item[1][0]):
        named = ", ".join(hosts[:limit]) + (" (and %d more hosts)" % (len(hosts) - limit) if len(hosts) > limit else "")
        lines.append("%s: %s" % (named, ", ".join(parts)))
    more = " (and %d more findings)" % (len(lines) - limit) if len(lines) > limit else ""
    return "; ".join(lines[:limit]) + more
