#!/usr/bin/env bash
# The ncu backend on the GPU machine: backend="ncu" through the kprof wheel carried in .carry/wheels
# (scripts/build-carry.sh), installed into a private folder as gpu-checks/gpu-check-python.sh does.
# Run from the repo root: OUT=dir gpu-checks/gpu-check-ncu.sh   (target: under 3 minutes)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:?set OUT}"
mkdir -p "$OUT"
. gpu-checks/gpu-wheel.sh
# ncu: KPROF_NCU if set, else PATH, else /usr/local/cuda/bin (kprof's own search).
export PATH="$PATH:/usr/local/cuda/bin"
ncu --version 2>&1 | tail -1
"$PY" gpu-checks/gpu-check-ncu.py "$OUT"
rc=$?
ls -la "$OUT" | grep -v '\.ncu-rep$' | tail -n 30
exit $rc
