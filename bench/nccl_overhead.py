# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Overhead of the nccl_test / allreduce_probe modules over the bare tool, on the same run.

Runs the same measurement N times each way, alternating, and reports wall times:

  bare    the tool itself (nccl-tests binary, or the probe's worker program), as the
          module would start it (same argv, without -J);
  module  `ansible localhost -m aifabric.acceptance.<module>` with the same options
          (Ansible start, module transfer, the module's pre-checks, the run, parsing).

and the ratio module/bare (median of the runs) and the fixed overhead module - bare in
seconds. The fixed overhead is what matters: it does not grow with the sweep, so the ratio
tends to 1 for real sweeps (nccl-tests -b 8 -e 8G on 8 GPUs runs for a minute or more).

Usage (from the collection root, seen through a path ending in ansible_collections/aifabric/acceptance):

  # nccl-tests, real binaries on a GPU host:
  python bench/nccl_overhead.py --tool-dir /opt/nccl-tests/build -- -b 8 -e 8G -f 2 -g 8
  # the stand-in binary of the tests (no GPU needed; measures the pure overhead):
  python bench/nccl_overhead.py --stand-in
  # the torch all-reduce probe (host python with torch):
  python bench/nccl_overhead.py --probe --python /opt/torch/.venv/bin/python3

Results are printed and written as JSON to bench/results/nccl_overhead-<time>.json.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
STAND_IN = os.path.join(ROOT, "tests", "integration", "fixtures", "fake_nccl_tests", "fake_perf.py")
WORKER = os.path.join(ROOT, "plugins", "module_utils", "torch_worker.py")


def collections_path():
    parts = os.path.realpath(ROOT).split(os.sep)
    if parts[-3:] == ["ansible_collections", "aifabric", "acceptance"]:
        return os.sep.join(parts[:-3])
    alias = os.path.abspath(ROOT).split(os.sep)
    if alias[-3:] == ["ansible_collections", "aifabric", "acceptance"]:
        return os.sep.join(alias[:-3])
    return os.environ.get("ANSIBLE_COLLECTIONS_PATH")


def timed(argv, env, cwd):
    t0 = time.perf_counter()
    proc = subprocess.run(argv, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=3600,
                          check=False)
    return time.perf_counter() - t0, proc.returncode, proc.stdout.decode("utf-8", "replace")


def module_result(text):
    start = text.find("{")
    try:
        return json.loads(text[start:]) if start >= 0 else {}
    except ValueError:
        return {}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tool-dir")
    parser.add_argument("--stand-in", action="store_true", help="use the tests' stand-in nccl-tests binary")
    parser.add_argument("--collective", default="all_reduce")
    parser.add_argument("--probe", action="store_true", help="measure allreduce_probe against its bare worker")
    parser.add_argument("--python", default=sys.executable, help="python with torch (--probe)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--ansible", default=os.path.join(os.path.dirname(sys.executable), "ansible"))
    parser.add_argument("tool_args", nargs="*", help="after --: the binary's flags (default -b 8 -e 128M -f 2 -g 1)")
    args = parser.parse_args()
    env = dict(os.environ)
    env.setdefault("NCCL_NVLS_ENABLE", "0")
    env["ANSIBLE_COLLECTIONS_PATH"] = collections_path() or ""
    # No report callback and no ansible.cfg from the working directory: the bare module cost only.
    for name in ("ANSIBLE_CALLBACKS_ENABLED", "ANSIBLE_CONFIG"):
        env.pop(name, None)
    tmp = tempfile.mkdtemp(prefix="nccl-overhead-")
    try:
        if args.probe:
            bare = [args.python, WORKER, "allreduce", "--launcher", "spawn", "--min-bytes", "1M", "--max-bytes", "8G"]
            module = {"python": args.python, "env": {"NCCL_NVLS_ENABLE": env["NCCL_NVLS_ENABLE"]}}
            name = "aifabric.acceptance.allreduce_probe"
        else:
            bindir = args.tool_dir
            if args.stand_in or not bindir:
                bindir = os.path.join(tmp, "bin")
                os.makedirs(bindir)
                with open(os.path.join(bindir, "%s_perf" % args.collective), "w") as handle:
                    handle.write('#!/bin/sh\nFAKE_NCCL_NAME=%s_perf exec python3 %s "$@"\n' % (args.collective, STAND_IN))
                os.chmod(os.path.join(bindir, "%s_perf" % args.collective), 0o755)
            flags = args.tool_args or ["-b", "8", "-e", "128M", "-f", "2", "-g", "1"]
            bare = [os.path.join(bindir, "%s_perf" % args.collective)] + flags
            opts = dict(zip(flags[0::2], flags[1::2]))
            module = {"tool_dir": bindir, "collectives": [args.collective], "min_bytes": opts.get("-b", "8"),
                      "max_bytes": opts.get("-e", "128M"), "step_factor": int(opts.get("-f", "2")),
                      "gpus_per_process": int(opts.get("-g", "1")), "profile": "none",
                      "env": {"NCCL_NVLS_ENABLE": env["NCCL_NVLS_ENABLE"]}}
            name = "aifabric.acceptance.nccl_test"
        ansible = [args.ansible, "localhost", "-c", "local", "-i", "localhost,", "-e",
                   "ansible_python_interpreter=%s" % sys.executable, "-m", name, "-a", json.dumps(module)]
        rows = []
        for i in range(args.repeat):
            b_s, b_rc, _b_out = timed(bare, env, tmp)
            m_s, m_rc, m_out = timed(ansible, env, tmp)
            res = module_result(m_out)
            recs = res.get("results") or [{}]
            rows.append({"run": i, "bare_s": round(b_s, 3), "bare_rc": b_rc, "module_s": round(m_s, 3),
                         "module_rc": m_rc, "tool_in_module_s": recs[0].get("duration_s"),
                         "status": recs[0].get("status"), "ratio": round(m_s / b_s, 3) if b_s else None})
            print("run %d: bare %.3f s (rc %d)  module %.3f s (rc %d, tool %s s, %s)  ratio %.2f" % (
                i, b_s, b_rc, m_s, m_rc, recs[0].get("duration_s"), recs[0].get("status"), m_s / b_s if b_s else 0))
        med_b = statistics.median(r["bare_s"] for r in rows)
        med_m = statistics.median(r["module_s"] for r in rows)
        summary = {"tool": name, "bare_argv": bare, "module_args": module, "repeat": args.repeat, "runs": rows,
                   "median_bare_s": med_b, "median_module_s": med_m, "median_ratio": round(med_m / med_b, 3),
                   "median_overhead_s": round(med_m - med_b, 3), "host": os.uname()[1],
                   "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())}
        print("median: bare %.3f s, module %.3f s, ratio %.2f, fixed overhead %.3f s" % (
            med_b, med_m, med_m / med_b, med_m - med_b))
        out_dir = os.path.join(HERE, "results")
        os.makedirs(out_dir, exist_ok=True)
        path = os.path.join(out_dir, "nccl_overhead-%s.json" % time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()))
        with open(path, "w") as handle:
            json.dump(summary, handle, indent=1)
        print("wrote", path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
