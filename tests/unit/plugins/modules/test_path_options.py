# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every path a user can give the collection, walked: each one it writes into or executes from is refused when it
pre-exists owned by another user, writable by group or others, or as a symbolic link another user could re-point.

The options are found from the documentation of every module, the callback and every role's argument spec (type
``path`` or a name that holds a path); a new one fails ``test_every_path_option_is_classified`` until it is listed
here with how it is used and a driver that goes through the code the module runs with it. Every path these tests
touch is under the test's own temporary directory.
"""

from __future__ import annotations

import glob
import os
import re
import shutil
import sys

import pytest
import yaml
from ansible.module_utils import basic
from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules.module_harness import patch_exits, run_main

from ansible_collections.aifabric.acceptance.plugins.module_utils import burnin_worker, governor, gpu_worker, hccl_run, runner, statedir
from ansible_collections.aifabric.acceptance.plugins.modules import cleanup, dcgm_diag, env_probe, k8s_device_plugin, k8s_workload, perftest
from ansible_collections.aifabric.acceptance.plugins.modules import gpu_soak, trusted_path
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import exports, fleet, history, render

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
FOREIGN = 65534
PATHY = re.compile(r"(_dir|_path|_root|_db|_file|_script|^dest$|^src$|^pythons?$|^mpirun$|_cert$|_key$|kubeconfig|"
                   r"from_output)")


def _doc(path):
    text = open(path, encoding="utf-8").read()
    return yaml.safe_load(re.search(r'DOCUMENTATION = r?"""(.*?)"""', text, re.S).group(1))


def _options(doc):
    options = dict(doc.get("options") or {})
    for fragment in doc.get("extends_documentation_fragment") or []:
        name = fragment.split(".")[-1]
        path = os.path.join(REPO, "plugins", "doc_fragments", name + ".py")
        if os.path.isfile(path):
            options.update(_doc(path).get("options") or {})
    return options


def discovered():
    """{(plugin, option): type} of every option that holds a path."""
    found = {}
    for path in sorted(glob.glob(os.path.join(REPO, "plugins", "modules", "*.py")) +
                       glob.glob(os.path.join(REPO, "plugins", "callback", "*.py"))):
        plugin = os.path.basename(path)[:-3]
        for name, spec in _options(_doc(path)).items():
            if spec.get("type") == "path" or PATHY.search(name):
                found[(plugin, name)] = spec.get("type", "str")
    for path in glob.glob(os.path.join(REPO, "roles", "*", "meta", "argument_specs.yml")):
        role = "role:" + path.split(os.sep)[-3]
        for entry in yaml.safe_load(open(path, encoding="utf-8"))["argument_specs"].values():
            for name, spec in (entry.get("options") or {}).items():
                if spec.get("type") == "path" or PATHY.search(name):
                    found[(role, name)] = spec.get("type", "str")
    return found


# ---------------------------------------------------------------- drivers: the code each option reaches

class _Module:
    """What runner/hccl_run need of a module (the real find_tool and trust checks run)."""
    check_mode = False

    def get_bin_path(self, name, required=False, opt_dirs=None):
        return shutil.which(name)


def _exe(directory, name="tool", body="exit 0\n"):
    path = os.path.join(directory, name)
    with open(path, "w") as handle:
        handle.write("#!/bin/sh\n" + body)
    os.chmod(path, 0o755)
    return path


_call = run_main


def _module_refuses(main, args):
    res = _call(main, args)
    if not res.failed:
        return None
    return res.kwargs["msg"]


def worker_dir(path):
    gpu_worker.stage(path)


def burnin_worker_dir(path):
    gpu_worker.stage(path, burnin_worker, gpu_worker.BURNIN_NAME)


def render_dir(path):
    return _module_refuses(k8s_workload.main, {"kind": "env_probe", "hosts": ["n1"], "image": "img:1", "render_dir": path,
                                               "run_id": "walk"})


def device_plugin_render_dir(path):
    return _module_refuses(k8s_device_plugin.main, {"render_dir": path, "resource_list": [
        {"name": "hca_shared_devices_a", "selectors": {"vendors": ["15b3"]}}]})


def state_root(path):
    return _module_refuses(perftest.main, {"state": "absent", "state_root": path, "run_id": "walk"})


def cleanup_state_root(path):
    return _module_refuses(cleanup.main, {"perftest_state": True, "state_root": path, "run_id": "walk"})


def history_db(path):
    history.record_run(os.path.join(path, "history.sqlite"), {"run_id": "r1", "started": "2026-11-22T10:00:00Z"}, [])


def report_dest(path):
    report = fleet.build_report([], {"run_id": "r1", "started": "2026-11-22T10:00:00Z"})
    render.write_report(report, path)


def history_dest(path):
    render.write_atomic(os.path.join(path, "export.jsonl"), "")


def output_dir(path):
    report = fleet.build_report([], {"run_id": "r1", "started": "2026-11-22T10:00:00Z"})
    render.stage_report(report, os.path.join(path, "20261122T100000Z-r1"), None, fresh=True).commit()


def prometheus_dir(path):
    report = fleet.build_report([], {"run_id": "r1", "started": "2026-11-22T10:00:00Z"})
    exports.write_prometheus(report, path)


def tool_dir(path):
    _exe(path, "all_reduce_perf")
    runner.find_tool(_Module(), "all_reduce_perf", path=path)


def tool_file(path):
    runner.find_tool(_Module(), "python3", path=_exe(path, "python3"))


def cann_env_script(path):
    hccl_run._script_env(_Module(), _exe(path, "set_env.sh", "export ASCEND_TOOLKIT_HOME=/usr/local/Ascend\n"))


def _fake_cpufreq(path):
    cpufreq = os.path.join(os.path.realpath(path), "cpu0", "cpufreq")
    os.makedirs(cpufreq)
    with open(os.path.join(cpufreq, "scaling_governor"), "w") as handle:
        handle.write("powersave\n")


def cpu_sysfs(path):
    governor.Governor(os.path.join(str(path) + "-state", "governor.json"), root=path)._write({"0": "performance"})


cpu_sysfs.prepare = _fake_cpufreq


def probe_exec(path):
    return _module_refuses(env_probe.main, {"groups": ["software"], "pythons": [_exe(path, "python3")]})


def probe_smi(path):
    return _module_refuses(env_probe.main, {"groups": ["gpu"], "nvidia_smi_path": _exe(path, "nvidia-smi")})


def dcgmi_path(path):
    return _module_refuses(dcgm_diag.main, {"dcgmi_path": _exe(path, "dcgmi")})


def role_install_dir(path):
    return _module_refuses(trusted_path.main, {"path": path, "create": True, "private": False})


def role_bin_dir(path):
    return _module_refuses(trusted_path.main, {"path": path, "kind": "bin_directory"})


WRITE, EXEC, READ = "write", "exec", "read"
CLASSIFIED = {
    ("allreduce_probe", "worker_dir"): (WRITE, worker_dir),
    ("gemm_bench", "worker_dir"): (WRITE, worker_dir),
    ("gpu_soak", "worker_dir"): (WRITE, burnin_worker_dir),
    ("copy_bandwidth", "worker_dir"): (WRITE, burnin_worker_dir),
    ("k8s_workload", "render_dir"): (WRITE, render_dir),
    ("k8s_device_plugin", "render_dir"): (WRITE, device_plugin_render_dir),     # the same statedir.trusted_dir
    ("perftest", "state_root"): (WRITE, state_root),
    ("perftest_sweep", "state_root"): (WRITE, state_root),          # the same PerftestRun.open_state
    ("cleanup", "state_root"): (WRITE, cleanup_state_root),
    ("history", "history_db"): (WRITE, history_db),
    ("report", "history_db"): (WRITE, history_db),
    ("fleet_report", "history_db"): (WRITE, history_db),
    ("history", "dest"): (WRITE, history_dest),
    ("report", "dest"): (WRITE, report_dest),
    ("report", "prometheus_dir"): (WRITE, prometheus_dir),
    ("fleet_report", "reports_root"): (WRITE, output_dir),
    ("role:nccl_tests", "nccl_tests_install_dir"): (WRITE, role_install_dir),
    ("trusted_path", "path"): (WRITE, role_install_dir),
    ("perftest", "cpu_sysfs"): (WRITE, cpu_sysfs),
    ("perftest_sweep", "cpu_sysfs"): (WRITE, cpu_sysfs),       # the same Governor
    ("cleanup", "cpu_sysfs"): (WRITE, cpu_sysfs),              # the same Governor (PerftestRun.absent)
    ("env_probe", "pythons"): (EXEC, probe_exec),
    ("env_probe", "nvidia_smi_path"): (EXEC, probe_smi),
    ("dcgm_diag", "dcgmi_path"): (EXEC, dcgmi_path),
    ("nccl_test", "tool_dir"): (EXEC, tool_dir),
    ("hccl_test", "tool_dir"): (EXEC, tool_dir),
    ("perftest", "tool_dir"): (EXEC, tool_dir),
    ("perftest_sweep", "tool_dir"): (EXEC, tool_dir),
    ("allreduce_probe", "python"): (EXEC, tool_file),
    ("gemm_bench", "python"): (EXEC, tool_file),
    ("gpu_soak", "python"): (EXEC, tool_file),
    ("copy_bandwidth", "python"): (EXEC, tool_file),
    ("allreduce_probe", "mpirun"): (EXEC, tool_file),
    ("nccl_test", "mpirun"): (EXEC, tool_file),
    ("hccl_test", "mpirun"): (EXEC, tool_file),
    ("hccl_test", "cann_env_script"): (EXEC, cann_env_script),
    ("role:nccl_tests", "nccl_tests_tool_dir"): (EXEC, role_bin_dir),
    ("role:perftest", "perftest_tool_dir"): (EXEC, role_bin_dir),
    # the rdma role hands these to the modules' own options (the same code as above)
    ("role:rdma", "rdma_state_root"): (WRITE, state_root),
    ("role:rdma", "rdma_cpu_sysfs"): (WRITE, cpu_sysfs),
    ("role:rdma", "rdma_nvidia_smi_path"): (EXEC, probe_smi),
    # read only: import mode reads a regular file of at most 64 MiB (tests of imports.read_output), the
    # Kubernetes client reads its credentials, the probes read sysfs; the pod's python runs in the user's image
    ("nccl_test", "from_output"): (READ, None),
    ("hccl_test", "from_output"): (READ, None),
    ("perftest", "from_output"): (READ, None),
    ("fabric_topology", "from_output"): (READ, None),
    ("dcgm_diag", "from_output"): (READ, None),
    ("gpu_soak", "from_output"): (READ, None),
    ("copy_bandwidth", "from_output"): (READ, None),
    ("report", "src"): (READ, None),
    ("history", "reports_root"): (READ, None),
    ("perftest", "sysfs_root"): (READ, None),
    ("perftest_sweep", "sysfs_root"): (READ, None),
    ("role:rdma", "rdma_sysfs_root"): (READ, None),
    ("k8s_workload", "python"): (READ, None),
    ("role:nccl", "nccl_profiles_file"): (READ, None),     # read on the controller (a lookup)
    ("role:gpu", "gpu_profiles_file"): (READ, None),       # the same
    ("role:probe", "probe_topology_file"): (READ, None),   # the same
    ("role:probe", "probe_ibnetdiscover_file"): (READ, None),  # read on the controller (fabric_topology, delegated)
    # the screen's own spec holds the probe role's topology options, which it hands to the probe role (the same use)
    ("role:nccl", "probe_topology_file"): (READ, None),
    ("role:nccl", "probe_ibnetdiscover_file"): (READ, None),
    ("role:hccl", "hccl_profiles_file"): (READ, None),     # the same
    ("role:k8s", "k8s_render_dir"): (WRITE, render_dir),   # handed to k8s_workload's render_dir as it is
    # set by job_wait's action only (the shell's async_dir, where ansible-core's async_wrapper wrote the job's file; a
    # task cannot give it): the module reads the job's file there and removes that one file, named by a checked job id
    ("job_wait", "async_dir"): (READ, None),
}
for _plugin in ("k8s_workload", "k8s_preflight", "k8s_device_plugin", "k8s_node_verdicts"):
    for _name in ("kubeconfig", "ca_cert", "client_cert", "client_key", "api_key"):
        CLASSIFIED[(_plugin, _name)] = (READ, None)
PENDING = {}    # (plugin, option): why it is not driven yet - must stay empty


def test_every_path_option_is_classified():
    found = discovered()
    missing = sorted(set(found) - set(CLASSIFIED) - set(PENDING))
    assert not missing, "path options nobody classified (add them with a driver): %s" % missing
    stale = sorted(set(CLASSIFIED) - set(found))
    assert not stale, "classified options that no longer exist: %s" % stale
    assert len([k for k, (use, _d) in CLASSIFIED.items() if use != READ]) >= 20


DRIVEN = sorted(k for k, (use, _d) in CLASSIFIED.items() if use != READ)


@pytest.fixture
def env(monkeypatch, tmp_path):
    patch_exits(monkeypatch)
    monkeypatch.setattr(basic.AnsibleModule, "tmpdir", str(tmp_path / "modtmp"), raising=False)
    return tmp_path


def _bad(tmp_path, kind):
    """A directory of the given bad kind, under the test's own temporary directory."""
    real = tmp_path / ("real-" + kind)
    real.mkdir(mode=0o755)
    if kind == "foreign":
        os.chown(str(real), FOREIGN, FOREIGN)
        return str(real)
    if kind == "writable":
        os.chmod(str(real), 0o777)
        return str(real)
    link = tmp_path / ("link-" + kind)
    os.symlink(str(real), str(link))
    os.lchown(str(link), FOREIGN, FOREIGN)      # a link another user owns (could re-point it)
    return str(link)


