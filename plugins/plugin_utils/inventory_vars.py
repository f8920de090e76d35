# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Inventory variables that look like the collection's but that it never reads (issue 19 item 5).

Role argument specs catch a misspelt role parameter, not an inventory variable: ``expect_gpu_count: 1`` in a host's
variables (the collection reads ``acceptance_expect: {gpu_count: 1}``) or ``gpu_nccl_test_bin_dir`` (for
``gpu_nccl_tests_bin_dir``) was silently ignored, and a "required" check was never required; so was a key of
``acceptance_expect`` that no probe judges (``acceptance_expect: {expect_gpu_count: 1}``, the old name).

- :func:`known_names` - the variables the collection reads, scanned from its own playbooks and roles: a name with
  one of :data:`PREFIXES` used as a variable (not after ``.`` or ``[``, not as a YAML key, outside comments), plus
  every role's argument-spec options and defaults;
- :func:`unread` - per host, the variable names with one of PREFIXES that are not known, each with the close
  known names (``difflib``) as suggestions;
- :func:`unknown_expect_keys` - per host, the keys of its ``acceptance_expect`` mapping that are not
  :data:`EXPECT_KEYS` (env_probe's ``expect`` suboptions, docs/glossary.md's environment expectations);
- :func:`unknown_substrates` - the hosts whose ``acceptance_substrate`` is neither ssh nor kubernetes.

Controller-only (plugin_utils), no Ansible imports; PyYAML (a dependency of ansible-core).
"""

from __future__ import annotations

import difflib
import os
import re

import yaml

from ansible_collections.aifabric.acceptance.plugins.module_utils.tools import env as env_tool

PREFIXES = ("expect_", "acceptance_", "gpu_", "nccl_", "rdma_", "hccl_", "k8s_", "aifabric_")
_NAME = re.compile(r"(?<![\w.\[\]'\"])((?:%s)[a-z0-9_]*)(?![\w])(?!\s*:(?!:))" % "|".join(
    re.escape(p[:-1]) + "_" for p in PREFIXES))
_COMMENT = re.compile(r"(^|\s)#.*$")
# the keys of acceptance_expect: env_probe's expect mapping (tools/env.py, the single source)
EXPECT_KEYS = tuple(env_tool.EXPECT)
_IS_OURS = re.compile(r"^(?:%s)" % "|".join(re.escape(p) for p in PREFIXES))


def looks_like_ours(name):
    """True for a variable name with one of the collection's prefixes."""
    return bool(_IS_OURS.match(name or ""))


def _yaml_files(root, sub):
    base = os.path.join(root, sub)
    for folder, _dirs, files in os.walk(base):
        if os.sep + "molecule" in folder[len(root):]:
            continue       # the scenarios' own test variables are not the collection's
        for name in sorted(files):
            if name.endswith((".yml", ".yaml", ".j2")):
                yield os.path.join(folder, name)


def _used_names(text):
    found = set()
    for line in text.splitlines():
        line = _COMMENT.sub("", line)
        found.update(m.group(1) for m in _NAME.finditer(line))
    return found


def _spec_names(path):
    """Option names of a role's meta/argument_specs.yml and keys of its defaults/vars files."""
    try:
        with open(path, encoding="utf-8") as fh:
            data = yaml.safe_load(fh)
    except (OSError, yaml.YAMLError):
        return set()
    if not isinstance(data, dict):
        return set()
    if path.endswith(os.path.join("meta", "argument_specs.yml")):
        names = set()
        for entry in (data.get("argument_specs") or {}).values():
            names.update((entry or {}).get("options") or {})
        return names
    return set(data)


def known_names(root):
    """The variables the collection under ``root`` reads (see the module docstring)."""
    names = set()
    for sub in ("playbooks", "roles"):
        for path in _yaml_files(root, sub):
            try:
                with open(path, encoding="utf-8", errors="replace") as fh:
                    names.update(_used_names(fh.read()))
            except OSError:
                continue
            parts = path[len(root):].split(os.sep)
            if sub == "roles" and ("defaults" in parts or "vars" in parts or parts[-2:] == ["meta", "argument_specs.yml"]):
                names.update(_spec_names(path))
    return frozenset(n for n in names if looks_like_ours(n))


def unread(host_vars, known):
    """{host: [(name, [suggestions])]} for the variables of each host that look like ours but are not read.

    ``host_vars``: {host: iterable of variable names} (the inventory's variables of each host)."""
    out = {}
    pool = sorted(known)
    for host, names in sorted(host_vars.items()):
        bad = sorted(n for n in set(names) if looks_like_ours(n) and n not in known)
        if bad:
            out[host] = [(n, difflib.get_close_matches(n, pool, n=2, cutoff=0.75)) for n in bad]
    return out


def unknown_expect_keys(expects, keys=EXPECT_KEYS):
    """{host: [("acceptance_expect.<key>", [suggestions])]} for the keys of each host's acceptance_expect that no
    probe reads (a value that is not a mapping is named as such).

    ``expects``: {host: the host's acceptance_expect value, None where unset}."""
    out = {}
    for host, expect in sorted(expects.items()):
        if expect is None:
            continue
        if not isinstance(expect, dict):
            out[host] = [("acceptance_expect (a %s, not a mapping)" % _kind(expect), [])]
            continue
        bad = [str(key) for key in expect if str(key) not in keys]
        if bad:
            out[host] = [("acceptance_expect." + key, ["acceptance_expect." + close for close in _close_keys(key, keys)])
                         for key in bad]
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
    """The expectation a key most likely means: its name without an expect_ prefix, or the close names."""
    bare = key[len("expect_"):] if key.startswith("expect_") else key
    if bare in keys:
        return [bare]
    return difflib.get_close_matches(bare, list(keys), n=2, cutoff=0.75)


def message(found, limit=20):
    """One readable sentence per host: 'node1: expect_gpu_count (not read: did you mean ...?)'."""
    lines = []
    for host, entries in sorted(found.items()):
        parts = []
        for name, close in entries:
            parts.append("%s (did you mean %s?)" % (name, " or ".join(close)) if close else name)
        lines.append("%s: %s" % (host, ", ".join(parts)))
    more = " (and %d more hosts)" % (len(lines) - limit) if len(lines) > limit else ""
    return "; ".join(lines[:limit]) + more
