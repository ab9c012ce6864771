#!/usr/bin/env bash
# The in-process counters from Rust on the GPU machine: the seed's steps 6 and 7 (hardware counters) through the
# Rust API with CUPTI's kernel, application and range replay (each with the read and the discard L2
# flush) and under the ncu backend, compared in one process (gpu-checks/harness/src/seed_counters/;
# built here by scripts/build-carry.sh). Run from the repo root: OUT=dir gpu-checks/gpu-check-seed.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:?set OUT}"
mkdir -p "$OUT"
# cudarc opens cuBLAS and NVRTC by bare name; kprof finds libcuda, libcupti and ncu itself.
LIBDIRS=/usr/local/cuda/lib64:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib
export LD_LIBRARY_PATH="$LIBDIRS${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export PATH="/usr/local/cuda/bin:$PATH"
.carry/bin/seed_counters "$OUT" --flush read,discard
