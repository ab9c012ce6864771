#!/usr/bin/env bash
# The scale-out on the GPU machine (one GPU): installs the kprof wheel carried in .carry/wheels (built
# here by scripts/build-carry.sh) into a private folder and runs gpu-checks/gpu_check_scaleout.py: the
# seed's 5-size matmul sweep in one process, on one worker (devices=[0]), on two workers sharing
# GPU 0 (devices=[0, 0], also with runs_per_task=5) and with a worker that SIGKILLs itself once;
# prints the medians side by side with their differences and a pass/fail table. Run from the repo
# root: OUT=dir gpu-checks/gpu-check-scaleout.sh   (also part `scaleout` of gpu-checks/run.sh)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:?set OUT}"
. gpu-checks/gpu-wheel.sh
nvidia-smi -L
nvidia-smi --query-gpu=name,uuid,clocks.sm,temperature.gpu,power.draw --format=csv
"$PY" gpu-checks/gpu_check_scaleout.py "$OUT"
