# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The package check probes the Python the GPU modules use (issue 7, "Stages and facts").

gemm_bench and allreduce_probe run `python3` from PATH unless told otherwise; the env probe used to
check only its own interpreter (Ansible's, often /usr/bin/python3) and reported "torch is not
installed" on hosts whose GEMM had just run with torch. The probe outputs are the real captures of
the lent H100 VM (misc/ubuntu2404-h100vm-python-probe-system-python.txt for /usr/bin/python3 and
misc/ubuntu2404-h100vm-python-probe-torch-venv.txt for the torch venv, see misc/PROVENANCE.md).
"""

from __future__ import annotations

from ansible_collections.aifabric.acceptance.plugins.module_utils import env_probe, probe_host
from ansible_collections.aifabric.acceptance.plugins.module_utils.runner import Run
from ansible_collections.aifabric.acceptance.tests.unit.plugins.module_utils.test_env_probe import read

SYSTEM = "/usr/bin/python3"
VENV = "/opt/torch/.venv/bin/python3"
OUTPUTS = {
    SYSTEM: read("misc/ubuntu2404-h100vm-python-probe-system-python.txt"),
    VENV: read("misc/ubuntu2404-h100vm-python-probe-torch-venv.txt"),
}


def probe(root, executable, path_python, params=None):
    """Software probe on an empty fake root (no NCCL libraries, no ldconfig) with the captured outputs."""
    calls = []

    def run(argv, timeout_s):
        assert argv[1:4] == ["-I", "-c", env_probe.PYTHON_PROBE], argv
        calls.append(list(argv))
        return Run(list(argv), 0, OUTPUTS[argv[0]], "", 0.01)

    host = probe_host.Host(run=run, which={"python3": path_python}.get, root=str(root), environ={},
                           executable=executable)
    records = env_probe.probe(host, dict({"groups": ["software"]}, **(params or {})))
    return records, calls


def packages(records, name):
    return dict((r["facts"]["python"], r) for r in records if r["check"] == "env.package"
                and r["facts"]["package"] == name)


def test_the_gpu_modules_python_is_probed_and_the_missing_package_names_where_it_is(tmp_path):
    records, calls = probe(tmp_path, SYSTEM, VENV)
    assert [c[0] for c in calls] == [SYSTEM, VENV]
    torch = packages(records, "torch")
    assert torch[VENV]["status"] == "pass" and torch[VENV]["facts"]["version"] == "2.11.0"
    assert "gemm_bench and allreduce_probe" in torch[VENV]["facts"]["python_role"]
    # before issue 7 this skip was the only torch record, with nothing pointing at the venv
    system = torch[SYSTEM]
    assert system["status"] == "skip"
    assert system["reason"].startswith("torch is not installed for /usr/bin/python3 (the module's interpreter); "
                                       "it is installed for /opt/torch/.venv/bin/python3 (python3 on PATH")
    assert system["facts"]["installed_for"] == {VENV: "2.11.0"}
    pythons = [r for r in records if r["check"] == "env.python"]
    assert [r["target"] for r in pythons] == [SYSTEM, VENV] and all(r["status"] == "pass" for r in pythons)
    # one form of target for every interpreter's packages, the module's own too (it was "torch" for the module's
    # interpreter and "/opt/torch/.venv/bin/python3:torch" for the others)
    assert (system["target"], torch[VENV]["target"]) == (SYSTEM + ":torch", VENV + ":torch")


def test_same_interpreter_is_probed_once(tmp_path):
    records, calls = probe(tmp_path, VENV, VENV)
    assert [c[0] for c in calls] == [VENV]
    assert packages(records, "torch")[VENV]["target"] == VENV + ":torch"


def test_required_package_fails_only_where_it_is_missing_and_says_where_it_is(tmp_path):
    records, _calls = probe(tmp_path, SYSTEM, VENV, {"expect": {"package_versions": {"torch": ""}}})
    torch = packages(records, "torch")
    assert torch[VENV]["status"] == "pass"
    assert torch[SYSTEM]["status"] == "fail" and "it is installed for /opt/torch/.venv/bin/python3" in \
        torch[SYSTEM]["reason"]


def test_no_python3_on_path_keeps_the_module_interpreter_only(tmp_path):
    records, calls = probe(tmp_path, VENV, None)
    assert [c[0] for c in calls] == [VENV]
    assert "installed_for" not in packages(records, "torch")[VENV]["facts"]
