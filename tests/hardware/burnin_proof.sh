#!/usr/bin/env bash
# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Proof run of the burn-in soak and the copy-bandwidth worker on a real GPU host (not run by CI). Leaves under $OUT
# (or /tmp/burnin-proof) burnin_proof.tgz with every output:
#   1. nvidia-smi's --help-query-gpu and a few seconds of `--query-gpu=... --format=csv[,nounits] -lms 1000` (fixtures);
#   2. the soak worker healthy, then with a competing bf16 matmul on GPU 0, then under a power cap (nvidia-smi -pl,
#      where the machine allows it; the default limit is set back after);
#   3. the copy worker, and a bare torch measurement of the same copies and of the same GEMM for comparison;
#   4. nvbandwidth where it is installed.
# SOAK_S (default 60) is each soak's duration.
set -u -o pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUTDIR=${OUT:-/tmp/burnin-proof}
mkdir -p "$OUTDIR"
W=$(mktemp -d /tmp/burnin-proof.XXXXXX)
PY=${PY:-$(command -v python3)}
WORKER=$ROOT/plugins/module_utils/burnin_worker.py
SOAK_S=${SOAK_S:-60}
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$W/timeline.txt"; }
FIELDS=timestamp,index,pci.bus_id,power.draw,power.limit,enforced.power.limit,power.default_limit,temperature.gpu,clocks.sm,clocks.max.sm,utilization.gpu,clocks_event_reasons.active,clocks_event_reasons.hw_slowdown,clocks_event_reasons.hw_thermal_slowdown,clocks_event_reasons.sw_power_cap,ecc.errors.corrected.volatile.total,ecc.errors.uncorrected.volatile.total,remapped_rows.correctable,remapped_rows.uncorrectable,remapped_rows.pending

