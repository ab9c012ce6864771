#!/usr/bin/env bash
# Captures real Nsight Compute exports on the GPU machine for kprof's ncu fixtures.
# Run ON the H200 from the repository root, with $OUT an existing directory:
#
#   OUT=/some/dir bash gpu-checks/ncu-capture.sh
#
# Uses ncu at $NCU (default /usr/local/cuda/bin/ncu) and python at $PY (default
# /opt/torch/.venv/bin/python3, with torch). Runs tests/fixtures/ncu-csv-exports/capture_program.py
# under ncu with --clock-control none, both cache modes, the metrics below, and exports each report
# with `ncu --import REP --csv --page raw --print-units base` under LC_ALL=C. Keeps the
# .ncu-rep files, the logs and the CSVs. Target: well under 3 minutes.
#
# Files in $OUT:
#   summary.txt                         versions, NVTX method, timings, exit codes, checks
#   ncu-version.txt, nvtx-method.txt
#   dashdash.log                        does ncu accept `--` before the program?
#   h200-kprof-cache-{all,none}.{ncu-rep,log,csv,expected.txt,export.err}
#   h200-kprof-cache-all-narrowed.csv   the same report exported with --metrics (narrowed)
#   h200-plain.{ncu-rep,log,csv}        default-domain torch ranges, no NVTX filter
set -uo pipefail

OUT="${OUT:?set OUT to the output directory}"
NCU="${NCU:-/usr/local/cuda/bin/ncu}"
PY="${PY:-/opt/torch/.venv/bin/python3}"
PROG="tests/fixtures/ncu-csv-exports/capture_program.py"
METRICS="gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed"
mkdir -p "$OUT"
S="$OUT/summary.txt"
: > "$S"
say() { echo "$*" | tee -a "$S"; }
t0=$(date +%s.%N)
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}'; }

say "== ncu-capture $(date -u +%FT%TZ) host=$(hostname)"
"$NCU" --version > "$OUT/ncu-version.txt" 2>&1; say "ncu --version rc=$?: $(tr '\n' ' ' < "$OUT/ncu-version.txt")"
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv,noheader >> "$S" 2>&1
"$PY" -c "import torch,sys; print('torch', torch.__version__, 'python', sys.version.split()[0])" >> "$S" 2>&1
"$PY" -c "import nvtx; print('nvtx pypi', getattr(nvtx,'__version__','?'))" >> "$S" 2>&1 || say "nvtx pypi: not installed"

METHOD=$("$PY" "$PROG" --detect 2>>"$S" | tail -1)
echo "$METHOD" > "$OUT/nvtx-method.txt"
say "NVTX method: $METHOD"
if [ "$METHOD" = "torch-default-domain" ]; then
    FILTER=()            # keyed names in the default domain: profile everything in ranges
else
    FILTER=(--nvtx-include "regex:kprof@.+/")
fi

# Does ncu accept `--` between its options and the program? (kprof's argv uses it.)
t=$(date +%s.%N)
"$NCU" --cache-control all --clock-control none --metrics gpu__time_duration.sum -- "$PY" -c "print('dashdash-ok')" > "$OUT/dashdash.log" 2>&1
rc=$?
if [ $rc -eq 0 ] && grep -q dashdash-ok "$OUT/dashdash.log"; then SEP=(--); say "CHECK ncu accepts '--': yes ($(elapsed "$t") s)"; else SEP=(); say "CHECK ncu accepts '--': NO (rc=$rc; see dashdash.log)"; fi

capture_kprof() { # $1 = all|none
    local name="h200-kprof-cache-$1" t rc
    t=$(date +%s.%N)
    "$NCU" --log-file "$OUT/$name.log" --cache-control "$1" --clock-control none --replay-mode kernel \
        --target-processes all --nvtx "${FILTER[@]}" --metrics "$METRICS" -f -o "$OUT/$name.ncu-rep" \
        "${SEP[@]}" "$PY" "$PROG" kprof "$OUT/$name.expected.txt" > "$OUT/$name.stdout" 2>&1
    rc=$?
    say "profile cache=$1 rc=$rc wall=$(elapsed "$t") s kernels=$(grep -c '==PROF== Profiling' "$OUT/$name.log" 2>/dev/null)"
    t=$(date +%s.%N)
    LC_ALL=C LANG=C "$NCU" --import "$OUT/$name.ncu-rep" --csv --page raw --print-units base \
        > "$OUT/$name.csv" 2> "$OUT/$name.export.err"
    say "export cache=$1 rc=$? wall=$(elapsed "$t") s rows=$(grep -c '^"' "$OUT/$name.csv")"
}
capture_kprof all
capture_kprof none

t=$(date +%s.%N)
LC_ALL=C LANG=C "$NCU" --import "$OUT/h200-kprof-cache-all.ncu-rep" --csv --page raw --print-units base \
    --metrics "$METRICS,device__attribute_display_name,device__attribute_clock_rate,device__attribute_memory_clock_rate" \
    > "$OUT/h200-kprof-cache-all-narrowed.csv" 2>> "$S"
say "export narrowed rc=$? wall=$(elapsed "$t") s"

# A plain ncu report: default-domain torch ranges, no filter, kernels outside ranges too.
t=$(date +%s.%N)
"$NCU" --log-file "$OUT/h200-plain.log" --cache-control all --clock-control none --nvtx \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum --launch-count 60 -f -o "$OUT/h200-plain.ncu-rep" \
    "${SEP[@]}" "$PY" "$PROG" plain "$OUT/h200-plain.unused" > "$OUT/h200-plain.stdout" 2>&1
say "profile plain rc=$? wall=$(elapsed "$t") s"
LC_ALL=C LANG=C "$NCU" --import "$OUT/h200-plain.ncu-rep" --csv --page raw --print-units base \
    > "$OUT/h200-plain.csv" 2>> "$S"
say "export plain rc=$? rows=$(grep -c '^"' "$OUT/h200-plain.csv")"

# What the NVTX cells look like (nesting order, two domains), for the README.
say "--- first NVTX cells (kprof cache=all):"
"$PY" - "$OUT/h200-kprof-cache-all.csv" >> "$S" 2>&1 <<'EOF'
import csv, sys
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"'))]
h = rows[0]
pp = next((i for i, c in enumerate(h) if 'Push/Pop' in c), None)
se = next((i for i, c in enumerate(h) if 'Start/Stop' in c), None)
print('header:', h[:14], '... metrics:', [c for c in h if '__' in c][:12])
print('units :', rows[1][-6:])
for r in rows[2:]:
    if pp is not None and ('outer' in r[pp] or 'user_inner' in r[pp]):
        print('NVTX  :', repr(r[pp]), '| start/end:', repr(r[se]) if se is not None else None, '|', r[h.index('Kernel Name')][:60])
print('rows  :', len(rows) - 2)
EOF
say "total wall=$(elapsed "$t0") s"
ls -la "$OUT" >> "$S"
