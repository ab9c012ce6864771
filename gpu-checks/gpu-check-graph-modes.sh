#!/usr/bin/env bash
# GPU check: how each way of timing CUDA graph launches reads, through the Rust API
# (truth_check's graph cases), the Python door (torch graphs captured BEFORE kprof's session, the
# case that crashes CUPTI 13.0 with graph records) and `kprof run` on graph_app.cu. ON the H200
# after scripts/build-carry.sh; every result line is `TRUTH {json}` in OUT/truth.log.
#
#     gpu-checks/gpu-check-graph-modes.sh OUT
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${1:?give OUT}"
mkdir -p "$OUT"
BIN=.carry/bin
PY=/opt/torch/.venv/bin/python3
LOG="$OUT/truth.log"
: > "$LOG"
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib:${LD_LIBRARY_PATH:-}"
source gpu-checks/gpu-wheel.sh
MODES="${MODES:-graph nodes}"   # KPROF_GRAPH_TRACE values, or KPROF_KERNEL_TRACE:KPROF_GRAPH_TRACE pairs
/usr/local/cuda/bin/nvcc -O2 -arch=sm_90 -o "$OUT/graph_app" .carry/cases/graph_app.cu -ldl > /dev/null 2>&1
"$OUT/graph_app" | awk '/GRAPH_EVENTS_MEDIAN_US/ {printf "TRUTH {\"mode\": \"graph_app-plain\", \"ns\": %f}\n", $2 * 1000}' | tee -a "$LOG"
timeout 60 "$BIN/truth_check" events 2>&1 | grep '"graph' | tee -a "$LOG"
timeout 60 "$PY" gpu-checks/gpu_check_truth.py refs 2>&1 | grep '"graph' | tee -a "$LOG"
for mode in $MODES; do
    case $mode in *:*) trace=${mode%%:*}; g=${mode#*:};; *) trace=; g=$mode;; esac
    export KPROF_KERNEL_TRACE=$trace
    echo "== KPROF_KERNEL_TRACE=$trace KPROF_GRAPH_TRACE=$g ($(date +%T))" | tee -a "$LOG"
    env KPROF_GRAPH_TRACE=$g timeout 60 "$BIN/truth_check" kprof default application 2>&1 \
        | grep -E '"(graph|mixed|_warn)' | cut -c1-600 | tee -a "$LOG"
    # Torch graphs captured before kprof's session (the case that crashed CUPTI 13.0 with graph
    # records), then after it (LATE_CAPTURE=1).
    for late in "" 1; do
        for c in graph60 graph2stream mixed; do
            env KPROF_GRAPH_TRACE=$g LATE_CAPTURE=$late timeout 60 "$PY" -X faulthandler \
                gpu-checks/gpu_check_truth.py case $c 2>&1 | tail -n 4 | cut -c1-900 | tee -a "$LOG"
        done
    done
    rm -rf "$OUT/run"
    env KPROF_GRAPH_TRACE=$g timeout 60 "$BIN/kprof" run --out "$OUT/run" -- "$OUT/graph_app" \
        2>&1 | grep -E "GRAPH_EVENTS|^graph|^cuda-graph" | sed "s/^/kprof-run $mode /" | tee -a "$LOG"
done
