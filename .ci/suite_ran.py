# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fail a test stage whose pytest run measured nothing: no test collected, or every test skipped.

    suite_ran.py NAME JUNIT_XML

reads the JUnit XML pytest wrote (--junitxml) and exits 1, saying so, when the suite ran no test that passed or
failed (a machine without sshd, network namespaces or root skips the whole integration suite: `make test` must not
then say "all stages passed"). AIFABRIC_ALLOW_SKIPPED=1 lets such a run through with a warning (a machine where
the suite cannot run, on purpose). Exit 0 otherwise, printing the counts.
"""

from __future__ import annotations

import os
import sys
import xml.etree.ElementTree as ET


def counts(path):
    """(tests, skipped, failures + errors) summed over the file's test suites; None when unreadable."""
    try:
        root = ET.parse(path).getroot()
    except (OSError, ET.ParseError):
        return None
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    total = skipped = bad = 0
    for suite in suites:
        total += int(suite.get("tests", 0))
        skipped += int(suite.get("skipped", 0))
        bad += int(suite.get("failures", 0)) + int(suite.get("errors", 0))
    return total, skipped, bad


def verdict(name, found, allowed):
    """(exit code, message)."""
    if found is None:
        return 1, "%s: no JUnit report was written - the suite did not run" % name
    total, skipped, bad = found
    ran = total - skipped
    if ran > 0:
        return 0, "%s: %d tests ran (%d skipped)" % (name, ran, skipped)
    what = "no test was collected" if total == 0 else "all %d tests were skipped" % total
    if allowed:
        return 0, "%s: WARNING %s (allowed by AIFABRIC_ALLOW_SKIPPED=1)" % (name, what)
    return 1, ("%s: %s - nothing was tested (see the skip reasons above; AIFABRIC_ALLOW_SKIPPED=1 lets a machine "
               "that cannot run it through)" % (name, what))


def main(argv):
    if len(argv) != 3:
        print("usage: suite_ran.py NAME JUNIT_XML", file=sys.stderr)
        return 2
    code, message = verdict(argv[1], counts(argv[2]), os.environ.get("AIFABRIC_ALLOW_SKIPPED") == "1")
    print(message, file=sys.stderr if code else sys.stdout)
    return code


if __name__ == "__main__":
    sys.exit(main(sys.argv))
