# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What each module costs a host before it does any work: its AnsiballZ payload and the CPU of starting it.

Every module task on a host runs an AnsiballZ payload: the module and every module_utils file it imports (found by
ansible-core's ``recursive_finder``, imports inside functions included), zipped and base64-encoded in one Python file
that the host's Python runs; the module's imports compile and execute on every run. At 1000 hosts and forks 5 this is
paid once per host-task, 200 waves deep (docs/scale-model.md, ``host /host``).

For each module of the collection (and ansible.builtin.ping / stat as the floor every module pays), this builds the
payload with ansible-core's own ``module_common.modify_module`` (a fresh ANSIBLE_LOCAL_TEMP, so no cached payload of
another tree is used) with one unsupported option as its only argument, and runs it N times: the module imports what it
imports at module level, builds its AnsibleModule and fails on the unknown option (or a missing required one) before
doing any work (a run that does not is marked ``(!)``), so the CPU measured is the start cost alone (interpreter,
unzip, imports, argument spec). Imports a module moved inside a branch are not paid here but still travel in the
payload (ansible-core ships them). CPU is user+sys of the child (``resource.getrusage(RUSAGE_CHILDREN)`` around each
run), the median of the runs. ``job_wait:light`` is job_wait's light poll (its program on the interpreter's standard
input where the connection pipelines, no payload: plugins/action/job_wait.py) for a job without a file.

Run with PYTHONPATH pointing at the directory above ansible_collections (one tree), or name trees to compare side by
side (the runs of the trees interleave, so load on a shared machine falls on both alike):

    PYTHONPATH=/work/dev/<branch> .venv/bin/python bench/module_start.py [--runs 7] [--modules cleanup job_wait]
    .venv/bin/python bench/module_start.py --tree before=/work/dev/<branch>-before --tree after=/work/dev/<branch>

``--python`` is the interpreter that runs the payloads (default /usr/bin/python3, as on a target host); ``--json FILE``
writes every figure. Another ansible-core builds the payloads when its directory is on PYTHONPATH and the bench runs
with a Python it supports (2.21: 3.12).
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import zipfile

COLLECTION = os.path.join("ansible_collections", "aifabric", "acceptance")
UTILS_PREFIX = "ansible_collections/aifabric/acceptance/plugins/module_utils/"
FLOOR = ("ping", "stat")             # ansible.builtin modules: what any module pays
LIGHT = "job_wait:light"             # job_wait's light poll: its program (action/job_wait.py poll_program), no payload
# perftest_sweep's light status poll: its program (action/perftest_sweep.py status_program: the bundle of the module's
# status code), on a runner not started yet (it answers "missing", as a poll that finds the runner at work reads a
# few small files)
LIGHT_STATUS = "perftest_sweep:light-status"
LIGHTS = (LIGHT, LIGHT_STATUS)
BENCH_OPTION = "module_start_bench_unknown_option"
RUN_TIMEOUT_S = 60
# what AnsibleModule's argument check answers (ansible.module_utils.common.parameters / validation), the run's proof
# that it stopped there
ARGUMENT_CHECK = (BENCH_OPTION.encode(), b"missing required argument", b"one of the following is required")


def collection_modules(tree):
    """Names of the tree's AnsibleModule modules (the doc-only stubs of action plugins have no main of their own)."""
    folder = os.path.join(tree, COLLECTION, "plugins", "modules")
    out = []
    for name in sorted(os.listdir(folder)):
        if name.endswith(".py") and not name.startswith("_"):
            with open(os.path.join(folder, name), encoding="utf-8") as handle:
                if "import AnsibleModule" in handle.read():
                    out.append(name[:-3])
    return out


def payload_files(payload):
    """The files in a payload's zip (its ``zip_data``)."""
    match = re.search(rb"zip_data='([A-Za-z0-9+/=]+)'", payload)
    with zipfile.ZipFile(io.BytesIO(base64.b64decode(match.group(1)))) as archive:
        return sorted(archive.namelist())


