#!/usr/bin/env bash
# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Proof run of the GPU stage on a real GPU host (used on a 2x H200 machine; not run by CI).
# Runs, with NVLink multicast off (NCCL_NVLS_ENABLE=0):
#   1. the GEMM worker and the all-reduce probe bare (own launcher, then mpirun -np <gpus>);
#   2. ansible: env_probe ad hoc, playbooks/gpu.yml against localhost, and the allreduce_probe
#      module through its mpirun launcher (the multi-node launch path);
# and leaves every output under $OUT (or /tmp/gpu-proof): gpu_proof.tgz plus the key files.
# Needs: python3 with torch (PY=...), Open MPI's mpirun, ansible-core wheels in .whl/ (see docs/gpu.md).
set -u -o pipefail
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
OUTDIR=${OUT:-/tmp/gpu-proof}
mkdir -p "$OUTDIR"
W=$(mktemp -d /tmp/gpu-proof.XXXXXX)
PY=${PY:-$(command -v python3)}
WORKER=$ROOT/plugins/module_utils/torch_worker.py
NGPU=$("$PY" -c 'import torch; print(torch.cuda.device_count())' 2>/dev/null || echo 0)
stamp() { date -u +%s.%N; }
log() { echo "== $(date -u +%H:%M:%S) $*" | tee -a "$W/timeline.txt"; }

log "versions (gpus: $NGPU)"
{
  nvidia-smi; nvidia-smi topo -m
  "$PY" -c 'import sys, torch; print(sys.version); print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", torch.cuda.nccl.version(), "gpus", torch.cuda.device_count())'
  mpirun --version; nproc; uname -a
} > "$W/nvidia_smi.txt" 2>&1
nvidia-smi -q > "$W/nvidia_smi_q.txt" 2>&1

log "gemm bare"
"$PY" "$WORKER" gemm --dtypes bf16,fp16 > "$W/gemm_bare.txt" 2>&1
log "gemm bare rc=$?"

log "probe bare, own launcher"
t0=$(stamp)
"$PY" "$WORKER" allreduce --launcher spawn --nprocs "$NGPU" --json-out "$W/probe_spawn.json" > "$W/probe_spawn.txt" 2>&1
rc=$?
t1=$(stamp)
log "probe spawn rc=$rc wall_s=$(awk "BEGIN{print $t1 - $t0}")"

log "probe bare, mpirun -np $NGPU"
t0=$(stamp)
mpirun --allow-run-as-root -np "$NGPU" --bind-to none -x NCCL_NVLS_ENABLE -x PATH -x LD_LIBRARY_PATH -x PYTHONUNBUFFERED \
  "$PY" "$WORKER" allreduce --launcher mpi --master-addr 127.0.0.1 --master-port 29517 \
  --json-out "$W/probe_mpirun.json" > "$W/probe_mpirun.txt" 2>&1
rc=$?
t1=$(stamp)
log "probe mpirun rc=$rc wall_s=$(awk "BEGIN{print $t1 - $t0}")"

log "ansible"
. "$ROOT/tests/hardware/lib.sh"
ansible_from_wheels "$ROOT" "$PY" "$ROOT/.whl" "$W/pip.txt" || exit 1
export ANSIBLE_COLLECTIONS_PATH=/tmp/at
mkdir -p /tmp/at/ansible_collections/aifabric
ln -sfn "$ROOT" /tmp/at/ansible_collections/aifabric/acceptance
localhost_inventory "$W/inventory.yml" "$PY"
adhoc() {  # name, module, args
  local t0 t1
  t0=$(stamp)
  AIFABRIC_REPORTS_ROOT=$W/report-$1 \
    /tmp/site/bin/ansible localhost -i "$W/inventory.yml" -m "$2" ${3:+-a "$3"} > "$W/$1.json" 2> "$W/$1.stderr"
  local rc=$?
  t1=$(stamp)
  log "$1 rc=$rc wall_s=$(awk "BEGIN{print $t1 - $t0}")"
}
adhoc env_probe aifabric.acceptance.env_probe ""
log "gpu.yml"
t0=$(stamp)
AIFABRIC_REPORTS_ROOT=$W/report-gpu /tmp/site/bin/ansible-playbook -i "$W/inventory.yml" "$ROOT/playbooks/gpu.yml" \
  -e "{\"gpu_python\": \"$PY\", \"gpu_env\": {\"NCCL_NVLS_ENABLE\": \"0\"}}" > "$W/gpu_playbook.txt" 2>&1
rc=$?
t1=$(stamp)
log "gpu.yml rc=$rc wall_s=$(awk "BEGIN{print $t1 - $t0}")"
adhoc probe_module_spawn aifabric.acceptance.allreduce_probe "{\"python\": \"$PY\", \"env\": {\"NCCL_NVLS_ENABLE\": \"0\"}}"
adhoc probe_module_mpirun aifabric.acceptance.allreduce_probe \
  "{\"python\": \"$PY\", \"launcher\": \"mpirun\", \"env\": {\"NCCL_NVLS_ENABLE\": \"0\"}}"
tar czf "$OUTDIR/gpu_proof.tgz" -C "$W" .
cp "$W/timeline.txt" "$W/gemm_bare.txt" "$W/probe_spawn.txt" "$W/probe_mpirun.txt" "$W/gpu_playbook.txt" "$OUTDIR/" 2>/dev/null
log "done: $OUTDIR"