@pytest.mark.skipif(os.geteuid() != 0, reason="another user's directories need root to make")
@pytest.mark.parametrize("kind", ["foreign", "writable", "symlink"])
@pytest.mark.parametrize("option", DRIVEN, ids=["%s.%s" % k for k in DRIVEN])
def test_each_path_option_refuses_what_another_user_controls(env, option, kind):
    path = _bad(env, kind)
    assert path.startswith(str(env))
    _use, driver = CLASSIFIED[option]
    getattr(driver, "prepare", lambda _p: None)(path)
    before = sorted(os.walk(os.path.realpath(path)))
    try:
        message = driver(path)
    except (statedir.StateError, history.HistoryError) as exc:
        message = str(exc)
    assert message, "%s accepted a %s path %s" % (option, kind, path)
    assert re.search(r"owned by uid %d|writable by group or others|symbolic link" % FOREIGN, message), message
    if _use == WRITE:
        assert sorted(os.walk(os.path.realpath(path))) == before      # nothing was written into it
    if option[1] == "cpu_sysfs":
        with open(os.path.join(os.path.realpath(path), "cpu0", "cpufreq", "scaling_governor")) as handle:
            assert handle.read() == "powersave\n"


@pytest.mark.parametrize("option", DRIVEN, ids=["%s.%s" % k for k in DRIVEN])
def test_each_path_option_accepts_a_private_directory(env, option):
    """The same drivers on a directory of our own (0700): the rule refuses only what it should."""
    path = str(env / "mine")
    os.mkdir(path, 0o700)
    _use, driver = CLASSIFIED[option]
    getattr(driver, "prepare", lambda _p: None)(path)
    try:
        message = driver(path)
    except (statedir.StateError, history.HistoryError) as exc:
        message = str(exc)
    assert not message or not re.search(r"owned by uid|writable by group or others|symbolic link", str(message)), \
        message


