# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run a command with a nearly full filesystem mounted at a directory (tests/integration/test_disk_full.py).

Run it in a private mount namespace (``unshare --mount --propagation private python3 full_disk.py ...``): it
mounts a tmpfs of SIZE at MOUNT, makes the directories SUBDIRS (comma-separated, may be empty) in it, fills it up
to KEEP_KB kB free, runs the command (argv, with a timeout), then writes what the filesystem holds (every file
with its size, and the run ids of each history.sqlite) as JSON to STATE, which lies outside the tmpfs; the tmpfs
vanishes with the namespace. Exits with the command's status.

    full_disk.py MOUNT SIZE SUBDIRS KEEP_KB STATE TIMEOUT_S -- ARGV...
"""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys


def fill(mount, keep_kb):
    info = os.statvfs(mount)
    size = max(0, info.f_bavail * info.f_frsize - keep_kb * 1024)
    with open(os.path.join(mount, "filler"), "wb") as handle:
        handle.write(b"\0" * size)


def stored_runs(db):
    conn = sqlite3.connect("file:%s?mode=ro" % db, uri=True)
    try:
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'runs'").fetchone():
            return []       # the store could not even be set up: no run in it
        return [row[0] for row in conn.execute("SELECT run_id FROM runs")]
    except sqlite3.Error as exc:
        return "unreadable: %s" % exc
    finally:
        conn.close()


def contents(mount):
    files, runs = {}, {}
    for directory, _dirs, names in os.walk(mount):
        for name in names:
            path = os.path.join(directory, name)
            files[os.path.relpath(path, mount)] = os.lstat(path).st_size
            if name == "history.sqlite":
                runs[os.path.relpath(path, mount)] = stored_runs(path)
    info = os.statvfs(mount)
    return {"files": files, "history_runs": runs, "free_kb": info.f_bavail * info.f_frsize // 1024}


def main(argv):
    mount, size, subdirs, keep_kb, state, timeout_s = argv[1:7]
    if argv[7] != "--":
        raise SystemExit("usage: full_disk.py MOUNT SIZE SUBDIRS KEEP_KB STATE TIMEOUT_S -- ARGV...")
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=%s,mode=0755" % size, "tmpfs", mount], check=True, timeout=30)
    for name in filter(None, subdirs.split(",")):
        os.makedirs(os.path.join(mount, name))
    fill(mount, int(keep_kb))
    try:
        rc = subprocess.run(argv[8:], timeout=float(timeout_s), check=False).returncode
    finally:
        with open(state, "w", encoding="utf-8") as handle:
            json.dump(contents(mount), handle)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv))
