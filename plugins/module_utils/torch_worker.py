# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU worker program run with the host's own Python (the one that has PyTorch).

The allreduce_probe and gemm_bench modules write this file's source into their
temporary directory (or ``worker_dir``) and start it as a separate program:

    python torch_worker.py gemm --dtypes bf16,fp16 --m 8192 --n 8192 --k 8192
    python torch_worker.py allreduce --launcher spawn --nprocs 2 --json-out out.json
    mpirun -np 2 ... python torch_worker.py allreduce --launcher mpi --master-addr A --master-port P

It imports nothing from the collection and only imports torch inside main(), so
the collection's sanity import test passes without torch. Results:

- gemm: one ``AIFABRIC_GEMM {json}`` line per GPU and dtype on stdout;
- allreduce: rank 0 prints an nccl-tests style table on stdout and writes the
  nccl-tests ``-J`` document shape (results/out_of_place/in_place/...) to
  ``--json-out``, so the same parser reads both tools.

The all-reduce is timed the way nccl-tests times it: per size, ``warmup`` untimed
iterations, a barrier, then ``iters`` iterations between two host timestamps
with a device synchronize before the second, time = elapsed / iters, averaged
over ranks; algbw = bytes / time (GB/s = 1e9 B/s); busbw = algbw * 2 (n - 1) / n.
torch.distributed.all_reduce is in place (NCCL sendbuff == recvbuff): its figures
are nccl-tests' in-place columns; the out-of-place cells stay empty.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import socket
import sys
import time

GEMM_MARK = "AIFABRIC_GEMM "
# Significand bits (implicit bit included) of the all-reduce probe's dtypes: unit roundoff u = 2**-p.
SIGNIFICAND_BITS = {"double": 53, "float": 24, "half": 11, "bfloat16": 8}
CHECK_CHUNK_ELEMENTS = 1 << 26  # the data check compares at most this many elements at a time
DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32", "tf32": "float32", "fp8": "float8_e4m3fn"}
SIZE_SUFFIX = {"K": 1024, "M": 1024 ** 2, "G": 1024 ** 3}


def say(text, stream=None):
    """One line of output, flushed at once (the module reads it after the run; humans watch it live)."""
    stream = stream or sys.stdout
    stream.write(text + "\n")
    stream.flush()


def parse_size(text):
    text = str(text).strip()
    mult = SIZE_SUFFIX.get(text[-1:].upper(), 1)
    if mult != 1:
        text = text[:-1]
    return int(text) * mult


def sizes(min_bytes, max_bytes, factor):
    out = []
    size = min_bytes
    while size <= max_bytes:
        out.append(size)
        if factor <= 1:
            break
        size *= factor
    return out


def ulp(value, dtype):
    """Spacing of ``dtype``'s representable numbers at ``value`` (one unit in the last place)."""
    bits = SIGNIFICAND_BITS[dtype]
    if value == 0:
        return 2.0 ** (1 - bits)
    return 2.0 ** (math.frexp(abs(value))[1] - bits)


def contribution(rank):
    """What rank ``rank`` puts in every element before the data check's all-reduce: 1 or 2."""
    return 1.0 + rank % 2


