#!/usr/bin/env bash
# `kprof run` on nested NVTX ranges, ON the GPU machine from the repo root, with the binaries of
# scripts/build-carry.sh (.carry/bin/kprof and libkprof_inject.so next to it):
#
#     gpu-checks/nested_ranges.sh OUT
#
# The program (gpu-checks/nested_ranges_app.py, PyTorch) has three user ranges, 5 occurrences
# each: `sort16m` around torch.sort of 16M floats (CUB opens its own range inside), `conv` around a
# cuDNN convolution, `own` nesting two levels of its own (`own/level1/level2`). Runs:
#   records/    kprof run (defaults: CUPTI records, --nvtx-nesting inclusive)
#   innermost/  kprof run --nvtx-nesting innermost (each kernel once, in its innermost range)
#   counters/   kprof run --durations counters (Nsight Compute's gpu__time_duration, kernel replay)
#   ncu-<range>.csv  ncu --nvtx --nvtx-include '<range>/' --metrics gpu__time_duration.sum
#               --cache-control none --clock-control none --csv --page raw (the reference: every
#               kernel launched inside the range)
# then gpu-checks/nested_ranges_verdict.py OUT prints the verdict table: each outer range of the
# counters run within 1 % of ncu's sum of its kernels, and in the records run every range's total
# equal to its SelfNs plus its children's totals. Each command's stdout/stderr is kept in OUT.
# About 3 minutes. KPROF, PY and NCU override the paths below.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${1:?give the output folder}"
. gpu-checks/out-setup.sh
PY="${PY:-/opt/torch/.venv/bin/python3}"
NCU="${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}"
APP=$PWD/gpu-checks/nested_ranges_app.py

# krun NAME ARGS...: kprof run --out OUT/NAME ARGS -- PY APP, output in OUT/NAME.out/.err.
krun() {
    local name=$1; shift
    echo "== $name: kprof run $* -- python nested_ranges_app.py"
    timeout 300 "$KPROF" run --out "$OUT/$name" "$@" -- "$PY" "$APP" > "$OUT/$name.out" 2> "$OUT/$name.err"
    local rc=$?
    echo "exit $rc"; [ $rc -eq 0 ] || { fail "$name: exit $rc"; tail -20 "$OUT/$name.err"; }
    cat "$OUT/$name.out"
    grep -E '^kprof: (error|warning)' "$OUT/$name.err" | head -10
}

[ -x "$KPROF" ] && [ -f "$(dirname "$KPROF")/libkprof_inject.so" ] || { echo "run scripts/build-carry.sh first"; exit 2; }
echo "built from $(cat "$(dirname "$KPROF")/BUILT_FROM" 2>/dev/null || echo '?')"
nvidia-smi -L 2>/dev/null || true
"$NCU" --version 2>&1 | tail -1

krun records
krun innermost --nvtx-nesting innermost
krun counters --durations counters
for range in sort16m conv own; do
    echo "== ncu: $range"
    timeout 300 "$NCU" --nvtx --nvtx-include "$range/" --metrics gpu__time_duration.sum \
        --cache-control none --clock-control none --csv --page raw --print-units base \
        "$PY" "$APP" > "$OUT/ncu-$range.csv" 2> "$OUT/ncu-$range.err"
    rc=$?; echo "exit $rc"; [ $rc -eq 0 ] || { fail "ncu $range: exit $rc"; tail -5 "$OUT/ncu-$range.err"; }
done
"$PY" gpu-checks/nested_ranges_verdict.py "$OUT" | tee "$OUT/verdict.txt"
[ "${PIPESTATUS[0]}" -eq 0 ] || fail "verdict"
echo "== nested ranges check: $([ $status -eq 0 ] && echo PASS || echo FAIL)"
exit $status
