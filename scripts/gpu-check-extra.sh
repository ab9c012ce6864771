#!/usr/bin/env bash
# Issue 5 follow-ups through the installed wheel (scripts/gpu_check_extra.py): application-replay
# cost per kernel, and the fp16 matmul's DRAM bytes over 10 runs against ncu's application replay.
# Run from the repo root on the GPU machine: OUT=dir scripts/gpu-check-extra.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:?set OUT}"
mkdir -p "$OUT"
PY="${PY:-/opt/torch/.venv/bin/python3}"
SITE=/tmp/kprof-site
rm -rf "$SITE"
"$PY" -m pip install -q --no-index --no-deps --no-compile --target "$SITE" .carry/wheels/kprof-*.whl || exit 2
PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1 "$PY" scripts/gpu_check_extra.py "$OUT"
