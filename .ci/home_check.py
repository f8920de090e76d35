# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fail when `make test` left files in the user's home directory.

    home_check.py HOME STAMP [EXCLUDE ...]

`make test` runs with a HOME of its own inside the checkout (ansible's ~/.ansible, the collection molecule installs,
pip's, ansible-lint's and Chromium's caches land there); this lists every file (and empty directory) under the real
HOME modified after STAMP was touched at the start of `make test`, outside the EXCLUDE paths (the checkout itself,
when it lies under HOME), and exits 1 when there is any. Symbolic links are not followed.
"""

from __future__ import annotations

import os
import sys


def changed(home, since, exclude=()):
    """Paths under home (files, empty directories) with an mtime after ``since`` (seconds since the epoch)."""
    skip = [os.path.realpath(p) for p in exclude]
    found = []
    for folder, dirs, files in os.walk(home):
        real = os.path.realpath(folder)
        if any(real == s or real.startswith(s + os.sep) for s in skip):
            dirs[:] = []
            continue
        entries = files if (files or dirs) else ["."]
        for name in entries:
            path = os.path.normpath(os.path.join(folder, name))
            try:
                if os.lstat(path).st_mtime > since:
                    found.append(path)
            except OSError:
                continue
    return sorted(found)


def main(argv):
    if len(argv) < 3:
        print("usage: home_check.py HOME STAMP [EXCLUDE ...]", file=sys.stderr)
        return 2
    since = os.stat(argv[2]).st_mtime
    found = changed(argv[1], since, argv[3:])
    if not found:
        print("make test: nothing written to %s" % argv[1])
        return 0
    print("make test: files written to %s (the tests must write only to the checkout and /tmp):" % argv[1],
          file=sys.stderr)
    for path in found[:50]:
        print("  " + path, file=sys.stderr)
    if len(found) > 50:
        print("  ... and %d more" % (len(found) - 50), file=sys.stderr)
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
