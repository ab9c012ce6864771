#!/usr/bin/env bash
# The ncu backend on the GPU machine: backend="ncu" through the kprof wheel carried in .carry/wheels
# (scripts/build-carry.sh), installed into a private folder as gpu-checks/gpu-check-python.sh does.
# Run from the repo root: OUT=dir gpu-checks/gpu-check-ncu.sh   (target: under 3 minutes)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:?set OUT}"
. gpu-checks/gpu-wheel.sh
. gpu-checks/ncu-on-path.sh
"$PY" gpu-checks/gpu-check-ncu.py "$OUT"
rc=$?
ls -la "$OUT" | grep -v '\.ncu-rep$' | tail -n 30
exit $rc
