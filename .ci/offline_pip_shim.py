# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Let `ansible-test sanity --venv` bootstrap pip without reaching ci-files.testing.ansible.com.

ansible-test downloads get-pip-<ver>.py from a host outside PyPI; it first looks in
~/.ansible/test/cache/get_pip_<ver>.py. This writes a stand-in there that bootstraps pip
with ensurepip (in a child process, so pip's configuration and CA settings survive) and
then installs the pinned pip from the configured index. Run with the venv's Python.
"""
from __future__ import annotations

import os
import re
import sys

SHIM = '''\
"""Offline stand-in for get-pip.py written by aifabric.acceptance/.ci/offline_pip_shim.py."""
import subprocess
import sys

ARGS = [a for a in sys.argv[1:] if a not in ("--no-setuptools", "--no-wheel")]
subprocess.check_call([sys.executable, "-m", "ensurepip", "--upgrade"])
sys.exit(subprocess.call([sys.executable, "-m", "pip", "install"] + ARGS))
'''


def main():
    import ansible_test  # pylint: disable=import-outside-toplevel

    source = os.path.join(os.path.dirname(ansible_test.__file__), "_internal", "python_requirements.py")
    with open(source, encoding="utf-8") as handle:
        versions = sorted(set(re.findall(r"pip='([0-9.]+)'", handle.read())))
    if not versions:
        sys.exit("could not find the pip version ansible-test pins in %s" % source)
    cache = os.path.expanduser("~/.ansible/test/cache")
    os.makedirs(cache, exist_ok=True)
    for version in versions:
        path = os.path.join(cache, "get_pip_%s.py" % version.replace(".", "_"))
        if not os.path.exists(path):    # written whole (two `make test` at once may both get here)
            tmp = "%s.tmp-%d" % (path, os.getpid())
            with open(tmp, "w", encoding="utf-8") as handle:
                handle.write(SHIM)
            os.replace(tmp, path)
        print("pip bootstrap for ansible-test: %s" % path)


if __name__ == "__main__":
    main()
