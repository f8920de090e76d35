# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The inventory cannot lie to the verdict (issue 33): whole acceptance.yml runs whose words or configuration are wrong
stop at the first play, before the probe, saying the real reason - and the callback's closing words say so too.

Before: ``acceptence_expect: {gpu_count: 8}`` on GPU-less hosts gave PASS, rc 0; expectations in a group the run did
not target silently stopped applying (PASS, rc 0); ``-e acceptance_fail_on=warnn`` was refused only in the last task,
after every stage; ``--tags gpus`` ran nothing and the callback blamed the inventory ("no host was targeted");
without the callback every stage ran and only the last task failed.

The near-miss inventories are generated from the vocabulary (plugins/plugin_utils/inventory_vars.py): one near-miss of
a name of each of the collection's prefixes and of a key of each mapping it reads, set in host_vars files, group_vars
files and ``-e`` alike."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ansible_collections.aifabric.acceptance.plugins.plugin_utils import inventory_vars
from ansible_collections.aifabric.acceptance.tests.integration.test_callback import ANSIBLE_PLAYBOOK, REPO, env  # noqa: F401  pylint: disable=unused-import

ACCEPTANCE = os.path.join(REPO, "playbooks", "acceptance.yml")
VOCABULARY = inventory_vars.Vocabulary(REPO)
PROBE_TASK = "aifabric.acceptance.probe :"      # the first stage's tasks: none may start


def _transposed(name):
    middle = len(name) // 2
    return name[:middle - 1] + name[middle] + name[middle - 1] + name[middle + 1:]


def _near_misses():
    """{bad name: what it meant} for one read name of each prefix, and {variable: (value, bad key, meant)} for one key
    of each mapping, generated from the vocabulary (the first name of each, in order, whose transposition is no
    other name)."""
    names = {}
    for prefix in VOCABULARY.prefixes + inventory_vars.SCAN_PREFIXES:
        for name in sorted(VOCABULARY.names):
            bad = _transposed(name)
            if name.startswith(prefix) and len(name) >= 8 and bad not in VOCABULARY.names:
                names[bad] = name
                break
    keys = {}
    for name, spec in sorted(VOCABULARY.specs.items()):
        options = sorted(k for k in (spec.get("options") or {}) if len(k) >= 5)
        for key in options:
            bad = _transposed(key)
            if bad not in spec["options"]:
                keys[name] = ({bad: 1}, "%s.%s" % (name, bad), "%s.%s" % (name, key))
                break
    return names, keys


def _inventory(tmp_path, host_vars=None, group_vars=None, groups="mynodes"):
    """An inventory directory of its own: node1 (local) in ``groups``, with host_vars and group_vars files."""
    base = tmp_path / "inventory"
    (base / "host_vars").mkdir(parents=True)
    (base / "group_vars").mkdir()
    (base / "hosts.yml").write_text(
        "all:\n  children:\n    %s:\n      hosts:\n        node1:\n          ansible_connection: local\n"
        "          ansible_python_interpreter: %s\n" % (groups, sys.executable), encoding="utf-8")
    if host_vars:
        (base / "host_vars" / "node1.yml").write_text(json.dumps(host_vars), encoding="utf-8")
    for group, data in (group_vars or {}).items():
        (base / "group_vars" / ("%s.yml" % group)).write_text(json.dumps(data), encoding="utf-8")
    return str(base / "hosts.yml")


def _run(env, tmp_path, inventory, *extra, **more_env):  # noqa: F811  pylint: disable=redefined-outer-name
    reports = tmp_path / "reports"
    argv = [ANSIBLE_PLAYBOOK, "-i", inventory, ACCEPTANCE, "-e", "acceptance_hosts=mynodes"] + list(extra)
    run_env = dict(env, AIFABRIC_REPORTS_ROOT=str(reports))
    run_env.update(more_env)
    for name, value in more_env.items():
        if value is None:
            run_env.pop(name)
    proc = subprocess.run(argv, env=run_env, cwd=str(tmp_path), capture_output=True, text=True, timeout=300, check=False)
    out = (proc.stdout + proc.stderr).replace("\n", " ")
    return proc, out


