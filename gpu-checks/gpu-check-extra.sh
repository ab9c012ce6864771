#!/usr/bin/env bash
# The in-process counters and 6 follow-ups through the installed wheel (gpu-checks/gpu_check_extra.py), 10 runs each:
# the fp16 matmul's DRAM bytes against ncu's application replay (parts matmul, flushes), the
# clocks, cycles and L2 writes behind the remaining gaps to ncu (gaps, warm, probe), the
# durations of kernel records against the counters' (trace) and what the L2 flush leaves (evict;
# again once per size in FLUSH_BYTES, with KPROF_L2_FLUSH_BYTES set, when PARTS has evict) and
# whether DRAM bytes depend on where the data lie (alloc, and placement: kprof with its data
# where ncu's child has them) or on ncu's invalidation of the L2 (dirty, reset). The default
# parts take about 7 minutes; placement, dirty and reset (named in PARTS) under a minute each.
# Run from the repo root on the GPU machine:
#   OUT=dir [PARTS="matmul gaps warm probe flushes trace evict alloc"] [FLUSH_BYTES="251658240 ..."] gpu-checks/gpu-check-extra.sh
set -uo pipefail
cd "$(dirname "$0")/.."
OUT="${OUT:?set OUT}"
. gpu-checks/gpu-wheel.sh
"$PY" gpu-checks/gpu_check_extra.py "$OUT" ${PARTS:-}
status=$?
case " ${PARTS:-evict} " in
    *" evict "*)
        for bytes in ${FLUSH_BYTES:-}; do
            KPROF_L2_FLUSH_BYTES="$bytes" "$PY" gpu-checks/gpu_check_extra.py "$OUT" evict || status=1
        done;;
esac
exit $status
