# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Let `ansible-test sanity --venv` bootstrap pip without reaching ci-files.testing.ansible.com.

ansible-test downloads get-pip-<ver>.py from a host outside PyPI; it first looks in
~/.ansible/test/cache/get_pip_<ver>.py. This writes a stand-in there, run with the Python of each
new (pip-less) virtual environment ansible-test makes: one per sanity test with requirements, eight
or nine on a fresh clone. It installs the pinned pip with that pip's own wheel, run as get-pip.py runs
it (pip from its wheel: no index, no ensurepip), the wheel fetched once here with this venv's pip
(its configuration, index and CA settings) into ~/.ansible/test/cache/pip-wheels/. Where the wheel
could not be fetched it falls back to ensurepip, then the pinned pip from the configured index
(each venv then pays a second pip run and an index lookup: 32 s against 8 s a venv on a loaded
2-CPU machine, 6.5 s against 2.7 s of CPU: docs/dev/test-times.md). Run with the venv's Python.
"""
from __future__ import annotations

import glob
import os
import re
import subprocess
import sys

SHIM = '''\
"""Offline stand-in for get-pip.py written by aifabric.acceptance/.ci/offline_pip_shim.py."""
import os
import subprocess
import sys

WHEELS = %(wheels)r
ARGS = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
WHEEL = os.path.join(WHEELS, "pip-%(version)s-py3-none-any.whl")
if os.path.isfile(WHEEL):
    # pip run from its wheel installs the pinned pip from that wheel (get-pip.py's way): one pip run, no index
    sys.exit(subprocess.call([sys.executable, os.path.join(WHEEL, "pip"), "install", "--no-index",
                              "--find-links", WHEELS] + ARGS, timeout=900))
subprocess.check_call([sys.executable, "-m", "ensurepip", "--upgrade"], timeout=900)
sys.exit(subprocess.call([sys.executable, "-m", "pip", "install"] + ARGS, timeout=900))
'''

DOWNLOAD_TIMEOUT_S = 300


def fetch_wheel(version, wheels):
    """pip-<version>'s wheel in ``wheels`` (fetched with this venv's pip when missing); None when it cannot be had."""
    path = os.path.join(wheels, "pip-%s-py3-none-any.whl" % version)
    if os.path.isfile(path):
        return path
    os.makedirs(wheels, exist_ok=True)
    tmp = os.path.join(wheels, ".download-%d" % os.getpid())     # moved into place whole: two makes at once
    try:
        subprocess.run([sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary", ":all:",
                        "--dest", tmp, "pip==%s" % version], check=True, timeout=DOWNLOAD_TIMEOUT_S,
                       stdin=subprocess.DEVNULL)
        got = glob.glob(os.path.join(tmp, "pip-%s-py3-none-any.whl" % version))
        if got:
            os.replace(got[0], path)
    except (OSError, subprocess.SubprocessError) as err:
        print("pip %s wheel not fetched (%s): the sanity venvs bootstrap pip with ensurepip" % (version, err))
    finally:
        for left in glob.glob(os.path.join(tmp, "*")):
            os.unlink(left)
        if os.path.isdir(tmp):
            os.rmdir(tmp)
    return path if os.path.isfile(path) else None


def main():
    import ansible_test  # pylint: disable=import-outside-toplevel

    source = os.path.join(os.path.dirname(ansible_test.__file__), "_internal", "python_requirements.py")
    with open(source, encoding="utf-8") as handle:
        versions = sorted(set(re.findall(r"pip='([0-9.]+)'", handle.read())))
    if not versions:
        sys.exit("could not find the pip version ansible-test pins in %s" % source)
    cache = os.path.expanduser("~/.ansible/test/cache")
    wheels = os.path.join(cache, "pip-wheels")
    os.makedirs(cache, exist_ok=True)
    for version in versions:
        fetch_wheel(version, wheels)
        path = os.path.join(cache, "get_pip_%s.py" % version.replace(".", "_"))
        text = SHIM % {"wheels": wheels, "version": version}
        old = None
        if os.path.exists(path):
            with open(path, encoding="utf-8") as handle:
                old = handle.read()
        if old != text:     # written whole (two `make test` at once may both get here); an older shim replaced
            tmp = "%s.tmp-%d" % (path, os.getpid())
            with open(tmp, "w", encoding="utf-8") as handle:
                handle.write(text)
            os.replace(tmp, path)
        print("pip bootstrap for ansible-test: %s" % path)


if __name__ == "__main__":
    main()
