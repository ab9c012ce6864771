#!/usr/bin/env bash
# Every GPU check of kprof in one call on the H200 (device time is scarce: one machine start).
# Run ON the GPU machine from the repo root after scripts/build-carry.sh filled .carry/ here:
#
#     scripts/gpu-check-all.sh [OUT]       # OUT defaults to $OUT
#
# Parts (each may be skipped with SKIP="engine ncu counters conditions python run ncubackend seed scaleout"):
#   engine      scripts/gpu-check.sh           the engine checks checks a-g + benchmark (CUPTI activity)
#   counters    scripts/counters-vs-ncu.sh     the in-process counters: in-process counters vs ncu
#   conditions  conditions_check               the run conditions: NVML readings, energy, fingerprint
#   ncu         scripts/ncu-capture.sh         the ncu backend: real ncu exports for the fixtures
#   python      scripts/gpu-check-python.sh    the Python package checks: the seed's steps through the wheel
#   run         scripts/gpu-check-run.sh       `kprof run`: kprof run (injection) vs CUDA events, compare
#   ncubackend  scripts/gpu-check-ncu.sh       the ncu backend: backend="ncu" through the wheel
#   seed        scripts/gpu-check-seed.sh      the in-process counters: seed steps 6 and 7 from Rust, CUPTI vs ncu
#   scaleout    scripts/gpu-check-scaleout.sh  the scale-out: two workers sharing GPU 0 vs one process
# More parts, not in the default list (PARTS="truth runcost" or PARTS="$DEFAULT_PARTS torchrun"):
#   truth       scripts/gpu-check-truth.sh     the short-kernel and graph durations: durations of short kernels and CUDA graphs
#   runcost     scripts/gpu-check-run-cost.sh  the cost of `kprof run --metrics`: what kprof run --metrics costs against ncu
#   torchrun    scripts/gpu-check-torchrun.sh  the scale-out: kprof run on torchrun, per-rank tables
#   graphmodes  scripts/gpu-check-graph-modes.sh  the short-kernel and graph durations: every way of timing CUDA graphs
#   extra       scripts/gpu-check-extra.sh     the in-process counters and 6 follow-ups (L2 and DRAM probes)
#   step8       scripts/gpu-check-step8.sh     the seed's step 8 (conditions, collectors) alone
#   multigpu    scripts/gpu-check-multigpu.sh  the multi-GPU sweep: the sharded sweep on every GPU, NCCL under kprof run
# This script is the one entry point of the GPU checks; the scripts above are its parts.
# Results: one tarball per part plus all-checks.log in OUT. Never changes any GPU setting.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-${OUT:?give OUT}}"
SKIP="${SKIP:-}"
DEFAULT_PARTS="engine counters conditions ncu run python ncubackend seed scaleout"
PARTS="${PARTS:-$DEFAULT_PARTS}"
LOG="$OUT/all-checks.log"
mkdir -p "$OUT"
: > "$LOG"
status=0
part() {
    local name="$1"; shift
    case " $PARTS " in *" $name "*) ;; *) return;; esac
    case " $SKIP " in *" $name "*) echo "== $name: skipped" | tee -a "$LOG"; return;; esac
    local dir="$OUT/$name"; mkdir -p "$dir"
    local t0=$SECONDS
    echo "== $name: $*" | tee -a "$LOG"
    ( unset PARTS; "$@" ) > "$dir/console.log" 2>&1   # PARTS is ours; the parts' own PARTS take their defaults
    local rc=$?
    tail -n 40 "$dir/console.log" >> "$LOG"
    echo "== $name: exit $rc after $((SECONDS - t0)) s" | tee -a "$LOG"
    [ $rc -eq 0 ] || status=1
    # .ncu-rep files stay on the machine (too large to come back); their sizes are logged.
    find "$dir" -name '*.ncu-rep' -printf '   kept there: %p (%s bytes)\n' | tee -a "$LOG"
    tar -C "$OUT" --exclude='*.ncu-rep' -czf "$OUT/$name.tar.gz" "$name" && rm -rf "$dir"
}
part engine     env OUT="$OUT/engine" scripts/gpu-check.sh "$OUT/engine"
part counters   scripts/counters-vs-ncu.sh .carry/bin/counters_check "$OUT/counters"
part conditions .carry/bin/conditions_check "$OUT/conditions/conditions_fixture.json" 30 1.0
part ncu        env OUT="$OUT/ncu" bash scripts/ncu-capture.sh
[ -x scripts/gpu-check-run.sh ] && part run env OUT="$OUT/run" scripts/gpu-check-run.sh "$OUT/run"
[ -x scripts/gpu-check-python.sh ] && part python env OUT="$OUT/python" scripts/gpu-check-python.sh
[ -x scripts/gpu-check-ncu.sh ] && part ncubackend env OUT="$OUT/ncubackend" scripts/gpu-check-ncu.sh
part seed       env OUT="$OUT/seed" scripts/gpu-check-seed.sh
[ -x scripts/gpu-check-scaleout.sh ] && part scaleout env OUT="$OUT/scaleout" scripts/gpu-check-scaleout.sh
part truth      scripts/gpu-check-truth.sh "$OUT/truth"
part runcost    scripts/gpu-check-run-cost.sh "$OUT/runcost" tests/fixtures/h200-kprof-run-metrics-vs-ncu/2026-12-02-af1d13e-kprof-metrics2-raw.csv
part torchrun   scripts/gpu-check-torchrun.sh "$OUT/torchrun"
part graphmodes scripts/gpu-check-graph-modes.sh "$OUT/graphmodes"
part extra      env OUT="$OUT/extra" scripts/gpu-check-extra.sh
part step8      env OUT="$OUT/step8" scripts/gpu-check-step8.sh
part multigpu   scripts/gpu-check-multigpu.sh "$OUT/multigpu"
echo "== overall: $([ $status -eq 0 ] && echo PASS || echo FAIL)" | tee -a "$LOG"
exit $status
