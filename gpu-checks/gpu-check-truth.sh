#!/usr/bin/env bash
# GPU check of the durations of short kernels and CUDA graphs in default settings, ON the
# H200 from the repo root after scripts/build-carry.sh filled .carry/ (truth_check, kprof,
# libkprof_inject.so; the reference cases in .carry/cases):
#
#     gpu-checks/gpu-check-truth.sh [OUT]       # OUT defaults to $OUT; PARTS="..." selects parts
#
# Parts (all by default): events (CUDA events, no profiler), kprof (truth_check through the Rust
# API in every duration source / trace mode), rangeprof (Range Profiler and CUDA graphs), ncu
# (gpu__time_duration.sum per NVTX range), cases (the issue's Python and C++ reference cases:
# small_ref.py without a profiler, ncu on small_ncu_target.py, graph_app.cu plainly and under
# kprof run), energy (NVML's energy counter: update period and step), launch (host time per
# cuLaunchKernel with and without kprof, Rust), and the Python door's
# pyrefs, pykprof, pylaunch, pyncu, pysweep (kprof, the same work without a profiler, and
# nsight-python 0.9.6 when carried). Not by default: graphprobe (CUDA events inside kprof's
# benchmark of a graph, and graph replays before, during and after kprof's counters), mmclock (cycles, SM clock and DRAM bytes of matmul 1024/2048 and a one-block kernel, kprof and ncu; MMCLOCK_VARIANTS, MMCLOCK_REPEATS, MMCLOCK_CASES, MMCLOCK_NCU_METRICS, MMCLOCK_NCU_CACHE),
# firstpass (the first Range Profiler collection's host time, with and without priming, one
# process per variant; FIRSTPASS_VARIANTS="cap=N ...": by counter-data image size), sweepdetail (the seed sweep with the counter cost at every call), coldidle (short kernels after a flush and 0-10 ms of idle GPU, kprof and ncu),
# icachesize (how many steps the instruction flush needs), launchcb (host time per launch with
# kprof's launch records, none, or launch callbacks) and launchorder (attribution by launch order:
# launch cost by session part interleaved in one process, correlation-id brackets, the engine
# checks c d e with the activity recorded; needs gpu_check in .carry/bin), pystep6 (seed step 6
# alone in STEP6_REPEATS fresh processes; pyncu runs ncu's step 6 that many times too: the
# verdicts take the medians; LONG_REPEATS runs pyncu's long kernels that many times, and a case
# repeated in PY_CASES runs in that many processes: their medians too; pyncu6: ncu's step 6 alone) and graphstates (graph replays by CUDA events in each state of
# kprof's CUPTI session, Rust) and cuptistates (the same before and after one raw CUPTI call,
# one process per call: CUPTI_VARIANTS), releasestate (Python: graphs by CUDA events before
# kprof, with CUPTI attached, after kprof.release_counters(), with and without a graph kept from
# the session), reattach (the cost of attaching CUPTI again after a profiler detached it, Rust),
# unseen, unseen2 .. unseen5 (workloads the issue does not name against ncu and events, five sets: gpu-checks/gpu_check_unseen.py).
# Every result line is
# `TRUTH {json}` in $OUT/truth.log; nothing here changes a GPU setting.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-${OUT:?give OUT}}"
mkdir -p "$OUT"
PARTS="${PARTS:-events kprof rangeprof ncu cases casencu energy launch pyrefs pykprof pylaunch pyncu pysweep}"
BIN=.carry/bin
PY=/opt/torch/.venv/bin/python3
NCU=/usr/local/cuda/bin/ncu
NVCC=/usr/local/cuda/bin/nvcc
LOG="$OUT/truth.log"
: > "$LOG"
has() { case " $PARTS " in *" $1 "*) return 0;; esac; return 1; }
step() { echo "== $* ($(date +%T))" | tee -a "$LOG"; }
# truth_check LIMIT_S ARGS...: the Rust probe, its output into the log.
truth_check() { local limit="$1"; shift; timeout "$limit" "$BIN/truth_check" "$@" 2>&1 | tee -a "$LOG"; }
export LD_LIBRARY_PATH="/usr/local/cuda/lib64:/opt/torch/.venv/lib/python3.12/site-packages/nvidia/cu13/lib:${LD_LIBRARY_PATH:-}"

nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv | tee -a "$LOG"

if has events; then
    step "events: CUDA events, no profiler"
    truth_check 120 events
fi

if has kprof; then
    run_kprof() { # env..., then source replay
        step "kprof $*"
        timeout 150 env "$@" 2>&1 | tee -a "$LOG"
    }
    # Durations from the counters when available (the Rust rows of truth_verdicts.py), then the
    # defaults (records), then KPROF_MODES ("trace:graphs:source" triples).
    run_kprof KPROF_X=1 "$BIN/truth_check" kprof auto application
    run_kprof KPROF_X=1 "$BIN/truth_check" kprof default application
    for mode in ${KPROF_MODES:-}; do
        IFS=: read -r trace graphs source <<< "$mode"
        run_kprof KPROF_KERNEL_TRACE=$trace KPROF_GRAPH_TRACE=$graphs "$BIN/truth_check" kprof $source application
    done
fi

if has firstpass; then
    step "firstpass: the first Range Profiler collection, with and without priming (Rust)"
    for v in ${FIRSTPASS_VARIANTS:-plain empty kernel thread-empty thread-kernel}; do  # or cap=N
        truth_check 120 firstpass "$v"
    done
fi
if has launchcb; then
    step "launchcb: host time per launch with launch records, none, or launch callbacks (Rust)"
    for v in records none callbacks callbacks-empty; do
        case $v in records) env=();; *) env=(KPROF_CUPTI_LAUNCH_RECORDS=cbid);; esac
        env "${env[@]}" timeout 60 "$BIN/truth_check" launchcb "$v" 2>&1 | tee -a "$LOG"
    done
fi
if has launchorder; then
    # 2026-12-02: attribution by launch order (the default) against launch API records.
    step "launchorder: launch cost by session part, interleaved in one process (Rust, two processes)"
    for p in 1 2; do
        truth_check 150 launchparts
    done
    step "launchorder: correlation-id brackets around eager, cuBLAS, graph and second-thread launches"
    for v in order records; do
        truth_check 90 bracket "$v"
    done
    step "launchorder: engine checks c d e by launch order, activity recorded"
    KPROF_RECORD_ACTIVITY="$OUT/launch-order-activity.jsonl" timeout 200 "$BIN/gpu_check" "$OUT/gpu-check" c d e \
        2>&1 | tee -a "$LOG"
fi
if has icachesize; then
    step "icachesize: the instruction flush at 1024..8192 steps (Rust)"
    truth_check 200 icachesize
fi

if has rangeprof; then
    step "rangeprof: Range Profiler over eager kernels and a graph"
    truth_check 120 rangeprof
fi

ncu_csv() { # out.csv cache filter...
    local out="$1" cache="$2"; shift 2
    local incl=()
    for f in "$@"; do incl+=(--nvtx-include "kprof@$f/"); done
    timeout 200 "$NCU" --nvtx "${incl[@]}" --cache-control "$cache" --clock-control none \
        --metrics gpu__time_duration.sum --csv --print-units base --page raw \
        "$BIN/truth_check" ncu-target > "$out" 2> "$out.err"
    echo "ncu exit $? -> $out ($(wc -l < "$out") lines)" | tee -a "$LOG"
}
if has ncu; then
    step "ncu: gpu__time_duration.sum per NVTX range (truth_check ncu-target)"
    ncu_csv "$OUT/ncu-none.csv" none eager60 k2us k20us
    ncu_csv "$OUT/ncu-all.csv" all sgemm1024 sgemm2048 sgemm4096 sgemm8192 scale64M
    "$PY" - "$OUT/ncu-none.csv" "$OUT/ncu-all.csv" <<'EOF' 2>&1 | tee -a "$LOG"
