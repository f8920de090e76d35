#!/usr/bin/env bash
# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# Proof run of the gpu role with the burn-in soak (gpu_soak_s: 30) and the copy matrix through ansible-playbook on a
# real GPU host (not run by CI): the GEMM, copy_bandwidth and gpu_soak modules as async jobs; the report under $OUT.
set -u
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 PYTHONUNBUFFERED=1
HERE=${BURNIN_DIR:-$(cd "$(dirname "$0")" && pwd)}   # BURNIN_DIR: a folder holding .whl/ (ansible-core, resolvelib, cryptography, cffi, pycparser wheels) and col/ansible_collections/aifabric/acceptance (this tree)
PY=$(command -v python3)
"$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site "$HERE"/.whl/*.whl || exit 1
export PYTHONPATH=/tmp/site ANSIBLE_COLLECTIONS_PATH=$HERE/col ANSIBLE_CONFIG=$HERE/col/ansible_collections/aifabric/acceptance/ansible.cfg
export AIFABRIC_REPORTS_ROOT=$OUT/report ANSIBLE_LOCAL_TEMP=/tmp/ans-local ANSIBLE_REMOTE_TEMP=/tmp/ans-remote
printf 'all:\n  children:\n    gpu_nodes:\n      hosts:\n        localhost:\n          ansible_connection: local\n          ansible_python_interpreter: %s\n' "$PY" > /tmp/inv.yml
t0=$(date +%s.%N)
timeout -k 10 420 "$PY" /tmp/site/bin/ansible-playbook aifabric.acceptance.gpu -i /tmp/inv.yml \
  -e '{"gpu_checks": ["gemm", "copy_bandwidth"], "gpu_soak_s": 30, "gpu_run_probe": false, "gpu_gemm": {"dtypes": ["bf16"]}}' \
  > "$OUT/playbook.txt" 2>&1
echo "playbook rc=$? wall_s=$(awk "BEGIN{print $(date +%s.%N) - $t0}")"
tail -25 "$OUT/playbook.txt"
