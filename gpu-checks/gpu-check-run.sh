#!/usr/bin/env bash
# GPU check of `kprof run` (`kprof run`), ON the H200 from the repo root after scripts/build-carry.sh
# filled .carry/bin/ (kprof + libkprof_inject.so):
#
#     gpu-checks/gpu-check-run.sh [OUT]        # OUT defaults to $OUT
#
# 1. builds gpu-checks/gpu-run/nvtx_ranges.cu with nvcc (two NVTX ranges, kernels >= 50 us, CUDA
#    events around the same kernels) and runs it under `kprof run`: per-range durations must be
#    within 1% of the CUDA-event times (gpu-checks/gpu-run/check_ranges.py);
# 2. the same with a PyTorch script (torch.cuda.nvtx.range_push/pop);
# 3. `kprof compare` of two runs of (1): exit 0; against a slowed variant (SLOW=1.5): exit 1;
# 4. wall time of the PyTorch script with and without `kprof run`;
# 5. `kprof doctor`;
# 6. `kprof run --durations records --metrics dram__bytes_read.sum,gpu__time_duration.sum` on (1): the timing launch's
#    durations must still be within 1% of the CUDA events, and per range occurrence kprof's
#    dram__bytes_read.sum (counter launch, kernel replay, no L2 flush between kernels) must be
#    within 0.5% of ncu's sum over the range's kernels with `--cache-control all`
#    (gpu-checks/gpu-run/check_counters.py); the `--cache-control none` comparison is printed too
#    (information only). The program's kernels stream a 256 MB buffer (> the H200's L2), so the
#    cache mode should matter little. Also: an unknown metric name exits 2 before anything runs.
# 7. `kprof run --metrics gpu__time_duration.max` (one launch, --durations auto): the counter
#    launch's gpu__time_duration.max and its durations (gpu__time_duration.sum) per range
#    occurrence within 0.5% of ncu's (--cache-control none, no flush in either); and the PyTorch
#    script's counter launch matches
#    every kernel to a range and writes dram__bytes_read.sum rows.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-${OUT:?give OUT}}"
mkdir -p "$OUT"
KPROF=.carry/bin/kprof
NVCC=/usr/local/cuda/bin/nvcc
PY=/opt/torch/.venv/bin/python3
status=0
step() { echo "== $*"; }
fail() { echo "FAIL: $*"; status=1; }

[ -x "$KPROF" ] && [ -f .carry/bin/libkprof_inject.so ] || { echo "run scripts/build-carry.sh first"; exit 2; }

step "doctor"
"$KPROF" doctor --verbose | tee "$OUT/doctor.txt" || fail "doctor exit $?"

step "build nvtx_ranges.cu"
"$NVCC" -O2 -arch=sm_90 -o "$OUT/nvtx_ranges" gpu-checks/gpu-run/nvtx_ranges.cu || { fail "nvcc"; exit 1; }

