# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The AWX execution environment of docs/awx.md: extras/ee/execution-environment.yml.

There is no container runtime here, so the image itself is not built. What is real: the collection
tarball built from the checkout with the command docs/awx.md gives (read from the page), ansible-builder's
own ``create`` with the -f and -c of the page's ``ansible-builder build``
(which validates the definition against its schema and writes the build context and Containerfile),
ansible-builder's ``introspect`` on the installed tarball (what the image build's builder stage runs
to find the collection's Python and system dependencies), bindep's own rule evaluation of those
system dependencies for the base image's platform (RHEL 9), and the tarball from the build context
installed with ``ansible-galaxy`` and its plugins loaded from there (``ansible-doc``, imports).
"""

from __future__ import annotations

import fnmatch
import os
import re
import shlex
import shutil
import subprocess
import sys
import tarfile
from types import SimpleNamespace

import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
EE_DIR = os.path.join(REPO, "extras", "ee")
EE_FILE = os.path.join(EE_DIR, "execution-environment.yml")
BIN = os.path.dirname(sys.executable)
TIMEOUT_S = 300
FROM_COLLECTION = "# from collection aifabric.acceptance"


def _tool(name):
    path = os.path.join(BIN, name)
    if not os.path.isfile(path):
        path = shutil.which(name)
    if not path:
        pytest.skip("%s is not installed (requirements-test.txt)" % name)
    return path


def _run(argv, cwd, env=None):
    proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    assert proc.returncode == 0, (argv, proc.stdout[-3000:], proc.stderr[-3000:])
    return proc.stdout


def _version():
    with open(os.path.join(REPO, "galaxy.yml"), encoding="utf-8") as handle:
        return yaml.safe_load(handle)["version"]


def _isolated_env(collections_path):
    """Only the installed copy is visible: no ansible.cfg of the checkout, no ~/.ansible, no PYTHONPATH."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith("ANSIBLE_") and k not in ("PYTHONPATH", "AIFABRIC_REPORTS_ROOT")}
    config = os.path.join(os.path.dirname(collections_path), "empty-ansible.cfg")
    with open(config, "w", encoding="utf-8"):
        pass
    env.update(ANSIBLE_COLLECTIONS_PATH=collections_path, ANSIBLE_COLLECTIONS_SCAN_SYS_PATH="false",
               ANSIBLE_CONFIG=config, ANSIBLE_LOCAL_TEMP=os.path.join(os.path.dirname(collections_path), "tmp"))
    return env


def _documented_commands():
    """The ``ansible-galaxy collection build`` and ``ansible-builder build`` command lines of docs/awx.md."""
    with open(os.path.join(REPO, "docs", "awx.md"), encoding="utf-8") as handle:
        text = handle.read().replace("\\\n", " ")
    blocks = re.findall(r"^```bash\n(.*?)^```", text, re.M | re.S)
    lines = [shlex.split(line) for block in blocks for line in block.splitlines() if line.strip()]
    build = [argv for argv in lines if argv[:3] == ["ansible-galaxy", "collection", "build"]]
    image = [argv for argv in lines if argv[:2] == ["ansible-builder", "build"]]
    assert len(build) == 1 and len(image) == 1, blocks
    return build[0], image[0]


