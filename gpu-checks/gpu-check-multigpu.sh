#!/usr/bin/env bash
# The multi-GPU sweep on a machine with two or more GPUs (nvidia-h200-x2 / -x4), from the repo root after
# scripts/build-carry.sh filled .carry/ (the wheel, kprof, libkprof_inject.so):
#
#     gpu-checks/gpu-check-multigpu.sh OUT      # OUT defaults to $OUT
#
# 1. gpu-checks/gpu_check_multigpu.py: the 64-configuration matmul sweep on one GPU and on every
#    GPU (speed-up, per-configuration medians within 1 %, every row labelled with its GPU), and
#    with a worker SIGKILLed mid-sweep (retried on another GPU, the table complete);
# 2. `kprof run -- torchrun --nproc-per-node 2` on gpu-checks/gpu-run/torchrun_app.py with NCCL, one
#    GPU per rank (APP_DEVICE=local_rank): per-rank tables, an NCCL kernel inside every rank's
#    `allreduce` range, the ranks' matmul medians within 1 % of each other
#    (gpu-checks/gpu-run/check_ranks.py --collective-kernels --medians-within 1).
# On one GPU, part 1 is a dry run (no speed-up judged) and part 2 is skipped. Nothing here changes
# a GPU setting. Also part `multigpu` of gpu-checks/run.sh.
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-${OUT:?give OUT}}"
. gpu-checks/out-setup.sh
. gpu-checks/gpu-wheel.sh
nvidia-smi -L
gpus=$(nvidia-smi -L | grep -c '^GPU ')
echo "== 1. the sharded sweep on $gpus GPU(s)"
"$PY" gpu-checks/gpu_check_multigpu.py "$OUT" || fail "the sharded sweep"
if [ "$gpus" -ge 2 ]; then
    echo "== 2. kprof run on torchrun, NCCL, one GPU per rank"
    APP_BACKEND=nccl APP_DEVICE=local_rank NCCL_DEBUG=WARN timeout 300 "$KPROF" run --out "$OUT/nccl" -- \
        "$PY" -m torch.distributed.run --standalone --nproc-per-node 2 gpu-checks/gpu-run/torchrun_app.py \
        > "$OUT/nccl.out" 2> "$OUT/nccl.err" || fail "kprof run on torchrun (NCCL) exit $?"
    grep -E '^kprof: (rank|wrote|error|warning)' "$OUT/nccl.err"
    "$PY" gpu-checks/gpu-run/check_ranks.py "$OUT/nccl" 2 --collective-kernels --medians-within 1 || fail "per-rank checks (NCCL)"
else
    echo "INFO: one GPU: the NCCL part needs two (NCCL refuses two ranks on one device)"
fi
echo "== multigpu check: $([ $status -eq 0 ] && echo PASS || echo FAIL)"
exit $status