def build(tree, out_dir, names):
    """Write <out_dir>/<name>.py payloads and manifest.json (run in a child: the collection finder is per process)."""
    # pylint: disable=import-outside-toplevel  # ansible reads ANSIBLE_LOCAL_TEMP at import: the caller sets it first
    import ansible
    from ansible.executor import module_common
    from ansible.parsing.dataloader import DataLoader
    from ansible.template import Templar
    from ansible.utils.collection_loader._collection_finder import _AnsibleCollectionFinder

    _AnsibleCollectionFinder(paths=[tree])._install()   # pylint: disable=protected-access
    builtin = os.path.join(os.path.dirname(ansible.__file__), "modules")
    templar = Templar(loader=DataLoader())
    manifest = {}
    for name in names:
        if name == LIGHT:
            manifest[name] = light_poll(out_dir)
            continue
        if name == LIGHT_STATUS:
            manifest[name] = light_status(out_dir)
            continue
        if name in FLOOR:
            path, label = os.path.join(builtin, name + ".py"), "ansible.builtin." + name
        else:
            path, label = os.path.join(tree, COLLECTION, "plugins", "modules", name + ".py"), name
        built = module_common.modify_module(
            module_name=name, module_path=path, module_args={BENCH_OPTION: True}, templar=templar,
            task_vars={"ansible_python_interpreter": "/usr/bin/python3"})
        target = os.path.join(out_dir, name + ".py")
        with open(target, "wb") as handle:
            handle.write(built.b_module_data)
        utils = [f[len(UTILS_PREFIX):] for f in payload_files(built.b_module_data) if f.startswith(UTILS_PREFIX)]
        manifest[name] = {"label": label, "payload": target, "bytes": len(built.b_module_data),
                          "module_utils": sorted(u for u in utils if u != "__init__.py")}
    with open(os.path.join(out_dir, "manifest.json"), "w", encoding="utf-8") as handle:
        json.dump(manifest, handle, indent=1)


def light_poll(out_dir):
    """The program of job_wait's light poll for a job whose file is not there (it answers "could not find job", as
    a poll that finds the job running reads one small file), or an entry without payload in a tree that has none."""
    # pylint: disable=import-outside-toplevel  # the tree's own action, through the collection finder build() set
    from ansible_collections.aifabric.acceptance.plugins.action import job_wait
    if not hasattr(job_wait, "poll_program"):
        return {"label": LIGHT, "payload": None, "bytes": 0, "module_utils": []}
    program = job_wait.poll_program("j1.1", os.path.join(out_dir, "no-such-job-dir"), True).encode("utf-8")
    target = os.path.join(out_dir, "job_wait_light.py")
    with open(target, "wb") as handle:
        handle.write(program)
    return {"label": LIGHT, "payload": target, "bytes": len(program), "module_utils": ["async_job.py (its text)"]}


def light_status(out_dir):
    """The program of perftest_sweep's light status poll for a runner whose directory is not there yet (a state root
    of its own under ``out_dir``), or an entry without payload in a tree that has none."""
    # pylint: disable=import-outside-toplevel  # the tree's own action, through the collection finder build() set
    from ansible_collections.aifabric.acceptance.plugins.action import perftest_sweep
    if not hasattr(perftest_sweep, "status_program"):
        return {"label": LIGHT_STATUS, "payload": None, "bytes": 0, "module_utils": []}
    params = perftest_sweep.light_params({"phase": "status", "run_id": "bench", "inventory_hostname": "bench",
                                          "state_root": os.path.join(out_dir, "light-status-state"),
                                          "_poll": {"wait_s": 0}})
    program = perftest_sweep.status_program(params, False).encode("utf-8")
    target = os.path.join(out_dir, "perftest_sweep_light_status.py")
    with open(target, "wb") as handle:
        handle.write(program)
    return {"label": LIGHT_STATUS, "payload": target, "bytes": len(program),
            "module_utils": ["modmain.py perftest_status.py and what they import (a bundle)"]}


