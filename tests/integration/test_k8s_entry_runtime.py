# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run-time items of issue 22 ("Kubernetes that works on a real cluster"):

- defect 8, the entry program's side: a SIGTERM during step 3 (deadline, eviction, the module's cleanup) keeps the
  results of steps 1-2 - the entry program (k8s_entry.py, run here for real in a subprocess and signalled for
  real) prints and flushes each section when its step ends, and the module's parser (k8s_plan.slot_records)
  turns the partial log into records for the measured steps and an error naming the interrupted one;
- defect 7's 404: a log that cannot be read because the pod is gone says so ("pod deleted (TTL/GC)");
- pod creation refused by admission (here ResourceQuota) fails fast with the controller's FailedCreate message;
- an image pull error that persists past its grace period is an error naming the image;
- the perftest client is retried while the server's DNS name does not resolve yet.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time

import pytest

from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_entry, k8s_plan

HERE = os.path.dirname(os.path.abspath(__file__))
NCCL_DIR = os.path.join(os.path.dirname(HERE), "unit", "plugins", "module_utils", "parsers", "fixtures", "nccl_tests",
                        "h200x2-nccl-tests-2.19.6")
IMAGE = "registry.example.com/acceptance/nccl-tests:2.17-mpi"
NODE = "gpu-node-01"


def _nccl_job_spec(plan):
    (step,) = plan["steps"]
    (job,) = [o for o in step["objects"] if o["kind"] == "Job"]
    command = job["spec"]["template"]["spec"]["containers"][0]["command"]
    return step, json.loads(command[command.index("--spec") + 1])


def _signal_when(proc, marker, signum, wait_s=30):
    """Send ``signum`` to ``proc`` once ``marker`` exists; False when it never appeared (or proc ended first)."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline and proc.poll() is None:
        if os.path.exists(marker):
            proc.send_signal(signum)
            return True
        time.sleep(0.05)
    return False


def _run_entry_until(spec, marker, signum=signal.SIGTERM):
    """Run ``aifabric_k8s_entry.py run --spec`` for real; signal it when ``marker`` appears; (rc, stdout)."""
    proc = subprocess.Popen([sys.executable, k8s_entry.__file__, "run", "--spec", json.dumps(spec)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        sent = _signal_when(proc, marker, signum)
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)
    assert sent, (proc.returncode, err)
    return proc.returncode, out.decode("utf-8", "replace")


def _hang_argv(marker):
    return [sys.executable, "-c", "import time; open(%r, 'w').close(); time.sleep(120)" % marker]


def test_sigterm_during_step_3_keeps_the_results_of_steps_1_and_2(tmp_path):
    plan = k8s_plan.build("nccl_test", [NODE], {"image": IMAGE, "gpus_per_pod": 2}, "sig8",
                          options={"collectives": ["all_reduce", "all_gather", "reduce_scatter"]})
    step, spec = _nccl_job_spec(plan)
    marker = str(tmp_path / "step3-started")
    assert [s["label"] for s in spec["steps"]] == ["all_reduce", "all_gather", "reduce_scatter"]
    spec["steps"][0]["argv"] = ["cat", os.path.join(NCCL_DIR, "all_reduce_g2.txt")]
    spec["steps"][1]["argv"] = ["cat", os.path.join(NCCL_DIR, "all_gather_g2.txt")]
    spec["steps"][2]["argv"] = _hang_argv(marker)
    rc, log = _run_entry_until(spec, marker)
    assert rc == 128 + signal.SIGTERM, log
    assert k8s_entry.END + "all_reduce " in log and k8s_entry.END + "all_gather " in log, log
    assert '"interrupted_by_signal": %d' % signal.SIGTERM in log
    # the module's parser on that partial log: what the pod's end looks like to k8s_api.wait
    outcome = {"name": "aif-sig8-nccl-test-0-x7k2p", "node": NODE, "outcome": "failed", "exit_code": 143,
               "reason": "Error", "message": "container main exited 143 (Error)"}
    (slot,) = step["slots"]
    records = k8s_plan.slot_records(plan, slot, outcome, log)
    got = dict((r["check"], r) for r in records)
    assert sorted(got) == ["nccl.all_gather", "nccl.all_reduce", "nccl.reduce_scatter"]
    assert got["nccl.all_reduce"]["status"] == "pass", got["nccl.all_reduce"].get("reason")
    assert got["nccl.all_gather"]["status"] == "pass", got["nccl.all_gather"].get("reason")
    assert got["nccl.reduce_scatter"]["status"] == "error"
    assert "the log stops while reduce_scatter ran" in got["nccl.reduce_scatter"]["reason"], \
        got["nccl.reduce_scatter"]["reason"]
    assert "interrupted by signal %d" % signal.SIGTERM in k8s_plan.split_sections(log)[0]["reduce_scatter"][0]


def test_sigterm_keeps_the_parallel_steps_that_ended(tmp_path):
    """Parallel steps (perftest rails): the rail that ended is in the log, the one still running is cut off."""
    marker = str(tmp_path / "slow-started")
    script = "import os, time\nwhile not os.path.exists(%r): time.sleep(0.05)\nprint('rail done')\n" % marker
    spec = {"parallel": True, "steps": [
        {"label": "mlx5_0", "argv": [sys.executable, "-c", script], "timeout_s": 60},
        {"label": "mlx5_1", "argv": _hang_argv(marker), "timeout_s": 60}]}
    # the fast rail ends as soon as the slow one started; it has a second to be printed before the signal
    proc = subprocess.Popen([sys.executable, k8s_entry.__file__, "run", "--spec", json.dumps(spec)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not os.path.exists(marker) and proc.poll() is None:
            time.sleep(0.05)
        time.sleep(1.0)
        proc.send_signal(signal.SIGTERM)
        out, _err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)
    log = out.decode("utf-8", "replace")
    assert proc.returncode == 128 + signal.SIGTERM, log
    sections, notes = k8s_plan.split_sections(log)
    assert sections["mlx5_0"][0] == "rail done\n" and sections["mlx5_0"][1]["rc"] == 0, log
    assert sections.get("mlx5_1", ("", None))[1] is None, log     # cut off: never an END of a killed tool
    assert {"interrupted_by_signal": signal.SIGTERM} in notes or "interrupted_by_signal" in log, log


# perftest's client while the server pod's DNS record does not exist yet: check_add_port prints getaddrinfo's
# error, ethernet_client_connect "Problem in resolving basic address and port" (perftest_communication.c); main()
# then adds " Unable to init the socket connection" (write_bw.c), a line a tool killed at that moment never prints
RESOLVE_THEN_RUN = textwrap.dedent("""
    import os, sys
    path, tail = sys.argv[1], sys.argv[2]
    n = int(open(path).read()) if os.path.exists(path) else 0
    open(path, "w").write(str(n + 1))
    if n < 2:
        sys.stderr.write("Name or service not known for aif-pt1-pt-r0-p0-s.aif-pt1-pt:18515\\n"
                         "Problem in resolving basic address and port\\n" + tail)
        sys.exit(1)
    print("connected on attempt %d" % (n + 1))
