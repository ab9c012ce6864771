#!/usr/bin/env bash
# The Python package checks on the GPU machine: installs the kprof wheel carried in .carry/wheels (built here by
# scripts/build-carry.sh) into a private folder and runs the seed's steps through it
# (gpu-checks/gpu_check_python.py). Run from the repo root: OUT=dir gpu-checks/gpu-check-python.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:?set OUT}"
. gpu-checks/gpu-wheel.sh
# The Rust API on the same kernel (cuBLAS sgemm sweep, cold L2), for the cross-check.
LIBDIRS=/usr/local/cuda/lib64:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
LD_LIBRARY_PATH="$LIBDIRS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" .carry/bin/sgemm "$OUT/" > "$OUT/rust-sgemm.log" 2>&1
echo "rust sgemm exit $? ($(tail -n 3 "$OUT/rust-sgemm.log" | tr '\n' ' '))"
"$PY" gpu-checks/gpu_check_python.py "$OUT" "$OUT/sgemm-raw.csv"
