#!/usr/bin/env bash
# What the default durations cost on the GPU machine, against the same work without a profiler and
# nsight-python 0.9.6 (when carried), from the repo root after scripts/build-carry.sh:
#
#     gpu-checks/default-cost.sh OUT [PART...]   # parts: split trace small large seed step6 (all by default)
#
# split and trace: gpu-checks/default_cost.py (where the seed sweep's time goes, by phase, one pass
# on and off; what a benchmark leaves behind in the process); small, large, seed, step6: the
# benchmarks of benches/. Every result line (`COST {json}`, `BENCH {json}`, `TRUTH {json}`) and
# each benchmark's table go to OUT/cost.log.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${1:?give OUT}"; shift
PARTS=" ${*:-split trace small large seed step6} "
PY=/opt/torch/.venv/bin/python3
LOG="$OUT/cost.log"
mkdir -p "$OUT"; : > "$LOG"
has() { case "$PARTS" in *" $1 "*) return 0;; esac; return 1; }
"$PY" -m pip install -q --no-index --no-deps --no-compile --force-reinstall .carry/wheels/kprof-*.whl >/dev/null 2>&1 \
    || { echo "could not install the kprof wheel" | tee -a "$LOG"; exit 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv | tee -a "$LOG"
run() { echo "== ${KPROF_ONE_PASS:+KPROF_ONE_PASS=$KPROF_ONE_PASS }$* ($(date +%T))" | tee -a "$LOG"; timeout 300 "$PY" "$@" 2>&1 | tee -a "$LOG" | tail -n 12; }
NS_SITE=/tmp/nsight-site
"$PY" -m pip install -q --no-index --no-deps --no-compile --target "$NS_SITE" .carry/wheels-extra/*.whl >/dev/null 2>&1 || NS_SITE=
NS_PATH=(); [ -n "$NS_SITE" ] && NS_PATH=(--nsight-path "$NS_SITE" --nsight-path /opt/nvidia/nsight-compute/2025.3.1/extras/python)
C=gpu-checks/default_cost.py
if has split; then run $C plain; run $C split; KPROF_ONE_PASS=off run $C split; run $C split records; fi
if has trace; then run $C trace; fi
if has small; then run benches/small_kernels.py --source records; KPROF_ONE_PASS=off run benches/small_kernels.py --configs 500; fi
if has large; then run benches/large_sweep.py --source records; KPROF_ONE_PASS=off run benches/large_sweep.py; fi
if has seed; then run benches/seed_sweep_vs_nsight.py "${NS_PATH[@]}"; fi
if has step6; then run benches/step6_vs_nsight.py "${NS_PATH[@]}" --repeats 2; fi
echo "== done ($(date +%T))" | tee -a "$LOG"