@pytest.fixture(scope="module")
def ee(tmp_path_factory):
    """The tarball and the build context, made with the commands of docs/awx.md: the tarball from the checkout,
    ansible-builder from a directory laid out as the checkout (extras/ee/ with its collections/ beside the
    definition; the image build itself is ``ansible-builder build`` with the same -f and -c)."""
    builder, galaxy = _tool("ansible-builder"), _tool("ansible-galaxy")
    build, image = _documented_commands()
    assert build == ["ansible-galaxy", "collection", "build", "--force", "--output-path", "extras/ee/collections", "."]
    assert image[:2] == ["ansible-builder", "build"] and "-t" in image, image
    options = dict(zip(image[2::2], image[3::2]))
    assert options["-f"] == "extras/ee/execution-environment.yml" and options["-c"] == "extras/ee/context", image
    top = tmp_path_factory.mktemp("ee")
    checkout = top / "checkout"
    work = checkout / "extras" / "ee"
    work.mkdir(parents=True)
    shutil.copy(EE_FILE, str(work / "execution-environment.yml"))
    # the documented build, its output in the copy rather than in the checkout
    _run([galaxy] + build[1:5] + [str(checkout / build[5]), build[6]], cwd=REPO)
    # `create` is what `build` runs before the container runtime: the same -f and -c
    _run([builder, "create", "-f", options["-f"], "-c", options["-c"], "--output-filename", "Containerfile"],
         cwd=str(checkout))
    with open(EE_FILE, encoding="utf-8") as handle:
        definition = yaml.safe_load(handle)
    tarball = "aifabric-acceptance-%s.tar.gz" % _version()
    return SimpleNamespace(top=top, work=work, context=work / "context", definition=definition, tarball=tarball,
                           built=sorted(os.listdir(str(work / "collections"))))


def test_the_definition_installs_the_tarball_that_galaxy_yml_builds(ee):
    assert ee.built == [ee.tarball]          # galaxy.yml's version, not a stale one
    assert ee.definition["version"] == 3
    assert ee.definition["dependencies"]["galaxy"]["collections"] == [
        {"name": "/build/collections/%s" % ee.tarball, "type": "file"}]
    assert ee.definition["additional_build_files"] == [{"src": "collections/%s" % ee.tarball, "dest": "collections"}]
    assert (ee.context / "_build" / "collections" / ee.tarball).is_file()
    with open(str(ee.context / "_build" / "requirements.yml"), encoding="utf-8") as handle:
        assert yaml.safe_load(handle) == {"collections": [{"name": "/build/collections/%s" % ee.tarball, "type": "file"}]}


def _gitignore_patterns():
    """(directory the .gitignore is in, pattern) of the project's .gitignore files (not .git/info/exclude)."""
    out = []
    for where in ("", os.path.join("extras", "ee")):
        with open(os.path.join(REPO, where, ".gitignore"), encoding="utf-8") as handle:
            out.extend((where, line.strip()) for line in handle if line.strip() and not line.startswith("#"))
    return out


def _ignored_by(path, patterns):
    """The .gitignore pattern that names ``path`` (a path inside the collection), or None. The patterns used
    here: ``name/`` (a directory at any depth, or anchored when it has a slash), ``*.ext`` (any depth)."""
    parts = path.split("/")
    for where, pattern in patterns:
        if where:
            if not path.startswith(where + "/"):
                continue
            rel = path[len(where) + 1:].split("/")
        else:
            rel = parts
        if pattern.endswith("/"):
            name = pattern.rstrip("/")
            if "/" in name:
                depth = name.count("/") + 1
                if len(rel) > depth - 1 and "/".join(rel[:depth]) == name:
                    return pattern
            elif name in rel[:-1] or (rel and rel[-1] == name):
                return pattern
        elif fnmatch.fnmatch(rel[-1], pattern):
            return pattern
    return None


def test_the_tarball_holds_nothing_that_git_ignores(ee):
    """Built in a checkout where tests and tools have run, the tarball held .ansible/ (a whole copy of the
    collection, left by ansible-lint), .hypothesis/ and __pycache__/ until galaxy.yml's build_ignore named them."""
    patterns = _gitignore_patterns()
    with tarfile.open(str(ee.work / "collections" / ee.tarball)) as tar:
        names = [m.name.rstrip("/") for m in tar.getmembers()]
    assert "meta/execution-environment.yml" in names and "requirements.txt" in names and "bindep.txt" in names
    leaked = sorted((n, _ignored_by(n, patterns)) for n in names if _ignored_by(n, patterns))
    assert not leaked, leaked[:20]


