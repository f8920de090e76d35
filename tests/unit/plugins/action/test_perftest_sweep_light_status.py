# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The perftest_sweep wait's light status poll (action perftest_sweep.status_program, plugin_utils/host_program.bundle):
the module's own status code, run by a real interpreter from the program's text alone (its bundle of the collection's
module_utils, no ansible-core), answers what the module answers - field by field, on the same runner directories: one
not made yet, one whose runner is at work, one whose runner ended (its records, what it left removed, its job file),
and bad parameters (the module answers those itself)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from ansible_collections.aifabric.acceptance.plugins.action import perftest_sweep as sweep_action
from ansible_collections.aifabric.acceptance.plugins.module_utils import perftest_status
from ansible_collections.aifabric.acceptance.plugins.module_utils.proc import process_start_time
from ansible_collections.aifabric.acceptance.plugins.modules import perftest_sweep
from ansible_collections.aifabric.acceptance.plugins.plugin_utils import host_program
from ansible_collections.aifabric.acceptance.tests.unit.plugins.module_utils import test_module_utils_imports as imports_test
from ansible_collections.aifabric.acceptance.tests.unit.plugins.modules.module_harness import patch_exits, run_main

RECORDS = [{"check": "rdma.ib_write_bw", "status": "pass", "host": "n1", "target": "mlx5_0", "peer": "n2",
            "metrics": {"bw_peak_gbps": 390.2}}]


class Module:
    """What the state code uses of AnsibleModule, to lay out a runner's directory as the runner does."""

    def __init__(self, params):
        self.params, self.check_mode, self.warnings = params, False, []

    def warn(self, warning):
        self.warnings.append(warning)


def status_args(tmp_path, **more):
    args = {"phase": "status", "run_id": "r1", "sweep_name": "main", "inventory_hostname": "n1",
            "state_root": str(tmp_path / "state"), "cpu_sysfs": str(tmp_path / "cpu"), "hcas": ["mlx5_0"],
            "_poll": {"wait_s": 0}}
    args.update(more)
    return args


def lay_out(args, progress=None, records=None, leftover=False):
    """The runner's directory of ``args`` (and, ``leftover``, a step's directory the runner left), as the runner
    writes them."""
    validated = sweep_action.light_params(dict(args))
    sweep = perftest_status.SweepState(Module(validated))
    sweep.open_state()
    sweep.make_dir(sweep.run_dir)
    here = sweep.sweep_dir()
    sweep.make_dir(here)
    if progress is not None:
        perftest_status.write_json(here, perftest_status.PROGRESS, progress)
    if records is not None:
        perftest_status.write_json(here, perftest_status.RECORDS, records)
    if leftover:
        sweep.make_dir(sweep.inside(os.path.basename(here) + "-step0"))
    return here


def module_answer(monkeypatch, args):
    patch_exits(monkeypatch)
    done = run_main(perftest_sweep.main, dict(args))
    answer = dict(done.kwargs)
    if done.failed:
        answer["failed"] = True
    answer.pop("invocation", None)
    return answer


def light_answer(args, check_mode=False):
    params = sweep_action.light_params(dict(args))
    assert params is not None
    program = sweep_action.status_program(params, check_mode)
    done = subprocess.run([sys.executable, "-I", "-"], input=program, capture_output=True, text=True, timeout=60,
                          cwd="/", check=False, env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                                                     "HOME": os.environ.get("HOME", "/root")})
    assert done.stdout, done.stderr
    answer = json.loads(done.stdout)
    assert done.returncode == (1 if answer.get("failed") else 0), done.stderr
    return answer


def both(monkeypatch, tmp_path, make, **more):
    """The module's answer and the light poll's, each on its own copy of the same runner's directory."""
    answers = []
    for name in ("module", "light"):
        base = tmp_path / name
        base.mkdir()
        args = status_args(base, **more)
        make(args)
        answers.append(module_answer(monkeypatch, args) if name == "module" else light_answer(args))
    return answers


