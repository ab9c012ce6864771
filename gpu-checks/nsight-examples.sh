#!/usr/bin/env bash
# nsight-python's examples, unchanged, on kprof, on the GPU machine (gpu-checks/nsight_examples.py):
# one process per example, all in one process, and their test_examples.py under pytest; each
# example's outcome, wall time, output, tables, CSV files and plots recorded in OUT_DIR
# (summary.md, summary.json).
#
# Usage, from the repo root: gpu-checks/nsight-examples.sh EXAMPLES_DIR OUT_DIR [runner options]
#   EXAMPLES_DIR: nsight-python's examples/ folder (the shared folder is not on the GPU machine:
#   carry a copy, e.g. in .carry/nsight-examples); runner options: --mode, --only, --timeout.
# Installs the wheel carried in .carry/wheels into a private folder (gpu-checks/gpu-wheel.sh), and
# matplotlib from .carry/wheels-extra when the Python lacks it (plot_callback needs it).
set -uo pipefail
cd "$(dirname "$0")/.."
EXAMPLES="${1:?usage: gpu-checks/nsight-examples.sh EXAMPLES_DIR OUT_DIR [options]}"
OUT="${2:?usage: gpu-checks/nsight-examples.sh EXAMPLES_DIR OUT_DIR [options]}"
shift 2
. gpu-checks/gpu-wheel.sh
if ! "$PY" -c "import matplotlib" 2>/dev/null && ls .carry/wheels-extra/matplotlib-*.whl >/dev/null 2>&1; then
    # matplotlib and its dependencies (numpy comes from the machine's PyTorch Python); not nsight.
    "$PY" -m pip install -q --no-index --no-deps --no-compile --target "$KPROF_SITE" \
        $(ls .carry/wheels-extra/*.whl | grep -v nsight_python) \
        || echo "nsight-examples: matplotlib not installed (examples with plot_callback are skipped)"
fi
export MPLBACKEND=Agg
"$PY" gpu-checks/nsight_examples.py "$EXAMPLES" "$OUT" "$@"
status=$?
cat "$OUT/summary.md"
exit "$status"
