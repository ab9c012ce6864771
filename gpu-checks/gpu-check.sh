#!/usr/bin/env bash
# kprof GPU check of the engine (checks a-g plus the performance benchmark). Run ON the GPU machine from
# the repo root, after scripts/build-carry.sh built .carry/bin/ on the dev machine:
#
#     OUT=/some/dir gpu-checks/gpu-check.sh        # or: gpu-checks/gpu-check.sh /some/dir
#
# It only reads GPU state: it never changes clocks, power limits or any other GPU setting.
# Output in $OUT: gpu-check.log (everything), summary-*.json (one per process), and
# gpu-check-results.tar.gz (raw CSV per check, the recorded CUPTI activity fixture, per-run logs).
# Exit status: 0 when every check passed, 1 otherwise.
set -uo pipefail

OUT="${OUT:-${1:-gpu-check-out}}"
BIN="${KPROF_BIN:-.carry/bin}"
RES="$OUT/results"
LOG="$OUT/gpu-check.log"
mkdir -p "$RES"
: > "$LOG"

say() { echo "$@" | tee -a "$LOG"; }
run_logged() { "$@" 2>&1 | tee -a "$LOG"; }

say "== kprof gpu-check $(date -u +%FT%TZ) on $(hostname)"
say "== binaries from commit $(cat "$BIN/BUILT_FROM" 2>/dev/null || echo '?') in $BIN"
run_logged nvidia-smi -L
run_logged nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,temperature.gpu,power.draw --format=csv
run_logged uname -r
say "$(ldd --version 2>&1 | head -1)"

# cudarc dlopens cuBLAS and NVRTC by bare name: put the directories holding them on LD_LIBRARY_PATH
# (without NVRTC the examples fall back to built-in PTX, JIT-compiled by the driver).
# (kprof itself finds libcuda and libcupti on its own and loads them by absolute path.)
LIBDIRS=""
for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/x86_64-linux/lib /usr/local/cuda-13.0/targets/x86_64-linux/lib \
         /opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib \
         /opt/torch/.venv/lib/python3.12/site-packages/nvidia/cublas/lib \
         /opt/torch/.venv/lib/python3.12/site-packages/nvidia/cuda_nvrtc/lib; do
    if ls "$d"/libcublas.so* "$d"/libnvrtc.so* 2>/dev/null | grep -q .; then
        LIBDIRS="${LIBDIRS:+$LIBDIRS:}$d"
    fi
done
export LD_LIBRARY_PATH="${LIBDIRS}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
say "== LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
say "== KPROF_CUPTI_PATH=${KPROF_CUPTI_PATH:-<unset: kprof searches mapped copy, CUDA_HOME, /usr/local/cuda, site-packages, loader default>}"
say "== libraries visible:"
for d in ${LIBDIRS//:/ } /usr/lib /usr/lib/x86_64-linux-gnu; do
    ls -1 "$d"/libcuda.so* "$d"/libcupti.so* "$d"/libcublas.so.* "$d"/libnvrtc.so.* 2>/dev/null | sed 's/^/   /' | tee -a "$LOG"
done

for b in gpu_check; do
    [ -x "$BIN/$b" ] || chmod +x "$BIN/$b" 2>/dev/null || true
    [ -x "$BIN/$b" ] || { say "missing $BIN/$b: run scripts/build-carry.sh on the dev machine first"; exit 2; }
done

status=0
# Three processes: kprof holds CUPTI for the life of a process, the benchmark's baselines must be
# taken before CUPTI starts, and the 100k-kernel check would make the activity fixture huge.
run_check() {
    local label="$1"; shift
    say ""
    say "== gpu_check $*${KPROF_RECORD_ACTIVITY:+ (recording activity to $KPROF_RECORD_ACTIVITY)}"
    timeout 400 "$BIN/gpu_check" "$RES" "$@" 2>&1 | tee "$RES/run-$label.log" | tee -a "$LOG"
    local rc=${PIPESTATUS[0]}
    say "== gpu_check $* exited with $rc"
    [ "$rc" -eq 0 ] || status=1
}
run_check bench bench
KPROF_RECORD_ACTIVITY="$RES/activity-checks.jsonl" run_check checks a b c d e g
run_check f f
run_check h h

cp -f "$RES"/summary-*.json "$OUT"/ 2>/dev/null || true
tar -C "$OUT" -czf "$OUT/gpu-check-results.tar.gz" results && rm -rf "$RES"

say ""
say "################ kprof GPU check: all tables ################"
tar -xzOf "$OUT/gpu-check-results.tar.gz" results/run-bench.log results/run-checks.log results/run-f.log results/run-h.log 2>/dev/null \
    | sed -n '/==== kprof GPU check ====/,/checks passed/p' | grep -v '^=\+ kprof GPU check =\+$' | tee -a "$LOG"
say "overall: $([ $status -eq 0 ] && echo PASS || echo FAIL)"
exit $status
