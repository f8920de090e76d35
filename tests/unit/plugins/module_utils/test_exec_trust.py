# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Root executes a file only when root could have written it alone (issue 34): every place the collection executes
a file is walked, and each refuses the FILE (not only its directory) when it is owned by another user, writable by
group or others, reached through a link another user owns, or named through a ``..`` that the kernel resolves
elsewhere than a lexical normalisation does. Run as root with a real unprivileged uid (nobody) on files in
directories the test created.

Before the fix: the roles checked only the tool directory (a foreign-owned ``all_reduce_perf`` in a root-owned
``build/`` ran as root); hccn_tool's fallback path was run unchecked; ``a/link/../tool`` was checked as ``a/tool``
and run as what the kernel resolves.
"""

from __future__ import annotations

import os
import shutil
import stat

import pytest

from ansible_collections.aifabric.acceptance.plugins.module_utils import env_probe, hccl_run, probe_host, runner, statedir
from ansible_collections.aifabric.acceptance.plugins.modules import env_probe as env_probe_module
from ansible_collections.aifabric.acceptance.plugins.modules import trusted_path
from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules.module_harness import patch_exits, run_main
from ansible_collections.aifabric.acceptance.plugins.module_utils import runner as tool_runner
from ansible_collections.aifabric.acceptance.tests.unit.helpers import replayed_runs

FOREIGN = 65534     # nobody
pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another uid needs root")


class _Module:
    """What runner and hccl_run need of a module (the real find_tool, trust checks and runs)."""
    check_mode = False

    @staticmethod
    def get_bin_path(name, required=False, opt_dirs=None):
        return shutil.which(name)


def _exe(path, body="exit 0\n"):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write("#!/bin/sh\n" + body)
    os.chmod(path, 0o755)
    return path


# ------------------------------------------------------------------ every place the collection executes a file

def tool_in_tool_dir(path):
    """nccl_test / hccl_test / perftest: a binary found in tool_dir (runner.find_tool with a directory)."""
    return runner.find_tool(_Module(), os.path.basename(path), path=os.path.dirname(path))


def named_tool(path):
    """mpirun, nvidia-smi, a tool named by its path (runner.find_tool with a file)."""
    return runner.find_tool(_Module(), os.path.basename(path), path=path)


def interpreter(path):
    """gemm_bench / allreduce_probe: the python option (run by its name in its resolved directory)."""
    return runner.find_tool(_Module(), os.path.basename(path), path=path, keep_name=True)


def env_probe_pythons(path):
    """env_probe: pythons and nvidia_smi_path (the module's own check)."""
    return runner.checked_file(path, keep_name=True)


def cann_env_script(path):
    """hccl_test: cann_env_script, sourced by bash."""
    return hccl_run._script_env(_Module(), path)


def hccn_tool_on_path(path):
    """env_probe / fabric_topology: hccn_tool found on PATH."""
    return env_probe.hccn_tool_path(probe_host.Host(which={"hccn_tool": path}.get))


def hccn_tool_fallback(path, monkeypatch=None):
    """env_probe / fabric_topology: hccn_tool's fallback path (where the Ascend driver installs it)."""
    original = env_probe.HCCN_TOOL_PATHS
    env_probe.HCCN_TOOL_PATHS = (path,)
    try:
        return env_probe.hccn_tool_path(probe_host.Host(which={}.get))
    finally:
        env_probe.HCCN_TOOL_PATHS = original


def role_binary(path):
    """roles nccl_tests and perftest: each binary through the trusted_path module (kind=file) before it runs."""
    res = run_main(trusted_path.main, {"path": path, "kind": "file", "required": False})
    if res.failed:
        raise statedir.StateError(res.kwargs["msg"])
    return res.kwargs["path"]


SITES = [tool_in_tool_dir, named_tool, interpreter, env_probe_pythons, cann_env_script, hccn_tool_on_path,
         hccn_tool_fallback, role_binary]


@pytest.fixture(autouse=True)
def _exits(monkeypatch):
    patch_exits(monkeypatch)


@pytest.fixture(name="tree")
def _tree(tmp_path):
    """A root-owned 0755 tree the test made: bin/ (the tool directory), other/ (elsewhere)."""
    os.chmod(str(tmp_path), 0o755)
    for name in ("bin", "other"):
        (tmp_path / name).mkdir(mode=0o755)
    return tmp_path


def foreign_owned(tree):
    tool = _exe(str(tree / "bin" / "tool"))
    os.chown(tool, FOREIGN, FOREIGN)
    return tool


def group_writable(tree):
    tool = _exe(str(tree / "bin" / "tool"))
    os.chmod(tool, 0o775)
    return tool


def other_writable(tree):
    tool = _exe(str(tree / "bin" / "tool"))
    os.chmod(tool, 0o757)
    return tool


def foreign_link(tree):
    """bin/tool -> other/real (a good file), the link owned by another user (who could re-point it)."""
    _exe(str(tree / "other" / "real"))
    os.symlink(str(tree / "other" / "real"), str(tree / "bin" / "tool"))
    os.lchown(str(tree / "bin" / "tool"), FOREIGN, FOREIGN)
    return str(tree / "bin" / "tool")


def dotdot_trick(tree):
    """bin/via/../tool: lexically bin/tool (a good file), for the kernel other/tool (via -> other/sub), owned by
    another user."""
    _exe(str(tree / "bin" / "tool"))
    (tree / "other" / "sub").mkdir()
    os.symlink(str(tree / "other" / "sub"), str(tree / "bin" / "via"))
    _exe(str(tree / "other" / "tool"))
    os.chown(str(tree / "other" / "tool"), FOREIGN, FOREIGN)
    return str(tree / "bin" / "via") + "/../tool"


ATTACKS = [foreign_owned, group_writable, other_writable, foreign_link, dotdot_trick]


@pytest.mark.parametrize("site", SITES, ids=lambda f: f.__name__)
@pytest.mark.parametrize("attack", ATTACKS, ids=lambda f: f.__name__)
def test_every_executed_file_is_refused_when_another_user_controls_it(tree, site, attack):
    path = attack(tree)
    if site in (tool_in_tool_dir,) and attack is dotdot_trick:
        path = os.path.join(str(tree / "bin" / "via") + "/..", "tool")      # tool_dir given as bin/via/..
    with pytest.raises(statedir.StateError):
        site(path)


@pytest.mark.parametrize("site", [s for s in SITES if s is not cann_env_script], ids=lambda f: f.__name__)
def test_a_file_root_could_have_written_alone_is_accepted_and_run_by_the_checked_path(tree, site):
    """The same sites accept a root-owned 0755 file; a trusted link and a ``..`` resolve as the kernel does."""
    tool = _exe(str(tree / "other" / "tool"))
    (tree / "other" / "sub").mkdir()
    os.symlink(str(tree / "other" / "sub"), str(tree / "bin" / "via"))
    given = str(tree / "bin" / "via") + "/../tool"
    got = site(os.path.join(str(tree / "bin" / "via") + "/..", "tool") if site is tool_in_tool_dir else given)
    assert os.path.realpath(got) == tool
    if site not in (interpreter, env_probe_pythons):      # an interpreter keeps its name, in its resolved directory
        assert got == tool


def test_the_kernel_resolves_dotdot_after_a_link_and_so_does_the_rule(tree):
    """The lexical reading of bin/via/../tool is bin/tool; the kernel's is other/tool: the rule checks and returns
    the kernel's, the one that runs."""
    _exe(str(tree / "bin" / "tool"))
    tool = _exe(str(tree / "other" / "tool"))
    (tree / "other" / "sub").mkdir()
    os.symlink(str(tree / "other" / "sub"), str(tree / "bin" / "via"))
    given = str(tree / "bin" / "via") + "/../tool"
    assert os.path.normpath(given) == str(tree / "bin" / "tool")      # what a lexical check looked at
    assert os.path.realpath(given) == tool                              # what the kernel runs
    assert statedir.trusted_file(given) == tool
    assert statedir.trusted_dir(str(tree / "bin" / "via") + "/..", create=False, exec_only=True) == str(tree / "other")


def test_a_foreign_owned_binary_in_a_root_owned_directory_passes_the_directory_rule_but_not_the_file_rule(tree):
    """The roles' old check: the directory passes, the binary in it is another user's."""
    tool = foreign_owned(tree)
    assert statedir.trusted_dir(str(tree / "bin"), create=False, exec_only=True) == str(tree / "bin")
    with pytest.raises(statedir.StateError, match="owned by uid 65534"):
        statedir.trusted_file(tool)


def test_a_directory_or_a_fifo_is_not_a_file_to_run(tree):
    os.mkfifo(str(tree / "bin" / "fifo"))
    with pytest.raises(statedir.StateError, match="not a regular file"):
        statedir.trusted_file(str(tree / "bin" / "fifo"))
    with pytest.raises(statedir.StateError, match="is a directory"):
        statedir.trusted_file(str(tree / "bin") + "/..")


def test_hccn_tool_refused_is_an_error_record_not_a_run(tree, monkeypatch):
    """env_probe: an hccn_tool another user owns is never run; the NPU network record says why."""
    ran = []
    tool = foreign_owned(tree)
    host = probe_host.Host(which={"hccn_tool": tool}.get, run=lambda argv, timeout_s: ran.append(argv))
    (record,) = env_probe.probe_npu_network(host, {"timeout_s": 5}, [{"npu": 0}])
    assert record["status"] == "error" and "owned by uid 65534" in record["reason"] and ran == []


def test_the_role_check_reports_an_absent_binary_without_failing(tree):
    res = run_main(trusted_path.main, {"path": str(tree / "bin" / "absent"), "kind": "file", "required": False})
    assert not res.failed and res.kwargs["exists"] is False and res.kwargs["executable"] is False
    res = run_main(trusted_path.main, {"path": str(tree / "bin" / "absent"), "kind": "file"})
    assert res.failed and "No such file" in res.kwargs["msg"]
    tool = _exe(str(tree / "bin" / "tool"))
    res = run_main(trusted_path.main, {"path": tool, "kind": "file"})
    assert res.kwargs["exists"] and res.kwargs["executable"] and res.kwargs["path"] == tool
    assert stat.S_IMODE(os.stat(tool).st_mode) == 0o755


def test_no_module_runs_what_it_refused(tree, monkeypatch):
    """The env_probe module itself: a python another user owns fails the task before anything runs."""
    calls = []
    monkeypatch.setattr(tool_runner, "spawn", replayed_runs(calls, lambda argv: (0, "", "")))
    res = run_main(env_probe_module.main, {"groups": ["software"], "pythons": [foreign_owned(tree)]})
    assert res.failed and "owned by uid 65534" in res.kwargs["msg"] and calls == []