""")


@pytest.mark.parametrize("tail", [" Unable to init the socket connection\n", ""])
def test_perftest_client_is_retried_while_the_server_name_does_not_resolve(tmp_path, tail):
    counter = str(tmp_path / "attempts")
    step = {"label": "mlx5_0", "argv": [sys.executable, "-c", RESOLVE_THEN_RUN, counter, tail], "timeout_s": 30,
            "retry_until_s": 20, "retry_delay_s": 0.1}
    run, attempts = k8s_entry.run_step(step)
    assert (run.rc, attempts) == (0, 3), run.output
    assert "connected on attempt 3" in run.output


def test_a_failure_that_is_not_about_reaching_the_server_is_not_retried(tmp_path):
    step = {"label": "mlx5_0", "argv": [sys.executable, "-c", "import sys; sys.stderr.write("
                                        "'IB device mlx5_9 not found\\n'); sys.exit(1)"],
            "timeout_s": 30, "retry_until_s": 20, "retry_delay_s": 0.1}
    run, attempts = k8s_entry.run_step(step)
    assert (run.rc, attempts) == (1, 1), run.output


# ------------------------------------------------------------------ against the fake API server

def _fake():
    pytest.importorskip("kubernetes")
    pytest.importorskip("kmock")
    from ansible_collections.aifabric.acceptance.tests.k8s import fake_apiserver
    return fake_apiserver


def _workload(fake, monkeypatch, args):
    from ansible.module_utils.testing import patch_module_args
    from ansible_collections.aifabric.acceptance.plugins.modules import k8s_workload
    from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules.module_harness import Exit, patch_exits
    patch_exits(monkeypatch)
    args = dict({"image": IMAGE, "kubeconfig": fake.kubeconfig, "unschedulable_grace_s": 0, "cleanup_timeout_s": 30,
                 "timeout_s": 60}, **args)
    with patch_module_args(args):
        with pytest.raises(Exit) as exc:
            k8s_workload.main()
    return exc.value


def test_resource_quota_rejection_fails_fast_with_its_message(tmp_path, monkeypatch):
    fa = _fake()
    with fa.fake_cluster(tmp_path) as fake:
        fake.server.namespace("quota")
        fake.server.quota("quota", {"requests.cpu": "64", "requests.memory": "256Gi"})
        t0 = time.monotonic()
        # the pods state their cpu/memory unless told not to (a request defaults to its limit): without either, a
        # quota on requests.cpu refuses them
        res = _workload(fake, monkeypatch, {"kind": "gemm_bench", "hosts": [NODE], "run_id": "rq1", "namespace": "quota",
                                            "timeout_s": 120, "cpu_request": "", "cpu_limit": ""})
        elapsed = time.monotonic() - t0
        (record,) = res.kwargs["results"]
        assert record["status"] == "error"
        assert "failed quota: compute-resources: must specify requests.cpu" in record["reason"], record["reason"]
        assert "FailedCreate" in record["reason"], record["reason"]
        assert elapsed < 60, elapsed      # at the refusal, not at its timeout (a timeout far above a loaded machine's)
        assert fake.leftovers("rq1") == []


def test_a_log_of_a_deleted_pod_says_pod_deleted(tmp_path):
    """The pod ended, then the TTL controller or the garbage collector removed it before its log was read."""
    fa = _fake()
    from kubernetes import client
    from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_api, k8s_run, results
    with fa.fake_cluster(tmp_path) as fake:
        fake.server.script("succeed", log="hello\n")
        plan = k8s_plan.build("gemm_bench", [NODE], {"image": IMAGE}, "gone1")
        (step,) = plan["steps"]
        try:
            k8s_api.create(fake.api, plan["setup"] + step["objects"], "gone1", plan["namespace"])
            outcomes = k8s_api.wait(fake.api, plan["namespace"], k8s_api.run_selector("gone1"), 1, timeout_s=20)
            assert [o["outcome"] for o in outcomes] == ["succeeded"]
            client.CoreV1Api(fake.api).delete_namespaced_pod(outcomes[0]["name"], plan["namespace"],
                                                             grace_period_seconds=0)
            fake.server.settle(3)
            records = k8s_run.step_records(fake.api, plan, step, outcomes, results.utc_now())
        finally:
            assert k8s_api.cleanup(fake.api, plan["namespace"], "gone1", timeout_s=10) == []
        assert records and all(r["status"] == "error" for r in records)
        assert all("pod deleted (TTL/GC)" in r["reason"] for r in records), [r["reason"] for r in records]


def test_image_pull_error_past_its_grace_names_the_image(tmp_path, monkeypatch):
    fa = _fake()
    with fa.fake_cluster(tmp_path) as fake:
        fake.server.script("image_pull")
        t0 = time.monotonic()
        res = _workload(fake, monkeypatch, {"kind": "gemm_bench", "hosts": [NODE], "run_id": "pull2", "image_pull_grace_s": 1,
                                            "timeout_s": 30})
        (record,) = res.kwargs["results"]
        assert record["status"] == "error"
        assert IMAGE in record["reason"] and "ImagePullBackOff" in record["reason"], record["reason"]
        assert time.monotonic() - t0 < 15
        assert fake.leftovers("pull2") == []


def test_ttl_after_finished_never_undercuts_the_active_deadline():
    """Defect 7's TTL: the Job (MPIJob, Volcano Job) of a step that finished first outlives every other Job of the
    step, so its pod and log are still there when the module reads them; a longer TTL is kept."""
    from ansible_collections.aifabric.acceptance.plugins.module_utils import k8s_manifests as km
    for ttl, deadline, want in ((60, 3600, 3600), (600, 3600, 3600), (7200, 3600, 7200)):
        pod = km.pod_options({"image": IMAGE, "ttl_after_finished_s": ttl, "active_deadline_s": deadline})
        job = km.job("aif-t7-x", pod, "t7", "gemm", {"containers": []})
        mpi = km.mpi_job("aif-t7-mn", pod, "t7", {"containers": []}, {"containers": []}, 2, 8)
        vc = km.volcano_job("aif-t7-vc", pod, "t7", {"containers": []}, {"containers": []}, 2)
        assert job["spec"]["ttlSecondsAfterFinished"] == want
        assert mpi["spec"]["runPolicy"]["ttlSecondsAfterFinished"] == want
        assert vc["spec"]["ttlSecondsAfterFinished"] == want
    plan = k8s_plan.build("nccl_test", [NODE], {"image": IMAGE, "ttl_after_finished_s": 60}, "t7b",
                          options={"collectives": ["all_reduce", "all_gather", "reduce_scatter", "alltoall"]})
    for obj in k8s_plan.objects_of(plan):
        if obj["kind"] == "Job":
            assert obj["spec"]["ttlSecondsAfterFinished"] >= obj["spec"]["activeDeadlineSeconds"], obj["spec"]


def test_a_pod_killed_by_its_deadline_during_step_3_keeps_steps_1_and_2(tmp_path, monkeypatch):
    """Defect 8 end to end, pods run as real processes (tests/k8s/process_kubelet.py): the Job's
    activeDeadlineSeconds passes while step 3 runs; the job controller deletes the pod (SIGTERM, grace period,
    gone - its log with it). The module read the log when the pod began terminating: steps 1-2 are measured
    records, step 3 an error naming it."""
    fa = _fake()
    from ansible_collections.aifabric.acceptance.tests.k8s import process_kubelet
    why_not = process_kubelet.missing_prerequisites()
    if why_not is not None:
        pytest.skip(str(why_not))
    tools = tmp_path / "tools"
    for collective in ("all_reduce", "all_gather"):
        process_kubelet.fake_tool(str(tools), collective + "_perf",
                                  [([], os.path.join(NCCL_DIR, collective + "_g2.txt"), 0)])
    slow = tools / "reduce_scatter_perf"
    slow.write_text("#!%s -S\nimport time\ntime.sleep(120)\n" % sys.executable)
    slow.chmod(0o755)
    # nccl timeout 30 s x 3 steps + 600 s start-up = a 690 s deadline. The cluster's clock passes it once step 3
    # runs (the pod's log has its BEGIN line): an event, not a fast clock (150x made it 4.6 wall seconds, which a
    # loaded machine's first two steps overran)
    with fa.fake_cluster(tmp_path, pod_grace_ticks=25) as fake:
        from kubernetes import client

        def step_3_began():
            for pod in fake.server.pods():
                try:
                    text = client.CoreV1Api(fake.api).read_namespaced_pod_log(
                        pod["metadata"]["name"], pod["metadata"]["namespace"])
                except client.ApiException:
                    continue
                if k8s_entry.BEGIN + "reduce_scatter" in (text or ""):
                    return True
            return False

        def deadline_passes_in_step_3():
            until = time.monotonic() + 120
            while time.monotonic() < until:
                if step_3_began():
                    fake.server.advance_clock(700)
                    return
                time.sleep(0.1)

        mover = threading.Thread(target=deadline_passes_in_step_3, daemon=True)
        mover.start()
        with process_kubelet.ProcessKubelet(fake.server, path=[str(tools)], python=sys.executable,
                                            timeout_s=120) as kubelet:
            fake.server.script("process", runner=kubelet)
            t0 = time.monotonic()
            res = _workload(fake, monkeypatch, {"kind": "nccl_test", "hosts": [NODE], "run_id": "dl8e", "gpus_per_pod": 2,
                                                "timeout_s": 120,
                                                "nccl_test": {"timeout_s": 30, "collectives": ["all_reduce", "all_gather",
                                                                                               "reduce_scatter"]}})
            elapsed = time.monotonic() - t0
        mover.join(130)
        got = dict((r["check"], r) for r in res.kwargs["results"])
        reasons = dict((c, r.get("reason")) for c, r in got.items())
        assert got["nccl.all_reduce"]["status"] == "pass", reasons
        assert got["nccl.all_gather"]["status"] == "pass", reasons
        assert got["nccl.reduce_scatter"]["status"] == "error", reasons
        assert "the log stops while reduce_scatter ran" in reasons["nccl.reduce_scatter"], reasons
        assert elapsed < 60, elapsed
        assert fake.leftovers("dl8e") == []


@pytest.mark.parametrize("launcher", ["mpijob", "volcano", "indexed"])
def test_failed_create_of_an_operators_pods_fails_fast(tmp_path, monkeypatch, launcher):
    """The FailedCreate event sits on what creates the pods: the MPIJob's launcher Job or the MPIJob (workers), the
    Volcano Job, the Indexed Job - each is found from the step's objects, and the step ends at once."""
    fa = _fake()
    with fa.fake_cluster(tmp_path, operators=("mpi", "volcano")) as fake:
        fake.server.namespace("psa", {"pod-security.kubernetes.io/enforce": "baseline"})
        t0 = time.monotonic()
        res = _workload(fake, monkeypatch, {"kind": "nccl_test_multinode", "hosts": ["gpu-node-01", "gpu-node-02"],
                                            "run_id": "fc" + launcher[:3], "namespace": "psa", "gpus_per_pod": 2,
                                            "launcher": launcher, "timeout_s": 180,
                                            "nccl_test": {"collectives": ["all_reduce"]}})
        elapsed = time.monotonic() - t0
        records = res.kwargs["results"]
        assert records and all(r["status"] == "error" for r in records), records
        # the reason is the event's: mpi-operator records MPIJobFailed for the workers it cannot create
        event = "MPIJobFailed" if launcher == "mpijob" else "FailedCreate"
        assert all("violates PodSecurity" in r["reason"] and event in r["reason"] for r in records), \
            [r["reason"] for r in records]
        assert elapsed < 90, elapsed      # at the event, not at its timeout (a timeout far above a loaded machine's)
        assert fake.leftovers("fc" + launcher[:3]) == []
