# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run the stages of `make test` and print each stage's wall and CPU time at the end.

    stages.py [--timeout S] [--log-dir DIR] STEP... -- MAKE_ARGV...

Each STEP is run after the one before it has passed. A step is one or more lanes joined by ",", run side by side;
a lane is one or more stages joined by "+", run one after the other. Every stage is `MAKE_ARGV... -o DONE... STAGE`
(the stages already passed are marked done, so a later stage does not remake them). The first lane's output goes
to the console as it comes; every other lane's output is written to LOG_DIR/<stage>.log and copied to the console
whole when its stage ends, so two stages' lines never interleave. A stage that fails ends its lane; the other lanes
of its step finish, no later step starts, and the table is printed all the same. Each stage runs in a process group
of its own, stopped when the stage passes --timeout (default 3600 s) or when this script is interrupted (SIGTERM,
SIGINT): SIGINT first, so that pytest tears its fixtures down, SIGKILL after GRACE_S.

CPU time is the user + system time of the stage's make and every process it waited for (os.wait4), so it does not
depend on what else the machine runs; the wall time does.
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import threading
import time


GRACE_S = 30    # after SIGINT, before SIGKILL


class Stage(object):
    def __init__(self, name):
        self.name = name
        self.start = None
        self.wall = None
        self.cpu = None
        self.rc = None
        self.proc = None
        self.interrupted = False
        self.timed_out = False
        self.ended = threading.Event()


def _run_stage(stage, argv, log_path, timeout, t0, lock):
    """Run one stage; stream it (log_path None) or log it and copy the log to stdout at the end."""
    stage.start = time.monotonic() - t0
    out = open(log_path, "wb") if log_path else None
    try:
        stage.proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT if out else None,
                                      stdin=subprocess.DEVNULL, start_new_session=True)
        timer = threading.Timer(timeout, _time_out, (stage,))
        timer.start()
        try:
            _pid, status, usage = os.wait4(stage.proc.pid, 0)
        finally:
            timer.cancel()
            stage.ended.set()
        stage.proc.returncode = os.waitstatus_to_exitcode(status)
        stage.rc = stage.proc.returncode
        stage.cpu = usage.ru_utime + usage.ru_stime
    finally:
        if out:
            out.close()
    stage.wall = time.monotonic() - t0 - stage.start
    if log_path:
        with lock, open(log_path, "rb") as handle:
            sys.stdout.flush()
            sys.stdout.buffer.write(("==== %s (%s) ====\n" % (stage.name, log_path)).encode())
            sys.stdout.buffer.write(handle.read())
            sys.stdout.buffer.write(("==== end of %s ====\n" % stage.name).encode())
            sys.stdout.flush()
    return stage.rc == 0


def _time_out(stage):
    stage.timed_out = True
    _stop(stage)


def _stop(stage):
    """SIGINT to the stage's process group (pytest tears its fixtures down: the test hosts, their processes), then
    SIGKILL to what is left after GRACE_S."""
    for sig in (signal.SIGINT, signal.SIGKILL):
        if stage.ended.is_set():
            return
        try:
            os.killpg(stage.proc.pid, sig)
        except ProcessLookupError:
            return
        stage.ended.wait(GRACE_S)


def _run_lane(lane, make_argv, done, log_dir, timeout, t0, lock, buffered):
    for stage in lane:
        argv = list(make_argv)
        for name in done:
            argv += ["-o", name]
        log_path = os.path.join(log_dir, stage.name + ".log") if buffered else None
        if not _run_stage(stage, argv + [stage.name], log_path, timeout, t0, lock):
            return


def parse_steps(specs):
    """ "a" "b,c+d" -> [[[Stage a]], [[Stage b], [Stage c, Stage d]]]"""
    steps = []
    for spec in specs:
        lanes = [[Stage(name) for name in lane.split("+") if name] for lane in spec.split(",")]
        lanes = [lane for lane in lanes if lane]
        if not lanes:
            raise ValueError("empty step %r" % spec)
        steps.append(lanes)
    return steps


def table(steps, total, load=None):
    lines = ["", "make test: stage times (wall = elapsed, cpu = user+sys of the stage's processes; "
                 "stages of one step ran side by side)",
             "  %-4s %-12s %9s %9s %9s  %s" % ("step", "stage", "start", "wall", "cpu", "result")]
    for number, lanes in enumerate(steps, 1):
        for lane in lanes:
            for stage in lane:
                if stage.rc is None and stage.start is None:
                    result, start, wall, cpu = "not run", "", "", ""
                else:
                    result = _result(stage)
                    start, wall, cpu = _clock(stage.start), _clock(stage.wall), _clock(stage.cpu)
                lines.append("  %-4s %-12s %9s %9s %9s  %s" % (number, stage.name, start, wall, cpu, result))
    lines.append("  %-4s %-12s %9s %9s" % ("", "total", "", _clock(total)))
    if load:
        lines.append("  load average (1 min) at the start %.1f, at the end %.1f, on %d CPUs: compare CPU times, wall "
                     "times move with the load" % (load[0], load[1], os.cpu_count() or 0))
    return "\n".join(lines)


def _result(stage):
    if stage.interrupted:
        return "interrupted"
    if stage.timed_out:
        return "stopped (timeout)"
    return "ok" if stage.rc == 0 else "FAILED (exit %s)" % stage.rc


def _clock(seconds):
    if seconds is None:
        return "-"
    return "%d:%04.1f" % divmod(seconds, 60)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--timeout", type=float, default=3600.0)
    parser.add_argument("--log-dir", default="tests/output/stages")
    parser.add_argument("steps", nargs="+")
    args, make_argv = _split(argv if argv is not None else sys.argv[1:])
    args = parser.parse_args(args)
    if not make_argv:
        parser.error("give the make command after --")
    steps = parse_steps(args.steps)
    os.makedirs(args.log_dir, exist_ok=True)
    t0 = time.monotonic()
    load_start = os.getloadavg()[0]
    lock = threading.Lock()
    signal.signal(signal.SIGTERM, _interrupted)
    done = []
    ok = True
    try:
        for lanes in steps:
            threads = []
            for index, lane in enumerate(lanes):
                lane_args = (lane, make_argv, list(done), args.log_dir, args.timeout, t0, lock, index > 0)
                threads.append(threading.Thread(target=_run_lane, args=lane_args))
            for thread in threads:
                thread.start()
            for thread in threads:
                while thread.is_alive():    # a join with a timeout lets SIGTERM/SIGINT through
                    thread.join(0.5)
            stages = [stage for lane in lanes for stage in lane]
            if any(stage.rc != 0 for stage in stages):
                ok = False
                break
            done += [stage.name for stage in stages]
    except KeyboardInterrupt:
        ok = False
        for stage in [s for lanes in steps for lane in lanes for s in lane]:
            if stage.proc is not None and not stage.ended.is_set():
                stage.interrupted = True
                threading.Thread(target=_stop, args=(stage,)).start()
        for thread in threading.enumerate():
            if thread is not threading.current_thread():
                thread.join(GRACE_S + 10)
    print(table(steps, time.monotonic() - t0, (load_start, os.getloadavg()[0])))
    sys.stdout.flush()
    return 0 if ok else 1


def _interrupted(signum, _frame):
    raise KeyboardInterrupt("signal %d" % signum)


def _split(argv):
    if "--" not in argv:
        return argv, []
    at = argv.index("--")
    return argv[:at], argv[at + 1:]


if __name__ == "__main__":
    sys.exit(main())
