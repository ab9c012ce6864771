#!/usr/bin/env bash
# Issue 6 on the GPU machine: backend="ncu" through the kprof wheel carried in .carry/wheels
# (scripts/build-carry.sh), installed into a private folder as scripts/gpu-check-python.sh does.
# Run from the repo root: OUT=dir scripts/gpu-check-ncu.sh   (target: under 3 minutes)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:?set OUT}"
mkdir -p "$OUT"
PY="${PY:-/opt/torch/.venv/bin/python3}"
SITE=/tmp/kprof-site
rm -rf "$SITE"
"$PY" -m pip install -q --no-index --no-deps --no-compile --target "$SITE" .carry/wheels/kprof-*.whl || exit 2
export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
# ncu: KPROF_NCU if set, else PATH, else /usr/local/cuda/bin (kprof's own search).
export PATH="$PATH:/usr/local/cuda/bin"
ncu --version 2>&1 | tail -1
PYTHONUNBUFFERED=1 "$PY" scripts/gpu-check-ncu.py "$OUT"
rc=$?
ls -la "$OUT" | grep -v '\.ncu-rep$' | tail -n 30
exit $rc