log "versions"
{ nvidia-smi; "$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, torch.cuda.device_count())'; uname -a; } > "$W/versions.txt" 2>&1
nvidia-smi --help-query-gpu > "$W/help_query_gpu.txt" 2>&1
nvidia-smi -q > "$W/nvidia_smi_q.txt" 2>&1
nvidia-smi nvlink -s > "$W/nvlink_s.txt" 2>&1
nvidia-smi --query-gpu=index,pci.bus_id,pcie.link.gen.max,pcie.link.gen.gpumax,pcie.link.gen.hostmax,pcie.link.gen.current,pcie.link.width.max,pcie.link.width.current --format=csv > "$W/pcie_link.csv" 2>&1
dmesg > "$W/dmesg.txt" 2>&1; echo "dmesg rc=$?" >> "$W/timeline.txt"

log "telemetry capture idle (5 s, units and nounits)"
timeout -s INT 5.5 nvidia-smi --query-gpu=$FIELDS --format=csv -lms 1000 > "$W/lms_units.csv" 2>&1
timeout -s INT 5.5 nvidia-smi --query-gpu=$FIELDS --format=csv,nounits -lms 1000 > "$W/lms_nounits.csv" 2>&1

log "soak healthy ${SOAK_S}s"
timeout -k 10 $((SOAK_S + 120)) "$PY" "$WORKER" soak --duration-s "$SOAK_S" > "$W/soak_healthy.txt" 2> "$W/soak_healthy.err"
log "soak healthy rc=$?"

log "soak with a competing matmul on GPU 0"
timeout -k 5 $((SOAK_S + 40)) "$PY" -c '
import time, torch
a = torch.randn(8192, 8192, device=0, dtype=torch.bfloat16); b = torch.randn(8192, 8192, device=0, dtype=torch.bfloat16)
t = time.time()
while time.time() - t < '$((SOAK_S + 20))':
    for _ in range(50): a @ b
    torch.cuda.synchronize()
' > "$W/competitor.txt" 2>&1 &
COMP=$!
sleep 8
timeout -k 10 $((SOAK_S + 120)) "$PY" "$WORKER" soak --duration-s "$SOAK_S" > "$W/soak_loaded.txt" 2> "$W/soak_loaded.err"
log "soak loaded rc=$?"
kill "$COMP" 2>/dev/null; wait "$COMP" 2>/dev/null

DEFAULT_PL=$(nvidia-smi --query-gpu=power.default_limit --format=csv,noheader,nounits -i 0 | tr -d ' ')
MIN_PL=$(nvidia-smi --query-gpu=power.min_limit --format=csv,noheader,nounits -i 0 | tr -d ' ')
log "power cap: default $DEFAULT_PL W, min $MIN_PL W"
if nvidia-smi -i 0 -pl "${MIN_PL%.*}" > "$W/pl_set.txt" 2>&1; then
  log "power cap set to $MIN_PL"
  timeout -k 10 $((SOAK_S + 120)) "$PY" "$WORKER" soak --duration-s "$((SOAK_S / 2))" > "$W/soak_capped.txt" 2> "$W/soak_capped.err"
  log "soak capped rc=$?"
  nvidia-smi -i 0 -pl "${DEFAULT_PL%.*}" > "$W/pl_reset.txt" 2>&1; log "power cap reset rc=$?"
else
  log "nvidia-smi -pl refused: $(tail -3 "$W/pl_set.txt" | tr '\n' ' ')"
fi

log "copy worker"
timeout -k 10 300 "$PY" "$WORKER" copy --bytes 268435456 --iters 20 > "$W/copy.txt" 2> "$W/copy.err"
log "copy rc=$?"

log "bare torch: the same copies (perf_counter), the peer path on one GPU, and the GEMM"
timeout -k 10 300 "$PY" - "$WORKER" > "$W/bare.txt" 2>&1 <<'PYEOF'
import sys, time, importlib.util, torch
spec = importlib.util.spec_from_file_location("w", sys.argv[1]); w = importlib.util.module_from_spec(spec); spec.loader.exec_module(w)
size, iters = 1 << 28, 20
for dev in range(torch.cuda.device_count()):
    host = torch.empty(size, dtype=torch.uint8, pin_memory=True); d = torch.empty(size, dtype=torch.uint8, device=dev)
    for name, fn in (("h2d", lambda: d.copy_(host, non_blocking=True)), ("d2h", lambda: host.copy_(d, non_blocking=True))):
        fn(); torch.cuda.synchronize(dev); t = time.perf_counter()
        for _ in range(iters): fn()
        torch.cuda.synchronize(dev); s = (time.perf_counter() - t) / iters
        print("bare %s gpu %d %.2f GB/s" % (name, dev, size / s / 1e9))
    lib = w.cudart(); print("cudart loaded:", lib is not None)
    if lib is not None:
        print("peer-path self copy gpu %d->%d %.1f GB/s (cudaMemcpyPeerAsync, one GPU: device-local)" % (dev, dev, w.peer_copy_gbyte_s(torch, lib, dev, dev, dev, size, iters)))
    a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16); b = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    for _ in range(50): a @ b
    torch.cuda.synchronize(dev); t = time.perf_counter(); n = 0
    while time.perf_counter() - t < 10:
        for _ in range(100): a @ b
        torch.cuda.synchronize(dev); n += 100
    print("bare gemm gpu %d bf16 8192^3 %.1f TFLOP/s over %.1f s" % (dev, 2 * 8192 ** 3 * n / (time.perf_counter() - t) / 1e12, time.perf_counter() - t))
PYEOF
log "bare rc=$?"

if command -v nvbandwidth > /dev/null; then
  log "nvbandwidth"; timeout -k 10 300 nvbandwidth > "$W/nvbandwidth.txt" 2>&1; log "nvbandwidth rc=$?"
else
  log "nvbandwidth not installed"
fi
cp "$W"/timeline.txt "$W"/bare.txt "$OUTDIR"/ 2>/dev/null
tar -C "$W" -czf "$OUTDIR/burnin_proof.tgz" .
cat "$W/timeline.txt" "$W/bare.txt"
grep -c AIFABRIC_SOAK "$W"/soak_*.txt; grep -h '"device": 0, "window": [0-9]*0,' "$W"/soak_*.txt | head -40
head -3 "$W/lms_units.csv" "$W/lms_nounits.csv"; grep AIFABRIC_COPY "$W/copy.txt"; tail -3 "$W"/soak_*.err
rm -rf "$W"
