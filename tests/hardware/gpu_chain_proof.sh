#!/usr/bin/env bash
# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Proof run of the GPU stage's chain (gpu_async: the checks as jobs one after the other on the host, job_chain + one
# job_wait loop) against the same stage as tasks (gpu_async: false) on a real GPU host (not run by CI): playbooks/gpu.yml
# on localhost with the probe, GEMM, the all-reduce probe and nccl-tests (real binaries: nccl-tests built with
# shared/tools' build-nccl-tests.sh, carried in .carry/), each run's records compared field by field less what a
# measurement changes (the values, times), and the order of the checks' runs on the GPUs from their records.
# Needs: python3 with torch, ansible-core wheels in .whl/ (docs/gpu.md). NVLink multicast stays off. Outputs in $OUT.
set -u -o pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUTDIR=${OUT:-/tmp/gpu-chain-proof}
PY=${PY:-$(command -v python3)}
mkdir -p "$OUTDIR"
W=$(mktemp -d /tmp/gpu-chain-proof.XXXXXX)     # this run's inventory and job directory
if [ ! -x /opt/nccl-tests/build/all_reduce_perf ]; then
  bash "$ROOT/.carry/build-nccl-tests.sh" > "$OUTDIR/nccl_tests_build.txt" 2>&1 || { tail -5 "$OUTDIR/nccl_tests_build.txt"; exit 1; }
fi
export LD_LIBRARY_PATH=/tmp/ncclhome/lib:${LD_LIBRARY_PATH:-}
. "$ROOT/tests/hardware/lib.sh"
ansible_from_wheels "$ROOT" "$PY" "$ROOT/.whl" "$OUTDIR/pip.txt" || exit 1
NGPU=$("$PY" -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || echo 0)
localhost_inventory "$W/inventory.yml" "$PY"
for mode in false true; do
  t0=$(date +%s.%N)
  AIFABRIC_REPORTS_ROOT=$OUTDIR/reports-$mode AIFABRIC_FAIL_ON=never ANSIBLE_ASYNC_DIR="$W/jobs" timeout 900 \
    "$PY" /tmp/site/bin/ansible-playbook -i "$W/inventory.yml" "$ROOT/playbooks/gpu.yml" -e "{\"gpu_async\": $mode,
    \"gpu_python\": \"$PY\", \"gpu_env\": {\"NCCL_NVLS_ENABLE\": \"0\", \"LD_LIBRARY_PATH\": \"/tmp/ncclhome/lib\"},
    \"gpu_nccl\": {\"tool_dir\": \"/opt/nccl-tests/build\", \"max_bytes\": \"1G\", \"if_missing\": \"error\",
    \"collectives\": [\"all_reduce\", \"all_gather\"]}}" > "$OUTDIR/playbook_async_$mode.txt" 2>&1
  echo "gpu.yml gpu_async=$mode rc=$? wall_s=$("$PY" -c "import time; print(round(time.time() - $t0, 1))") gpus=$NGPU"
  cp "$(readlink -f "$OUTDIR/reports-$mode/latest")/results.json" "$OUTDIR/results_async_$mode.json"
done
echo "job files left: $(ls "$W/jobs" 2>/dev/null | wc -l)"
"$PY" - "$OUTDIR" <<'EOF'
import json, sys
out = sys.argv[1]
def load(mode):
    return json.load(open("%s/results_async_%s.json" % (out, mode)))["records"]
def shape(rec):
    """What must not change with the chain: the record's identity, status and the names of what it holds."""
    return json.dumps({"host": rec["host"], "check": rec["check"], "target": rec.get("target"), "status": rec["status"],
                       "metrics": sorted(rec.get("metrics") or {}), "params": sorted(rec.get("params") or {}),
                       "tool": (rec.get("tool") or {}).get("name")}, sort_keys=True)
plain, chain = sorted(map(shape, load("false"))), sorted(map(shape, load("true")))
print("records: plain %d, chain %d, same shape: %s" % (len(plain), len(chain), plain == chain))
for line in sorted(set(plain) ^ set(chain))[:10]:
    print("  differs:", line)
for mode in ("false", "true"):
    spans = {}
    for rec in load(mode):
        if rec["check"].split(".")[0] in ("gpu", "nccl") and rec.get("started") and rec.get("duration_s"):
            family = rec["check"].split(".")[0] + "." + rec["check"].split(".")[1].split("_")[0]
            spans.setdefault(family, []).append(rec["started"])
    print("gpu_async=%s: first record of each family, in order: %s" % (
        mode, sorted((min(v), k) for k, v in spans.items())))
    for rec in load(mode):
        if rec["status"] not in ("pass", "skip"):
            print("  %s %s %s %s" % (rec["check"], rec.get("target"), rec["status"], (rec.get("reason") or "")[:150]))
EOF
