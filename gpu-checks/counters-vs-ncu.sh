#!/usr/bin/env bash
# GPU check of in-process counters (kprof::counters) against Nsight Compute, on the H200.
#
#   gpu-checks/counters-vs-ncu.sh [BIN] [OUT]
#
# BIN: the built example (default target/release/counters_check; build it on the dev
#      machine with `cargo build --release -p kprof-gpu-checks --bin counters_check`).
# OUT: results folder (default $OUT/counters-vs-ncu, else /tmp/counters-vs-ncu). The recordings
#      for tests/fixtures/h200-cupti-counter-images/ are written to
#      OUT/recordings/{kernel_replay,user_replay}.
#
# Steps: (1) the in-process check (tables, dram-bytes checks, per-kernel cost in kernel and
# user-range replay, dropped ranges);
# (2) the same launches without any profiler (--plain); (3) ncu with the 4 metrics on all kernels
# (--clock-control none --cache-control all), compared range by range with kprof's values;
# (4) ncu's cost for the 3-metric set on the 50 small kernels, with its fixed start-up measured
# by a run that profiles nothing.
set -uo pipefail
cd "$(dirname "$0")/.."
BIN=${1:-target/release/counters_check}
RES=${2:-${OUT:-/tmp}/counters-vs-ncu}
NCU=${NCU:-$(command -v ncu || echo /usr/local/cuda/bin/ncu)}
PY=${PY:-$(command -v python3 || echo /opt/torch/.venv/bin/python3)}
mkdir -p "$RES"
M4=gpu__time_duration.sum,dram__bytes_read.sum,dram__bytes_write.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed
M3=gpu__time_duration.sum,dram__bytes_read.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed
export LC_ALL=C
now() { date +%s.%N; }

echo "== 1. in-process (kprof::counters)"
"$BIN" "$RES/recordings" 2>&1 | tee "$RES/kprof.txt"
kprof_rc=${PIPESTATUS[0]}

echo "== 2. plain launches"
t0=$(now); "$BIN" --plain 2>&1 | tee "$RES/plain.txt"; t1=$(now)

if [ ! -x "$NCU" ]; then echo "no ncu at $NCU; skipping the comparison"; exit "$kprof_rc"; fi
echo "== 3. ncu, 4 metrics, all kernels"
t2=$(now)
"$NCU" --clock-control none --cache-control all --metrics "$M4" --csv --page details --print-units base \
    "$BIN" --plain > "$RES/ncu4.csv" 2> "$RES/ncu4.err"
t3=$(now)
echo "== 4. ncu, 3 metrics, the $((50)) small kernels (skip 8), and a run profiling nothing"
"$NCU" --clock-control none --cache-control all --metrics "$M3" --launch-skip 8 --csv --page details --print-units base \
    "$BIN" --plain > "$RES/ncu3.csv" 2> "$RES/ncu3.err"
t5=$(now)
"$NCU" --clock-control none --metrics "$M3" --launch-skip 100000 "$BIN" --plain > "$RES/ncu0.txt" 2>&1
t6=$(now)

"$PY" - "$RES" "$t0" "$t1" "$t2" "$t3" "$t5" "$t6" <<'PYEOF'
import csv, sys, os, collections
res = sys.argv[1]
t0, t1, t2, t3, t5, t6 = map(float, sys.argv[2:])
def ncu(path):
    rows = [l for l in open(path) if l.startswith('"')]
    out = collections.defaultdict(dict)
    for r in csv.DictReader(rows):
        v = r["Metric Value"].replace(",", "")
        if v in ("", "n/a"): continue
        out[int(r["ID"])][r["Metric Name"]] = float(v)
    return dict(sorted(out.items()))
def kprof(case):
    out = collections.defaultdict(dict)
    p = os.path.join(res, "recordings", case, "values.tsv")
    if not os.path.exists(p): return {}
    for i, line in enumerate(open(p)):
        if i == 0: continue
        idx, name, m, v, bits = line.rstrip("\n").split("\t")
        out[name][m] = float(v)
    return out