def test_a_runner_not_started_yet_is_missing_both_ways(monkeypatch, tmp_path):
    module, light = both(monkeypatch, tmp_path, lambda args: None)
    assert module == light and light["missing"] is True and light["finished"] is False, (module, light)


def test_a_runner_at_work_gives_its_progress_both_ways(monkeypatch, tmp_path):
    """The runner: this test's own process (alive, its start time as /proc says), as both polls judge it."""
    progress = {"pid": os.getpid(), "proc_start_time": process_start_time(os.getpid()), "next_step": 3,
                "pairs_done": 5, "failing": 0}
    module, light = both(monkeypatch, tmp_path, lambda args: lay_out(args, progress=progress))
    assert module == light and light["finished"] is False and light["progress"]["pairs_done"] == 5, (module, light)


def test_a_runner_that_ended_gives_its_records_and_its_leftovers_go_both_ways(monkeypatch, tmp_path):
    gone = {}

    def make(args):
        gone[args["state_root"]] = lay_out(args, progress={"finished": True, "pid": 0}, records=RECORDS,
                                           leftover=True)
    module, light = both(monkeypatch, tmp_path, make)
    assert light["finished"] is True and light["results"] == RECORDS, light
    # the same answer but for the paths of the copies
    assert json.loads(json.dumps(module).replace(str(tmp_path / "module"), "X")) == \
        json.loads(json.dumps(light).replace(str(tmp_path / "light"), "X")), (module, light)
    assert len(light["removed"]) == 2, light
    for here in gone.values():
        assert not os.path.exists(here) and not os.path.exists(here + "-step0")


@pytest.mark.parametrize("how", ["module", "light"])
def test_a_lost_last_answer_is_given_again_to_the_wait_that_saw_the_runner(how, monkeypatch, tmp_path):
    """The poll that finds the runner ended keeps its answer: the runner's files are gone after it, yet the next poll
    of a wait that saw the runner (``_poll`` ``seen``: the first one's answer lost on the way) gives the same records
    and progress again - its job file, removed by the first, counted as erased. A wait that never saw a runner (one
    not started yet) gets no earlier runner's answer: missing."""
    args = status_args(tmp_path)
    here = lay_out(args, progress={"finished": True, "pid": 0, "pairs_done": 3}, records=RECORDS)
    job_dir = tmp_path / "jobs"
    job_dir.mkdir()
    (job_dir / "j1.2").write_text(json.dumps({"finished": 1, "rc": 0}))
    handed = {"wait_s": 0, "seen": True, "job": {"jid": "j1.2", "async_dir": str(job_dir), "wait_s": 0}}

    def poll(more):
        polled = dict(args, _poll=more)
        return module_answer(monkeypatch, polled) if how == "module" else light_answer(polled)

    first = poll(handed)
    assert first["finished"] and first["results"] == RECORDS and "erased" in first["job_file"], first
    assert not os.path.exists(here) and os.listdir(job_dir) == []
    assert sorted(os.listdir(os.path.dirname(here))) == [".aifabric-acceptance", "answer-main-n1"]
    again = poll(handed)
    assert again["finished"] and again["given_again"] and again["results"] == RECORDS, again
    assert again["progress"] == first["progress"] and "erased" in again["job_file"], again
    fresh = poll({"wait_s": 0})
    assert fresh["missing"] and not fresh["finished"], fresh


@pytest.mark.parametrize("how", ["module", "light"])
def test_a_lost_first_answer_is_given_again_to_the_same_runner_s_job_only(how, monkeypatch, tmp_path):
    """The first poll of a wait may be the one that finds the runner ended - and be lost: its wait has seen nothing
    yet, but names the runner's job, and the kept answer is that job's - given again. A wait of another job (a later
    runner of the sweep, not started yet) gets nothing, even one that has seen its runner."""
    args = status_args(tmp_path)
    lay_out(args, progress={"finished": True, "pid": 0, "pairs_done": 1}, records=RECORDS)
    job_dir = tmp_path / "jobs"
    job_dir.mkdir()
    (job_dir / "j1.2").write_text(json.dumps({"finished": 1, "rc": 0}))

    def poll(jid, **more):
        handed = dict({"wait_s": 0, "job": {"jid": jid, "async_dir": str(job_dir), "wait_s": 0}}, **more)
        polled = dict(args, _poll=handed)
        return module_answer(monkeypatch, polled) if how == "module" else light_answer(polled)

    first = poll("j1.2")
    assert first["finished"] and first["results"] == RECORDS, first
    again = poll("j1.2")
    assert again["finished"] and again["given_again"] and again["results"] == RECORDS, again
    for other in (poll("j9.9"), poll("j9.9", seen=True)):
        assert other["missing"] and not other["finished"], other


