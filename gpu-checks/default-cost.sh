#!/usr/bin/env bash
# What the default durations cost on the GPU machine, by phase, against the same work without a
# profiler and nsight-python 0.9.6 (when carried), from the repo root after scripts/build-carry.sh:
#
#     gpu-checks/default-cost.sh OUT [PART...]    # parts: plain split trace small large seed (all by default)
#
# Every result line (`COST {json}`, `TRUTH {json}`) goes to OUT/cost.log.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${1:?give OUT}"; shift
PARTS=" ${*:-plain split trace small large seed} "
PY=/opt/torch/.venv/bin/python3
LOG="$OUT/cost.log"
mkdir -p "$OUT"; : > "$LOG"
has() { case "$PARTS" in *" $1 "*) return 0;; esac; return 1; }
"$PY" -m pip install -q --no-index --no-deps --no-compile --force-reinstall .carry/wheels/kprof-*.whl >/dev/null 2>&1 \
    || { echo "could not install the kprof wheel" | tee -a "$LOG"; exit 1; }
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv | tee -a "$LOG"
run() { echo "== ${KPROF_ONE_PASS:+KPROF_ONE_PASS=$KPROF_ONE_PASS }$* ($(date +%T))" | tee -a "$LOG"; timeout 300 "$PY" "$@" 2>&1 | grep -E '^(COST|TRUTH|BENCH|kprof|Traceback|[A-Za-z]*Error)' | tee -a "$LOG"; }
C=gpu-checks/default_cost.py
if has plain; then run $C plain; fi
if has split; then run $C split; KPROF_ONE_PASS=off run $C split; run $C split records; fi
if has trace; then run $C trace; fi
if has small; then run $C small 200; KPROF_ONE_PASS=off run $C small 200; run $C small 200 records; fi
if has large; then run benches/large_sweep.py --source records; KPROF_ONE_PASS=off run benches/large_sweep.py; fi
if has seed; then
    NS_SITE=/tmp/nsight-site
    "$PY" -m pip install -q --no-index --no-deps --no-compile --target "$NS_SITE" .carry/wheels-extra/*.whl >/dev/null 2>&1 || NS_SITE=
    [ -n "$NS_SITE" ] && PYTHONPATH="$NS_SITE:/opt/nvidia/nsight-compute/2025.3.1/extras/python:${PYTHONPATH:-}" \
        run scripts/gpu_check_truth.py sweep-nsight
fi
echo "== done ($(date +%T))" | tee -a "$LOG"
