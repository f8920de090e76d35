# Copyright (c) 2026, aifabric.acceptance contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
#
# What the proof scripts of tests/hardware share (sourced, not run): ansible-core from wheels on a GPU host without
# network, the collection of this tree on ANSIBLE_COLLECTIONS_PATH, and a localhost inventory.

# ansible_from_wheels ROOT PY WHL_DIR LOG: ansible-core into /tmp/site (once), this tree as the collection
ansible_from_wheels() {
  local root=$1 py=$2 whl=$3 logfile=$4
  if [ ! -x /tmp/site/bin/ansible-playbook ]; then
    "$py" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site "$whl"/*.whl \
      > "$logfile" 2>&1 || { echo "pip install of $whl failed"; tail -5 "$logfile"; return 1; }
  fi
  export PYTHONPATH=/tmp/site ANSIBLE_COLLECTIONS_PATH=/tmp/acol ANSIBLE_CONFIG=$root/ansible.cfg
  mkdir -p /tmp/acol/ansible_collections/aifabric
  ln -sfn "$root" /tmp/acol/ansible_collections/aifabric/acceptance
}

# localhost_inventory PATH PY [NGPU]: localhost in gpu_nodes; with NGPU, acceptance_expect says it has that many GPUs
localhost_inventory() {
  local path=$1 py=$2 ngpu=${3:-}
  {
    printf 'all:\n  children:\n    gpu_nodes:\n      hosts:\n        localhost:\n'
    printf '          ansible_connection: local\n          ansible_python_interpreter: %s\n' "$py"
    if [ -n "$ngpu" ]; then
      printf '          acceptance_expect:\n            gpu_count: %s\n' "$ngpu"
    fi
  } > "$path"
}
