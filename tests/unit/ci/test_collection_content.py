# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A site's inventory stays the site's: under inventories/ only the shipped examples go into the built collection
(galaxy.yml's build_ignore, which `ansible-galaxy collection build` reads) and into .collections/<hash>
(.ci/collection.py hashes and copies only what the build keeps), so editing a site inventory rebuilds nothing.

Before: `cp -r inventories/example-fleet inventories/mysite` (the README's advice) put the site's host names,
addresses, users and vault files into the tarball, the execution environment and .collections/<hash>, and each edit
of the inventory built and installed the collection again."""

from __future__ import annotations

import importlib.util
import os
import shutil
import string
import subprocess
import sys
import tarfile

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, os.pardir))
GALAXY_BIN = os.path.join(os.path.dirname(sys.executable), "ansible-galaxy")


def _load_collection_py(root=ROOT):
    """.ci/collection.py as a module, its ROOT (and the paths made from it) set to ``root``."""
    spec = importlib.util.spec_from_file_location("aifabric_ci_collection", os.path.join(ROOT, ".ci", "collection.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.ROOT, module.GALAXY = root, os.path.join(root, "galaxy.yml")
    module.STORE = os.path.join(root, ".collections")
    return module


COLLECTION = _load_collection_py()


def shipped_examples():
    """The example inventories the collection ships: .gitignore's `!/inventories/<name>/` lines."""
    with open(os.path.join(ROOT, ".gitignore"), encoding="utf-8") as handle:
        lines = [line.strip() for line in handle]
    assert "/inventories/*" in lines
    return sorted(line[len("!/inventories/"):-1] for line in lines
                  if line.startswith("!/inventories/") and line.endswith("/"))


def site_inventory_patterns(examples, base="inventories/"):
    """fnmatch patterns that match every name under ``base`` but the examples and what is inside them: for each
    prefix of an example, the name that stops there (unless it is an example) and the names that go on with another
    letter (after an example: any letter but "/")."""
    for name in examples:
        assert not set(name) & set("[]!*?/\\"), name
    out = []

    def char_class(chars):
        return "".join(sorted(set(chars) - {"-"})) + ("-" if "-" in chars else "")     # "-" last: not a range

    def walk(prefix):
        following = sorted({e[len(prefix)] for e in examples if e.startswith(prefix) and len(e) > len(prefix)})
        if prefix and prefix not in examples:
            out.append(base + prefix)
        stop = (["/"] if prefix in examples else []) + following
        if stop:
            out.append(base + prefix + "[!%s]*" % char_class(stop))
        for char in following:
            walk(prefix + char)

    walk("")
    return out


def galaxy_build_ignore():
    with open(os.path.join(ROOT, "galaxy.yml"), encoding="utf-8") as handle:
        return list(yaml.safe_load(handle)["build_ignore"])


def test_galaxy_yml_names_every_inventory_but_the_examples():
    examples = shipped_examples()
    assert examples == sorted(d for d in os.listdir(os.path.join(ROOT, "inventories"))
                              if not COLLECTION.build_ignored("inventories/" + d, galaxy_build_ignore())), \
        "the example inventories of .gitignore and of galaxy.yml's build_ignore differ"
    ours = [p for p in galaxy_build_ignore() if p.startswith("inventories/")]
    expected = site_inventory_patterns(examples)
    assert ours == expected, "galaxy.yml's build_ignore, for the examples %s, should end with:\n%s" % (
        examples, "\n".join("  - '%s'" % p for p in expected))


NAME_CHARS = string.ascii_lowercase + string.digits + "-_."


@st.composite
def site_names(draw):
    """Names near the examples' (a prefix of one, with letters changed or added) and any others."""
    example = draw(st.sampled_from(shipped_examples()))
    cut = draw(st.integers(0, len(example)))
    name = example[:cut] + draw(st.text(NAME_CHARS, max_size=6))
    return name if name and name not in shipped_examples() else "x" + name


@settings(max_examples=300, deadline=None)
@given(name=site_names(), inside=st.lists(st.text(NAME_CHARS, min_size=1, max_size=8), max_size=3))
def test_any_other_inventory_is_left_out_and_the_examples_are_kept(name, inside):
    patterns = galaxy_build_ignore()
    assert COLLECTION.build_ignored("/".join(["inventories", name] + inside), patterns)
    for example in shipped_examples():
        assert not COLLECTION.build_ignored("/".join(["inventories", example] + (inside or ["hosts.yml"])), patterns)


SITE_FILES = ("inventories/mysite/hosts.yml", "inventories/mysite/group_vars/all/vault.yml",
              "inventories/localhost2/hosts.yml", "inventories/loc/hosts.yml", "inventories/k8s.yml",
              "inventories/hosts.yml", "inventories/example-fleet-prod/hosts.yml", "inventories/e/hosts.yml")


def _tree(tmp_path):
    """A collection tree made of this checkout's galaxy.yml, .gitignore, README, meta and inventories, and a site's
    inventories beside the examples."""
    top = tmp_path / "tree"
    top.mkdir()
    for rel in ("galaxy.yml", ".gitignore", "README.md", "meta"):
        src = os.path.join(ROOT, rel)
        (shutil.copytree if os.path.isdir(src) else shutil.copy2)(src, str(top / rel))
    for example in shipped_examples():
        shutil.copytree(os.path.join(ROOT, "inventories", example), str(top / "inventories" / example))
    for rel in SITE_FILES:
        (top / rel).parent.mkdir(parents=True, exist_ok=True)
        (top / rel).write_text("all:\n  hosts:\n    gpu-node-01: {ansible_host: 10.1.2.3, ansible_user: admin}\n")
    return top


def _example_files():
    out = []
    for example in shipped_examples():
        for folder, _dirs, files in os.walk(os.path.join(ROOT, "inventories", example)):
            out.extend(os.path.relpath(os.path.join(folder, f), ROOT).replace(os.sep, "/") for f in files)
    return sorted(out)


def test_ansible_galaxy_builds_the_examples_and_no_site_inventory(tmp_path):
    """The real `ansible-galaxy collection build` with this galaxy.yml: the tarball holds the examples' files and no
    file of the site's inventories."""
    top = _tree(tmp_path)
    out = tmp_path / "dist"
    done = subprocess.run([GALAXY_BIN, "collection", "build", "--output-path", str(out), str(top)],
                          capture_output=True, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    (tarball,) = list(out.iterdir())
    with tarfile.open(str(tarball)) as tar:
        names = sorted(m.name for m in tar.getmembers() if m.isfile() and m.name.startswith("inventories/"))
    assert names == _example_files()


@pytest.mark.parametrize("git", [True, False], ids=["git checkout", "plain copy"])
def test_a_site_inventory_changes_neither_the_hash_nor_the_build(tmp_path, git):
    """.ci/collection.py's content hash (the name of .collections/<hash>) and the files it copies to build: a site
    inventory - untracked, or even added to git by force - is in neither, and editing it keeps the hash; editing an
    example changes it."""
    top = _tree(tmp_path)
    collection = _load_collection_py(str(top))
    if git:
        if not shutil.which("git"):
            pytest.skip("git is not installed")
        subprocess.run(["git", "init", "-q", str(top)], check=True, timeout=60)
        subprocess.run(["git", "-C", str(top), "add", "-f", "inventories/mysite/hosts.yml"], check=True, timeout=60)
        tracked = subprocess.run(["git", "-C", str(top), "ls-files"], capture_output=True, text=True, check=True,
                                 timeout=60).stdout.split()
        assert tracked == ["inventories/mysite/hosts.yml"]
    files = collection.shipped_files()
    assert [f for f in files if f.startswith("inventories/")] == _example_files()
    assert "galaxy.yml" in files
    before = collection.content_key(files)
    with open(str(top / "inventories" / "mysite" / "hosts.yml"), "a") as handle:
        handle.write("    gpu-node-02: {ansible_host: 10.1.2.4}\n")
    (top / "inventories" / "newsite").mkdir()
    (top / "inventories" / "newsite" / "hosts.yml").write_text("all: {}\n")
    assert collection.content_key(collection.shipped_files()) == before
    with open(str(top / "inventories" / "localhost" / "hosts.yml"), "a") as handle:
        handle.write("# edited\n")
    assert collection.content_key(collection.shipped_files()) != before
