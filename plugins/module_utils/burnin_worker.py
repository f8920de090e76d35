# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU worker of the burn-in soak and the copy-bandwidth matrix, run with the host's own Python (the one with PyTorch).

The gpu_soak and copy_bandwidth modules (and their Kubernetes pods) write this file's source next to the GEMM worker
(gpu_worker.stage) and start it as a separate program:

    python burnin_worker.py soak --duration-s 120 --dtype bf16 --m 8192 --n 8192 --k 8192 --sample-ms 1000
    python burnin_worker.py copy --bytes 268435456 --iters 20 --p2p 1

soak: a GEMM loop on every GPU at once (one thread per GPU), each timed with CUDA events over windows of about
``--window-s`` seconds, while ``nvidia-smi --query-gpu=... --format=csv -lms <sample-ms>`` samples every GPU's
telemetry; the kernel log's ``NVRM: Xid`` lines are read before and after (where readable). Output lines:

- ``AIFABRIC_SOAK_START {json}`` (devices, GPU names, torch, the telemetry fields asked);
- ``AIFABRIC_SOAK {json}`` per GPU and window (``t_s`` since the load began, ``tflops``, ``products``);
- ``AIFABRIC_SMI <nvidia-smi's own CSV line>`` (its header and every sample, unchanged);
- ``AIFABRIC_XID {json}`` (``phase`` before/after, ``readable``, ``lines``);
- ``AIFABRIC_PCIE {json}`` (``phase`` before/after, ``text``: ``nvidia-smi -q``, its "Replays Since Reset");
- ``AIFABRIC_SOAK_END {json}`` (or an ``error``).

copy: per GPU host-to-device and device-to-host copies from/to pinned host memory, and per ordered GPU pair the
peer-to-peer copy issued by the source GPU (``write``) and by the destination GPU (``read``, as nvbandwidth's
``*_read_ce`` tests), through cudaMemcpyPeerAsync on the chosen GPU's stream, timed with CUDA events: one
``AIFABRIC_COPY {json}`` line per measurement (GB/s = 1e9 B/s), after ``AIFABRIC_COPY_START {json}`` with the
devices and the PCIe/NVLink facts from nvidia-smi.

Imports nothing from the collection and torch only inside the commands (the sanity import test passes without it).
Every child process (nvidia-smi, dmesg) runs with a time limit and is stopped on every path.
"""

from __future__ import annotations

import argparse
import ctypes
import json
import subprocess
import sys
import threading
import time

SOAK_MARK = "AIFABRIC_SOAK "
START_MARK = "AIFABRIC_SOAK_START "
END_MARK = "AIFABRIC_SOAK_END "
SMI_MARK = "AIFABRIC_SMI "
XID_MARK = "AIFABRIC_XID "
PCIE_MARK = "AIFABRIC_PCIE "
COPY_MARK = "AIFABRIC_COPY "
COPY_START_MARK = "AIFABRIC_COPY_START "
DTYPES = {"bf16": "bfloat16", "fp16": "float16", "fp32": "float32", "tf32": "float32"}
# The telemetry asked of nvidia-smi, in this order, each one only where this driver's --help-query-gpu lists it
# (older drivers name clocks_throttle_reasons.* what newer ones name clocks_event_reasons.*).
TELEMETRY_FIELDS = (
    "timestamp", "index", "pci.bus_id", "power.draw", "power.limit", "enforced.power.limit", "power.default_limit",
    "temperature.gpu", "temperature.memory", "clocks.sm", "clocks.max.sm", "utilization.gpu",
    "clocks_event_reasons.active", "clocks_event_reasons.hw_slowdown", "clocks_event_reasons.hw_thermal_slowdown",
    "clocks_event_reasons.hw_power_brake_slowdown", "clocks_event_reasons.sw_thermal_slowdown",
    "clocks_event_reasons.sw_power_cap",
    "clocks_throttle_reasons.active", "clocks_throttle_reasons.hw_slowdown", "clocks_throttle_reasons.hw_thermal_slowdown",
    "clocks_throttle_reasons.hw_power_brake_slowdown", "clocks_throttle_reasons.sw_thermal_slowdown",
    "clocks_throttle_reasons.sw_power_cap",
    "ecc.errors.corrected.volatile.total", "ecc.errors.uncorrected.volatile.total",
    "remapped_rows.correctable", "remapped_rows.uncorrectable", "remapped_rows.pending", "remapped_rows.failure",
    "retired_pages.single_bit_ecc.count", "retired_pages.double_bit.count", "retired_pages.pending",
)
LINK_FIELDS = ("index", "pci.bus_id", "pcie.link.gen.max", "pcie.link.gen.gpumax", "pcie.link.gen.hostmax",
               "pcie.link.gen.current", "pcie.link.width.max", "pcie.link.width.current")
COMMAND_TIMEOUT_S = 30


def say(text, lock=None):
    """One line on stdout, flushed at once (whole lines even from several threads)."""
    if lock is not None:
        with lock:
            say(text)
        return
    sys.stdout.write(text + "\n")
    sys.stdout.flush()


def _run(argv, timeout_s=COMMAND_TIMEOUT_S):
    """(rc, stdout, stderr) of a short command with a time limit; rc None when it could not start or timed out."""
    try:
        done = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=timeout_s,
                              universal_newlines=True, check=False)
    except (OSError, subprocess.SubprocessError) as exc:
        return None, "", "%s: %s" % (type(exc).__name__, exc)
    return done.returncode, done.stdout, done.stderr


def known_fields(nvidia_smi, wanted):
    """The fields of ``wanted`` that this nvidia-smi's --help-query-gpu lists (each as ``"name"``)."""
    rc, out, _err = _run([nvidia_smi, "--help-query-gpu"])
    if rc != 0:
        return []
    found = [f for f in wanted if '"%s"' % f in out]
    # a driver that knows both names lists them as aliases of one field: ask for the newer one only
    return [f for f in found if not (f.startswith("clocks_throttle_reasons.")
                                     and f.replace("clocks_throttle_reasons.", "clocks_event_reasons.") in found)]


