#!/usr/bin/env bash
# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Judgement proof on a real multi-GPU host (not run by CI; issue 19): playbooks/acceptance.yml on localhost, as a
# user runs it, once per scenario, each with the inventory's own `acceptance_expect` mapping:
#   healthy  - nothing else on the GPUs;
#   loaded   - a competing bf16 matmul loop on the last GPU (a stand-in for a throttled or sick GPU);
#   nop2p    - NCCL_P2P_DISABLE=1 in the GPU stage's environment (the GPUs stop using NVLink; the probe still
#              reports the links active).
# Each scenario leaves $OUT/<scenario>.rc (ansible-playbook's exit code), and all reports go in $OUT/runs.tar.gz
# (results.json, summary.md, the playbook's output). Expects nccl-tests at $NCCL_TESTS (default
# /opt/nccl-tests/build; shared/tools' build-nccl-tests.sh builds it) and ansible-core wheels in $WHL (default
# .whl/ of the tree; see docs/gpu.md). NVLink multicast stays off.
# Usage: SCENARIOS="healthy loaded nop2p" OUT=/tmp/judgement bash tests/hardware/judgement_proof.sh
set -u -o pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUTDIR=${OUT:-/tmp/judgement}
NCCL_TESTS=${NCCL_TESTS:-/opt/nccl-tests/build}
WHL=${WHL:-$ROOT/.whl}
PY=${PY:-$(command -v python3)}
SCENARIOS=${SCENARIOS:-healthy loaded nop2p}
MAX_BYTES=${MAX_BYTES:-1G}
WORK=/tmp/judgement-work
mkdir -p "$OUTDIR" "$WORK"
NGPU=$("$PY" -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || echo 0)
echo "gpus: $NGPU" | tee -a "$OUTDIR/timeline.txt"
. "$ROOT/tests/hardware/lib.sh"
ansible_from_wheels "$ROOT" "$PY" "$WHL" "$WORK/pip.txt" || exit 1
localhost_inventory "$WORK/inventory.yml" "$PY" "$NGPU"

load_last_gpu() {   # a bf16 matmul loop on the last GPU until killed (at most 15 minutes)
  "$PY" - "$((NGPU - 1))" <<'EOF' &
import sys, time
import torch
torch.cuda.set_device(int(sys.argv[1]))
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
b = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
end = time.time() + 900
while time.time() < end:
    for _ in range(50):
        a @ b
    torch.cuda.synchronize()
EOF
  LOADER=$!
  sleep 10
}

for scenario in $SCENARIOS; do
  env_json='{"NCCL_NVLS_ENABLE": "0"}'
  LOADER=
  case $scenario in
    loaded) load_last_gpu ;;
    nop2p) env_json='{"NCCL_NVLS_ENABLE": "0", "NCCL_P2P_DISABLE": "1"}' ;;
  esac
  t0=$(date +%s)
  AIFABRIC_REPORTS_ROOT=$WORK/$scenario timeout 540 "$PY" /tmp/site/bin/ansible-playbook -i "$WORK/inventory.yml" \
    "$ROOT/playbooks/acceptance.yml" -e "{\"gpu_python\": \"$PY\", \"gpu_env\": $env_json,
    \"gpu_nccl\": {\"tool_dir\": \"$NCCL_TESTS\", \"max_bytes\": \"$MAX_BYTES\", \"if_missing\": \"error\"}}" \
    > "$WORK/$scenario.playbook.txt" 2>&1
  rc=$?
  [ -n "$LOADER" ] && kill "$LOADER" 2>/dev/null && wait "$LOADER" 2>/dev/null
  echo "$rc" > "$OUTDIR/$scenario.rc"
  echo "$scenario: ansible-playbook rc=$rc wall_s=$(( $(date +%s) - t0 ))" | tee -a "$OUTDIR/timeline.txt"
  latest=$(readlink -f "$WORK/$scenario/latest")
  [ -n "$latest" ] && cp "$latest/results.json" "$latest/summary.md" "$WORK/$scenario/" 2>/dev/null
  grep -E "^(Verdict|\| *localhost)" "$WORK/$scenario/summary.md" 2>/dev/null | head -3
  tail -3 "$WORK/$scenario.playbook.txt"
done
tar -C "$WORK" -czf "$OUTDIR/runs.tar.gz" --exclude='*/20*' --exclude=latest . 2>/dev/null
ls -la "$OUTDIR"