def _stages(text):
    """Containerfile text -> {stage name: its lines}."""
    stages, name = {}, None
    for line in text.splitlines():
        match = re.match(r"FROM \S+ AS (\w+)$", line)
        if match:
            name = match.group(1)
            stages[name] = []
        elif name:
            stages[name].append(line)
    return stages


def test_the_containerfile_installs_the_collection_its_deps_and_the_settings(ee):
    text = (ee.context / "Containerfile").read_text()
    assert re.search(r'^ARG EE_BASE_IMAGE="registry\.access\.redhat\.com/ubi9/ubi:9\.\d+"$', text, re.M)
    assert 'ARG PYCMD="/usr/bin/python3.12"' in text
    assert 'ARG ANSIBLE_INSTALL_REFS="ansible-core>=2.19,<2.22 ansible-runner>=2.4,<3"' in text
    stages = _stages(text)
    assert list(stages) == ["base", "galaxy", "builder", "final"], list(stages)
    galaxy, builder, final = stages["galaxy"], stages["builder"], stages["final"]
    assert "COPY _build /build" in galaxy
    assert any(line.startswith("RUN ") and "ansible-galaxy collection install" in line and "-r requirements.yml" in line
               and '--collections-path "/usr/share/ansible/collections"' in line for line in galaxy), galaxy
    # the builder stage resolves the installed collection's deps (meta/execution-environment.yml) and builds them ...
    assert "COPY --from=galaxy /usr/share/ansible /usr/share/ansible" in builder
    introspect = [i for i, line in enumerate(builder) if "introspect.py introspect" in line]
    assemble = [i for i, line in enumerate(builder) if line == "RUN /output/scripts/assemble"]
    assert introspect and assemble and introspect[0] < assemble[0], builder
    # ... and the final image has the collection, the Python wheels and the system packages
    assert "COPY --from=galaxy /usr/share/ansible /usr/share/ansible" in final
    assert "COPY --from=builder /output/ /output/" in final
    assert any(line.startswith("RUN /output/scripts/install-from-bindep") for line in final), final
    assert "ENV ANSIBLE_CALLBACKS_ENABLED=aifabric.acceptance.fleet_report" in final
    assert 'ENV ANSIBLE_SSH_COMMON_ARGS="-o ServerAliveInterval=15 -o ServerAliveCountMax=4"' in final
    with open(os.path.join(REPO, "ansible.cfg"), encoding="utf-8") as handle:
        cfg = handle.read()      # the same keep-alives as the repository's ansible.cfg
    assert "ssh_common_args = -o ServerAliveInterval=15 -o ServerAliveCountMax=4" in cfg


def _installed(ee):
    """The tarball of the build context, installed as the galaxy stage installs it."""
    target = ee.top / "installed"
    if not target.is_dir():
        _run([_tool("ansible-galaxy"), "collection", "install", "-p", str(target),
              str(ee.context / "_build" / "collections" / ee.tarball)], cwd=str(ee.top), env=_isolated_env(str(target)))
    return target


def test_the_tarball_of_the_context_installs_and_its_plugins_load(ee):
    installed = _installed(ee)
    root = installed / "ansible_collections" / "aifabric" / "acceptance"
    env = _isolated_env(str(installed))
    out = _run([_tool("ansible-doc"), "--json", "aifabric.acceptance.env_probe"], cwd=str(ee.top), env=env)
    doc = yaml.safe_load(out)["aifabric.acceptance.env_probe"]["doc"]
    assert doc["filename"].startswith(str(root) + os.sep), doc["filename"]
    assert doc["options"]
    out = _run([_tool("ansible-doc"), "--json", "-t", "callback", "aifabric.acceptance.fleet_report"],
               cwd=str(ee.top), env=env)
    assert "reports_root" in yaml.safe_load(out)["aifabric.acceptance.fleet_report"]["doc"]["options"]
    # every Python file of plugins/ imports from the installed copy alone
    names = sorted("ansible_collections.aifabric.acceptance." + os.path.splitext(os.path.relpath(
        os.path.join(top, f), str(root)))[0].replace(os.sep, ".")
        for top, _dirs, files in os.walk(str(root / "plugins")) for f in files
        if f.endswith(".py") and f != "__init__.py")
    assert len(names) > 50 and "ansible_collections.aifabric.acceptance.plugins.callback.fleet_report" in names
    script = ("import importlib, sys\nbad = []\nfor name in sys.argv[2:]:\n"
              "    mod = importlib.import_module(name)\n"
              "    if not mod.__file__.startswith(sys.argv[1]):\n        bad.append((name, mod.__file__))\n"
              "print(len(sys.argv) - 2, bad)\n")
    env["PYTHONPATH"] = str(installed)
    out = _run([sys.executable, "-c", script, str(root) + os.sep] + names, cwd=str(ee.top), env=env)
    assert out.strip() == "%d []" % len(names), out