def _stopped_first(proc, out, tmp_path):
    assert proc.returncode == 2, out[-4000:]
    assert PROBE_TASK not in out, out[-4000:]                       # no stage ran
    assert "the run stops before any stage" in out, out[-4000:]
    assert not (tmp_path / "reports").exists() or os.listdir(str(tmp_path / "reports")) == []


@pytest.mark.parametrize("where", ["host_vars", "group_vars", "extra_vars"])
def test_near_misses_of_every_prefix_and_every_mapping_stop_the_run_at_its_first_play(env, tmp_path, where):  # noqa: F811  pylint: disable=redefined-outer-name
    names, keys = _near_misses()
    assert len(names) >= 10 and len(keys) >= 10, (names, keys)
    data = dict((bad, 1) for bad in names)
    data.update((name, value) for name, (value, _bad, _meant) in keys.items())
    if where == "extra_vars":
        proc, out = _run(env, tmp_path, _inventory(tmp_path), "-e", json.dumps(data))
    else:
        inventory = _inventory(tmp_path, host_vars=data if where == "host_vars" else None,
                               group_vars={"mynodes": data} if where == "group_vars" else None)
        proc, out = _run(env, tmp_path, inventory)
    _stopped_first(proc, out, tmp_path)
    for bad, meant in names.items():
        assert "%s (did you mean %s" % (bad, meant) in out, (bad, meant, out[-6000:])
    for _name, (_value, bad, meant) in keys.items():
        assert "%s (did you mean %s" % (bad, meant) in out, (bad, meant, out[-6000:])
    # the callback's closing words name the real reason, not the inventory
    assert "the run stopped at its first step" in out and "no host was targeted" not in out


def test_a_misspelt_expectation_no_longer_gives_a_green(env, tmp_path):  # noqa: F811  pylint: disable=redefined-outer-name
    proc, out = _run(env, tmp_path, _inventory(tmp_path, group_vars={"mynodes": {"acceptence_expect": {"gpu_count": 8}}}))
    _stopped_first(proc, out, tmp_path)
    assert "node1: acceptence_expect (did you mean acceptance_expect?)" in out, out[-4000:]


def test_expectations_in_a_group_the_run_does_not_target_stop_it_naming_the_group(env, tmp_path):  # noqa: F811  pylint: disable=redefined-outer-name
    """The example inventory keeps them in group_vars/gpu_nodes.yml; hosts in another group targeted with
    -e acceptance_hosts=<it> gave PASS, rc 0 on GPU-less hosts that the inventory says have 8."""
    expect = {"acceptance_expect": {"gpu_count": 8}}
    # gpu_nodes is no group of the inventory: its group_vars file applies to no host
    proc, out = _run(env, tmp_path, _inventory(tmp_path, group_vars={"gpu_nodes": expect}))
    _stopped_first(proc, out, tmp_path)
    assert "the group gpu_nodes sets acceptance_expect, but is no group of the inventory" in out, out[-4000:]
    # a group of the inventory that holds other hosts only, its variables in the inventory itself
    other = tmp_path / "other"
    other.mkdir()
    inventory = other / "hosts.yml"
    inventory.write_text(
        "all:\n  children:\n    mynodes:\n      hosts:\n        node1:\n          ansible_connection: local\n"
        "          ansible_python_interpreter: %s\n    gpu_nodes:\n      vars:\n        acceptance_expect: {gpu_count: 8}\n"
        "      hosts:\n        node9:\n          ansible_connection: local\n" % sys.executable, encoding="utf-8")
    proc, out = _run(env, other, str(inventory))
    _stopped_first(proc, out, other)
    assert "the group gpu_nodes sets acceptance_expect, but holds none of the 1 hosts this run targets (node1)" in out
    # acceptance_strict_vars=false keeps the warn-only escape (the run goes on)
    proc, out = _run(env, tmp_path, _inventory(tmp_path / "x", group_vars={"gpu_nodes": expect}),
                     "-e", "acceptance_strict_vars=false", "--tags", "probe", "-C")
    assert "[WARNING]: the group gpu_nodes sets acceptance_expect" in out and PROBE_TASK in out, out[-4000:]


@pytest.mark.parametrize("case", ["fail_on", "fail_on_env", "pattern", "tags", "tags_substrate", "callback",
                                  "reports_root", "report_dir"])
