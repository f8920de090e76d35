# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""playbooks/acceptance.yml as a composition (issue 23), real ansible-playbook runs against local hosts:

- ``--tags gpu`` runs the GPU stage alone (with the check of the inventory's variables and the summary): the probe is
  skipped and the GPU stage still targets the hosts (no aifabric_gpu_* group exists then);
- ``--tags probe`` runs the probe role: its facts and groups, and the GPU stage does not run;
- the plays of the other substrate match no host: on SSH the Kubernetes plays print their name and "no hosts
  matched", nothing else, and on Kubernetes (``acceptance_substrate``, an extra variable or a host's) the SSH plays;
- the probe role alone: facts probe_gpu_count/probe_npu_count/probe_hca_count, groups, required checks, and a
  misspelt key of probe_options fails at the role's start with its argument-spec message.

AIFABRIC_TEST_ANSIBLE_PLAYBOOK runs them with another ansible-playbook (for example ansible-core 2.21's)."""

from __future__ import annotations

import os
import re
import subprocess

import pytest

from ansible_collections.aifabric.acceptance.tests.integration.test_callback import ANSIBLE_PLAYBOOK, PLAYBOOKS, env  # noqa: F401  pylint: disable=unused-import

REPO_PLAYBOOKS = os.path.join(os.path.dirname(os.path.dirname(PLAYBOOKS)), os.pardir, "playbooks")
ACCEPTANCE = os.path.realpath(os.path.join(REPO_PLAYBOOKS, "acceptance.yml"))
PLAYBOOK = os.environ.get("AIFABRIC_TEST_ANSIBLE_PLAYBOOK") or ANSIBLE_PLAYBOOK
_PLAY = re.compile(r"^PLAY \[(.*)\] \**$", re.M)
_TASK = re.compile(r"^TASK \[(.*)\] \**$", re.M)


def _inventory(tmp_path, hosts):
    lines = ["all:", "  children:", "    gpu_nodes:", "      hosts:"]
    for name, host_vars in hosts.items():
        lines.append("        %s:" % name)
        for item in dict({"ansible_connection": "local", "ansible_python_interpreter": os.sys.executable},
                         **host_vars).items():
            lines.append("          %s: %s" % item)
    path = tmp_path / "hosts.yml"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return str(path)


def _run(env, tmp_path, hosts, playbook, *extra):  # noqa: F811  pylint: disable=redefined-outer-name
    argv = [PLAYBOOK, "-i", _inventory(tmp_path, hosts), playbook] + list(extra)
    proc = subprocess.run(argv, env=dict(env, AIFABRIC_REPORTS_ROOT=str(tmp_path / "reports")), cwd=str(tmp_path),
                          capture_output=True, text=True, timeout=300, check=False)
    return proc, proc.stdout + proc.stderr


def plays(out):
    """[(play name, its text)] in the order the run printed them."""
    starts = list(_PLAY.finditer(out))
    return [(m.group(1), out[m.end():(starts[i + 1].start() if i + 1 < len(starts) else len(out))])
            for i, m in enumerate(starts)]


def tasks(text):
    return _TASK.findall(text)


def _quiet(text):
    """A play that matched no host: it printed 'no hosts matched' and no task."""
    return "skipping: no hosts matched" in text and not tasks(text)


def _by_name(out, prefix):
    return [text for name, text in plays(out) if name.startswith(prefix)]


# a GPU stage that measures nothing here, quickly: no GPU check (the role still runs and validates its variables)
GPU_QUIET = ["-e", '{"gpu_checks": []}']


def test_tags_gpu_runs_the_gpu_stage_alone_on_the_hosts(env, tmp_path):  # noqa: F811  pylint: disable=redefined-outer-name
    proc, out = _run(env, tmp_path, {"node1": {}, "node2": {}}, ACCEPTANCE, "--tags", "gpu", *GPU_QUIET)
    assert proc.returncode in (0, 2), out[-4000:]
    (gpu,) = _by_name(out, "GPU acceptance of every host")
    # the role ran on both hosts (its task that includes the checks: none selected, so skipped on each); its
    # variables were checked for every host by the first play (no argument check of each host at the role's start)
    assert "TASK [aifabric.acceptance.gpu : " in gpu and "skipping: [node1]" in gpu and "skipping: [node2]" in gpu, gpu
    assert "Validating arguments" not in out, out[-4000:]
    (probe,) = _by_name(out, "Probe the environment of every host")
    assert _quiet(probe), probe
    assert "aifabric.acceptance.probe" not in out and "Probe OS, CPU, memory" not in out
    for name in ("HCCL Test on the NPUs", "RDMA - ", "Kubernetes acceptance"):
        assert all(_quiet(text) for text in _by_name(out, name)), name
    # the check of the inventory's variables ran first, once; the run summary last, on the hosts and localhost
    first = plays(out)[0]
    assert first[0].startswith("Check the inventory's variables") and "ok: [node1]" in first[1]
    assert sum(1 for name, text in plays(out) if name.startswith("Check the inventory") and tasks(text)) == 1
    summary = [text for name, text in plays(out) if name == "Publish the run summary" and "ok: [" in text]
    assert len(summary) == 1 and "Summarise the run" in summary[0], out[-4000:]


def test_tags_probe_runs_the_probe_role_and_no_stage(env, tmp_path):  # noqa: F811  pylint: disable=redefined-outer-name
    proc, out = _run(env, tmp_path, {"node1": {"acceptance_expect": "{gpu_count: 0, hca_count: 0}"}}, ACCEPTANCE,
                     "--tags", "probe")
    assert proc.returncode == 0, out[-4000:]
    (probe,) = _by_name(out, "Probe the environment of every host")
    assert [t for t in tasks(probe) if "Probe OS, CPU, memory" in t] and "Group by GPU presence" in probe
    assert all(_quiet(text) for text in _by_name(out, "GPU acceptance of every host")), out[-4000:]
    assert all(_quiet(text) for text in _by_name(out, "Kubernetes acceptance")), out[-4000:]
    assert "aifabric.acceptance.k8s" not in out and "aifabric.acceptance.gpu :" not in out


def test_on_ssh_the_kubernetes_plays_print_nothing(env, tmp_path):  # noqa: F811  pylint: disable=redefined-outer-name
    proc, out = _run(env, tmp_path, {"node1": {}}, ACCEPTANCE, "--tags", "probe")
    assert proc.returncode == 0, out[-4000:]
    k8s = [(name, text) for name, text in plays(out) if name.startswith("Kubernetes acceptance")]
    assert k8s and all(_quiet(text) for _name, text in k8s)
    # one run summary for both substrates (no other playbook's check or summary play is imported), and it ran
    summaries = [text for name, text in plays(out) if name == "Publish the run summary"]
    assert len(summaries) == 1 and "Summarise the run" in summaries[0] and "ok: [" in summaries[0], out[-4000:]
    checks = [text for name, text in plays(out) if name.startswith("Check the inventory's variables")]
    assert len(checks) == 1, out[-4000:]
    assert len([name for name, _text in plays(out)]) == 7, [name for name, _text in plays(out)]


@pytest.mark.parametrize("how", ["extra variable", "host variable"])
def test_on_kubernetes_the_ssh_plays_print_nothing(env, tmp_path, how):  # noqa: F811  pylint: disable=redefined-outer-name
    render = str(tmp_path / "render")
    if how == "extra variable":
        hosts, extra = {"node1": {}}, ["-e", "acceptance_substrate=kubernetes"]
    else:   # a mixed fleet: node1 over SSH, node2 a Kubernetes node
        hosts, extra = {"node1": {}, "node2": {"acceptance_substrate": "kubernetes"}}, []
    proc, out = _run(env, tmp_path, hosts, ACCEPTANCE, "--tags", "probe", "-e", "k8s_render_dir=" + render, *extra)
    (k8s,) = _by_name(out, "Kubernetes acceptance of every selected node")
    assert "aifabric.acceptance.k8s : Check the role's settings" in k8s, out[-4000:]
    (probe,) = _by_name(out, "Probe the environment of every host")
    if how == "extra variable":
        assert "ok: [node1]" in k8s
        assert _quiet(probe), probe
        assert "aifabric.acceptance.probe" not in out
        assert all(_quiet(text) for name, text in plays(out)
                   if name.startswith(("GPU acceptance", "HCCL Test", "RDMA - ")))
    else:
        assert "ok: [node2]" in k8s and "[node1]" not in k8s
        assert "ok: [node1]" in probe and "[node2]" not in probe
    assert proc.returncode in (0, 2), out[-4000:]


PROBE_ROLE = """
- name: The probe role alone
  hosts: gpu_nodes
  gather_facts: false
  roles:
    - role: aifabric.acceptance.probe
  post_tasks:
    - name: Show what the role set
      ansible.builtin.debug:
        msg: "FACTS {{ {'gpu': probe_gpu_count, 'npu': probe_npu_count, 'hca': probe_hca_count,
                        'groups': group_names | sort, 'required': aifabric_required_checks | default([])} | to_json }}"
"""


def test_the_probe_role_sets_its_facts_groups_and_required_checks(env, tmp_path):  # noqa: F811  pylint: disable=redefined-outer-name
    playbook = tmp_path / "probe.yml"
    playbook.write_text(PROBE_ROLE, encoding="utf-8")
    # the inventory says 8 GPUs and 2 HCAs: this machine has neither (the probe counts 0, the checks are required)
    proc, out = _run(env, tmp_path, {"node1": {"acceptance_expect": "{gpu_count: 8, hca_count: 2}"}}, str(playbook),
                     "-e", '{"probe_options": {"groups": ["gpu", "rdma"], "timeout_s": 20}}')
    assert proc.returncode == 0, out[-4000:]
    import json  # pylint: disable=import-outside-toplevel
    shown = json.loads(re.search(r'"FACTS (\{.*\})"', out).group(1).replace('\\"', '"'))
    assert (shown["gpu"], shown["npu"], shown["hca"]) == (0, 0, 0)
    assert {"aifabric_gpu_no", "aifabric_npu_no", "aifabric_rdma_no"} <= set(shown["groups"])
    assert shown["required"] == ["gpu.inventory", "gpu.device", "gpu.gemm_*", "nccl.*", "rdma.*"]
    # the expectation judged the probe's records: gpu.inventory fails (8 expected, none found)
    assert re.search(r"aifabric gpu: 1/1 hosts, 1 fail", out), out[-4000:]


def test_a_misspelt_probe_option_fails_at_the_role_start(env, tmp_path):  # noqa: F811  pylint: disable=redefined-outer-name
    playbook = tmp_path / "probe.yml"
    playbook.write_text(PROBE_ROLE, encoding="utf-8")
    proc, out = _run(env, tmp_path, {"node1": {}}, str(playbook), "-e", '{"probe_options": {"timeout": 20}}')
    assert proc.returncode == 2, out[-4000:]
    assert "Validating arguments against arg spec 'main'" in out and "timeout" in out
    assert "Probe OS, CPU, memory" not in out


def _stage_lines(tmp_path):
    """{stage title: its line} of the run's summary.md (the report header's stage lines)."""
    import glob  # pylint: disable=import-outside-toplevel
    (summary,) = glob.glob(str(tmp_path / "reports" / "2*" / "summary.md"))
    with open(summary, encoding="utf-8") as handle:
        text = handle.read()
    return dict(re.findall(r"^- \*\*(\w+)\*\*: (.*)$", text, re.M))


@pytest.mark.parametrize("tag", ["gpu", "hccl", "rdma"])
def test_tags_of_a_stage_on_a_host_without_its_hardware_skip_it_cleanly(env, tmp_path, tag):  # noqa: F811  pylint: disable=redefined-outer-name
    """``--tags hccl`` on a host without NPUs skips the stage as ``--tags gpu`` and ``--tags rdma`` do (it gave
    ERROR, rc 2, and no HCCL stage line): the run passes and the report's line of the stage says why it did not run."""
    proc, out = _run(env, tmp_path, {"node1": {}}, ACCEPTANCE, "--tags", tag, "-e", '{"gpu_checks": ["gemm"]}')
    assert proc.returncode == 0, out[-6000:]
    title = {"gpu": "GPU", "hccl": "HCCL", "rdma": "RDMA"}[tag]
    lines = _stage_lines(tmp_path)
    assert lines[title].startswith("not run - skipped on 1 host: "), lines
    if tag == "hccl":
        assert lines[title] == "not run - skipped on 1 host: no Ascend NPU: npu-smi not found", lines
        (hccl,) = _by_name(out, "HCCL Test on the NPUs")
        assert "aifabric.acceptance.hccl : Probe the NPUs" in hccl
        assert "ok: [node1]" not in hccl.split("Run the collectives on one node")[1].split("TASK [")[0], hccl
