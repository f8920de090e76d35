# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Generate the reference (docs/reference/) from the docs strings, as ansible-doc reads them.

    reference.py ANSIBLE_DOC OUT_DIR [--check]

runs ``ANSIBLE_DOC --json`` (the collection must be on ANSIBLE_COLLECTIONS_PATH) for every module, role, filter,
callback and action-only plugin of the collection, and writes one Markdown page per plugin or role plus an index
(README.md). ``--check`` writes nothing and exits 1 when the pages in OUT_DIR differ from what the docs strings give
(the reference is out of date: run ``make reference``). ansible-doc failing on a plugin is an error (a broken
DOCUMENTATION). Markup: Ansible's O(), V(), C(), I(), B(), M(), U(), L(), R(), E(), RV() become Markdown.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

COLLECTION = "aifabric.acceptance"
ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir)
# plugin type -> the directory of its sources
TYPES = (("module", "plugins/modules"), ("filter", "plugins/filter"), ("callback", "plugins/callback"))
_MARKUP = [
    (re.compile(r"[OVCRE]V?\(([^)]*)\)"), r"`\1`"),
    (re.compile(r"RV\(([^)]*)\)"), r"`\1`"),
    (re.compile(r"I\(([^)]*)\)"), r"*\1*"),
    (re.compile(r"B\(([^)]*)\)"), r"**\1**"),
    (re.compile(r"M\(([^)]*)\)"), r"`\1`"),
    (re.compile(r"U\(([^)]*)\)"), r"<\1>"),
    (re.compile(r"L\(([^,)]*),\s*([^)]*)\)"), r"[\1](\2)"),
]


def text(value):
    """One paragraph of Markdown from a docs string or list of them."""
    parts = value if isinstance(value, list) else [value or ""]
    out = []
    for part in parts:
        part = str(part)
        for pattern, repl in _MARKUP:
            part = pattern.sub(repl, part)
        out.append(part.replace("|", "\\|").replace("\n", " "))
    return " ".join(out)


def names(kind, folder):
    base = os.path.join(ROOT, folder)
    return sorted(f[:-3] for f in os.listdir(base) if f.endswith(".py") and not f.startswith("_"))


def role_names():
    base = os.path.join(ROOT, "roles")
    return sorted(d for d in os.listdir(base) if os.path.isfile(os.path.join(base, d, "meta", "argument_specs.yml")))


def ansible_doc(binary, kind, plugins):
    """The JSON ansible-doc gives for these plugins of one type; raises RuntimeError naming a plugin it fails on."""
    fqcns = ["%s.%s" % (COLLECTION, name) for name in plugins]
    done = subprocess.run([binary, "--json", "-t", kind] + fqcns, capture_output=True, text=True, timeout=300,
                          check=False)
    if done.returncode != 0:
        raise RuntimeError("ansible-doc -t %s failed: %s" % (kind, done.stderr.strip()[-2000:]))
    data = json.loads(done.stdout or "{}")
    missing = [f for f in fqcns if f not in data]
    if missing:
        raise RuntimeError("ansible-doc -t %s gave no documentation for %s: %s"
                           % (kind, ", ".join(missing), done.stderr.strip()[-2000:]))
    return data


def _options_table(options, prefix=""):
    rows = []
    for name, spec in sorted((options or {}).items()):
        spec = spec or {}
        kind = spec.get("type", "str")
        if spec.get("elements"):
            kind += " of " + spec["elements"]
        extra = []
        if spec.get("required"):
            extra.append("**required**")
        if "default" in spec and spec["default"] is not None:
            extra.append("default: `%s`" % json.dumps(spec["default"]))
        if spec.get("choices"):
            extra.append("choices: %s" % ", ".join("`%s`" % c for c in spec["choices"]))
        notes = (" (" + "; ".join(extra) + ")") if extra else ""
        rows.append("| `%s%s` | %s | %s%s |" % (prefix, name, kind, text(spec.get("description")), notes))
        rows.extend(_options_table(spec.get("suboptions") or spec.get("options"), prefix + name + "."))
    return rows


