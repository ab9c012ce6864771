#!/usr/bin/env bash
# What `kprof run --metrics` costs against Nsight Compute (the cost of `kprof run --metrics`), ON the H200 from the repo
# root after scripts/build-carry.sh filled .carry/bin/ (kprof + libkprof_inject.so):
#
#     gpu-checks/gpu-check-run-cost.sh OUT [BASELINE_RAW_CSV]     # OUT defaults to $OUT
#
# The program is the cost of `kprof run --metrics`'s (gpu-checks/gpu-run/run_cost_app.py: 3 randn, 3 warm-up fp32 matmuls
# 4096, then 30 x an NVTX range `gemm` around a 4096 matmul and `scale` around `x * 2.0` over 64M
# floats: 66 kernels). Measured, each once, wall clock around the whole command:
#   plain                         python app.py (after one untimed warm-up run)
#   kprof-timing                  kprof run --out D -- python app.py
#   kprof-metrics2                kprof run --verbose --metrics dram__bytes_read.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed
#                                 (the cost of `kprof run --metrics`'s call plus --verbose: the time split is printed and kept;
#                                 one counter launch that also gives the durations)
#   kprof-metrics2-records        the same with --durations records (a timing launch, then the counter launch)
#   ncu-metrics2-all              ncu --nvtx --metrics <the same>,gpu__time_duration.sum -o R python app.py   (the cost of `kprof run --metrics`'s)
#   ncu-metrics2-none             the same with --cache-control none (kprof's counter launch does not
#                                 flush either: the acceptance ratio is against this one)
#   ncu-dram-none                 ncu --nvtx --cache-control none --metrics dram__bytes_read.sum -o R   (the cost of `kprof run --metrics`'s)
#   kprof-dram                    kprof run --verbose --metrics dram__bytes_read.sum (one pass: no replay)
#   kprof-metrics2-iters10[-extra]  kprof run --verbose --metrics <the two> on APP_ITERS=10, without and
#                                 with APP_EXTRA_MB=4096 held on the device: how kernel replay's cost per
#                                 kernel and pass grows with the device memory a program holds
# Every measurement prints one `RUNCOST {json}` line (wall, exit code, the program's APP line,
# kprof's time split, per region and occurrence the values of each metric, ncu's passes per
# kernel); then per region kprof against ncu (same metrics, each cache policy), the timing launch
# against `kprof run` without --metrics, with BASELINE_RAW_CSV (a kprof-metrics2-raw.csv of an
# earlier run) the cost of `kprof run --metrics`'s value criterion (every occurrence within 0.5 % for bytes, 0.5 point for
# percentages), and a summary line with the acceptance ratios (target <= 0.7).
#
# Files in OUT: runcost.log (everything printed), runcost.jsonl (the RUNCOST lines),
# kprof-metrics2-raw.csv (the baseline for a later run), kprof-metrics2-time-split.json, and
# work.tar.gz (every kprof output folder, ncu report and export, stdout/stderr of each command).
# About 3 minutes on the H200; no network. KPROF, PY and NCU override the paths above.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-${OUT:?give OUT}}"
BASELINE="${2:-}"
. gpu-checks/out-setup.sh
PY="${PY:-/opt/torch/.venv/bin/python3}"
NCU="${NCU:-/usr/local/cuda/bin/ncu}"
APP=$PWD/gpu-checks/gpu-run/run_cost_app.py
HELP=$PWD/gpu-checks/gpu-run/run_cost.py
HPY=$(command -v python3 || echo "$PY")
M1=dram__bytes_read.sum
M2=dram__bytes_read.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed
W=$(mktemp -d /tmp/runcost.XXXXXX)
LOG=$OUT/runcost.log
J=$OUT/runcost.jsonl
: > "$J"

[ -x "$KPROF" ] && [ -f "$(dirname "$KPROF")/libkprof_inject.so" ] || { echo "run scripts/build-carry.sh first"; exit 2; }

