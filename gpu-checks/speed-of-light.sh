#!/usr/bin/env bash
# On the GPU machine, from the repo root: the speed-of-light check (gpu-checks/speed_of_light.py)
# through the wheel carried in .carry/wheels (scripts/build-carry.sh), installed into a private
# folder by gpu-checks/gpu-wheel.sh, with the machine's PyTorch Python and ncu.
#   gpu-checks/speed-of-light.sh OUT          (a few minutes: ncu's replay of step 6 dominates)
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${1:?usage: gpu-checks/speed-of-light.sh OUT}"
. gpu-checks/gpu-wheel.sh
. gpu-checks/ncu-on-path.sh
"$PY" gpu-checks/speed_of_light.py "$OUT" 2>&1 | tee "$OUT/speed-of-light.log"
rc=${PIPESTATUS[0]}
ls -la "$OUT" | grep -v '\.ncu-rep$' | tail -n 30
exit "$rc"