# ------------------------------------------------------------------------------------------------ soak

def _xids(lock):
    """The kernel log's NVRM Xid lines (dmesg), or None when it cannot be read (no permission, no dmesg)."""
    rc, out, err = _run(["dmesg"])
    if rc != 0:
        return None, (err or "dmesg rc %s" % rc).strip()[:300]
    return [ln for ln in out.splitlines() if "NVRM: Xid" in ln], None


def _say_xids(phase, lock, nvidia_smi):
    """The Xid lines and ``nvidia-smi -q`` (its PCI section's replay counters) at ``phase``."""
    lines, why = _xids(lock)
    say(XID_MARK + json.dumps({"phase": phase, "readable": lines is not None, "lines": lines or [], "why": why}), lock)
    rc, out, err = _run([nvidia_smi, "-q"])      # its PCI section holds "Replays Since Reset" (no -d selects it)
    say(PCIE_MARK + json.dumps({"phase": phase, "rc": rc, "text": out if rc == 0 else err[-300:]}), lock)


class Sampler(object):
    """nvidia-smi ``-lms`` in the background, each of its lines passed through with SMI_MARK; stopped by stop()."""

    def __init__(self, nvidia_smi, fields, sample_ms, limit_s, lock):
        self.lock = lock
        self.proc = None
        self.thread = None
        self.limit_s = limit_s
        self.argv = [nvidia_smi, "--query-gpu=" + ",".join(fields), "--format=csv", "-lms", str(sample_ms)]

    def start(self):
        try:
            self.proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                         universal_newlines=True)
        except OSError as exc:
            say(SMI_MARK + "# could not start nvidia-smi: %s" % exc, self.lock)
            return
        self.thread = threading.Thread(target=self._pump, daemon=True)
        self.thread.start()
        self.deadline = time.monotonic() + self.limit_s

    def _pump(self):
        for line in self.proc.stdout:
            if line.strip():
                say(SMI_MARK + line.rstrip("\n"), self.lock)

    def stop(self):
        if self.proc is None:
            return
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=5)
        if self.thread is not None:
            self.thread.join(timeout=5)


def _soak_gpu(torch, dev, args, t0, stop_at, lock, failures):
    """The GEMM loop of one GPU: windows of about --window-s seconds until stop_at, one result line per window."""
    try:
        torch.cuda.set_device(dev)
        dtype = getattr(torch, DTYPES[args.dtype])
        a = torch.randn(args.m, args.k, device=dev, dtype=dtype)
        b = torch.randn(args.k, args.n, device=dev, dtype=dtype)
        c = torch.empty(args.m, args.n, device=dev, dtype=dtype)
        flop = 2.0 * args.m * args.n * args.k
        per_window = 10
        window = 0
        while time.monotonic() < stop_at:
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            for _step in range(per_window):
                torch.matmul(a, b, out=c)
            end.record()
            end.synchronize()
            ms = start.elapsed_time(end)
            say(SOAK_MARK + json.dumps({"device": dev, "window": window, "t_s": round(time.monotonic() - t0, 3),
                                        "products": per_window, "ms": round(ms, 3),
                                        "tflops": round(flop * per_window / (ms / 1e3) / 1e12, 2)}), lock)
            window += 1
            # the next window fills about --window-s at this window's rate
            per_window = max(1, int(per_window * args.window_s * 1e3 / max(ms, 1e-3)))
    except Exception as exc:  # pylint: disable=broad-except
        failures[dev] = "%s: %s" % (type(exc).__name__, exc)
        say(SOAK_MARK + json.dumps({"device": dev, "error": failures[dev]}), lock)


