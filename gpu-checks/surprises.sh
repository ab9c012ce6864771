#!/usr/bin/env bash
# The GPU checks of Ctrl-C and of the tutorial's warnings, on the GPU machine, from the repository
# root: installs the wheel carried in .carry/wheels (gpu-checks/gpu-wheel.sh: the machine's PyTorch
# Python, $PY), then runs gpu-checks/ctrl_c.py (six Ctrl-C cases of the reported sweep) and
# gpu-checks/tutorial_warnings.py (examples/tutorial.py, its warnings counted). Results in $OUT.
#   OUT=/some/dir gpu-checks/surprises.sh [--runs N]
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:?set OUT}"
. gpu-checks/gpu-wheel.sh
nvidia-smi -L
status=0
"$PY" gpu-checks/ctrl_c.py "$OUT/ctrl_c" "$@" || status=1
"$PY" gpu-checks/tutorial_warnings.py "$OUT/tutorial" || status=1
exit $status