n4 = ncu(os.path.join(res, "ncu4.csv"))
print(f"\nncu profiled {len(n4)} kernels (IDs {list(n4)[:3]}...)")
# ncu IDs: 0 warm-up, 1-3 = kernel-replay ranges "0","1","2", 4 = "scale_x1", 5-7 = "scale_x3", 8.. small
def combine(ids):
    ms = [n4[i] for i in ids if i in n4]
    if not ms: return {}
    d = sum(m["gpu__time_duration.sum"] for m in ms)
    o = {k: sum(m[k] for m in ms) for k in ("gpu__time_duration.sum", "dram__bytes_read.sum", "dram__bytes_write.sum")}
    o["sm__throughput.avg.pct_of_peak_sustained_elapsed"] = sum(m["sm__throughput.avg.pct_of_peak_sustained_elapsed"] * m["gpu__time_duration.sum"] for m in ms) / d
    return o
pairs = [("kernel_replay", "0", [1]), ("kernel_replay", "1", [2]), ("kernel_replay", "2", [3]),
         ("user_replay", "scale_x1", [4]), ("user_replay", "scale_x3", [5, 6, 7])]
tol = {"gpu__time_duration.sum": ("rel", 2.0), "dram__bytes_read.sum": ("rel", 0.5), "dram__bytes_write.sum": ("rel", 0.5),
       "sm__throughput.avg.pct_of_peak_sustained_elapsed": ("abs", 1.0)}
bad = 0
print(f"{'case':<14}{'range':<10}{'metric':<52}{'kprof':>16}{'ncu':>16}{'diff':>12}  ok")
for case, rng, ids in pairs:
    k = kprof(case).get(rng, {}); n = combine(ids)
    for m, (kind, t) in tol.items():
        if m not in k or m not in n: continue
        if kind == "rel":
            diff = (k[m] - n[m]) / n[m] * 100 if n[m] else float("nan"); ds = f"{diff:+.3f}%"
        else:
            diff = k[m] - n[m]; ds = f"{diff:+.3f}pt"
        ok = abs(diff) <= t
        bad += not ok
        print(f"{case:<14}{rng:<10}{m:<52}{k[m]:>16.3f}{n[m]:>16.3f}{ds:>12}  {'ok' if ok else 'OUT OF TOLERANCE'}")
n3 = ncu(os.path.join(res, "ncu3.csv"))
plain = t1 - t0; ncu3 = t5 - t3; ncu0 = t6 - t5
k3 = len(n3)
print(f"\nwall: plain {plain:.3f} s | ncu 4 metrics all kernels {t3 - t2:.3f} s | ncu 3 metrics on {k3} small kernels {ncu3:.3f} s | ncu profiling nothing {ncu0:.3f} s")
if k3:
    per = (ncu3 - ncu0) / k3 * 1e3
    print(f"ncu per-kernel cost, 3-metric set: {per:.1f} ms (start-up excluded); {(ncu3 - plain) / k3 * 1e3:.1f} ms with start-up")
    for line in open(os.path.join(res, "kprof.txt")):
        if line.startswith("per-kernel profiling overhead"):
            kp = float(line.split(":")[1].split("ms")[0])
            print(f"kprof per-kernel cost, 3-metric set: {kp:.3f} ms -> ncu/kprof = {per / kp if kp > 0 else float('inf'):.1f}x")
        if line.startswith("user-replay per-kernel profiling overhead"):
            ku = float(line.split(":")[1].split("ms")[0])
            print(f"kprof per-kernel cost, 3-metric set, user-range replay: {ku:.3f} ms -> ncu/kprof = {per / ku if ku > 0 else float('inf'):.1f}x")
print("comparison:", "all within tolerance" if bad == 0 else f"{bad} values out of tolerance")
PYEOF
exit "$kprof_rc"
