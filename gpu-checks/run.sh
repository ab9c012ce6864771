#!/usr/bin/env bash
# The one entry point of kprof's GPU checks. Run ON the GPU machine from the repo root after
# scripts/build-carry.sh filled .carry/ here (device time is scarce: run what you need in one
# machine start):
#
#     gpu-checks/run.sh                    # list the checks
#     gpu-checks/run.sh all OUT            # the default checks (OUT defaults to $OUT)
#     gpu-checks/run.sh NAME[,NAME...] OUT # the named checks
#
# The checks (SKIP="name ..." skips some of a list):
#   engine      gpu-checks/gpu-check.sh              the engine: CUPTI activity checks a-g and the benchmark
#   counters    gpu-checks/counters-vs-ncu.sh        in-process counters (Range Profiler) against ncu
#   conditions  .carry/bin/conditions_check          run conditions: NVML readings, energy, fingerprint
#   ncu         gpu-checks/ncu-capture.sh            real ncu exports for the fixtures
#   python      gpu-checks/gpu-check-python.sh       the seed's steps through the wheel
#   run         gpu-checks/gpu-check-run.sh          `kprof run` (injection) against CUDA events, `kprof compare`
#   ncubackend  gpu-checks/gpu-check-ncu.sh          backend="ncu" through the wheel
#   seed        gpu-checks/gpu-check-seed.sh         the seed's steps 6 and 7 from Rust, CUPTI against ncu
#   scaleout    gpu-checks/gpu-check-scaleout.sh     two workers sharing GPU 0 against one process
# Not in `all`:
#   truth       gpu-checks/gpu-check-truth.sh        durations of short kernels and CUDA graphs against ncu and CUDA events
#   runcost     gpu-checks/gpu-check-run-cost.sh     what `kprof run --metrics` costs against ncu
#   torchrun    gpu-checks/gpu-check-torchrun.sh     `kprof run` on torchrun, per-rank tables
#   graphmodes  gpu-checks/gpu-check-graph-modes.sh  every way of timing CUDA graphs
#   extra       gpu-checks/gpu-check-extra.sh        L2 and DRAM probes against ncu
#   step8       gpu-checks/gpu-check-step8.sh        the seed's step 8 (conditions, collectors) alone
#   multigpu    gpu-checks/gpu-check-multigpu.sh     the sharded sweep on every GPU, NCCL under `kprof run`
#   cost        gpu-checks/default-cost.sh           what the default durations cost: the benches/ and the split by phase
#   surprises   gpu-checks/surprises.sh              Ctrl-C in six phases of a sweep; the tutorial's warnings counted
#   nested      gpu-checks/nested_ranges.sh          nested NVTX ranges under `kprof run` against ncu
#   examples    gpu-checks/nsight-examples.sh        nsight-python's examples, unchanged (carry them in .carry/nsight-examples)
#   workflow    gpu-checks/workflow-check.sh         to_trace, the pytest plugin, `kprof run --trace`, the notebook
#   sol         gpu-checks/speed-of-light.sh         step 6 with metrics=["SpeedOfLight"] against ncu's section, the roofline sweep
#   rests       gpu-checks/rest_rule_check.py        the same sweeps under KPROF_GPU_REST=fixed and power: rests taken, durations
#   explain     gpu-checks/explain_pairs.py          `kprof compare --explain` on pairs captured here (TF32, bytes, occupancy, none)
# Results: one tarball per check plus all-checks.log in OUT. Never changes any GPU setting.
set -uo pipefail
cd "$(dirname "$0")/.."
DEFAULT_PARTS="engine counters conditions ncu run python ncubackend seed scaleout"
ALL_PARTS="$DEFAULT_PARTS truth runcost torchrun graphmodes extra step8 multigpu cost surprises nested examples workflow sol rests explain"
if [ $# -eq 0 ] || [ "$1" = list ]; then
    sed -n '/^# The checks/,/^# Results/p' "$0" | sed 's/^# \{0,1\}//'
    exit 0
fi
case "$1" in
    all) PARTS="${PARTS:-$DEFAULT_PARTS}" ;;
    *) PARTS="${1//,/ }"
       for p in $PARTS; do
           case " $ALL_PARTS " in *" $p "*) ;; *) echo "gpu-checks/run.sh: no check named $p (gpu-checks/run.sh lists them)" >&2; exit 2;; esac
       done ;;
esac
OUT="${2:-${OUT:?give OUT}}"
SKIP="${SKIP:-}"
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
part engine     env OUT="$OUT/engine" gpu-checks/gpu-check.sh "$OUT/engine"
part counters   gpu-checks/counters-vs-ncu.sh .carry/bin/counters_check "$OUT/counters"
part conditions .carry/bin/conditions_check "$OUT/conditions/conditions_fixture.json" 30 1.0
part ncu        env OUT="$OUT/ncu" bash gpu-checks/ncu-capture.sh
[ -x gpu-checks/gpu-check-run.sh ] && part run env OUT="$OUT/run" gpu-checks/gpu-check-run.sh "$OUT/run"
[ -x gpu-checks/gpu-check-python.sh ] && part python env OUT="$OUT/python" gpu-checks/gpu-check-python.sh
[ -x gpu-checks/gpu-check-ncu.sh ] && part ncubackend env OUT="$OUT/ncubackend" gpu-checks/gpu-check-ncu.sh
part seed       env OUT="$OUT/seed" gpu-checks/gpu-check-seed.sh
[ -x gpu-checks/gpu-check-scaleout.sh ] && part scaleout env OUT="$OUT/scaleout" gpu-checks/gpu-check-scaleout.sh
part truth      gpu-checks/gpu-check-truth.sh "$OUT/truth"
part runcost    gpu-checks/gpu-check-run-cost.sh "$OUT/runcost" tests/fixtures/h200-kprof-run-metrics-vs-ncu/2026-12-02-af1d13e-kprof-metrics2-raw.csv
part torchrun   gpu-checks/gpu-check-torchrun.sh "$OUT/torchrun"
part graphmodes gpu-checks/gpu-check-graph-modes.sh "$OUT/graphmodes"
part extra      env OUT="$OUT/extra" gpu-checks/gpu-check-extra.sh
part step8      env OUT="$OUT/step8" gpu-checks/gpu-check-step8.sh
part multigpu   gpu-checks/gpu-check-multigpu.sh "$OUT/multigpu"
part cost       gpu-checks/default-cost.sh "$OUT/cost"
part surprises  env OUT="$OUT/surprises" gpu-checks/surprises.sh
part nested     bash gpu-checks/nested_ranges.sh "$OUT/nested"
part examples   gpu-checks/nsight-examples.sh .carry/nsight-examples "$OUT/examples"
part workflow   env OUT="$OUT/workflow" gpu-checks/workflow-check.sh
part sol        gpu-checks/speed-of-light.sh "$OUT/sol"
part rests      bash -c '. gpu-checks/gpu-wheel.sh && "$PY" gpu-checks/rest_rule_check.py'
part explain    bash -c '. gpu-checks/gpu-wheel.sh && PATH="$KPROF_SITE/bin:$PATH" "$PY" gpu-checks/explain_pairs.py "$0"' "$OUT/explain"
echo "== overall: $([ $status -eq 0 ] && echo PASS || echo FAIL)" | tee -a "$LOG"
exit $status