import csv, json, re, sys, statistics
CASES = ["eager60", "k2us", "k20us", "sgemm1024", "sgemm2048", "sgemm4096", "sgemm8192", "scale64M"]
for path in sys.argv[1:]:
    lines = [l for l in open(path) if not l.startswith("==")]
    rows = [r for r in csv.DictReader(lines) if r.get("ID", "").isdigit()]
    if rows:
        print("columns:", [k for k in rows[0] if "nvtx" in k.lower() or "range" in k.lower()])
    by = {}
    for r in rows:
        cells = " ".join(str(v) for v in r.values())
        name = next((c for c in CASES if re.search(r"(^|[^A-Za-z0-9])" + c + r"($|[^A-Za-z0-9])", cells)), "?")
        by.setdefault(name, []).append(float(r["gpu__time_duration.sum"].replace(",", "")))
    for name, v in by.items():
        per = 60 if name == "eager60" else 1
        sums = [sum(v[i:i + per]) for i in range(0, len(v), per)]
        print("TRUTH " + json.dumps({"mode": "ncu-" + path.split("ncu-")[1][:-4], "case": name, "ns": statistics.median(sums), "kernels": len(v), "sums": sums}))
EOF
fi

if has cases; then
    step "cases: small_ref.py (no profiler)"
    timeout 120 "$PY" .carry/cases/small_ref.py 2>&1 | tee -a "$LOG"
    if has casencu; then
        step "cases: ncu on small_ncu_target.py (eager range)"
        timeout 200 "$NCU" --nvtx --nvtx-include "eager/" --cache-control none --clock-control none \
            --metrics gpu__time_duration.sum --csv --print-units base --page raw \
            "$PY" .carry/cases/small_ncu_target.py > "$OUT/ncu-small.csv" 2> "$OUT/ncu-small.err"
        "$PY" -c "
import csv,json
rows=[r for r in csv.DictReader(l for l in open('$OUT/ncu-small.csv') if not l.startswith('==')) if r.get('ID','').isdigit()]
v=[float(r['gpu__time_duration.sum'].replace(',','')) for r in rows]
print('TRUTH '+json.dumps({'mode':'ncu-none','case':'torch_eager60','ns':sum(v),'kernels':len(v)}))" 2>&1 | tee -a "$LOG"
    fi
    step "cases: graph_app.cu plainly, under kprof run (default, and --durations counters), and ncu on its eager ranges"
    if "$NVCC" -O2 -arch=sm_90 -o "$OUT/graph_app" .carry/cases/graph_app.cu -ldl 2>&1 | tee -a "$LOG"; then
        "$OUT/graph_app" > "$OUT/app-plain.txt" 2>&1
        awk '/GRAPH_EVENTS_MEDIAN_US/ {printf "TRUTH {\"mode\": \"graph_app-plain\", \"ns\": %f}\n", $2 * 1000}' \
            "$OUT/app-plain.txt" | tee -a "$LOG"
        ( time "$BIN/kprof" run --out "$OUT/app-default" -- "$OUT/graph_app" ) > "$OUT/app-default.txt" 2>&1
        tail -n 12 "$OUT/app-default.txt" | tee -a "$LOG"
        # Nsight Compute's definition, one option away: the counter launch's durations.
        ( time "$BIN/kprof" run --durations counters --out "$OUT/app-counters" -- "$OUT/graph_app" ) \
            > "$OUT/app-counters.txt" 2>&1
        tail -n 12 "$OUT/app-counters.txt" | tee -a "$LOG"
        timeout 200 "$NCU" --nvtx --nvtx-include "eager/" --cache-control none --clock-control none \
            --metrics gpu__time_duration.sum --csv --print-units base --page raw "$OUT/graph_app" \
            > "$OUT/ncu-app-eager.csv" 2> "$OUT/ncu-app-eager.err"
        "$PY" - "$OUT/ncu-app-eager.csv" <<'EOF' 2>&1 | tee -a "$LOG"
import csv, json, statistics, sys
# ncu's CSV lines are quoted; the program's own output (its GRAPH_EVENTS line) comes before them.
rows = [r for r in csv.DictReader(l for l in open(sys.argv[1]) if l.startswith('"')) if r.get("ID", "").isdigit()]
v = [float(r["gpu__time_duration.sum"].replace(",", "")) for r in rows]
sums = [sum(v[i:i + 60]) for i in range(0, len(v) - 59, 60)]
print("TRUTH " + json.dumps({"mode": "ncu-none", "case": "cpp_eager", "ns": statistics.median(sums) if sums else None,
                             "kernels": len(v), "sums": sums}))
