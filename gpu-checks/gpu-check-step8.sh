#!/usr/bin/env bash
# The run conditions on the GPU machine: installs the kprof wheel carried in .carry/wheels into a private
# folder and runs the seed's step 8 checks (gpu-checks/gpu_check_step8.py): info collectors, thermal
# off/auto, per-run conditions, energy vs power x time on >= 1 s runs, the time/clock correlation,
# the fingerprint. Also part of gpu-checks/gpu-check-python.sh. Run from the repo root:
#   OUT=dir gpu-checks/gpu-check-step8.sh
# Build the wheel first (dev machine): scripts/build-carry.sh, or only the wheel:
#   rm -rf .carry/wheels && mkdir -p .carry/wheels && python3 -m pip wheel -q --no-deps -w .carry/wheels .
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:?set OUT}"
. gpu-checks/gpu-wheel.sh
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv
"$PY" gpu-checks/gpu_check_step8.py "$OUT"
