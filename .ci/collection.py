# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Build and install this checkout's collection once per content, safely from concurrent `make` runs.

Prints the directory to use as ANSIBLE_COLLECTIONS_PATH: ``.collections/<content hash>``. The hash
covers every file git would ship (tracked and untracked-not-ignored, path and content) that the build keeps
(galaxy.yml's build_ignore, read as ansible-galaxy reads it): a site's inventory under inventories/, which the
build leaves out, neither changes the hash nor goes into the copy that is built. When that
directory exists it is used as is; else, under an exclusive lock, the files are copied into a private
temporary directory, built and installed there, and the result renamed into place in one step, so a
concurrent run never sees a half-installed collection and never has one removed under it (before:
every `make acceptance` force-reinstalled the one shared .collections). Installs older than an hour
that are not the current one are pruned, under the same lock.

Usage: python collection.py BINDIR    (BINDIR holds ansible-galaxy)
"""

from __future__ import annotations

import fcntl
import fnmatch
import glob
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STORE = os.path.join(ROOT, ".collections")
GALAXY = os.path.join(ROOT, "galaxy.yml")
LOCK_TIMEOUT_S = 900
STEP_TIMEOUT_S = 600
PRUNE_AGE_S = 3600


KEY_RE = re.compile(r"^[0-9a-f]{16}$")
NOT_SHIPPED = {".git", ".venv", ".collections", ".cache", ".whl", ".gl", ".home", ".carry", "dist", "reports", "__pycache__",
               ".pytest_cache", ".hypothesis", ".ansible", os.path.join("tests", "output"),
               os.path.join("bench", "results")}


def shipped_files():
    """What git would ship (tracked and untracked-not-ignored); outside a git checkout, the tree
    without the build and run outputs that .gitignore names."""
    try:
        out = subprocess.run(["git", "ls-files", "-z", "-co", "--exclude-standard"], cwd=ROOT, check=True,
                             capture_output=True, timeout=STEP_TIMEOUT_S).stdout
        names = out.decode("utf-8", "surrogateescape").split("\0")
    except (OSError, subprocess.CalledProcessError):
        names = []
        for top, dirs, files in os.walk(ROOT):
            rel_top = os.path.relpath(top, ROOT)
            dirs[:] = [d for d in dirs if os.path.normpath(os.path.join(rel_top, d)) not in NOT_SHIPPED
                       and d not in NOT_SHIPPED]
            names.extend(os.path.normpath(os.path.join(rel_top, f)) for f in files
                         if not f.endswith((".pyc", ".tar.gz")))
    patterns = build_ignore()
    return sorted(p for p in names if p and os.path.isfile(os.path.join(ROOT, p)) and not build_ignored(p, patterns))


def build_ignore():
    """galaxy.yml's build_ignore patterns."""
    with open(GALAXY, encoding="utf-8") as handle:
        return [str(p) for p in (yaml.safe_load(handle) or {}).get("build_ignore") or []]


def build_ignored(rel, patterns):
    """True when `ansible-galaxy collection build` leaves the file ``rel`` (a path relative to the collection, with /)
    out: a pattern matches its path, or the path of a directory above it (the build's walk does not enter a
    directory whose path matches; fnmatch, whose * also matches /)."""
    parts = rel.split("/")
    return any(fnmatch.fnmatch("/".join(parts[:depth]), pattern)
               for depth in range(1, len(parts) + 1) for pattern in patterns)


def content_key(files):
    digest = hashlib.sha256()
    for rel in files:
        digest.update(rel.encode("utf-8", "surrogateescape") + b"\0")
        with open(os.path.join(ROOT, rel), "rb") as handle:
            digest.update(hashlib.sha256(handle.read()).digest())
    return digest.hexdigest()[:16]


def installed(path):
    return os.path.isfile(os.path.join(path, "ansible_collections", "aifabric", "acceptance", "MANIFEST.json"))


def lock(path):
    handle = open(path, "a+")        # noqa: SIM115 - held until the process ends
    deadline = time.monotonic() + LOCK_TIMEOUT_S
    while True:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return handle
        except BlockingIOError:
            if time.monotonic() > deadline:
                sys.exit("collection.py: %s is still locked after %ds by another build" % (path, LOCK_TIMEOUT_S))
            time.sleep(0.2)


def build(bindir, files, final):
    tmp = tempfile.mkdtemp(prefix=".tmp-", dir=STORE)
    try:
        src = os.path.join(tmp, "src")
        for rel in files:
            dest = os.path.join(src, rel)
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            shutil.copy2(os.path.join(ROOT, rel), dest)
        galaxy = os.path.join(bindir, "ansible-galaxy")
        subprocess.run([galaxy, "collection", "build", "--output-path", os.path.join(tmp, "dist"), src],
                       check=True, timeout=STEP_TIMEOUT_S, stdout=subprocess.DEVNULL)
        tarballs = glob.glob(os.path.join(tmp, "dist", "*.tar.gz"))
        # the install directory is the collections path of this install (ansible-galaxy warns otherwise that the
        # collection "will not be picked up": the make targets put it on ANSIBLE_COLLECTIONS_PATH themselves)
        env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(tmp, "install"))
        subprocess.run([galaxy, "collection", "install", "--force", "-p", os.path.join(tmp, "install")] + tarballs,
                       check=True, timeout=STEP_TIMEOUT_S, stdout=subprocess.DEVNULL, env=env)
        for tarball in tarballs:
            shutil.move(tarball, os.path.join(tmp, "install"))
        os.rename(os.path.join(tmp, "install"), final)       # one step: absent, or complete
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def prune(keep):
    now = time.time()
    for path in glob.glob(os.path.join(STORE, "*")) + glob.glob(os.path.join(STORE, ".tmp-*")):
        name = os.path.basename(path)
        if os.path.abspath(path) == keep or not os.path.isdir(path) or not (KEY_RE.match(name) or name.startswith(".tmp-")):
            continue
        try:
            if now - os.stat(path).st_mtime > PRUNE_AGE_S:
                shutil.rmtree(path, ignore_errors=True)
        except OSError:
            pass


def main(argv):
    if len(argv) != 2:
        sys.exit(__doc__.strip().splitlines()[-1])
    files = shipped_files()
    final = os.path.join(STORE, content_key(files))
    if not installed(final):
        os.makedirs(STORE, exist_ok=True)
        held = lock(os.path.join(STORE, ".lock"))
        try:
            if not installed(final):
                build(argv[1], files, final)
            prune(final)
        finally:
            held.close()
    os.utime(final)        # in use: not pruned by a concurrent build for another hour
    print(final)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
