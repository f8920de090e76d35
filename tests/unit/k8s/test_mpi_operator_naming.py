# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""mpi-operator v0.4.x serves kubeflow.org/v2beta1 too, so ``launcher: auto`` picks MPIJob, but it names its
workers' Service and every pod's subdomain ``<job>-worker`` (v0.5.0 on: ``<job>``): a launcher waiting for
``<job>-worker-<i>.<job>`` waited wait_workers_s for names that never resolve and blamed the workers. The
capability check reads the MPIJob CRD (v0.5.0 added launcherCreationPolicy to it); when the CRD cannot be read,
the launcher takes the workers' names from the operator's hostfile, which every version mounts."""

from __future__ import annotations

import hypothesis
import hypothesis.strategies as st
import pytest

pytest.importorskip("kubernetes")
pytest.importorskip("kmock")

from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_entry, k8s_plan, k8s_run  # noqa: E402
from ansible_collections.aifabric.acceptance.tests.k8s import fake_operators as ops  # noqa: E402
from ansible_collections.aifabric.acceptance.tests.k8s.fake_apiserver import fake_cluster  # noqa: E402
from ansible_collections.aifabric.acceptance.tests.unit.k8s.test_launcher_plan import (  # noqa: E402
    POD, entry_spec, templates)


@pytest.mark.parametrize("operators,naming", [(("mpi",), "job"), (("mpi-v0.4",), "worker")])
def test_the_capability_check_tells_the_operators_naming(tmp_path, operators, naming):
    with fake_cluster(tmp_path, operators=operators) as fake:
        assert k8s_run.mpi_operator_service(fake.api) == naming
        fake.server.forbid("get", "customresourcedefinitions")       # no RBAC for CRDs: the run-time fallback
        assert k8s_run.mpi_operator_service(fake.api) is None


@pytest.mark.parametrize("naming,service", [("job", "aif-l22-mn"), (None, "aif-l22-mn"),
                                            ("worker", "aif-l22-mn-worker")])
def test_the_launcher_waits_for_the_names_the_operator_gives(naming, service):
    plan = k8s_plan.build("nccl_test_multinode", ["gpu-node-01", "gpu-node-02"], dict(POD), "l22",
                          {"collectives": ["all_reduce"]}, launcher="mpijob", mpi_service=naming)
    tpl = templates(plan)
    run = entry_spec(tpl["launcher"]["spec"]["containers"][0])
    assert run["wait_hosts"] == ["aif-l22-mn-worker-%d.%s" % (i, service) for i in range(2)]
    assert run["wait_hostfile"] == k8s_plan.MPI_HOSTFILE
    worker = entry_spec(tpl["worker"]["spec"]["containers"][0])
    assert worker["alive"] == "aif-l22-mn-launcher.%s:%d" % (service, k8s_plan.DEFAULTS["nccl_test"]["alive_port"])


@pytest.mark.parametrize("version", [None, ops.MPI_V04])
def test_the_launcher_takes_the_operators_hostfile_names(tmp_path, version):
    """Whatever the plan named, the names in the operator's hostfile are the ones waited for."""
    hostfile = tmp_path / "hostfile"
    hostfile.write_text(ops.mpi_hostfile("aif-r-mn", "acceptance", 3, 8, version=version))
    spec = {"wait_hosts": ["aif-r-mn-worker-0.aif-r-mn"], "wait_hostfile": str(hostfile)}
    service = ops.mpi_service("aif-r-mn", version)
    assert k8s_entry.wait_hosts_of(spec) == ["aif-r-mn-worker-%d.%s.acceptance.svc" % (i, service)
                                             for i in range(3)]
    assert k8s_entry.wait_hosts_of(dict(spec, wait_hostfile=str(tmp_path / "none"))) == spec["wait_hosts"]


@hypothesis.settings(max_examples=200, deadline=None)
@hypothesis.given(workers=st.integers(0, 40), slots=st.integers(1, 16), noise=st.text(max_size=60),
                  version=st.sampled_from([None, ops.MPI_V04]))
def test_hostfile_hosts_reads_every_operator_hostfile_and_never_raises(workers, slots, noise, version):
    text = ops.mpi_hostfile("j", "ns", workers, slots, version=version)
    assert k8s_entry.hostfile_hosts(text) == ["j-worker-%d.%s.ns.svc" % (i, ops.mpi_service("j", version))
                                              for i in range(workers)]
    k8s_entry.hostfile_hosts(text + noise)
    k8s_entry.hostfile_hosts(noise)
