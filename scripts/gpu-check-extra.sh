#!/usr/bin/env bash
# Issue 5 and 6 follow-ups through the installed wheel (scripts/gpu_check_extra.py), 10 runs each:
# the fp16 matmul's DRAM bytes against ncu's application replay (part matmul), and the clocks,
# cycles and L2 writes behind the remaining gaps to ncu (part gaps).
# Run from the repo root on the GPU machine: OUT=dir [PARTS="matmul gaps"] scripts/gpu-check-extra.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:?set OUT}"
mkdir -p "$OUT"
. scripts/gpu-wheel.sh
"$PY" scripts/gpu_check_extra.py "$OUT" ${PARTS:-}