def run_soak(args):
    import torch

    lock = threading.Lock()
    if not torch.cuda.is_available():
        say(START_MARK + json.dumps({"skip": "torch sees no CUDA device", "torch": torch.__version__}))
        return 0
    devices = [int(d) for d in args.devices.split(",")] if args.devices else list(range(torch.cuda.device_count()))
    if args.dtype == "tf32":
        torch.backends.cuda.matmul.allow_tf32 = True
    fields = known_fields(args.nvidia_smi, TELEMETRY_FIELDS)
    say(START_MARK + json.dumps({
        "devices": devices, "gpu_names": dict((str(d), torch.cuda.get_device_name(d)) for d in devices),
        "torch": torch.__version__, "cuda": torch.version.cuda, "dtype": args.dtype, "m": args.m, "n": args.n,
        "k": args.k, "duration_s": args.duration_s, "window_s": args.window_s, "sample_ms": args.sample_ms,
        "fields": fields}), lock)
    _say_xids("before", lock, args.nvidia_smi)
    sampler = Sampler(args.nvidia_smi, fields, args.sample_ms, args.duration_s + 30, lock) if fields else None
    failures = {}
    try:
        if sampler is not None:
            sampler.start()
        t0 = time.monotonic()
        stop_at = t0 + args.duration_s
        threads = [threading.Thread(target=_soak_gpu, args=(torch, dev, args, t0, stop_at, lock, failures),
                                    daemon=True) for dev in devices]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=args.duration_s + 120)
        # a last sample or two with the GPUs still warm
        time.sleep(min(2.0, args.sample_ms / 1000.0 * 1.5))
    finally:
        if sampler is not None:
            sampler.stop()
    _say_xids("after", lock, args.nvidia_smi)
    say(END_MARK + json.dumps({"elapsed_s": round(time.monotonic() - t0, 3), "failures": failures}), lock)
    return 0


# ------------------------------------------------------------------------------------------------ copy

def cudart():
    """The CUDA runtime library torch loaded (ctypes), or None."""
    for name in ("libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0"):
        try:
            return ctypes.CDLL(name)
        except OSError:
            continue
    return None


def timed_copies(torch, stream, iters, copy):
    """Seconds per call of ``copy()`` issued ``iters`` times on ``stream``, after one untimed call."""
    with torch.cuda.stream(stream):
        copy()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record(stream)
        for _step in range(iters):
            copy()
        end.record(stream)
    end.synchronize()
    return start.elapsed_time(end) / 1e3 / iters


def host_copy_gbyte_s(torch, dev, size, iters, direction):
    """Host-to-device (``h2d``) or device-to-host (``d2h``) GB/s of ``size`` bytes to/from pinned host memory."""
    host = torch.empty(size, dtype=torch.uint8, pin_memory=True)
    device = torch.empty(size, dtype=torch.uint8, device=dev)
    stream = torch.cuda.Stream(device=dev)
    if direction == "h2d":
        seconds = timed_copies(torch, stream, iters, lambda: device.copy_(host, non_blocking=True))
    else:
        seconds = timed_copies(torch, stream, iters, lambda: host.copy_(device, non_blocking=True))
    del host, device
    return size / seconds / 1e9


def peer_copy_gbyte_s(torch, lib, src, dst, by, size, iters):
    """GB/s of cudaMemcpyPeerAsync of ``size`` bytes from GPU ``src`` to GPU ``dst``, issued on a stream of GPU
    ``by`` (``src``: the source writes, ``dst``: the destination reads)."""
    a = torch.empty(size, dtype=torch.uint8, device=src)
    b = torch.empty(size, dtype=torch.uint8, device=dst)
    stream = torch.cuda.Stream(device=by)
    handle = ctypes.c_void_p(stream.cuda_stream)

    def copy():
        err = lib.cudaMemcpyPeerAsync(ctypes.c_void_p(b.data_ptr()), ctypes.c_int(dst), ctypes.c_void_p(a.data_ptr()),
                                      ctypes.c_int(src), ctypes.c_size_t(size), handle)
        if err:
            raise RuntimeError("cudaMemcpyPeerAsync returned %d" % err)
    with torch.cuda.device(by):
        seconds = timed_copies(torch, stream, iters, copy)
    del a, b
    return size / seconds / 1e9