DEFAULTS_UNDER_SHARED = re.compile(r"(?<![\w.])(/tmp|/var/tmp|~)(/|\b)")


def test_no_write_or_exec_default_under_a_shared_directory():
    """A default under /tmp, /var/tmp or ~ that a path option falls back to would be squattable (or shared over
    NFS): there are none left in the options, the roles' defaults and the playbooks' defaults."""
    offenders = []
    found = discovered()
    assert len(found) >= 10, found
    for path in sorted(glob.glob(os.path.join(REPO, "plugins", "modules", "*.py")) +
                       glob.glob(os.path.join(REPO, "plugins", "callback", "*.py"))):
        plugin = os.path.basename(path)[:-3]
        for name, spec in _options(_doc(path)).items():
            if (plugin, name) in found and DEFAULTS_UNDER_SHARED.search(str(spec.get("default") or "")):
                offenders.append("%s.%s default %s" % (plugin, name, spec.get("default")))
    for path in glob.glob(os.path.join(REPO, "playbooks", "**", "*.yml"), recursive=True) + \
            glob.glob(os.path.join(REPO, "roles", "*", "defaults", "*.yml")):
        for number, line in enumerate(open(path, encoding="utf-8"), 1):
            if "default(" in line and DEFAULTS_UNDER_SHARED.search(line.split("default(", 1)[1]):
                offenders.append("%s:%d %s" % (os.path.relpath(path, REPO), number, line.strip()))
            elif re.match(r"^\w+:\s*['\"]?(/tmp|/var/tmp|~)", line):
                offenders.append("%s:%d %s" % (os.path.relpath(path, REPO), number, line.strip()))
    assert not offenders, offenders


def soak_smi(path):
    """gpu_soak's nvidia_smi by absolute path (a str option: the worker runs it, often as root)."""
    return _module_refuses(gpu_soak.main, {"nvidia_smi": _exe(path, "nvidia-smi"), "python": sys.executable,
                                           "worker_dir": str(path) + "-worker"})


@pytest.mark.skipif(os.geteuid() != 0, reason="another user's directories need root to make")
@pytest.mark.parametrize("kind", ["foreign", "writable", "symlink"])
def test_the_soak_refuses_an_nvidia_smi_another_user_controls(env, kind):
    path = _bad(env, kind)
    try:
        message = soak_smi(path)
    except statedir.StateError as exc:
        message = str(exc)
    assert message and re.search(r"owned by uid %d|writable by group or others|symbolic link" % FOREIGN, message), \
        message
    assert not os.path.exists(str(path) + "-worker")        # refused before the worker was staged