def plugin_page(kind, name, entry):
    doc = entry.get("doc") or {}
    lines = ["# %s.%s (%s)" % (COLLECTION, name, kind), "", text(doc.get("short_description")), "",
             text(doc.get("description")), ""]
    if doc.get("options"):
        lines += ["## Options", "", "| option | type | description |", "|---|---|---|"]
        lines += _options_table(doc["options"]) + [""]
    if doc.get("notes"):
        lines += ["## Notes", ""] + ["- " + text(n) for n in doc["notes"]] + [""]
    if entry.get("examples"):
        lines += ["## Examples", "", "```yaml", entry["examples"].strip("\n"), "```", ""]
    ret = entry.get("return")
    if ret:
        lines += ["## Return values", "", "| key | type | description |", "|---|---|---|"]
        lines += _options_table(ret) + [""]
    return "\n".join(lines).rstrip("\n") + "\n"


def entry_points(name, entry):
    """A role's entry points from ``ansible-doc --json -t role`` (top-level ``entry_points``); a role without one
    is an error: its page would be a title only."""
    points = entry.get("entry_points") or {}
    if not points:
        raise SystemExit("reference: ansible-doc gave no entry point of role %s (no meta/argument_specs.yml?)" % name)
    return points


def role_page(name, entry):
    lines = ["# %s.%s (role)" % (COLLECTION, name), ""]
    for point, spec in sorted(entry_points(name, entry).items()):
        lines += ["## Entry point `%s`" % point, "", text(spec.get("short_description")), "",
                  text(spec.get("description")), ""]
        if spec.get("options"):
            lines += ["| variable | type | description |", "|---|---|---|"]
            lines += _options_table(spec["options"]) + [""]
    return "\n".join(lines).rstrip("\n") + "\n"


def pages(binary):
    """file name -> Markdown text of every page, the index included."""
    out = {}
    index = ["# Reference", "", "Generated from the docs strings by `.ci/reference.py` (`make reference`); "
             "`ansible-doc -t <type> %s.<name>` shows the same." % COLLECTION, ""]
    for kind, folder in TYPES:
        plugins = names(kind, folder)
        data = ansible_doc(binary, kind, plugins)
        index += ["## %ss" % kind.capitalize(), ""]
        for name in plugins:
            entry = data["%s.%s" % (COLLECTION, name)]
            out["%s_%s.md" % (kind, name)] = plugin_page(kind, name, entry)
            index.append("- [%s](%s_%s.md) - %s" % (name, kind, name, text((entry.get("doc") or {}).get("short_description"))))
        index.append("")
    roles = role_names()
    data = ansible_doc(binary, "role", roles)
    index += ["## Roles", ""]
    for name in roles:
        entry = data["%s.%s" % (COLLECTION, name)]
        out["role_%s.md" % name] = role_page(name, entry)
        main = entry_points(name, entry).get("main") or {}
        index.append("- [%s](role_%s.md) - %s" % (name, name, text(main.get("short_description"))))
    out["README.md"] = "\n".join(index).rstrip("\n") + "\n"
    return out


def main(argv):
    if len(argv) < 3:
        print("usage: reference.py ANSIBLE_DOC OUT_DIR [--check]", file=sys.stderr)
        return 2
    binary, out_dir, check = argv[1], argv[2], "--check" in argv[3:]
    try:
        wanted = pages(binary)
    except (RuntimeError, ValueError, OSError, subprocess.TimeoutExpired) as exc:
        print("reference: %s" % exc, file=sys.stderr)
        return 1
    present = dict((f, open(os.path.join(out_dir, f), encoding="utf-8").read())
                   for f in (os.listdir(out_dir) if os.path.isdir(out_dir) else []) if f.endswith(".md"))
    if check:
        stale = sorted(f for f in set(wanted) | set(present) if wanted.get(f) != present.get(f))
        if stale:
            print("reference: docs/reference is out of date (run `make reference`): %s" % ", ".join(stale),
                  file=sys.stderr)
            return 1
        print("reference: %d pages up to date" % len(wanted))
        return 0
    os.makedirs(out_dir, exist_ok=True)
    for name in set(present) - set(wanted):
        os.remove(os.path.join(out_dir, name))
    for name, body in wanted.items():
        with open(os.path.join(out_dir, name), "w", encoding="utf-8") as fh:
            fh.write(body)
    print("reference: %d pages written to %s" % (len(wanted), out_dir))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
