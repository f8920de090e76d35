# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Numeric ranges of module options, checked before a module does anything (private).

``argument_spec`` has types but no bounds, so every module of the collection
declares the bounds of its numeric options next to its spec and builds its
AnsibleModule through ``module()``:

- ``module(module_class, ranges, **kwargs) -> module`` - ``module_class(**kwargs)`` (AnsibleModule), then
  every option named in ``ranges`` is checked; all violations are reported at once in one ``fail_json``
  before any process, file or record is made;
- ``violations(params, ranges) -> [str]`` - the same check, pure: ``ranges`` maps an option name to
  ``(min, max)`` (either may be None); list options are checked element by element; None values (unset
  options) pass;
- ``renamed(old)`` - the spec keys of an option renamed from ``old`` (a breaking rename with a deprecation path):
  ``old`` still accepted, with Ansible's deprecation warning, until ``RENAMED_UNTIL``.

Runs on the targets: Python 3.8+; the module class is passed in (no Ansible import here).
"""

from __future__ import annotations

PORT = (1, 65535)
POSITIVE = (1, None)
NON_NEGATIVE = (0, None)
RENAMED_UNTIL = "3.0.0"     # the release that drops the option names renamed in 2.0.0


def renamed(old):
    """``aliases`` and ``deprecated_aliases`` of an option whose name before 2.0.0 was ``old``."""
    return {"aliases": [old], "deprecated_aliases": [{"name": old, "version": RENAMED_UNTIL,
                                                      "collection_name": "aifabric.acceptance"}]}


def _fmt(value):
    return ("%g" % value) if isinstance(value, float) else str(value)


def violations(params, ranges):
    """One message per option value outside its (min, max)."""
    found = []
    for name in sorted(ranges):
        low, high = ranges[name]
        value = params.get(name)
        values = value if isinstance(value, list) else [value]
        for item in values:
            if item is None or isinstance(item, bool):
                continue
            if (low is not None and item < low) or (high is not None and item > high):
                if high is None:
                    want = ">= %s" % _fmt(low)
                elif low is None:
                    want = "<= %s" % _fmt(high)
                else:
                    want = "between %s and %s" % (_fmt(low), _fmt(high))
                found.append("%s must be %s, got %s" % (name, want, _fmt(item)))
    return found


def module(module_class, ranges, **kwargs):
    """Build the AnsibleModule and fail it (one message, every violation) when an option is out of range."""
    built = module_class(**kwargs)
    problems = violations(built.params, ranges)
    if problems:
        built.fail_json(msg="invalid option value%s: %s" % ("s" if len(problems) > 1 else "", "; ".join(problems)))
    return built
