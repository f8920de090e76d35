# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The AWX execution environment: ``ansible-builder create`` on extras/ee/execution-environment.yml.

Builds the collection tarball (ansible-galaxy), lets ansible-builder write the build context (no
container runtime needed for ``create``) and checks what the image would be: the base image, the
Python interpreter, ansible-core/ansible-runner, the collection installed from the tarball. Then it
installs the tarball and runs ansible-builder's own introspection on it, as the image build does:
the collection's Python deps (psycopg for the shared history store, kubernetes, jinja2) and system
deps (libpq) are found from meta/execution-environment.yml.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EE_FILE = os.path.join(REPO, "extras", "ee", "execution-environment.yml")
BIN = os.path.dirname(sys.executable)
TIMEOUT_S = 300


def _tool(name):
    path = os.path.join(BIN, name)
    if not os.path.isfile(path):
        path = shutil.which(name)
    if not path:
        pytest.skip("%s is not installed (requirements-test.txt)" % name)
    return path


def _run(argv, cwd):
    proc = subprocess.run(argv, cwd=cwd, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    assert proc.returncode == 0, (argv, proc.stdout[-3000:], proc.stderr[-3000:])
    return proc.stdout


def _version():
    with open(os.path.join(REPO, "galaxy.yml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle)["version"]


def test_ansible_builder_create_makes_an_ee_with_the_collection_and_its_deps(tmp_path):
    builder, galaxy = _tool("ansible-builder"), _tool("ansible-galaxy")
    work = tmp_path / "ee"
    work.mkdir()
    shutil.copy(EE_FILE, str(work / "execution-environment.yml"))
    _run([galaxy, "collection", "build", "--force", "--output-path", str(work / "collections"), REPO], cwd=str(tmp_path))
    tarball = "aifabric-acceptance-%s.tar.gz" % _version()
    assert os.listdir(str(work / "collections")) == [tarball]
    with open(EE_FILE, encoding="utf-8") as handle:
        definition = yaml.safe_load(handle)
    assert definition["version"] == 3
    assert definition["dependencies"]["galaxy"]["collections"] == [
        {"name": "/build/collections/%s" % tarball, "type": "file"}]     # galaxy.yml's version, not a stale one
    _run([builder, "create", "-f", "execution-environment.yml", "-c", "context"], cwd=str(work))
    context = work / "context"
    files = os.listdir(str(context))
    build_file = [f for f in files if f in ("Containerfile", "Dockerfile")]
    assert build_file, files
    text = (context / build_file[0]).read_text()
    assert re.search(r'^ARG EE_BASE_IMAGE="registry\.access\.redhat\.com/ubi9/ubi:9\.\d+"$', text, re.M)
    assert 'ARG PYCMD="/usr/bin/python3.12"' in text
    assert 'ARG ANSIBLE_INSTALL_REFS="ansible-core>=2.19,<2.22 ansible-runner>=2.4,<3"' in text
    assert "ansible-galaxy collection install $ANSIBLE_GALAXY_CLI_COLLECTION_OPTS -r requirements.yml" in text
    assert "introspect.py introspect" in text      # the collection's own deps are resolved in the build
    assert (context / "_build" / "collections" / tarball).is_file()
    with open(str(context / "_build" / "requirements.yml"), encoding="utf-8") as handle:
        assert yaml.safe_load(handle) == {"collections": [{"name": "/build/collections/%s" % tarball, "type": "file"}]}

    # what the builder stage's introspection finds in the installed collection
    installed = tmp_path / "installed"
    _run([galaxy, "collection", "install", "--force", "-p", str(installed), str(work / "collections" / tarball)],
         cwd=str(tmp_path))
    found = _run([builder, "introspect", "--sanitize", str(installed)], cwd=str(tmp_path))
    deps = yaml.safe_load(found)
    python = dict((line.split("#")[0].strip().split(">")[0].split("[")[0], line) for line in deps["python"])
    for package in ("psycopg", "kubernetes", "jinja2", "jsonschema"):
        assert python[package].endswith("# from collection aifabric.acceptance"), deps
    assert "ansible-core" not in python       # the EE's own ansible-core, never the collection's pin
    system = [line.split("#")[0].strip() for line in deps["system"]]
    assert "libpq5 [platform:dpkg]" in system and "libpq [platform:rpm]" in system
    assert "postgresql [test platform:dpkg]" in system      # the test profile only: not installed in the EE