EOF
        "$PY" - "$OUT/app-default/raw.csv" "$OUT/app-counters/raw.csv" <<'EOF' 2>&1 | tee -a "$LOG"
import csv, json, sys, statistics
for path in sys.argv[1:]:
    try:
        rows = list(csv.DictReader(open(path)))
    except OSError as e:
        print("missing", path, e); continue
    by = {}
    for r in rows:
        # A range without a value (NaN: graph ranges in a counter launch) is written empty.
        by.setdefault((r.get("Annotation"), r.get("Metric")), []).extend([float(r["Value"])] if r["Value"] else [])
    for (a, m), v in by.items():
        print("TRUTH " + json.dumps({"mode": "kprof-run:" + path.split("/")[-2], "case": "cpp_" + str(a), "metric": m,
                                     "ns": statistics.median(v) if v else None, "n": len(v)}))
EOF
    fi
fi

if has energy; then
    step "energy: NVML total-energy counter under load"
    timeout 60 "$PY" - <<'EOF' 2>&1 | tee -a "$LOG"
import json, threading, time
import pynvml, torch
pynvml.nvmlInit()
h = pynvml.nvmlDeviceGetHandleByIndex(0)
a = torch.randn(8192, 8192, device="cuda")
stop = False
def load():
    while not stop:
        a @ a
        torch.cuda.synchronize()
t = threading.Thread(target=load); t.start()
time.sleep(0.5)
changes = []; last = None; t0 = time.perf_counter(); polls = 0; powers = []
while time.perf_counter() - t0 < 3.0:
    e = pynvml.nvmlDeviceGetTotalEnergyConsumption(h); polls += 1
    now = time.perf_counter()
    if e != last:
        changes.append((now, e)); last = e
    if polls % 200 == 0:
        powers.append(pynvml.nvmlDeviceGetPowerUsage(h))
