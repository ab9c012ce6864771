# Sourced by the `kprof run` GPU checks (gpu-check-torchrun.sh, gpu-check-multigpu.sh,
# gpu-check-run-cost.sh, nested_ranges.sh) once they have set OUT, from the repo root: creates OUT
# and makes it absolute, sets KPROF (default: .carry/bin/kprof of scripts/build-carry.sh), status=0
# and `fail MSG` (prints "FAIL: MSG" and sets status=1).
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd)
KPROF="${KPROF:-$PWD/.carry/bin/kprof}"
status=0
fail() { echo "FAIL: $*"; status=1; }
