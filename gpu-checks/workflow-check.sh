#!/usr/bin/env bash
# The GPU checks of the CI summaries, the pytest plugin, notebooks and timelines, on a machine with
# an NVIDIA GPU and PyTorch: installs the wheel carried in .carry/wheels (gpu-checks/gpu-wheel.sh) and
# runs gpu-checks/workflow_check.py. Run from the repo root:
#     OUT=/tmp/workflow-check gpu-checks/workflow-check.sh
# Prints one PASS/FAIL line per part and leaves the files (trace, store, summaries) in $OUT.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:?set OUT}"
. gpu-checks/gpu-wheel.sh
"$PY" gpu-checks/workflow_check.py "$OUT"