step "1. CUDA C++ program under kprof run"
for i in 1 2; do
    "$KPROF" run --verbose --out "$OUT/cpp$i" -- "$OUT/nvtx_ranges" > "$OUT/cpp$i.stdout" 2> "$OUT/cpp$i.stderr"
    rc=$?; echo "kprof run exit $rc"; [ $rc -eq 0 ] || fail "kprof run cpp$i exit $rc"
    cat "$OUT/cpp$i.stderr"; grep -v '^EVENT' "$OUT/cpp$i.stdout"
    cat "$OUT"/cpp$i/procs/rep0/*.json
    python3 gpu-checks/gpu-run/check_ranges.py "$OUT/cpp$i/raw.csv" "$OUT/cpp$i.stdout" 1 || fail "cpp$i ranges vs CUDA events"
done

step "2. PyTorch script under kprof run"
"$KPROF" run --verbose --out "$OUT/torch" -- "$PY" gpu-checks/gpu-run/torch_nvtx.py > "$OUT/torch.stdout" 2> "$OUT/torch.stderr"
rc=$?; echo "kprof run exit $rc"; [ $rc -eq 0 ] || fail "kprof run torch exit $rc"
cat "$OUT/torch.stderr"; grep -v '^EVENT' "$OUT/torch.stdout"
cat "$OUT"/torch/procs/rep0/*.json
python3 gpu-checks/gpu-run/check_ranges.py "$OUT/torch/raw.csv" "$OUT/torch.stdout" 1 || fail "torch ranges vs CUDA events"

step "3. compare: two runs (expect exit 0), slowed variant (expect exit 1)"
"$KPROF" compare "$OUT/cpp1/raw.csv" "$OUT/cpp2/raw.csv" | tee "$OUT/compare-same.txt"
rc=${PIPESTATUS[0]}; echo "compare exit $rc"; [ $rc -eq 0 ] || fail "compare of two runs exit $rc"
SLOW=1.5 "$KPROF" run --quiet --out "$OUT/cpp-slow" -- "$OUT/nvtx_ranges" > /dev/null 2>&1
"$KPROF" compare "$OUT/cpp1/raw.csv" "$OUT/cpp-slow/raw.csv" --csv "$OUT/compare-slow.csv" | tee "$OUT/compare-slow.txt"
rc=${PIPESTATUS[0]}; echo "compare exit $rc"; [ $rc -eq 1 ] || fail "compare against the slowed variant exit $rc (want 1)"

step "4. PyTorch wall time with and without kprof run (3 each)"
for i in 1 2 3; do
    t0=$(date +%s.%N); "$PY" gpu-checks/gpu-run/torch_nvtx.py > /dev/null 2>&1; t1=$(date +%s.%N)
    "$KPROF" run --quiet --out "$OUT/torch-t$i" -- "$PY" gpu-checks/gpu-run/torch_nvtx.py > /dev/null 2>&1; t2=$(date +%s.%N)
    echo "plain $(awk "BEGIN{print $t1 - $t0}") s   under kprof run $(awk "BEGIN{print $t2 - $t1}") s" | tee -a "$OUT/timing.txt"
done

step "5. exit code pass-through and group-by kernel"
"$KPROF" run --quiet --out "$OUT/fail" -- "$PY" -c "import torch; torch.ones(1, device='cuda').sum().item(); raise SystemExit(7)"
rc=$?; echo "exit $rc"; [ $rc -eq 7 ] || fail "exit code not passed through ($rc)"
"$KPROF" run --group-by kernel --out "$OUT/bykernel" -- "$OUT/nvtx_ranges" > /dev/null || fail "group-by kernel"

step "6. hardware counters: kprof run --metrics vs ncu"
NCU=/usr/local/cuda/bin/ncu
"$KPROF" run --metrics dram__bytes_red.sum --out "$OUT/badmetric" -- "$OUT/nvtx_ranges" > /dev/null 2> "$OUT/badmetric.stderr"
rc=$?; cat "$OUT/badmetric.stderr"; echo "exit $rc"
[ $rc -eq 2 ] && grep -q "dram__bytes_read.sum" "$OUT/badmetric.stderr" || fail "unknown metric: exit $rc (want 2 naming the closest name)"
"$KPROF" run --verbose --durations records --metrics dram__bytes_read.sum,gpu__time_duration.sum --out "$OUT/counters" \
    -- "$OUT/nvtx_ranges" > "$OUT/counters.stdout" 2> "$OUT/counters.stderr"
rc=$?; echo "kprof run --metrics exit $rc"; [ $rc -eq 0 ] || fail "kprof run --metrics exit $rc"
cat "$OUT/counters.stderr"; grep -v '^EVENT' "$OUT/counters.stdout"
cat "$OUT"/counters/procs/rep0-counters/*.json
grep -c ',dram__bytes_read.sum,' "$OUT/counters/raw.csv" || fail "no dram__bytes_read.sum rows in raw.csv"
python3 gpu-checks/gpu-run/check_ranges.py "$OUT/counters/raw.csv" "$OUT/counters.stdout" 1 || fail "timing launch with --metrics vs CUDA events"
for cc in all none; do
    "$NCU" --clock-control none --cache-control $cc --metrics dram__bytes_read.sum --nvtx --csv --page raw \
        --print-units base "$OUT/nvtx_ranges" > "$OUT/ncu-$cc.csv" 2> "$OUT/ncu-$cc.stderr"
    rc=$?; echo "ncu --cache-control $cc exit $rc"; [ $rc -eq 0 ] || { fail "ncu ($cc) exit $rc"; tail -5 "$OUT/ncu-$cc.stderr"; }
    echo "-- kprof (counter launch, no flush) vs ncu --cache-control $cc"
    if [ $cc = all ]; then
        python3 gpu-checks/gpu-run/check_counters.py "$OUT/counters/raw.csv" "$OUT/ncu-$cc.csv" dram__bytes_read.sum 0.5 \
            || fail "dram__bytes_read.sum vs ncu --cache-control all"
    else
        python3 gpu-checks/gpu-run/check_counters.py "$OUT/counters/raw.csv" "$OUT/ncu-$cc.csv" dram__bytes_read.sum 0.5 --info
    fi
done

step "7. counter durations of the counter launch vs ncu; the PyTorch script's counter launch"
"$KPROF" run --verbose --metrics gpu__time_duration.max --out "$OUT/cdur" -- "$OUT/nvtx_ranges" \
    > "$OUT/cdur.stdout" 2> "$OUT/cdur.stderr"
rc=$?; echo "kprof run --metrics gpu__time_duration.max exit $rc"; [ $rc -eq 0 ] || fail "kprof run --metrics durations exit $rc"
"$NCU" --clock-control none --cache-control none --metrics gpu__time_duration.max,gpu__time_duration.sum --nvtx --csv --page raw \
    --print-units base "$OUT/nvtx_ranges" > "$OUT/ncu-dur.csv" 2> "$OUT/ncu-dur.stderr" || fail "ncu durations exit $?"
python3 gpu-checks/gpu-run/check_counters.py "$OUT/cdur/raw.csv" "$OUT/ncu-dur.csv" gpu__time_duration.max 0.5 \
    || fail "counter launch durations vs ncu"
# The default --durations auto took the durations from the same (only) counter launch.
python3 gpu-checks/gpu-run/check_counters.py "$OUT/cdur/raw.csv" "$OUT/ncu-dur.csv" gpu__time_duration.sum 0.5 \
    || fail "kprof run's durations (counter launch, --durations auto) vs ncu"
grep -q ',counters' "$OUT/cdur/raw.csv" || fail "no DurationSource counters in the single launch's raw.csv"
"$KPROF" run --verbose --metrics dram__bytes_read.sum --out "$OUT/torch-counters" \
    -- "$PY" gpu-checks/gpu-run/torch_nvtx.py > "$OUT/torch-counters.stdout" 2> "$OUT/torch-counters.stderr"
rc=$?; echo "kprof run --metrics torch exit $rc"; [ $rc -eq 0 ] || fail "kprof run --metrics torch exit $rc"
tail -5 "$OUT/torch-counters.stderr"
cat "$OUT"/torch-counters/procs/rep0-counters/*.json
n=$(grep -c ',dram__bytes_read.sum,' "$OUT/torch-counters/raw.csv"); echo "dram__bytes_read.sum rows: $n"
[ "${n:-0}" -gt 0 ] || fail "torch counter launch wrote no dram__bytes_read.sum rows"

echo "== run check: $([ $status -eq 0 ] && echo PASS || echo FAIL)"
exit $status
