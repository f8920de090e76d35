# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parser of ``dcgmi diag -r <level> -j`` (private). Pure, no I/O, Python 3.8; never raises.

``parse_diag(text)`` -> ``{"error", "problems", "version", "driver_version", "runtime_error", "layout", "results"}``.
dcgmi may print lines before its document ("Successfully ran diagnostic for group.", a warning): the document is
the first ``{`` at the start of a line that decodes as a JSON object. Layouts seen in real outputs
(tests/unit/plugins/module_utils/parsers/fixtures/dcgm/README.md):

- DCGM 2.x/3.x: ``{"DCGM GPU Diagnostic": {"test_categories": [{"category", "tests": [{"name", "results":
  [{"gpu_ids": "0,1,..." or 0, "status": "PASS"|"Pass"|..., "warnings": [...], "info": ...}]}]}], "version"}}``;
  a ``tests`` list may hold ``null`` entries (DCGM 3.1.0's output does);
- DCGM 4.x: ``{"DCGM Diagnostic": {"test_categories": [... {"name", "results": [{"entity_group": "GPU",
  "entity_id": 0, "status", "warnings": [{"error_id", "error_category", "error_severity", "warning"}], "info": [..]}],
  "test_summary": {"status", "info"}}]}]}, "entity_groups": [...], "metadata": {"version", "Driver Version
  Detected"}}``.

A warning is ``{"warning": text, "error_id": n, ...}`` (older releases: a bare string); its ``code`` is the
``DCGM_FR_*`` name of its id (dcgm_errors.NAMES). Each result is ``{"category", "test", "entity_group", "entity",
"status", "warnings": [{"code", "error_id", "severity", "category", "message"}], "info": [text]}``; ``status`` is
DCGM's word in lower case with "not run" for NOT RUN, or None when the result has none.
"""

from __future__ import annotations

import json

from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers import dcgm_errors
from ansible_collections.aifabric.acceptance.plugins.module_utils.parsers._common import add_problem, as_text

ROOT_KEYS = (("DCGM GPU Diagnostic", "dcgm-gpu-diagnostic"), ("DCGM Diagnostic", "dcgm-diagnostic"))
STATUS_WORDS = {"pass": "pass", "fail": "fail", "warn": "warn", "warning": "warn", "skip": "skip",
                "skipped": "skip", "not run": "not run", "notrun": "not run"}
DRIVER_KEYS = ("Driver Version Detected", "driver_version_detected", "driver_version")


def _document(text):
    """The first JSON object that starts a line of ``text``, or None."""
    decoder = json.JSONDecoder()
    at = 0
    while True:
        at = text.find("{", at)
        if at < 0:
            return None
        if at == 0 or text[at - 1] == "\n" or not text[text.rfind("\n", 0, at) + 1:at].strip():
            try:
                value, unused_end = decoder.raw_decode(text, at)
            except ValueError:
                value = None
            if isinstance(value, dict):
                return value
        at += 1


def _texts(value):
    """A list of strings from a string, a list of strings (others dropped) or anything else (empty)."""
    if isinstance(value, str):
        return [value] if value.strip() else []
    if isinstance(value, list):
        return [item for item in value if isinstance(item, str) and item.strip()]
    return []


def _int(value):
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def _warning(item):
    if isinstance(item, str):
        return {"code": None, "error_id": None, "severity": None, "category": None, "message": item}
    if not isinstance(item, dict):
        return None
    error_id = _int(item.get("error_id"))
    message = item.get("warning")
    return {"code": dcgm_errors.name(error_id) if error_id is not None else None, "error_id": error_id,
            "severity": _int(item.get("error_severity")), "category": _int(item.get("error_category")),
            "message": message if isinstance(message, str) else None}


def _status(word):
    if not isinstance(word, str):
        return None
    return STATUS_WORDS.get(" ".join(word.strip().lower().split()), "unknown:" + word.strip()[:40])


def _entity(result):
    """(entity group, entity) of one result: 4.x entity_group/entity_id, 2.x/3.x gpu_ids (a number or "0,1")."""
    if "entity_id" in result:
        value = result.get("entity_id")
        group = result.get("entity_group") if isinstance(result.get("entity_group"), str) else "GPU"
    else:
        value, group = result.get("gpu_ids"), "GPU"
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        return group, None
    return group, str(value).strip() or None


def _results_of(category, test, out):
    name = test.get("name")
    if not isinstance(name, str) or not name.strip():
        add_problem(out, "a test of category %r has no name" % category)
        return
    rows = test.get("results")
    summary = test.get("test_summary") if isinstance(test.get("test_summary"), dict) else {}
    if not isinstance(rows, list) or not rows:
        add_problem(out, "test %r has no results" % name)
        rows = []
    for result in rows:
        if not isinstance(result, dict):
            add_problem(out, "test %r has a result that is not an object" % name)
            continue
        group, entity = _entity(result)
        warnings = [w for w in (_warning(item) for item in (result.get("warnings") or [])
                                if isinstance(result.get("warnings"), list)) if w]
        if isinstance(result.get("warnings"), str):
            warnings.append(_warning(result["warnings"]))
        out["results"].append({"category": category, "test": name, "entity_group": group, "entity": entity,
                               "status": _status(result.get("status")), "warnings": warnings,
                               "info": _texts(result.get("info")),
                               "summary_status": _status(summary.get("status")), "summary_info": _texts(summary.get("info"))})


def _walk(root, out):
    categories = root.get("test_categories")
    if categories is None:
        return
    if not isinstance(categories, list):
        add_problem(out, "test_categories is not a list")
        return
    for entry in categories:
        if not isinstance(entry, dict):
            continue
        category = entry.get("category") if isinstance(entry.get("category"), str) else None
        tests = entry.get("tests")
        if not isinstance(tests, list):
            add_problem(out, "category %r has no list of tests" % category)
            continue
        for test in tests:
            if isinstance(test, dict):
                _results_of(category, test, out)


def _first_text(*mappings_and_keys):
    for mapping, keys in mappings_and_keys:
        if isinstance(mapping, dict):
            for key in keys:
                if isinstance(mapping.get(key), str) and mapping[key].strip():
                    return mapping[key].strip()
    return None


def parse_diag(text):
    """What one ``dcgmi diag -j`` output says (see the module docstring)."""
    out = {"error": None, "problems": [], "version": None, "driver_version": None, "runtime_error": None,
           "layout": None, "results": []}
    text = as_text(text)
    document = _document(text)
    if document is None:
        out["error"] = "no JSON document in the output" if text.strip() else "empty output"
        return out
    root = None
    for key, layout in ROOT_KEYS:
        if isinstance(document.get(key), dict):
            root, out["layout"] = document[key], layout
            break
    if root is None:
        out["error"] = "the JSON document has neither %s" % " nor ".join(repr(k) for k, _l in ROOT_KEYS)
        return out
    metadata = document.get("metadata")
    out["version"] = _first_text((root, ("version",)), (metadata, ("version",)), (document, ("version",)))
    out["driver_version"] = _first_text((root, DRIVER_KEYS), (metadata, DRIVER_KEYS), (document, DRIVER_KEYS))
    out["runtime_error"] = _first_text((root, ("runtime_error",)), (document, ("runtime_error",)))
    _walk(root, out)
    if not out["results"] and not out["runtime_error"]:
        out["error"] = "the document lists no test result"
    return out