def expected_sum(world):
    """The exact sum of every rank's contribution."""
    return float(world + world // 2)


def check_tolerance(dtype, world):
    """Largest |result - expected_sum(world)| the all-reduce data check accepts, by dtype.

    Done the way nccl-tests 2.19.6 checks (verifiable/verifiable.cu): inputs are chosen so the sum is
    exact whatever order NCCL adds in (genInput for ReduceSum lets only two ranks contribute a non-zero
    value per element), and the result is then compared within a tolerance in units in the last place
    of the dtype: 0 for sums, 2 where the device may round internally (ncclAvg, verifiable.cu:1320-1328).
    Here every rank contributes 1 or 2 (contribution()), so every partial sum is an integer no larger
    than the total and is exact while the total is at most 2**p (p = significand bits: 8 for bfloat16,
    11 for half, 24 for float): 0 tolerance up to 171 ranks in bfloat16, 1365 in half. Beyond that
    each of the world - 1 additions may round by half an ulp of a partial sum (<= the total), so the
    tolerance is (world - 1) * ulp(total) / 2. The check before issue 7 demanded exact equality of a
    sum of rank + 1 over all ranks, which NCCL's ring order rounds in bfloat16 from 23 ranks and in
    half from 64 (tests/unit/plugins/module_utils/test_torch_worker_check.py replays it in IEEE half
    and bfloat16 arithmetic).
    """
    total = expected_sum(world)
    if total <= 2 ** SIGNIFICAND_BITS[dtype]:
        return 0.0
    return (world - 1) * ulp(total, dtype) / 2.0


def within_tolerance(value, dtype, world):
    """The data check for one element (the worker applies the same test to whole tensors)."""
    return abs(float(value) - expected_sum(world)) <= check_tolerance(dtype, world)


def _count_wrong(torch, buf, expected, tolerance):
    """Elements of ``buf`` further than ``tolerance`` from ``expected``, compared in chunks (bounded memory)."""
    wide = torch.float64 if buf.dtype == torch.float64 else torch.float32
    wrong = 0
    for part in buf.split(CHECK_CHUNK_ELEMENTS):
        wrong += int(((part.to(wide) - expected).abs() > tolerance).sum().item())
    return wrong


def _nvml_sample(torch, dev):
    sample = {}
    for key, func in (("sm_clock_mhz", "clock_rate"), ("power_mw", "power_draw"), ("temperature_c", "temperature"),
                      ("utilization_pct", "utilization")):
        try:
            sample[key] = getattr(torch.cuda, func)(dev)
        except Exception:  # pylint: disable=broad-except
            sample[key] = None
    return sample


def run_gemm(args):
    import torch

    if not torch.cuda.is_available():
        say(GEMM_MARK + json.dumps({"skip": "torch sees no CUDA device", "torch": torch.__version__}))
        return 0
    devices = list(range(torch.cuda.device_count()))
    if args.devices:
        devices = [int(d) for d in args.devices.split(",")]
    m, n, k = args.m, args.n, args.k
    if args.allow_tf32:
        torch.backends.cuda.matmul.allow_tf32 = True
    for dev in devices:
        torch.cuda.set_device(dev)
        props = torch.cuda.get_device_properties(dev)
        for name in args.dtypes.split(","):
            dtype = getattr(torch, DTYPES[name])
            a = b = c = None
            out = {"device": dev, "dtype": name, "m": m, "n": n, "k": k, "iters": args.iters,
                   "warmup": args.warmup, "gpu_name": props.name, "torch": torch.__version__,
                   "cuda": torch.version.cuda, "sm_count": props.multi_processor_count}
            try:
                if name == "fp8":
                    a = torch.randn(m, k, device=dev).to(dtype)
                    b = torch.randn(n, k, device=dev).to(dtype).t()
                    scale = torch.tensor(1.0, device=dev)

                    def step(a=a, b=b, scale=scale):
                        return torch._scaled_mm(a, b, scale_a=scale, scale_b=scale, out_dtype=torch.bfloat16)
                else:
                    a = torch.randn(m, k, device=dev, dtype=dtype)
                    b = torch.randn(k, n, device=dev, dtype=dtype)
                    c = torch.empty(m, n, device=dev, dtype=dtype)

                    def step(a=a, b=b, c=c):
                        return torch.matmul(a, b, out=c)
                # Warm up for at least --warmup products and --warmup-s seconds, so clocks and
                # power settle before timing (an idle GPU starts at a low clock).
                done, t0 = 0, time.perf_counter()
                while done < args.warmup or time.perf_counter() - t0 < args.warmup_s:
                    for _step in range(10):
                        step()
                    torch.cuda.synchronize(dev)
                    done += 10
                per_product_s = (time.perf_counter() - t0) / done
                out["warmup_products"] = done
                start = torch.cuda.Event(enable_timing=True)
                end = torch.cuda.Event(enable_timing=True)
                start.record()
                for _step in range(args.iters):
                    step()
                end.record()
                # Sample clocks and power half-way through the queued products.
                time.sleep(min(2.0, per_product_s * args.iters / 2.0))
                out.update(_nvml_sample(torch, dev))
                torch.cuda.synchronize(dev)
                ms = start.elapsed_time(end) / args.iters
                out["time_ms"] = ms
                out["tflops"] = 2.0 * m * n * k / (ms / 1e3) / 1e12
            except Exception as exc:  # pylint: disable=broad-except
                out["error"] = "%s: %s" % (type(exc).__name__, exc)
            say(GEMM_MARK + json.dumps(out))
            del a, b, c
            torch.cuda.empty_cache()
    return 0


def _free_port():
    sock = socket.socket()
    sock.bind(("", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def _rank_env(launcher):
    env = os.environ
    if launcher == "mpi":
        for prefix in ("OMPI_COMM_WORLD_", "PMIX_", "PMI_"):
            if prefix + "RANK" in env or prefix + "SIZE" in env:
                break
        rank = int(env.get("OMPI_COMM_WORLD_RANK", env.get("PMIX_RANK", env.get("PMI_RANK", "0"))))
        world = int(env.get("OMPI_COMM_WORLD_SIZE", env.get("PMI_SIZE", "1")))
        local = int(env.get("OMPI_COMM_WORLD_LOCAL_RANK", env.get("MPI_LOCALRANKID", "0")))
        return rank, world, local
    return int(env["RANK"]), int(env["WORLD_SIZE"]), int(env.get("LOCAL_RANK", "0"))


_TORCH_DTYPES = {"float": "float32", "half": "float16", "bfloat16": "bfloat16", "double": "float64"}


class _RankSetup(object):
    """What each step of one all-reduce rank needs: its place in the group, its device, the dtype and the data
    check's exact sum and tolerance."""

    def __init__(self, torch, args, local_rank, rank, world, device):
        self.local_rank, self.rank, self.world, self.device = local_rank, rank, world, device
        self.dtype = getattr(torch, _TORCH_DTYPES[args.dtype])
        self.elem = torch.tensor([], dtype=self.dtype).element_size()
        self.expected = expected_sum(world)
        self.tolerance = check_tolerance(args.dtype, world)


def _init_group(torch, dist, args, local_rank, rank, world):
    """Join the process group (gloo on CPU for the self-test, else NCCL on GPU ``local_rank``); the device."""
    init = "tcp://%s:%d" % (args.master_addr, args.master_port)
    if args.cpu:
        # Self-test path (gloo on CPU, no GPU): exercises launchers, timing and output, not NCCL.
        device = torch.device("cpu")
        dist.init_process_group("gloo", init_method=init, rank=rank, world_size=world)
        return device
    torch.cuda.set_device(local_rank)
    device = torch.device("cuda", local_rank)
    try:
        dist.init_process_group("nccl", init_method=init, rank=rank, world_size=world, device_id=device)
    except TypeError:
        dist.init_process_group("nccl", init_method=init, rank=rank, world_size=world)
    return device


def _say_table_header(torch, args, world):
    say("# aifabric torch all-reduce probe: torch %s, %s, %d ranks, dtype %s, warmup %d, iters %d"
        % (torch.__version__, _backend_text(torch, args), world, args.dtype, args.warmup, args.iters))
    say("#%12s %13s %9s %7s %7s %8s %7s %7s %7s %8s %7s %7s %7s" % (
        "size", "count", "type", "redop", "root", "time", "algbw", "busbw", "#wrong", "time", "algbw", "busbw", "#wrong"))
    say("#%12s %13s %9s %7s %7s %8s %7s %7s %7s %8s %7s %7s %7s" % (
        "(B)", "(elements)", "", "", "", "(us)", "(GB/s)", "(GB/s)", "", "(us)", "(GB/s)", "(GB/s)", ""))


def _timed_allreduce_s(torch, dist, args, setup, buf):
    """Warm up, then time --iters all-reduces of ``buf``: seconds per all-reduce, averaged over the ranks."""
    for _step in range(args.warmup):
        dist.all_reduce(buf)
    _sync(torch, setup.device)
    _barrier(dist, args, setup.local_rank)
    _sync(torch, setup.device)
    t0 = time.perf_counter()
    for _step in range(args.iters):
        dist.all_reduce(buf)
    _sync(torch, setup.device)
    elapsed = time.perf_counter() - t0
    per_iter = torch.tensor([elapsed / args.iters], dtype=torch.float64, device=setup.device)
    dist.all_reduce(per_iter)
    return per_iter.item() / setup.world


def _wrong_elements(torch, dist, setup, buf):
    """Data check (untimed, like nccl-tests -c 1): each rank contributes 1 or 2; an element is wrong when it is
    further from the exact sum than check_tolerance() allows for the dtype. The count summed over the ranks."""
    buf.fill_(contribution(setup.rank))
    dist.all_reduce(buf)
    bad = torch.tensor([_count_wrong(torch, buf, setup.expected, setup.tolerance)], dtype=torch.int64,
                       device=setup.device)
    dist.all_reduce(bad)
    return int(bad.item())


def _allreduce_size(torch, dist, args, setup, size):
    """One size: the timed all-reduces and the data check -> its result row (nccl-tests -J); rank 0 prints it."""
    count = size // setup.elem
    buf = torch.empty(count, dtype=setup.dtype, device=setup.device)
    buf.fill_(1.0)
    sec = _timed_allreduce_s(torch, dist, args, setup, buf)
    wrong = _wrong_elements(torch, dist, setup, buf) if args.check else 0
    algbw = size / sec / 1e9
    busbw = algbw * 2.0 * (setup.world - 1) / setup.world
    row = {"size": size, "count": count, "type": args.dtype, "redop": "sum", "root": -1,
           "out_of_place": None,
           "in_place": {"time": sec * 1e6, "alg_bw": algbw, "bus_bw": busbw,
                        "nwrong": wrong if args.check else None},
           "actual_iterations": args.iters}
    if setup.rank == 0:
        say(" %12d %13d %9s %7s %7d %8s %7s %7s %7s %8.2f %7.2f %7.2f %7s" % (
            size, count, args.dtype, "sum", -1, "N/A", "N/A", "N/A", "N/A", sec * 1e6, algbw, busbw,
            wrong if args.check else "N/A"))
    del buf
    if not args.cpu:
        torch.cuda.empty_cache()
    return row, busbw, wrong


def _summary_doc(torch, args, setup, rows, started, busbw_sum, wrong_total):
    """Rank 0: print the footer lines; the nccl-tests -J style document of the run (devices filled in later)."""
    avg = busbw_sum / max(1, len(rows))
    say("# Out of bounds values : %d %s" % (wrong_total, "OK" if wrong_total == 0 else "FAILED"))
    say("# Avg bus bandwidth    : %g" % avg)
    say("#")
    return {
        "version": 3, "tool": "aifabric torch all-reduce probe", "start_time": started,
        "end_time": time.strftime("%Y-%m-%d %H:%M:%S"),
        "args": ["all_reduce_perf"] + sys.argv[1:],
        "env": ["%s=%s" % (k, v) for k, v in sorted(os.environ.items()) if k.startswith("NCCL_")],
        "nccl_version": None if args.cpu else int("%d%02d%02d" % tuple(torch.cuda.nccl.version()[:3])),
        "backend": "gloo" if args.cpu else "nccl",
        "torch_version": torch.__version__, "cuda_version": torch.version.cuda,
        "launcher": args.launcher,
        "config": {"nthreads": 1, "ngpus": 1, "minimum_bytes": parse_size(args.min_bytes),
                   "maximum_bytes": parse_size(args.max_bytes), "step_factor": args.step_factor,
                   "warmup_iters": args.warmup, "iterations": args.iters, "validation": int(args.check),
                   "check_expected": setup.expected, "check_tolerance": setup.tolerance,
                   "devices": []},
        "results": rows,
        "out_of_bounds": {"count": wrong_total, "okay": "true" if wrong_total == 0 else "false"},
        "average_bus_bandwidth": {"bandwidth": avg, "okay": "unchecked"},
        "errors": [""],
    }


def _gather_devices(torch, dist, args, setup):
    """One device entry per rank (nccl-tests lists one per process), gathered on every rank."""
    gathered = [None] * setup.world
    local_rank = setup.local_rank
    dist.all_gather_object(gathered, {"rank": setup.rank, "group": 0, "pid": os.getpid(), "hostname": socket.gethostname(),
                                      "device": local_rank, "device_hex": "cpu" if args.cpu else _bus_id(torch, local_rank),
                                      "device_info": "cpu" if args.cpu else torch.cuda.get_device_name(local_rank)})
    return gathered


def _publish(doc, gathered, args):
    """Rank 0: print the device lines and write the document to --json-out (atomically)."""
    doc["config"]["devices"] = gathered
    for dev in gathered:
        say("#  Rank %2d Group  0 Pid %6d on %10s device %2d [%s] %s" % (
            dev["rank"], dev["pid"], dev["hostname"], dev["device"], dev["device_hex"], dev["device_info"]))
    if args.json_out:
        tmp = args.json_out + ".tmp"
        with open(tmp, "w") as handle:
            json.dump(doc, handle)
        os.replace(tmp, args.json_out)


def _allreduce_rank(local_rank, args, rank=None, world=None):
    import torch
    import torch.distributed as dist

    if rank is None:
        rank, world = local_rank, args.nprocs
    device = _init_group(torch, dist, args, local_rank, rank, world)
    setup = _RankSetup(torch, args, local_rank, rank, world, device)
    started = time.strftime("%Y-%m-%d %H:%M:%S")
    if rank == 0:
        _say_table_header(torch, args, world)
    rows, busbw_sum, wrong_total = [], 0.0, 0
    for size in sizes(parse_size(args.min_bytes), parse_size(args.max_bytes), args.step_factor):
        row, busbw, wrong = _allreduce_size(torch, dist, args, setup, size)
        rows.append(row)
        busbw_sum += busbw
        wrong_total += wrong
    doc = _summary_doc(torch, args, setup, rows, started, busbw_sum, wrong_total) if rank == 0 else None
    gathered = _gather_devices(torch, dist, args, setup)
    if doc is not None:
        _publish(doc, gathered, args)
    _barrier(dist, args, local_rank)
    dist.destroy_process_group()


def _sync(torch, device):
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _barrier(dist, args, local_rank):
    if args.cpu:
        dist.barrier()
    else:
        dist.barrier(device_ids=[local_rank])


def _backend_text(torch, args):
    if args.cpu:
        return "gloo on CPU (self-test, not NCCL)"
    return "NCCL version %s" % ".".join(str(x) for x in torch.cuda.nccl.version())


def _bus_id(torch, dev):
    try:
        props = torch.cuda.get_device_properties(dev)
        return "%04x:%02x:%02x" % (props.pci_domain_id, props.pci_bus_id, props.pci_device_id)
    except Exception:  # pylint: disable=broad-except
        return "?"


def run_allreduce(args):
    import torch

    if not args.cpu and not torch.cuda.is_available():
        say("AIFABRIC_SKIP torch sees no CUDA device")
        return 3
    if args.launcher == "spawn":
        import torch.multiprocessing as mp

        args.nprocs = args.nprocs or (2 if args.cpu else torch.cuda.device_count())
        args.master_addr = args.master_addr or "127.0.0.1"
        args.master_port = args.master_port or _free_port()
        mp.spawn(_allreduce_rank, args=(args,), nprocs=args.nprocs, join=True)
        return 0
    rank, world, local = _rank_env(args.launcher)
    if args.launcher == "env":
        args.master_addr = args.master_addr or os.environ.get("MASTER_ADDR", "127.0.0.1")
        args.master_port = args.master_port or int(os.environ.get("MASTER_PORT", "29500"))
    if not args.master_addr or not args.master_port:
        say("--master-addr and --master-port are required with --launcher %s" % args.launcher, sys.stderr)
        return 2
    _allreduce_rank(local, args, rank=rank, world=world)
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description="aifabric.acceptance GPU worker (GEMM and all-reduce probe)")
    sub = parser.add_subparsers(dest="cmd")
    gemm = sub.add_parser("gemm")
    gemm.add_argument("--dtypes", default="bf16,fp16")
    gemm.add_argument("--m", type=int, default=8192)
    gemm.add_argument("--n", type=int, default=8192)
    gemm.add_argument("--k", type=int, default=8192)
    gemm.add_argument("--iters", type=int, default=200)
    gemm.add_argument("--warmup", type=int, default=10)
    gemm.add_argument("--warmup-s", type=float, default=1.0)
    gemm.add_argument("--devices", default="")
    gemm.add_argument("--allow-tf32", action="store_true")
    red = sub.add_parser("allreduce")
    red.add_argument("--launcher", choices=("spawn", "mpi", "env"), default="spawn")
    red.add_argument("--nprocs", type=int, default=0)
    red.add_argument("--master-addr", default="")
    red.add_argument("--master-port", type=int, default=0)
    red.add_argument("--min-bytes", default="1M")
    red.add_argument("--max-bytes", default="8G")
    red.add_argument("--step-factor", type=int, default=2)
    red.add_argument("--iters", type=int, default=20)
    red.add_argument("--warmup", type=int, default=5)
    red.add_argument("--dtype", choices=("float", "half", "bfloat16", "double"), default="float")
    red.add_argument("--check", type=int, default=1)
    red.add_argument("--json-out", default="")
    red.add_argument("--cpu", action="store_true", help="self-test with gloo on CPU (no GPU, no NCCL)")
    args = parser.parse_args(argv)
    if args.cmd == "gemm":
        return run_gemm(args)
    if args.cmd == "allreduce":
        return run_allreduce(args)
    parser.print_help()
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
