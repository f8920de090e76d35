#!/usr/bin/env bash
# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Proof run of the whole acceptance playbook on a real GPU host (not run by CI): builds nothing of its own,
# expects nccl-tests at $NCCL_TESTS (default /opt/nccl-tests/build; build it with shared/tools'
# build-nccl-tests.sh), runs the bare all_reduce_perf for comparison, then playbooks/acceptance.yml on
# localhost with the fleet_report callback, and leaves the report and the outputs under $OUT.
# Needs: python3 with torch, ansible-core wheels in .whl/ (see docs/gpu.md). NVLink multicast stays off.
set -u -o pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUTDIR=${OUT:-/tmp/acceptance-proof}
NCCL_TESTS=${NCCL_TESTS:-/opt/nccl-tests/build}
PY=${PY:-$(command -v python3)}
mkdir -p "$OUTDIR"
NGPU=$("$PY" -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || echo 0)
echo "gpus: $NGPU" | tee "$OUTDIR/timeline.txt"
for c in all_reduce all_gather; do
  timeout 300 "$NCCL_TESTS/${c}_perf" -b 8 -e 1G -f 2 -g "$NGPU" > "$OUTDIR/bare_${c}.txt" 2>&1
  echo "bare $c rc=$?" | tee -a "$OUTDIR/timeline.txt"
done
. "$ROOT/tests/hardware/lib.sh"
ansible_from_wheels "$ROOT" "$PY" "$ROOT/.whl" "$OUTDIR/pip.txt" || exit 1
localhost_inventory /tmp/acceptance-inventory.yml "$PY" "$NGPU"
t0=$(date +%s)
AIFABRIC_REPORTS_ROOT=$OUTDIR/reports timeout 900 "$PY" /tmp/site/bin/ansible-playbook -i /tmp/acceptance-inventory.yml \
  "$ROOT/playbooks/acceptance.yml" -e "{\"gpu_python\": \"$PY\", \"gpu_env\": {\"NCCL_NVLS_ENABLE\": \"0\"},
  \"gpu_nccl\": {\"tool_dir\": \"$NCCL_TESTS\", \"max_bytes\": \"1G\", \"if_missing\": \"error\"}}" \
  > "$OUTDIR/acceptance_playbook.txt" 2>&1
echo "acceptance.yml rc=$? wall_s=$(( $(date +%s) - t0 ))" | tee -a "$OUTDIR/timeline.txt"
latest=$(readlink -f "$OUTDIR/reports/latest")
cp "$latest/results.json" "$latest/summary.md" "$OUTDIR/" 2>/dev/null
tail -5 "$OUTDIR/acceptance_playbook.txt"
