#!/usr/bin/env bash
# Runs kprof's aggregate benchmark and the pandas baseline on the same shape of data
# (10,000,000 samples in 10,000 series) and prints samples/s and the ratio to pandas.
# Usage (from the repository root): benches/run_aggregate_bench.sh
set -euo pipefail
cd "$(dirname "$0")/.."

rust_log=$(mktemp)
py_log=$(mktemp)
trap 'rm -f "$rust_log" "$py_log"' EXIT

echo "== kprof (cargo bench -p kprof-core --bench aggregate)"
cargo bench -q -p kprof-core --bench aggregate | tee "$rust_log"
echo "== pandas (benches/aggregate_vs_pandas.py)"
python3 benches/aggregate_vs_pandas.py | tee "$py_log"

field() { grep '^RESULT' "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
rust=$(field "$rust_log" samples_per_s)
pandas=$(field "$py_log" samples_per_s)
ratio=$(field "$rust_log" peak_ratio)

echo
printf '%-8s %16s %14s\n' tool samples/s "vs pandas"
awk -v r="$rust" -v p="$pandas" 'BEGIN {
  printf "%-8s %16.0f %13.2fx\n", "kprof", r, r / p;
  printf "%-8s %16.0f %13.2fx\n", "pandas", p, 1.0;
}'
echo "kprof peak RSS / raw data: $ratio"