def _enable_peers(torch, lib, devices):
    """Peer access both ways for every pair that can (cudaDeviceEnablePeerAccess; 'already enabled' is fine)."""
    access = {}
    for i in devices:
        for j in devices:
            if i == j:
                continue
            access[(i, j)] = bool(torch.cuda.can_device_access_peer(i, j))
            if access[(i, j)] and lib is not None:
                with torch.cuda.device(i):
                    lib.cudaDeviceEnablePeerAccess(ctypes.c_int(j), ctypes.c_uint(0))
                    lib.cudaGetLastError()
    return access


def _copy_line(item):
    say(COPY_MARK + json.dumps(item))


def _measure(item, func):
    try:
        item["gbyte_s"] = round(func(), 3)
    except Exception as exc:  # pylint: disable=broad-except
        item["error"] = "%s: %s" % (type(exc).__name__, exc)
    _copy_line(item)


def run_copy(args):
    import torch

    if not torch.cuda.is_available():
        say(COPY_START_MARK + json.dumps({"skip": "torch sees no CUDA device", "torch": torch.__version__}))
        return 0
    devices = [int(d) for d in args.devices.split(",")] if args.devices else list(range(torch.cuda.device_count()))
    fields = known_fields(args.nvidia_smi, LINK_FIELDS)
    links = _run([args.nvidia_smi, "--query-gpu=" + ",".join(fields), "--format=csv"])[1] if fields else ""
    nvlink = _run([args.nvidia_smi, "nvlink", "-s"])[1]
    lib = cudart() if args.p2p and len(devices) > 1 else None
    access = _enable_peers(torch, lib, devices) if args.p2p and len(devices) > 1 else {}
    say(COPY_START_MARK + json.dumps({
        "devices": devices, "gpu_names": dict((str(d), torch.cuda.get_device_name(d)) for d in devices),
        "torch": torch.__version__, "cuda": torch.version.cuda, "bytes": args.bytes, "iters": args.iters,
        "pcie_csv": links, "nvlink_status": nvlink, "cudart": lib is not None,
        "peer_access": ["%d,%d" % pair for pair, ok in sorted(access.items()) if ok]}))
    for dev in devices:
        for direction in ("h2d", "d2h"):
            _measure({"kind": direction, "src": "host" if direction == "h2d" else dev,
                      "dst": dev if direction == "h2d" else "host", "bytes": args.bytes, "iters": args.iters},
                     lambda: host_copy_gbyte_s(torch, dev, args.bytes, args.iters, direction))
    for (src, dst), ok in sorted(access.items()):
        for kind, by in (("p2p_write", src), ("p2p_read", dst)):
            item = {"kind": kind, "src": src, "dst": dst, "bytes": args.bytes, "iters": args.iters}
            if not ok:
                item["error"] = "no peer access between GPU %d and GPU %d (torch.cuda.can_device_access_peer)" % (
                    src, dst)
                _copy_line(item)
            elif lib is None:
                item["error"] = "the CUDA runtime library (libcudart) could not be loaded"
                _copy_line(item)
            else:
                _measure(item, lambda: peer_copy_gbyte_s(torch, lib, src, dst, by, args.bytes, args.iters))
    say(COPY_MARK + json.dumps({"kind": "end"}))
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description="aifabric.acceptance burn-in soak and copy-bandwidth worker")
    sub = parser.add_subparsers(dest="cmd")
    soak = sub.add_parser("soak")
    soak.add_argument("--duration-s", type=float, default=120.0)
    soak.add_argument("--window-s", type=float, default=1.0)
    soak.add_argument("--dtype", choices=sorted(DTYPES), default="bf16")
    soak.add_argument("--m", type=int, default=8192)
    soak.add_argument("--n", type=int, default=8192)
    soak.add_argument("--k", type=int, default=8192)
    soak.add_argument("--sample-ms", type=int, default=1000)
    soak.add_argument("--devices", default="")
    soak.add_argument("--nvidia-smi", default="nvidia-smi")
    copy = sub.add_parser("copy")
    copy.add_argument("--bytes", type=int, default=1 << 28)
    copy.add_argument("--iters", type=int, default=20)
    copy.add_argument("--p2p", type=int, default=1)
    copy.add_argument("--devices", default="")
    copy.add_argument("--nvidia-smi", default="nvidia-smi")
    args = parser.parse_args(argv)
    if args.cmd == "soak":
        return run_soak(args)
    if args.cmd == "copy":
        return run_copy(args)
    parser.print_help()
    return 2


if __name__ == "__main__":
    raise SystemExit(main())