stop = True; t.join()
dts = [b[0] - a[0] for a, b in zip(changes, changes[1:])]
steps = [b[1] - a[1] for a, b in zip(changes, changes[1:])]
dts_s = sorted(dts)
print("TRUTH " + json.dumps({"mode": "energy", "polls": polls, "changes": len(changes),
    "period_ms_median": 1e3 * dts_s[len(dts_s) // 2] if dts else None, "period_ms_min": 1e3 * min(dts) if dts else None,
    "period_ms_max": 1e3 * max(dts) if dts else None, "step_mj_median": sorted(steps)[len(steps) // 2] if steps else None,
    "power_mw": powers[:10], "first_changes": [(round((c[0] - t0) * 1e3, 2), c[1]) for c in changes[:12]]}))
EOF
fi
# ---- The Python door (the wheel in .carry/wheels), torch workloads ----
if has unseen || has unseen2 || has unseen3 || has unseen4 || has unseen5 || has pyrefs || has pykprof || has pystep6 || has pyncu6 || has releasestate || has pylaunch || has pyncu || has pysweep || has graphprobe || has mmclock || has sweepdetail; then
    source gpu-checks/gpu-wheel.sh
    GT=gpu-checks/gpu_check_truth.py
fi
if has pyrefs; then
    step "python refs: CUDA events without a profiler"
    timeout 120 "$PY" "$GT" refs 2>&1 | tee -a "$LOG"
fi
if has pykprof; then
    step "python kprof: default settings, one process per case"
    for c in ${PY_CASES:-graph60 graph3big graph2stream mixed eager60 k2us k20us k2ms mm1024 mm2048 mm4096 mm8192 x2_64M}; do
        timeout 120 "$PY" -X faulthandler "$GT" case "$c" 2>&1 | tail -n 25 | tee -a "$LOG"
    done
    for v in ${PY_VARIANTS:-}; do  # CASE:SOURCE[:late]; SOURCE a duration_source or cuda-events (the CUDA-events backend)
        IFS=: read -r c src late <<< "$v"
        step "python kprof variant $v"
        LATE_CAPTURE=$late timeout 120 "$PY" -X faulthandler "$GT" case "$c" "$src" 2>&1 | tail -n 25 | tee -a "$LOG"
    done
    step "python kprof: step 6 and energy"
    timeout 200 "$PY" -X faulthandler "$GT" kprof 2>&1 | tail -n 25 | tee -a "$LOG"
fi
if has pystep6; then
    step "python kprof: step 6 alone, STEP6_REPEATS fresh processes"
    for _ in $(seq "${STEP6_REPEATS:-1}"); do
        timeout 120 "$PY" -X faulthandler "$GT" step6 2>&1 | grep '^TRUTH' | tee -a "$LOG"
    done
fi
if has pylaunch; then
    step "python launch cost"
    # Default settings, then one change each: what each part of the tracing costs per launch.
    for v in "" KPROF_KERNEL_TRACE=serial; do
        env $v timeout 120 "$PY" "$GT" launch 2>&1 | tail -n 3 | tee -a "$LOG"
    done
    # Each state kprof leaves a process in, beside a process without a profiler (its drift).
    for _ in 1 2; do
        timeout 120 "$PY" "$GT" launch-control 2>&1 | tail -n 3 | tee -a "$LOG"
        timeout 120 "$PY" "$GT" launch-states 2>&1 | tail -n 3 | tee -a "$LOG"
    done
fi
if has releasestate; then
    step "python releasestate: graphs by events before kprof, attached, after release_counters (and with a graph kept from the session)"
    for v in "" keep; do
        timeout 120 "$PY" -X faulthandler "$GT" release-state $v 2>&1 | grep '^TRUTH\|Error\|error' | tee -a "$LOG"
    done
fi
if has graphstates; then
    step "graphstates: graph replays by events in each state of kprof's CUPTI session (Rust)"
    truth_check 200 graphstates
fi
if has reattach; then
    step "reattach: Profiler::new, a default benchmark and the drop (CUPTI detached), three cycles (Rust)"
    truth_check 120 reattach
fi
if has cuptistates; then
    step "cuptistates: graph replays by events before and after one raw CUPTI call, one process per call (Rust)"
    for v in ${CUPTI_VARIANTS:-none timestamp subscribe callback graph concurrent driver}; do
        truth_check 120 cuptistates "$v"
    done
fi
if has launch; then
    step "launch: host time per cuLaunchKernel queued behind a spin kernel, with and without kprof (Rust)"
    truth_check 120 launch
fi
ncu_py() { # out.csv cache replay metrics target ranges...
    local out="$1" cache="$2" replay="$3" metrics="$4" target="$5" f; shift 5
    local incl=()
    for f in "$@"; do incl+=(--nvtx-include "$f/"); done
    timeout 300 "$NCU" --nvtx "${incl[@]}" --cache-control "$cache" --clock-control none --replay-mode "$replay" \
        --metrics "$metrics" --csv --print-units base --page raw "$PY" "$GT" "$target" > "$out" 2> "$out.err"
    echo "ncu exit $? -> $out ($(wc -l < "$out") lines)" | tee -a "$LOG"
}
if has pyncu || has pyncu6; then
    step "python ncu references"
    csvs=()
    if has pyncu; then
        ncu_py "$OUT/pyncu-none.csv" none kernel gpu__time_duration.sum ncu-target eager60 k2us k20us
        csvs+=("$OUT/pyncu-none.csv")
        # The long kernels in LONG_REPEATS ncu processes (the verdicts take the medians, as of a
        # case repeated in PY_CASES).
        for i in $(seq "${LONG_REPEATS:-1}"); do
            csv="$OUT/pyncu-all.csv"; [ "$i" = 1 ] || csv="$OUT/pyncu-all-$i.csv"
            ncu_py "$csv" all kernel gpu__time_duration.sum ncu-target k2ms mm1024 mm2048 mm4096 mm8192 x2_64M
            csvs+=("$csv")
        done
    fi
    # Step 6 in STEP6_REPEATS ncu processes (its DRAM % moves about a point between processes);
    # pyncu6: these alone.
    for i in $(seq "${STEP6_REPEATS:-1}"); do
        csv="$OUT/pyncu-step6.csv"; [ "$i" = 1 ] || csv="$OUT/pyncu-step6-$i.csv"
        ncu_py "$csv" all application \
            sm__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed,gpu__time_duration.sum \
            ncu-target-step6 fp16_mm4096 s6_x2_64M
        csvs+=("$csv")
    done
    "$PY" gpu-checks/truth_verdicts.py ncu-csv "${csvs[@]}" 2>&1 | tee -a "$LOG"
fi
unseen_ncu() { # set out.csv cache cases...: ncu on the eager cases of gpu-checks/gpu_check_unseen.py
    local set="$1" out="$2" cache="$3" c i; shift 3
    local incl=()
    # The fourth set's backward passes launch their kernels from PyTorch's autograd thread, the
    # fifth's threads2 from two Python threads: its ranges, pushed on the main thread, hold them
    # only with a process-wide push/pop scope.
    case "$set" in 4 | 5) incl+=(--nvtx-push-pop-scope process) ;; esac
    # Regions of a thousand launches and more: ncu profiles their first occurrence only.
    for c in "$@"; do for i in 0 1 2; do [[ $c == many1100* && $i != 0 ]] || incl+=(--nvtx-include "$c.$i/"); done; done
    timeout 300 "$NCU" --nvtx "${incl[@]}" --cache-control "$cache" --clock-control none --replay-mode kernel \
        --metrics gpu__time_duration.sum --csv --print-units base --page raw "$PY" gpu-checks/gpu_check_unseen.py \
        ncu-target "$set" > "$out" 2> "$out.err"
    echo "ncu exit $? -> $out ($(wc -l < "$out") lines)" | tee -a "$LOG"
}
unseen_set() { # set: graphs by CUDA events without a profiler, every case through kprof in default
    # settings, ncu on the eager cases (cold ones with its cache control, warm ones without), and
    # the verdict table.
    local set="$1" GU=gpu-checks/gpu_check_unseen.py
    step "unseen set $set: refs (graphs by events, no profiler)"
    timeout 150 "$PY" "$GU" refs "$set" 2>&1 | tail -n 8 | tee -a "$LOG"
    step "unseen set $set: kprof, default settings"
    timeout 240 "$PY" -X faulthandler "$GU" kprof "$set" 2>&1 | grep '^UNSEEN\|Error\|error' | tee -a "$LOG"
    step "unseen set $set: ncu"
    # shellcheck disable=SC2046  (the case lists split into words)
    unseen_ncu "$set" "$OUT/unseen$set-ncu-all.csv" all $("$PY" "$GU" cases cold "$set")
    # shellcheck disable=SC2046
    unseen_ncu "$set" "$OUT/unseen$set-ncu-none.csv" none $("$PY" "$GU" cases warm "$set")
    step "unseen set $set: verdicts"
    "$PY" "$GU" judge "$LOG" "$OUT/unseen$set-ncu-all.csv" "$OUT/unseen$set-ncu-none.csv" "$set" 2>&1 | tee -a "$LOG"
}
# Workloads the verdict table does not name (gpu-checks/gpu_check_unseen.py): the first set, the
# second (other libraries, side streams, a synchronization in a region, torch.compile) and the
# third (more GEMM shapes, host idle and copies in regions, fused AdamW, graphs replayed 5x or on a side stream).
if has unseen; then unseen_set 1; fi
if has unseen2; then unseen_set 2; fi
if has unseen3; then unseen_set 3; fi
if has unseen4; then unseen_set 4; fi
if has unseen5; then unseen_set 5; fi
if has graphprobe; then
    step "python graph probe: CUDA events inside kprof's benchmark of a graph"
    for v in graph2stream graph60 "graph2stream late" "graph60 late-auto" "graph2stream late-auto"; do
        timeout 120 "$PY" "$GT" graph-probe $v 2>&1 | tail -n 5 | tee -a "$LOG"
    done
    timeout 120 "$PY" "$GT" graph-state 2>&1 | tail -n 2 | tee -a "$LOG"
fi
if has mmclock; then
    # MMCLOCK_VARIANTS: JSON objects of kprof.analyze.kernel keywords separated by ';' (default:
    # {}, the six metrics below), each in MMCLOCK_REPEATS fresh processes; ncu in as many
    # processes, with MMCLOCK_NCU_METRICS and --cache-control MMCLOCK_NCU_CACHE (all); MMCLOCK_CASES:
    # the cases (gpu_check_truth.py).
    step "python mm clock: cycles and SM clock of matmul 1024/2048, kprof and ncu"
    IFS=';' read -r -a mm_variants <<< "${MMCLOCK_VARIANTS:-{\}}"
    for i in $(seq "${MMCLOCK_REPEATS:-1}"); do
        for v in "${mm_variants[@]}"; do
            MMCLOCK_OPTS="$v" timeout 120 "$PY" "$GT" mm-clock 2>&1 | grep '^TRUTH' | tee -a "$LOG"
        done
        mm_metrics=${MMCLOCK_NCU_METRICS:-gpu__time_duration.sum,sm__cycles_elapsed.max,sm__cycles_elapsed.avg.per_second,gpc__cycles_elapsed.max,dram__bytes_read.sum,dram__bytes_write.sum}
        # shellcheck disable=SC2086  # the cases are words
        ncu_py "$OUT/pyncu-mmclock-$i.csv" "${MMCLOCK_NCU_CACHE:-all}" kernel "$mm_metrics" ncu-target ${MMCLOCK_CASES:-mm1024 mm2048 tiny1}
        "$PY" "$GT" ncu-medians "$OUT/pyncu-mmclock-$i.csv" mmclock-ncu "$i" "$mm_metrics" 2>&1 | tee -a "$LOG"
    done
fi
if has coldidle; then
    # Short kernels after a flush in the benchmark and 0-10 ms of idle GPU (gpu_check_truth.py
    # cold-idle), and ncu's duration alone (--cache-control all) on the same cases.
    step "python cold idle: short kernels after a flush and an idle GPU, kprof and ncu"
    idle_cases=${MMCLOCK_CASES:-tiny1 tiny262144 k2us mm1024}
    MMCLOCK_CASES="$idle_cases" timeout 300 "$PY" "$GT" cold-idle 2>&1 | grep '^TRUTH\|rror' | tee -a "$LOG"
    # shellcheck disable=SC2086  # the cases are words
    ncu_py "$OUT/pyncu-coldidle.csv" all kernel gpu__time_duration.sum ncu-target $idle_cases
    "$PY" "$GT" ncu-medians "$OUT/pyncu-coldidle.csv" coldidle-ncu 1 gpu__time_duration.sum 2>&1 | tee -a "$LOG"
fi
if has sweepdetail; then
    step "python sweep detail: the seed sweep with the counter cost at every call of the closure"
    timeout 120 "$PY" "$GT" sweep-detail 2>&1 | tail -n 3 | tee -a "$LOG"
fi
if has pysweep; then
    step "python sweep: kprof vs nsight-python 0.9.6 (3 configs x 10 runs)"
    NS_SITE=/tmp/nsight-site
    "$PY" -m pip install -q --no-index --no-deps --no-compile --target "$NS_SITE" .carry/wheels-extra/*.whl || NS_SITE=
    for _ in $(seq "${SWEEP_REPEATS:-1}"); do  # each tool in turn, SWEEP_REPEATS times (fresh processes)
        timeout 120 "$PY" "$GT" sweep-plain 2>&1 | tee -a "$LOG"
        timeout 120 "$PY" "$GT" sweep-kprof 2>&1 | tee -a "$LOG"
        timeout 120 "$PY" "$GT" sweep-kprof records 2>&1 | tee -a "$LOG"
        [ -n "$NS_SITE" ] && PYTHONPATH="$NS_SITE:/opt/nvidia/nsight-compute/2025.3.1/extras/python:${PYTHONPATH:-}" \
            timeout 200 "$PY" "$GT" sweep-nsight 2>&1 | grep -v "^==PROF==" | tail -n 20 | tee -a "$LOG"
    done
fi
step "done"