def test_each_configuration_error_stops_the_run_before_the_probe_with_its_reason(env, tmp_path, case):  # noqa: F811  pylint: disable=redefined-outer-name
    inventory = _inventory(tmp_path)
    extra, more_env, says = [], {}, None
    if case == "fail_on":
        extra, says = ["-e", "acceptance_fail_on=warnn"], "acceptance_fail_on=warnn is not one of fail, warn, never"
    elif case == "fail_on_env":
        more_env, says = {"AIFABRIC_FAIL_ON": "never!"}, "AIFABRIC_FAIL_ON=never! is not one of fail, warn, never"
    elif case == "pattern":
        extra, says = ["-e", "acceptance_hosts=mynode"], "the host pattern mynode matches no host of the inventory"
    elif case == "tags":
        extra, says = ["--tags", "gpus"], "--tags gpus selects no stage of this playbook over ssh: gpus (did you mean gpu?)"
    elif case == "tags_substrate":
        extra, says = ["--tags", "nccl"], "nccl is a stage only over kubernetes"
    elif case == "callback":
        cfg = tmp_path / "outside.cfg"
        cfg.write_text("[defaults]\nhost_key_checking = False\n", encoding="utf-8")   # not the repository's
        more_env = {"ANSIBLE_CONFIG": str(cfg), "ANSIBLE_CALLBACKS_ENABLED": None}
        says = "ANSIBLE_CALLBACKS_ENABLED=aifabric.acceptance.fleet_report"
    elif case in ("reports_root", "report_dir"):    # report_dir: its env name before 2.0.0, deprecated, still read
        shared = tmp_path / "shared"
        shared.mkdir()
        os.chmod(str(shared), 0o777)        # a directory anybody may write: the path rule refuses it
        more_env = {"AIFABRIC_REPORTS_ROOT" if case == "reports_root" else "AIFABRIC_REPORT_DIR": str(shared / "reports")}
        says = "cannot use reports root: %s is writable by group or others" % shared
    proc, out = _run(env, tmp_path, inventory, *extra, **more_env)
    _stopped_first(proc, out, tmp_path)
    assert says in out, (says, out[-4000:])
    if case == "report_dir":
        deprecation = " ".join(out.split("[DEPRECATION WARNING]")[1:])
        assert "AIFABRIC_REPORT_DIR" in deprecation and "3.0.0" in deprecation, out[-4000:]
    if case not in ("callback", "reports_root", "report_dir"):      # (a callback disabled says nothing at the end)
        assert "the run stopped at its first step" in out and "no host was targeted" not in out, out[-3000:]


def test_the_stage_tags_each_playbook_declares_are_the_tags_it_has():
    """The check refuses a --tags value that selects no stage: each playbook's __check_stage_tags must be its real
    tags (ansible-playbook --list-tags), or a valid tag would be refused."""
    import yaml     # pylint: disable=import-outside-toplevel
    checked = 0
    for name in sorted(os.listdir(os.path.join(REPO, "playbooks"))):
        path = os.path.join(REPO, "playbooks", name)
        if not name.endswith(".yml"):
            continue
        with open(path, encoding="utf-8") as fh:
            plays = yaml.safe_load(fh) or []
        declared = None
        for play in plays:
            if str(play.get("ansible.builtin.import_playbook", "")) == "check_vars.yml":
                declared = (play.get("vars") or {}).get("__check_stage_tags")
        if declared is None:
            continue
        listed = subprocess.run([ANSIBLE_PLAYBOOK, "-i", "localhost,", path, "--list-tags"], capture_output=True,
                                text=True, timeout=120, check=False, env=dict(os.environ, **_collection_env()))
        assert listed.returncode == 0, listed.stderr[-2000:]
        tags = set()
        for line in listed.stdout.splitlines():
            if "TASK TAGS:" in line:
                tags.update(t.strip() for t in line.split("[", 1)[1].rstrip("]").split(",") if t.strip())
        tags.discard("always")
        assert set(t for ts in declared.values() for t in ts) == tags, (name, declared, tags)
        checked += 1
    assert checked >= 8, checked


def _collection_env():
    from ansible_collections.aifabric.acceptance.tests.integration.conftest import collections_path  # pylint: disable=import-outside-toplevel
    return {"ANSIBLE_COLLECTIONS_PATH": collections_path(), "ANSIBLE_CONFIG": os.path.join(REPO, "ansible.cfg")}
