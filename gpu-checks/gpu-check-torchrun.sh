#!/usr/bin/env bash
# `kprof run` on a multi-process PyTorch program, ON the GPU machine from the
# repo root after scripts/build-carry.sh filled .carry/bin/ (kprof + libkprof_inject.so):
#
#     gpu-checks/gpu-check-torchrun.sh OUT      # OUT defaults to $OUT
#
# The program is gpu-checks/gpu-run/torchrun_app.py, two ranks on device 0, each 20 x an NVTX range
# `matmul` (a 2048 fp32 matmul) and a range `allreduce` (dist.all_reduce of a CUDA tensor), run as
#     kprof run --out OUT/<backend> -- python -m torch.distributed.run --standalone --nproc-per-node 2 app.py
#   1. gloo: must work. Checked (gpu-checks/gpu-run/check_ranks.py): processed.csv has a Rank column
#      with ranks 0 and 1, each with its own `matmul` row (20 runs each), each worker's status file
#      names its rank (from RANK) and device 0 with its UUID; printed: per rank and region the
#      median, runs and kernels (MEDIAN lines), and whether gloo launched kernels inside
#      `allreduce` (it copies CUDA tensors through the host: INFO when it launched none).
#   2. NCCL, two ranks on one device: information only. NCCL usually refuses ("Duplicate GPU
#      detected"); the script says whether it did, and when it ran, checks as for gloo plus an
#      NCCL kernel inside `allreduce` for every rank.
# Files in OUT: torchrun.log (everything printed), gloo/ and nccl/ (kprof's output folders, with
# procs/), gloo.out/.err and nccl.out/.err (the command's output). About 1 minute; no network
# (torchrun's rendezvous is on localhost). KPROF and PY override the paths above.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-${OUT:?give OUT}}"
. gpu-checks/out-setup.sh
PY="${PY:-/opt/torch/.venv/bin/python3}"
APP=$PWD/gpu-checks/gpu-run/torchrun_app.py
CHECK=$PWD/gpu-checks/gpu-run/check_ranks.py

# launch BACKEND: kprof run on torchrun with APP_BACKEND=BACKEND; sets RC.
launch() {
    local b=$1
    rm -rf "${OUT:?}/$b"
    echo "== $b: $KPROF run --out $OUT/$b -- $PY -m torch.distributed.run --standalone --nproc-per-node 2 $APP"
    APP_BACKEND=$b NCCL_DEBUG=WARN timeout 300 "$KPROF" run --out "$OUT/$b" -- \
        "$PY" -m torch.distributed.run --standalone --nproc-per-node 2 "$APP" > "$OUT/$b.out" 2> "$OUT/$b.err"
    RC=$?
    echo "exit $RC"
    cat "$OUT/$b.out"
    grep -E '^kprof: (rank|wrote|error|warning)' "$OUT/$b.err"
}

main() {
    [ -x "$KPROF" ] && [ -f "$(dirname "$KPROF")/libkprof_inject.so" ] || { echo "run scripts/build-carry.sh first"; return 2; }
    echo "built from $(cat "$(dirname "$KPROF")/BUILT_FROM" 2>/dev/null || echo '?')"
    nvidia-smi -L 2>/dev/null || true
    "$PY" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "nccl", ".".join(map(str, torch.cuda.nccl.version())))'

    launch gloo
    [ "$RC" -eq 0 ] || { fail "gloo: exit $RC"; tail -30 "$OUT/gloo.err"; }
    [ "$(grep -c '"ok": true' "$OUT/gloo.out")" -eq 2 ] || fail "gloo: not both ranks printed a right all_reduce result"
    if [ -f "$OUT/gloo/processed.csv" ]; then
        "$PY" "$CHECK" "$OUT/gloo" 2 || fail "gloo: per-rank checks"
    else
        fail "gloo: no processed.csv"
    fi

    launch nccl
    if grep -q "Duplicate GPU" "$OUT/nccl.err" "$OUT/nccl.out"; then
        echo "INFO: NCCL refused two ranks on one device:"
        grep -m2 "Duplicate GPU" "$OUT/nccl.err" "$OUT/nccl.out"
    elif [ "$RC" -eq 0 ] && [ -f "$OUT/nccl/processed.csv" ]; then
        echo "INFO: NCCL accepted two ranks on one device"
        "$PY" "$CHECK" "$OUT/nccl" 2 --collective-kernels || echo "INFO: NCCL per-rank checks failed (information only)"
    else
        echo "INFO: NCCL run failed with exit $RC without 'Duplicate GPU':"
        tail -20 "$OUT/nccl.err"
    fi
    [ "$status" -eq 0 ] && echo "PASS: kprof run on torchrun (gloo) gives per-rank rows" || echo "FAILED"
    return "$status"
}

main 2>&1 | tee "$OUT/torchrun.log"
exit "${PIPESTATUS[0]}"