def test_the_ended_poll_removes_the_runner_s_job_file_both_ways(monkeypatch, tmp_path):
    jobs = {}

    def make(args):
        lay_out(args, progress={"finished": True, "pid": 0}, records=RECORDS)
        job_dir = os.path.join(os.path.dirname(args["state_root"]), "jobs")
        os.makedirs(job_dir)
        with open(os.path.join(job_dir, "j1.2"), "w", encoding="utf-8") as handle:
            json.dump({"finished": 1, "rc": 0}, handle)
        args["_poll"] = {"wait_s": 0, "job": {"jid": "j1.2", "async_dir": job_dir, "wait_s": 0}}
        jobs[args["state_root"]] = job_dir
    module, light = both(monkeypatch, tmp_path, make)
    assert "erased" in light["job_file"] and "erased" in module["job_file"], (module, light)
    assert all(os.listdir(d) == [] for d in jobs.values())


def test_a_run_id_that_leaves_the_state_root_fails_both_ways(monkeypatch, tmp_path):
    module, light = both(monkeypatch, tmp_path, lambda args: None, run_id="../x")
    assert module == light and light["failed"] is True and "run_id" in light["msg"], (module, light)


@pytest.mark.parametrize("more", [{"lease_s": -1}, {"size": 65536, "all_sizes": True}, {"phase": "status", "nope": 1}])
def test_parameters_the_module_refuses_go_to_the_module(tmp_path, more):
    assert sweep_action.light_params(status_args(tmp_path, **more)) is None


def test_a_path_option_is_expanded_on_the_host_not_on_the_controller(tmp_path):
    """state_root: ~/x is the host's HOME, as the module's option of type path expands it there."""
    params = sweep_action.light_params(status_args(tmp_path, state_root="~/aif-state"))
    assert params["state_root"] == "~/aif-state"
    home = tmp_path / "home"
    home.mkdir()
    program = sweep_action.status_program(params, False)
    done = subprocess.run([sys.executable, "-I", "-"], input=program, capture_output=True, text=True, timeout=60,
                          cwd="/", check=False, env={"PATH": "/usr/bin:/bin", "HOME": str(home)})
    answer = json.loads(done.stdout)
    assert answer["missing"] is True, answer
    assert os.path.isdir(str(home / "aif-state")), os.listdir(str(home))     # the host's root, made there


def test_the_bundle_s_closure_is_the_import_graph_s_for_every_module_utils_file():
    """host_program reads the imports with a regular expression (cheap in every worker); the AST import graph of the
    module_utils tests (every from-import and plain import, inside functions too) is the reference: for every file,
    the closure holds the file and all it reaches - a form of import the expression missed would leave the light
    program without a file on the host."""
    edges = imports_test.graph()
    for name in sorted(edges):
        closure = set(host_program.utils_closure((name,)))
        missing = (imports_test.reachable(edges, name) | {name}) - closure
        assert not missing, (name, sorted(missing))


def test_the_bundle_holds_what_the_status_code_imports_and_no_ansible():
    names = host_program.utils_closure(("modmain", "perftest_status"))
    assert {"modmain", "perftest_status", "perftest_run", "statedir", "state_child", "results", "async_job"} <= set(names)
    program = host_program.bundle(("modmain", "perftest_status"))
    assert "import ansible" not in program and len(program) < 400000
    with pytest.raises(ValueError, match="no module_utils file"):
        host_program.utils_closure(("no_such_file",))