def _requirement_names(path):
    with open(path, encoding="utf-8") as handle:
        lines = [line.split("#")[0].strip() for line in handle]
    return [re.split(r"[<>=!~\[; ]", line)[0].lower() for line in lines if line]


def test_introspection_of_the_installed_collection_finds_its_deps(ee):
    """What the builder stage's ``introspect`` finds: requirements.txt (less ansible-core: the image has its own)
    and bindep.txt, through the installed collection's meta/execution-environment.yml."""
    installed = _installed(ee)
    found = _run([_tool("ansible-builder"), "introspect", "--sanitize", str(installed)], cwd=str(ee.top))
    deps = yaml.safe_load(found)
    python = {re.split(r"[<>=!~\[; ]", line)[0].lower(): line for line in deps["python"]}
    wanted = [name for name in _requirement_names(os.path.join(REPO, "requirements.txt")) if name != "ansible-core"]
    assert {"psycopg", "kubernetes", "jinja2", "jsonschema"} <= set(wanted)
    assert sorted(python) == sorted(wanted), deps["python"]
    assert all(line.endswith(FROM_COLLECTION) for line in python.values()), deps["python"]
    system = [line.split("#")[0].strip() for line in deps["system"]]
    with open(os.path.join(REPO, "bindep.txt"), encoding="utf-8") as handle:
        assert system == [line.split("#")[0].strip() for line in handle if line.split("#")[0].strip()]


def test_bindep_installs_ssh_and_libpq_on_the_base_image_and_no_test_package(ee, monkeypatch):
    """The final stage runs ``bindep -l newline`` (the default profile) on the introspected bindep.txt. bindep's
    own platform detection and rule evaluation, told what the base image's /etc/os-release says (RHEL 9)."""
    depends = pytest.importorskip("bindep.depends", reason="bindep (installed with ansible-builder) is not installed")
    installed = _installed(ee)
    found = yaml.safe_load(_run([_tool("ansible-builder"), "introspect", "--sanitize", str(installed)],
                                cwd=str(ee.top)))
    base = ee.definition["images"]["base_image"]["name"]
    release = base.rsplit(":", 1)[1]
    assert base.startswith("registry.access.redhat.com/ubi9/") and release.startswith("9.")
    monkeypatch.setattr(depends.distro, "id", lambda: "rhel")
    monkeypatch.setattr(depends.distro, "codename", lambda: "Plow")
    monkeypatch.setattr(depends.distro, "version", lambda *a, **k: release)
    rules = depends.Depends("\n".join(found["system"]) + "\n")
    profiles = rules.platform_profiles()
    assert "platform:rpm" in profiles and "platform:redhat" in profiles, profiles
    packages = rules.list_all_packages(rules.active_rules(profiles + ["default"]))
    assert {"openssh-clients", "libpq", "python3"} <= set(packages), packages
    test_only = [line.split()[0] for line in found["system"] if re.search(r"\[[^]]*\btest\b", line)]
    assert test_only and not set(test_only) & set(packages), (test_only, packages)
    assert not {"libpq5", "openssh-client", "sqlite3"} & set(packages), packages      # the Debian names