def build_in_child(tree, work, names):
    out_dir = tempfile.mkdtemp(prefix="payloads-", dir=work)
    # the tree first; the caller's other PYTHONPATH entries after it (e.g. another ansible-core)
    others = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep)
              if p and not os.path.isdir(os.path.join(p, COLLECTION))]
    env = dict(os.environ, ANSIBLE_LOCAL_TEMP=tempfile.mkdtemp(prefix="local-tmp-", dir=work),
               PYTHONPATH=os.pathsep.join([tree] + others))
    subprocess.run([sys.executable, os.path.abspath(__file__), "--build-into", out_dir, "--build-tree", tree,
                    "--modules"] + names, env=env, check=True, timeout=600)
    with open(os.path.join(out_dir, "manifest.json"), encoding="utf-8") as handle:
        return json.load(handle)


def run_once(python, payload):
    """(user+sys CPU seconds of one run of the payload, whether it stopped at the argument check)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    done = subprocess.run([python, payload], capture_output=True, timeout=RUN_TIMEOUT_S, check=False,
                          env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8"}, cwd="/")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    # stopped at the argument check: the unknown option named (2.19), or a required one missing first (2.21); the
    # light poll: its answer for a job without a file
    return cpu, any(said in done.stdout for said in ARGUMENT_CHECK + (b"could not find job", b'"missing": true'))


def measure(trees, names, runs, python):
    """{label: {name: {...manifest, cpu_s: [..], started: bool}}}, the runs of the trees interleaved."""
    work = tempfile.mkdtemp(prefix="module-start-")
    try:
        built = {label: build_in_child(tree, work, names) for label, tree in trees}
        for _round in range(runs):
            for name in names:
                for label, _tree in trees:
                    entry = built[label][name]
                    if not entry["payload"]:
                        continue
                    cpu, started = run_once(python, entry["payload"])
                    entry.setdefault("cpu_s", []).append(cpu)
                    entry["started"] = entry.get("started", True) and started
        return built
    finally:
        shutil.rmtree(work, ignore_errors=True)


def table(results, names):
    labels = list(results)
    head = ["module"] + ["%s %s" % (label, what) for label in labels for what in ("KiB", "CPU ms", "utils")]
    rows = [head, ["---"] * len(head)]
    for name in names:
        row = [results[labels[0]][name]["label"]]
        for label in labels:
            entry = results[label][name]
            if not entry.get("cpu_s"):
                row += ["-", "-", "-"]
                continue
            cpu = "%.0f" % (statistics.median(entry["cpu_s"]) * 1000) + ("" if entry["started"] else " (!)")
            row += ["%.0f" % (entry["bytes"] / 1024.0), cpu, str(len(entry["module_utils"]))]
        rows.append(row)
    return "\n".join("| " + " | ".join(row) + " |" for row in rows)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--tree", action="append", default=[], help="LABEL=DIR (DIR holds ansible_collections)")
    parser.add_argument("--modules", nargs="+", help="module names (default: every module, and ping, stat)")
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--python", default="/usr/bin/python3")
    parser.add_argument("--json", help="write every figure here")
    parser.add_argument("--build-into", help=argparse.SUPPRESS)
    parser.add_argument("--build-tree", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.build_into:
        build(args.build_tree, args.build_into, args.modules)
        return
    trees = [tuple(t.split("=", 1)) for t in args.tree]
    if not trees:
        here = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if os.path.isdir(os.path.join(p, COLLECTION))]
        if not here:
            parser.error("set PYTHONPATH to the directory above ansible_collections, or name --tree LABEL=DIR")
        trees = [("this", here[0])]
    names = args.modules or list(FLOOR) + collection_modules(trees[0][1]) + list(LIGHTS)
    results = measure(trees, names, args.runs, args.python)
    print(table(results, names))
    print("\nmodule_utils carried (%s):" % trees[-1][0])
    for name in names:
        print("  %s: %s" % (name, " ".join(results[trees[-1][0]][name]["module_utils"]) or "-"))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"python": args.python, "runs": args.runs, "trees": dict(trees), "results": results}, handle, indent=1)


if __name__ == "__main__":
    main()