# measure NAME TIMEOUT CMD...: runs CMD in $W with stdout/stderr in $W/NAME.{out,err}; sets WALL and RC.
measure() {
    local name=$1 limit=$2 t0 t1
    shift 2
    t0=$(date +%s.%N)
    (cd "$W" && timeout "$limit" "$@" > "$W/$name.out" 2> "$W/$name.err")
    RC=$?
    t1=$(date +%s.%N)
    WALL=$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.3f", b - a}')
    echo "== $name: $WALL s, exit $RC: $*"
    [ "$RC" -eq 0 ] || { fail "$name exit $RC"; tail -5 "$W/$name.err"; }
}
# line NAME ARGS...: the RUNCOST line of the last measurement.
line() {
    local name=$1
    shift
    "$HPY" "$HELP" line "$name" "$WALL" "$RC" --stdout "$W/$name.out" "$@" | tee -a "$J"
}
# ncu_export NAME: the report's raw page as CSV ($W/NAME.csv), untimed.
ncu_export() {
    LC_ALL=C LANG=C "$NCU" --import "$W/$1.ncu-rep" --csv --page raw --print-units base > "$W/$1.csv" 2> "$W/$1.export.err" \
        || fail "ncu export of $1"
}

main() {
echo "== run cost check $(date -u +%FT%TZ) host=$(hostname) kprof built from $(cat .carry/bin/BUILT_FROM 2>/dev/null || echo '?')"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,memory.used --format=csv,noheader
"$NCU" --version | tail -1
"$PY" -c "import torch, sys; print('torch', torch.__version__, 'python', sys.version.split()[0])"
echo "passes on this GPU: $M1 $("$KPROF" metrics --passes "$M1" 2>&1); $M2 $("$KPROF" metrics --passes "$M2" 2>&1)"

echo "== warm-up (untimed)"
(cd "$W" && timeout 120 "$PY" "$APP" > "$W/warmup.out" 2>&1) || fail "warm-up run"
tail -1 "$W/warmup.out"

measure plain 120 "$PY" "$APP"
line plain --cmd "python app.py"

measure kprof-timing 120 "$KPROF" run --out "$W/k-timing" -- "$PY" "$APP"
line kprof-timing --cmd "kprof run --out D -- python app.py" --split "$W/k-timing/time-split.json" \
    --kprof-raw "$W/k-timing/raw.csv" --metrics "$M2"

measure kprof-metrics2 240 "$KPROF" run --verbose --metrics "$M2" --out "$W/k-m2" -- "$PY" "$APP"
line kprof-metrics2 --cmd "kprof run --verbose --metrics $M2 -- python app.py" --split "$W/k-m2/time-split.json" \
    --kprof-raw "$W/k-m2/raw.csv" --metrics "$M2"
sed -n '/time split (wall clock)/,/^  total/p' "$W/kprof-metrics2.err"

measure kprof-metrics2-records 240 "$KPROF" run --verbose --durations records --metrics "$M2" --out "$W/k-m2r" -- "$PY" "$APP"
line kprof-metrics2-records --cmd "kprof run --verbose --durations records --metrics $M2 -- python app.py" \
    --split "$W/k-m2r/time-split.json" --kprof-raw "$W/k-m2r/raw.csv" --metrics "$M2"

measure ncu-metrics2-all 240 "$NCU" --nvtx --metrics "$M2,gpu__time_duration.sum" -o "$W/ncu-metrics2-all" "$PY" "$APP"
ncu_export ncu-metrics2-all
line ncu-metrics2-all --cmd "ncu --nvtx --metrics $M2,gpu__time_duration.sum -o R python app.py" \
    --ncu-csv "$W/ncu-metrics2-all.csv" --metrics "$M2,gpu__time_duration.sum"

measure ncu-metrics2-none 240 "$NCU" --nvtx --cache-control none --metrics "$M2,gpu__time_duration.sum" \
    -o "$W/ncu-metrics2-none" "$PY" "$APP"
ncu_export ncu-metrics2-none
line ncu-metrics2-none --cmd "ncu --nvtx --cache-control none --metrics $M2,gpu__time_duration.sum -o R python app.py" \
    --ncu-csv "$W/ncu-metrics2-none.csv" --metrics "$M2,gpu__time_duration.sum"

measure ncu-dram-none 120 "$NCU" --nvtx --cache-control none --metrics "$M1" -o "$W/ncu-dram-none" "$PY" "$APP"
ncu_export ncu-dram-none
line ncu-dram-none --cmd "ncu --nvtx --cache-control none --metrics $M1 -o R python app.py" \
    --ncu-csv "$W/ncu-dram-none.csv" --metrics "$M1"

measure kprof-dram 120 "$KPROF" run --verbose --metrics "$M1" --out "$W/k-dram" -- "$PY" "$APP"
line kprof-dram --cmd "kprof run --verbose --metrics $M1 -- python app.py" --split "$W/k-dram/time-split.json" \
    --kprof-raw "$W/k-dram/raw.csv" --metrics "$M1"
sed -n '/time split (wall clock)/,/^  total/p' "$W/kprof-dram.err"

measure kprof-metrics2-iters10 180 env APP_ITERS=10 "$KPROF" run --verbose --metrics "$M2" --out "$W/k-i10" -- "$PY" "$APP"
line kprof-metrics2-iters10 --cmd "APP_ITERS=10 kprof run --verbose --metrics $M2" --split "$W/k-i10/time-split.json"
measure kprof-metrics2-iters10-extra 180 env APP_ITERS=10 APP_EXTRA_MB=4096 "$KPROF" run --verbose --metrics "$M2" \
    --out "$W/k-i10x" -- "$PY" "$APP"
line kprof-metrics2-iters10-extra --cmd "APP_ITERS=10 APP_EXTRA_MB=4096 kprof run --verbose --metrics $M2" \
    --split "$W/k-i10x/time-split.json"
sed -n '/time split (wall clock)/,/^  total/p' "$W/kprof-metrics2-iters10-extra.err"

echo "== values: kprof's counter launch against ncu (same metrics), per region"
for ncu in ncu-metrics2-none ncu-metrics2-all; do
    "$HPY" "$HELP" compare kprof-metrics2 "$ncu" "$J" --metrics "$M2" | tee -a "$J.cmp"
done
"$HPY" "$HELP" compare kprof-dram ncu-dram-none "$J" --metrics "$M1" | tee -a "$J.cmp"
echo "== durations: the timing launch of kprof-metrics2 against kprof run without --metrics; ncu's"
"$HPY" "$HELP" compare kprof-metrics2 kprof-timing "$J" --metrics gpu__time_duration.sum | tee -a "$J.cmp"
"$HPY" "$HELP" compare kprof-metrics2-records kprof-timing "$J" --metrics gpu__time_duration.sum | tee -a "$J.cmp"
"$HPY" "$HELP" compare kprof-metrics2 kprof-metrics2-records "$J" --metrics "$M2" | tee -a "$J.cmp"
"$HPY" "$HELP" compare kprof-metrics2 ncu-metrics2-none "$J" --metrics gpu__time_duration.sum | tee -a "$J.cmp"
grep '^RUNCOST' "$J.cmp" >> "$J"
rm -f "$J.cmp"

if [ -n "$BASELINE" ]; then
    echo "== values against the baseline $BASELINE (0.5 % bytes, 0.5 point percentages)"
    "$HPY" "$HELP" baseline "$W/k-m2/raw.csv" "$BASELINE" --metrics "$M2" | tee -a "$J" \
        || fail "values moved from the baseline"
    echo "-- (information) the one-pass launch's $M1 against the same baseline"
    "$HPY" "$HELP" baseline "$W/k-dram/raw.csv" "$BASELINE" --metrics "$M1" | tee -a "$J"
fi

echo "== summary"
"$HPY" "$HELP" summary "$J" | tee "$W/summary.txt"
grep '^RUNCOST' "$W/summary.txt" >> "$J"

cp -f "$W/k-m2/raw.csv" "$OUT/kprof-metrics2-raw.csv" 2>/dev/null || fail "no raw.csv from kprof-metrics2"
cp -f "$W/k-m2/time-split.json" "$OUT/kprof-metrics2-time-split.json" 2>/dev/null || fail "no time-split.json from kprof-metrics2"
tar czf "$OUT/work.tar.gz" -C "$W" . && rm -rf "$W"
ls -la "$OUT"
echo "== run cost check: $([ $status -eq 0 ] && echo 'all commands ran' || echo 'FAILURES above')"
return $status
}

main 2>&1 | tee "$LOG"
exit "${PIPESTATUS[0]}"
